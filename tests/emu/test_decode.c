/* The decoder: the ISA table, text parsing of operands and modifiers
 * (expected fields worked out by hand from the text), fields read from the
 * encoding (s_waitcnt, branch targets), and the rule that undecodable bytes
 * or unknown instructions fail only when execution reaches them, with the
 * kernel, offset and text in the error. Also: every instruction of the
 * layout and conv kernels LLVM 22 builds for both archs is in the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/kplan.h"
#include "pipeline/build.h"
#include "support.h"

#define OK(x) do { convjit_status s_ = (x); if (s_ != CONVJIT_OK) fail_msg("%s -> %d: %s", #x, s_, cj_error_text()); } while (0)

static void t_table(void **st) {
  (void)st;
  int n = 0;
  const emu_isa_row *rows = emu_isa_rows(&n);
  assert_true(n > 200);
  for (int i = 0; i < n; i++) {
    const emu_isa_row *r = emu_isa_lookup(rows[i].name);
    assert_non_null(r);
    assert_ptr_equal(r, &rows[i]); /* names are unique */
    assert_non_null(rows[i].fn);
    assert_true(rows[i].cls < EMU_CLASS_COUNT);
  }
  assert_null(emu_isa_lookup("v_sin_f32"));
  assert_null(emu_isa_lookup(""));
}

static void t_parse_valu(void **st) {
  (void)st;
  emu_inst in;
  OK(emu_decode_text("\tv_add_co_u32_e64 v0, s[2:3], v1, -4", 0x10, NULL, 8, &in));
  assert_null(in.bad);
  assert_int_equal(in.op, EMU_OP_V_ADD_CO_U32);
  assert_int_equal(in.enc, EMU_ENC_E64);
  assert_int_equal(in.nops, 4);
  assert_int_equal(in.ndst, 2);
  assert_int_equal(in.o[1].kind, EMU_OPK_SGPR);
  assert_int_equal(in.o[1].reg, 2);
  assert_int_equal(in.o[1].count, 2);
  assert_true(in.o[1].flags & EMU_OPF_WRITE);
  assert_int_equal(in.o[3].kind, EMU_OPK_IMM);
  assert_int_equal(in.o[3].imm32, 0xfffffffcu);
  assert_true(in.o[3].imm64 == 0xfffffffffffffffcull);
  assert_true(in.o[2].flags & EMU_OPF_READ);

  OK(emu_decode_text("v_fma_f32 v0, -v1, |v2|, 0.5 clamp mul:2", 0, NULL, 8, &in));
  assert_null(in.bad);
  assert_true(in.o[1].flags & EMU_OPF_NEG);
  assert_true(in.o[2].flags & EMU_OPF_ABS);
  assert_int_equal(in.o[3].imm32, 0x3f000000u);
  assert_true(in.o[3].flags & EMU_OPF_FLOAT);
  assert_int_equal(in.clamp, 1);
  assert_int_equal(in.omod, 1);

  OK(emu_decode_text("v_mov_b32_sdwa v1, sext(v2) dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_2", 0, NULL, 8, &in));
  assert_null(in.bad);
  assert_int_equal(in.enc, EMU_ENC_SDWA);
  assert_int_equal(in.dst_sel, EMU_SEL_WORD1);
  assert_int_equal(in.dst_unused, EMU_UNUSED_PRESERVE);
  assert_int_equal(in.o[1].sel, EMU_SEL_BYTE2);
  assert_true(in.o[1].flags & EMU_OPF_SEXT);

  OK(emu_decode_text("v_mov_b32_dpp v0, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xa", 0, NULL, 8, &in));
  assert_int_equal(in.dpp_ctrl, EMU_DPP_QUAD_PERM);
  assert_int_equal(in.dpp_val, 1 | 0 << 2 | 3 << 4 | 2 << 6);
  assert_int_equal(in.bank_mask, 0xa);

  /* VOP3 op_sel: the last element is the destination (normalised to bit 3) */
  OK(emu_decode_text("v_cvt_pk_fp8_f32 v4, s1, v5 op_sel:[0,0,1]", 0, NULL, 8, &in));
  assert_null(in.bad);
  assert_int_equal(in.op_sel, 8);

  OK(emu_decode_text("v_cmp_gt_u32_e32 vcc, s10, v4", 0, NULL, 4, &in));
  assert_int_equal(in.o[0].kind, EMU_OPK_VCC);
  assert_int_equal(in.o[0].count, 2);

  OK(emu_decode_text("v_mfma_f32_16x16x128_f8f6f4 a[0:3], v[0:7], v[8:15], a[4:7] cbsz:1 blgp:1", 0, NULL, 8, &in));
  assert_null(in.bad);
  assert_int_equal(in.cls, EMU_CLASS_MFMA);
  assert_int_equal(in.o[0].kind, EMU_OPK_AGPR);
  assert_int_equal(in.o[1].count, 8);
  assert_int_equal(in.o[3].reg, 4);
  assert_int_equal(in.cbsz, 1);
  assert_int_equal(in.blgp, 1);

  OK(emu_decode_text("s_mov_b32 s7, 0x27000", 0, NULL, 8, &in));
  assert_true(in.o[1].flags & EMU_OPF_LITERAL);
  assert_int_equal(in.o[1].imm32, 0x27000);

  /* unknown mnemonic / modifier: bad, with a reason, and no handler */
  OK(emu_decode_text("v_sin_f32 v0, v1", 0, NULL, 4, &in));
  assert_non_null(in.bad);
  assert_null(in.fn);
  OK(emu_decode_text("v_add_u32_e32 v0, v1, v2 frobnicate:3", 0, NULL, 4, &in));
  assert_non_null(in.bad);
  OK(emu_decode_text("v_add_u32_e32 v0, ttmp5, v2", 0, NULL, 4, &in));
  assert_non_null(in.bad);
}

