/* Layout plans: legality (good shapes -> fields derived here by hand; bad
 * shapes -> status + message naming the field), keys (stable, and every
 * field change changes the key), printout. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "codegen/kplan.h"

static const cj_arch *A950, *A942;

static int setup(void **st) {
  (void)st;
  A950 = cj_arch_from_name("gfx950");
  A942 = cj_arch_from_name("gfx942");
  return A950 && A942 ? 0 : -1;
}

static void key_of(const cj_kplan *p, char *buf, size_t n) {
  cj_strbuf sb = {0};
  cj_kplan_key(p, &sb);
  assert_false(sb.oom);
  assert_non_null(sb.s);
  assert_true(strlen(sb.s) < n);
  strcpy(buf, sb.s);
  cj_sb_free(&sb);
}

/* Expect failure with status st and error text containing `needle`. */
#define EXPECT_BAD(call, st, needle)                                  \
  do {                                                                \
    assert_int_equal((call), (st));                                   \
    const char *e_ = cj_error_text();                                 \
    if (!strstr(e_, (needle))) fail_msg("error text \"%s\" lacks \"%s\"", e_, (needle)); \
  } while (0)

static void test_transpose_big_fp8(void **st) {
  (void)st;
  cj_kplan p;
  /* 1 x 1024 x 3456000 fp8 = 3.54e9 bytes (> 2^31): the BIG path. */
  assert_int_equal(cj_kplan_transpose_init(&p, A950, 1, 1, 1024, 3456000), CONVJIT_OK);
  assert_int_equal(p.op, CJ_KOP_TRANSPOSE);
  assert_ptr_equal(p.arch, A950);
  assert_int_equal(p.u.tr.big, 1);
  assert_int_equal(p.u.tr.load_bytes, 16);  /* 3456000 % 16 == 0 */
  assert_int_equal(p.u.tr.store_bytes, 16); /* 1024 % 16 == 0 */
  assert_int_equal(p.block[0], 256);
  assert_int_equal(p.block[1], 1);
  assert_int_equal(p.block[2], 1);
  assert_int_equal(p.u.tr.s_tiles, 54000); /* 3456000 / 64 */
  assert_int_equal(p.u.tr.c_tiles, 16);    /* 1024 / 64 */
  assert_int_equal(p.grid[0], 864000);     /* 16 * 54000: one work-group per tile */
  assert_int_equal(p.grid[1], 1);
  assert_int_equal(p.grid[2], 1);
  assert_int_equal(p.lds_bytes, 4096); /* 64 x 64 x 1 byte */
  assert_int_equal(p.nargs, 2);
  assert_string_equal(p.args[0].name, "x");
  assert_true(p.args[0].is_ptr);
  assert_int_equal(p.args[0].size, 8);
  assert_string_equal(p.args[1].name, "y");
  assert_true(p.args[1].is_ptr);
  /* bf16: 7.08e9 bytes, still BIG; LDS doubles. */
  assert_int_equal(cj_kplan_transpose_init(&p, A942, 2, 1, 1024, 3456000), CONVJIT_OK);
  assert_int_equal(p.u.tr.big, 1);
  assert_int_equal(p.lds_bytes, 8192);
  assert_int_equal(p.u.tr.lds_pitch, 128);
}

