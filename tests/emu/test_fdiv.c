/* LLVM's IEEE f32 division on the emulator: v_div_scale_f32, v_div_fmas_f32
 * and v_div_fixup_f32 one by one (values worked out by hand from the ISA
 * guides' pseudocode with the readings docs/emulator.md gives), then
 * `fdiv float` compiled by the project's pipeline and run on gfx942 and
 * gfx950 over many inputs, bit-equal to the host's correctly rounded IEEE
 * division (x86 SSE, denormals kept; any NaN matches any NaN). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "support_mem.h"

#define OK(x) do { convjit_status s_ = (x); if (s_ != CONVJIT_OK) fail_msg("%s -> %d: %s", #x, s_, cj_error_text()); } while (0)

/* ---- v_div_scale_f32 ------------------------------------------------------------------ */
typedef struct scase {
  uint32_t s0, s1, s2; /* value to scale, denominator, numerator */
  uint32_t d;          /* expected vdst */
  int vcc;             /* expected post-scale flag */
  const char *why;
} scase;

static const scase scale_cases[] = {
    {0x40400000u, 0x40400000u, 0x3f800000u, 0x40400000u, 0, "1/3, denominator: unchanged"},
    {0x3f800000u, 0x40400000u, 0x3f800000u, 0x3f800000u, 0, "1/3, numerator: unchanged"},
    {0x40400000u, 0x40400000u, 0x00000000u, 0x7fc00000u, 0, "0/3: NaN"},
    {0x80000000u, 0x80000000u, 0x3f800000u, 0x7fc00000u, 0, "1/-0: NaN"},
    /* exponent(num) - exponent(den) = 254 - 126 >= 96: denominator * 2^64, vcc */
    {0x3f000000u, 0x3f000000u, 0x7f000000u, 0x5f000000u, 1, "2^127/0.5, denominator: 2^63"},
    {0x7f000000u, 0x3f000000u, 0x7f000000u, 0x7f000000u, 1, "2^127/0.5, numerator: unchanged"},
    /* den = 2^-149: the overflow test comes first (127 - 0 >= 96) */
    {0x00000001u, 0x00000001u, 0x3f800000u, 0x15000000u, 1, "1/2^-149, denominator: 2^-85"},
    /* den denormal, num = 2^-40 (87 - 0 < 96): both * 2^64, no vcc */
    {0x00000001u, 0x00000001u, 0x2b800000u, 0x15000000u, 0, "2^-40/2^-149, denominator: 2^-85"},
    {0x2b800000u, 0x00000001u, 0x2b800000u, 0x4b800000u, 0, "2^-40/2^-149, numerator: 2^24"},
    /* 1/den and num/den both denormal: denominator * 2^-64, vcc */
    {0x7f000000u, 0x7f000000u, 0x3f800000u, 0x5f000000u, 1, "1/2^127, denominator: 2^63"},
    {0x3f800000u, 0x7f000000u, 0x3f800000u, 0x3f800000u, 1, "1/2^127, numerator: unchanged"},
    /* only 1/den denormal: both * 2^-64 */
    {0x7f000000u, 0x7f000000u, 0x71800000u, 0x5f000000u, 0, "2^100/2^127, denominator: 2^63"},
    {0x71800000u, 0x7f000000u, 0x71800000u, 0x51800000u, 0, "2^100/2^127, numerator: 2^36"},
    /* only the quotient denormal (2^-130): numerator * 2^64, vcc */
    {0x03800000u, 0x44800000u, 0x03800000u, 0x23800000u, 1, "2^-120/2^10, numerator: 2^-56"},
    {0x44800000u, 0x44800000u, 0x03800000u, 0x44800000u, 1, "2^-120/2^10, denominator: unchanged"},
    /* exponent(num) = 17 <= 23, quotient 2^-90 normal: both * 2^64 */
    {0x08800000u, 0x35800000u, 0x08800000u, 0x28800000u, 0, "2^-110/2^-20, numerator: 2^-46"},
    {0x35800000u, 0x35800000u, 0x08800000u, 0x55800000u, 0, "2^-110/2^-20, denominator: 2^44"},
};
enum { NSCALE = sizeof scale_cases / sizeof scale_cases[0] };

