/* The context's conv plan memo (issue 11 item 5, src/host/plan_memo.c).
 *
 * Without a compile: the memo's key is the normalized descriptor, so every
 * single-field change of a descriptor misses (a loop over the fields, on a
 * bf16 and an fp8 base), descriptors that normalize alike hit (padding
 * bytes, bytes past an older struct_size, fields past spatial_rank, an fp8
 * scale 0 = 1.0), the table is bounded and least-recently-used, and four
 * threads sharing one memo only ever get the plan of their own key.
 * Through the public API on the emulator (EMULATED, not hardware): a
 * repeated convjit_plan_create_conv hits (context info plan_memo_hits; the
 * kernel counters do not move), forced options bypass the memo, a plan
 * from a hit computes the fresh plan's output bit for bit (and the fresh
 * one matches the CPU reference), and plans from hits are destroyed in any
 * order, before or after the context. No timing: convjit-bench-api prints
 * the cost. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "convjit/convjit.h"
#include "host/plan.h"
#include "ref/ref_conv.h"
#include "util/numfmt.h"

#include "api_expect.h"

/* A descriptor written field by field over `junk` bytes: its padding (after
 * spatial_rank, at the end) holds junk, as a caller's stack would. */
static void desc_fill(convjit_conv_desc *d, uint8_t junk, int fp8) {
  memset(d, junk, sizeof *d);
  d->struct_size = sizeof *d;
  d->spatial_rank = 3;
  d->n = 2; d->c = 32; d->k = 48;
  d->in[0] = 8; d->in[1] = 10; d->in[2] = 12;
  for (int i = 0; i < 3; i++) {
    d->filter[i] = 3; d->stride[i] = 1; d->dilation[i] = 1;
    d->pad_lo[i] = 1; d->pad_hi[i] = 0;
  }
  d->stride[2] = 2; /* W out = (12 + 1 + 0 - 3) / 2 + 1 = 6, also with pad_hi[2] = 1: only the key's pad_hi tells */
  d->groups = 1;
  d->x_dtype = d->w_dtype = fp8 ? CONVJIT_DTYPE_FP8_E4M3FN : CONVJIT_DTYPE_BF16;
  d->y_dtype = CONVJIT_DTYPE_BF16;
  d->x_layout = d->y_layout = CONVJIT_LAYOUT_NCDHW;
  d->has_bias = 0;
  d->x_scale = fp8 ? 0.5f : 0.0f;
  d->w_scale = fp8 ? 2.0f : 0.0f;
  d->has_channel_scale = 0;
  d->has_residual = 0;
  d->beta = 0.0f;
  d->act = CONVJIT_ACT_IDENTITY;
  d->has_x_prev = 0;
  d->kind = CONVJIT_CONV_FORWARD;
  d->nondeterministic = 0;
  for (int i = 0; i < 3; i++) d->output_padding[i] = d->upsample[i] = 0;
}

/* A stand-in plan for prob: the memo copies plans, it never runs them. */
static convjit_plan *fake_plan(const cj_conv_problem *prob, const char *mark) {
  convjit_plan *p = calloc(1, sizeof *p);
  assert_non_null(p);
  p->op = CJ_PLAN_CONV;
  p->prob = *prob;
  snprintf(p->seq.summary, sizeof p->seq.summary, "%s", mark);
  p->nfwd = 1;
  p->fwd[0].kind = CJ_STEP_KERNEL;
  p->fwd[0].source = CJ_SRC_COMPILED;
  p->fwd[0].compile_ms = 5.0;
  return p;
}

static cj_plan_memo *memo_new(void) {
  cj_plan_memo *m = malloc(sizeof *m);
  assert_non_null(m);
  cj_plan_memo_init(m);
  return m;
}
static void memo_del(cj_plan_memo *m) {
  cj_plan_memo_free(m);
  free(m);
}

static void put_desc(cj_plan_memo *m, const convjit_conv_desc *d, const char *mark) {
  cj_conv_problem prob;
  OK(cj_conv_desc_normalize(d, &prob));
  convjit_plan *p = fake_plan(&prob, mark);
  cj_plan_memo_put(m, p);
  free(p); /* the memo keeps its own copy */
}

