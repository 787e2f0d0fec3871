/* Plan key and printout (contract in kplan.h). The common header (launch
 * shape, LDS, arguments) is written here; each family writes its own
 * specialization fields through its hook (kplan_layout.c, kplan_conv.c),
 * dispatched on p->op. Keys are text, field by field: never a memcmp of a
 * struct with padding. */
#include <inttypes.h>
#include <stdio.h>
#include "codegen/kplan.h"

const char *cj_kop_name(cj_kop op) {
  switch (op) {
  case CJ_KOP_TRANSPOSE: return "transpose";
  case CJ_KOP_WEIGHT_PACK: return "weight_pack";
  case CJ_KOP_CONV_BF16: return "conv_bf16";
  case CJ_KOP_CONV_FINALIZE: return "conv_finalize";
  case CJ_KOP_CONV_FP8: return "conv_fp8";
  }
  return NULL;
}

void cj_kplan_key_u64(cj_strbuf *key, const char *field, uint64_t v) {
  cj_sb_printf(key, "%s=%" PRIu64 ";", field, v);
}

void cj_kplan_print_u64(cj_strbuf *out, const char *field, uint64_t v, const char *reason) {
  if (reason && *reason) cj_sb_printf(out, "  %-14s = %-12" PRIu64 " # %s\n", field, v, reason);
  else cj_sb_printf(out, "  %-14s = %" PRIu64 "\n", field, v);
}

static void cj_kplan_op(const cj_kplan *p, cj_strbuf *sb, const char *fmt_known, const char *fmt_unknown) {
  const char *n = cj_kop_name(p->op);
  if (n) cj_sb_printf(sb, fmt_known, n);
  else cj_sb_printf(sb, fmt_unknown, (int)p->op);
}

/* The family's own fields: its key part or its printout. */
static void cj_kplan_family(const cj_kplan *p, cj_strbuf *sb, int key) {
  switch (p->op) {
  case CJ_KOP_TRANSPOSE:
  case CJ_KOP_WEIGHT_PACK: (key ? cj_kplan_layout_key : cj_kplan_layout_print)(p, sb); break;
  case CJ_KOP_CONV_BF16:
  case CJ_KOP_CONV_FINALIZE: (key ? cj_kplan_conv_key : cj_kplan_conv_print)(p, sb); break;
  /* conv families add their cases here */
  default: break;
  }
}

void cj_kplan_key(const cj_kplan *p, cj_strbuf *key) {
  if (!p) { cj_sb_printf(key, "null;"); return; }
  cj_kplan_op(p, key, "op=%s;", "op=%d;");
  cj_sb_printf(key, "name=%s;", p->name);
  cj_sb_printf(key, "block=%ux%ux%u;", p->block[0], p->block[1], p->block[2]);
  cj_sb_printf(key, "grid=%" PRIu64 "x%" PRIu64 "x%" PRIu64 ";", p->grid[0], p->grid[1], p->grid[2]);
  cj_kplan_key_u64(key, "lds", p->lds_bytes);
  cj_sb_printf(key, "args=");
  for (uint32_t i = 0; i < p->nargs && i < CJ_KPLAN_MAX_ARGS; i++)
    cj_sb_printf(key, "%s%s:%c%u", i ? "," : "", p->args[i].name ? p->args[i].name : "?",
                 p->args[i].is_ptr ? 'p' : 'v', p->args[i].size);
  cj_sb_printf(key, ";");
  cj_kplan_family(p, key, 1);
}

convjit_status cj_kplan_name_from_key(cj_kplan *p, const char *prefix) {
  cj_strbuf key = {0};
  p->name[0] = 0;
  cj_kplan_key(p, &key);
  int oom = key.oom;
  uint64_t h = oom ? 0 : cj_hash64(key.s, key.len, 0);
  cj_sb_free(&key);
  CJ_CHECK(!oom, CONVJIT_ERR_OUT_OF_MEMORY, "%s plan key: out of memory", prefix);
  snprintf(p->name, sizeof p->name, "%s_%016" PRIx64, prefix, h);
  return CONVJIT_OK;
}

void cj_kplan_print(const cj_kplan *p, cj_strbuf *out) {
  if (!p) { cj_sb_printf(out, "plan: (null)\n"); return; }
  cj_kplan_op(p, out, "plan %s\n", "plan op=%d\n");
  cj_sb_printf(out, "  %-14s = %s\n", "name", p->name);
  cj_sb_printf(out, "  %-14s = %s\n", "arch", p->arch ? p->arch->name : "(none)");
  cj_sb_printf(out, "  %-14s = %u x %u x %u\n", "block", p->block[0], p->block[1], p->block[2]);
  cj_sb_printf(out, "  %-14s = %" PRIu64 " x %" PRIu64 " x %" PRIu64 "\n", "grid", p->grid[0], p->grid[1],
               p->grid[2]);
  cj_kplan_print_u64(out, "lds_bytes", p->lds_bytes, "static LDS the kernel declares");
  for (uint32_t i = 0; i < p->nargs && i < CJ_KPLAN_MAX_ARGS; i++)
    cj_sb_printf(out, "  arg[%u]         = %s (%s, %u bytes)\n", i, p->args[i].name ? p->args[i].name : "?",
                 p->args[i].is_ptr ? "global pointer" : "value", p->args[i].size);
  cj_kplan_family(p, out, 0);
}
