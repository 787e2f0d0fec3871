/* Selection test support (contract in support_select.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "support_select.h"
#include "host/select.h"

uint32_t ts_fp8_native(const cj_arch *a) {
  const cj_mfma_row *row = cj_mfma_row_of(a->mfma_fp8);
  assert_non_null(row);
  return (uint32_t)row->in_dtype;
}

void ts_select_seq_epi(const cj_arch *a, const cj_conv_geom *g, const cj_epilogue *epi, const cj_conv_opts *forced,
                       cj_seq *seq) {
  cj_conv_problem p;
  memset(&p, 0, sizeof p);
  p.n = g->n; p.c = g->c; p.d = g->d; p.h = g->h; p.w = g->w;
  p.k = g->k; p.t = g->t; p.r = g->r; p.s = g->s;
  for (int i = 0; i < 3; i++) {
    p.stride[i] = g->stride[i] ? g->stride[i] : 1;
    p.dil[i] = g->dil[i] ? g->dil[i] : 1;
    p.pad_lo[i] = g->pad_lo[i];
    p.pad_hi[i] = g->pad_hi[i];
  }
  p.groups = 1;
  p.x_dtype = p.w_dtype = (convjit_dtype)g->dtype;
  p.y_dtype = (convjit_dtype)cj_conv_y_dtype(g); /* the geometry's, else the dtype's own */
  p.x_layout = p.y_layout = CONVJIT_LAYOUT_NCDHW;
  if (epi) p.epi = *epi;
  p.x_scale = p.w_scale = 1.0f;
  p.spatial_rank = 3;
  const cj_target t = {a, a->cu_count_default};
  if (cj_select_conv(&p, &t, forced, seq) != CONVJIT_OK) fail_msg("select on %s: %s", a->name, cj_error_text());
}

void ts_select_seq(const cj_arch *a, const cj_conv_geom *g, int has_bias, const cj_conv_opts *forced, cj_seq *seq) {
  cj_epilogue e = {0};
  if (has_bias) cj_epi_add(&e, CJ_EPI_BIAS);
  ts_select_seq_epi(a, g, &e, forced, seq);
}

void ts_headline_geom(int i, uint32_t dt, cj_conv_geom *g) {
  static const uint32_t shape[TS_HEADLINE_N][10] = {/* c, d, h, w, k, t, r, s, pad t, pad hw */
                                                    {1024, 120, 160, 90, 1024, 1, 3, 3, 0, 1},
                                                    {2048, 60, 80, 45, 2048, 3, 3, 3, 1, 1},
                                                    {1024, 120, 160, 90, 1024, 3, 1, 1, 1, 0}};
  assert_true(i >= 0 && i < TS_HEADLINE_N);
  const uint32_t *v = shape[i];
  memset(g, 0, sizeof *g);
  g->dtype = dt;
  g->n = 1; g->c = v[0]; g->d = v[1]; g->h = v[2]; g->w = v[3];
  g->k = v[4]; g->t = v[5]; g->r = v[6]; g->s = v[7];
  for (int j = 0; j < 3; j++) {
    g->stride[j] = g->dil[j] = 1;
    g->pad_lo[j] = g->pad_hi[j] = j ? v[9] : v[8];
  }
}

void ts_select_conv(const cj_arch *a, const cj_conv_geom *g, int has_bias, const cj_conv_opts *forced,
                    cj_kplan *conv, cj_kplan *fin, int *has_fin) {
  cj_epilogue e = {0};
  if (has_bias) cj_epi_add(&e, CJ_EPI_BIAS);
  ts_select_conv_epi(a, g, &e, forced, conv, fin, has_fin);
}

void ts_select_conv_epi(const cj_arch *a, const cj_conv_geom *g, const cj_epilogue *epi, const cj_conv_opts *forced,
                        cj_kplan *conv, cj_kplan *fin, int *has_fin) {
  static cj_seq seq; /* large: not on the stack */
  ts_select_seq_epi(a, g, epi, forced, &seq);
  int nconv = 0;
  *has_fin = 0;
  for (uint32_t i = 0; i < seq.fwd.nsteps; i++) {
    const cj_step *s = &seq.fwd.step[i];
    if (s->kind != CJ_STEP_KERNEL) continue;
    if (s->plan.op == CJ_KOP_CONV) *conv = s->plan, nconv++;
    if (s->plan.op == CJ_KOP_CONV_FINALIZE) *fin = s->plan, *has_fin = 1;
  }
  assert_int_equal(nconv, 1);
  assert_int_equal(*has_fin, conv->u.conv.splitk > 1);
}
