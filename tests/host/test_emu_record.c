/* Launch recording of the experimental emulator API
 * (convjit_emu_record_launches / convjit_emu_recorded_stats) and the
 * per-wave extremes of convjit_emu_stats, on a split-K conv whose fwd
 * sequence launches several kernels: the record holds every fwd kernel in
 * plan order with workgroups/waves equal to its grid and block, stops when
 * told, restarts empty, honours max, and rejects bad arguments. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "convjit/convjit.h"
#include "host/plan.h"

#include "api_expect.h"

static void t_record_conv_sequence(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx942");
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = 3;
  d.n = 1; d.c = 16; d.k = 64;
  d.in[0] = 2; d.in[1] = 8; d.in[2] = 8;
  d.filter[0] = d.filter[1] = d.filter[2] = 3;
  for (int i = 0; i < 3; i++) d.pad_lo[i] = d.pad_hi[i] = 1;
  cj_conv_opts f;
  memset(&f, 0, sizeof f);
  f.splitk = 2; /* transpose, conv, finalize: a multi-kernel fwd sequence */
  convjit_plan *p = NULL;
  OK(cj_plan_create_conv_opts(c, &d, &f, &p));
  /* the fwd kernels in plan order, from the plan's introspection */
  int nk = 0, nfwd = 0;
  convjit_kernel_info fwd[8];
  OK(convjit_plan_kernel_count(p, &nk));
  for (int i = 0; i < nk; i++) {
    convjit_kernel_info ki = {.struct_size = sizeof ki};
    OK(convjit_plan_kernel_info(p, i, &ki));
    if (!strcmp(ki.stage, "fwd") && nfwd < 8) fwd[nfwd++] = ki;
  }
  assert_true(nfwd >= 3);
  size_t ws = 0, pw = 0;
  OK(convjit_plan_workspace_size(p, &ws));
  OK(convjit_plan_packed_weight_size(p, &pw));
  void *x, *w, *y, *wsp;
  OK(convjit_malloc(c, 2 * 16 * 2 * 8 * 8, &x));
  OK(convjit_malloc(c, pw, &w));
  OK(convjit_malloc(c, 2 * 64 * 2 * 8 * 8, &y));
  OK(convjit_malloc(c, ws, &wsp));
  OK(convjit_memset(c, x, 0, 2 * 16 * 2 * 8 * 8, NULL));
  OK(convjit_memset(c, w, 0, pw, NULL));

  OK(convjit_emu_record_launches(c, 1));
  OK(convjit_conv_fwd(p, x, w, NULL, y, wsp, ws, NULL));
  size_t n = 0;
  convjit_emu_stats es[8];
  for (int i = 0; i < 8; i++) es[i].struct_size = sizeof es[i];
  OK(convjit_emu_recorded_stats(c, es, 8, &n));
  assert_int_equal(n, (size_t)nfwd);
  for (int i = 0; i < nfwd; i++) {
    assert_string_equal(es[i].kernel, fwd[i].name);
    uint64_t wgs = fwd[i].grid[0] * fwd[i].grid[1] * fwd[i].grid[2];
    uint64_t wpg = (fwd[i].block[0] * fwd[i].block[1] * fwd[i].block[2] + 63) / 64;
    assert_int_equal(es[i].workgroups, wgs);
    assert_int_equal(es[i].waves, wgs * wpg);
    /* the extremes bound the average; the all-wave total is the class sum */
    assert_true(es[i].wave_min.total * es[i].waves <= es[i].total);
    assert_true(es[i].total <= es[i].wave_max.total * es[i].waves);
    assert_true(es[i].wave_min.total <= es[i].wave_max.total && es[i].wave_min.total > 0);
    assert_int_equal(es[i].total, es[i].salu + es[i].valu + es[i].vmem + es[i].lds + es[i].mfma + es[i].waitcnt +
                                      es[i].barrier + es[i].smem + es[i].branch);
    if (!strncmp(es[i].kernel, "cj_conv_bf16", 12)) {
      /* every wave of a split runs the same K loop: MFMAs per wave agree */
      assert_true(es[i].mfma > 0 && es[i].wave_min.mfma == es[i].wave_max.mfma);
      assert_int_equal(es[i].mfma, es[i].wave_min.mfma * es[i].waves);
      /* its DMA writes and operand reads are priced by the LDS bank model */
      assert_true(es[i].lds_accesses > es[i].lds); /* ds_* instructions plus the DMAs' LDS writes */
    }
    /* the weighted count: every instruction weighs at least 1, the slowest
     * wave at most all waves; LDS cycles are at least their conflict-free
     * minimum, and gfx942 has 32 banks (docs/emulator.md, CK's LDS page) */
    assert_true(es[i].weighted_cycles_max_wave >= es[i].wave_max.total);
    assert_true(es[i].weighted_cycles_all_waves >= es[i].total);
    assert_true(es[i].weighted_cycles_all_waves >= es[i].weighted_cycles_max_wave);
    assert_true(es[i].lds_cycles >= es[i].lds_conflict_free_cycles);
    assert_true(es[i].lds_accesses == 0 || es[i].lds_max_degree >= 1);
    assert_int_equal(es[i].lds_banks, 32);
  }
  convjit_emu_stats last = {.struct_size = sizeof last};
  OK(convjit_emu_last_launch_stats(c, &last));
  assert_string_equal(last.kernel, fwd[nfwd - 1].name);
  assert_int_equal(last.total, es[nfwd - 1].total);

  /* max smaller than the record: count is still the whole record and
   * only max elements are written */
  es[1].struct_size = 12345;
  OK(convjit_emu_recorded_stats(c, es, 1, &n));
  assert_int_equal(n, (size_t)nfwd);
  assert_int_equal(es[1].struct_size, 12345);
  OK(convjit_emu_recorded_stats(c, NULL, 0, &n));
  assert_int_equal(n, (size_t)nfwd);

  /* stopped: launches are no longer added; restarted: empty */
  OK(convjit_emu_record_launches(c, 0));
  OK(convjit_conv_fwd(p, x, w, NULL, y, wsp, ws, NULL));
  OK(convjit_emu_recorded_stats(c, NULL, 0, &n));
  assert_int_equal(n, (size_t)nfwd);
  OK(convjit_emu_record_launches(c, 1));
  OK(convjit_emu_recorded_stats(c, NULL, 0, &n));
  assert_int_equal(n, 0);

  /* bad arguments name the field */
  assert_int_equal(convjit_emu_recorded_stats(c, es, 1, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(convjit_last_error(), "count = NULL"));
  assert_int_equal(convjit_emu_recorded_stats(c, NULL, 2, &n), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(convjit_last_error(), "stats = NULL"));
  OK(convjit_conv_fwd(p, x, w, NULL, y, wsp, ws, NULL));
  es[0].struct_size = 8;
  assert_int_equal(convjit_emu_recorded_stats(c, es, 1, &n), CONVJIT_ERR_VERSION);
  assert_non_null(strstr(convjit_last_error(), "struct_size = 8"));
  assert_int_equal(convjit_emu_record_launches(NULL, 1), CONVJIT_ERR_INVALID_ARG);

  void *bufs[] = {x, w, y, wsp};
  for (int i = 0; i < 4; i++) convjit_free(c, bufs[i]);
  convjit_plan_destroy(p);
  convjit_context_destroy(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(t_record_conv_sequence)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
