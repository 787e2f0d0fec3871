/* gfx942 / gfx950 facts as data (contract in arch.h).
 *
 * Every value below was either checked with LLVM 22 (llc-22, llvm-mc-22,
 * llvm-readelf-22; commands in docs/isa-notes.md) or comes from
 * docs/isa-notes.md with its source. Kernel builders read these fields and
 * never compare arch names.
 */
#include <pthread.h>
#include <string.h>
#include "arch/arch.h"

const cj_waitcnt_model cj_waitcnt_gfx9 = {"gfx9", 63, 7, 15};

uint32_t cj_waitcnt_encode(const cj_waitcnt_model *m, uint32_t vmcnt, uint32_t expcnt, uint32_t lgkmcnt) {
  if (vmcnt > m->vmcnt_max) vmcnt = m->vmcnt_max;
  if (expcnt > m->expcnt_max) expcnt = m->expcnt_max;
  if (lgkmcnt > m->lgkmcnt_max) lgkmcnt = m->lgkmcnt_max;
  return (vmcnt & 0xf) | ((vmcnt >> 4) << 14) | (expcnt << 4) | (lgkmcnt << 8); /* gfx9's layout, the one model */
}

/* Features "" = the "any" target id (xnack any, sramecc any): e_flags
 * 0x54c / 0x54f. Such a code object loads in every process configuration
 * (HSA_XNACK on or off, SRAM ECC on or off), which a library shipped inside
 * a framework cannot know in advance. */
static const cj_arch cj_gfx942 = {
    .name = "gfx942",
    .features = "",
    .product = "MI300X (CDNA3)",
    .elf_mach = 0x4c,
    .elf_flags = 0x54c,
    .lds_bytes = 65536,
    .vgprs = 512,
    .cu_count_default = 304,
    .fp8 = CJ_FP8_E4M3FNUZ,
    .mfma_bf16 = CJ_MFMA_BF16_16x16x16,
    .mfma_fp8 = CJ_MFMA_FP8_16x16x32,
    .mfma_f16 = CJ_MFMA_F16_16x16x16,
    .mfma_bf16_k = 16,
    .mfma_fp8_k = 32,
    /* llc-22 -mcpu=gfx942 aborts ("Do not know how to expand this operator's
     * operand") on a 16-byte raw.ptr.buffer.load.lds: only dword DMA. */
    .dma_max_bytes = 4,
    .buffer_flags = 0x27000,
    .has_ocp_fp8 = 0,
    .has_dma_dwordx4 = 0,
    .wave_size = 64,
    .max_block_threads = 1024,
    .matrix = CJ_MATRIX_MFMA,
    .waitcnt = &cj_waitcnt_gfx9,
    .has_agprs = 1,
    .xdl_dep_extra = 0, /* CDNA3 ISA guide, MFMA dependency table (docs/performance.md) */
    .clock_mhz = 2100, /* MI300X peak engine clock (AMD Instinct MI300X data sheet) */
    .simds_per_cu = 4, /* CDNA3 white paper: 4 SIMD units per CU */
    .lds_banks = 32,   /* ROCm blog on CK-Tile LDS bank conflicts (docs/emulator.md "LDS bank model") */
    .hbm_gbs = 5300,         /* MI300X data sheet: 5.3 TB/s */
    .lds_cu_bytes = 65536,   /* CDNA3 ISA guide: 64 KiB per CU */
    .waves_per_simd = 8,     /* llc-22 -mcpu=gfx942: "Occupancy: 8" at minimal registers */
    .vgpr_granule = 8,       /* LLVM AMDGPUUsage: gfx90a+ unified file, granule 8 */
    /* found by tests/emu/test_decode.c's random-bytes test: printing a VOP3
     * word whose source field is 255 aborts LLVM 22 for gfx942 */
    .llvm_vop3_literal = 0,
};

static const cj_arch cj_gfx950 = {
    .name = "gfx950",
    .features = "",
    .product = "MI355X (CDNA4)",
    .elf_mach = 0x4f,
    .elf_flags = 0x54f,
    .lds_bytes = 163840,
    .vgprs = 512,
    .cu_count_default = 256,
    .fp8 = CJ_FP8_E4M3FN,
    .mfma_bf16 = CJ_MFMA_BF16_16x16x32,
    .mfma_fp8 = CJ_MFMA_F8F6F4_16x16x128,
    .mfma_f16 = CJ_MFMA_F16_16x16x32,
    .mfma_bf16_k = 32,
    .mfma_fp8_k = 128,
    .dma_max_bytes = 16, /* buffer_load_dwordx4 ... lds (llc-22 -mcpu=gfx950) */
    .buffer_flags = 0x27000,
    .has_ocp_fp8 = 1,
    .has_dma_dwordx4 = 1,
    .wave_size = 64,
    .max_block_threads = 1024,
    .matrix = CJ_MATRIX_MFMA,
    .waitcnt = &cj_waitcnt_gfx9,
    .has_agprs = 1,
    .xdl_dep_extra = 1, /* CDNA4 ISA guide: one more wait state after 4+ pass XDL ops (docs/performance.md) */
    .clock_mhz = 2400, /* MI355X peak engine clock (AMD Instinct MI355X data sheet) */
    .simds_per_cu = 4, /* CDNA4 keeps the CDNA3 CU: 4 SIMD units */
    .lds_banks = 64,   /* ROCm blog "FP8 GEMM Optimization on AMD CDNA4", Table 1 (docs/emulator.md) */
    .hbm_gbs = 8000,         /* MI355X data sheet: 8 TB/s */
    .lds_cu_bytes = 163840,  /* CDNA4 ISA guide: 160 KiB per CU */
    .waves_per_simd = 8,     /* llc-22 -mcpu=gfx950: "Occupancy: 8" at minimal registers */
    .vgpr_granule = 8,       /* as gfx942 */
    /* llvm-mc-22 --disassemble -mcpu=gfx950 prints such a word with its
     * literal (e.g. "v_add3_u32 v0, 0x12345, v2, v3") */
    .llvm_vop3_literal = 1,
};

