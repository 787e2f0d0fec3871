/* The fused epilogue's reference and error bound (contract in ref_epi.h).
 *
 * Bound. The kernel computes p' = fl32 chain of alpha*acc [*scale[k]]
 * [+ beta*z] [+ bias] and then act(p') in fp32, then rounds to bf16.
 *  1. Pre-activation: |p' - p| <= b.mag * mag + b.abs (the conv's
 *     accumulation, cj_ref_conv_bound[_fp8]) plus at most 5 fp32 roundings
 *     (alpha, scale, beta*z, + z, + bias) of values below mag + |beta z|,
 *     and the reference's own float rounding of pre (<= 2^-24 |pre|):
 *     6 * 2^-24 < 2^-21 of mag' = mag + |beta z| + |pre|.
 *  2. act is Lipschitz with L = cj_ref_act_slope: the error after it is
 *     L times the error before it.
 *  3. act's own fp32 evaluation (SiLU, GELU: v * rcp(1 + exp2(nt)), nt =
 *     -t log2 e, epilogue.c): nt carries <= 5 fp32 roundings (GELU: two
 *     constants, v^2, *c1, +c0 of one sign, *v; SiLU: 2), i.e. an absolute
 *     exponent error <= |nt| * 5 * 2^-24; exp2 then errs by ln 2 * that
 *     plus v_exp_f32's 1 ulp (2^-23). Only |nt| <= 128 matters (beyond, e
 *     is inf or below 2^-128 and sigmoid is 0 or 1 within fp32), so e errs
 *     by <= 0.694 * 128 * 5 * 2^-24 + 2^-23 < 2^-15.2 relative, sigmoid by
 *     no more (d s / s = -e/(1+e) d e / e), and 1 + e, v_rcp_f32 (1 ulp)
 *     and v * s add 4 * 2^-24: in all < 2^-15 of |y|; we take 2^-14.
 *     ReLU (maxnum) and identity are exact.
 *  4. The bf16 output rounding and the reference's float rounding are b.rel
 *     of |want| as before.
 * So |got - want| <= (b.rel + eps_act) |want| + L (b.mag + 2^-21) mag' + L b.abs. */
#include <math.h>
#include <string.h>
#include "ref/ref_epi.h"

double cj_ref_act(int act, double v) {
  switch (act) {
  case 1: return v > 0.0 ? v : 0.0;
  case 2: return v / (1.0 + exp(-v));
  case 3: return 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  default: return v;
  }
}

double cj_ref_act_slope(int act) { return act == 2 ? 1.1 : act == 3 ? 1.13 : 1.0; }

/* The named ops (cj_ref_epi_named): each one's value function and the
 * widening of the bound it applies (its own rounding, in units of the
 * result; 0 for an exact op). None yet. */
typedef struct ref_named {
  const char *name;
  double (*f)(double v);
  double rel;
} ref_named;
static const ref_named k_named[] = {{NULL, NULL, 0.0}};

convjit_status cj_ref_epi_named(const char *op, cj_ref_conv_tol *b, float *want, float *mag, size_t n) {
  (void)mag; /* an op after the activation scales nothing the bound's mag term counts */
  for (size_t k = 0; op && k < sizeof k_named / sizeof k_named[0]; k++) {
    if (!k_named[k].name || strcmp(k_named[k].name, op)) continue;
    for (size_t i = 0; i < n; i++) want[i] = (float)k_named[k].f((double)want[i]);
    b->rel += k_named[k].rel;
    return CONVJIT_OK;
  }
  return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "epilogue op %s: no CPU reference (src/ref/ref_epi.c)", op ? op : "(null)");
}

cj_ref_conv_tol cj_ref_epi_apply(cj_ref_conv_tol b, const cj_ref_epi *e, float *want, float *mag, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double pre = want[i], bz = e->z ? e->beta * (double)e->z[i] : 0.0;
    want[i] = (float)cj_ref_act(e->act, pre + bz);
    mag[i] = (float)((double)mag[i] + fabs(bz) + fabs(pre));
  }
  double L = cj_ref_act_slope(e->act), eps_act = e->act >= 2 ? 0x1p-14 : 0.0;
  cj_ref_conv_tol t;
  t.rel = b.rel + eps_act;
  t.mag = L * (b.mag + 0x1p-21);
  t.abs = L * b.abs;
  return t;
}
