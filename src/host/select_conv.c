/* Conv selection (contract in select.h): a validated bf16, f16 or fp8 problem
 * -> the launch sequence
 *   pack: weight KCTRS -> KTRSC, C zero-padded to a 16-byte chunk (once per
 *         weight); fp8 convs: E4M3FN -> FNUZ on gfx942, bf16 w quantized
 *   fwd:  x NCDHW -> NDHWC(Cp) into the workspace (layout transpose when
 *         C == Cp, else the pack kernel used as a channel-padding
 *         transpose: per sample [C][DHW] -> [DHW][Cp] is its [K][C][TRS] ->
 *         [K][TRS][c_pad] with K = N, TRS = DHW), in the same modes for x;
 *         none on the (bf16) 1x1x1 channel-GEMM path, which reads x as given
 *         [zero the fp32 split-K workspace]
 *         conv (implicit GEMM)
 *         [split-K finalize: alpha, scale[k], residual, bias, act, y's dtype, NCDHW]
 * fp8 formats and scales: docs/api.md "fp8 formats" (cj_conv_fmt_of).
 * Heuristics (docs/original-design.md "bf16 kernel") as an ordered candidate list
 * (cj_conv_candidates, pure): tile (128,128,2,4) by default, 256x256 on a
 * 2x4 wave grid at 4 stages when its grid still fills the device (64-byte K
 * rows, or 32-byte ones where LDS cannot hold 4 stages of 64, i.e. on
 * gfx942; chosen by the bounds report), then docs/original-design.md's 4x4-wave
 * 256x256; for fp8 in 64 KiB of LDS a 2-stage
 * 128x256 after the 128x128 stage fallbacks; split-K only when the M x N
 * tile grid under-fills the device (fewer tiles than 3/4 of the CUs), never
 * when it fills it; WGM 8; 4 pipeline stages (measured fastest for every
 * shape), fewer only when LDS cannot hold 4. Legality is the plan init's
 * alone: the first candidate it accepts is the heuristic's choice, and the
 * API walks on down the list when a kernel fails the resource gate. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "host/select.h"


static convjit_status cj_u32_field(const char *name, int64_t v, int64_t lo, uint32_t *out) {
  CJ_CHECK(v >= lo && v <= (int64_t)UINT32_MAX, CONVJIT_ERR_UNSUPPORTED,
           "desc.%s = %" PRId64 ": the conv kernels take %" PRId64 "..2^32-1", name, v, lo);
  *out = (uint32_t)v;
  return CONVJIT_OK;
}

static int cj_is_fp8(convjit_dtype t) { return t == CONVJIT_DTYPE_FP8_E4M3FN || t == CONVJIT_DTYPE_FP8_E4M3FNUZ; }

convjit_status cj_conv_problem_fields(const cj_conv_problem *p, cj_conv_geom *g) {
  memset(g, 0, sizeof *g);
  /* fp8 compute when either operand is fp8 (its flavour stands in here;
   * cj_conv_fmt_of picks the arch's own). */
  g->dtype = (uint32_t)(p->x_dtype == CONVJIT_DTYPE_BF16 ? p->w_dtype : p->x_dtype);
  g->y_dtype = (uint32_t)p->y_dtype; /* derive keeps it only when it is not the dtype's own */
  int64_t groups = p->groups > 1 ? p->groups : 1;
  CJ_TRY(cj_u32_field("groups", groups, 1, &g->groups));
  CJ_TRY(cj_u32_field("n", p->n, 1, &g->n));
  CJ_TRY(cj_u32_field("c", p->c / groups, 1, &g->c)); /* per group (the API checked that groups divides c, k) */
  CJ_TRY(cj_u32_field("k", p->k / groups, 1, &g->k));
  g->x_ndhwc = p->x_layout == CONVJIT_LAYOUT_NDHWC;
  g->y_ndhwc = p->y_layout == CONVJIT_LAYOUT_NDHWC;
  CJ_TRY(cj_u32_field("d", p->d, 1, &g->d));
  CJ_TRY(cj_u32_field("h", p->h, 1, &g->h));
  CJ_TRY(cj_u32_field("w", p->w, 1, &g->w));
  CJ_TRY(cj_u32_field("t", p->t, 1, &g->t));
  CJ_TRY(cj_u32_field("r", p->r, 1, &g->r));
  CJ_TRY(cj_u32_field("s", p->s, 1, &g->s));
  static const char *const dn[3] = {"[0]", "[1]", "[2]"};
  for (int i = 0; i < 3; i++) {
    char f[24];
    snprintf(f, sizeof f, "stride%s", dn[i]);
    CJ_TRY(cj_u32_field(f, p->stride[i], 1, &g->stride[i]));
    snprintf(f, sizeof f, "dilation%s", dn[i]);
    CJ_TRY(cj_u32_field(f, p->dil[i], 1, &g->dil[i]));
    snprintf(f, sizeof f, "pad_lo%s", dn[i]);
    CJ_TRY(cj_u32_field(f, p->pad_lo[i], 0, &g->pad_lo[i]));
    snprintf(f, sizeof f, "pad_hi%s", dn[i]);
    CJ_TRY(cj_u32_field(f, p->pad_hi[i], 0, &g->pad_hi[i]));
    CJ_CHECK(p->pad_lo[i] < CJ_CONV_MAX_PAD && p->pad_hi[i] < CJ_CONV_MAX_PAD, CONVJIT_ERR_UNSUPPORTED,
             "desc.pad_lo%s = %lld, pad_hi%s = %lld: the conv kernels take pads below 2^20", dn[i],
             (long long)p->pad_lo[i], dn[i], (long long)p->pad_hi[i]);
  }
  return CONVJIT_OK;
}

