/* Vector ALU on the emulator: integer and bit ops, carry chains, EXEC
 * masking, lane ops, AGPR moves, f32 with VOP3 modifiers, SDWA, DPP, VOPC /
 * v_cmpx, conversions (bf16 and f16 RNE, fp8 per arch) and LLVM's own integer
 * division and bf16 rounding sequences (IR kernels vs a C computation).
 * Expected values are worked out by hand or computed independently in C. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "support_mem.h"

#define OK(x) do { convjit_status s_ = (x); if (s_ != CONVJIT_OK) fail_msg("%s -> %d: %s", #x, s_, cj_error_text()); } while (0)

static emu_wave *run(tb_run *r, const char *arch, const char *body) {
  OK(tb_asm_run(r, arch, body, 1, 64, NULL, 0, 0, 0));
  return r->wave;
}
static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static void t_int_ops(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx942",
                    "  v_mul_lo_u32 v1, v0, v0\n"
                    "  v_lshl_add_u32 v4, v0, 4, 3\n"
                    "  s_mov_b32 s10, 0x11223344\n  s_mov_b32 s11, 0x55667788\n  s_mov_b32 s12, 0x0c070400\n"
                    "  v_mov_b32 v50, s11\n  v_mov_b32 v51, s12\n  v_perm_b32 v5, s10, v50, v51\n"
                    "  v_alignbit_b32 v6, s10, v50, 8\n"
                    "  v_bfe_u32 v7, v0, 1, 3\n"
                    "  v_mbcnt_lo_u32_b32 v8, -1, 0\n  v_mbcnt_hi_u32_b32 v8, -1, v8\n"
                    "  v_and_b32 v9, 1, v0\n  v_cmp_eq_u32 vcc, 1, v9\n  v_mov_b32 v11, 200\n"
                    "  v_cndmask_b32 v10, 50, v11, vcc\n"
                    "  v_add3_u32 v12, v0, v0, 5\n"
                    "  v_mov_b32 v52, 0x100\n  v_or3_b32 v13, v0, v52, v52\n"
                    "  v_lshlrev_b32 v14, v0, 1\n"             /* 1 << (l & 31) */
                    "  v_mov_b32 v53, -256\n  v_ashrrev_i32 v15, 4, v53\n"           /* -16 */
                    "  v_mul_hi_u32 v16, v0, -1\n"             /* (l*(2^32-1))>>32 = l-1 (l>0) */
                    "  v_sub_u32 v17, 10, v0\n"
                    "  v_mov_b32 v54, 0xff\n  v_mov_b32 v55, 0x5500\n  v_bfi_b32 v18, v54, v0, v55\n"      /* (0xff & l) | (~0xff & 0x5500) */
                    "  v_max_i32 v19, v17, 0\n"
                    "  v_mul_lo_u16 v20, 43, v53\n"           /* low 16 bits of 43 * 0xff00; high half 0 */
                    "  v_sub_u16 v21, v0, 3\n");
  for (int l = 0; l < 64; l++) {
    uint32_t u = (uint32_t)l;
    assert_int_equal(w->v[1][l], u * u);
    assert_int_equal(w->v[4][l], 16 * u + 3);
    assert_int_equal(w->v[5][l], 0x00114488u);
    assert_int_equal(w->v[6][l], 0x44556677u);
    assert_int_equal(w->v[7][l], (u >> 1) & 7);
    assert_int_equal(w->v[8][l], u);
    assert_int_equal(w->v[10][l], (u & 1) ? 200u : 50u);
    assert_int_equal(w->v[12][l], 2 * u + 5);
    assert_int_equal(w->v[13][l], u | 0x100);
    assert_int_equal(w->v[14][l], 1u << (u & 31));
    assert_int_equal(w->v[15][l], (uint32_t)-16);
    assert_int_equal(w->v[16][l], l ? u - 1 : 0);
    assert_int_equal(w->v[17][l], 10 - u);
    assert_int_equal(w->v[18][l], (u & 0xff) | 0x5500);
    assert_int_equal(w->v[19][l], l <= 10 ? 10 - u : 0);
    assert_int_equal(w->v[20][l], (43u * 0xff00u) & 0xffffu);
    assert_int_equal(w->v[21][l], (u - 3) & 0xffffu);
  }
  tb_run_free(&r);
}

