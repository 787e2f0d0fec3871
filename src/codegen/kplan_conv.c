/* Conv plans: shape + dtype + arch + forced options -> every compile-time
 * constant of the implicit-GEMM conv kernel, with the legality checks
 * (contract in kplan_conv.h). Pure C, no LLVM. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "codegen/kplan.h"

static uint64_t cj_ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

convjit_status cj_conv_arch_check(const cj_arch *arch) {
  CJ_CHECK(arch->matrix == CJ_MATRIX_MFMA && arch->wave_size == 64 && arch->waitcnt == &cj_waitcnt_gfx9 &&
               arch->has_agprs,
           CONVJIT_ERR_UNSUPPORTED,
           "conv on %s: the conv family is written for wave64 MFMA kernels with the gfx9 wait counters and AGPRs "
           "(wave size %u, wait counters %s%s)", arch->name, arch->wave_size, arch->waitcnt ? arch->waitcnt->name : "none",
           arch->has_agprs ? "" : ", no AGPRs");
  return CONVJIT_OK;
}
static uint64_t cj_round_up(uint64_t a, uint64_t b) { return cj_ceil_div(a, b) * b; }

uint64_t cj_conv_out_extent(uint64_t in, uint64_t f, uint64_t st, uint64_t dil, uint64_t lo, uint64_t hi) {
  uint64_t span = dil * (f - 1) + 1;
  if (in + lo + hi < span) return 0;
  return (in + lo + hi - span) / st + 1;
}

int64_t cj_conv_in_coord(const cj_conv_geom *g, int i, int64_t o, int64_t t) {
  int64_t f = g->up[i] > 1 ? g->up[i] : 1;
  return o * g->stride[i] + cj_conv_floordiv(t * g->dil[i] - cj_conv_pad(g->pad_lo[i]), f);
}

/* 1 if some output position's tap leaves [0, in) in dim i: the lowest
 * coordinate (o = 0, t = 0) below 0 or the highest (o = out-1, t = f-1)
 * at or past in; the coordinate grows with o and t. No taps: no check. */
static int cj_needs_check(const cj_conv_geom *g, int i, uint64_t in, uint64_t out, uint64_t f) {
  if (f == 0) return 0;
  return cj_conv_in_coord(g, i, 0, 0) < 0 || cj_conv_in_coord(g, i, (int64_t)out - 1, (int64_t)f - 1) >= (int64_t)in;
}

/* The output extent of dim i: given (out, a phase's), else the formula,
 * which only a plain geometry has (no tap divisor, pads >= 0). */
static convjit_status cj_geom_out(cj_conv_geom *g, int i, uint32_t in, uint32_t f, uint64_t *out) {
  static const char dim[] = "dhw";
  int32_t lo = cj_conv_pad(g->pad_lo[i]), hi = cj_conv_pad(g->pad_hi[i]);
  CJ_CHECK(lo > -CJ_CONV_MAX_PAD && lo < CJ_CONV_MAX_PAD && hi > -CJ_CONV_MAX_PAD && hi < CJ_CONV_MAX_PAD,
           CONVJIT_ERR_INVALID_ARG, "conv.pad[%c] = %d/%d: must be within +-2^20", dim[i], lo, hi);
  CJ_CHECK(g->up[i] <= 2, CONVJIT_ERR_INVALID_ARG, "conv.up[%c] = %u: must be 0, 1 or 2", dim[i], g->up[i]);
  if (g->out[i]) {
    CJ_CHECK(hi == 0, CONVJIT_ERR_INVALID_ARG, "conv.pad_hi[%c] = %d with out[%c] = %u given: must be 0 (unused)",
             dim[i], hi, dim[i], g->out[i]);
    *out = g->out[i];
    return CONVJIT_OK;
  }
  CJ_CHECK(f > 0 && g->up[i] <= 1 && lo >= 0 && hi >= 0, CONVJIT_ERR_INVALID_ARG,
           "conv dim %c: filter %u, tap divisor %u, pads %d/%d need out[%c] given (a phase geometry)", dim[i], f,
           g->up[i], lo, hi, dim[i]);
  *out = cj_conv_out_extent(in, f, g->stride[i], g->dil[i], (uint64_t)lo, (uint64_t)hi);
  CJ_CHECK(*out > 0, CONVJIT_ERR_INVALID_ARG,
           "conv output %c extent <= 0: input %u, filter %u, dilation %u, padding %d+%d", dim[i], in, f, g->dil[i],
           lo, hi);
  return CONVJIT_OK;
}

/* The output a compute dtype gives unless y_dtype says otherwise: f16
 * stays f16; bf16 and fp8 (no fp8 outputs) give bf16. */
static uint32_t cj_conv_own_y(uint32_t dtype) {
  return dtype == CONVJIT_DTYPE_F16 ? CONVJIT_DTYPE_F16 : CONVJIT_DTYPE_BF16;
}

uint32_t cj_conv_y_dtype(const cj_conv_geom *g) { return g->y_dtype ? g->y_dtype : cj_conv_own_y(g->dtype); }

