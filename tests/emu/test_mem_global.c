/* Global / flat / scalar memory on the emulator (exec_global.c, exec_mem.c):
 *   - global_load saddr form (s base + 32-bit VGPR offset + signed offset,
 *     incl. a negative one) and 64-bit vaddr form; dword..dwordx4, sbyte,
 *     ushort, short_d16_hi; global_store; flat_load/store;
 *   - s_load_dword x1..x16 with an immediate offset; s_buffer_load with its
 *     NUM_RECORDS clip;
 *   - an access outside every allocation is an error naming the address,
 *     the kernel and the instruction offset;
 *   - procedural input (8 GiB, nothing allocated) copied into a write-sink
 *     output (8 GiB, two 64-byte windows kept) by a plain IR kernel with
 *     64-bit addresses; a read outside the sink's windows is an error;
 *   - global_atomic_add_f32 with return (lane-order old values) and LLVM's
 *     uniform-address reduction (no return).
 * Expected values are computed here from the buffer contents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "support_mem.h"

#define SENT 0xAAAAAAAAu

static uint32_t srcw(uint32_t i) { return 0x7100u + 0x01030507u * i; }
static uint8_t srcb(uint32_t j) { return (uint8_t)(srcw(j / 4) >> (8 * (j % 4))); }

typedef struct gargs {
  uint64_t src, dst, vin, dat;
} gargs;

/* $0 out T (tied to SENT), $1 scratch, $2 v = vin[tid] (i32), $3 v[2] = src + vin[tid]
 * (64-bit), $4 s[2] = src, $5 data T = dat[tid]. out at dst + 32*tid. */
static char *gkernel(const char *T, const char *body) {
  static const char *fmt =
      "target triple = \"amdgcn-amd-amdhsa\"\n"
      "declare i32 @llvm.amdgcn.workitem.id.x()\n"
      "define amdgpu_kernel void @k(ptr addrspace(1) %%src, ptr addrspace(1) %%dst, ptr addrspace(1) %%vin,\n"
      "    ptr addrspace(1) %%dat) {\n"
      "  %%tid = call i32 @llvm.amdgcn.workitem.id.x()\n"
      "  %%vp = getelementptr i32, ptr addrspace(1) %%vin, i32 %%tid\n"
      "  %%vx = load i32, ptr addrspace(1) %%vp\n"
      "  %%dp = getelementptr [32 x i8], ptr addrspace(1) %%dat, i32 %%tid\n"
      "  %%dd = load %s, ptr addrspace(1) %%dp, align 16\n"
      "  %%vz = zext i32 %%vx to i64\n"
      "  %%pi = ptrtoint ptr addrspace(1) %%src to i64\n"
      "  %%pa = add i64 %%pi, %%vz\n"
      "  %%res = call { %s, i64 } asm sideeffect \"%s\\0As_waitcnt vmcnt(0) lgkmcnt(0)\\0As_mov_b64 $1, 0\",\n"
      "      \"=v,=&s,v,v,s,v,0,~{memory}\"(i32 %%vx, i64 %%pa, i64 %%pi, %s %%dd, %s %s)\n"
      "  %%out = extractvalue { %s, i64 } %%res, 0\n"
      "  %%op = getelementptr [32 x i8], ptr addrspace(1) %%dst, i32 %%tid\n"
      "  store %s %%out, ptr addrspace(1) %%op, align 16\n"
      "  ret void\n"
      "}\n";
  char init[256];
  tmem_splat(T, SENT, init, sizeof init);
  char *b = malloc(8192);
  snprintf(b, 8192, fmt, T, T, body, T, T, init, T, T);
  return b;
}

typedef struct grun {
  uint32_t out[64][8];
  uint8_t src[4096];
  uint64_t srca;
} grun;

