/* Bounded random-input test of the public API (seeded, deterministic).
 *
 * Thousands of random conv and transpose descriptors (random ranks,
 * extents including 0, negative, 2^31 boundaries, huge and overflow-prone
 * products, random enum values, NULL pointers, struct_size variants) and
 * random context options go through validation, output extents, plan
 * creation, the plan queries and launches with bad arguments on an
 * emulator context. Every call must
 * return OK or an error status whose convjit_last_error() text names one of
 * the fields the descriptor really gets wrong.
 *
 * The expected status of each descriptor comes from an oracle written here
 * from the rules in docs/api.md (not from src/host/desc.c): VERSION for an
 * unknown struct_size, else INVALID_ARG if any field breaks a rule, else
 * UNSUPPORTED if any field is valid but has no kernel, else OK.
 *
 * Compilation is bounded: only descriptors the oracle finds valid AND small
 * reach plan creation, and only while the context has compiled fewer than
 * COMPILE_BUDGET kernels; every other valid descriptor is checked through
 * the context-free validation entry only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "convjit/convjit.h"

#define SEED 0x5eed0c0471f0ULL
#define CONV_ITERS 3000
#define TRANSPOSE_ITERS 1500
#define OPTIONS_ITERS 300
#define COMPILE_BUDGET 4        /* kernels the conv part may compile (each takes ~0.3-2 s) */
#define TRANSPOSE_BUDGET 2      /* kernels the transpose part may compile */
#define SMALL_ELEMS (1 << 14)   /* "small": every tensor at most this many elements */
#define E31 ((int64_t)1 << 31)
#define E62 ((uint64_t)1 << 62)

