/* The conv kernel's epilogue (conv_igemm_internal.h): every accumulator
 * fragment through the epilogue ops (epilogue.h) to its output: y's
 * element bits (NCDHW or NDHWC, vec4 where 4 values are contiguous,
 * 64-bit addressed for BIG_OUT), or fp32 atomics into the split-K
 * workspace, whose finalize kernel then runs the ops. */
#include "codegen/conv_igemm_internal.h"

/* The group's first output channel plus col: y's channel of fragment column
 * col (the bias and scale index too). */
static LLVMValueRef cj_cv_y_chan(cj_cv *v, LLVMValueRef col) {
  if (v->c->g.groups == 1) return col;
  return LLVMBuildAdd(v->b, LLVMBuildMul(v->b, v->grp, cj_c32(v->g, v->c->g.k), ""), col, "y.chan");
}

/* y position (per channel) of output position p (< Do*Ho*Wo) of a placed
 * output (kplan_phase.h): (od, oh, ow) at (od*ys_d, oh*ys_h, ow*ys_w) in a
 * y of extents yext; the phase's first position is an offset of y's
 * pointer. Two divisions by constants per stored row, after the K loop,
 * in 32 bits whenever the phase's positions fit (BIG_OUT's i64 division by
 * a constant is a multiply-high sequence several times as long). */
static LLVMValueRef cj_cv_y_placed(cj_cv *v, LLVMValueRef p, LLVMTypeRef ty) {
  LLVMBuilderRef b = v->b;
  const cj_conv_geom *G = &v->c->g;
  LLVMTypeRef dt = ty != v->g->i32 && G->odhw <= UINT32_MAX ? v->g->i32 : ty;
  if (dt != ty) p = LLVMBuildTrunc(b, p, dt, "");
  LLVMValueRef plane = LLVMConstInt(dt, (uint64_t)G->oh * G->ow, 0), ow = LLVMConstInt(dt, G->ow, 0);
  LLVMValueRef od = LLVMBuildUDiv(b, p, plane, "od");
  LLVMValueRef rem = LLVMBuildSub(b, p, LLVMBuildMul(b, od, plane, ""), "");
  LLVMValueRef oh = LLVMBuildUDiv(b, rem, ow, "oh");
  LLVMValueRef owv = LLVMBuildSub(b, rem, LLVMBuildMul(b, oh, ow, ""), "ow");
  if (dt != ty) {
    od = LLVMBuildZExt(b, od, ty, "");
    oh = LLVMBuildZExt(b, oh, ty, "");
    owv = LLVMBuildZExt(b, owv, ty, "");
  }
  const uint32_t ys[3] = {G->ys[0] ? G->ys[0] : 1, G->ys[1] ? G->ys[1] : 1, G->ys[2] ? G->ys[2] : 1};
  const uint64_t yh = G->yext[1] ? G->yext[1] : G->oh, yw = G->yext[2] ? G->yext[2] : G->ow;
  LLVMValueRef yd = LLVMBuildMul(b, od, LLVMConstInt(ty, ys[0], 0), "");
  LLVMValueRef yhv = LLVMBuildAdd(b, LLVMBuildMul(b, yd, LLVMConstInt(ty, yh, 0), ""),
                                  LLVMBuildMul(b, oh, LLVMConstInt(ty, ys[1], 0), ""), "");
  return LLVMBuildAdd(b, LLVMBuildMul(b, yhv, LLVMConstInt(ty, yw, 0), ""),
                      LLVMBuildMul(b, owv, LLVMConstInt(ty, ys[2], 0), ""), "y.pos");
}

/* Element index of output (row m, channel col of this group), in type ty
 * (i32, or i64 for BIG_OUT), with ch = the y channel (cj_cv_y_chan) and
 * K' = K*groups: NCDHW (n*K' + ch)*Do*Ho*Wo + p with m = n*Do*Ho*Wo + p;
 * NDHWC m*K' + ch (m already counts n's positions). Placed (a phase), p
 * becomes its y position and Do*Ho*Wo y's Yd*Yh*Yw. */
