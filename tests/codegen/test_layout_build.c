/* Layout kernels through the whole pipeline (codegen -> -O3 -> ld.lld ->
 * metadata) on both arches. Expectations come from the plan's definition
 * and the kernel's signature, not from the builder:
 *  - every module passes LLVMVerifyModule;
 *  - no spills, no scratch, group segment = the plan's LDS bytes;
 *  - explicit args (x, y) at kernarg offsets 0 and 8, 8 bytes, global buffers;
 *  - the ELF e_flags are the arch's; the assembly uses LDS (ds_) and, where
 *    the plan chose 16-byte accesses, dwordx4 buffer loads/stores;
 *  - the same plan built twice gives byte-identical code objects.
 * The numerical check runs on the emulator (tests/emu). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/TargetMachine.h>
#include "codegen/codegen.h"
#include "codegen/irb.h"
#include "pipeline/build.h"
#include "pipeline/compile.h"

typedef struct shape {
  const char *why; /* the path it covers */
  uint32_t eb;
  uint64_t n, c, s;
} shape;

static const shape SHAPES[] = {
    {"BIG fp8 (> 2^31 elements): per-block rebase, 16 B both sides", 1, 1, 1024, 3456000},
    {"BIG bf16 (> 2^31 elements, 7 GB)", 2, 1, 1024, 3456000},
    {"odd bf16: partial s tile, c < 64", 2, 2, 24, 1000},
    {"odd fp8: 8-byte accesses, partial tiles", 1, 2, 24, 1000},
    {"aligned bf16: full tiles, 2 load passes", 2, 2, 128, 4096},
    {"aligned fp8: one tile", 1, 1, 64, 64},
    {"fp8 scalar path: 1-byte loads and stores", 1, 1, 3, 1001},
    {"bf16 scalar path: 2-byte accesses, 3 samples", 2, 3, 5, 7},
};

static void check_built(const cj_kplan *p, const cj_built *b) {
  const cj_kernel_info *k = b->info;
  assert_non_null(k);
  assert_string_equal(k->name, p->name);
  assert_int_equal(cj_check_resources(k, p->arch), CONVJIT_OK);
  assert_int_equal(k->vgpr_spill_count, 0);
  assert_int_equal(k->sgpr_spill_count, 0);
  assert_int_equal(k->private_segment_size, 0);
  assert_int_equal(k->group_segment_size, p->lds_bytes);
  assert_int_equal(k->max_flat_workgroup_size, p->block[0] * p->block[1] * p->block[2]);
  /* explicit args: two 8-byte global pointers at 0 and 8 */
  uint32_t nexp = 0;
  for (uint32_t i = 0; i < k->nargs; i++) {
    if (k->args[i].kind != CJ_ARG_GLOBAL_BUFFER && k->args[i].kind != CJ_ARG_BY_VALUE) continue;
    assert_true(nexp < p->nargs);
    assert_int_equal(k->args[i].offset, 8 * nexp);
    assert_int_equal(k->args[i].size, 8);
    assert_int_equal(k->args[i].kind, CJ_ARG_GLOBAL_BUFFER);
    nexp++;
  }
  assert_int_equal(nexp, p->nargs);
  /* ELF64 e_flags at byte 48. */
  assert_true(b->code_object.size > 52);
  uint32_t ef;
  memcpy(&ef, b->code_object.data + 48, 4);
  assert_int_equal(ef, p->arch->elf_flags);
  assert_int_equal(b->co->elf_mach, p->arch->elf_mach);
}

static void build_one(const cj_kplan *p, cj_built *b) {
  convjit_status st = cj_build_kernel(p, CJ_BUILD_KEEP_ASM, b);
  if (st != CONVJIT_OK) fail_msg("%s: %s", p->name, cj_error_text());
  check_built(p, b);
}

/* Builds p (checked as above) and expects `needle` in its assembly. */
static void build_expect_asm(const cj_kplan *p, const char *needle) {
  cj_built b = {0};
  build_one(p, &b);
  if (!strstr((const char *)b.asm_text.data, needle)) fail_msg("%s: no %s in the assembly", p->name, needle);
  cj_built_free(&b);
}

