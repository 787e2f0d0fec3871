/* Epilogue descriptions (contract in kplan_epi.h): building, key, printout. */
#include "codegen/kplan.h"

static const struct {
  const char *name;
  int per_channel, per_element, scalar;
} cj_epi_rows[CJ_EPI_OP_COUNT] = {
#define CJ_EPI_ROW(id, nm, pc, pe, sc) [CJ_EPI_##id] = {nm, pc, pe, sc},
    CJ_EPI_OP_TABLE(CJ_EPI_ROW)
#undef CJ_EPI_ROW
};

const char *cj_epi_op_name(cj_epi_op op) {
  return op > CJ_EPI_NONE && op < CJ_EPI_OP_COUNT ? cj_epi_rows[op].name : NULL;
}

int cj_epi_op_per_channel(cj_epi_op op) {
  return op > CJ_EPI_NONE && op < CJ_EPI_OP_COUNT && cj_epi_rows[op].per_channel;
}

const char *cj_epi_act_name(int act) {
  static const char *const n[CJ_EPI_ACT_COUNT] = {"identity", "relu", "silu", "gelu"};
  return act >= 0 && act < CJ_EPI_ACT_COUNT ? n[act] : NULL;
}

const cj_epi_step *cj_epi_find(const cj_epilogue *e, cj_epi_op op) {
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++)
    if (e->ops[i].op == op) return &e->ops[i];
  return NULL;
}

int cj_epi_op_scalar(cj_epi_op op) { return op > CJ_EPI_NONE && op < CJ_EPI_OP_COUNT && cj_epi_rows[op].scalar; }

void cj_epi_add_args(cj_kplan *p, const cj_epilogue *e) {
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++) {
    const cj_epi_step *s = &e->ops[i];
    if (!s->role || cj_kplan_arg_index(p, (cj_arg_role)s->role) >= 0) continue;
    if (cj_epi_op_scalar((cj_epi_op)s->op)) cj_kplan_add_value_arg(p, (cj_arg_role)s->role, NULL);
    else cj_kplan_add_arg(p, (cj_arg_role)s->role, NULL);
  }
}

convjit_status cj_epi_push(cj_epilogue *e, cj_epi_op op, int role, int dtype) {
  CJ_CHECK(e->nops < CJ_EPI_MAX_OPS, CONVJIT_ERR_INTERNAL, "epilogue: more than %d ops", CJ_EPI_MAX_OPS);
  e->ops[e->nops++] = (cj_epi_step){.op = (uint8_t)op, .role = (uint8_t)role, .dtype = (uint8_t)dtype, .beta = 1.0f};
  return CONVJIT_OK;
}

int cj_epi_out_dtype(const cj_epilogue *e) {
  int dt = CONVJIT_DTYPE_F32;
  for (uint32_t i = 0; i < e->nops && i < CJ_EPI_MAX_OPS; i++)
    if (e->ops[i].op == CJ_EPI_CONVERT) dt = e->ops[i].dtype;
  return dt;
}

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
