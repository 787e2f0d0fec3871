/* DS instructions on the emulator (exec_lds.c), gfx942 and gfx950, with
 * inline-asm kernels:
 *   reads  - LDS is first filled with a known pattern (word i = i * 0x9E3779B1),
 *            then one asm read per lane; checked against the pattern:
 *            b32/b64/b96/b128 with offset:, u8/i8/u16/i16 extension, d16 and
 *            d16_hi halves (other half kept), ds_read2_b32 / b64 with
 *            offset0/offset1 (scaled by the size), ds_read2st64 (x64);
 *   writes - LDS zeroed, one asm write per lane, then the whole LDS copied
 *            out and compared with a byte image built here: b8/b16/b32/b64/
 *            b96/b128, b16_d16_hi, write2 and write2st64;
 *   EXEC-masked lanes write nothing; an address past the allocation is an
 *   error naming the LDS size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "support_mem.h"

#define LDS_BYTES 2048
#define SENT 0xAAAAAAAAu

static uint32_t patw(uint32_t i) { return i * 0x9E3779B1u; }
static uint8_t patb(uint32_t j) { return (uint8_t)(patw(j / 4) >> (8 * (j % 4))); }

typedef struct largs {
  uint64_t dst;
  uint32_t mul, add; /* lane address = mul * tid + add */
  uint64_t mask;     /* EXEC during the asm */
  uint32_t fmul, pad; /* LDS word i starts as i * fmul */
} largs;

/* mode 0 (read): fill LDS with the pattern, asm "=v" T out ($0, tied to
 * SENT), $2 address, $3/$4 = 0x11111111*(tid+1) / 0x22222222 ... unused;
 * out stored at dst + 16*tid.
 * mode 1 (write): zero LDS, asm writes with $2 address, $3 data (T),
 * $4/$5 i32 data; then LDS copied to dst (32 bytes per lane). */
static char *lkernel(int mode, const char *T, const char *body) {
  static const char *fmt =
      "target triple = \"amdgcn-amd-amdhsa\"\n"
      "@lds = internal addrspace(3) global [2048 x i8] poison, align 16\n"
      "declare i32 @llvm.amdgcn.workitem.id.x()\n"
      "declare void @llvm.amdgcn.s.barrier()\n"
      "define amdgpu_kernel void @k(ptr addrspace(1) %%dst, i32 %%mul, i32 %%add, i64 %%mask, i32 %%fmul) {\n"
      "  %%tid = call i32 @llvm.amdgcn.workitem.id.x()\n"
      "  %%w0 = shl i32 %%tid, 3\n" /* 8 words (32 bytes) per lane */
      "  br label %%fill\n"
      "fill:\n"
      "  %%i = phi i32 [ 0, %%0 ], [ %%in, %%fill ]\n"
      "  %%wi = add i32 %%w0, %%i\n"
      "  %%fv = mul i32 %%wi, %%fmul\n" /* fmul = 0 (write tests) avoids a constant fill */

      "  %%lp = getelementptr i32, ptr addrspace(3) @lds, i32 %%wi\n"
      "  store i32 %%fv, ptr addrspace(3) %%lp\n"
      "  %%in = add i32 %%i, 1\n"
      "  %%c = icmp ult i32 %%in, 8\n"
      "  br i1 %%c, label %%fill, label %%go\n"
      "go:\n"
      "  fence syncscope(\"workgroup\") release\n"
      "  call void @llvm.amdgcn.s.barrier()\n"
      "  fence syncscope(\"workgroup\") acquire\n"
      "  %%am = mul i32 %%tid, %%mul\n"
      "  %%a0 = add i32 %%am, %%add\n"
      "  %%a = add i32 %%a0, ptrtoint (ptr addrspace(3) @lds to i32)\n"
      "  %%t1 = add i32 %%tid, 1\n"
      "  %%d1 = mul i32 %%t1, 286331153\n"
      "  %%d2 = mul i32 %%t1, 572662306\n"
      "  %%dv0 = insertelement <4 x i32> poison, i32 %%d1, i32 0\n"
      "  %%dv1 = insertelement <4 x i32> %%dv0, i32 %%d2, i32 1\n"
      "  %%dv2 = insertelement <4 x i32> %%dv1, i32 %%t1, i32 2\n"
      "  %%dv3 = insertelement <4 x i32> %%dv2, i32 %%am, i32 3\n"
      "  %%dv = shufflevector <4 x i32> %%dv3, <4 x i32> poison, %s\n"
      "  %%res = call { %s, i64 } asm sideeffect \"s_mov_b64 $1, exec\\0As_mov_b64 exec, $6\\0A%s\\0As_waitcnt lgkmcnt(0)\\0As_mov_b64 exec, $1\",\n"
      "      \"=v,=&s,v,v,v,v,s,0,~{memory}\"(i32 %%a, %s %%dv, i32 %%d1, i32 %%d2, i64 %%mask, %s %s)\n"
      "  %%out = extractvalue { %s, i64 } %%res, 0\n"
      "  fence syncscope(\"workgroup\") release\n"
      "  call void @llvm.amdgcn.s.barrier()\n"
      "  fence syncscope(\"workgroup\") acquire\n"
      "  %%op = getelementptr [32 x i8], ptr addrspace(1) %%dst, i32 %%tid\n"
      "  %%ls = getelementptr [32 x i8], ptr addrspace(3) @lds, i32 %%tid\n"
      "  %%lv = load <8 x i32>, ptr addrspace(3) %%ls, align 16\n"
      "  %%lv4 = shufflevector <8 x i32> %%lv, <8 x i32> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>\n"
      "  %%outp = getelementptr [16 x i8], ptr addrspace(1) %%op, i32 1\n"
      "  %s\n"
      "  ret void\n"
      "}\n";
  char init[256], shuf[128];
  int n = strcmp(T, "i32") ? T[1] - '0' : 1;
  tmem_splat(T, SENT, init, sizeof init);
  if (n == 1) {
    snprintf(shuf, sizeof shuf, "<1 x i32> zeroinitializer");
  } else {
    int k = snprintf(shuf, sizeof shuf, "<%d x i32> <", n);
    for (int i = 0; i < n; i++) k += snprintf(shuf + k, sizeof shuf - (size_t)k, "%si32 %d", i ? ", " : "", i);
    snprintf(shuf + k, sizeof shuf - (size_t)k, ">");
  }
  /* read mode: store the asm result at dst + 32*tid; write mode: the LDS */
  char tail[256];
  if (mode == 0) snprintf(tail, sizeof tail, "store %s %%out, ptr addrspace(1) %%op, align 16", T);
  else snprintf(tail, sizeof tail, "store <8 x i32> %%lv, ptr addrspace(1) %%op, align 16");
  char *b = malloc(12288);
  const char *DT = n == 1 ? "<1 x i32>" : T;
  snprintf(b, 12288, fmt, shuf, T, body, DT, T, init, T, tail);
  if (n == 1) { /* scalar T: the data operand stays <1 x i32>; use d1 instead */
    char *p = strstr(b, "<1 x i32> %dv,");
    if (p) memcpy(p, "i32 %d1,      ", 14);
  }
  return b;
}

