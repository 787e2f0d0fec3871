/* exec_vcvt.c — VALU conversions.
 *
 *  - f32 -> i32/u32 truncate toward zero and saturate; NaN gives 0.
 *  - v_cvt_pk_bf16_f32 (gfx950): two f32 -> two bf16, RNE (numfmt).
 *  - f16: v_cvt_f16_f32 (RNE, f16 denormals kept, past 65504 inf: the mode
 *    LLVM builds convjit's kernels in, round mode 0 and
 *    float_denorm_mode_16_64 = 3), writing bits [31:16] as 0 (gfx9's 16-bit
 *    results); v_cvt_f32_f16 (exact); v_cvt_pk_f16_f32 (gfx950: two f32 ->
 *    {f16(S1), f16(S0)}); v_pack_b32_f16 (D = {S1.f16, S0.f16}: bits, with
 *    neg/abs on each half's sign). A 16-bit source comes from the SDWA
 *    select (WORD_1: the high half), v_pack_b32_f16's from its VOP3 op_sel
 *    bits (llvm-mc-22 takes no op_sel on gfx9's v_cvt_f32_f16); clamp, omod
 *    and a destination op_sel on these are refused.
 *  - v_cvt_pk_fp8_f32 / _bf8_: two f32 -> two 8-bit floats, RNE without
 *    saturation (docs/isa-notes.md §2), into word op_sel[3] of vdst, keeping the other
 *    word. The format is the arch's: gfx942 E4M3FNUZ / E5M2FNUZ, gfx950
 *    OCP E4M3FN / E5M2 (the same opcode means different bits per chip).
 *  - v_cvt_f32_fp8 / _bf8_: the byte comes from the SDWA src0_sel (e32:
 *    byte 0; VOP3: op_sel[1:0] as a byte index); v_cvt_pk_f32_fp8 converts
 *    the word chosen by SDWA WORD_1 / VOP3 op_sel[0] into a register pair.
 */
#include <math.h>
#include <string.h>
#include "emu/emu_internal.h"
#include "util/numfmt.h"

static float f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t u(float x) { uint32_t v; memcpy(&v, &x, 4); return v; }

static uint32_t apply_mod(const emu_operand *o, uint32_t v) {
  if (o->flags & EMU_OPF_ABS) v &= 0x7fffffffu;
  if (o->flags & EMU_OPF_NEG) v ^= 0x80000000u;
  return v;
}

/* neg/abs of an f16 operand act on its sign, bit 15 */
static uint32_t apply_mod16(const emu_operand *o, uint32_t v) {
  v &= 0xffffu;
  if (o->flags & EMU_OPF_ABS) v &= 0x7fffu;
  if (o->flags & EMU_OPF_NEG) v ^= 0x8000u;
  return v;
}

static int is_f16_op(uint16_t op) {
  return op == EMU_OP_V_CVT_F16_F32 || op == EMU_OP_V_CVT_F32_F16 || op == EMU_OP_V_CVT_PK_F16_F32 ||
         op == EMU_OP_V_PACK_B32_F16;
}

static cj_nf_fp8 fmt(const emu_wave *w, int bf8) {
  /* an FNUZ arch (gfx942) has FNUZ bf8 too: E5M2FNUZ beside E4M3FNUZ */
  int fnuz = w->wg->L->arch->fp8 == CJ_FP8_E4M3FNUZ;
  if (bf8) return fnuz ? CJ_NF_E5M2FNUZ : CJ_NF_E5M2;
  return fnuz ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
}

static uint32_t f2u(float x) {
  if (isnan(x) || x <= 0.0f) return 0;
  if (x >= 4294967296.0f) return 0xffffffffu;
  return (uint32_t)x;
}
static uint32_t f2i(float x) {
  if (isnan(x)) return 0;
  if (x >= 2147483648.0f) return 0x7fffffffu;
  if (x <= -2147483648.0f) return 0x80000000u;
  return (uint32_t)(int32_t)x;
}

