/* Kernel spec text -> plan (contract in kspec.h). Parsing only: every
 * decision about the kernel stays in the plan initializers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "codegen/kplan_knobs.h"
#include "codegen/kplan_phase.h"
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

/* The output phase a spec names (kplan_phase.h): bwd=I, phase I of the
 * backward data of the spec's forward conv (opad= its output padding), or
 * up=F with phase=I, phase I of the conv of x upsampled by F. */
typedef struct kspec_phase {
  int bwd, up, idx_set, opad_set;
  uint32_t idx, factors[3], opad[3];
} kspec_phase;

/* One unsigned value (a phase index). */
static convjit_status kspec_one(const char *field, const char *s, uint32_t *out) {
  uint64_t v;
  int n = 0;
  CJ_TRY(kspec_u64s(field, s, &v, 1, &n, 1));
  return kspec_u32(field, v, out);
}

/* A dtype's name (cj_dtype_name: "bf16", "f16", "f32", ...) of len bytes ->
 * its convjit_dtype, 0 if none. */
static int kspec_dtype_of(const char *v, size_t len) {
  for (int t = CONVJIT_DTYPE_BF16; t <= CONVJIT_DTYPE_F16; t++)
    if (strlen(cj_dtype_name((convjit_dtype)t)) == len && !strncmp(cj_dtype_name((convjit_dtype)t), v, len)) return t;
  return 0;
}

/* Conv options: "-" or "key=value flag ..." into geometry, knobs, the
 * fused epilogue's description (its ops' own tokens, kplan_epi.h) and the
 * output phase (ph; NULL: none may be named). */
static convjit_status kspec_conv_opts(const char *opts, cj_conv_geom *g, cj_conv_opts *o, cj_epilogue *e,
                                      kspec_phase *ph) {
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
    size_t vlen = val ? len - klen - 1 : 0;
    const cj_knob *kn = cj_conv_knob_find(key, klen);
    const cj_epi_op eop = cj_epi_spec_op(key, klen);
    int flag = val == NULL;
    char what[40];
    snprintf(what, sizeof what, "spec opts %s", key);
    if (kn) {
      CJ_TRY(cj_conv_knob_set(o, kn, val, vlen, what));
      CJ_CHECK(!cj_conv_knob_zero(o, kn), CONVJIT_ERR_INVALID_ARG, "%s = %.*s: %s", what, (int)vlen, val,
               cj_conv_knob_zero_why(kn));
    } else if (eop != CJ_EPI_NONE) {
      CJ_TRY(cj_epi_spec_set(e, eop, val, vlen, what));
    } else if (!flag && !strcmp(key, "pad")) {
      CJ_TRY(kspec_dims("opts pad", val, g->pad_lo));
      memcpy(g->pad_hi, g->pad_lo, sizeof g->pad_hi);
    } else if (!flag && ph && (!strcmp(key, "bwd") || !strcmp(key, "phase"))) {
      const int bwd = !strcmp(key, "bwd");
      CJ_TRY(kspec_one(bwd ? "opts bwd" : "opts phase", val, &ph->idx));
      ph->bwd |= bwd;
      ph->idx_set |= !bwd;
    } else if (!flag && ph && !strcmp(key, "up")) {
      CJ_TRY(kspec_dims("opts up", val, ph->factors));
      ph->up = 1;
    } else if (!flag && ph && !strcmp(key, "opad")) {
      CJ_TRY(kspec_dims("opts opad", val, ph->opad));
      ph->opad_set = 1;
    } else if (!flag && !strcmp(key, "stride")) {
      CJ_TRY(kspec_dims("opts stride", val, g->stride));
    } else if (!flag && !strcmp(key, "dil")) {
      CJ_TRY(kspec_dims("opts dil", val, g->dil));
    } else if (!flag && !strcmp(key, "groups")) {
      uint32_t gv[3] = {0};
      CJ_TRY(kspec_dims("opts groups", val, gv)); /* one value: all three read it */
      g->groups = gv[0];
    } else if (flag && (!strcmp(key, "wgrad") || !strcmp(key, "db") || !strcmp(key, "atomic"))) {
      /* the backward-weight GEMM (kplan_wgrad.h), its bias-gradient column, its atomics */
      uint32_t *f = key[0] == 'w' ? &g->wgrad : key[0] == 'd' ? &g->wgrad_db : &g->wgrad_atomic;
      *f = 1;
    } else if (!flag && !strcmp(key, "y")) {
      /* y's dtype when it is not the compute dtype's own (kplan_conv.h y_dtype) */
      int t = kspec_dtype_of(val, vlen);
      CJ_CHECK(t == CONVJIT_DTYPE_BF16 || t == CONVJIT_DTYPE_F16 || t == CONVJIT_DTYPE_F32, CONVJIT_ERR_INVALID_ARG,
               "spec opts y=%.*s: bf16, f16 or f32", (int)vlen, val);
      g->y_dtype = (uint32_t)t;
    } else if (!flag && !strcmp(key, "layout")) {
      /* ndhwc | ncdhw (x and y) or x,y: the in-place NDHWC paths */
      size_t xl = strcspn(val, ", ");
      const char *y = xl < vlen && val[xl] == ',' ? val + xl + 1 : val;
      size_t yl = xl < vlen && val[xl] == ',' ? vlen - xl - 1 : xl;
      int ok = (xl == 5 && (!strncmp(val, "ndhwc", 5) || !strncmp(val, "ncdhw", 5))) &&
               (yl == 5 && (!strncmp(y, "ndhwc", 5) || !strncmp(y, "ncdhw", 5)));
      CJ_CHECK(ok, CONVJIT_ERR_INVALID_ARG, "spec opts layout=%.*s: ndhwc, ncdhw or x,y of those", (int)vlen, val);
      g->x_ndhwc = !strncmp(val, "ndhwc", 5);
      g->y_ndhwc = !strncmp(y, "ndhwc", 5);
    } else {
      cj_strbuf known = {0};
      cj_conv_knobs_help(&known, "", "=", NULL);
      cj_epi_spec_help(&known, "");
      convjit_status st = CJ_ERR(CONVJIT_ERR_INVALID_ARG,
                                 "spec opts: '%.*s' unknown; options are pad= stride= dil= groups= layout= y= "
                                 "wgrad db atomic (geometry), bwd= opad= up= phase= (conv ops: an output phase), the "
                                 "knobs and the epilogue ops\n%s",
                                 (int)len, p, known.s ? known.s : "");
      cj_sb_free(&known);
      return st;
    }
    p += len;
  }
  return CONVJIT_OK;
}

