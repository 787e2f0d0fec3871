/* The implicit-GEMM conv kernel (plan in kplan_conv.h, address in
 * im2col.h, epilogue ops in epilogue.h). One builder over dtype rows: element
 * size, chunk and MFMA come from the plan, never from constants here. Two
 * K-loop schedules share it (cj_cv_schedules[], below): "multistage"
 * (conv_igemm_multistage.c) and the 8-wave half-block "ping-pong" of fp8 on
 * gfx950 (conv_igemm_pingpong.c); conv_igemm_internal.h maps the files.
 *
 *   workgroup (tm, tn) from the WGM-grouped linear id; grid z = K split
 *   per-thread DMA rows and MFMA operand offsets, hoisted out of the K loop
 *   the schedule's K loop: prologue, then per K step wait + barrier, the
 *     loads of a later step into the stage just read out, ds_read + MFMA
 *     into the flat accumulator grid (conv_igemm_kstep.c has the pieces)
 *   epilogue (conv_igemm_store.c): the ops (+bias ...) -> y stores (vec4
 *     when n == 1), or fp32 buffer atomics into the split-K workspace
 *
 * This file: the kernel's ids, buffer resources, LDS stages and per-thread
 * rows, and cj_conv_build, which runs the parts in order.
 */
#include <stdio.h>
#include "codegen/conv_igemm_internal.h"

/* Workgroup -> (tile_m index, tile_n index): WGM M-tiles sweep all N-tiles
 * before the next group, so a group's weight tiles stay hot in L2. */
static void cj_cv_tile_ids(cj_cv *v, LLVMValueRef pid, LLVMValueRef *tm, LLVMValueRef *tn) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  uint32_t gs = c->wgm * (uint32_t)c->tiles_n;
  LLVMValueRef grp = LLVMBuildUDiv(b, pid, cj_c32(g, gs), "");
  LLVMValueRef first = LLVMBuildMul(b, grp, cj_c32(g, c->wgm), "");
  LLVMValueRef left = LLVMBuildSub(b, cj_c32(g, (uint32_t)c->tiles_m), first, "");
  LLVMValueRef small = LLVMBuildICmp(b, LLVMIntULT, left, cj_c32(g, c->wgm), "");
  LLVMValueRef gsz = LLVMBuildSelect(b, small, left, cj_c32(g, c->wgm), "");
  LLVMValueRef in = LLVMBuildSub(b, pid, LLVMBuildMul(b, grp, cj_c32(g, gs), ""), "");
  *tn = LLVMBuildUDiv(b, in, gsz, "tn");
  *tm = LLVMBuildAdd(b, first, LLVMBuildSub(b, in, LLVMBuildMul(b, *tn, gsz, ""), ""), "tm");
}

/* LDS: one global per stage of A and of B, so LLVM's waitcnt pass can tell a
 * ds_read of one stage from DMAs still landing in another. */
static void cj_cv_lds(cj_cv *v) {
  if (cj_cv_rolled(v)) { /* one global per operand: the rolled loop indexes the stage (conv_igemm_multistage.c) */
    const cj_conv_plan *c = v->c;
    v->lds_all_a = cj_irb_lds(v->g, "lds_a", c->lds_a_stage * c->stages, 16);
    v->lds_all_b = cj_irb_lds(v->g, "lds_b", c->lds_b_stage * c->stages, 16);
    for (uint32_t s = 0; s < c->stages; s++) {
      v->lds_a[s] = cj_irb_lds_ptr(v->g, v->lds_all_a, cj_c32(v->g, s * c->lds_a_stage));
      v->lds_b[s] = cj_irb_lds_ptr(v->g, v->lds_all_b, cj_c32(v->g, s * c->lds_b_stage));
    }
    return;
  }
  for (uint32_t s = 0; s < v->c->stages; s++) {
    char n[16];
    snprintf(n, sizeof n, "lds_a%u", s);
    v->lds_a[s] = cj_irb_lds(v->g, n, v->c->lds_a_stage, 16);
  }
  for (uint32_t s = 0; s < v->c->stages; s++) {
    char n[16];
    snprintf(n, sizeof n, "lds_b%u", s);
    v->lds_b[s] = cj_irb_lds(v->g, n, v->c->lds_b_stage, 16);
  }
}

