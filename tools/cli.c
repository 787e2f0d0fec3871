/* Strict command-line values (contract in cli.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "codegen/kplan_epi.h"

static const char *g_tool = "convjit";

void cli_set_tool(const char *name) { g_tool = name; }

int cli_fail(const char *opt, const char *text, const char *why) {
  fprintf(stderr, "%s: %s '%s': %s\n", g_tool, opt, text ? text : "", why);
  return -1;
}

/* One unsigned decimal at s, ending at *end; 0 on success. */
static int cli_digits(const char *s, uint64_t *v, const char **end) {
  if (*s < '0' || *s > '9') return -1; /* strtoull would take space, '+' and '-' */
  char *e;
  errno = 0;
  unsigned long long x = strtoull(s, &e, 10);
  if (errno == ERANGE) return -2;
  *v = x;
  *end = e;
  return 0;
}

static int cli_range_msg(const char *opt, const char *text, const char *what, uint64_t lo, uint64_t hi) {
  char why[160];
  snprintf(why, sizeof why, "expected %s in %" PRIu64 "..%" PRIu64, what, lo, hi);
  return cli_fail(opt, text, why);
}

int cli_u64(const char *opt, const char *text, uint64_t lo, uint64_t hi, uint64_t *out) {
  uint64_t v;
  const char *end;
  if (!text || cli_digits(text, &v, &end) || *end || v < lo || v > hi)
    return cli_range_msg(opt, text, "an unsigned integer", lo, hi);
  *out = v;
  return 0;
}

int cli_double(const char *opt, const char *text, double lo_excl, double hi, double *out) {
  char *end = NULL;
  errno = 0;
  double v = text && ((*text >= '0' && *text <= '9') || *text == '.') ? strtod(text, &end) : NAN;
  if (!end || *end || errno || !isfinite(v) || !(v > lo_excl && v <= hi)) {
    char why[120];
    snprintf(why, sizeof why, "expected a decimal number in (%g, %g]", lo_excl, hi);
    return cli_fail(opt, text, why);
  }
  *out = v;
  return 0;
}

int cli_list(const char *opt, const char *text, int64_t *out, int min, int max, int64_t lo, int64_t hi) {
  char why[200];
  int n = 0;
  const char *p = text ? text : "";
  for (;;) {
    uint64_t v;
    const char *end;
    if (n == max) {
      snprintf(why, sizeof why, "more than %d values", max);
      return cli_fail(opt, text, why);
    }
    int rc = cli_digits(p, &v, &end);
    if (rc || v < (uint64_t)lo || v > (uint64_t)hi || (*end && *end != ',')) {
      if (rc == -1 && (*p == ',' || *p == 0))
        snprintf(why, sizeof why, "value %d is empty (values are separated by ',', with none after the last)", n + 1);
      else
        snprintf(why, sizeof why, "value %d: expected an unsigned integer in %" PRId64 "..%" PRId64, n + 1, lo, hi);
      return cli_fail(opt, text, why);
    }
    out[n++] = (int64_t)v;
    if (!*end) break;
    p = end + 1;
  }
  if (n < min) {
    snprintf(why, sizeof why, "%d value%s, expected %s%d", n, n == 1 ? "" : "s", min == max ? "" : "at least ", min);
    return cli_fail(opt, text, why);
  }
  return n;
}

int cli_knob(cj_conv_opts *o, const cj_knob *k, const char *opt, const char *text) {
  if (k->kind == CJ_KNOB_FLAG) {
    if (text) return cli_fail(opt, text, "a flag takes no value");
  } else if (k->kind == CJ_KNOB_ONE) {
    uint64_t v;
    if (cli_u64(opt, text, 0, UINT32_MAX, &v)) return -1;
  } else {
    uint64_t a, b;
    const char *end, *p = text ? text : "";
    if (cli_digits(p, &a, &end) || (*end != 'x' && *end != ',') || cli_digits(end + 1, &b, &end) || *end ||
        a > UINT32_MAX || b > UINT32_MAX)
      return cli_fail(opt, text, "expected AxB (or A,B), unsigned integers < 2^32");
  }
  cj_conv_opts v = *o;
  if (cj_conv_knob_set(&v, k, text, text ? strlen(text) : 0, opt) != CONVJIT_OK)
    return cli_fail(opt, text, cj_error_text()); /* not reached: the syntax was checked above */
  if (cj_conv_knob_zero(&v, k)) return cli_fail(opt, text, cj_conv_knob_zero_why(k));
  *o = v;
  return 0;
}

int cli_act(const char *opt, const char *text, int *act) {
  for (int j = 0; cj_epi_act_name(j); j++)
    if (text && !strcmp(text, cj_epi_act_name(j))) {
      *act = j;
      return 0;
    }
  return cli_fail(opt, text, "identity, relu, silu or gelu (tanh form)");
}

int cli_layout(const char *opt, const char *text, int *x_ndhwc, int *y_ndhwc) {
  const char *t = text ? text : "";
  size_t n = strcspn(t, ",");
  const char *y = t[n] == ',' ? t + n + 1 : t; /* one name: x and y alike */
  size_t ny = strlen(y);
  int xv = n == 5 && !strncmp(t, "ndhwc", 5), xc = n == 5 && !strncmp(t, "ncdhw", 5);
  int yv = ny == 5 && !strcmp(y, "ndhwc"), yc = ny == 5 && !strcmp(y, "ncdhw");
  if (!(xv || xc) || !(yv || yc)) return cli_fail(opt, text, "ncdhw, ndhwc, or x,y of those (ndhwc,ncdhw)");
  *x_ndhwc = xv;
  *y_ndhwc = yv;
  return 0;
}

void cli_json_str(cj_strbuf *sb, const char *s) {
  cj_sb_printf(sb, "\"");
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    switch (*c) {
    case '"': cj_sb_printf(sb, "\\\""); break;
    case '\\': cj_sb_printf(sb, "\\\\"); break;
    case '\n': cj_sb_printf(sb, "\\n"); break;
    case '\t': cj_sb_printf(sb, "\\t"); break;
    case '\r': cj_sb_printf(sb, "\\r"); break;
    default:
      if (*c < 0x20 || *c == 0x7f) cj_sb_printf(sb, "\\u%04x", *c);
      else cj_sb_printf(sb, "%c", *c);
    }
  }
  cj_sb_printf(sb, "\"");
}
