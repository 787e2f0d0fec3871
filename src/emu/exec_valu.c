/* exec_valu.c — the vector ALU: integer/bit ops, 64-bit ops, carry chains,
 * f32 arithmetic (with the f32 division macro's scale/fmas/fixup), compares
 * (VCC/EXEC), lane ops and AGPR moves. Operand access is wave.c's; MFMA is
 * exec_mfma.c's.
 *
 * Rules applied to every VALU instruction here:
 *  - only lanes in EXEC are written;
 *  - VOPC / carry-out masks have 0 for lanes outside EXEC;
 *  - SDWA: source selects (byte/word, zero- or sign-extended with sext())
 *    and dst_sel / dst_unused on the result; DPP: the source-0 lane
 *    permutation, row_mask/bank_mask disable writes, an invalid source
 *    lane reads 0 with bound_ctrl and disables the write otherwise;
 *  - VOP3 float modifiers: abs then neg on sources (sign-bit operations),
 *    omod then clamp on results. f32 denormals are kept (IEEE).
 */
#include <math.h>
#include <string.h>
#include "emu/emu_internal.h"

/* ---- SDWA / DPP / modifiers ---------------------------------------------------------- */
static uint32_t sdwa_sel(uint32_t v, unsigned sel, int sext) {
  switch (sel) {
  case EMU_SEL_BYTE0: case EMU_SEL_BYTE1: case EMU_SEL_BYTE2: case EMU_SEL_BYTE3: {
    uint32_t b = (v >> (8 * (sel - EMU_SEL_BYTE0))) & 0xff;
    return sext ? (uint32_t)(int32_t)(int8_t)b : b;
  }
  case EMU_SEL_WORD0: case EMU_SEL_WORD1: {
    uint32_t h = (v >> (16 * (sel - EMU_SEL_WORD0))) & 0xffff;
    return sext ? (uint32_t)(int32_t)(int16_t)h : h;
  }
  default: return v;
  }
}

/* Source lane that DPP reads for lane l, or -1 (invalid). */
static int dpp_src_lane(const emu_inst *in, int l) {
  int row = l & ~15, r = l & 15, v = in->dpp_val, s;
  switch (in->dpp_ctrl) {
  case EMU_DPP_QUAD_PERM: return (l & ~3) | ((v >> (2 * (l & 3))) & 3);
  case EMU_DPP_ROW_SHL: s = r + v; return s < 16 ? row + s : -1;
  case EMU_DPP_ROW_SHR: s = r - v; return s >= 0 ? row + s : -1;
  case EMU_DPP_ROW_ROR: return row + ((r - v) & 15);
  case EMU_DPP_WAVE_SHL: return l + 1 < 64 ? l + 1 : -1;
  case EMU_DPP_WAVE_ROL: return (l + 1) & 63;
  case EMU_DPP_WAVE_SHR: return l - 1 >= 0 ? l - 1 : -1;
  case EMU_DPP_WAVE_ROR: return (l - 1) & 63;
  case EMU_DPP_ROW_MIRROR: return row + (15 - r);
  case EMU_DPP_ROW_HALF_MIRROR: return (l & ~7) + (7 - (l & 7));
  case EMU_DPP_ROW_BCAST15: return row >= 16 ? row - 1 : -1; /* last lane of the previous row */
  case EMU_DPP_ROW_BCAST31: return l >= 32 ? 31 : -1;
  default: return l;
  }
}

/* Reads source operand idx for all lanes, with SDWA select and, for the
 * first source of a DPP instruction, the lane permutation. Float modifiers
 * (abs, neg) are applied as sign-bit operations. *wmask gets the lanes DPP
 * allows to be written (all if not DPP). */
static void load_src(const emu_wave *w, const emu_inst *in, unsigned idx, uint32_t out[64], uint64_t *wmask) {
  const emu_operand *o = &in->o[idx];
  emu_vread_all(w, o, 0, out);
  if (in->enc == EMU_ENC_DPP && idx == in->ndst && wmask) {
    uint32_t tmp[64];
    uint64_t m = 0;
    memcpy(tmp, out, sizeof tmp);
    for (int l = 0; l < 64; l++) {
      int s = dpp_src_lane(in, l);
      int rowen = (in->row_mask >> (l >> 4)) & 1, banken = (in->bank_mask >> ((l >> 2) & 3)) & 1;
      if (s < 0 || !((w->exec >> s) & 1)) {
        out[l] = 0;
        if (in->bound_ctrl && rowen && banken) m |= 1ull << l;
      } else {
        out[l] = tmp[s];
        if (rowen && banken) m |= 1ull << l;
      }
    }
    *wmask = m;
  }
  if (in->enc == EMU_ENC_SDWA && o->sel != EMU_SEL_DWORD)
    for (int l = 0; l < 64; l++) out[l] = sdwa_sel(out[l], o->sel, (o->flags & EMU_OPF_SEXT) != 0);
  if (o->flags & (EMU_OPF_ABS | EMU_OPF_NEG)) {
    uint32_t andm = (o->flags & EMU_OPF_ABS) ? 0x7fffffffu : ~0u, xorm = (o->flags & EMU_OPF_NEG) ? 0x80000000u : 0;
    for (int l = 0; l < 64; l++) out[l] = (out[l] & andm) ^ xorm;
  }
}

/* Writes a 32-bit result with the SDWA destination select and the DPP mask. */
static void store_dst(emu_wave *w, const emu_inst *in, const uint32_t val[64], uint64_t wmask) {
  const emu_operand *d = &in->o[0];
  uint32_t *r = emu_vreg(w, d, 0);
  if (!r) return;
  uint64_t e = w->exec & wmask;
  if (in->enc == EMU_ENC_SDWA && in->dst_sel != EMU_SEL_DWORD) {
    unsigned sel = in->dst_sel;
    int byte = sel <= EMU_SEL_BYTE3;
    unsigned sh = byte ? 8 * (sel - EMU_SEL_BYTE0) : 16 * (sel - EMU_SEL_WORD0);
    uint32_t fm = (byte ? 0xffu : 0xffffu) << sh;
    for (int l = 0; l < 64; l++) {
      if (!((e >> l) & 1)) continue;
      uint32_t f = (val[l] << sh) & fm, o;
      if (in->dst_unused == EMU_UNUSED_PRESERVE) o = (r[l] & ~fm) | f;
      else if (in->dst_unused == EMU_UNUSED_SEXT) {
        uint32_t top = (f >> sh) & (byte ? 0x80u : 0x8000u);
        o = f | (top ? ~(fm | ((1u << sh) - 1)) : 0);
      } else o = f;
      r[l] = o;
    }
    return;
  }
  if (e == ~0ull) { memcpy(r, val, 256); return; }
  for (; e; e &= e - 1) { int l = __builtin_ctzll(e); r[l] = val[l]; }
}