/* v_mad_legacy_u16 (CDNA3 ISA guide, VOP3 opcode 491; same text in the
 * CDNA4 guide): tmp = S0.u16 * S1.u16 + S2.u16 and, with OPSEL[3] = 0,
 * D = {16'0, tmp.u16} -- the high half is written 0 (V_MAD_U16 keeps it);
 * clamp saturates in the unsigned 16-bit domain. Values worked by hand. */
static void t_mad_legacy_u16(void **st) {
  (void)st;
  static const char *const arches[] = {"gfx942", "gfx950"};
  for (int a = 0; a < 2; a++) {
    tb_run r;
    emu_wave *w = run(&r, arches[a],
                      "  v_mov_b32 v30, 0xabcd1234\n  v_mov_b32 v31, 0x00050003\n  v_mov_b32 v32, 0xffff\n"
                      "  v_mad_legacy_u16 v1, v30, v31, v0\n"        /* 0x1234 * 3 + l: high halves of sources ignored */
                      "  v_mad_legacy_u16 v2, v32, v32, v0\n"        /* 0xffff^2 = 0xfffe0001: low half 1, + l */
                      "  v_mad_legacy_u16 v3, v32, v32, v0 clamp\n"  /* saturates at 0xffff */
                      "  v_mad_legacy_u16 v4, v0, 2, 7 clamp\n"      /* 2l + 7, no saturation */
                      "  v_mov_b32 v5, 0xdead0000\n"
                      "  v_mad_legacy_u16 v5, v0, v0, 0\n");         /* l*l, old high half replaced by 0 */
    for (int l = 0; l < 64; l++) {
      uint32_t u = (uint32_t)l;
      assert_int_equal(w->v[1][l], 13980u + u); /* 0x1234 = 4660; 4660 * 3 = 13980 */
      assert_int_equal(w->v[2][l], 1u + u);
      assert_int_equal(w->v[3][l], 0xffffu);
      assert_int_equal(w->v[4][l], 2 * u + 7);
      assert_int_equal(w->v[5][l], u * u);
    }
    tb_run_free(&r);
  }
}

/* v_ashrrev_i16 (CDNA3/CDNA4 guides, VOP2 44: D.i16 = S1.i16 >> S0[3:0]);
 * bits [31:16] are written 0 like the other 16-bit ops. Values by hand. */
static void t_ashrrev_i16(void **st) {
  (void)st;
  static const char *const arches[] = {"gfx942", "gfx950"};
  for (int a = 0; a < 2; a++) {
    tb_run r;
    emu_wave *w = run(&r, arches[a],
                      "  v_mov_b32 v30, 0xffff8000\n  v_mov_b32 v31, 0x12347ff0\n"
                      "  v_ashrrev_i16 v1, 3, v30\n"    /* -32768 >> 3 = -4096 = 0xf000 */
                      "  v_ashrrev_i16 v2, 4, v31\n"    /* 0x7ff0 >> 4 = 0x07ff; high half of v31 ignored */
                      "  v_ashrrev_i16 v3, 17, v30\n"   /* count 17 & 15 = 1: -16384 = 0xc000 */
                      "  v_lshlrev_b32 v32, 12, v0\n"
                      "  v_ashrrev_i16 v4, 12, v32\n"); /* low 4 bits of l, sign-extended to 16 */
    for (int l = 0; l < 64; l++) {
      int32_t nib = l & 15;
      uint32_t want4 = (uint32_t)(uint16_t)(nib < 8 ? nib : nib - 16);
      assert_int_equal(w->v[1][l], 0xf000u);
      assert_int_equal(w->v[2][l], 0x07ffu);
      assert_int_equal(w->v[3][l], 0xc000u);
      assert_int_equal(w->v[4][l], want4);
    }
    tb_run_free(&r);
  }
}