convjit_status cj_conv_geom_derive(cj_conv_geom *g) {
  CJ_CHECK(g, CONVJIT_ERR_INVALID_ARG, "conv geometry is NULL");
  g->elem_bytes = cj_dtype_bytes((convjit_dtype)g->dtype);
  CJ_CHECK(g->dtype != CONVJIT_DTYPE_F32 && (g->elem_bytes == 1 || g->elem_bytes == 2), CONVJIT_ERR_INVALID_ARG,
           "conv.dtype = %u (%s): must be bf16, f16 or an fp8 type", g->dtype, cj_dtype_name((convjit_dtype)g->dtype));
  /* y: any of the epilogue's conversions (bf16, f16 RNE; f32 none), one
   * value per kernel: the compute dtype's own output is 0 */
  CJ_CHECK(g->y_dtype == 0 || g->y_dtype == CONVJIT_DTYPE_BF16 || g->y_dtype == CONVJIT_DTYPE_F16 ||
               g->y_dtype == CONVJIT_DTYPE_F32,
           CONVJIT_ERR_INVALID_ARG, "conv.y_dtype = %u (%s): must be bf16, f16 or f32 (0: the dtype's own)",
           g->y_dtype, cj_dtype_name((convjit_dtype)g->y_dtype));
  if (g->y_dtype == cj_conv_own_y(g->dtype)) g->y_dtype = 0;
  /* A phase with no taps in some dim (kplan_phase.h) is the epilogue of
   * zero at its positions: filter 0 there, its extents given. */
  const int fill = g->t == 0 || g->r == 0 || g->s == 0;
  const struct { const char *name; uint32_t v; } pos[] = {
      {"n", g->n}, {"c", g->c}, {"d", g->d}, {"h", g->h}, {"w", g->w}, {"k", g->k},
      {"t", fill ? 1 : g->t}, {"r", fill ? 1 : g->r}, {"s", fill ? 1 : g->s}};
  for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
    CJ_CHECK(pos[i].v > 0, CONVJIT_ERR_INVALID_ARG, "conv.%s = 0: must be > 0", pos[i].name);
  CJ_CHECK(!fill || (g->out[0] && g->out[1] && g->out[2]), CONVJIT_ERR_INVALID_ARG,
           "conv filter %ux%ux%u: a filter extent 0 (a phase with no taps) needs every out[] given", g->t, g->r,
           g->s);
  const char *dim = "dhw";
  const uint32_t in[3] = {g->d, g->h, g->w}, f[3] = {g->t, g->r, g->s};
  uint64_t out[3];
  g->placed = 0;
  g->ydhw = 1;
  for (int i = 0; i < 3; i++) {
    CJ_CHECK(g->stride[i] > 0, CONVJIT_ERR_INVALID_ARG, "conv.stride[%c] = 0: must be > 0", dim[i]);
    CJ_CHECK(g->dil[i] > 0, CONVJIT_ERR_INVALID_ARG, "conv.dil[%c] = 0: must be > 0", dim[i]);
    CJ_TRY(cj_geom_out(g, i, in[i], f[i], &out[i]));
    uint64_t ys = g->ys[i] ? g->ys[i] : 1, yext = g->yext[i] ? g->yext[i] : out[i];
    CJ_CHECK((out[i] - 1) * ys < yext && yext < (1ull << 31), CONVJIT_ERR_INVALID_ARG,
             "conv placement in %c: %" PRIu64 " outputs at stride %" PRIu64 " do not fit y extent %" PRIu64, dim[i],
             out[i], ys, yext);
    g->placed |= ys != 1 || yext != out[i];
    g->ydhw *= yext;
  }
  g->od = (uint32_t)out[0];
  g->oh = (uint32_t)out[1];
  g->ow = (uint32_t)out[2];
  uint32_t chunk = CJ_CONV_CHUNK_BYTES / g->elem_bytes;
  g->cp = (uint32_t)cj_round_up(g->c, chunk);
  if (g->groups == 0) g->groups = 1;
  CJ_CHECK(g->x_ndhwc <= 1 && g->y_ndhwc <= 1, CONVJIT_ERR_INVALID_ARG, "conv.x_ndhwc = %u, y_ndhwc = %u: must be 0 or 1",
           g->x_ndhwc, g->y_ndhwc);
  CJ_CHECK(g->wgrad <= 1 && g->wgrad_db <= 1 && g->wgrad_atomic <= 1, CONVJIT_ERR_INVALID_ARG,
           "conv.wgrad = %u, wgrad_db = %u, wgrad_atomic = %u: must be 0 or 1", g->wgrad, g->wgrad_db, g->wgrad_atomic);
  CJ_CHECK(g->wgrad || (!g->wgrad_db && !g->wgrad_atomic), CONVJIT_ERR_INVALID_ARG,
           "conv.wgrad_db = %u, wgrad_atomic = %u: backward-weight options on a forward conv", g->wgrad_db,
           g->wgrad_atomic);
  CJ_CHECK(g->groups <= 65535, CONVJIT_ERR_UNSUPPORTED, "conv.groups = %u: must be <= 65535 (grid y)", g->groups);
  /* Depthwise and other narrow groups: the GEMM's K pads every tap's
   * channels to a 16-byte chunk, so with C/groups = 1 one of 8 (bf16) or
   * 16 (fp8) K elements is real: >= 87% of the MFMA work and of the A
   * loads would be zeros. */
  /* (The backward-weight GEMM reduces over positions, not channels: any
   * group width is whole columns there.) */
  CJ_CHECK(g->wgrad || g->groups == 1 || g->c != 1, CONVJIT_ERR_UNSUPPORTED,
           "conv.groups = %u with C/groups = 1 (depthwise): no kernel; the implicit GEMM would pad each tap's one "
           "channel to %u, wasting %u of %u MFMA K elements (a depthwise conv needs a direct kernel)",
           g->groups, chunk, chunk - 1, chunk);
  CJ_CHECK(g->wgrad || g->groups == 1 || g->c % chunk == 0, CONVJIT_ERR_UNSUPPORTED,
           "conv.groups = %u with C/groups = %u: must be a multiple of %u (one 16-byte chunk of %s), so a "
           "group's channels start on a chunk", g->groups, g->c, chunk, cj_dtype_name((convjit_dtype)g->dtype));
  g->x_cs = (g->x_ndhwc ? g->c : g->cp) * g->groups;
  g->c_mask = g->x_ndhwc && g->c != g->cp;
  g->k_all = g->k * g->groups;
  uint64_t taps = (uint64_t)g->t * g->r * g->s; /* 0: a phase with no taps */
  g->crs = taps * g->cp;
  /* The K column index and per-row offsets are i32 in the kernel. */
  CJ_CHECK(g->crs < (1ull << 30), CONVJIT_ERR_UNSUPPORTED,
           "conv C*T*R*S = %" PRIu64 " (C padded to %u): must be < 2^30", g->crs, g->cp);
  g->taps = (uint32_t)taps;
  g->dhw = (uint64_t)g->d * g->h * g->w;
  g->odhw = out[0] * out[1] * out[2];
  g->npq = (uint64_t)g->n * g->odhw;
  CJ_CHECK(g->npq < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
           "conv N*Do*Ho*Wo = %" PRIu64 ": must be < 2^31 (GEMM row index is i32)", g->npq);
  /* (the backward-weight pre-pass addresses x in 64 bits) */
  CJ_CHECK(g->wgrad || (uint64_t)g->h * g->w * g->x_cs < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
           "conv H*W*C = %" PRIu64 ": one input plane must be < 2^31 elements", (uint64_t)g->h * g->w * g->x_cs);
  return CONVJIT_OK;
}

/* Bytes of x that one workgroup's rows can touch, from the rebase origin
 * (time plane of its first row): bounds the BIG_IN residual offsets. */
static uint64_t cj_big_in_span(const cj_conv_geom *g, uint32_t tile_m) {
  uint64_t plane_out = (uint64_t)g->oh * g->ow;
  uint64_t out_planes = (tile_m - 1) / plane_out + 2;
  uint64_t pads = (uint64_t)llabs(cj_conv_pad(g->pad_lo[0])) + (uint64_t)llabs(cj_conv_pad(g->pad_hi[0]));
  uint64_t taps = g->t ? (uint64_t)(g->t - 1) * g->dil[0] : 0;
  uint64_t in_planes = 2 * (out_planes * g->stride[0] + taps + pads + 1);
  return in_planes * g->h * g->w * g->x_cs * g->elem_bytes;
}

/* 1x1x1, stride 1, no padding: A[m][c] = x[n][c][p] read from the
 * caller's NCDHW x (no transpose). A DMA chunk runs along positions, so it
 * must not straddle a sample (Do*Ho*Wo % chunk elements == 0), and every x
 * offset must be below the OOB sentinel (no rebase on this path). Needs
 * c->g, elem_bytes, dma_bytes and need_t/h/w. DMA only: the k-major A stage
 * has no VGPR-path writer. */
