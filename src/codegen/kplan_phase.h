/* Output phases: a conv whose output positions split by residue into
 * dense implicit GEMMs of the conv family (docs/kernels.md "Backward data
 * and transposed convolution", "Fused nearest upsample"). Pure C, no LLVM:
 * the planners (src/host) turn each phase into a conv kernel step.
 *
 * Backward data (dx from dy and w) of the forward conv described by a
 * geometry g (x = dx of extent D, y = dy of extent Do, per dim): with
 * input index i = o*s - p + t*d, dx[i] = sum over (t, o) with
 * o*s = i + p - t*d of dy[o] * w[t]. The residue rho = i mod s (a phase)
 * sees only the taps with t*d = rho + p (mod s): with gcd = gcd(s, d),
 * none unless gcd | rho + p, else t_j = t0 + j*(s/gcd), j < J, and
 * o = q + c0 - j*(d/gcd) for i = q*s + rho, c0 = (rho + p - t0*d) / s.
 * Reversing j makes the phase a FORWARD conv over dy: stride 1, dilation
 * d/gcd, J taps, pad_lo (J-1)*(d/gcd) - c0 (may be < 0), Q = ceil((D -
 * rho)/s) outputs placed at q*s + rho; weights w'[c][j'][k] = w[k][c][t at
 * J-1-j'] (K and C swapped), one packed block per phase. prod(s) phases in
 * 3D, each a dense GEMM of only its taps: no MFMA on the zeros a strided
 * conv's gradient would have between dy's rows. A phase with J = 0 in some
 * dim (s larger than the dilated filter reaches) has positions no tap
 * reaches: a "fill" phase, the epilogue of zero there.
 *
 * Nearest upsample by 2 of the conv's input (the conv reads x up-sampled,
 * u = o*s - p + t*d in [0, 2D), element floor(u/2)): with s even one phase
 * of stride s/2 and tap offsets floor((t*d - p)/2) (the plan's tap
 * divisor); with s odd o = 2q + rho gives floor(u/2) = q*s +
 * floor((t*d - (p - rho*s))/2): two phases per dim, each a conv over x
 * itself with all T taps, placed at 2q + rho. Every output sees the same
 * taps in the same order as the conv of the upsampled tensor: the same
 * MFMA sums, bit for bit.
 *
 * Canonical form (one kernel per distinct code): out is given only where
 * the forward formula cannot derive it (pad_hi then 0); ys/yext only when
 * placed; a fill phase has filter 0 x 0 x 0, no pads. The phase's first y
 * position is not a plan field: y's pointer is offset to it (y_off), so
 * phases that differ only there share one kernel. */
#ifndef CJ_CODEGEN_KPLAN_PHASE_H
#define CJ_CODEGEN_KPLAN_PHASE_H

#include <stdint.h>
#include "codegen/kplan_conv.h"
#include "codegen/kplan_layout.h"
#include "util/cj.h"

#define CJ_PHASE_MAX 32 /* phases of one problem: prod(stride) (backward data), 2^3 (upsample) */

typedef struct cj_conv_phase {
  cj_conv_geom g;          /* the phase's conv: input fields (cj_conv_geom_derive fills the rest) */
  uint32_t yo[3];          /* its first y position per dim */
  uint64_t y_off;          /* elements from y's start to that position (NCDHW: per channel plane; NDHWC: times K') */
  /* backward data: phase tap j of dim i is the forward tap tap_first[i] - j*tap_step[i] of the
   * forward filter src (T, R, S) */
  uint32_t tap_first[3], tap_step[3], src[3];
  int fill;                /* no taps: the epilogue of zero at its positions */
} cj_conv_phase;

typedef struct cj_conv_phases {
  uint32_t n;              /* phases, the ones with taps first (largest M first), then the fills */
  uint32_t nreal;          /* phases with taps */
  cj_conv_phase ph[CJ_PHASE_MAX];
} cj_conv_phases;

/* The phases of the backward data of the forward conv g (an input
 * geometry: x = dx, y = dy; g's dtype, groups and layouts are kept, x_ndhwc
 * then meaning dy's layout and y_ndhwc dx's). out_pad (NULL: none): the
 * transposed conv's output_padding, dy's extents being the forward output
 * of dx's extents less it. Each phase's geometry reads dy (c = g's k) and
 * writes dx (k = g's c). UNSUPPORTED when there are more than CJ_PHASE_MAX
 * phases (naming the strides). */
convjit_status cj_conv_phases_bwd_data(const cj_conv_geom *g, const uint32_t out_pad[3], cj_conv_phases *out);
/* The phases of the forward conv g over x nearest-upsampled by up[i] in
 * {1, 2} (g's extents d, h, w are x's physical ones; its pads, stride and
 * dilation apply to the upsampled input). One phase when no factor is 2
 * (g itself). */
convjit_status cj_conv_phases_upsample(const cj_conv_geom *g, const uint32_t up[3], cj_conv_phases *out);
/* The weight pack of backward-data phase ph (real, not a fill) whose conv
 * plan has geometry g (derived: its k rows are dx's channels, its c the
 * reduction's dy channels, cp and crs the packed row): the forward weight
 * in elem_bytes and mode -> the phase's block (kplan_layout.h, bwd). */
convjit_status cj_conv_phase_pack_init(struct cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes, cj_prep_mode mode,
                                       const cj_conv_phase *ph, const cj_conv_geom *g);
/* Output extent over an input upsampled by f (the formula on f*in). */
uint64_t cj_conv_out_extent_up(uint64_t in, uint64_t f, uint64_t filt, uint64_t stride, uint64_t dil, uint64_t lo,
                               uint64_t hi);

#endif
