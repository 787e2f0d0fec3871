/* arch tables: every value checked against docs/isa-notes.md and llc-22 facts
 * written here independently of arch.c (docs/isa-notes.md has the commands). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "arch/arch.h"

static void test_gfx942(void **st) {
  (void)st;
  const cj_arch *a = cj_arch_from_name("gfx942");
  assert_non_null(a);
  assert_string_equal(a->name, "gfx942");
  assert_int_equal(a->elf_mach, 0x4c);
  assert_int_equal(a->elf_flags, 0x54c); /* mach | xnack any | sramecc any (llvm-readelf-22) */
  assert_int_equal(a->lds_bytes, 64 * 1024);
  assert_int_equal(a->cu_count_default, 304);
  assert_int_equal(a->fp8, CJ_FP8_E4M3FNUZ);
  assert_int_equal(a->mfma_bf16, CJ_MFMA_BF16_16x16x16);
  assert_int_equal(a->mfma_bf16_k, 16);
  assert_int_equal(a->mfma_fp8, CJ_MFMA_FP8_16x16x32);
  assert_int_equal(a->mfma_fp8_k, 32);
  assert_int_equal(a->dma_max_bytes, 4);
  assert_false(a->has_dma_dwordx4);
  assert_false(a->has_ocp_fp8);
  assert_int_equal(a->buffer_flags, 159744); /* (7<<12)|(4<<15) */
  assert_int_equal(a->wave_size, 64);
  assert_int_equal(a->max_block_threads, 1024);
  assert_int_equal(a->vgprs, 512);
  assert_int_equal(a->lds_banks, 32); /* docs/emulator.md "LDS bank model" */
}

static void test_gfx950(void **st) {
  (void)st;
  const cj_arch *a = cj_arch_from_name("gfx950");
  assert_non_null(a);
  assert_string_equal(a->name, "gfx950");
  assert_int_equal(a->elf_mach, 0x4f);
  assert_int_equal(a->elf_flags, 0x54f);
  assert_int_equal(a->lds_bytes, 160 * 1024);
  assert_int_equal(a->cu_count_default, 256);
  assert_int_equal(a->fp8, CJ_FP8_E4M3FN);
  assert_int_equal(a->mfma_bf16, CJ_MFMA_BF16_16x16x32);
  assert_int_equal(a->mfma_bf16_k, 32);
  assert_int_equal(a->mfma_fp8, CJ_MFMA_F8F6F4_16x16x128);
  assert_int_equal(a->mfma_fp8_k, 128);
  assert_int_equal(a->dma_max_bytes, 16);
  assert_true(a->has_dma_dwordx4);
  assert_true(a->has_ocp_fp8);
  assert_int_equal(a->buffer_flags, 0x27000);
  assert_string_equal(a->features, "");
  assert_int_equal(a->lds_banks, 64);
}

static void test_names_and_list(void **st) {
  (void)st;
  assert_null(cj_arch_from_name(NULL));
  assert_null(cj_arch_from_name(""));
  assert_null(cj_arch_from_name("gfx90a"));
  assert_null(cj_arch_from_name("gfx950:xnack-")); /* a bare CPU name only */
  assert_null(cj_arch_from_name("GFX942"));
  int n = 0;
  const cj_arch *const *l = cj_arch_list(&n);
  assert_int_equal(n, 2);
  assert_ptr_equal(l[0], cj_arch_from_name("gfx942"));
  assert_ptr_equal(l[1], cj_arch_from_name("gfx950"));
  assert_non_null(cj_arch_list(NULL));
}

static void test_dma_widths(void **st) {
  (void)st;
  const cj_arch *a942 = cj_arch_from_name("gfx942"), *a950 = cj_arch_from_name("gfx950");
  /* llc-22: ubyte/ushort/dword lds on both; dwordx3/x4 only on gfx950. */
  const uint32_t all[] = {1, 2, 4};
  for (size_t i = 0; i < 3; i++) {
    assert_true(cj_arch_dma_ok(a942, all[i]));
    assert_true(cj_arch_dma_ok(a950, all[i]));
  }
  assert_false(cj_arch_dma_ok(a942, 12));
  assert_false(cj_arch_dma_ok(a942, 16));
  assert_true(cj_arch_dma_ok(a950, 12));
  assert_true(cj_arch_dma_ok(a950, 16));
  assert_false(cj_arch_dma_ok(a950, 8)); /* no dwordx2 lds form */
  assert_false(cj_arch_dma_ok(a950, 0));
  assert_false(cj_arch_dma_ok(NULL, 4));
}

/* The emulator's facts: its time model (clock, CUs x SIMDs) and the lookup
 * by a code object's ELF mach that replaced its own arch enum. */
