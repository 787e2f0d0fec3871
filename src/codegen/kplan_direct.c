/* The direct depthwise conv's plan (contract in kplan_direct.h). Pure C. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "codegen/kplan.h"

static uint64_t cj_dceil(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

int cj_direct_serves(const cj_conv_geom *g) {
  return g && g->c >= 1 && g->c <= CJ_DIRECT_MAX_CG && g->k >= 1 && g->k <= CJ_DIRECT_MAX_MULT && !g->wgrad;
}

/* The input fields this kernel does not take: an output phase's (up, ys,
 * yext; out only in backward data: dy's extents given, the transposed
 * conv's output_padding), backward weight's. */
static convjit_status cj_direct_plain(const cj_conv_geom *g, uint32_t bwd) {
  for (int i = 0; i < 3; i++)
    CJ_CHECK(g->up[i] <= 1 && (bwd || !g->out[i]) && g->ys[i] <= 1 && !g->yext[i], CONVJIT_ERR_UNSUPPORTED,
             "conv_direct: an output phase (up, out, ys, yext in dim %d) is the implicit GEMM's", i);
  CJ_CHECK(!g->wgrad, CONVJIT_ERR_UNSUPPORTED, "conv_direct: backward weight is not this kernel");
  for (int i = 0; i < 3; i++)
    CJ_CHECK(cj_conv_pad(g->pad_lo[i]) >= 0 && cj_conv_pad(g->pad_hi[i]) >= 0, CONVJIT_ERR_INVALID_ARG,
             "conv_direct.pad[%d] = %d, %d: must be >= 0", i, cj_conv_pad(g->pad_lo[i]), cj_conv_pad(g->pad_hi[i]));
  return CONVJIT_OK;
}

/* Forward: the input positions of one strip row. */
static uint32_t cj_direct_span(const cj_conv_geom *g, uint32_t strip) {
  return (strip - 1) * g->stride[2] + (g->s - 1) * g->dil[2] + 1;
}

/* pf's register estimate: `rows` rows of raw loads and the fp32 sums. */
static uint32_t cj_direct_pf_regs(const cj_direct_plan *c, uint32_t rows, uint32_t strip) {
  const uint32_t raw = (c->g.s * c->accw + cj_direct_span(&c->g, strip) * c->vec) * c->elem_bytes / 4;
  return rows * raw + strip * c->accw;
}

/* pf (row pipelining, forward only): asked 3 (on, depth planes unrolled:
 * pf = 2), 2 (on), 1 (off) or 0 (the plan's choice: on when two rows'
 * loads fit in registers beside the sums: (S*vec*M + span*vec) * 2 bytes
 * raw per row, two rows + strip * vec*M fp32 sums estimated within 208
 * VGPRs). With the strip and vec the plan's: at M = 1 and vec 8, 4
 * channels per lane and the longest strip of 16..4 dividing Wo that fits
 * (a row's positions and weights converted once for twice the outputs:
 * MODELLED 7x7 0.40/0.29 -> 0.48/0.34 of HBM, 3x3x3 0.66/0.53 -> 0.72/0.59,
 * the others equal or better); else the default strip shortened (down to
 * 4) until it fits. */