/* dtype text -> element bytes read: bf16 and f16 2 (the layout ops copy
 * elements: an f16 one is a bf16 one), fp8 1, bf16-fp8 and bf16-fp8q
 * (bf16 in, fp8 out) 2, fn-fnuz 1. */
static uint32_t kspec_elem_bytes(const char *dtype) {
  if (!strcmp(dtype, "bf16") || !strcmp(dtype, "f16") || !strcmp(dtype, "bf16-fp8") || !strcmp(dtype, "bf16-fp8q"))
    return 2;
  return !strcmp(dtype, "fp8") || !strcmp(dtype, "fn-fnuz") ? 1 : 0;
}

static convjit_status kspec_no_opts(const char *op, const char *opts) {
  CJ_CHECK(!opts || !*opts || !strcmp(opts, "-"), CONVJIT_ERR_INVALID_ARG, "spec opts = %s: op %s takes no options",
           opts, op);
  return CONVJIT_OK;
}

/* The fp8 conv's pre-pass dtypes: bf16-fp8q (bf16 in, fp8(x * qscale) out,
 * the by-value QSCALE argument) and fn-fnuz (E4M3FN bytes mapped to
 * E4M3FNUZ); 0 for the other dtypes. */
static int kspec_prep(const char *dtype, cj_prep_mode *mode, uint32_t *eb) {
  if (!strcmp(dtype, "bf16-fp8q")) *mode = CJ_PREP_QUANT, *eb = 2;
  else if (!strcmp(dtype, "fn-fnuz")) *mode = CJ_PREP_FN_FNUZ, *eb = 1;
  else return 0;
  return 1;
}