static convjit_status grun_go(grun *r, const char *arch, const char *T, const char *body, const uint32_t vin[64]) {
  char *ir = gkernel(T, body);
  tmem t;
  convjit_status st = tmem_open(&t, arch, ir);
  if (st != CONVJIT_OK) fprintf(stderr, "%s\n%s\n", cj_error_text(), ir);
  assert_int_equal(st, CONVJIT_OK);
  free(ir);
  uint32_t src[1024], dat[64][8];
  for (uint32_t i = 0; i < 1024; i++) src[i] = srcw(i);
  for (uint32_t l = 0; l < 64; l++)
    for (uint32_t k = 0; k < 8; k++) dat[l][k] = 0xC0000000u + 16 * l + k;
  gargs a = {tmem_buf(&t, src, sizeof src), tmem_buf(&t, NULL, sizeof r->out), tmem_buf(&t, vin, 256),
             tmem_buf(&t, dat, sizeof dat)};
  r->srca = a.src;
  st = tmem_run(&t, 1, 64, &a, sizeof a);
  if (st == CONVJIT_OK) {
    assert_int_equal(emu_mem_d2h(t.mem, r->out, a.dst, sizeof r->out), CONVJIT_OK);
    assert_int_equal(emu_mem_d2h(t.mem, r->src, a.src, sizeof r->src), CONVJIT_OK);
  }
  tmem_close(&t);
  return st;
}

static uint32_t get32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static void global_loads(void **state) {
  (void)state;
  grun r;
  uint32_t vin[64];
  for (int ai = 0; ai < 2; ai++) {
    const char *arch = ai ? "gfx950" : "gfx942";
    for (uint32_t l = 0; l < 64; l++) vin[l] = 16 * l + 32;
    /* saddr form, negative offset: src + 16l + 32 - 8 */
    assert_int_equal(grun_go(&r, arch, "i32", "global_load_dword $0, $2, $4 offset:-8", vin), CONVJIT_OK);
    for (uint32_t l = 0; l < 64; l++) assert_int_equal(r.out[l][0], srcw(4 * l + 6));
    /* vaddr (64-bit) form, dwordx4, offset:16 */
    assert_int_equal(grun_go(&r, arch, "<4 x i32>", "global_load_dwordx4 $0, $3, off offset:16", vin), CONVJIT_OK);
    for (uint32_t l = 0; l < 64; l++)
      for (uint32_t k = 0; k < 4; k++) assert_int_equal(r.out[l][k], srcw(4 * l + 12 + k));
    /* dwordx3, saddr */
    assert_int_equal(grun_go(&r, arch, "<3 x i32>", "global_load_dwordx3 $0, $2, $4 offset:4", vin), CONVJIT_OK);
    for (uint32_t l = 0; l < 64; l++)
      for (uint32_t k = 0; k < 3; k++) assert_int_equal(r.out[l][k], srcw(4 * l + 9 + k));
    /* byte / short at odd addresses */
    for (uint32_t l = 0; l < 64; l++) vin[l] = 5 * l + 1;
    assert_int_equal(grun_go(&r, arch, "i32", "global_load_sbyte $0, $2, $4 offset:2", vin), CONVJIT_OK);
    for (uint32_t l = 0; l < 64; l++) assert_int_equal(r.out[l][0], (uint32_t)(int32_t)(int8_t)srcb(5 * l + 3));
    assert_int_equal(grun_go(&r, arch, "i32", "global_load_ushort $0, $3, off", vin), CONVJIT_OK);
    for (uint32_t l = 0; l < 64; l++)
      assert_int_equal(r.out[l][0], (uint32_t)srcb(5 * l + 1) | (uint32_t)srcb(5 * l + 2) << 8);
    assert_int_equal(grun_go(&r, arch, "i32", "global_load_short_d16_hi $0, $2, $4", vin), CONVJIT_OK);
    for (uint32_t l = 0; l < 64; l++)
      assert_int_equal(r.out[l][0], (SENT & 0xffff) | ((uint32_t)srcb(5 * l + 1) | (uint32_t)srcb(5 * l + 2) << 8) << 16);
    assert_int_equal(grun_go(&r, arch, "i32", "global_load_ubyte $0, $2, $4 offset:-1", vin), CONVJIT_OK);
    for (uint32_t l = 0; l < 64; l++) assert_int_equal(r.out[l][0], srcb(5 * l));
    /* flat */
    for (uint32_t l = 0; l < 64; l++) vin[l] = 8 * l;
    assert_int_equal(grun_go(&r, arch, "<2 x i32>", "flat_load_dwordx2 $0, $3 offset:8", vin), CONVJIT_OK);
    for (uint32_t l = 0; l < 64; l++) assert_int_equal(r.out[l][1], srcw(2 * l + 3));
  }
}

