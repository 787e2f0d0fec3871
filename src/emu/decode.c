/* decode.c — code object .text -> pre-decoded instruction table.
 *
 * Contract: the whole .text of a module is disassembled once by
 * pipeline/disasm.c's loop (LLVM's C disassembler with a bare CPU name: a
 * CPU string with features aborts LLVM, docs/isa-notes.md §7; words that would crash
 * LLVM's printer are undecodable without asking it) and each line's text is
 * parsed into an emu_inst. Nothing is guessed: bytes that do not decode, a mnemonic the
 * ISA table lacks, or an operand/modifier the parser does not understand make
 * the instruction "bad" (in->bad says why); it fails only if a wave reaches
 * it, because LLVM pads .text with s_nop / zero words after s_endpgm.
 * Fields whose text form is ambiguous (branch targets, s_waitcnt counters,
 * SOPP/SOPK immediates) are read from the encoding instead of the text.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emu/emu_internal.h"
#include "pipeline/disasm.h"

/* ---- the ISA table ------------------------------------------------------ */
static const emu_isa_row k_rows[] = {
#define X(name, ENUM, cls, ndst, fn, bytes, access) {name, EMU_OP_##ENUM, cls, ndst, fn},
#include "emu/isa_table.h"
#undef X
};
#define NROWS ((int)(sizeof k_rows / sizeof k_rows[0]))
static const emu_isa_row *g_sorted[NROWS];
static pthread_once_t g_sort_once = PTHREAD_ONCE_INIT;

static int row_cmp(const void *a, const void *b) {
  return strcmp((*(const emu_isa_row *const *)a)->name, (*(const emu_isa_row *const *)b)->name);
}
static void sort_rows(void) {
  for (int i = 0; i < NROWS; i++) g_sorted[i] = &k_rows[i];
  qsort(g_sorted, NROWS, sizeof g_sorted[0], row_cmp);
}
const emu_isa_row *emu_isa_rows(int *count) {
  if (count) *count = NROWS;
  return k_rows;
}
const emu_isa_row *emu_isa_lookup(const char *name) {
  pthread_once(&g_sort_once, sort_rows);
  int lo = 0, hi = NROWS - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2, c = strcmp(name, g_sorted[mid]->name);
    if (c == 0) return g_sorted[mid];
    if (c < 0) hi = mid - 1; else lo = mid + 1;
  }
  return NULL;
}

/* ---- text parsing ---------------------------------------------------------- */
#define MAXTOK 24
typedef struct { char t[MAXTOK][64]; int n; } toks;

/* Splits at top-level spaces and commas; brackets/parens/bars group. */
static int tokenize(const char *s, toks *tk) {
  tk->n = 0;
  while (*s) {
    while (*s == ' ' || *s == ',' || *s == '\t') s++;
    if (!*s) break;
    if (tk->n == MAXTOK) return -1;
    int depth = 0, bar = 0, len = 0;
    char *o = tk->t[tk->n];
    while (*s) {
      char c = *s;
      if (depth == 0 && !bar && (c == ' ' || c == ',' || c == '\t')) break;
      if (c == '[' || c == '(') depth++;
      else if (c == ']' || c == ')') depth--;
      else if (c == '|') bar = !bar;
      if (len < 63) o[len++] = c; else return -1;
      s++;
    }
    o[len] = 0;
    tk->n++;
  }
  return 0;
}

static int parse_uint(const char *s, long long *v) {
  char *end;
  if (!*s) return -1;
  *v = strtoll(s, &end, 0);
  return *end ? -1 : 0;
}

