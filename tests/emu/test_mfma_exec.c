/* MFMA instructions executed end to end on the emulator, both archs.
 *
 * Each kernel (LLVM IR built here, compiled by the project's pipeline) loads
 * per-lane register images of A, B, C from global memory, runs one or two
 * MFMAs and stores D. The path covered is the emulator's operand routing in
 * exec_mfma.c: VGPR and AGPR sources (LLVM puts C/D in AGPRs; inline asm
 * forces A/B into AGPRs), an inline-constant 0 accumulator, chained
 * accumulation, an f8f6f4 under a partial EXEC (all lanes computed),
 * cbsz/blgp format selection, and the per-arch reading of the same fp8
 * opcode (gfx942 FNUZ, gfx950 OCP).
 *
 * Expected D: a naive double matmul of the logical matrices, decoded by
 * numfmt (tolerance below), and bit equality with a direct call of
 * src/emu/mfma.c on the same register images (the arithmetic itself is
 * checked against a naive matmul in test_mfma.c; here only routing). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "emu/emu.h"
#include "emu/memory.h"
#include "emu/mfma.h"
#include "support_mem.h"
#include "pipeline/codeobj.h"
#include "util/numfmt.h"

/* ---- kernels ------------------------------------------------------------- */

typedef enum { OP_BF16_K16, OP_BF16_K32, OP_FP8_K32, OP_F8_K128 } mop;

typedef struct {
  const char *name;  /* kernel name */
  mop op;
  int cbsz, blgp;    /* f8f6f4 formats */
  int mode;          /* 0 intrinsic; 1 C = zeroinitializer; 2 two chained MFMAs;
                        3 inline asm with A, B in AGPRs and C/D in VGPRs;
                        4 inline asm with EXEC = 0xff around the MFMA */
} kdesc;

static const int op_K[4] = {16, 32, 32, 128};
static const int op_nregs[4] = {2, 4, 2, 8};
static const int op_bits[4] = {16, 16, 8, 8};
static const char *const op_type[4] = {"<4 x i16>", "<8 x bfloat>", "i64", "<8 x i32>"};
static const char *const op_mnemonic[4] = {"v_mfma_f32_16x16x16_bf16", "v_mfma_f32_16x16x32_bf16",
                                           "v_mfma_f32_16x16x32_fp8_fp8", "v_mfma_f32_16x16x128_f8f6f4"};

static const kdesc k942[] = {
  {"bf16", OP_BF16_K16, 0, 0, 0}, {"bf16_zc", OP_BF16_K16, 0, 0, 1}, {"bf16_chain", OP_BF16_K16, 0, 0, 2},
  {"bf16_agpr", OP_BF16_K16, 0, 0, 3}, {"fp8", OP_FP8_K32, 0, 0, 0}, {"fp8_agpr", OP_FP8_K32, 0, 0, 3},
};
static const kdesc k950[] = {
  {"bf16", OP_BF16_K32, 0, 0, 0}, {"bf16_zc", OP_BF16_K32, 0, 0, 1}, {"bf16_chain", OP_BF16_K32, 0, 0, 2},
  {"bf16_agpr", OP_BF16_K32, 0, 0, 3}, {"fp8", OP_FP8_K32, 0, 0, 0},
  {"f8_00", OP_F8_K128, 0, 0, 0}, {"f8_10", OP_F8_K128, 1, 0, 0}, {"f8_01", OP_F8_K128, 0, 1, 0},
  {"f8_11", OP_F8_K128, 1, 1, 0}, {"f8_zc", OP_F8_K128, 0, 0, 1}, {"f8_agpr", OP_F8_K128, 1, 0, 3},
  {"f8_exec", OP_F8_K128, 0, 1, 4},
};

static void intrinsic_call(char *buf, size_t n, const kdesc *k, const char *dst, const char *c) {
  const char *t = op_type[k->op];
  switch (k->op) {
    case OP_BF16_K16:
      snprintf(buf, n, "%s = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16bf16.1k(%s %%va, %s %%vb, <4 x float> %s, i32 0, i32 0, i32 0)\n", dst, t, t, c);
      break;
    case OP_BF16_K32:
      snprintf(buf, n, "%s = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(%s %%va, %s %%vb, <4 x float> %s, i32 0, i32 0, i32 0)\n", dst, t, t, c);
      break;
    case OP_FP8_K32:
      snprintf(buf, n, "%s = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8(%s %%va, %s %%vb, <4 x float> %s, i32 0, i32 0, i32 0)\n", dst, t, t, c);
      break;
    default: /* constant-0 scales: llc emits the unscaled MFMA (docs/isa-notes.md §1) */
      snprintf(buf, n, "%s = call <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4(%s %%va, %s %%vb, <4 x float> %s, i32 %d, i32 %d, i32 0, i32 0, i32 0, i32 0)\n", dst, t, t, c, k->cbsz, k->blgp);
      break;
  }
}