static void global_stores(void **state) {
  (void)state;
  grun r;
  uint32_t vin[64];
  for (uint32_t l = 0; l < 64; l++) vin[l] = 16 * l;
  assert_int_equal(grun_go(&r, "gfx942", "<4 x i32>", "global_store_dwordx4 $2, $5, $4 offset:1024", vin), CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++)
    for (uint32_t k = 0; k < 4; k++) assert_int_equal(get32(r.src + 1024 + 16 * l + 4 * k), 0xC0000000u + 16 * l + k);
  for (uint32_t w = 0; w < 256; w++) assert_int_equal(get32(r.src + 4 * w), srcw(w)); /* below untouched */
  for (uint32_t l = 0; l < 64; l++) vin[l] = 3 * l;
  assert_int_equal(grun_go(&r, "gfx950", "i32", "global_store_byte $3, $5, off offset:7", vin), CONVJIT_OK);
  for (uint32_t j = 0; j < 256; j++) {
    int lane = (j >= 7 && (j - 7) % 3 == 0 && (j - 7) / 3 < 64) ? (int)((j - 7) / 3) : -1;
    assert_int_equal(r.src[j], lane >= 0 ? (uint8_t)(0xC0000000u + 16 * (uint32_t)lane) : srcb(j));
  }
  for (uint32_t l = 0; l < 64; l++) vin[l] = 4 * l;
  assert_int_equal(grun_go(&r, "gfx942", "i32", "flat_store_dword $3, $5 offset:4", vin), CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) assert_int_equal(get32(r.src + 4 * l + 4), 0xC0000000u + 16 * l);
  assert_int_equal(get32(r.src), srcw(0));
}

static void outside_every_allocation(void **state) {
  (void)state;
  grun r;
  uint32_t vin[64];
  for (uint32_t l = 0; l < 64; l++) vin[l] = l == 17 ? 4096 + 4 * EMU_MEM_PAGE : 4 * l;
  convjit_status st = grun_go(&r, "gfx942", "i32", "global_load_dword $0, $2, $4", vin);
  assert_int_equal(st, CONVJIT_ERR_EMULATION);
  const char *e = cj_error_text();
  char want[40];
  snprintf(want, sizeof want, "0x%llx", (unsigned long long)(r.srca + 4096 + 4 * EMU_MEM_PAGE));
  assert_non_null(strstr(e, want));
  assert_non_null(strstr(e, "kernel k"));
  assert_non_null(strstr(e, "global_load_dword"));
  assert_non_null(strstr(e, "lane 17"));
  assert_non_null(strstr(e, "offset 0x"));
}

/* ---- scalar loads -------------------------------------------------------------- */

static const char *sfmt =
    "target triple = \"amdgcn-amd-amdhsa\"\n"
    "define amdgpu_kernel void @k(ptr addrspace(1) %%src, ptr addrspace(1) %%dst) {\n"
    "  %%pi = ptrtoint ptr addrspace(1) %%src to i64\n"
    "  %%lo = trunc i64 %%pi to i32\n"
    "  %%h64 = lshr i64 %%pi, 32\n"
    "  %%hi = trunc i64 %%h64 to i32\n"
    "  %%r0 = insertelement <4 x i32> poison, i32 %%lo, i32 0\n"
    "  %%r1 = insertelement <4 x i32> %%r0, i32 %%hi, i32 1\n"
    "  %%r2 = insertelement <4 x i32> %%r1, i32 32, i32 2\n"
    "  %%r3 = insertelement <4 x i32> %%r2, i32 159744, i32 3\n"
    "  %%x = call %s asm sideeffect \"%s\\0As_waitcnt lgkmcnt(0)\", \"=&s,s,s,~{memory}\"(i64 %%pi, <4 x i32> %%r3)\n"
    "%s"
    "  ret void\n"
    "}\n";

