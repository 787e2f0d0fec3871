/* MUBUF on the emulator (exec_buffer.c), through real code objects built
 * from IR with inline asm (exact instructions), gfx942 and gfx950:
 *   - per-element range check of dwordx4 partially in range, with soffset
 *     and inst offset (docs/isa-notes.md §3: element e passes iff
 *     off + soffset + 4(e+1) <= NUM_RECORDS);
 *   - 32-bit wrap of voffset + inst_offset;
 *   - idxen with stride (all-or-nothing on index < NUM_RECORDS), idxen+offen,
 *     idxen with stride 0 (per element);
 *   - EXEC-masked lanes keep their register / store nothing;
 *   - sub-dword loads (ubyte/sbyte/ushort/sshort, d16_hi) and stores, with
 *     per-byte range checks;
 *   - stores clipped per element;
 *   - buffer_load ... lds: LDS address = M0 + inst_offset + lane*size, OOB
 *     lanes write zeros, masked lanes nothing (dword both archs, dwordx3/x4 gfx950);
 *   - buffer_atomic_add_f32 without return: workgroup-ordered, identical for
 *     1 and 2 host threads; with return: the old values;
 *   - an in-range access past the allocation is an error naming the address.
 * Expected values come from the docs/isa-notes.md rules written out here per lane
 * (plus hand-checked lanes), never from the emulator's code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "support_mem.h"

#define SENT 0xAAAAAAAAu /* register contents before the load */

typedef struct kargs {
  uint64_t src, dst, vin, dat;
  uint32_t nrec, soff;
  uint64_t mask;
  uint32_t stride, pad;
} kargs;

/* A kernel running one asm body per lane with operands:
 *   $0 out (type T, pre-set to SENT by a tied input), $1 scratch SGPR pair,
 *   $2 v = vin[tid].x, $3 v[2] = vin[tid], $4 the V# s[4], $5 soffset,
 *   $6 exec mask, $7 data (type T, = dat[tid]; for stores)
 * EXEC is set to the mask around the body. out is stored to dst + 32*tid. */
