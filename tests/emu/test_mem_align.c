/* Misaligned accesses on the emulator (docs/emulator.md, "Misaligned
 * accesses"): atomics and LDS DMA destinations must be aligned in every
 * alignment mode; in DWORD mode (the ISA guides' rule, CONVJIT_EMU_ALIGN=
 * dword) loads and stores must also be multiples of min(size, 4); in
 * UNALIGNED mode (the HSA ABI's and ROCm's) they work at any address. A
 * violation stops the launch naming the instruction, the lane, the address
 * and the alignment required. Kernels are exact instructions (llvm-mc); the
 * buffer holds byte i = i & 0xff, so expected values are worked by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

#define BUF_BYTES 65536u

/* s[4:5] = the buffer, s[8:11] = its V# (stride 0, NUM_RECORDS 64 KiB),
 * v3 = lane * 16, v[6:7] = buffer + v3, m0 = 0, s12 = 0. */
static const char *const PROLOGUE =
    "  s_load_dwordx2 s[4:5], s[0:1], 0x0\n  s_waitcnt lgkmcnt(0)\n"
    "  s_mov_b32 s8, s4\n  s_and_b32 s9, s5, 0xffff\n  s_mov_b32 s10, 0x10000\n  s_mov_b32 s11, 0\n"
    "  s_mov_b32 m0, 0\n  s_mov_b32 s12, 0\n"
    "  v_lshlrev_b32 v3, 4, v0\n  v_mov_b32 v7, s5\n  v_add_co_u32 v6, vcc, s4, v3\n"
    "  v_addc_co_u32 v7, vcc, 0, v7, vcc\n";

typedef struct arun {
  tb_run r;
  uint64_t buf;
} arun;

/* Builds PROLOGUE + body, launches one workgroup of 64 threads in `mode`
 * (EMU_ALIGN_MODE_*), keeps wave 0's final registers in a->r.wave. */
static convjit_status go(arun *a, const char *arch, int mode, const char *body) {
  memset(a, 0, sizeof *a);
  char text[4096];
  snprintf(text, sizeof text, "%s%s  s_waitcnt vmcnt(0) lgkmcnt(0)\n", PROLOGUE, body);
  cj_blob co = {0};
  convjit_status st = tb_asm_build(arch, text, 8, 4096, &co);
  if (st != CONVJIT_OK) fail_msg("assembling: %s", cj_error_text());
  st = tb_load(&a->r, arch, &co, "k");
  cj_blob_free(&co);
  if (st != CONVJIT_OK) fail_msg("loading: %s", cj_error_text());
  emu_ctx_set_align_mode(a->r.ctx, mode);
  emu_mem *m = emu_ctx_mem(a->r.ctx);
  if (emu_mem_alloc(m, BUF_BYTES, &a->buf) != CONVJIT_OK) fail_msg("alloc: %s", cj_error_text());
  static uint8_t pat[BUF_BYTES];
  for (uint32_t i = 0; i < BUF_BYTES; i++) pat[i] = (uint8_t)i;
  if (emu_mem_h2d(m, a->buf, pat, BUF_BYTES) != CONVJIT_OK) fail_msg("copy: %s", cj_error_text());
  a->r.wave = calloc(1, sizeof(emu_wave));
  assert_non_null(a->r.wave);
  emu_launch_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.hazard = -1;
  o.final_state = a->r.wave;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  return emu_launch(a->r.k, grid, block, &a->buf, 8, &o, &a->r.stats);
}

/* The launch must stop with a memory violation naming all of these; the
 * address is buffer + off, or (LDS) off itself. */
