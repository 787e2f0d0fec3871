/* Strict command-line values (contract in cli.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "codegen/kplan_epi.h"
#include "host/kinds.h"
#include "codegen/kspec.h"
#include "tool_data.h"

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

const char *cli_act_names(void) {
  static char names[96];
  size_t n = 0;
  if (!names[0])
    for (int j = 0; cj_epi_act_name(j) && n < sizeof names; j++)
      n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", j ? "|" : "", cj_epi_act_name(j));
  return names;
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

/* ---- the option loop ---------------------------------------------------------- */

cli_args cli_args_of(int argc, char **argv) { return (cli_args){argc, argv, 0, NULL}; }

int cli_next(cli_args *c) {
  if (++c->i >= c->argc) return 0;
  c->opt = c->argv[c->i];
  return 1;
}

int cli_is(const cli_args *c, const char *opt) { return !strcmp(c->opt, opt); }

const char *cli_value(cli_args *c) {
  if (c->i + 1 >= c->argc) {
    fprintf(stderr, "%s: %s needs a value\n", g_tool, c->opt);
    return NULL;
  }
  return c->argv[++c->i];
}

int cli_unknown(const cli_args *c) {
  fprintf(stderr, "%s: unknown option %s\n", g_tool, c->opt);
  return -1;
}

int cli_knob_opt(cli_args *c, cj_conv_opts *o, int tunable_only) {
  if (strncmp(c->opt, "--", 2)) return 0;
  const cj_knob *k = cj_conv_knob_find(c->opt + 2, strlen(c->opt + 2));
  if (!k || (tunable_only && !k->tunable)) return 0;
  const char *opt = c->opt, *v = NULL;
  if (k->kind != CJ_KNOB_FLAG && !(v = cli_value(c))) return -1;
  return cli_knob(o, k, opt, v) ? -1 : 1;
}

const cj_arch *cli_arch(const char *opt, const char *text) {
  const cj_arch *a = cj_arch_from_name(text);
  if (!a) {
    char why[96];
    snprintf(why, sizeof why, "expected one of %s", cj_arch_names());
    cli_fail(opt, text, why);
  }
  return a;
}

const char *cli_arch_names(char sep) {
  static char names[3][64];
  const int i = sep == '|' ? 0 : sep == ',' ? 1 : 2;
  if (!names[i][0]) {
    int n = 0;
    const cj_arch *const *l = cj_arch_list(&n);
    size_t len = 0;
    for (int j = 0; j < n && len < sizeof names[i]; j++)
      len += (size_t)snprintf(names[i] + len, sizeof names[i] - len, "%s%s", j ? (char[2]){sep, 0} : "", l[j]->name);
  }
  return names[i];
}

void cli_report(convjit_status st) {
  fprintf(stderr, "%s: %s: %s\n", g_tool, convjit_status_string(st), convjit_last_error());
}

/* ---- shape -> descriptor -------------------------------------------------------- */

cli_shape cli_shape_3d(const int64_t v[9]) {
  cli_shape s = {.rank = 3, .stride = {1, 1, 1}, .dil = {1, 1, 1}};
  memcpy(s.v, v, sizeof s.v);
  return s;
}

int cli_shape_set(cli_shape *s, const char *opt, const int64_t *v, int n) {
  int rank = n == 9 ? 3 : n == 7 ? 2 : n == 5 ? 1 : 0;
  if (!rank) {
    fprintf(stderr, "%s: %s needs N,C,D,H,W,K,T,R,S (or the 2D/1D forms N,C,H,W,K,R,S and N,C,W,K,S)\n", g_tool, opt);
    return -1;
  }
  const int64_t ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  *s = cli_shape_3d(ones);
  s->rank = rank;
  s->v[0] = v[0];
  s->v[1] = v[1];
  s->v[5] = v[2 + rank];
  for (int i = 0; i < rank; i++) { /* the last `rank` of D,H,W and of T,R,S */
    s->v[2 + 3 - rank + i] = v[2 + i];
    s->v[6 + 3 - rank + i] = v[3 + rank + i];
  }
  return 0;
}

int cli_shape_dims(cli_shape *s, const int64_t *stride, int nstride, const int64_t *dil, int ndil,
                   const int64_t *pad, int npad) {
  int r = s->rank, o = 3 - r;
  if ((nstride && nstride != r) || (ndil && ndil != r) || (npad && npad != r && npad != 2 * r)) {
    fprintf(stderr, "%s: --stride/--dilation need %d values, --pad %d or %d\n", g_tool, r, r, 2 * r);
    return -1;
  }
  for (int i = 0; i < r; i++) {
    if (nstride) s->stride[o + i] = stride[i];
    if (ndil) s->dil[o + i] = dil[i];
    if (npad) {
      s->pad_lo[o + i] = pad[i];
      s->pad_hi[o + i] = pad[npad == r ? i : r + i];
    }
  }
  return 0;
}

