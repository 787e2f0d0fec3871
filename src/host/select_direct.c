/* The direct depthwise family's planner parts (codegen/kplan_direct.h;
 * contract of the hooks in select.h): a grouped bf16 or f16 problem with
 * few channels per group (C/groups = Cg in 1..7: depthwise or ResNeXt's
 * 4, K/groups in 1..8) ->
 *   pack: w [K][Cg*T*R*S] -> [Cg*T*R*S][K] (the layout transpose with
 *         N = 1, C = K, S = Cg*T*R*S: K fastest, so a lane's vec*M output
 *         channels of one tap and input channel are one load)
 *   fwd:  [x NCDHW -> NDHWC into the workspace (the layout transpose);
 *          none for an NDHWC x, read in place]
 *         the direct conv (conv_direct.c), epilogue fused
 * The family's row in the family table (families.c) is
 * {"direct", cj_direct_family_serves, its three planners}, before the implicit
 * GEMM's: a depthwise problem it serves is its own. This file calls
 * seq.c, select_conv.c (the problem's fields) and codegen only. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "host/select.h"

int cj_direct_family_serves(const cj_conv_problem *p, const cj_target *t, char *why, size_t n) {
  (void)t;
  const char *r = NULL;
  if (!p || p->groups <= 1 || p->c % p->groups || p->c / p->groups > CJ_DIRECT_MAX_CG)
    r = "desc.groups: the direct kernels take groups > 1 with c/groups in 1..7 (depthwise: groups = c)";
  else if (p->x_dtype != CONVJIT_DTYPE_BF16 && p->x_dtype != CONVJIT_DTYPE_F16)
    r = "desc.x_dtype: the direct kernels take bf16 or f16";
  else if (cj_dtype_bytes(p->w_dtype) == 1)
    r = "desc.w_dtype: the direct kernels take bf16 or f16 weights (no fp8)";
  else if (p->k % p->groups || p->k / p->groups < 1 || p->k / p->groups > CJ_DIRECT_MAX_MULT)
    r = "desc.k: the direct kernels take a channel multiplier k/groups of 1..8";
  if (r && why && n) snprintf(why, n, "%s", r);
  return !r;
}

/* Causal streaming's time dim: the descriptor's first, problem dim 3 - rank (D in 3D, W in 1D). */
static int cj_direct_time_dim(const cj_conv_problem *p) {
  return 3 - (p->spatial_rank >= 1 && p->spatial_rank <= 3 ? p->spatial_rank : 3);
}

