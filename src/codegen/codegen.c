/* Plan -> LLVM module (contract in codegen.h): begin the module (named
 * after the plan, amdgcn-amd-amdhsa triple and data layout), call the op's
 * builder from the op table, verify, hand over. The module flag
 * "amdhsa_code_object_version" (version * 100, behaviour Error, as clang
 * writes it for -mcode-object-version) picks the code object version the
 * backend emits; without it LLVM 22 emits v6. */
#include "codegen/codegen.h"
#include "codegen/irb.h"

typedef convjit_status (*cj_builder)(cj_irb *g, const cj_kplan *p);

static const cj_builder cj_builders[CJ_KOP_COUNT] = {
#define CJ_KOP_BUILD_ROW(id, name, key, print, build, spec, prefix) [CJ_KOP_##id] = build,
    CJ_KOP_TABLE(CJ_KOP_BUILD_ROW)
#undef CJ_KOP_BUILD_ROW
};

convjit_status cj_codegen_build(const cj_kplan *p, LLVMContextRef ctx, LLVMModuleRef *out) {
  CJ_CHECK(out != NULL, CONVJIT_ERR_INVALID_ARG, "cj_codegen_build: out = NULL");
  *out = NULL;
  CJ_CHECK(p != NULL, CONVJIT_ERR_INVALID_ARG, "cj_codegen_build: plan = NULL");
  CJ_CHECK(p->arch != NULL, CONVJIT_ERR_INVALID_ARG, "cj_codegen_build: plan %s has arch = NULL", p->name);
  CJ_CHECK(p->name[0] != 0, CONVJIT_ERR_INVALID_ARG, "cj_codegen_build: plan has an empty name");
  cj_builder build = p->op > CJ_KOP_NONE && p->op < CJ_KOP_COUNT ? cj_builders[p->op] : NULL;
  CJ_CHECK(build != NULL, CONVJIT_ERR_UNSUPPORTED, "cj_codegen_build: plan %s: op = %d has no builder", p->name,
           (int)p->op);
  uint32_t cov = cj_kplan_co_version(p);
  CJ_CHECK(cov == 5 || cov == 6, CONVJIT_ERR_INVALID_ARG, "cj_codegen_build: plan %s: code_object_version = %u",
           p->name, cov);
  cj_irb g;
  CJ_TRY(cj_irb_begin(&g, ctx, p->name, p->arch));
  LLVMAddModuleFlag(g.mod, LLVMModuleFlagBehaviorError, "amdhsa_code_object_version", 26,
                    LLVMValueAsMetadata(LLVMConstInt(g.i32, cov * 100, 0)));
  /* A builder's failure is also recorded in g.st; keep whichever came first. */
  convjit_status st = build(&g, p);
  if (st != CONVJIT_OK) cj_irb_fail(&g, st);
  if (g.st == CONVJIT_OK && g.lds_bytes != p->lds_bytes)
    cj_irb_fail(&g, CJ_ERR(CONVJIT_ERR_INTERNAL, "plan %s: kernel declares %u LDS bytes, plan says %u", p->name,
                           g.lds_bytes, p->lds_bytes));
  return cj_irb_end(&g, out);
}