convjit_conv_desc cli_conv_desc(const cli_shape *s) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = s->rank;
  d.n = s->v[0];
  d.c = s->v[1];
  d.k = s->v[5];
  for (int i = 0; i < s->rank; i++) { /* the descriptor's dims are the last `rank` of D,H,W */
    int j = 3 - s->rank + i;
    d.in[i] = s->v[2 + j];
    d.filter[i] = s->v[6 + j];
    d.pad_lo[i] = s->pad_lo[j];
    d.pad_hi[i] = s->pad_hi[j];
    d.stride[i] = s->stride[j];
    d.dilation[i] = s->dil[j];
  }
  return d;
}

int cli_shape_equal(const cli_shape *a, const cli_shape *b) {
  return a->rank == b->rank && !memcmp(a->v, b->v, sizeof a->v) && !memcmp(a->pad_lo, b->pad_lo, sizeof a->pad_lo) &&
         !memcmp(a->pad_hi, b->pad_hi, sizeof a->pad_hi) && !memcmp(a->stride, b->stride, sizeof a->stride) &&
         !memcmp(a->dil, b->dil, sizeof a->dil);
}

convjit_dtype cli_fp8_dtype(const cj_arch *arch) {
  return arch && arch->fp8 == CJ_FP8_E4M3FNUZ ? CONVJIT_DTYPE_FP8_E4M3FNUZ : CONVJIT_DTYPE_FP8_E4M3FN;
}

/* ---- the problem's kind and its own fields ------------------------------------ */

const char *cli_kind_names(void) {
  static char names[96];
  if (!names[0]) {
    size_t n = 0;
    for (int k = 0; cj_conv_kind_of((convjit_conv_kind)k) && n < sizeof names; k++)
      n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", k ? "|" : "",
                            cj_conv_kind_of((convjit_conv_kind)k)->tool);
  }
  return names;
}

const cj_epi_flag *cli_epi_flag_option(const char *opt) {
  uint32_t n = 0;
  const cj_epi_flag *f = cj_epi_flags(&n);
  for (uint32_t i = 0; opt && !strncmp(opt, "--", 2) && i < n; i++)
    if (f[i].option[0] && !strcmp(opt + 2, f[i].option)) return &f[i];
  return NULL;
}

void cli_epi_usage(FILE *out, int width) {
  uint32_t n = 0;
  const cj_epi_flag *f = cj_epi_flags(&n);
  for (uint32_t i = 0; i < n; i++)
    if (f[i].option[0]) fprintf(out, "  --%-*s %s\n", width, f[i].option, f[i].help);
}

int cli_epi_set(cli_epi *e, const char *opt, const char *v) {
  const cj_epi_flag *fl = cli_epi_flag_option(opt);
  if (fl) e->flags |= 1u << fl->op;
  else if (!strcmp(opt, "--act")) return cli_act(opt, v, &e->act) ? -1 : 1;
  else if (!strcmp(opt, "--beta")) return cli_double(opt, v, -1e30, 1e30, &e->beta) ? -1 : 1;
  else return 0;
  return 1;
}

int cli_epi_opt(cli_args *c, cli_epi *e) {
  const char *v = NULL;
  if (cli_epi_flag_option(c->opt)) return cli_epi_set(e, c->opt, NULL);
  if (!cli_is(c, "--act") && !cli_is(c, "--beta")) return 0;
  if (!(v = cli_value(c))) return -1;
  return cli_epi_set(e, c->opt, v);
}

void cli_epi_desc(const cli_epi *e, convjit_conv_desc *d) {
  uint32_t n = 0;
  const cj_epi_flag *f = cj_epi_flags(&n);
  for (uint32_t i = 0; i < n; i++) cj_epi_flag_set(d, &f[i], (int)(e->flags >> f[i].op & 1));
  d->beta = (float)e->beta;
  d->act = (convjit_activation)e->act;
}

cli_epi cli_epi_of(const cj_epilogue *e) {
  cli_epi o = {.act = cj_epi_activation(e)};
  uint32_t n = 0;
  const cj_epi_flag *f = cj_epi_flags(&n);
  for (uint32_t i = 0; i < n; i++)
    if (cj_epi_has(e, (cj_epi_op)f[i].op)) o.flags |= 1u << f[i].op;
  if (cj_epi_has(e, CJ_EPI_RESIDUAL)) o.beta = cj_epi_beta(e);
  return o;
}

