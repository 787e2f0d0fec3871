/* The conv knobs through the public API: the tunable rows of the knob table
 * (codegen/kplan_knobs.h) described one by one, and a conv plan created
 * with some of them forced from knob text ("tile=128x128 waves=2x4
 * stages=4 splitk=1 wgm=8", the tuner's candidate form). Frameworks that
 * expose choices of their own (the hipDNN engine plugin's knobs, hipdnn/)
 * read the table here instead of retyping it. */
#include <stdio.h>
#include <string.h>
#include "codegen/kplan_knobs.h"
#include "host/plan.h"
#include "host/tool_api.h"
#include "util/cj.h"

/* The i-th tunable knob (test hooks are not offered), NULL past the end. */
static const cj_knob *tunable_knob(int index) {
  uint32_t n = 0;
  const cj_knob *all = cj_conv_knobs(&n);
  for (uint32_t i = 0; i < n; i++)
    if (all[i].tunable && index-- == 0) return &all[i];
  return NULL;
}

CONVJIT_API convjit_status convjit_conv_knob_count(int *count) {
  cj_error_clear();
  CJ_CHECK(count, CONVJIT_ERR_INVALID_ARG, "count = NULL");
  *count = 0;
  while (tunable_knob(*count)) (*count)++;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_conv_knob_info(int index, convjit_knob_info *info) {
  cj_error_clear();
  CJ_CHECK(info, CONVJIT_ERR_INVALID_ARG, "info = NULL");
  CJ_CHECK(info->struct_size == sizeof *info, CONVJIT_ERR_VERSION,
           "info.struct_size = %zu: this library knows %zu", info->struct_size, sizeof *info);
  const cj_knob *k = tunable_knob(index);
  int count = 0;
  while (tunable_knob(count)) count++;
  CJ_CHECK(k, CONVJIT_ERR_INVALID_ARG, "index = %d: the knobs are 0..%d (convjit_conv_knob_count)", index, count - 1);
  snprintf(info->name, sizeof info->name, "%s", k->name);
  snprintf(info->help, sizeof info->help, "%s", k->help);
  info->pair = k->kind == CJ_KNOB_PAIR;
  info->lo = k->lo;
  info->hi = k->hi;
  return CONVJIT_OK;
}

/* knobs: space-separated name=value of tunable knobs; o filled, syntax and
 * 0 refused as the tools refuse them. */
static convjit_status knobs_parse(const char *knobs, cj_conv_opts *o) {
  for (const char *p = knobs; *p;) {
    while (*p == ' ') p++;
    if (!*p) break;
    size_t len = strcspn(p, " "), klen = strcspn(p, "= ");
    const cj_knob *k = cj_conv_knob_find(p, klen);
    CJ_CHECK(k && k->tunable, CONVJIT_ERR_INVALID_ARG,
             "knobs = \"%s\": '%.*s' is not a tunable knob (convjit_conv_knob_info lists them)", knobs, (int)klen, p);
    CJ_CHECK(klen < len, CONVJIT_ERR_INVALID_ARG, "knobs = \"%s\": %.*s needs a value (%.*s=...)", knobs, (int)klen,
             p, (int)klen, p);
    char what[48];
    snprintf(what, sizeof what, "knobs %s", k->name);
    CJ_TRY(cj_conv_knob_set(o, k, p + klen + 1, len - klen - 1, what));
    CJ_CHECK(!cj_conv_knob_zero(o, k), CONVJIT_ERR_INVALID_ARG, "%s = %.*s: %s", what, (int)(len - klen - 1),
             p + klen + 1, cj_conv_knob_zero_why(k));
    p += len;
  }
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_create_conv_knobs(convjit_context *ctx, const convjit_conv_desc *desc,
                                                          const char *knobs, convjit_plan **plan) {
  cj_error_clear();
  CJ_CHECK(plan, CONVJIT_ERR_INVALID_ARG, "plan = NULL: need somewhere to store the plan");
  *plan = NULL;
  cj_conv_opts o;
  memset(&o, 0, sizeof o);
  if (knobs) CJ_TRY(knobs_parse(knobs, &o));
  /* Nothing forced is the plain plan (memo, tuning table, heuristic). */
  if (cj_conv_opts_automatic(&o)) return convjit_plan_create_conv(ctx, desc, plan);
  return cj_plan_create_conv_opts(ctx, desc, &o, plan);
}
