/* The layout helper's transpose kernels (src/codegen/layout.c), compiled by
 * the project pipeline for gfx942 and gfx950, executed by the emulator and
 * compared byte for byte with the CPU transpose (src/ref/ref.h).
 * Paths: odd shapes (partial tiles, 1-2 byte accesses), aligned shapes (16 B
 * vectors, full tiles), several samples, and the big path (>= 2^31 bytes:
 * per-block rebased resources) at 1,1024,3456000 fp8 on procedural input
 * and a write-sink output, with a sample of workgroups run and checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "codegen/kplan.h"
#include "emu/emu.h"
#include "emu/memory.h"
#include "ref/ref.h"
#include "pipeline/build.h"

#define OK(x) do { convjit_status s_ = (x); if (s_ != CONVJIT_OK) fail_msg("%s -> %d: %s", #x, s_, cj_error_text()); } while (0)

static uint64_t mix(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
  return x;
}

typedef struct built_kernel {
  cj_kplan plan;
  cj_built b;
  emu_ctx *ctx;
  emu_module *mod;
  const emu_kernel *k;
} built_kernel;

static void open_transpose(built_kernel *t, const char *arch, uint32_t eb, uint64_t n, uint64_t c, uint64_t s) {
  memset(t, 0, sizeof *t);
  const cj_arch *a = cj_arch_from_name(arch);
  assert_non_null(a);
  OK(cj_kplan_transpose_init(&t->plan, a, eb, n, c, s));
  OK(cj_build_kernel(&t->plan, 0, &t->b));
  emu_options o = {sizeof o, 1, 0};
  OK(emu_ctx_create(arch, &o, &t->ctx));
  OK(emu_module_load(t->ctx, t->b.code_object.data, t->b.code_object.size, &t->mod));
  OK(emu_kernel_get(t->mod, t->plan.name, &t->k));
}

static void close_transpose(built_kernel *t) {
  emu_module_unload(t->mod);
  emu_ctx_destroy(t->ctx);
  cj_built_free(&t->b);
}

static void grid_of(const cj_kplan *p, uint32_t g[3]) {
  for (int d = 0; d < 3; d++) {
    assert_true(p->grid[d] > 0 && p->grid[d] <= 0xffffffffull);
    g[d] = (uint32_t)p->grid[d];
  }
}

/* Whole-tensor check against the CPU reference. */
static void run_small(const char *arch, uint32_t eb, uint64_t n, uint64_t c, uint64_t s) {
  built_kernel t;
  open_transpose(&t, arch, eb, n, c, s);
  size_t bytes = (size_t)(n * c * s * eb);
  uint8_t *x = malloc(bytes), *y = malloc(bytes), *ref = malloc(bytes);
  assert_non_null(x); assert_non_null(y); assert_non_null(ref);
  for (size_t i = 0; i < bytes; i++) x[i] = (uint8_t)mix(i + 77 * eb);
  emu_mem *m = emu_ctx_mem(t.ctx);
  uint64_t dx, dy;
  OK(emu_mem_alloc(m, bytes, &dx));
  OK(emu_mem_alloc(m, bytes, &dy));
  OK(emu_mem_h2d(m, dx, x, bytes));
  OK(emu_mem_memset(m, dy, 0xAB, bytes));
  uint64_t args[2] = {dx, dy};
  uint32_t grid[3];
  grid_of(&t.plan, grid);
  emu_stats st;
  OK(emu_launch(t.k, grid, t.plan.block, args, sizeof args, NULL, &st));
  OK(emu_mem_d2h(m, y, dy, bytes));
  cj_ref_transpose(x, ref, eb, n, c, s);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < bytes; i++)
    if (y[i] != ref[i]) { if (!bad) first = i; bad++; }
  if (bad) fail_msg("%s eb=%u shape %llu,%llu,%llu: %zu wrong bytes, first at %zu (got 0x%02x want 0x%02x)", arch, eb,
                    (unsigned long long)n, (unsigned long long)c, (unsigned long long)s, bad, first, y[first], ref[first]);
  assert_true(st.workgroups == (uint64_t)grid[0] * grid[1] * grid[2]);
  assert_true(st.count[EMU_CLASS_LDS] > 0 && st.count[EMU_CLASS_BARRIER] > 0);
  free(x); free(y); free(ref);
  close_transpose(&t);
}

static void t_odd_bf16(void **s) { (void)s; run_small("gfx942", 2, 2, 24, 1000); run_small("gfx950", 2, 2, 24, 1000); }
static void t_odd_fp8(void **s) { (void)s; run_small("gfx942", 1, 2, 24, 1000); run_small("gfx950", 1, 2, 24, 1000); }
static void t_aligned_bf16(void **s) { (void)s; run_small("gfx942", 2, 1, 128, 4096); run_small("gfx950", 2, 2, 64, 192); }
static void t_aligned_fp8(void **s) { (void)s; run_small("gfx942", 1, 2, 64, 192); run_small("gfx950", 1, 1, 128, 4096); }
/* C not a multiple of 16 bytes, S odd: narrow accesses, partial tiles both ways */
static void t_ragged(void **s) { (void)s; run_small("gfx950", 2, 1, 65, 67); run_small("gfx942", 1, 3, 7, 129); }

/* ---- the big path on procedural memory ------------------------------------------- */
typedef struct big_shape { uint64_t c, s; } big_shape;

