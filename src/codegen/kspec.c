/* Kernel spec text -> plan (contract in kspec.h). Parsing only: every
 * decision about the kernel stays in the plan initializers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/kspec.h"

#define KSPEC_MAX_SHAPE 9

/* "a,b,c" -> v[0..n), at most max values. The list ends at NUL, or also at
 * a space when it is an option's value inside the opts text. Errors name
 * prefix+field ("spec shape", "--shape"). */
static convjit_status kspec_list(const char *prefix, const char *field, const char *s, uint64_t *v, int max, int *n,
                                 int in_opts) {
  *n = 0;
  const char *p = s;
  CJ_CHECK(s && *s, CONVJIT_ERR_INVALID_ARG, "%s%s is empty", prefix, field);
  for (;;) {
    CJ_CHECK(*n < max, CONVJIT_ERR_INVALID_ARG, "%s%s = %s: more than %d values", prefix, field, s, max);
    CJ_CHECK(*p >= '0' && *p <= '9', CONVJIT_ERR_INVALID_ARG, "%s%s = %s: expected unsigned integers and commas",
             prefix, field, s);
    char *end;
    errno = 0;
    unsigned long long x = strtoull(p, &end, 10);
    CJ_CHECK(errno == 0, CONVJIT_ERR_INVALID_ARG, "%s%s = %s: value out of range", prefix, field, s);
    v[(*n)++] = x;
    if (*end == 0 || (in_opts && *end == ' ')) return CONVJIT_OK;
    CJ_CHECK(*end == ',', CONVJIT_ERR_INVALID_ARG, "%s%s = %s: unexpected '%c'", prefix, field, s, *end);
    p = end + 1;
  }
}

static convjit_status kspec_u64s(const char *field, const char *s, uint64_t *v, int max, int *n, int in_opts) {
  return kspec_list("spec ", field, s, v, max, n, in_opts);
}

convjit_status cj_parse_u64_list(const char *what, const char *s, uint64_t *v, int max, int *n) {
  return kspec_list("", what, s, v, max, n, 0);
}

static convjit_status kspec_u32(const char *field, uint64_t v, uint32_t *out) {
  CJ_CHECK(v <= UINT32_MAX, CONVJIT_ERR_INVALID_ARG, "spec %s = %llu: must be < 2^32", field, (unsigned long long)v);
  *out = (uint32_t)v;
  return CONVJIT_OK;
}

/* "P" or "Pd,Ph,Pw" -> three values. */
static convjit_status kspec_dims(const char *field, const char *s, uint32_t out[3]) {
  uint64_t v[3];
  int n = 0;
  CJ_TRY(kspec_u64s(field, s, v, 3, &n, 1));
  CJ_CHECK(n == 1 || n == 3, CONVJIT_ERR_INVALID_ARG, "spec %s = %s: one value or three (d,h,w)", field, s);
  for (int i = 0; i < 3; i++) CJ_TRY(kspec_u32(field, v[n == 1 ? 0 : i], &out[i]));
  return CONVJIT_OK;
}

/* "AxB" -> two values. */
static convjit_status kspec_pair(const char *field, const char *s, uint32_t *a, uint32_t *b) {
  CJ_CHECK(*s >= '0' && *s <= '9', CONVJIT_ERR_INVALID_ARG, "spec %s = %.*s: expected AxB", field,
           (int)strcspn(s, " "), s);
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  CJ_CHECK(errno == 0 && end != s && *end == 'x', CONVJIT_ERR_INVALID_ARG, "spec %s = %.*s: expected AxB", field,
           (int)strcspn(s, " "), s);
  const char *q = end + 1;
  CJ_CHECK(*q >= '0' && *q <= '9', CONVJIT_ERR_INVALID_ARG, "spec %s = %.*s: expected AxB", field,
           (int)strcspn(s, " "), s);
  unsigned long long y = strtoull(q, &end, 10);
  CJ_CHECK(errno == 0 && end != q && (*end == 0 || *end == ' '), CONVJIT_ERR_INVALID_ARG,
           "spec %s = %.*s: expected AxB", field, (int)strcspn(s, " "), s);
  CJ_TRY(kspec_u32(field, x, a));
  CJ_TRY(kspec_u32(field, y, b));
  return CONVJIT_OK;
}

