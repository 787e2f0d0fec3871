/* exec_mfma.c — the VOP3P-MAI instructions (v_mfma_*): operand shape
 * checks, gathering the A/B/C register tuples, and the cycle and MAC counts;
 * the matrix arithmetic itself is mfma.c's (contract in mfma.h).
 *
 * MFMAs are wave-wide matrix operations: all 64 lanes are computed and
 * written whatever EXEC holds. The fp8/bf8 opcodes shared by gfx942 and
 * gfx950 read the arch's formats: fp8 = E4M3FNUZ, bf8 = E5M2FNUZ on gfx942,
 * OCP E4M3FN / E5M2 on gfx950 (docs/isa-notes.md §2).
 */
#include <string.h>
#include "emu/emu_internal.h"
#include "emu/mfma.h"

/* ---- MFMA ------------------------------------------------------------------------------- */
/* Operand format of a table row: a fixed 16-bit format, the arch's fp8 or
 * bf8, or f8f6f4's cbsz/blgp selector. */
enum { MF_BF16, MF_F16, MF_FP8, MF_BF8, MF_SEL };

/* One row per opcode: M (M x M output, M*M/64 D registers), K, A/B
 * registers, the A and B formats, and issue cycles. Cycles: 16 for every
 * 16x16 shape (8 more MACs per cycle on gfx950's K-doubled ones) and 32 for
 * f8f6f4 with fp8/bf8 inputs — from the peak dense rates of MI300X/MI355X,
 * see stats.c; a 32x32 shape does 2x the MACs of its 16x16 sibling (same
 * registers per lane) at the same MAC rate, so twice its cycles. */
typedef struct mfma_shape {
  uint16_t op; /* EMU_OP_* */
  uint8_t m, regs, fa, fb, cycles;
  uint16_t k;
} mfma_shape;

static const mfma_shape k_shapes[] = {
    {EMU_OP_V_MFMA_F32_16X16X16_BF16, 16, 2, MF_BF16, MF_BF16, 16, 16},
    {EMU_OP_V_MFMA_F32_16X16X16_F16, 16, 2, MF_F16, MF_F16, 16, 16},
    {EMU_OP_V_MFMA_F32_32X32X8_BF16, 32, 2, MF_BF16, MF_BF16, 32, 8},
    {EMU_OP_V_MFMA_F32_32X32X8_F16, 32, 2, MF_F16, MF_F16, 32, 8},
    {EMU_OP_V_MFMA_F32_16X16X32_FP8_FP8, 16, 2, MF_FP8, MF_FP8, 16, 32},
    {EMU_OP_V_MFMA_F32_16X16X32_FP8_BF8, 16, 2, MF_FP8, MF_BF8, 16, 32},
    {EMU_OP_V_MFMA_F32_16X16X32_BF8_FP8, 16, 2, MF_BF8, MF_FP8, 16, 32},
    {EMU_OP_V_MFMA_F32_16X16X32_BF8_BF8, 16, 2, MF_BF8, MF_BF8, 16, 32},
    {EMU_OP_V_MFMA_F32_32X32X16_FP8_FP8, 32, 2, MF_FP8, MF_FP8, 32, 16},
    {EMU_OP_V_MFMA_F32_32X32X16_FP8_BF8, 32, 2, MF_FP8, MF_BF8, 32, 16},
    {EMU_OP_V_MFMA_F32_32X32X16_BF8_FP8, 32, 2, MF_BF8, MF_FP8, 32, 16},
    {EMU_OP_V_MFMA_F32_32X32X16_BF8_BF8, 32, 2, MF_BF8, MF_BF8, 32, 16},
    /* gfx950 */
    {EMU_OP_V_MFMA_F32_16X16X32_BF16, 16, 4, MF_BF16, MF_BF16, 16, 32},
    {EMU_OP_V_MFMA_F32_16X16X32_F16, 16, 4, MF_F16, MF_F16, 16, 32},
    {EMU_OP_V_MFMA_F32_32X32X16_BF16, 32, 4, MF_BF16, MF_BF16, 32, 16},
    {EMU_OP_V_MFMA_F32_32X32X16_F16, 32, 4, MF_F16, MF_F16, 32, 16},
    {EMU_OP_V_MFMA_F32_16X16X128_F8F6F4, 16, 8, MF_SEL, MF_SEL, 32, 128},
    {EMU_OP_V_MFMA_F32_32X32X64_F8F6F4, 32, 8, MF_SEL, MF_SEL, 64, 64},
};

static const mfma_shape *shape_of(unsigned op) {
  for (size_t i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++)
    if (k_shapes[i].op == op) return &k_shapes[i];
  return NULL;
}

uint32_t emu_mfma_cycles(uint16_t op) {
  const mfma_shape *sh = shape_of(op);
  return sh ? sh->cycles : 0;
}