static int cj_conv_channel_gemm_ok(const cj_conv_plan *c, const cj_conv_opts *o) {
  const cj_conv_geom *g = &c->g;
  /* positions of A are x's own: no tap offset, no tap divisor, output
   * extents equal to the input's (a phase's may be shorter), dense y */
  int is_1x1 = g->taps == 1 && g->stride[0] == 1 && g->stride[1] == 1 && g->stride[2] == 1 && !c->need_t &&
               !c->need_h && !c->need_w && !g->pad_lo[0] && !g->pad_lo[1] && !g->pad_lo[2] && g->up[0] <= 1 &&
               g->up[1] <= 1 && g->up[2] <= 1 && g->od == g->d && g->oh == g->h && g->ow == g->w && !g->placed;
  uint64_t ncdhw_bytes = (uint64_t)g->n * g->c * g->dhw * c->elem_bytes;
  /* NCDHW x of one group only (its A stage is [k][positions] of x as given) */
  int ncdhw = !g->x_ndhwc && g->groups == 1;
  return ncdhw && !o->no_fast_paths && !g->x_converted && !c->pure_gemm_a && c->load == CJ_CONV_LOAD_DMA &&
         is_1x1 && g->odhw % (c->dma_bytes / c->elem_bytes) == 0 && ncdhw_bytes <= CJ_CONV_OOB && !o->force_big_in;
}

uint32_t cj_conv_pingpong_rb(const cj_arch *arch) {
  if (cj_conv_pingpong_arch(arch)) return 128;
  return arch && cj_arch_dma_ok(arch, 4) && arch->lds_bytes >= 32768 ? 32 : 0;
}

int cj_conv_pingpong_arch(const cj_arch *arch) {
  return arch && cj_arch_dma_ok(arch, 16) && arch->lds_bytes >= 131072;
}

/* ---- the plan init, in steps: geometry, schedule and tile, tile
 * legality, grid, specialization flags, epilogue, launch. Each step reads
 * only what the ones before it filled. ---- */

/* Backward weight (kplan_wgrad.h): the grid, and the load path its B rows
 * need: a column starts at any element of its x row (off(tap) is not a
 * multiple of a 16-byte chunk), which no LDS DMA can land, so both operands
 * go through VGPRs (load 2), dword-aligned; the odd columns' loads take one
 * more dword and are shifted by 2 bytes before the ds_write. No im2col, so
 * no bounds checks, fast paths or BIG paths: the GEMM rebases its operands
 * per workgroup (64-bit). */
static convjit_status cj_conv_wgrad_geometry(cj_conv_plan *c, const cj_conv_opts *o) {
  CJ_CHECK(c->g.dtype == CONVJIT_DTYPE_BF16 || c->g.dtype == CONVJIT_DTYPE_F16, CONVJIT_ERR_UNSUPPORTED,
           "conv.wgrad with dtype %s: backward weight takes bf16 or f16 x and dy",
           cj_dtype_name((convjit_dtype)c->g.dtype));
  CJ_TRY(cj_wgrad_grid_derive(&c->g, &c->wg));
  c->load = o->load ? o->load : CJ_CONV_LOAD_VGPR;
  CJ_CHECK(c->load == CJ_CONV_LOAD_VGPR, CONVJIT_ERR_UNSUPPORTED,
           "conv.load = %u: the backward-weight GEMM loads through VGPRs (load 2): its B columns start at any "
           "element, which LDS DMA cannot land", c->load);
  c->dma_bytes = o->dma_bytes ? o->dma_bytes : 16;
  CJ_CHECK(!o->pure_gemm_a && !o->force_big_in && !o->force_big_out, CONVJIT_ERR_INVALID_ARG,
           "conv.wgrad with pure_gemm_a / force_big_in / force_big_out: forward test hooks");
  return CONVJIT_OK;
}

/* Geometry: the shape derived and checked, the load path and DMA width it
 * allows, the per-dim bounds checks. */
static convjit_status cj_conv_step_geometry(cj_conv_plan *c, const cj_arch *arch, const cj_conv_geom *gin,
                                            const cj_conv_opts *o) {
  c->g = *gin;
  CJ_TRY(cj_conv_geom_derive(&c->g));
  const cj_conv_geom *g = &c->g;
  c->elem_bytes = g->elem_bytes;
  if (g->wgrad) return cj_conv_wgrad_geometry(c, o);
  c->load = o->load ? o->load : CJ_CONV_LOAD_DMA;
  CJ_CHECK(c->load >= CJ_CONV_LOAD_DMA && c->load < CJ_CONV_LOAD_COUNT, CONVJIT_ERR_INVALID_ARG,
           "conv.load = %u: must be 1 (DMA) or 2 (through VGPRs)", c->load);
  int vload = c->load == CJ_CONV_LOAD_VGPR;
  /* the VGPR path's loads are buffer_load_dwordx4 on every arch; x read in
   * place with C % chunk != 0 (c_mask): 4 bytes per lane, so a lane's load
   * is wholly inside a pixel's C channels or wholly past them (masked) —
   * a 16-byte chunk would straddle into the next pixel */
  c->dma_bytes = o->dma_bytes ? o->dma_bytes : g->c_mask || (!vload && !cj_arch_dma_ok(arch, 16)) ? 4 : 16;
  CJ_CHECK(!g->c_mask || (!vload && c->dma_bytes == 4 && g->c % (4 / c->elem_bytes) == 0), CONVJIT_ERR_UNSUPPORTED,
           "conv x NDHWC in place with C = %u (not a multiple of %u): needs 4-byte DMA loads (dma_bytes = %u, load = "
           "%u) and C a multiple of %u, so no load straddles two pixels",
           g->c, CJ_CONV_CHUNK_BYTES / c->elem_bytes, c->dma_bytes, c->load, 4 / c->elem_bytes);
  c->need_t = cj_needs_check(g, 0, g->d, g->od, g->t);
  c->need_h = cj_needs_check(g, 1, g->h, g->oh, g->r);
  c->need_w = cj_needs_check(g, 2, g->w, g->ow, g->s);
  c->pure_gemm_a = o->pure_gemm_a != 0;
  c->ws_out = o->ws_out != 0;
  /* Diagnostic pure GEMM A (docs/kernels.md "im2col overhead"): x is a
   * plain row-major npq x crs matrix, row m at m*crs elements; the only
   * checks left are m < npq and k < crs. No tap, so no bounds checks and
   * no temporal fast path or channel GEMM (im2col shortcuts); the epilogue
   * is the conv's. */
  if (c->pure_gemm_a) {
    CJ_CHECK(!o->force_big_in, CONVJIT_ERR_INVALID_ARG,
             "conv.pure_gemm_a with big_in: the plain A matrix has no rebase");
    CJ_CHECK(g->taps > 0, CONVJIT_ERR_INVALID_ARG, "conv.pure_gemm_a with no taps: nothing to multiply");
    c->need_t = c->need_h = c->need_w = 0;
  }
  return CONVJIT_OK;
}

/* Schedule and tile: the K-loop schedule, the tile, waves, stages, split
 * and WGM (forced or default), the dtype's MFMA row and the K depth of a
 * stage. */