static void append_kernel(char *ir, size_t cap, const kdesc *k) {
  const char *t = op_type[k->op];
  char body[1024], c2[512];
  if (k->mode == 1) {
    intrinsic_call(body, sizeof body, k, "%r", "zeroinitializer");
  } else if (k->mode == 2) {
    intrinsic_call(body, sizeof body, k, "%r1", "%vc");
    intrinsic_call(c2, sizeof c2, k, "%r", "%r1");
    strncat(body, "  ", sizeof body - strlen(body) - 1);
    strncat(body, c2, sizeof body - strlen(body) - 1);
  } else if (k->mode == 3) {
    char mods[32] = "";
    if (k->op == OP_F8_K128 && (k->cbsz || k->blgp)) snprintf(mods, sizeof mods, " cbsz:%d blgp:%d", k->cbsz, k->blgp);
    snprintf(body, sizeof body,
             "%%r = call <4 x float> asm sideeffect \"%s $0, $1, $2, $3%s\", \"=v,a,a,v\"(%s %%va, %s %%vb, <4 x float> %%vc)\n",
             op_mnemonic[k->op], mods, t, t);
  } else if (k->mode == 4) {
    /* f8f6f4 ignores EXEC (CDNA4 ISA 7.1.5): all 64 lanes of D are written */
    snprintf(body, sizeof body,
             "%%r = call <4 x float> asm sideeffect \"s_mov_b64 exec, 0xff\\0A\\09%s $0, $1, $2, $3 cbsz:%d blgp:%d\\0A\\09"
             "s_mov_b64 exec, -1\", \"=v,v,v,v,~{exec}\"(%s %%va, %s %%vb, <4 x float> %%vc)\n",
             op_mnemonic[k->op], k->cbsz, k->blgp, t, t);
  } else {
    intrinsic_call(body, sizeof body, k, "%r", "%vc");
  }
  size_t len = strlen(ir);
  snprintf(ir + len, cap - len,
           "define amdgpu_kernel void @%s(ptr addrspace(1) %%a, ptr addrspace(1) %%b, ptr addrspace(1) %%c, ptr addrspace(1) %%d) #0 {\n"
           "  %%tid = call i32 @llvm.amdgcn.workitem.id.x()\n"
           "  %%pa = getelementptr %s, ptr addrspace(1) %%a, i32 %%tid\n"
           "  %%pb = getelementptr %s, ptr addrspace(1) %%b, i32 %%tid\n"
           "  %%pc = getelementptr <4 x float>, ptr addrspace(1) %%c, i32 %%tid\n"
           "  %%pd = getelementptr <4 x float>, ptr addrspace(1) %%d, i32 %%tid\n"
           "  %%va = load %s, ptr addrspace(1) %%pa\n"
           "  %%vb = load %s, ptr addrspace(1) %%pb\n"
           "  %%vc = load <4 x float>, ptr addrspace(1) %%pc\n"
           "  %s"
           "  store <4 x float> %%r, ptr addrspace(1) %%pd\n"
           "  ret void\n}\n",
           k->name, t, t, t, t, body);
}

static const char ir_head[] =
  "declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16bf16.1k(<4 x i16>, <4 x i16>, <4 x float>, i32, i32, i32)\n"
  "declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat>, <8 x bfloat>, <4 x float>, i32, i32, i32)\n"
  "declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8(i64, i64, <4 x float>, i32, i32, i32)\n"
  "declare <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4(<8 x i32>, <8 x i32>, <4 x float>, i32, i32, i32, i32, i32, i32)\n"
  "declare i32 @llvm.amdgcn.workitem.id.x()\n";

/* IR text -> linked code object (tests/emu/support_mem.c: compile + link). */
static void build_module(const char *arch_name, const kdesc *ks, int nk, cj_blob *elf) {
  size_t cap = 64 * 1024;
  char *ir = calloc(1, cap);
  assert_non_null(ir);
  strcpy(ir, ir_head);
  for (int i = 0; i < nk; i++) append_kernel(ir, cap, &ks[i]);
  strncat(ir, "attributes #0 = { \"amdgpu-flat-work-group-size\"=\"64,64\" }\n", cap - strlen(ir) - 1);
  if (tmem_build(arch_name, ir, elf) != CONVJIT_OK) fail_msg("build %s: %s", arch_name, cj_error_text());
  free(ir);
}