static convjit_status cj_direct_choose_pf(cj_direct_plan *c, const cj_direct_opts *o, uint32_t bwd) {
  const uint32_t ask = o->pf;
  CJ_CHECK(ask <= 3, CONVJIT_ERR_INVALID_ARG,
           "conv_direct.pf = %u: must be 0 (the plan's), 1 (off), 2 (on) or 3 (on, depth planes unrolled)", ask);
  const cj_conv_geom *g = &c->g;
  const uint32_t rows = g->r > 1 || g->t > 1 ? 2 : 1;
  const int legal = !bwd && g->s <= CJ_DIRECT_MAX_TAPS && cj_direct_span(g, c->strip) <= CJ_DIRECT_MAX_PF_SPAN;
  CJ_CHECK(ask < 2 || legal, CONVJIT_ERR_INVALID_ARG,
           "conv_direct.pf = %u: row pipelining is forward only, S <= %d and the strip row's span (%u) <= %d", ask,
           CJ_DIRECT_MAX_TAPS, cj_direct_span(g, c->strip), CJ_DIRECT_MAX_PF_SPAN);
  const int mine = ask == 0 && !bwd && g->s <= CJ_DIRECT_MAX_TAPS && !o->strip;
  if (mine && !o->vec && c->vec == 8 && c->mult == 1) {
    cj_direct_plan v4 = *c;
    v4.vec = v4.accw = v4.outs = 4;
    for (uint32_t st = CJ_DIRECT_MAX_STRIP; st >= 4; st--)
      if (g->ow % st == 0 && cj_direct_span(g, st) <= CJ_DIRECT_MAX_PF_SPAN && cj_direct_pf_regs(&v4, rows, st) <= 208) {
        c->vec = c->accw = c->outs = 4;
        c->strip = st;
        break;
      }
  }
  if (mine && legal)
    while (c->strip > 4 && cj_direct_pf_regs(c, rows, c->strip) > 208) c->strip--;
  c->pf = ask >= 2 || (ask == 0 && legal && cj_direct_pf_regs(c, rows, c->strip) <= 208);
  /* pf = 2: the depth planes unrolled up to 27 taps (3x3x3: MODELLED 0.60 -> 0.63 of HBM on gfx942, same compile
   * time), so the rows pipeline across the planes too */
  if (ask == 3 || (ask == 0 && c->pf && g->t > 1 && g->t * g->r * g->s <= 27)) c->pf = 2;
  return CONVJIT_OK;
}

/* hr (output rows per lane, forward with pf and H dilation 1): asked 1 (off),
 * 2..CJ_DIRECT_MAX_HR, or 0 (the plan's choice: 2 when R > 1, Ho even,
 * and two rows of raw loads, 2 x strip sums and a tap row of converted
 * weights fit the 208-VGPR estimate with the longest strip of 16..4
 * dividing Wo; an input row then feeds both output rows and each tap
 * row's weights are converted once for both). Sets c->hr (0 when off)
 * and may shorten c->strip. */
static convjit_status cj_direct_choose_hr(cj_direct_plan *c, const cj_direct_opts *o, uint32_t bwd) {
  const cj_conv_geom *g = &c->g;
  const int legal = !bwd && c->pf && g->dil[1] == 1;
  CJ_CHECK(o->hr <= CJ_DIRECT_MAX_HR && (o->hr < 2 || legal), CONVJIT_ERR_INVALID_ARG,
           "conv_direct.hr = %u: must be 0 (the plan's), 1 (off) or up to %d output rows (forward with pf, H "
           "dilation 1)", o->hr, CJ_DIRECT_MAX_HR);
  c->hr = o->hr >= 2 ? o->hr : 0;
  if (o->hr || !legal || g->r < 2 || g->oh % 2 || o->strip) return CONVJIT_OK;
  for (uint32_t st = CJ_DIRECT_MAX_STRIP; st >= 4; st--)
    if (g->ow % st == 0 && cj_direct_span(g, st) <= CJ_DIRECT_MAX_PF_SPAN &&
        cj_direct_pf_regs(c, 2, st) + st * c->accw + g->s * c->accw <= 208) {
      c->hr = 2;
      c->strip = st;
      break;
    }
  return CONVJIT_OK;
}

/* The geometry's derived fields: the conv family's own derivation run on
 * one group (c = Cg, k = M: legal there), then the grouped conv's groups
 * (no channel padding: cp = Cg, x channel stride groups*Cg). */
static convjit_status cj_direct_derive(cj_conv_geom *g) {
  uint32_t groups = g->groups ? g->groups : 1;
  cj_conv_geom one = *g;
  one.groups = 1;
  one.x_ndhwc = 0;
  CJ_TRY(cj_conv_geom_derive(&one));
  one.groups = groups;
  one.x_ndhwc = g->x_ndhwc;
  one.cp = one.c;
  one.x_cs = groups * one.c;
  one.c_mask = 0;
  one.k_all = one.k * groups;
  one.crs = one.taps * one.c;
  *g = one;
  return CONVJIT_OK;
}

/* The input units per workgroup window: a D plane (3D), an H row (2D) or
 * a W position (1D) of the tensor read; its level 0, 1, 2. */
static int cj_direct_level(uint32_t d, uint32_t h) { return d > 1 ? 0 : h > 1 ? 1 : 2; }