static char *kernel(const char *T, const char *body) {
  static const char *fmt =
      "target triple = \"amdgcn-amd-amdhsa\"\n"
      "declare i32 @llvm.amdgcn.workitem.id.x()\n"
      "define amdgpu_kernel void @k(ptr addrspace(1) %%src, ptr addrspace(1) %%dst, ptr addrspace(1) %%vin,\n"
      "    ptr addrspace(1) %%dat, i32 %%nrec, i32 %%soff, i64 %%mask, i32 %%stride) {\n"
      "  %%tid = call i32 @llvm.amdgcn.workitem.id.x()\n"
      "  %%vp = getelementptr <2 x i32>, ptr addrspace(1) %%vin, i32 %%tid\n"
      "  %%vv = load <2 x i32>, ptr addrspace(1) %%vp, align 8\n"
      "  %%vx = extractelement <2 x i32> %%vv, i32 0\n"
      "  %%dp = getelementptr [32 x i8], ptr addrspace(1) %%dat, i32 %%tid\n"
      "  %%dd = load %s, ptr addrspace(1) %%dp, align 16\n"
      "  %%pi = ptrtoint ptr addrspace(1) %%src to i64\n"
      "  %%lo = trunc i64 %%pi to i32\n"
      "  %%h64 = lshr i64 %%pi, 32\n"
      "  %%hi = trunc i64 %%h64 to i32\n"
      "  %%st = shl i32 %%stride, 16\n"
      "  %%w1 = or i32 %%hi, %%st\n"
      "  %%r0 = insertelement <4 x i32> poison, i32 %%lo, i32 0\n"
      "  %%r1 = insertelement <4 x i32> %%r0, i32 %%w1, i32 1\n"
      "  %%r2 = insertelement <4 x i32> %%r1, i32 %%nrec, i32 2\n"
      "  %%r3 = insertelement <4 x i32> %%r2, i32 159744, i32 3\n"
      "  %%res = call { %s, i64 } asm sideeffect \"s_mov_b64 $1, exec\\0As_mov_b64 exec, $6\\0A%s\\0As_waitcnt vmcnt(0)\\0As_mov_b64 exec, $1\",\n"
      "      \"=v,=&s,v,v,s,s,s,v,0,~{memory}\"(i32 %%vx, <2 x i32> %%vv, <4 x i32> %%r3, i32 %%soff, i64 %%mask, %s %%dd, %s %s)\n"
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

static uint32_t src_word(uint32_t i) { return 0x51000000u + i * 0x10101u; }
static uint8_t src_byte(uint32_t j) { return (uint8_t)(src_word(j / 4) >> (8 * (j % 4))); }

typedef struct run {
  tmem t;
  uint64_t src, dst, vin, dat;
  uint32_t out[64][8];
  uint8_t srcbytes[4096];
} run;

/* Builds and runs kernel(T, body); vin = per-lane (x, y); src = src_word pattern
 * (4096 bytes); dat lanes = (0xD0000000 + 16*lane + k). */
static convjit_status go(run *r, const char *arch, const char *T, const char *body, const uint32_t vin[64][2],
                         uint32_t nrec, uint32_t soff, uint64_t mask, uint32_t stride) {
  char *ir = kernel(T, body);
  convjit_status st = tmem_open(&r->t, arch, ir);
  if (st != CONVJIT_OK) {
    fprintf(stderr, "build/open failed: %s\n%s\n", cj_error_text(), ir);
    free(ir);
    return st;
  }
  free(ir);
  uint32_t src[1024];
  for (uint32_t i = 0; i < 1024; i++) src[i] = src_word(i);
  uint32_t dat[64][8];
  for (uint32_t l = 0; l < 64; l++)
    for (uint32_t k = 0; k < 8; k++) dat[l][k] = 0xD0000000u + 16 * l + k;
  r->src = tmem_buf(&r->t, src, sizeof src);
  r->dst = tmem_buf(&r->t, NULL, sizeof r->out);
  r->vin = tmem_buf(&r->t, vin, 64 * 8);
  r->dat = tmem_buf(&r->t, dat, sizeof dat);
  kargs a = {r->src, r->dst, r->vin, r->dat, nrec, soff, mask, stride, 0};
  st = tmem_run(&r->t, 1, 64, &a, sizeof a);
  if (st == CONVJIT_OK) {
    assert_int_equal(emu_mem_d2h(r->t.mem, r->out, r->dst, sizeof r->out), CONVJIT_OK);
    assert_int_equal(emu_mem_d2h(r->t.mem, r->srcbytes, r->src, sizeof r->srcbytes), CONVJIT_OK);
  }
  return st;
}

static const char *ARCHS[] = {"gfx942", "gfx950"};

/* dwordx4 (and dwordx3), offen, offset:16, lanes at voffset 4*l - 16 (so off = 4*l). */
static void dwordx4_per_element(void **state) {
  (void)state;
  for (int ai = 0; ai < 2; ai++)
    for (uint32_t soff = 0; soff <= 8; soff += 8) {
      run r;
      uint32_t vin[64][2];
      for (uint32_t l = 0; l < 64; l++) vin[l][0] = 4 * l - 16, vin[l][1] = 0;
      const uint32_t nrec = 40;
      const int x3 = soff == 8 && ai == 1; /* one dwordx3 run */
      assert_int_equal(go(&r, ARCHS[ai], x3 ? "<3 x i32>" : "<4 x i32>",
                          x3 ? "buffer_load_dwordx3 $0, $2, $4, $5 offen offset:16"
                             : "buffer_load_dwordx4 $0, $2, $4, $5 offen offset:16",
                          vin, nrec, soff, ~0ull, 0),
                       CONVJIT_OK);
      for (uint32_t l = 0; l < 64; l++)
        for (uint32_t e = 0; e < (x3 ? 3u : 4u); e++) {
          uint64_t off = 4 * l; /* (u32)(4l - 16 + 16) */
          uint32_t want = off + soff + 4 * (e + 1) <= nrec ? src_word((uint32_t)(off + soff) / 4 + e) : 0;
          assert_int_equal(r.out[l][e], want);
        }
      if (soff == 0) { /* hand-checked lanes: 7 -> [w7 w8 w9 0], 9 -> [w9 0 0 0], 10 -> 0 */
        assert_int_equal(r.out[7][2], src_word(9));
        assert_int_equal(r.out[7][3], 0);
        assert_int_equal(r.out[9][0], src_word(9));
        assert_int_equal(r.out[9][1], 0);
        assert_int_equal(r.out[10][0], 0);
      }
      tmem_close(&r.t);
    }
}

/* voffset 0xFFFFFFF0 + 4l with offset:16 wraps to 4l (a 64-bit sum would be
 * past NUM_RECORDS and read 0). */
static void offset_wrap_32bit(void **state) {
  (void)state;
  run r;
  uint32_t vin[64][2];
  for (uint32_t l = 0; l < 64; l++) vin[l][0] = 0xFFFFFFF0u + 4 * l, vin[l][1] = 0;
  assert_int_equal(go(&r, "gfx942", "i32", "buffer_load_dword $0, $2, $4, $5 offen offset:16", vin, 4096, 0, ~0ull, 0),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) assert_int_equal(r.out[l][0], src_word(l));
  tmem_close(&r.t);
  /* without the wrap partner: voffset 0xFFFFFFF0 + 4l, offset 0 -> out of range for l < 4, wraps for l >= 4 */
  assert_int_equal(go(&r, "gfx950", "i32", "buffer_load_dword $0, $2, $4, $5 offen", vin, 4096, 0, ~0ull, 0),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) assert_int_equal(r.out[l][0], l < 4 ? 0 : src_word(l - 4));
  tmem_close(&r.t);
}

static void idxen_offen(void **state) {
  (void)state;
  run r;
  uint32_t vin[64][2];
  /* idxen+offen, stride 16, 5 records: index l%8, offset 4*((l/8)%4) */
  for (uint32_t l = 0; l < 64; l++) vin[l][0] = l % 8, vin[l][1] = 4 * ((l / 8) % 4);
  assert_int_equal(go(&r, "gfx942", "i32", "buffer_load_dword $0, $3, $4, $5 idxen offen", vin, 5, 0, ~0ull, 16),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) {
    uint32_t idx = l % 8, off = 4 * ((l / 8) % 4);
    assert_int_equal(r.out[l][0], idx < 5 ? src_word((idx * 16 + off) / 4) : 0);
  }
  assert_int_equal(r.out[9][0], src_word(5)); /* index 1, offset 4 */
  assert_int_equal(r.out[13][0], 0);          /* index 5 = NUM_RECORDS */
  tmem_close(&r.t);
  /* idxen only, stride 16, offset:8, soffset 4: index l; in range iff l < 5 (offsets not checked) */
  for (uint32_t l = 0; l < 64; l++) vin[l][0] = l, vin[l][1] = 0;
  assert_int_equal(go(&r, "gfx950", "<2 x i32>", "buffer_load_dwordx2 $0, $2, $4, $5 idxen offset:8", vin, 5, 4, ~0ull, 16),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) {
    assert_int_equal(r.out[l][0], l < 5 ? src_word((16 * l + 12) / 4) : 0);
    assert_int_equal(r.out[l][1], l < 5 ? src_word((16 * l + 12) / 4 + 1) : 0);
  }
  tmem_close(&r.t);
  /* idxen with stride 0: the per-element rule on off = offset:4 (8 <= nrec) */
  assert_int_equal(go(&r, "gfx942", "i32", "buffer_load_dword $0, $2, $4, $5 idxen offset:4", vin, 8, 0, ~0ull, 0),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) assert_int_equal(r.out[l][0], src_word(1));
  tmem_close(&r.t);
  assert_int_equal(go(&r, "gfx942", "i32", "buffer_load_dword $0, $2, $4, $5 idxen offset:4", vin, 7, 0, ~0ull, 0),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) assert_int_equal(r.out[l][0], 0);
  tmem_close(&r.t);
}

static void exec_masked_lanes(void **state) {
  (void)state;
  run r;
  uint32_t vin[64][2];
  for (uint32_t l = 0; l < 64; l++) vin[l][0] = 8 * l, vin[l][1] = 0;
  const uint64_t mask = 0x00000000FFFF0F0Full;
  assert_int_equal(go(&r, "gfx942", "<2 x i32>", "buffer_load_dwordx2 $0, $2, $4, $5 offen", vin, 4096, 0, mask, 0),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) {
    int on = (mask >> l) & 1;
    assert_int_equal(r.out[l][0], on ? src_word(2 * l) : SENT);
    assert_int_equal(r.out[l][1], on ? src_word(2 * l + 1) : SENT);
  }
  tmem_close(&r.t);
  /* stores from masked lanes write nothing */
  for (uint32_t l = 0; l < 64; l++) vin[l][0] = 4 * l;
  assert_int_equal(go(&r, "gfx950", "i32", "buffer_store_dword $7, $2, $4, $5 offen", vin, 4096, 0, mask, 0),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) {
    uint32_t v;
    memcpy(&v, r.srcbytes + 4 * l, 4);
    assert_int_equal(v, (mask >> l) & 1 ? 0xD0000000u + 16 * l : src_word(l));
  }
  tmem_close(&r.t);
}

static void subdword_loads(void **state) {
  (void)state;
  run r;
  uint32_t vin[64][2];
  for (uint32_t l = 0; l < 64; l++) vin[l][0] = l, vin[l][1] = 0;
  const uint32_t nrec = 37;
  struct { const char *body; int bytes, sext, d16hi; } cs[] = {
      {"buffer_load_ubyte $0, $2, $4, $5 offen", 1, 0, 0},
      {"buffer_load_sbyte $0, $2, $4, $5 offen", 1, 1, 0},
      {"buffer_load_ushort $0, $2, $4, $5 offen", 2, 0, 0},
      {"buffer_load_sshort $0, $2, $4, $5 offen", 2, 1, 0},
      {"buffer_load_short_d16_hi $0, $2, $4, $5 offen", 2, 0, 1},
  };
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
    assert_int_equal(go(&r, c % 2 ? "gfx950" : "gfx942", "i32", cs[c].body, vin, nrec, 0, ~0ull, 0), CONVJIT_OK);
    for (uint32_t l = 0; l < 64; l++) {
      uint32_t v = 0;
      if (l + cs[c].bytes <= nrec) v = cs[c].bytes == 1 ? src_byte(l) : (uint32_t)src_byte(l) | src_byte(l + 1) << 8;
      if (cs[c].sext) v = cs[c].bytes == 1 ? (uint32_t)(int32_t)(int8_t)v : (uint32_t)(int32_t)(int16_t)v;
      if (cs[c].d16hi) v = (SENT & 0xffff) | v << 16;
      assert_int_equal(r.out[l][0], v);
    }
    tmem_close(&r.t);
  }
}