/* "v5", "v[0:3]" with prefix letter already checked. */
static int parse_regs(const char *s, unsigned *reg, unsigned *count) {
  long long a, b;
  if (s[0] == '[') {
    char buf[32];
    const char *colon = strchr(s, ':'), *close = strchr(s, ']');
    if (!colon || !close || colon > close || close[1]) return -1;
    size_t n = (size_t)(colon - s - 1);
    if (n >= sizeof buf) return -1;
    memcpy(buf, s + 1, n); buf[n] = 0;
    if (parse_uint(buf, &a)) return -1;
    n = (size_t)(close - colon - 1);
    if (n >= sizeof buf) return -1;
    memcpy(buf, colon + 1, n); buf[n] = 0;
    if (parse_uint(buf, &b) || b < a) return -1;
    *reg = (unsigned)a; *count = (unsigned)(b - a + 1);
    return 0;
  }
  if (!isdigit((unsigned char)s[0]) || parse_uint(s, &a)) return -1;
  *reg = (unsigned)a; *count = 1;
  return 0;
}

static void set_float(emu_operand *o, double d) {
  float f = (float)d;
  memcpy(&o->imm32, &f, 4);
  memcpy(&o->imm64, &d, 8);
  o->kind = EMU_OPK_IMM; o->count = 1; o->flags |= EMU_OPF_FLOAT;
}

/* One operand token (modifiers -x, |x|, abs(x), neg(x), sext(x), lit(x)).
 * Returns 0 or -1 (not an operand). */
static int parse_operand(const char *s0, emu_operand *o) {
  char s[64];
  size_t L = strlen(s0);
  if (L >= sizeof s) return -1;
  memcpy(s, s0, L + 1);
  memset(o, 0, sizeof *o);
  char *p = s;
  for (;;) { /* peel modifiers */
    L = strlen(p);
    if (p[0] == '-' && (p[1] == 'v' || p[1] == 's' || p[1] == 'a' || p[1] == '|' || p[1] == 'm' ||
                        p[1] == 'e' || p[1] == 'n' || p[1] == 'l')) {
      o->flags |= EMU_OPF_NEG; p++; continue;
    }
    if (p[0] == '|' && L > 2 && p[L - 1] == '|') { o->flags |= EMU_OPF_ABS; p[L - 1] = 0; p++; continue; }
    if (!strncmp(p, "abs(", 4) && p[L - 1] == ')') { o->flags |= EMU_OPF_ABS; p[L - 1] = 0; p += 4; continue; }
    if (!strncmp(p, "neg(", 4) && p[L - 1] == ')') { o->flags |= EMU_OPF_NEG; p[L - 1] = 0; p += 4; continue; }
    if (!strncmp(p, "sext(", 5) && p[L - 1] == ')') { o->flags |= EMU_OPF_SEXT; p[L - 1] = 0; p += 5; continue; }
    if (!strncmp(p, "lit(", 4) && p[L - 1] == ')') { o->flags |= EMU_OPF_LITERAL; p[L - 1] = 0; p += 4; continue; }
    break;
  }
  unsigned reg, cnt;
  if ((p[0] == 'v' || p[0] == 's' || p[0] == 'a') && (isdigit((unsigned char)p[1]) || p[1] == '[')) {
    if (parse_regs(p + 1, &reg, &cnt)) return -1;
    o->kind = p[0] == 'v' ? EMU_OPK_VGPR : p[0] == 's' ? EMU_OPK_SGPR : EMU_OPK_AGPR;
    if ((o->kind == EMU_OPK_SGPR && reg + cnt > 128) || reg + cnt > 256 || cnt > 32) return -1;
    o->reg = (uint16_t)reg; o->count = (uint8_t)cnt;
    return 0;
  }
  static const struct { const char *n; uint8_t kind, reg, count; } named[] = {
      {"vcc", EMU_OPK_VCC, 0, 2},   {"vcc_lo", EMU_OPK_VCC, 0, 1},   {"vcc_hi", EMU_OPK_VCC, 1, 1},
      {"exec", EMU_OPK_EXEC, 0, 2}, {"exec_lo", EMU_OPK_EXEC, 0, 1}, {"exec_hi", EMU_OPK_EXEC, 1, 1},
      {"m0", EMU_OPK_M0, 0, 1},     {"scc", EMU_OPK_SCC, 0, 1},      {"src_scc", EMU_OPK_SCC, 0, 1},
      {"off", EMU_OPK_OFF, 0, 1},   {"null", EMU_OPK_NULL, 0, 1}};
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    if (!strcmp(p, named[i].n)) {
      o->kind = named[i].kind; o->reg = named[i].reg; o->count = named[i].count;
      return 0;
    }
  /* numbers */
  const char *q = p;
  int neg = 0;
  if (*q == '-') { neg = 1; q++; }
  if (!isdigit((unsigned char)*q)) return -1;
  if (strchr(q, '.')) {
    char *end;
    double d = strtod(q, &end);
    if (*end) return -1;
    if (d == 0.15915494 || (d > 0.159154 && d < 0.159155)) { /* 1/(2*pi) inline constant */
      o->kind = EMU_OPK_IMM; o->count = 1; o->flags |= EMU_OPF_FLOAT;
      o->imm32 = 0x3e22f983u; o->imm64 = 0x3fc45f306dc9c882ull;
      return 0;
    }
    set_float(o, neg ? -d : d);
    return 0;
  }
  char *end;
  unsigned long long u = strtoull(q, &end, 0);
  if (*end) return -1;
  int hex = q[0] == '0' && (q[1] == 'x' || q[1] == 'X');
  int64_t v = neg ? -(int64_t)u : (int64_t)u;
  o->kind = EMU_OPK_IMM; o->count = 1;
  o->imm64 = (uint64_t)v;
  o->imm32 = (uint32_t)v;
  if (hex && !(o->flags & EMU_OPF_LITERAL) && !(v >= -16 && v <= 64)) o->flags |= EMU_OPF_LITERAL;
  else if (hex) o->flags |= EMU_OPF_LITERAL;
  if (hex && u > 0xffffffffull) o->imm64 = u;
  return 0;
}