/* Thread, wave and tile ids; the split's K range. */
static void cj_cv_ids(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  v->tid = cj_irb_tid(g, 0);
  const uint32_t ws = g->arch->wave_size; /* 64: the plan init checked it */
  v->wave = cj_irb_readfirstlane(g, LLVMBuildLShr(b, v->tid, cj_c32(g, (uint32_t)__builtin_ctz(ws)), ""));
  v->lane = LLVMBuildAnd(b, v->tid, cj_c32(g, ws - 1), "lane");
  v->wm = LLVMBuildUDiv(b, v->wave, cj_c32(g, c->wave_n), "wm");
  v->wn = LLVMBuildURem(b, v->wave, cj_c32(g, c->wave_n), "wn");
  LLVMValueRef tm, tn;
  cj_cv_tile_ids(v, cj_irb_wgid(g, 0), &tm, &tn);
  v->m0 = LLVMBuildMul(b, tm, cj_c32(g, c->tile_m), "m0");
  v->n0 = LLVMBuildMul(b, tn, cj_c32(g, c->tile_n), "n0");
  LLVMValueRef kz = c->splitk > 1 ? cj_irb_wgid(g, 2) : cj_c32(g, 0);
  v->grp = c->g.groups > 1 ? cj_irb_wgid(g, 1) : cj_c32(g, 0);
  v->zb = c->g.wgrad && c->wg.blocks > 1 ? cj_irb_wgid(g, 2) : cj_c32(g, 0); /* backward weight: the block */
  v->kt0 = LLVMBuildMul(b, kz, cj_c32(g, c->k_tiles_split), "kt0");
  LLVMValueRef kend = LLVMBuildMul(b, LLVMBuildAdd(b, v->kt0, cj_c32(g, c->k_tiles_split), ""),
                                   cj_c32(g, c->tile_k), "");
  LLVMValueRef over = LLVMBuildICmp(b, LLVMIntUGT, kend, cj_c32(g, (uint32_t)c->g.crs), "");
  v->k_end = LLVMBuildSelect(b, over, cj_c32(g, (uint32_t)c->g.crs), kend, "k.end");
}

/* Buffer resources of x (rebased per workgroup when BIG_IN) and w, both
 * from the group's first channel / weight row (grouped conv: x + gi*C
 * channels, w + gi*K rows; num_records shrinks by the same bytes). */
static void cj_cv_resources(cj_cv *v, LLVMValueRef xptr, LLVMValueRef wptr) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  cj_im2col_init(g, &v->ic, c, c->elem_bytes);
  LLVMValueRef gi = LLVMBuildZExt(b, v->grp, g->i64, "");
  LLVMValueRef xg = LLVMBuildMul(b, gi, cj_c64(g, (uint64_t)c->g.c * c->elem_bytes), "x.group");
  LLVMValueRef wg = LLVMBuildMul(b, gi, cj_c64(g, (uint64_t)c->g.k * c->g.crs * c->elem_bytes), "w.group");
  if (c->big_in) {
    LLVMValueRef origin = LLVMBuildAdd(b, cj_im2col_rebase(g, &v->ic, v->m0), xg, "");
    LLVMValueRef xb = LLVMBuildGEP2(b, g->i8, xptr, &origin, 1, "x.rebased");
    v->xr = cj_irb_rsrc(g, xb, cj_c64(g, CJ_CONV_BIG_IN_RECORDS));
  } else if (c->g.groups > 1) {
    v->xr = cj_irb_rsrc(g, LLVMBuildGEP2(b, g->i8, xptr, &xg, 1, ""), LLVMBuildSub(b, cj_c64(g, c->x_bytes), xg, ""));
  } else {
    v->xr = cj_irb_rsrc(g, xptr, cj_c64(g, c->x_bytes));
  }
  if (c->g.groups > 1)
    v->wr = cj_irb_rsrc(g, LLVMBuildGEP2(b, g->i8, wptr, &wg, 1, ""), cj_c64(g, c->w_bytes / c->g.groups));
  else
    v->wr = cj_irb_rsrc(g, wptr, cj_c64(g, c->w_bytes));
}

/* Per-thread DMA rows (im2col row decompositions, weight rows) and MFMA
 * operand lane offsets, hoisted out of the K loop. */
