/* Plan of the direct depthwise conv family (`conv_direct`): groups > 1
 * with a few input channels per group, Cg = C/groups in 1..7 (1:
 * depthwise; 4: ResNeXt's), a multiplier M = K/groups in 1..8. A
 * depthwise conv does T*R*S multiply-adds per output element (Cg*T*R*S
 * grouped), so it is
 * bound by memory, not by the matrix cores: the kernel runs on the VALU
 * (fp32 accumulation, packed fp32 FMAs), not on MFMAs, and pads nothing.
 * Included by kplan.h only; plan in kplan_direct.c, the kernel in
 * conv_direct.c; docs/kernels.md "Direct depthwise conv".
 *
 * Tensors the kernel reads and writes:
 *   x  NDHWC, channel stride C (the caller's own NDHWC x in place, or the
 *      workspace the layout transpose wrote from an NCDHW x)
 *   w  the packed weight [Cg][T*R*S][K] (K = groups*M fastest): the layout
 *      transpose of w's [K][Cg*T*R*S] (group g's output channels g*M ..
 *      g*M+M-1 read input channels g*Cg .. g*Cg+Cg-1, PyTorch's
 *      grouped-conv order)
 *   y  NCDHW or NDHWC (g.y_ndhwc), in the epilogue's type
 *   the epilogue's operands (bias, scale, residual), per output channel k.
 *
 * Work split: a lane owns `vec` consecutive groups (their vec*Cg input
 * and vec*M output channels are consecutive) and a strip of `strip` consecutive
 * output positions along W of one output row (n, od, oh). Lanes run along
 * the channel vectors first, so a wave's x loads of one input position are
 * contiguous. Per input row (t, r) of its window the lane walks the
 * (strip-1)*stride + (S-1)*dil + 1 input positions of the strip once
 * (each loaded and converted to fp32 once per row), the taps of the row in
 * chunks of `tap_chunk` whose weights it holds converted meanwhile. With
 * `hr` (forward, pf) a lane computes hr output rows: each input row of
 * their window is loaded and converted once for all of them. */
#ifndef CJ_CODEGEN_KPLAN_DIRECT_H
#define CJ_CODEGEN_KPLAN_DIRECT_H

#include <stdint.h>
#include "arch/arch.h"
#include "codegen/kplan_conv.h"
#include "codegen/kplan_epi.h"
#include "codegen/kplan_fields.h"
#include "util/cj.h"

#define CJ_DIRECT_THREADS 256 /* 4 waves; a workgroup is 256 (channel vector, strip) items */
#define CJ_DIRECT_MAX_MULT 8
#define CJ_DIRECT_MAX_TAPS 7    /* T and R up to 7; S up to 7, or up to 31 in 1D */
#define CJ_DIRECT_MAX_TAPS_1D 31
#define CJ_DIRECT_MAX_STRIP 16
#define CJ_DIRECT_MAX_ACC 8     /* vec * M */
#define CJ_DIRECT_MAX_PF_SPAN 32 /* pf = 1: input positions of a strip's row */
#define CJ_DIRECT_MAX_CG 7      /* input channels per group (8 and up: the implicit GEMM's whole chunks) */
#define CJ_DIRECT_MAX_HR 4       /* hr: output rows per lane */

/* The choices; 0 = the plan's default. Not a property of the problem. */
typedef struct cj_direct_opts {
  uint32_t strip;     /* output positions along W per lane: 1..16 */
  uint32_t tap_chunk; /* taps of one input row whose weights a lane holds at once: 1..S */
  uint32_t pf;        /* forward row pipelining: 0 the plan's choice, 1 off, 2 on, 3 on with the depth planes unrolled */
  uint32_t bal;       /* forward even split over k x CUs workgroups: 0 the plan's choice, 1 off, 2 on */
  uint32_t vec;       /* C channels per lane: 0 the plan's choice, else a power of two <= 8/M dividing C */
  uint32_t hr;        /* forward with pf: output rows per lane, 0 the plan's choice, 1..CJ_DIRECT_MAX_HR */
  uint32_t wf32;      /* forward with pf: the packed weight in fp32: 0 the plan's choice, 1 off, 2 on */
} cj_direct_opts;