/* ---- deterministic generator (splitmix64) ---------------------------------- */
static uint64_t g_rng;
static uint64_t rnd(void) {
  uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static int64_t below(int64_t n) { return (int64_t)(rnd() % (uint64_t)n); }
static int chance(int pct) { return below(100) < pct; }

/* An extent from every interesting class: mostly small, the rest at the
 * edges of the documented ranges or far outside them. */
static int64_t wild_extent(void) {
  switch (below(12)) {
  case 0: return 0;
  case 1: return -1 - below(1000);
  case 2: return INT64_MIN + below(3);
  case 3: return E31 - 1;                 /* largest legal */
  case 4: return E31;                     /* smallest illegal */
  case 5: return (int64_t)1 << (20 + below(11)); /* legal, overflow-prone products */
  case 6: return INT64_MAX - below(3);
  case 7: return (int64_t)rnd();          /* anything */
  default: return 1 + below(8);
  }
}
/* Pads: the same classes, shifted so that 0 is among the small ones. */
static int64_t wild_pad(void) {
  int64_t e = wild_extent();
  return e >= 1 && e <= 8 ? e - 1 : e;
}
static int wild_enum(void) {
  switch (below(6)) {
  case 0: return -1 - (int)below(5);
  case 1: return 5 + (int)below(100);
  case 2: return 0;
  default: return 1 + (int)below(4);
  }
}
static float wild_scale(void) {
  switch (below(8)) {
  case 0: return NAN;
  case 1: return INFINITY;
  case 2: return -1.0f;
  case 3: return 0.5f + (float)below(8);
  case 4: return -0.0f;  /* equals 0: "unused" */
  default: return 0.0f;
  }
}
static size_t wild_size(size_t ours) {
  switch (below(10)) {
  case 0: return 0;
  case 1: return ours - 1 - (size_t)below((int64_t)ours - 1);
  case 2: return ours + 1 + (size_t)below(64);
  case 3: return (size_t)rnd();
  default: return ours;
  }
}

/* ---- the oracle: docs/api.md's rules, one violation at a time --------------
 * Collects the fields that break a rule (INVALID_ARG) and the valid fields
 * that have no kernel (UNSUPPORTED); the status follows from which list is
 * non-empty. The implementation may report any one of the culprits. */
typedef struct verdict {
  convjit_status st;
  char bad[16][40];
  int nbad;
  char unsup[8][40];
  int nunsup;
  int64_t out[3];
  uint64_t max_elems; /* largest of x, y, weight element counts (saturated) */
} verdict;

static void culprit(verdict *v, int unsupported, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (unsupported && v->nunsup < 8) vsnprintf(v->unsup[v->nunsup++], 40, fmt, ap);
  if (!unsupported && v->nbad < 16) vsnprintf(v->bad[v->nbad++], 40, fmt, ap);
  va_end(ap);
}

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
static int in_range(int64_t x, int64_t lo) { return x >= lo && x < E31; }
static int known_dtype(int t) { return t >= 1 && t <= 5; } /* bf16, fp8 x2, f32, f16 */
static int fp8(int t) { return t == CONVJIT_DTYPE_FP8_E4M3FN || t == CONVJIT_DTYPE_FP8_E4M3FNUZ; }

/* Scales: finite and > 0 (0 = unused), on fp8 convs (x or w fp8) only. */
static void check_scale(verdict *v, float s, int fp8_conv, const char *name) {
  if (s == 0.0f) return;
  if (!(isfinite(s) && s > 0.0f) || !fp8_conv) culprit(v, 0, "desc.%s", name);
}

static verdict conv_oracle(const convjit_conv_desc *d) {
  verdict v;
  memset(&v, 0, sizeof v);
  v.out[0] = v.out[1] = v.out[2] = 1;
  if (!d) { v.st = CONVJIT_ERR_INVALID_ARG; culprit(&v, 0, "desc = NULL"); return v; }
  /* 0.1 callers' struct ends at w_scale; later fields are optional */
  if (d->struct_size < offsetof(convjit_conv_desc, w_scale) + sizeof(float) || d->struct_size > sizeof *d) {
    v.st = CONVJIT_ERR_VERSION;
    culprit(&v, 0, "desc.struct_size");
    return v;
  }
  int chs = d->struct_size >= offsetof(convjit_conv_desc, has_channel_scale) + sizeof(int) ? d->has_channel_scale : 0;
  int rank_ok = d->spatial_rank >= 1 && d->spatial_rank <= 3;
  if (!rank_ok) culprit(&v, 0, "desc.spatial_rank");
  if (!in_range(d->n, 1)) culprit(&v, 0, "desc.n");
  if (!in_range(d->c, 1)) culprit(&v, 0, "desc.c");
  if (!in_range(d->k, 1)) culprit(&v, 0, "desc.k");
  int dims_ok = 1;
  uint64_t xin = 1, yout = 1, wf = 1;
  for (int i = 0; rank_ok && i < d->spatial_rank; i++) {
    int ok = 1;
    if (!in_range(d->in[i], 1)) { culprit(&v, 0, "desc.in[%d]", i); ok = 0; }
    if (!in_range(d->filter[i], 1)) { culprit(&v, 0, "desc.filter[%d]", i); ok = 0; }
    if (!in_range(d->stride[i], 1)) { culprit(&v, 0, "desc.stride[%d]", i); ok = 0; }
    if (!in_range(d->dilation[i], 1)) { culprit(&v, 0, "desc.dilation[%d]", i); ok = 0; }
    if (!in_range(d->pad_lo[i], 0)) { culprit(&v, 0, "desc.pad_lo[%d]", i); ok = 0; }
    if (!in_range(d->pad_hi[i], 0)) { culprit(&v, 0, "desc.pad_hi[%d]", i); ok = 0; }
    if (!ok) { dims_ok = 0; continue; }
    /* every term < 2^31: no overflow below */
    int64_t span = (d->filter[i] - 1) * d->dilation[i] + 1, padded = d->in[i] + d->pad_lo[i] + d->pad_hi[i];
    if (span > padded) {
      /* relation between fields: the text may name any of them */
      culprit(&v, 0, "desc.filter[%d]", i);
      culprit(&v, 0, "desc.in[%d]", i);
      culprit(&v, 0, "desc.dilation[%d]", i); /* named when it is > 1 (desc.c) */
      dims_ok = 0;
      continue;
    }
    int j = 3 - d->spatial_rank + i;
    v.out[j] = (padded - span) / d->stride[i] + 1;
    xin = sat_mul(xin, (uint64_t)d->in[i]);
    yout = sat_mul(yout, (uint64_t)v.out[j]);
    wf = sat_mul(wf, (uint64_t)d->filter[i]);
  }
  if (d->groups < 1) culprit(&v, 0, "desc.groups");
  if (d->groups > 1 && in_range(d->c, 1) && in_range(d->k, 1) && (d->c % d->groups || d->k % d->groups))
    culprit(&v, 0, "desc.groups");
  if (!known_dtype((int)d->x_dtype)) culprit(&v, 0, "desc.x_dtype");
  if (!known_dtype((int)d->w_dtype)) culprit(&v, 0, "desc.w_dtype");
  if (!known_dtype((int)d->y_dtype)) culprit(&v, 0, "desc.y_dtype");
  if (d->x_layout != CONVJIT_LAYOUT_NCDHW && d->x_layout != CONVJIT_LAYOUT_NDHWC) culprit(&v, 0, "desc.x_layout");
  if (d->y_layout != CONVJIT_LAYOUT_NCDHW && d->y_layout != CONVJIT_LAYOUT_NDHWC) culprit(&v, 0, "desc.y_layout");
  if (d->has_bias != 0 && d->has_bias != 1) culprit(&v, 0, "desc.has_bias");
  int fp8_conv = fp8((int)d->x_dtype) || fp8((int)d->w_dtype);
  check_scale(&v, d->x_scale, fp8_conv, "x_scale");
  check_scale(&v, d->w_scale, fp8_conv, "w_scale");
  if (chs != 0 && chs != 1) culprit(&v, 0, "desc.has_channel_scale");
  if (chs == 1 && !fp8_conv) culprit(&v, 0, "desc.has_channel_scale");
  /* the wild scales (0.5..7.5) never push x_scale * w_scale or 1/scale out of fp32 range */
  if (rank_ok && dims_ok && in_range(d->n, 1) && in_range(d->c, 1) && in_range(d->k, 1)) {
    uint64_t x = sat_mul(sat_mul((uint64_t)d->n, (uint64_t)d->c), xin);
    uint64_t y = sat_mul(sat_mul((uint64_t)d->n, (uint64_t)d->k), yout);
    uint64_t w = sat_mul(sat_mul((uint64_t)d->k, (uint64_t)d->c), wf);
    if (x >= E62) culprit(&v, 0, "x element count");
    if (y >= E62) culprit(&v, 0, "y element count");
    if (w >= E62) culprit(&v, 0, "weight element count");
    v.max_elems = x > y ? x : y;
    if (w > v.max_elems) v.max_elems = w;
  }
  if (v.nbad) { v.st = CONVJIT_ERR_INVALID_ARG; return v; }
  /* docs/api.md "Grouped conv": c/groups a whole 16-byte chunk (8 bf16, 16 fp8); depthwise refused */
  int64_t chunk = fp8((int)d->x_dtype) || fp8((int)d->w_dtype) ? 16 : 8;
  /* bf16 / f16 forward with C/groups in 1..7 (1: depthwise) and K/groups in 1..8: the direct family's
   * (kplan_direct.h) */
  int direct = d->kind == CONVJIT_CONV_FORWARD && chunk == 8 && d->groups > 1 && d->c / d->groups <= 7 &&
               d->k / d->groups >= 1 && d->k / d->groups <= 8;
  if (d->groups > 1 && (d->c / d->groups) % chunk != 0 && !direct) culprit(&v, 1, "desc.groups");
  if (d->x_dtype == CONVJIT_DTYPE_F32) culprit(&v, 1, "desc.x_dtype");
  if (d->w_dtype == CONVJIT_DTYPE_F32) culprit(&v, 1, "desc.w_dtype");
  if (chs == 1 && d->w_dtype == CONVJIT_DTYPE_BF16) culprit(&v, 1, "desc.has_channel_scale");
  /* docs/api.md "Dtypes": f16 only with f16; y the inputs' 16-bit type or f32 */
  if ((d->x_dtype == CONVJIT_DTYPE_F16) != (d->w_dtype == CONVJIT_DTYPE_F16)) {
    culprit(&v, 1, "desc.x_dtype");
    culprit(&v, 1, "desc.w_dtype");
  }
  int y16 = d->x_dtype == CONVJIT_DTYPE_F16 ? CONVJIT_DTYPE_F16 : CONVJIT_DTYPE_BF16;
  if ((int)d->y_dtype != y16 && d->y_dtype != CONVJIT_DTYPE_F32) culprit(&v, 1, "desc.y_dtype");
  v.st = v.nunsup ? CONVJIT_ERR_UNSUPPORTED : CONVJIT_OK;
  return v;
}

static verdict transpose_oracle(const convjit_transpose_desc *d) {
  verdict v;
  memset(&v, 0, sizeof v);
  if (!d) { v.st = CONVJIT_ERR_INVALID_ARG; culprit(&v, 0, "desc = NULL"); return v; }
  if (d->struct_size != sizeof *d) { v.st = CONVJIT_ERR_VERSION; culprit(&v, 0, "desc.struct_size"); return v; }
  if (!in_range(d->n, 1)) culprit(&v, 0, "desc.n");
  if (!in_range(d->c, 1)) culprit(&v, 0, "desc.c");
  if (!(d->s >= 1 && d->s < ((int64_t)1 << 40))) culprit(&v, 0, "desc.s");
  if (!v.nbad) {
    v.max_elems = sat_mul(sat_mul((uint64_t)d->n, (uint64_t)d->c), (uint64_t)d->s);
    if (v.max_elems >= E62) culprit(&v, 0, "element count");
  }
  if (!known_dtype((int)d->dtype)) culprit(&v, 0, "desc.dtype");
  if (v.nbad) { v.st = CONVJIT_ERR_INVALID_ARG; return v; }
  if (d->dtype == CONVJIT_DTYPE_F32) culprit(&v, 1, "desc.dtype");
  v.st = v.nunsup ? CONVJIT_ERR_UNSUPPORTED : CONVJIT_OK;
  return v;
}

/* ---- checks ------------------------------------------------------------------ */

/* The descriptor in failure messages (to reproduce one by hand). */
static const char *conv_str(const convjit_conv_desc *d) {
  static char b[512];
  if (!d) return "NULL";
  snprintf(b, sizeof b,
           "{size %zu rank %d n %lld c %lld k %lld in %lld,%lld,%lld f %lld,%lld,%lld st %lld,%lld,%lld dil "
           "%lld,%lld,%lld lo %lld,%lld,%lld hi %lld,%lld,%lld g %lld dt %d,%d,%d lay %d,%d bias %d sc %g,%g}",
           d->struct_size, d->spatial_rank, (long long)d->n, (long long)d->c, (long long)d->k, (long long)d->in[0],
           (long long)d->in[1], (long long)d->in[2], (long long)d->filter[0], (long long)d->filter[1],
           (long long)d->filter[2], (long long)d->stride[0], (long long)d->stride[1], (long long)d->stride[2],
           (long long)d->dilation[0], (long long)d->dilation[1], (long long)d->dilation[2], (long long)d->pad_lo[0],
           (long long)d->pad_lo[1], (long long)d->pad_lo[2], (long long)d->pad_hi[0], (long long)d->pad_hi[1],
           (long long)d->pad_hi[2], (long long)d->groups, (int)d->x_dtype, (int)d->w_dtype, (int)d->y_dtype,
           (int)d->x_layout, (int)d->y_layout, d->has_bias, (double)d->x_scale, (double)d->w_scale);
  return b;
}
static const convjit_conv_desc *g_conv; /* the descriptor under test, for messages */

static int g_iter;

/* st must equal the oracle's; a failure's text names one of its culprits. */
static void expect_verdict(const char *call, convjit_status st, const verdict *v) {
  const char *e = convjit_last_error();
  if (st != v->st)
    fail_msg("iteration %d, %s: status %d (%s), oracle %d; text \"%s\"; desc %s", g_iter, call, st,
             convjit_status_string(st), v->st, e, conv_str(g_conv));
  if (st == CONVJIT_OK) return;
  int n = st == CONVJIT_ERR_UNSUPPORTED ? v->nunsup : v->nbad;
  for (int i = 0; i < n; i++)
    if (strstr(e, st == CONVJIT_ERR_UNSUPPORTED ? v->unsup[i] : v->bad[i])) return;
  fail_msg("iteration %d, %s: %s text \"%s\" names none of the %d culprits (first \"%s\"); desc %s", g_iter, call,
           convjit_status_string(st), e, n, n ? (st == CONVJIT_ERR_UNSUPPORTED ? v->unsup[0] : v->bad[0]) : "",
           conv_str(g_conv));
}

/* A failure with non-empty text naming `needle`. */
static void expect_fail(const char *call, convjit_status st, convjit_status want, const char *needle) {
  const char *e = convjit_last_error();
  if (st != want)
    fail_msg("iteration %d, %s: status %d, expected %d; text \"%s\"", g_iter, call, st, want, e);
  if (!e[0] || !strstr(e, needle))
    fail_msg("iteration %d, %s: text \"%s\" lacks \"%s\"", g_iter, call, e, needle);
}

static convjit_context *g_ctx;

static uint64_t compiled_so_far(void) {
  convjit_context_info info;
  info.struct_size = sizeof info;
  assert_int_equal(convjit_context_get_info(g_ctx, &info), CONVJIT_OK);
  return info.kernels_compiled;
}

/* Launches with at least one bad argument (so nothing runs): INVALID_ARG
 * naming one of the bad ones. Fake pointers are never dereferenced. */
static void bad_launches(const convjit_plan *p, int is_conv, int has_bias, size_t ws) {
  void *a = (void *)(uintptr_t)0x1000, *b = (void *)(uintptr_t)0x2000;
  for (int t = 0; t < 8; t++) {
    const char *names[6];
    int nb = 0;
    convjit_status st;
    if (is_conv) {
      int bx = chance(30), by = chance(30), bw = chance(30), bb = chance(30), bs = ws && chance(30),
          bn = ws && chance(30);
      if (!(bx | by | bw | bb | bs | bn)) bx = 1;
      if (bx) names[nb++] = "x = NULL";
      if (by) names[nb++] = "y = NULL";
      if (bw) names[nb++] = "w_packed = NULL";
      if (bb) names[nb++] = "bias";
      if (bs) names[nb++] = "workspace_bytes";
      if (bn) names[nb++] = "workspace = NULL";
      st = convjit_conv_fwd(p, bx ? NULL : a, bw ? NULL : a, (bb ? !has_bias : has_bias) ? a : NULL, by ? NULL : b,
                            bn ? NULL : a, bs ? ws - 1 - (size_t)below((int64_t)ws) : ws, NULL);
    } else {
      int bx = chance(40), by = chance(40), same = !bx && !by;
      if (bx) names[nb++] = "x = NULL";
      if (by) names[nb++] = "y = NULL";
      if (same) names[nb++] = "out of place";
      st = convjit_transpose(p, bx ? NULL : a, by ? NULL : same ? a : b, NULL);
    }
    const char *e = convjit_last_error();
    if (st != CONVJIT_ERR_INVALID_ARG) fail_msg("iteration %d: bad launch returned %d (%s)", g_iter, st, e);
    int found = 0;
    for (int i = 0; i < nb; i++) found |= strstr(e, names[i]) != NULL;
    if (!found) fail_msg("iteration %d: bad launch text \"%s\" names none of the %d bad arguments", g_iter, e, nb);
  }
}

/* The queries of a created plan, with random bad arguments; then destroy. */
static void poke_plan(convjit_plan *p, int is_conv) {
  size_t bytes = 12345;
  assert_int_equal(convjit_plan_workspace_size(p, &bytes), CONVJIT_OK);
  assert_true(bytes != 12345);
  if (is_conv) assert_int_equal(convjit_plan_packed_weight_size(p, &bytes), CONVJIT_OK);
  expect_fail("workspace_size(p, NULL)", convjit_plan_workspace_size(p, NULL), CONVJIT_ERR_INVALID_ARG, "bytes");
  expect_fail("packed_weight_size(p, NULL)", convjit_plan_packed_weight_size(p, NULL), CONVJIT_ERR_INVALID_ARG,
              "bytes");
  int count = -1;
  assert_int_equal(convjit_plan_kernel_count(p, &count), CONVJIT_OK);
  assert_true(count >= 1);
  for (int t = 0; t < 8; t++) {
    convjit_kernel_info ki;
    memset(&ki, 0, sizeof ki);
    ki.struct_size = wild_size(sizeof ki);
    int idx = chance(50) ? (int)below(count) : (int)wild_extent();
    convjit_status st = convjit_plan_kernel_info(p, idx, &ki);
    if (ki.struct_size != sizeof ki && st != CONVJIT_OK) {
      expect_fail("kernel_info(struct_size)", st, CONVJIT_ERR_VERSION, "info.struct_size");
    } else if (idx < 0 || idx >= count) {
      expect_fail("kernel_info(index)", st, CONVJIT_ERR_INVALID_ARG, "index");
    } else {
      assert_int_equal(st, CONVJIT_OK);
      assert_true(ki.name[0] != 0);
      assert_true(ki.block[0] >= 1 && ki.grid[0] >= 1);
    }
  }
  size_t ws = 0;
  assert_int_equal(convjit_plan_workspace_size(p, &ws), CONVJIT_OK);
  bad_launches(p, is_conv, is_conv && g_conv && g_conv->has_bias, ws);
  size_t needed = 0;
  assert_int_equal(convjit_plan_describe(p, NULL, 0, &needed), CONVJIT_OK);
  assert_true(needed > 1);
  char small[7];
  memset(small, 'x', sizeof small);
  size_t cap = (size_t)below((int64_t)sizeof small) + 1;
  assert_int_equal(convjit_plan_describe(p, small, cap, NULL), CONVJIT_OK);
  assert_int_equal(strlen(small), cap - 1 < needed - 1 ? cap - 1 : needed - 1); /* truncated, NUL-terminated */
  expect_fail("describe(NULL buf)", convjit_plan_describe(p, NULL, 1 + (size_t)below(100), NULL),
              CONVJIT_ERR_INVALID_ARG, "buf");
  convjit_plan_destroy(p);
}

/* ---- conv descriptors ------------------------------------------------------- */

/* A valid small descriptor (some of them UNSUPPORTED by dtype/layout). */
static convjit_conv_desc small_valid(void) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = 1 + (int)below(3);
  d.n = 1 + below(2);
  d.c = 1 + below(8);
  d.k = 1 + below(8);
  for (int i = 0; i < 3; i++) {
    d.in[i] = 1 + below(6);
    d.filter[i] = 1 + below(d.in[i] < 3 ? d.in[i] : 3);
    d.stride[i] = 1 + below(2);
    if (chance(30)) d.pad_lo[i] = below(2);
    if (chance(30)) d.pad_hi[i] = below(2);
  }
  if (chance(20)) {
    d.x_dtype = d.w_dtype = CONVJIT_DTYPE_FP8_E4M3FN + (convjit_dtype)below(2);
    if (chance(50)) d.x_scale = 0.25f;
  } else if (chance(15)) {
    d.x_dtype = d.w_dtype = d.y_dtype = CONVJIT_DTYPE_F16;
  }
  if (chance(30)) d.y_dtype = CONVJIT_DTYPE_F32;
  d.has_bias = (int)below(2);
  return d;
}