enum { GLOBAL = 0, LDS = 1 };
static void expect_violation(arun *a, convjit_status st, const char *insn, const char *what, int space, uint64_t off,
                             unsigned lane, unsigned need) {
  if (st != CONVJIT_ERR_EMULATION) fail_msg("%s: status %d, want a memory violation (%s)", insn, st, cj_error_text());
  const char *e = cj_error_text();
  char want[5][96];
  snprintf(want[0], sizeof want[0], "memory violation: misaligned %s", what);
  snprintf(want[1], sizeof want[1], "at 0x%llx ", (unsigned long long)(space == LDS ? off : a->buf + off));
  snprintf(want[2], sizeof want[2], "(lane %u)", lane);
  snprintf(want[3], sizeof want[3], "not a multiple of %u bytes", need);
  snprintf(want[4], sizeof want[4], "'%s", insn);
  for (int i = 0; i < 5; i++)
    if (!strstr(e, want[i])) fail_msg("error text lacks \"%s\": %s", want[i], e);
  tb_run_free(&a->r);
}

static void expect_ok(arun *a, convjit_status st, const char *what) {
  if (st != CONVJIT_OK) fail_msg("%s: %s", what, cj_error_text());
}

/* Little-endian dword of the pattern at byte b: bytes b..b+3 = b & 0xff, ... */
static uint32_t pat32(uint32_t b) {
  return (uint32_t)(uint8_t)b | (uint32_t)(uint8_t)(b + 1) << 8 | (uint32_t)(uint8_t)(b + 2) << 16 |
         (uint32_t)(uint8_t)(b + 3) << 24;
}

/* Atomics need their data size whatever the mode (a memory violation on
 * hardware); LDS DMA destinations need 4 (M0[17:2] * 4). */
static void t_always(void **st) {
  (void)st;
  static const int modes[2] = {EMU_ALIGN_MODE_UNALIGNED, EMU_ALIGN_MODE_DWORD};
  for (int i = 0; i < 2; i++) {
    arun a;
    expect_violation(&a, go(&a, "gfx942", modes[i], "  v_mov_b32 v4, 1.0\n  global_atomic_add_f32 v3, v4, s[4:5] offset:2\n"),
                     "global_atomic_add_f32", "global/flat atomic", GLOBAL, 2, 0, 4);
    expect_violation(&a, go(&a, "gfx950", modes[i], "  v_mov_b32 v4, 1.0\n  buffer_atomic_add_f32 v4, v3, s[8:11], 0 offen offset:6\n"),
                     "buffer_atomic_add_f32", "buffer atomic", GLOBAL, 6, 0, 4);
    expect_violation(&a, go(&a, "gfx942", modes[i], "  s_mov_b32 m0, 2\n  v_lshlrev_b32 v9, 2, v0\n  buffer_load_dword v9, s[8:11], 0 offen lds\n"),
                     "buffer_load_dword", "LDS DMA destination", LDS, 2, 0, 4); /* LDS address 0x2 */
  }
  /* an aligned atomic, and a 16-byte DMA to a 4- (not 16-) aligned LDS address, run */
  arun a;
  expect_ok(&a, go(&a, "gfx942", EMU_ALIGN_MODE_DWORD, "  v_mov_b32 v4, 1.0\n  global_atomic_add_f32 v3, v4, s[4:5] offset:4\n"),
            "aligned atomic");
  tb_run_free(&a.r);
  expect_ok(&a, go(&a, "gfx950", EMU_ALIGN_MODE_DWORD,
                   "  s_mov_b32 m0, 4\n  v_lshlrev_b32 v9, 4, v0\n  buffer_load_dwordx4 v9, s[8:11], 0 offen lds\n"
                   "  s_waitcnt vmcnt(0)\n  v_mov_b32 v10, 0\n  ds_read_b32 v11, v10 offset:4\n"),
            "16-byte DMA to LDS 4");
  assert_int_equal(a.r.wave->v[11][0], pat32(0)); /* lane 0's first dword landed at LDS 4 */
  tb_run_free(&a.r);
}

/* UNALIGNED mode: loads and stores at any address read and write exactly
 * the bytes they name. */