/* EXEC-masked lanes keep their value; carry-out masks are 0 outside EXEC. */
static void t_exec_and_carry(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx950",
                    "  v_mov_b32 v12, 3\n"
                    "  s_mov_b32 exec_lo, 0xffff0000\n  s_mov_b32 exec_hi, 1\n"
                    "  v_mov_b32 v12, 7\n"
                    "  s_mov_b64 exec, -1\n"
                    "  v_mov_b32 v20, -1\n  v_add_u32 v21, 1, v0\n"
                    "  v_add_co_u32 v14, vcc, v20, v21\n"       /* 2^32 - 1 + l + 1: low l, carry 1 */
                    "  v_addc_co_u32 v15, vcc, 0, v0, vcc\n"    /* l + 1 */
                    "  s_mov_b64 s[30:31], vcc\n"
                    "  s_mov_b32 exec_hi, 0\n"
                    "  v_add_co_u32 v16, s[32:33], v20, v21\n"  /* carry only for lanes 0..31 */
                    "  v_sub_co_u32 v17, s[34:35], v0, 5\n"     /* borrow for l < 5 */
                    "  v_subb_co_u32 v18, s[36:37], 0, 0, s[34:35]\n" /* -borrow, borrow again */
                    "  s_mov_b64 exec, -1\n");
  for (int l = 0; l < 64; l++) {
    int active = l >= 16 && l <= 32;
    assert_int_equal(w->v[12][l], active ? 7u : 3u);
    assert_int_equal(w->v[14][l], (uint32_t)l);
    assert_int_equal(w->v[15][l], (uint32_t)l + 1);
  }
  assert_int_equal(w->s[30], 0);  /* addc: l + 0 + 1 never carries */
  assert_int_equal(w->s[32], 0xffffffffu);
  assert_int_equal(w->s[33], 0);
  assert_int_equal(w->s[34], 0x1f);
  assert_int_equal(w->s[35], 0);
  assert_int_equal(w->s[36], 0x1f);
  for (int l = 0; l < 32; l++) assert_int_equal(w->v[18][l], l < 5 ? 0xffffffffu : 0u);
  tb_run_free(&r);
}

static void t_lanes_and_agpr(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx942",
                    "  v_mov_b32 v16, 9\n"
                    "  s_mov_b64 exec, 0xff00\n"
                    "  v_readfirstlane_b32 s10, v0\n"          /* first lane in EXEC: 8 */
                    "  s_mov_b64 exec, -1\n"
                    "  v_readlane_b32 s11, v0, 37\n"
                    "  s_mov_b32 s12, 555\n  s_mov_b32 s13, 5\n"
                    "  s_mov_b64 exec, 0\n"
                    "  v_writelane_b32 v16, s12, 5\n"        /* ignores EXEC */
                    "  s_mov_b64 exec, -1\n"
                    "  v_accvgpr_write_b32 a5, v0\n  v_accvgpr_mov_b32 a6, a5\n  v_accvgpr_read_b32 v32, a6\n");
  assert_int_equal(w->s[10], 8);
  assert_int_equal(w->s[11], 37);
  for (int l = 0; l < 64; l++) {
    assert_int_equal(w->v[16][l], l == 5 ? 555u : 9u);
    assert_int_equal(w->a[5][l], (uint32_t)l);
    assert_int_equal(w->v[32][l], (uint32_t)l);
  }
  tb_run_free(&r);
}

static void t_f32_modifiers(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx950",
                    "  v_cvt_f32_u32 v17, v0\n"
                    "  v_fma_f32 v18, -v17, 2.0, 1.0\n"        /* 1 - 2l */
                    "  v_add_f32_e64 v19, v17, 0.5 mul:2\n"    /* 2l + 1 */
                    "  v_add_f32_e64 v22, v17, -0.5 clamp\n"   /* clamp(l - 0.5, 0, 1) */
                    "  v_cvt_i32_f32 v23, v18\n"
                    "  v_max_f32_e64 v24, |v18|, 4.0\n"        /* max(|1-2l|, 4) */
                    "  v_cmp_gt_f32 vcc, 4.0, v17\n  v_mov_b32 v56, 1\n  v_cndmask_b32 v25, 0, v56, vcc\n"
                    "  v_cvt_u32_f32 v26, v18\n");             /* negative -> 0 */
  for (int l = 0; l < 64; l++) {
    float x = (float)l;
    assert_int_equal(w->v[18][l], fbits(1.0f - 2.0f * x));
    assert_int_equal(w->v[19][l], fbits(2.0f * x + 1.0f));
    assert_int_equal(w->v[22][l], fbits(l == 0 ? 0.0f : l == 1 ? 0.5f : 1.0f));
    assert_int_equal(w->v[23][l], (uint32_t)(1 - 2 * l));
    float ab = (float)(2 * l - 1 < 0 ? 1 : 2 * l - 1);
    assert_int_equal(w->v[24][l], fbits(ab > 4.0f ? ab : 4.0f));
    assert_int_equal(w->v[25][l], l < 4 ? 1u : 0u);
    assert_int_equal(w->v[26][l], l == 0 ? 1u : 0u);
  }
  tb_run_free(&r);
}

