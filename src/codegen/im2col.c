/* The one im2col address helper (contract in im2col.h). */
#include "codegen/im2col.h"

int64_t cj_im2col_ref(const cj_conv_geom *g, uint64_t m, uint64_t k) {
  if (m >= g->npq || k >= g->crs) return -1;
  uint64_t n = m / g->odhw, rem = m % g->odhw;
  uint64_t od = rem / ((uint64_t)g->oh * g->ow), rem2 = rem % ((uint64_t)g->oh * g->ow);
  uint64_t oh = rem2 / g->ow, ow = rem2 % g->ow;
  uint64_t c = k % g->cp, tap = k / g->cp;
  uint64_t t = tap / ((uint64_t)g->r * g->s), rs = tap % ((uint64_t)g->r * g->s);
  uint64_t r = rs / g->s, s = rs % g->s;
  int64_t id = cj_conv_in_coord(g, 0, (int64_t)od, (int64_t)t);
  int64_t ih = cj_conv_in_coord(g, 1, (int64_t)oh, (int64_t)r);
  int64_t iw = cj_conv_in_coord(g, 2, (int64_t)ow, (int64_t)s);
  if (id < 0 || id >= g->d || ih < 0 || ih >= g->h || iw < 0 || iw >= g->w) return -1;
  if (g->c_mask && c >= g->c) return -1; /* in place: channels >= C are the next pixel's */
  return ((((int64_t)n * g->d + id) * g->h + ih) * g->w + iw) * g->x_cs + (int64_t)c;
}

/* Dim i's tap divisor: 2 reads a nearest 2x upsampled input. */
static int cj_im2col_up(const cj_conv_geom *G, int i) { return G->up[i] > 1; }

/* The row part of dim i's input coordinate: o*stride - pad_lo, or (tap
 * divisor 2) o*stride, the pad then in the tap part. */
static LLVMValueRef cj_im2col_row_coord(cj_irb *g, const cj_conv_geom *G, int i, LLVMValueRef o, const char *name) {
  LLVMValueRef v = LLVMBuildMul(g->b, o, cj_c32(g, G->stride[i]), "");
  return cj_im2col_up(G, i) ? v : LLVMBuildSub(g->b, v, cj_c32(g, G->pad_lo[i]), name);
}

/* The tap part: t*dil, or floor((t*dil - pad_lo) / 2): one arithmetic
 * shift, on the scalar unit where the tap is wave-uniform. */
static LLVMValueRef cj_im2col_tap_coord(cj_irb *g, const cj_conv_geom *G, int i, LLVMValueRef t, const char *name) {
  LLVMValueRef v = LLVMBuildMul(g->b, t, cj_c32(g, G->dil[i]), name);
  if (!cj_im2col_up(G, i)) return v;
  return LLVMBuildAShr(g->b, LLVMBuildSub(g->b, v, cj_c32(g, G->pad_lo[i]), ""), cj_c32(g, 1), name);
}

void cj_im2col_init(cj_irb *g, cj_im2col *ic, const cj_conv_plan *c, uint32_t eb) {
  ic->g = &c->g;
  ic->eb = eb;
  ic->check_t = c->need_t;
  ic->check_h = c->need_h;
  ic->check_w = c->need_w;
  ic->mask_rows = c->m_partial;
  ic->temporal_fast = c->temporal_fast;
  ic->pure_gemm = c->pure_gemm_a;
  ic->nbase = cj_c32(g, 0);
  ic->tbase = cj_c32(g, 0);
}

