/* exec_salu.c — scalar ALU, scalar compares, branches and program control.
 *
 * Semantics follow the CDNA3/CDNA4 ISA: 32-bit ops set SCC as the manual
 * says (carry for add/sub_u32, signed overflow for add/sub_i32, "result != 0"
 * for logic and shifts, the comparison for min/max); shift amounts use the
 * low 5 (or 6, 64-bit) bits. SOPK immediates come from the encoding
 * (sign-extended, zero-extended for the unsigned compares).
 */
#include <string.h>
#include "emu/emu_internal.h"

static uint32_t pop32(uint32_t x) { return (uint32_t)__builtin_popcount(x); }
static uint32_t pop64(uint64_t x) { return (uint32_t)__builtin_popcountll(x); }

/* ---- control ---------------------------------------------------------------- */
convjit_status emu_x_s_endpgm(emu_wave *w, const emu_inst *in) {
  (void)in;
  if (w->hazard) emu_hazard_endpgm(w);
  w->state = EMU_WAVE_DONE;
  return CONVJIT_OK;
}

convjit_status emu_x_s_nop(emu_wave *w, const emu_inst *in) {
  if (in->op == EMU_OP_S_SETPRIO) w->prio = (uint32_t)in->simm & 3;
  if (in->op == EMU_OP_S_SETHALT && (in->simm & 1)) return emu_fail(w, in, "s_sethalt halts the wave");
  return CONVJIT_OK; /* timing only (s_nop N = N+1 wait states, s_sleep) */
}

convjit_status emu_x_s_waitcnt(emu_wave *w, const emu_inst *in) {
  /* Results complete at issue; the hazard checker retires pending ones. */
  if (in->vmcnt == 0) w->vmcnt0++;
  if (in->lgkmcnt < 15) w->cover_open = 0;
  if (w->hazard) return emu_hazard_waitcnt(w, in);
  return CONVJIT_OK;
}

convjit_status emu_x_s_barrier(emu_wave *w, const emu_inst *in) {
  (void)in;
  w->state = EMU_WAVE_BARRIER; /* dispatch.c releases when all live waves arrive */
  w->barriers++;
  w->cover_open = 1;
  return CONVJIT_OK;
}

convjit_status emu_x_s_branch(emu_wave *w, const emu_inst *in) {
  int take;
  switch (in->op) {
  case EMU_OP_S_BRANCH: take = 1; break;
  case EMU_OP_S_CBRANCH_SCC0: take = w->scc == 0; break;
  case EMU_OP_S_CBRANCH_SCC1: take = w->scc != 0; break;
  case EMU_OP_S_CBRANCH_VCCZ: take = w->vcc == 0; break;
  case EMU_OP_S_CBRANCH_VCCNZ: take = w->vcc != 0; break;
  case EMU_OP_S_CBRANCH_EXECZ: take = w->exec == 0; break;
  case EMU_OP_S_CBRANCH_EXECNZ: take = w->exec != 0; break;
  default: return emu_fail(w, in, "not a branch");
  }
  if (take) w->pc_next = in->target;
  return CONVJIT_OK;
}

/* s_getpc_b64 gives the device address of the next instruction in the
 * module's loaded image (emu_module.image_addr + .text's p_vaddr + offset),
 * so PC-relative (rel32) and GOT references reach the image's data;
 * s_setpc_b64 maps such an address back and must land inside .text. */
convjit_status emu_x_s_pc(emu_wave *w, const emu_inst *in) {
  const emu_module *m = w->wg->L->k->mod;
  uint64_t base = m->image_addr + m->co->text_vaddr;
  if (in->op == EMU_OP_S_GETPC_B64) {
    emu_swrite64(w, &in->o[0], base + w->pc_next);
    return CONVJIT_OK;
  }
  uint64_t a = emu_sread64(w, &in->o[0]);
  if (a < base || a - base >= m->text_size)
    return emu_fail(w, in, "s_setpc_b64 to 0x%llx: outside .text [0x%llx, +0x%x) of the loaded image",
                    (unsigned long long)a, (unsigned long long)base, m->text_size);
  w->pc_next = (uint32_t)(a - base);
  return CONVJIT_OK;
}

