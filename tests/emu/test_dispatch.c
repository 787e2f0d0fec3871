/* Dispatch (docs/isa-notes.md §5): initial SGPR/VGPR state from the kernel descriptor,
 * 3D grids and blocks, partial last wave, hidden kernel arguments by
 * value_kind, s_barrier rendezvous of the waves of a workgroup through LDS,
 * workgroup subsets (filter and list), statistics, and argument checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "support_mem.h"

#define OK(x) do { convjit_status s_ = (x); if (s_ != CONVJIT_OK) fail_msg("%s -> %d: %s", #x, s_, cj_error_text()); } while (0)

/* Block (8,4,3) = 96 threads: wave 1 holds threads 64..95 (32 live lanes).
 * Grid (3,2,2); workgroup linear 7 = 1 + 3*(0 + 2*1) -> id (1,0,1). */
static void t_initial_state(void **st) {
  (void)st;
  tb_run r;
  memset(&r, 0, sizeof r);
  cj_blob co = {0};
  OK(tb_asm_build("gfx942", "  s_mov_b64 s[20:21], exec\n", 16, 0, &co));
  OK(tb_load(&r, "gfx942", &co, "k"));
  cj_blob_free(&co);
  emu_wave *w = calloc(1, sizeof *w);
  emu_launch_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.hazard = -1;
  o.final_state = w;
  o.final_wg = 7;
  o.final_wave = 1;
  uint32_t grid[3] = {3, 2, 2}, block[3] = {8, 4, 3};
  uint8_t args[16] = {0};
  OK(emu_launch(r.k, grid, block, args, sizeof args, &o, &r.stats));
  assert_int_equal(w->s[2], 1);
  assert_int_equal(w->s[3], 0);
  assert_int_equal(w->s[4], 1);
  assert_true(((uint64_t)w->s[1] << 32 | w->s[0]) >= EMU_MEM_BASE); /* kernarg segment in device memory */
  assert_int_equal(w->s[20], 0xffffffffu);                           /* EXEC of the partial wave */
  assert_int_equal(w->s[21], 0);
  for (int l = 0; l < 32; l++) {
    uint32_t t = 64 + (uint32_t)l, x = t % 8, y = (t / 8) % 4, z = t / 32;
    assert_int_equal(w->v[0][l], x | y << 10 | z << 20);
  }
  assert_int_equal(r.stats.workgroups, 12);
  assert_int_equal(r.stats.waves, 24);
  free(w);
  tb_run_free(&r);
}

static const char *k_ids_ir =
    "target triple = \"amdgcn-amd-amdhsa\"\n"
    "declare i32 @llvm.amdgcn.workitem.id.x()\ndeclare i32 @llvm.amdgcn.workitem.id.y()\n"
    "declare i32 @llvm.amdgcn.workgroup.id.x()\ndeclare i32 @llvm.amdgcn.workgroup.id.y()\n"
    "declare ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()\n"
    "define amdgpu_kernel void @k(ptr addrspace(1) %out, ptr addrspace(1) %hid) {\n"
    "  %tx = call i32 @llvm.amdgcn.workitem.id.x()\n  %ty = call i32 @llvm.amdgcn.workitem.id.y()\n"
    "  %gx = call i32 @llvm.amdgcn.workgroup.id.x()\n  %gy = call i32 @llvm.amdgcn.workgroup.id.y()\n"
    "  %ip = call ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()\n"
    "  %bcx = load i32, ptr addrspace(4) %ip\n"
    "  %p4 = getelementptr i8, ptr addrspace(4) %ip, i64 4\n  %bcy = load i32, ptr addrspace(4) %p4\n"
    "  %p12 = getelementptr i8, ptr addrspace(4) %ip, i64 12\n  %gsx = load i16, ptr addrspace(4) %p12\n"
    "  %p14 = getelementptr i8, ptr addrspace(4) %ip, i64 14\n  %gsy = load i16, ptr addrspace(4) %p14\n"
    "  %p64 = getelementptr i8, ptr addrspace(4) %ip, i64 64\n  %gd = load i16, ptr addrspace(4) %p64\n"
    /* global thread index, row-major over (x, y) of the whole grid */
    "  %bx = mul i32 %gx, 16\n  %X = add i32 %bx, %tx\n  %by = mul i32 %gy, 4\n  %Y = add i32 %by, %ty\n"
    "  %W = mul i32 %bcx, 16\n  %row = mul i32 %Y, %W\n  %i = add i32 %row, %X\n"
    "  %v0 = shl i32 %gx, 24\n  %v1 = shl i32 %gy, 16\n  %v2 = shl i32 %ty, 8\n"
    "  %v3 = or i32 %v0, %v1\n  %v4 = or i32 %v3, %v2\n  %v = or i32 %v4, %tx\n"
    "  %po = getelementptr i32, ptr addrspace(1) %out, i32 %i\n  store i32 %v, ptr addrspace(1) %po\n"
    "  %z = icmp eq i32 %i, 0\n  br i1 %z, label %h, label %e\n"
    "h:\n  store i32 %bcx, ptr addrspace(1) %hid\n"
    "  %h1 = getelementptr i32, ptr addrspace(1) %hid, i32 1\n  store i32 %bcy, ptr addrspace(1) %h1\n"
    "  %gsx32 = zext i16 %gsx to i32\n  %gsy32 = zext i16 %gsy to i32\n  %gd32 = zext i16 %gd to i32\n"
    "  %h2 = getelementptr i32, ptr addrspace(1) %hid, i32 2\n  store i32 %gsx32, ptr addrspace(1) %h2\n"
    "  %h3 = getelementptr i32, ptr addrspace(1) %hid, i32 3\n  store i32 %gsy32, ptr addrspace(1) %h3\n"
    "  %h4 = getelementptr i32, ptr addrspace(1) %hid, i32 4\n  store i32 %gd32, ptr addrspace(1) %h4\n"
    "  br label %e\ne:\n  ret void\n}\n";

