/* Scalar ALU, compares, branches and EXEC manipulation, each run as a real
 * assembled kernel on the emulator; expected values worked out by hand
 * (the comment beside each says how). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "support.h"

#define OK(x) do { convjit_status s_ = (x); if (s_ != CONVJIT_OK) fail_msg("%s -> %d: %s", #x, s_, cj_error_text()); } while (0)

static emu_wave *run(tb_run *r, const char *arch, const char *body) {
  OK(tb_asm_run(r, arch, body, 1, 64, NULL, 0, 0, 0));
  return r->wave;
}

/* 64-bit add and subtract through the carry/borrow chains. */
static void t_carry_chain(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx950",
                    "  s_mov_b32 s10, 0xffffffff\n  s_mov_b32 s11, 1\n"   /* a = 0x1_ffffffff */
                    "  s_add_u32 s12, s10, 2\n  s_addc_u32 s13, s11, 0\n"  /* a + 2 = 0x2_00000001 */
                    "  s_cselect_b32 s14, 7, 9\n"                          /* SCC after addc (no carry) = 0 -> 9 */
                    "  s_sub_u32 s16, 0, 1\n  s_subb_u32 s17, 5, 0\n"      /* 5:0 - 0:1 = 4:ffffffff */
                    "  s_add_i32 s18, 0x7fffffff, 1\n  s_cselect_b32 s19, 1, 0\n" /* signed overflow -> SCC 1 */
                    "  s_sub_u32 s20, 3, 5\n  s_cselect_b32 s21, 1, 0\n");  /* borrow -> SCC 1 */
  assert_int_equal(w->s[12], 1);
  assert_int_equal(w->s[13], 2);
  assert_int_equal(w->s[14], 9);
  assert_int_equal(w->s[16], 0xffffffffu);
  assert_int_equal(w->s[17], 4);
  assert_int_equal(w->s[18], 0x80000000u);
  assert_int_equal(w->s[19], 1);
  assert_int_equal(w->s[20], 0xfffffffeu);
  assert_int_equal(w->s[21], 1);
  tb_run_free(&r);
}

static void t_bits_and_shifts(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx942",
                    "  s_mov_b32 s10, 0xf0f0abcd\n"
                    "  s_bfe_u32 s11, s10, 0x80008\n"      /* offset 8 width 8: 0xab */
                    "  s_bfe_i32 s12, s10, 0x80008\n"      /* sign-extended 0xab = -85 */
                    "  s_lshr_b32 s13, s10, 36\n"          /* shift uses 5 bits: >> 4 */
                    "  s_ashr_i32 s14, s10, 28\n"          /* 0xffffffff */
                    "  s_mov_b32 s20, 1\n  s_mov_b32 s21, 0\n"
                    "  s_lshl_b64 s[22:23], s[20:21], 35\n" /* 1 << 35 -> hi word 8 */
                    "  s_lshl2_add_u32 s24, 3, 100\n"       /* 3*4 + 100 = 112 */
                    "  s_mov_b32 s40, 0xabcd5678\n  s_pack_ll_b32_b16 s25, 0x1234, s40\n" /* 0x56781234 */
                    "  s_bcnt1_i32_b32 s26, s10\n"          /* popcount(0xf0f0abcd) = 4+4+5+5 = 18 */
                    "  s_ff1_i32_b32 s27, 0x100\n"          /* lowest set bit: 8 */
                    "  s_flbit_i32_b32 s28, 0x100\n"        /* leading zeros: 23 */
                    "  s_not_b32 s29, s10\n"
                    "  s_andn2_b32 s30, s10, 0xffff\n"      /* 0xf0f00000 */
                    "  s_bfm_b32 s31, 4, 8\n"               /* 0xf00 */
                    "  s_mul_hi_u32 s32, 0x80000000, 6\n"   /* (2^31*6)>>32 = 3 */
                    "  s_mul_i32 s33, -3, 7\n"              /* -21 */
                    "  s_min_i32 s34, -5, 3\n  s_cselect_b32 s35, 1, 0\n" /* min -5, SCC = (a<b) = 1 */
                    "  s_max_u32 s36, -5, 3\n"              /* 0xfffffffb */
                    "  s_sext_i32_i16 s37, 0x8001\n");      /* 0xffff8001 */
  assert_int_equal(w->s[11], 0xab);
  assert_int_equal(w->s[12], (uint32_t)-85);
  assert_int_equal(w->s[13], 0x0f0f0abcu);
  assert_int_equal(w->s[14], 0xffffffffu);
  assert_int_equal(w->s[22], 0);
  assert_int_equal(w->s[23], 8);
  assert_int_equal(w->s[24], 112);
  assert_int_equal(w->s[25], 0x56781234u);
  assert_int_equal(w->s[26], 18);
  assert_int_equal(w->s[27], 8);
  assert_int_equal(w->s[28], 23);
  assert_int_equal(w->s[29], 0x0f0f5432u);
  assert_int_equal(w->s[30], 0xf0f00000u);
  assert_int_equal(w->s[31], 0xf00);
  assert_int_equal(w->s[32], 3);
  assert_int_equal(w->s[33], (uint32_t)-21);
  assert_int_equal(w->s[34], (uint32_t)-5);
  assert_int_equal(w->s[35], 1);
  assert_int_equal(w->s[36], 0xfffffffbu);
  assert_int_equal(w->s[37], 0xffff8001u);
  tb_run_free(&r);
}

