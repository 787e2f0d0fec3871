/* The "emu" device backend (src/runtime/device_emu.c) through the generic
 * cj_device interface: module load, kernel lookup, memory, launch of a
 * real transpose kernel checked against the CPU reference, emulated-time
 * events, the emulator extras (subset launch options, last-launch stats,
 * procedural buffers), and error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/kplan.h"
#include "ref/ref.h"
#include "pipeline/build.h"
#include "runtime/device_emu.h"

#define OK(x) do { convjit_status s_ = (x); if (s_ != CONVJIT_OK) fail_msg("%s -> %d: %s", #x, s_, cj_error_text()); } while (0)

static void fill(void *user, uint64_t off, void *dst, size_t n) {
  (void)user;
  for (size_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = (uint8_t)((off + i) * 7 + 3);
}

static void t_transpose_through_device(void **st) {
  (void)st;
  cj_device *d = NULL;
  OK(cj_device_emu_create("gfx950", &d));
  assert_string_equal(d->ops->name, "emu");
  assert_int_equal(d->is_emulated, 1);
  assert_string_equal(d->arch, "gfx950");
  assert_non_null(cj_device_emu_ctx(d));
  cj_kplan p;
  OK(cj_kplan_transpose_init(&p, cj_arch_from_name("gfx950"), 2, 1, 40, 130));
  cj_built b;
  memset(&b, 0, sizeof b);
  OK(cj_build_kernel(&p, 0, &b));
  void *mod = NULL, *kern = NULL;
  OK(d->ops->module_load(d, b.code_object.data, b.code_object.size, &mod));
  OK(d->ops->kernel_get(d, mod, p.name, &kern));
  assert_int_not_equal(d->ops->kernel_get(d, mod, "nope", &kern), CONVJIT_OK);
  OK(d->ops->kernel_get(d, mod, p.name, &kern));
  size_t bytes = 40 * 130 * 2;
  uint8_t *x = malloc(bytes), *y = malloc(bytes), *ref = malloc(bytes);
  for (size_t i = 0; i < bytes; i++) x[i] = (uint8_t)(i * 13 + 1);
  void *dx, *dy;
  OK(d->ops->mem_alloc(d, bytes, &dx));
  OK(d->ops->mem_alloc(d, bytes, &dy));
  OK(d->ops->memcpy_h2d(d, dx, x, bytes, NULL));
  OK(d->ops->memset_d8(d, dy, 0, bytes, NULL));
  void *e0, *e1;
  OK(d->ops->event_create(d, &e0));
  OK(d->ops->event_create(d, &e1));
  OK(d->ops->event_record(d, e0, NULL));
  uint64_t args[2] = {(uint64_t)(uintptr_t)dx, (uint64_t)(uintptr_t)dy};
  uint32_t grid[3] = {(uint32_t)p.grid[0], (uint32_t)p.grid[1], (uint32_t)p.grid[2]};
  OK(d->ops->launch(d, kern, grid, p.block, args, sizeof args, NULL));
  OK(d->ops->event_record(d, e1, NULL));
  OK(d->ops->synchronize(d, NULL));
  OK(d->ops->memcpy_d2h(d, y, dy, bytes, NULL));
  cj_ref_transpose(x, ref, 2, 1, 40, 130);
  assert_memory_equal(y, ref, bytes);
  float ms = -1;
  OK(d->ops->event_elapsed_ms(d, e0, e1, &ms));
  const emu_stats *s = cj_device_emu_last_stats(d);
  assert_non_null(s);
  assert_true(ms > 0.0f);                          /* emulated, from the cycle model */
  assert_true(ms == (float)s->emulated_ms);
  assert_int_equal(s->workgroups, (uint64_t)grid[0] * grid[1] * grid[2]);

  /* subset launch through the device: only workgroup 0 runs */
  uint64_t list[1] = {0};
  emu_launch_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.hazard = -1;
  o.wg_list = list;
  o.wg_list_len = 1;
  OK(cj_device_emu_set_launch_opts(d, &o));
  OK(d->ops->launch(d, kern, grid, p.block, args, sizeof args, NULL));
  assert_int_equal(cj_device_emu_last_stats(d)->workgroups, 1);
  OK(cj_device_emu_set_launch_opts(d, NULL));

  /* procedural input read back through the device */
  void *dp;
  OK(cj_device_emu_alloc_procedural(d, 1ull << 33, fill, NULL, &dp));
  uint8_t chunk[8], want[8];
  OK(d->ops->memcpy_d2h(d, chunk, (uint8_t *)dp + (5ull << 30), 8, NULL));
  fill(NULL, 5ull << 30, want, 8);
  assert_memory_equal(chunk, want, 8);
  assert_int_not_equal(d->ops->memcpy_h2d(d, dp, x, 8, NULL), CONVJIT_OK); /* read-only */

  /* a launch with a wild pointer is an emulation error */
  uint64_t bad[2] = {0x10, 0x10};
  assert_int_equal(d->ops->launch(d, kern, grid, p.block, bad, sizeof bad, NULL), CONVJIT_ERR_EMULATION);

  d->ops->event_destroy(d, e0);
  d->ops->event_destroy(d, e1);
  d->ops->mem_free(d, dx);
  d->ops->mem_free(d, dy);
  d->ops->mem_free(d, dp);
  d->ops->module_unload(d, mod);
  cj_built_free(&b);
  free(x); free(y); free(ref);
  cj_device_destroy(d);
}

static void t_errors(void **st) {
  (void)st;
  cj_device *d = NULL;
  assert_int_equal(cj_device_emu_create("gfx1100", &d), CONVJIT_ERR_INVALID_ARG);
  assert_null(d);
  assert_int_equal(cj_device_emu_create(NULL, &d), CONVJIT_ERR_INVALID_ARG);
  OK(cj_device_emu_create("gfx942", &d));
  void *mod = NULL;
  uint8_t junk[16] = {0x7f, 'E', 'L', 'F'};
  assert_int_not_equal(d->ops->module_load(d, junk, sizeof junk, &mod), CONVJIT_OK);
  emu_launch_opts o;
  memset(&o, 0, sizeof o);
  assert_int_equal(cj_device_emu_set_launch_opts(d, &o), CONVJIT_ERR_INVALID_ARG); /* size 0 */
  assert_null(cj_device_emu_ctx(NULL));
  cj_device_destroy(d);
  cj_device_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(t_transpose_through_device), cmocka_unit_test(t_errors)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