static convjit_status lrun(const char *arch, int mode, const char *T, const char *body, uint32_t mul, uint32_t add,
                           uint64_t mask, uint8_t out[LDS_BYTES]) {
  char *ir = lkernel(mode, T, body);
  tmem t;
  convjit_status st = tmem_open(&t, arch, ir);
  if (st != CONVJIT_OK) fprintf(stderr, "%s\n%s\n", cj_error_text(), ir);
  assert_int_equal(st, CONVJIT_OK);
  free(ir);
  largs a = {tmem_buf(&t, NULL, LDS_BYTES), mul, add, mask, mode == 0 ? 0x9E3779B1u : 0u, 0};
  st = tmem_run(&t, 1, 64, &a, sizeof a);
  if (st != CONVJIT_OK) fprintf(stderr, "(run) %s\n", cj_error_text());
  if (st == CONVJIT_OK) assert_int_equal(emu_mem_d2h(t.mem, out, a.dst, LDS_BYTES), CONVJIT_OK);
  tmem_close(&t);
  return st;
}

static uint32_t get32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static uint32_t lds32(uint32_t a) { return patb(a) | patb(a + 1) << 8 | patb(a + 2) << 16 | (uint32_t)patb(a + 3) << 24; }

static void reads_all_widths(void **state) {
  (void)state;
  uint8_t out[LDS_BYTES];
  for (int ai = 0; ai < 2; ai++) {
    const char *arch = ai ? "gfx950" : "gfx942";
    /* b32..b128 with offset: lane address 16*tid + 8, offset:24 */
    struct { const char *T, *body; int n; } w[] = {
        {"i32", "ds_read_b32 $0, $2 offset:24", 1},
        {"<2 x i32>", "ds_read_b64 $0, $2 offset:24", 2},
        {"<3 x i32>", "ds_read_b96 $0, $2 offset:24", 3},
        {"<4 x i32>", "ds_read_b128 $0, $2 offset:24", 4},
    };
    for (int c = 0; c < 4; c++) {
      assert_int_equal(lrun(arch, 0, w[c].T, w[c].body, 16, 8, ~0ull, out), CONVJIT_OK);
      for (uint32_t l = 0; l < 60; l++)
        for (int k = 0; k < w[c].n; k++) assert_int_equal(get32(out + 32 * l + 4 * k), lds32(16 * l + 32 + 4 * k));
    }
    /* narrow reads at byte address 3*tid + 1 */
    struct { const char *body; int bytes, sext, d16; } nw[] = {
        {"ds_read_u8 $0, $2", 1, 0, 0},         {"ds_read_i8 $0, $2", 1, 1, 0},
        {"ds_read_u16 $0, $2", 2, 0, 0},        {"ds_read_i16 $0, $2", 2, 1, 0},
        {"ds_read_u16_d16 $0, $2", 2, 0, 1},    {"ds_read_u16_d16_hi $0, $2", 2, 0, 2},
        {"ds_read_u8_d16_hi $0, $2", 1, 0, 2},  {"ds_read_i8_d16 $0, $2", 1, 1, 1},
    };
    for (size_t c = 0; c < sizeof nw / sizeof nw[0]; c++) {
      assert_int_equal(lrun(arch, 0, "i32", nw[c].body, 3, 1, ~0ull, out), CONVJIT_OK);
      for (uint32_t l = 0; l < 64; l++) {
        uint32_t a = 3 * l + 1, v = nw[c].bytes == 1 ? patb(a) : (uint32_t)patb(a) | patb(a + 1) << 8;
        if (nw[c].sext) v = nw[c].bytes == 1 ? (uint32_t)(int32_t)(int8_t)v : (uint32_t)(int32_t)(int16_t)v;
        if (nw[c].d16 == 1) v = (SENT & 0xffff0000u) | (v & 0xffff);
        if (nw[c].d16 == 2) v = (SENT & 0xffff) | v << 16;
        assert_int_equal(get32(out + 32 * l), v);
      }
    }
  }
}