/* ---- data ---------------------------------------------------------------- */

static uint16_t A[16][128], Bj[16][128]; /* logical A[i][k], B[k][j] stored as Bj[j][k] */
static float C[16][16];

/* Inverse of docs/isa-notes.md §1: the k held at (lane, reg, sub); row = lane % 16. */
static int k_at(mop op, int lane, int reg, int sub) {
  int g = lane / 16;
  switch (op) {
    case OP_BF16_K16: return 4 * g + 2 * reg + sub;
    case OP_BF16_K32: return 8 * g + 2 * reg + sub;
    case OP_FP8_K32: return 8 * g + 4 * reg + sub;
    default: return 64 * (reg / 4) + 16 * g + 4 * (reg % 4) + sub;
  }
}

/* lane-major images: img[lane * nregs + reg] (what each lane loads) and the
 * register-major form mfma.c takes (regs[reg][lane]) */
static void pack(mop op, uint16_t codes[16][128], uint32_t *img, emu_lanereg *regs) {
  int bits = op_bits[op], per = 32 / bits, nregs = op_nregs[op];
  for (int lane = 0; lane < 64; lane++)
    for (int reg = 0; reg < nregs; reg++) {
      uint32_t v = 0;
      for (int sub = 0; sub < per; sub++) v |= (uint32_t)codes[lane % 16][k_at(op, lane, reg, sub)] << (bits * sub);
      img[lane * nregs + reg] = v;
      regs[reg][lane] = v;
    }
}

/* C/D[i][j]: reg i%4 of lane 16*(i/4)+j; each lane loads/stores its 4 regs */
static void pack_c(const float c[16][16], float *img, emu_lanereg *regs) {
  for (int lane = 0; lane < 64; lane++)
    for (int reg = 0; reg < 4; reg++) {
      float v = c[4 * (lane / 16) + reg][lane % 16];
      img[lane * 4 + reg] = v;
      memcpy(&regs[reg][lane], &v, 4);
    }
}

static cj_nf_fp8 fmt_a(const kdesc *k, int is942) {
  if (k->op == OP_FP8_K32) return is942 ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
  return k->cbsz ? CJ_NF_E5M2 : CJ_NF_E4M3FN;
}
static cj_nf_fp8 fmt_b(const kdesc *k, int is942) {
  if (k->op == OP_FP8_K32) return is942 ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
  return k->blgp ? CJ_NF_E5M2 : CJ_NF_E4M3FN;
}

static float dec(mop op, uint16_t code, cj_nf_fp8 f) {
  return op_bits[op] == 16 ? cj_bf16_to_f32(code) : cj_fp8_to_f32((uint8_t)code, f);
}

static uint16_t rand_code(mop op, cj_nf_fp8 f, unsigned *seed) {
  for (;;) {
    unsigned x = (unsigned)rand_r(seed);
    if (op_bits[op] == 16) return cj_f32_to_bf16_rne((float)(x % 65536) / 8192.0f - 4.0f);
    if (isfinite(cj_fp8_to_f32((uint8_t)x, f))) return (uint8_t)x;
  }
}

static void direct(mop op, const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c, emu_lanereg *d,
                   const kdesc *k, int is942) {
  switch (op) {
    case OP_BF16_K16: emu_mfma_f32_16x16x16_bf16(a, b, c, d); break;
    case OP_BF16_K32: emu_mfma_f32_16x16x32_bf16(a, b, c, d); break;
    case OP_FP8_K32: emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, is942); break;
    default: assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, k->cbsz, k->blgp), 0); break;
  }
}