/* ---- integer VALU ---------------------------------------------------------------------- */
static uint32_t perm_byte(uint64_t in, uint32_t sel) {
  sel &= 0xff;
  if (sel >= 13) return 0xff;
  if (sel == 12) return 0;
  if (sel >= 8) { /* sign of byte 1, 3, 5, 7, replicated */
    unsigned b = 2 * (sel - 8) + 1;
    return ((in >> (8 * b + 7)) & 1) ? 0xff : 0;
  }
  return (uint32_t)(in >> (8 * sel)) & 0xff;
}

static uint32_t brev32(uint32_t x) {
  x = (x >> 1 & 0x55555555u) | (x & 0x55555555u) << 1;
  x = (x >> 2 & 0x33333333u) | (x & 0x33333333u) << 2;
  x = (x >> 4 & 0x0f0f0f0fu) | (x & 0x0f0f0f0fu) << 4;
  return __builtin_bswap32(x);
}

static uint32_t med3u(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t mx = a > b ? a : b, mn = a < b ? a : b;
  return c > mx ? mx : c < mn ? mn : c;
}
static int32_t med3i(int32_t a, int32_t b, int32_t c) {
  int32_t mx = a > b ? a : b, mn = a < b ? a : b;
  return c > mx ? mx : c < mn ? mn : c;
}