LLVMValueRef cj_im2col_rebase(cj_irb *g, cj_im2col *ic, LLVMValueRef m0) {
  LLVMBuilderRef b = g->b;
  const cj_conv_geom *G = ic->g;
  uint32_t plane = G->oh * G->ow;
  LLVMValueRef nb = G->n == 1 ? cj_c32(g, 0) : LLVMBuildUDiv(b, m0, cj_c32(g, (uint32_t)G->odhw), "nbase");
  LLVMValueRef rem = LLVMBuildSub(b, m0, LLVMBuildMul(b, nb, cj_c32(g, (uint32_t)G->odhw), ""), "");
  LLVMValueRef od0 = LLVMBuildUDiv(b, rem, cj_c32(g, plane), "");
  /* the lowest coordinate of the workgroup's rows: its first row's, tap 0 */
  LLVMValueRef t0 = cj_im2col_row_coord(g, G, 0, od0, "");
  if (cj_im2col_up(G, 0)) t0 = LLVMBuildAdd(b, t0, cj_im2col_tap_coord(g, G, 0, cj_c32(g, 0), ""), "");
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, t0, cj_c32(g, 0), "");
  ic->nbase = nb;
  /* max(0, t0) becomes a clamped v_sub (no SALU form): without the
   * readfirstlane the origin, the rebased x pointer and its resource land in
   * VGPRs and every A DMA runs in a readfirstlane waterfall loop. */
  ic->tbase = cj_irb_readfirstlane(g, LLVMBuildSelect(b, neg, cj_c32(g, 0), t0, "tbase"));
  LLVMValueRef planes = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildZExt(b, nb, g->i64, ""), cj_c64(g, G->d), ""),
                                     LLVMBuildZExt(b, ic->tbase, g->i64, ""), "");
  return LLVMBuildMul(b, planes, cj_c64(g, (uint64_t)G->h * G->w * G->x_cs * ic->eb), "x.origin");
}

void cj_im2col_row_init(cj_irb *g, const cj_im2col *ic, LLVMValueRef m, cj_im2col_row *row) {
  LLVMBuilderRef b = g->b;
  const cj_conv_geom *G = ic->g;
  uint32_t plane = G->oh * G->ow;
  if (ic->pure_gemm) {
    row->id0 = m;
    row->ih0 = row->iw0 = cj_c32(g, 0);
    row->base = LLVMBuildMul(b, m, cj_c32(g, (uint32_t)G->crs * ic->eb), "a.row");
    return;
  }
  LLVMValueRef n, rem;
  if (G->n == 1) {
    n = cj_c32(g, 0);
    rem = m;
  } else {
    n = LLVMBuildUDiv(b, m, cj_c32(g, (uint32_t)G->odhw), "");
    rem = LLVMBuildSub(b, m, LLVMBuildMul(b, n, cj_c32(g, (uint32_t)G->odhw), ""), "");
  }
  LLVMValueRef od = LLVMBuildUDiv(b, rem, cj_c32(g, plane), "od");
  LLVMValueRef p = LLVMBuildSub(b, rem, LLVMBuildMul(b, od, cj_c32(g, plane), ""), "");
  row->id0 = cj_im2col_row_coord(g, G, 0, od, "id0");
  LLVMValueRef planes = LLVMBuildSub(
      b, LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildSub(b, n, ic->nbase, ""), cj_c32(g, G->d), ""), row->id0, ""),
      ic->tbase, "");
  LLVMValueRef pix;
  if (ic->temporal_fast) {
    /* Output H/W equal input H/W: the in-plane position is p itself. */
    row->ih0 = row->iw0 = cj_c32(g, 0);
    pix = LLVMBuildAdd(b, LLVMBuildMul(b, planes, cj_c32(g, G->h * G->w), ""), p, "");
  } else {
    LLVMValueRef oh = LLVMBuildUDiv(b, p, cj_c32(g, G->ow), "oh");
    LLVMValueRef ow = LLVMBuildSub(b, p, LLVMBuildMul(b, oh, cj_c32(g, G->ow), ""), "ow");
    row->ih0 = cj_im2col_row_coord(g, G, 1, oh, "ih0");
    row->iw0 = cj_im2col_row_coord(g, G, 2, ow, "iw0");
    pix = LLVMBuildAdd(
        b, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, planes, cj_c32(g, G->h), ""), row->ih0, ""),
                        cj_c32(g, G->w), ""),
        row->iw0, "");
  }
  row->base = LLVMBuildMul(b, pix, cj_c32(g, G->x_cs * ic->eb), "a.row");
  if (ic->mask_rows) {
    /* A row past the GEMM fails the time check: no extra register per row. */
    LLVMValueRef in = LLVMBuildICmp(b, LLVMIntULT, m, cj_c32(g, (uint32_t)G->npq), "");
    row->id0 = LLVMBuildSelect(b, in, row->id0, cj_c32(g, 0x40000000u), "");
  }
}

