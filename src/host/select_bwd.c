/* Backward data's planner (contract in select.h): dx from dy and w, the
 * transposed convolution's forward, as the output phases of the forward
 * conv the descriptor describes (codegen/kplan_phase.h: each phase a dense
 * forward conv over dy with its taps reversed and K, C swapped; a phase no
 * tap reaches, the epilogue alone). Candidates and the launch sequence are
 * the conv family's (select_conv.c, select_phases.c). */
#include <string.h>
#include "host/select.h"

static convjit_status cj_bwd_prepare(const cj_conv_problem *p, const cj_arch *arch, cj_conv_prep *out) {
  CJ_CHECK(p && arch && out, CONVJIT_ERR_INVALID_ARG, "cj_bwd_prepare: NULL argument");
  CJ_TRY(cj_igemm_groups_check(p));
  memset(out, 0, sizeof *out);
  out->bwd = 1;
  out->in_role = CJ_BIND_DY;
  out->out_role = CJ_BIND_DX;
  /* dx has x's dtype, dy y's: one 16-bit element type through the GEMM
   * (the kind's dtype table, kinds.h: bf16 or f16 MFMA, fp32 accumulation) */
  CJ_TRY(cj_conv_kind_dtypes_check(p->kind, p->x_dtype, p->w_dtype, p->y_dtype));
  CJ_TRY(cj_conv_fmt_of(p, arch, &out->fm));
  cj_conv_geom fwd;
  CJ_TRY(cj_conv_problem_fields(p, &fwd));
  fwd.dtype = (uint32_t)out->fm.compute;
  /* the GEMM's input is dy (K channels per group), read in place when NDHWC */
  cj_conv_geom *g = &out->g;
  *g = fwd;
  g->c = fwd.k;
  cj_conv_prep_input(out, p->y_layout == CONVJIT_LAYOUT_NDHWC);
  fwd.x_ndhwc = g->x_ndhwc;        /* the phases' input: dy */
  fwd.x_converted = g->x_converted;
  fwd.y_ndhwc = p->x_layout == CONVJIT_LAYOUT_NDHWC; /* their output: dx */
  const uint32_t op[3] = {(uint32_t)p->output_padding[0], (uint32_t)p->output_padding[1],
                          (uint32_t)p->output_padding[2]};
  CJ_TRY(cj_conv_phases_bwd_data(&fwd, op, &out->ph));
  *g = out->ph.ph[0].g; /* the largest phase (a fill only when no phase has taps) */
  return cj_conv_geom_derive(g);
}

/* no shape-generic kernel: built synchronously */
const cj_conv_planner cj_conv_bwd_data_planner = {cj_bwd_prepare, cj_conv_prep_candidates, cj_conv_phased_sequence,
                                                  NULL, cj_igemm_groups_check};