static convjit_status cj_conv_step_tile(cj_conv_plan *c, const cj_arch *arch, const cj_conv_opts *o) {
  const cj_conv_geom *g = &c->g;
  int vload = c->load == CJ_CONV_LOAD_VGPR;
  /* The 8-wave ping-pong is the fp8 family's on an arch with 16-byte LDS
   * DMA and room for 128 KiB (gfx950), unless the caller forces a tile or
   * schedule (docs/original-design.md "fp8 kernel": fixed tile), or the
   * conv is a 1x1x1 channel GEMM (no transpose pays more than the
   * schedule: docs/original-design.md "bf16 kernel", 1x1x1). Forced knobs
   * only the multistage schedule takes (a tile, 3-4 stages, split-K,
   * 4-byte DMA, the VGPR load path) select it. */
  int pp_default = !g->wgrad && c->elem_bytes == 1 && cj_conv_pingpong_arch(arch) && !o->tile_m &&
                   (!o->stages || o->stages == 2) && o->splitk <= 1 && (!o->dma_bytes || o->dma_bytes == 16) &&
                   !vload && (!o->k_bytes || o->k_bytes == 128) && !cj_conv_channel_gemm_ok(c, o) && !g->c_mask &&
                   g->taps > 0;
  c->sched = o->sched ? o->sched : pp_default ? CJ_CONV_SCHED_PINGPONG : CJ_CONV_SCHED_MULTISTAGE;
  CJ_CHECK(c->sched >= CJ_CONV_SCHED_MULTISTAGE && c->sched < CJ_CONV_SCHED_COUNT, CONVJIT_ERR_INVALID_ARG,
           "conv.sched = %u: must be 1 (multistage) or 2 (ping-pong)", c->sched);
  int pp = c->sched == CJ_CONV_SCHED_PINGPONG;
  CJ_CHECK(!pp || !g->wgrad, CONVJIT_ERR_UNSUPPORTED,
           "conv.sched = 2 (ping-pong): the backward-weight GEMM runs the multistage schedule");
  c->halves = pp ? 2 : 1;
  c->tile_m = o->tile_m ? o->tile_m : pp ? 256 : 128;
  c->tile_n = o->tile_n ? o->tile_n : pp ? 256 : 128;
  c->wave_m = o->wave_m ? o->wave_m : 2;
  c->wave_n = o->wave_n ? o->wave_n : 4;
  c->stages = o->stages ? o->stages : pp ? 2 : 4;
  c->splitk = o->splitk ? o->splitk : 1;
  c->wgm = o->wgm ? o->wgm : 8;
  /* ---- dtype row: element size, chunk, MFMA ---- */
  c->chunk_elems = CJ_CONV_CHUNK_BYTES / c->elem_bytes;
  c->mfma = cj_arch_mfma_for(arch, (int)g->dtype);
  const cj_mfma_row *mf = cj_mfma_row_of((cj_mfma_kind)c->mfma);
  CJ_CHECK(mf && mf->elem_bytes == c->elem_bytes, CONVJIT_ERR_INTERNAL, "conv: %s has no MFMA row for %s",
           arch->name, cj_dtype_name((convjit_dtype)g->dtype));
  /* The fp8 MFMA reads one format per arch (docs/isa-notes.md: E4M3FNUZ on gfx942,
   * OCP E4M3FN on gfx950); the API maps FN tensors to FNUZ for gfx942 in
   * its pre-pass, so a kernel only ever sees its arch's own format. */
  CJ_CHECK((int)g->dtype == mf->in_dtype, CONVJIT_ERR_UNSUPPORTED,
           "conv.dtype = %s: %s's MFMA (%s) reads %s", cj_dtype_name((convjit_dtype)g->dtype), arch->name,
           mf->mnemonic, cj_dtype_name((convjit_dtype)mf->in_dtype));
  c->mfma_k = mf->k;
  /* k_bytes of K per row and stage (default 64: a [kq][row] stage 4 chunks
   * deep), and whole MFMAs. 32 bytes halve a stage: twice the stages in the
   * same LDS (gfx942's 64 KiB holds 4 stages of 256x256); one f8f6f4
   * MFMA (gfx950) is 128. */
  uint32_t kb = o->k_bytes                                ? o->k_bytes
                : mf->k * c->elem_bytes > CJ_CONV_STAGE_ROW_BYTES ? mf->k * c->elem_bytes
                                                                  : CJ_CONV_STAGE_ROW_BYTES;
  CJ_CHECK(kb == 32 || kb == 64 || kb == 128, CONVJIT_ERR_INVALID_ARG, "conv.k_bytes = %u: must be 32, 64 or 128",
           kb);
  CJ_CHECK(kb % (mf->k * c->elem_bytes) == 0, CONVJIT_ERR_UNSUPPORTED,
           "conv.k_bytes = %u: not whole %s MFMAs (K %u = %u bytes)", kb, mf->mnemonic, mf->k,
           mf->k * c->elem_bytes);
  c->tile_k = kb / c->elem_bytes;
  if (pp) {
    /* The ping-pong builder's fixed shape: 8 waves as 2x4 per quadrant,
     * each wave 4x2 fragments of each of the 4 quadrants (conv_igemm.c);
     * one K step is a row of rb bytes: 128 with 16-byte DMA (gfx950: one
     * f8f6f4 MFMA deep, or two 16x16x32 bf16/f16 MFMAs of 16-byte reads),
     * 32 with 4-byte DMA (gfx942's 64 KiB: one 16x16x16 bf16/f16 or
     * 16x16x32 fp8 MFMA of 8-byte reads). */
    uint32_t rb = c->dma_bytes == 16 ? 128 : 32, w = mf->k_per_lane * c->elem_bytes;
    int pp_mf = mf->k_runs == 2 ? rb == 128 : rb % (mf->k * c->elem_bytes) == 0 && rb % (4 * w) == 0;
    CJ_CHECK(pp_mf && c->tile_m == 256 && c->tile_n == 256 && c->wave_m == 2 && c->wave_n == 4 &&
                 c->stages == 2 && c->splitk == 1,
             CONVJIT_ERR_UNSUPPORTED,
             "conv.sched = 2 (ping-pong): needs %s's MFMA (%s) whole in a %u-byte row (%u-byte DMA), tile "
             "256x256 (%ux%u), waves 2x4 (%ux%u), 2 stages (%u), no split-K (%u)",
             arch->name, mf->mnemonic, rb, c->dma_bytes, c->tile_m, c->tile_n, c->wave_m, c->wave_n, c->stages,
             c->splitk);
    c->tile_k = rb / c->elem_bytes;
  }
  return CONVJIT_OK;
}

/* Tile legality: what the arch and the builder can do with the tile (LDS,
 * DMA shape, waves, vmcnt, registers in flight), the loads per K step, the
 * operand prefetch and the LDS the kernel declares. */