convjit_status cj_kspec_transpose(const cj_arch *a, const char *dtype, const char *shape, const uint64_t *v, int n,
                                  const char *opts, cj_kplan *out) {
  CJ_TRY(kspec_no_opts("transpose", opts));
  CJ_CHECK(n == 3, CONVJIT_ERR_INVALID_ARG, "spec shape = %s: op transpose takes N,C,S", shape);
  /* bf16-fp8: the transpose that also converts (bf16 in, saturated fp8 out). */
  if (!strcmp(dtype, "bf16-fp8")) return cj_kplan_transpose_cvt_init(out, a, v[0], v[1], v[2]);
  cj_prep_mode m;
  uint32_t eb;
  if (kspec_prep(dtype, &m, &eb)) return cj_kplan_transpose_prep_init(out, a, eb, m, v[0], v[1], v[2]);
  return cj_kplan_transpose_init(out, a, kspec_elem_bytes(dtype), v[0], v[1], v[2]);
}

/* A conv spec's fields -> geometry, options, epilogue and output phase, parsed only. */
static convjit_status kspec_conv_fields(const char *op, const cj_arch *a, const char *dtype, const char *shape,
                                        const uint64_t *v, int n, const char *opts, cj_conv_geom *g,
                                        cj_conv_opts *o, cj_epilogue *e, kspec_phase *ph) {
  CJ_CHECK(!strcmp(dtype, "bf16") || !strcmp(dtype, "f16") || !strcmp(dtype, "fp8"), CONVJIT_ERR_INVALID_ARG,
           "spec dtype = %s: op %s takes bf16, f16 or fp8", dtype, op);
  CJ_CHECK(n == KSPEC_MAX_SHAPE, CONVJIT_ERR_INVALID_ARG, "spec shape = %s: op %s takes N,C,D,H,W,K,T,R,S",
           shape, op);
  memset(g, 0, sizeof *g);
  memset(o, 0, sizeof *o);
  memset(e, 0, sizeof *e);
  if (ph) memset(ph, 0, sizeof *ph);
  /* fp8: the arch's native format, the only one its MFMA reads */
  g->dtype = !strcmp(dtype, "bf16")  ? CONVJIT_DTYPE_BF16
             : !strcmp(dtype, "f16") ? CONVJIT_DTYPE_F16
                                     : (uint32_t)cj_mfma_row_of(a->mfma_fp8)->in_dtype;
  static const char *const names[KSPEC_MAX_SHAPE] = {"shape n", "shape c", "shape d", "shape h", "shape w",
                                                     "shape k", "shape t", "shape r", "shape s"};
  uint32_t *dst[KSPEC_MAX_SHAPE] = {&g->n, &g->c, &g->d, &g->h, &g->w, &g->k, &g->t, &g->r, &g->s};
  for (int i = 0; i < KSPEC_MAX_SHAPE; i++) CJ_TRY(kspec_u32(names[i], v[i], dst[i]));
  return kspec_conv_opts(opts, g, o, e, ph);
}

/* The output phase ph names of the spec's conv g (none: g itself). */
static convjit_status kspec_phase_of(const kspec_phase *ph, cj_conv_geom *g, cj_conv_phase *out) {
  memset(out, 0, sizeof *out);
  CJ_CHECK(!(ph->bwd && ph->up), CONVJIT_ERR_INVALID_ARG, "spec opts: bwd= and up= name two kinds of phase");
  CJ_CHECK(!ph->idx_set || ph->up, CONVJIT_ERR_INVALID_ARG, "spec opts phase=%u: a phase of up= only (bwd=I names "
           "backward data's)", ph->idx);
  CJ_CHECK(!ph->up || ph->idx_set, CONVJIT_ERR_INVALID_ARG, "spec opts up: needs phase=I, the phase it names");
  CJ_CHECK(!ph->opad_set || ph->bwd, CONVJIT_ERR_INVALID_ARG, "spec opts opad: backward data's (bwd=I) only");
  if (!ph->bwd && !ph->up) {
    out->g = *g;
    return CONVJIT_OK;
  }
  cj_conv_phases *ps = malloc(sizeof *ps);
  CJ_ALLOC_CHECK(ps);
  convjit_status st = ph->bwd ? cj_conv_phases_bwd_data(g, ph->opad, ps) : cj_conv_phases_upsample(g, ph->factors, ps);
  if (st == CONVJIT_OK && ph->idx >= ps->n)
    st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "spec opts %s=%u: the conv has %u output phases", ph->bwd ? "bwd" : "phase",
                ph->idx, ps->n);
  if (st == CONVJIT_OK) *out = ps->ph[ph->idx];
  free(ps);
  return st;
}