/* 16-bit compares read only the low halves: v40 = 0xffff0000 | (l - 32)
 * (as i16: l - 32), v41 = 0x00000005, so a 32-bit compare would say
 * v40 > v41 for every lane. */
static void t_cmp_16(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx950",
                    "  v_subrev_u32 v42, 32, v0\n  v_and_b32 v42, 0xffff, v42\n"
                    "  v_or_b32 v40, 0xffff0000, v42\n  v_mov_b32 v41, 5\n"
                    "  v_cmp_gt_u16_e64 s[40:41], v40, v41\n"
                    "  v_cmp_lt_i16_e64 s[42:43], v40, v41\n"
                    "  v_cmp_eq_u16_e64 s[44:45], v40, v41\n"
                    "  v_cmp_ge_i16_e64 s[46:47], v40, v41\n");
  uint64_t gt_u = 0, lt_i = 0, eq = 0, ge_i = 0;
  for (int l = 0; l < 64; l++) {
    uint16_t u = (uint16_t)(l - 32);
    int16_t i = (int16_t)u;
    gt_u |= (uint64_t)(u > 5) << l;
    lt_i |= (uint64_t)(i < 5) << l;
    eq |= (uint64_t)(u == 5) << l;
    ge_i |= (uint64_t)(i >= 5) << l;
  }
  assert_int_equal(w->s[40] | (uint64_t)w->s[41] << 32, gt_u);
  assert_int_equal(w->s[42] | (uint64_t)w->s[43] << 32, lt_i);
  assert_int_equal(w->s[44] | (uint64_t)w->s[45] << 32, eq);
  assert_int_equal(w->s[46] | (uint64_t)w->s[47] << 32, ge_i);
  tb_run_free(&r);
}

static void t_sdwa_dpp_cmpx(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx942",
                    "  v_mov_b32 v27, 0xaabbccdd\n  v_mov_b32 v26, 0x11112222\n"
                    "  v_mov_b32_sdwa v26, v27 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_2\n"
                    "  v_add_u32_sdwa v28, v27, v27 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:WORD_1\n"
                    "  v_mov_b32_sdwa v33, v27 dst_sel:BYTE_1 dst_unused:UNUSED_SEXT src0_sel:BYTE_3\n"
                    "  v_mov_b32_dpp v29, v0 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf\n"
                    "  v_mov_b32 v30, 1000\n"
                    "  v_mov_b32_dpp v30, v0 row_shr:1 row_mask:0xf bank_mask:0xf\n"
                    "  v_cmpx_gt_u32_e64 s[40:41], 10, v0\n"
                    "  v_mov_b32 v31, 5\n"
                    "  s_mov_b64 exec, -1\n");
  for (int l = 0; l < 64; l++) {
    assert_int_equal(w->v[26][l], 0x00bb2222u);
    assert_int_equal(w->v[28][l], 0xddu + 0xaabbu);
    assert_int_equal(w->v[33][l], 0xffffaa00u); /* 0xaa into byte 1, sign of byte 1 fills above */
    assert_int_equal(w->v[29][l], (uint32_t)(l ^ 1));
    assert_int_equal(w->v[30][l], (l & 15) ? (uint32_t)(l - 1) : 1000u);
    assert_int_equal(w->v[31][l], l < 10 ? 5u : 0u);
  }
  assert_int_equal(w->s[40], 0x3ff);
  assert_int_equal(w->s[41], 0);
  tb_run_free(&r);
}

/* bf16 RNE ties both ways; fp8 of the same opcode per arch (docs/isa-notes.md §2):
 * gfx950 OCP E4M3FN 1.0 = 0x38, -2.0 = 0xc0; gfx942 E4M3FNUZ 1.0 = 0x40,
 * -2.0 = 0xc8. */