static void read2_offsets(void **state) {
  (void)state;
  uint8_t out[LDS_BYTES];
  /* ds_read2_b32 at 8*tid: offset0:1 -> +4, offset1:9 -> +36 */
  assert_int_equal(lrun("gfx942", 0, "<2 x i32>", "ds_read2_b32 $0, $2 offset0:1 offset1:9", 8, 0, ~0ull, out),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) {
    assert_int_equal(get32(out + 32 * l), lds32(8 * l + 4));
    assert_int_equal(get32(out + 32 * l + 4), lds32(8 * l + 36));
  }
  /* ds_read2_b64 at 8*tid: offset0:2 -> +16, offset1:7 -> +56 */
  assert_int_equal(lrun("gfx950", 0, "<4 x i32>", "ds_read2_b64 $0, $2 offset0:2 offset1:7", 8, 0, ~0ull, out),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) {
    assert_int_equal(get32(out + 32 * l), lds32(8 * l + 16));
    assert_int_equal(get32(out + 32 * l + 4), lds32(8 * l + 20));
    assert_int_equal(get32(out + 32 * l + 8), lds32(8 * l + 56));
    assert_int_equal(get32(out + 32 * l + 12), lds32(8 * l + 60));
  }
  /* ds_read2st64_b32 at 4*tid: offset0:1 -> +256, offset1:5 -> +1280 */
  assert_int_equal(lrun("gfx942", 0, "<2 x i32>", "ds_read2st64_b32 $0, $2 offset0:1 offset1:5", 4, 0, ~0ull, out),
                   CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) {
    assert_int_equal(get32(out + 32 * l), lds32(4 * l + 256));
    assert_int_equal(get32(out + 32 * l + 4), lds32(4 * l + 1280));
  }
  /* ds_read2st64_b64 at 8*tid: offset1:3 -> +1536 */
  assert_int_equal(lrun("gfx950", 0, "<4 x i32>", "ds_read2st64_b64 $0, $2 offset1:3", 8, 0, ~0ull, out), CONVJIT_OK);
  for (uint32_t l = 0; l < 64; l++) {
    assert_int_equal(get32(out + 32 * l), lds32(8 * l));
    assert_int_equal(get32(out + 32 * l + 8), lds32(8 * l + 1536));
  }
}

/* Write tests: the data operands are d1 = 0x11111111*(t+1), d2 = 0x22222222*(t+1),
 * vector data <d1, d2, t+1, 16*t... (am = mul*t)>. */
static void put32(uint8_t *img, uint32_t a, uint32_t v) { memcpy(img + a, &v, 4); }

