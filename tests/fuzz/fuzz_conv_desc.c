/* libFuzzer target: conv descriptor -> validation -> selection -> plan ->
 * launch on the emulator -> CPU reference, through the public API.
 *
 * Input bytes decode into a convjit_conv_desc, one byte per field (a
 * missing byte reads 0): most byte values map to small legal values, the
 * top 8 to wild ones (0, -1, 2^31-1, 2^31, 2^62, INT64_MIN, ...), so both
 * the refusals and real kernels are reachable. Every descriptor goes through
 * convjit_conv_desc_validate and convjit_conv_output_dims, which must agree
 * with each other and give the extents the formula in docs/api.md gives
 * (computed here independently). A valid descriptor whose tensors are small
 * (SMALL_* below: each input stays well under a second) is planned on an
 * emulator context (memory cache only, one per arch, kept for the process:
 * repeated shapes are hits), launched, and compared with src/ref (its
 * grouped, layout-aware form: x and y in the descriptor's layouts, w K x
 * C/groups x T x R x S). Inputs on
 * a 1/8 grid (|v| <= 1: exact in bf16, f16, E4M3FN and E4M3FNUZ) keep every
 * fp32 sum exact, so a bf16 or f16 conv's only error is y's rounding: at
 * most half an ulp, 2^-8 |want| for bf16, 2^-11 |want| for f16 (+ 2^-25,
 * its subnormals' half step), none for an f32 y (2^-24 |want| allowed: the
 * reference's own float). fp8 convs (either input fp8): an fp8 operand
 * is its decoded value times its scale; a bf16 operand next to it is
 * quantized as the pre-pass does (cj_ref_fp8_quantize_bf16, the arch's
 * format) and dequantized the same way; the kernel's products stay exact,
 * and its epilogue adds three fp32 roundings (alpha, scale, bias; the
 * reference's scaled operands two more), each <= 2^-24 of sum |x w| +
 * |bias|: the tolerance adds 2^-21 of that. abort() on any broken promise
 * (libFuzzer reports it as a crash). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "convjit/convjit.h"
#include "ref/ref.h"
#include "ref/ref_conv.h"
#include "util/numfmt.h"

#define SMALL_ELEMS 4096      /* x, w and y elements each at most this */
#define SMALL_MACS (1u << 20) /* multiply-adds of the conv at most this */

static void fail(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_conv_desc: %s: %s\n", what, detail ? detail : "");
  abort();
}
#define REQUIRE(c) do { if (!(c)) fail(#c, convjit_last_error()); } while (0)

/* ---- input bytes -> descriptor ------------------------------------------- */
typedef struct reader { const uint8_t *p; size_t n, i; } reader;
static unsigned next(reader *r) { return r->i < r->n ? r->p[r->i++] : 0; }

static const int64_t k_wild[8] = {0, -1, ((int64_t)1 << 31) - 1, (int64_t)1 << 31, (int64_t)1 << 62,
                                  INT64_MIN, INT64_MAX, 65536};
/* one byte: below 0xF8 lo + b % span, else a wild value */
static int64_t field(reader *r, int64_t lo, int64_t span) {
  unsigned b = next(r);
  return b >= 0xF8 ? k_wild[b - 0xF8] : lo + (int64_t)(b % (unsigned)span);
}
/* enums and flags: below 0xC0 the usual value, else b & 7 (0 and 5..7 invalid) */
static int enum_field(reader *r, int usual) {
  unsigned b = next(r);
  return b < 0xC0 ? usual : (int)(b & 7);
}
static float scale_field(reader *r) {
  static const float k[8] = {0.0f, 1.0f, 0.5f, -1.0f, NAN, INFINITY, 1e-30f, 3.0f};
  unsigned b = next(r);
  return b < 0xC0 ? 0.0f : k[b & 7];
}