/* X(type, name, in_key, reason), as the conv plan's table (kplan_conv.h). */
#define CJ_DIRECT_PLAN_FIELDS(X)                                                                                  \
  X(cj_conv_geom, g, 1, "the problem: c = Cg (1..7) and k = M per group; x NDHWC (x_ndhwc = 1)")                   \
  X(uint32_t, bwd, 2, "backward data: dx (the forward x's shape) from dy, dx[g*Cg+i] sums dy[g*M .. g*M+M-1] over the " \
                      "taps whose dy position o*stride = i + pad - t*dil exists")                                     \
  X(uint32_t, wgrad, 2, "backward weight: 1 = each position group's partial sums of dw (and db), 2 = their "    \
                        "finalize in group order (dw, db): deterministic")                                        \
  X(uint32_t, db, 2, "backward weight: the bias gradient too (a partial per group, summed by the finalize)")     \
  X(uint32_t, dw_dtype, 2, "backward weight's finalize: dw's dtype (convjit_dtype: the compute dtype or f32)")     \
  X(uint32_t, vec, 1, "groups per lane: the largest power of two <= 8/max(M, Cg) dividing groups (16 bytes at M = 1)") \
  X(uint32_t, strip, 1, "output positions along W per lane (backward data: a multiple of the W stride): "        \
                        "neighbouring outputs share the input positions")                                           \
  X(uint32_t, tap_chunk, 1, "taps of an input row whose converted weights a lane holds at once")                 \
  X(uint32_t, pf, 2, "forward: each input row's loads issued together, the next row's before this row's fmas "  \
                     "(fenced from LLVM's scheduler, which would otherwise serialise the loads' latency); 2: the " \
                     "depth planes unrolled, the rows pipelined across them")                                         \
  X(uint32_t, bal, 2, "forward: the items split evenly over grid = k x the arch's CUs workgroups (<= 256 each, " \
                      "contiguous) so every CU streams the same bytes; 0: 256 per workgroup, the last CUs' rounds short") \
  X(uint32_t, hr, 2, "forward with pf, H dilation 1: output rows per lane (oh0 .. oh0+hr-1): each input row is "  \
                     "loaded and converted once for every output row reading it, each tap row's weights once")     \
  X(uint32_t, wf32, 2, "forward with pf: the weight pack writes fp32 (exact), so the kernel loads the taps' " \
                       "weights converted (no conversion per row and strip)")                                   \
  X(cj_epilogue, epi, 1, "on each output vector before the store (kplan_epi.h)")                                 \
  X(uint32_t, mult, 0, "M = K/groups: output channels per group")                                                  \
  X(uint32_t, cg, 0, "Cg = C/groups: input channels per group (1 depthwise)")                                       \
  X(uint32_t, outs, 0, "output channels per lane: vec * M of y (consecutive in K); backward data vec*Cg of dx")    \
  X(uint32_t, accw, 0, "fp32 sums per output position and lane: vec * M (backward data: Cg such, reduced over M at the store)") \
  X(uint32_t, elem_bytes, 0, "bytes per x/w element (2)")                                                          \
  X(uint32_t, ncv, 0, "channel vectors: groups / vec")                                                             \
  X(uint64_t, strips, 0, "strips per output row: ceil(Wo / strip)")                                                \
  X(uint64_t, items, 0, "lanes with work: ncv * N * output rows * strips")                                           \
  X(uint32_t, span, 0, "input positions of one strip's row (forward: (strip-1)*stride + (S-1)*dil + 1)")           \
  X(uint64_t, x_bytes, 0, "the NDHWC input read: x (backward data: dy)")                                            \
  X(uint64_t, w_bytes, 0, "packed weight [Cg][T*R*S][K] (4 bytes an element with wf32)")                                                          \
  X(uint64_t, y_bytes, 0, "the output in the epilogue's type: y (backward data: dx)")                              \
  X(uint32_t, npg, 0, "backward weight: position groups, from the problem alone (N*Do*Ho*Wo / 256, 1..256)")      \
  X(uint32_t, iters, 0, "backward weight: positions per lane, ceil(N*Do*Ho*Wo / npg), group g's g, g + npg, ...") \
  X(uint64_t, ws_bytes, 0, "backward weight: the partials, npg x Cg*taps x K fp32, then npg x K of db")        \
  X(uint32_t, big, 0, "x or y past 2^31 bytes: each workgroup's x and y resources start at its own first "      \
                      "input unit (a D plane in 3D, an H row in 2D, a W position in 1D) and output position, "    \
                      "64-bit base pointers, 32-bit lane offsets within a window the plan bounds below 2 GiB")