static int parse_sel(const char *s, uint8_t *out) {
  static const char *n[] = {"DWORD", "BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1"};
  for (int i = 0; i < 7; i++) if (!strcmp(s, n[i])) { *out = (uint8_t)i; return 0; }
  return -1;
}

/* "[0,1,1]" -> bits; g_nbits gets the element count (op_sel's last element
 * is the destination when it has one more element than there are sources). */
static _Thread_local unsigned g_nbits, g_opsel_n;
static int parse_bits(const char *s, uint8_t *out) {
  if (*s != '[') return -1;
  unsigned bits = 0, i = 0;
  for (s++; *s && *s != ']'; s++) {
    if (*s == ',') continue;
    if (*s != '0' && *s != '1') return -1;
    if (*s == '1') bits |= 1u << i;
    i++;
  }
  if (*s != ']') return -1;
  *out = (uint8_t)bits;
  g_nbits = i;
  return 0;
}

/* Modifier token. 0 = consumed, -1 = unknown. */
static int parse_modifier(const char *t, emu_inst *in, int *src_sel_idx) {
  long long v;
  const char *c = strchr(t, ':');
  static const struct { const char *n; uint16_t f; } flags[] = {
      {"offen", EMU_M_OFFEN}, {"idxen", EMU_M_IDXEN}, {"lds", EMU_M_LDS}, {"glc", EMU_M_GLC},
      {"slc", EMU_M_SLC},     {"nt", EMU_M_NT},       {"sc0", EMU_M_SC0}, {"sc1", EMU_M_SC1},
      {"gds", EMU_M_GDS},     {"addr64", EMU_M_ADDR64}};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    if (!strcmp(t, flags[i].n)) { in->mflags |= flags[i].f; return 0; }
  if (!strcmp(t, "clamp")) { in->clamp = 1; return 0; }
  if (!strcmp(t, "row_mirror")) { in->dpp_ctrl = EMU_DPP_ROW_MIRROR; return 0; }
  if (!strcmp(t, "row_half_mirror")) { in->dpp_ctrl = EMU_DPP_ROW_HALF_MIRROR; return 0; }
  if (!c) return -1;
  char key[32];
  size_t kl = (size_t)(c - t);
  if (kl >= sizeof key) return -1;
  memcpy(key, t, kl); key[kl] = 0;
  const char *val = c + 1;
  if (!strcmp(key, "offset")) { if (parse_uint(val, &v)) return -1; in->offset = (int32_t)v; return 0; }
  if (!strcmp(key, "offset0")) { if (parse_uint(val, &v)) return -1; in->offset0 = (uint16_t)v; return 0; }
  if (!strcmp(key, "offset1")) { if (parse_uint(val, &v)) return -1; in->offset1 = (uint16_t)v; return 0; }
  if (!strcmp(key, "mul")) { if (!strcmp(val, "2")) in->omod = 1; else if (!strcmp(val, "4")) in->omod = 2; else return -1; return 0; }
  if (!strcmp(key, "div")) { if (strcmp(val, "2")) return -1; in->omod = 3; return 0; }
  if (!strcmp(key, "op_sel")) {
    if (parse_bits(val, &in->op_sel)) return -1;
    g_opsel_n = g_nbits;
    return 0;
  }
  if (!strcmp(key, "op_sel_hi")) return parse_bits(val, &in->op_sel_hi);
  if (!strcmp(key, "neg_lo")) return parse_bits(val, &in->neg_lo);
  if (!strcmp(key, "neg_hi")) return parse_bits(val, &in->neg_hi);
  if (!strcmp(key, "cbsz")) { if (parse_uint(val, &v)) return -1; in->cbsz = (uint8_t)v; return 0; }
  if (!strcmp(key, "abid")) { if (parse_uint(val, &v)) return -1; in->abid = (uint8_t)v; return 0; }
  if (!strcmp(key, "blgp")) { if (parse_uint(val, &v)) return -1; in->blgp = (uint8_t)v; return 0; }
  if (!strcmp(key, "dst_sel")) return parse_sel(val, &in->dst_sel);
  if (!strcmp(key, "dst_unused")) {
    if (!strcmp(val, "UNUSED_PAD")) in->dst_unused = EMU_UNUSED_PAD;
    else if (!strcmp(val, "UNUSED_SEXT")) in->dst_unused = EMU_UNUSED_SEXT;
    else if (!strcmp(val, "UNUSED_PRESERVE")) in->dst_unused = EMU_UNUSED_PRESERVE;
    else return -1;
    return 0;
  }
  if (!strcmp(key, "src0_sel") || !strcmp(key, "src1_sel")) {
    uint8_t sel;
    if (parse_sel(val, &sel)) return -1;
    src_sel_idx[key[3] - '0'] = sel;
    return 0;
  }
  if (!strcmp(key, "quad_perm")) {
    unsigned q[4], n = 0;
    if (sscanf(val, "[%u,%u,%u,%u]", &q[0], &q[1], &q[2], &q[3]) != 4) return -1;
    for (n = 0; n < 4; n++) if (q[n] > 3) return -1;
    in->dpp_ctrl = EMU_DPP_QUAD_PERM;
    in->dpp_val = (uint8_t)(q[0] | q[1] << 2 | q[2] << 4 | q[3] << 6);
    return 0;
  }
  static const struct { const char *n; uint8_t ctrl; } dpp[] = {
      {"row_shl", EMU_DPP_ROW_SHL}, {"row_shr", EMU_DPP_ROW_SHR}, {"row_ror", EMU_DPP_ROW_ROR},
      {"wave_shl", EMU_DPP_WAVE_SHL}, {"wave_rol", EMU_DPP_WAVE_ROL}, {"wave_shr", EMU_DPP_WAVE_SHR},
      {"wave_ror", EMU_DPP_WAVE_ROR}};
  for (size_t i = 0; i < sizeof dpp / sizeof dpp[0]; i++)
    if (!strcmp(key, dpp[i].n)) {
      if (parse_uint(val, &v) || v < 1 || v > 15) return -1;
      in->dpp_ctrl = dpp[i].ctrl; in->dpp_val = (uint8_t)v;
      return 0;
    }
  if (!strcmp(key, "row_bcast")) {
    if (!strcmp(val, "15")) in->dpp_ctrl = EMU_DPP_ROW_BCAST15;
    else if (!strcmp(val, "31")) in->dpp_ctrl = EMU_DPP_ROW_BCAST31;
    else return -1;
    return 0;
  }
  if (!strcmp(key, "bitop3")) { if (parse_uint(val, &v) || v < 0 || v > 255) return -1; in->simm = (int32_t)v; return 0; }
  if (!strcmp(key, "row_mask")) { if (parse_uint(val, &v)) return -1; in->row_mask = (uint8_t)v; return 0; }
  if (!strcmp(key, "bank_mask")) { if (parse_uint(val, &v)) return -1; in->bank_mask = (uint8_t)v; return 0; }
  if (!strcmp(key, "bound_ctrl")) { in->bound_ctrl = 1; return 0; }
  return -1;
}