static void stores_clipped(void **state) {
  (void)state;
  run r;
  uint32_t vin[64][2];
  for (uint32_t l = 0; l < 64; l++) vin[l][0] = 16 * l, vin[l][1] = 0;
  const uint32_t nrec = 88; /* lane 5 (off 80): elements 0,1 in range */
  assert_int_equal(go(&r, "gfx942", "<4 x i32>", "buffer_store_dwordx4 $7, $2, $4, $5 offen", vin, nrec, 0, ~0ull, 0),
                   CONVJIT_OK);
  for (uint32_t w = 0; w < 64; w++) {
    uint32_t v, l = w / 4, e = w % 4;
    memcpy(&v, r.srcbytes + 4 * w, 4);
    assert_int_equal(v, 4 * w + 4 <= nrec ? 0xD0000000u + 16 * l + e : src_word(w));
  }
  tmem_close(&r.t);
  /* byte and short_d16_hi stores: byte j written iff j + size <= nrec */
  for (uint32_t l = 0; l < 64; l++) vin[l][0] = l * 2;
  assert_int_equal(go(&r, "gfx950", "i32", "buffer_store_short_d16_hi $7, $2, $4, $5 offen", vin, 41, 0, ~0ull, 0),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) {
    uint32_t d = 0xD0000000u + 16 * l;
    uint8_t w0 = r.srcbytes[2 * l], w1 = r.srcbytes[2 * l + 1];
    int in = 2 * l + 2 <= 41;
    assert_int_equal(w0, in ? (uint8_t)(d >> 16) : src_byte(2 * l));
    assert_int_equal(w1, in ? (uint8_t)(d >> 24) : src_byte(2 * l + 1));
  }
  tmem_close(&r.t);
  for (uint32_t l = 0; l < 64; l++) vin[l][0] = l;
  assert_int_equal(go(&r, "gfx942", "i32", "buffer_store_byte $7, $2, $4, $5 offen offset:1", vin, 30, 0, ~0ull, 0),
                   CONVJIT_OK);
  for (uint32_t j = 0; j < 80; j++) {
    int in = j >= 1 && j + 1 <= 30;
    assert_int_equal(r.srcbytes[j], in ? (uint8_t)(0xD0000000u + 16 * (j - 1)) : src_byte(j));
  }
  tmem_close(&r.t);
}