/* 1 and the hit's mark in `mark` (may be NULL), or 0. */
static int get_desc(cj_plan_memo *m, const convjit_conv_desc *d, char *mark) {
  cj_conv_problem prob;
  OK(cj_conv_desc_normalize(d, &prob));
  convjit_plan out;
  memset(&out, 0, sizeof out);
  if (!cj_plan_memo_get(m, &prob, &out)) return 0;
  assert_memory_equal(&out.prob, &prob, sizeof prob); /* normalize memsets it: no padding garbage */
  if (mark) snprintf(mark, 64, "%.63s", out.seq.summary);
  return 1;
}

/* One field of the descriptor changed to another valid value. */
typedef struct variant {
  const char *field;
  void (*apply)(convjit_conv_desc *d);
} variant;
#define V(name, stmt) static void v_##name(convjit_conv_desc *d) { stmt; }
V(n, d->n++) V(c, d->c += 16) V(k, d->k += 16)
V(in0, d->in[0]++) V(in1, d->in[1]++) V(in2, d->in[2]++)
V(filter0, d->filter[0]--) V(filter1, d->filter[1]--) V(filter2, d->filter[2]--)
V(stride0, d->stride[0]++) V(stride1, d->stride[1]++) V(stride2, d->stride[2]++)
V(pad_lo0, d->pad_lo[0]++) V(pad_lo1, d->pad_lo[1]++) V(pad_lo2, d->pad_lo[2]++)
V(pad_hi0, d->pad_hi[0]++) V(pad_hi1, d->pad_hi[1]++) V(pad_hi2, d->pad_hi[2]++)
V(dil0, d->dilation[0]++) V(dil1, d->dilation[1]++) V(dil2, d->dilation[2]++)
V(groups, d->groups = 2) V(x_layout, d->x_layout = CONVJIT_LAYOUT_NDHWC) V(y_layout, d->y_layout = CONVJIT_LAYOUT_NDHWC)
V(y_dtype, d->y_dtype = CONVJIT_DTYPE_F32) V(has_bias, d->has_bias = 1)
V(has_residual, d->has_residual = 1) V(beta, (d->has_residual = 1, d->beta = 0.5f)) V(act, d->act = CONVJIT_ACT_SILU)
V(spatial_rank, d->spatial_rank = 2) V(kind, d->kind = CONVJIT_CONV_BACKWARD_DATA)
V(output_padding, (d->kind = CONVJIT_CONV_BACKWARD_DATA, d->output_padding[2] = 1)) V(upsample, d->upsample[1] = 2)
V(kind_bwd_weight, d->kind = CONVJIT_CONV_BACKWARD_WEIGHT)
V(nondeterministic, (d->kind = CONVJIT_CONV_BACKWARD_WEIGHT, d->nondeterministic = 1))
/* on the bf16 base */
V(x_dtype_fp8, d->x_dtype = CONVJIT_DTYPE_FP8_E4M3FN) V(w_dtype_fp8, d->w_dtype = CONVJIT_DTYPE_FP8_E4M3FN)
/* on the fp8 base */
V(x_dtype_fnuz, d->x_dtype = CONVJIT_DTYPE_FP8_E4M3FNUZ) V(w_dtype_fnuz, d->w_dtype = CONVJIT_DTYPE_FP8_E4M3FNUZ)
V(x_dtype_bf16, d->x_dtype = CONVJIT_DTYPE_BF16) V(x_scale, d->x_scale = 0.25f) V(w_scale, d->w_scale = 4.0f)
V(has_channel_scale, d->has_channel_scale = 1)
#undef V
#define E(name) {#name, v_##name}
static const variant common[] = {
    E(n), E(c), E(k), E(in0), E(in1), E(in2), E(filter0), E(filter1), E(filter2), E(stride0), E(stride1),
    E(stride2), E(pad_lo0), E(pad_lo1), E(pad_lo2), E(pad_hi0), E(pad_hi1), E(pad_hi2), E(dil0), E(dil1),
    E(dil2), E(groups), E(x_layout), E(y_layout), E(y_dtype), E(has_bias), E(spatial_rank), E(has_residual),
    E(beta), E(act), E(upsample)};
/* backward data and backward weight compute in bf16 (an fp8 one is UNSUPPORTED) */
static const variant only_bf16[] = {E(x_dtype_fp8),    E(w_dtype_fp8),     E(kind), E(output_padding),
                                    E(kind_bwd_weight), E(nondeterministic)};
static const variant only_fp8[] = {E(x_dtype_fnuz), E(w_dtype_fnuz), E(x_dtype_bf16), E(x_scale), E(w_scale),
                                   E(has_channel_scale)};