static int is_branch(uint16_t op) {
  return op == EMU_OP_S_BRANCH || (op >= EMU_OP_S_CBRANCH_SCC0 && op <= EMU_OP_S_CBRANCH_EXECNZ);
}
static int is_sopk(uint16_t op) {
  switch (op) {
  case EMU_OP_S_MOVK_I32: case EMU_OP_S_ADDK_I32: case EMU_OP_S_MULK_I32: case EMU_OP_S_CMOVK_I32:
    return 1;
  default:
    return op >= EMU_OP_S_CMPK_EQ_U32 && op <= EMU_OP_S_CMPK_LE_I32;
  }
}

static char g_badbuf_unused;

/* Sets in->bad to a static reason; returns the status of "ok" either way. */
#define BAD(msg) do { in->bad = (msg); in->fn = NULL; return CONVJIT_OK; } while (0)

static const struct { const char *suf; uint8_t enc; } emu_enc_sufs[] = {
    {"_e32", EMU_ENC_E32}, {"_e64", EMU_ENC_E64}, {"_sdwa", EMU_ENC_SDWA}, {"_dpp", EMU_ENC_DPP}};

/* Length of the encoding suffix (_e32/_e64/_sdwa/_dpp) ending mn, or 0. */
static size_t emu_enc_suffix_len(const char *mn) {
  size_t ml = strlen(mn);
  for (size_t i = 0; i < sizeof emu_enc_sufs / sizeof emu_enc_sufs[0]; i++) {
    size_t sl = strlen(emu_enc_sufs[i].suf);
    if (ml > sl && !strcmp(mn + ml - sl, emu_enc_sufs[i].suf)) return sl;
  }
  return 0;
}