convjit_status cj_direct_prepare(const cj_conv_problem *p, const cj_arch *arch, cj_conv_prep *out) {
  CJ_CHECK(p && arch && out, CONVJIT_ERR_INVALID_ARG, "cj_direct_prepare: NULL argument");
  memset(out, 0, sizeof *out);
  out->direct = 1;
  out->bwd = p->kind == CONVJIT_CONV_BACKWARD_DATA;
  out->wgrad = p->kind == CONVJIT_CONV_BACKWARD_WEIGHT;
  out->in_role = out->bwd ? CJ_BIND_DY : CJ_BIND_X;
  out->out_role = out->bwd ? CJ_BIND_DX : CJ_BIND_Y;
  CJ_CHECK(p->w_dtype == p->x_dtype || (out->wgrad && p->w_dtype == CONVJIT_DTYPE_F32), CONVJIT_ERR_UNSUPPORTED,
           "desc.w_dtype = %s with desc.x_dtype = %s: the depthwise kernel takes x and w of one dtype",
           cj_dtype_name(p->w_dtype), cj_dtype_name(p->x_dtype));
  CJ_CHECK(p->y_dtype == p->x_dtype || (p->y_dtype == CONVJIT_DTYPE_F32 && !out->wgrad), CONVJIT_ERR_UNSUPPORTED,
           "desc.y_dtype = %s: the depthwise kernel gives y in x's dtype %s or f32", cj_dtype_name(p->y_dtype),
           cj_dtype_name(p->x_dtype));
  CJ_CHECK(!p->has_x_prev || p->x_layout == CONVJIT_LAYOUT_NCDHW, CONVJIT_ERR_UNSUPPORTED,
           "desc.has_x_prev = 1 with desc.x_layout = NDHWC: causal streaming places x_prev before x through the "
           "NCDHW transpose; give NCDHW x");
  CJ_CHECK(!p->upsample[0] && !p->upsample[1] && !p->upsample[2], CONVJIT_ERR_UNSUPPORTED,
           "desc.upsample with a depthwise conv: the direct kernel reads x without upsampling");
  /* causal streaming (n = 1, NCDHW x): the transposes write x_prev's P frames, then x's, along the time dim
   * (the descriptor's first: problem dim 3 - rank) into one NDHWC tensor of P + extent frames, and the conv
   * runs over it with no low time padding: the same kernel and per-output sum order */
  cj_conv_problem q = *p;
  if (p->has_x_prev) {
    const int ti = cj_direct_time_dim(p);
    int64_t *ext[3] = {&q.d, &q.h, &q.w};
    out->prev_frames = (uint64_t)p->pad_lo[ti];
    *ext[ti] += p->pad_lo[ti];
    q.pad_lo[ti] = 0;
  }
  CJ_TRY(cj_conv_problem_fields(&q, &out->g));
  /* backward data with output_padding (a transposed conv's extra dx positions): dy's extents given
   * (geometry out[], pad_hi then unused), dx's the full input's; the kernel reads only dy positions
   * inside them */
  const int64_t dy_ext[3] = {p->od, p->oh, p->ow};
  for (int i = 0; i < 3 && out->bwd; i++)
    if (p->output_padding[i]) out->g.out[i] = (uint32_t)dy_ext[i], out->g.pad_hi[i] = 0;
  out->fm.compute = p->x_dtype;
  out->fm.alpha = out->fm.x_q = out->fm.w_q = 1.0f;
  out->g.dtype = (uint32_t)p->x_dtype;
  /* the kernel reads NDHWC (x; backward data: dy) in place or the transpose's copy, and writes y (dx) in
   * the caller's layout */
  out->x_in_place = (out->bwd ? p->y_layout : p->x_layout) == CONVJIT_LAYOUT_NDHWC;
  out->x_copy = out->wgrad && p->y_layout != CONVJIT_LAYOUT_NDHWC; /* backward weight: dy transposed too */
  out->g.x_ndhwc = 1;
  out->g.y_ndhwc = (out->bwd ? p->x_layout : p->y_layout) == CONVJIT_LAYOUT_NDHWC;
  if (out->bwd) out->g.y_dtype = (uint32_t)p->x_dtype; /* dx */
  out->ph.n = out->ph.nreal = 1;
  out->ph.ph[0].g = out->g;
  return CONVJIT_OK;
}

uint32_t cj_direct_candidates(const cj_target *t, const cj_conv_prep *prep, const cj_conv_opts *forced,
                              cj_conv_opts *list, uint32_t max) {
  (void)t;
  (void)prep;
  if (!max) return 0;
  static const cj_conv_opts none;
  list[0] = forced ? *forced : none; /* the plan's defaults; a forced GEMM knob is refused by the sequence */
  return 1;
}

#define CJ_DIRECT_WS_ALIGN 256

static uint64_t cj_direct_align(uint64_t v) { return (v + CJ_DIRECT_WS_ALIGN - 1) / CJ_DIRECT_WS_ALIGN * CJ_DIRECT_WS_ALIGN; }

/* Backward weight: [x and dy NCDHW -> NDHWC into the workspace], the
 * partial sums, their finalize (dw [, db]). Workspace: x's copy, dy's
 * copy, the partials, db's partials, each 256-byte aligned. */