static void t_parse_mem_and_sopp(void **st) {
  (void)st;
  emu_inst in;
  if (emu_isa_lookup("buffer_load_dword")) {
    OK(emu_decode_text("buffer_load_dword v1, s[4:7], s2 offen offset:16 lds", 0, NULL, 8, &in));
    assert_null(in.bad);
    assert_int_equal(in.mflags, EMU_M_OFFEN | EMU_M_LDS);
    assert_int_equal(in.offset, 16);
    assert_int_equal(in.o[1].count, 4);
    assert_int_equal(in.o[2].reg, 2);
  }
  if (emu_isa_lookup("ds_read2_b32")) {
    OK(emu_decode_text("ds_read2_b32 v[0:1], v2 offset0:3 offset1:17", 0, NULL, 8, &in));
    assert_null(in.bad);
    assert_int_equal(in.offset0, 3);
    assert_int_equal(in.offset1, 17);
  }
  /* s_waitcnt fields come from simm16: vmcnt {[15:14],[3:0]}, expcnt [6:4], lgkmcnt [11:8] */
  uint8_t w1[4] = {0x70, 0x00, 0x8c, 0xbf}; /* 0xbf8c0070: vmcnt(0) lgkmcnt(0) */
  OK(emu_decode_text("s_waitcnt vmcnt(0) lgkmcnt(0)", 0, w1, 4, &in));
  assert_int_equal(in.vmcnt, 0);
  assert_int_equal(in.lgkmcnt, 0);
  assert_int_equal(in.expcnt, 7);
  uint8_t w2[4] = {0x7f, 0xc0, 0x8c, 0xbf}; /* 0xbf8cc07f: lgkmcnt(0) only */
  OK(emu_decode_text("s_waitcnt lgkmcnt(0)", 0, w2, 4, &in));
  assert_int_equal(in.vmcnt, 63);
  assert_int_equal(in.lgkmcnt, 0);
  uint8_t w3[4] = {0x73, 0x41, 0x8c, 0xbf}; /* 0xbf8c4173: vmcnt(16+3) lgkmcnt(1) */
  OK(emu_decode_text("s_waitcnt vmcnt(19) lgkmcnt(1)", 0, w3, 4, &in));
  assert_int_equal(in.vmcnt, 19);
  assert_int_equal(in.lgkmcnt, 1);
  /* branch target = pc + 4 + 4*simm16 (llvm-objdump shows <k+0x9c> for this word at 0x70) */
  uint8_t b1[4] = {0x0a, 0x00, 0x88, 0xbf};
  OK(emu_decode_text("s_cbranch_execz 10", 0x70, b1, 4, &in));
  assert_int_equal(in.op, EMU_OP_S_CBRANCH_EXECZ);
  assert_int_equal(in.target, 0x9c);
  uint8_t b2[4] = {0xfd, 0xff, 0x82, 0xbf}; /* simm16 = -3 */
  OK(emu_decode_text("s_branch 65533", 0x40, b2, 4, &in));
  assert_int_equal(in.target, 0x40 + 4 - 12);
}