convjit_status cj_kspec_conv_parse(const char *arch, const char *dtype, const char *shape, const char *opts,
                                   cj_conv_geom *g, cj_conv_opts *o, cj_epilogue *e) {
  CJ_CHECK(arch && dtype && shape && g && o && e, CONVJIT_ERR_INVALID_ARG, "cj_kspec_conv_parse: NULL argument");
  const cj_arch *a = cj_arch_from_name(arch);
  CJ_CHECK(a != NULL, CONVJIT_ERR_INVALID_ARG, "spec arch = %s: must be one of %s", arch, cj_arch_names());
  uint64_t v[KSPEC_MAX_SHAPE];
  int n = 0;
  CJ_TRY(kspec_u64s("shape", shape, v, KSPEC_MAX_SHAPE, &n, 0));
  return kspec_conv_fields("conv", a, dtype, shape, v, n, opts, g, o, e, NULL);
}

/* A conv spec -> the conv plan (both conv ops start here) and its epilogue. */
static convjit_status kspec_conv_plan(const char *op, const cj_arch *a, const char *dtype, const char *shape,
                                      const uint64_t *v, int n, const char *opts, cj_kplan *out, cj_epilogue *e) {
  cj_conv_geom g;
  cj_conv_opts o;
  kspec_phase ph;
  cj_conv_phase cp;
  CJ_TRY(kspec_conv_fields(op, a, dtype, shape, v, n, opts, &g, &o, e, &ph));
  CJ_TRY(kspec_phase_of(&ph, &g, &cp));
  return cj_kplan_conv_init(out, a, &cp.g, &o, e);
}

convjit_status cj_kspec_conv(const cj_arch *a, const char *dtype, const char *shape, const uint64_t *v, int n,
                             const char *opts, cj_kplan *out) {
  cj_epilogue e;
  return kspec_conv_plan("conv", a, dtype, shape, v, n, opts, out, &e);
}

convjit_status cj_kspec_finalize(const cj_arch *a, const char *dtype, const char *shape, const uint64_t *v, int n,
                                 const char *opts, cj_kplan *out) {
  cj_epilogue e;
  CJ_TRY(kspec_conv_plan("conv_finalize", a, dtype, shape, v, n, opts, out, &e));
  CJ_CHECK(out->u.conv.atomic, CONVJIT_ERR_INVALID_ARG,
           "spec op conv_finalize: the conv has splitk = %u, a finalize exists only for splitk >= 2",
           out->u.conv.splitk);
  cj_conv_plan c = out->u.conv; /* the init below overwrites *out */
  return cj_kplan_finalize_init(out, a, &c, &e);
}

/* opts without its "key=value" token (copied to val, at most vmax bytes
 * with the NUL) into rest: the backward-weight pre-pass and finalize take
 * the GEMM's conv spec plus one option of their own. 0 if absent. */
static int kspec_take(const char *opts, const char *key, char *val, size_t vmax, char *rest, size_t rmax) {
  size_t kl = strlen(key), used = 0;
  int found = 0;
  rest[0] = 0;
  for (const char *p = opts ? opts : ""; *p;) {
    while (*p == ' ') p++;
    size_t len = strcspn(p, " ");
    if (!len) break;
    if (len > kl && !strncmp(p, key, kl) && p[kl] == '=') {
      snprintf(val, vmax, "%.*s", (int)(len - kl - 1), p + kl + 1);
      found = 1;
    } else if (used + len + 2 < rmax) {
      used += (size_t)snprintf(rest + used, rmax - used, "%s%.*s", used ? " " : "", (int)len, p);
    }
    p += len;
  }
  return found;
}

/* The backward-weight GEMM's conv plan of a spec (the "wgrad" option
 * implied) into *c, for the pre-pass and finalize plans built on it. */