static void t_conversions(void **st) {
  (void)st;
  const char *body =
      "  s_mov_b32 s32, 1.0\n  s_mov_b32 s33, -2.0\n"
      "  v_mov_b32 v24, 0\n"
      "  v_mov_b32 v57, s33\n  v_cvt_pk_fp8_f32 v24, s32, v57\n"
      "  v_mov_b32 v58, s32\n  v_cvt_pk_fp8_f32 v24, s32, v58 op_sel:[0,0,1]\n"
      "  v_cvt_f32_fp8_sdwa v25, v24 src0_sel:BYTE_1\n"
      "  v_cvt_pk_f32_fp8_sdwa v[34:35], v24 src0_sel:WORD_1\n"
      "  v_cvt_f32_ubyte2 v36, 0x00ab0000\n";
  tb_run r;
  emu_wave *w = run(&r, "gfx950", body);
  assert_int_equal(w->v[24][3], 0x3838c038u);
  assert_int_equal(w->v[25][3], fbits(-2.0f));
  assert_int_equal(w->v[34][3], fbits(1.0f));
  assert_int_equal(w->v[35][3], fbits(1.0f));
  assert_int_equal(w->v[36][3], fbits(171.0f));
  tb_run_free(&r);
  w = run(&r, "gfx942", body);
  assert_int_equal(w->v[24][3], 0x4040c840u);
  assert_int_equal(w->v[25][3], fbits(-2.0f));
  assert_int_equal(w->v[34][3], fbits(1.0f));
  tb_run_free(&r);
  w = run(&r, "gfx950",
          "  s_mov_b32 s30, 0x3f808000\n  s_mov_b32 s31, 0x3f818000\n"
          "  v_mov_b32 v59, s31\n  v_cvt_pk_bf16_f32 v23, s30, v59\n");   /* tie -> even 0x3f80; tie -> even 0x3f82 */
  assert_int_equal(w->v[23][0], 0x3f823f80u);
  tb_run_free(&r);
}

/* f16 conversions (docs/emulator.md), both arches, values by hand from
 * binary16's fields: v_cvt_f16_f32 rounds to nearest even (1 + 2^-11 ties
 * to 1.0 = 0x3C00; 65520 ties to the even inf code; 2^-25 ties to 0; 2^-24
 * is the smallest subnormal 0x0001) and writes bits [31:16] as 0 (gfx9),
 * with the f32 source's neg modifier; v_cvt_f32_f16 reads the low half, or
 * the high one through SDWA WORD_1 or the VOP3 op_sel bit, with |x|;
 * v_pack_b32_f16 packs {S1.f16, S0.f16} with per-source op_sel and neg;
 * gfx950's v_cvt_pk_f16_f32 converts two f32 into one word each. */
static void t_f16_conversions(void **st) {
  (void)st;
  const char *body =
      "  s_mov_b32 s40, 0x3f801000\n  s_mov_b32 s41, 0x477ff000\n  s_mov_b32 s42, 0x33000000\n"
      "  s_mov_b32 s43, 0x33800000\n"
      "  v_mov_b32 v40, -1\n  v_cvt_f16_f32 v40, s40\n"
      "  v_mov_b32 v41, -1\n  v_cvt_f16_f32_e64 v41, -s41\n"
      "  v_cvt_f16_f32 v42, s42\n  v_cvt_f16_f32 v43, s43\n"
      "  v_mov_b32 v44, 0x3c00c000\n"
      "  v_cvt_f32_f16 v45, v44\n"
      "  v_cvt_f32_f16_sdwa v46, v44 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1\n"
      "  v_mov_b32 v39, 0xffff8000\n  v_cvt_f32_f16_e64 v47, -|v39|\n"
      "  v_pack_b32_f16 v48, v44, v40 op_sel:[1,0,0]\n"
      "  v_pack_b32_f16 v49, -v44, v43\n";
  for (int a = 0; a < 2; a++) {
    tb_run r;
    emu_wave *w = run(&r, a ? "gfx950" : "gfx942", body);
    for (int l = 0; l < 64; l += 9) {
      assert_int_equal(w->v[40][l], 0x00003C00u);
      assert_int_equal(w->v[41][l], 0x0000FC00u);
      assert_int_equal(w->v[42][l], 0u);
      assert_int_equal(w->v[43][l], 1u);
      assert_int_equal(w->v[45][l], fbits(-2.0f));
      assert_int_equal(w->v[46][l], fbits(1.0f));
      assert_int_equal(w->v[47][l], fbits(-0.0f)); /* f16 -0 = 0x8000: -|x| keeps it -0, the high half ignored */
      assert_int_equal(w->v[48][l], 0x3C003C00u);
      assert_int_equal(w->v[49][l], 0x00014000u);
    }
    tb_run_free(&r);
  }
  tb_run r;
  emu_wave *w = run(&r, "gfx950", "  s_mov_b32 s40, 0x3f801000\n  s_mov_b32 s41, 0x477ff000\n  v_mov_b32 v51, s41\n"
                                   "  v_cvt_pk_f16_f32 v50, s40, v51\n  v_cvt_pk_f16_f32 v52, -s40, s40\n");
  assert_int_equal(w->v[50][7], 0x7C003C00u);
  assert_int_equal(w->v[52][7], 0x3C00BC00u);
  tb_run_free(&r);
}