typedef struct cj_direct_plan {
  CJ_DIRECT_PLAN_FIELDS(CJ_FIELD_MEMBER)
} cj_direct_plan;

struct cj_kplan;

/* 1 when the conv geometry g (its input fields: groups, per-group c and k)
 * is this family's: c = 1..7 per group (1: depthwise) with a multiplier
 * k = 1..8 per group. Selection's test; the plan init says what else it
 * cannot do. */
int cj_direct_serves(const cj_conv_geom *g);
/* Fills p for the direct kernel of g (input fields; x_ndhwc must be 1: the
 * kernel reads NDHWC), choices o (NULL: defaults) and the fused epilogue's
 * description epi (NULL: none). INVALID_ARG for a bad shape, option or
 * epilogue naming the field; UNSUPPORTED with the reason for a valid conv
 * this kernel does not do (its dtype, a filter past its limits, a tensor
 * past 32-bit offsets). */
convjit_status cj_kplan_direct_init(struct cj_kplan *p, const cj_arch *arch, const cj_conv_geom *g, uint32_t bwd,
                                    const cj_direct_opts *o, const cj_epilogue *epi);
/* bwd = 1: the backward data of forward conv g (x_ndhwc: dy is NDHWC;
 * y_ndhwc: dx is; the epilogue over dx's C channels); no output padding
 * (dy's extents are g's output's), W stride at most 16. */
/* Backward weight of forward conv g (x_ndhwc = y_ndhwc = 1: x and dy are
 * read NDHWC), as two kernels: stage 1 the partial sums (grid: lanes over
 * (channel vector, position group), y the tap row (t, r), z the tap chunk;
 * each lane sums its group's positions g, g + npg, ... in order into fp32
 * and stores its partial tile [Cg*taps][K] (and db's [K]) to the workspace),
 * stage 2 the finalize (one thread per dw element: the npg partials added
 * in group order, converted to dw_dtype; db in fp32). Every element's sum
 * is the same sequence of fp32 operations on every run and grid:
 * deterministic. db: the bias gradient too. */
convjit_status cj_kplan_direct_wgrad_init(struct cj_kplan *p, const cj_arch *arch, const cj_conv_geom *g,
                                          uint32_t stage, uint32_t db, uint32_t dw_dtype);
/* The multiply-adds (2 FLOPs each) and the compulsory bytes (x, the packed
 * weight and y once, plus a residual when the epilogue reads one). */
/* The items (lanes of work) of forward workgroup w: [*lo, *hi) (bal: an
 * even contiguous share; else 256 from w*256, cut at items). */
void cj_direct_wg_items(const struct cj_kplan *p, uint64_t w, uint64_t *lo, uint64_t *hi);
double cj_direct_flops(const cj_direct_plan *c);
double cj_direct_hbm_bytes(const cj_direct_plan *c);

#endif