const emu_isa_row *emu_isa_lookup_mnemonic(const char *mn, uint8_t *enc) {
  char base[64];
  size_t ml = strlen(mn), sl = emu_enc_suffix_len(mn);
  if (ml >= sizeof base) return NULL;
  memcpy(base, mn, ml - sl);
  base[ml - sl] = 0;
  if (enc && sl)
    for (size_t i = 0; i < sizeof emu_enc_sufs / sizeof emu_enc_sufs[0]; i++)
      if (!strcmp(mn + ml - sl, emu_enc_sufs[i].suf)) *enc = emu_enc_sufs[i].enc;
  return emu_isa_lookup(base);
}

convjit_status emu_decode_text(const char *text, uint32_t pc, const uint8_t *bytes, uint32_t size,
                               emu_inst *in) {
  (void)g_badbuf_unused;
  memset(in, 0, sizeof *in);
  in->pc = pc;
  in->size = (uint8_t)size;
  in->op_sel_hi = 0;
  in->row_mask = 0xf; in->bank_mask = 0xf;
  in->vmcnt = 63; in->expcnt = 7; in->lgkmcnt = 15;
  while (*text == '\t' || *text == ' ') text++;
  char line[256];
  size_t n = strlen(text);
  if (n >= sizeof line) n = sizeof line - 1;
  memcpy(line, text, n); line[n] = 0;
  char *semi = strchr(line, ';'); /* "; Warning: ..." diagnostics */
  if (semi) *semi = 0;
  while (n && (line[n - 1] == ' ' || line[n - 1] == '\n')) line[--n] = 0;
  n = strlen(line);
  while (n && line[n - 1] == ' ') line[--n] = 0;
  char mn[64];
  size_t ml = strcspn(line, " ");
  if (ml == 0 || ml >= sizeof mn) BAD("empty or overlong mnemonic");
  memcpy(mn, line, ml); mn[ml] = 0;
  const emu_isa_row *row = emu_isa_lookup_mnemonic(mn, &in->enc);
  if (!row) BAD("instruction not in the emulator's ISA table");
  mn[ml - emu_enc_suffix_len(mn)] = 0;
  in->op = row->op; in->cls = row->cls; in->ndst = row->ndst; in->fn = row->fn;
  if (!strncmp(mn, "v_pk_", 5) || in->cls == EMU_CLASS_MFMA) in->op_sel_hi = 0x7; /* VOP3P default */

  uint32_t w0 = 0;
  if (bytes && size >= 4) memcpy(&w0, bytes, 4);
  /* SOPP / SOPK: immediates from the encoding (text forms vary). */
  if (is_branch(in->op)) {
    int16_t simm = (int16_t)(w0 & 0xffff);
    in->simm = simm;
    in->target = (uint32_t)((int64_t)pc + 4 + (int64_t)simm * 4);
    return CONVJIT_OK;
  }
  if (in->op == EMU_OP_S_WAITCNT) {
    uint32_t s16 = w0 & 0xffff;
    in->vmcnt = (uint8_t)((s16 & 0xf) | ((s16 >> 14) & 3) << 4);
    in->expcnt = (uint8_t)((s16 >> 4) & 7);
    in->lgkmcnt = (uint8_t)((s16 >> 8) & 0xf);
    in->simm = (int32_t)s16;
    return CONVJIT_OK;
  }
  if (in->op == EMU_OP_S_NOP || in->op == EMU_OP_S_SETPRIO || in->op == EMU_OP_S_SLEEP ||
      in->op == EMU_OP_S_SETHALT || in->op == EMU_OP_S_BARRIER || in->op == EMU_OP_S_ENDPGM) {
    in->simm = (int32_t)(w0 & 0xffff);
    return CONVJIT_OK;
  }
  if (is_sopk(in->op)) in->simm = (int16_t)(w0 & 0xffff);

  toks tk;
  if (tokenize(line + ml, &tk)) BAD("too many operand tokens");
  int src_sel[2] = {0, 0};
  int i = 0;
  /* s_waitcnt-like counter tokens never reach here; operands first, then modifiers */
  for (; i < tk.n; i++) {
    emu_operand o;
    if (parse_operand(tk.t[i], &o)) break;
    if (in->nops == EMU_MAX_OPS) BAD("too many operands");
    in->o[in->nops++] = o;
  }
  g_opsel_n = 0;
  for (; i < tk.n; i++)
    if (parse_modifier(tk.t[i], in, src_sel)) BAD("unknown operand or modifier");
  /* VOP3 op_sel: normalise the destination bit to bit 3 */
  unsigned nsrc = in->nops > in->ndst ? in->nops - in->ndst : 0;
  if (g_opsel_n && g_opsel_n == nsrc + 1 && g_opsel_n - 1 != 3) {
    unsigned dbit = (in->op_sel >> (g_opsel_n - 1)) & 1;
    in->op_sel = (uint8_t)((in->op_sel & ((1u << (g_opsel_n - 1)) - 1)) | dbit << 3);
  }
  for (unsigned k = 0; k < in->nops; k++) {
    emu_operand *o = &in->o[k];
    o->flags |= k < in->ndst ? EMU_OPF_WRITE : EMU_OPF_READ;
  }
  /* SDWA source selects belong to the first two source operands. */
  if (in->enc == EMU_ENC_SDWA) {
    unsigned first = in->ndst;
    if (in->op >= EMU_OP_V_CMP_EQ_U32 && in->op <= EMU_OP_V_CMPX_LT_I32) first = 1;
    for (unsigned k = 0; k < 2 && first + k < in->nops; k++) in->o[first + k].sel = (uint8_t)src_sel[k];
  }
  if (in->op == EMU_OP_V_WRITELANE_B32 && in->nops) in->o[0].flags |= EMU_OPF_READ;
  if (in->cls == EMU_CLASS_MFMA && in->nops == 4) in->o[3].flags |= EMU_OPF_READ;
  return CONVJIT_OK;
}

