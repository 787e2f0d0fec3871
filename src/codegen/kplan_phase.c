/* Output phases (contract in kplan_phase.h): per dimension the residue
 * classes and their taps, then their product, in canonical form. */
#include <inttypes.h>
#include <string.h>
#include "codegen/kplan.h"
#include "codegen/kplan_phase.h"

/* One dimension's phase: what its conv is in that dim. */
typedef struct cj_dim_phase {
  uint32_t rho, q;        /* residue (first y position) and output extent */
  uint32_t in;            /* the phase conv's input extent */
  uint32_t taps, stride, dil, up;
  int64_t pad;            /* pad_lo of the phase conv (signed) */
  int64_t pad_hi;         /* the source problem's pad_hi where the dim is not decomposed, else -1 */
  uint32_t ys, yext;      /* placement (ys 1: dense) */
  uint32_t tap_first, tap_step;
} cj_dim_phase;

typedef struct cj_dim_phases {
  uint32_t n;
  cj_dim_phase p[CJ_PHASE_MAX];
} cj_dim_phases;

convjit_status cj_conv_phase_pack_init(cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes, cj_prep_mode mode,
                                       const cj_conv_phase *ph, const cj_conv_geom *g) {
  CJ_CHECK(p && ph && g && !ph->fill, CONVJIT_ERR_INVALID_ARG, "phase pack: NULL argument or a fill phase");
  const uint32_t jt[3] = {g->t, g->r, g->s};
  return cj_kplan_wpack_bwd_init(p, arch, elem_bytes, mode, g->groups, g->c, g->k, ph->src, jt, ph->tap_first,
                                 ph->tap_step, g->cp, (uint32_t)g->crs);
}

uint64_t cj_conv_out_extent_up(uint64_t in, uint64_t f, uint64_t filt, uint64_t stride, uint64_t dil, uint64_t lo,
                               uint64_t hi) {
  return cj_conv_out_extent(in * (f ? f : 1), filt, stride, dil, lo, hi);
}

/* Backward data in one dim: dx extent D, dy extent Do, filter T, stride s,
 * dilation d, padding p (kplan_phase.h). */
static convjit_status cj_dim_bwd(cj_dim_phases *dp, uint64_t D, uint64_t Do, uint64_t T, uint64_t s, uint64_t d,
                                 int64_t p, char dim) {
  memset(dp, 0, sizeof *dp);
  const uint64_t gg = cj_gcd(s, d), sg = s / gg, e = d / gg;
  CJ_CHECK(s <= CJ_PHASE_MAX, CONVJIT_ERR_UNSUPPORTED,
           "backward data: stride %" PRIu64 " in %c makes %" PRIu64 " output phases, at most %d", s, dim, s,
           CJ_PHASE_MAX);
  for (uint64_t rho = 0; rho < s && rho < D; rho++) {
    cj_dim_phase *ph = &dp->p[dp->n++];
    ph->rho = (uint32_t)rho;
    ph->q = (uint32_t)((D - rho + s - 1) / s);
    ph->in = (uint32_t)Do;
    ph->stride = 1;
    ph->dil = (uint32_t)e;
    ph->up = 0;
    ph->pad_hi = -1;
    ph->ys = (uint32_t)s;
    ph->yext = (uint32_t)D;
    /* the first tap t0 < s/gcd with t0*d = rho + p (mod s), if any */
    uint64_t want = (uint64_t)(((int64_t)rho + p) % (int64_t)s), t0 = sg;
    for (uint64_t t = 0; t < sg && t0 == sg; t++)
      if ((t * d) % s == want) t0 = t;
    if (t0 == sg || t0 >= T) continue; /* taps 0: a fill phase in this dim */
    uint64_t J = (T - t0 + sg - 1) / sg;
    int64_t num = (int64_t)rho + p - (int64_t)(t0 * d);
    CJ_CHECK(num % (int64_t)s == 0, CONVJIT_ERR_INTERNAL, "backward data phase %c%" PRIu64 ": %" PRId64 " %% %" PRIu64,
             dim, rho, num, s);
    int64_t c0 = num / (int64_t)s;
    ph->taps = (uint32_t)J;
    ph->pad = (int64_t)(J - 1) * (int64_t)e - c0;
    ph->tap_first = (uint32_t)(t0 + (J - 1) * sg);
    ph->tap_step = (uint32_t)sg;
  }
  return CONVJIT_OK;
}

/* Forward conv over x upsampled by f in one dim (physical extent D, output
 * extent Do over f*D): kplan_phase.h. */