convjit_status emu_x_vcvt(emu_wave *w, const emu_inst *in) {
  if (in->enc == EMU_ENC_DPP) return emu_fail(w, in, "DPP form of a conversion is not modelled");
  if (in->nops < 2) return emu_fail(w, in, "missing operands");
  const emu_operand *d = &in->o[0], *s = &in->o[1];
  uint32_t *dr = emu_vreg(w, d, 0);
  if (!dr) return emu_fail(w, in, "destination is not a vector register");
  uint16_t op = in->op;
  int pk2 = op == EMU_OP_V_CVT_PK_BF16_F32 || op == EMU_OP_V_CVT_PK_FP8_F32 || op == EMU_OP_V_CVT_PK_BF8_F32 ||
            op == EMU_OP_V_CVT_PK_F16_F32 || op == EMU_OP_V_PACK_B32_F16;
  if (pk2 && in->nops < 3) return emu_fail(w, in, "missing second source");
  if ((op == EMU_OP_V_CVT_PK_F32_FP8 || op == EMU_OP_V_CVT_PK_F32_BF8) && d->count < 2)
    return emu_fail(w, in, "destination must be a register pair");
  int sdwa = in->enc == EMU_ENC_SDWA;
  if (is_f16_op(op) && (in->clamp || in->omod || (in->op_sel & 8)))
    return emu_fail(w, in, "clamp, omod or a destination op_sel on an f16 conversion is not modelled");
  if (sdwa && in->dst_sel != EMU_SEL_DWORD) return emu_fail(w, in, "SDWA dst_sel on a conversion is not modelled");
  unsigned byte_sel = 0, word_sel = 0;
  if (sdwa) {
    if (s->sel >= EMU_SEL_BYTE0 && s->sel <= EMU_SEL_BYTE3) byte_sel = s->sel - EMU_SEL_BYTE0;
    else if (s->sel == EMU_SEL_WORD1) { word_sel = 1; byte_sel = 2; }
  } else if ((in->op_sel & 7) && (op == EMU_OP_V_CVT_F32_FP8 || op == EMU_OP_V_CVT_F32_BF8 ||
                                   op == EMU_OP_V_CVT_PK_F32_FP8 || op == EMU_OP_V_CVT_PK_F32_BF8)) {
    /* LLVM 22 selects bytes/words of these with SDWA; the VOP3 op_sel
     * byte mapping is unverified, so it is not guessed */
    return emu_fail(w, in, "VOP3 op_sel source select on an fp8 conversion is not modelled");
  }
  uint64_t e = w->exec;
  cj_nf_fp8 k8 = fmt(w, op == EMU_OP_V_CVT_PK_BF8_F32 || op == EMU_OP_V_CVT_F32_BF8 || op == EMU_OP_V_CVT_PK_F32_BF8);
  for (; e; e &= e - 1) {
    int l = __builtin_ctzll(e);
    uint32_t a = emu_vread(w, s, 0, (unsigned)l), r;
    if (!pk2 && sdwa && s->sel != EMU_SEL_DWORD && op != EMU_OP_V_CVT_F32_FP8 && op != EMU_OP_V_CVT_F32_BF8 &&
        op != EMU_OP_V_CVT_PK_F32_FP8 && op != EMU_OP_V_CVT_PK_F32_BF8) {
      unsigned sel = s->sel;
      a = sel <= EMU_SEL_BYTE3 ? (a >> (8 * (sel - EMU_SEL_BYTE0))) & 0xff : (a >> (16 * (sel - EMU_SEL_WORD0))) & 0xffff;
    }
    switch (op) {
    case EMU_OP_V_CVT_F32_U32: r = u((float)a); break;
    case EMU_OP_V_CVT_F32_I32: r = u((float)(int32_t)a); break;
    case EMU_OP_V_CVT_U32_F32: r = f2u(f(apply_mod(s, a))); break;
    case EMU_OP_V_CVT_I32_F32: r = f2i(f(apply_mod(s, a))); break;
    case EMU_OP_V_CVT_F32_UBYTE0: case EMU_OP_V_CVT_F32_UBYTE1:
    case EMU_OP_V_CVT_F32_UBYTE2: case EMU_OP_V_CVT_F32_UBYTE3:
      r = u((float)((a >> (8 * (op - EMU_OP_V_CVT_F32_UBYTE0))) & 0xff));
      break;
    case EMU_OP_V_CVT_PK_BF16_F32: {
      uint32_t b = apply_mod(&in->o[2], emu_vread(w, &in->o[2], 0, (unsigned)l));
      r = cj_f32_to_bf16_rne(f(apply_mod(s, a))) | (uint32_t)cj_f32_to_bf16_rne(f(b)) << 16;
      break;
    }
    case EMU_OP_V_CVT_PK_FP8_F32: case EMU_OP_V_CVT_PK_BF8_F32: {
      uint32_t b = apply_mod(&in->o[2], emu_vread(w, &in->o[2], 0, (unsigned)l));
      uint32_t pair = cj_f32_to_fp8_rne(f(apply_mod(s, a)), k8, 0) | (uint32_t)cj_f32_to_fp8_rne(f(b), k8, 0) << 8;
      r = (in->op_sel & 8) ? (dr[l] & 0xffffu) | pair << 16 : (dr[l] & 0xffff0000u) | pair;
      break;
    }
    case EMU_OP_V_CVT_F32_FP8: case EMU_OP_V_CVT_F32_BF8:
      r = u(cj_fp8_to_f32((uint8_t)(a >> (8 * byte_sel)), k8));
      break;
    case EMU_OP_V_CVT_F16_F32: r = cj_f32_to_f16_rne(f(apply_mod(s, a))); break; /* [31:16] = 0 */
    case EMU_OP_V_CVT_F32_F16:
      r = u(cj_f16_to_f32((uint16_t)apply_mod16(s, a)));
      break;
    case EMU_OP_V_CVT_PK_F16_F32: {
      uint32_t b = apply_mod(&in->o[2], emu_vread(w, &in->o[2], 0, (unsigned)l));
      r = cj_f32_to_f16_rne(f(apply_mod(s, a))) | (uint32_t)cj_f32_to_f16_rne(f(b)) << 16;
      break;
    }
    case EMU_OP_V_PACK_B32_F16: {
      uint32_t b = emu_vread(w, &in->o[2], 0, (unsigned)l);
      r = apply_mod16(s, (in->op_sel & 1) ? a >> 16 : a) | apply_mod16(&in->o[2], (in->op_sel & 2) ? b >> 16 : b) << 16;
      break;
    }
    case EMU_OP_V_CVT_PK_F32_FP8: case EMU_OP_V_CVT_PK_F32_BF8: {
      uint32_t h = (a >> (16 * word_sel)) & 0xffff;
      uint32_t *d1 = emu_vreg(w, d, 1);
      dr[l] = u(cj_fp8_to_f32((uint8_t)h, k8));
      d1[l] = u(cj_fp8_to_f32((uint8_t)(h >> 8), k8));
      continue;
    }
    default: return emu_fail(w, in, "conversion without semantics");
    }
    if (in->clamp && (op == EMU_OP_V_CVT_F32_U32 || op == EMU_OP_V_CVT_F32_I32)) {
      float x = f(r);
      r = u(x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x);
    }
    dr[l] = r;
  }
  return CONVJIT_OK;
}