/* ---- module decode ------------------------------------------------------------- */
/* State of one module's walk through pipeline/disasm.c's loop. */
typedef struct decode_walk {
  emu_module *m;
  size_t *text_off;    /* [slot]: the instruction's text in the pool (the pool moves while it grows) */
  size_t pool_cap, pool_len;
  uint32_t n;          /* instructions so far */
  convjit_status st;   /* out of memory growing the pool */
} decode_walk;

static int decode_one(void *user, const cj_inst_text *it) {
  decode_walk *d = user;
  emu_module *m = d->m;
  emu_inst *in = &m->insts[d->n];
  char longbuf[24];
  const char *t = it->text;
  if (!t) {
    uint32_t w;
    memcpy(&w, it->bytes, 4);
    memset(in, 0, sizeof *in);
    in->pc = it->offset; in->size = 4;
    in->bad = "bytes do not decode for this arch";
    snprintf(longbuf, sizeof longbuf, ".long 0x%08x", w);
    t = longbuf;
  } else {
    emu_decode_text(t, it->offset, it->bytes, it->size, in);
  }
  size_t tl = strlen(t);
  if (d->pool_len + tl + 1 > d->pool_cap) {
    size_t nc = d->pool_cap * 2 + tl + 1;
    char *np = realloc(m->strpool, nc);
    if (!np) { d->st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "emulator: out of memory"); return 1; }
    m->strpool = np; d->pool_cap = nc;
  }
  memcpy(m->strpool + d->pool_len, t, tl + 1);
  d->text_off[d->n] = d->pool_len;
  d->pool_len += tl + 1;
  m->inst_at[it->offset / 4] = in;
  d->n++;
  return 0;
}