typedef struct idrun {
  tmem t;
  uint64_t dout, dhid;
  uint32_t out[5 * 16 * 3 * 4], hid[5];
} idrun;

static void ids_launch(idrun *r, const emu_launch_opts *o, emu_stats *st) {
  uint32_t grid[3] = {5, 3, 1}, block[3] = {16, 4, 1};
  uint64_t args[2] = {r->dout, r->dhid};
  OK(emu_mem_memset(r->t.mem, r->dout, 0xee, sizeof r->out));
  OK(emu_launch(r->t.k, grid, block, args, sizeof args, o, st));
  OK(emu_mem_d2h(r->t.mem, r->out, r->dout, sizeof r->out));
  OK(emu_mem_d2h(r->t.mem, r->hid, r->dhid, sizeof r->hid));
}

static void t_ids_and_hidden_args(void **st) {
  (void)st;
  idrun r;
  OK(tmem_open(&r.t, "gfx950", k_ids_ir));
  r.dout = tmem_buf(&r.t, NULL, sizeof r.out);
  r.dhid = tmem_buf(&r.t, NULL, sizeof r.hid);
  emu_stats s;
  emu_launch_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.hazard = -1;
  o.per_wave_stats = 1;
  ids_launch(&r, &o, &s);
  for (uint32_t Y = 0; Y < 12; Y++)
    for (uint32_t X = 0; X < 80; X++) {
      uint32_t want = (X / 16) << 24 | (Y / 4) << 16 | (Y % 4) << 8 | (X % 16);
      assert_int_equal(r.out[Y * 80 + X], want);
    }
  assert_int_equal(r.hid[0], 5);  /* hidden_block_count_x */
  assert_int_equal(r.hid[1], 3);  /* hidden_block_count_y */
  assert_int_equal(r.hid[2], 16); /* hidden_group_size_x */
  assert_int_equal(r.hid[3], 4);  /* hidden_group_size_y */
  assert_int_equal(r.hid[4], 2);  /* hidden_grid_dims */
  /* statistics: 15 workgroups of one wave; per-wave records sum to the total */
  assert_int_equal(s.workgroups, 15);
  assert_int_equal(s.waves, 15);
  assert_int_equal(s.nper_wave, 15);
  uint64_t sum = 0, vmem = 0;
  for (size_t i = 0; i < s.nper_wave; i++) { sum += s.per_wave[i].total; vmem += s.per_wave[i].count[EMU_CLASS_VMEM]; }
  assert_true(sum == s.total);
  assert_true(vmem == s.count[EMU_CLASS_VMEM] && vmem >= 15);
  assert_int_equal(s.per_wave[14].wg[0], 4);
  assert_int_equal(s.per_wave[14].wg[1], 2);
  /* per-wave extremes (merged across host threads) equal those of the
   * per-wave records; the one wave that stores the hidden values runs more
   * VMEM than the others, so min < max */
  uint64_t mn = UINT64_MAX, mx = 0, tmn = UINT64_MAX, tmx = 0;
  for (size_t i = 0; i < s.nper_wave; i++) {
    uint64_t v = s.per_wave[i].count[EMU_CLASS_VMEM], t = s.per_wave[i].total;
    mn = v < mn ? v : mn; mx = v > mx ? v : mx;
    tmn = t < tmn ? t : tmn; tmx = t > tmx ? t : tmx;
  }
  assert_true(s.wave_min[EMU_CLASS_VMEM] == mn && s.wave_max[EMU_CLASS_VMEM] == mx);
  assert_true(s.wave_min_total == tmn && s.wave_max_total == tmx);
  assert_true(mn < mx);
  assert_true(s.emulated_ms > 0.0);
  emu_stats_free(&s);
  tmem_close(&r.t);
}

