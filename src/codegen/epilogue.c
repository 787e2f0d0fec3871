/* Epilogue ops as IR (contract in epilogue.h). */
#include "codegen/epilogue.h"

void cj_epi_rsrc_init(cj_irb *g, const cj_kplan *p, const cj_epilogue *e, uint64_t channels, cj_epi_rsrc *r) {
  for (int i = 0; i < CJ_ARG_ROLE_COUNT; i++) r->by_role[i] = NULL;
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++) {
    const cj_epi_step *s = &e->ops[i];
    if (!s->role || r->by_role[s->role]) continue;
    if (cj_epi_op_scalar((cj_epi_op)s->op)) { /* fp32 bits passed as an i32 by value */
      r->by_role[s->role] = LLVMBuildBitCast(g->b, cj_irb_arg_role(g, p, (cj_arg_role)s->role), g->f32, "");
      continue;
    }
    if (!cj_epi_op_per_channel((cj_epi_op)s->op)) {
      cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "epilogue op %s has no IR yet", cj_epi_op_name((cj_epi_op)s->op)));
      continue;
    }
    r->by_role[s->role] = cj_irb_rsrc(g, cj_irb_arg_role(g, p, (cj_arg_role)s->role), cj_c64(g, channels * 4));
  }
}

void cj_epi_load_channel(cj_irb *g, const cj_epilogue *e, const cj_epi_rsrc *r, LLVMValueRef channel,
                         LLVMValueRef chan[CJ_EPI_MAX_OPS]) {
  for (uint32_t i = 0; i < CJ_EPI_MAX_OPS; i++) chan[i] = NULL;
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++) {
    const cj_epi_step *s = &e->ops[i];
    if (cj_epi_op_scalar((cj_epi_op)s->op)) chan[i] = r->by_role[s->role];
    if (!cj_epi_op_per_channel((cj_epi_op)s->op) || !r->by_role[s->role]) continue;
    chan[i] = cj_irb_buf_load(g, g->f32, r->by_role[s->role], LLVMBuildMul(g->b, channel, cj_c32(g, 4), ""), NULL, 0);
  }
}

/* v broadcast to acc's shape (a scalar stays a scalar). */
static LLVMValueRef cj_epi_splat(cj_irb *g, LLVMValueRef v, LLVMTypeRef ty) {
  if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind) return v;
  LLVMBuilderRef b = g->b;
  unsigned n = LLVMGetVectorSize(ty);
  LLVMValueRef zero[16];
  for (unsigned i = 0; i < n && i < 16; i++) zero[i] = cj_c32(g, 0);
  LLVMValueRef one = LLVMBuildInsertElement(b, LLVMGetPoison(ty), v, cj_c32(g, 0), "");
  return LLVMBuildShuffleVector(b, one, LLVMGetPoison(ty), LLVMConstVector(zero, n), "");
}

LLVMValueRef cj_epi_apply(cj_irb *g, const cj_epilogue *e, LLVMValueRef acc, const LLVMValueRef chan[CJ_EPI_MAX_OPS]) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef ty = LLVMTypeOf(acc);
  int vec = LLVMGetTypeKind(ty) == LLVMVectorTypeKind;
  unsigned n = vec ? LLVMGetVectorSize(ty) : 1;
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++) {
    const cj_epi_step *s = &e->ops[i];
    switch ((cj_epi_op)s->op) {
    case CJ_EPI_BIAS:
      if (chan[i]) acc = LLVMBuildFAdd(b, acc, cj_epi_splat(g, chan[i], ty), "");
      break;
    case CJ_EPI_ALPHA:
    case CJ_EPI_SCALE:
      if (chan[i]) acc = LLVMBuildFMul(b, acc, cj_epi_splat(g, chan[i], ty), "");
      break;
    case CJ_EPI_CONVERT:
      if (s->dtype == CONVJIT_DTYPE_BF16) {
        /* fptrunc rounds to nearest even, as the reference does. */
        LLVMValueRef h = LLVMBuildFPTrunc(b, acc, vec ? LLVMVectorType(g->bf16, n) : g->bf16, "");
        return LLVMBuildBitCast(b, h, vec ? LLVMVectorType(g->i16, n) : g->i16, "");
      }
      if (s->dtype == CONVJIT_DTYPE_F32) return acc;
      cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "epilogue: no conversion to %s yet",
                            cj_dtype_name((convjit_dtype)s->dtype)));
      return acc;
    case CJ_EPI_RESIDUAL:
    case CJ_EPI_ACTIVATION:
    case CJ_EPI_NONE:
    case CJ_EPI_OP_COUNT:
      cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "epilogue op %s has no IR yet",
                            cj_epi_op_name((cj_epi_op)s->op) ? cj_epi_op_name((cj_epi_op)s->op) : "?"));
      return acc;
    }
  }
  return acc;
}