static void mutate_one(convjit_conv_desc *d) {
  int i = (int)below(3);
  switch (below(21)) {
  case 0: d->spatial_rank = wild_enum(); break;
  case 1: d->n = wild_extent(); break;
  case 2: d->c = wild_extent(); break;
  case 3: d->k = wild_extent(); break;
  case 4: d->in[i] = wild_extent(); break;
  case 5: d->filter[i] = wild_extent(); break;
  case 6: d->stride[i] = wild_extent(); break;
  case 7: d->dilation[i] = wild_extent(); break;
  case 8: d->pad_lo[i] = wild_extent(); break;
  case 9: d->pad_hi[i] = wild_extent(); break;
  case 10: d->groups = chance(50) ? wild_extent() : 1 + below(4); break;
  case 11: d->x_dtype = (convjit_dtype)wild_enum(); break;
  case 12: d->w_dtype = (convjit_dtype)wild_enum(); break;
  case 13: d->y_dtype = (convjit_dtype)wild_enum(); break;
  case 14: d->x_layout = (convjit_layout)wild_enum(); break;
  case 15: d->y_layout = (convjit_layout)wild_enum(); break;
  case 16: d->has_bias = wild_enum(); break;
  case 17: d->x_scale = wild_scale(); break;
  case 18: d->w_scale = wild_scale(); break;
  case 19: d->has_channel_scale = chance(50) ? (int)below(2) : wild_enum(); break;
  default: d->struct_size = wild_size(sizeof *d); break;
  }
}