/* ---- SOP1 -------------------------------------------------------------------- */
convjit_status emu_x_sop1(emu_wave *w, const emu_inst *in) {
  const emu_operand *d = &in->o[0], *s = &in->o[1];
  uint32_t a = 0, r;
  uint64_t a64, r64;
  if (in->op == EMU_OP_S_MOVK_I32) { emu_swrite(w, d, 0, (uint32_t)in->simm); return CONVJIT_OK; }
  if (in->nops < 2) return emu_fail(w, in, "missing source operand");
  switch (in->op) {
  case EMU_OP_S_MOV_B32: emu_swrite(w, d, 0, emu_sread(w, s, 0)); return CONVJIT_OK;
  case EMU_OP_S_MOV_B64: emu_swrite64(w, d, emu_sread64(w, s)); return CONVJIT_OK;
  case EMU_OP_S_CMOV_B32: if (w->scc) emu_swrite(w, d, 0, emu_sread(w, s, 0)); return CONVJIT_OK;
  case EMU_OP_S_CMOV_B64: if (w->scc) emu_swrite64(w, d, emu_sread64(w, s)); return CONVJIT_OK;
  case EMU_OP_S_NOT_B64: r64 = ~emu_sread64(w, s); emu_swrite64(w, d, r64); w->scc = r64 != 0; return CONVJIT_OK;
  case EMU_OP_S_FF1_I32_B64:
    a64 = emu_sread64(w, s);
    emu_swrite(w, d, 0, a64 ? (uint32_t)__builtin_ctzll(a64) : 0xffffffffu);
    return CONVJIT_OK;
  case EMU_OP_S_BCNT1_I32_B64:
    r = pop64(emu_sread64(w, s)); emu_swrite(w, d, 0, r); w->scc = r != 0; return CONVJIT_OK;
  case EMU_OP_S_AND_SAVEEXEC_B64: case EMU_OP_S_OR_SAVEEXEC_B64:
  case EMU_OP_S_XOR_SAVEEXEC_B64: case EMU_OP_S_ANDN2_SAVEEXEC_B64: {
    a64 = emu_sread64(w, s);
    uint64_t old = w->exec;
    if (in->op == EMU_OP_S_AND_SAVEEXEC_B64) w->exec = a64 & old;
    else if (in->op == EMU_OP_S_OR_SAVEEXEC_B64) w->exec = a64 | old;
    else if (in->op == EMU_OP_S_XOR_SAVEEXEC_B64) w->exec = a64 ^ old;
    else w->exec = a64 & ~old;
    emu_swrite64(w, d, old);
    w->scc = w->exec != 0;
    return CONVJIT_OK;
  }
  default: break;
  }
  a = emu_sread(w, s, 0);
  switch (in->op) {
  case EMU_OP_S_NOT_B32: r = ~a; w->scc = r != 0; break;
  case EMU_OP_S_BREV_B32: r = 0; for (int i = 0; i < 32; i++) r |= ((a >> i) & 1u) << (31 - i); break;
  /* D.u[S0.u[4:0]] = 1 / 0: read-modify-write of the destination, SCC kept */
  case EMU_OP_S_BITSET1_B32: r = emu_sread(w, d, 0) | (1u << (a & 31)); break;
  case EMU_OP_S_BITSET0_B32: r = emu_sread(w, d, 0) & ~(1u << (a & 31)); break;
  case EMU_OP_S_FF1_I32_B32: r = a ? (uint32_t)__builtin_ctz(a) : 0xffffffffu; break;
  case EMU_OP_S_FLBIT_I32_B32: r = a ? (uint32_t)__builtin_clz(a) : 0xffffffffu; break;
  case EMU_OP_S_BCNT1_I32_B32: r = pop32(a); w->scc = r != 0; break;
  case EMU_OP_S_SEXT_I32_I8: r = (uint32_t)(int32_t)(int8_t)a; break;
  case EMU_OP_S_SEXT_I32_I16: r = (uint32_t)(int32_t)(int16_t)a; break;
  case EMU_OP_S_ABS_I32: r = (int32_t)a < 0 ? 0u - a : a; w->scc = r != 0; break;
  default: return emu_fail(w, in, "SOP1 opcode without semantics");
  }
  emu_swrite(w, d, 0, r);
  return CONVJIT_OK;
}