static convjit_status cj_direct_wgrad_sequence(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                                               cj_seq *out) {
  const int db = cj_epi_has(&p->epi, CJ_EPI_BIAS);
  cj_conv_geom g = prep->g;
  g.x_ndhwc = g.y_ndhwc = 1;
  cj_kplan kp, kf;
  CJ_TRY(cj_kplan_direct_wgrad_init(&kp, t->arch, &g, 1, (uint32_t)db, (uint32_t)p->w_dtype));
  CJ_TRY(cj_kplan_direct_wgrad_init(&kf, t->arch, &g, 2, (uint32_t)db, (uint32_t)p->w_dtype));
  const cj_direct_plan *c = &kp.u.dir;
  const cj_conv_geom *G = &c->g;
  const uint32_t eb = c->elem_bytes;
  uint64_t off = 0, x_off = 0, dy_off = 0;
  if (!prep->x_in_place) {
    cj_kplan xk;
    CJ_TRY(cj_kplan_transpose_init(&xk, t->arch, eb, G->n, G->groups * c->cg, G->dhw));
    const cj_role_bind b[] = {{CJ_ARG_SRC, {CJ_BIND_X, 0}}, {CJ_ARG_DST, {CJ_BIND_WORKSPACE, 0}}};
    CJ_TRY(cj_seq_add_bound(&out->fwd, &xk, b, 2));
    off = cj_direct_align(c->x_bytes);
  }
  if (prep->x_copy) {
    cj_kplan yk;
    dy_off = off;
    CJ_TRY(cj_kplan_transpose_init(&yk, t->arch, eb, G->n, G->k_all, G->odhw));
    const cj_role_bind b[] = {{CJ_ARG_SRC, {CJ_BIND_DY, 0}}, {CJ_ARG_DST, {CJ_BIND_WORKSPACE, dy_off}}};
    CJ_TRY(cj_seq_add_bound(&out->fwd, &yk, b, 2));
    off = cj_direct_align(off + c->y_bytes);
  }
  const uint64_t part = off, db_part = part + (uint64_t)c->npg * c->cg * G->taps * G->k_all * 4;
  const cj_role_bind binds[] = {
      {CJ_ARG_X, prep->x_in_place ? (cj_bind){CJ_BIND_X, 0} : (cj_bind){CJ_BIND_WORKSPACE, x_off}},
      {CJ_ARG_DY, prep->x_copy ? (cj_bind){CJ_BIND_WORKSPACE, dy_off} : (cj_bind){CJ_BIND_DY, 0}},
      {CJ_ARG_WORKSPACE, {CJ_BIND_WORKSPACE, part}},
      {CJ_ARG_DB_PART, {CJ_BIND_WORKSPACE, db_part}},
      {CJ_ARG_DW, {CJ_BIND_DW, 0}},
      {CJ_ARG_DB, {CJ_BIND_DB, 0}},
  };
  CJ_TRY(cj_seq_add_bound(&out->fwd, &kp, binds, sizeof binds / sizeof binds[0]));
  CJ_TRY(cj_seq_add_bound(&out->fwd, &kf, binds, sizeof binds / sizeof binds[0]));
  out->workspace_bytes = part + c->ws_bytes;
  snprintf(out->summary, sizeof out->summary,
           "%s%s + conv_direct %s dw c/g %u x%u %ux%ux%u vec %u: %u position groups + finalize (%s dw%s)",
           prep->x_in_place ? "x in place" : "x transpose", prep->x_copy ? ", dy transpose" : ", dy in place",
           c->cg > 1 ? "grouped" : "depthwise", c->cg, c->mult, G->t, G->r, G->s, c->vec, c->npg,
           cj_dtype_name((convjit_dtype)c->dw_dtype), db ? ", db" : "");
  return CONVJIT_OK;
}