static convjit_status cj_conv_step_tile_legal(cj_kplan *p, cj_conv_plan *c, const cj_arch *arch,
                                              const cj_conv_opts *o) {
  int vload = c->load == CJ_CONV_LOAD_VGPR, pp = c->sched == CJ_CONV_SCHED_PINGPONG;
  const cj_mfma_row *mf = cj_mfma_row_of((cj_mfma_kind)c->mfma);
  CJ_CHECK(c->stages >= 2 && c->stages <= 4, CONVJIT_ERR_INVALID_ARG, "conv.stages = %u: must be 2..4", c->stages);
  CJ_CHECK(c->dma_bytes == 4 || c->dma_bytes == 16, CONVJIT_ERR_INVALID_ARG,
           "conv.dma_bytes = %u: must be 4 or 16", c->dma_bytes);
  CJ_CHECK(vload || cj_arch_dma_ok(arch, c->dma_bytes), CONVJIT_ERR_UNSUPPORTED,
           "conv.dma_bytes = %u: %s has no %u-byte buffer-to-LDS load", c->dma_bytes, arch->name, c->dma_bytes);
  CJ_CHECK(!vload || (c->dma_bytes == 16 && !pp), CONVJIT_ERR_UNSUPPORTED,
           "conv.load = 2 (VGPR path): needs 16-byte loads (dma_bytes = %u) and the multistage schedule (sched = %u)",
           c->dma_bytes, c->sched);
  CJ_CHECK(c->wave_m >= 1 && c->wave_n >= 1 && c->wave_m <= 16 && c->wave_n <= 16, CONVJIT_ERR_INVALID_ARG,
           "conv.wave = %ux%u: must be 1..16 each", c->wave_m, c->wave_n);
  CJ_CHECK(c->tile_m >= 16 && c->tile_m <= 512 && c->tile_n >= 16 && c->tile_n <= 512, CONVJIT_ERR_INVALID_ARG,
           "conv.tile = %ux%u: each must be 16..512", c->tile_m, c->tile_n);
  c->threads = c->wave_m * c->wave_n * arch->wave_size;
  CJ_CHECK(c->wave_m * c->wave_n <= 16 && c->threads <= arch->max_block_threads, CONVJIT_ERR_UNSUPPORTED,
           "conv.wave = %ux%u: %u threads, must be <= %u", c->wave_m, c->wave_n, c->wave_m * c->wave_n * 64,
           arch->max_block_threads);
  CJ_CHECK(c->tile_m % (c->wave_m * 16) == 0, CONVJIT_ERR_UNSUPPORTED,
           "conv.tile_m = %u: must be a multiple of wave_m*16 = %u (16x16 MFMA fragments)", c->tile_m,
           c->wave_m * 16);
  CJ_CHECK(c->tile_n % (c->wave_n * 16) == 0, CONVJIT_ERR_UNSUPPORTED,
           "conv.tile_n = %u: must be a multiple of wave_n*16 = %u (16x16 MFMA fragments)", c->tile_n,
           c->wave_n * 16);
  c->mi_m = c->tile_m / (c->wave_m * 16);
  c->mi_n = c->tile_n / (c->wave_n * 16);
  /* 4 fp32 accumulators per fragment per lane; beyond 64 fragments (256
   * VGPRs) a wave cannot hold them at any occupancy. */
  CJ_CHECK(c->mi_m * c->mi_n <= 64, CONVJIT_ERR_UNSUPPORTED,
           "conv tile %ux%u with waves %ux%u: %u accumulator fragments per wave, must be <= 64", c->tile_m,
           c->tile_n, c->wave_m, c->wave_n, c->mi_m * c->mi_n);
  CJ_CHECK(c->tile_k % c->mfma_k == 0, CONVJIT_ERR_INTERNAL, "tile_k %% mfma_k");
  /* Each DMA instruction moves threads*dma_bytes; a tile must be whole
   * instructions for every thread (one M0 per wave, no partial waves). */
  uint32_t row_bytes = c->tile_k * c->elem_bytes, step = c->threads * c->dma_bytes;
  CJ_CHECK((c->tile_m * row_bytes) % step == 0, CONVJIT_ERR_UNSUPPORTED,
           "conv.tile_m = %u: the A tile (%u bytes) is not whole %u-byte DMA loads for %u threads", c->tile_m,
           c->tile_m * row_bytes, c->dma_bytes, c->threads);
  CJ_CHECK((c->tile_n * row_bytes) % step == 0, CONVJIT_ERR_UNSUPPORTED,
           "conv.tile_n = %u: the B tile (%u bytes) is not whole %u-byte DMA loads for %u threads", c->tile_n,
           c->tile_n * row_bytes, c->dma_bytes, c->threads);
  /* One DMA instruction covers threads*dma_bytes/16 (row, kq) chunks; the
   * [kq][row] stage layout needs that to divide the tile rows or be a
   * multiple of them (kernel header in conv_igemm.c). */
  uint32_t rpi = c->threads * c->dma_bytes / 16;
  for (int ab = 0; ab < 2; ab++) {
    uint32_t rows = ab ? c->tile_n : c->tile_m;
    CJ_CHECK(rows % rpi == 0 || rpi % rows == 0, CONVJIT_ERR_UNSUPPORTED,
             "conv.tile_%c = %u: neither divides nor is a multiple of the %u rows one DMA instruction covers",
             ab ? 'n' : 'm', rows, rpi);
  }
  c->a_dma = c->tile_m * row_bytes / step;
  c->b_dma = c->tile_n * row_bytes / step;
  CJ_CHECK(c->a_dma <= CJ_CONV_MAX_DMA && c->b_dma <= CJ_CONV_MAX_DMA, CONVJIT_ERR_UNSUPPORTED,
           "conv tile %ux%u with %u threads and %u-byte DMA: %u A and %u B DMA loads per thread and K step, at "
           "most %u each", c->tile_m, c->tile_n, c->threads, c->dma_bytes, c->a_dma, c->b_dma, CJ_CONV_MAX_DMA);
  /* The K loop waits with vmcnt((stages-2)*(a_dma+b_dma)): a 6-bit field.
   * The VGPR path keeps two K steps of loads in flight (vmcnt(L) before a
   * ds_write) in 2*L*4 VGPRs.
   * (Backward weight with odd column offsets: one more dword per B load.) */
  const uint32_t b_extra = c->wg.odd ? c->b_dma : 0, loads = c->a_dma + c->b_dma + b_extra;
  const uint32_t fifo_vgprs = 2 * ((c->a_dma + c->b_dma) * 4 + b_extra);
  uint32_t in_flight = vload ? 2 * loads : (c->stages - 2) * loads;
  const uint32_t vm_max = arch->waitcnt->vmcnt_max;
  CJ_CHECK(in_flight <= vm_max, CONVJIT_ERR_UNSUPPORTED,
           "conv: %u loads in flight exceed vmcnt's %u (tile %ux%u, %u threads, %u stages, load %u)", in_flight,
           vm_max, c->tile_m, c->tile_n, c->threads, c->stages, c->load);
  CJ_CHECK(!vload || fifo_vgprs <= CJ_CONV_MAX_LOAD_VGPRS, CONVJIT_ERR_UNSUPPORTED,
           "conv.load = 2: %u loads per thread per K step hold %u VGPRs in flight, at most %u (tile %ux%u, %u "
           "threads)", loads, fifo_vgprs, CJ_CONV_MAX_LOAD_VGPRS, c->tile_m, c->tile_n, c->threads);
  /* Operand prefetch (multistage): the prologue fills all S stages and
   * waits for the first, vmcnt((S-1)*L). By default only where a K step is
   * one MFMA slice of 8-byte operand reads (gfx942's 32-byte rows): there
   * it raises the MFMAs a wave issues after each barrier before an LDS
   * wait from 22.75 to 31.9 of 32 (EMULATED, docs/kernels.md "Operand
   * prefetch"); with 16-byte reads (gfx950, one slice) it fell from 23 to
   * 9.5 and with two slices (gfx942 128x128) from 10.5 to 6.7: LLVM's
   * scheduler hoists the reads there. 1024-thread tiles have 128 VGPRs a
   * lane, no room for a second operand set. */
  uint32_t pf_flight = (c->stages - 1) * (c->a_dma + c->b_dma);
  CJ_CHECK(o->prefetch <= 2, CONVJIT_ERR_INVALID_ARG, "conv.prefetch = %u: must be 1 (off) or 2 (on)", o->prefetch);
  CJ_CHECK(o->prefetch != 2 || (!pp && !vload && pf_flight <= vm_max), CONVJIT_ERR_UNSUPPORTED,
           "conv.prefetch = 2: %s", pp      ? "the ping-pong schedule has its own operand order"
                                    : vload ? "not with load = 2 (its ds_writes follow each step's barrier)"
                                            : "the prologue's DMA loads in flight exceed the arch's vmcnt maximum");
  c->prefetch = o->prefetch ? o->prefetch == 2
                            : !pp && !vload && c->threads <= 512 && pf_flight <= vm_max && c->tile_k == c->mfma_k &&
                                  mf->k_runs == 1 && mf->k_per_lane * c->elem_bytes == 8;
  /* Rolled loop (conv_igemm_multistage.c cj_cv_kloop_rolled): the
   * multistage DMA loop; with prefetch only where every operand read of a
   * step is the next step's (one MFMA slice per step). */
  CJ_CHECK(o->roll <= 2, CONVJIT_ERR_INVALID_ARG, "conv.roll = %u: must be 1 (unrolled) or 2 (one K step)", o->roll);
  CJ_CHECK(o->roll != 2 || (!pp && !vload && (!c->prefetch || c->tile_k == c->mfma_k)), CONVJIT_ERR_UNSUPPORTED,
           "conv.roll = 2: %s", pp      ? "the ping-pong schedule has its own loop"
                                : vload ? "not with load = 2 (its register FIFO rotates by unrolling)"
                                        : "with operand prefetch a K step must be one MFMA slice (tile_k = mfma_k)");
  c->roll = o->roll == 2;
  /* Stage layout (docs/kernels.md "Global -> LDS"): row-major swizzled by
   * default where a lane copies 16 bytes (gfx950's DMA, every VGPR path),
   * whose [kq][row][16 B] lanes read 64 rows (62-64 lines) an instruction;
   * gfx942's 4-byte DMA keeps [kq][row][16 B] (16 lines an instruction):
   * there the row-major copy's address arithmetic grows the K step's
   * issue cycles 2-8% and its MODELLED gain was 12-17% short of the
   * 8-wave ping-pong's (docs/performance.md "Losses found" item 2). The
   * ping-pong has its own row-major stage. */
  CJ_CHECK(o->stage <= 3, CONVJIT_ERR_INVALID_ARG,
           "conv.stage_layout = %u: must be 1 ([kq][row]), 2 (row-major swizzled) or 3 (row-major unswizzled)",
           o->stage);
  CJ_CHECK(!o->stage || !pp, CONVJIT_ERR_UNSUPPORTED,
           "conv.stage_layout = %u: the ping-pong schedule has its own row-major swizzled stage", o->stage);
  c->stage_rm = o->stage ? o->stage - 1 : !pp && c->dma_bytes == 16;
  c->lds_a_stage = c->tile_m * row_bytes;
  c->lds_b_stage = c->tile_n * row_bytes;
  uint64_t lds = (uint64_t)c->stages * (c->lds_a_stage + c->lds_b_stage);
  CJ_CHECK(lds <= arch->lds_bytes, CONVJIT_ERR_UNSUPPORTED,
           "conv tile %ux%u x %u stages needs %" PRIu64 " bytes of LDS; %s has %u", c->tile_m, c->tile_n, c->stages,
           lds, arch->name, arch->lds_bytes);
  /* a phase with no taps runs no K loop: no LDS */
  p->lds_bytes = c->g.taps ? (uint32_t)lds : 0;
  return CONVJIT_OK;
}