static void scalar_loads(void **state) {
  (void)state;
  struct { const char *T, *body; int n, first; int buf; } c[] = {
      {"i32", "s_load_dword $0, $1, 0x8", 1, 2, 0},
      {"<2 x i32>", "s_load_dwordx2 $0, $1, 0x10", 2, 4, 0},
      {"<4 x i32>", "s_load_dwordx4 $0, $1, 0x20", 4, 8, 0},
      {"<8 x i32>", "s_load_dwordx8 $0, $1, 0x40", 8, 16, 0},
      {"<16 x i32>", "s_load_dwordx16 $0, $1, 0x0", 16, 0, 0},
      {"<4 x i32>", "s_buffer_load_dwordx4 $0, $2, 0x18", 4, 6, 1}, /* NUM_RECORDS 32: dwords 8, 9 read 0 */
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    /* one volatile dword store per element: the SGPR -> VGPR copies stay
     * 32-bit (a merged store would copy register pairs) */
    char stores[4096];
    int k = 0;
    for (int e = 0; e < c[i].n; e++) {
      if (c[i].n == 1) k += snprintf(stores + k, sizeof stores - (size_t)k, "  %%e%d = add i32 %%x, 0\n", e);
      else k += snprintf(stores + k, sizeof stores - (size_t)k, "  %%e%d = extractelement %s %%x, i32 %d\n", e, c[i].T, e);
      k += snprintf(stores + k, sizeof stores - (size_t)k,
                    "  %%a%d = getelementptr i32, ptr addrspace(1) %%dst, i32 %d\n"
                    "  store volatile i32 %%e%d, ptr addrspace(1) %%a%d\n", e, e, e, e);
    }
    char ir[8192];
    snprintf(ir, sizeof ir, sfmt, c[i].T, c[i].body, stores);
    tmem t;
    convjit_status st = tmem_open(&t, i % 2 ? "gfx950" : "gfx942", ir);
    if (st != CONVJIT_OK) fprintf(stderr, "%s\n%s\n", cj_error_text(), ir);
    assert_int_equal(st, CONVJIT_OK);
    uint32_t src[64], got[16];
    for (uint32_t k = 0; k < 64; k++) src[k] = srcw(k);
    uint64_t args[2] = {tmem_buf(&t, src, sizeof src), tmem_buf(&t, NULL, 64)};
    st = tmem_run(&t, 1, 64, args, sizeof args);
    if (st != CONVJIT_OK) fprintf(stderr, "%s\n", cj_error_text());
    assert_int_equal(st, CONVJIT_OK);
    assert_int_equal(emu_mem_d2h(t.mem, got, args[1], 4u * (uint32_t)c[i].n), CONVJIT_OK);
    for (int k = 0; k < c[i].n; k++) {
      uint32_t w = (uint32_t)(c[i].first + k);
      assert_int_equal(got[k], c[i].buf && 4 * w + 4 > 32 ? 0u : srcw(w));
    }
    tmem_close(&t);
  }
}

/* ---- procedural input, write-sink output ----------------------------------------- */

#define BIG (8ull << 30)
#define STEP (128ull << 20) /* lane l touches offset l*STEP: up to 7.9 GiB */

static void fill_fn(void *user, uint64_t off, void *dst, size_t n) {
  (void)user;
  uint8_t *d = dst;
  for (size_t i = 0; i < n; i++) d[i] = (uint8_t)((off + i) * 2654435761u >> 13);
}

static const char *copy_ir =
    "target triple = \"amdgcn-amd-amdhsa\"\n"
    "declare i32 @llvm.amdgcn.workitem.id.x()\n"
    "define amdgpu_kernel void @k(ptr addrspace(1) %in, ptr addrspace(1) %out) {\n"
    "  %tid = call i32 @llvm.amdgcn.workitem.id.x()\n"
    "  %t = zext i32 %tid to i64\n"
    "  %o = mul i64 %t, 134217728\n"
    "  %o2 = add i64 %o, 12\n"
    "  %p = getelementptr i8, ptr addrspace(1) %in, i64 %o2\n"
    "  %v = load <4 x i32>, ptr addrspace(1) %p, align 4\n"
    "  %q = getelementptr i8, ptr addrspace(1) %out, i64 %o2\n"
    "  store <4 x i32> %v, ptr addrspace(1) %q, align 4\n"
    "  ret void\n"
    "}\n";

