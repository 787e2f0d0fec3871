/* cj_build_kernel on the real layout kernels (transpose plans) and the
 * resource policy (cj_check_resources).
 *
 * Expected values come from the plan (its LDS bytes, block, argument list),
 * from the C layout rules for the argument offsets, and from the arch table;
 * none are read back from the code under test. The layout kernels' own paths
 * (every shape class) are covered by test_layout_build.c; here the issue's
 * acceptance shapes check the pipeline's view of them:
 *   2 x 24 x 1000      small, odd C: narrow accesses, partial tiles
 *   1 x 1024 x 3456000 past 2^31 elements: the "big" per-block rebase path
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "codegen/kplan.h"
#include "codegen/kspec.h"
#include "pipeline/build.h"
#include "pipeline/compile.h"

static const uint64_t shapes[][3] = {{2, 24, 1000}, {1, 1024, 3456000}};

static void check_built(const cj_kplan *p, const cj_built *b) {
  const cj_kernel_info *k = b->info;
  assert_non_null(k);
  assert_string_equal(k->name, p->name);
  assert_int_equal(b->co->elf_mach, p->arch->elf_mach);
  assert_int_equal(k->group_segment_size, p->lds_bytes);
  assert_true(p->lds_bytes > 0);
  assert_int_equal(k->wavefront_size, 64);
  assert_true(k->max_flat_workgroup_size >= p->block[0] * p->block[1] * p->block[2]);
  /* The shipped-kernel policy, field by field and through the checker. */
  assert_int_equal(k->vgpr_spill_count, 0);
  assert_int_equal(k->sgpr_spill_count, 0);
  assert_int_equal(k->private_segment_size, 0);
  assert_false(k->uses_dynamic_stack);
  assert_int_equal(cj_check_resources(k, p->arch), CONVJIT_OK);
  /* Explicit arguments at their natural C offsets, in plan order. */
  assert_true(k->nargs >= p->nargs);
  uint32_t off = 0;
  for (uint32_t i = 0; i < p->nargs; i++) {
    uint32_t sz = p->args[i].is_ptr ? 8 : p->args[i].size;
    off = (off + sz - 1) / sz * sz;
    assert_int_equal(k->args[i].offset, off);
    assert_int_equal(k->args[i].size, sz);
    assert_int_equal(k->args[i].kind, p->args[i].is_ptr ? CJ_ARG_GLOBAL_BUFFER : CJ_ARG_BY_VALUE);
    off += sz;
  }
  assert_true(k->kernarg_size >= off);
  assert_true(b->code_object.size > 0);
  assert_true(b->compile_ms > 0 && b->link_ms > 0);
  /* code_size: the function symbol's extent, whole instructions, ending in
   * s_endpgm (SOPP word 0xBF810000, llvm-mc -show-encoding on both arches);
   * LLVM pads the rest of .text with s_nop. */
  uint64_t start = k->entry_vaddr - b->co->text_vaddr;
  assert_true(k->code_size >= 8 && k->code_size % 4 == 0);
  assert_true(start + k->code_size <= b->co->text.size);
  uint32_t last;
  memcpy(&last, (const uint8_t *)b->co->text.data + start + k->code_size - 4, 4);
  assert_int_equal(last, 0xBF810000u);
}

static void test_transpose_builds(void **state) {
  (void)state;
  int na = 0;
  const cj_arch *const *archs = cj_arch_list(&na);
  for (int a = 0; a < na; a++)
    for (uint32_t eb = 1; eb <= 2; eb++)
      for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        cj_kplan p;
        memset(&p, 0, sizeof p);
        assert_int_equal(cj_kplan_transpose_init(&p, archs[a], eb, shapes[s][0], shapes[s][1], shapes[s][2]),
                         CONVJIT_OK);
        cj_built b;
        convjit_status st = cj_build_kernel(&p, 0, &b);
        if (st != CONVJIT_OK) fail_msg("%s: %s", p.name, convjit_last_error());
        check_built(&p, &b);
        /* Nothing kept unless asked. */
        assert_null(b.ir.data);
        assert_null(b.asm_text.data);
        cj_built_free(&b);
        assert_null(b.co);
      }
}

/* Keeping the texts (IR printed, ISA emitted from a clone) must not change
 * the code object: with and without them the bytes are identical. The kept
 * texts are there and show the LDS traffic. */