/* In range for the descriptor but past the allocation: an error naming the address. */
static void past_allocation_is_error(void **state) {
  (void)state;
  run r;
  uint32_t vin[64][2];
  for (uint32_t l = 0; l < 64; l++) vin[l][0] = l == 33 ? 4096 : 4 * l, vin[l][1] = 0;
  convjit_status st = go(&r, "gfx942", "i32", "buffer_load_dword $0, $2, $4, $5 offen", vin, 1u << 20, 0, ~0ull, 0);
  assert_int_equal(st, CONVJIT_ERR_EMULATION);
  const char *e = cj_error_text();
  char want[32];
  snprintf(want, sizeof want, "0x%llx", (unsigned long long)(r.src + 4096));
  assert_non_null(strstr(e, want));
  assert_non_null(strstr(e, "lane 33"));
  assert_non_null(strstr(e, "buffer_load_dword"));
  tmem_close(&r.t);
}

/* ---- buffer_load ... lds --------------------------------------------------- */

/* LDS prefilled with 0xFF bytes; M0 = @lds + 0x100; the DMA; then each lane
 * copies 32 LDS bytes at 32*tid to dst. */
static char *dma_kernel(const char *body) {
  static const char *fmt =
      "target triple = \"amdgcn-amd-amdhsa\"\n"
      "@lds = internal addrspace(3) global [2048 x i8] poison, align 16\n"
      "declare i32 @llvm.amdgcn.workitem.id.x()\n"
      "declare void @llvm.amdgcn.s.barrier()\n"
      "define amdgpu_kernel void @k(ptr addrspace(1) %%src, ptr addrspace(1) %%dst, ptr addrspace(1) %%vin,\n"
      "    ptr addrspace(1) %%dat, i32 %%nrec, i32 %%soff, i64 %%mask, i32 %%stride) {\n"
      "  %%tid = call i32 @llvm.amdgcn.workitem.id.x()\n"
      "  %%lp = getelementptr [32 x i8], ptr addrspace(3) @lds, i32 %%tid\n"
      /* 0xFFFFFFFF from tid * soff (soff = 0): a per-lane value, so no 64-bit constant moves */
      "  %%fm = mul i32 %%tid, %%soff\n"
      "  %%ff = xor i32 %%fm, -1\n"
      "  %%f0 = insertelement <8 x i32> poison, i32 %%ff, i32 0\n"
      "  %%f8 = shufflevector <8 x i32> %%f0, <8 x i32> poison, <8 x i32> zeroinitializer\n"
      "  store <8 x i32> %%f8, ptr addrspace(3) %%lp, align 16\n"
      "  fence syncscope(\"workgroup\") release\n"
      "  call void @llvm.amdgcn.s.barrier()\n"
      "  fence syncscope(\"workgroup\") acquire\n"
      "  %%vp = getelementptr <2 x i32>, ptr addrspace(1) %%vin, i32 %%tid\n"
      "  %%vv = load <2 x i32>, ptr addrspace(1) %%vp, align 8\n"
      "  %%vx = extractelement <2 x i32> %%vv, i32 0\n"
      "  %%pi = ptrtoint ptr addrspace(1) %%src to i64\n"
      "  %%lo = trunc i64 %%pi to i32\n"
      "  %%h64 = lshr i64 %%pi, 32\n"
      "  %%hi = trunc i64 %%h64 to i32\n"
      "  %%r0 = insertelement <4 x i32> poison, i32 %%lo, i32 0\n"
      "  %%r1 = insertelement <4 x i32> %%r0, i32 %%hi, i32 1\n"
      "  %%r2 = insertelement <4 x i32> %%r1, i32 %%nrec, i32 2\n"
      "  %%r3 = insertelement <4 x i32> %%r2, i32 159744, i32 3\n"
      "  %%m0 = add i32 ptrtoint (ptr addrspace(3) @lds to i32), 256\n"
      "  %%x = call i64 asm sideeffect \"s_mov_b64 $0, exec\\0As_mov_b64 exec, $4\\0As_mov_b32 m0, $5\\0A%s\\0As_waitcnt vmcnt(0)\\0As_mov_b64 exec, $0\",\n"
      "      \"=&s,v,s,s,s,s,~{memory}\"(i32 %%vx, <4 x i32> %%r3, i32 %%soff, i64 %%mask, i32 %%m0)\n"
      "  fence syncscope(\"workgroup\") release\n"
      "  call void @llvm.amdgcn.s.barrier()\n"
      "  fence syncscope(\"workgroup\") acquire\n"
      "  %%v = load <8 x i32>, ptr addrspace(3) %%lp, align 16\n"
      "  %%op = getelementptr [32 x i8], ptr addrspace(1) %%dst, i32 %%tid\n"
      "  store <8 x i32> %%v, ptr addrspace(1) %%op, align 16\n"
      "  ret void\n"
      "}\n";
  char *b = malloc(8192);
  snprintf(b, 8192, fmt, body);
  return b;
}