static convjit_conv_desc decode(reader *r, int *arch) {
  convjit_conv_desc d = convjit_conv_desc_default();
  unsigned h = next(r);
  *arch = h & 1;
  d.spatial_rank = (int)((h >> 1) & 3);  /* 0: invalid */
  if ((h >> 3) == 0x1F) d.struct_size = (h & 2) ? sizeof d + 8 : sizeof d - 8; /* VERSION / an older header */
  d.has_bias = (h >> 4) & 1;
  d.n = field(r, 1, 3);
  d.c = field(r, 1, 72);
  d.k = field(r, 1, 72);
  for (int i = 0; i < 3; i++) {
    d.in[i] = field(r, 1, 20);
    d.filter[i] = field(r, 1, 4);
    d.stride[i] = field(r, 1, 3);
    d.pad_lo[i] = field(r, 0, 3);
    d.pad_hi[i] = field(r, 0, 3);
    d.dilation[i] = field(r, 1, 3);
  }
  d.groups = enum_field(r, 1);
  d.x_dtype = (convjit_dtype)enum_field(r, CONVJIT_DTYPE_BF16);
  d.w_dtype = (convjit_dtype)enum_field(r, CONVJIT_DTYPE_BF16);
  d.y_dtype = (convjit_dtype)enum_field(r, CONVJIT_DTYPE_BF16);
  d.x_layout = (convjit_layout)enum_field(r, CONVJIT_LAYOUT_NCDHW);
  d.y_layout = (convjit_layout)enum_field(r, CONVJIT_LAYOUT_NCDHW);
  if (enum_field(r, 0)) d.has_bias = enum_field(r, 2) - 1; /* -1..6: only 0 and 1 are legal */
  d.x_scale = scale_field(r);
  d.w_scale = scale_field(r);
  return d;
}

/* ---- the oracle for output extents (docs/api.md) ------------------------- */
/* 1 if every used dim's extents are legal by the API rules, with out[] set;
 * overflow-prone products are left to validate (its own tests cover them). */
static int expect_dims(const convjit_conv_desc *d, int64_t out[3]) {
  const int64_t lim = (int64_t)1 << 31;
  out[0] = out[1] = out[2] = 1;
  if (d->spatial_rank < 1 || d->spatial_rank > 3) return 0;
  if (d->n < 1 || d->n >= lim || d->c < 1 || d->c >= lim || d->k < 1 || d->k >= lim) return 0;
  for (int i = 0; i < d->spatial_rank; i++) {
    int64_t in = d->in[i], f = d->filter[i], s = d->stride[i], dl = d->dilation[i], lo = d->pad_lo[i],
            hi = d->pad_hi[i];
    if (in < 1 || in >= lim || f < 1 || f >= lim || s < 1 || s >= lim || dl < 1 || dl >= lim || lo < 0 ||
        lo >= lim || hi < 0 || hi >= lim)
      return 0;
    int64_t span = dl * (f - 1) + 1;
    if (span > in + lo + hi) return 0;
    out[3 - d->spatial_rank + i] = (in + lo + hi - span) / s + 1;
  }
  return 1;
}

/* ---- plan, launch, compare ------------------------------------------------- */
static convjit_context *g_ctx[2];

static convjit_context *ctx_for(int arch) {
  if (!g_ctx[arch]) {
    convjit_context_options o = convjit_context_options_default();
    o.device = CONVJIT_DEVICE_EMU;
    o.arch = arch ? "gfx950" : "gfx942";
    o.disable_disk_cache = 1;
    if (convjit_context_create(&o, &g_ctx[arch]) != CONVJIT_OK) fail("context", convjit_last_error());
  }
  return g_ctx[arch];
}

static uint32_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

static int is_fp8(convjit_dtype t) { return t == CONVJIT_DTYPE_FP8_E4M3FN || t == CONVJIT_DTYPE_FP8_E4M3FNUZ; }
static cj_nf_fp8 nf_of(convjit_dtype t) { return t == CONVJIT_DTYPE_FP8_E4M3FNUZ ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN; }