/* fp8 conversion edges through the instructions, per arch (values by hand
 * from the formats' fields): the largest ties, which round to the even
 * mantissa 110b, and the smallest subnormal, both ways.
 *   gfx950 E4M3FN (bias 7):   464 = 448 + 16 is halfway to 480 -> 0x7E = 448;
 *                             2^-9 = 0.001b x 2^-6 -> 0x01
 *   gfx942 E4M3FNUZ (bias 8): 232 = 224 + 8 is halfway to 240 -> 0x7E = 224;
 *                             2^-10 = 0.001b x 2^-7 -> 0x01 */
static void fp8_edges(const char *arch, uint32_t tie_bits, uint32_t sub_bits, float tie_want, float sub_want) {
  char body[512];
  snprintf(body, sizeof body,
           "  s_mov_b32 s40, 0x%08x\n  s_mov_b32 s41, 0x%08x\n  v_mov_b32 v60, s41\n  v_mov_b32 v61, 0\n"
           "  v_cvt_pk_fp8_f32 v61, s40, v60\n"
           "  v_cvt_f32_fp8_sdwa v62, v61 src0_sel:BYTE_0\n  v_cvt_f32_fp8_sdwa v63, v61 src0_sel:BYTE_1\n",
           tie_bits, sub_bits);
  tb_run r;
  emu_wave *w = run(&r, arch, body);
  for (int l = 0; l < 64; l += 21) {
    assert_int_equal(w->v[61][l], 0x0000017Eu);
    assert_int_equal(w->v[62][l], fbits(tie_want));
    assert_int_equal(w->v[63][l], fbits(sub_want));
  }
  tb_run_free(&r);
}
static void t_fp8_edges(void **st) {
  (void)st;
  fp8_edges("gfx950", 0x43e80000u /* 464 */, 0x3b000000u /* 2^-9 */, 448.0f, 0x1p-9f);
  fp8_edges("gfx942", 0x43680000u /* 232 */, 0x3a800000u /* 2^-10 */, 224.0f, 0x1p-10f);
}