static LLVMValueRef cj_cv_y_elem(cj_cv *v, LLVMValueRef m, LLVMValueRef col, LLVMTypeRef ty) {
  LLVMBuilderRef b = v->b;
  const cj_conv_geom *G = &v->c->g;
  LLVMValueRef odhw = LLVMConstInt(ty, G->odhw, 0), ch = cj_cv_y_chan(v, col);
  if (ty != v->g->i32) {
    m = LLVMBuildZExt(b, m, ty, "");
    ch = LLVMBuildZExt(b, ch, ty, "");
  }
  LLVMValueRef kall = LLVMConstInt(ty, G->k_all, 0);
  if (G->y_ndhwc && !G->placed) return LLVMBuildAdd(b, LLVMBuildMul(b, m, kall, ""), ch, "y.elem");
  LLVMValueRef n = G->n == 1 ? LLVMConstInt(ty, 0, 0) : LLVMBuildUDiv(b, m, odhw, "");
  LLVMValueRef p = LLVMBuildSub(b, m, LLVMBuildMul(b, n, odhw, ""), "");
  if (G->placed) {
    p = cj_cv_y_placed(v, p, ty);
    odhw = LLVMConstInt(ty, G->ydhw, 0);
    if (G->y_ndhwc)
      return LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, n, odhw, ""), p, ""), kall, ""), ch,
                          "y.elem");
  }
  LLVMValueRef nk = LLVMBuildAdd(b, LLVMBuildMul(b, n, kall, ""), ch, "");
  return LLVMBuildAdd(b, LLVMBuildMul(b, nk, odhw, ""), p, "y.elem");
}

/* Byte offset of output row m, channel col: i32 routed past the range
 * when masked, or i64 (BIG_OUT). */
static LLVMValueRef cj_cv_y_off(cj_cv *v, LLVMValueRef m, LLVMValueRef col, LLVMValueRef ok, uint32_t yb) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  if (v->c->big_out) return LLVMBuildMul(b, cj_cv_y_elem(v, m, col, g->i64), cj_c64(g, yb), "");
  return cj_irb_oob(g, ok, LLVMBuildMul(b, cj_cv_y_elem(v, m, col, g->i32), cj_c32(g, yb), ""), CJ_CONV_OOB);
}

/* Store r of a fragment's values val4 (element bits) at byte offset off
 * (NULL: row m's, cj_cv_y_off): the buffer store, or, BIG_OUT, a 64-bit
 * addressed store that masked lanes branch around. */
static void cj_cv_store_one(cj_cv *v, LLVMValueRef val4, uint32_t r, LLVMValueRef ok, LLVMValueRef off,
                            LLVMValueRef m, LLVMValueRef col, LLVMValueRef yr, LLVMValueRef yptr) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  uint32_t yb = cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(&c->epi));
  /* vec4: the 4 values as one 4*yb-byte store (yb == 2: <2 x i32>) */
  LLVMTypeRef vt = yb == 1 ? g->i32 : LLVMVectorType(g->i32, yb);
  const int vec = c->vec4_store || c->vec_ch_store;
  LLVMValueRef val = vec ? LLVMBuildBitCast(b, val4, vt, "") : LLVMBuildExtractElement(b, val4, cj_c32(g, r), "");
  if (!off) off = cj_cv_y_off(v, m, col, ok, yb);
  if (!c->big_out) {
    cj_irb_buf_store(g, val, yr, off, NULL, 0);
    return;
  }
  LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "st");
  LLVMBasicBlockRef nx = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "st.next");
  LLVMBuildCondBr(b, ok, st, nx);
  LLVMPositionBuilderAtEnd(b, st);
  LLVMValueRef ptr = LLVMBuildGEP2(b, g->i8, yptr, &off, 1, "");
  LLVMValueRef sti = LLVMBuildStore(b, val, ptr);
  LLVMSetAlignment(sti, vec ? 4 * yb : yb);
  LLVMBuildBr(b, nx);
  LLVMPositionBuilderAtEnd(b, nx);
}