static void t_div_scale(void **st) {
  (void)st;
  char body[16384];
  int k = 0;
  /* case i: v1..v3 = s0, s1, s2; result in v(10+i), mask in s[20+2i:21+2i] */
  for (int i = 0; i < NSCALE; i++)
    k += snprintf(body + k, sizeof body - (size_t)k,
                  "  v_mov_b32 v1, 0x%x\n  v_mov_b32 v2, 0x%x\n  v_mov_b32 v3, 0x%x\n"
                  "  v_div_scale_f32 v%d, s[%d:%d], v1, v2, v3\n",
                  scale_cases[i].s0, scale_cases[i].s1, scale_cases[i].s2, 10 + i, 20 + 2 * i, 21 + 2 * i);
  /* neg modifiers on S0 and S1 of 1/3 (denominator -3): -3 unchanged; vcc destination */
  k += snprintf(body + k, sizeof body - (size_t)k,
                "  v_mov_b32 v2, 0x40400000\n  v_mov_b32 v3, 0x3f800000\n"
                "  v_div_scale_f32 v40, vcc, -v2, -v2, v3\n"
                /* only lanes 0..7 in EXEC: the mask of 2^127/0.5 has those bits only */
                "  v_mov_b32 v41, 7\n  s_mov_b64 s[60:61], exec\n  s_mov_b64 exec, 0xff\n"
                "  v_mov_b32 v2, 0x3f000000\n  v_mov_b32 v3, 0x7f000000\n"
                "  v_div_scale_f32 v41, s[62:63], v2, v2, v3\n  s_mov_b64 exec, s[60:61]\n");
  tb_run r;
  OK(tb_asm_run(&r, "gfx942", body, 1, 64, NULL, 0, 0, 0));
  emu_wave *w = r.wave;
  for (int i = 0; i < NSCALE; i++) {
    uint64_t m = (uint64_t)w->s[20 + 2 * i] | (uint64_t)w->s[21 + 2 * i] << 32;
    for (int l = 0; l < 64; l++)
      if (w->v[10 + i][l] != scale_cases[i].d)
        fail_msg("%s: lane %d got 0x%08x want 0x%08x", scale_cases[i].why, l, w->v[10 + i][l], scale_cases[i].d);
    if (m != (scale_cases[i].vcc ? ~0ull : 0ull)) fail_msg("%s: mask 0x%016llx", scale_cases[i].why, (unsigned long long)m);
  }
  assert_int_equal(w->v[40][0], 0xc0400000u);
  assert_true(w->vcc == 0);
  uint64_t m = (uint64_t)w->s[62] | (uint64_t)w->s[63] << 32;
  assert_true(m == 0xffull);
  assert_int_equal(w->v[41][7], 0x5f000000u);
  assert_int_equal(w->v[41][8], 7u); /* outside EXEC: not written */
  tb_run_free(&r);
}