convjit_status emu_x_valu(emu_wave *w, const emu_inst *in) {
  uint32_t s0[64], s1[64], s2[64], r[64];
  uint64_t wmask = ~0ull;
  unsigned ns = in->nops > in->ndst ? in->nops - in->ndst : 0;
  uint16_t op = in->op;
  if (in->nops < 2) return emu_fail(w, in, "missing operands");
  load_src(w, in, 1, s0, &wmask);
  if (ns >= 2) load_src(w, in, 2, s1, NULL);
  if (ns >= 3) load_src(w, in, 3, s2, NULL);
  /* 16-bit operands of VOP3 may select the high half with op_sel */
  if (op == EMU_OP_V_MAD_U32_U16) {
    for (int l = 0; l < 64; l++) {
      s0[l] = (in->op_sel & 1) ? s0[l] >> 16 : s0[l] & 0xffff;
      s1[l] = (in->op_sel & 2) ? s1[l] >> 16 : s1[l] & 0xffff;
    }
  }
  if (ns < 2 && !(op == EMU_OP_V_MOV_B32 || op == EMU_OP_V_NOT_B32 || op == EMU_OP_V_BFREV_B32 ||
                  op == EMU_OP_V_FFBH_U32 || op == EMU_OP_V_FFBL_B32 || op == EMU_OP_V_ACCVGPR_READ_B32 ||
                  op == EMU_OP_V_ACCVGPR_WRITE_B32 || op == EMU_OP_V_ACCVGPR_MOV_B32))
    return emu_fail(w, in, "missing source operand");
  if (ns < 3 && (op == EMU_OP_V_CNDMASK_B32 || op == EMU_OP_V_BFE_U32 || op == EMU_OP_V_BFE_I32 ||
                 op == EMU_OP_V_BFI_B32 || op == EMU_OP_V_ALIGNBIT_B32 || op == EMU_OP_V_ALIGNBYTE_B32 ||
                 op == EMU_OP_V_PERM_B32 || op == EMU_OP_V_BITOP3_B32 || op == EMU_OP_V_BITOP3_B16 ||
                 op == EMU_OP_V_LSHL_ADD_U32 || op == EMU_OP_V_ADD_LSHL_U32 ||
                 op == EMU_OP_V_LSHL_OR_B32 || op == EMU_OP_V_AND_OR_B32 || op == EMU_OP_V_OR3_B32 ||
                 op == EMU_OP_V_XAD_U32 || op == EMU_OP_V_ADD3_U32 || op == EMU_OP_V_MAD_U32_U16 ||
                 op == EMU_OP_V_MAD_LEGACY_U16 ||
                 op == EMU_OP_V_MAD_U32_U24 || op == EMU_OP_V_MAD_I32_I24 || (op >= EMU_OP_V_MIN3_U32 && op <= EMU_OP_V_MED3_U32)))
    return emu_fail(w, in, "missing source operand");
  if (op == EMU_OP_V_MAD_LEGACY_U16 && in->op_sel)
    return emu_fail(w, in, "op_sel on v_mad_legacy_u16 is not modelled (LLVM 22 does not emit it on gfx9)");
  if ((in->op_sel & 8) && in->enc == EMU_ENC_E64)
    return emu_fail(w, in, "op_sel destination high half is not modelled");
  uint64_t mask = 0;
  if (op == EMU_OP_V_CNDMASK_B32) mask = emu_sread64(w, &in->o[3]);
  /* Fast paths: the common ops with the switch outside the lane loop. */
  if (ns < 2) memset(s1, 0, sizeof s1);
  if (ns < 3) memset(s2, 0, sizeof s2);
#define LANES(expr)                                              \
  do {                                                           \
    for (int l = 0; l < 64; l++) {                               \
      uint32_t a = s0[l], b = s1[l], c = s2[l];                  \
      (void)a; (void)b; (void)c;                                 \
      r[l] = (expr);                                             \
    }                                                            \
    goto done;                                                   \
  } while (0)
  switch (op) {
  case EMU_OP_V_MOV_B32: case EMU_OP_V_ACCVGPR_READ_B32: case EMU_OP_V_ACCVGPR_WRITE_B32:
  case EMU_OP_V_ACCVGPR_MOV_B32: LANES(a);
  case EMU_OP_V_ADD_U32: if (!in->clamp) LANES(a + b); break;
  case EMU_OP_V_SUB_U32: if (!in->clamp) LANES(a - b); break;
  case EMU_OP_V_AND_B32: LANES(a & b);
  case EMU_OP_V_OR_B32: LANES(a | b);
  case EMU_OP_V_XOR_B32: LANES(a ^ b);
  case EMU_OP_V_LSHLREV_B32: LANES(b << (a & 31));
  case EMU_OP_V_LSHRREV_B32: LANES(b >> (a & 31));
  case EMU_OP_V_MUL_LO_U32: LANES(a * b);
  case EMU_OP_V_MUL_U32_U24: LANES((a & 0xffffff) * (b & 0xffffff));
  case EMU_OP_V_LSHL_ADD_U32: LANES((a << (b & 31)) + c);
  case EMU_OP_V_LSHL_OR_B32: LANES((a << (b & 31)) | c);
  case EMU_OP_V_AND_OR_B32: LANES((a & b) | c);
  case EMU_OP_V_OR3_B32: LANES(a | b | c);
  case EMU_OP_V_ADD3_U32: LANES(a + b + c);
  case EMU_OP_V_CNDMASK_B32: LANES(((mask >> l) & 1) ? b : a);
  default: break;
  }
#undef LANES
  for (int l = 0; l < 64; l++) {
    uint32_t a = s0[l], b = ns >= 2 ? s1[l] : 0, c = ns >= 3 ? s2[l] : 0, x;
    switch (op) {
    case EMU_OP_V_MOV_B32: case EMU_OP_V_ACCVGPR_READ_B32: case EMU_OP_V_ACCVGPR_WRITE_B32:
    case EMU_OP_V_ACCVGPR_MOV_B32: x = a; break;
    case EMU_OP_V_NOT_B32: x = ~a; break;
    case EMU_OP_V_BFREV_B32: x = brev32(a); break;
    case EMU_OP_V_FFBH_U32: x = a ? (uint32_t)__builtin_clz(a) : 0xffffffffu; break;
    case EMU_OP_V_FFBL_B32: x = a ? (uint32_t)__builtin_ctz(a) : 0xffffffffu; break;
    /* clamp on unsigned add/sub saturates at 0xffffffff / 0 */
    case EMU_OP_V_ADD_U32: x = a + b; if (in->clamp && x < a) x = 0xffffffffu; break;
    case EMU_OP_V_SUB_U32: x = a - b; if (in->clamp && b > a) x = 0; break;
    case EMU_OP_V_SUBREV_U32: x = b - a; if (in->clamp && a > b) x = 0; break;
    case EMU_OP_V_MUL_LO_U32: x = a * b; break;
    case EMU_OP_V_MUL_HI_U32: x = (uint32_t)(((uint64_t)a * b) >> 32); break;
    case EMU_OP_V_MUL_HI_I32: x = (uint32_t)((uint64_t)((int64_t)(int32_t)a * (int32_t)b) >> 32); break;
    case EMU_OP_V_MUL_U32_U24: x = (a & 0xffffff) * (b & 0xffffff); break;
    case EMU_OP_V_MUL_I32_I24:
      x = (uint32_t)((((int32_t)(a << 8)) >> 8) * (((int32_t)(b << 8)) >> 8)); break;
    case EMU_OP_V_MUL_HI_U32_U24: x = (uint32_t)(((uint64_t)(a & 0xffffff) * (b & 0xffffff)) >> 32); break;
    case EMU_OP_V_MAD_U32_U24: x = (a & 0xffffff) * (b & 0xffffff) + c; break;
    case EMU_OP_V_MAD_I32_I24:
      x = (uint32_t)((((int32_t)(a << 8)) >> 8) * (((int32_t)(b << 8)) >> 8)) + c; break;
    case EMU_OP_V_MUL_HI_I32_I24:
      x = (uint32_t)((uint64_t)((int64_t)(((int32_t)(a << 8)) >> 8) * (((int32_t)(b << 8)) >> 8)) >> 32); break;
    case EMU_OP_V_ADD_I32: case EMU_OP_V_SUB_I32: {
      int64_t t = op == EMU_OP_V_ADD_I32 ? (int64_t)(int32_t)a + (int32_t)b : (int64_t)(int32_t)a - (int32_t)b;
      if (in->clamp) t = t > INT32_MAX ? INT32_MAX : t < INT32_MIN ? INT32_MIN : t; /* clamp = saturate */
      x = (uint32_t)t;
      break;
    }
    case EMU_OP_V_AND_B32: x = a & b; break;
    case EMU_OP_V_OR_B32: x = a | b; break;
    case EMU_OP_V_XOR_B32: x = a ^ b; break;
    case EMU_OP_V_XNOR_B32: x = ~(a ^ b); break;
    case EMU_OP_V_LSHLREV_B32: x = b << (a & 31); break;
    case EMU_OP_V_LSHRREV_B32: x = b >> (a & 31); break;
    case EMU_OP_V_ASHRREV_I32: x = (uint32_t)((int32_t)b >> (a & 31)); break;
    case EMU_OP_V_LSHLREV_B16: x = (uint32_t)(uint16_t)(b << (a & 15)); break;
    case EMU_OP_V_LSHRREV_B16: x = (uint32_t)((b & 0xffff) >> (a & 15)); break;
    /* CDNA3/CDNA4 guides, V_ASHRREV_I16: D.i16 = S1.i16 >> S0[3:0] */
    case EMU_OP_V_ASHRREV_I16: x = (uint32_t)(uint16_t)((int16_t)(uint16_t)b >> (a & 15)); break;
    /* 16-bit ops: gfx9 writes zeros to bits [31:16] (SDWA aside) */
    case EMU_OP_V_ADD_U16: x = (a + b) & 0xffff; break;
    case EMU_OP_V_SUB_U16: x = (a - b) & 0xffff; break;
    case EMU_OP_V_SUBREV_U16: x = (b - a) & 0xffff; break;
    case EMU_OP_V_MUL_LO_U16: x = (a * b) & 0xffff; break;
    case EMU_OP_V_MIN_U16: x = (a & 0xffff) < (b & 0xffff) ? a & 0xffff : b & 0xffff; break;
    case EMU_OP_V_MAX_U16: x = (a & 0xffff) > (b & 0xffff) ? a & 0xffff : b & 0xffff; break;
    case EMU_OP_V_MIN_U32: x = a < b ? a : b; break;
    case EMU_OP_V_MAX_U32: x = a > b ? a : b; break;
    case EMU_OP_V_MIN_I32: x = (int32_t)a < (int32_t)b ? a : b; break;
    case EMU_OP_V_MAX_I32: x = (int32_t)a > (int32_t)b ? a : b; break;
    case EMU_OP_V_BFE_U32: { uint32_t wd = c & 31; x = wd ? (b & 31) + wd >= 32 ? a >> (b & 31) : (a >> (b & 31)) & ((1u << wd) - 1) : 0; break; }
    case EMU_OP_V_BFE_I32: {
      uint32_t wd = c & 31, off = b & 31;
      if (!wd) { x = 0; break; }
      if (off + wd >= 32) { x = (uint32_t)((int32_t)a >> off); break; }
      x = (uint32_t)(((int32_t)((a >> off) << (32 - wd))) >> (32 - wd));
      break;
    }
    case EMU_OP_V_BFI_B32: x = (a & b) | (~a & c); break;
    case EMU_OP_V_BFM_B32: x = ((1u << (a & 31)) - 1) << (b & 31); break;
    case EMU_OP_V_ALIGNBIT_B32: x = (uint32_t)((((uint64_t)a << 32) | b) >> (c & 31)); break;
    case EMU_OP_V_ALIGNBYTE_B32: x = (uint32_t)((((uint64_t)a << 32) | b) >> (8 * (c & 3))); break;
    case EMU_OP_V_PERM_B32: {
      uint64_t cat = ((uint64_t)a << 32) | b;
      x = perm_byte(cat, c) | perm_byte(cat, c >> 8) << 8 | perm_byte(cat, c >> 16) << 16 | perm_byte(cat, c >> 24) << 24;
      break;
    }
    case EMU_OP_V_BITOP3_B32: case EMU_OP_V_BITOP3_B16: {
      /* each result bit = table bit at index (s0 << 2 | s1 << 1 | s2) */
      uint32_t tt = (uint32_t)in->simm;
      x = 0;
      for (unsigned m = 0; m < 8; m++) /* OR of the minterms the table selects */
        if ((tt >> m) & 1) x |= ((m & 4) ? a : ~a) & ((m & 2) ? b : ~b) & ((m & 1) ? c : ~c);
      if (op == EMU_OP_V_BITOP3_B16) x &= 0xffff;
      break;
    }
    case EMU_OP_V_LSHL_ADD_U32: x = (a << (b & 31)) + c; break;
    case EMU_OP_V_ADD_LSHL_U32: x = (a + b) << (c & 31); break;
    case EMU_OP_V_LSHL_OR_B32: x = (a << (b & 31)) | c; break;
    case EMU_OP_V_AND_OR_B32: x = (a & b) | c; break;
    case EMU_OP_V_OR3_B32: x = a | b | c; break;
    case EMU_OP_V_XAD_U32: x = (a ^ b) + c; break;
    case EMU_OP_V_ADD3_U32: x = a + b + c; break;
    case EMU_OP_V_MAD_U32_U16: x = a * b + c; break;
    /* CDNA3/CDNA4 ISA, V_MAD_LEGACY_U16 (VOP3 491): tmp = S0.u16 * S1.u16 +
     * S2.u16; with OPSEL[3] = 0 (the only form LLVM 22 assembles on gfx9)
     * D = {16'0, tmp.u16}: the high half is written 0, where V_MAD_U16 (516)
     * keeps it. clamp saturates in the unsigned 16-bit domain. */
    case EMU_OP_V_MAD_LEGACY_U16: {
      uint32_t t = (a & 0xffff) * (b & 0xffff) + (c & 0xffff);
      x = in->clamp && t > 0xffff ? 0xffff : t & 0xffff;
      break;
    }
    case EMU_OP_V_MIN3_U32: x = a < b ? a : b; x = x < c ? x : c; break;
    case EMU_OP_V_MAX3_U32: x = a > b ? a : b; x = x > c ? x : c; break;
    case EMU_OP_V_MIN3_I32: x = (int32_t)a < (int32_t)b ? a : b; x = (int32_t)x < (int32_t)c ? x : c; break;
    case EMU_OP_V_MAX3_I32: x = (int32_t)a > (int32_t)b ? a : b; x = (int32_t)x > (int32_t)c ? x : c; break;
    case EMU_OP_V_MED3_I32: x = (uint32_t)med3i((int32_t)a, (int32_t)b, (int32_t)c); break;
    case EMU_OP_V_MED3_U32: x = med3u(a, b, c); break;
    case EMU_OP_V_BCNT_U32_B32: x = (uint32_t)__builtin_popcount(a) + b; break;
    case EMU_OP_V_MBCNT_LO_U32_B32: x = (uint32_t)__builtin_popcount(a & (uint32_t)((1ull << (l < 32 ? l : 32)) - 1)) + b; break;
    case EMU_OP_V_MBCNT_HI_U32_B32: x = (uint32_t)__builtin_popcount(a & (uint32_t)(l > 32 ? (1ull << (l - 32)) - 1 : 0)) + b; break;
    case EMU_OP_V_CNDMASK_B32: x = ((mask >> l) & 1) ? b : a; break;
    default: return emu_fail(w, in, "VALU opcode without semantics");
    }
    r[l] = x;
  }
done:
  store_dst(w, in, r, wmask);
  return CONVJIT_OK;
}