static void cj_cv_dma_rows(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  const cj_conv_geom *G = &c->g;
  /* the row-major swizzled stage (conv_igemm_kstep.c) for A and B, but the
   * channel GEMM's k-major A */
  cj_cv_map_init(v, &v->ma, c->tile_m, c->a_dma,
                 c->stage_rm && !c->channel_gemm && cj_cv_rm_ok(v, c->tile_m, c->a_dma));
  cj_cv_map_init(v, &v->mb, c->tile_n, c->b_dma, c->stage_rm && cj_cv_rm_ok(v, c->tile_n, c->b_dma));
  /* A step inside one tap (and k_end whole steps): one column per step,
   * each row's lane offset kin_r folded into its base */
  v->rm_fold_a = v->ma.rm && !G->c_mask && (c->pure_gemm_a ? G->crs % c->tile_k == 0 : G->cp % c->tile_k == 0);
  if (c->channel_gemm) {
    /* chunk q = i*threads + tid of the [k][TILE_M] stage: k row q / cpr,
     * positions m0 + (q % cpr)*vec .. +vec-1 (one sample: Do*Ho*Wo % vec == 0) */
    uint32_t vec = c->dma_bytes / c->elem_bytes, cpr = c->tile_m / vec;
    for (uint32_t i = 0; i < c->a_dma; i++) {
      LLVMValueRef q = LLVMBuildAdd(b, v->tid, cj_c32(g, i * c->threads), "");
      v->cg_krow[i] = LLVMBuildUDiv(b, q, cj_c32(g, cpr), "");
      LLVMValueRef m = LLVMBuildAdd(
          b, v->m0, LLVMBuildMul(b, LLVMBuildURem(b, q, cj_c32(g, cpr), ""), cj_c32(g, vec), ""), "");
      LLVMValueRef n = G->n == 1 ? cj_c32(g, 0) : LLVMBuildUDiv(b, m, cj_c32(g, (uint32_t)G->odhw), "");
      LLVMValueRef pp = LLVMBuildSub(b, m, LLVMBuildMul(b, n, cj_c32(g, (uint32_t)G->odhw), ""), "");
      LLVMValueRef e = LLVMBuildAdd(b, LLVMBuildMul(b, n, cj_c32(g, (uint32_t)(G->c * G->odhw)), ""), pp, "");
      v->cg_base[i] = LLVMBuildMul(b, e, cj_c32(g, c->elem_bytes), "cg.base");
      v->cg_ok[i] = LLVMBuildICmp(b, LLVMIntULT, m, cj_c32(g, (uint32_t)G->npq), "");
    }
  }
  for (uint32_t j = 0; !c->channel_gemm && j < v->ma.nrow; j++)
    cj_im2col_row_init(g, &v->ic, LLVMBuildAdd(b, v->m0, v->ma.row[j], ""), &v->arow[j]);
  for (uint32_t j = 0; v->rm_fold_a && j < v->ma.nrow; j++)
    v->arow[j].base =
        LLVMBuildAdd(b, v->arow[j].base, LLVMBuildMul(b, v->ma.kin_r[j], cj_c32(g, c->elem_bytes), ""), "a.row");
  for (uint32_t j = 0; j < v->mb.nrow; j++) {
    LLVMValueRef n = LLVMBuildAdd(b, v->n0, v->mb.row[j], "");
    v->brow[j] = LLVMBuildMul(b, n, cj_c32(g, (uint32_t)G->crs * c->elem_bytes), "b.row");
    if (v->mb.rm) /* the lane's logical offset in the row */
      v->brow[j] = LLVMBuildAdd(b, v->brow[j], LLVMBuildMul(b, v->mb.kin_r[j], cj_c32(g, c->elem_bytes), ""), "b.row");
    v->bok[j] = c->n_tail ? LLVMBuildICmp(b, LLVMIntULT, n, cj_c32(g, G->k), "") : NULL;
  }
  if (c->channel_gemm) {
    LLVMValueRef row = LLVMBuildAdd(b, LLVMBuildMul(b, v->wm, cj_c32(g, c->mi_m * 16), ""),
                                    LLVMBuildURem(b, v->lane, cj_c32(g, 16), ""), "");
    LLVMValueRef k0 = LLVMBuildMul(b, LLVMBuildUDiv(b, v->lane, cj_c32(g, 16), ""), cj_c32(g, v->mf->k_per_lane), "");
    v->opa = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, k0, cj_c32(g, c->tile_m), ""), row, ""),
                          cj_c32(g, c->elem_bytes), "");
    v->opa = cj_irb_opaque(g, LLVMBuildAdd(b, v->opa, LLVMBuildPtrToInt(b, v->lds_a[0], g->i32, ""), ""));
  } else {
    cj_cv_op_offs(v, &v->ma, c->tile_m, LLVMBuildMul(b, v->wm, cj_c32(g, c->mi_m * 16), ""), v->lds_a[0], &v->opa,
                  v->opa_rm);
  }
  cj_cv_op_offs(v, &v->mb, c->tile_n, LLVMBuildMul(b, v->wn, cj_c32(g, c->mi_n * 16), ""), v->lds_b[0], &v->opb,
                v->opb_rm);
  if (c->load == CJ_CONV_LOAD_VGPR) {
    v->wra = cj_cv_write_lane(v, &v->ma, v->lds_a[0]);
    v->wrb = cj_cv_write_lane(v, &v->mb, v->lds_b[0]);
  }
}

