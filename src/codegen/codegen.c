/* Plan -> LLVM module (contract in codegen.h): begin the module (named
 * after the plan, amdgcn-amd-amdhsa triple and data layout), dispatch on the
 * plan's op to its family builder, verify, hand over. */
#include "codegen/codegen.h"
#include "codegen/irb.h"

convjit_status cj_codegen_build(const cj_kplan *p, LLVMContextRef ctx, LLVMModuleRef *out) {
  CJ_CHECK(out != NULL, CONVJIT_ERR_INVALID_ARG, "cj_codegen_build: out = NULL");
  *out = NULL;
  CJ_CHECK(p != NULL, CONVJIT_ERR_INVALID_ARG, "cj_codegen_build: plan = NULL");
  CJ_CHECK(p->arch != NULL, CONVJIT_ERR_INVALID_ARG, "cj_codegen_build: plan %s has arch = NULL", p->name);
  CJ_CHECK(p->name[0] != 0, CONVJIT_ERR_INVALID_ARG, "cj_codegen_build: plan has an empty name");
  cj_irb g;
  CJ_TRY(cj_irb_begin(&g, ctx, p->name, p->arch));
  switch (p->op) {
  case CJ_KOP_TRANSPOSE:
  case CJ_KOP_WEIGHT_PACK: cj_layout_build(&g, p); break;
  case CJ_KOP_CONV_BF16: cj_conv_bf16_build(&g, p); break;
  case CJ_KOP_CONV_FINALIZE: cj_conv_finalize_build(&g, p); break;
  /* conv families add their cases here */
  default:
    cj_irb_fail(&g, CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "cj_codegen_build: plan %s: op = %d has no builder", p->name,
                           (int)p->op));
    break;
  }
  if (g.st == CONVJIT_OK && g.lds_bytes != p->lds_bytes)
    cj_irb_fail(&g, CJ_ERR(CONVJIT_ERR_INTERNAL, "plan %s: kernel declares %u LDS bytes, plan says %u", p->name,
                           g.lds_bytes, p->lds_bytes));
  return cj_irb_end(&g, out);
}