static void test_verify_modules(void **state) {
  (void)state;
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (int a = 0; a < na; a++)
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
      cj_kplan p;
      assert_int_equal(cj_kplan_transpose_init(&p, arches[a], SHAPES[i].eb, SHAPES[i].n, SHAPES[i].c, SHAPES[i].s),
                       CONVJIT_OK);
      LLVMContextRef ctx = LLVMContextCreate();
      LLVMModuleRef m = NULL;
      assert_int_equal(cj_codegen_build(&p, ctx, &m), CONVJIT_OK);
      char *msg = NULL;
      if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) fail_msg("%s (%s): %s", p.name, SHAPES[i].why, msg);
      LLVMDisposeMessage(msg);
      size_t len = 0;
      assert_string_equal(LLVMGetModuleIdentifier(m, &len), p.name);
      assert_string_equal(LLVMGetTarget(m), "amdgcn-amd-amdhsa");
      assert_non_null(LLVMGetNamedFunction(m, p.name));
      LLVMDisposeModule(m);
      LLVMContextDispose(ctx);
    }
}

static void test_datalayout_matches_target(void **state) {
  (void)state;
  cj_llvm_init();
  LLVMTargetRef t = NULL;
  char *err = NULL;
  assert_int_equal(LLVMGetTargetFromTriple("amdgcn-amd-amdhsa", &t, &err), 0);
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (int a = 0; a < na; a++) {
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(t, "amdgcn-amd-amdhsa", arches[a]->name, arches[a]->features,
                                                      LLVMCodeGenLevelAggressive, LLVMRelocPIC, LLVMCodeModelDefault);
    assert_non_null(tm);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    char *s = LLVMCopyStringRepOfTargetData(td);
    assert_string_equal(s, CJ_AMDGPU_DATALAYOUT);
    LLVMDisposeMessage(s);
    LLVMDisposeTargetData(td);
    LLVMDisposeTargetMachine(tm);
  }
}

static void test_transpose_compiles(void **state) {
  (void)state;
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (int a = 0; a < na; a++)
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
      cj_kplan p;
      assert_int_equal(cj_kplan_transpose_init(&p, arches[a], SHAPES[i].eb, SHAPES[i].n, SHAPES[i].c, SHAPES[i].s),
                       CONVJIT_OK);
      cj_built b = {0};
      build_one(&p, &b);
      const char *as = (const char *)b.asm_text.data;
      assert_non_null(as);
      assert_non_null(strstr(as, "ds_write"));
      assert_non_null(strstr(as, "ds_read"));
      assert_non_null(strstr(as, "s_barrier"));
      assert_null(strstr(as, "scratch_"));
      if (p.u.tr.load_bytes == 16) assert_non_null(strstr(as, "buffer_load_dwordx4"));
      if (p.u.tr.store_bytes == 16) assert_non_null(strstr(as, "buffer_store_dwordx4"));
      if (p.u.tr.load_bytes == 1) assert_non_null(strstr(as, "buffer_load_ubyte"));
      if (p.u.tr.store_bytes == 1) assert_non_null(strstr(as, "buffer_store_byte"));
      if (p.u.tr.load_bytes == 2) assert_non_null(strstr(as, "buffer_load_ushort"));
      if (p.u.tr.store_bytes == 2) assert_non_null(strstr(as, "buffer_store_short"));
      cj_log(CJ_LOG_INFO, "%s %s: vgpr %u sgpr %u lds %u compile %.1f ms (%s)", arches[a]->name, p.name,
             b.info->vgpr_count, b.info->sgpr_count, b.info->group_segment_size, b.compile_ms, SHAPES[i].why);
      cj_built_free(&b);
    }
}