static int even_x(void *user, const uint32_t wg[3]) { (void)user; return (wg[0] & 1) == 0; }

static void t_subsets(void **st) {
  (void)st;
  idrun r;
  OK(tmem_open(&r.t, "gfx942", k_ids_ir));
  r.dout = tmem_buf(&r.t, NULL, sizeof r.out);
  r.dhid = tmem_buf(&r.t, NULL, sizeof r.hid);
  emu_stats s;
  emu_launch_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.hazard = -1;
  o.filter = even_x;
  ids_launch(&r, &o, &s);
  assert_int_equal(s.workgroups, 9); /* x in {0,2,4} for 3 rows */
  for (uint32_t Y = 0; Y < 12; Y++)
    for (uint32_t X = 0; X < 80; X++) {
      int ran = ((X / 16) & 1) == 0;
      assert_int_equal(r.out[Y * 80 + X], ran ? ((X / 16) << 24 | (Y / 4) << 16 | (Y % 4) << 8 | (X % 16)) : 0xeeeeeeeeu);
    }
  uint64_t list[2] = {14, 6}; /* (4,2) and (1,1) */
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.hazard = -1;
  o.wg_list = list;
  o.wg_list_len = 2;
  ids_launch(&r, &o, &s);
  assert_int_equal(s.workgroups, 2);
  assert_int_equal(r.out[(2 * 4) * 80 + 4 * 16], 4u << 24 | 2u << 16);
  assert_int_equal(r.out[(1 * 4) * 80 + 1 * 16], 1u << 24 | 1u << 16);
  assert_int_equal(r.out[0], 0xeeeeeeeeu);
  uint64_t badlist[1] = {15};
  o.wg_list = badlist;
  o.wg_list_len = 1;
  uint32_t grid[3] = {5, 3, 1}, block[3] = {16, 4, 1};
  uint64_t args[2] = {r.dout, r.dhid};
  assert_int_equal(emu_launch(r.t.k, grid, block, args, sizeof args, &o, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "wg_list[0] = 15"));
  tmem_close(&r.t);
}

/* Four waves exchange values through LDS across s_barrier: each thread
 * reads what the next wave wrote. Hazard checking is on. */
static const char *k_barrier_ir =
    "target triple = \"amdgcn-amd-amdhsa\"\n"
    "@lds = internal addrspace(3) global [256 x i32] poison, align 4\n"
    "declare i32 @llvm.amdgcn.workitem.id.x()\ndeclare void @llvm.amdgcn.s.barrier()\n"
    "define amdgpu_kernel void @k(ptr addrspace(1) %out) #0 {\n"
    "  %t = call i32 @llvm.amdgcn.workitem.id.x()\n"
    "  %v = mul i32 %t, 3\n  %p = getelementptr i32, ptr addrspace(3) @lds, i32 %t\n  store i32 %v, ptr addrspace(3) %p\n"
    "  fence syncscope(\"workgroup\") release\n  call void @llvm.amdgcn.s.barrier()\n  fence syncscope(\"workgroup\") acquire\n"
    "  %n = add i32 %t, 64\n  %m = and i32 %n, 255\n  %q = getelementptr i32, ptr addrspace(3) @lds, i32 %m\n"
    "  %x = load i32, ptr addrspace(3) %q\n"
    "  %o = getelementptr i32, ptr addrspace(1) %out, i32 %t\n  store i32 %x, ptr addrspace(1) %o\n  ret void\n}\n"
    "attributes #0 = { \"amdgpu-flat-work-group-size\"=\"256,256\" }\n";

