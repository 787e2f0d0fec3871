/* One pass through plan creation (select.h, the one candidate walk): a
 * cold forward plan creation initializes each candidate's conv plan once
 * (cj_kplan_conv_init_calls counts every init in the process), the
 * candidate list initializes none, and a plan memo hit none.
 *   default       a small bf16 conv on gfx950 whose first candidate is legal
 *                 and fits: 1 init (before the one walk, listing the
 *                 candidates initialized each of them once more, for the
 *                 prefetch twin: 8 + 1 here; the second case 9 + 3).
 *   illegal first gfx942 (64 KiB of LDS) with kbytes=128 forced: the 4- and
 *                 3-stage 128x128 candidates need 128 and 96 KiB (illegal),
 *                 the 2-stage one is taken: 3 inits, the candidates up to
 *                 the first legal one, counted here with
 *                 cj_select_conv_with over the pure list.
 * Each case runs on a fresh context with the memory cache only (cold: no
 * memo entry, no tuning table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "api_expect.h"
#include "host/plan.h"

static convjit_conv_desc desc(int64_t c, int64_t k) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 1;
  d.c = c;
  d.k = k;
  for (int i = 0; i < 3; i++) {
    d.in[i] = i ? 8 : 4;
    d.filter[i] = 3;
    d.pad_lo[i] = d.pad_hi[i] = 1;
  }
  d.has_bias = 1;
  return d;
}

/* The candidates a walk tries up to its first legal one, counted with the
 * one-candidate selection over the pure list (no walk involved). */
static uint32_t first_legal(convjit_context *ctx, const convjit_conv_desc *d, const cj_conv_opts *forced) {
  cj_conv_problem p;
  OK(cj_conv_desc_normalize(d, &p));
  cj_conv_geom g;
  OK(cj_conv_problem_geom(&p, &g));
  const cj_target t = {ctx->arch, (uint32_t)ctx->cu_count};
  cj_conv_opts list[CJ_CONV_MAX_CANDIDATES];
  uint64_t before = cj_kplan_conv_init_calls();
  uint32_t n = cj_conv_candidates(&t, &g, forced, list, CJ_CONV_MAX_CANDIDATES);
  assert_true(n > 1);
  printf("  %u candidates listed\n", n);
  assert_int_equal(cj_kplan_conv_init_calls(), before); /* the list is pure */
  static cj_seq seq; /* large: not on the stack */
  for (uint32_t i = 0; i < n; i++)
    if (cj_select_conv_with(&p, &t, &list[i], &seq) == CONVJIT_OK) return i + 1;
  fail_msg("no legal candidate");
  return 0;
}

static const cj_conv_plan *conv_of(const convjit_plan *p) {
  for (uint32_t i = 0; i < p->seq.fwd.nsteps; i++)
    if (p->seq.fwd.step[i].kind == CJ_STEP_KERNEL && p->seq.fwd.step[i].plan.op == CJ_KOP_CONV)
      return &p->seq.fwd.step[i].plan.u.conv;
  fail_msg("no conv step");
  return NULL;
}

static void one_case(const char *arch, const convjit_conv_desc *d, const cj_conv_opts *forced, uint32_t want,
                     uint32_t want_stages) {
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  assert_int_equal(first_legal(ctx, d, forced), want);
  convjit_plan *p = NULL;
  uint64_t before = cj_kplan_conv_init_calls();
  OK(cj_plan_create_conv_opts(ctx, d, forced, &p));
  uint64_t inits = cj_kplan_conv_init_calls() - before;
  printf("  %s: %llu conv plan inits for %u candidates tried\n", arch, (unsigned long long)inits, want);
  assert_int_equal(inits, want);
  assert_int_equal(conv_of(p)->stages, want_stages); /* the candidate the count says, no resource rejection */
  convjit_plan_destroy(p);
  if (!forced) { /* the public path: its repeat is a memo hit, no init */
    OK(convjit_plan_create_conv(ctx, d, &p));
    before = cj_kplan_conv_init_calls();
    convjit_plan *q = NULL;
    OK(convjit_plan_create_conv(ctx, d, &q));
    assert_int_equal(cj_kplan_conv_init_calls(), before);
    convjit_plan_destroy(q);
    convjit_plan_destroy(p);
  }
  convjit_context_destroy(ctx);
}

static void test_default_first_candidate(void **st) {
  (void)st;
  convjit_conv_desc d = desc(16, 32);
  one_case("gfx950", &d, NULL, 1, 4);
}

static void test_illegal_candidates_first(void **st) {
  (void)st;
  convjit_conv_desc d = desc(16, 32);
  cj_conv_opts f = {.k_bytes = 128};
  one_case("gfx942", &d, &f, 3, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_first_candidate),
      cmocka_unit_test(test_illegal_candidates_first),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
