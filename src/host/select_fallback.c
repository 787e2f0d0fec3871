/* The forward kind's fallback sequence (select.h, cj_conv_planner.fallback):
 * what an asynchronously created plan launches while its own kernels
 * compile (docs/api.md "Asynchronous compile").
 *
 *   pack  the generic weight pack (kplan_layout.h), writing the chosen
 *         sequence's packed layout: the same K*groups rows of T*R*S*Cp, the
 *         same element mode and QSCALE, so the caller packs a weight once
 *         for both kernel sets;
 *   fwd   the generic conv kernel (kplan_generic.h): x read where the
 *         caller left it, no workspace, the problem's epilogue.
 * Both are shape-generic (every size a kernel argument), so their cache
 * entries serve every problem of the same dtypes and epilogue. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "host/select.h"

static cj_bind u32_bind(uint32_t v) { return (cj_bind){CJ_BIND_CONST_U32, v}; }

static cj_bind f32_bind(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return (cj_bind){CJ_BIND_CONST_F32, u};
}

/* Appends kernel plan kp with grid and binds: each argument's role bind
 * from binds[], the GEOM arguments from geom[] in order. */
static convjit_status add_generic(cj_step_list *l, const cj_kplan *kp, const uint64_t grid[3], const cj_role_bind *binds,
                                  uint32_t nbinds, const uint32_t *geom, uint32_t ngeom) {
  cj_step *st = cj_seq_add_kernel(l, kp);
  CJ_CHECK(st, CONVJIT_ERR_INTERNAL, "fallback sequence longer than %d steps", CJ_SEQ_MAX_STEPS);
  uint32_t gi = 0;
  for (uint32_t i = 0; i < kp->nargs; i++) {
    if (kp->args[i].role == CJ_ARG_GEOM) {
      CJ_CHECK(gi < ngeom, CONVJIT_ERR_INTERNAL, "kernel %s: more size arguments than %u", kp->name, ngeom);
      st->bind[i] = u32_bind(geom[gi++]);
      continue;
    }
    uint32_t j = 0;
    while (j < nbinds && binds[j].role != kp->args[i].role) j++;
    CJ_CHECK(j < nbinds, CONVJIT_ERR_INTERNAL, "kernel %s argument %u (%s) has no binding", kp->name, i,
             kp->args[i].name ? kp->args[i].name : "?");
    st->bind[i] = binds[j].bind;
  }
  CJ_CHECK(gi == ngeom, CONVJIT_ERR_INTERNAL, "kernel %s: %u size arguments, %u sizes", kp->name, gi, ngeom);
  for (int d = 0; d < 3; d++) st->grid[d] = grid[d];
  return CONVJIT_OK;
}

convjit_status cj_conv_fwd_fallback(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                                    const cj_seq *chosen, cj_seq *out) {
  const cj_conv_geom *g = &prep->g;
  const cj_conv_fmt *fm = &prep->fm;
  /* the generic kernel reads x as given: an upsampled x runs as phases (select_phases.c), no fallback */
  CJ_CHECK(!p->upsample[0] && !p->upsample[1] && !p->upsample[2], CONVJIT_ERR_UNSUPPORTED,
           "desc.upsample = %" PRId64 ",%" PRId64 ",%" PRId64 ": the generic kernel reads x without upsampling",
           p->upsample[0], p->upsample[1], p->upsample[2]);
  CJ_TRY(cj_generic_legal(g, cj_dtype_bytes(p->x_dtype), p->has_x_prev));
  /* The packed weight's layout is the chosen pack's: one weight-pack step. */
  CJ_CHECK(chosen->pack.nsteps == 1 && chosen->pack.step[0].kind == CJ_STEP_KERNEL &&
               chosen->pack.step[0].plan.op == CJ_KOP_WEIGHT_PACK,
           CONVJIT_ERR_UNSUPPORTED, "the chosen sequence packs its weight in %u steps: no generic pack for it",
           chosen->pack.nsteps);
  const cj_kplan *cp = &chosen->pack.step[0].plan;
  const cj_wpack_plan *wp = &cp->u.wp;
  cj_kplan kp;
  CJ_TRY(cj_kplan_wpack_generic_init(&kp, t->arch, wp->elem_bytes, (cj_prep_mode)wp->mode));
  const uint32_t psz[5] = {wp->k, wp->c, wp->trs, wp->c_pad, wp->row_elems};
  const uint64_t pgrid[3] = {((uint64_t)wp->k * wp->row_elems + CJ_TR_THREADS - 1) / CJ_TR_THREADS, 1, 1};
  const int qi = cj_kplan_arg_index(cp, CJ_ARG_QSCALE);
  const cj_role_bind pack_binds[] = {{CJ_ARG_SRC, {CJ_BIND_W_RAW, 0}},
                                     {CJ_ARG_DST, {CJ_BIND_W_PACKED, 0}},
                                     {CJ_ARG_QSCALE, qi >= 0 ? chosen->pack.step[0].bind[qi] : f32_bind(1.0f)}};
  CJ_TRY(add_generic(&out->pack, &kp, pgrid, pack_binds, 3, psz, 5));
  out->packed_weight_bytes = chosen->packed_weight_bytes;

  CJ_TRY(cj_kplan_generic_init(&kp, t->arch, g, p->x_dtype, fm->x_mode, &p->epi));
  uint32_t geom[CJ_GEN_GEOM_COUNT];
  cj_generic_geom_values(g, p->x_layout == CONVJIT_LAYOUT_NDHWC, geom);
  uint64_t grid[3];
  cj_generic_grid(g, grid);
  const cj_role_bind conv_binds[] = {
      {CJ_ARG_X, {CJ_BIND_X, 0}},           {CJ_ARG_W, {CJ_BIND_W_PACKED, 0}},
      {CJ_ARG_BIAS, {CJ_BIND_BIAS, 0}},     {CJ_ARG_Y, {CJ_BIND_Y, 0}},
      {CJ_ARG_SCALE, {CJ_BIND_SCALE, 0}},   {CJ_ARG_RESIDUAL, {CJ_BIND_RESIDUAL, 0}},
      {CJ_ARG_ALPHA, f32_bind(fm->alpha)},  {CJ_ARG_QSCALE, f32_bind(fm->x_q)},
  };
  CJ_TRY(add_generic(&out->fwd, &kp, grid, conv_binds, sizeof conv_binds / sizeof conv_binds[0], geom,
                     CJ_GEN_GEOM_COUNT));
  out->workspace_bytes = 0;
  snprintf(out->summary, sizeof out->summary, "generic pack + generic conv %s (while the plan's kernels compile)",
           cj_dtype_name((convjit_dtype)g->dtype));
  return CONVJIT_OK;
}