convjit_status emu_decode_module(emu_module *m) {
  const cj_codeobj *co = m->co;
  uint32_t size = (uint32_t)co->text.size;
  m->text_size = size;
  uint32_t slots = size / 4 + 1;
  m->insts = calloc(slots, sizeof *m->insts);
  m->inst_at = calloc(slots, sizeof *m->inst_at);
  /* texts: at most ~96 bytes each on average; grow as needed */
  decode_walk d = {.m = m, .pool_cap = (size_t)slots * 64 + 256};
  m->strpool = malloc(d.pool_cap);
  if (!m->insts || !m->inst_at || !m->strpool)
    return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "emulator: out of memory decoding %u bytes of .text", size);
  d.text_off = calloc(slots, sizeof *d.text_off);
  if (!d.text_off) return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "emulator: out of memory");
  convjit_status st = cj_disasm_range(co, m->arch, 0, size, decode_one, &d);
  if (st == CONVJIT_ERR_INTERNAL) /* the only INTERNAL there: LLVM has no disassembler for the arch */
    st = CJ_ERR(CONVJIT_ERR_EMULATION, "emulator: LLVM disassembler for %s unavailable", m->arch->name);
  if (st == CONVJIT_OK) st = d.st;
  if (st != CONVJIT_OK) { free(d.text_off); return st; }
  m->ninsts = d.n;
  for (uint32_t i = 0; i < d.n; i++) m->insts[i].text = m->strpool + d.text_off[i];
  free(d.text_off);
  return CONVJIT_OK;
}

void emu_decode_free(emu_module *m) {
  if (!m) return;
  free(m->insts); free(m->inst_at); free(m->strpool);
  m->insts = NULL; m->inst_at = NULL; m->strpool = NULL;
}
