/* The MFMA opcodes beyond convjit's own four, end to end from assembled
 * kernels (llvm-mc-22; tests/emu/support.h), on each arch they exist on.
 *
 * One wave loads per-lane A, B and C register images from a buffer
 * (register-major: register r of lane l at region + 256 r + 4 l), runs one
 * MFMA, pads its result latency with s_nop, and stores D. The images are
 * packed from logical matrices by support_mfma.c (docs/isa-notes.md §1, inverse
 * form, independent of src/emu/mfma.c) and D is compared with a naive
 * double matmul. Variants: VGPR or AGPR accumulator/destination (a[0:15]
 * in place), an inline-constant 0 accumulator, a 32x32 f8f6f4 under
 * EXEC = 0xff (all 64 lanes still written), every cbsz/blgp fp8/bf8 pair.
 * fp8 / bf8 are the arch's formats (docs/isa-notes.md §2): E4M3FNUZ / E5M2FNUZ
 * on gfx942, OCP E4M3FN / E5M2 on gfx950.
 * Stats: one MFMA, M*M*K multiply-adds, and the MFMA's issue cycles (the
 * wave's emulated cycles minus the other classes' documented weights,
 * docs/emulator.md "Statistics and emulated time"): 16 per 16x16 shape,
 * twice that for a 32x32 (same MAC rate), f8f6f4 32 / 64.
 * Hazards: a 16-register destination or accumulator, or an 8-register
 * source, whose last register has a load still in flight (no s_waitcnt) is
 * caught there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "support.h"
#include "support_mfma.h"

enum { OFF_A = 0, OFF_B = 2048, OFF_C = 4096, OFF_D = 8192, BUF_BYTES = 12288 };
enum { F_FP8 = 0, F_BF8 = 1 };          /* plain 8-bit operand: the arch's fp8 or bf8 */
enum { V_PLAIN, V_AGPR, V_CZERO, V_EXEC }; /* variants */

typedef struct acase {
  const char *mn;
  int kind;   /* support_mfma.h KIND_* */
  int fa, fb; /* F_FP8/F_BF8 for plain 8-bit kinds; cbsz/blgp for f8f6f4 */
  int both;   /* 1: gfx942 and gfx950; 0: gfx950 only */
  int variant;
  unsigned cycles; /* expected MFMA issue cycles */
} acase;

static const acase cases[] = {
  {"v_mfma_f32_16x16x16_f16", KIND_F16_K16, 0, 0, 1, V_PLAIN, 16},
  {"v_mfma_f32_16x16x16_f16", KIND_F16_K16, 0, 0, 1, V_AGPR, 16},
  {"v_mfma_f32_32x32x8_f16", KIND_F16_32K8, 0, 0, 1, V_PLAIN, 32},
  {"v_mfma_f32_32x32x8_bf16", KIND_BF16_32K8, 0, 0, 1, V_AGPR, 32},
  {"v_mfma_f32_32x32x8_bf16", KIND_BF16_32K8, 0, 0, 1, V_CZERO, 32},
  {"v_mfma_f32_16x16x32_fp8_bf8", KIND_FP8_K32, F_FP8, F_BF8, 1, V_PLAIN, 16},
  {"v_mfma_f32_16x16x32_bf8_fp8", KIND_FP8_K32, F_BF8, F_FP8, 1, V_PLAIN, 16},
  {"v_mfma_f32_16x16x32_bf8_bf8", KIND_FP8_K32, F_BF8, F_BF8, 1, V_AGPR, 16},
  {"v_mfma_f32_32x32x16_fp8_fp8", KIND_FP8_32K16, F_FP8, F_FP8, 1, V_PLAIN, 32},
  {"v_mfma_f32_32x32x16_fp8_fp8", KIND_FP8_32K16, F_FP8, F_FP8, 1, V_AGPR, 32},
  {"v_mfma_f32_32x32x16_fp8_bf8", KIND_FP8_32K16, F_FP8, F_BF8, 1, V_PLAIN, 32},
  {"v_mfma_f32_32x32x16_bf8_fp8", KIND_FP8_32K16, F_BF8, F_FP8, 1, V_PLAIN, 32},
  {"v_mfma_f32_32x32x16_bf8_bf8", KIND_FP8_32K16, F_BF8, F_BF8, 1, V_CZERO, 32},
  /* gfx950 only */
  {"v_mfma_f32_16x16x32_f16", KIND_F16_K32, 0, 0, 0, V_PLAIN, 16},
  {"v_mfma_f32_16x16x32_f16", KIND_F16_K32, 0, 0, 0, V_AGPR, 16},
  {"v_mfma_f32_32x32x16_f16", KIND_F16_32K16, 0, 0, 0, V_PLAIN, 32},
  {"v_mfma_f32_32x32x16_bf16", KIND_BF16_32K16, 0, 0, 0, V_PLAIN, 32},
  {"v_mfma_f32_32x32x16_bf16", KIND_BF16_32K16, 0, 0, 0, V_AGPR, 32},
  {"v_mfma_f32_32x32x64_f8f6f4", KIND_F8_32K64, 0, 0, 0, V_PLAIN, 64},
  {"v_mfma_f32_32x32x64_f8f6f4", KIND_F8_32K64, 1, 0, 0, V_AGPR, 64},
  {"v_mfma_f32_32x32x64_f8f6f4", KIND_F8_32K64, 0, 1, 0, V_EXEC, 64},
  {"v_mfma_f32_32x32x64_f8f6f4", KIND_F8_32K64, 1, 1, 0, V_CZERO, 64},
};