static void test_transpose_small_and_odd(void **st) {
  (void)st;
  cj_kplan p;
  /* 2 x 24 x 1000 bf16: rows of 2000 / 48 bytes -> 16-byte accesses both sides. */
  assert_int_equal(cj_kplan_transpose_init(&p, A942, 2, 2, 24, 1000), CONVJIT_OK);
  assert_int_equal(p.u.tr.big, 0);
  assert_int_equal(p.u.tr.load_bytes, 16);
  assert_int_equal(p.u.tr.store_bytes, 16);
  assert_int_equal(p.grid[0], 16); /* ceil(1000/64) s tiles x 1 c tile */
  assert_int_equal(p.u.tr.c_tiles, 1);
  assert_int_equal(p.grid[1], 1);
  assert_int_equal(p.grid[2], 2);
  /* fp8 same shape: x row 1000 bytes -> 8-byte loads; y row 24 bytes -> 8-byte stores. */
  assert_int_equal(cj_kplan_transpose_init(&p, A950, 1, 2, 24, 1000), CONVJIT_OK);
  assert_int_equal(p.u.tr.load_bytes, 8);
  assert_int_equal(p.u.tr.store_bytes, 8);
  /* Odd sizes: element-wide accesses. */
  assert_int_equal(cj_kplan_transpose_init(&p, A950, 1, 1, 3, 1001), CONVJIT_OK);
  assert_int_equal(p.u.tr.load_bytes, 1);
  assert_int_equal(p.u.tr.store_bytes, 1);
  assert_int_equal(cj_kplan_transpose_init(&p, A950, 2, 3, 5, 7), CONVJIT_OK);
  assert_int_equal(p.u.tr.load_bytes, 2);
  assert_int_equal(p.u.tr.store_bytes, 2);
  assert_int_equal(p.grid[2], 3);
  /* Just below / at the BIG threshold (2^31 bytes). */
  assert_int_equal(cj_kplan_transpose_init(&p, A950, 1, 1, 1024, (1u << 21) - 1), CONVJIT_OK);
  assert_int_equal(p.u.tr.big, 0);
  assert_int_equal(cj_kplan_transpose_init(&p, A950, 1, 1, 1024, 1u << 21), CONVJIT_OK);
  assert_int_equal(p.u.tr.big, 1);
  assert_int_equal(cj_kplan_transpose_init(&p, A950, 2, 1, 1024, 1u << 20), CONVJIT_OK);
  assert_int_equal(p.u.tr.big, 1);
}

static void test_transpose_bad(void **st) {
  (void)st;
  cj_kplan p;
  EXPECT_BAD(cj_kplan_transpose_init(&p, A950, 1, 0, 8, 8), CONVJIT_ERR_INVALID_ARG, "n = 0");
  EXPECT_BAD(cj_kplan_transpose_init(&p, A950, 1, 1, 0, 8), CONVJIT_ERR_INVALID_ARG, "c = 0");
  EXPECT_BAD(cj_kplan_transpose_init(&p, A950, 1, 1, 8, 0), CONVJIT_ERR_INVALID_ARG, "s = 0");
  EXPECT_BAD(cj_kplan_transpose_init(&p, A950, 3, 1, 8, 8), CONVJIT_ERR_INVALID_ARG, "elem_bytes = 3");
  EXPECT_BAD(cj_kplan_transpose_init(&p, A950, 0, 1, 8, 8), CONVJIT_ERR_INVALID_ARG, "elem_bytes = 0");
  EXPECT_BAD(cj_kplan_transpose_init(&p, NULL, 1, 1, 8, 8), CONVJIT_ERR_INVALID_ARG, "arch");
  EXPECT_BAD(cj_kplan_transpose_init(NULL, A950, 1, 1, 8, 8), CONVJIT_ERR_INVALID_ARG, "plan");
  EXPECT_BAD(cj_kplan_transpose_init(&p, A950, 1, UINT64_C(1) << 40, UINT64_C(1) << 40, 1), CONVJIT_ERR_INVALID_ARG,
             "n*c");
  EXPECT_BAD(cj_kplan_transpose_init(&p, A950, 2, 1, UINT64_C(1) << 32, UINT64_C(1) << 32), CONVJIT_ERR_INVALID_ARG,
             "n*c*s");
  /* Valid sizes the kernel cannot launch or address: UNSUPPORTED, field named. */
  EXPECT_BAD(cj_kplan_transpose_init(&p, A950, 1, 1, 1, UINT64_C(1) << 31), CONVJIT_ERR_UNSUPPORTED, "s = 2147483648");
  EXPECT_BAD(cj_kplan_transpose_init(&p, A950, 1, 1, 64, (UINT64_C(1) << 25) + 64), CONVJIT_ERR_UNSUPPORTED,
             "s = 33554496");
  EXPECT_BAD(cj_kplan_transpose_init(&p, A950, 1, 1, 1u << 20, 1u << 20), CONVJIT_ERR_UNSUPPORTED,
             "c = 1048576, s = 1048576");
  /* many c tiles alone are fine (grid.x is linear) */
  assert_int_equal(cj_kplan_transpose_init(&p, A950, 1, 1, 65536 * 64 + 1, 1), CONVJIT_OK);
  assert_int_equal(p.grid[0], 65537);
  EXPECT_BAD(cj_kplan_transpose_init(&p, A950, 1, 65536, 1, 1), CONVJIT_ERR_UNSUPPORTED, "n = 65536");
}