/* Past 2 GiB of x or y: the workgroup windows (kernel: conv_direct.c
 * big_bases). A workgroup's lanes cover at most ceil(256 / ncv) + 1
 * strips, so at most that many output units of its level (strips of
 * `strip` positions in 1D); the input window is those units times the
 * stride plus the filter's reach (and one unit more where it crosses a
 * sample), the output window those strips' rows; each must stay below
 * 2 GiB minus a slack, pixel and position indices below 2^31 (i32). */
static convjit_status cj_direct_big(cj_direct_plan *c) {
  const cj_conv_geom *g = &c->g;
  const int bwd = (int)c->bwd;
  CJ_CHECK(!c->wgrad && !bwd && g->y_ndhwc && !cj_epi_has(&c->epi, CJ_EPI_RESIDUAL), CONVJIT_ERR_UNSUPPORTED,
           "conv_direct: x (%" PRIu64 " bytes) or y (%" PRIu64 ") past 2 GiB: the forward with an NDHWC y and no "
           "residual only (per-workgroup windows of x and y)", c->x_bytes, c->y_bytes);
  const uint32_t in_d = bwd ? g->od : g->d, in_h = bwd ? g->oh : g->h, in_w = bwd ? g->ow : g->w;
  const uint32_t out_d = bwd ? g->d : g->od, out_h = bwd ? g->h : g->oh, out_w = bwd ? g->w : g->ow;
  const uint64_t in_pix = (uint64_t)g->n * in_d * in_h * in_w, out_pos = (uint64_t)g->n * out_d * out_h * out_w;
  CJ_CHECK(in_pix < (1ull << 31) && out_pos < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
           "conv_direct: %" PRIu64 " input pixels and %" PRIu64 " output positions must each be < 2^31", in_pix,
           out_pos);
  const int lv = cj_direct_level(in_d, in_h);
  CJ_CHECK((lv < 1 || out_d == 1) && (lv < 2 || out_h == 1), CONVJIT_ERR_UNSUPPORTED,
           "conv_direct past 2 GiB: output extents %ux%u over an input of depth %u, height %u (padding a unit "
           "dim)", out_d, out_h, in_d, in_h);
  const uint32_t ext[3] = {g->t, g->r, g->s};
  const uint64_t strips = (CJ_DIRECT_THREADS + c->ncv - 1) / c->ncv + 1;
  const uint64_t units_out = lv == 2 ? strips * c->strip + 1 : strips + 1;
  const uint64_t unit_pix = lv == 0 ? (uint64_t)in_h * in_w : lv == 1 ? in_w : 1;
  const uint64_t reach = (uint64_t)(ext[lv] - 1) * g->dil[lv] + 1;
  const uint64_t units_in = units_out * (bwd ? 1 : g->stride[lv]) + 2 * reach + 1;
  const uint64_t cx = (uint64_t)g->groups * c->cg, in_c = bwd ? g->k_all : cx, out_c = bwd ? cx : g->k_all;
  const uint64_t xwin = units_in * unit_pix * in_c * c->elem_bytes;
  const uint64_t ywin = (strips + 1) * (lv == 2 ? c->strip : out_w) * out_c * 4;
  CJ_CHECK(xwin < (1ull << 31) - 4096 && ywin < (1ull << 31) - 4096, CONVJIT_ERR_UNSUPPORTED,
           "conv_direct: a workgroup's window of x (%" PRIu64 " bytes: %" PRIu64 " units of %" PRIu64
           " pixels) or y (%" PRIu64 ") past 2 GiB", xwin, units_in, unit_pix, ywin);
  c->big = 1;
  return CONVJIT_OK;
}