/* "f16" / "f32" or the "fp16" / "fp32" people also write */
static int cli_is_dtype(const char *text, convjit_dtype t) {
  const char *n = cj_dtype_name(t);
  return !strcmp(text, n) || (n[0] == 'f' && text[0] == 'f' && text[1] == 'p' && !strcmp(text + 2, n + 1));
}

int cli_problem_set(cli_problem *pr, const char *opt, const char *v) {
  if (!strcmp(opt, "--kind")) {
    int k = cj_conv_kind_from_name(v, strlen(v));
    if (k < 0 || strcmp(v, cj_conv_kind_of((convjit_conv_kind)k)->tool)) {
      char why[128];
      snprintf(why, sizeof why, "expected one of %s", cli_kind_names());
      return cli_fail(opt, v, why);
    }
    pr->kind = k;
    return 0;
  }
  if (!strcmp(opt, "--nondeterministic")) {
    pr->nondeterministic = 1;
    return 0;
  }
  if (!strcmp(opt, "--dw-dtype")) { /* the dtypes the dtype table lets a weight gradient (w_dtype) take */
    uint32_t mask = 0;
    for (int k = 0; cj_conv_kind_of((convjit_conv_kind)k); k++)
      if (tool_kind_output((convjit_conv_kind)k) == CJ_TENSOR_DW) mask |= cj_conv_kind_dtype_mask((convjit_conv_kind)k, 1);
    for (int t = 0; t < 32; t++)
      if ((mask >> t & 1) && cli_is_dtype(v, (convjit_dtype)t)) {
        pr->dw_dtype = t;
        return 0;
      }
    char set[120], why[200];
    cj_dtype_list(mask, set, sizeof set);
    snprintf(why, sizeof why, "expected %s (the dtype table's weight-gradient dtypes)", set);
    return cli_fail(opt, v, why);
  }
  int up = !strcmp(opt, "--upsample");
  int n = cli_list(opt, v, up ? pr->up : pr->out_pad, 1, 3, 0, CLI_MAX_EXTENT);
  if (n < 0) return -1;
  *(up ? &pr->nup : &pr->nop) = n;
  return 0;
}

int cli_problem_opt(cli_args *c, cli_problem *pr) {
  if (cli_is(c, "--nondeterministic")) return cli_problem_set(pr, c->opt, NULL) ? -1 : 1;
  if (!cli_is(c, "--kind") && !cli_is(c, "--upsample") && !cli_is(c, "--output-padding") && !cli_is(c, "--dw-dtype"))
    return 0;
  const char *opt = c->opt, *v = cli_value(c);
  if (!v) return -1;
  return cli_problem_set(pr, opt, v) ? -1 : 1;
}

int cli_problem_desc(const cli_problem *pr, convjit_conv_desc *d) {
  int r = d->spatial_rank;
  if ((pr->nop && pr->nop != r) || (pr->nup && pr->nup != r)) {
    fprintf(stderr, "%s: --output-padding/--upsample need %d values (one per spatial dim)\n", g_tool, r);
    return -1;
  }
  const int bw = tool_kind_output((convjit_conv_kind)pr->kind) == CJ_TENSOR_DW; /* a weight gradient: its dtype */
  if ((pr->dw_dtype || pr->nondeterministic) && !bw) {
    fprintf(stderr, "%s: --dw-dtype and --nondeterministic need --kind bwd-weight\n", g_tool);
    return -1;
  }
  d->kind = (convjit_conv_kind)pr->kind;
  for (int i = 0; i < r; i++) {
    if (pr->nop) d->output_padding[i] = pr->out_pad[i];
    if (pr->nup) d->upsample[i] = pr->up[i];
  }
  if (bw) { /* dy is y's shape in x's dtype; dw in the inputs' dtype or f32 */
    d->y_dtype = d->x_dtype;
    d->w_dtype = pr->dw_dtype ? (convjit_dtype)pr->dw_dtype : d->x_dtype;
    d->nondeterministic = pr->nondeterministic;
  }
  return 0;
}