/* The operand's numfmt format on this arch. */
static cj_nf_fp8 fmt(const acase *c, int sel, int is942) {
  if (tmf_kinds[c->kind].f8f6f4) return sel ? CJ_NF_E5M2 : CJ_NF_E4M3FN;
  if (sel == F_BF8) return is942 ? CJ_NF_E5M2FNUZ : CJ_NF_E5M2;
  return is942 ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
}

static void cat(char *buf, size_t n, const char *fmt_, ...) {
  size_t len = strlen(buf);
  va_list ap;
  va_start(ap, fmt_);
  vsnprintf(buf + len, n - len, fmt_, ap);
  va_end(ap);
}

/* Kernel text: s[4:5] = buffer; v1 = 4*lane (A, B), v2 = v1 + OFF_C, v3 =
 * v1 + OFF_D; A in v[32:39], B in v[40:47], C in v[48:63] (or a[0:15]),
 * D in v[64:79] (or a[0:15]). `skip_wait` leaves out the s_waitcnt after
 * the loads (hazard tests); `late` is one more load issued just before the
 * MFMA (register text, e.g. "v79"), also not waited for. */
static void kernel_text(char *t, size_t n, const acase *c, int skip_wait, const char *late) {
  const tmf_kind *kd = &tmf_kinds[c->kind];
  int nr = kd->nregs, nd = tmf_dregs(c->kind), agpr = c->variant == V_AGPR;
  t[0] = 0;
  cat(t, n, "  s_load_dwordx2 s[4:5], s[0:1], 0x0\n  s_waitcnt lgkmcnt(0)\n  v_lshlrev_b32 v1, 2, v0\n");
  cat(t, n, "  v_add_u32 v2, %d, v1\n  v_add_u32 v3, %d, v1\n", OFF_C, OFF_D);
  for (int r = 0; r < nr; r++) cat(t, n, "  global_load_dword v%d, v1, s[4:5] offset:%d\n", 32 + r, OFF_A + 256 * r);
  for (int r = 0; r < nr; r++) cat(t, n, "  global_load_dword v%d, v1, s[4:5] offset:%d\n", 40 + r, OFF_B + 256 * r);
  for (int r = 0; r < nd; r++) cat(t, n, "  global_load_dword v%d, v2, s[4:5] offset:%d\n", 48 + r, 256 * r);
  if (!skip_wait) cat(t, n, "  s_waitcnt vmcnt(0)\n");
  if (agpr)
    for (int r = 0; r < nd; r++) cat(t, n, "  v_accvgpr_write_b32 a%d, v%d\n", r, 48 + r);
  if (late) cat(t, n, "  global_load_dword %s, v1, s[4:5]\n", late);
  cat(t, n, "  s_nop 7\n");
  if (c->variant == V_EXEC) cat(t, n, "  s_mov_b64 exec, 0xff\n");
  char dst[32], acc[32];
  snprintf(dst, sizeof dst, agpr ? "a[0:%d]" : "v[64:%d]", agpr ? nd - 1 : 64 + nd - 1);
  if (c->variant == V_CZERO) snprintf(acc, sizeof acc, "0");
  else snprintf(acc, sizeof acc, agpr ? "a[0:%d]" : "v[48:%d]", agpr ? nd - 1 : 48 + nd - 1);
  cat(t, n, "  %s %s, v[32:%d], v[40:%d], %s", c->mn, dst, 32 + nr - 1, 40 + nr - 1, acc);
  if (kd->f8f6f4 && (c->fa || c->fb)) cat(t, n, " cbsz:%d blgp:%d", c->fa, c->fb);
  cat(t, n, "\n");
  if (c->variant == V_EXEC) cat(t, n, "  s_mov_b64 exec, -1\n");
  /* result latency: up to 16 passes (18 wait states) for a 32x32 on
   * gfx942 (LLVM's GCNHazardRecognizer); 4 x s_nop 7 = 32 */
  cat(t, n, "  s_nop 7\n  s_nop 7\n  s_nop 7\n  s_nop 7\n");
  if (agpr)
    for (int r = 0; r < nd; r++) cat(t, n, "  v_accvgpr_read_b32 v%d, a%d\n", 64 + r, r);
  for (int r = 0; r < nd; r++) cat(t, n, "  global_store_dword v3, v%d, s[4:5] offset:%d\n", 64 + r, 256 * r);
  cat(t, n, "  s_waitcnt vmcnt(0)\n");
}