#undef E

/* Each variant of base either misses or is refused by normalization (then
 * no plan exists for it, memoized or not); returns the misses. */
static int count_misses(cj_plan_memo *m, int fp8, const variant *v, size_t nv) {
  int misses = 0;
  for (size_t i = 0; i < nv; i++) {
    convjit_conv_desc d;
    desc_fill(&d, 0x00, fp8);
    v[i].apply(&d);
    cj_conv_problem prob;
    if (cj_conv_desc_normalize(&d, &prob) != CONVJIT_OK) {
      printf("  %s base, %-18s refused by validation (%s)\n", fp8 ? "fp8 " : "bf16", v[i].field, convjit_last_error());
      continue;
    }
    if (get_desc(m, &d, NULL)) fail_msg("%s base: desc.%s changed, the memo still hit", fp8 ? "fp8" : "bf16", v[i].field);
    misses++;
  }
  return misses;
}

static void test_key_fields(void **st) {
  (void)st;
  cj_plan_memo *m = memo_new();
  convjit_conv_desc d;
  char mark[64];
  for (int fp8 = 0; fp8 <= 1; fp8++) {
    desc_fill(&d, 0xA5, fp8);
    put_desc(m, &d, fp8 ? "fp8 base" : "bf16 base");
    desc_fill(&d, 0x5A, fp8); /* other padding bytes */
    assert_true(get_desc(m, &d, mark));
    assert_string_equal(mark, fp8 ? "fp8 base" : "bf16 base");
  }
  /* Counted by hand from the lists: all 31 common variants miss (groups =
   * 2 is 16 channels a group, a whole chunk in bf16 and fp8; NDHWC layouts
   * are supported since issue 14; has_residual, beta, act: the fused
   * epilogue's fields; upsample since issue 27); the 6 bf16-only variants
   * miss (kind = backward data and its output_padding: issue 27; backward
   * weight, deterministic or not, a problem of its own: issue 28; both bf16
   * only); all 6 fp8-only ones miss. */
  assert_int_equal(count_misses(m, 0, common, sizeof common / sizeof common[0]), 31);
  assert_int_equal(count_misses(m, 1, common, sizeof common / sizeof common[0]), 31);
  assert_int_equal(count_misses(m, 0, only_bf16, 6), 6);
  assert_int_equal(count_misses(m, 1, only_fp8, 6), 6);
  memo_del(m);
}

/* Descriptors that normalize alike share one entry. */
static void test_key_equivalent(void **st) {
  (void)st;
  cj_plan_memo *m = memo_new();
  convjit_conv_desc d;
  char mark[64];
  /* a caller built against the 0.1 header: no has_channel_scale; the junk
   * where a newer header has it is not read */
  desc_fill(&d, 0, 0);
  put_desc(m, &d, "v2 struct");
  desc_fill(&d, 0x77, 0);
  d.struct_size = offsetof(convjit_conv_desc, has_channel_scale);
  d.has_channel_scale = 0x77777777;
  assert_true(get_desc(m, &d, mark));
  assert_string_equal(mark, "v2 struct");
  /* fields past spatial_rank are not read */
  desc_fill(&d, 0, 0);
  d.spatial_rank = 2;
  put_desc(m, &d, "2d");
  d.in[2] = 999; d.filter[2] = 77; d.stride[2] = 5; d.dilation[2] = 9; d.pad_lo[2] = 3; d.pad_hi[2] = 4;
  assert_true(get_desc(m, &d, mark));
  assert_string_equal(mark, "2d");
  /* an fp8 scale of 0 means 1.0 */
  desc_fill(&d, 0, 1);
  d.x_scale = 1.0f;
  put_desc(m, &d, "scale 1");
  d.x_scale = 0.0f;
  assert_true(get_desc(m, &d, mark));
  assert_string_equal(mark, "scale 1");
  /* a hit reports its kernels as loaded: memory hits, no compile time */
  cj_conv_problem prob;
  OK(cj_conv_desc_normalize(&d, &prob));
  convjit_plan out;
  assert_true(cj_plan_memo_get(m, &prob, &out));
  assert_int_equal(out.fwd[0].source, CJ_SRC_MEMORY);
  assert_true(out.fwd[0].compile_ms == 0.0);
  memo_del(m);
}

