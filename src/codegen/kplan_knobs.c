/* The conv knob table (contract in kplan_knobs.h). */
#include <stdio.h>
#include <string.h>
#include "codegen/kplan_knobs.h"

static const cj_knob cj_knobs[] = {
#define CJ_KNOB_ROW(nm, kind, fa, fb, lo, hi, tun, help)                                                     \
  {nm, CJ_KNOB_##kind, offsetof(cj_conv_opts, fa), offsetof(cj_conv_opts, fb), lo, hi, tun, help},
    CJ_CONV_KNOB_TABLE(CJ_KNOB_ROW)
#undef CJ_KNOB_ROW
};
/* Every knob field is 4 bytes (uint32_t or int), so one store fits all. */
#define CJ_KNOB_SIZE_CHECK(nm, kind, fa, fb, lo, hi, tun, help)                                              \
  _Static_assert(sizeof(((cj_conv_opts *)0)->fa) == 4 && sizeof(((cj_conv_opts *)0)->fb) == 4, "knob " nm);
CJ_CONV_KNOB_TABLE(CJ_KNOB_SIZE_CHECK)
#undef CJ_KNOB_SIZE_CHECK

const cj_knob *cj_conv_knobs(uint32_t *count) {
  if (count) *count = sizeof cj_knobs / sizeof cj_knobs[0];
  return cj_knobs;
}

const cj_knob *cj_conv_knob_find(const char *name, size_t len) {
  for (size_t i = 0; name && i < sizeof cj_knobs / sizeof cj_knobs[0]; i++)
    if (strlen(cj_knobs[i].name) == len && !strncmp(cj_knobs[i].name, name, len)) return &cj_knobs[i];
  return NULL;
}

static void cj_knob_store(cj_conv_opts *o, size_t off, uint32_t v) { memcpy((char *)o + off, &v, 4); }

uint32_t cj_conv_knob_get(const cj_conv_opts *o, const cj_knob *k, int second) {
  uint32_t v;
  memcpy(&v, (const char *)o + (second ? k->off_b : k->off_a), 4);
  return v;
}

int cj_conv_knob_zero(const cj_conv_opts *o, const cj_knob *k) {
  if (k->kind == CJ_KNOB_FLAG || k->lo == 0) return 0;
  return cj_conv_knob_get(o, k, 0) == 0 || (k->kind == CJ_KNOB_PAIR && cj_conv_knob_get(o, k, 1) == 0);
}

const char *cj_conv_knob_zero_why(const cj_knob *k) {
  static _Thread_local char why[160];
  snprintf(why, sizeof why, "0 is not a choice (0 would mean 'not forced'): give %s%u..%u, or leave %s out to let "
           "convjit choose", k->kind == CJ_KNOB_PAIR ? "both values in " : "", k->lo, k->hi, k->name);
  return why;
}

/* One unsigned decimal < 2^32 at s (len bytes); *used = digits read. */
static int cj_knob_u32(const char *s, size_t len, uint32_t *v, size_t *used) {
  size_t i = 0;
  uint64_t x = 0;
  while (i < len && s[i] >= '0' && s[i] <= '9' && x <= UINT32_MAX) x = x * 10 + (uint64_t)(s[i++] - '0');
  if (i == 0 || x > UINT32_MAX) return 0;
  *v = (uint32_t)x;
  *used = i;
  return 1;
}

convjit_status cj_conv_knob_set(cj_conv_opts *o, const cj_knob *k, const char *value, size_t len, const char *what) {
  if (k->kind == CJ_KNOB_FLAG) {
    CJ_CHECK(value == NULL, CONVJIT_ERR_INVALID_ARG, "%s = %.*s: a flag takes no value", what, (int)len, value);
    cj_knob_store(o, k->off_a, 1);
    return CONVJIT_OK;
  }
  CJ_CHECK(value != NULL && len > 0, CONVJIT_ERR_INVALID_ARG, "%s needs a value", what);
  uint32_t a, b;
  size_t ua, ub;
  if (k->kind == CJ_KNOB_ONE) {
    CJ_CHECK(cj_knob_u32(value, len, &a, &ua) && ua == len, CONVJIT_ERR_INVALID_ARG,
             "%s = %.*s: expected an unsigned integer < 2^32", what, (int)len, value);
    cj_knob_store(o, k->off_a, a);
    return CONVJIT_OK;
  }
  int ok = cj_knob_u32(value, len, &a, &ua) && ua + 1 < len && (value[ua] == 'x' || value[ua] == ',') &&
           cj_knob_u32(value + ua + 1, len - ua - 1, &b, &ub) && ua + 1 + ub == len;
  CJ_CHECK(ok, CONVJIT_ERR_INVALID_ARG, "%s = %.*s: expected AxB (or A,B), unsigned integers < 2^32", what, (int)len,
           value);
  cj_knob_store(o, k->off_a, a);
  cj_knob_store(o, k->off_b, b);
  return CONVJIT_OK;
}

int cj_conv_knob_tunable(const cj_knob *k) { return k->tunable; }

void cj_conv_knobs_help(cj_strbuf *out, const char *pre, const char *sep, int (*keep)(const cj_knob *k)) {
  for (size_t i = 0; i < sizeof cj_knobs / sizeof cj_knobs[0]; i++) {
    const cj_knob *k = &cj_knobs[i];
    if (keep && !keep(k)) continue;
    char lhs[48];
    snprintf(lhs, sizeof lhs, "%s%s%s%s", pre, k->name, k->kind == CJ_KNOB_FLAG ? "" : sep,
             k->kind == CJ_KNOB_FLAG ? "" : k->kind == CJ_KNOB_PAIR ? "AxB" : "N");
    if (k->kind == CJ_KNOB_FLAG) cj_sb_printf(out, "  %-18s %s\n", lhs, k->help);
    else cj_sb_printf(out, "  %-18s %s (%u..%u)\n", lhs, k->help, k->lo, k->hi);
  }
}