static convjit_status kspec_wgrad_conv(const char *op, const cj_arch *a, const char *dtype, const char *shape,
                                       const uint64_t *v, int n, const char *opts, cj_kplan *tmp, cj_conv_plan *c) {
  cj_conv_geom g;
  cj_conv_opts o;
  cj_epilogue e;
  CJ_TRY(kspec_conv_fields(op, a, dtype, shape, v, n, opts, &g, &o, &e, NULL));
  g.wgrad = 1;
  CJ_TRY(cj_kplan_conv_init(tmp, a, &g, &o, &e));
  *c = tmp->u.conv;
  return CONVJIT_OK;
}

/* grid_pack: a backward-weight conv spec (the "wgrad" option implied) and
 * side=x|dy; that tensor's layout is the spec's layout= (x's or y's). */
convjit_status cj_kspec_grid_pack(const cj_arch *a, const char *dtype, const char *shape, const uint64_t *v, int n,
                                  const char *opts, cj_kplan *out) {
  char side[8] = "", rest[512];
  CJ_CHECK(kspec_take(opts, "side", side, sizeof side, rest, sizeof rest) && (!strcmp(side, "x") || !strcmp(side, "dy")),
           CONVJIT_ERR_INVALID_ARG, "spec opts: op grid_pack needs side=x or side=dy (got '%s')", side);
  cj_conv_plan c;
  CJ_TRY(kspec_wgrad_conv("grid_pack", a, dtype, shape, v, n, rest, out, &c));
  int x = side[0] == 'x';
  return cj_kplan_grid_pack_init(out, a, &c, x ? CJ_WGRAD_SIDE_X : CJ_WGRAD_SIDE_DY,
                                 (int)(x ? c.g.x_ndhwc : c.g.y_ndhwc));
}

/* wgrad_finalize: a backward-weight conv spec and dw=f32|<dtype> (default the dtype). */
convjit_status cj_kspec_wgrad_finalize(const cj_arch *a, const char *dtype, const char *shape, const uint64_t *v,
                                       int n, const char *opts, cj_kplan *out) {
  char dw[8] = "", rest[512];
  int has = kspec_take(opts, "dw", dw, sizeof dw, rest, sizeof rest);
  CJ_CHECK(!has || !strcmp(dw, "f32") || !strcmp(dw, dtype), CONVJIT_ERR_INVALID_ARG,
           "spec opts dw=%s: f32 or the spec's dtype %s", dw, dtype);
  cj_conv_plan c;
  CJ_TRY(kspec_wgrad_conv("wgrad_finalize", a, dtype, shape, v, n, rest, out, &c));
  return cj_kplan_wgrad_finalize_init(out, a, &c, has && !strcmp(dw, "f32") ? CONVJIT_DTYPE_F32 : c.g.dtype);
}

convjit_status cj_kspec_wpack(const cj_arch *a, const char *dtype, const char *shape, const uint64_t *v, int n,
                              const char *opts, cj_kplan *out) {
  if (n == KSPEC_MAX_SHAPE) { /* a conv's shape with bwd=I: that backward-data phase's weight pack */
    cj_conv_geom g;
    cj_conv_opts o;
    cj_epilogue e;
    kspec_phase ph;
    cj_conv_phase cp;
    CJ_TRY(kspec_conv_fields("weight_pack", a, dtype, shape, v, n, opts, &g, &o, &e, &ph));
    CJ_CHECK(ph.bwd, CONVJIT_ERR_INVALID_ARG,
             "spec shape = %s: op weight_pack with a conv's shape packs a backward-data phase (bwd=I)", shape);
    CJ_TRY(kspec_phase_of(&ph, &g, &cp));
    CJ_TRY(cj_conv_geom_derive(&cp.g));
    return cj_conv_phase_pack_init(out, a, kspec_elem_bytes(dtype), CJ_PREP_COPY, &cp, &cp.g);
  }
  CJ_TRY(kspec_no_opts("weight_pack", opts));
  CJ_CHECK(n == 5, CONVJIT_ERR_INVALID_ARG, "spec shape = %s: op weight_pack takes K,C,TRS,CPAD,ROW (or a conv's "
           "N,C,D,H,W,K,T,R,S with bwd=I)", shape);
  uint32_t u[5];
  static const char *const names[5] = {"shape k", "shape c", "shape trs", "shape cpad", "shape row"};
  for (int i = 0; i < 5; i++) CJ_TRY(kspec_u32(names[i], v[i], &u[i]));
  cj_prep_mode m;
  uint32_t eb;
  if (kspec_prep(dtype, &m, &eb)) return cj_kplan_wpack_prep_init(out, a, eb, m, u[0], u[1], u[2], u[3], u[4]);
  return cj_kplan_wpack_init(out, a, kspec_elem_bytes(dtype), u[0], u[1], u[2], u[3], u[4]);
}