/* An instruction the table lacks: fine when skipped, an error naming the
 * kernel, the offset and the text when reached. */
static void t_unknown_only_when_reached(void **st) {
  (void)st;
  tb_run r;
  OK(tb_asm_run(&r, "gfx950", "  s_branch .Lover\n  v_sin_f32 v1, v2\n.Lover:\n  s_mov_b32 s10, 1\n", 1, 64, NULL, 0, 0, 0));
  assert_int_equal(r.wave->s[10], 1);
  tb_run_free(&r);
  convjit_status s = tb_asm_run(&r, "gfx950", "  s_mov_b32 s10, 1\n  v_sin_f32 v1, v2\n", 1, 64, NULL, 0, 0, 0);
  assert_int_equal(s, CONVJIT_ERR_EMULATION);
  const char *e = cj_error_text();
  assert_non_null(strstr(e, "kernel k"));
  assert_non_null(strstr(e, "v_sin_f32_e32 v1, v2"));
  assert_non_null(strstr(e, "entry+0x4"));
  tb_run_free(&r);
  /* bytes that do not decode: a gfx950-only instruction in a gfx942-tagged .long */
  s = tb_asm_run(&r, "gfx942", "  .long 0xd2680003\n  .long 0x00020300\n", 1, 64, NULL, 0, 0, 0);
  /* (llvm-objdump-22 --mcpu=gfx942 prints it as ".long 0xd2680003") */
  assert_int_equal(s, CONVJIT_ERR_EMULATION);
  assert_non_null(strstr(cj_error_text(), "entry+0x0"));
  assert_non_null(strstr(cj_error_text(), "do not decode"));
  tb_run_free(&r);
}

/* Everything LLVM 22 emits for convjit's layout and conv kernels decodes
 * into table rows (up to the last s_endpgm; padding after it is ignored). */
static void check_all_known(const cj_kplan *p) {
  cj_built b;
  memset(&b, 0, sizeof b);
  OK(cj_build_kernel(p, 0, &b));
  emu_ctx *c;
  OK(emu_ctx_create(p->arch->name, NULL, &c));
  emu_module *m;
  OK(emu_module_load(c, b.code_object.data, b.code_object.size, &m));
  uint32_t last = 0;
  for (uint32_t i = 0; i < m->ninsts; i++) if (m->insts[i].op == EMU_OP_S_ENDPGM) last = m->insts[i].pc;
  assert_true(last > 0);
  for (uint32_t i = 0; i < m->ninsts && m->insts[i].pc <= last; i++)
    if (m->insts[i].bad) fail_msg("%s %s +0x%x: '%s': %s", p->arch->name, p->name, m->insts[i].pc, m->insts[i].text, m->insts[i].bad);
  emu_module_unload(m);
  emu_ctx_destroy(c);
  cj_built_free(&b);
}

static void t_coverage_of_convjit_kernels(void **st) {
  (void)st;
  const char *archs[] = {"gfx942", "gfx950"};
  for (int a = 0; a < 2; a++) {
    const cj_arch *ar = cj_arch_from_name(archs[a]);
    cj_kplan p;
    OK(cj_kplan_transpose_init(&p, ar, 2, 2, 24, 1000));
    check_all_known(&p);
    OK(cj_kplan_transpose_init(&p, ar, 1, 1, 1024, 3456000));
    check_all_known(&p);
    cj_conv_geom g;
    memset(&g, 0, sizeof g);
    g.dtype = CONVJIT_DTYPE_BF16;
    g.n = 1; g.c = 64; g.d = 4; g.h = 16; g.w = 16; g.k = 128; g.t = 3; g.r = 3; g.s = 3;
    for (int i = 0; i < 3; i++) { g.stride[i] = 1; g.dil[i] = 1; g.pad_lo[i] = 1; g.pad_hi[i] = 1; }
    OK(cj_conv_geom_derive(&g));
    cj_conv_opts o;
    memset(&o, 0, sizeof o);
    cj_epilogue bias = {0};
    cj_epi_add(&bias, CJ_EPI_BIAS);
    OK(cj_kplan_conv_init(&p, ar, &g, &o, &bias));
    check_all_known(&p);
    o.splitk = 2;
    OK(cj_kplan_conv_init(&p, ar, &g, &o, &bias));
    check_all_known(&p);
    cj_kplan f;
    OK(cj_kplan_finalize_init(&f, ar, &p.u.conv, &bias));
    check_all_known(&f);
  }
}