typedef struct krun {
  tb_run r;
  uint64_t buf;
} krun;

/* Assembles, loads, copies img (BUF_BYTES) in, launches one wave; the
 * status of the launch. */
static convjit_status launch(krun *k, const char *arch, const char *text, const uint8_t *img) {
  memset(k, 0, sizeof *k);
  cj_blob co = {0};
  if (tb_asm_build(arch, text, 8, 0, &co) != CONVJIT_OK) fail_msg("%s: assembling: %s\n%s", arch, cj_error_text(), text);
  if (tb_load(&k->r, arch, &co, "k") != CONVJIT_OK) fail_msg("%s: loading: %s", arch, cj_error_text());
  cj_blob_free(&co);
  emu_mem *m = emu_ctx_mem(k->r.ctx);
  assert_int_equal(emu_mem_alloc(m, BUF_BYTES, &k->buf), CONVJIT_OK);
  assert_int_equal(emu_mem_h2d(m, k->buf, img, BUF_BYTES), CONVJIT_OK);
  emu_launch_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.hazard = 1;
  const uint32_t grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  return emu_launch(k->r.k, grid, block, &k->buf, 8, &o, &k->r.stats);
}

static uint16_t A[32][128], Bj[32][128];
static float C[32][32], D[32][32];

/* Random operands and C for case c; the buffer image. */
static void make_inputs(const acase *c, int is942, unsigned *seed, uint8_t *img) {
  const tmf_kind *kd = &tmf_kinds[c->kind];
  cj_nf_fp8 fa = fmt(c, c->fa, is942), fb = fmt(c, c->fb, is942);
  for (int r = 0; r < kd->M; r++)
    for (int k = 0; k < kd->K; k++) A[r][k] = tmf_rand_code(c->kind, fa, seed), Bj[r][k] = tmf_rand_code(c->kind, fb, seed);
  for (int i = 0; i < kd->M; i++)
    for (int j = 0; j < kd->M; j++) C[i][j] = c->variant == V_CZERO ? 0.0f : (float)(rand_r(seed) % 2001 - 1000) / 64.0f;
  emu_lanereg ra[8], rb[8], rc[16];
  tmf_pack(c->kind, A, ra);
  tmf_pack(c->kind, Bj, rb);
  tmf_pack_c(kd->M, C, rc);
  memset(img, 0, BUF_BYTES);
  memcpy(img + OFF_A, ra, (size_t)kd->nregs * sizeof(emu_lanereg));
  memcpy(img + OFF_B, rb, (size_t)kd->nregs * sizeof(emu_lanereg));
  memcpy(img + OFF_C, rc, (size_t)tmf_dregs(c->kind) * sizeof(emu_lanereg));
  memset(img + OFF_D, 0xFF, (size_t)16 * sizeof(emu_lanereg));
}

/* Issue weights of docs/emulator.md: SALU, branch, SMEM, waitcnt, barrier
 * 1; VALU, VMEM, LDS 4; MFMA only its own cycles. */
static uint64_t non_mfma_cycles(const emu_stats *s) {
  static const unsigned w[EMU_CLASS_COUNT] = {[EMU_CLASS_SALU] = 1, [EMU_CLASS_BRANCH] = 1, [EMU_CLASS_SMEM] = 1,
                                              [EMU_CLASS_VALU] = 4, [EMU_CLASS_VMEM] = 4,   [EMU_CLASS_LDS] = 4,
                                              [EMU_CLASS_WAITCNT] = 1, [EMU_CLASS_BARRIER] = 1};
  uint64_t cyc = 0;
  for (int c = 0; c < EMU_CLASS_COUNT; c++) cyc += s->count[c] * w[c];
  return cyc;
}