int cli_conv_dtypes(const char *dtype, const char *y_dtype, const cj_arch *arch, convjit_conv_desc *d) {
  if (!dtype || (strcmp(dtype, "bf16") && !cli_is_dtype(dtype, CONVJIT_DTYPE_F16) && strcmp(dtype, "fp8")))
    return cli_fail("--dtype", dtype, "bf16, f16 (or fp16) or fp8 (the arch's native E4M3 format)");
  d->x_dtype = d->w_dtype = !strcmp(dtype, "fp8")                       ? cli_fp8_dtype(arch)
                            : cli_is_dtype(dtype, CONVJIT_DTYPE_F16) ? CONVJIT_DTYPE_F16
                                                                     : CONVJIT_DTYPE_BF16;
  d->y_dtype = d->x_dtype == CONVJIT_DTYPE_F16 ? CONVJIT_DTYPE_F16 : CONVJIT_DTYPE_BF16;
  if (!y_dtype) return 0;
  static const convjit_dtype ys[] = {CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_F16, CONVJIT_DTYPE_F32};
  for (size_t i = 0; i < sizeof ys / sizeof ys[0]; i++)
    if (cli_is_dtype(y_dtype, ys[i])) {
      d->y_dtype = ys[i];
      return 0;
    }
  return cli_fail("--y-dtype", y_dtype, "bf16, f16 or f32 (or fp16, fp32)");
}

int cli_shapes_line(const char *line, const char *arch, int epilogue, const cli_problem *pr, int lineno,
                    convjit_conv_desc *d) {
  char op[16], sarch[16], dtype[16], shape[128];
  int used = 0;
  if (sscanf(line, "%15s %15s %15s %127s %n", op, sarch, dtype, shape, &used) < 4 || strcmp(op, "conv") != 0) {
    fprintf(stderr, "%s: shapes line %d: expected \"conv <arch|-> <dtype> N,C,D,H,W,K,T,R,S [options]\"\n",
            g_tool, lineno);
    return -1;
  }
  if (strcmp(sarch, "-") && strcmp(sarch, arch)) return 1;
  char opts[256];
  snprintf(opts, sizeof opts, "%s", used ? line + used : "");
  opts[strcspn(opts, "\r\n")] = 0;
  cj_conv_geom g;
  cj_conv_opts o;
  cj_epilogue e;
  if (cj_kspec_conv_parse(arch, dtype, shape, opts[0] ? opts : "-", &g, &o, &e) != CONVJIT_OK) {
    fprintf(stderr, "%s: shapes line %d: %s\n", g_tool, lineno, convjit_last_error());
    return -1;
  }
  int bias = cj_epi_has(&e, CJ_EPI_BIAS);
  static const cj_conv_opts none;
  if (memcmp(&o, &none, sizeof o) != 0 ||
      (!epilogue && (e.nops != (uint32_t)bias || g.groups > 1 || g.x_ndhwc || g.y_ndhwc))) {
    fprintf(stderr, "%s: shapes line %d: a shape takes pad=, stride=, dil=, y= and bias%s; never knobs\n", g_tool,
            lineno, epilogue ? ", layout=, groups= and the epilogue ops" : "");
    return -1;
  }
  const int64_t v[9] = {g.n, g.c * (g.groups ? g.groups : 1), g.d, g.h, g.w, g.k * (g.groups ? g.groups : 1),
                        g.t, g.r, g.s};
  cli_shape s = cli_shape_3d(v);
  for (int i = 0; i < 3; i++) {
    s.stride[i] = g.stride[i], s.dil[i] = g.dil[i];
    s.pad_lo[i] = g.pad_lo[i], s.pad_hi[i] = g.pad_hi[i];
  }
  *d = cli_conv_desc(&s);
  d->x_dtype = d->w_dtype = (convjit_dtype)g.dtype;
  d->y_dtype = (convjit_dtype)cj_conv_y_dtype(&g); /* y=: f32, else the dtype's own */
  d->groups = g.groups ? g.groups : 1;
  if (g.x_ndhwc) d->x_layout = CONVJIT_LAYOUT_NDHWC;
  if (g.y_ndhwc) d->y_layout = CONVJIT_LAYOUT_NDHWC;
  const cli_epi ce = cli_epi_of(&e);
  cli_epi_desc(&ce, d);
  if (g.wgrad_atomic && !g.wgrad) {
    fprintf(stderr, "%s: shapes line %d: atomic is a backward-weight option (wgrad)\n", g_tool, lineno);
    return -1;
  }
  cli_problem lp; /* the line's wgrad and atomic make it backward weight, whatever --kind said */
  if (pr)
    lp = *pr;
  else
    memset(&lp, 0, sizeof lp);
  if (g.wgrad) lp.kind = CONVJIT_CONV_BACKWARD_WEIGHT;
  if (g.wgrad_atomic) lp.nondeterministic = 1;
  return cli_problem_desc(&lp, d);
}