convjit_status cj_kplan_direct_init(cj_kplan *p, const cj_arch *arch, const cj_conv_geom *gin, uint32_t bwd,
                                    const cj_direct_opts *o, const cj_epilogue *epi) {
  CJ_CHECK(p && arch && gin, CONVJIT_ERR_INVALID_ARG, "direct conv plan: NULL plan, arch or geometry");
  CJ_TRY(cj_epi_check_desc(epi, "conv_direct.epi"));
  static const cj_direct_opts none;
  if (!o) o = &none;
  cj_conv_geom g = *gin;
  CJ_CHECK(g.dtype == CONVJIT_DTYPE_BF16 || g.dtype == CONVJIT_DTYPE_F16, CONVJIT_ERR_UNSUPPORTED,
           "conv_direct.dtype = %u (%s): the direct kernel takes bf16 or f16", g.dtype,
           cj_dtype_name((convjit_dtype)g.dtype));
  CJ_CHECK(g.c >= 1 && g.c <= CJ_DIRECT_MAX_CG, CONVJIT_ERR_UNSUPPORTED,
           "conv_direct.c = %u per group: the direct kernel takes 1..%d input channels per group (more: the "
           "implicit GEMM's)", g.c, CJ_DIRECT_MAX_CG);
  CJ_CHECK(g.k >= 1 && g.k <= CJ_DIRECT_MAX_MULT, CONVJIT_ERR_UNSUPPORTED,
           "conv_direct.k = %u per group: the channel multiplier K/C must be 1..%d", g.k, CJ_DIRECT_MAX_MULT);
  CJ_CHECK(g.x_ndhwc == 1, CONVJIT_ERR_INVALID_ARG,
           "conv_direct.x_ndhwc = %u: the direct kernel reads NDHWC x (an NCDHW x is transposed first)", g.x_ndhwc);
  CJ_TRY(cj_direct_plain(&g, bwd));
  CJ_TRY(cj_direct_derive(&g));
  const int one_d = g.t == 1 && g.r == 1;
  CJ_CHECK(g.t <= CJ_DIRECT_MAX_TAPS && g.r <= CJ_DIRECT_MAX_TAPS &&
               g.s <= (one_d ? CJ_DIRECT_MAX_TAPS_1D : CJ_DIRECT_MAX_TAPS),
           CONVJIT_ERR_UNSUPPORTED,
           "conv_direct filter %ux%ux%u: the direct kernel takes up to %dx%dx%d (1D: up to %d taps)", g.t, g.r, g.s,
           CJ_DIRECT_MAX_TAPS, CJ_DIRECT_MAX_TAPS, CJ_DIRECT_MAX_TAPS, CJ_DIRECT_MAX_TAPS_1D);
  CJ_CHECK(o->strip <= CJ_DIRECT_MAX_STRIP, CONVJIT_ERR_INVALID_ARG, "conv_direct.strip = %u: must be 0..%d",
           o->strip, CJ_DIRECT_MAX_STRIP);
  CJ_CHECK(o->tap_chunk <= g.s, CONVJIT_ERR_INVALID_ARG, "conv_direct.tap_chunk = %u: must be 0..S (%u)",
           o->tap_chunk, g.s);
  CJ_CHECK(bwd <= 1, CONVJIT_ERR_INVALID_ARG, "conv_direct.bwd = %u: must be 0 or 1", bwd);
  CJ_CHECK(!bwd || g.stride[2] <= CJ_DIRECT_MAX_STRIP, CONVJIT_ERR_UNSUPPORTED,
           "conv_direct backward data with W stride %u: the strip is a multiple of it, at most %d", g.stride[2],
           CJ_DIRECT_MAX_STRIP);
  CJ_CHECK(!bwd || !o->strip || o->strip % g.stride[2] == 0, CONVJIT_ERR_INVALID_ARG,
           "conv_direct.strip = %u: backward data's is a multiple of the W stride %u", o->strip, g.stride[2]);

  memset(p, 0, sizeof *p);
  p->op = CJ_KOP_CONV_DIRECT;
  p->arch = arch;
  cj_direct_plan *c = &p->u.dir;
  c->g = g;
  c->mult = g.k;
  c->cg = g.c;
  c->elem_bytes = g.elem_bytes;
  const uint32_t C = g.groups, cg = g.c, wide = c->mult > cg ? c->mult : cg;
  uint32_t vec = 8 / wide ? 8 / wide : 1;
  while (vec > 1 && (vec & (vec - 1))) vec--; /* a power of two */
  while (vec > 1 && C % vec) vec /= 2;
  CJ_CHECK(!o->vec || (o->vec <= vec && !(o->vec & (o->vec - 1))), CONVJIT_ERR_INVALID_ARG,
           "conv_direct.vec = %u: must be a power of two <= %u (8/M, dividing C)", o->vec, vec);
  if (o->vec) vec = o->vec;
  c->vec = vec;
  c->bwd = bwd;
  c->accw = vec * c->mult;
  c->outs = bwd ? vec * cg : c->accw;
  /* strip: 8 outputs share their rows' input positions ((8 + S - 1) / 8
   * loads per output and row at stride 1), holding 8 * vec*M fp32 sums;
   * backward data's a multiple of the W stride, so the dy positions of
   * every (output, tap) pair are the strip's own constants */
  const uint32_t out_w = bwd ? g.w : g.ow, sw = g.stride[2];
  uint32_t strip = o->strip ? o->strip : 8 / cg; /* grouped: 8/Cg (docs/kernels.md "Few channels per group") */
  if (!o->strip && strip > out_w) strip = out_w;
  if (bwd && !o->strip) strip = sw > strip ? sw : strip / sw * sw;
  c->strip = strip;
  CJ_TRY(cj_conv_epi_ops(&c->epi, &g, epi));
  const uint32_t yb = cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(&c->epi));
  const uint64_t xin = (uint64_t)g.n * g.dhw * C * cg, yout = g.npq * g.k_all;
  c->x_bytes = (bwd ? yout : xin) * c->elem_bytes;
  c->w_bytes = (uint64_t)g.taps * cg * g.k_all * c->elem_bytes;
  c->y_bytes = (bwd ? xin : yout) * yb;
  /* past 2 GiB of x or y the windows' kernel (big_bases) starts a workgroup
   * at item wgid*256 and offsets the chunked loop's rows: no row
   * pipelining, no even split, the plain lanes and strip */
  const int big = c->x_bytes >= (1ull << 31) || c->y_bytes >= (1ull << 31);
  CJ_CHECK(!big || (o->pf < 2 && o->bal != 2), CONVJIT_ERR_UNSUPPORTED,
           "conv_direct.pf = %u, bal = %u past 2 GiB: the per-workgroup windows take neither", o->pf, o->bal);
  /* the weights held: tap_chunk * Cg vectors of vec*M */
  const uint32_t chunk = 4 / cg ? 4 / cg : 1;
  c->tap_chunk = o->tap_chunk ? o->tap_chunk : (g.s < chunk ? g.s : chunk);
  CJ_CHECK(c->tap_chunk * cg <= CJ_DIRECT_MAX_TAPS_1D, CONVJIT_ERR_INVALID_ARG,
           "conv_direct.tap_chunk = %u with Cg = %u: at most %d weight vectors per lane", c->tap_chunk, cg,
           CJ_DIRECT_MAX_TAPS_1D);
  /* row pipelining's loads and fmas (row_loads, row_fmas) take one input
   * channel per group; a grouped conv keeps the chunked loop */
  CJ_CHECK(cg == 1 || o->pf < 2, CONVJIT_ERR_INVALID_ARG,
           "conv_direct.pf = %u with Cg = %u: row pipelining takes one input channel per group", o->pf, cg);
  if (cg == 1 && !big) CJ_TRY(cj_direct_choose_pf(c, o, bwd));
  CJ_TRY(cj_direct_choose_hr(c, o, bwd));
  CJ_CHECK(o->wf32 <= 2 && (o->wf32 != 2 || (!bwd && c->pf)), CONVJIT_ERR_INVALID_ARG,
           "conv_direct.wf32 = %u: must be 0 (the plan's), 1 (off) or 2 (on: forward with pf)", o->wf32);
  /* wf32: the pack widens the weights once, so no lane converts them per row and strip (forward with pf) */
  c->wf32 = o->wf32 == 2 || (!o->wf32 && !bwd && c->pf);
  if (c->wf32) c->w_bytes *= 2; /* the packed weight in fp32 */
  strip = c->strip;
  c->ncv = C / c->vec;
  c->strips = cj_dceil(out_w, strip);
  const uint64_t out_rows = bwd ? (uint64_t)g.d * g.h : (uint64_t)g.od * cj_dceil(g.oh, c->hr ? c->hr : 1); /* hr: blocks */
  c->items = (uint64_t)c->ncv * g.n * out_rows * c->strips;
  const int64_t pw = cj_conv_pad(g.pad_lo[2]), dw = g.dil[2];
  c->span = bwd ? (uint32_t)(cj_conv_floordiv((int64_t)strip - 1 + pw, sw) -
                             cj_conv_floordiv(pw - ((int64_t)g.s - 1) * dw, sw) + 1)
                : (strip - 1) * sw + (g.s - 1) * g.dil[2] + 1;
  /* 32-bit lane offsets and item indices (the masked lanes' offset
   * CJ_CONV_OOB lies past every tensor); past 2 GiB of x or y, per
   * workgroup windows (cj_direct_big) */
  CJ_CHECK(c->w_bytes < (1ull << 31), CONVJIT_ERR_UNSUPPORTED, "conv_direct: w (%" PRIu64 " bytes) below 2 GiB",
           c->w_bytes);
  if (big) CJ_TRY(cj_direct_big(c));
  CJ_CHECK(c->items < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
           "conv_direct: %" PRIu64 " lanes of work (C/vec * N*Do*Ho * strips) must be < 2^31", c->items);

  p->block[0] = CJ_DIRECT_THREADS;
  p->block[1] = p->block[2] = 1;
  p->grid[0] = cj_dceil(c->items, CJ_DIRECT_THREADS);
  CJ_CHECK(o->bal <= 2 && (o->bal != 2 || !bwd), CONVJIT_ERR_INVALID_ARG,
           "conv_direct.bal = %u: must be 0 (the plan's), 1 (off) or 2 (on, forward only)", o->bal);
  /* an even split when the grid of 256-item workgroups leaves the busiest
   * CU a round more than the others (bounds: the busiest CU sets the time) */
  const uint64_t cus = arch->cu_count_default, k = cj_dceil(c->items, (uint64_t)CJ_DIRECT_THREADS * cus);
  if (!bwd && !c->big && o->bal != 1 && (o->bal == 2 || (p->grid[0] > cus && p->grid[0] % cus))) {
    c->bal = 1;
    p->grid[0] = k * cus;
  }
  p->grid[1] = p->grid[2] = 1;
  p->lds_bytes = 0;
  cj_kplan_add_arg(p, CJ_ARG_X, NULL);
  cj_kplan_add_arg(p, CJ_ARG_W, NULL);
  cj_epi_add_args(p, &c->epi);
  cj_kplan_add_arg(p, CJ_ARG_Y, NULL);
  char prefix[40];
  snprintf(prefix, sizeof prefix, "%s_%s", cj_kop_prefix(CJ_KOP_CONV_DIRECT), cj_dtype_name((convjit_dtype)g.dtype));
  return cj_kplan_name_from_key(p, prefix, cj_kplan_direct_key);
}