static void cj_dim_up(cj_dim_phases *dp, uint64_t D, uint64_t Do, uint64_t T, uint64_t s, uint64_t d, int64_t lo,
                      int64_t hi, uint32_t f) {
  memset(dp, 0, sizeof *dp);
  if (f <= 1) { /* not decomposed: the problem's own dim */
    dp->p[dp->n++] = (cj_dim_phase){.q = (uint32_t)Do, .in = (uint32_t)D, .taps = (uint32_t)T, .stride = (uint32_t)s,
                                    .dil = (uint32_t)d, .pad = lo, .pad_hi = hi, .ys = 1};
    return;
  }
  if (s % 2 == 0) { /* floor((o*s - p + t*d)/2) = o*(s/2) + floor((t*d - p)/2) */
    dp->p[dp->n++] = (cj_dim_phase){.q = (uint32_t)Do, .in = (uint32_t)D, .taps = (uint32_t)T,
                                    .stride = (uint32_t)(s / 2), .dil = (uint32_t)d, .up = 2, .pad = lo,
                                    .pad_hi = -1, .ys = 1};
    return;
  }
  for (uint32_t rho = 0; rho < 2 && rho < Do; rho++)
    dp->p[dp->n++] = (cj_dim_phase){.rho = rho, .q = (uint32_t)((Do - rho + 1) / 2), .in = (uint32_t)D,
                                    .taps = (uint32_t)T, .stride = (uint32_t)s, .dil = (uint32_t)d, .up = 2,
                                    .pad = lo - (int64_t)rho * (int64_t)s, .pad_hi = -1, .ys = 2,
                                    .yext = (uint32_t)Do};
}

/* Dim i of phase geometry pg from its dim phase, in canonical form. */
static void cj_phase_dim_geom(cj_conv_geom *pg, int i, const cj_dim_phase *d, int fill) {
  uint32_t *filt = i == 0 ? &pg->t : i == 1 ? &pg->r : &pg->s;
  uint32_t *in = i == 0 ? &pg->d : i == 1 ? &pg->h : &pg->w;
  *in = d->in;
  pg->ys[i] = d->ys > 1 ? d->ys : 0;
  pg->yext[i] = d->ys > 1 || (d->yext && d->yext != d->q) ? d->yext : 0;
  if (fill) { /* positions only: no taps, no pads */
    *filt = 0;
    pg->stride[i] = pg->dil[i] = 1;
    pg->pad_lo[i] = pg->pad_hi[i] = 0;
    pg->up[i] = 0;
    pg->out[i] = d->q;
    return;
  }
  *filt = d->taps;
  pg->stride[i] = d->stride;
  pg->dil[i] = d->dil;
  pg->up[i] = d->up > 1 ? d->up : 0;
  pg->pad_lo[i] = (uint32_t)(int32_t)d->pad;
  if (d->pad_hi >= 0) { /* the source problem's dim as it was */
    pg->pad_hi[i] = (uint32_t)d->pad_hi;
    pg->out[i] = 0;
    return;
  }
  /* the formula gives q with the smallest pad_hi where there is no tap
   * divisor and pad_lo >= 0; elsewhere out is given */
  int64_t span = (int64_t)(d->taps - 1) * d->dil + 1;
  int64_t hi = ((int64_t)d->q - 1) * d->stride + span - (int64_t)d->in - d->pad;
  int derivable = d->up <= 1 && d->pad >= 0 && hi >= 0;
  pg->pad_hi[i] = derivable ? (uint32_t)hi : 0;
  pg->out[i] = derivable ? 0 : d->q;
}

/* The product of the per-dim phases: real phases first, by descending M. */
static convjit_status cj_phases_product(const cj_conv_geom *base, const cj_dim_phases dp[3], const uint32_t yext[3],
                                        cj_conv_phases *out) {
  uint64_t total = (uint64_t)dp[0].n * dp[1].n * dp[2].n;
  CJ_CHECK(total <= CJ_PHASE_MAX, CONVJIT_ERR_UNSUPPORTED,
           "conv output phases: %u x %u x %u = %" PRIu64 " (one kernel launch each), at most %d", dp[0].n, dp[1].n,
           dp[2].n, total, CJ_PHASE_MAX);
  cj_conv_phase real[CJ_PHASE_MAX], fills[CJ_PHASE_MAX];
  uint32_t nr = 0, nf = 0;
  for (uint32_t a = 0; a < dp[0].n; a++)
    for (uint32_t b = 0; b < dp[1].n; b++)
      for (uint32_t c = 0; c < dp[2].n; c++) {
        const cj_dim_phase *d3[3] = {&dp[0].p[a], &dp[1].p[b], &dp[2].p[c]};
        int fill = !d3[0]->taps || !d3[1]->taps || !d3[2]->taps;
        cj_conv_phase ph;
        memset(&ph, 0, sizeof ph);
        ph.g = *base;
        ph.fill = fill;
        const uint32_t src[3] = {base->t, base->r, base->s};
        for (int i = 0; i < 3; i++) {
          cj_phase_dim_geom(&ph.g, i, d3[i], fill);
          ph.yo[i] = d3[i]->rho;
          ph.tap_first[i] = d3[i]->tap_first;
          ph.tap_step[i] = d3[i]->tap_step;
          ph.src[i] = src[i];
        }
        ph.y_off = ((uint64_t)ph.yo[0] * yext[1] + ph.yo[1]) * yext[2] + ph.yo[2];
        if (base->y_ndhwc) ph.y_off *= (uint64_t)base->k * (base->groups ? base->groups : 1);
        if (fill) fills[nf++] = ph;
        else real[nr++] = ph;
      }
  /* largest M first (insertion sort, stable): the representative conv step */
  uint64_t m[CJ_PHASE_MAX];
  for (uint32_t i = 0; i < nr; i++) {
    cj_conv_geom gd = real[i].g;
    CJ_TRY(cj_conv_geom_derive(&gd));
    m[i] = gd.npq;
  }
  for (uint32_t i = 1; i < nr; i++) {
    cj_conv_phase x = real[i];
    uint64_t mx = m[i];
    uint32_t j = i;
    for (; j > 0 && m[j - 1] < mx; j--) {
      real[j] = real[j - 1];
      m[j] = m[j - 1];
    }
    real[j] = x;
    m[j] = mx;
  }
  memset(out, 0, sizeof *out);
  memcpy(out->ph, real, nr * sizeof real[0]);
  memcpy(out->ph + nr, fills, nf * sizeof fills[0]);
  out->n = nr + nf;
  out->nreal = nr;
  return CONVJIT_OK;
}