/* s_bitset1/0: set or clear bit (S0 & 31) of the destination, keeping the
 * rest (read-modify-write) and SCC; LLVM emits s_bitset1 in split-K convs. */
static void t_bitset(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx950",
                    "  s_mov_b32 s10, 0x100\n  s_bitset1_b32 s10, 7\n"      /* 0x100 | 0x80 = 0x180 */
                    "  s_mov_b32 s11, 0\n  s_bitset1_b32 s11, 39\n"        /* 39 & 31 = 7: 0x80 */
                    "  s_mov_b32 s12, -1\n  s_bitset0_b32 s12, 31\n"       /* 0x7fffffff */
                    "  s_cmp_eq_u32 0, 0\n  s_bitset0_b32 s13, 0\n  s_cselect_b32 s14, 1, 0\n"); /* SCC kept: 1 */
  assert_int_equal(w->s[10], 0x180);
  assert_int_equal(w->s[11], 0x80);
  assert_int_equal(w->s[12], 0x7fffffffu);
  assert_int_equal(w->s[14], 1);
  tb_run_free(&r);
}

/* SOPK immediates: s_movk sign-extends, unsigned s_cmpk zero-extends. */
static void t_sopk(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx950",
                    "  s_movk_i32 s10, 0xfff0\n"           /* -16 */
                    "  s_mov_b32 s11, 0xfff0\n"
                    "  s_cmpk_eq_u32 s11, 0xfff0\n  s_cselect_b32 s12, 1, 0\n" /* 0xfff0 == 0xfff0 */
                    "  s_cmpk_eq_i32 s10, 0xfff0\n  s_cselect_b32 s13, 1, 0\n" /* -16 == -16 */
                    "  s_addk_i32 s10, 0x20\n"             /* -16 + 32 = 16 */
                    "  s_mulk_i32 s10, 0xfffd\n");         /* 16 * -3 = -48 */
  assert_int_equal(w->s[12], 1);
  assert_int_equal(w->s[13], 1);
  assert_int_equal(w->s[10], (uint32_t)-48);
  tb_run_free(&r);
}

/* A counted loop: s_cmp + s_cbranch_scc1 backwards; s_branch forward over
 * an instruction that must not run. */
