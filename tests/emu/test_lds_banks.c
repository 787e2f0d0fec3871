/* The LDS bank model (src/emu/lds_banks.c, docs/emulator.md "LDS bank
 * model") on hand-written lane address patterns whose cost is known by
 * construction, on gfx942 (32 banks x 4 B) and gfx950 (64 banks x 4 B):
 * stride 1/32/64 dwords, broadcast, b64/b128 sequential, sub-dword, b96,
 * partial EXEC, the 16-byte XOR swizzle of a 128-byte-row tile and its
 * unswizzled layout, and the [kq][row][16 B] operand layout read by
 * ds_read2_b64 offset1:32. Then the emulator's statistics for ds_* and
 * buffer_load ... lds instructions run in a kernel (inline asm: the only LDS
 * instruction of the kernel), checked against the same hand counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "emu/lds_banks.h"
#include "support_mem.h"

static const emu_lds_banks M942 = {32, 4}, M950 = {64, 4};
#define ALL (~0ull)

typedef struct want {
  uint32_t cycles, min, degree;
} want;

static void expect(const emu_lds_banks *m, const uint32_t *a, uint64_t exec, unsigned bytes, want w) {
  emu_lds_cost c = emu_lds_cost_of(m, a, exec, bytes);
  if (c.cycles != w.cycles || c.min_cycles != w.min || c.degree != w.degree)
    fprintf(stderr, "%u banks, %u bytes: got %u cycles / %u min / %u-way, want %u / %u / %u\n", m->banks, bytes,
            c.cycles, c.min_cycles, c.degree, w.cycles, w.min, w.degree);
  assert_int_equal(c.cycles, w.cycles);
  assert_int_equal(c.min_cycles, w.min);
  assert_int_equal(c.degree, w.degree);
}

/* lane l at base + l * stride bytes */
static void linear(uint32_t *a, uint32_t base, uint32_t stride) {
  for (unsigned l = 0; l < 64; l++) a[l] = base + l * stride;
}

static void arch_models(void **state) {
  (void)state;
  emu_lds_banks m = {0, 0};
  assert_int_equal(emu_lds_banks_for(cj_arch_from_name("gfx942"), &m), 0);
  assert_int_equal(m.banks, 32);
  assert_int_equal(m.bank_bytes, 4);
  assert_int_equal(emu_lds_banks_for(cj_arch_from_name("gfx950"), &m), 0);
  assert_int_equal(m.banks, 64);
  cj_arch none = *cj_arch_from_name("gfx942");
  none.lds_banks = 0; /* an arch without a model */
  assert_int_equal(emu_lds_banks_for(&none, &m), -1);
  assert_int_equal(m.banks, 64); /* left alone */
  assert_int_equal(emu_lds_banks_for(NULL, &m), -1);
  assert_int_equal(emu_lds_banks_for(cj_arch_from_name("gfx942"), NULL), -1);
  /* lanes per phase: CK's ds_write_b128 = 8 phases of 8 lanes on 32 banks */
  assert_int_equal(emu_lds_phase_lanes(&M942, 16), 8);
  assert_int_equal(emu_lds_phase_lanes(&M942, 12), 8);
  assert_int_equal(emu_lds_phase_lanes(&M942, 8), 16);
  assert_int_equal(emu_lds_phase_lanes(&M942, 4), 32);
  assert_int_equal(emu_lds_phase_lanes(&M942, 1), 32);
  assert_int_equal(emu_lds_phase_lanes(&M950, 16), 16);
  assert_int_equal(emu_lds_phase_lanes(&M950, 8), 32);
  assert_int_equal(emu_lds_phase_lanes(&M950, 4), 64);
}

