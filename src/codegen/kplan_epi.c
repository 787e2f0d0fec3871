/* Epilogue descriptions (contract in kplan_epi.h): building, spec tokens,
 * key, printout. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/kplan.h"

typedef enum { CJ_EPI_READS_NOTHING, CJ_EPI_READS_CHANNEL, CJ_EPI_READS_ELEMENT, CJ_EPI_READS_SCALAR } cj_epi_reads;
typedef enum { CJ_EPI_PARAM_NONE, CJ_EPI_PARAM_BETA, CJ_EPI_PARAM_ACT, CJ_EPI_PARAM_DTYPE } cj_epi_param;

static const struct {
  const char *name, *spec;
  cj_arg_role role;
  cj_epi_reads reads;
  cj_epi_param param;
} cj_epi_rows[CJ_EPI_OP_COUNT] = {
#define CJ_EPI_ROW(id, nm, sp, rl, rd, pa) \
  [CJ_EPI_##id] = {nm, sp, CJ_ARG_##rl, CJ_EPI_READS_##rd, CJ_EPI_PARAM_##pa},
    CJ_EPI_OP_TABLE(CJ_EPI_ROW)
#undef CJ_EPI_ROW
};

static int cj_epi_known(cj_epi_op op) { return op > CJ_EPI_NONE && op < CJ_EPI_OP_COUNT; }

const char *cj_epi_op_name(cj_epi_op op) { return cj_epi_known(op) ? cj_epi_rows[op].name : NULL; }
int cj_epi_op_per_channel(cj_epi_op op) { return cj_epi_known(op) && cj_epi_rows[op].reads == CJ_EPI_READS_CHANNEL; }
int cj_epi_op_scalar(cj_epi_op op) { return cj_epi_known(op) && cj_epi_rows[op].reads == CJ_EPI_READS_SCALAR; }
int cj_epi_op_public(cj_epi_op op) { return cj_epi_known(op) && cj_epi_rows[op].spec[0] != 0; }

const char *cj_epi_act_name(int act) {
  static const char *const n[CJ_EPI_ACT_COUNT] = {"identity", "relu", "silu", "gelu"};
  return act >= 0 && act < CJ_EPI_ACT_COUNT ? n[act] : NULL;
}

const cj_epi_step *cj_epi_find(const cj_epilogue *e, cj_epi_op op) {
  for (uint32_t i = 0; e && i < e->nops && i < CJ_EPI_MAX_OPS; i++)
    if (e->ops[i].op == op) return &e->ops[i];
  return NULL;
}

int cj_epi_has(const cj_epilogue *e, cj_epi_op op) { return cj_epi_find(e, op) != NULL; }

float cj_epi_beta(const cj_epilogue *e) {
  const cj_epi_step *s = cj_epi_find(e, CJ_EPI_RESIDUAL);
  return s ? s->beta : 1.0f;
}

int cj_epi_activation(const cj_epilogue *e) {
  const cj_epi_step *s = cj_epi_find(e, CJ_EPI_ACTIVATION);
  return s ? s->act : CJ_EPI_ACT_IDENTITY;
}

cj_epi_step *cj_epi_add(cj_epilogue *e, cj_epi_op op) {
  if (!cj_epi_known(op)) return NULL;
  uint32_t i = 0;
  while (i < e->nops && i < CJ_EPI_MAX_OPS && e->ops[i].op < op) i++;
  if (i < e->nops && e->ops[i].op == op) return &e->ops[i];
  if (e->nops >= CJ_EPI_MAX_OPS) return NULL;
  memmove(&e->ops[i + 1], &e->ops[i], (e->nops - i) * sizeof e->ops[0]);
  e->nops++;
  e->ops[i] = (cj_epi_step){.op = (uint8_t)op, .role = (uint8_t)cj_epi_rows[op].role, .beta = 1.0f};
  return &e->ops[i];
}

void cj_epi_add_args(cj_kplan *p, const cj_epilogue *e) {
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++) {
    const cj_epi_step *s = &e->ops[i];
    if (!s->role || cj_kplan_arg_index(p, (cj_arg_role)s->role) >= 0) continue;
    if (cj_epi_op_scalar((cj_epi_op)s->op)) cj_kplan_add_value_arg(p, (cj_arg_role)s->role, NULL);
    else cj_kplan_add_arg(p, (cj_arg_role)s->role, NULL);
  }
}

int cj_epi_out_dtype(const cj_epilogue *e) {
  int dt = CONVJIT_DTYPE_F32;
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++)
    if (e->ops[i].op == CJ_EPI_CONVERT) dt = e->ops[i].dtype;
  return dt;
}

convjit_status cj_epi_check_desc(const cj_epilogue *e, const char *what) {
  if (!e) return CONVJIT_OK;
  CJ_CHECK(e->nops <= CJ_EPI_MAX_OPS, CONVJIT_ERR_INVALID_ARG, "%s: %u ops, at most %d", what, e->nops,
           CJ_EPI_MAX_OPS);
  for (uint32_t i = 0; i < e->nops; i++) {
    const cj_epi_step *s = &e->ops[i];
    cj_epi_op op = (cj_epi_op)s->op;
    CJ_CHECK(cj_epi_op_public(op), CONVJIT_ERR_INVALID_ARG, "%s: op %s%s", what, cj_epi_op_name(op) ? "" : "#",
             cj_epi_op_name(op) ? cj_epi_op_name(op) : "?");
    CJ_CHECK(i == 0 || e->ops[i - 1].op < s->op, CONVJIT_ERR_INVALID_ARG,
             "%s: op %s out of order or twice (the op table's order)", what, cj_epi_op_name(op));
    CJ_CHECK(s->role == cj_epi_rows[op].role, CONVJIT_ERR_INVALID_ARG, "%s: op %s reads role %u, not its own",
             what, cj_epi_op_name(op), s->role);
    CJ_CHECK(isfinite(s->beta), CONVJIT_ERR_INVALID_ARG, "%s: %s beta = %g: must be finite", what,
             cj_epi_op_name(op), (double)s->beta);
    CJ_CHECK(s->act < CJ_EPI_ACT_COUNT, CONVJIT_ERR_INVALID_ARG, "%s: act = %u: must be 0..%d", what, s->act,
             CJ_EPI_ACT_COUNT - 1);
    CJ_CHECK(op != CJ_EPI_ACTIVATION || s->act != CJ_EPI_ACT_IDENTITY, CONVJIT_ERR_INVALID_ARG,
             "%s: an identity activation is no op (leave it out)", what);
  }
  return CONVJIT_OK;
}

convjit_status cj_epi_compose(cj_epilogue *out, const cj_epilogue *desc, int alpha, int out_dtype) {
  memset(out, 0, sizeof *out);
  if (desc) *out = *desc;
  cj_epi_step *s = alpha ? cj_epi_add(out, CJ_EPI_ALPHA) : NULL;
  CJ_CHECK(!alpha || s, CONVJIT_ERR_INTERNAL, "epilogue: more than %d ops", CJ_EPI_MAX_OPS);
  s = cj_epi_add(out, CJ_EPI_CONVERT);
  CJ_CHECK(s, CONVJIT_ERR_INTERNAL, "epilogue: more than %d ops", CJ_EPI_MAX_OPS);
  s->dtype = (uint8_t)out_dtype;
  return CONVJIT_OK;
}

/* ---- spec tokens ---- */