/* Grid and K split: output tiles, K steps, steps per split. */
static convjit_status cj_conv_step_grid(cj_conv_plan *c) {
  const cj_conv_geom *g = &c->g;
  c->tiles_m = cj_ceil_div(g->npq, c->tile_m);
  c->tiles_n = cj_ceil_div(g->k, c->tile_n);
  CJ_CHECK(c->tiles_m * c->tiles_n < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
           "conv grid of %" PRIu64 " tiles: must be < 2^31", c->tiles_m * c->tiles_n);
  c->k_tiles = (uint32_t)cj_ceil_div(g->crs, c->tile_k);
  /* no taps (a phase's epilogue of zero): no K loop to split */
  CJ_CHECK(c->splitk >= 1 && (c->splitk <= c->k_tiles || c->splitk == 1) && c->splitk <= 64,
           CONVJIT_ERR_INVALID_ARG, "conv.splitk = %u: must be 1..min(64, K steps = %u)", c->splitk, c->k_tiles);
  CJ_CHECK(c->k_tiles || !c->ws_out, CONVJIT_ERR_INVALID_ARG, "conv.ws_out = 1 with no taps: nothing to accumulate");
  CJ_CHECK(c->wgm >= 1 && c->wgm <= 64, CONVJIT_ERR_INVALID_ARG, "conv.wgm = %u: must be 1..64", c->wgm);
  /* Whole pipeline groups per split: steps past the split's end load zeros. */
  c->k_tiles_split = (uint32_t)cj_round_up(cj_ceil_div(c->k_tiles, c->splitk), c->stages);
  c->atomic = c->splitk > 1 || c->ws_out;
  return CONVJIT_OK;
}

/* Specialization flags and tensor sizes: partial tiles, the fast paths,
 * BIG_IN / BIG_OUT, the store width, the split-K workspace. */
static convjit_status cj_conv_step_flags(cj_conv_plan *c, const cj_conv_opts *o) {
  const cj_conv_geom *g = &c->g;
  int pp = c->sched == CJ_CONV_SCHED_PINGPONG;
  c->m_partial = g->npq % c->tile_m != 0;
  c->n_tail = g->k % c->tile_n != 0;
  c->k_partial = g->crs % ((uint64_t)c->tile_k * c->stages) != 0 || c->splitk > 1;
  int fast = !o->no_fast_paths;
  /* the in-plane position of an A row is its output's: H and W map 1:1 */
  c->temporal_fast = fast && !c->pure_gemm_a && g->n == 1 && g->r == 1 && g->s == 1 && g->stride[0] == 1 &&
                     g->stride[1] == 1 && g->stride[2] == 1 && !c->need_h && !c->need_w && g->up[1] <= 1 &&
                     g->up[2] <= 1 && !g->pad_lo[1] && !g->pad_lo[2] && g->oh == g->h && g->ow == g->w && g->taps;
  uint64_t ncdhw_bytes = (uint64_t)g->n * g->c * g->dhw * c->elem_bytes;
  c->channel_gemm = !pp && cj_conv_channel_gemm_ok(c, o);
  c->x_bytes = c->channel_gemm ? ncdhw_bytes : (uint64_t)g->n * g->dhw * g->x_cs * c->elem_bytes;
  if (c->pure_gemm_a) {
    c->x_bytes = g->npq * g->crs * c->elem_bytes;
    CJ_CHECK(c->x_bytes <= CJ_CONV_OOB, CONVJIT_ERR_UNSUPPORTED,
             "conv.pure_gemm_a: the A matrix (%" PRIu64 " bytes) must be <= %u (32-bit offsets, no rebase)",
             c->x_bytes, CJ_CONV_OOB);
  }
  c->w_bytes = (uint64_t)g->k_all * g->crs * c->elem_bytes;
  c->y_bytes = (uint64_t)g->n * g->k_all * g->ydhw * cj_dtype_bytes((convjit_dtype)cj_conv_y_dtype(g));
  CJ_CHECK(c->w_bytes <= CJ_CONV_OOB, CONVJIT_ERR_UNSUPPORTED,
           "conv packed weight of %" PRIu64 " bytes: must be <= %u (32-bit buffer offsets)", c->w_bytes, CJ_CONV_OOB);
  c->big_in = c->x_bytes > CJ_CONV_OOB || o->force_big_in;
  if (c->big_in) {
    uint64_t span = cj_big_in_span(g, c->tile_m);
    CJ_CHECK(span < CJ_CONV_BIG_IN_RECORDS, CONVJIT_ERR_UNSUPPORTED,
             "conv BIG_IN: one workgroup may touch %" PRIu64 " bytes of x past its rebase origin; must be < 2^31",
             span);
  }
  c->big_out = c->y_bytes >= (1ull << 31) || o->force_big_out;
  c->vec4_store = fast && g->n == 1 && !c->atomic && g->odhw % 4 == 0 && !g->y_ndhwc && !g->placed;
  /* NDHWC y: with A and B swapped in the MFMA the accumulator is the
   * fragment transposed, so a lane holds 4 consecutive output channels of
   * one position, contiguous in NDHWC: one 8-byte store instead of 4
   * scalar ones (both schedules: they share the MFMA call and the
   * epilogue's fragment map). */
  c->vec_ch_store = g->y_ndhwc && !c->atomic && g->k % 4 == 0;
  /* The finalize reads and writes NCDHW (conv_finalize.c). */
  CJ_CHECK(!c->atomic || !g->y_ndhwc, CONVJIT_ERR_UNSUPPORTED,
           "conv.splitk = %u with NDHWC y: the split-K finalize writes NCDHW only", c->splitk);
  if (c->atomic) {
    c->ws_bytes = (uint64_t)g->n * g->k_all * g->ydhw * 4;
    CJ_CHECK(c->ws_bytes < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
             "conv.splitk = %u: the fp32 workspace (%" PRIu64 " bytes) must be < 2^31", c->splitk, c->ws_bytes);
  }
  return CONVJIT_OK;
}