convjit_status cj_kplan_direct_wgrad_init(cj_kplan *p, const cj_arch *arch, const cj_conv_geom *gin, uint32_t stage,
                                          uint32_t db, uint32_t dw_dtype) {
  CJ_CHECK(p && arch && gin, CONVJIT_ERR_INVALID_ARG, "direct conv plan: NULL plan, arch or geometry");
  CJ_CHECK(stage == 1 || stage == 2, CONVJIT_ERR_INVALID_ARG, "conv_direct.wgrad = %u: must be 1 or 2", stage);
  CJ_CHECK(db <= 1, CONVJIT_ERR_INVALID_ARG, "conv_direct.db = %u: must be 0 or 1", db);
  cj_conv_geom g = *gin;
  if (!dw_dtype) dw_dtype = g.dtype;
  CJ_CHECK(dw_dtype == g.dtype || dw_dtype == CONVJIT_DTYPE_F32, CONVJIT_ERR_INVALID_ARG,
           "conv_direct.dw_dtype = %u (%s): dw is in the compute dtype or f32", dw_dtype,
           cj_dtype_name((convjit_dtype)dw_dtype));
  CJ_CHECK(g.x_ndhwc == 1 && g.y_ndhwc == 1, CONVJIT_ERR_INVALID_ARG,
           "conv_direct backward weight: x_ndhwc = %u, y_ndhwc = %u: reads NDHWC x and dy (the planner transposes "
           "NCDHW ones first)", g.x_ndhwc, g.y_ndhwc);
  g.y_ndhwc = 0;
  static const cj_direct_opts fwd_lanes = {.pf = 1, .bal = 1}; /* the first kernel's lanes (vec, no pf / bal) */
  CJ_TRY(cj_kplan_direct_init(p, arch, &g, 0, &fwd_lanes, NULL)); /* the forward's legality, lanes and sizes */
  cj_direct_plan *c = &p->u.dir;
  c->g.y_ndhwc = 1;
  c->wgrad = stage;
  c->pf = 0;
  c->bal = 0;
  c->db = db;
  c->dw_dtype = dw_dtype;
  c->strip = 1;
  c->strips = 1;
  memset(&c->epi, 0, sizeof c->epi);
  const uint64_t npq = c->g.npq, taps = (uint64_t)c->g.taps * c->cg, K = c->g.k_all; /* taps: Cg*T*R*S */
  uint64_t npg = npq / 256;
  c->npg = (uint32_t)(npg < 1 ? 1 : npg > 256 ? 256 : npg);
  c->iters = (uint32_t)cj_dceil(npq, c->npg);
  c->items = (uint64_t)c->ncv * c->npg;
  c->ws_bytes = ((uint64_t)c->npg * taps * K + (db ? (uint64_t)c->npg * K : 0)) * 4;
  c->x_bytes = (uint64_t)c->g.n * c->g.dhw * c->g.groups * c->cg * c->elem_bytes;
  c->y_bytes = npq * K * c->elem_bytes; /* dy, read */
  c->w_bytes = taps * K * cj_dtype_bytes((convjit_dtype)dw_dtype); /* dw, written */
  CJ_CHECK(c->ws_bytes < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
           "conv_direct backward weight: %" PRIu64 " bytes of partials must be below 2 GiB", c->ws_bytes);
  p->nargs = 0;
  p->grid[1] = p->grid[2] = 1;
  if (stage == 1) {
    p->grid[0] = cj_dceil(c->items, CJ_DIRECT_THREADS);
    p->grid[1] = (uint64_t)c->g.t * c->g.r;
    p->grid[2] = cj_dceil(c->g.s, c->tap_chunk);
    cj_kplan_add_arg(p, CJ_ARG_X, NULL);
    cj_kplan_add_arg(p, CJ_ARG_DY, NULL);
    cj_kplan_add_arg(p, CJ_ARG_WORKSPACE, NULL);
    if (db) cj_kplan_add_arg(p, CJ_ARG_DB_PART, NULL);
  } else {
    p->grid[0] = cj_dceil(taps * K + (db ? K : 0), CJ_DIRECT_THREADS);
    cj_kplan_add_arg(p, CJ_ARG_WORKSPACE, NULL);
    if (db) cj_kplan_add_arg(p, CJ_ARG_DB_PART, NULL);
    cj_kplan_add_arg(p, CJ_ARG_DW, NULL);
    if (db) cj_kplan_add_arg(p, CJ_ARG_DB, NULL);
  }
  p->name[0] = 0;
  char prefix[40];
  snprintf(prefix, sizeof prefix, "%s_%s_%s", cj_kop_prefix(CJ_KOP_CONV_DIRECT), stage == 1 ? "wg" : "wf",
           cj_dtype_name((convjit_dtype)g.dtype));
  return cj_kplan_name_from_key(p, prefix, cj_kplan_direct_key);
}