static void run_arch(const char *arch) {
  int is942 = !strcmp(arch, "gfx942");
  unsigned seed = is942 ? 942 : 950;
  static uint8_t img[BUF_BYTES];
  static char text[16384];
  int ran = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const acase *c = &cases[ci];
    if (is942 && !c->both) continue;
    const tmf_kind *kd = &tmf_kinds[c->kind];
    make_inputs(c, is942, &seed, img);
    kernel_text(text, sizeof text, c, 0, NULL);
    krun k;
    if (launch(&k, arch, text, img) != CONVJIT_OK) fail_msg("%s %s: %s", arch, c->mn, cj_error_text());
    assert_int_equal(emu_mem_d2h(emu_ctx_mem(k.r.ctx), img, k.buf, BUF_BYTES), CONVJIT_OK);
    emu_lanereg rd[16];
    memcpy(rd, img + OFF_D, sizeof rd);
    tmf_unpack_d(kd->M, rd, D);
    char msg[256];
    if (tmf_check_naive(c->kind, A, Bj, C, D, fmt(c, c->fa, is942), fmt(c, c->fb, is942), 1, msg, sizeof msg))
      fail_msg("%s %s (variant %d): %s", arch, c->mn, c->variant, msg);
    const emu_stats *st = &k.r.stats;
    assert_int_equal(st->count[EMU_CLASS_MFMA], 1);
    assert_int_equal(st->mfma_macs, (uint64_t)kd->M * kd->M * kd->K);
    if (st->max_wave_cycles - non_mfma_cycles(st) != c->cycles)
      fail_msg("%s %s: MFMA cycles %llu, want %u", arch, c->mn,
               (unsigned long long)(st->max_wave_cycles - non_mfma_cycles(st)), c->cycles);
    tb_run_free(&k.r);
    ran++;
  }
  printf("%s: %d MFMA kernels checked\n", arch, ran);
}

static void test_asm_gfx942(void **s) {
  (void)s;
  run_arch("gfx942");
}

static void test_asm_gfx950(void **s) {
  (void)s;
  run_arch("gfx950");
}

/* The launch must stop with the hazard checker's error naming `want`. */
static void expect_hazard(const char *arch, const acase *c, int skip_wait, const char *late, const char *want) {
  static uint8_t img[BUF_BYTES];
  static char text[16384];
  unsigned seed = 1;
  make_inputs(c, !strcmp(arch, "gfx942"), &seed, img);
  kernel_text(text, sizeof text, c, skip_wait, late);
  krun k;
  convjit_status st = launch(&k, arch, text, img);
  if (st != CONVJIT_ERR_EMULATION) fail_msg("%s %s: status %d, want a hazard error", arch, c->mn, st);
  if (!strstr(cj_error_text(), want)) fail_msg("%s %s: error lacks \"%s\": %s", arch, c->mn, want, cj_error_text());
  if (!strstr(cj_error_text(), c->mn)) fail_msg("error does not name the MFMA: %s", cj_error_text());
  tb_run_free(&k.r);
}

/* Whole tuples in the hazard checker: one load, not waited for, issued
 * just before the MFMA into the last register of its 16-register
 * destination (v79 of v[64:79]: overwritten while in flight) or
 * accumulator (v63 of v[48:63]: read before it lands), or of an 8-register
 * f8f6f4 source (v39 of v[32:39]). */
static void test_hazard_whole_tuples(void **s) {
  (void)s;
  const acase *c = &cases[2], *f = &cases[18];
  assert_true(!strcmp(c->mn, "v_mfma_f32_32x32x8_f16") && c->variant == V_PLAIN);
  assert_true(!strcmp(f->mn, "v_mfma_f32_32x32x64_f8f6f4") && f->variant == V_PLAIN);
  expect_hazard("gfx942", c, 0, "v79", "overwrites v79 before the s_waitcnt vmcnt");
  expect_hazard("gfx950", c, 0, "v63", "reads v63 before the s_waitcnt vmcnt");
  expect_hazard("gfx950", f, 0, "v39", "reads v39 before the s_waitcnt vmcnt");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_asm_gfx942),
    cmocka_unit_test(test_asm_gfx950),
    cmocka_unit_test(test_hazard_whole_tuples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