static convjit_status kspec_one(const char *field, const char *s, uint32_t *out) {
  uint64_t v;
  int n = 0;
  CJ_TRY(kspec_u64s(field, s, &v, 1, &n, 1));
  return kspec_u32(field, v, out);
}

/* Conv options: "-" or "key=value flag ..." into geometry and options. */
static convjit_status kspec_conv_opts(const char *opts, cj_conv_geom *g, cj_conv_opts *o) {
  for (int i = 0; i < 3; i++) g->stride[i] = g->dil[i] = 1;
  if (!opts || !*opts || !strcmp(opts, "-")) return CONVJIT_OK;
  const char *p = opts;
  while (*p) {
    while (*p == ' ') p++;
    if (!*p) break;
    size_t len = strcspn(p, " ");
    size_t klen = strcspn(p, "= ");
    char key[24];
    CJ_CHECK(klen < sizeof key, CONVJIT_ERR_INVALID_ARG, "spec opts: option '%.*s' unknown", (int)len, p);
    memcpy(key, p, klen);
    key[klen] = 0;
    const char *val = klen < len ? p + klen + 1 : NULL; /* points into opts, ends at ' ' or NUL */
    int flag = val == NULL;
    if (flag && !strcmp(key, "bias")) o->has_bias = 1;
    else if (flag && !strcmp(key, "big_in")) o->force_big_in = 1;
    else if (flag && !strcmp(key, "big_out")) o->force_big_out = 1;
    else if (flag && !strcmp(key, "no_fast")) o->no_fast_paths = 1;
    else if (!flag && !strcmp(key, "pad")) {
      CJ_TRY(kspec_dims("opts pad", val, g->pad_lo));
      memcpy(g->pad_hi, g->pad_lo, sizeof g->pad_hi);
    } else if (!flag && !strcmp(key, "stride")) CJ_TRY(kspec_dims("opts stride", val, g->stride));
    else if (!flag && !strcmp(key, "dil")) CJ_TRY(kspec_dims("opts dil", val, g->dil));
    else if (!flag && !strcmp(key, "tile")) CJ_TRY(kspec_pair("opts tile", val, &o->tile_m, &o->tile_n));
    else if (!flag && !strcmp(key, "waves")) CJ_TRY(kspec_pair("opts waves", val, &o->wave_m, &o->wave_n));
    else if (!flag && !strcmp(key, "stages")) CJ_TRY(kspec_one("opts stages", val, &o->stages));
    else if (!flag && !strcmp(key, "splitk")) CJ_TRY(kspec_one("opts splitk", val, &o->splitk));
    else if (!flag && !strcmp(key, "wgm")) CJ_TRY(kspec_one("opts wgm", val, &o->wgm));
    else if (!flag && !strcmp(key, "dma")) CJ_TRY(kspec_one("opts dma", val, &o->dma_bytes));
    else
      return CJ_ERR(CONVJIT_ERR_INVALID_ARG,
                    "spec opts: '%.*s' unknown (pad= stride= dil= tile= waves= stages= splitk= wgm= dma= bias "
                    "big_in big_out no_fast)",
                    (int)len, p);
    p += len;
  }
  return CONVJIT_OK;
}

static convjit_status kspec_conv(const cj_arch *a, const uint64_t *v, const char *opts, int finalize,
                                 cj_kplan *out) {
  cj_conv_geom g;
  cj_conv_opts o;
  memset(&g, 0, sizeof g);
  memset(&o, 0, sizeof o);
  static const char *const names[KSPEC_MAX_SHAPE] = {"shape n", "shape c", "shape d", "shape h", "shape w",
                                                     "shape k", "shape t", "shape r", "shape s"};
  uint32_t *dst[KSPEC_MAX_SHAPE] = {&g.n, &g.c, &g.d, &g.h, &g.w, &g.k, &g.t, &g.r, &g.s};
  for (int i = 0; i < KSPEC_MAX_SHAPE; i++) CJ_TRY(kspec_u32(names[i], v[i], dst[i]));
  CJ_TRY(kspec_conv_opts(opts, &g, &o));
  CJ_TRY(cj_conv_geom_derive(&g));
  CJ_TRY(cj_kplan_conv_init(out, a, &g, &o));
  if (!finalize) return CONVJIT_OK;
  CJ_CHECK(out->u.conv.splitk > 1, CONVJIT_ERR_INVALID_ARG,
           "spec op conv_finalize: the conv has splitk = %u, a finalize exists only for splitk >= 2",
           out->u.conv.splitk);
  cj_conv_plan c = out->u.conv; /* the init below overwrites *out */
  return cj_kplan_finalize_init(out, a, &c);
}