static void t_unaligned_mode(void **st) {
  (void)st;
  arun a;
  expect_ok(&a, go(&a, "gfx942", EMU_ALIGN_MODE_UNALIGNED,
                   "  global_load_dword v4, v3, s[4:5] offset:2\n"
                   "  buffer_load_dword v5, v3, s[8:11], 0 offen offset:1\n"
                   "  global_load_ushort v8, v3, s[4:5] offset:3\n"
                   "  s_waitcnt vmcnt(0)\n"
                   "  ds_write_b64 v3, v[4:5] offset:4\n  s_waitcnt lgkmcnt(0)\n  ds_read_b64 v[12:13], v3 offset:4\n"
                   "  ds_read_b32 v14, v3 offset:6\n"),
            "unaligned loads");
  for (int l = 0; l < 64; l += 21) {
    uint32_t b = 16u * (uint32_t)l;
    assert_int_equal(a.r.wave->v[4][l], pat32(b + 2));
    assert_int_equal(a.r.wave->v[5][l], pat32(b + 1));
    assert_int_equal(a.r.wave->v[8][l], pat32(b + 3) & 0xffff);
    assert_int_equal(a.r.wave->v[12][l], pat32(b + 2));
    assert_int_equal(a.r.wave->v[13][l], pat32(b + 1));
    /* LDS bytes 16l+4.. hold pat32(b+2) then pat32(b+1): bytes 6..9 = (b+4, b+5, b+1, b+2) */
    uint32_t x = pat32(b + 2), y = pat32(b + 1);
    assert_int_equal(a.r.wave->v[14][l], (x >> 16) | (y << 16));
  }
  tb_run_free(&a.r);
}

/* DWORD mode: every load/store must be a multiple of min(size, 4). */
static void t_dword_mode(void **st) {
  (void)st;
  const int D = EMU_ALIGN_MODE_DWORD;
  arun a;
  expect_violation(&a, go(&a, "gfx942", D, "  global_load_dword v4, v3, s[4:5] offset:2\n"), "global_load_dword",
                   "global/flat load", GLOBAL, 2, 0, 4);
  expect_violation(&a, go(&a, "gfx950", D, "  global_load_ushort v4, v3, s[4:5] offset:1\n"), "global_load_ushort",
                   "global/flat load", GLOBAL, 1, 0, 2);
  expect_violation(&a, go(&a, "gfx942", D, "  v_mov_b32 v4, 7\n  global_store_dword v[6:7], v4, off offset:3\n"),
                   "global_store_dword", "global/flat store", GLOBAL, 3, 0, 4);
  expect_violation(&a, go(&a, "gfx942", D, "  v_mov_b32 v4, 7\n  buffer_store_dword v4, v3, s[8:11], 0 offen offset:2\n"),
                   "buffer_store_dword", "buffer store", GLOBAL, 2, 0, 4);
  expect_violation(&a, go(&a, "gfx950", D, "  s_mov_b32 s12, 2\n  buffer_load_dword v4, v3, s[8:11], s12 offen\n"),
                   "buffer_load_dword", "buffer load", GLOBAL, 2, 0, 4); /* soffset misaligns it */
  expect_violation(&a, go(&a, "gfx942", D, "  s_mov_b32 s12, 2\n  v_lshlrev_b32 v9, 2, v0\n  buffer_load_dword v9, s[8:11], s12 offen lds\n"),
                   "buffer_load_dword", "buffer load to LDS", GLOBAL, 2, 0, 4); /* the global side of a DMA */
  expect_violation(&a, go(&a, "gfx942", D, "  ds_read_b32 v4, v3 offset:2\n"), "ds_read_b32", "LDS read", LDS, 2, 0, 4);
  expect_violation(&a, go(&a, "gfx950", D, "  v_mov_b32 v4, 1\n  ds_write_b16 v3, v4 offset:1\n"), "ds_write_b16",
                   "LDS write", LDS, 1, 0, 2);
  expect_violation(&a, go(&a, "gfx942", D, "  v_add_u32 v5, 2, v3\n  ds_read2_b32 v[8:9], v5 offset0:1 offset1:2\n"),
                   "ds_read2_b32", "LDS read", LDS, 6, 0, 4);
  /* one lane off: the error names it and its address (16*17 + 2 = 274) */
  expect_violation(&a, go(&a, "gfx942", D,
                          "  v_cmp_eq_u32 vcc, 17, v0\n  v_cndmask_b32 v5, 0, 2, vcc\n  v_add_u32 v5, v5, v3\n"
                          "  v_mov_b32 v4, 9\n  global_store_dword v5, v4, s[4:5]\n"),
                   "global_store_dword", "global/flat store", GLOBAL, 274, 17, 4);
  /* aligned to min(size, 4) but not to the size: fine; bytes at any address: fine;
   * a load wholly out of range accesses nothing; a scalar load ignores the LSBs */
  expect_ok(&a, go(&a, "gfx942", D,
                   "  global_load_dwordx4 v[8:11], v3, s[4:5] offset:4\n  global_load_ubyte v12, v3, s[4:5] offset:1\n"
                   "  global_load_ushort v13, v3, s[4:5] offset:2\n  s_waitcnt vmcnt(0)\n  ds_write_b64 v3, v[8:9] offset:4\n"
                   "  s_mov_b32 s10, 0\n  buffer_load_dword v14, v3, s[8:11], 0 offen offset:2\n"
                   "  s_load_dword s20, s[4:5], 0x2\n  s_waitcnt lgkmcnt(0)\n  v_mov_b32 v15, s20\n"),
            "aligned enough");
  assert_int_equal(a.r.wave->v[8][1], pat32(16 + 4));
  assert_int_equal(a.r.wave->v[11][1], pat32(16 + 16));
  assert_int_equal(a.r.wave->v[12][1], 17u);
  assert_int_equal(a.r.wave->v[13][1], pat32(18) & 0xffff);
  assert_int_equal(a.r.wave->v[14][1], 0u);        /* out of range: 0 */
  assert_int_equal(a.r.wave->v[15][0], pat32(0));  /* address 2 read as 0 */
  tb_run_free(&a.r);
}