/* Split only an under-filled grid, and keep >= 2 pipeline groups of K
 * steps per split so the prologue is amortized. */
static uint32_t cj_split_for(const cj_target *t, const cj_conv_geom *g, uint32_t tm, uint32_t tn, uint32_t stages,
                             uint32_t k_bytes) {
  /* NDHWC y: the finalize writes NCDHW only (the plan refuses the split) */
  if (g->y_ndhwc) return 1;
  uint64_t tiles = ((g->npq + tm - 1) / tm) * ((g->k + tn - 1) / tn) * (g->groups ? g->groups : 1);
  uint64_t tile_k = (k_bytes ? k_bytes : CJ_CONV_STAGE_ROW_BYTES) / g->elem_bytes;
  uint64_t ksteps = (g->crs + tile_k - 1) / tile_k;
  if (4 * tiles >= 3 * (uint64_t)t->cu_count) return 1;
  uint64_t want = t->cu_count / tiles, cap = ksteps / (2ull * stages);
  if (want > cap) want = cap;
  if (want > 16) want = 16;
  return want > 1 ? (uint32_t)want : 1;
}

/* One candidate: forced fields win; split-K (unless forced) follows the
 * candidate's tile and stages. */
static cj_conv_opts cj_candidate(const cj_target *t, const cj_conv_geom *g, const cj_conv_opts *forced, uint32_t tm,
                                 uint32_t tn, uint32_t wm, uint32_t wn, uint32_t stages, uint32_t k_bytes,
                                 uint32_t splitk, uint32_t load) {
  cj_conv_opts o = *forced;
  if (!forced->tile_m) {
    o.tile_m = tm;
    o.tile_n = tn;
    o.wave_m = wm;
    o.wave_n = wn;
  }
  if (!forced->stages) o.stages = stages;
  if (!forced->k_bytes) o.k_bytes = k_bytes;
  if (!forced->load) o.load = load;
  if (!forced->wgm) o.wgm = 8;
  if (!forced->splitk) o.splitk = splitk ? splitk : cj_split_for(t, g, o.tile_m, o.tile_n, o.stages, o.k_bytes);
  return o;
}

convjit_status cj_conv_heuristic(const cj_target *t, const cj_conv_geom *g, const cj_conv_opts *forced,
                                 cj_conv_opts *out) {
  cj_conv_opts list[CJ_CONV_MAX_CANDIDATES];
  uint32_t n = cj_conv_candidates(t, g, forced, list, CJ_CONV_MAX_CANDIDATES);
  CJ_CHECK(n > 0, CONVJIT_ERR_INTERNAL, "conv heuristic: no candidate");
  *out = list[0];
  return CONVJIT_OK;
}

static void cj_push(cj_conv_opts *list, uint32_t *n, uint32_t max, const cj_conv_opts *c) {
  for (uint32_t i = 0; i < *n; i++)
    if (!memcmp(&list[i], c, sizeof *c)) return;
  if (*n < max) list[(*n)++] = *c;
}

