/* Epilogue ops as IR (contract in epilogue.h). */
#include "codegen/epilogue.h"

/* The resources of e's arguments: per-channel ones of channel_bytes (i64),
 * z of z_bytes (i64; NULL: z is read through its pointer only). */
static void cj_epi_rsrc_fill(cj_irb *g, const cj_kplan *p, const cj_epilogue *e, LLVMValueRef channel_bytes,
                             LLVMValueRef z_bytes, cj_epi_rsrc *r) {
  for (int i = 0; i < CJ_ARG_ROLE_COUNT; i++) r->by_role[i] = NULL;
  r->z_ptr = NULL;
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++) {
    const cj_epi_step *s = &e->ops[i];
    if (!s->role || r->by_role[s->role]) continue;
    if (cj_epi_op_scalar((cj_epi_op)s->op)) { /* fp32 bits passed as an i32 by value */
      r->by_role[s->role] = LLVMBuildBitCast(g->b, cj_irb_arg_role(g, p, (cj_arg_role)s->role), g->f32, "");
      continue;
    }
    if (s->op == CJ_EPI_RESIDUAL) {
      r->z_ptr = cj_irb_arg_role(g, p, (cj_arg_role)s->role);
      if (z_bytes) r->by_role[s->role] = cj_irb_rsrc(g, r->z_ptr, z_bytes);
      continue;
    }
    if (!cj_epi_op_per_channel((cj_epi_op)s->op)) {
      cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "epilogue op %s has no IR yet", cj_epi_op_name((cj_epi_op)s->op)));
      continue;
    }
    r->by_role[s->role] = cj_irb_rsrc(g, cj_irb_arg_role(g, p, (cj_arg_role)s->role), channel_bytes);
  }
}

void cj_epi_rsrc_init(cj_irb *g, const cj_kplan *p, const cj_epilogue *e, uint64_t channels, uint64_t elems,
                      cj_epi_rsrc *r) {
  uint64_t zb = elems * cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(e));
  cj_epi_rsrc_fill(g, p, e, cj_c64(g, channels * 4), zb <= 0xffffffffull ? cj_c64(g, zb) : NULL, r);
}

void cj_epi_rsrc_init_rt(cj_irb *g, const cj_kplan *p, const cj_epilogue *e, LLVMValueRef channels,
                         LLVMValueRef elems, cj_epi_rsrc *r) {
  LLVMBuilderRef b = g->b;
  uint64_t zb = cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(e));
  LLVMValueRef cb = LLVMBuildMul(b, LLVMBuildZExt(b, channels, g->i64, ""), cj_c64(g, 4), "");
  LLVMValueRef zbytes = LLVMBuildMul(b, LLVMBuildZExt(b, elems, g->i64, ""), cj_c64(g, zb), "");
  cj_epi_rsrc_fill(g, p, e, cb, zbytes, r);
}

void cj_epi_load_channel(cj_irb *g, const cj_epilogue *e, const cj_epi_rsrc *r, LLVMValueRef channel, unsigned n,
                         LLVMValueRef chan[CJ_EPI_MAX_OPS]) {
  LLVMTypeRef ty = n > 1 ? LLVMVectorType(g->f32, n) : g->f32;
  for (uint32_t i = 0; i < CJ_EPI_MAX_OPS; i++) chan[i] = NULL;
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++) {
    const cj_epi_step *s = &e->ops[i];
    if (cj_epi_op_scalar((cj_epi_op)s->op)) chan[i] = r->by_role[s->role];
    if (!cj_epi_op_per_channel((cj_epi_op)s->op) || !r->by_role[s->role]) continue;
    chan[i] = cj_irb_buf_load(g, ty, r->by_role[s->role], LLVMBuildMul(g->b, channel, cj_c32(g, 4), ""), NULL, 0);
  }
}

LLVMValueRef cj_epi_load_z(cj_irb *g, const cj_epilogue *e, const cj_epi_rsrc *r, LLVMValueRef off, LLVMValueRef ok,
                           unsigned n) {
  const cj_epi_step *s = cj_epi_find(e, CJ_EPI_RESIDUAL);
  if (!s || !r->z_ptr) return NULL;
  LLVMBuilderRef b = g->b;
  /* z is in y's dtype: n values of zb bytes, loaded in the form the y store
   * uses (an i16 or f32 alone, 4 as <2 x i32> / <4 x i32>) */
  const int zt = cj_epi_out_dtype(e);
  const uint32_t zb = cj_dtype_bytes((convjit_dtype)zt);
  LLVMTypeRef lt = n == 1 ? (zb == 4 ? g->f32 : g->i16) : LLVMVectorType(g->i32, n * zb / 4);
  LLVMValueRef bits;
  if (LLVMTypeOf(off) == g->i64) {
    LLVMValueRef o = LLVMBuildSelect(b, ok, off, cj_c64(g, 0), "");
    LLVMValueRef ptr = LLVMBuildGEP2(b, g->i8, r->z_ptr, &o, 1, "");
    bits = LLVMBuildLoad2(b, lt, ptr, "z");
    LLVMSetAlignment(bits, zb * n);
  } else {
    bits = cj_irb_buf_load(g, lt, r->by_role[s->role], off, NULL, 0);
  }
  LLVMTypeRef ft = n == 1 ? g->f32 : LLVMVectorType(g->f32, n);
  if (zt == CONVJIT_DTYPE_F32) return LLVMBuildBitCast(b, bits, ft, "z");
  LLVMTypeRef et = zt == CONVJIT_DTYPE_F16 ? g->f16 : g->bf16;
  LLVMTypeRef ht = n == 1 ? et : LLVMVectorType(et, n);
  return LLVMBuildFPExt(b, LLVMBuildBitCast(b, bits, ht, ""), ft, "z");
}