convjit_status cj_conv_phases_bwd_data(const cj_conv_geom *gin, const uint32_t out_pad[3], cj_conv_phases *out) {
  CJ_CHECK(gin && out, CONVJIT_ERR_INVALID_ARG, "backward data phases: NULL argument");
  cj_conv_geom g = *gin;
  const uint32_t op[3] = {out_pad ? out_pad[0] : 0, out_pad ? out_pad[1] : 0, out_pad ? out_pad[2] : 0};
  CJ_CHECK(op[0] < g.d && op[1] < g.h && op[2] < g.w, CONVJIT_ERR_INVALID_ARG,
           "backward data phases: output padding %u,%u,%u must be below the input extents", op[0], op[1], op[2]);
  g.d -= op[0], g.h -= op[1], g.w -= op[2]; /* dy: the forward output of the positions it reaches */
  CJ_TRY(cj_conv_geom_derive(&g));
  const uint64_t D[3] = {gin->d, gin->h, gin->w}, Do[3] = {g.od, g.oh, g.ow}, T[3] = {g.t, g.r, g.s};
  cj_dim_phases dp[3];
  for (int i = 0; i < 3; i++)
    CJ_TRY(cj_dim_bwd(&dp[i], D[i], Do[i], T[i], g.stride[i], g.dil[i], cj_conv_pad(g.pad_lo[i]), "dhw"[i]));
  /* each phase reads dy (K channels per group) and writes dx (C) */
  cj_conv_geom base;
  memset(&base, 0, sizeof base);
  base.dtype = g.dtype;
  base.n = g.n;
  base.c = g.k;
  base.k = g.c;
  base.groups = gin->groups;
  base.t = g.t, base.r = g.r, base.s = g.s; /* the forward filter: each phase's taps are its own */
  base.x_ndhwc = gin->x_ndhwc;
  base.y_ndhwc = gin->y_ndhwc;
  const uint32_t yext[3] = {gin->d, gin->h, gin->w};
  return cj_phases_product(&base, dp, yext, out);
}

convjit_status cj_conv_phases_upsample(const cj_conv_geom *gin, const uint32_t up[3], cj_conv_phases *out) {
  CJ_CHECK(gin && up && out, CONVJIT_ERR_INVALID_ARG, "upsample phases: NULL argument");
  const uint32_t in[3] = {gin->d, gin->h, gin->w}, T[3] = {gin->t, gin->r, gin->s};
  cj_dim_phases dp[3];
  uint32_t yext[3];
  for (int i = 0; i < 3; i++) {
    CJ_CHECK(up[i] <= 2, CONVJIT_ERR_INVALID_ARG, "upsample[%d] = %u: must be 1 or 2", i, up[i]);
    int64_t lo = cj_conv_pad(gin->pad_lo[i]), hi = cj_conv_pad(gin->pad_hi[i]);
    CJ_CHECK(lo >= 0 && hi >= 0 && T[i] > 0 && in[i] > 0, CONVJIT_ERR_INVALID_ARG,
             "upsample phases: dim %d: input %u, filter %u, pads %" PRId64 "/%" PRId64, i, in[i], T[i], lo, hi);
    uint64_t o = cj_conv_out_extent_up(in[i], up[i], T[i], gin->stride[i], gin->dil[i], (uint64_t)lo, (uint64_t)hi);
    CJ_CHECK(o > 0 && o < (1ull << 31), CONVJIT_ERR_INVALID_ARG,
             "upsample phases: dim %d: output extent %" PRIu64 " over the upsampled input %" PRIu64, i, o,
             (uint64_t)in[i] * (up[i] ? up[i] : 1));
    cj_dim_up(&dp[i], in[i], o, T[i], gin->stride[i], gin->dil[i], lo, hi, up[i]);
    yext[i] = (uint32_t)o;
  }
  cj_conv_geom base = *gin;
  memset(base.up, 0, sizeof base.up);
  memset(base.out, 0, sizeof base.out);
  memset(base.ys, 0, sizeof base.ys);
  memset(base.yext, 0, sizeof base.yext);
  return cj_phases_product(&base, dp, yext, out);
}