static void test_transpose_key(void **st) {
  (void)st;
  cj_kplan a, b;
  char ka[512], kb[512];
  assert_int_equal(cj_kplan_transpose_init(&a, A950, 2, 2, 24, 1000), CONVJIT_OK);
  /* Garbage in the struct's padding must not matter: fill b with junk first. */
  memset(&b, 0xA5, sizeof b);
  assert_int_equal(cj_kplan_transpose_init(&b, A950, 2, 2, 24, 1000), CONVJIT_OK);
  key_of(&a, ka, sizeof ka);
  key_of(&b, kb, sizeof kb);
  assert_string_equal(ka, kb);
  assert_non_null(strstr(ka, "op=transpose;"));
  /* Each input change changes the key. */
  const struct { uint32_t eb; uint64_t n, c, s; } alt[] = {{1, 2, 24, 1000}, {2, 3, 24, 1000}, {2, 2, 25, 1000},
                                                          {2, 2, 24, 1001}};
  for (size_t i = 0; i < sizeof alt / sizeof alt[0]; i++) {
    assert_int_equal(cj_kplan_transpose_init(&b, A950, alt[i].eb, alt[i].n, alt[i].c, alt[i].s), CONVJIT_OK);
    key_of(&b, kb, sizeof kb);
    assert_string_not_equal(ka, kb);
  }
  /* Each plan field change changes the key (mutate a copy field by field). */
  for (int f = 0; f < 16; f++) {
    b = a;
    switch (f) {
    case 0: b.u.tr.big ^= 1; break;
    case 1: b.u.tr.load_bytes = 4; break;
    case 2: b.u.tr.store_bytes = 2; break;
    case 3: b.u.tr.lds_pitch += 16; break;
    case 4: b.u.tr.tile = 32; break;
    case 14: b.u.tr.c_tiles++; break;
    case 15: b.u.tr.s_tiles++; break;
    case 5: b.lds_bytes += 16; break;
    case 6: b.grid[0]++; break;
    case 7: b.grid[2]++; break;
    case 8: b.block[0] = 128; break;
    case 9: b.args[1].name = "z"; break;
    case 10: b.nargs = 1; break;
    case 11: b.name[5] ^= 1; break;
    case 12: b.op = CJ_KOP_WEIGHT_PACK; break;
    case 13: b.u.tr.elem_bytes = 1; break;
    }
    key_of(&b, kb, sizeof kb);
    if (strcmp(ka, kb) == 0) fail_msg("field %d change left the key unchanged: %s", f, ka);
  }
  /* An unknown op prints as its number. */
  b = a;
  b.op = (cj_kop)77;
  key_of(&b, kb, sizeof kb);
  assert_non_null(strstr(kb, "op=77;"));
}

static void test_transpose_cvt(void **st) {
  (void)st;
  cj_kplan p, q;
  /* bf16 -> fp8: x is 7 GB (BIG), y 3.5 GB; 16-byte loads (8 bf16) and stores (16 fp8). */
  assert_int_equal(cj_kplan_transpose_cvt_init(&p, A942, 1, 1024, 3456000), CONVJIT_OK);
  assert_int_equal(p.u.tr.elem_bytes, 2);
  assert_int_equal(p.u.tr.out_bytes, 1);
  assert_int_equal(p.u.tr.cvt, 1);
  assert_int_equal(p.u.tr.sat_max, 240); /* E4M3FNUZ max */
  assert_int_equal(p.u.tr.big, 1);
  assert_int_equal(p.u.tr.load_bytes, 16);
  assert_int_equal(p.u.tr.store_bytes, 16);
  assert_int_equal(p.lds_bytes, 8192); /* the tile holds bf16 */
  assert_int_equal(cj_kplan_transpose_cvt_init(&q, A950, 1, 1024, 3456000), CONVJIT_OK);
  assert_int_equal(q.u.tr.sat_max, 448); /* OCP E4M3FN max */
  /* y rows of 24 fp8 bytes: 8-byte stores; x rows of 2000 bytes: 16-byte loads */
  assert_int_equal(cj_kplan_transpose_cvt_init(&q, A950, 2, 24, 1000), CONVJIT_OK);
  assert_int_equal(q.u.tr.store_bytes, 8);
  assert_int_equal(q.u.tr.load_bytes, 16);
  /* BIG is decided by x (bf16): 2^30 elements = 2 GiB of x, 1 GiB of y */
  assert_int_equal(cj_kplan_transpose_cvt_init(&q, A950, 1, 1024, 1u << 20), CONVJIT_OK);
  assert_int_equal(q.u.tr.big, 1);
  /* keys differ from the plain bf16 transpose of the same shape */
  char ka[512], kb[512];
  assert_int_equal(cj_kplan_transpose_init(&q, A942, 2, 1, 1024, 3456000), CONVJIT_OK);
  key_of(&p, ka, sizeof ka);
  key_of(&q, kb, sizeof kb);
  assert_string_not_equal(ka, kb);
  assert_string_not_equal(p.name, q.name);
  EXPECT_BAD(cj_kplan_transpose_cvt_init(&p, A950, 1, 0, 8), CONVJIT_ERR_INVALID_ARG, "c = 0");
  EXPECT_BAD(cj_kplan_transpose_cvt_init(&p, NULL, 1, 8, 8), CONVJIT_ERR_INVALID_ARG, "arch");
}