static void fill_x(void *user, uint64_t off, void *dst, size_t n) {
  (void)user;
  uint8_t *d = dst;
  for (size_t i = 0; i < n; i++) d[i] = (uint8_t)mix(off + i);
}

static void t_big_fp8_subset(void **st_) {
  (void)st_;
  const uint64_t N = 1, C = 1024, S = 3456000; /* 3.5e9 elements: past 2^31 */
  built_kernel t;
  open_transpose(&t, "gfx950", 1, N, C, S);
  assert_int_equal(t.plan.u.tr.big, 1);
  uint32_t grid[3];
  grid_of(&t.plan, grid);
  /* grid.x = c_tiles * s_tiles, c tile fastest (kplan_layout.h) */
  assert_true(grid[0] == ((S + 63) / 64) * (C / 64) && grid[1] == 1);
  /* Sample: the four corner tiles plus pseudo-random ones. */
  enum { NS = 24 };
  uint64_t list[NS];
  const uint64_t ct = C / 64, stl = (S + 63) / 64, total = (uint64_t)grid[0] * grid[1] * grid[2];
  list[0] = 0; list[1] = ct - 1; list[2] = ct * (stl - 1); list[3] = total - 1;
  for (int i = 4; i < NS; i++) list[i] = mix(1000 + (uint64_t)i) % total;
  /* Output windows: for each sampled tile (s tile bx, c tile by), rows s in the tile,
   * 64 bytes of c each. */
  uint64_t *woff = malloc(sizeof(uint64_t) * NS * 64), *wlen = malloc(sizeof(uint64_t) * NS * 64);
  uint32_t nw = 0;
  for (int i = 0; i < NS; i++) {
    uint64_t by = list[i] % ct, bx = list[i] / ct; /* c tile, s tile */
    for (uint64_t ss = bx * 64; ss < bx * 64 + 64 && ss < S; ss++) {
      woff[nw] = ss * C + by * 64;
      wlen[nw] = 64;
      nw++;
    }
  }
  emu_mem *m = emu_ctx_mem(t.ctx);
  uint64_t dx, dy;
  OK(emu_mem_alloc_procedural(m, N * C * S, fill_x, NULL, &dx));
  OK(emu_mem_alloc_sink(m, N * C * S, woff, wlen, nw, &dy));
  uint64_t args[2] = {dx, dy};
  emu_launch_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.hazard = -1;
  o.wg_list = list;
  o.wg_list_len = NS;
  emu_stats st;
  OK(emu_launch(t.k, grid, t.plan.block, args, sizeof args, &o, &st));
  assert_int_equal(st.workgroups, NS);
  uint8_t row[64];
  for (uint32_t i = 0; i < nw; i++) {
    OK(emu_mem_d2h(m, row, dy + woff[i], 64));
    uint64_t ss = woff[i] / C, c0 = woff[i] % C;
    for (int j = 0; j < 64; j++) {
      uint8_t want;
      fill_x(NULL, (c0 + (uint64_t)j) * S + ss, &want, 1);
      if (row[j] != want) fail_msg("big transpose: y[s=%llu][c=%llu] = 0x%02x, want 0x%02x", (unsigned long long)ss,
                                   (unsigned long long)(c0 + (uint64_t)j), row[j], want);
    }
  }
  free(woff); free(wlen);
  close_transpose(&t);
}

/* Same results with 1 and 2 host threads (workgroups in parallel). */
static void t_threads_identical(void **s) {
  (void)s;
  built_kernel t;
  open_transpose(&t, "gfx942", 2, 1, 96, 300);
  size_t bytes = 96 * 300 * 2;
  uint8_t *x = malloc(bytes), *y1 = malloc(bytes), *y2 = malloc(bytes);
  for (size_t i = 0; i < bytes; i++) x[i] = (uint8_t)mix(i);
  emu_mem *m = emu_ctx_mem(t.ctx);
  uint64_t dx, dy;
  OK(emu_mem_alloc(m, bytes, &dx));
  OK(emu_mem_alloc(m, bytes, &dy));
  OK(emu_mem_h2d(m, dx, x, bytes));
  uint64_t args[2] = {dx, dy};
  uint32_t grid[3];
  grid_of(&t.plan, grid);
  emu_stats a, b;
  emu_ctx_set_threads(t.ctx, 1);
  OK(emu_launch(t.k, grid, t.plan.block, args, sizeof args, NULL, &a));
  OK(emu_mem_d2h(m, y1, dy, bytes));
  OK(emu_mem_memset(m, dy, 0, bytes));
  emu_ctx_set_threads(t.ctx, 2);
  OK(emu_launch(t.k, grid, t.plan.block, args, sizeof args, NULL, &b));
  OK(emu_mem_d2h(m, y2, dy, bytes));
  assert_memory_equal(y1, y2, bytes);
  assert_true(a.total == b.total && a.waves == b.waves);
  for (int c = 0; c < EMU_CLASS_COUNT; c++) assert_true(a.count[c] == b.count[c]);
  free(x); free(y1); free(y2);
  close_transpose(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(t_odd_bf16),      cmocka_unit_test(t_odd_fp8),       cmocka_unit_test(t_aligned_bf16),
      cmocka_unit_test(t_aligned_fp8),   cmocka_unit_test(t_ragged),        cmocka_unit_test(t_threads_identical),
      cmocka_unit_test(t_big_fp8_subset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