/* The named capabilities (arch.h): both arches are wave64 MFMA parts with
 * AGPRs and gfx9's one s_waitcnt (docs/isa-notes.md §6); the simulation's
 * extra XDL wait state is CDNA4's (its ISA guide's dependency table). The
 * encodings are LLVM's (llvm-mc-22 -mcpu=gfx942 --show-encoding):
 * "s_waitcnt vmcnt(0)" is simm16 0x0f70, "s_waitcnt lgkmcnt(0)" 0xc07f. */
static void test_capabilities(void **st) {
  (void)st;
  const char *const names[] = {"gfx942", "gfx950"};
  for (int i = 0; i < 2; i++) {
    const cj_arch *a = cj_arch_from_name(names[i]);
    assert_int_equal(a->wave_size, 64);
    assert_int_equal(a->max_block_threads, 1024);
    assert_int_equal(a->matrix, CJ_MATRIX_MFMA);
    assert_ptr_equal(a->waitcnt, &cj_waitcnt_gfx9);
    assert_true(a->has_agprs);
    assert_int_equal(a->xdl_dep_extra, i == 1 ? 1 : 0);
  }
  const cj_waitcnt_model *m = &cj_waitcnt_gfx9;
  assert_int_equal(m->vmcnt_max, 63);
  assert_int_equal(m->expcnt_max, 7);
  assert_int_equal(m->lgkmcnt_max, 15);
  assert_int_equal(cj_waitcnt_encode(m, 0, 7, 15), 0x0f70);
  assert_int_equal(cj_waitcnt_encode(m, 63, 7, 0), 0xc07f);
  assert_int_equal(cj_waitcnt_encode(m, 1000, 1000, 1000), 0xcf7f); /* clamped: no wait on any */
  assert_int_equal(cj_waitcnt_encode(m, 17, 7, 15), 0x4f71);       /* vmcnt 17 = 0b01_0001: [15:14] 1, [3:0] 1 */
}

static void test_emulator_facts(void **st) {
  (void)st;
  const cj_arch *a942 = cj_arch_from_name("gfx942"), *a950 = cj_arch_from_name("gfx950");
  assert_int_equal(a942->clock_mhz, 2100); /* MI300X peak engine clock */
  assert_int_equal(a950->clock_mhz, 2400); /* MI355X */
  assert_int_equal(a942->simds_per_cu, 4);
  assert_int_equal(a950->simds_per_cu, 4);
  assert_false(a942->llvm_vop3_literal);
  assert_true(a950->llvm_vop3_literal);
  assert_ptr_equal(cj_arch_from_elf_mach(0x4c), a942);
  assert_ptr_equal(cj_arch_from_elf_mach(0x4f), a950);
  assert_null(cj_arch_from_elf_mach(0x40)); /* gfx900 */
}

/* The bounds model's facts (docs/performance.md, "Rates"): HBM bandwidth,
 * LDS per CU, wave slots and VGPR granule per arch, and every MFMA row's
 * cycles from the dense peak rate written here: bf16 512 FLOPs per clock per
 * SIMD on gfx942 (1307.4 TFLOPS / (304 CUs x 4 SIMDs x 2.1 GHz)), 1024 on
 * gfx950; fp8 twice those. */
static void test_bounds_facts(void **st) {
  (void)st;
  const cj_arch *a942 = cj_arch_from_name("gfx942"), *a950 = cj_arch_from_name("gfx950");
  assert_int_equal(a942->hbm_gbs, 5300); /* MI300X 5.3 TB/s */
  assert_int_equal(a950->hbm_gbs, 8000); /* MI355X 8 TB/s */
  assert_int_equal(a942->lds_cu_bytes, 64 * 1024);
  assert_int_equal(a950->lds_cu_bytes, 160 * 1024);
  for (int i = 0; i < 2; i++) {
    const cj_arch *a = i ? a950 : a942;
    assert_int_equal(a->waves_per_simd, 8);
    assert_int_equal(a->vgpr_granule, 8);
    const struct { cj_mfma_kind kind; uint32_t flops_per_clk; } rows[] = {
        {a->mfma_bf16, i ? 1024 : 512}, {a->mfma_fp8, i ? 2048 : 1024}};
    for (int r = 0; r < 2; r++) {
      const cj_mfma_row *mf = cj_mfma_row_of(rows[r].kind);
      assert_non_null(mf);
      assert_int_equal(mf->cycles, 2 * mf->m * mf->n * mf->k / rows[r].flops_per_clk);
    }
  }
  assert_string_equal(cj_arch_names(), "gfx942, gfx950"); /* the messages' list, from the table */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gfx942),
      cmocka_unit_test(test_gfx950),
      cmocka_unit_test(test_names_and_list),
      cmocka_unit_test(test_dma_widths),
      cmocka_unit_test(test_emulator_facts),
      cmocka_unit_test(test_bounds_facts),
      cmocka_unit_test(test_capabilities),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
