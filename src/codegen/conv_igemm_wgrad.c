/* The backward-weight GEMM's own parts of the conv kernel (plan and grid
 * in kplan_wgrad.h; conv_igemm_internal.h maps the files): the operands'
 * resources and per-thread rows, set up instead of conv_igemm.c's im2col
 * ones, and the store of the fp32 partial tile instead of the epilogue.
 * The K loop is the multistage schedule's VGPR path unchanged; its loads
 * are cj_cv_issue's wgrad branch (conv_igemm_kstep.c).
 *
 *   workgroup (tm, tn) WGM-grouped, grid y = group, grid z = block
 *   A = dy's grid rows [K][lp]: resource rebased at row g*K/groups + m0,
 *       position z*lb; lane row r at r*lp elements (rows >= K/groups: OOB)
 *   B = x's grid rows [x_rows][lx]: resource rebased at the x row of the
 *       tile's first column's channel, position z*lb; column n = (c, tap)
 *       at its channel's phase row + off(tap) (the db column n = nw is
 *       channel C/groups, tap 0: the ones row, offset 0)
 *   partial tile: fp32 [block][K][np], rebased at (z, g*K/groups + m0, n0);
 *       one 16-byte store per fragment (the operands are swapped, a lane
 *       holds 4 consecutive columns), or 4 fp32 atomics (wgrad_atomic)
 * Every lane offset is the workgroup's own reach, < 2^31 (the plan checks
 * it), however large dy, x and the workspace are. */
#include "codegen/conv_igemm_internal.h"

static LLVMValueRef wg_u64(cj_cv *v, LLVMValueRef x) { return LLVMBuildZExt(v->b, x, v->g->i64, ""); }

/* Element offset of column n's first reduction element from the x row of
 * channel c0 (i32: within the workgroup's reach): its channel's phase row
 * and its tap's shift (kplan_wgrad.c cj_wgrad_tap, as IR). */
static LLVMValueRef wg_col_elem(cj_cv *v, LLVMValueRef n, LLVMValueRef c0) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_geom *G = &v->c->g;
  const cj_wgrad_grid *w = &v->c->wg;
  LLVMValueRef ch = LLVMBuildUDiv(b, n, cj_c32(g, G->taps), "col.c");
  LLVMValueRef tap = LLVMBuildURem(b, n, cj_c32(g, G->taps), "col.tap");
  LLVMValueRef f[3];
  f[0] = LLVMBuildUDiv(b, tap, cj_c32(g, G->r * G->s), "");
  LLVMValueRef rs = LLVMBuildURem(b, tap, cj_c32(g, G->r * G->s), "");
  f[1] = LLVMBuildUDiv(b, rs, cj_c32(g, G->s), "");
  f[2] = LLVMBuildURem(b, rs, cj_c32(g, G->s), "");
  LLVMValueRef row = cj_c32(g, 0), off = cj_c32(g, 0);
  for (int i = 0; i < 3; i++) {
    LLVMValueRef fd = LLVMBuildMul(b, f[i], cj_c32(g, G->dil[i]), "");
    LLVMValueRef idx = LLVMBuildUDiv(b, LLVMBuildURem(b, fd, cj_c32(g, G->stride[i]), ""), cj_c32(g, w->pg[i]), "");
    LLVMValueRef q = LLVMBuildUDiv(b, fd, cj_c32(g, G->stride[i]), "");
    row = LLVMBuildAdd(b, LLVMBuildMul(b, row, cj_c32(g, w->ph[i]), ""), idx, "");
    off = LLVMBuildAdd(b, LLVMBuildMul(b, off, cj_c32(g, w->j[i]), ""), q, "");
  }
  row = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildSub(b, ch, c0, ""), cj_c32(g, w->pt), ""), row, "col.row");
  return LLVMBuildAdd(b, LLVMBuildMul(b, row, cj_c32(g, (uint32_t)w->lx), ""), off, "col.elem");
}

