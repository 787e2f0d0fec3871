/* The op table's key and print hooks (kops.h), dispatched by op: the one
 * file that calls into every op's plan file. It sits above them; they call
 * only kplan.c (the common part), so plans and their registry form no loop
 * (scripts/check-layers). */
#include "codegen/kplan.h"

static const struct {
  cj_kplan_part key, print;
} cj_kop_hooks[CJ_KOP_COUNT] = {
#define CJ_KOP_HOOK_ROW(id, nm, key, print, build, spec, prefix) [CJ_KOP_##id] = {key, print},
    CJ_KOP_TABLE(CJ_KOP_HOOK_ROW)
#undef CJ_KOP_HOOK_ROW
};

void cj_kplan_key(const cj_kplan *p, cj_strbuf *key) {
  if (!p) { cj_sb_printf(key, "null;"); return; }
  cj_kplan_key_head(p, key);
  if (p->op > CJ_KOP_NONE && p->op < CJ_KOP_COUNT) cj_kop_hooks[p->op].key(p, key);
}

void cj_kplan_print(const cj_kplan *p, cj_strbuf *out) {
  if (!p) { cj_sb_printf(out, "plan: (null)\n"); return; }
  cj_kplan_print_head(p, out);
  if (p->op > CJ_KOP_NONE && p->op < CJ_KOP_COUNT) cj_kop_hooks[p->op].print(p, out);
}