static void t_barrier_lds_exchange(void **st) {
  (void)st;
  const char *archs[] = {"gfx942", "gfx950"};
  for (int a = 0; a < 2; a++) {
    tmem t;
    OK(tmem_open(&t, archs[a], k_barrier_ir));
    uint64_t d = tmem_buf(&t, NULL, 256 * 4);
    uint64_t args[1] = {d};
    emu_stats s;
    uint32_t grid[3] = {2, 1, 1}, block[3] = {256, 1, 1};
    OK(emu_launch(t.k, grid, block, args, sizeof args, NULL, &s));
    uint32_t out[256];
    OK(emu_mem_d2h(t.mem, out, d, sizeof out));
    for (uint32_t i = 0; i < 256; i++) assert_int_equal(out[i], ((i + 64) & 255) * 3);
    assert_int_equal(s.count[EMU_CLASS_BARRIER], 2 * 4); /* one per wave */
    tmem_close(&t);
  }
}

/* The loop-structure counts (emu_stats vmcnt0_*, barriers,
 * barrier_cover_mfma), on a hand-written 3-trip loop whose counts are known
 * by construction: per trip one s_waitcnt vmcnt(0), one barrier, two MFMAs
 * before the lgkmcnt wait (cover) and one after it (not cover); after the
 * loop a vmcnt(1) wait (not vmcnt(0)) and an MFMA with no barrier before
 * it. Two waves. */
static const char *k_loop_counts =
    "  s_mov_b32 s5, 3\n  v_mov_b32 v1, 0\n  v_mov_b32 v2, 0\n  v_mov_b32 v3, 0\n"
    "  v_mov_b32 v4, 0\n  v_mov_b32 v5, 0\n  v_mov_b32 v6, 0\n  v_mov_b32 v7, 0\n"
    ".Lloop:\n"
    "  s_waitcnt vmcnt(0)\n  s_barrier\n"
    "  v_mfma_f32_16x16x16_bf16 v[4:7], v[2:3], v[2:3], v[4:7]\n"
    "  v_mfma_f32_16x16x16_bf16 v[4:7], v[2:3], v[2:3], v[4:7]\n"
    "  ds_read_b32 v8, v1\n  s_waitcnt lgkmcnt(0)\n"
    "  v_mfma_f32_16x16x16_bf16 v[4:7], v[2:3], v[2:3], v[4:7]\n"
    "  s_sub_u32 s5, s5, 1\n  s_cmp_lg_u32 s5, 0\n  s_cbranch_scc1 .Lloop\n"
    "  s_waitcnt vmcnt(1)\n  s_nop 7\n"
    "  v_mfma_f32_16x16x16_bf16 v[4:7], v[2:3], v[2:3], v[4:7]\n  s_nop 7\n  s_nop 7\n";

static void t_loop_counts(void **st) {
  (void)st;
  const char *archs[] = {"gfx942", "gfx950"};
  for (int a = 0; a < 2; a++) {
    tb_run r;
    OK(tb_asm_run(&r, archs[a], k_loop_counts, 1, 128, NULL, 0, 64, 0));
    assert_int_equal(r.stats.waves, 2);
    assert_int_equal(r.stats.vmcnt0_waits, 2 * 3);
    assert_int_equal(r.stats.vmcnt0_wave_max, 3);
    assert_int_equal(r.stats.barriers, 2 * 3);
    assert_int_equal(r.stats.barrier_cover_mfma, 2 * 3 * 2);
    assert_int_equal(r.stats.count[EMU_CLASS_MFMA], 2 * (3 * 3 + 1));
    tb_run_free(&r);
  }
}

/* Kernarg preload (inreg arguments, gfx950): the descriptor asks for 4
 * preloaded SGPRs after dispatch/queue/kernarg/dispatch-id pointers; the
 * code starts with LLVM's compatibility s_load + s_branch, which reloads the
 * same values from the kernarg segment. */
static const char *k_preload_ir =
    "target triple = \"amdgcn-amd-amdhsa\"\n"
    "declare i32 @llvm.amdgcn.workitem.id.x()\n"
    "define amdgpu_kernel void @k(ptr addrspace(1) inreg %out, i32 inreg %v, i32 inreg %u) {\n"
    "  %t = call i32 @llvm.amdgcn.workitem.id.x()\n  %x = mul i32 %v, %t\n  %y = add i32 %x, %u\n"
    "  %p = getelementptr i32, ptr addrspace(1) %out, i32 %t\n  store i32 %y, ptr addrspace(1) %p\n  ret void\n}\n";