/* The generic conv kernel of a conv spec's dtypes and epilogue (the shape
 * and knobs only pick that conv: the generic kernel is keyed by neither);
 * x is held in the compute dtype. */
convjit_status cj_kspec_generic(const cj_arch *a, const char *dtype, const char *shape, const uint64_t *v, int n,
                                const char *opts, cj_kplan *out) {
  cj_conv_geom g;
  cj_conv_opts o;
  cj_epilogue e;
  CJ_TRY(kspec_conv_fields("conv_generic", a, dtype, shape, v, n, opts, &g, &o, &e, NULL));
  CJ_TRY(cj_conv_geom_derive(&g));
  return cj_kplan_generic_init(out, a, &g, g.dtype, CJ_PREP_COPY, &e);
}

/* The direct depthwise conv of a conv spec (C and K the totals, groups=C; its x is NDHWC
 * whatever layout= says: the planner transposes an NCDHW x first), with
 * its own choices strip=P and chunk=N, and dgrad=1: its backward data, or
 * wgrad [db] [stage=1|2]: its backward weight's partials or finalize
 * (kplan_direct.h). */
convjit_status cj_kspec_direct(const cj_arch *a, const char *dtype, const char *shape, const uint64_t *v, int n,
                               const char *opts, cj_kplan *out) {
  char val[32], rest[512], rest2[512];
  cj_direct_opts d = {0};
  uint64_t u = 0;
  int un = 0;
  if (kspec_take(opts, "strip", val, sizeof val, rest, sizeof rest)) {
    CJ_TRY(kspec_u64s("opts strip", val, &u, 1, &un, 1));
    CJ_TRY(kspec_u32("opts strip", u, &d.strip));
    CJ_CHECK(d.strip > 0, CONVJIT_ERR_INVALID_ARG, "spec opts strip = 0: must be 1..%d", CJ_DIRECT_MAX_STRIP);
  }
  if (kspec_take(rest, "chunk", val, sizeof val, rest2, sizeof rest2)) {
    CJ_TRY(kspec_u64s("opts chunk", val, &u, 1, &un, 1));
    CJ_TRY(kspec_u32("opts chunk", u, &d.tap_chunk));
    CJ_CHECK(d.tap_chunk > 0, CONVJIT_ERR_INVALID_ARG, "spec opts chunk = 0: must be 1..S");
  }
  const struct {
    const char *key, *what;
    uint32_t *field;
  } knobs[] = {{"vec", "opts vec", &d.vec}, {"bal", "opts bal", &d.bal}, {"wf32", "opts wf32", &d.wf32},
               {"hr", "opts hr", &d.hr},    {"pf", "opts pf", &d.pf}};
  for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
    if (kspec_take(rest2, knobs[i].key, val, sizeof val, rest, sizeof rest)) {
      CJ_TRY(kspec_u64s(knobs[i].what, val, &u, 1, &un, 1));
      CJ_TRY(kspec_u32(knobs[i].what, u, knobs[i].field));
      memcpy(rest2, rest, sizeof rest2);
    }
  if (kspec_take(rest2, "stage", val, sizeof val, rest, sizeof rest)) memcpy(rest2, rest, sizeof rest2);
  uint32_t bwd = 0;
  if (kspec_take(rest2, "dgrad", val, sizeof val, rest, sizeof rest)) {
    CJ_TRY(kspec_u64s("opts dgrad", val, &u, 1, &un, 1));
    CJ_TRY(kspec_u32("opts dgrad", u, &bwd));
  } else {
    memcpy(rest, rest2, sizeof rest);
  }
  memcpy(rest2, rest, sizeof rest2);
  cj_conv_geom g;
  cj_conv_opts o;
  cj_epilogue e;
  CJ_TRY(kspec_conv_fields("conv_direct", a, dtype, shape, v, n, rest2[0] ? rest2 : "-", &g, &o, &e, NULL));
  static const cj_conv_opts no_knobs;
  CJ_CHECK(!memcmp(&o, &no_knobs, sizeof o), CONVJIT_ERR_INVALID_ARG,
           "spec op conv_direct: takes strip= and chunk=, not the implicit GEMM's knobs");
  /* the shape's C and K are the totals, as the API's: groups divides both */
  CJ_CHECK(g.groups > 0 && g.c % g.groups == 0 && g.k % g.groups == 0, CONVJIT_ERR_INVALID_ARG,
           "spec op conv_direct: groups = %u with C = %u, K = %u: groups must divide C and K (depthwise: groups = C)",
           g.groups, g.c, g.k);
  g.k /= g.groups;
  g.c /= g.groups;
  g.x_ndhwc = 1;
  if (g.wgrad) { /* backward weight: wgrad [db] and stage=1 (partials, default) or 2 (finalize) */
    uint32_t stage = 1, db = g.wgrad_db;
    if (kspec_take(opts, "stage", val, sizeof val, rest, sizeof rest)) {
      CJ_TRY(kspec_u64s("opts stage", val, &u, 1, &un, 1));
      CJ_TRY(kspec_u32("opts stage", u, &stage));
    }
    g.wgrad = g.wgrad_db = g.wgrad_atomic = 0;
    g.y_ndhwc = 1;
    return cj_kplan_direct_wgrad_init(out, a, &g, stage, db, 0);
  }
  return cj_kplan_direct_init(out, a, &g, bwd, &d, &e);
}