/* Bounded, least recently used out first; cap 0 turns it off. */
static void test_lru(void **st) {
  (void)st;
  cj_plan_memo *m = memo_new();
  assert_int_equal(m->cap, CJ_PLAN_MEMO_CAP);
  convjit_conv_desc a, b, c;
  desc_fill(&a, 0, 0);
  b = a, c = a;
  b.n = 3;
  c.n = 4;
  cj_plan_memo_set_cap(m, 2);
  put_desc(m, &a, "a");
  put_desc(m, &b, "b");
  put_desc(m, &a, "a again"); /* already there: kept, not duplicated */
  assert_int_equal(m->n, 2);
  char mark[64];
  assert_true(get_desc(m, &a, mark)); /* a is now more recent than b */
  assert_string_equal(mark, "a");
  put_desc(m, &c, "c"); /* full: b goes */
  assert_int_equal(m->n, 2);
  assert_false(get_desc(m, &b, NULL));
  assert_true(get_desc(m, &a, NULL));
  assert_true(get_desc(m, &c, NULL));
  cj_plan_memo_set_cap(m, 0);
  assert_int_equal(m->n, 0);
  put_desc(m, &a, "a");
  assert_false(get_desc(m, &a, NULL));
  cj_plan_memo_set_cap(m, 100000);
  assert_int_equal(m->cap, CJ_PLAN_MEMO_CAP);
  /* a full table of distinct keys stays at the cap */
  for (int i = 0; i < CJ_PLAN_MEMO_CAP + 5; i++) {
    a.n = 1 + i;
    put_desc(m, &a, "many");
  }
  assert_int_equal(m->n, CJ_PLAN_MEMO_CAP);
  assert_int_equal(cj_plan_memo_hits(m), 3); /* the three hits above */
  memo_del(m);
}

/* Four threads on one memo of 3 entries and 6 keys (constant eviction):
 * every hit carries its own key's plan. Run under -DCJ_SANITIZE=thread too. */