/* f8f6f4 registers read per format selector: 8 (fp8/bf8), 6 (FP6), 4 (FP4) */
static unsigned f8f6f4_regs(unsigned sel) { return sel <= 1 ? 8 : sel <= 3 ? 6 : 4; }

static emu_mfma_fmt operand_fmt(unsigned f, int fnuz) {
  switch (f) {
  case MF_BF16: return EMU_MFMA_BF16;
  case MF_F16: return EMU_MFMA_F16;
  case MF_FP8: return fnuz ? EMU_MFMA_E4M3FNUZ : EMU_MFMA_E4M3FN;
  default: return fnuz ? EMU_MFMA_E5M2FNUZ : EMU_MFMA_E5M2;
  }
}

convjit_status emu_x_mfma(emu_wave *w, const emu_inst *in) {
  if (in->nops != 4) return emu_fail(w, in, "MFMA needs 4 operands");
  const emu_operand *od = &in->o[0], *oa = &in->o[1], *ob = &in->o[2], *oc = &in->o[3];
  const mfma_shape *sh = shape_of(in->op);
  if (!sh) return emu_fail(w, in, "MFMA opcode without semantics");
  const unsigned dregs = (unsigned)sh->m * sh->m / 64u;
  const int sel = sh->fa == MF_SEL;
  if (sel) {
    /* FP6/FP4 read fewer registers (6/4) */
    if (oa->count < f8f6f4_regs(in->cbsz) || ob->count < f8f6f4_regs(in->blgp))
      return emu_fail(w, in, "MFMA source tuples too short for cbsz/blgp");
    if (in->abid) return emu_fail(w, in, "scaled MFMA (abid) is not modelled");
  } else {
    if (oa->count != sh->regs || ob->count != sh->regs)
      return emu_fail(w, in, "MFMA source tuples have %u/%u registers, expected %u", oa->count, ob->count, sh->regs);
    if (in->cbsz || in->abid || in->blgp) return emu_fail(w, in, "cbsz/abid/blgp broadcast is not modelled");
  }
  if (od->count != dregs || (od->kind != EMU_OPK_VGPR && od->kind != EMU_OPK_AGPR))
    return emu_fail(w, in, "MFMA destination must be %u VGPRs or AGPRs", dregs);
  if ((oa->kind != EMU_OPK_VGPR && oa->kind != EMU_OPK_AGPR) || (ob->kind != EMU_OPK_VGPR && ob->kind != EMU_OPK_AGPR))
    return emu_fail(w, in, "MFMA A/B operands must be registers");
  emu_lanereg a[8], b[8], c[16], d[16];
  for (unsigned r = 0; r < oa->count && r < 8; r++) memcpy(a[r], emu_vreg(w, oa, r), sizeof a[r]);
  for (unsigned r = 0; r < ob->count && r < 8; r++) memcpy(b[r], emu_vreg(w, ob, r), sizeof b[r]);
  if (oc->kind == EMU_OPK_VGPR || oc->kind == EMU_OPK_AGPR) {
    if (oc->count != dregs) return emu_fail(w, in, "MFMA accumulator must be %u registers", dregs);
    for (unsigned r = 0; r < dregs; r++) memcpy(c[r], emu_vreg(w, oc, r), sizeof c[r]);
  } else if (oc->kind == EMU_OPK_IMM) {
    for (unsigned r = 0; r < dregs; r++) for (int l = 0; l < 64; l++) c[r][l] = oc->imm32;
  } else {
    return emu_fail(w, in, "MFMA accumulator operand kind not supported");
  }
  if (sel) {
    int rc = sh->m == 16 ? emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, in->cbsz, in->blgp)
                         : emu_mfma_f32_32x32x64_f8f6f4(a, b, c, d, in->cbsz, in->blgp);
    if (rc != 0)
      return emu_fail(w, in, "f8f6f4 formats cbsz=%u blgp=%u are not modelled (only fp8/bf8)", in->cbsz, in->blgp);
  } else {
    int fnuz = w->wg->L->arch->fp8 == CJ_FP8_E4M3FNUZ;
    if (emu_mfma_f32(a, b, c, d, sh->m, sh->k, operand_fmt(sh->fa, fnuz), operand_fmt(sh->fb, fnuz)) != 0)
      return emu_fail(w, in, "MFMA shape without semantics"); /* a table row mfma.c refuses */
  }
  /* MFMAs are wave-wide matrix operations: all 64 lanes are computed and
   * written whatever EXEC holds (CDNA4 documents this for f8f6f4; the
   * emulator applies it to every MFMA, docs/emulator.md). */
  for (unsigned r = 0; r < dregs; r++) memcpy(emu_vreg(w, od, r), d[r], sizeof d[r]);
  w->cycles += sh->cycles;
  w->mfma_macs += (uint64_t)sh->m * sh->m * sh->k;
  return CONVJIT_OK;
}