typedef convjit_status (*kspec_fn)(const cj_arch *, const char *, const char *, const uint64_t *, int, const char *,
                                   cj_kplan *);
static const kspec_fn kspec_fns[CJ_KOP_COUNT] = {
#define KSPEC_ROW(id, name, key, print, build, spec, prefix) [CJ_KOP_##id] = spec,
    CJ_KOP_TABLE(KSPEC_ROW)
#undef KSPEC_ROW
};

convjit_status cj_kspec_plan(const char *op, const char *arch, const char *dtype, const char *shape,
                             const char *opts, cj_kplan *out) {
  CJ_CHECK(op && arch && dtype && shape && out, CONVJIT_ERR_INVALID_ARG, "cj_kspec_plan: NULL argument");
  const cj_arch *a = cj_arch_from_name(arch);
  CJ_CHECK(a != NULL, CONVJIT_ERR_INVALID_ARG, "spec arch = %s: must be one of %s", arch, cj_arch_names());
  CJ_CHECK(kspec_elem_bytes(dtype) != 0, CONVJIT_ERR_INVALID_ARG,
           "spec dtype = %s: must be bf16, f16, fp8, bf16-fp8, bf16-fp8q or fn-fnuz",
           dtype);
  CJ_CHECK(strcmp(dtype, "bf16-fp8") != 0 || !strcmp(op, "transpose"), CONVJIT_ERR_INVALID_ARG,
           "spec dtype = %s: only op transpose converts (op is %s)", dtype, op);
  cj_kop k = cj_kop_from_name(op);
  if (k == CJ_KOP_NONE) {
    cj_strbuf names = {0};
    for (int i = CJ_KOP_NONE + 1; i < CJ_KOP_COUNT; i++) cj_sb_printf(&names, "%s%s", i > 1 ? ", " : "", cj_kop_name(i));
    convjit_status st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "spec op = %s: must be one of %s", op,
                               names.s ? names.s : "(out of memory)");
    cj_sb_free(&names);
    return st;
  }
  uint64_t v[KSPEC_MAX_SHAPE];
  int n = 0;
  CJ_TRY(kspec_u64s("shape", shape, v, KSPEC_MAX_SHAPE, &n, 0));
  return kspec_fns[k](a, dtype, shape, v, n, opts, out);
}