static void procedural_to_sink(void **state) {
  (void)state;
  tmem t;
  assert_int_equal(tmem_open(&t, "gfx950", copy_ir), CONVJIT_OK);
  uint64_t in, out;
  assert_int_equal(emu_mem_alloc_procedural(t.mem, BIG, fill_fn, NULL, &in), CONVJIT_OK);
  uint64_t woff[2] = {5 * STEP, 60 * STEP + 8}, wlen[2] = {64, 64};
  assert_int_equal(emu_mem_alloc_sink(t.mem, BIG, woff, wlen, 2, &out), CONVJIT_OK);
  uint64_t held;
  emu_mem_usage(t.mem, NULL, &held);
  assert_true(held < (1u << 20)); /* 16 GiB of tensors, under a MiB on the host (kernel code, kernargs) */
  uint64_t args[2] = {in, out};
  assert_int_equal(tmem_run(&t, 1, 64, args, sizeof args), CONVJIT_OK);
  /* window 1: bytes 12..27 of lane 5's slot hold the fill, the rest 0 */
  uint8_t got[64];
  assert_int_equal(emu_mem_d2h(t.mem, got, out + 5 * STEP, 64), CONVJIT_OK);
  for (uint32_t i = 0; i < 64; i++) {
    uint8_t want = 0;
    if (i >= 12 && i < 28) fill_fn(NULL, 5 * STEP + i, &want, 1);
    assert_int_equal(got[i], want);
  }
  /* window 2 starts 8 bytes into lane 60's slot: bytes 12..27 -> window 4..19 */
  assert_int_equal(emu_mem_d2h(t.mem, got, out + 60 * STEP + 8, 64), CONVJIT_OK);
  for (uint32_t i = 0; i < 64; i++) {
    uint8_t want = 0;
    if (i >= 4 && i < 20) fill_fn(NULL, 60 * STEP + 8 + i, &want, 1);
    assert_int_equal(got[i], want);
  }
  /* reading the sink outside its windows from a kernel is an error */
  uint64_t args2[2] = {out, in};
  convjit_status st = tmem_run(&t, 1, 64, args2, sizeof args2);
  assert_int_equal(st, CONVJIT_ERR_EMULATION);
  assert_non_null(strstr(cj_error_text(), "window"));
  tmem_close(&t);
}

/* ---- global f32 atomics --------------------------------------------------------- */

static const char *gatomic_ir =
    "target triple = \"amdgcn-amd-amdhsa\"\n"
    "declare i32 @llvm.amdgcn.workitem.id.x()\n"
    "define amdgpu_kernel void @k(ptr addrspace(1) %acc, ptr addrspace(1) %ret) {\n"
    "  %tid = call i32 @llvm.amdgcn.workitem.id.x()\n"
    "  %o = and i32 %tid, 1\n"
    "  %p = getelementptr float, ptr addrspace(1) %acc, i32 %o\n"
    "  %t1 = add i32 %tid, 1\n"
    "  %v = uitofp i32 %t1 to float\n"
    "  %old = atomicrmw fadd ptr addrspace(1) %p, float %v syncscope(\"agent\") monotonic, !amdgpu.no.fine.grained.memory !0\n"
    "  %q = getelementptr float, ptr addrspace(1) %ret, i32 %tid\n"
    "  store float %old, ptr addrspace(1) %q\n"
    "  %p2 = getelementptr float, ptr addrspace(1) %acc, i32 4\n"
    "  %ign = atomicrmw fadd ptr addrspace(1) %p2, float %v syncscope(\"agent\") monotonic, !amdgpu.no.fine.grained.memory !0\n"
    "  ret void\n"
    "}\n"
    "!0 = !{}\n";