/* The plan's K-loop schedules (kplan_conv.h CJ_CONV_SCHED_*): each fills
 * v->acc from the shared DMA map, im2col rows and operand offsets. */
typedef void (*cj_cv_schedule)(cj_cv *v);
static const cj_cv_schedule cj_cv_schedules[CJ_CONV_SCHED_COUNT] = {
    [CJ_CONV_SCHED_MULTISTAGE] = cj_cv_kloop_multistage,
    [CJ_CONV_SCHED_PINGPONG] = cj_cv_kloop_pingpong,
};

convjit_status cj_conv_build(cj_irb *g, const cj_kplan *p) {
  const cj_conv_plan *c = &p->u.conv;
  const cj_mfma_row *mf = cj_mfma_row_of((cj_mfma_kind)c->mfma);
  if (c->a_dma > CJ_CONV_MAX_DMA || c->b_dma > CJ_CONV_MAX_DMA || c->mi_m * c->mi_n > CJ_CONV_MAX_FRAG ||
      c->tile_k * c->elem_bytes > 16 * CJ_CONV_MAX_KQ ||
      c->stages > 4 || !mf || mf->k_runs > 2 ||
      /* a phase without taps (kplan_phase.h) runs no K loop: any K steps */
      (c->sched == CJ_CONV_SCHED_PINGPONG &&
       (c->threads != 512 || c->mi_m != 8 || c->mi_n != 4 ||
        (c->g.taps && (c->k_tiles_split < 2 || c->k_tiles_split % 2)))) ||
      c->sched <= 0 || c->sched >= CJ_CONV_SCHED_COUNT || !cj_cv_schedules[c->sched])
    return cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "conv plan %s is outside the builder's limits", p->name));
  cj_cv vv = {0}, *v = &vv;
  v->g = g;
  v->p = p;
  v->c = c;
  v->mf = mf;
  v->b = g->b;
  int pp = c->sched == CJ_CONV_SCHED_PINGPONG;
  /* ping-pong: 2 waves per SIMD (8 per CU), so 256 registers per lane */
  cj_irb_kernel(g, p, pp ? 2 : 0);
  if (g->st) return g->st;
  v->opty = cj_irb_operand_type(g, mf->opnd, mf->opnd_lanes);
  v->accty = LLVMVectorType(g->f32, 4);
  /* No taps (a phase of positions no tap reaches, kplan_phase.h): no
   * loads and no K loop, the epilogue of zero accumulators. */
  const int kloop = c->g.taps > 0;
  if (kloop && pp) cj_cv_pp_lds(v);
  else if (kloop) cj_cv_lds(v);
  cj_cv_ids(v);
  for (uint32_t f = 0; f < c->mi_m * c->mi_n; f++) v->acc[f] = LLVMConstNull(v->accty);
  if (c->g.wgrad) { /* backward weight: plain operand rows (conv_igemm_wgrad.c) */
    cj_cv_wg_rows(v);
    cj_cv_schedules[c->sched](v);
    cj_cv_wg_epilogue(v);
  } else {
    if (kloop) {
      cj_cv_resources(v, cj_irb_arg_role(g, p, CJ_ARG_X), cj_irb_arg_role(g, p, CJ_ARG_W));
      if (pp) cj_cv_pp_rows(v);
      else cj_cv_dma_rows(v);
      cj_cv_schedules[c->sched](v);
    }
    cj_cv_epilogue(v);
  }
  LLVMBuildRetVoid(g->b);
  return g->st;
}