cj_epi_op cj_epi_spec_op(const char *name, size_t len) {
  for (int op = CJ_EPI_NONE + 1; name && op < CJ_EPI_OP_COUNT; op++)
    if (cj_epi_rows[op].spec[0] && strlen(cj_epi_rows[op].spec) == len && !strncmp(cj_epi_rows[op].spec, name, len))
      return (cj_epi_op)op;
  return CJ_EPI_NONE;
}

convjit_status cj_epi_spec_set(cj_epilogue *e, cj_epi_op op, const char *v, size_t len, const char *what) {
  CJ_CHECK(cj_epi_op_public(op), CONVJIT_ERR_INVALID_ARG, "%s: not an epilogue op", what);
  CJ_CHECK(!cj_epi_has(e, op), CONVJIT_ERR_INVALID_ARG, "%s: given twice", what);
  char buf[48] = "";
  CJ_CHECK(!v || len < sizeof buf, CONVJIT_ERR_INVALID_ARG, "%s = %.*s: too long", what, (int)len, v);
  if (v) memcpy(buf, v, len), buf[len] = 0;
  cj_epi_step s = {.op = (uint8_t)op, .role = (uint8_t)cj_epi_rows[op].role, .beta = 1.0f};
  switch (cj_epi_rows[op].param) {
  case CJ_EPI_PARAM_BETA:
    if (v) {
      char *end = NULL;
      s.beta = strtof(buf, &end);
      CJ_CHECK(len > 0 && end == buf + len && isfinite(s.beta), CONVJIT_ERR_INVALID_ARG,
               "%s = %s: expected a finite float (its factor)", what, buf);
    }
    break;
  case CJ_EPI_PARAM_ACT: {
    int a = -1;
    for (int j = 0; v && cj_epi_act_name(j); j++)
      if (!strcmp(buf, cj_epi_act_name(j)) || (len == 1 && buf[0] == '0' + j)) a = j;
    CJ_CHECK(a >= 0, CONVJIT_ERR_INVALID_ARG, "%s = %s: expected identity, relu, silu, gelu (or 0..3)", what,
             v ? buf : "(none)");
    if (a == CJ_EPI_ACT_IDENTITY) return CONVJIT_OK; /* no op: the canonical list leaves it out */
    s.act = (uint8_t)a;
    break;
  }
  case CJ_EPI_PARAM_NONE:
    CJ_CHECK(!v, CONVJIT_ERR_INVALID_ARG, "%s = %s: takes no value", what, buf);
    break;
  case CJ_EPI_PARAM_DTYPE: return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "%s: not an epilogue op", what);
  }
  cj_epi_step *d = cj_epi_add(e, op);
  CJ_CHECK(d, CONVJIT_ERR_INVALID_ARG, "%s: more than %d epilogue ops", what, CJ_EPI_MAX_OPS);
  *d = s;
  return CONVJIT_OK;
}