/* 64-bit VALU: operands are register pairs (or 64-bit scalars/constants). */
static uint64_t rd64(const emu_wave *w, const emu_operand *o, int l) {
  if (o->kind == EMU_OPK_VGPR || o->kind == EMU_OPK_AGPR)
    return (uint64_t)emu_vread(w, o, 0, (unsigned)l) | (uint64_t)emu_vread(w, o, 1, (unsigned)l) << 32;
  return emu_sread64(w, o);
}

convjit_status emu_x_valu64(emu_wave *w, const emu_inst *in) {
  if (in->enc == EMU_ENC_DPP || in->enc == EMU_ENC_SDWA) return emu_fail(w, in, "DPP/SDWA form of a 64-bit op is not modelled");
  uint32_t lo[64], hi[64];
  uint64_t carry = 0;
  const emu_operand *d = &in->o[0];
  unsigned first = in->ndst;
  /* v_mov_b64 is the only one-source row (VOP1); every other takes two or more */
  unsigned nsrc = in->op == EMU_OP_V_MOV_B64 ? 1u : 2u;
  if (in->nops < first + nsrc) return emu_fail(w, in, "missing operands");
  for (int l = 0; l < 64; l++) {
    uint64_t a = rd64(w, &in->o[first], l), b = nsrc > 1 ? rd64(w, &in->o[first + 1], l) : 0, r;
    switch (in->op) {
    case EMU_OP_V_MOV_B64: r = a; break;
    case EMU_OP_V_PK_MOV_B32: {
      uint32_t x = (in->op_sel & 1) ? (uint32_t)(a >> 32) : (uint32_t)a;
      uint32_t y = (in->op_sel & 2) ? (uint32_t)(b >> 32) : (uint32_t)b;
      r = (uint64_t)x | (uint64_t)y << 32;
      break;
    }
    case EMU_OP_V_LSHLREV_B64: r = b << (a & 63); break;
    case EMU_OP_V_LSHRREV_B64: r = b >> (a & 63); break;
    case EMU_OP_V_ASHRREV_I64: r = (uint64_t)((int64_t)b >> (a & 63)); break;
    case EMU_OP_V_LSHL_ADD_U64: {
      if (in->nops < 4) return emu_fail(w, in, "missing operands");
      uint64_t c = rd64(w, &in->o[3], l);
      r = (a << (b & 7)) + c;
      break;
    }
    case EMU_OP_V_MAD_U64_U32: case EMU_OP_V_MAD_I64_I32: {
      if (in->nops < 5) return emu_fail(w, in, "missing operands");
      uint64_t c = rd64(w, &in->o[4], l);
      uint32_t x = emu_vread(w, &in->o[2], 0, (unsigned)l), y = emu_vread(w, &in->o[3], 0, (unsigned)l);
      unsigned __int128 p;
      if (in->op == EMU_OP_V_MAD_U64_U32) {
        p = (unsigned __int128)((uint64_t)x * y) + c;
        r = (uint64_t)p;
        if (((w->exec >> l) & 1) && (p >> 64)) carry |= 1ull << l;
      } else {
        __int128 sp = (__int128)((int64_t)(int32_t)x * (int32_t)y) + (__int128)(int64_t)c;
        r = (uint64_t)sp;
        if (((w->exec >> l) & 1) && (sp > INT64_MAX || sp < INT64_MIN)) carry |= 1ull << l;
      }
      break;
    }
    default: return emu_fail(w, in, "64-bit VALU opcode without semantics");
    }
    lo[l] = (uint32_t)r; hi[l] = (uint32_t)(r >> 32);
  }
  emu_vwrite_exec(w, d, 0, lo);
  emu_vwrite_exec(w, d, 1, hi);
  if (in->op == EMU_OP_V_MAD_U64_U32 || in->op == EMU_OP_V_MAD_I64_I32) emu_swrite64(w, &in->o[1], carry);
  return CONVJIT_OK;
}