uint32_t cj_conv_candidates(const cj_target *t, const cj_conv_geom *g, const cj_conv_opts *forced, cj_conv_opts *list,
                            uint32_t max) {
  static const cj_conv_opts none;
  if (!forced) forced = &none;
  uint32_t n = 0;
#define CJ_ADD(...)                                                                            \
  do {                                                                                         \
    cj_conv_opts c_ = cj_candidate(t, g, forced, __VA_ARGS__);                                 \
    cj_push(list, &n, max, &c_);                                                               \
  } while (0)
  /* Plan init decides legality (LDS, DMA shape, vmcnt): an illegal candidate
   * is skipped by the caller, so none of the arch's limits are restated. */
  /* fp8: the plan's own default first, as given: the 8-wave ping-pong
   * (fixed tile, no split-K) where the arch has it, else its multistage
   * default (docs/original-design.md "fp8 kernel": WGM is the only tunable). */
  if (g->elem_bytes == 1 && cj_conv_pingpong_arch(t->arch) && !forced->tile_m &&
      (!forced->stages || forced->stages == 2) && forced->splitk <= 1 && n < max) {
    list[n] = *forced;
    if (!forced->wgm) list[n].wgm = 8;
    n++;
  }
  /* Big grids: 256x256 on 2x4 waves (128x64 per wave) at 4 stages, 64-byte
   * K rows where LDS holds them (gfx950: 128 KiB), else 32-byte rows
   * (gfx942: 64 KiB). Per K step (MODELLED, docs/performance.md "Tile
   * choice") its LDS cycles are 0.50 of its MFMA cycles; the 4x4-wave
   * 256x256 (64x64 per wave, 4 waves/SIMD) re-reads each operand twice as
   * often (0.63), the 128x128 (2 waves/SIMD, 64x32 per wave) is LDS-bound
   * (1.00). The 4x4 tile (docs/original-design.md's best measured) stays a candidate. */
  /* Where the arch has no 16-byte LDS DMA (gfx942) the 32-byte-row tile has
   * two forms that both meet the issue-11 goals, bound by MFMA in the model:
   * 4-byte DMA with operand prefetch (issue 0.34-0.47 of the MFMA cycles,
   * 31.7-32 of 32 MFMAs behind each barrier before an LDS wait) and the VGPR
   * load path (load 2: one buffer_load_dwordx4 + ds_write per operand per
   * thread and step; issue 0.22-0.28, 6 MFMAs behind each barrier). The
   * model's bound does not tell them apart; the exact barrier cover does, so
   * DMA + prefetch leads (then its no-prefetch twin), the VGPR path follows
   * (docs/kernels.md "gfx942 load path", docs/performance.md). */
  uint64_t big_tiles = ((g->npq + 255) / 256) * ((g->k + 255) / 256);
  uint32_t vload = cj_arch_dma_ok(t->arch, 16) ? 0 : CJ_CONV_LOAD_VGPR;
  /* The 8-wave ping-pong on big grids first for bf16/f16 on gfx950
   * (128-byte K rows, two 16x16x32 MFMAs per K step): MODELLED 0.525-0.538
   * of peak on the headline shapes against the row-major multistage
   * 256x256's 0.47 (1x3x3; issue 38, docs/performance.md "Losses found"
   * item 2). Not gfx942's 32-byte-row form (a knob): the simulation puts it
   * 2-12% ahead of the multistage tile, but its non-MFMA issue cycles per K
   * step are 0.48-0.56 of the MFMA cycles, past issue 11's goal of 0.5
   * (tests/host/test_bounds_goals.c). Not a phase without taps (backward
   * data, kplan_phase.h): no K loop, the multistage plan's zero epilogue. */
  uint32_t pp_rb = cj_conv_pingpong_rb(t->arch);
  int pp_first = pp_rb == 128 && g->elem_bytes == 2;
  if (pp_first && !g->wgrad && g->taps > 0 && big_tiles >= t->cu_count &&
      (!forced->sched || forced->sched == CJ_CONV_SCHED_PINGPONG) && !forced->load && forced->splitk <= 1 &&
      (!forced->k_bytes || forced->k_bytes == pp_rb)) {
    cj_conv_opts c_ = cj_candidate(t, g, forced, 256, 256, 2, 4, 2, pp_rb, 1, 0);
    c_.sched = CJ_CONV_SCHED_PINGPONG;
    cj_push(list, &n, max, &c_);
  }
  if (big_tiles >= t->cu_count) {
    /* gfx942 (no 16-byte DMA) first: the VGPR load path at 2 stages of
     * 64-byte K rows (exactly its 64 KiB), on the row-major swizzled stage
     * (4 lanes per row, 16 lines per load instruction, EMULATED), the next
     * step's loads in registers: MODELLED 0.430-0.438 (bf16) and
     * 0.412-0.425 (fp8) of peak on the headline shapes against the DMA
     * 32-byte-row form's 0.333-0.341 / 0.323-0.331 (issue 38,
     * docs/performance.md "Losses found" item 3); per K step LDS 0.50 and
     * issue 0.26-0.32 of the MFMA cycles (issue 11's goals). Not the
     * backward-weight GEMM (its own rows: docs/kernels.md). */
    if (vload && !g->wgrad) CJ_ADD(256, 256, 2, 4, 2, 64, 0, vload);
    CJ_ADD(256, 256, 2, 4, 4, 64, 0, 0);
    CJ_ADD(256, 256, 2, 4, 4, 32, 0, 0);
    if (vload) CJ_ADD(256, 256, 2, 4, 4, 32, 0, vload);
    CJ_ADD(256, 256, 4, 4, 4, 0, 0, 0);
  }
  /* 4 pipeline stages (measured fastest for every shape), fewer only when
   * LDS cannot hold 4 or the kernel does not fit its registers. */
  for (uint32_t st = 4; st >= 2; st--) CJ_ADD(128, 128, 2, 4, st, 0, 0, 0);
  /* fp8 in 64 KiB of LDS (gfx942): 128x256 on 2x4 waves at 2 stages, the
   * fewest non-MFMA instructions per MFMA of the 512-thread tiles that fit
   * (EMULATED, docs/kernels.md "gfx942 fp8"), before any split; not the
   * head: one K step in flight against the 128x128 default's three. */
  if (g->elem_bytes == 1 && t->arch->lds_bytes <= 65536) CJ_ADD(128, 256, 2, 4, 2, 0, 0, 0);
  /* Register fallbacks: a split shortens nothing in the loop body but moves
   * bias and the epilogue's stores to the finalize; smaller tiles hold
   * fewer accumulators. */
  for (uint32_t st = 4; st >= 2; st--) CJ_ADD(128, 128, 2, 4, st, 0, 2, 0);
  for (uint32_t st = 4; st >= 2; st--) CJ_ADD(64, 64, 2, 2, st, 0, 0, 0);
#undef CJ_ADD
  return n;
}