/* v broadcast to acc's shape (a scalar stays a scalar). */
static LLVMValueRef cj_epi_splat(cj_irb *g, LLVMValueRef v, LLVMTypeRef ty) {
  if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind || LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind) return v;
  LLVMBuilderRef b = g->b;
  unsigned n = LLVMGetVectorSize(ty);
  LLVMValueRef zero[16];
  for (unsigned i = 0; i < n && i < 16; i++) zero[i] = cj_c32(g, 0);
  LLVMValueRef one = LLVMBuildInsertElement(b, LLVMGetPoison(ty), v, cj_c32(g, 0), "");
  return LLVMBuildShuffleVector(b, one, LLVMGetPoison(ty), LLVMConstVector(zero, n), "");
}

/* f applied to each element of v (scalar intrinsics: one VALU op per lane value). */
static LLVMValueRef cj_epi_map(cj_irb *g, const char *intr, LLVMValueRef v) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef f32 = g->f32;
  if (LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMVectorTypeKind) return cj_irb_call(g, intr, &f32, 1, &v, 1);
  unsigned n = LLVMGetVectorSize(LLVMTypeOf(v));
  LLVMValueRef out = v;
  for (unsigned i = 0; i < n; i++) {
    LLVMValueRef x = LLVMBuildExtractElement(b, v, cj_c32(g, i), "");
    out = LLVMBuildInsertElement(b, out, cj_irb_call(g, intr, &f32, 1, &x, 1), cj_c32(g, i), "");
  }
  return out;
}

static LLVMValueRef cj_epi_fconst(cj_irb *g, LLVMTypeRef ty, double c);

/* act(v) for the ACTIVATION op (contract in epilogue.h). */
static LLVMValueRef cj_epi_act_ir(cj_irb *g, int act, LLVMValueRef v) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef ty = LLVMTypeOf(v);
  if (act == CJ_EPI_ACT_IDENTITY) return v;
  if (act == CJ_EPI_ACT_RELU) {
    LLVMValueRef a[2] = {v, LLVMConstNull(ty)};
    return cj_irb_call(g, "llvm.maxnum", &ty, 1, a, 2);
  }
  /* -t * log2(e): SiLU t = v; GELU t = 2 sqrt(2/pi) (v + 0.044715 v^3) = v (c0 + c1 v^2) */
  LLVMValueRef nt;
  const double log2e = 1.4426950408889634, c0 = 2.0 * 0.7978845608028654;
  if (act == CJ_EPI_ACT_SILU) {
    nt = LLVMBuildFMul(b, v, cj_epi_fconst(g, ty, -log2e), "");
  } else {
    LLVMValueRef v2 = LLVMBuildFMul(b, v, v, "");
    LLVMValueRef poly = LLVMBuildFAdd(b, LLVMBuildFMul(b, v2, cj_epi_fconst(g, ty, -log2e * c0 * 0.044715), ""),
                                      cj_epi_fconst(g, ty, -log2e * c0), "");
    nt = LLVMBuildFMul(b, v, poly, "");
  }
  LLVMValueRef ex = cj_epi_map(g, "llvm.amdgcn.exp2", nt);
  LLVMValueRef sig = cj_epi_map(g, "llvm.amdgcn.rcp", LLVMBuildFAdd(b, ex, cj_epi_fconst(g, ty, 1.0), ""));
  return LLVMBuildFMul(b, v, sig, "act");
}

LLVMValueRef cj_epi_apply(cj_irb *g, const cj_epilogue *e, LLVMValueRef acc, const LLVMValueRef chan[CJ_EPI_MAX_OPS],
                          LLVMValueRef z) {
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
      if (s->dtype == CONVJIT_DTYPE_BF16 || s->dtype == CONVJIT_DTYPE_F16) {
        /* fptrunc rounds to nearest even, as the reference does; f16 past
         * 65504 (from 65520 on) rounds to inf, as IEEE RNE does. */
        LLVMTypeRef et = s->dtype == CONVJIT_DTYPE_F16 ? g->f16 : g->bf16;
        LLVMValueRef h = LLVMBuildFPTrunc(b, acc, vec ? LLVMVectorType(et, n) : et, "");
        return LLVMBuildBitCast(b, h, vec ? LLVMVectorType(g->i16, n) : g->i16, "");
      }
      if (s->dtype == CONVJIT_DTYPE_F32) return acc;
      cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "epilogue: no conversion to %s yet",
                            cj_dtype_name((convjit_dtype)s->dtype)));
      return acc;
    case CJ_EPI_RESIDUAL:
      if (!z) {
        cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "epilogue: residual op without its values"));
        return acc;
      }
      if (s->beta != 1.0f) z = LLVMBuildFMul(b, z, cj_epi_fconst(g, ty, s->beta), "");
      acc = LLVMBuildFAdd(b, acc, z, "");
      break;
    case CJ_EPI_ACTIVATION:
      acc = cj_epi_act_ir(g, s->act, acc);
      break;
    case CJ_EPI_NONE:
    case CJ_EPI_OP_COUNT:
      cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "epilogue op %s has no IR yet",
                            cj_epi_op_name((cj_epi_op)s->op) ? cj_epi_op_name((cj_epi_op)s->op) : "?"));
      return acc;
    }
  }
  return acc;
}

/* c as an fp32 constant of type ty (a splat for vectors). */
static LLVMValueRef cj_epi_fconst(cj_irb *g, LLVMTypeRef ty, double c) {
  LLVMValueRef k = LLVMConstReal(g->f32, (double)(float)c);
  return cj_epi_splat(g, k, ty);
}