/* Carry chains: vdst, carry-out mask, src0, src1[, carry-in mask]. */
convjit_status emu_x_vcarry(emu_wave *w, const emu_inst *in) {
  uint32_t a[64], b[64], r[64];
  uint64_t cout = 0, cin = 0, wmask = ~0ull;
  if (in->nops < 4) return emu_fail(w, in, "missing operands");
  load_src(w, in, 2, a, &wmask);
  load_src(w, in, 3, b, NULL);
  int use_cin = in->op == EMU_OP_V_ADDC_CO_U32 || in->op == EMU_OP_V_SUBB_CO_U32 || in->op == EMU_OP_V_SUBBREV_CO_U32;
  if (use_cin) {
    if (in->nops < 5) return emu_fail(w, in, "missing carry-in operand");
    cin = emu_sread64(w, &in->o[4]);
  }
  for (int l = 0; l < 64; l++) {
    uint64_t ci = (cin >> l) & 1, x = a[l], y = b[l], t;
    int c;
    switch (in->op) {
    case EMU_OP_V_ADD_CO_U32: t = x + y; c = t >> 32 != 0; break;
    case EMU_OP_V_ADDC_CO_U32: t = x + y + ci; c = t >> 32 != 0; break;
    case EMU_OP_V_SUB_CO_U32: t = x - y; c = y > x; break;
    case EMU_OP_V_SUBREV_CO_U32: t = y - x; c = x > y; break;
    case EMU_OP_V_SUBB_CO_U32: t = x - y - ci; c = y + ci > x; break;
    case EMU_OP_V_SUBBREV_CO_U32: t = y - x - ci; c = x + ci > y; break;
    default: return emu_fail(w, in, "carry opcode without semantics");
    }
    r[l] = (uint32_t)t;
    if (c && ((w->exec >> l) & 1)) cout |= 1ull << l;
  }
  store_dst(w, in, r, wmask);
  emu_swrite64(w, &in->o[1], cout);
  return CONVJIT_OK;
}

/* ---- f32 ------------------------------------------------------------------------------- */
static float f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t u(float x) { uint32_t v; memcpy(&v, &x, 4); return v; }

static float fmed3(float a, float b, float c) {
  if (isnan(a) || isnan(b) || isnan(c)) return fminf(fminf(a, b), c);
  float mx = fmaxf(a, b), mn = fminf(a, b);
  return c > mx ? mx : c < mn ? mn : c;
}

static float outmod(const emu_inst *in, float x) {
  if (in->omod == 1) x *= 2.0f; else if (in->omod == 2) x *= 4.0f; else if (in->omod == 3) x *= 0.5f;
  if (in->clamp) x = isnan(x) ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x;
  return x;
}