static void lds_dma(const char *arch, const char *body, uint32_t size, uint32_t inst_off) {
  run r;
  char *ir = dma_kernel(body);
  convjit_status st = tmem_open(&r.t, arch, ir);
  if (st != CONVJIT_OK) fprintf(stderr, "%s\n%s\n", cj_error_text(), ir);
  assert_int_equal(st, CONVJIT_OK);
  free(ir);
  uint32_t src[1024];
  for (uint32_t i = 0; i < 1024; i++) src[i] = src_word(i);
  uint32_t vin[64][2];
  for (uint32_t l = 0; l < 64; l++) vin[l][0] = size * l, vin[l][1] = 0;
  const uint32_t nrec = size * 40 + 8;         /* lane 40: partly in range (first 8 bytes - inst_off) */
  const uint64_t mask = ~(1ull << 3 | 1ull << 50); /* lanes 3 and 50 masked */
  r.src = tmem_buf(&r.t, src, sizeof src);
  r.dst = tmem_buf(&r.t, NULL, 2048);
  r.vin = tmem_buf(&r.t, vin, sizeof vin);
  kargs a = {r.src, r.dst, r.vin, r.src, nrec, 0, mask, 0, 0};
  st = tmem_run(&r.t, 1, 64, &a, sizeof a);
  if (st != CONVJIT_OK) fprintf(stderr, "%s\n", cj_error_text());
  assert_int_equal(st, CONVJIT_OK);
  uint8_t lds[2048];
  assert_int_equal(emu_mem_d2h(r.t.mem, lds, r.dst, 2048), CONVJIT_OK);
  /* expected LDS: 0xFF everywhere except lane l's slot at 256 + inst_off + size*l */
  uint8_t want[2048];
  memset(want, 0xff, sizeof want);
  for (uint32_t l = 0; l < 64; l++) {
    if (!((mask >> l) & 1)) continue;
    uint32_t la = 256 + inst_off + size * l;
    for (uint32_t e = 0; e < size / 4; e++) {
      uint32_t off = size * l + inst_off; /* memory side: voffset + inst offset */
      uint32_t v = off + 4 * (e + 1) <= nrec ? src_word(off / 4 + e) : 0;
      memcpy(want + la + 4 * e, &v, 4);
    }
  }
  for (uint32_t i = 0; i < 2048; i++)
    if (lds[i] != want[i]) {
      fprintf(stderr, "%s %s: LDS byte %u = 0x%02x, want 0x%02x\n", arch, body, i, lds[i], want[i]);
      fail();
    }
  tmem_close(&r.t);
}