static convjit_conv_desc random_conv(void) {
  convjit_conv_desc d = small_valid();
  int mode = (int)below(10);
  if (mode < 4) {          /* every field wild */
    d.struct_size = wild_size(sizeof d);
    d.spatial_rank = chance(70) ? 1 + (int)below(3) : wild_enum();
    d.n = wild_extent(); d.c = wild_extent(); d.k = wild_extent();
    for (int i = 0; i < 3; i++) {
      d.in[i] = wild_extent(); d.filter[i] = wild_extent(); d.stride[i] = wild_extent();
      d.dilation[i] = wild_extent(); d.pad_lo[i] = wild_pad(); d.pad_hi[i] = wild_pad();
    }
    d.groups = chance(50) ? wild_extent() : 1;
    d.x_dtype = (convjit_dtype)wild_enum(); d.w_dtype = (convjit_dtype)wild_enum();
    d.y_dtype = (convjit_dtype)wild_enum();
    d.x_layout = (convjit_layout)wild_enum(); d.y_layout = (convjit_layout)wild_enum();
    d.has_bias = chance(70) ? (int)below(2) : wild_enum();
    d.x_scale = wild_scale(); d.w_scale = wild_scale();
  } else if (mode < 8) {   /* one or two fields off a valid descriptor */
    if (chance(15)) { d.c = 24; d.k = 24; d.groups = 2; } /* UNSUPPORTED alone (12 per group): must not hide a bad field */
    mutate_one(&d);
    if (chance(30)) mutate_one(&d);
  } else {                 /* legal extents, overflow-prone products */
    d.n = 1 + below(E31 - 1); d.c = (int64_t)1 << below(31); d.k = (int64_t)1 << below(31);
    for (int i = 0; i < 3; i++) {
      d.in[i] = (int64_t)1 << below(31);
      d.filter[i] = 1 + below(d.in[i] < 8 ? d.in[i] : 8);
    }
  }
  return d;
}

