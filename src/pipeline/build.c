/* One plan -> one code object (contract in build.h).
 *
 *   plan --codegen--> IR --compile (-O3)--> object --link--> code object
 *        --codeobj--> metadata; out->info = the plan's kernel
 *
 * Each call has its own LLVMContext, so builds on different threads never
 * share LLVM state. The resource policy (cj_check_resources) is separate:
 * convjit-dump --check and the runtime apply it; a build that spills still
 * returns its code object so the tools can show why.
 */
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <string.h>
#include "codegen/codegen.h"
#include "pipeline/build.h"
#include "pipeline/compile.h"
#include "pipeline/link.h"

void cj_built_free(cj_built *b) {
  if (!b) return;
  cj_blob_free(&b->code_object);
  cj_codeobj_destroy(b->co);
  cj_blob_free(&b->ir);
  cj_blob_free(&b->opt_ir);
  cj_blob_free(&b->asm_text);
  memset(b, 0, sizeof *b);
}

static convjit_status cj_build_in(const cj_kplan *p, unsigned flags, LLVMContextRef ctx, cj_built *out) {
  LLVMModuleRef m = NULL;
  double t0 = cj_now_ms();
  CJ_TRY(cj_codegen_build(p, ctx, &m));
  CJ_CHECK(m != NULL, CONVJIT_ERR_INTERNAL, "codegen returned no module for kernel %s", p->name);
  out->codegen_ms = cj_now_ms() - t0;

  convjit_status st = CONVJIT_OK;
  if (flags & CJ_BUILD_KEEP_IR) {
    char *s = LLVMPrintModuleToString(m);
    st = s ? cj_blob_set(&out->ir, s, strlen(s)) : CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "printing IR");
    LLVMDisposeMessage(s);
  }
  cj_compile_out co = {0};
  if (st == CONVJIT_OK)
    st = cj_compile_module(m, p->arch, !!(flags & CJ_BUILD_KEEP_ASM), !!(flags & CJ_BUILD_KEEP_OPT_IR), &co);
  LLVMDisposeModule(m);
  CJ_TRY(st);
  out->compile_ms = co.ms;
  out->opt_ms = co.opt_ms;
  out->opt_ir = co.opt_ir;
  out->asm_text = co.asm_text;
  co.opt_ir = (cj_blob){0};
  co.asm_text = (cj_blob){0};

  t0 = cj_now_ms();
  st = cj_link_code_object(&co.object, &out->code_object);
  cj_compile_out_free(&co);
  CJ_TRY(st);
  out->link_ms = cj_now_ms() - t0;

  t0 = cj_now_ms();
  CJ_TRY(cj_codeobj_parse(out->code_object.data, out->code_object.size, &out->co));
  out->parse_ms = cj_now_ms() - t0;
  out->info = cj_codeobj_find(out->co, p->name);
  CJ_CHECK(out->info != NULL, CONVJIT_ERR_INTERNAL, "code object has no kernel named %s (it has %u kernel%s%s%s)",
           p->name, out->co->nkernels, out->co->nkernels == 1 ? "" : "s", out->co->nkernels ? ", first " : "",
           out->co->nkernels ? out->co->kernels[0].name : "");
  return CONVJIT_OK;
}

convjit_status cj_build_kernel(const cj_kplan *p, unsigned flags, cj_built *out) {
  CJ_CHECK(out != NULL, CONVJIT_ERR_INVALID_ARG, "cj_build_kernel: out is NULL");
  memset(out, 0, sizeof *out);
  CJ_CHECK(p != NULL, CONVJIT_ERR_INVALID_ARG, "cj_build_kernel: plan is NULL");
  CJ_CHECK(p->arch != NULL, CONVJIT_ERR_INVALID_ARG, "cj_build_kernel: plan %s has no arch", p->name);
  CJ_CHECK(p->name[0] != 0 && memchr(p->name, 0, sizeof p->name), CONVJIT_ERR_INVALID_ARG,
           "cj_build_kernel: plan has no kernel name");
  LLVMContextRef ctx = LLVMContextCreate();
  CJ_CHECK(ctx != NULL, CONVJIT_ERR_OUT_OF_MEMORY, "LLVMContextCreate failed");
  convjit_status st = cj_build_in(p, flags, ctx, out);
  LLVMContextDispose(ctx);
  if (st != CONVJIT_OK) cj_built_free(out);
  return st;
}

convjit_status cj_check_resources(const cj_kernel_info *k, const cj_arch *arch) {
  CJ_CHECK(k != NULL && arch != NULL, CONVJIT_ERR_INVALID_ARG, "cj_check_resources: NULL argument");
  /* Spills go to scratch memory: orders of magnitude slower than registers,
   * so a shipped kernel that spills is a codegen bug, not a slow path. */
  CJ_CHECK(k->vgpr_spill_count == 0, CONVJIT_ERR_RESOURCE, "kernel %s: vgpr_spill_count = %u, limit 0", k->name,
           k->vgpr_spill_count);
  CJ_CHECK(k->sgpr_spill_count == 0, CONVJIT_ERR_RESOURCE, "kernel %s: sgpr_spill_count = %u, limit 0", k->name,
           k->sgpr_spill_count);
  CJ_CHECK(k->private_segment_size == 0, CONVJIT_ERR_RESOURCE,
           "kernel %s: private_segment_size (scratch) = %u bytes per lane, limit 0", k->name,
           k->private_segment_size);
  CJ_CHECK(!k->uses_dynamic_stack, CONVJIT_ERR_RESOURCE, "kernel %s: uses_dynamic_stack = 1, limit 0", k->name);
  CJ_CHECK(k->group_segment_size <= arch->lds_bytes, CONVJIT_ERR_RESOURCE,
           "kernel %s: group_segment_size (LDS) = %u bytes, limit %u on %s", k->name, k->group_segment_size,
           arch->lds_bytes, arch->name);
  return CONVJIT_OK;
}

convjit_status cj_build_ir_text(const cj_arch *arch, const char *ir, const char *what, cj_blob *co) {
  memset(co, 0, sizeof *co);
  CJ_CHECK(arch && ir, CONVJIT_ERR_INVALID_ARG, "%s: no arch or IR text", what);
  cj_llvm_init();
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), what);
  LLVMModuleRef m = NULL;
  char *msg = NULL;
  if (LLVMParseIRInContext(ctx, mb, &m, &msg)) { /* takes ownership of mb */
    convjit_status st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "%s: IR does not parse: %s", what, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    LLVMContextDispose(ctx);
    return st;
  }
  cj_compile_out out;
  convjit_status st = cj_compile_module(m, arch, 0, 0, &out);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
  CJ_TRY(st);
  st = cj_link_code_object(&out.object, co);
  cj_compile_out_free(&out);
  return st;
}
