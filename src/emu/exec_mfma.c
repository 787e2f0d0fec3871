/* exec_mfma.c — the VOP3P-MAI instructions (v_mfma_*): operand shape
 * checks, gathering the A/B/C register tuples, and the cycle and MAC counts;
 * the matrix arithmetic itself is mfma.c's (contract in mfma.h).
 *
 * MFMAs are wave-wide matrix operations: all 64 lanes are computed and
 * written whatever EXEC holds. The fp8 flavour of the one opcode shared by
 * gfx942 and gfx950 (v_mfma_f32_16x16x32_fp8_fp8) is the arch's fp8 format.
 */
#include <string.h>
#include "emu/emu_internal.h"
#include "emu/mfma.h"

/* ---- MFMA ------------------------------------------------------------------------------- */
/* Issue cycles per MFMA (16 for the 16x16 bf16 / gfx942 fp8 ones, 32 for
 * f8f6f4 with fp8 inputs): from the peak dense rates of MI300X/MI355X,
 * see stats.c. */
convjit_status emu_x_mfma(emu_wave *w, const emu_inst *in) {
  if (in->nops != 4) return emu_fail(w, in, "MFMA needs 4 operands");
  const emu_operand *od = &in->o[0], *oa = &in->o[1], *ob = &in->o[2], *oc = &in->o[3];
  unsigned na, dregs = 4;
  uint32_t k;
  switch (in->op) {
  case EMU_OP_V_MFMA_F32_16X16X16_BF16: na = 2; k = 16; break;
  case EMU_OP_V_MFMA_F32_16X16X32_BF16: na = 4; k = 32; break;
  case EMU_OP_V_MFMA_F32_16X16X32_FP8_FP8: na = 2; k = 32; break;
  case EMU_OP_V_MFMA_F32_16X16X128_F8F6F4: na = 8; k = 128; break;
  default: return emu_fail(w, in, "MFMA opcode without semantics");
  }
  if (in->op == EMU_OP_V_MFMA_F32_16X16X128_F8F6F4) {
    /* FP6/FP4 read fewer registers (6/4) */
    unsigned fa = in->cbsz, fb = in->blgp;
    unsigned ra = fa <= 1 ? 8 : fa <= 3 ? 6 : 4, rb = fb <= 1 ? 8 : fb <= 3 ? 6 : 4;
    if (oa->count < ra || ob->count < rb) return emu_fail(w, in, "MFMA source tuples too short for cbsz/blgp");
  } else if (oa->count != na || ob->count != na) {
    return emu_fail(w, in, "MFMA source tuples have %u/%u registers, expected %u", oa->count, ob->count, na);
  }
  if (in->op != EMU_OP_V_MFMA_F32_16X16X128_F8F6F4 && (in->cbsz || in->abid || in->blgp))
    return emu_fail(w, in, "cbsz/abid/blgp broadcast is not modelled");
  if (in->abid && in->op == EMU_OP_V_MFMA_F32_16X16X128_F8F6F4)
    return emu_fail(w, in, "scaled MFMA (abid) is not modelled");
  if (od->count != dregs || (od->kind != EMU_OPK_VGPR && od->kind != EMU_OPK_AGPR))
    return emu_fail(w, in, "MFMA destination must be 4 VGPRs or AGPRs");
  if ((oa->kind != EMU_OPK_VGPR && oa->kind != EMU_OPK_AGPR) || (ob->kind != EMU_OPK_VGPR && ob->kind != EMU_OPK_AGPR))
    return emu_fail(w, in, "MFMA A/B operands must be registers");
  emu_lanereg a[8], b[8], c[4], d[4];
  for (unsigned r = 0; r < oa->count && r < 8; r++) memcpy(a[r], emu_vreg(w, oa, r), sizeof a[r]);
  for (unsigned r = 0; r < ob->count && r < 8; r++) memcpy(b[r], emu_vreg(w, ob, r), sizeof b[r]);
  if (oc->kind == EMU_OPK_VGPR || oc->kind == EMU_OPK_AGPR) {
    if (oc->count != 4) return emu_fail(w, in, "MFMA accumulator must be 4 registers");
    for (unsigned r = 0; r < 4; r++) memcpy(c[r], emu_vreg(w, oc, r), sizeof c[r]);
  } else if (oc->kind == EMU_OPK_IMM) {
    for (unsigned r = 0; r < 4; r++) for (int l = 0; l < 64; l++) c[r][l] = oc->imm32;
  } else {
    return emu_fail(w, in, "MFMA accumulator operand kind not supported");
  }
  uint32_t cyc = 16;
  switch (in->op) {
  case EMU_OP_V_MFMA_F32_16X16X16_BF16: emu_mfma_f32_16x16x16_bf16(a, b, c, d); break;
  case EMU_OP_V_MFMA_F32_16X16X32_BF16: emu_mfma_f32_16x16x32_bf16(a, b, c, d); break;
  case EMU_OP_V_MFMA_F32_16X16X32_FP8_FP8:
    emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, w->wg->L->arch->fp8 == CJ_FP8_E4M3FNUZ);
    break;
  default:
    if (emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, in->cbsz, in->blgp) != 0)
      return emu_fail(w, in, "f8f6f4 formats cbsz=%u blgp=%u are not modelled (only fp8/bf8)", in->cbsz, in->blgp);
    cyc = 32;
  }
  /* MFMAs are wave-wide matrix operations: all 64 lanes are computed and
   * written whatever EXEC holds (CDNA4 documents this for f8f6f4; the
   * emulator applies it to every MFMA, docs/emulator.md). */
  for (unsigned r = 0; r < 4; r++) memcpy(emu_vreg(w, od, r), d[r], sizeof d[r]);
  w->cycles += cyc;
  w->mfma_macs += 16ull * 16 * k;
  return CONVJIT_OK;
}