static void test_conv_fuzz(void **state) {
  (void)state;
  g_rng = SEED;
  int valid = 0, compiled_plans = 0, plan_calls = 0, ok_plans = 0;
  uint64_t budget_end = compiled_so_far() + COMPILE_BUDGET;
  for (g_iter = 0; g_iter < CONV_ITERS; g_iter++) {
    convjit_conv_desc d = random_conv();
    const convjit_conv_desc *dp = chance(2) ? NULL : &d;
    g_conv = dp;
    verdict v = conv_oracle(dp);

    expect_verdict("validate", convjit_conv_desc_validate(dp), &v);
    int64_t out[3] = {-7, -7, -7};
    convjit_status st = convjit_conv_output_dims(dp, out);
    expect_verdict("output_dims", st, &v);
    if (st == CONVJIT_OK)
      for (int i = 0; i < 3; i++)
        if (out[i] != v.out[i]) fail_msg("iteration %d: out[%d] = %lld, oracle %lld", g_iter, i, (long long)out[i],
                                         (long long)v.out[i]);
    if (chance(5)) { /* two things wrong: either may be reported */
      st = convjit_conv_output_dims(dp, NULL);
      if (st == CONVJIT_OK || !strstr(convjit_last_error(), "out = NULL")) expect_verdict("output_dims(out NULL)", st, &v);
    }
    if (v.st == CONVJIT_OK) valid++;

    /* Plan creation: NULL arguments first, then the descriptor. */
    convjit_plan *p = (convjit_plan *)&d; /* must be overwritten with NULL on failure */
    if (chance(3)) {
      expect_fail("plan_create_conv(ctx NULL)", convjit_plan_create_conv(NULL, dp, &p), CONVJIT_ERR_INVALID_ARG, "ctx");
      assert_null(p);
      continue;
    }
    if (chance(3)) {
      expect_fail("plan_create_conv(plan NULL)", convjit_plan_create_conv(g_ctx, dp, NULL), CONVJIT_ERR_INVALID_ARG,
                  "plan");
      continue;
    }
    if (v.st == CONVJIT_OK && (v.max_elems > SMALL_ELEMS || compiled_so_far() >= budget_end)) continue;
    plan_calls++;
    uint64_t before = compiled_so_far();
    st = convjit_plan_create_conv(g_ctx, dp, &p);
    if (v.st != CONVJIT_OK) {
      expect_verdict("plan_create_conv", st, &v);
      assert_null(p);
      assert_int_equal(compiled_so_far(), before); /* a bad descriptor never reaches the compiler */
      continue;
    }
    /* The context is the emulator's default gfx950: E4M3FNUZ data has no
     * exact E4M3FN image there (docs/api.md "fp8 formats"), UNSUPPORTED
     * at plan creation, which knows the arch. */
    if (d.x_dtype == CONVJIT_DTYPE_FP8_E4M3FNUZ || d.w_dtype == CONVJIT_DTYPE_FP8_E4M3FNUZ) {
      expect_fail("plan_create_conv(fnuz on gfx950)", st, CONVJIT_ERR_UNSUPPORTED, "fp8_e4m3fnuz");
      assert_null(p);
      continue;
    }
    /* A descriptor the oracle accepts (valid, no unsupported feature) of
     * this small size must plan: selection walks down to 64x64 tiles, which
     * fit any small shape. Refusing it (UNSUPPORTED, RESOURCE) used to pass. */
    if (st != CONVJIT_OK)
      fail_msg("iteration %d: valid small descriptor refused: plan_create_conv %s with text \"%s\"; desc %s", g_iter,
               convjit_status_string(st), convjit_last_error(), conv_str(dp));
    ok_plans++;
    if (compiled_so_far() > before) compiled_plans++;
    poke_plan(p, 1);
  }
  g_conv = NULL;
  print_message("conv: %d descriptors, %d valid, %d plan calls, %d plans created (%d compiled something), "
                "%llu kernels compiled\n",
                CONV_ITERS, valid, plan_calls, ok_plans, compiled_plans, (unsigned long long)compiled_so_far());
  /* the mix must exercise all three outcomes, or the generator is broken */
  assert_true(valid > CONV_ITERS / 20);
  assert_true(valid < CONV_ITERS / 2);
  assert_true(ok_plans >= 1);
}