static void t_valu64(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx942",
                    "  v_mov_b32 v36, 0xf0000001\n  v_mov_b32 v37, v0\n"
                    "  v_lshlrev_b64 v[34:35], 4, v[36:37]\n"
                    "  s_mov_b32 s44, 0x80000001\n  v_mov_b32 v40, -1\n  v_mov_b32 v41, 0\n"
                    "  v_mad_u64_u32 v[38:39], s[42:43], v0, s44, v[40:41]\n"
                    "  v_pk_mov_b32 v[44:45], v[36:37], v[36:37] op_sel:[1,0]\n"
                    "  v_lshl_add_u64 v[46:47], v[36:37], 2, v[36:37]\n"
                    /* v_mov_b64 (LLVM copies 64-bit SGPR pairs with it): SGPR pair, VGPR pair,
                     * inline -2 (sign-extended to 64 bits), and under EXEC = lanes 0..15 */
                    "  s_mov_b32 s50, 0x12345678\n  s_mov_b32 s51, 0x9abcdef0\n"
                    "  v_mov_b64 v[48:49], s[50:51]\n  v_mov_b64 v[52:53], v[36:37]\n"
                    "  v_mov_b64 v[54:55], -2\n  v_mov_b32 v56, 7\n  v_mov_b32 v57, 9\n"
                    "  s_mov_b32 exec_lo, 0xffff\n  s_mov_b32 exec_hi, 0\n"
                    "  v_mov_b64 v[56:57], v[36:37]\n");
  for (int l = 0; l < 64; l++) {
    uint64_t a = 0xf0000001ull | (uint64_t)l << 32;
    assert_int_equal(w->v[48][l], 0x12345678u);
    assert_int_equal(w->v[49][l], 0x9abcdef0u);
    assert_int_equal(w->v[52][l], 0xf0000001u);
    assert_int_equal(w->v[53][l], (uint32_t)l);
    assert_int_equal(w->v[54][l], 0xfffffffeu);
    assert_int_equal(w->v[55][l], 0xffffffffu);
    assert_int_equal(w->v[56][l], l < 16 ? 0xf0000001u : 7u);
    assert_int_equal(w->v[57][l], l < 16 ? (uint32_t)l : 9u);
    uint64_t sh = a << 4;
    assert_int_equal(w->v[34][l], (uint32_t)sh);
    assert_int_equal(w->v[35][l], (uint32_t)(sh >> 32));
    uint64_t m = (uint64_t)l * 0x80000001ull + 0xffffffffull;
    assert_int_equal(w->v[38][l], (uint32_t)m);
    assert_int_equal(w->v[39][l], (uint32_t)(m >> 32));
    assert_int_equal(w->v[44][l], (uint32_t)l);          /* op_sel[0]: high half of src0 */
    assert_int_equal(w->v[45][l], 0xf0000001u);         /* op_sel[1] = 0: low half of src1 */
    uint64_t s = a * 5;
    assert_int_equal(w->v[46][l], (uint32_t)s);
    assert_int_equal(w->v[47][l], (uint32_t)(s >> 32));
  }
  assert_int_equal(w->s[42], 0);
  tb_run_free(&r);
}

/* Packed f32 (VOP3P): op_sel picks the half each source gives the low
 * result, op_sel_hi the half for the high result; neg_lo/neg_hi negate. */
static void t_packed_f32(void **st) {
  (void)st;
  tb_run r;
  emu_wave *w = run(&r, "gfx950",
                    "  v_cvt_f32_u32 v2, v0\n  v_mov_b32 v3, 2.0\n"      /* a = (l, 2) */
                    "  v_mov_b32 v4, 4.0\n  v_mov_b32 v5, 0.5\n"        /* b = (4, 0.5) */
                    "  v_mov_b32 v6, 1.0\n  v_mov_b32 v7, -1.0\n"       /* c = (1, -1) */
                    "  v_pk_fma_f32 v[10:11], v[2:3], v[4:5], v[6:7]\n"   /* (4l+1, 0) */
                    "  v_pk_mul_f32 v[12:13], v[2:3], v[4:5] op_sel:[1,0] op_sel_hi:[0,1]\n" /* (2*4, l*0.5) */
                    "  v_pk_add_f32 v[14:15], v[2:3], v[4:5] neg_lo:[1,0] neg_hi:[0,1]\n");  /* (4-l, 1.5) */
  for (int l = 0; l < 64; l++) {
    float x = (float)l;
    assert_int_equal(w->v[10][l], fbits(4.0f * x + 1.0f));
    assert_int_equal(w->v[11][l], fbits(0.0f));
    assert_int_equal(w->v[12][l], fbits(8.0f));
    assert_int_equal(w->v[13][l], fbits(0.5f * x));
    assert_int_equal(w->v[14][l], fbits(4.0f - x));
    assert_int_equal(w->v[15][l], fbits(1.5f));
  }
  tb_run_free(&r);
}

/* LLVM's own expansions: 32-bit udiv/urem (v_rcp_iflag_f32, mul_hi, carry
 * fix-ups) and f32 -> bf16 (software RNE on gfx942, v_cvt_pk_bf16_f32 on
 * gfx950), checked against C on random inputs. */