static void run_arch(const char *arch_name, const kdesc *ks, int nk) {
  int is942 = !strcmp(arch_name, "gfx942");
  cj_blob elf = {0};
  build_module(arch_name, ks, nk, &elf);
  emu_ctx *ctx = NULL;
  assert_int_equal(emu_ctx_create(arch_name, NULL, &ctx), CONVJIT_OK);
  emu_module *mod = NULL;
  if (emu_module_load(ctx, elf.data, elf.size, &mod) != CONVJIT_OK) fail_msg("load: %s", cj_error_text());
  emu_mem *mem = emu_ctx_mem(ctx);
  uint64_t da, db, dc, dd;
  assert_int_equal(emu_mem_alloc(mem, 64 * 8 * 4, &da), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(mem, 64 * 8 * 4, &db), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(mem, 64 * 4 * 4, &dc), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(mem, 64 * 4 * 4, &dd), CONVJIT_OK);
  unsigned seed = is942 ? 942 : 950;
  for (int ki = 0; ki < nk; ki++) {
    const kdesc *k = &ks[ki];
    mop op = k->op;
    int K = op_K[op];
    cj_nf_fp8 fa = fmt_a(k, is942), fb = fmt_b(k, is942);
    for (int r = 0; r < 16; r++)
      for (int kk = 0; kk < K; kk++) A[r][kk] = rand_code(op, fa, &seed), Bj[r][kk] = rand_code(op, fb, &seed);
    for (int i = 0; i < 16; i++)
      for (int j = 0; j < 16; j++) C[i][j] = k->mode == 1 ? 0.0f : (float)(rand_r(&seed) % 2001 - 1000) / 64.0f;
    uint32_t ia[64 * 8], ib[64 * 8];
    float ic[64 * 4], id[64 * 4];
    emu_lanereg ra[8], rb[8], rc[4], rd[4];
    pack(op, A, ia, ra);
    pack(op, Bj, ib, rb);
    pack_c(C, ic, rc);
    assert_int_equal(emu_mem_h2d(mem, da, ia, sizeof ia), CONVJIT_OK);
    assert_int_equal(emu_mem_h2d(mem, db, ib, sizeof ib), CONVJIT_OK);
    assert_int_equal(emu_mem_h2d(mem, dc, ic, sizeof ic), CONVJIT_OK);
    assert_int_equal(emu_mem_memset(mem, dd, 0xFF, sizeof id), CONVJIT_OK);

    const emu_kernel *kern = NULL;
    assert_int_equal(emu_kernel_get(mod, k->name, &kern), CONVJIT_OK);
    const cj_kernel_info *info = emu_kernel_info(kern);
    uint8_t kargs[256] = {0};
    uint64_t ptrs[4] = {da, db, dc, dd};
    int np = 0;
    for (uint32_t i = 0; i < info->nargs && np < 4; i++)
      if (info->args[i].kind == CJ_ARG_GLOBAL_BUFFER) memcpy(kargs + info->args[i].offset, &ptrs[np++], 8);
    assert_int_equal(np, 4);
    const uint32_t grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
    emu_stats st = {0};
    if (emu_launch(kern, grid, block, kargs, info->kernarg_size, NULL, &st) != CONVJIT_OK)
      fail_msg("%s %s: %s", arch_name, k->name, cj_error_text());
    assert_int_equal(st.count[EMU_CLASS_MFMA], k->mode == 2 ? 2 : 1);
    assert_int_equal(emu_mem_d2h(mem, id, dd, sizeof id), CONVJIT_OK);

    /* bit equality with mfma.c on the same images (chain: twice) */
    direct(op, ra, rb, rc, rd, k, is942);
    if (k->mode == 2) direct(op, ra, rb, rd, rd, k, is942);
    for (int lane = 0; lane < 64; lane++)
      for (int reg = 0; reg < 4; reg++) {
        uint32_t got, want = rd[reg][lane];
        memcpy(&got, &id[lane * 4 + reg], 4);
        if (got != want)
          fail_msg("%s %s: lane %d reg %d: emulator 0x%08x, mfma.c 0x%08x", arch_name, k->name, lane, reg, got, want);
      }
    /* naive matmul of the logical matrices. Tolerance: mfma.c rounds once
     * per MFMA (2^-24 relative to |C| + sum|ab|, twice for the chain);
     * 2^-21 is far below any misrouted-operand error. */
    int times = k->mode == 2 ? 2 : 1;
    for (int i = 0; i < 16; i++)
      for (int j = 0; j < 16; j++) {
        double s = C[i][j], mag = fabs(C[i][j]);
        for (int kk = 0; kk < K; kk++) {
          double p = (double)dec(op, A[i][kk], fa) * (double)dec(op, Bj[j][kk], fb);
          s += times * p;
          mag += times * fabs(p);
        }
        float got = id[(16 * (i / 4) + j) * 4 + i % 4];
        if (!(fabs((double)got - s) <= mag * 0x1p-21))
          fail_msg("%s %s: D[%d][%d] = %.9g, naive %.9g", arch_name, k->name, i, j, got, s);
      }
    emu_stats_free(&st);
  }
  emu_module_unload(mod);
  emu_ctx_destroy(ctx);
  cj_blob_free(&elf);
}

static void test_mfma_exec_gfx942(void **s) {
  (void)s;
  run_arch("gfx942", k942, (int)(sizeof k942 / sizeof k942[0]));
}

static void test_mfma_exec_gfx950(void **s) {
  (void)s;
  run_arch("gfx950", k950, (int)(sizeof k950 / sizeof k950[0]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_mfma_exec_gfx942),
    cmocka_unit_test(test_mfma_exec_gfx950),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