static void strides_and_broadcast(void **state) {
  (void)state;
  uint32_t a[64];
  linear(a, 0, 4); /* stride 1 dword: every bank once per phase */
  expect(&M942, a, ALL, 4, (want){2, 2, 1});
  expect(&M950, a, ALL, 4, (want){1, 1, 1});
  linear(a, 0, 128); /* stride 32 dwords: one bank (gfx942) or two (gfx950) */
  expect(&M942, a, ALL, 4, (want){64, 2, 32});
  expect(&M950, a, ALL, 4, (want){32, 1, 32});
  linear(a, 0, 256); /* stride 64 dwords: one bank on both */
  expect(&M942, a, ALL, 4, (want){64, 2, 32});
  expect(&M950, a, ALL, 4, (want){64, 1, 64});
  linear(a, 0, 8); /* stride 2 dwords: half the banks, 2 lanes each */
  expect(&M942, a, ALL, 4, (want){4, 2, 2});
  linear(a, 0x40, 0); /* one address: broadcast */
  expect(&M942, a, ALL, 4, (want){2, 2, 1});
  expect(&M950, a, ALL, 4, (want){1, 1, 1});
  expect(&M942, a, ALL, 16, (want){8, 8, 1});
  for (unsigned l = 0; l < 64; l++) a[l] = (l & 1) * 128; /* two addresses on bank 0 */
  expect(&M942, a, ALL, 4, (want){4, 2, 2});
}

static void widths(void **state) {
  (void)state;
  uint32_t a[64];
  linear(a, 0, 8); /* b64 sequential: 16 lanes fill 32 banks */
  expect(&M942, a, ALL, 8, (want){4, 4, 1});
  expect(&M950, a, ALL, 8, (want){2, 2, 1});
  linear(a, 0, 16); /* b128 sequential */
  expect(&M942, a, ALL, 16, (want){8, 8, 1});
  expect(&M950, a, ALL, 16, (want){4, 4, 1});
  linear(a, 0, 12); /* b96 packed: 8 lanes = 24 consecutive dwords per phase */
  expect(&M942, a, ALL, 12, (want){8, 8, 1});
  linear(a, 0, 64); /* b128 at stride 64 B: lanes l and l+2 share banks */
  expect(&M942, a, ALL, 16, (want){32, 8, 4});
  linear(a, 0, 2); /* u16 sequential: pairs of lanes share a dword */
  expect(&M942, a, ALL, 2, (want){2, 2, 1});
  linear(a, 0, 1); /* u8 sequential: four lanes per dword */
  expect(&M942, a, ALL, 1, (want){2, 2, 1});
  linear(a, 3, 128); /* u8 at stride 128 B: one bank */
  expect(&M942, a, ALL, 1, (want){64, 2, 32});
  linear(a, 2, 4); /* b32 straddling dwords (unaligned mode): dwords p..p+32 per phase */
  expect(&M942, a, ALL, 4, (want){4, 2, 2});
}

static void partial_exec(void **state) {
  (void)state;
  uint32_t a[64];
  linear(a, 0, 4);
  expect(&M942, a, 0xffffffffull, 4, (want){1, 1, 1}); /* only the first phase */
  expect(&M942, a, 1ull << 5 | 1ull << 40, 4, (want){2, 2, 1});
  expect(&M942, a, 0, 4, (want){0, 0, 0});
  linear(a, 0, 128); /* 32-way with half the lanes off: 16 per phase */
  expect(&M942, a, 0x5555555555555555ull, 4, (want){32, 2, 16});
}

/* 128-byte rows of eight 16-byte chunks; row r's chunk c at chunk
 * c ^ ((r >> 1) & 7) (swizzled) or c; lane l reads row l % 16, chunk l / 16. */
static void tile_addrs(uint32_t *a, int swz) {
  for (unsigned l = 0; l < 64; l++) {
    uint32_t r = l % 16, c = l / 16;
    a[l] = r * 128 + (swz ? c ^ ((r >> 1) & 7) : c) * 16;
  }
}

static void xor_swizzle(void **state) {
  (void)state;
  uint32_t a[64];
  /* gfx950: 16 lanes per phase cover (r & 1, r >> 1): 16 distinct 16-byte
   * slots of one 256-byte bank row when swizzled; unswizzled, all 16 rows
   * sit at byte 0 or 128 of it: 8 rows per 4-bank group */
  tile_addrs(a, 1);
  expect(&M950, a, ALL, 16, (want){4, 4, 1});
  tile_addrs(a, 0);
  expect(&M950, a, ALL, 16, (want){32, 4, 8});
  /* gfx942: 8 lanes per phase, rows 2i and 2i+1 get the same XOR term */
  tile_addrs(a, 1);
  expect(&M942, a, ALL, 16, (want){16, 8, 2});
}