/* The problem kind's dtypes (the one table, kinds.h). */
static convjit_status cj_conv_dtypes_check(const cj_conv_problem *p) {
  return cj_conv_kind_dtypes_check(p->kind, p->x_dtype, p->w_dtype, p->y_dtype);
}

convjit_status cj_conv_problem_geom(const cj_conv_problem *p, cj_conv_geom *g) {
  CJ_TRY(cj_conv_dtypes_check(p));
  CJ_TRY(cj_conv_problem_fields(p, g));
  return cj_conv_geom_derive(g);
}

/* What one operand's pre-pass does on the way to the compute dtype, and
 * the factor its values change by (E4M3FN bits read as FNUZ: half). */
static convjit_dtype cj_native_fp8(const cj_arch *arch) {
  return arch->fp8 == CJ_FP8_E4M3FNUZ ? CONVJIT_DTYPE_FP8_E4M3FNUZ : CONVJIT_DTYPE_FP8_E4M3FN;
}

static convjit_status cj_operand_mode(convjit_dtype t, const cj_arch *arch, float scale, const char *field,
                                      cj_prep_mode *mode, float *factor, float *qscale) {
  const convjit_dtype native = cj_native_fp8(arch);
  *factor = 1.0f;
  *qscale = 1.0f;
  *mode = CJ_PREP_COPY;
  if (t == native) return CONVJIT_OK;
  if (t == CONVJIT_DTYPE_BF16) { /* quantized with the operand's scale: fp8(fl32(v * fl32(1/s))) */
    *mode = CJ_PREP_QUANT;
    *qscale = 1.0f / scale;
    CJ_CHECK(isfinite(*qscale), CONVJIT_ERR_INVALID_ARG,
             "desc.%s = %g: 1/%s overflows fp32; a bf16 operand is quantized by multiplying with it", field,
             (double)scale, field);
    return CONVJIT_OK;
  }
  CJ_CHECK(t == CONVJIT_DTYPE_FP8_E4M3FN, CONVJIT_ERR_UNSUPPORTED,
           "desc.%s_dtype = fp8_e4m3fnuz: %s computes in E4M3FN, which has no exact image of E4M3FNUZ (+-240, "
           "codes 0x7F/0xFF, would be +-480 > 448 at the bit-preserving scale; 2^-10 has no code at the "
           "value-preserving one): give E4M3FN or bf16 data",
           field[0] == 'x' ? "x" : "w", arch->name);
  *mode = CJ_PREP_FN_FNUZ; /* gfx942: same bits read as FNUZ are half the value */
  *factor = 2.0f;
  return CONVJIT_OK;
}

