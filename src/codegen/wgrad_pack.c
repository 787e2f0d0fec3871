/* grid_pack: one tensor (x or dy, NCDHW or NDHWC) onto the backward-weight
 * GEMM's padded grid (plan in kplan_wgrad.h): out[row][e], rows of row_len
 * elements, zero wherever the grid has no input element.
 *
 *   workgroup (e-chunk, row): 256 threads x 8 consecutive elements of one
 *   row, one 16-byte store each (rows are whole chunks)
 *   row -> group, channel c, phase (or the group's ones row): uniform
 *   e -> (n, jd, jh, jw) once per thread, then +1 with carries per element
 *   input (phase + stride*j - lo) per dim: one 2-byte load per element from
 *   a 64-bit address (x and dy may pass 2^31 elements), routed to the
 *   tensor's first element and zeroed when outside it
 *
 * 64-bit addresses rather than buffer resources: a thread's 8 elements may
 * straddle grid rows, samples and (NDHWC) pixels C elements apart, so no
 * one rebased origin bounds them; the loads are 2 bytes wide, so the
 * global loads cost what the buffer loads would. A tiled LDS transpose for
 * NDHWC inputs and vector loads for stride-1 NCDHW rows would move the
 * same bytes in fewer instructions (docs/kernels.md "What it does not do
 * yet"). */
#include "codegen/codegen.h"
#include "codegen/irb.h"

typedef struct gp_ctx {
  cj_irb *g;
  const cj_grid_pack_plan *k;
} gp_ctx;

static LLVMValueRef gp_u64(cj_irb *g, LLVMValueRef x) { return LLVMBuildZExt(g->b, x, g->i64, ""); }

/* v + 1 wrapping at lim, and whether it wrapped (the carry). */
static LLVMValueRef gp_inc(cj_irb *g, LLVMValueRef v, LLVMValueRef carry_in, uint32_t lim, LLVMValueRef *carry) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef nv = LLVMBuildAdd(b, v, LLVMBuildZExt(b, carry_in, g->i32, ""), "");
  *carry = LLVMBuildICmp(b, LLVMIntEQ, nv, cj_c32(g, lim), "");
  return LLVMBuildSelect(b, *carry, cj_c32(g, 0), nv, "");
}

/* One dim's input index u = phase + stride*j - lo, and whether it lies in
 * [0, in): unsigned, u + lo compared against [lo, lo + in). */
static LLVMValueRef gp_in(cj_irb *g, LLVMValueRef j, LLVMValueRef phase, uint32_t st, uint32_t lo, uint32_t in,
                          LLVMValueRef *ok) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef ul = LLVMBuildAdd(b, LLVMBuildMul(b, j, cj_c32(g, st), ""), phase, "");
  LLVMValueRef u = LLVMBuildSub(b, ul, cj_c32(g, lo), "");
  *ok = LLVMBuildICmp(b, LLVMIntULT, u, cj_c32(g, in), ""); /* u < 0 wraps past in */
  return u;
}