/* ---- v_div_fmas_f32 / v_div_fixup_f32 -------------------------------------------------- */
static void t_div_fmas_fixup(void **st) {
  (void)st;
  tb_run r;
  OK(tb_asm_run(&r, "gfx942",
                /* vcc clear: plain fma(2, 3, 1) = 7 */
                "  s_mov_b64 vcc, 0\n"
                "  v_mov_b32 v1, 2.0\n  v_mov_b32 v2, 0x40400000\n  v_mov_b32 v3, 1.0\n"
                "  s_nop 4\n  v_div_fmas_f32 v10, v1, v2, v3\n"
                /* vcc set, exponent(S2 = 4.0) > 127: fma(1, 1, 4) * 2^64 */
                "  s_mov_b64 vcc, -1\n  v_mov_b32 v1, 1.0\n  v_mov_b32 v2, 1.0\n  v_mov_b32 v3, 4.0\n"
                "  s_nop 4\n  v_div_fmas_f32 v11, v1, v2, v3\n"
                /* vcc set, exponent(S2 = 1.0) = 127: fma(0, 0, 1) * 2^-64 */
                "  v_mov_b32 v1, 0\n  v_mov_b32 v3, 1.0\n  v_div_fmas_f32 v12, v1, v1, v3\n"
                /* one rounding: 2^-48 * 2^-48 + (2^-70 + 2^-86), scaled by 2^-64, is
                 * 2^-134 + 2^-150 + 2^-160 = 0x8000.8004 denormal quanta -> 0x8001;
                 * rounding the fma to f32 first would drop 2^-96 and tie to 0x8000 */
                "  v_mov_b32 v1, 0x27800000\n  v_mov_b32 v3, 0x1c800080\n  v_div_fmas_f32 v13, v1, v1, v3\n"
                /* same, vcc clear for lanes 32..63: the unscaled f32 fma 0x1c800080 */
                "  s_mov_b32 vcc_hi, 0\n  s_nop 4\n  v_div_fmas_f32 v14, v1, v1, v3\n"
                /* neg on S0: fma(-2, 3, 1) = -5, vcc clear */
                "  s_mov_b64 vcc, 0\n  v_mov_b32 v1, 2.0\n  v_mov_b32 v2, 0x40400000\n  v_mov_b32 v3, 1.0\n"
                "  s_nop 4\n  v_div_fmas_f32 v15, -v1, v2, v3\n"
                /* fixup(quotient, denominator, numerator) */
                "  v_mov_b32 v1, 0.5\n  v_mov_b32 v2, 2.0\n  v_mov_b32 v3, 1.0\n"
                "  v_div_fixup_f32 v20, v1, v2, v3\n"            /* 0.5 */
                "  v_div_fixup_f32 v21, v1, -v2, v3\n"           /* -0.5: sign from den ^ num */
                "  v_div_fixup_f32 v22, -v1, v2, v3\n"           /* +0.5: |S0| */
                "  v_mov_b32 v4, 0x7f800001\n"                   /* signalling NaN */
                "  v_div_fixup_f32 v23, v1, v2, v4\n"            /* num NaN -> quieted 0x7fc00001 */
                "  v_div_fixup_f32 v24, v1, v4, v3\n"            /* den NaN -> quieted */
                "  v_mov_b32 v5, 0\n  v_mov_b32 v6, 0x7f800000\n"
                "  v_div_fixup_f32 v25, v1, v5, v5\n"            /* 0/0 -> 0xffc00000 */
                "  v_div_fixup_f32 v26, v1, v6, -v6\n"           /* -inf/inf -> 0xffc00000 */
                "  v_div_fixup_f32 v27, v1, -v5, v3\n"           /* 1/-0 -> -inf */
                "  v_div_fixup_f32 v28, v1, v2, v6\n"            /* inf/2 -> +inf */
                "  v_div_fixup_f32 v29, v1, -v6, v3\n"           /* 1/-inf -> -0 */
                "  v_div_fixup_f32 v30, v1, v2, -v5\n"           /* -0/2 -> -0 */
                "  v_mov_b32 v7, 0x00800000\n  v_mov_b32 v8, 0x53800000\n"
                "  v_div_fixup_f32 v31, v1, v8, v7\n",           /* 2^-126/2^40: exponents 1 - 167 < -150 -> +0 */
                1, 64, NULL, 0, 0, 0));
  /* register -> expected value in every lane (v14: lanes 0..31 only, see above) */
  static const struct { int reg; uint32_t want; } want[] = {
      {10, 0x40e00000u}, {11, 0x60a00000u /* 5 * 2^64 */}, {12, 0x1f800000u /* 2^-64 */}, {13, 0x00008001u},
      {14, 0x00008001u}, {15, 0xc0a00000u}, {20, 0x3f000000u}, {21, 0xbf000000u}, {22, 0x3f000000u},
      {23, 0x7fc00001u}, {24, 0x7fc00001u}, {25, 0xffc00000u}, {26, 0xffc00000u}, {27, 0xff800000u},
      {28, 0x7f800000u}, {29, 0x80000000u}, {30, 0x80000000u}, {31, 0x00000000u}};
  emu_wave *w = r.wave;
  for (int l = 0; l < 64; l++) {
    for (size_t c = 0; c < sizeof want / sizeof want[0]; c++) {
      uint32_t x = want[c].reg == 14 && l >= 32 ? 0x1c800080u : want[c].want;
      if (w->v[want[c].reg][l] != x) fail_msg("v%d lane %d: got 0x%08x want 0x%08x", want[c].reg, l, w->v[want[c].reg][l], x);
    }
  }
  tb_run_free(&r);
}

/* ---- end to end: fdiv float ------------------------------------------------------------ */
static const char *fdiv_ir =
    "target triple = \"amdgcn-amd-amdhsa\"\n"
    "declare i32 @llvm.amdgcn.workitem.id.x()\n"
    "declare i32 @llvm.amdgcn.workgroup.id.x()\n"
    "define amdgpu_kernel void @k(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %q) {\n"
    "  %t = call i32 @llvm.amdgcn.workitem.id.x()\n"
    "  %g = call i32 @llvm.amdgcn.workgroup.id.x()\n"
    "  %g8 = shl i32 %g, 8\n  %i = add i32 %g8, %t\n"
    "  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i\n"
    "  %pb = getelementptr float, ptr addrspace(1) %b, i32 %i\n"
    "  %x = load float, ptr addrspace(1) %pa\n  %y = load float, ptr addrspace(1) %pb\n"
    "  %d = fdiv float %x, %y\n"
    "  %pq = getelementptr float, ptr addrspace(1) %q, i32 %i\n  store float %d, ptr addrspace(1) %pq\n"
    "  ret void\n}\n";

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}
/* sign, biased exponent e (0..255) and a random mantissa */
static uint32_t with_exp(int e) { return (rnd() & 0x807fffffu) | ((uint32_t)e & 0xffu) << 23; }