void cj_cv_wg_rows(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  const cj_conv_geom *G = &c->g;
  const cj_wgrad_grid *w = &c->wg;
  const uint32_t eb = c->elem_bytes;
  LLVMValueRef dyptr = cj_irb_arg_role(g, v->p, CJ_ARG_DY), xptr = cj_irb_arg_role(g, v->p, CJ_ARG_X);
  LLVMValueRef gi = wg_u64(v, v->grp), z = wg_u64(v, v->zb);
  /* A (in v->xr: the resource of the GEMM's A side) at dy row g*K + m0, position z*lb */
  LLVMValueRef arow = LLVMBuildAdd(b, LLVMBuildMul(b, gi, cj_c64(g, G->k), ""), wg_u64(v, v->m0), "");
  LLVMValueRef aorg = LLVMBuildAdd(b, LLVMBuildMul(b, arow, cj_c64(g, w->lp), ""),
                                   LLVMBuildMul(b, z, cj_c64(g, w->lb), ""), "");
  v->xr = cj_irb_rsrc_at(g, dyptr, LLVMBuildMul(b, aorg, cj_c64(g, eb), "a.org"), c->w_bytes);
  /* B (in v->wr) at the x row of channel c0 = n0 / taps of the group, position z*lb */
  LLVMValueRef c0 = LLVMBuildUDiv(b, v->n0, cj_c32(g, G->taps), "c0");
  LLVMValueRef brow0 = LLVMBuildAdd(b, LLVMBuildMul(b, gi, cj_c64(g, w->x_rows_g), ""),
                                    LLVMBuildMul(b, wg_u64(v, c0), cj_c64(g, w->pt), ""), "");
  LLVMValueRef borg = LLVMBuildAdd(b, LLVMBuildMul(b, brow0, cj_c64(g, w->lx), ""),
                                   LLVMBuildMul(b, z, cj_c64(g, w->lb), ""), "");
  v->wr = cj_irb_rsrc_at(g, xptr, LLVMBuildMul(b, borg, cj_c64(g, eb), "b.org"), c->x_bytes);
  /* the row-major swizzled stage (conv_igemm_kstep.c): 16-byte loads,
   * RB/16 consecutive lanes on one row's contiguous bytes */
  cj_cv_map_init(v, &v->ma, c->tile_m, c->a_dma, c->stage_rm && cj_cv_rm_ok(v, c->tile_m, c->a_dma));
  cj_cv_map_init(v, &v->mb, c->tile_n, c->b_dma, c->stage_rm && cj_cv_rm_ok(v, c->tile_n, c->b_dma));
  for (uint32_t j = 0; j < v->ma.nrow; j++) {
    v->aoff[j] = LLVMBuildMul(b, v->ma.row[j], cj_c32(g, (uint32_t)(w->lp * eb)), "a.row");
    v->aok[j] = c->m_partial
                    ? LLVMBuildICmp(b, LLVMIntULT, LLVMBuildAdd(b, v->m0, v->ma.row[j], ""), cj_c32(g, G->k), "")
                    : NULL;
  }
  for (uint32_t j = 0; j < v->mb.nrow; j++) {
    LLVMValueRef n = LLVMBuildAdd(b, v->n0, v->mb.row[j], "");
    LLVMValueRef e = wg_col_elem(v, n, c0);
    /* an odd column: the 16 bytes start 2 bytes into its first dword */
    v->bsh[j] = w->odd ? LLVMBuildMul(b, LLVMBuildAnd(b, e, cj_c32(g, 1), ""), cj_c32(g, 16), "b.sh") : NULL;
    if (w->odd) e = LLVMBuildAnd(b, e, cj_c32(g, ~1u), "");
    v->brow[j] = LLVMBuildMul(b, e, cj_c32(g, eb), "b.row");
    v->bok[j] = c->n_tail ? LLVMBuildICmp(b, LLVMIntULT, n, cj_c32(g, w->ng), "") : NULL;
  }
  cj_cv_op_offs(v, &v->ma, c->tile_m, LLVMBuildMul(b, v->wm, cj_c32(g, c->mi_m * 16), ""), v->lds_a[0], &v->opa,
                v->opa_rm);
  cj_cv_op_offs(v, &v->mb, c->tile_n, LLVMBuildMul(b, v->wn, cj_c32(g, c->mi_n * 16), ""), v->lds_b[0], &v->opb,
                v->opb_rm);
  v->wra = cj_cv_write_lane(v, &v->ma, v->lds_a[0]);
  v->wrb = cj_cv_write_lane(v, &v->mb, v->lds_b[0]);
}