/* [kq][row][16 B] stage of 128 rows; the MFMA operand read: lane l wants row
 * l % 16, the 8-byte half (l / 16) & 1 of chunk kq = l / 32; ds_read2_b64
 * offset1:32 also reads 256 bytes (16 rows) further. */
static void read2_b64_kq_layout(void **state) {
  (void)state;
  uint32_t a0[64], a1[64];
  for (unsigned l = 0; l < 64; l++) {
    a0[l] = (l / 32) * 128 * 16 + (l % 16) * 16 + ((l / 16) & 1) * 8;
    a1[l] = a0[l] + 32 * 8;
  }
  /* gfx942: 16 lanes per phase, rows r and r + 8 are 128 bytes apart: 2-way */
  emu_lds_cost c0 = emu_lds_cost_of(&M942, a0, ALL, 8), c1 = emu_lds_cost_of(&M942, a1, ALL, 8);
  assert_int_equal(c0.cycles + c1.cycles, 16);
  assert_int_equal(c0.min_cycles + c1.min_cycles, 8);
  assert_int_equal(c0.degree, 2);
  assert_int_equal(c1.degree, 2);
  /* gfx950: 32 lanes per phase read 16 rows x 16 bytes = all 64 banks once */
  c0 = emu_lds_cost_of(&M950, a0, ALL, 8), c1 = emu_lds_cost_of(&M950, a1, ALL, 8);
  assert_int_equal(c0.cycles + c1.cycles, 4);
  assert_int_equal(c0.degree, 1);
}

/* ---- the emulator's statistics ------------------------------------------------ */
/* One LDS instruction (inline asm `body`) with lane address $2 = mul*tid+add
 * (+ the LDS base) and EXEC = mask during it; $3 is the buffer V# and $4 the
 * M0 value of a DMA. Returns the launch's LDS statistics. */
static emu_lds_stats run_one(const char *arch, const char *T, const char *body, uint32_t mul, uint32_t add,
                             uint64_t mask) {
  static const char *fmt =
      "target triple = \"amdgcn-amd-amdhsa\"\n"
      "@lds = internal addrspace(3) global [16384 x i8] poison, align 16\n"
      "declare i32 @llvm.amdgcn.workitem.id.x()\n"
      "declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)\n"
      "define amdgpu_kernel void @k(ptr addrspace(1) %%src, i32 %%mul, i32 %%add, i64 %%mask) {\n"
      "  %%tid = call i32 @llvm.amdgcn.workitem.id.x()\n"
      "  %%am = mul i32 %%tid, %%mul\n"
      "  %%a0 = add i32 %%am, %%add\n"
      "  %%lb = ptrtoint ptr addrspace(3) @lds to i32\n"
      "  %%a = add i32 %%a0, %%lb\n"
      "  %%r = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %%src, i16 0, i64 4096, i32 159744)\n"
      "  %%ri = ptrtoint ptr addrspace(8) %%r to i128\n"
      "  %%rv = bitcast i128 %%ri to <4 x i32>\n"
      "  %%res = call { %s, i64 } asm sideeffect \"s_mov_b64 $1, exec\\0As_mov_b64 exec, $5\\0A%s\\0A"
      "s_waitcnt vmcnt(0) lgkmcnt(0)\\0As_mov_b64 exec, $1\", \"=&v,=&s,v,s,s,s,~{memory}\"(i32 %%a, <4 x i32> %%rv, "
      "i32 %%lb, i64 %%mask)\n"
      "  ret void\n"
      "}\n";
  char ir[4096];
  snprintf(ir, sizeof ir, fmt, T, body);
  tmem t;
  convjit_status st = tmem_open(&t, arch, ir);
  if (st != CONVJIT_OK) fprintf(stderr, "%s\n%s\n", cj_error_text(), ir);
  assert_int_equal(st, CONVJIT_OK);
  struct {
    uint64_t src;
    uint32_t mul, add;
    uint64_t mask;
  } args = {tmem_buf(&t, NULL, 4096), mul, add, mask};
  uint32_t grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  emu_stats s;
  emu_launch_opts lo = {.size = sizeof lo, .per_wave_stats = 1, .hazard = -1};
  st = emu_launch(t.k, grid, block, &args, sizeof args, &lo, &s);
  if (st != CONVJIT_OK) fprintf(stderr, "(run) %s\n", cj_error_text());
  assert_int_equal(st, CONVJIT_OK);
  char line[256];
  int n = emu_stats_lds_line(&s, line, sizeof line);
  assert_true(n > 0 && strstr(line, "MODELLED") != NULL);
  assert_int_equal(s.lds.banks, strcmp(arch, "gfx950") ? 32 : 64);
  emu_lds_stats l = s.lds;
  assert_int_equal(s.lds_wave_max_cycles, l.cycles); /* one wave: its record is the launch's */
  assert_int_equal(s.nper_wave, 1);
  assert_int_equal(s.per_wave[0].lds.cycles, l.cycles);
  assert_int_equal(s.per_wave[0].lds.accesses, l.accesses);
  assert_int_equal(s.per_wave[0].lds.excess, l.excess);
  emu_stats_free(&s);
  tmem_close(&t);
  return l;
}