static void test_deterministic_and_texts(void **state) {
  (void)state;
  cj_kplan p;
  memset(&p, 0, sizeof p);
  assert_int_equal(cj_kplan_transpose_init(&p, cj_arch_from_name("gfx942"), 2, 2, 24, 1000), CONVJIT_OK);
  cj_built b1, b2;
  assert_int_equal(cj_build_kernel(&p, CJ_BUILD_KEEP_IR | CJ_BUILD_KEEP_OPT_IR | CJ_BUILD_KEEP_ASM, &b1),
                   CONVJIT_OK);
  assert_int_equal(cj_build_kernel(&p, 0, &b2), CONVJIT_OK);
  assert_int_equal(b1.code_object.size, b2.code_object.size);
  assert_memory_equal(b1.code_object.data, b2.code_object.data, b1.code_object.size);
  char def[128];
  snprintf(def, sizeof def, "define amdgpu_kernel void @%s", p.name);
  assert_non_null(strstr((const char *)b1.ir.data, p.name));
  assert_int_equal(strlen((const char *)b1.ir.data), b1.ir.size);
  assert_non_null(strstr((const char *)b1.opt_ir.data, def));
  assert_non_null(strstr((const char *)b1.asm_text.data, "ds_"));
  assert_non_null(strstr((const char *)b1.asm_text.data, "s_barrier"));
  cj_built_free(&b1);
  cj_built_free(&b2);
  cj_built_free(NULL);
}

/* The compile step borrows a target machine kept from an earlier build
 * (compile.c, cj_tm_take): a reused machine must give the bytes of a fresh
 * one. The headline conv kernels of both arches (the largest code the
 * backend sees), built alternately so each build takes a machine another
 * arch's build did not disturb, then again after every idle machine was
 * disposed. */
static void test_reused_machine_same_bytes(void **state) {
  (void)state;
  const char *arch[2] = {"gfx942", "gfx950"};
  cj_built b[2][3];
  for (int round = 0; round < 3; round++) {
    if (round == 2) cj_compile_drop_machines(); /* round 2: fresh machines again */
    for (int a = 0; a < 2; a++) {
      cj_kplan p;
      memset(&p, 0, sizeof p);
      assert_int_equal(cj_kspec_plan("conv", arch[a], "bf16", "1,1024,120,160,90,1024,1,3,3", "pad=0,1,1 bias", &p),
                       CONVJIT_OK);
      assert_int_equal(cj_build_kernel(&p, 0, &b[a][round]), CONVJIT_OK);
    }
  }
  for (int a = 0; a < 2; a++)
    for (int round = 1; round < 3; round++) {
      assert_int_equal(b[a][round].code_object.size, b[a][0].code_object.size);
      assert_memory_equal(b[a][round].code_object.data, b[a][0].code_object.data, b[a][0].code_object.size);
    }
  for (int a = 0; a < 2; a++)
    for (int round = 0; round < 3; round++) cj_built_free(&b[a][round]);
}

static void test_build_bad_input(void **state) {
  (void)state;
  cj_built b;
  assert_int_equal(cj_build_kernel(NULL, 0, &b), CONVJIT_ERR_INVALID_ARG);
  cj_kplan p;
  memset(&p, 0, sizeof p);
  assert_int_equal(cj_build_kernel(&p, 0, &b), CONVJIT_ERR_INVALID_ARG); /* no arch */
  assert_null(b.co);
}

/* The policy names kernel, resource, value and limit. */
static void expect_resource(const cj_kernel_info *k, const cj_arch *a, const char *what, const char *value,
                            const char *limit) {
  assert_int_equal(cj_check_resources(k, a), CONVJIT_ERR_RESOURCE);
  const char *e = convjit_last_error();
  if (!strstr(e, k->name) || !strstr(e, what) || !strstr(e, value) || !strstr(e, limit))
    fail_msg("\"%s\" should name %s, %s, %s, %s", e, k->name, what, value, limit);
}

static void test_check_resources(void **state) {
  (void)state;
  const cj_arch *g942 = cj_arch_from_name("gfx942"), *g950 = cj_arch_from_name("gfx950");
  cj_kernel_info k;
  memset(&k, 0, sizeof k);
  snprintf(k.name, sizeof k.name, "kern_x");
  k.group_segment_size = 65536; /* exactly the gfx942 limit: allowed */
  assert_int_equal(cj_check_resources(&k, g942), CONVJIT_OK);
  k.group_segment_size = 65537;
  expect_resource(&k, g942, "LDS", "65537", "65536");
  assert_int_equal(cj_check_resources(&k, g950), CONVJIT_OK); /* 160 KiB there */
  k.group_segment_size = 163841;
  expect_resource(&k, g950, "LDS", "163841", "163840");
  k.group_segment_size = 0;
  k.vgpr_spill_count = 3;
  expect_resource(&k, g950, "vgpr_spill", "3", "limit 0");
  k.vgpr_spill_count = 0;
  k.sgpr_spill_count = 5;
  expect_resource(&k, g950, "sgpr_spill", "5", "limit 0");
  k.sgpr_spill_count = 0;
  k.private_segment_size = 16;
  expect_resource(&k, g950, "scratch", "16", "limit 0");
  k.private_segment_size = 0;
  k.uses_dynamic_stack = 1;
  expect_resource(&k, g950, "dynamic_stack", "1", "limit 0");
  assert_int_equal(cj_check_resources(NULL, g950), CONVJIT_ERR_INVALID_ARG);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_transpose_builds),
    cmocka_unit_test(test_deterministic_and_texts),
    cmocka_unit_test(test_reused_machine_same_bytes),
    cmocka_unit_test(test_build_bad_input),
    cmocka_unit_test(test_check_resources),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