void cj_direct_wg_items(const cj_kplan *p, uint64_t w, uint64_t *lo, uint64_t *hi) {
  const cj_direct_plan *c = &p->u.dir;
  if (c->bal) {
    *lo = w * c->items / p->grid[0];
    *hi = (w + 1) * c->items / p->grid[0];
    return;
  }
  *lo = w * CJ_DIRECT_THREADS < c->items ? w * CJ_DIRECT_THREADS : c->items;
  *hi = *lo + CJ_DIRECT_THREADS < c->items ? *lo + CJ_DIRECT_THREADS : c->items;
}

double cj_direct_flops(const cj_direct_plan *c) {
  return 2.0 * (double)c->g.npq * c->g.k_all * c->g.taps * c->cg; /* backward data: the same products */
}

double cj_direct_hbm_bytes(const cj_direct_plan *c) {
  double z = cj_epi_has(&c->epi, CJ_EPI_RESIDUAL) ? (double)c->y_bytes : 0.0;
  return (double)c->x_bytes + (double)c->w_bytes + (double)c->y_bytes + z;
}

void cj_kplan_direct_key(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_direct_plan *fpl_ = &p->u.dir;
  CJ_DIRECT_PLAN_FIELDS(CJ_FIELD_KEY_ROW)
}

void cj_kplan_direct_print(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_direct_plan *fpl_ = &p->u.dir;
  CJ_DIRECT_PLAN_FIELDS(CJ_FIELD_PRINT_ROW)
}