static void t_kernarg_preload(void **st) {
  (void)st;
  tmem t;
  OK(tmem_open(&t, "gfx950", k_preload_ir));
  assert_int_equal(t.k->kernarg_preload & 0x7f, 4);
  uint64_t d = tmem_buf(&t, NULL, 64 * 4);
  struct { uint64_t out; uint32_t v, u; } args = {d, 7, 1000};
  OK(tmem_run(&t, 1, 64, &args, sizeof args));
  uint32_t out[64];
  OK(emu_mem_d2h(t.mem, out, d, sizeof out));
  for (uint32_t i = 0; i < 64; i++) assert_int_equal(out[i], 7 * i + 1000);
  tmem_close(&t);
}

static void t_bad_args(void **st) {
  (void)st;
  tmem t;
  OK(tmem_open(&t, "gfx950", k_ids_ir));
  uint64_t args[2] = {0, 0};
  uint32_t grid[3] = {1, 0, 1}, block[3] = {64, 1, 1};
  assert_int_equal(emu_launch(t.k, grid, block, args, sizeof args, NULL, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "grid[1] = 0"));
  uint32_t g1[3] = {1, 1, 1}, big[3] = {2048, 1, 1};
  assert_int_equal(emu_launch(t.k, g1, big, args, sizeof args, NULL, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_int_equal(emu_launch(t.k, g1, block, args, 8, NULL, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "kernarg_size = 8"));
  emu_launch_opts o;
  memset(&o, 0, sizeof o);
  o.size = 3;
  assert_int_equal(emu_launch(t.k, g1, block, args, sizeof args, &o, NULL), CONVJIT_ERR_INVALID_ARG);
  /* a wild store address is an emulation error naming the kernel */
  uint64_t wild[2] = {0x1234, 0x1234};
  assert_int_equal(emu_launch(t.k, g1, block, wild, sizeof wild, NULL, NULL), CONVJIT_ERR_EMULATION);
  assert_non_null(strstr(cj_error_text(), "k"));
  /* CONVJIT_EMU_THREADS: a value outside 1..1024 or not a number stops the
   * launch before it runs; a good one is taken (the wild store then fails) */
  const char *bad_threads[] = {"abc", "0", "2x", "-3", "5000"};
  emu_ctx_set_threads(t.ctx, 0); /* tmem_open pins 1 thread; 0 = consult the variable */
  for (size_t i = 0; i < sizeof bad_threads / sizeof bad_threads[0]; i++) {
    setenv("CONVJIT_EMU_THREADS", bad_threads[i], 1);
    assert_int_equal(emu_launch(t.k, g1, block, wild, sizeof wild, NULL, NULL), CONVJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(cj_error_text(), "CONVJIT_EMU_THREADS"));
    assert_non_null(strstr(cj_error_text(), bad_threads[i]));
  }
  setenv("CONVJIT_EMU_THREADS", "1", 1);
  assert_int_equal(emu_launch(t.k, g1, block, wild, sizeof wild, NULL, NULL), CONVJIT_ERR_EMULATION);
  unsetenv("CONVJIT_EMU_THREADS");
  emu_ctx_set_threads(t.ctx, 1);
  emu_ctx *c = NULL;
  assert_int_equal(emu_ctx_create("gfx90a", NULL, &c), CONVJIT_ERR_INVALID_ARG);
  assert_null(c);
  /* a gfx950 code object on a gfx942 context */
  OK(emu_ctx_create("gfx942", NULL, &c));
  emu_module *m = NULL;
  assert_int_equal(emu_module_load(c, t.co.data, t.co.size, &m), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "gfx942"));
  uint8_t junk[64] = {1, 2, 3};
  assert_int_not_equal(emu_module_load(c, junk, sizeof junk, &m), CONVJIT_OK);
  emu_ctx_destroy(c);
  tmem_close(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(t_initial_state), cmocka_unit_test(t_ids_and_hidden_args), cmocka_unit_test(t_subsets),
      cmocka_unit_test(t_barrier_lds_exchange), cmocka_unit_test(t_loop_counts), cmocka_unit_test(t_kernarg_preload), cmocka_unit_test(t_bad_args),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