static void lds_dma_dword(void **state) {
  (void)state;
  lds_dma("gfx942", "buffer_load_dword $1, $2, $3 offen offset:32 lds", 4, 32);
  lds_dma("gfx950", "buffer_load_dword $1, $2, $3 offen lds", 4, 0);
}

static void lds_dma_dwordx4_gfx950(void **state) { /* and dwordx3 */
  (void)state;
  lds_dma("gfx950", "buffer_load_dwordx4 $1, $2, $3 offen offset:16 lds", 16, 16);
  lds_dma("gfx950", "buffer_load_dwordx3 $1, $2, $3 offen offset:4 lds", 12, 4); /* lane stride 12 */
}

/* ---- f32 atomics ------------------------------------------------------------- */

static const char *atomic_ir =
    "target triple = \"amdgcn-amd-amdhsa\"\n"
    "declare i32 @llvm.amdgcn.workitem.id.x()\n"
    "declare i32 @llvm.amdgcn.workgroup.id.x()\n"
    "declare float @llvm.amdgcn.raw.ptr.buffer.atomic.fadd.f32(float, ptr addrspace(8), i32, i32, i32)\n"
    "declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)\n"
    "define amdgpu_kernel void @k(ptr addrspace(1) %acc, ptr addrspace(1) %val, ptr addrspace(1) %ret) {\n"
    "  %tid = call i32 @llvm.amdgcn.workitem.id.x()\n"
    "  %wg = call i32 @llvm.amdgcn.workgroup.id.x()\n"
    "  %w64 = shl i32 %wg, 6\n"
    "  %g = add i32 %w64, %tid\n"
    "  %vp = getelementptr float, ptr addrspace(1) %val, i32 %g\n"
    "  %v = load float, ptr addrspace(1) %vp\n"
    "  %r = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %acc, i16 0, i64 8, i32 159744)\n"
    "  %o = and i32 %tid, 1\n"
    "  %o4 = shl i32 %o, 2\n"
    "  %ign = call float @llvm.amdgcn.raw.ptr.buffer.atomic.fadd.f32(float %v, ptr addrspace(8) %r, i32 %o4, i32 0, i32 0)\n"
    "  %big = add i32 %o4, 8\n" /* out of range: dropped */
    "  %ign2 = call float @llvm.amdgcn.raw.ptr.buffer.atomic.fadd.f32(float %v, ptr addrspace(8) %r, i32 %big, i32 0, i32 0)\n"
    "  ret void\n"
    "}\n";