/* ---- SOP2 / SOPK ------------------------------------------------------------- */
static int is64(uint16_t op) {
  switch (op) {
  case EMU_OP_S_AND_B64: case EMU_OP_S_OR_B64: case EMU_OP_S_XOR_B64: case EMU_OP_S_ANDN2_B64:
  case EMU_OP_S_ORN2_B64: case EMU_OP_S_CSELECT_B64:
    return 1;
  default:
    return 0;
  }
}

convjit_status emu_x_sop2(emu_wave *w, const emu_inst *in) {
  const emu_operand *d = &in->o[0];
  /* SOPK: sdst is also the first source */
  if (in->op == EMU_OP_S_ADDK_I32 || in->op == EMU_OP_S_MULK_I32 || in->op == EMU_OP_S_CMOVK_I32) {
    uint32_t a = emu_sread(w, d, 0), k = (uint32_t)in->simm, r;
    if (in->op == EMU_OP_S_CMOVK_I32) { if (w->scc) emu_swrite(w, d, 0, k); return CONVJIT_OK; }
    if (in->op == EMU_OP_S_ADDK_I32) {
      r = a + k;
      w->scc = ((~(a ^ k)) & (a ^ r)) >> 31;
    } else {
      r = a * k;
    }
    emu_swrite(w, d, 0, r);
    return CONVJIT_OK;
  }
  if (in->nops < 3) return emu_fail(w, in, "SOP2 needs three operands");
  const emu_operand *x = &in->o[1], *y = &in->o[2];
  if (is64(in->op)) {
    uint64_t a = emu_sread64(w, x), b = emu_sread64(w, y), r;
    switch (in->op) {
    case EMU_OP_S_AND_B64: r = a & b; break;
    case EMU_OP_S_OR_B64: r = a | b; break;
    case EMU_OP_S_XOR_B64: r = a ^ b; break;
    case EMU_OP_S_ANDN2_B64: r = a & ~b; break;
    case EMU_OP_S_ORN2_B64: r = a | ~b; break;
    case EMU_OP_S_CSELECT_B64: emu_swrite64(w, d, w->scc ? a : b); return CONVJIT_OK;
    default: return emu_fail(w, in, "SOP2 opcode without semantics");
    }
    emu_swrite64(w, d, r);
    w->scc = r != 0;
    return CONVJIT_OK;
  }
  if (in->op == EMU_OP_S_LSHL_B64 || in->op == EMU_OP_S_LSHR_B64 || in->op == EMU_OP_S_ASHR_I64 ||
      in->op == EMU_OP_S_BFE_U64) {
    uint64_t a = emu_sread64(w, x), r;
    uint32_t b = emu_sread(w, y, 0);
    if (in->op == EMU_OP_S_LSHL_B64) r = a << (b & 63);
    else if (in->op == EMU_OP_S_LSHR_B64) r = a >> (b & 63);
    else if (in->op == EMU_OP_S_ASHR_I64) r = (uint64_t)((int64_t)a >> (b & 63));
    else {
      uint32_t off = b & 63, wid = (b >> 16) & 127;
      r = wid >= 64 ? a >> off : (a >> off) & ((1ull << wid) - 1);
    }
    emu_swrite64(w, d, r);
    w->scc = r != 0;
    return CONVJIT_OK;
  }
  uint32_t a = emu_sread(w, x, 0), b = emu_sread(w, y, 0), r;
  uint64_t wide;
  switch (in->op) {
  case EMU_OP_S_ADD_U32: wide = (uint64_t)a + b; r = (uint32_t)wide; w->scc = (uint32_t)(wide >> 32); break;
  case EMU_OP_S_ADDC_U32: wide = (uint64_t)a + b + w->scc; r = (uint32_t)wide; w->scc = (uint32_t)(wide >> 32); break;
  case EMU_OP_S_SUB_U32: r = a - b; w->scc = b > a; break;
  case EMU_OP_S_SUBB_U32: r = a - b - w->scc; w->scc = (uint64_t)b + w->scc > a; break;
  case EMU_OP_S_ADD_I32: r = a + b; w->scc = ((~(a ^ b)) & (a ^ r)) >> 31; break;
  case EMU_OP_S_SUB_I32: r = a - b; w->scc = ((a ^ b) & (a ^ r)) >> 31; break;
  case EMU_OP_S_MUL_I32: r = a * b; break;
  case EMU_OP_S_MUL_HI_U32: r = (uint32_t)(((uint64_t)a * b) >> 32); break;
  case EMU_OP_S_MUL_HI_I32: r = (uint32_t)((uint64_t)((int64_t)(int32_t)a * (int32_t)b) >> 32); break;
  case EMU_OP_S_MIN_U32: w->scc = a < b; r = a < b ? a : b; break;
  case EMU_OP_S_MAX_U32: w->scc = a > b; r = a > b ? a : b; break;
  case EMU_OP_S_MIN_I32: w->scc = (int32_t)a < (int32_t)b; r = w->scc ? a : b; break;
  case EMU_OP_S_MAX_I32: w->scc = (int32_t)a > (int32_t)b; r = w->scc ? a : b; break;
  case EMU_OP_S_AND_B32: r = a & b; w->scc = r != 0; break;
  case EMU_OP_S_OR_B32: r = a | b; w->scc = r != 0; break;
  case EMU_OP_S_XOR_B32: r = a ^ b; w->scc = r != 0; break;
  case EMU_OP_S_ANDN2_B32: r = a & ~b; w->scc = r != 0; break;
  case EMU_OP_S_ORN2_B32: r = a | ~b; w->scc = r != 0; break;
  case EMU_OP_S_NAND_B32: r = ~(a & b); w->scc = r != 0; break;
  case EMU_OP_S_NOR_B32: r = ~(a | b); w->scc = r != 0; break;
  case EMU_OP_S_XNOR_B32: r = ~(a ^ b); w->scc = r != 0; break;
  case EMU_OP_S_LSHL_B32: r = a << (b & 31); w->scc = r != 0; break;
  case EMU_OP_S_LSHR_B32: r = a >> (b & 31); w->scc = r != 0; break;
  case EMU_OP_S_ASHR_I32: r = (uint32_t)((int32_t)a >> (b & 31)); w->scc = r != 0; break;
  case EMU_OP_S_BFE_U32: case EMU_OP_S_BFE_I32: {
    uint32_t off = b & 31, wid = (b >> 16) & 127;
    if (wid == 0) r = 0;
    else if (in->op == EMU_OP_S_BFE_U32) r = wid >= 32 ? a >> off : (a >> off) & ((1u << wid) - 1);
    else {
      uint32_t v = a >> off;
      r = wid >= 32 ? (uint32_t)((int32_t)a >> off) : (uint32_t)(((int32_t)(v << (32 - wid))) >> (32 - wid));
    }
    w->scc = r != 0;
    break;
  }
  case EMU_OP_S_BFM_B32: r = ((1u << (a & 31)) - 1) << (b & 31); break;
  case EMU_OP_S_CSELECT_B32: r = w->scc ? a : b; break;
  case EMU_OP_S_ABSDIFF_I32: {
    int64_t t = (int64_t)(int32_t)a - (int32_t)b;
    r = (uint32_t)(t < 0 ? -t : t);
    w->scc = r != 0;
    break;
  }
  case EMU_OP_S_LSHL1_ADD_U32: case EMU_OP_S_LSHL2_ADD_U32: case EMU_OP_S_LSHL3_ADD_U32:
  case EMU_OP_S_LSHL4_ADD_U32: {
    unsigned n = (unsigned)(in->op - EMU_OP_S_LSHL1_ADD_U32) + 1;
    wide = ((uint64_t)a << n) + b;
    r = (uint32_t)wide;
    w->scc = wide >= 0x100000000ull;
    break;
  }
  case EMU_OP_S_PACK_LL_B32_B16: r = (a & 0xffff) | b << 16; break;
  case EMU_OP_S_PACK_LH_B32_B16: r = (a & 0xffff) | (b & 0xffff0000u); break;
  case EMU_OP_S_PACK_HH_B32_B16: r = (a >> 16) | (b & 0xffff0000u); break;
  default: return emu_fail(w, in, "SOP2 opcode without semantics");
  }
  emu_swrite(w, d, 0, r);
  return CONVJIT_OK;
}