/* Epilogue: the description's ops around the plan's own (alpha, the
 * conversion to y's dtype) when the conv stores y; a split conv stores fp32 partial sums
 * with atomics and its finalize runs the same ops (cj_kplan_finalize_init). */
static convjit_status cj_conv_step_epilogue(cj_conv_plan *c, const cj_epilogue *epi) {
  c->has_bias = cj_epi_has(epi, CJ_EPI_BIAS);
  if (!c->atomic) CJ_TRY(cj_conv_epi_ops(&c->epi, &c->g, epi));
  return CONVJIT_OK;
}

/* Launch: block, grid and the argument order, written once (builders and
 * binders go by role); the kernel's name from its key. */
static convjit_status cj_conv_step_launch(cj_kplan *p) {
  const cj_conv_plan *c = &p->u.conv;
  p->block[0] = c->threads;
  p->block[1] = p->block[2] = 1;
  p->grid[0] = c->tiles_m * c->tiles_n;
  p->grid[1] = c->g.groups;
  p->grid[2] = c->splitk;
  cj_kplan_add_arg(p, CJ_ARG_X, NULL);
  cj_kplan_add_arg(p, CJ_ARG_W, NULL);
  if (c->atomic) {
    cj_kplan_add_arg(p, CJ_ARG_WORKSPACE, NULL);
  } else {
    cj_epi_add_args(p, &c->epi);
    cj_kplan_add_arg(p, CJ_ARG_Y, NULL);
  }
  char prefix[40];
  snprintf(prefix, sizeof prefix, "%s_%s", cj_kop_prefix(CJ_KOP_CONV), cj_dtype_name((convjit_dtype)c->g.dtype));
  return cj_kplan_name_from_key(p, prefix, cj_kplan_conv_key);
}

/* Backward weight after the tile (kplan_wgrad.h): the grid of output tiles
 * (dw rows x columns) x groups x reduction blocks, each block's K steps,
 * the operands' and the partial tile's per-workgroup spans (the kernel
 * rebases every resource per workgroup in 64 bits, so only a tile's own
 * reach must fit 32-bit offsets), no epilogue ops, the arguments. */
static convjit_status cj_conv_wgrad_finish(cj_kplan *p, cj_conv_plan *c, const cj_epilogue *epi) {
  const cj_conv_geom *g = &c->g;
  const cj_wgrad_grid *w = &c->wg;
  CJ_CHECK(!epi || epi->nops == 0, CONVJIT_ERR_INVALID_ARG,
           "conv.epi: a backward-weight GEMM has no epilogue ops (%u given)", epi ? epi->nops : 0);
  CJ_CHECK(c->splitk == 1, CONVJIT_ERR_INVALID_ARG,
           "conv.splitk = %u: the backward-weight GEMM is split by its %u reduction blocks, chosen from the "
           "problem (kplan_wgrad.h), never by a knob", c->splitk, w->blocks);
  CJ_CHECK(c->wgm >= 1 && c->wgm <= 64, CONVJIT_ERR_INVALID_ARG, "conv.wgm = %u: must be 1..64", c->wgm);
  c->tiles_m = cj_ceil_div(g->k, c->tile_m);
  c->tiles_n = cj_ceil_div(w->ng, c->tile_n);
  CJ_CHECK(c->tiles_m * c->tiles_n < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
           "conv backward weight: grid of %" PRIu64 " tiles: must be < 2^31", c->tiles_m * c->tiles_n);
  /* the block quantum (kplan_wgrad.h) is whole groups of every shipped tile_k x stages; forced knobs may not be */
  CJ_CHECK(w->lb % ((uint64_t)c->tile_k * c->stages) == 0, CONVJIT_ERR_INVALID_ARG,
           "conv.stages = %u with tile_k %u: the backward-weight block of %" PRIu64 " positions is not whole "
           "groups of tile_k x stages", c->stages, c->tile_k, w->lb);
  c->k_tiles = c->k_tiles_split = (uint32_t)(w->lb / c->tile_k);
  c->m_partial = g->k % c->tile_m != 0;
  c->n_tail = w->ng % c->tile_n != 0;
  /* The MFMA's operands swapped (as vec_ch_store): a lane holds 4
   * consecutive columns of one dw row, one 16-byte store into the
   * row-major partial tile. */
  c->vec_ch_store = 1;
  c->x_bytes = w->x_rows * w->lx * c->elem_bytes;
  c->w_bytes = (uint64_t)g->k_all * w->lp * c->elem_bytes; /* the A operand: dy on the grid */
  c->ws_bytes = (uint64_t)(g->wgrad_atomic ? 1 : w->blocks) * g->k_all * w->np * 4;
  /* per-workgroup reach from the rebased origins (conv_igemm_wgrad.c) */
  uint64_t a_span = (uint64_t)c->tile_m * w->lp * c->elem_bytes;
  uint64_t b_rows = (c->tile_n / g->taps + 2) * (uint64_t)w->pt + 1;
  uint64_t b_span = (b_rows * w->lx + w->lb) * c->elem_bytes;
  uint64_t p_span = (uint64_t)c->tile_m * w->np * 4;
  CJ_CHECK(a_span < (1ull << 31) && b_span < (1ull << 31) && p_span < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
           "conv backward weight tile %ux%u: a workgroup reaches %" PRIu64 " bytes of dy's grid rows, %" PRIu64
           " of x's and %" PRIu64 " of its partial tile from its origins; each must be < 2^31 (fewer positions "
           "per sample or a smaller tile)", c->tile_m, c->tile_n, a_span, b_span, p_span);
  p->block[0] = c->threads;
  p->block[1] = p->block[2] = 1;
  p->grid[0] = c->tiles_m * c->tiles_n;
  p->grid[1] = g->groups;
  p->grid[2] = w->blocks;
  cj_kplan_add_arg(p, CJ_ARG_DY, NULL);
  cj_kplan_add_arg(p, CJ_ARG_X, NULL);
  cj_kplan_add_arg(p, CJ_ARG_WORKSPACE, "partials");
  char prefix[40];
  snprintf(prefix, sizeof prefix, "cj_wgrad_%s", cj_dtype_name((convjit_dtype)g->dtype));
  return cj_kplan_name_from_key(p, prefix, cj_kplan_conv_key);
}