/* CONVJIT_EMU_ALIGN picks the mode when the context leaves it default; a
 * bad value fails the launch naming it. */
static void t_env(void **st) {
  (void)st;
  arun a;
  setenv("CONVJIT_EMU_ALIGN", "dword", 1);
  expect_violation(&a, go(&a, "gfx942", EMU_ALIGN_MODE_DEFAULT, "  global_load_dword v4, v3, s[4:5] offset:2\n"),
                   "global_load_dword", "global/flat load", GLOBAL, 2, 0, 4);
  setenv("CONVJIT_EMU_ALIGN", "unaligned", 1);
  expect_ok(&a, go(&a, "gfx942", EMU_ALIGN_MODE_DEFAULT, "  global_load_dword v4, v3, s[4:5] offset:2\n"), "env unaligned");
  tb_run_free(&a.r);
  setenv("CONVJIT_EMU_ALIGN", "strict", 1);
  convjit_status s = go(&a, "gfx942", EMU_ALIGN_MODE_DEFAULT, "  s_nop 0\n");
  assert_int_equal(s, CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "CONVJIT_EMU_ALIGN = 'strict'"));
  tb_run_free(&a.r);
  unsetenv("CONVJIT_EMU_ALIGN");
  expect_ok(&a, go(&a, "gfx942", EMU_ALIGN_MODE_DEFAULT, "  global_load_dword v4, v3, s[4:5] offset:2\n"), "default");
  tb_run_free(&a.r);
}

int main(void) {
  unsetenv("CONVJIT_EMU_ALIGN"); /* the default is under test */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(t_always),
      cmocka_unit_test(t_unaligned_mode),
      cmocka_unit_test(t_dword_mode),
      cmocka_unit_test(t_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