void cj_im2col_col_init(cj_irb *g, const cj_im2col *ic, LLVMValueRef k, LLVMValueRef k_in, LLVMValueRef k_end,
                        cj_im2col_col *col) {
  LLVMBuilderRef b = g->b;
  const cj_conv_geom *G = ic->g;
  col->valid = LLVMBuildICmp(b, LLVMIntULT, k, k_end, "k.in");
  if (ic->pure_gemm) {
    col->dt = col->dh = col->dw = cj_c32(g, 0);
    col->off = LLVMBuildMul(b, k_in ? LLVMBuildAdd(b, k, k_in, "") : k, cj_c32(g, ic->eb), "a.col");
    return;
  }
  LLVMValueRef tap = LLVMBuildUDiv(b, k, cj_c32(g, G->cp), "tap");
  LLVMValueRef c = LLVMBuildSub(b, k, LLVMBuildMul(b, tap, cj_c32(g, G->cp), ""), "c");
  LLVMValueRef t = LLVMBuildUDiv(b, tap, cj_c32(g, G->r * G->s), "");
  LLVMValueRef rs = LLVMBuildSub(b, tap, LLVMBuildMul(b, t, cj_c32(g, G->r * G->s), ""), "");
  LLVMValueRef r = LLVMBuildUDiv(b, rs, cj_c32(g, G->s), "");
  LLVMValueRef s = LLVMBuildSub(b, rs, LLVMBuildMul(b, r, cj_c32(g, G->s), ""), "");
  col->dt = cj_im2col_tap_coord(g, G, 0, t, "dt");
  col->dh = cj_im2col_tap_coord(g, G, 1, r, "dh");
  col->dw = cj_im2col_tap_coord(g, G, 2, s, "dw");
  LLVMValueRef pix = LLVMBuildAdd(
      b, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, col->dt, cj_c32(g, G->h), ""), col->dh, ""),
                      cj_c32(g, G->w), ""),
      col->dw, "");
  if (k_in) c = LLVMBuildAdd(b, c, k_in, "");
  /* x in place with C % chunk != 0: the lane's channels past C belong to
   * the next pixel (or lie past the tensor) and read zero instead */
  if (G->c_mask) col->valid = LLVMBuildAnd(b, col->valid, LLVMBuildICmp(b, LLVMIntULT, c, cj_c32(g, G->c), ""), "c.in");
  col->off = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, pix, cj_c32(g, G->x_cs), ""), c, ""),
                          cj_c32(g, ic->eb), "a.col");
}

void cj_im2col_col_shift(cj_irb *g, const cj_im2col *ic, const cj_im2col_col *col, uint32_t dk, cj_im2col_col *out) {
  *out = *col;
  out->off = LLVMBuildAdd(g->b, col->off, cj_c32(g, dk * ic->eb), "a.col");
}

static LLVMValueRef cj_im2col_in(cj_irb *g, LLVMValueRef v, LLVMValueRef o, LLVMValueRef d, uint32_t extent) {
  /* One unsigned compare covers both sides: negative coordinates wrap high. */
  LLVMValueRef in = LLVMBuildICmp(g->b, LLVMIntULT, LLVMBuildAdd(g->b, o, d, ""), cj_c32(g, extent), "");
  return LLVMBuildAnd(g->b, v, in, "");
}

LLVMValueRef cj_im2col_voffset(cj_irb *g, const cj_im2col *ic, const cj_im2col_row *row,
                               const cj_im2col_col *col, uint32_t oob) {
  LLVMValueRef v = col->valid;
  if (ic->pure_gemm && ic->mask_rows)
    v = LLVMBuildAnd(g->b, v, LLVMBuildICmp(g->b, LLVMIntULT, row->id0, cj_c32(g, (uint32_t)ic->g->npq), ""), "");
  else if (ic->check_t || ic->mask_rows) v = cj_im2col_in(g, v, row->id0, col->dt, ic->g->d);
  if (ic->check_h) v = cj_im2col_in(g, v, row->ih0, col->dh, ic->g->h);
  if (ic->check_w) v = cj_im2col_in(g, v, row->iw0, col->dw, ic->g->w);
  return cj_irb_oob(g, v, LLVMBuildAdd(g->b, row->base, col->off, ""), oob);
}