/* Stores one accumulator fragment's 4 values (rows row0 .. +3 of channel
 * col) through the epilogue ops: fp32 atomics into the split-K workspace
 * (raw sums: the finalize runs the ops), or the output's element bits (one
 * 8-byte vec4 store when 4 rows are 4 consecutive outputs; 64-bit
 * addressed when BIG_OUT). A residual z (in y's dtype) is read at the
 * stores' own offsets, with the same masks. */
static void cj_cv_store(cj_cv *v, LLVMValueRef acc4, const LLVMValueRef chan[CJ_EPI_MAX_OPS], const cj_epi_rsrc *er,
                        LLVMValueRef row0, LLVMValueRef col, LLVMValueRef yr, LLVMValueRef yptr) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  const cj_conv_geom *G = &c->g;
  int has_z = cj_epi_find(&c->epi, CJ_EPI_RESIDUAL) != NULL;
  /* Without z the values come first (the order every kernel without a
   * residual has always been built in); with z after the offsets. */
  LLVMValueRef val4 = has_z ? NULL : cj_epi_apply(g, &c->epi, acc4, chan, NULL);
  LLVMValueRef col_ok = LLVMBuildICmp(b, LLVMIntULT, col, cj_c32(g, G->k), "");
  if (c->atomic) {
    for (uint32_t r = 0; r < 4; r++) {
      LLVMValueRef m = LLVMBuildAdd(b, row0, cj_c32(g, r), "");
      LLVMValueRef e = cj_cv_y_elem(v, m, col, g->i32);
      LLVMValueRef ok = LLVMBuildAnd(b, col_ok, LLVMBuildICmp(b, LLVMIntULT, m, cj_c32(g, (uint32_t)G->npq), ""), "");
      LLVMValueRef voff = cj_irb_oob(g, ok, LLVMBuildMul(b, e, cj_c32(g, 4), ""), CJ_CONV_OOB);
      LLVMValueRef val = LLVMBuildExtractElement(b, val4, cj_c32(g, r), "");
      LLVMTypeRef f32 = g->f32;
      LLVMValueRef a[5] = {val, yr, voff, cj_c32(g, 0), cj_c32(g, 0)};
      cj_irb_call(g, "llvm.amdgcn.raw.ptr.buffer.atomic.fadd", &f32, 1, a, 5);
    }
    return;
  }
  uint32_t yb = cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(&c->epi));
  /* one store: 4 consecutive positions (vec4_store) or channels (vec_ch_store, row0 the position, col the first) */
  const int vec = c->vec4_store || c->vec_ch_store;
  uint32_t nst = vec ? 1 : 4;
  LLVMValueRef ok[4], off[4];
  for (uint32_t r = 0; r < nst; r++) {
    LLVMValueRef m = LLVMBuildAdd(b, row0, cj_c32(g, r), "");
    ok[r] = LLVMBuildAnd(b, col_ok, LLVMBuildICmp(b, LLVMIntULT, m, cj_c32(g, (uint32_t)G->npq), ""), "");
    if (!has_z) {
      cj_cv_store_one(v, val4, r, ok[r], NULL, m, col, yr, yptr);
      continue;
    }
    off[r] = cj_cv_y_off(v, m, col, ok[r], yb);
  }
  if (!has_z) return;
  /* z is in y's dtype: its byte offsets and masks are y's */
  LLVMValueRef z;
  if (vec) {
    z = cj_epi_load_z(g, &c->epi, er, off[0], ok[0], 4);
  } else {
    z = LLVMGetPoison(v->accty);
    for (uint32_t r = 0; r < 4; r++)
      z = LLVMBuildInsertElement(b, z, cj_epi_load_z(g, &c->epi, er, off[r], ok[r], 1), cj_c32(g, r), "");
  }
  val4 = cj_epi_apply(g, &c->epi, acc4, chan, z);
  for (uint32_t r = 0; r < nst; r++) cj_cv_store_one(v, val4, r, ok[r], off[r], NULL, NULL, yr, yptr);
}