void cj_epi_spec_text(const cj_epilogue *e, const char *sep, cj_strbuf *sb) {
  int first = 1;
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++) {
    const cj_epi_step *s = &e->ops[i];
    if (!cj_epi_op_public((cj_epi_op)s->op)) continue;
    cj_sb_printf(sb, "%s%s", first ? "" : sep, cj_epi_rows[s->op].spec);
    first = 0;
    if (cj_epi_rows[s->op].param == CJ_EPI_PARAM_BETA && s->beta != 1.0f) cj_sb_printf(sb, "=%a", (double)s->beta);
    if (cj_epi_rows[s->op].param == CJ_EPI_PARAM_ACT) cj_sb_printf(sb, "=%s", cj_epi_act_name(s->act));
  }
}

void cj_epi_spec_help(cj_strbuf *out, const char *pre) {
  static const char *const form[] = {[CJ_EPI_PARAM_NONE] = "", [CJ_EPI_PARAM_BETA] = "[=BETA]",
                                     [CJ_EPI_PARAM_ACT] = "=relu|silu|gelu", [CJ_EPI_PARAM_DTYPE] = ""};
  for (int op = CJ_EPI_NONE + 1; op < CJ_EPI_OP_COUNT; op++) {
    if (!cj_epi_rows[op].spec[0]) continue;
    char lhs[48];
    snprintf(lhs, sizeof lhs, "%s%s%s", pre, cj_epi_rows[op].spec, form[cj_epi_rows[op].param]);
    cj_sb_printf(out, "  %-18s epilogue op %s\n", lhs, cj_epi_rows[op].name);
  }
}

/* ---- key and printout ---- */

/* "bias@bias,convert:bf16" (op@argument-role, :dtype for CONVERT, *beta for
 * a RESIDUAL whose beta is not 1, :act for ACTIVATION); "none". */
static void cj_epi_text(cj_strbuf *sb, const cj_epilogue *e) {
  if (e->nops == 0) cj_sb_printf(sb, "none");
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++) {
    const cj_epi_step *s = &e->ops[i];
    const char *n = cj_epi_op_name((cj_epi_op)s->op);
    cj_sb_printf(sb, "%s%s", i ? "," : "", n ? n : "?");
    if (s->role) {
      const char *r = cj_arg_role_name((cj_arg_role)s->role);
      cj_sb_printf(sb, "@%s", r ? r : "?");
    }
    if (s->op == CJ_EPI_CONVERT) cj_sb_printf(sb, ":%s", cj_dtype_name((convjit_dtype)s->dtype));
    if (s->op == CJ_EPI_RESIDUAL && s->beta != 1.0f) cj_sb_printf(sb, "*%a", (double)s->beta);
    if (s->op == CJ_EPI_ACTIVATION) {
      const char *a = cj_epi_act_name(s->act);
      cj_sb_printf(sb, ":%s", a ? a : "?");
    }
  }
}

void cj_epi_key(cj_strbuf *key, const char *field, cj_epilogue e) {
  cj_sb_printf(key, "%s=", field);
  cj_epi_text(key, &e);
  cj_sb_printf(key, ";");
}

void cj_epi_print(cj_strbuf *out, const char *field, cj_epilogue e, const char *reason) {
  cj_sb_printf(out, "  %-14s = ", field);
  cj_epi_text(out, &e);
  cj_sb_printf(out, "  # %s\n", reason);
}