double cj_conv_gemm_flops(const cj_conv_plan *c) {
  if (c->g.wgrad) return 2.0 * (double)c->g.k_all * c->wg.ng * (double)c->wg.lp;
  return 2.0 * (double)c->g.npq * c->g.k * c->g.crs;
}

double cj_conv_hbm_bytes(const cj_conv_plan *c) {
  return (double)c->x_bytes + (double)c->w_bytes + (double)(c->g.wgrad ? c->ws_bytes : c->y_bytes);
}

static _Atomic uint64_t cj_conv_init_count;
uint64_t cj_kplan_conv_init_calls(void) { return atomic_load_explicit(&cj_conv_init_count, memory_order_relaxed); }

convjit_status cj_kplan_conv_init(cj_kplan *p, const cj_arch *arch, const cj_conv_geom *gin, const cj_conv_opts *o,
                                  const cj_epilogue *epi) {
  atomic_fetch_add_explicit(&cj_conv_init_count, 1, memory_order_relaxed);
  CJ_CHECK(p && arch && gin, CONVJIT_ERR_INVALID_ARG, "conv plan: NULL plan, arch or geometry");
  CJ_TRY(cj_conv_arch_check(arch));
  CJ_TRY(cj_epi_check_desc(epi, "conv.epi"));
  static const cj_conv_opts def;
  if (!o) o = &def;
  memset(p, 0, sizeof *p);
  p->op = CJ_KOP_CONV;
  p->arch = arch;
  cj_conv_plan *c = &p->u.conv;
  CJ_TRY(cj_conv_step_geometry(c, arch, gin, o));
  CJ_TRY(cj_conv_step_tile(c, arch, o));
  CJ_TRY(cj_conv_step_tile_legal(p, c, arch, o));
  if (c->g.wgrad) return cj_conv_wgrad_finish(p, c, epi);
  CJ_TRY(cj_conv_step_grid(c));
  CJ_TRY(cj_conv_step_flags(c, o));
  CJ_TRY(cj_conv_step_epilogue(c, epi));
  return cj_conv_step_launch(p);
}

convjit_status cj_conv_epi_ops(cj_epilogue *e, const cj_conv_geom *g, const cj_epilogue *desc) {
  return cj_epi_compose(e, desc, g->elem_bytes == 1, (int)cj_conv_y_dtype(g));
}

/* ---- key and printout: expanded from the field tables ---- */

void cj_conv_geom_key(cj_strbuf *key, const char *field, cj_conv_geom g) {
  (void)field; /* the geometry's fields are keyed by their own names */
#define CJ_GEOM_KEY_F(type, name, in_key, reason) \
  if (in_key == 1 || (in_key == 2 && g.name != 0) || (in_key == 3 && g.name > 1)) cj_kplan_key_u64(key, #name, g.name);
#define CJ_GEOM_KEY_A(type, name, count, in_key, reason)                \
  for (int i_ = 0; (in_key == 1 || (in_key == 2 && (g.name[0] || g.name[1] || g.name[2]))) && i_ < count; i_++) { \
    char f_[32];                                                        \
    snprintf(f_, sizeof f_, "%s[%d]", #name, i_);                       \
    cj_kplan_key_u64(key, f_, g.name[i_]);                              \
  }
  CJ_CONV_GEOM_FIELDS(CJ_GEOM_KEY_F, CJ_GEOM_KEY_A)
#undef CJ_GEOM_KEY_F
#undef CJ_GEOM_KEY_A
}

void cj_conv_geom_print(cj_strbuf *out, const char *field, cj_conv_geom g, const char *reason) {
  cj_sb_printf(out, "  %-14s = %s N%u C%u D%u H%u W%u -> K%u, filter %ux%ux%u  # %s\n", field,
               cj_dtype_name((convjit_dtype)g.dtype), g.n, g.c, g.d, g.h, g.w, g.k, g.t, g.r, g.s, reason);
  cj_sb_printf(out, "  %-14s = stride %u,%u,%u dil %u,%u,%u pad %d/%d,%d/%d,%d/%d\n", "conv", g.stride[0],
               g.stride[1], g.stride[2], g.dil[0], g.dil[1], g.dil[2], cj_conv_pad(g.pad_lo[0]),
               cj_conv_pad(g.pad_hi[0]), cj_conv_pad(g.pad_lo[1]), cj_conv_pad(g.pad_hi[1]), cj_conv_pad(g.pad_lo[2]),
               cj_conv_pad(g.pad_hi[2]));
  if (g.up[0] | g.up[1] | g.up[2] | g.out[0] | g.out[1] | g.out[2] | g.ys[0] | g.ys[1] | g.ys[2] | g.yext[0] |
      g.yext[1] | g.yext[2])
    cj_sb_printf(out, "  %-14s = up %u,%u,%u out %u,%u,%u ys %u,%u,%u yext %u,%u,%u  # a phase (kplan_phase.h)\n",
                 "phase", g.up[0], g.up[1], g.up[2], g.out[0], g.out[1], g.out[2], g.ys[0], g.ys[1], g.ys[2],
                 g.yext[0], g.yext[1], g.yext[2]);
#define CJ_GEOM_PRINT_F(type, name, in_key, reason) \
  if (in_key != 1) cj_kplan_print_u64(out, #name, g.name, reason);
#define CJ_GEOM_PRINT_A(type, name, count, in_key, reason)
  CJ_CONV_GEOM_FIELDS(CJ_GEOM_PRINT_F, CJ_GEOM_PRINT_A)
#undef CJ_GEOM_PRINT_F
#undef CJ_GEOM_PRINT_A
}

void cj_kplan_conv_key(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_conv_plan *fpl_ = &p->u.conv;
  CJ_CONV_PLAN_FIELDS(CJ_FIELD_KEY_ROW)
}

void cj_kplan_conv_print(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_conv_plan *fpl_ = &p->u.conv;
  const cj_mfma_row *mf = cj_mfma_row_of((cj_mfma_kind)fpl_->mfma);
  cj_sb_printf(fsb_, "  %-14s = %s (16x16x%u, %u k per lane)\n", "mfma_row", mf ? mf->mnemonic : "?", fpl_->mfma_k,
               mf ? mf->k_per_lane * mf->k_runs : 0);
  CJ_CONV_PLAN_FIELDS(CJ_FIELD_PRINT_ROW)
}