/* The conv pre-pass modes: arguments, names and keys per mode, and the
 * element size each mode reads. */
static void test_prep_modes(void **st) {
  (void)st;
  cj_kplan p[3], w[3];
  char k[3][1024], kw[3][1024];
  static const uint32_t eb[3] = {1, 1, 2}; /* COPY (fp8), FN_FNUZ, QUANT */
  for (int m = 0; m < 3; m++) {
    assert_int_equal(cj_kplan_transpose_prep_init(&p[m], A942, eb[m], (cj_prep_mode)m, 2, 32, 100), CONVJIT_OK);
    assert_int_equal(cj_kplan_wpack_prep_init(&w[m], A942, eb[m], (cj_prep_mode)m, 8, 5, 27, 16, 432), CONVJIT_OK);
    key_of(&p[m], k[m], sizeof k[m]);
    key_of(&w[m], kw[m], sizeof kw[m]);
    assert_int_equal(p[m].u.tr.out_bytes, 1);
    assert_int_equal(w[m].u.wp.out_bytes, 1);
    /* QUANT takes the by-value QSCALE third; the others only (src, dst) */
    assert_int_equal(p[m].nargs, m == CJ_PREP_QUANT ? 3 : 2);
    assert_int_equal(w[m].nargs, m == CJ_PREP_QUANT ? 3 : 2);
    if (m == CJ_PREP_QUANT) {
      assert_int_equal(p[m].args[2].role, CJ_ARG_QSCALE);
      assert_int_equal(p[m].args[2].is_ptr, 0);
      assert_int_equal(p[m].args[2].size, 4);
      assert_int_equal(w[m].u.wp.sat_max, 240);
    }
    for (int j = 0; j < m; j++) {
      assert_string_not_equal(k[m], k[j]);
      assert_string_not_equal(kw[m], kw[j]);
      assert_string_not_equal(p[m].name, p[j].name);
      assert_string_not_equal(w[m].name, w[j].name);
    }
  }
  assert_int_equal(p[CJ_PREP_FN_FNUZ].u.tr.fn_map, 1);
  assert_int_equal(p[CJ_PREP_QUANT].u.tr.qscale, 1);
  EXPECT_BAD(cj_kplan_transpose_prep_init(&p[0], A942, 1, CJ_PREP_QUANT, 1, 8, 8), CONVJIT_ERR_INVALID_ARG,
             "mode quantize reads bf16");
  EXPECT_BAD(cj_kplan_wpack_prep_init(&w[0], A942, 2, CJ_PREP_FN_FNUZ, 8, 5, 27, 16, 432), CONVJIT_ERR_INVALID_ARG,
             "mode fn->fnuz reads fp8");
  EXPECT_BAD(cj_kplan_wpack_prep_init(&w[0], A942, 1, (cj_prep_mode)7, 8, 5, 27, 16, 432), CONVJIT_ERR_INVALID_ARG,
             "mode = 7");
}