/* gfx950 f8f6f4 MFMAs whose A or B field is not a VGPR/AGPR crash LLVM 22's
 * disassembler (found by fuzz_codeobj; four such encodings from a
 * fork-per-instruction search): they must decode as bad, without asking
 * LLVM, while the same MFMA with VGPR operands (llvm-mc's encoding of
 * v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3]) decodes. */
static void t_f8f6f4_non_vgpr_operand(void **st) {
  (void)st;
  static const uint8_t bytes[][8] = {
      {0x58, 0x04, 0xae, 0xd3, 0xcc, 0x8c, 0xd1, 0xe4}, /* 32x32x64, A = inline constant -12, fp4 */
      {0x81, 0x84, 0xad, 0xd3, 0x77, 0x8a, 0x2b, 0x88}, /* 16x16x128, A = ttmp11, fp4 */
      {0x87, 0x02, 0xae, 0xd3, 0xfc, 0xe5, 0x54, 0x72}, /* B = s114, fp6 */
      {0x38, 0x02, 0xad, 0xd3, 0x90, 0x92, 0xe9, 0xf7}, /* A = inline constant 16 */
      {0x00, 0x00, 0xad, 0xd3, 0x04, 0x19, 0x02, 0x04}, /* valid: A v[4:11], B v[12:19] */
  };
  enum { N = sizeof bytes / sizeof bytes[0] };
  for (int i = 0; i < N; i++) {
    cj_codeobj co;
    memset(&co, 0, sizeof co);
    co.text.data = (uint8_t *)bytes[i];
    co.text.size = 8;
    co.text_vaddr = 0x1000;
    emu_module m;
    memset(&m, 0, sizeof m);
    m.co = &co;
    m.arch = cj_arch_from_name("gfx950");
    OK(emu_decode_module(&m));
    assert_true(m.ninsts >= 1);
    if (i < N - 1) {
      assert_true(m.insts[0].bad);
    } else {
      assert_false(m.insts[0].bad);
      assert_int_equal(m.insts[0].size, 8);
    }
    emu_decode_free(&m);
  }
}

/* Robustness: random words through the disassembler and the text parser
 * never crash; whatever decodes either parses into a table row or is bad
 * with a reason. */
static void t_random_bytes(void **st) {
  (void)st;
  const cj_arch *archs[2] = {cj_arch_from_name("gfx942"), cj_arch_from_name("gfx950")};
  enum { NW = 16384 };
  uint32_t *words = malloc(NW * 4);
  assert_non_null(words);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < NW; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    words[i] = (uint32_t)x;
    if (i % 3 == 0) words[i] = (words[i] & 0x03ffffffu) | 0xd0000000u; /* bias toward VOP3/VOP3P/MFMA space */
    if (i % 5 == 0) words[i] = (words[i] & 0x00ffffffu) | 0xbe000000u; /* SOP1/SOPK/SOPP space */
  }
  for (int a = 0; a < 2; a++) {
    cj_codeobj co;
    memset(&co, 0, sizeof co);
    co.text.data = (uint8_t *)words;
    co.text.size = NW * 4;
    co.text_vaddr = 0x1000;
    emu_module m;
    memset(&m, 0, sizeof m);
    m.co = &co;
    m.arch = archs[a];
    OK(emu_decode_module(&m));
    uint32_t good = 0, bad = 0;
    for (uint32_t i = 0; i < m.ninsts; i++) {
      const emu_inst *in = &m.insts[i];
      assert_non_null(in->text);
      assert_true(in->size >= 4 && in->size <= 16);
      if (in->bad) { assert_null(in->fn); bad++; } else { assert_non_null(in->fn); good++; }
    }
    assert_true(good > 100 && bad > 100);
    emu_decode_free(&m);
  }
  free(words);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(t_table),
      cmocka_unit_test(t_parse_valu),
      cmocka_unit_test(t_parse_mem_and_sopp),
      cmocka_unit_test(t_unknown_only_when_reached),
      cmocka_unit_test(t_coverage_of_convjit_kernels),
      cmocka_unit_test(t_random_bytes),
      cmocka_unit_test(t_f8f6f4_non_vgpr_operand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