static void expect_stats(emu_lds_stats l, uint64_t accesses, uint64_t cycles, uint64_t min, uint32_t degree) {
  assert_int_equal(l.accesses, accesses);
  assert_int_equal(l.cycles, cycles);
  assert_int_equal(l.min_cycles, min);
  assert_int_equal(l.excess, cycles - min);
  assert_int_equal(l.max_degree, degree);
}

static void emulator_counts(void **state) {
  (void)state;
  /* a kernel without LDS instructions prices nothing */
  expect_stats(run_one("gfx942", "i32", "v_mov_b32 $0, 0", 4, 0, ALL), 0, 0, 0, 0);
  /* ds_read_b32 stride 32 dwords: 32-way on 32 banks (see strides_and_broadcast) */
  expect_stats(run_one("gfx942", "i32", "ds_read_b32 $0, $2", 128, 0, ALL), 1, 64, 2, 32);
  expect_stats(run_one("gfx950", "i32", "ds_read_b32 $0, $2", 128, 0, ALL), 1, 32, 1, 32);
  /* ds_write_b32 stride 1 with half the wave: one phase */
  expect_stats(run_one("gfx942", "i32", "v_mov_b32 $0, 0\\0Ads_write_b32 $2, $0", 4, 0, 0xffffffffull), 1, 1, 1, 1);
  /* ds_read_b128 sequential + offset: 8 phases of 8 lanes */
  expect_stats(run_one("gfx942", "<4 x i32>", "ds_read_b128 $0, $2 offset:16", 16, 0, ALL), 1, 8, 8, 1);
  /* ds_read2_b32 at stride 2 dwords: each offset 2-way, two accesses */
  expect_stats(run_one("gfx942", "<2 x i32>", "ds_read2_b32 $0, $2 offset1:1", 8, 0, ALL), 1, 8, 4, 2);
  /* ds_read2st64_b64 offset1:1 stride 1: both halves conflict-free */
  expect_stats(run_one("gfx942", "<4 x i32>", "ds_read2st64_b64 $0, $2 offset1:1", 8, 0, ALL), 1, 8, 8, 1);
  /* ds_read_u16 sequential bytes pairs: broadcast within a dword */
  expect_stats(run_one("gfx942", "i32", "ds_read_u16 $0, $2", 2, 0, ALL), 1, 2, 2, 1);
  /* LDS DMA: 64 lanes x 4 bytes contiguous from M0 (lds base) */
  expect_stats(run_one("gfx942", "i32",
                       "v_mov_b32 $0, 0\\0As_mov_b32 m0, $4\\0Abuffer_load_dword $0, $3, 0 offen lds", 4, 0, ALL),
               1, 2, 2, 1);
  expect_stats(run_one("gfx950", "i32",
                       "v_mov_b32 $0, 0\\0As_mov_b32 m0, $4\\0Abuffer_load_dwordx4 $0, $3, 0 offen lds", 4, 0, ALL),
               1, 4, 4, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(arch_models),    cmocka_unit_test(strides_and_broadcast), cmocka_unit_test(widths),
      cmocka_unit_test(partial_exec),   cmocka_unit_test(xor_swizzle),           cmocka_unit_test(read2_b64_kq_layout),
      cmocka_unit_test(emulator_counts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
