/* convjit's middle end (CJ_PASSES, src/pipeline/compile.c: LLVM 22's
 * default<O3> less the passes that changed nothing) against default<O3>
 * itself: for every kernel of the default plans of issue 11's three
 * headline shapes (weight pack, transpose, conv), bf16 and the arch's
 * native fp8, both arches, the relocatable objects are byte-identical.
 * The second computation is LLVM's own full -O3 pipeline, so the trimmed
 * list can only be kept while it costs no code (docs/pipeline.md,
 * "Middle end"); a new LLVM that makes a dropped pass matter fails here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <llvm-c/Core.h>
#include "arch/arch.h"
#include "codegen/codegen.h"
#include "pipeline/compile.h"
#include "support_select.h"

/* The kernel's relocatable object through the given middle end (NULL: convjit's). */
static void object_of(const cj_kplan *p, const char *passes, cj_blob *obj) {
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = NULL;
  assert_int_equal(cj_codegen_build(p, c, &m), CONVJIT_OK);
  cj_compile_out co;
  if (cj_compile_module_passes(m, p->arch, passes, 0, 0, &co) != CONVJIT_OK)
    fail_msg("%s with %s: %s", p->name, passes ? passes : "CJ_PASSES", cj_error_text());
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  *obj = co.object;
  co.object = (cj_blob){0};
  cj_compile_out_free(&co);
}

static void test_same_objects(void **state) {
  (void)state;
  static cj_seq seq; /* large: not on the stack */
  int na = 0, nkernels = 0;
  const cj_arch *const *archs = cj_arch_list(&na);
  for (int a = 0; a < na; a++)
    for (int i = 0; i < TS_HEADLINE_N; i++)
      for (int f = 0; f < 2; f++) {
        cj_conv_geom g;
        ts_headline_geom(i, f ? ts_fp8_native(archs[a]) : CONVJIT_DTYPE_BF16, &g);
        ts_select_seq(archs[a], &g, 1, NULL, &seq);
        const cj_step_list *lists[2] = {&seq.pack, &seq.fwd};
        for (int l = 0; l < 2; l++)
          for (uint32_t k = 0; k < lists[l]->nsteps; k++) {
            const cj_kplan *p = &lists[l]->step[k].plan;
            if (lists[l]->step[k].kind != CJ_STEP_KERNEL) continue;
            cj_blob ours = {0}, o3 = {0};
            object_of(p, NULL, &ours);
            object_of(p, "default<O3>", &o3);
            if (ours.size != o3.size || memcmp(ours.data, o3.data, ours.size))
              fail_msg("%s on %s: CJ_PASSES gives a %zu-byte object, default<O3> %zu bytes (or other bytes)", p->name,
                       archs[a]->name, ours.size, o3.size);
            cj_blob_free(&ours);
            cj_blob_free(&o3);
            nkernels++;
          }
      }
  assert_true(nkernels >= 2 * TS_HEADLINE_N * 2 * 3); /* pack, transpose, conv per plan */
}

/* A pipeline LLVM cannot parse is a status with LLVM's words, not a crash. */
static void test_bad_pipeline(void **state) {
  (void)state;
  static cj_seq seq;
  cj_conv_geom g;
  ts_headline_geom(0, CONVJIT_DTYPE_BF16, &g);
  ts_select_seq(cj_arch_from_name("gfx950"), &g, 1, NULL, &seq);
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = NULL;
  assert_int_equal(seq.fwd.step[0].kind, CJ_STEP_KERNEL);
  assert_int_equal(cj_codegen_build(&seq.fwd.step[0].plan, c, &m), CONVJIT_OK);
  cj_compile_out co;
  assert_int_equal(cj_compile_module_passes(m, cj_arch_from_name("gfx950"), "no-such-pass", 0, 0, &co),
                   CONVJIT_ERR_COMPILE);
  assert_non_null(strstr(cj_error_text(), "no-such-pass"));
  assert_null(co.object.data);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_pipeline),
      cmocka_unit_test(test_same_objects),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