static void writes_all_widths(void **state) {
  (void)state;
  uint8_t out[LDS_BYTES], img[LDS_BYTES];
  const uint64_t mask = ~(1ull << 7 | 1ull << 40);
  for (int ai = 0; ai < 2; ai++) {
    const char *arch = ai ? "gfx950" : "gfx942";
    struct { const char *T, *body; int bytes; } w[] = {
        {"i32", "ds_write_b8 $2, $4 offset:3", 1},          {"i32", "ds_write_b16 $2, $4 offset:3", 2},
        {"i32", "ds_write_b32 $2, $4 offset:3", 4},         {"<2 x i32>", "ds_write_b64 $2, $3 offset:3", 8},
        {"<3 x i32>", "ds_write_b96 $2, $3 offset:3", 12},  {"<4 x i32>", "ds_write_b128 $2, $3 offset:3", 16},
        {"i32", "ds_write_b16_d16_hi $2, $4 offset:3", -2},
    };
    for (size_t c = 0; c < sizeof w / sizeof w[0]; c++) {
      assert_int_equal(lrun(arch, 1, w[c].T, w[c].body, 32, 4, mask, out), CONVJIT_OK);
      memset(img, 0, sizeof img);
      for (uint32_t l = 0; l < 64; l++) {
        if (!((mask >> l) & 1)) continue;
        uint32_t t1 = l + 1, d[4] = {0x11111111u * t1, 0x22222222u * t1, t1, 32 * l};
        uint32_t a = 32 * l + 4 + 3;
        uint8_t bytes[16];
        memcpy(bytes, d, 16);
        if (w[c].bytes == -2) { /* d16_hi: bits 31:16 of d1 */
          img[a] = (uint8_t)(d[0] >> 16);
          img[a + 1] = (uint8_t)(d[0] >> 24);
        } else {
          memcpy(img + a, bytes, (size_t)w[c].bytes);
        }
      }
      if (memcmp(out, img, LDS_BYTES)) {
        for (int i = 0; i < LDS_BYTES; i++)
          if (out[i] != img[i]) fprintf(stderr, "%s %s: byte %d = %02x want %02x\n", arch, w[c].body, i, out[i], img[i]);
        fail();
      }
    }
  }
  /* write2 b32: 8*tid, offset0:0 offset1:65 -> +0, +260 (lanes' pairs never overlap) */
  assert_int_equal(lrun("gfx942", 1, "i32", "ds_write2_b32 $2, $4, $5 offset1:65", 4, 0, mask, out), CONVJIT_OK);
  memset(img, 0, sizeof img);
  for (uint32_t l = 0; l < 64; l++)
    if ((mask >> l) & 1) put32(img, 4 * l, 0x11111111u * (l + 1)), put32(img, 4 * l + 260, 0x22222222u * (l + 1));
  assert_memory_equal(out, img, LDS_BYTES);
  /* write2st64 b32 at 4*tid: offset0:1 offset1:3 -> +256, +768 */
  assert_int_equal(lrun("gfx950", 1, "i32", "ds_write2st64_b32 $2, $4, $5 offset0:1 offset1:3", 4, 0, ~0ull, out),
                   CONVJIT_OK);
  memset(img, 0, sizeof img);
  for (uint32_t l = 0; l < 64; l++) put32(img, 4 * l + 256, 0x11111111u * (l + 1)), put32(img, 4 * l + 768, 0x22222222u * (l + 1));
  assert_memory_equal(out, img, LDS_BYTES);
  /* write2 b64 at 16*tid: offset1:128 -> +1024 */
  assert_int_equal(lrun("gfx942", 1, "<2 x i32>", "ds_write2_b64 $2, $3, $3 offset1:128", 16, 0, ~0ull, out),
                   CONVJIT_OK);
  memset(img, 0, sizeof img);
  for (uint32_t l = 0; l < 64; l++) {
    uint32_t t1 = l + 1;
    put32(img, 16 * l, 0x11111111u * t1), put32(img, 16 * l + 4, 0x22222222u * t1);
    put32(img, 16 * l + 1024, 0x11111111u * t1), put32(img, 16 * l + 1028, 0x22222222u * t1);
  }
  assert_memory_equal(out, img, LDS_BYTES);
}

static void past_lds_allocation(void **state) {
  (void)state;
  uint8_t out[LDS_BYTES];
  /* lane 63 reads at 32*63 + 32 = 2048 = the allocation size */
  convjit_status st = lrun("gfx942", 0, "i32", "ds_read_b32 $0, $2 offset:32", 32, 0, ~0ull, out);
  assert_int_equal(st, CONVJIT_ERR_EMULATION);
  assert_non_null(strstr(cj_error_text(), "2048 LDS bytes"));
  assert_non_null(strstr(cj_error_text(), "lane 63"));
  /* the same with lane 63 masked off is fine */
  assert_int_equal(lrun("gfx942", 0, "i32", "ds_read_b32 $0, $2 offset:32", 32, 0, ~0ull >> 1, out), CONVJIT_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reads_all_widths),
      cmocka_unit_test(read2_offsets),
      cmocka_unit_test(writes_all_widths),
      cmocka_unit_test(past_lds_allocation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