static void test_print(void **st) {
  (void)st;
  cj_kplan p;
  assert_int_equal(cj_kplan_transpose_init(&p, A950, 1, 1, 1024, 3456000), CONVJIT_OK);
  cj_strbuf sb = {0};
  cj_kplan_print(&p, &sb);
  assert_non_null(sb.s);
  assert_non_null(strstr(sb.s, "plan transpose"));
  assert_non_null(strstr(sb.s, "big"));
  assert_non_null(strstr(sb.s, "rebase")); /* the BIG flag's reason */
  assert_non_null(strstr(sb.s, "lds_bytes"));
  assert_non_null(strstr(sb.s, "4096"));
  assert_non_null(strstr(sb.s, "gfx950"));
  cj_sb_free(&sb);
  cj_kplan_print(NULL, &sb);
  assert_non_null(strstr(sb.s, "null"));
  cj_sb_free(&sb);
}

static void test_wpack(void **st) {
  (void)st;
  cj_kplan p;
  /* K=64, C=3, 3x3x3 taps, C padded to 8 (bf16 vector), row 27*8 = 216 -> 224. */
  assert_int_equal(cj_kplan_wpack_init(&p, A942, 2, 64, 3, 27, 8, 224), CONVJIT_OK);
  assert_int_equal(p.op, CJ_KOP_WEIGHT_PACK);
  assert_int_equal(p.lds_bytes, 0);
  assert_int_equal(p.grid[0], 56); /* 64*224 / 256 */
  assert_int_equal(p.nargs, 2);
  assert_true(p.args[0].is_ptr && p.args[1].is_ptr);
  EXPECT_BAD(cj_kplan_wpack_init(&p, A942, 2, 0, 3, 27, 8, 224), CONVJIT_ERR_INVALID_ARG, "k = 0");
  EXPECT_BAD(cj_kplan_wpack_init(&p, A942, 2, 64, 0, 27, 8, 224), CONVJIT_ERR_INVALID_ARG, "c = 0");
  EXPECT_BAD(cj_kplan_wpack_init(&p, A942, 2, 64, 3, 0, 8, 224), CONVJIT_ERR_INVALID_ARG, "trs = 0");
  EXPECT_BAD(cj_kplan_wpack_init(&p, A942, 2, 64, 9, 27, 8, 224), CONVJIT_ERR_INVALID_ARG, "c_pad = 8");
  EXPECT_BAD(cj_kplan_wpack_init(&p, A942, 2, 64, 3, 27, 8, 215), CONVJIT_ERR_INVALID_ARG, "row_elems = 215");
  EXPECT_BAD(cj_kplan_wpack_init(&p, A942, 4, 64, 3, 27, 8, 224), CONVJIT_ERR_INVALID_ARG, "elem_bytes = 4");
  EXPECT_BAD(cj_kplan_wpack_init(&p, NULL, 2, 64, 3, 27, 8, 224), CONVJIT_ERR_INVALID_ARG, "arch");
  EXPECT_BAD(cj_kplan_wpack_init(&p, A942, 2, 65536, 65536, 1, 65536, 65536), CONVJIT_ERR_UNSUPPORTED, "k*row_elems");
  char ka[512], kb[512];
  assert_int_equal(cj_kplan_wpack_init(&p, A942, 2, 64, 3, 27, 8, 224), CONVJIT_OK);
  key_of(&p, ka, sizeof ka);
  assert_int_equal(cj_kplan_wpack_init(&p, A942, 2, 64, 3, 27, 8, 232), CONVJIT_OK);
  key_of(&p, kb, sizeof kb);
  assert_string_not_equal(ka, kb);
  assert_int_equal(cj_kplan_wpack_init(&p, A942, 2, 64, 3, 27, 16, 432), CONVJIT_OK);
  key_of(&p, kb, sizeof kb);
  assert_string_not_equal(ka, kb);
  assert_non_null(strstr(kb, "op=weight_pack;"));
}

/* Random shapes (fixed seed, sizes spread over 1 .. 2^40): every call
 * returns OK or an error status with text, never crashes; every OK plan
 * satisfies the invariants the kernel relies on. */