convjit_status emu_x_vf32(emu_wave *w, const emu_inst *in) {
  uint32_t s0[64], s1[64], s2[64], r[64];
  uint64_t wmask = ~0ull;
  unsigned ns = in->nops > in->ndst ? in->nops - in->ndst : 0;
  if (ns < 1) return emu_fail(w, in, "missing operands");
  load_src(w, in, 1, s0, &wmask);
  if (ns >= 2) load_src(w, in, 2, s1, NULL);
  if (ns >= 3) load_src(w, in, 3, s2, NULL);
  uint16_t op = in->op;
  int need3 = op == EMU_OP_V_FMA_F32 || op == EMU_OP_V_MAD_F32 || op == EMU_OP_V_MADAK_F32 ||
              op == EMU_OP_V_MADMK_F32 || op == EMU_OP_V_FMAAK_F32 || op == EMU_OP_V_FMAMK_F32 ||
              op == EMU_OP_V_MED3_F32 || op == EMU_OP_V_MIN3_F32 || op == EMU_OP_V_MAX3_F32;
  int need2 = need3 || op <= EMU_OP_V_MAX_F32 || op == EMU_OP_V_FMAC_F32 || op == EMU_OP_V_MAC_F32 ||
              op == EMU_OP_V_LDEXP_F32;
  if ((need3 && ns < 3) || (need2 && ns < 2)) return emu_fail(w, in, "missing source operand");
  const uint32_t *dold = emu_vreg(w, &in->o[0], 0);
  if (!dold) return emu_fail(w, in, "destination is not a vector register");
  for (int l = 0; l < 64; l++) {
    float a = f(s0[l]), b = ns >= 2 ? f(s1[l]) : 0.0f, c = ns >= 3 ? f(s2[l]) : 0.0f, x;
    switch (op) {
    case EMU_OP_V_ADD_F32: x = a + b; break;
    case EMU_OP_V_SUB_F32: x = a - b; break;
    case EMU_OP_V_SUBREV_F32: x = b - a; break;
    case EMU_OP_V_MUL_F32: x = a * b; break;
    case EMU_OP_V_MIN_F32: x = fminf(a, b); break;
    case EMU_OP_V_MAX_F32: x = fmaxf(a, b); break;
    case EMU_OP_V_FMA_F32: case EMU_OP_V_FMAAK_F32: case EMU_OP_V_FMAMK_F32: x = fmaf(a, b, c); break;
    case EMU_OP_V_FMAC_F32: x = fmaf(a, b, f(dold[l])); break;
    /* v_mad/v_mac: multiply rounded, then add (not fused) */
    case EMU_OP_V_MAC_F32: { volatile float p = a * b; x = p + f(dold[l]); break; }
    case EMU_OP_V_MAD_F32: case EMU_OP_V_MADAK_F32: case EMU_OP_V_MADMK_F32: { volatile float p = a * b; x = p + c; break; }
    case EMU_OP_V_MED3_F32: x = fmed3(a, b, c); break;
    case EMU_OP_V_MIN3_F32: x = fminf(fminf(a, b), c); break;
    case EMU_OP_V_MAX3_F32: x = fmaxf(fmaxf(a, b), c); break;
    /* hardware rcp is within 1 ulp; the emulator returns the correctly
     * rounded reciprocal (LLVM's division expansions refine either) */
    case EMU_OP_V_RCP_F32: case EMU_OP_V_RCP_IFLAG_F32: x = 1.0f / a; break;
    case EMU_OP_V_SQRT_F32: x = sqrtf(a); break;
    case EMU_OP_V_RSQ_F32: x = 1.0f / sqrtf(a); break;
    case EMU_OP_V_EXP_F32: x = exp2f(a); break;
    case EMU_OP_V_LOG_F32: x = log2f(a); break;
    case EMU_OP_V_FLOOR_F32: x = floorf(a); break;
    case EMU_OP_V_CEIL_F32: x = ceilf(a); break;
    case EMU_OP_V_TRUNC_F32: x = truncf(a); break;
    case EMU_OP_V_RNDNE_F32: x = rintf(a); break; /* default rounding mode: nearest even */
    case EMU_OP_V_FRACT_F32: x = isinf(a) ? NAN : fminf(a - floorf(a), 0x1.fffffep-1f); break;
    case EMU_OP_V_LDEXP_F32: x = ldexpf(a, (int32_t)s1[l]); break;
    default: return emu_fail(w, in, "f32 opcode without semantics");
    }
    r[l] = u(outmod(in, x));
  }
  store_dst(w, in, r, wmask);
  return CONVJIT_OK;
}

/* v_pk_*_f32: two f32 lanes in a register pair; op_sel picks the half each
 * source feeds to the low result, op_sel_hi to the high result. */
convjit_status emu_x_vpk_f32(emu_wave *w, const emu_inst *in) {
  if (in->enc == EMU_ENC_DPP || in->enc == EMU_ENC_SDWA) return emu_fail(w, in, "DPP/SDWA form of a packed op is not modelled");
  unsigned ns = in->nops - 1, nsrc = in->op == EMU_OP_V_PK_FMA_F32 ? 3 : 2;
  if (in->nops < 1 || ns < nsrc) return emu_fail(w, in, "missing operands");
  uint32_t lo[64], hi[64];
  for (int l = 0; l < 64; l++) {
    float v[2][3];
    for (unsigned i = 0; i < nsrc; i++) {
      uint64_t x = rd64(w, &in->o[1 + i], l);
      const emu_operand *o = &in->o[1 + i];
      if (o->kind == EMU_OPK_IMM && !(o->flags & EMU_OPF_LITERAL)) x = (uint64_t)o->imm32 | (uint64_t)o->imm32 << 32;
      else if (o->kind == EMU_OPK_IMM) x = (uint64_t)o->imm32; /* literal: high half 0 */
      uint32_t h0 = (in->op_sel >> i) & 1 ? (uint32_t)(x >> 32) : (uint32_t)x;
      uint32_t h1 = (in->op_sel_hi >> i) & 1 ? (uint32_t)(x >> 32) : (uint32_t)x;
      if ((in->neg_lo >> i) & 1) h0 ^= 0x80000000u;
      if ((in->neg_hi >> i) & 1) h1 ^= 0x80000000u;
      v[0][i] = f(h0); v[1][i] = f(h1);
    }
    float rr[2];
    for (int h = 0; h < 2; h++) {
      if (in->op == EMU_OP_V_PK_ADD_F32) rr[h] = v[h][0] + v[h][1];
      else if (in->op == EMU_OP_V_PK_MUL_F32) rr[h] = v[h][0] * v[h][1];
      else rr[h] = fmaf(v[h][0], v[h][1], v[h][2]);
      rr[h] = outmod(in, rr[h]);
    }
    lo[l] = u(rr[0]); hi[l] = u(rr[1]);
  }
  emu_vwrite_exec(w, &in->o[0], 0, lo);
  emu_vwrite_exec(w, &in->o[0], 1, hi);
  return CONVJIT_OK;
}

/* ---- f32 division macro: v_div_scale / v_div_fmas / v_div_fixup -------------------------
 * The ISA guides' pseudocode (CDNA3 "AMD Instinct MI300" ISA, RDNA3), with
 * the readings docs/emulator.md argues for where the text is not usable as
 * printed. S0 = value to scale (or quotient), S1 = denominator, S2 = numerator. */
static unsigned f32_expf(uint32_t b) { return (b >> 23) & 0xffu; }
static int f32_is_denorm(uint32_t b) { return (b & 0x7f800000u) == 0 && (b & 0x007fffffu) != 0; }

/* v_div_scale_f32 for one lane; *vcc gets the post-scale flag. */
static uint32_t div_scale1(uint32_t s0, uint32_t s1, uint32_t s2, int *vcc) {
  float a = f(s0), den = f(s1), num = f(s2);
  int d = (int)f32_expf(s2) - (int)f32_expf(s1);
  *vcc = 0;
  if (num == 0.0f || den == 0.0f) return 0x7fc00000u;        /* NaN; v_div_fixup decides */
  if (d >= 96) {                                             /* quotient near overflow */
    *vcc = 1;
    return a == den ? u(ldexpf(a, 64)) : s0;                 /* scale the denominator only */
  }
  if (f32_is_denorm(s1)) return u(ldexpf(a, 64));            /* both operands */
  /* "1.0 / S1 == DENORM" read in f32 (the f64 cast in the guides' text would
   * make these two branches dead), and the denominator-only scale of the
   * first one taken as 2^-64 (2^+64 overflows any |S1| > 2^126 that gets here) */
  int rcp_dn = f32_is_denorm(u(1.0f / den)), q_dn = f32_is_denorm(u(num / den));
  if (rcp_dn && q_dn) {
    *vcc = 1;
    return a == den ? u(ldexpf(a, -64)) : s0;
  }
  if (rcp_dn) return u(ldexpf(a, -64));                      /* both operands */
  if (q_dn) {                                                /* quotient denormal */
    *vcc = 1;
    return a == num ? u(ldexpf(a, 64)) : s0;                 /* scale the numerator only */
  }
  if (f32_expf(s2) <= 23) return u(ldexpf(a, 64));           /* numerator tiny: both */
  return s0;
}

