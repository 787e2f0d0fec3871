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

void ts_select_conv(const cj_arch *a, const cj_conv_geom *g, int has_bias, const cj_conv_opts *forced,
                    cj_kplan *conv, cj_kplan *fin, int *has_fin) {
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
  p.y_dtype = CONVJIT_DTYPE_BF16;
  p.x_layout = p.y_layout = CONVJIT_LAYOUT_NCDHW;
  p.has_bias = has_bias;
  p.x_scale = p.w_scale = 1.0f;
  p.spatial_rank = 3;
  static cj_seq seq; /* large: not on the stack */
  const cj_target t = {a, a->cu_count_default};
  if (cj_select_conv(&p, &t, forced, &seq) != CONVJIT_OK) fail_msg("select on %s: %s", a->name, cj_error_text());
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
