/* The backward-weight planner (kind table's hooks, select.h; the design in
 * codegen/kplan_wgrad.h and docs/kernels.md "Backward weight"): a valid
 * backward-weight problem -> the launch sequence
 *   fwd: grid_pack dy -> workspace[dy_off]   (A: dy on the padded grid; db's
 *                                             partials to workspace[db_off] where
 *                                             no ones column fits, kplan_wgrad.h)
 *        grid_pack x  -> workspace[x_off]    (B: x by phase, + a ones row per group with db)
 *        [zero the accumulator]              (desc.nondeterministic: atomics)
 *        conv in its wgrad mode              (fp32 partial tile per reduction block)
 *        wgrad_finalize -> dw [, db]         (the blocks added in block order)
 * No weight pack (the kind reads no weight). Candidates: the GEMM's tiles,
 * all on the VGPR load path (its B columns start at any element); the
 * reduction blocks are the problem's (kplan_wgrad.c), never a candidate's,
 * so every candidate writes the same dw bits. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "host/select.h"

#define WG_WS_ALIGN 256 /* workspace sub-buffers start 256-byte aligned */

static uint64_t wg_align(uint64_t v) { return (v + WG_WS_ALIGN - 1) / WG_WS_ALIGN * WG_WS_ALIGN; }
static uint64_t wg_ceil(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static convjit_status wgrad_prepare(const cj_conv_problem *p, const cj_arch *arch, cj_conv_prep *out) {
  CJ_CHECK(p && arch && out, CONVJIT_ERR_INVALID_ARG, "wgrad_prepare: NULL argument");
  memset(out, 0, sizeof *out);
  CJ_TRY(cj_conv_kind_dtypes_check(p->kind, p->x_dtype, p->w_dtype, p->y_dtype));
  cj_conv_geom *g = &out->g;
  CJ_TRY(cj_conv_problem_fields(p, g));
  g->dtype = (uint32_t)p->x_dtype; /* x and dy: the compute dtype (the dtype table); w_dtype is dw's */
  g->wgrad = 1;
  g->wgrad_db = cj_epi_has(&p->epi, CJ_EPI_BIAS); /* the forward's bias: db */
  g->wgrad_atomic = (uint32_t)p->nondeterministic;
  CJ_TRY(cj_conv_geom_derive(g));
  out->fm.compute = p->x_dtype;
  cj_wgrad_grid w; /* the grid's limits are every candidate's: refused here once */
  return cj_wgrad_grid_derive(g, &w);
}

/* One candidate: forced fields win; every one loads through VGPRs. */
static cj_conv_opts wgrad_candidate(const cj_conv_opts *forced, uint32_t tm, uint32_t tn, uint32_t wm, uint32_t wn,
                                    uint32_t stages, uint32_t k_bytes) {
  cj_conv_opts o = *forced;
  if (!forced->tile_m) {
    o.tile_m = tm, o.tile_n = tn, o.wave_m = wm, o.wave_n = wn;
  }
  if (!forced->stages) o.stages = stages;
  if (!forced->k_bytes) o.k_bytes = k_bytes;
  if (!forced->load) o.load = CJ_CONV_LOAD_VGPR;
  if (!forced->wgm) o.wgm = 8;
  return o;
}

static void wgrad_push(cj_conv_opts *list, uint32_t *n, uint32_t max, const cj_conv_opts *c) {
  for (uint32_t i = 0; i < *n; i++)
    if (!memcmp(&list[i], c, sizeof *c)) return;
  if (*n < max) list[(*n)++] = *c;
}

/* The GEMM's tiles, where their grid (with the blocks) still has a
 * workgroup per CU: 256x256 on 2x4 waves with 32-byte K rows (gfx942: one
 * MFMA deep, 64 KiB of LDS at 4 stages; LDS cycles 0.50 of the MFMA's,
 * MODELLED, docs/kernels.md "Backward weight"), 128x256 with 64-byte rows
 * (gfx950, whose MFMA is 64 bytes deep: 256x256 there holds two loads per
 * operand in flight beside 128 accumulators and spills); then 128x128 at
 * 4, 3, 2 stages (LDS-bound, 1.00), then 64x64 (narrow dw: few output
 * channels, depthwise). The plan init skips what an arch cannot hold. */
static uint32_t wgrad_candidates(const cj_target *t, const cj_conv_prep *prep, const cj_conv_opts *forced,
                                 cj_conv_opts *list, uint32_t max) {
  static const cj_conv_opts none;
  if (!forced) forced = &none;
  const cj_conv_geom *g = &prep->g;
  cj_wgrad_grid w;
  if (cj_wgrad_grid_derive(g, &w) != CONVJIT_OK) w.blocks = 1, w.ng = g->c * g->taps;
  uint32_t n = 0;
#define WG_ADD(...)                                                 \
  do {                                                              \
    cj_conv_opts c_ = wgrad_candidate(forced, __VA_ARGS__);         \
    wgrad_push(list, &n, max, &c_);                                 \
  } while (0)
  const uint64_t per = (uint64_t)g->groups * w.blocks;
  if (wg_ceil(g->k, 256) * wg_ceil(w.ng, 256) * per >= t->cu_count) WG_ADD(256, 256, 2, 4, 4, 32);
  if (wg_ceil(g->k, 128) * wg_ceil(w.ng, 256) * per >= t->cu_count) WG_ADD(128, 256, 2, 4, 4, 64);
  for (uint32_t st = 4; st >= 2; st--) WG_ADD(128, 128, 2, 4, st, 0);
  for (uint32_t st = 4; st >= 2; st--) WG_ADD(64, 64, 2, 2, st, 0);
#undef WG_ADD
  return n;
}

static convjit_status wgrad_sequence(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                                     const cj_conv_opts *o, const cj_conv_opts *forced, cj_seq *out,
                                     cj_conv_opts *follow, int *has_follow) {
  (void)forced, (void)follow;
  CJ_CHECK(p && t && t->arch && prep && o && out, CONVJIT_ERR_INVALID_ARG, "wgrad_sequence: NULL argument");
  const cj_arch *arch = t->arch;
  memset(out, 0, sizeof *out);
  if (has_follow) *has_follow = 0;
  cj_kplan conv, kp;
  CJ_TRY(cj_kplan_conv_init(&conv, arch, &prep->g, o, NULL));
  const cj_conv_plan *c = &conv.u.conv;
  const cj_wgrad_grid *w = &c->wg;
  const uint64_t dy_off = 0, x_off = wg_align(dy_off + c->w_bytes), p_off = wg_align(x_off + c->x_bytes);
  const uint64_t db_off = wg_align(p_off + c->ws_bytes), db_bytes = (uint64_t)c->g.k_all * w->db_chunks * 4;
  const cj_role_bind dy_binds[] = {{CJ_ARG_SRC, {CJ_BIND_DY, 0}},
                                   {CJ_ARG_DST, {CJ_BIND_WORKSPACE, dy_off}},
                                   {CJ_ARG_DB_PART, {CJ_BIND_WORKSPACE, db_off}}};
  CJ_TRY(cj_kplan_grid_pack_init(&kp, arch, c, CJ_WGRAD_SIDE_DY, p->y_layout == CONVJIT_LAYOUT_NDHWC));
  CJ_TRY(cj_seq_add_bound(&out->fwd, &kp, dy_binds, 3));
  const cj_role_bind x_binds[] = {{CJ_ARG_SRC, {CJ_BIND_X, 0}}, {CJ_ARG_DST, {CJ_BIND_WORKSPACE, x_off}}};
  CJ_TRY(cj_kplan_grid_pack_init(&kp, arch, c, CJ_WGRAD_SIDE_X, p->x_layout == CONVJIT_LAYOUT_NDHWC));
  CJ_TRY(cj_seq_add_bound(&out->fwd, &kp, x_binds, 2));
  if (c->g.wgrad_atomic) CJ_TRY(cj_seq_add_memset(&out->fwd, (cj_bind){CJ_BIND_WORKSPACE, p_off}, c->ws_bytes));
  const cj_role_bind binds[] = {{CJ_ARG_DY, {CJ_BIND_WORKSPACE, dy_off}},
                                {CJ_ARG_X, {CJ_BIND_WORKSPACE, x_off}},
                                {CJ_ARG_WORKSPACE, {CJ_BIND_WORKSPACE, p_off}},
                                {CJ_ARG_DW, {CJ_BIND_DW, 0}},
                                {CJ_ARG_DB, {CJ_BIND_DB, 0}},
                                {CJ_ARG_DB_PART, {CJ_BIND_WORKSPACE, db_off}}};
  const uint32_t nbinds = sizeof binds / sizeof binds[0];
  CJ_TRY(cj_seq_add_bound(&out->fwd, &conv, binds, nbinds));
  CJ_TRY(cj_kplan_wgrad_finalize_init(&kp, arch, c, (uint32_t)p->w_dtype));
  CJ_TRY(cj_seq_add_bound(&out->fwd, &kp, binds, nbinds));
  out->workspace_bytes = db_bytes ? db_off + db_bytes : p_off + c->ws_bytes;
  char grp[32] = "";
  if (c->g.groups > 1) snprintf(grp, sizeof grp, " groups %u", c->g.groups);
  snprintf(out->summary, sizeof out->summary, "grid_pack dy, x + wgrad %s%s %ux%ux%u w%ux%u s%u, %u blocks%s + finalize -> "
           "dw %s%s", cj_dtype_name((convjit_dtype)c->g.dtype), grp, c->tile_m, c->tile_n, c->tile_k, c->wave_m,
           c->wave_n, c->stages, w->blocks, c->g.wgrad_atomic ? " (atomics)" : "", cj_dtype_name(p->w_dtype),
           w->db ? ", db" : w->db_sum ? ", db (summed by the dy pre-pass)" : "");
  return CONVJIT_OK;
}

/* no shape-generic kernel (built synchronously); no check past its prepare's (the geometry's limits) */
const cj_conv_planner cj_conv_bwd_weight_planner = {wgrad_prepare, wgrad_candidates, wgrad_sequence, NULL, NULL};