/* ---- SOPC / SOPK compares ------------------------------------------------------- */
convjit_status emu_x_sopc(emu_wave *w, const emu_inst *in) {
  if (in->nops < 1) return emu_fail(w, in, "compare without operands");
  uint16_t op = in->op;
  if (op == EMU_OP_S_CMP_EQ_U64 || op == EMU_OP_S_CMP_LG_U64) {
    if (in->nops < 2) return emu_fail(w, in, "compare needs two operands");
    uint64_t a = emu_sread64(w, &in->o[0]), b = emu_sread64(w, &in->o[1]);
    w->scc = op == EMU_OP_S_CMP_EQ_U64 ? a == b : a != b;
    return CONVJIT_OK;
  }
  uint32_t a = emu_sread(w, &in->o[0], 0), b;
  int k = op >= EMU_OP_S_CMPK_EQ_U32 && op <= EMU_OP_S_CMPK_LE_I32;
  if (k) {
    /* unsigned compares zero-extend simm16, signed ones sign-extend */
    b = op <= EMU_OP_S_CMPK_LE_U32 ? (uint32_t)in->simm & 0xffff : (uint32_t)in->simm;
    op = (uint16_t)(op - EMU_OP_S_CMPK_EQ_U32 + (op <= EMU_OP_S_CMPK_LE_U32 ? 0 : 0));
    static const uint16_t map[] = {EMU_OP_S_CMP_EQ_U32, EMU_OP_S_CMP_LG_U32, EMU_OP_S_CMP_GT_U32,
                                   EMU_OP_S_CMP_LT_U32, EMU_OP_S_CMP_GE_U32, EMU_OP_S_CMP_LE_U32,
                                   EMU_OP_S_CMP_EQ_I32, EMU_OP_S_CMP_LG_I32, EMU_OP_S_CMP_GT_I32,
                                   EMU_OP_S_CMP_LT_I32, EMU_OP_S_CMP_GE_I32, EMU_OP_S_CMP_LE_I32};
    op = map[op];
  } else {
    if (in->nops < 2) return emu_fail(w, in, "compare needs two operands");
    b = emu_sread(w, &in->o[1], 0);
  }
  int32_t sa = (int32_t)a, sb = (int32_t)b;
  switch (op) {
  case EMU_OP_S_CMP_EQ_U32: case EMU_OP_S_CMP_EQ_I32: w->scc = a == b; break;
  case EMU_OP_S_CMP_LG_U32: case EMU_OP_S_CMP_LG_I32: w->scc = a != b; break;
  case EMU_OP_S_CMP_GT_U32: w->scc = a > b; break;
  case EMU_OP_S_CMP_GE_U32: w->scc = a >= b; break;
  case EMU_OP_S_CMP_LT_U32: w->scc = a < b; break;
  case EMU_OP_S_CMP_LE_U32: w->scc = a <= b; break;
  case EMU_OP_S_CMP_GT_I32: w->scc = sa > sb; break;
  case EMU_OP_S_CMP_GE_I32: w->scc = sa >= sb; break;
  case EMU_OP_S_CMP_LT_I32: w->scc = sa < sb; break;
  case EMU_OP_S_CMP_LE_I32: w->scc = sa <= sb; break;
  case EMU_OP_S_BITCMP0_B32: w->scc = ((a >> (b & 31)) & 1) == 0; break;
  case EMU_OP_S_BITCMP1_B32: w->scc = ((a >> (b & 31)) & 1) == 1; break;
  default: return emu_fail(w, in, "SOPC opcode without semantics");
  }
  return CONVJIT_OK;
}
