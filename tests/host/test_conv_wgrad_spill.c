/* Spill-free gate for backward weight's shipped configurations: for each
 * shape below, on both arches, every candidate the planner lists (the
 * selection's first, its fallbacks: any of them may be what plan creation
 * or the tuner takes) whose plan is legal builds through the whole pipeline
 * (codegen -> -O3 -> ld.lld -> metadata) with every kernel of its launch
 * sequence (the grid_pack pre-passes, the GEMM, the finalize) passing
 * cj_check_resources and, from the code object's metadata: no VGPR/SGPR
 * spills, no scratch, the group segment equal to the plan's LDS bytes and
 * within the arch's, the flat work-group size the plan's block
 * (ts_build_spill_free). A kernel shared by candidates is built once.
 * Registers, LDS and compile ms are printed (cold, this machine), never
 * asserted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "convjit/convjit.h"
#include "host/tool_api.h"
#include "support_spill.h"

typedef struct wg_shape {
  const char *why;
  int64_t n, c, d, h, w, k, t, r, s, stride, pad, groups;
  int bias, atomic;
  int f16; /* x and dy f16 (the arch's f16 MFMA row), dw f32 */
} wg_shape;

static const wg_shape SHAPES[] = {
    {"1024 -> 1024 [120,160,90] 1x3x3 pad (0,1,1), db", 1, 1024, 120, 160, 90, 1024, 1, 3, 3, 1, -1, 1, 1, 0, 0},
    {"2048 -> 2048 [60,80,45] 3x3x3 pad 1", 1, 2048, 60, 80, 45, 2048, 3, 3, 3, 1, 1, 1, 0, 0, 0},
    {"1024 -> 1024 [120,160,90] 3x1x1 pad (1,0,0)", 1, 1024, 120, 160, 90, 1024, 3, 1, 1, 1, -2, 1, 0, 0, 0},
    {"512 -> 512 [8,32,32] 3x3x3 stride 2 pad 1, db", 1, 512, 8, 32, 32, 512, 3, 3, 3, 2, 1, 1, 1, 0, 0},
    {"2,32,4,8,8 -> 48 3x3x3 pad 1 (acceptance), atomics, db", 2, 32, 4, 8, 8, 48, 3, 3, 3, 1, 1, 1, 1, 1, 0},
    {"2,16,1,10,10 -> 16 depthwise 3x3 pad 1 (the direct family)", 2, 16, 1, 10, 10, 16, 1, 3, 3, 1, -3, 16, 0, 0, 0},
    {"f16 1024 -> 1024 [120,160,90] 1x3x3 pad (0,1,1), db, dw f32", 1, 1024, 120, 160, 90, 1024, 1, 3, 3, 1, -1, 1, 1,
     0, 1},
    {"f16 2048 -> 2048 [60,80,45] 3x3x3 pad 1, dw f32", 1, 2048, 60, 80, 45, 2048, 3, 3, 3, 1, 1, 1, 0, 0, 1},
};

static convjit_conv_desc desc_of(const wg_shape *s) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.kind = CONVJIT_CONV_BACKWARD_WEIGHT;
  d.n = s->n, d.c = s->c, d.k = s->k, d.groups = s->groups;
  const int64_t in[3] = {s->d, s->h, s->w}, f[3] = {s->t, s->r, s->s};
  for (int i = 0; i < 3; i++) {
    d.in[i] = in[i], d.filter[i] = f[i], d.stride[i] = s->stride;
    /* pad: P all dims; -1 (0,1,1); -2 (1,0,0); -3 (0,1,1) for a 1xRxS filter */
    int64_t p = s->pad >= 0 ? s->pad : s->pad == -2 ? i == 0 : i > 0;
    d.pad_lo[i] = d.pad_hi[i] = p;
  }
  d.has_bias = s->bias;
  d.nondeterministic = s->atomic;
  if (s->f16) {
    d.x_dtype = d.y_dtype = CONVJIT_DTYPE_F16;
    d.w_dtype = CONVJIT_DTYPE_F32;
  }
  return d;
}

#define MAX_BUILT 128
typedef struct built_set { char name[MAX_BUILT][64]; int n; } built_set;

static void build_check(const cj_kplan *p, built_set *seen) {
  for (int i = 0; i < seen->n; i++)
    if (!strcmp(seen->name[i], p->name)) return;
  assert_true(seen->n < MAX_BUILT);
  snprintf(seen->name[seen->n++], 64, "%s", p->name);
  ts_build_spill_free(p, NULL, 36);
}

static void test_candidates_spill_free(void **state) {
  (void)state;
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
    printf("  %s\n", SHAPES[i].why);
    const convjit_conv_desc d = desc_of(&SHAPES[i]);
    cj_conv_problem p;
    if (cj_conv_desc_normalize(&d, &p) != CONVJIT_OK) fail_msg("%s", cj_error_text());
    for (int a = 0; a < na; a++) {
      const cj_target t = {arches[a], arches[a]->cu_count_default};
      cj_conv_walk w;
      assert_int_equal(cj_conv_walk_begin(&w, &p, &t, NULL), CONVJIT_OK);
      cj_conv_opts o;
      cj_seq seq;
      convjit_status st;
      built_set seen = {.n = 0};
      int legal = 0;
      while (cj_conv_walk_next(&w, &o, &seq, &st)) {
        if (st == CONVJIT_ERR_UNSUPPORTED) continue; /* not this arch's (LDS): never shipped here */
        assert_int_equal(st, CONVJIT_OK);
        legal++;
        for (uint32_t s = 0; s < seq.fwd.nsteps; s++)
          if (seq.fwd.step[s].kind == CJ_STEP_KERNEL) build_check(&seq.fwd.step[s].plan, &seen);
      }
      /* the tiles and their stage fallbacks; a depthwise problem is the
       * direct family's one plan (kplan_direct.h: partials + finalize) */
      assert_true(legal >= (SHAPES[i].groups > 1 && SHAPES[i].groups == SHAPES[i].c ? 1 : 4));
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_candidates_spill_free),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