convjit_status cj_grid_pack_build(cj_irb *g, const cj_kplan *p) {
  const cj_grid_pack_plan *k = &p->u.gp;
  LLVMBuilderRef b = g->b;
  if (k->elem_bytes != 2 || k->row_len % CJ_WGRAD_PACK_ELEMS)
    return cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "grid_pack plan %s is outside the builder's limits", p->name));
  if (!cj_irb_kernel(g, p, 0)) return g->st;
  LLVMValueRef src = cj_irb_arg_role(g, p, CJ_ARG_SRC), dst = cj_irb_arg_role(g, p, CJ_ARG_DST);
  const uint32_t per_wg = CJ_WGRAD_PACK_THREADS * CJ_WGRAD_PACK_ELEMS;
  LLVMValueRef e0 = LLVMBuildAdd(b, LLVMBuildMul(b, cj_irb_wgid(g, 0), cj_c32(g, per_wg), ""),
                                 LLVMBuildMul(b, cj_irb_tid(g, 0), cj_c32(g, CJ_WGRAD_PACK_ELEMS), ""), "e0");
  /* the row: group, then channel and phase, or the group's ones row */
  LLVMValueRef row = cj_irb_wgid(g, 1);
  const uint32_t pt = k->ph_d * k->ph_h * k->ph_w, rows_g = k->cg * pt + k->ones;
  LLVMValueRef grp = LLVMBuildUDiv(b, row, cj_c32(g, rows_g), "grp");
  LLVMValueRef rem = LLVMBuildURem(b, row, cj_c32(g, rows_g), "");
  LLVMValueRef chan = LLVMBuildAdd(b, LLVMBuildMul(b, grp, cj_c32(g, k->cg), ""),
                                   LLVMBuildUDiv(b, rem, cj_c32(g, pt), ""), "chan");
  LLVMValueRef phx = LLVMBuildURem(b, rem, cj_c32(g, pt), "");
  LLVMValueRef phd = LLVMBuildMul(b, LLVMBuildUDiv(b, phx, cj_c32(g, k->ph_h * k->ph_w), ""), cj_c32(g, k->pg_d), "");
  LLVMValueRef phh = LLVMBuildMul(
      b, LLVMBuildURem(b, LLVMBuildUDiv(b, phx, cj_c32(g, k->ph_w), ""), cj_c32(g, k->ph_h), ""), cj_c32(g, k->pg_h),
      "");
  LLVMValueRef phw = LLVMBuildMul(b, LLVMBuildURem(b, phx, cj_c32(g, k->ph_w), ""), cj_c32(g, k->pg_w), "");
  /* the ones row has no input channel: its loads stay on element 0 */
  LLVMValueRef one = k->ones ? LLVMBuildICmp(b, LLVMIntEQ, rem, cj_c32(g, k->cg * pt), "ones.row") : NULL;
  /* e0 -> (n, jd, jh, jw) */
  LLVMValueRef jw = LLVMBuildURem(b, e0, cj_c32(g, k->jw), "");
  LLVMValueRef t1 = LLVMBuildUDiv(b, e0, cj_c32(g, k->jw), "");
  LLVMValueRef jh = LLVMBuildURem(b, t1, cj_c32(g, k->jh), "");
  LLVMValueRef t2 = LLVMBuildUDiv(b, t1, cj_c32(g, k->jh), "");
  LLVMValueRef jd = LLVMBuildURem(b, t2, cj_c32(g, k->jd), "");
  LLVMValueRef n = LLVMBuildUDiv(b, t2, cj_c32(g, k->jd), "");
  const uint64_t in_dhw = (uint64_t)k->in_d * k->in_h * k->in_w;
  LLVMValueRef vals[CJ_WGRAD_PACK_ELEMS];
  for (uint32_t i = 0; i < CJ_WGRAD_PACK_ELEMS; i++) {
    if (i) { /* the next grid position */
      LLVMValueRef cw, ch, cd;
      jw = gp_inc(g, jw, cj_c1(g, 1), k->jw, &cw);
      jh = gp_inc(g, jh, cw, k->jh, &ch);
      jd = gp_inc(g, jd, ch, k->jd, &cd);
      n = LLVMBuildAdd(b, n, LLVMBuildZExt(b, cd, g->i32, ""), "");
    }
    LLVMValueRef okd, okh, okw;
    LLVMValueRef ud = gp_in(g, jd, phd, k->st_d, k->lo_d, k->in_d, &okd);
    LLVMValueRef uh = gp_in(g, jh, phh, k->st_h, k->lo_h, k->in_h, &okh);
    LLVMValueRef uw = gp_in(g, jw, phw, k->st_w, k->lo_w, k->in_w, &okw);
    LLVMValueRef e = LLVMBuildAdd(b, e0, cj_c32(g, i), "");
    LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, e, cj_c32(g, (uint32_t)k->positions), "");
    ok = LLVMBuildAnd(b, LLVMBuildAnd(b, ok, okd, ""), LLVMBuildAnd(b, okh, okw, ""), "in");
    if (one) ok = LLVMBuildAnd(b, ok, LLVMBuildNot(b, one, ""), "");
    LLVMValueRef pix = LLVMBuildAdd(
        b, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, ud, cj_c32(g, k->in_h), ""), uh, ""), cj_c32(g, k->in_w), ""),
        uw, "pix"); /* within one sample's D*H*W (< 2^31: the grid's positions are) */
    LLVMValueRef off;
    if (k->ndhwc) {
      LLVMValueRef sp = LLVMBuildAdd(b, LLVMBuildMul(b, gp_u64(g, n), cj_c64(g, in_dhw), ""), gp_u64(g, pix), "");
      off = LLVMBuildAdd(b, LLVMBuildMul(b, sp, cj_c64(g, k->ch), ""), gp_u64(g, chan), "");
    } else {
      LLVMValueRef plane = LLVMBuildMul( /* (n*ch + chan) * D*H*W */
          b, LLVMBuildAdd(b, LLVMBuildMul(b, gp_u64(g, n), cj_c64(g, k->ch), ""), gp_u64(g, chan), ""),
          cj_c64(g, in_dhw), "plane");
      off = LLVMBuildAdd(b, plane, gp_u64(g, pix), "");
    }
    off = LLVMBuildSelect(b, ok, LLVMBuildMul(b, off, cj_c64(g, 2), ""), cj_c64(g, 0), "");
    LLVMValueRef v = cj_irb_global_load(g, g->i16, cj_irb_gep1(g, src, off), 2);
    vals[i] = LLVMBuildSelect(b, ok, v, LLVMConstInt(g->i16, 0, 0), "");
  }
  LLVMValueRef vec = LLVMGetPoison(LLVMVectorType(g->i16, CJ_WGRAD_PACK_ELEMS));
  for (uint32_t i = 0; i < CJ_WGRAD_PACK_ELEMS; i++) vec = LLVMBuildInsertElement(b, vec, vals[i], cj_c32(g, i), "");
  if (one) {
    LLVMValueRef splat = LLVMGetPoison(LLVMVectorType(g->i16, CJ_WGRAD_PACK_ELEMS));
    for (uint32_t i = 0; i < CJ_WGRAD_PACK_ELEMS; i++)
      splat = LLVMBuildInsertElement(b, splat, LLVMConstInt(g->i16, k->one_bits, 0), cj_c32(g, i), "");
    vec = LLVMBuildSelect(b, one, splat, vec, "");
  }
  /* the store: whole chunks, threads past the row store nothing */
  LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "store");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "done");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, e0, cj_c32(g, (uint32_t)k->row_len), ""), st, done);
  LLVMPositionBuilderAtEnd(b, st);
  LLVMValueRef o = LLVMBuildAdd(b, LLVMBuildMul(b, gp_u64(g, row), cj_c64(g, k->row_len), ""), gp_u64(g, e0), "");
  cj_irb_global_store(g, LLVMBuildBitCast(b, vec, LLVMVectorType(g->i32, 4), ""),
                      cj_irb_gep1(g, dst, LLVMBuildMul(b, o, cj_c64(g, 2), "")), 16);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRetVoid(b);
  return g->st;
}
