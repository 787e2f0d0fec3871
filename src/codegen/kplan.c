/* The plan's common part (contract in kplan.h): argument lists, the key
 * and printout of the common header (launch shape, LDS, arguments), the
 * naming of kernels, and the op table's name and prefix columns. Below
 * every op's plan file (kplan_<op>.c), which calls in here; kops.c, above
 * them, adds each op's own fields through the table's hooks. Keys are
 * text, field by field: never a memcmp of a struct with padding. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "codegen/kplan.h"

/* The op table's name and prefix columns, by op (data only: the hook
 * columns are kops.c's, so this file calls no op's code). */
typedef struct cj_kop_row {
  const char *name, *prefix;
} cj_kop_row;

static const cj_kop_row cj_kop_rows[CJ_KOP_COUNT] = {
#define CJ_KOP_ROW(id, nm, key, print, build, spec, prefix) [CJ_KOP_##id] = {nm, prefix},
    CJ_KOP_TABLE(CJ_KOP_ROW)
#undef CJ_KOP_ROW
};

static const cj_kop_row *cj_kop_row_of(cj_kop op) {
  return op > CJ_KOP_NONE && op < CJ_KOP_COUNT ? &cj_kop_rows[op] : NULL;
}

const char *cj_kop_name(cj_kop op) {
  const cj_kop_row *r = cj_kop_row_of(op);
  return r ? r->name : NULL;
}

const char *cj_kop_prefix(cj_kop op) {
  const cj_kop_row *r = cj_kop_row_of(op);
  return r ? r->prefix : NULL;
}

cj_kop cj_kop_from_name(const char *name) {
  for (int op = CJ_KOP_NONE + 1; name && op < CJ_KOP_COUNT; op++)
    if (!strcmp(cj_kop_rows[op].name, name)) return (cj_kop)op;
  return CJ_KOP_NONE;
}

static const char *const cj_role_names[CJ_ARG_ROLE_COUNT] = {
#define CJ_ROLE_NAME(id, nm) [CJ_ARG_##id] = nm,
    CJ_ARG_ROLE_TABLE(CJ_ROLE_NAME)
#undef CJ_ROLE_NAME
};

const char *cj_arg_role_name(cj_arg_role r) {
  return r > CJ_ARG_NONE && r < CJ_ARG_ROLE_COUNT ? cj_role_names[r] : NULL;
}

void cj_kplan_add_arg(cj_kplan *p, cj_arg_role role, const char *name) {
  if (p->nargs >= CJ_KPLAN_MAX_ARGS) return; /* plans add at most a handful; cj_irb_kernel checks nargs */
  p->args[p->nargs++] = (cj_karg_desc){.role = role, .name = name ? name : cj_arg_role_name(role), .is_ptr = 1,
                                       .size = 8};
}

void cj_kplan_add_value_arg(cj_kplan *p, cj_arg_role role, const char *name) {
  if (p->nargs >= CJ_KPLAN_MAX_ARGS) return;
  p->args[p->nargs++] = (cj_karg_desc){.role = role, .name = name ? name : cj_arg_role_name(role), .is_ptr = 0,
                                       .size = 4};
}

int cj_kplan_arg_index(const cj_kplan *p, cj_arg_role role) {
  for (uint32_t i = 0; i < p->nargs && i < CJ_KPLAN_MAX_ARGS; i++)
    if (p->args[i].role == role) return (int)i;
  return -1;
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

uint32_t cj_kplan_co_version(const cj_kplan *p) {
  return p->code_object_version ? p->code_object_version : CJ_CODE_OBJECT_VERSION_DEFAULT;
}

void cj_kplan_key_head(const cj_kplan *p, cj_strbuf *key) {
  cj_kplan_op(p, key, "op=%s;", "op=%d;");
  cj_sb_printf(key, "name=%s;", p->name);
  /* The ELF differs by version. Written for a non-default one only, so
   * default keys and kernel names stay those of before the option. */
  if (cj_kplan_co_version(p) != CJ_CODE_OBJECT_VERSION_DEFAULT) cj_kplan_key_u64(key, "cov", cj_kplan_co_version(p));
  cj_sb_printf(key, "block=%ux%ux%u;", p->block[0], p->block[1], p->block[2]);
  cj_sb_printf(key, "grid=%" PRIu64 "x%" PRIu64 "x%" PRIu64 ";", p->grid[0], p->grid[1], p->grid[2]);
  cj_kplan_key_u64(key, "lds", p->lds_bytes);
  cj_sb_printf(key, "args=");
  for (uint32_t i = 0; i < p->nargs && i < CJ_KPLAN_MAX_ARGS; i++)
    cj_sb_printf(key, "%s%s:%c%u", i ? "," : "", p->args[i].name ? p->args[i].name : "?",
                 p->args[i].is_ptr ? 'p' : 'v', p->args[i].size);
  cj_sb_printf(key, ";");
}

convjit_status cj_kplan_name_from_key(cj_kplan *p, const char *prefix, cj_kplan_part own_key) {
  cj_strbuf key = {0};
  p->name[0] = 0;
  cj_kplan_key_head(p, &key); /* cj_kplan_key's text: the head, then the op's own fields */
  own_key(p, &key);
  int oom = key.oom;
  uint64_t h = oom ? 0 : cj_hash64(key.s, key.len, 0);
  cj_sb_free(&key);
  CJ_CHECK(!oom, CONVJIT_ERR_OUT_OF_MEMORY, "%s plan key: out of memory", prefix);
  snprintf(p->name, sizeof p->name, "%s_%016" PRIx64, prefix, h);
  return CONVJIT_OK;
}

void cj_kplan_print_head(const cj_kplan *p, cj_strbuf *out) {
  cj_kplan_op(p, out, "plan %s\n", "plan op=%d\n");
  cj_sb_printf(out, "  %-14s = %s\n", "name", p->name);
  cj_sb_printf(out, "  %-14s = %s\n", "arch", p->arch ? p->arch->name : "(none)");
  cj_kplan_print_u64(out, "code_object", cj_kplan_co_version(p), "AMDGPU code object version (EI_ABIVERSION)");
  cj_sb_printf(out, "  %-14s = %u x %u x %u\n", "block", p->block[0], p->block[1], p->block[2]);
  cj_sb_printf(out, "  %-14s = %" PRIu64 " x %" PRIu64 " x %" PRIu64 "\n", "grid", p->grid[0], p->grid[1],
               p->grid[2]);
  cj_kplan_print_u64(out, "lds_bytes", p->lds_bytes, "static LDS the kernel declares");
  for (uint32_t i = 0; i < p->nargs && i < CJ_KPLAN_MAX_ARGS; i++)
    cj_sb_printf(out, "  arg[%u]         = %s (%s, %u bytes)\n", i, p->args[i].name ? p->args[i].name : "?",
                 p->args[i].is_ptr ? "global pointer" : "value", p->args[i].size);
}