/* fma(a, b, c) * 2^k rounded once to f32 (v_div_fmas with vcc set: the
 * post-scale may land in the denormal range, where rounding the fma first
 * and scaling after would round twice). a*b is exact in double; the sum is
 * made exact with TwoSum, rounded to odd in double (53 >= 24 + 2 bits, so
 * the final rounding to f32 is the correct one), scaled (exact in double)
 * and rounded to f32. */
static float fma_scaled(float a, float b, float c, int k) {
  if (!isfinite(a) || !isfinite(b) || !isfinite(c)) return ldexpf(fmaf(a, b, c), k);
  double p = (double)a * (double)b, s = p + (double)c;
  double bv = s - p, err = (p - (s - bv)) + ((double)c - bv);
  if (err != 0.0) {
    if ((err < 0.0) != (s < 0.0)) s = nextafter(s, 0.0); /* round toward zero ... */
    uint64_t bits;
    memcpy(&bits, &s, 8);
    bits |= 1; /* ... then make the last bit odd: the sticky bit */
    memcpy(&s, &bits, 8);
  }
  return (float)ldexp(s, k);
}

/* v_div_fixup_f32 for one lane: the special cases of S2 / S1, else S0 with
 * the quotient's sign. */
static uint32_t div_fixup1(uint32_t s0, uint32_t s1, uint32_t s2) {
  float den = f(s1), num = f(s2);
  uint32_t sign = (s1 ^ s2) & 0x80000000u;
  if (isnan(num)) return s2 | 0x00400000u;                   /* quieted */
  if (isnan(den)) return s1 | 0x00400000u;
  if (den == 0.0f && num == 0.0f) return 0xffc00000u;        /* 0/0 */
  if (isinf(den) && isinf(num)) return 0xffc00000u;          /* inf/inf */
  if (den == 0.0f || isinf(num)) return sign | 0x7f800000u;  /* x/0, inf/y */
  if (isinf(den) || num == 0.0f) return sign;                /* x/inf, 0/y */
  /* |quotient| < 2^-150: rounds to zero (the guides' UNDERFLOW_F32) */
  if ((int)f32_expf(s2) - (int)f32_expf(s1) < -150) return sign;
  /* a NaN quotient from finite non-zero operands means the scaled quotient
   * overflowed inside the macro (e.g. 2^44 / 2^-148): infinity, as
   * tinygrad's emulator reads it (the guides' text would return the NaN) */
  if (isnan(f(s0))) return sign | 0x7f800000u;
  return sign | (s0 & 0x7fffffffu);
}

convjit_status emu_x_vdiv(emu_wave *w, const emu_inst *in) {
  if (in->enc == EMU_ENC_DPP || in->enc == EMU_ENC_SDWA) return emu_fail(w, in, "DPP/SDWA form of a division op is not modelled");
  uint32_t s0[64], s1[64], s2[64], r[64];
  unsigned first = in->ndst;
  if (in->nops < first + 3) return emu_fail(w, in, "division op needs three sources");
  load_src(w, in, first, s0, NULL);
  load_src(w, in, first + 1, s1, NULL);
  load_src(w, in, first + 2, s2, NULL);
  uint64_t e = w->exec, vcc = 0;
  for (int l = 0; l < 64; l++) {
    switch (in->op) {
    case EMU_OP_V_DIV_SCALE_F32: {
      int c;
      r[l] = div_scale1(s0[l], s1[l], s2[l], &c);
      if (c && ((e >> l) & 1)) vcc |= 1ull << l;
      break;
    }
    case EMU_OP_V_DIV_FMAS_F32: {
      float x;
      /* post-scale direction from the quotient's exponent (see docs/emulator.md) */
      if ((w->vcc >> l) & 1) x = fma_scaled(f(s0[l]), f(s1[l]), f(s2[l]), f32_expf(s2[l]) > 127 ? 64 : -64);
      else x = fmaf(f(s0[l]), f(s1[l]), f(s2[l]));
      r[l] = u(outmod(in, x));
      break;
    }
    case EMU_OP_V_DIV_FIXUP_F32: r[l] = u(outmod(in, f(div_fixup1(s0[l], s1[l], s2[l])))); break;
    default: return emu_fail(w, in, "division opcode without semantics");
    }
  }
  store_dst(w, in, r, ~0ull);
  if (in->op == EMU_OP_V_DIV_SCALE_F32) emu_swrite64(w, &in->o[1], vcc);
  return CONVJIT_OK;
}

/* ---- VOPC ------------------------------------------------------------------------------- */
static int fclass(float x, uint32_t m) {
  int bit;
  uint32_t b = u(x);
  if (isnan(x)) bit = (b & 0x00400000u) ? 1 : 0;
  else if (isinf(x)) bit = signbit(x) ? 2 : 9;
  else if (x == 0.0f) bit = signbit(x) ? 5 : 6;
  else if (fpclassify(x) == FP_SUBNORMAL) bit = signbit(x) ? 4 : 7;
  else bit = signbit(x) ? 3 : 8;
  return (m >> bit) & 1;
}