static void global_atomics(void **state) {
  (void)state;
  for (int ai = 0; ai < 2; ai++) {
    tmem t;
    assert_int_equal(tmem_open(&t, ai ? "gfx950" : "gfx942", gatomic_ir), CONVJIT_OK);
    float init[8] = {0.5f, 0.25f, 0, 0, 100.0f, 0, 0, 0};
    uint64_t args[2] = {tmem_buf(&t, init, sizeof init), tmem_buf(&t, NULL, 256)};
    convjit_status st = tmem_run(&t, 1, 64, args, sizeof args);
    if (st != CONVJIT_OK) fprintf(stderr, "%s\n", cj_error_text());
    assert_int_equal(st, CONVJIT_OK);
    float acc[8], ret[64];
    assert_int_equal(emu_mem_d2h(t.mem, acc, args[0], sizeof acc), CONVJIT_OK);
    assert_int_equal(emu_mem_d2h(t.mem, ret, args[1], sizeof ret), CONVJIT_OK);
    /* lane l (parity p) sees init[p] + the values of the earlier lanes of its parity
     * (all sums are small integers plus 0.5 / 0.25: exact in f32) */
    float run[2] = {0.5f, 0.25f};
    for (int l = 0; l < 64; l++) {
      assert_true(ret[l] == run[l & 1]);
      run[l & 1] += (float)(l + 1);
    }
    assert_true(acc[0] == run[0] && acc[1] == run[1]);
    assert_true(acc[4] == 100.0f + 2080.0f); /* 1 + 2 + ... + 64 */
    tmem_close(&t);
  }
}

/* A load straight into an AGPR (gfx90a+): the value lands in the AGPR, and
 * reading it (v_accvgpr_read) before the wait is a hazard naming a<n>. */
static const char *agpr_fmt =
    "target triple = \"amdgcn-amd-amdhsa\"\n"
    "declare i32 @llvm.amdgcn.workitem.id.x()\n"
    "define amdgpu_kernel void @k(ptr addrspace(1) %%src, ptr addrspace(1) %%dst) {\n"
    "  %%tid = call i32 @llvm.amdgcn.workitem.id.x()\n"
    "  %%off = shl i32 %%tid, 2\n"
    "  %%pi = ptrtoint ptr addrspace(1) %%src to i64\n"
    "  %%xs = call { i32, i32 } asm sideeffect \"global_load_dword $1, $2, $3 offset:4\\0A%s\\0Av_accvgpr_read_b32 $0, $1\", \"=v,=&a,v,s,~{memory}\"(i32 %%off, i64 %%pi)\n"
    "  %%x = extractvalue { i32, i32 } %%xs, 0\n"
    "  %%dp = getelementptr i32, ptr addrspace(1) %%dst, i32 %%tid\n"
    "  store i32 %%x, ptr addrspace(1) %%dp\n"
    "  ret void\n"
    "}\n";

static void agpr_destination(void **state) {
  (void)state;
  for (int wait = 1; wait >= 0; wait--) {
    char ir[2048];
    snprintf(ir, sizeof ir, agpr_fmt, wait ? "s_waitcnt vmcnt(0)" : "s_nop 0");
    tmem t;
    convjit_status st = tmem_open(&t, wait ? "gfx942" : "gfx950", ir);
    if (st != CONVJIT_OK) fprintf(stderr, "%s\n%s\n", cj_error_text(), ir);
    assert_int_equal(st, CONVJIT_OK);
    uint32_t src[80];
    for (uint32_t i = 0; i < 80; i++) src[i] = srcw(i);
    uint64_t args[2] = {tmem_buf(&t, src, sizeof src), tmem_buf(&t, NULL, 256)};
    st = tmem_run(&t, 1, 64, args, sizeof args);
    if (wait) {
      if (st != CONVJIT_OK) fprintf(stderr, "%s\n", cj_error_text());
      assert_int_equal(st, CONVJIT_OK);
      uint32_t got[64];
      assert_int_equal(emu_mem_d2h(t.mem, got, args[1], sizeof got), CONVJIT_OK);
      for (uint32_t l = 0; l < 64; l++) assert_int_equal(got[l], srcw(l + 1));
    } else {
      assert_int_equal(st, CONVJIT_ERR_EMULATION);
      assert_non_null(strstr(cj_error_text(), "reads a"));
      assert_non_null(strstr(cj_error_text(), "v_accvgpr_read_b32"));
    }
    tmem_close(&t);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(global_loads),       cmocka_unit_test(global_stores),   cmocka_unit_test(outside_every_allocation),
      cmocka_unit_test(scalar_loads),       cmocka_unit_test(procedural_to_sink), cmocka_unit_test(global_atomics),
      cmocka_unit_test(agpr_destination),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