/* ---- transpose descriptors ------------------------------------------------ */

static void test_transpose_fuzz(void **state) {
  (void)state;
  g_rng = SEED ^ 0x7a;
  int valid = 0, ok_plans = 0;
  uint64_t budget_end = compiled_so_far() + TRANSPOSE_BUDGET;
  for (g_iter = 0; g_iter < TRANSPOSE_ITERS; g_iter++) {
    convjit_transpose_desc d;
    d.struct_size = wild_size(sizeof d);
    if (chance(50)) {
      d.n = 1 + below(3); d.c = 1 + below(64); d.s = 1 + below(64);
      d.dtype = (convjit_dtype)(1 + below(4));
      if (chance(50)) {
        switch (below(5)) {
        case 0: d.n = wild_extent(); break;
        case 1: d.c = wild_extent(); break;
        case 2: d.s = chance(50) ? wild_extent() : ((int64_t)1 << 40) - below(2); break;
        case 3: d.dtype = (convjit_dtype)wild_enum(); break;
        default: d.n = d.c = E31 - 1; d.s = 1 + below(4); break; /* 2^62 boundary region */
        }
      }
    } else {
      d.n = wild_extent(); d.c = wild_extent(); d.s = wild_extent();
      d.dtype = (convjit_dtype)wild_enum();
    }
    const convjit_transpose_desc *dp = chance(2) ? NULL : &d;
    verdict v = transpose_oracle(dp);
    if (v.st == CONVJIT_OK) valid++;
    convjit_plan *p = (convjit_plan *)&d;
    if (chance(3)) {
      expect_fail("plan_create_transpose(ctx NULL)", convjit_plan_create_transpose(NULL, dp, &p),
                  CONVJIT_ERR_INVALID_ARG, "ctx");
      assert_null(p);
      continue;
    }
    if (chance(3)) {
      expect_fail("plan_create_transpose(plan NULL)", convjit_plan_create_transpose(g_ctx, dp, NULL),
                  CONVJIT_ERR_INVALID_ARG, "plan");
      continue;
    }
    if (v.st == CONVJIT_OK && (v.max_elems > SMALL_ELEMS || compiled_so_far() >= budget_end)) continue;
    uint64_t before = compiled_so_far();
    convjit_status st = convjit_plan_create_transpose(g_ctx, dp, &p);
    if (v.st != CONVJIT_OK) {
      expect_verdict("plan_create_transpose", st, &v);
      assert_null(p);
      assert_int_equal(compiled_so_far(), before);
      continue;
    }
    if (st != CONVJIT_OK) fail_msg("iteration %d: a small valid transpose failed: %s", g_iter, convjit_last_error());
    ok_plans++;
    int dummy[4];
    expect_fail("weight_pack(transpose plan)", convjit_weight_pack(p, dummy, dummy, NULL), CONVJIT_ERR_INVALID_ARG,
                "transpose");
    poke_plan(p, 0);
  }
  print_message("transpose: %d descriptors, %d valid, %d plans created\n", TRANSPOSE_ITERS, valid, ok_plans);
  assert_true(valid > TRANSPOSE_ITERS / 20);
  assert_true(ok_plans >= 1);
}