/* Every accumulator fragment through the epilogue ops to its store. */
void cj_cv_epilogue(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  LLVMValueRef yr = NULL, yptr = NULL;
  if (c->atomic) {
    yr = cj_irb_rsrc(g, cj_irb_arg_role(g, v->p, CJ_ARG_WORKSPACE), cj_c64(g, c->ws_bytes));
  } else {
    yptr = cj_irb_arg_role(g, v->p, CJ_ARG_Y);
    if (!c->big_out) yr = cj_irb_rsrc(g, yptr, cj_c64(g, c->y_bytes));
  }
  cj_epi_rsrc er;
  cj_epi_rsrc_init(g, v->p, &c->epi, c->g.k_all, (uint64_t)c->g.n * c->g.k_all * c->g.ydhw, &er);
  /* The lane re-derived after the loop: otherwise its l16 and g4 forms
   * cross the K loop in two VGPRs (spilled on 1024-thread tiles). */
  LLVMValueRef lane = cj_irb_opaque(g, v->lane);
  LLVMValueRef l16 = LLVMBuildURem(b, lane, cj_c32(g, 16), "");
  LLVMValueRef g4 = LLVMBuildMul(b, LLVMBuildUDiv(b, lane, cj_c32(g, 16), ""), cj_c32(g, 4), "");
  /* Fragment i of a wave: row block i / fm (of tile_m / halves rows), the
   * wave's fm fragments in it from wm*fm*16 (flat grid: one block). */
  uint32_t fm = c->mi_m / c->halves, fn = c->mi_n / c->halves;
  /* vec_ch_store (swapped MFMA operands): the lane's position is l%16 and
   * its 4 channels start at 4*(l/16); else the reverse */
  const int tr = c->vec_ch_store;
  LLVMValueRef rbase = LLVMBuildAdd(b, LLVMBuildAdd(b, v->m0, LLVMBuildMul(b, v->wm, cj_c32(g, fm * 16), ""), ""),
                                    tr ? l16 : g4, "");
  LLVMValueRef cbase = LLVMBuildAdd(b, LLVMBuildAdd(b, v->n0, LLVMBuildMul(b, v->wn, cj_c32(g, fn * 16), ""), ""),
                                    tr ? g4 : l16, "");
  /* Fragments row by row where VGPRs allow (< 1024 threads): LLVM builds
   * each output row's m < npq lane mask (an SGPR pair) once, so column by
   * column all mi_m*4 row masks stay live across the columns (a 256x256
   * split-K tile spilled 22 SGPRs). 1024-thread tiles (128 VGPRs) keep
   * column order: there the columns' VGPRs across the rows spill. */
  int by_row = c->threads < 1024;
  uint32_t n_out = by_row ? c->mi_m : c->mi_n, n_in = by_row ? c->mi_n : c->mi_m;
  LLVMValueRef chan[CJ_CONV_MAX_FRAG][CJ_EPI_MAX_OPS];
  int loaded[CJ_CONV_MAX_FRAG] = {0};
  for (uint32_t o = 0; o < n_out; o++)
    for (uint32_t q = 0; q < n_in; q++) {
      uint32_t i = by_row ? o : q, j = by_row ? q : o;
      LLVMValueRef col = LLVMBuildAdd(b, cbase, cj_c32(g, j / fn * (c->tile_n / c->halves) + j % fn * 16), "col");
      /* One channel per fragment column, its operands loaded once; channels
       * >= K read 0 through the range check. */
      if (!loaded[j]) cj_epi_load_channel(g, &c->epi, &er, cj_cv_y_chan(v, col), tr ? 4 : 1, chan[j]);
      loaded[j] = 1;
      LLVMValueRef row0 = LLVMBuildAdd(b, rbase, cj_c32(g, i / fm * (c->tile_m / c->halves) + i % fm * 16), "row");
      cj_cv_store(v, v->acc[i * c->mi_n + j], chan[j], &er, row0, col, yr, yptr);
      /* One fragment's index math at a time: interleaving them all keeps
       * every fragment's addresses live beside the accumulators. */
      cj_cv_fence_sched(v);
    }
}