static void test_transpose_cvt_compiles(void **state) {
  (void)state;
  static const uint64_t sh[][3] = {{1, 1024, 3456000}, {2, 24, 1000}, {1, 3, 1001}, {1, 64, 64}};
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (int a = 0; a < na; a++)
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
      cj_kplan p;
      cj_built b = {0};
      assert_int_equal(cj_kplan_transpose_cvt_init(&p, arches[a], sh[i][0], sh[i][1], sh[i][2]), CONVJIT_OK);
      build_one(&p, &b);
      const char *as = (const char *)b.asm_text.data;
      assert_non_null(strstr(as, "v_cvt_pk_fp8_f32"));
      assert_non_null(strstr(as, "ds_read_u16")); /* the tile holds bf16 */
      if (p.u.tr.store_bytes == 16) assert_non_null(strstr(as, "buffer_store_dwordx4"));
      cj_log(CJ_LOG_INFO, "%s %s: vgpr %u sgpr %u lds %u", arches[a]->name, p.name, b.info->vgpr_count,
             b.info->sgpr_count, b.info->group_segment_size);
      cj_built_free(&b);
    }
}

static void test_wpack_compiles(void **state) {
  (void)state;
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (int a = 0; a < na; a++) {
    cj_kplan p;
    /* bf16 3x3x3, C=3 padded to 8, rows of 224 */
    assert_int_equal(cj_kplan_wpack_init(&p, arches[a], 2, 64, 3, 27, 8, 224), CONVJIT_OK);
    build_expect_asm(&p, "buffer_store_short");
    /* fp8 1x3x3, C=20 padded to 32, rows of 384 (K tiles of 128) */
    assert_int_equal(cj_kplan_wpack_init(&p, arches[a], 1, 32, 20, 9, 32, 384), CONVJIT_OK);
    build_expect_asm(&p, "buffer_store_byte");
  }
}

static void test_determinism(void **state) {
  (void)state;
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (int a = 0; a < na; a++) {
    cj_kplan p;
    assert_int_equal(cj_kplan_transpose_init(&p, arches[a], 1, 1, 1024, 3456000), CONVJIT_OK);
    cj_built b1 = {0}, b2 = {0};
    build_one(&p, &b1);
    build_one(&p, &b2);
    assert_int_equal(b1.code_object.size, b2.code_object.size);
    assert_memory_equal(b1.code_object.data, b2.code_object.data, b1.code_object.size);
    cj_built_free(&b1);
    cj_built_free(&b2);
  }
}

static void test_bad_plans(void **state) {
  (void)state;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = (LLVMModuleRef)1;
  assert_int_equal(cj_codegen_build(NULL, ctx, &m), CONVJIT_ERR_INVALID_ARG);
  assert_null(m);
  cj_kplan p;
  assert_int_equal(cj_kplan_transpose_init(&p, cj_arch_from_name("gfx950"), 1, 1, 64, 64), CONVJIT_OK);
  assert_int_equal(cj_codegen_build(&p, ctx, NULL), CONVJIT_ERR_INVALID_ARG);
  p.op = (cj_kop)77;
  assert_int_equal(cj_codegen_build(&p, ctx, &m), CONVJIT_ERR_UNSUPPORTED);
  assert_non_null(strstr(cj_error_text(), "op = 77"));
  assert_null(m);
  /* A plan whose LDS disagrees with the kernel is caught before compiling. */
  assert_int_equal(cj_kplan_transpose_init(&p, cj_arch_from_name("gfx950"), 1, 1, 64, 64), CONVJIT_OK);
  p.lds_bytes += 4;
  assert_int_equal(cj_codegen_build(&p, ctx, &m), CONVJIT_ERR_INTERNAL);
  assert_non_null(strstr(cj_error_text(), "LDS"));
  assert_null(m);
  LLVMContextDispose(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_verify_modules),  cmocka_unit_test(test_datalayout_matches_target),
      cmocka_unit_test(test_transpose_compiles), cmocka_unit_test(test_transpose_cvt_compiles),
      cmocka_unit_test(test_wpack_compiles),
      cmocka_unit_test(test_determinism),     cmocka_unit_test(test_bad_plans),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
