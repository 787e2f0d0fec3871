/* Test support: MFMA layouts from docs/isa-notes.md §1 (see support_mfma.h). */
#include "support_mfma.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const tmf_kind tmf_kinds[TMF_NKINDS] = {
  [KIND_BF16_K16] = {16, 16, 2, EL_BF16, 0},   [KIND_BF16_K32] = {16, 32, 4, EL_BF16, 0},
  [KIND_FP8_K32] = {16, 32, 2, EL_FP8, 0},     [KIND_F8_K128] = {16, 128, 8, EL_FP8, 1},
  [KIND_F16_K16] = {16, 16, 2, EL_F16, 0},     [KIND_F16_K32] = {16, 32, 4, EL_F16, 0},
  [KIND_BF16_32K8] = {32, 8, 2, EL_BF16, 0},   [KIND_F16_32K8] = {32, 8, 2, EL_F16, 0},
  [KIND_FP8_32K16] = {32, 16, 2, EL_FP8, 0},   [KIND_BF16_32K16] = {32, 16, 4, EL_BF16, 0},
  [KIND_F16_32K16] = {32, 16, 4, EL_F16, 0},   [KIND_F8_32K64] = {32, 64, 8, EL_FP8, 1},
};

int tmf_bits(int kind) { return tmf_kinds[kind].el == EL_FP8 ? 8 : 16; }
int tmf_dregs(int kind) { return tmf_kinds[kind].M * tmf_kinds[kind].M / 64; }

/* Inverse layout: which k sits at (lane, reg, sub); the row is lane % M and
 * g = lane / M. From docs/isa-notes.md §1's table, e.g. "lane 32*(k/8)+i;
 * r=(k%8)/4; byte k%4" holds k = 8g + 4r + byte: in general each lane holds
 * nregs * (32/bits) consecutive k, sub-elements of one register adjacent.
 * f8f6f4: "lane 16*((k%64)/16)+i; r=4*(k/64)+(k%16)/4" (16x16x128) and
 * "lane 32*((k%32)/16)+i; r=4*(k/32)+(k%16)/4" (32x32x64). */
static int k_at(int kind, int lane, int reg, int sub) {
  const tmf_kind *kd = &tmf_kinds[kind];
  int g = lane / kd->M, per = 32 / tmf_bits(kind);
  if (kd->f8f6f4) return (kd->M == 16 ? 64 : 32) * (reg / 4) + 16 * g + 4 * (reg % 4) + sub;
  return kd->nregs * per * g + per * reg + sub;
}

void tmf_pack(int kind, const uint16_t codes[32][128], emu_lanereg *r) {
  const tmf_kind *kd = &tmf_kinds[kind];
  int bits = tmf_bits(kind), per = 32 / bits;
  for (int reg = 0; reg < kd->nregs; reg++)
    for (int lane = 0; lane < 64; lane++) {
      uint32_t v = 0;
      for (int sub = 0; sub < per; sub++)
        v |= (uint32_t)codes[lane % kd->M][k_at(kind, lane, reg, sub)] << (bits * sub);
      r[reg][lane] = v;
    }
}

/* C/D[i][j] in reg r, lane l: 16x16 i = 4*(l/16) + r, j = l % 16 (from
 * "r=i%4; lane 16*(i/4)+j"); 32x32 i = 8*(r/4) + 4*(l/32) + r%4, j = l % 32
 * (from "r=4*(i/8)+i%4; lane 32*((i/4)%2)+j"). */
int tmf_d_row(int M, int reg, int lane) {
  return M == 16 ? 4 * (lane / 16) + reg : 8 * (reg / 4) + 4 * (lane / 32) + reg % 4;
}

void tmf_pack_c(int M, const float c[32][32], emu_lanereg *r) {
  for (int reg = 0; reg < M * M / 64; reg++)
    for (int lane = 0; lane < 64; lane++) memcpy(&r[reg][lane], &c[tmf_d_row(M, reg, lane)][lane % M], 4);
}

void tmf_unpack_d(int M, const emu_lanereg *r, float d[32][32]) {
  for (int reg = 0; reg < M * M / 64; reg++)
    for (int lane = 0; lane < 64; lane++) memcpy(&d[tmf_d_row(M, reg, lane)][lane % M], &r[reg][lane], 4);
}

float tmf_decode(int kind, uint16_t code, cj_nf_fp8 f) {
  switch (tmf_kinds[kind].el) {
    case EL_BF16: return cj_bf16_to_f32(code);
    case EL_F16: return cj_f16_to_f32(code);
    default: return cj_fp8_to_f32((uint8_t)code, f);
  }
}

uint16_t tmf_rand_code(int kind, cj_nf_fp8 f, unsigned *seed) {
  for (;;) {
    unsigned x = (unsigned)rand_r(seed);
    if (tmf_kinds[kind].el == EL_BF16) return cj_f32_to_bf16_rne(((float)(x % 65536) / 8192.0f) - 4.0f);
    if (tmf_kinds[kind].el == EL_F16) {
      if ((x & 0x7C00u) != 0x7C00u) return (uint16_t)x;
      continue;
    }
    if (isfinite(cj_fp8_to_f32((uint8_t)x, f))) return (uint8_t)x;
  }
}

/* Tolerance: mfma.c rounds the exact (double) sum once to f32 per MFMA
 * (<= 2^-24 relative to |D| <= |C| + sum|ab|, twice for a chain); 2^-21
 * leaves room for hardware-like chunked f32 accumulation of K <= 128
 * products while any misplaced element (an O(|ab|) error) still fails. */
int tmf_check_naive(int kind, const uint16_t A[32][128], const uint16_t Bj[32][128], const float C[32][32],
                    const float D[32][32], cj_nf_fp8 fa, cj_nf_fp8 fb, int times, char *msg, size_t n) {
  int K = tmf_kinds[kind].K, M = tmf_kinds[kind].M;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) {
      double s = C[i][j], mag = fabs(C[i][j]);
      for (int k = 0; k < K; k++) {
        double p = (double)tmf_decode(kind, A[i][k], fa) * (double)tmf_decode(kind, Bj[j][k], fb);
        s += times * p;
        mag += times * fabs(p);
      }
      double tol = mag * 0x1p-21;
      if (!(fabs((double)D[i][j] - s) <= tol)) {
        snprintf(msg, n, "kind %d D[%d][%d] = %.9g, naive %.9g (tol %.3g)", kind, i, j, D[i][j], s, tol);
        return -1;
      }
    }
  return 0;
}