convjit_status cj_direct_sequence(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                                  const cj_conv_opts *o, cj_seq *out) {
  CJ_CHECK(p && t && t->arch && prep && o && out, CONVJIT_ERR_INVALID_ARG, "cj_direct_sequence: NULL argument");
  memset(out, 0, sizeof *out);
  static const cj_conv_opts none;
  cj_conv_opts oo = *o;
  if (oo.splitk == 1) oo.splitk = 0; /* no split (a streaming caller's pin) is this kernel's own */
  CJ_CHECK(!memcmp(&oo, &none, sizeof oo), CONVJIT_ERR_INVALID_ARG,
           "conv knobs (tile, stages, splitk, ...) with a depthwise conv: they are the implicit GEMM's; the direct "
           "kernel has none of them");
  if (prep->wgrad) return cj_direct_wgrad_sequence(p, t, prep, out);
  cj_kplan kp;
  CJ_TRY(cj_kplan_direct_init(&kp, t->arch, &prep->g, (uint32_t)prep->bwd, NULL, &p->epi));
  const cj_direct_plan *c = &kp.u.dir;
  const cj_conv_geom *g = &c->g;
  const uint32_t eb = c->elem_bytes;
  /* pack: [K][Cg*taps] -> [Cg*taps][K] */
  cj_kplan pk;
  if (c->wf32) /* fp32 weights: the kernel converts none (wf32 implies Cg = 1) */
    CJ_TRY(cj_kplan_transpose_widen_init(&pk, t->arch, g->dtype == CONVJIT_DTYPE_F16 ? 2 : 1, 1, g->k_all, g->taps));
  else
    CJ_TRY(cj_kplan_transpose_init(&pk, t->arch, eb, 1, g->k_all, c->cg * g->taps));
  const cj_role_bind pack_binds[] = {{CJ_ARG_SRC, {CJ_BIND_W_RAW, 0}}, {CJ_ARG_DST, {CJ_BIND_W_PACKED, 0}}};
  CJ_TRY(cj_seq_add_bound(&out->pack, &pk, pack_binds, 2));
  out->packed_weight_bytes = c->w_bytes;
  /* x (backward data: dy) NCDHW -> NDHWC into the workspace; causal streaming: x_prev's frames first */
  if (!prep->x_in_place) {
    const uint64_t ch = prep->bwd ? g->k_all : (uint64_t)g->groups * c->cg, pix = prep->bwd ? g->odhw : g->dhw;
    const int64_t ext[3] = {p->d, p->h, p->w}; /* x_prev's frames: of x's pixels per time step */
    const uint64_t prev_pix = prep->prev_frames * (uint64_t)(p->d * p->h * p->w / ext[cj_direct_time_dim(p)]);
    for (int part = prep->prev_frames ? 0 : 1; part < 2; part++) {
      cj_kplan xk;
      CJ_TRY(cj_kplan_transpose_init(&xk, t->arch, eb, g->n, (uint32_t)ch, part ? pix - prev_pix : prev_pix));
      const cj_role_bind x_binds[] = {{CJ_ARG_SRC, {part ? prep->in_role : CJ_BIND_X_PREV, 0}},
                                      {CJ_ARG_DST, {CJ_BIND_WORKSPACE, part ? prev_pix * ch * eb : 0}}};
      CJ_TRY(cj_seq_add_bound(&out->fwd, &xk, x_binds, 2));
    }
    out->workspace_bytes = c->x_bytes;
  }
  const cj_role_bind binds[] = {
      {CJ_ARG_X, prep->x_in_place ? (cj_bind){prep->in_role, 0} : (cj_bind){CJ_BIND_WORKSPACE, 0}},
      {CJ_ARG_W, {CJ_BIND_W_PACKED, 0}},
      {CJ_ARG_BIAS, {CJ_BIND_BIAS, 0}},
      {CJ_ARG_Y, {prep->out_role, 0}},
      {CJ_ARG_SCALE, {CJ_BIND_SCALE, 0}},
      {CJ_ARG_RESIDUAL, {CJ_BIND_RESIDUAL, 0}},
  };
  CJ_TRY(cj_seq_add_bound(&out->fwd, &kp, binds, sizeof binds / sizeof binds[0]));
  snprintf(out->summary, sizeof out->summary, "%s%s + conv_direct %s %s c/g %u x%u %ux%ux%u vec %u strip %u%s",
           prep->bwd ? "dy: " : "", prep->x_in_place ? "no transpose (NDHWC in place)" : "transpose",
           cj_dtype_name((convjit_dtype)g->dtype), c->cg > 1 ? "grouped" : "depthwise", c->cg,
           c->mult, g->t, g->r, g->s, c->vec, c->strip, g->y_ndhwc ? (prep->bwd ? " dx NDHWC" : " y NDHWC") : "");
  return CONVJIT_OK;
}

/* ---- the family's planners (its row in families.c) ---- */

static convjit_status cj_direct_seq_hook(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                                         const cj_conv_opts *o, const cj_conv_opts *forced, cj_seq *out,
                                         cj_conv_opts *follow, int *has_follow) {
  (void)forced;
  (void)follow;
  if (has_follow) *has_follow = 0;
  return cj_direct_sequence(p, t, prep, o, out);
}

/* no shape-generic fallback kernel (an asynchronous depthwise plan compiles synchronously); no check past
 * serves and prepare */
const cj_conv_planner cj_conv_direct_forward_planner = {cj_direct_prepare, cj_direct_candidates, cj_direct_seq_hook,
                                                        NULL, NULL};
const cj_conv_planner cj_conv_direct_bwd_data_planner = {cj_direct_prepare, cj_direct_candidates, cj_direct_seq_hook,
                                                         NULL, NULL};
const cj_conv_planner cj_conv_direct_bwd_weight_planner = {cj_direct_prepare, cj_direct_candidates,
                                                           cj_direct_seq_hook, NULL, NULL};