/* One operand: n values on the 1/8 grid (|v| <= span/8) as the tensor the
 * caller passes (bytes, in dtype t), and in eff the value the conv
 * computes with: itself (bf16 conv), decoded fp8 times the scale, or a
 * bf16 tensor quantized to the arch's format fmt and dequantized. */
static void operand(size_t n, int span, convjit_dtype t, int fp8_conv, cj_nf_fp8 fmt, float scale, uint64_t *seed,
                    uint8_t *bytes, float *eff) {
  uint16_t *b16 = (uint16_t *)bytes;
  for (size_t i = 0; i < n; i++) {
    float v = (float)((int)(lcg(seed) % (unsigned)(2 * span + 1)) - span) / 8.0f;
    if (is_fp8(t)) bytes[i] = cj_f32_to_fp8_rne(v, nf_of(t), 1);
    else b16[i] = t == CONVJIT_DTYPE_F16 ? cj_f32_to_f16_rne(v) : cj_f32_to_bf16_rne(v);
    eff[i] = is_fp8(t)                  ? (float)cj_ref_fp8_value(bytes[i], nf_of(t)) * scale
             : t == CONVJIT_DTYPE_F16   ? cj_f16_to_f32(b16[i])
                                        : cj_bf16_to_f32(b16[i]);
  }
  if (fp8_conv && !is_fp8(t)) { /* the quantizing pre-pass: fp8(fl32(x * fl32(1/s))) * s */
    uint8_t *q = malloc(n ? n : 1);
    if (!q) fail("host malloc", "");
    REQUIRE(cj_ref_fp8_quantize_bf16(b16, n, scale, fmt, q) == CONVJIT_OK);
    for (size_t i = 0; i < n; i++) eff[i] = (float)cj_ref_fp8_value(q[i], fmt) * scale;
    free(q);
  }
}