void cj_cv_wg_epilogue(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  const cj_conv_geom *G = &c->g;
  const cj_wgrad_grid *w = &c->wg;
  LLVMValueRef gi = wg_u64(v, v->grp);
  /* the tile's origin in the partials: block z's slice (one accumulator with atomics) */
  LLVMValueRef prow = LLVMBuildAdd(b, LLVMBuildMul(b, gi, cj_c64(g, G->k), ""), wg_u64(v, v->m0), "");
  if (!G->wgrad_atomic)
    prow = LLVMBuildAdd(b, prow, LLVMBuildMul(b, wg_u64(v, v->zb), cj_c64(g, G->k_all), ""), "");
  LLVMValueRef org = LLVMBuildAdd(b, LLVMBuildMul(b, prow, cj_c64(g, w->np), ""), wg_u64(v, v->n0), "");
  LLVMValueRef pr = cj_irb_rsrc_at(g, cj_irb_arg_role(g, v->p, CJ_ARG_WORKSPACE),
                                   LLVMBuildMul(b, org, cj_c64(g, 4), "p.org"), c->ws_bytes);
  /* re-derived after the loop, as conv_igemm_store.c does (VGPRs across the loop) */
  LLVMValueRef lane = cj_irb_opaque(g, v->lane);
  LLVMValueRef l16 = LLVMBuildURem(b, lane, cj_c32(g, 16), "");
  LLVMValueRef g4 = LLVMBuildMul(b, LLVMBuildUDiv(b, lane, cj_c32(g, 16), ""), cj_c32(g, 4), "");
  LLVMValueRef rbase = LLVMBuildAdd(b, LLVMBuildMul(b, v->wm, cj_c32(g, c->mi_m * 16), ""), l16, "");
  LLVMValueRef cbase = LLVMBuildAdd(b, LLVMBuildMul(b, v->wn, cj_c32(g, c->mi_n * 16), ""), g4, "");
  /* columns past the row pitch would land in the next row's */
  const int col_check = c->tiles_n * c->tile_n > w->np;
  for (uint32_t i = 0; i < c->mi_m; i++)
    for (uint32_t j = 0; j < c->mi_n; j++) {
      LLVMValueRef row = LLVMBuildAdd(b, rbase, cj_c32(g, i * 16), "row");
      LLVMValueRef col = LLVMBuildAdd(b, cbase, cj_c32(g, j * 16), "col");
      LLVMValueRef ok = c->m_partial
                            ? LLVMBuildICmp(b, LLVMIntULT, LLVMBuildAdd(b, v->m0, row, ""), cj_c32(g, G->k), "")
                            : NULL;
      if (col_check) {
        LLVMValueRef cok = LLVMBuildICmp(b, LLVMIntULT, LLVMBuildAdd(b, v->n0, col, ""), cj_c32(g, w->np), "");
        ok = ok ? LLVMBuildAnd(b, ok, cok, "") : cok;
      }
      LLVMValueRef off = LLVMBuildMul(
          b, LLVMBuildAdd(b, LLVMBuildMul(b, row, cj_c32(g, w->np), ""), col, ""), cj_c32(g, 4), "p.off");
      if (ok) off = cj_irb_oob(g, ok, off, CJ_CONV_OOB);
      LLVMValueRef acc = v->acc[i * c->mi_n + j];
      if (G->wgrad_atomic) {
        for (uint32_t e = 0; e < 4; e++)
          cj_irb_buf_atomic_fadd(g, LLVMBuildExtractElement(b, acc, cj_c32(g, e), ""), pr,
                                 LLVMBuildAdd(b, off, cj_c32(g, 4 * e), ""), NULL);
      } else {
        cj_irb_buf_store(g, acc, pr, off, NULL, 0);
      }
      cj_cv_fence_sched(v); /* one fragment's addresses at a time (conv_igemm_store.c) */
    }
}