static void t_branches(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx942",
                    "  s_mov_b32 s10, 0\n  s_mov_b32 s11, 0\n"
                    ".Lloop:\n  s_add_u32 s11, s11, s10\n  s_add_u32 s10, s10, 1\n"
                    "  s_cmp_lt_u32 s10, 10\n  s_cbranch_scc1 .Lloop\n" /* s11 = 0+1+..+9 = 45 */
                    "  s_branch .Lskip\n  s_mov_b32 s11, 999\n.Lskip:\n"
                    "  s_mov_b64 vcc, 0\n  s_cbranch_vccz .Lz\n  s_mov_b32 s12, 1\n.Lz:\n"
                    "  s_mov_b32 s13, 5\n");
  assert_int_equal(w->s[11], 45);
  assert_int_equal(w->s[10], 10);
  assert_int_equal(w->s[12], 0);
  assert_int_equal(w->s[13], 5);
  /* dynamic: SALU 2 + 10*3 + 1 + 1 = 34; branch 10 + s_branch + s_cbranch_vccz + s_endpgm = 13 */
  assert_int_equal(r.stats.count[EMU_CLASS_SALU] + r.stats.count[EMU_CLASS_BRANCH], 47);
  assert_int_equal(r.stats.count[EMU_CLASS_BRANCH], 10 + 1 + 1 + 1);
  /* cycle model (stats.c): 1 cycle per scalar/branch instruction; one wave,
   * so the kernel time is the wave's 47 cycles at gfx942's 2.1 GHz */
  assert_int_equal(r.stats.max_wave_cycles, 47);
  assert_true(r.stats.emulated_ms > 47 / 2.1e6 * 0.999 && r.stats.emulated_ms < 47 / 2.1e6 * 1.001); /* float rounding only */
  tb_run_free(&r);
}

/* EXEC: saveexec narrows it, execz branch skips a block, restore. */
static void t_exec(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx950",
                    "  v_mov_b32 v1, 0\n"
                    "  v_cmp_gt_u32 vcc, 16, v0\n"          /* lanes 0..15 */
                    "  s_and_saveexec_b64 s[10:11], vcc\n"  /* s[10:11] = old exec (all) */
                    "  v_mov_b32 v1, 1\n"
                    "  s_mov_b64 exec, 0\n"
                    "  s_cbranch_execz .Lskip\n  s_mov_b32 s20, 77\n.Lskip:\n"
                    "  s_mov_b64 exec, s[10:11]\n"
                    "  s_xor_saveexec_b64 s[12:13], 0\n"    /* exec = 0 ^ all = 0? no: exec = src ^ exec */
                    "  s_mov_b64 exec, s[10:11]\n");
  assert_int_equal(w->s[10], 0xffffffffu);
  assert_int_equal(w->s[11], 0xffffffffu);
  assert_int_equal(w->s[20], 0);
  for (int l = 0; l < 64; l++) assert_int_equal(w->v[1][l], l < 16 ? 1u : 0u);
  assert_true(w->exec == ~0ull);
  assert_int_equal(w->s[12], 0xffffffffu);
  tb_run_free(&r);
}

/* s_getpc_b64 gives the address of the next instruction; s_setpc_b64 jumps
 * there + 16, over the 4-byte s_mov at +12. */
static void t_getpc_setpc(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx942",
                    "  s_getpc_b64 s[10:11]\n"
                    "  s_add_u32 s10, s10, 16\n"
                    "  s_addc_u32 s11, s11, 0\n"
                    "  s_setpc_b64 s[10:11]\n"
                    "  s_mov_b32 s12, 1\n"
                    "  s_mov_b32 s13, 2\n");
  assert_int_equal(w->s[12], 0);
  assert_int_equal(w->s[13], 2);
  tb_run_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(t_carry_chain), cmocka_unit_test(t_bits_and_shifts), cmocka_unit_test(t_bitset),
      cmocka_unit_test(t_sopk),
      cmocka_unit_test(t_branches),    cmocka_unit_test(t_exec),            cmocka_unit_test(t_getpc_setpc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