static void run_and_check(convjit_context *c, int arch, const convjit_conv_desc *d, const convjit_plan *p,
                          const cj_ref_conv_shape *sh, const int64_t out[3]) {
  /* w is K x C/groups x T x R x S; x and y are in their descriptor layouts,
   * which the reference reads and writes as given (cj_ref_conv_ext) */
  uint64_t groups = d->groups > 1 ? (uint64_t)d->groups : 1;
  size_t nx = sh->n * sh->c * sh->d * sh->h * sh->w, nw = sh->k * (sh->c / groups) * sh->t * sh->r * sh->s;
  size_t ny = sh->n * sh->k * (size_t)(out[0] * out[1] * out[2]), ws = 0, pw = 0;
  int fp8 = is_fp8(d->x_dtype) || is_fp8(d->w_dtype);
  size_t ebx = is_fp8(d->x_dtype) ? 1 : 2, ebw = is_fp8(d->w_dtype) ? 1 : 2;
  cj_nf_fp8 fmt = arch ? CJ_NF_E4M3FN : CJ_NF_E4M3FNUZ; /* the arch's own: what the conv computes in */
  float sx = d->x_scale == 0.0f ? 1.0f : d->x_scale, sw = d->w_scale == 0.0f ? 1.0f : d->w_scale;
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *bias = malloc(sh->k * 4), *want = malloc(ny * 4),
        *mag = malloc(ny * 4);
  uint8_t *xb = malloc(nx * 2), *wb = malloc(nw * 2);
  const size_t eby = d->y_dtype == CONVJIT_DTYPE_F32 ? 4 : 2; /* y: bf16, f16 or f32 (docs/api.md "Dtypes") */
  uint8_t *yb = malloc(ny * eby);
  if (!x || !w || !bias || !want || !mag || !xb || !wb || !yb) fail("host malloc", "");
  uint64_t seed = nx * 31 + nw;
  operand(nx, 8, d->x_dtype, fp8, fmt, sx, &seed, xb, x);
  operand(nw, 4, d->w_dtype, fp8, fmt, sw, &seed, wb, w);
  for (size_t i = 0; i < sh->k; i++) bias[i] = (float)((int)(lcg(&seed) % 33) - 16) / 8.0f;
  const cj_ref_conv_ext ext = {.groups = groups, .x_ndhwc = d->x_layout == CONVJIT_LAYOUT_NDHWC,
                               .y_ndhwc = d->y_layout == CONVJIT_LAYOUT_NDHWC};
  REQUIRE(cj_ref_conv_fwd_ext(sh, &ext, x, w, d->has_bias ? bias : NULL, want, mag) == CONVJIT_OK);
  REQUIRE(convjit_plan_workspace_size(p, &ws) == CONVJIT_OK);
  REQUIRE(convjit_plan_packed_weight_size(p, &pw) == CONVJIT_OK);
  void *dx = NULL, *dw = NULL, *dpw = NULL, *db = NULL, *dy = NULL, *dws = NULL;
  REQUIRE(convjit_malloc(c, nx * ebx, &dx) == CONVJIT_OK && convjit_malloc(c, nw * ebw, &dw) == CONVJIT_OK);
  REQUIRE(convjit_malloc(c, pw, &dpw) == CONVJIT_OK && convjit_malloc(c, ny * eby, &dy) == CONVJIT_OK);
  if (ws) REQUIRE(convjit_malloc(c, ws, &dws) == CONVJIT_OK);
  if (d->has_bias) REQUIRE(convjit_malloc(c, sh->k * 4, &db) == CONVJIT_OK);
  if (db) REQUIRE(convjit_memcpy_h2d(c, db, bias, sh->k * 4, NULL) == CONVJIT_OK);
  REQUIRE(convjit_memcpy_h2d(c, dx, xb, nx * ebx, NULL) == CONVJIT_OK);
  REQUIRE(convjit_memcpy_h2d(c, dw, wb, nw * ebw, NULL) == CONVJIT_OK);
  REQUIRE(convjit_memset(c, dy, 0xFF, ny * eby, NULL) == CONVJIT_OK); /* NaN in every y dtype: unwritten outputs fail */
  REQUIRE(convjit_weight_pack(p, dw, dpw, NULL) == CONVJIT_OK);
  convjit_status st = convjit_conv_fwd(p, dx, dpw, db, dy, dws, ws, NULL);
  /* Every instruction convjit emits is emulated (tools/convjit-coverage
   * gates it), so any launch error is a failure. */
  if (st != CONVJIT_OK) fail("conv_fwd on the emulator", convjit_last_error());
  REQUIRE(convjit_memcpy_d2h(c, yb, dy, ny * eby, NULL) == CONVJIT_OK);
  const double yrel = d->y_dtype == CONVJIT_DTYPE_F32 ? 0x1p-24 : d->y_dtype == CONVJIT_DTYPE_F16 ? 0x1p-11 : 0x1p-8;
  const double yabs = d->y_dtype == CONVJIT_DTYPE_F16 ? 0x1p-25 : 0.0;
  for (size_t i = 0; st == CONVJIT_OK && i < ny; i++) {
    uint16_t h = 0;
    float got = 0.0f;
    if (eby == 4) memcpy(&got, yb + 4 * i, 4);
    else memcpy(&h, yb + 2 * i, 2), got = d->y_dtype == CONVJIT_DTYPE_F16 ? cj_f16_to_f32(h) : cj_bf16_to_f32(h);
    double tol = fabs(want[i]) * yrel + yabs + (fp8 ? mag[i] / (1 << 21) : 0.0); /* see the header */
    if (!(fabs((double)got - want[i]) <= tol)) {
      char desc[2048] = "";
      convjit_plan_describe(p, desc, sizeof desc, NULL);
      fprintf(stderr, "fuzz_conv_desc: y[%zu] = %g, want %g (of %zu)\n%s\n", i, got, want[i], ny, desc);
      fail("wrong conv result", "");
    }
  }
  convjit_free(c, dx), convjit_free(c, dw), convjit_free(c, dpw), convjit_free(c, dy), convjit_free(c, dws),
      convjit_free(c, db);
  free(x), free(w), free(bias), free(want), free(mag), free(xb), free(wb), free(yb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size, 0};
  int arch = 0;
  convjit_conv_desc d = decode(&r, &arch);
  convjit_status v = convjit_conv_desc_validate(&d);
  REQUIRE(v == CONVJIT_OK || v == CONVJIT_ERR_INVALID_ARG || v == CONVJIT_ERR_UNSUPPORTED ||
          v == CONVJIT_ERR_VERSION);
  if (v != CONVJIT_OK) REQUIRE(convjit_last_error()[0] != 0);
  int64_t out[3] = {0, 0, 0}, want_out[3];
  convjit_status o = convjit_conv_output_dims(&d, out);
  REQUIRE(o == v);
  /* docs/api.md, versioned structs: any size from the 0.1 struct (fields up
   * to w_scale) to this header's is read, later fields at their defaults
   * (sizeof - 8 is the header before has_x_prev); a larger one is VERSION */
  size_t v1 = offsetof(convjit_conv_desc, w_scale) + sizeof(float);
  int legal = d.struct_size >= v1 && d.struct_size <= sizeof d && expect_dims(&d, want_out);
  if (v == CONVJIT_OK) {
    REQUIRE(legal);
    REQUIRE(out[0] == want_out[0] && out[1] == want_out[1] && out[2] == want_out[2]);
  }
  if (v != CONVJIT_OK) return 0;

  /* small enough to compile and emulate within the per-input budget? */
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 1, 1, 1, 1, 1, 1, 1, 1);
  int off = 3 - d.spatial_rank;
  uint64_t in3[3] = {1, 1, 1}, f3[3] = {1, 1, 1};
  for (int i = 0; i < d.spatial_rank; i++) {
    in3[off + i] = (uint64_t)d.in[i], f3[off + i] = (uint64_t)d.filter[i];
    sh.stride[off + i] = (uint32_t)d.stride[i], sh.dilation[off + i] = (uint32_t)d.dilation[i];
    sh.pad_lo[off + i] = (uint32_t)d.pad_lo[i], sh.pad_hi[off + i] = (uint32_t)d.pad_hi[i];
  }
  sh.n = (uint64_t)d.n, sh.c = (uint64_t)d.c, sh.k = (uint64_t)d.k;
  sh.d = in3[0], sh.h = in3[1], sh.w = in3[2], sh.t = f3[0], sh.r = f3[1], sh.s = f3[2];
  double nx = (double)sh.n * sh.c * sh.d * sh.h * sh.w, nw = (double)sh.k * sh.c * sh.t * sh.r * sh.s;
  double ny = (double)sh.n * sh.k * out[0] * out[1] * out[2];
  if (nx > SMALL_ELEMS || nw > SMALL_ELEMS || ny > SMALL_ELEMS || ny * sh.c * sh.t * sh.r * sh.s > SMALL_MACS)
    return 0;

  convjit_context *c = ctx_for(arch);
  convjit_plan *p = NULL;
  convjit_status st = convjit_plan_create_conv(c, &d, &p);
  /* a valid shape fails only when no kernel handles it (docs/api.md) */
  if (st == CONVJIT_ERR_UNSUPPORTED) {
    REQUIRE(p == NULL);
    return 0;
  }
  if (st != CONVJIT_OK) fail("plan_create_conv of a valid small descriptor", convjit_last_error());
  if (d.has_channel_scale) /* (y: bf16, f16 or f32, all checked below) */
    fail("a plan this target cannot check yet", "extend run_and_check (per-channel scales)");
  run_and_check(c, arch, &d, p, &sh, out);
  if (getenv("CJ_FUZZ_VERBOSE")) /* corpus authoring: which inputs reach a launch */
    fprintf(stderr, "fuzz_conv_desc: launched n=%lld c=%lld k=%lld rank %d on %s\n", (long long)d.n, (long long)d.c,
            (long long)d.k, d.spatial_rank, arch ? "gfx950" : "gfx942");
  convjit_plan_destroy(p);
  return 0;
}