static const char *k_ir =
    "target triple = \"amdgcn-amd-amdhsa\"\n"
    "declare i32 @llvm.amdgcn.workitem.id.x()\n"
    "define amdgpu_kernel void @k(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %q, ptr addrspace(1) %f) {\n"
    "  %t = call i32 @llvm.amdgcn.workitem.id.x()\n"
    "  %pa = getelementptr i32, ptr addrspace(1) %a, i32 %t\n"
    "  %pb = getelementptr i32, ptr addrspace(1) %b, i32 %t\n"
    "  %x = load i32, ptr addrspace(1) %pa\n  %y = load i32, ptr addrspace(1) %pb\n"
    "  %d = udiv i32 %x, %y\n  %m = urem i32 %x, %y\n"
    "  %i2 = mul i32 %t, 2\n"
    "  %pq = getelementptr i32, ptr addrspace(1) %q, i32 %i2\n  store i32 %d, ptr addrspace(1) %pq\n"
    "  %pq1 = getelementptr i32, ptr addrspace(1) %pq, i32 1\n  store i32 %m, ptr addrspace(1) %pq1\n"
    "  %xf = bitcast i32 %x to float\n  %h = fptrunc float %xf to bfloat\n"
    "  %pf = getelementptr bfloat, ptr addrspace(1) %f, i32 %t\n  store bfloat %h, ptr addrspace(1) %pf\n"
    "  ret void\n}\n";

static uint16_t bf16_rne_ref(uint32_t u) {
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffff)) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

static void run_div(const char *arch) {
  tmem t;
  OK(tmem_open(&t, arch, k_ir));
  enum { N = 256 };
  uint32_t a[N], b[N], q[2 * N];
  uint16_t f[N];
  uint64_t s = 12345;
  for (int i = 0; i < N; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    a[i] = (uint32_t)(s >> 32);
    b[i] = (uint32_t)(s >> (i % 31)) | 1u;
    if (i % 7 == 0) b[i] = 1u + (uint32_t)(s % 13);
    if (i == 3) { a[i] = 0xffffffffu; b[i] = 0xffffffffu; }
    if (i == 5) a[i] = 0x3f808000u;   /* bf16 tie to even (down) */
    if (i == 6) a[i] = 0x3f818000u;   /* bf16 tie to even (up) */
  }
  uint64_t da = tmem_buf(&t, a, sizeof a), db = tmem_buf(&t, b, sizeof b), dq = tmem_buf(&t, NULL, sizeof q),
           df = tmem_buf(&t, NULL, sizeof f);
  uint64_t args[4] = {da, db, dq, df};
  OK(tmem_run(&t, 1, N, args, sizeof args));
  OK(emu_mem_d2h(t.mem, q, dq, sizeof q));
  OK(emu_mem_d2h(t.mem, f, df, sizeof f));
  for (int i = 0; i < N; i++) {
    if (q[2 * i] != a[i] / b[i] || q[2 * i + 1] != a[i] % b[i])
      fail_msg("%s: %u / %u: got %u r %u", arch, a[i], b[i], q[2 * i], q[2 * i + 1]);
    if (f[i] != bf16_rne_ref(a[i])) fail_msg("%s: bf16(0x%08x) = 0x%04x, want 0x%04x", arch, a[i], f[i], bf16_rne_ref(a[i]));
  }
  tmem_close(&t);
}
static void t_llvm_div_bf16(void **st) { (void)st; run_div("gfx942"); run_div("gfx950"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(t_int_ops),       cmocka_unit_test(t_mad_legacy_u16), cmocka_unit_test(t_ashrrev_i16), cmocka_unit_test(t_exec_and_carry), cmocka_unit_test(t_lanes_and_agpr),
      cmocka_unit_test(t_f32_modifiers), cmocka_unit_test(t_sdwa_dpp_cmpx),
      cmocka_unit_test(t_cmp_16),  cmocka_unit_test(t_conversions),   cmocka_unit_test(t_f16_conversions),
      cmocka_unit_test(t_fp8_edges),     cmocka_unit_test(t_valu64),        cmocka_unit_test(t_packed_f32),      cmocka_unit_test(t_llvm_div_bf16),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