typedef struct thr_arg {
  cj_plan_memo *m;
  int t, wrong;
} thr_arg;
static void *thr_memo(void *arg_) {
  thr_arg *a = arg_;
  for (int i = 0; i < 3000; i++) {
    convjit_conv_desc d;
    desc_fill(&d, 0, 0);
    d.n = 1 + (i * 7 + a->t) % 6;
    cj_conv_problem prob;
    if (cj_conv_desc_normalize(&d, &prob) != CONVJIT_OK) { a->wrong++; continue; }
    convjit_plan *out = malloc(sizeof *out);
    char want[32];
    snprintf(want, sizeof want, "n=%lld", (long long)d.n);
    if (!out) { a->wrong++; continue; }
    if (cj_plan_memo_get(a->m, &prob, out)) a->wrong += strcmp(out->seq.summary, want) != 0 || out->prob.n != d.n;
    else {
      convjit_plan *p = fake_plan(&prob, want);
      cj_plan_memo_put(a->m, p);
      free(p);
    }
    free(out);
  }
  return NULL;
}
static void test_threads(void **st) {
  (void)st;
  cj_plan_memo *m = memo_new();
  cj_plan_memo_set_cap(m, 3);
  thr_arg a[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (thr_arg){m, i, 0};
    assert_int_equal(pthread_create(&t[i], NULL, thr_memo, &a[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(a[i].wrong, 0);
  }
  assert_true(m->n <= 3);
  memo_del(m);
}

/* ---- through the public API, on the emulator ---------------------------- */

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* n1 c32 -> k32, 2x8x8, 3x3x3, pads 1, bias: a few emulated workgroups. */
static convjit_conv_desc small_desc(void) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 1; d.c = 32; d.k = 32;
  d.in[0] = 2; d.in[1] = 8; d.in[2] = 8;
  for (int i = 0; i < 3; i++) d.filter[i] = 3, d.pad_lo[i] = d.pad_hi[i] = 1;
  d.has_bias = 1;
  return d;
}

static convjit_context_info info(convjit_context *c) {
  convjit_context_info ci;
  memset(&ci, 0, sizeof ci);
  ci.struct_size = sizeof ci;
  OK(convjit_context_get_info(c, &ci));
  return ci;
}

/* The kernel lookups a create made: a memo hit makes none. */
static uint64_t lookups(const convjit_context_info *ci) {
  return ci->kernels_compiled + ci->memory_hits + ci->disk_hits;
}

static void test_api_hits(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_conv_desc d = small_desc();
  convjit_plan *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL;
  OK(convjit_plan_create_conv(c, &d, &p1));
  convjit_context_info i1 = info(c);
  assert_int_equal(i1.plan_memo_hits, 0);
  int nk = 0;
  OK(convjit_plan_kernel_count(p1, &nk));
  assert_true(nk >= 2);
  assert_int_equal(lookups(&i1), (uint64_t)nk); /* one lookup per kernel */

  OK(convjit_plan_create_conv(c, &d, &p2));
  convjit_context_info i2 = info(c);
  assert_int_equal(i2.plan_memo_hits, 1);
  assert_int_equal(i2.kernels_compiled, i1.kernels_compiled);
  assert_int_equal(i2.memory_hits, i1.memory_hits);
  assert_int_equal(i2.disk_hits, i1.disk_hits);
  assert_int_equal(i2.disk_misses, i1.disk_misses);
  assert_ptr_not_equal(p1, p2);
  for (int k = 0; k < nk; k++) {
    convjit_kernel_info a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
    OK(convjit_plan_kernel_info(p1, k, &a));
    OK(convjit_plan_kernel_info(p2, k, &b));
    assert_string_equal(a.name, b.name);
    assert_int_equal(a.grid[0], b.grid[0]);
    assert_int_equal(b.source, CONVJIT_CACHE_MEMORY);
    assert_true(b.compile_ms == 0.0);
  }
  char t1[4096], t2[4096];
  OK(convjit_plan_describe(p1, t1, sizeof t1, NULL));
  OK(convjit_plan_describe(p2, t2, sizeof t2, NULL));
  assert_string_equal(t1, t2);

  /* the same conv written differently (junk padding, the 0.1 struct size) hits */
  convjit_conv_desc e = small_desc();
  e.struct_size = offsetof(convjit_conv_desc, has_channel_scale);
  size_t pad = offsetof(convjit_conv_desc, spatial_rank) + sizeof(int); /* to n: padding on LP64 */
  memset((char *)&e + pad, 0xC3, offsetof(convjit_conv_desc, n) - pad);
  e.has_channel_scale = 0x3C3C3C3C; /* past the 0.1 struct_size: not read */
  OK(convjit_plan_create_conv(c, &e, &p3));
  assert_int_equal(info(c).plan_memo_hits, 2);
  /* one field off: a new plan through selection and the cache */
  d.has_bias = 0;
  OK(convjit_plan_create_conv(c, &d, &p4));
  convjit_context_info i4 = info(c);
  assert_int_equal(i4.plan_memo_hits, 2);
  assert_true(lookups(&i4) > lookups(&i2));
  /* forced options never use the memo (a tool asking for a kernel gets it) */
  d.has_bias = 1;
  cj_conv_opts none;
  memset(&none, 0, sizeof none);
  convjit_plan *p5 = NULL;
  OK(cj_plan_create_conv_opts(c, &d, &none, &p5));
  convjit_context_info i5 = info(c);
  assert_int_equal(i5.plan_memo_hits, 2);
  assert_int_equal(lookups(&i5), lookups(&i4) + (uint64_t)nk);
  convjit_plan_destroy(p5);
  convjit_plan_destroy(p4);
  convjit_plan_destroy(p3);
  convjit_plan_destroy(p1);
  convjit_plan_destroy(p2);
  convjit_context_destroy(c);
}

typedef struct bufs {
  void *x, *w, *pw, *b, *y, *ws;
  size_t ny, wsb;
} bufs;

/* pack + forward of plan p into a fresh y (prefilled 0xEE: unwritten
 * outputs show); returns the bf16 output. */
static uint16_t *run(convjit_context *c, const convjit_plan *p, bufs *bf) {
  OK(convjit_memset(c, bf->y, 0xEE, bf->ny * 2, NULL));
  OK(convjit_weight_pack(p, bf->w, bf->pw, NULL));
  OK(convjit_conv_fwd(p, bf->x, bf->pw, bf->b, bf->y, bf->ws, bf->wsb, NULL));
  uint16_t *y = malloc(bf->ny * 2);
  assert_non_null(y);
  OK(convjit_memcpy_d2h(c, y, bf->y, bf->ny * 2, NULL));
  return y;
}

static void test_api_run_and_lifetime(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx942");
  convjit_conv_desc d = small_desc();
  convjit_plan *fresh = NULL, *hit = NULL, *hit2 = NULL;
  OK(convjit_plan_create_conv(c, &d, &fresh));
  OK(convjit_plan_create_conv(c, &d, &hit));
  OK(convjit_plan_create_conv(c, &d, &hit2));
  assert_int_equal(info(c).plan_memo_hits, 2);

  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 32, 2, 8, 8, 32, 3, 3, 3);
  for (int i = 0; i < 3; i++) sh.pad_lo[i] = sh.pad_hi[i] = 1;
  size_t nx = 32 * 2 * 8 * 8, nw = 32 * 32 * 27, ny = 32 * 2 * 8 * 8; /* pads 1: output extents = input */
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *bias = malloc(32 * 4), *want = malloc(ny * 4);
  uint16_t *xb = malloc(nx * 2), *wb = malloc(nw * 2);
  assert_true(x && w && bias && want && xb && wb);
  uint64_t seed = 11;
  for (size_t i = 0; i < nx; i++) xb[i] = cj_f32_to_bf16_rne(x[i] = (float)((int)(rnd(&seed) % 17) - 8) / 8.0f);
  for (size_t i = 0; i < nw; i++) wb[i] = cj_f32_to_bf16_rne(w[i] = (float)((int)(rnd(&seed) % 9) - 4) / 8.0f);
  for (size_t i = 0; i < 32; i++) bias[i] = (float)((int)(rnd(&seed) % 33) - 16) / 8.0f;
  assert_int_equal(cj_ref_conv_fwd(&sh, x, w, bias, want), CONVJIT_OK);

  bufs bf = {.ny = ny};
  size_t pwb = 0;
  OK(convjit_plan_workspace_size(fresh, &bf.wsb));
  OK(convjit_plan_packed_weight_size(fresh, &pwb));
  OK(convjit_malloc(c, nx * 2, &bf.x));
  OK(convjit_malloc(c, nw * 2, &bf.w));
  OK(convjit_malloc(c, pwb, &bf.pw));
  OK(convjit_malloc(c, 32 * 4, &bf.b));
  OK(convjit_malloc(c, ny * 2, &bf.y));
  if (bf.wsb) OK(convjit_malloc(c, bf.wsb, &bf.ws));
  OK(convjit_memcpy_h2d(c, bf.x, xb, nx * 2, NULL));
  OK(convjit_memcpy_h2d(c, bf.w, wb, nw * 2, NULL));
  OK(convjit_memcpy_h2d(c, bf.b, bias, 32 * 4, NULL));

  uint16_t *y_fresh = run(c, fresh, &bf);
  /* Values on a 1/8 grid keep every fp32 sum exact: the only error is the
   * bf16 rounding of the output, at most half an ulp = 2^-8 |want|. */
  for (size_t i = 0; i < ny; i++)
    if (!(fabs((double)cj_bf16_to_f32(y_fresh[i]) - want[i]) <= fabs(want[i]) / 256.0))
      fail_msg("fresh plan: y[%zu] = %g, reference %g", i, (double)cj_bf16_to_f32(y_fresh[i]), (double)want[i]);
  /* the plan a hit copied is independent of the one it was copied from */
  convjit_plan_destroy(fresh);
  uint16_t *y_hit = run(c, hit, &bf);
  assert_memory_equal(y_hit, y_fresh, ny * 2);

  convjit_free(c, bf.x); convjit_free(c, bf.w); convjit_free(c, bf.pw); convjit_free(c, bf.b);
  convjit_free(c, bf.y); convjit_free(c, bf.ws);
  /* plans from hits outlive the context: refused, then destroyed (ASan
   * build: no double free with the memo's own copies, freed at destroy) */
  convjit_context_destroy(c);
  void *fx = (void *)(uintptr_t)0x100000; /* never dereferenced */
  EXPECT(convjit_conv_fwd(hit2, fx, fx, fx, fx, NULL, 0, NULL), CONVJIT_ERR_INVALID_ARG,
         "plan: its context was destroyed");
  convjit_plan_destroy(hit2);
  convjit_plan_destroy(hit);
  free(x); free(w); free(bias); free(want); free(xb); free(wb); free(y_fresh); free(y_hit);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key_fields),
      cmocka_unit_test(test_key_equivalent),
      cmocka_unit_test(test_lru),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_api_hits),
      cmocka_unit_test(test_api_run_and_lifetime),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