convjit_status cj_conv_fmt_of(const cj_conv_problem *p, const cj_arch *arch, cj_conv_fmt *f) {
  memset(f, 0, sizeof *f);
  f->alpha = 1.0f;
  f->x_q = f->w_q = 1.0f;
  if (!cj_is_fp8(p->x_dtype) && !cj_is_fp8(p->w_dtype)) {
    f->compute = p->x_dtype; /* bf16 or f16, both operands alike (the dtype table, kinds.h) */
    return CONVJIT_OK;
  }
  f->compute = cj_native_fp8(arch);
  float fx, fw;
  CJ_TRY(cj_operand_mode(p->x_dtype, arch, p->x_scale, "x_scale", &f->x_mode, &fx, &f->x_q));
  CJ_TRY(cj_operand_mode(p->w_dtype, arch, p->w_scale, "w_scale", &f->w_mode, &fw, &f->w_q));
  float sxw = p->x_scale * p->w_scale;
  f->alpha = sxw * fx * fw; /* the factors are powers of 2: exact unless out of range */
  CJ_CHECK(isnormal(f->alpha), CONVJIT_ERR_INVALID_ARG,
           "desc.x_scale = %g, desc.w_scale = %g: the dequantization factor x_scale * w_scale%s = %g is not a "
           "normal fp32 number",
           (double)p->x_scale, (double)p->w_scale, fx * fw > 1.0f ? " * 2 per E4M3FN tensor" : "",
           (double)f->alpha);
  return CONVJIT_OK;
}

convjit_status cj_conv_formats_check(const cj_conv_problem *p, const cj_arch *arch) {
  CJ_CHECK(p && arch, CONVJIT_ERR_INVALID_ARG, "cj_conv_formats_check: NULL argument");
  cj_conv_fmt f;
  return cj_conv_fmt_of(p, arch, &f);
}

void cj_conv_prep_input(cj_conv_prep *prep, int in_ndhwc) {
  /* NDHWC input is read in place unless its elements change on the way (a
   * converting pre-pass) or C is too ragged for the masked 4-byte loads
   * (bf16 C odd, fp8 C % 4 != 0): then the pre-pass copies it to
   * NDHWC(Cp) in the workspace, like an NCDHW input. */
  cj_conv_geom *g = &prep->g;
  uint32_t ceb = cj_dtype_bytes(prep->fm.compute), cchunk = 16 / ceb;
  prep->x_in_place = in_ndhwc && prep->fm.x_mode == CJ_PREP_COPY && (g->c % cchunk == 0 || g->c % (4 / ceb) == 0);
  prep->x_copy = in_ndhwc && !prep->x_in_place;
  g->x_ndhwc = (uint32_t)prep->x_in_place;
  g->x_converted = prep->fm.x_mode != CJ_PREP_COPY;
}

/* What every candidate shares (select.h cj_conv_prep). Causal streaming:
 * the pre-pass writes x_prev's P = pad_lo[0] frames directly before x's in
 * the workspace (n == 1: one NDHWC tensor of P + D frames), and the conv
 * runs over that with no low time padding: the same kernel family, the
 * same per-output reduction order. Upsample: the conv's output phases
 * (kplan_phase.h), one kernel each, all over x itself. */
/* The group rule (select.h): the implicit GEMM pads each tap's reduction
 * channels to a 16-byte chunk, and a group's channels must start on one
 * (docs/kernels.md "Grouped conv"); the plan (kplan_conv.c) checks the same
 * for codegen callers. NDHWC layouts need nothing here. */