convjit_status emu_x_vcmp(emu_wave *w, const emu_inst *in) {
  if (in->enc == EMU_ENC_DPP) return emu_fail(w, in, "DPP form of a compare is not modelled");
  uint32_t a[64], b[64];
  uint64_t res = 0;
  uint16_t op = in->op;
  if (in->nops < 3) return emu_fail(w, in, "compare needs a destination and two sources");
  int is64 = op >= EMU_OP_V_CMP_EQ_U64 && op <= EMU_OP_V_CMP_LT_I64;
  if (!is64) { load_src(w, in, 1, a, NULL); load_src(w, in, 2, b, NULL); }
  uint64_t e = w->exec;
  for (int l = 0; l < 64; l++) {
    if (!((e >> l) & 1)) continue;
    int c;
    if (is64) {
      uint64_t x = rd64(w, &in->o[1], l), y = rd64(w, &in->o[2], l);
      switch (op) {
      case EMU_OP_V_CMP_EQ_U64: c = x == y; break;
      case EMU_OP_V_CMP_NE_U64: c = x != y; break;
      case EMU_OP_V_CMP_GT_U64: c = x > y; break;
      case EMU_OP_V_CMP_GE_U64: c = x >= y; break;
      case EMU_OP_V_CMP_LT_U64: c = x < y; break;
      case EMU_OP_V_CMP_LE_U64: c = x <= y; break;
      case EMU_OP_V_CMP_GT_I64: c = (int64_t)x > (int64_t)y; break;
      case EMU_OP_V_CMP_LT_I64: c = (int64_t)x < (int64_t)y; break;
      default: return emu_fail(w, in, "compare without semantics");
      }
    } else {
      uint32_t x = a[l], y = b[l];
      int32_t sx = (int32_t)x, sy = (int32_t)y;
      float fx = f(x), fy = f(y);
      switch (op) {
      case EMU_OP_V_CMP_EQ_U32: case EMU_OP_V_CMP_EQ_I32: case EMU_OP_V_CMPX_EQ_U32: c = x == y; break;
      case EMU_OP_V_CMP_NE_U32: case EMU_OP_V_CMP_NE_I32: case EMU_OP_V_CMPX_NE_U32: c = x != y; break;
      case EMU_OP_V_CMP_GT_U32: case EMU_OP_V_CMPX_GT_U32: c = x > y; break;
      case EMU_OP_V_CMP_GE_U32: case EMU_OP_V_CMPX_GE_U32: c = x >= y; break;
      case EMU_OP_V_CMP_LT_U32: case EMU_OP_V_CMPX_LT_U32: c = x < y; break;
      case EMU_OP_V_CMP_LE_U32: case EMU_OP_V_CMPX_LE_U32: c = x <= y; break;
      case EMU_OP_V_CMP_GT_I32: case EMU_OP_V_CMPX_GT_I32: c = sx > sy; break;
      case EMU_OP_V_CMP_GE_I32: c = sx >= sy; break;
      case EMU_OP_V_CMP_LT_I32: case EMU_OP_V_CMPX_LT_I32: c = sx < sy; break;
      case EMU_OP_V_CMP_LE_I32: c = sx <= sy; break;
      case EMU_OP_V_CMP_EQ_U16: case EMU_OP_V_CMP_EQ_I16: c = (uint16_t)x == (uint16_t)y; break;
      case EMU_OP_V_CMP_NE_U16: case EMU_OP_V_CMP_NE_I16: c = (uint16_t)x != (uint16_t)y; break;
      case EMU_OP_V_CMP_GT_U16: c = (uint16_t)x > (uint16_t)y; break;
      case EMU_OP_V_CMP_GE_U16: c = (uint16_t)x >= (uint16_t)y; break;
      case EMU_OP_V_CMP_LT_U16: c = (uint16_t)x < (uint16_t)y; break;
      case EMU_OP_V_CMP_LE_U16: c = (uint16_t)x <= (uint16_t)y; break;
      case EMU_OP_V_CMP_GT_I16: c = (int16_t)x > (int16_t)y; break;
      case EMU_OP_V_CMP_GE_I16: c = (int16_t)x >= (int16_t)y; break;
      case EMU_OP_V_CMP_LT_I16: c = (int16_t)x < (int16_t)y; break;
      case EMU_OP_V_CMP_LE_I16: c = (int16_t)x <= (int16_t)y; break;
      case EMU_OP_V_CMP_EQ_F32: c = fx == fy; break;
      case EMU_OP_V_CMP_LG_F32: c = fx < fy || fx > fy; break;
      case EMU_OP_V_CMP_NEQ_F32: c = !(fx == fy); break;
      case EMU_OP_V_CMP_GT_F32: c = fx > fy; break;
      case EMU_OP_V_CMP_GE_F32: c = fx >= fy; break;
      case EMU_OP_V_CMP_LT_F32: c = fx < fy; break;
      case EMU_OP_V_CMP_LE_F32: c = fx <= fy; break;
      case EMU_OP_V_CMP_NLT_F32: c = !(fx < fy); break;
      case EMU_OP_V_CMP_NGT_F32: c = !(fx > fy); break;
      case EMU_OP_V_CMP_NLE_F32: c = !(fx <= fy); break;
      case EMU_OP_V_CMP_NGE_F32: c = !(fx >= fy); break;
      case EMU_OP_V_CMP_U_F32: c = isnan(fx) || isnan(fy); break;
      case EMU_OP_V_CMP_O_F32: c = !isnan(fx) && !isnan(fy); break;
      case EMU_OP_V_CMP_CLASS_F32: c = fclass(fx, y); break;
      default: return emu_fail(w, in, "compare without semantics");
      }
    }
    if (c) res |= 1ull << l;
  }
  emu_swrite64(w, &in->o[0], res);
  if (op >= EMU_OP_V_CMPX_EQ_U32 && op <= EMU_OP_V_CMPX_LT_I32) w->exec = res;
  return CONVJIT_OK;
}

/* ---- lane ops ---------------------------------------------------------------------------- */
convjit_status emu_x_vlane(emu_wave *w, const emu_inst *in) {
  if (in->enc == EMU_ENC_DPP || in->enc == EMU_ENC_SDWA) return emu_fail(w, in, "DPP/SDWA form of a lane op is not modelled");
  if (in->nops < 2) return emu_fail(w, in, "missing operands");
  switch (in->op) {
  case EMU_OP_V_READFIRSTLANE_B32: {
    unsigned l = w->exec ? (unsigned)__builtin_ctzll(w->exec) : 0;
    emu_swrite(w, &in->o[0], 0, emu_vread(w, &in->o[1], 0, l));
    return CONVJIT_OK;
  }
  case EMU_OP_V_READLANE_B32:
    if (in->nops < 3) return emu_fail(w, in, "missing lane operand");
    emu_swrite(w, &in->o[0], 0, emu_vread(w, &in->o[1], 0, emu_sread(w, &in->o[2], 0) & 63));
    return CONVJIT_OK;
  case EMU_OP_V_WRITELANE_B32: {
    if (in->nops < 3) return emu_fail(w, in, "missing lane operand");
    uint32_t *d = emu_vreg(w, &in->o[0], 0);
    if (!d) return emu_fail(w, in, "destination is not a vector register");
    d[emu_sread(w, &in->o[2], 0) & 63] = emu_sread(w, &in->o[1], 0); /* ignores EXEC */
    return CONVJIT_OK;
  }
  default: return emu_fail(w, in, "lane opcode without semantics");
  }
}