static void atomic_add_deterministic(void **state) {
  (void)state;
  enum { NWG = 6 };
  float val[NWG * 64];
  for (int i = 0; i < NWG * 64; i++) val[i] = (i % 3 == 0) ? 1.0e7f + (float)i : 0.3f * (float)(i % 17) - 1.1f;
  /* expected: workgroup order, then program (lane) order */
  float want[2] = {0.0f, 0.0f};
  for (int g = 0; g < NWG; g++)
    for (int l = 0; l < 64; l++) want[l & 1] += val[g * 64 + l];
  uint32_t bits[2][2];
  for (int th = 1; th <= 2; th++) {
    tmem t;
    assert_int_equal(tmem_open(&t, th == 1 ? "gfx942" : "gfx950", atomic_ir), CONVJIT_OK);
    emu_ctx_set_threads(t.ctx, th);
    uint64_t acc = tmem_buf(&t, NULL, 64), vd = tmem_buf(&t, val, sizeof val);
    uint64_t args[3] = {acc, vd, 0};
    assert_int_equal(tmem_run(&t, NWG, 64, args, sizeof args), CONVJIT_OK);
    float got[4];
    assert_int_equal(emu_mem_d2h(t.mem, got, acc, sizeof got), CONVJIT_OK);
    memcpy(bits[th - 1], got, 8);
    assert_true(got[0] == want[0]);
    assert_true(got[1] == want[1]);
    assert_true(got[2] == 0.0f && got[3] == 0.0f); /* out-of-range adds dropped */
    tmem_close(&t);
  }
  assert_memory_equal(bits[0], bits[1], sizeof bits[0]);
  /* a workgroup subset given out of order (4, 0, 2), 2 threads: applied in id order 0, 2, 4 */
  float want2[2] = {0.0f, 0.0f};
  for (int g = 0; g <= 4; g += 2)
    for (int l = 0; l < 64; l++) want2[l & 1] += val[g * 64 + l];
  tmem t;
  assert_int_equal(tmem_open(&t, "gfx942", atomic_ir), CONVJIT_OK);
  emu_ctx_set_threads(t.ctx, 2);
  uint64_t acc = tmem_buf(&t, NULL, 64), vd = tmem_buf(&t, val, sizeof val);
  uint64_t args[3] = {acc, vd, 0};
  const uint64_t list[3] = {4, 0, 2};
  emu_launch_opts lo;
  memset(&lo, 0, sizeof lo);
  lo.size = sizeof lo;
  lo.wg_list = list;
  lo.wg_list_len = 3;
  lo.hazard = -1;
  uint32_t grid[3] = {NWG, 1, 1}, block[3] = {64, 1, 1};
  assert_int_equal(emu_launch(t.k, grid, block, args, sizeof args, &lo, NULL), CONVJIT_OK);
  float got[2];
  assert_int_equal(emu_mem_d2h(t.mem, got, acc, sizeof got), CONVJIT_OK);
  assert_true(got[0] == want2[0] && got[1] == want2[1]);
  tmem_close(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dwordx4_per_element), cmocka_unit_test(offset_wrap_32bit),
      cmocka_unit_test(idxen_offen),         cmocka_unit_test(exec_masked_lanes),
      cmocka_unit_test(subdword_loads),      cmocka_unit_test(stores_clipped),
      cmocka_unit_test(past_allocation_is_error), cmocka_unit_test(lds_dma_dword),
      cmocka_unit_test(lds_dma_dwordx4_gfx950),   cmocka_unit_test(atomic_add_deterministic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