convjit_status cj_kspec_plan(const char *op, const char *arch, const char *dtype, const char *shape,
                             const char *opts, cj_kplan *out) {
  CJ_CHECK(op && arch && dtype && shape && out, CONVJIT_ERR_INVALID_ARG, "cj_kspec_plan: NULL argument");
  const cj_arch *a = cj_arch_from_name(arch);
  CJ_CHECK(a != NULL, CONVJIT_ERR_INVALID_ARG, "spec arch = %s: must be gfx942 or gfx950", arch);
  /* bf16-fp8: the transpose that also converts (bf16 in, saturated fp8 out). */
  int cvt = !strcmp(dtype, "bf16-fp8");
  uint32_t eb = !strcmp(dtype, "bf16") || cvt ? 2 : !strcmp(dtype, "fp8") ? 1 : 0;
  CJ_CHECK(eb != 0, CONVJIT_ERR_INVALID_ARG, "spec dtype = %s: must be bf16, fp8 or bf16-fp8", dtype);
  CJ_CHECK(!cvt || !strcmp(op, "transpose"), CONVJIT_ERR_INVALID_ARG,
           "spec dtype = %s: only op transpose converts (op is %s)", dtype, op);
  uint64_t v[KSPEC_MAX_SHAPE];
  int n = 0;
  CJ_TRY(kspec_u64s("shape", shape, v, KSPEC_MAX_SHAPE, &n, 0));
  int layout = !strcmp(op, "transpose") || !strcmp(op, "wpack");
  CJ_CHECK(!layout || !opts || !*opts || !strcmp(opts, "-"), CONVJIT_ERR_INVALID_ARG,
           "spec opts = %s: op %s takes no options", opts, op);
  if (!strcmp(op, "transpose")) {
    CJ_CHECK(n == 3, CONVJIT_ERR_INVALID_ARG, "spec shape = %s: op transpose takes N,C,S", shape);
    return cvt ? cj_kplan_transpose_cvt_init(out, a, v[0], v[1], v[2])
               : cj_kplan_transpose_init(out, a, eb, v[0], v[1], v[2]);
  }
  if (!strcmp(op, "wpack")) {
    CJ_CHECK(n == 5, CONVJIT_ERR_INVALID_ARG, "spec shape = %s: op wpack takes K,C,TRS,CPAD,ROW", shape);
    uint32_t u[5];
    static const char *const names[5] = {"shape k", "shape c", "shape trs", "shape cpad", "shape row"};
    for (int i = 0; i < 5; i++) CJ_TRY(kspec_u32(names[i], v[i], &u[i]));
    return cj_kplan_wpack_init(out, a, eb, u[0], u[1], u[2], u[3], u[4]);
  }
  int fin = !strcmp(op, "conv_finalize");
  if (fin || !strcmp(op, "conv_bf16")) {
    CJ_CHECK(eb == 2, CONVJIT_ERR_INVALID_ARG, "spec dtype = %s: op %s is bf16 only", dtype, op);
    CJ_CHECK(n == KSPEC_MAX_SHAPE, CONVJIT_ERR_INVALID_ARG, "spec shape = %s: op %s takes N,C,D,H,W,K,T,R,S",
             shape, op);
    return kspec_conv(a, v, opts, fin, out);
  }
  return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "spec op = %s: must be transpose, wpack, conv_bf16 or conv_finalize", op);
}