enum { NPOW = 149 + 128 };               /* 2^-149 .. 2^127 */
enum { NSPEC = 20 };
static const uint32_t specials[NSPEC] = {
    0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0x3f800000u, 0xbf800000u,
    0x00000001u, 0x807fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu, 0x40400000u, 0x3eaaaaabu, 0x00400000u,
    0x7f000000u, 0x0ffffff0u, 0x5f800000u, 0x20000000u};
static uint32_t pow2(int i) { /* i = 0..NPOW-1 -> 2^(i-149) */
  int k = i - 149;
  return k >= -126 ? (uint32_t)(k + 127) << 23 : 1u << (k + 149);
}

/* Inputs: every pair of powers of two, every pair of specials, random bit
 * patterns, random values with uniformly drawn exponents (denormals and
 * inf/NaN far more often than raw bits), and random pairs whose exponent
 * difference puts the quotient near overflow (120..135) or at/below the
 * denormal range (-160..-118). */
static size_t make_inputs(uint32_t *a, uint32_t *b, size_t cap) {
  size_t n = 0;
  for (int i = 0; i < NPOW; i++)
    for (int j = 0; j < NPOW; j++) { a[n] = pow2(i); b[n] = pow2(j); n++; }
  for (int i = 0; i < NSPEC; i++)
    for (int j = 0; j < NSPEC; j++) { a[n] = specials[i]; b[n] = specials[j]; n++; }
  size_t third = n + (cap - n) / 4;
  for (; n < third; n++) { a[n] = rnd() ^ rnd() << 16; b[n] = rnd() ^ rnd() << 16; }
  third = n + (cap - n) / 3;
  for (; n < third; n++) { a[n] = with_exp((int)(rnd() % 256)); b[n] = with_exp((int)(rnd() % 256)); }
  for (; n < cap; n++) {
    int hi = rnd() & 1, diff = hi ? 120 + (int)(rnd() % 16) : -160 + (int)(rnd() % 43);
    int eb = hi ? 1 + (int)(rnd() % (254 - diff)) : -diff + 1 + (int)(rnd() % (254 + diff));
    if (eb < 0) eb = 0;
    int ea = eb + diff;
    if (ea < 0) ea = 0;
    if (ea > 254) ea = 254;
    a[n] = with_exp(ea); b[n] = with_exp(eb);
  }
  return n;
}

static uint32_t host_div(uint32_t x, uint32_t y) {
  float fx, fy;
  memcpy(&fx, &x, 4); memcpy(&fy, &y, 4);
  volatile float q = fx / fy; /* SSE divss: IEEE, round to nearest even, denormals kept */
  float r = q;
  uint32_t u;
  memcpy(&u, &r, 4);
  return u;
}
static int is_nan(uint32_t u) { return (u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu); }

enum { NIN = 1 << 20 }; /* per arch: 1048576 pairs, NPOW^2 + NSPEC^2 of them fixed */

static void run_fdiv(const char *arch, const uint32_t *a, const uint32_t *b, uint32_t *q) {
  tmem t;
  OK(tmem_open(&t, arch, fdiv_ir));
  uint64_t args[3] = {tmem_buf(&t, a, 4u * NIN), tmem_buf(&t, b, 4u * NIN), tmem_buf(&t, NULL, 4u * NIN)};
  OK(tmem_run(&t, NIN / 256, 256, args, sizeof args));
  OK(emu_mem_d2h(t.mem, q, args[2], 4u * NIN));
  size_t bad = 0, nan = 0, den = 0;
  for (size_t i = 0; i < NIN; i++) {
    uint32_t want = host_div(a[i], b[i]);
    if (is_nan(want)) nan++;
    if ((want & 0x7f800000u) == 0 && (want & 0x7fffffu)) den++;
    if (want == q[i] || (is_nan(want) && is_nan(q[i]))) continue;
    if (bad++ < 10) fprintf(stderr, "%s: 0x%08x / 0x%08x: got 0x%08x want 0x%08x\n", arch, a[i], b[i], q[i], want);
  }
  printf("%s: fdiv float on %d input pairs (%zu NaN, %zu denormal quotients): %zu differ\n", arch, NIN, nan, den, bad);
  if (bad) fail_msg("%s: %zu of %d quotients differ from IEEE division", arch, bad, NIN);
  tmem_close(&t);
}

static void t_fdiv_end_to_end(void **st) {
  (void)st;
  uint32_t *a = malloc(4u * NIN), *b = malloc(4u * NIN), *q = malloc(4u * NIN);
  assert_non_null(a); assert_non_null(b); assert_non_null(q);
  assert_true(make_inputs(a, b, NIN) == NIN);
  run_fdiv("gfx942", a, b, q);
  run_fdiv("gfx950", a, b, q);
  free(a); free(b); free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(t_div_scale),
      cmocka_unit_test(t_div_fmas_fixup),
      cmocka_unit_test(t_fdiv_end_to_end),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