convjit_status cj_igemm_groups_check(const cj_conv_problem *p) {
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "cj_igemm_groups_check: NULL argument");
  const int bwd = p->kind == CONVJIT_CONV_BACKWARD_DATA; /* the GEMM reduces over dy's k */
  const char *rc = bwd ? "k" : "c";
  const int fp8 = cj_dtype_bytes(p->x_dtype) == 1 || cj_dtype_bytes(p->w_dtype) == 1;
  const int64_t cg = (bwd ? p->k : p->c) / p->groups, chunk = fp8 ? 16 : 8;
  CJ_CHECK(p->groups == 1 || cg > 1, CONVJIT_ERR_UNSUPPORTED,
           "desc.groups = %lld with %s/groups = 1 (depthwise): no kernel; the implicit GEMM would pad each tap's one "
           "channel to %lld and waste %lld of %lld MFMA K elements (a depthwise conv needs a direct kernel)",
           (long long)p->groups, rc, (long long)chunk, (long long)chunk - 1, (long long)chunk);
  CJ_CHECK(p->groups == 1 || cg % chunk == 0, CONVJIT_ERR_UNSUPPORTED,
           "desc.groups = %lld with %s/groups = %lld: must be a multiple of %lld (one 16-byte chunk of %s) so a "
           "group's channels start on a chunk", (long long)p->groups, rc, (long long)cg, (long long)chunk,
           fp8 ? "fp8" : cj_dtype_name(p->x_dtype));
  return CONVJIT_OK;
}

static convjit_status cj_conv_prepare(const cj_conv_problem *p, const cj_arch *arch, cj_conv_prep *out) {
  CJ_CHECK(p && arch && out, CONVJIT_ERR_INVALID_ARG, "cj_conv_prepare: NULL argument");
  CJ_TRY(cj_igemm_groups_check(p));
  memset(out, 0, sizeof *out);
  out->in_role = CJ_BIND_X;
  out->out_role = CJ_BIND_Y;
  cj_conv_geom *g = &out->g;
  CJ_CHECK(!p->has_x_prev || p->spatial_rank == 3, CONVJIT_ERR_UNSUPPORTED,
           "desc.has_x_prev = 1 with spatial_rank = %d: the implicit GEMM streams along a time dim D (3D); a "
           "depthwise or few-channel grouped conv (the direct family) streams in 1D and 2D too", p->spatial_rank);
  out->prev_frames = p->has_x_prev ? (uint64_t)p->pad_lo[0] : 0;
  cj_conv_problem q = *p;
  if (p->has_x_prev) {
    q.d += p->pad_lo[0];
    q.pad_lo[0] = 0;
  }
  CJ_TRY(cj_conv_dtypes_check(p));
  CJ_TRY(cj_conv_problem_fields(&q, g));
  CJ_TRY(cj_conv_fmt_of(p, arch, &out->fm));
  g->dtype = (uint32_t)out->fm.compute;
  const int upsampled = p->upsample[0] > 1 || p->upsample[1] > 1 || p->upsample[2] > 1;
  if (!upsampled) CJ_TRY(cj_conv_geom_derive(g)); /* the plain conv: its own checks first */
  cj_conv_prep_input(out, p->x_layout == CONVJIT_LAYOUT_NDHWC);
  if (upsampled) {
    const uint32_t up[3] = {(uint32_t)p->upsample[0], (uint32_t)p->upsample[1], (uint32_t)p->upsample[2]};
    CJ_TRY(cj_conv_phases_upsample(g, up, &out->ph));
  } else {
    out->ph.n = out->ph.nreal = 1;
    out->ph.ph[0].g = *g;
  }
  /* the input side of every phase is x (one pre-pass): phase 0's derived */
  *g = out->ph.ph[0].g;
  return cj_conv_geom_derive(g);
}

uint32_t cj_conv_prep_candidates(const cj_target *t, const cj_conv_prep *prep, const cj_conv_opts *forced,
                                 cj_conv_opts *list, uint32_t max) {
  return cj_conv_candidates(t, &prep->g, forced, list, max);
}

const cj_conv_planner cj_conv_forward_planner = {cj_conv_prepare, cj_conv_prep_candidates, cj_conv_phased_sequence,
                                                 cj_conv_fwd_fallback, cj_igemm_groups_check};