static uint64_t rng_next(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}
static void test_transpose_random(void **st) {
  (void)st;
  uint64_t seed = 0x1234567u;
  int ok = 0, bad = 0;
  for (int i = 0; i < 20000; i++) {
    uint64_t v[3];
    for (int j = 0; j < 3; j++) v[j] = rng_next(&seed) >> (rng_next(&seed) % 64); /* log-uniform-ish, includes 0 */
    uint32_t eb = (uint32_t)(rng_next(&seed) % 4);
    cj_kplan p;
    uint64_t n = v[0] % 100000, c = v[1], sp = v[2];
    convjit_status r = cj_kplan_transpose_init(&p, A942, eb, n, c, sp);
    /* The expected status, from the documented limits (docs/kernels.md,
     * kplan_layout.h), tile counts in 128-bit arithmetic: bad element size, a zero
     * dim or a 64-bit byte-count overflow is INVALID_ARG; a grid past
     * 2^32 work-items, N > 65535 or a 64-row tile spanning more than 2 GiB
     * of x or y is UNSUPPORTED; anything else must plan. */
    uint64_t nc = 0, ncs = 0, nb = 0;
    int ovf = __builtin_mul_overflow(n, c, &nc) || __builtin_mul_overflow(nc, sp, &ncs) ||
              __builtin_mul_overflow(ncs, (uint64_t)eb, &nb);
    unsigned __int128 tiles = (unsigned __int128)((c + 63) / 64) * ((sp + 63) / 64);
    convjit_status want = CONVJIT_OK;
    if ((eb != 1 && eb != 2) || !n || !c || !sp || ovf) want = CONVJIT_ERR_INVALID_ARG;
    else if (tiles * 256 > UINT32_MAX || n > 65535 || ((unsigned __int128)64 * sp + 64) * eb > (UINT64_C(1) << 31) ||
             ((unsigned __int128)64 * c + 64) * eb > (UINT64_C(1) << 31))
      want = CONVJIT_ERR_UNSUPPORTED;
    if (r != want)
      fail_msg("transpose eb %u n %llu c %llu s %llu: %s, want %s (%s)", eb, (unsigned long long)n,
               (unsigned long long)c, (unsigned long long)sp, convjit_status_string(r), convjit_status_string(want),
               cj_error_text());
    if (r != CONVJIT_OK) {
      assert_true(strlen(cj_error_text()) > 0);
      bad++;
      continue;
    }
    ok++;
    const cj_transpose_plan *t = &p.u.tr;
    uint64_t bytes = t->n * t->c * t->s * t->elem_bytes;
    assert_true(t->elem_bytes == 1 || t->elem_bytes == 2);
    assert_int_equal(t->big, bytes >= (UINT64_C(1) << 31));
    assert_true((uint64_t)t->c_tiles * 64 >= t->c && (uint64_t)(t->c_tiles - 1) * 64 < t->c);
    assert_true((uint64_t)t->s_tiles * 64 >= t->s && (uint64_t)(t->s_tiles - 1) * 64 < t->s);
    assert_int_equal(p.grid[0], (uint64_t)t->c_tiles * t->s_tiles);
    assert_true(p.grid[0] * p.block[0] <= UINT32_MAX);
    assert_int_equal(p.grid[2], t->n);
    assert_int_equal((t->s * t->elem_bytes) % t->load_bytes, 0);
    assert_int_equal((t->c * t->elem_bytes) % t->store_bytes, 0);
    assert_true(t->load_bytes >= t->elem_bytes && t->load_bytes <= 16);
    assert_true(t->store_bytes >= t->elem_bytes && t->store_bytes <= 16);
    assert_int_equal(p.lds_bytes, 64 * 64 * t->elem_bytes);
    /* tile-local offsets stay below the 2^31 sentinel */
    assert_true((64 * t->s + 64) * t->elem_bytes <= (UINT64_C(1) << 31));
    assert_true((64 * t->c + 64) * t->elem_bytes <= (UINT64_C(1) << 31));
    assert_true(strlen(p.name) > 0 && strlen(p.name) < sizeof p.name);
  }
  assert_true(ok > 100 && bad > 100); /* both outcomes exercised */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transpose_big_fp8), cmocka_unit_test(test_transpose_small_and_odd),
      cmocka_unit_test(test_transpose_bad),     cmocka_unit_test(test_transpose_key),
      cmocka_unit_test(test_print),             cmocka_unit_test(test_wpack),
      cmocka_unit_test(test_transpose_random),  cmocka_unit_test(test_transpose_cvt),
      cmocka_unit_test(test_prep_modes),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