static const cj_arch *const cj_arches[] = {&cj_gfx942, &cj_gfx950};

const cj_arch *cj_arch_from_name(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof cj_arches / sizeof cj_arches[0]; i++)
    if (strcmp(name, cj_arches[i]->name) == 0) return cj_arches[i];
  return NULL;
}

const cj_arch *const *cj_arch_list(int *count) {
  if (count) *count = (int)(sizeof cj_arches / sizeof cj_arches[0]);
  return cj_arches;
}

static char cj_names[64];
static pthread_once_t cj_names_once = PTHREAD_ONCE_INIT;
static void cj_names_build(void) {
  size_t n = 0;
  for (size_t i = 0; i < sizeof cj_arches / sizeof cj_arches[0]; i++) {
    size_t len = strlen(cj_arches[i]->name);
    if (n + len + 3 > sizeof cj_names) break; /* a table that outgrows the buffer lists what fits */
    if (i) memcpy(cj_names + n, ", ", 2), n += 2;
    memcpy(cj_names + n, cj_arches[i]->name, len);
    n += len;
  }
  cj_names[n] = 0;
}

const char *cj_arch_names(void) {
  pthread_once(&cj_names_once, cj_names_build);
  return cj_names;
}

const cj_arch *cj_arch_from_elf_mach(uint32_t mach) {
  for (size_t i = 0; i < sizeof cj_arches / sizeof cj_arches[0]; i++)
    if (cj_arches[i]->elf_mach == mach) return cj_arches[i];
  return NULL;
}

int cj_arch_dma_ok(const cj_arch *arch, uint32_t bytes) {
  if (!arch) return 0;
  if (bytes == 1 || bytes == 2 || bytes == 4) return 1;
  if (bytes == 12 || bytes == 16) return arch->has_dma_dwordx4;
  return 0;
}

/* Layouts and operand types from docs/isa-notes.md §1 (AMD's matrix instruction
 * calculator for CDNA3, Triton/CK for CDNA4); intrinsic names and operand
 * IR types checked with llc-22 (docs/isa-notes.md). Cycles from the dense
 * peak rates (docs/performance.md): bf16 and f16 512 FLOPs/clk/SIMD on
 * gfx942, 1024 on gfx950; fp8 1024 and 2048. The f16 rows are the bf16
 * ones' shapes with IEEE half operands (<n x half>). */
static const cj_mfma_row cj_mfma_rows[] = {
    {CJ_MFMA_BF16_16x16x16, "v_mfma_f32_16x16x16_bf16", "llvm.amdgcn.mfma.f32.16x16x16bf16.1k", CONVJIT_DTYPE_BF16,
     2, 16, 16, 16, 4, 1, CJ_OPND_I16, 4, 0, 0, 16 /* 8192 FLOPs at 512 */},
    {CJ_MFMA_BF16_16x16x32, "v_mfma_f32_16x16x32_bf16", "llvm.amdgcn.mfma.f32.16x16x32.bf16", CONVJIT_DTYPE_BF16, 2,
     16, 16, 32, 8, 1, CJ_OPND_BF16, 8, 0, 0, 16 /* 16384 at 1024 */},
    {CJ_MFMA_FP8_16x16x32, "v_mfma_f32_16x16x32_fp8_fp8", "llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8",
     CONVJIT_DTYPE_FP8_E4M3FNUZ, 1, 16, 16, 32, 8, 1, CJ_OPND_I64, 1, 0, 0, 16 /* 16384 at 1024 */},
    {CJ_MFMA_F8F6F4_16x16x128, "v_mfma_f32_16x16x128_f8f6f4", "llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4",
     CONVJIT_DTYPE_FP8_E4M3FN, 1, 16, 16, 128, 16, 2, CJ_OPND_I32, 8, 0, 0, 32 /* 65536 at 2048 */},
    {CJ_MFMA_F16_16x16x16, "v_mfma_f32_16x16x16_f16", "llvm.amdgcn.mfma.f32.16x16x16f16", CONVJIT_DTYPE_F16, 2, 16,
     16, 16, 4, 1, CJ_OPND_F16, 4, 0, 0, 16 /* 8192 at 512 */},
    {CJ_MFMA_F16_16x16x32, "v_mfma_f32_16x16x32_f16", "llvm.amdgcn.mfma.f32.16x16x32.f16", CONVJIT_DTYPE_F16, 2, 16,
     16, 32, 8, 1, CJ_OPND_F16, 8, 0, 0, 16 /* 16384 at 1024 */},
};

cj_mfma_kind cj_arch_mfma_for(const cj_arch *arch, int dtype) {
  if (!arch) return (cj_mfma_kind)0;
  switch (dtype) {
  case CONVJIT_DTYPE_BF16: return arch->mfma_bf16;
  case CONVJIT_DTYPE_F16: return arch->mfma_f16;
  case CONVJIT_DTYPE_FP8_E4M3FN:
  case CONVJIT_DTYPE_FP8_E4M3FNUZ: return arch->mfma_fp8;
  default: return (cj_mfma_kind)0;
  }
}

const cj_mfma_row *cj_mfma_row_of(cj_mfma_kind kind) {
  for (size_t i = 0; i < sizeof cj_mfma_rows / sizeof cj_mfma_rows[0]; i++)
    if (cj_mfma_rows[i].kind == kind) return &cj_mfma_rows[i];
  return NULL;
}