/* ---- context options and NULL handles ---------------------------------------- */

static void test_options_fuzz(void **state) {
  (void)state;
  g_rng = SEED ^ 0x0b;
  static const char *arches[] = {NULL, "gfx942", "gfx950", "gfx90a", "", "gfx9500", "GFX942"};
  int created = 0;
  for (g_iter = 0; g_iter < OPTIONS_ITERS; g_iter++) {
    convjit_context_options o = convjit_context_options_default();
    o.struct_size = wild_size(sizeof o);
    if (chance(20)) o.header_version = (int)wild_extent();
    /* HIP/auto fail fast here (no GPU); mostly the emulator */
    o.device = chance(70) ? CONVJIT_DEVICE_EMU : (convjit_device_kind)wild_enum();
    o.device_index = chance(80) ? -1 : (int)wild_extent();
    o.arch = arches[below(7)];
    o.disable_disk_cache = 1; /* no files from a fuzz test */
    o.log_level = chance(80) ? CONVJIT_LOG_FROM_ENV : (convjit_log_level)wild_enum();
    if (o.log_level >= CONVJIT_LOG_ERROR && o.log_level <= CONVJIT_LOG_DEBUG) o.log_level = CONVJIT_LOG_OFF; /* quiet */
    convjit_context *c = (convjit_context *)&o;
    const convjit_context_options *op = chance(3) ? NULL : &o;
    convjit_status st = convjit_context_create(op, &c);
    if (st == CONVJIT_OK) {
      assert_non_null(c);
      created++;
      convjit_context_destroy(c);
      continue;
    }
    assert_null(c);
    const char *e = convjit_last_error();
    if (!e[0] || !(strstr(e, "options.") || strstr(e, "device")))
      fail_msg("iteration %d: context_create %s with text \"%s\"", g_iter, convjit_status_string(st), e);
    /* known sizes: 0.1.0's struct (up to log_level) through this header's */
    size_t v1 = offsetof(convjit_context_options, log_level) + sizeof(convjit_log_level);
    if (op && (o.struct_size < v1 || o.struct_size > sizeof o)) assert_int_equal(st, CONVJIT_ERR_VERSION);
  }
  print_message("options: %d tried, %d contexts created\n", OPTIONS_ITERS, created);
  assert_true(created > 0);

  /* NULL handles everywhere */
  size_t b;
  int n;
  convjit_kernel_info ki;
  ki.struct_size = sizeof ki;
  expect_fail("workspace_size(NULL)", convjit_plan_workspace_size(NULL, &b), CONVJIT_ERR_INVALID_ARG, "plan");
  expect_fail("packed_weight_size(NULL)", convjit_plan_packed_weight_size(NULL, &b), CONVJIT_ERR_INVALID_ARG, "plan");
  expect_fail("kernel_count(NULL)", convjit_plan_kernel_count(NULL, &n), CONVJIT_ERR_INVALID_ARG, "plan");
  expect_fail("kernel_info(NULL)", convjit_plan_kernel_info(NULL, 0, &ki), CONVJIT_ERR_INVALID_ARG, "plan");
  expect_fail("describe(NULL)", convjit_plan_describe(NULL, NULL, 0, NULL), CONVJIT_ERR_INVALID_ARG, "plan");
  expect_fail("context_get_info(NULL)", convjit_context_get_info(NULL, NULL), CONVJIT_ERR_INVALID_ARG, "ctx");
  convjit_plan_destroy(NULL);
  convjit_context_destroy(NULL);
}

static int setup(void **state) {
  (void)state;
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.disable_disk_cache = 1; /* deterministic compile counts, no files */
  return convjit_context_create(&o, &g_ctx) == CONVJIT_OK ? 0 : -1;
}
static int teardown(void **state) {
  (void)state;
  convjit_context_destroy(g_ctx);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_fuzz),
      cmocka_unit_test(test_transpose_fuzz),
      cmocka_unit_test(test_options_fuzz),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
