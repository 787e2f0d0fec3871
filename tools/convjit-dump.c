/* convjit-dump: every stage of the build pipeline for one shape.
 *
 *   options --(op row: parse op options, make plans)--> cj_kplan[]
 *     --cj_build_kernel--> IR, optimized IR, ISA, code object, resources
 *     --print (text or one JSON object)--> [--check: resource policy]
 *
 * Ops are rows of dump_ops[]: a name, the shape it takes, its own options
 * and a function that turns the parsed options into the plans of every
 * kernel the op launches (a conv is several: transpose, weight pack, conv,
 * finalize). Adding an op is adding a row and its option parser.
 *
 * Exit status: 0 ok; 1 a build failed or --check found a kernel breaking the
 * resource policy (reason on stderr); 2 bad arguments (usage on stderr),
 * including a shape the public API refuses: the descriptor goes through the
 * API's own validation (its limits, its messages naming desc fields).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/kplan.h"
#include "codegen/kplan_knobs.h"
#include "codegen/kspec.h"
#include "pipeline/build.h"
#include "pipeline/disasm.h"
#include "host/bounds.h"
#include "emu/emu.h"
#include "host/select.h"
#include "host/tool_api.h"
#include "cli.h"

#define DUMP_MAX_KERNELS (2 * CJ_SEQ_MAX_STEPS) /* a phased conv: a pack and a conv per phase */
#define DUMP_MAX_SHAPE 16

enum { EMIT_PLAN = 1, EMIT_IR = 2, EMIT_OPT_IR = 4, EMIT_ASM = 8, EMIT_RESOURCES = 16, EMIT_MNEMONICS = 32,
       EMIT_BOUNDS = 64 };
static const struct { const char *name; unsigned bit; } emit_names[] = {
  {"plan", EMIT_PLAN}, {"ir", EMIT_IR}, {"opt-ir", EMIT_OPT_IR}, {"asm", EMIT_ASM}, {"resources", EMIT_RESOURCES},
  {"mnemonics", EMIT_MNEMONICS}, {"bounds", EMIT_BOUNDS},
};

/* The op's launch sequence, for its simulated time (--emit bounds): each
 * step a kernel (an index into the op's plans) or a memset, of the list
 * that runs once per weight (pack) or on every call. */
#define DUMP_MAX_STEPS 64
typedef struct dump_step {
  int per_call;          /* 1: every call (fwd list), 0: once per weight (pack list) */
  int kernel;            /* index into the plans; -1: a memset */
  uint64_t memset_bytes;
} dump_step;
typedef struct dump_steps {
  int n;
  dump_step s[DUMP_MAX_STEPS];
} dump_steps;

typedef struct dump_args {
  const cj_arch *arch;
  const char *op_name;
  const char *dtype;     /* as given; the op interprets it */
  int64_t shape[DUMP_MAX_SHAPE];
  int nshape;            /* -1: --shape not given */
  unsigned emit;
  int json, check;
  int no_sim;            /* --no-sim: the bounds without the compute-unit simulation */
  const char *save_dir;  /* write each kernel's code object as <dir>/<name>.co */
  void *op_opts;         /* the op's own options (op->opts_size bytes, zeroed) */
  dump_steps *steps;     /* filled by the op's plans (NULL: not asked; n = 0: unknown) */
} dump_args;

/* Records a step of the op's launch sequence (when asked and room is left). */
static void add_step(const dump_args *a, int per_call, int kernel, uint64_t memset_bytes) {
  if (!a->steps || a->steps->n >= DUMP_MAX_STEPS) return;
  a->steps->s[a->steps->n++] = (dump_step){per_call, kernel, memset_bytes};
}

/* An op-specific option: "--name value" (has_value) or "--name". */
typedef struct dump_opt_def {
  const char *name;
  int has_value;
  const char *help; /* after the option's values when the library's tables list them (opt_values) */
} dump_opt_def;

/* An option's values from the library's tables ("fwd|bwd-data|..."), "" if none. */
static const char *opt_values(const char *name) {
  if (!strcmp(name, "kind")) return cli_kind_names();
  if (!strcmp(name, "act")) return cli_act_names();
  return "";
}

typedef struct dump_op {
  const char *name;
  const char *shape_help;                /* e.g. "N,C,S" */
  int nshape;                            /* values --shape must have */
  const char *dtypes;                    /* for the usage text */
  const dump_opt_def *opts;              /* NULL-terminated, or NULL */
  int conv_knobs;                        /* 1: also takes --<knob> for every conv knob (kplan_knobs.h) */
  size_t opts_size;
  /* Stores one op option; a bad value is CONVJIT_ERR_INVALID_ARG with text. */
  convjit_status (*set_opt)(dump_args *a, const char *name, const char *value);
  /* The plans of every kernel the op launches, in launch order. */
  convjit_status (*plans)(const dump_args *a, cj_kplan *out, int max, int *n);
} dump_op;

/* ---- helpers for op parsers ---------------------------------------------- */

/* A cli.h parse inside a convjit_status parser: cli printed the message. */
#define CLI(call)                                                                             \
  do {                                                                                        \
    if ((call) < 0) {                                                                         \
      cj_error_clear();                                                                       \
      return CONVJIT_ERR_INVALID_ARG;                                                         \
    }                                                                                         \
  } while (0)

/* ---- op: transpose -------------------------------------------------------- */

/* bf16, fp8, or the fp8 conv's pre-passes: bf16-fp8 (bf16 in, saturated
 * fp8 out), bf16-fp8q (the same times the by-value qscale argument: the
 * quantizing pre-pass), fn-fnuz (E4M3FN bytes mapped to E4M3FNUZ). */
static convjit_status transpose_plans(const dump_args *a, cj_kplan *out, int max, int *n) {
  CJ_CHECK(a->dtype != NULL, CONVJIT_ERR_INVALID_ARG, "--dtype is required for --op %s", a->op_name);
  CJ_CHECK(max >= 1, CONVJIT_ERR_INTERNAL, "no room for plans");
  const int64_t *v = a->shape;
  convjit_transpose_desc td = {sizeof td, v[0], v[1], v[2], CONVJIT_DTYPE_BF16};
  CJ_TRY(cj_transpose_desc_check(&td)); /* the API's limits and messages */
  if (strcmp(a->dtype, "bf16-fp8") == 0) CJ_TRY(cj_kplan_transpose_cvt_init(out, a->arch, v[0], v[1], v[2]));
  else if (strcmp(a->dtype, "bf16") == 0) CJ_TRY(cj_kplan_transpose_init(out, a->arch, 2, v[0], v[1], v[2]));
  else if (strcmp(a->dtype, "fp8") == 0) CJ_TRY(cj_kplan_transpose_init(out, a->arch, 1, v[0], v[1], v[2]));
  else if (strcmp(a->dtype, "bf16-fp8q") == 0)
    CJ_TRY(cj_kplan_transpose_prep_init(out, a->arch, 2, CJ_PREP_QUANT, v[0], v[1], v[2]));
  else if (strcmp(a->dtype, "fn-fnuz") == 0)
    CJ_TRY(cj_kplan_transpose_prep_init(out, a->arch, 1, CJ_PREP_FN_FNUZ, v[0], v[1], v[2]));
  else
    return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "--dtype %s: must be bf16, fp8, bf16-fp8, bf16-fp8q or fn-fnuz", a->dtype);
  *n = 1;
  add_step(a, 1, 0, 0);
  return CONVJIT_OK;
}

/* ---- op: conv (bf16 implicit GEMM; the kernels of cj_select_conv) -------- */

typedef struct conv_opts {
  int64_t stride[3], pad[6], dil[3];
  int nstride, npad, ndil;
  uint64_t groups;         /* --groups (0: 1) */
  int x_ndhwc, y_ndhwc;    /* --layout */
  cj_conv_opts sel; /* the knobs (--tile, --stages, ...): kplan_knobs.h */
  /* the fused epilogue (descriptor fields): --bias, --residual, --beta, --act, --alpha */
  cli_epi epi;
  double alpha;
  int64_t chunks[32]; /* --stream-chunks: frames per chunk (causal streaming) */
  int nchunks;
  cli_problem prob;   /* --kind, --output-padding, --upsample, --dw-dtype, --nondeterministic */
  const char *y_dtype; /* --y-dtype (NULL: the inputs' own) */
} conv_opts;

static const dump_opt_def conv_opt_defs[] = {
  {"stride", 1, "sd,sh,sw (default 1,1,1)"},
  {"pad", 1, "pd,ph,pw (both sides) or lo_d,lo_h,lo_w,hi_d,hi_h,hi_w (default 0)"},
  {"dilation", 1, "dd,dh,dw (default 1,1,1)"},
  {"layout", 1, "ncdhw|ndhwc (x and y) or x,y (default ncdhw): NDHWC x is read in place"},
  {"groups", 1, "G: grouped conv, G divides C and K (default 1)"},
  {"y-dtype", 1, "bf16|f16|f32: y's dtype (default: bf16 for bf16 and fp8, f16 for f16)"},
  {"beta", 1, "z's factor (default 1; a plan constant)"},
  {"act", 1, ": activation applied last"},
  {"alpha", 1, "fp8: S = per-tensor dequantization factor (x_scale), k = also per-channel scales"},
  {"stream-chunks", 1, "LIST: causal streaming, frames per chunk (sum = D): the kernels of the first chunk and of "
                       "each later chunk length, those reading x_prev"},
  {"kind", 1, ": what the plan computes (the shape describes the forward problem; bwd-data: "
              "dx from dy, one conv per output phase; bwd-weight: dw [, db with --bias] from x and dy)"},
  {"output-padding", 1, "op_d,op_h,op_w: bwd-data, the transposed conv's output_padding"},
  {"upsample", 1, "ud,uh,uw: fwd, nearest-upsample x by 1 or 2 per dim inside the conv"},
  {"dw-dtype", 1, "bwd-weight: f32, or the --dtype (default)"},
  {"nondeterministic", 0, "bwd-weight: fp32 atomics across the reduction blocks (desc.nondeterministic)"},
  {NULL, 0, NULL},
};

static convjit_status conv_set_opt(dump_args *a, const char *name, const char *v) {
  conv_opts *o = a->op_opts;
  char what[72];
  int e;
  snprintf(what, sizeof what, "--%s", name);
  if (!strcmp(name, "stride")) CLI(o->nstride = cli_list(what, v, o->stride, 3, 3, 0, CLI_MAX_EXTENT));
  else if (!strcmp(name, "dilation")) CLI(o->ndil = cli_list(what, v, o->dil, 3, 3, 0, CLI_MAX_EXTENT));
  else if (!strcmp(name, "layout")) CLI(cli_layout(what, v, &o->x_ndhwc, &o->y_ndhwc));
  else if (!strcmp(name, "groups")) CLI(cli_u64(what, v, 1, 65535, &o->groups));
  else if (!strcmp(name, "y-dtype")) o->y_dtype = v;
  else if (!strcmp(name, "stream-chunks")) CLI(o->nchunks = cli_list(what, v, o->chunks, 1, 32, 1, CLI_MAX_EXTENT));
  else if (!strcmp(name, "kind") || !strcmp(name, "output-padding") || !strcmp(name, "upsample") ||
           !strcmp(name, "dw-dtype") || !strcmp(name, "nondeterministic"))
    CLI(cli_problem_set(&o->prob, what, v));
  else if (!strcmp(name, "alpha")) {
    if (!strcmp(v, "k")) o->epi.flags |= CJ_EB(SCALE);
    else CLI(cli_double(what, v, 0.0, 1e30, &o->alpha));
  } else if ((e = cli_epi_set(&o->epi, what, v)) != 0) {
    CLI(e);
  } else if (!strcmp(name, "pad")) {
    CLI(o->npad = cli_list(what, v, o->pad, 3, 6, 0, CLI_MAX_EXTENT));
    if (o->npad != 3 && o->npad != 6) CLI(cli_fail(what, v, "takes 3 values (both sides) or 6 (all low, then all high)"));
  } else {
    const cj_knob *k = cj_conv_knob_find(name, strlen(name));
    CJ_CHECK(k != NULL, CONVJIT_ERR_INVALID_ARG, "--%s: not a conv option", name);
    CLI(cli_knob(&o->sel, k, what, v));
  }
  return CONVJIT_OK;
}

static convjit_status conv_plans(const dump_args *a, cj_kplan *out, int max, int *n) {
  const conv_opts *o = a->op_opts;
  /* The public descriptor, validated and normalized as the API does. */
  cli_shape s = cli_shape_3d(a->shape);
  if (cli_shape_dims(&s, o->stride, o->nstride, o->dil, o->ndil, o->pad, o->npad))
    return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "--stride, --dilation, --pad: see above");
  convjit_conv_desc d = cli_conv_desc(&s);
  /* fp8: the arch's native format (docs/api.md "fp8 formats") */
  if (cli_conv_dtypes(a->dtype, o->y_dtype, a->arch, &d))
    return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "--dtype %s, --y-dtype %s: see above", a->dtype ? a->dtype : "(none)",
                  o->y_dtype ? o->y_dtype : "(default)");
  d.groups = o->groups ? (int64_t)o->groups : 1;
  d.x_layout = o->x_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d.y_layout = o->y_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  cli_epi_desc(&o->epi, &d);
  d.x_scale = (float)o->alpha;
  if (cli_problem_desc(&o->prob, &d))
    return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "--output-padding, --upsample, --dw-dtype, --nondeterministic: see above");
  cj_conv_opts sel = o->sel;
  int64_t sum = 0;
  for (int c = 0; c < o->nchunks; c++) sum += o->chunks[c];
  CJ_CHECK(!o->nchunks || sum == d.in[0], CONVJIT_ERR_INVALID_ARG,
           "--stream-chunks: the chunks sum to %lld frames; the shape has D = %lld", (long long)sum, (long long)d.in[0]);
  if (o->nchunks) sel.splitk = 1; /* as the streaming plans force it */
  cj_seq *seq = calloc(1, sizeof *seq);
  CJ_ALLOC_CHECK(seq);
  const cj_target t = {a->arch, a->arch->cu_count_default};
  convjit_status st = CONVJIT_OK;
  *n = 0;
  /* one plan, or (streaming) the first chunk's and each later chunk length's with x_prev */
  for (int c = 0; st == CONVJIT_OK && c < (o->nchunks ? o->nchunks : 1); c++) {
    int dup = 0;
    for (int e = 1; e < c; e++) dup |= o->chunks[e] == o->chunks[c];
    if (dup) continue;
    if (o->nchunks) {
      d.in[0] = o->chunks[c];
      d.has_x_prev = c > 0;
    }
    cj_conv_problem p;
    st = cj_conv_desc_normalize(&d, &p);
    if (st == CONVJIT_OK) st = cj_select_conv(&p, &t, &sel, seq);
    const cj_step_list *lists[2] = {&seq->pack, &seq->fwd};
    for (int l = 0; st == CONVJIT_OK && l < 2; l++)
      for (uint32_t i = 0; i < lists[l]->nsteps; i++) {
        const cj_step *sp = &lists[l]->step[i];
        /* the op's steps: of one problem (streaming plans several) */
        if (sp->kind == CJ_STEP_MEMSET) {
          if (!o->nchunks) add_step(a, l, -1, sp->memset_bytes);
          continue;
        }
        int seen = -1; /* phases that share a kernel: built once */
        for (int e = 0; e < *n && seen < 0; e++)
          if (!strcmp(out[e].name, sp->plan.name)) seen = e;
        if (seen < 0) {
          if (*n >= max) { st = CJ_ERR(CONVJIT_ERR_INTERNAL, "conv: more than %d kernels", max); break; }
          seen = *n;
          out[(*n)++] = sp->plan;
        }
        if (!o->nchunks) add_step(a, l, seen, 0);
      }
  }
  free(seq);
  return st;
}

static const dump_op dump_ops[] = {
  {"transpose", "N,C,S", 3, "bf16|fp8|bf16-fp8|bf16-fp8q|fn-fnuz", NULL, 0, 0, NULL, transpose_plans},
  {"conv", "N,C,D,H,W,K,T,R,S", 9, "bf16|f16|fp8", conv_opt_defs, 1, sizeof(conv_opts), conv_set_opt, conv_plans},
};
#define DUMP_NOPS ((int)(sizeof dump_ops / sizeof dump_ops[0]))

/* ---- argument parsing ----------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f,
          "usage: convjit-dump --arch %s --op OP --dtype T --shape DIMS\n"
          "                    [--emit plan,ir,opt-ir,asm,resources,mnemonics,bounds] [--json] [--check] [--no-sim]\n"
          "  --emit   stages to print, any combination (default plan,resources);\n"
          "           mnemonics: per kernel, how often each instruction occurs in its code\n"
          "           bounds: the conv kernel's MODELLED per-K-step MFMA/LDS/issue/HBM cycles, waves\n"
          "           per SIMD, binding bound (one workgroup emulated; docs/performance.md), and the\n"
          "           compute-unit simulation's time, fraction of peak and breakdown (MODELLED)\n"
          "  --no-sim with bounds: skip the simulation (only the per-K-step counts)\n"
          "  --json   print one JSON object instead of text\n"
          "  --check  exit 1 if any kernel spills, uses scratch or exceeds the arch's LDS\n"
          "  --save-dir DIR  also write each kernel's code object to DIR/<kernel>.co\n"
          "ops:\n",
          cli_arch_names('|'));
  for (int i = 0; i < DUMP_NOPS; i++) {
    const dump_op *o = &dump_ops[i];
    fprintf(f, "  --op %-10s --dtype %s --shape %s\n", o->name, o->dtypes, o->shape_help);
    for (const dump_opt_def *d = o->opts; d && d->name; d++)
      fprintf(f, "      --%s%s  %s%s\n", d->name, d->has_value ? " V" : "", opt_values(d->name), d->help);
    if (o->conv_knobs) cli_epi_usage(f, 6);
    if (o->conv_knobs) {
      cj_strbuf kh = {0};
      cj_conv_knobs_help(&kh, "    --", " ", NULL);
      fputs(kh.s ? kh.s : "", f);
      cj_sb_free(&kh);
    }
  }
}

static const dump_op *find_op(const char *name) {
  for (int i = 0; name && i < DUMP_NOPS; i++)
    if (strcmp(dump_ops[i].name, name) == 0) return &dump_ops[i];
  return NULL;
}

static convjit_status parse_emit(const char *s, unsigned *emit) {
  *emit = 0;
  const char *p = s;
  while (*p) {
    size_t len = strcspn(p, ",");
    unsigned bit = 0;
    for (size_t i = 0; i < sizeof emit_names / sizeof emit_names[0]; i++)
      if (strlen(emit_names[i].name) == len && strncmp(p, emit_names[i].name, len) == 0) bit = emit_names[i].bit;
    CJ_CHECK(bit != 0, CONVJIT_ERR_INVALID_ARG, "--emit %s: unknown stage '%.*s' (plan, ir, opt-ir, asm, resources, mnemonics, bounds)",
             s, (int)len, p);
    *emit |= bit;
    p += len;
    if (*p == ',') p++;
  }
  CJ_CHECK(*emit != 0, CONVJIT_ERR_INVALID_ARG, "--emit: empty list");
  return CONVJIT_OK;
}

/* Splits argv[*i] into name (without "--") and value ("--name=value" or the
 * next argument when the option takes one). */
static convjit_status take_opt(int argc, char **argv, int *i, int has_value, char *name, size_t cap,
                               const char **value) {
  const char *a = argv[*i] + 2;
  const char *eq = strchr(a, '=');
  size_t len = eq ? (size_t)(eq - a) : strlen(a);
  CJ_CHECK(len < cap, CONVJIT_ERR_INVALID_ARG, "option %s: name too long", argv[*i]);
  memcpy(name, a, len);
  name[len] = 0;
  *value = NULL;
  if (!has_value) {
    CJ_CHECK(!eq, CONVJIT_ERR_INVALID_ARG, "--%s takes no value", name);
    return CONVJIT_OK;
  }
  if (eq) *value = eq + 1;
  else {
    CJ_CHECK(*i + 1 < argc, CONVJIT_ERR_INVALID_ARG, "--%s needs a value", name);
    *value = argv[++*i];
  }
  return CONVJIT_OK;
}

static const char *const common_valued[] = {"arch", "op", "dtype", "shape", "emit", "save-dir", NULL};
static const char *const common_flags[] = {"json", "check", "no-sim", "help", NULL};

static int in_list(const char *const *l, const char *s, size_t len) {
  for (; *l; l++)
    if (strlen(*l) == len && strncmp(*l, s, len) == 0) return 1;
  return 0;
}

static convjit_status parse_args(int argc, char **argv, dump_args *a, const dump_op **op_out, int *help) {
  cli_set_tool("convjit-dump");
  memset(a, 0, sizeof *a);
  a->nshape = -1;
  a->emit = EMIT_PLAN | EMIT_RESOURCES;
  *help = 0;
  /* The op decides which extra options exist, so find it first. */
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--op") == 0 && i + 1 < argc) a->op_name = argv[i + 1];
    else if (strncmp(argv[i], "--op=", 5) == 0) a->op_name = argv[i] + 5;
  }
  const dump_op *op = find_op(a->op_name);
  if (op && op->opts_size) {
    a->op_opts = calloc(1, op->opts_size);
    CJ_ALLOC_CHECK(a->op_opts);
  }
  for (int i = 1; i < argc; i++) {
    CJ_CHECK(strncmp(argv[i], "--", 2) == 0 && argv[i][2], CONVJIT_ERR_INVALID_ARG,
             "unexpected argument '%s'", argv[i]);
    const char *s = argv[i] + 2;
    size_t len = strcspn(s, "=");
    char name[64];
    const char *v;
    if (in_list(common_flags, s, len) || in_list(common_valued, s, len)) {
      CJ_TRY(take_opt(argc, argv, &i, in_list(common_valued, s, len), name, sizeof name, &v));
      if (!strcmp(name, "help")) *help = 1;
      else if (!strcmp(name, "json")) a->json = 1;
      else if (!strcmp(name, "check")) a->check = 1;
      else if (!strcmp(name, "no-sim")) a->no_sim = 1;
      else if (!strcmp(name, "op")) a->op_name = v;
      else if (!strcmp(name, "dtype")) a->dtype = v;
      else if (!strcmp(name, "save-dir")) a->save_dir = v;
      else if (!strcmp(name, "emit")) CJ_TRY(parse_emit(v, &a->emit));
      else if (!strcmp(name, "shape")) CLI(a->nshape = cli_list("--shape", v, a->shape, 1, DUMP_MAX_SHAPE, 0, CLI_MAX_EXTENT));
      else if (!strcmp(name, "arch")) {
        a->arch = cj_arch_from_name(v);
        CJ_CHECK(a->arch != NULL, CONVJIT_ERR_INVALID_ARG, "--arch %s: must be one of %s", v, cj_arch_names());
      }
      continue;
    }
    const dump_opt_def *d = NULL;
    for (const dump_opt_def *o = op ? op->opts : NULL; o && o->name; o++)
      if (strlen(o->name) == len && strncmp(o->name, s, len) == 0) d = o;
    const cj_knob *kn = op && op->conv_knobs ? cj_conv_knob_find(s, len) : NULL;
    char flag[64]; /* the epilogue's flag options (the library's table) are the conv's too */
    snprintf(flag, sizeof flag, "--%.*s", (int)(len < 60 ? len : 60), s);
    const int epi_flag = op && op->conv_knobs && !d && !kn && cli_epi_flag_option(flag);
    CJ_CHECK(d != NULL || kn != NULL || epi_flag, CONVJIT_ERR_INVALID_ARG, "unknown option --%.*s%s%s", (int)len, s,
             op ? " for --op " : "", op ? op->name : "");
    CJ_TRY(take_opt(argc, argv, &i, d ? d->has_value : kn ? kn->kind != CJ_KNOB_FLAG : 0, name, sizeof name, &v));
    CJ_TRY(op->set_opt(a, name, v));
  }
  if (*help) return CONVJIT_OK;
  CJ_CHECK(a->arch != NULL, CONVJIT_ERR_INVALID_ARG, "--arch is required (one of %s)", cj_arch_names());
  CJ_CHECK(a->op_name != NULL, CONVJIT_ERR_INVALID_ARG, "--op is required");
  if (!op) {
    cj_strbuf known = {0};
    for (int i = 0; i < DUMP_NOPS; i++) cj_sb_printf(&known, "%s%s", i ? ", " : "", dump_ops[i].name);
    convjit_status st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "--op %s: unknown op (known: %s)", a->op_name,
                               known.s ? known.s : "");
    cj_sb_free(&known);
    return st;
  }
  CJ_CHECK(a->nshape >= 0, CONVJIT_ERR_INVALID_ARG, "--shape %s is required for --op %s", op->shape_help, op->name);
  CJ_CHECK(a->nshape == op->nshape, CONVJIT_ERR_INVALID_ARG, "--shape: --op %s takes %d values (%s), got %d",
           op->name, op->nshape, op->shape_help, a->nshape);
  *op_out = op;
  return CONVJIT_OK;
}

/* ---- output --------------------------------------------------------------- */


/* One text stage of every kernel, each introduced by a comment line naming
 * the kernel. Text output marks every line of its own with ';' (a comment in
 * both LLVM IR and AMDGPU assembly), so `--emit ir | llvm-as-22` and
 * `--emit asm | llvm-mc-22` read the stage as it is. */
static void collect_stage(cj_strbuf *o, const cj_kplan *plans, const cj_built *b, int n, unsigned stage) {
  for (int k = 0; k < n; k++) {
    if (n > 1) cj_sb_printf(o, "; ---- kernel %s ----\n", plans[k].name);
    if (stage == EMIT_PLAN) cj_kplan_print(&plans[k], o);
    else {
      const cj_blob *t = stage == EMIT_IR ? &b[k].ir : stage == EMIT_OPT_IR ? &b[k].opt_ir : &b[k].asm_text;
      if (t->data) cj_sb_printf(o, "%s", (const char *)t->data);
    }
  }
}

static const struct { unsigned stage; const char *json, *title; } stages[] = {
  {EMIT_PLAN, "plan", "plan"}, {EMIT_IR, "ir", "LLVM IR"}, {EMIT_OPT_IR, "opt_ir", "optimized LLVM IR (-O3)"},
  {EMIT_ASM, "asm", "ISA"},
};

/* Per kernel, the disassembled instructions of its own code counted by
 * mnemonic (encoding suffix kept), most frequent first, each checked against
 * the emulator's ISA table (the same table the decoder and
 * tests/emu/test_isa_coverage.c use): a quick look at the instruction mix
 * and at what the emulator could not run. */
static void print_mnemonics(const dump_args *a, const cj_built *b, int n, cj_strbuf *o) {
  if (a->json) cj_sb_printf(o, ",\"mnemonics\":[");
  else cj_sb_printf(o, "; ==== mnemonics (%s) ====\n", a->arch->name);
  for (int k = 0; k < n; k++) {
    cj_mnem_hist h;
    if (cj_mnem_hist_kernel(b[k].co, b[k].info, &h) != CONVJIT_OK) {
      if (a->json) cj_sb_printf(o, "%s{\"kernel\":\"%s\",\"error\":", k ? "," : "", b[k].info->name);
      else cj_sb_printf(o, "; kernel %s: disassembly failed: ", b[k].info->name);
      const char *e = convjit_last_error();
      if (a->json) { cli_json_str(o, e); cj_sb_printf(o, "}"); }
      else cj_sb_printf(o, "%s\n", e);
      continue;
    }
    if (a->json) {
      cj_sb_printf(o, "%s{\"kernel\":\"%s\",\"instructions\":%u,\"code_bytes\":%llu,\"undecoded\":%u,\"counts\":{",
                   k ? "," : "", b[k].info->name, h.total, (unsigned long long)b[k].info->code_size, h.undecoded);
      for (uint32_t i = 0; i < h.n; i++) cj_sb_printf(o, "%s\"%s\":%u", i ? "," : "", h.v[i].name, h.v[i].count);
      cj_sb_printf(o, "},\"not_emulated\":[");
      for (uint32_t i = 0, m = 0; i < h.n; i++)
        if (!emu_isa_has(h.v[i].name)) cj_sb_printf(o, "%s\"%s\"", m++ ? "," : "", h.v[i].name);
      cj_sb_printf(o, "]}");
    } else {
      cj_sb_printf(o, "; kernel %s: %u instructions in %llu bytes, %u mnemonics%s\n", b[k].info->name, h.total,
                   (unsigned long long)b[k].info->code_size, h.n, h.undecoded ? ", some bytes undecodable" : "");
      /* '!' marks what the emulator's ISA table (src/emu/isa_table.h) lacks. */
      for (uint32_t i = 0; i < h.n; i++)
        cj_sb_printf(o, "%7u %s%s\n", h.v[i].count, h.v[i].name,
                     emu_isa_has(h.v[i].name) ? "" : "  ! not in the emulator's table");
      if (h.undecoded) cj_sb_printf(o, "%7u (undecodable words)\n", h.undecoded);
    }
    cj_mnem_hist_free(&h);
  }
  if (a->json) cj_sb_printf(o, "]");
}

/* ---- --emit bounds: the MODELLED per-K-step bounds of the conv kernel ------- */
/* The compute-unit simulation's fields (perf/perf.h, docs/performance.md "Simulation"). */
static void print_sim_json(const cj_perf_kernel_out *m, cj_strbuf *o) {
  cj_sb_printf(o,
               ",\"simulated\":{\"kind\":\"modelled\",\"simulated_ms\":%.4f,\"simulated_fraction_of_peak\":%.3f,"
               "\"simulated_tflops\":%.1f,\"clock_mhz\":%.0f,\"workgroups_per_cu\":%llu,\"simulated_workgroups\":%llu,"
               "\"workgroup_cycles\":%.0f,\"hbm_load_fraction\":%.4f,\"breakdown\":{",
               m->ms, m->fraction_of_peak, m->tflops, m->clock_mhz, (unsigned long long)m->per_cu_wgs,
               (unsigned long long)m->simulated_wgs, m->wg_cycles, m->hbm_load_fraction);
  for (int r = 0; r < CJ_PERF_REASONS; r++)
    cj_sb_printf(o, "%s\"%s\":%.4f", r ? "," : "", cj_perf_reason_name(r), m->breakdown[r]);
  cj_sb_printf(o, "}},\"simulated_ms\":%.4f,\"simulated_fraction_of_peak\":%.3f", m->ms, m->fraction_of_peak);
}

static void print_sim_text(const cj_perf_kernel_out *m, cj_strbuf *o) {
  cj_sb_printf(o,
               ";   simulated (MODELLED, docs/performance.md \"Simulation\"): %.4f ms, %.1f TFLOPS, %.3f of peak at "
               "%.0f MHz sustained\n;   breakdown of the SIMD cycles:",
               m->ms, m->tflops, m->fraction_of_peak, m->clock_mhz);
  for (int r = 0; r < CJ_PERF_REASONS; r++) cj_sb_printf(o, " %s %.3f", cj_perf_reason_name(r), m->breakdown[r]);
  cj_sb_printf(o, "\n;   %llu workgroups on the busiest CU (%llu simulated, then %.0f cycles each)\n",
               (unsigned long long)m->per_cu_wgs, (unsigned long long)m->simulated_wgs, m->wg_cycles);
}

/* One class of the per-wave, per-K-step counts (emu.h's EMU_CLASS_* index). */
#define PS(cls) (x.per_step[EMU_CLASS_##cls])
/* The model is cj_bounds_conv's (src/emu/bounds.h, docs/performance.md). */
static double ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0.0; }

/* The op's simulated time (MODELLED): every step of its launch sequence,
 * each kernel simulated once (conv kernels: kms[k] from the bounds), a
 * memset at the HBM rate; the sums per call and once per weight. */
static void print_op_sim(const dump_args *a, const cj_kplan *plans, const cj_built *b, double *kms, cj_strbuf *o) {
  const dump_steps *ds = a->steps;
  double sum[2] = {0, 0};
  int failed = 0;
  if (a->json) cj_sb_printf(o, ",\"op\":{\"kind\":\"modelled\",\"steps\":[");
  else cj_sb_printf(o, "; op (MODELLED, the sum of its kernels' simulated times):\n");
  for (int i = 0; i < ds->n; i++) {
    const dump_step *st = &ds->s[i];
    double ms;
    int k = st->kernel;
    if (k < 0) {
      ms = cj_bounds_memset_ms(a->arch, NULL, st->memset_bytes);
    } else {
      if (isnan(kms[k])) {
        cj_perf_kernel_out ko;
        kms[k] = cj_bounds_kernel_sim(&plans[k], &b[k], NULL, &ko) == CONVJIT_OK ? ko.ms : INFINITY;
      }
      ms = kms[k];
    }
    if (isinf(ms)) failed = 1;
    sum[st->per_call] += ms;
    const char *list = st->per_call ? "call" : "pack";
    if (a->json) {
      cj_sb_printf(o, "%s{\"list\":\"%s\",", i ? "," : "", list);
      if (k < 0) cj_sb_printf(o, "\"memset_bytes\":%llu", (unsigned long long)st->memset_bytes);
      else cj_sb_printf(o, "\"kernel\":\"%s\"", plans[k].name);
      if (isinf(ms)) {
        cj_sb_printf(o, ",\"error\":");
        cli_json_str(o, convjit_last_error());
        cj_sb_printf(o, "}");
      } else
        cj_sb_printf(o, ",\"simulated_ms\":%.4f}", ms);
    } else if (k < 0) {
      cj_sb_printf(o, ";   %s  memset %llu bytes: %.4f ms\n", list, (unsigned long long)st->memset_bytes, ms);
    } else if (isinf(ms)) {
      cj_sb_printf(o, ";   %s  %s: not simulated: %s\n", list, plans[k].name, convjit_last_error());
    } else {
      cj_sb_printf(o, ";   %s  %s: %.4f ms\n", list, plans[k].name, ms);
    }
  }
  if (a->json) {
    cj_sb_printf(o, "]");
    if (!failed) cj_sb_printf(o, ",\"call_ms\":%.4f,\"pack_ms\":%.4f", sum[1], sum[0]);
    cj_sb_printf(o, "}");
  } else if (!failed) {
    cj_sb_printf(o, ";   per call %.4f ms; weight pack (once per weight) %.4f ms\n", sum[1], sum[0]);
  }
}

/* The direct depthwise conv (memory-bound): its simulated time, the
 * fraction of HBM bandwidth for its compulsory bytes (MODELLED) and the
 * sampled workgroup's bytes and VALU per output element (EMULATED). */
static void print_direct_bounds(const dump_args *a, const cj_kplan *p, const cj_built *b, int first, double *kms,
                                cj_strbuf *o) {
  cj_bounds_direct_out x;
  convjit_status st = cj_bounds_direct(p, b, NULL, &x);
  *kms = st == CONVJIT_OK ? x.ms : INFINITY;
  if (a->json) {
    cj_sb_printf(o, "%s{\"kernel\":\"%s\",\"kind\":\"modelled\"", first ? "" : ",", p->name);
    if (st != CONVJIT_OK) {
      cj_sb_printf(o, ",\"error\":");
      cli_json_str(o, convjit_last_error());
    } else {
      cj_sb_printf(o,
                   ",\"simulated_ms\":%.4f,\"hbm_fraction\":%.3f,\"compulsory_bytes\":%.0f,"
                   "\"emulated\":{\"outputs\":%.0f,\"load_bytes_per_output\":%.3f,\"store_bytes_per_output\":%.3f,"
                   "\"compulsory_bytes_per_output\":%.3f,\"valu_lane_ops_per_output\":%.2f}",
                   x.ms, x.hbm_fraction, x.compulsory_bytes, x.outputs, x.load_bytes_per_output,
                   x.store_bytes_per_output, x.compulsory_per_output, x.valu_per_output);
    }
    cj_sb_printf(o, "}");
  } else if (st != CONVJIT_OK) {
    cj_sb_printf(o, "; %s: not simulated: %s\n", p->name, convjit_last_error());
  } else {
    cj_sb_printf(o,
                 "; %s (direct depthwise, memory-bound)\n"
                 ";   MODELLED: %.4f ms, %.3f of HBM bandwidth for %.0f compulsory bytes (x, w, y once)\n"
                 ";   EMULATED per output element (sampled workgroup, %.0f outputs): loads %.3f B, stores %.3f B, "
                 "compulsory %.3f B; VALU %.2f lane-ops\n",
                 p->name, x.ms, x.hbm_fraction, x.compulsory_bytes, x.outputs, x.load_bytes_per_output,
                 x.store_bytes_per_output, x.compulsory_per_output, x.valu_per_output);
    print_sim_text(&x.sim, o);
  }
}

static void print_bounds(const dump_args *a, const cj_kplan *plans, const cj_built *b, int n, cj_strbuf *o) {
  if (a->json) cj_sb_printf(o, ",\"bounds\":[");
  else cj_sb_printf(o, "; ==== bounds (%s, MODELLED: docs/performance.md) ====\n", a->arch->name);
  int first = 1;
  double kms[DUMP_MAX_KERNELS];
  for (int k = 0; k < n; k++) kms[k] = NAN;
  for (int k = 0; k < n; k++) {
    if (plans[k].op == CJ_KOP_CONV_DIRECT && !plans[k].u.dir.wgrad && !a->no_sim) { /* backward weight's: op sum only */
      print_direct_bounds(a, &plans[k], &b[k], first, &kms[k], o);
      first = 0;
      continue;
    }
    if (plans[k].op != CJ_KOP_CONV) continue;
    cj_bounds x;
    convjit_status st = a->no_sim ? cj_bounds_conv(&plans[k], &b[k], &x) : cj_bounds_conv_sim(&plans[k], &b[k], NULL, &x);
    if (!a->no_sim) kms[k] = st == CONVJIT_OK ? x.sim.ms : INFINITY;
    if (a->json) {
      cj_sb_printf(o, "%s{\"kernel\":\"%s\",\"kind\":\"modelled\"", first ? "" : ",", plans[k].name);
      if (st != CONVJIT_OK) {
        cj_sb_printf(o, ",\"error\":");
        cli_json_str(o, convjit_last_error());
      } else
        cj_sb_printf(o,
                     ",\"sampled_workgroup\":%llu,\"waves\":%u,\"k_steps\":%u,\"per\":\"K step\","
                     "\"mfma_cycles\":%.1f,\"lds_cycles\":%.1f,\"lds_conflict_free_cycles\":%.1f,"
                     "\"lds_max_degree\":%u,\"lds_banks\":%u,\"issue_cycles\":%.1f,\"hbm_cycles\":%.1f,"
                     "\"waves_per_simd\":%.2f,\"workgroups_per_cu\":%u,\"vmem_bytes\":%.0f,"
                     "\"vmem_bytes_per_flop\":%.5f,\"hbm_bytes_per_flop\":%.6f,\"bound\":\"%s\","
                     "\"mfma_fraction\":%.3f,\"vmcnt0_waits\":%llu,\"loop_trips\":%u,"
                     "\"barriers_per_step\":%.2f,\"barrier_cover_mfma\":%.2f,\"per_wave_step\":{\"mfma\":%.3f,"
                     "\"vmem\":%.3f,\"lds\":%.3f,\"valu\":%.3f,\"salu\":%.3f,\"waitcnt\":%.3f,\"barrier\":%.3f,"
                     "\"branch\":%.3f},\"instructions\":%llu,"
                     "\"mfma_share\":%.4f,\"lds_per_mfma\":%.4f,\"vmem_per_mfma\":%.4f,"
                     "\"lines_per_load\":%.2f,\"lines_max\":%u,\"read_conflict_cycles\":%.1f",
                     (unsigned long long)x.wg, x.waves, x.k_steps, x.mfma, x.lds, x.lds_min, x.lds_degree,
                     x.lds_banks, x.issue, x.hbm, x.waves_per_simd, x.wgs_per_cu, x.vmem_bytes,
                     x.vmem_bytes_per_flop, x.hbm_bytes_per_flop, x.bound, x.mfma_fraction,
                     (unsigned long long)x.vmcnt0_waits, x.loop_trips, x.barriers_per_step, x.barrier_cover_mfma,
                     PS(MFMA), PS(VMEM), PS(LDS), PS(VALU), PS(SALU) + PS(SMEM), PS(WAITCNT), PS(BARRIER),
                     PS(BRANCH), (unsigned long long)x.insts, ratio(x.insts_mfma, x.insts),
                     ratio(x.insts_lds, x.insts_mfma), ratio(x.insts_vmem, x.insts_mfma), x.lines_per_load,
                     x.lines_max, x.read_conflict_cycles);
      if (st == CONVJIT_OK && x.simulated) print_sim_json(&x.sim, o);
      cj_sb_printf(o, "}");
    } else if (st != CONVJIT_OK) {
      cj_sb_printf(o, "; %s: %s\n", plans[k].name, convjit_last_error());
    } else {
      cj_sb_printf(o,
                   "; %s: workgroup %llu of %u waves, %u K steps; per K step (MODELLED):\n"
                   ";   mfma_cycles %.1f /SIMD  lds_cycles %.1f /CU (conflict-free %.1f, worst %u-way, %u banks)"
                   "  issue_cycles %.1f /SIMD  hbm_cycles %.1f\n"
                   ";   lds/mfma %.2f  issue/mfma %.2f  waves_per_simd %.2f (%u workgroups/CU)\n"
                   ";   vmem_bytes %.0f (%.5f B/FLOP)  compulsory hbm %.6f B/FLOP\n"
                   ";   bound: %s  modelled fraction of MFMA peak %.3f\n"
                   ";   s_waitcnt vmcnt(0) per wave %llu (EMULATED; the K loop runs %u trips: %s)\n"
                   ";   barriers per wave and K step %.2f, MFMAs a wave issues after each before an LDS wait %.2f "
                   "(EMULATED)\n"
                   ";   per wave and K step (EMULATED, prologue and epilogue amortized): MFMA %.2f  VMEM %.2f  LDS %.2f  "
                   "VALU %.2f  SALU %.2f  waitcnt %.2f  barrier %.2f  branch %.2f\n"
                   ";   instructions of the workgroup %llu: MFMA share %.3f, LDS %.3f and VMEM %.3f per MFMA "
                   "(EMULATED)\n",
                   plans[k].name, (unsigned long long)x.wg, x.waves, x.k_steps, x.mfma, x.lds, x.lds_min,
                   x.lds_degree, x.lds_banks, x.issue, x.hbm, x.mfma > 0 ? x.lds / x.mfma : 0,
                   x.mfma > 0 ? x.issue / x.mfma : 0, x.waves_per_simd, x.wgs_per_cu, x.vmem_bytes,
                   x.vmem_bytes_per_flop, x.hbm_bytes_per_flop, x.bound, x.mfma_fraction,
                   (unsigned long long)x.vmcnt0_waits, x.loop_trips,
                   x.vmcnt0_waits < x.loop_trips ? "none in the loop" : "the loop drains the load queue",
                   x.barriers_per_step, x.barrier_cover_mfma, PS(MFMA), PS(VMEM), PS(LDS), PS(VALU),
                   PS(SALU) + PS(SMEM), PS(WAITCNT), PS(BARRIER), PS(BRANCH), (unsigned long long)x.insts,
                   ratio(x.insts_mfma, x.insts), ratio(x.insts_lds, x.insts_mfma), ratio(x.insts_vmem, x.insts_mfma));
      if (x.simulated)
        cj_sb_printf(o,
                     ";   global loads (EMULATED): %.2f distinct 128-byte lines per instruction (most %u); "
                     "ds_read bank-conflict cycles per K step %.1f\n",
                     x.lines_per_load, x.lines_max, x.read_conflict_cycles);
      if (x.simulated) print_sim_text(&x.sim, o);
    }
    first = 0;
  }
  if (a->json) cj_sb_printf(o, "]");
  if (!a->no_sim && a->steps && a->steps->n) print_op_sim(a, plans, b, kms, o);
}
#undef PS

static void print_all(const dump_args *a, const dump_op *op, const cj_kplan *plans, const cj_built *b, int n,
                      int built, double total_ms, cj_strbuf *o) {
  if (a->json) {
    cj_sb_printf(o, "{\"arch\":\"%s\",\"op\":\"%s\"", a->arch->name, op->name);
    if (a->dtype) { cj_sb_printf(o, ",\"dtype\":"); cli_json_str(o, a->dtype); }
    cj_sb_printf(o, ",\"shape\":[");
    for (int i = 0; i < a->nshape; i++) cj_sb_printf(o, "%s%lld", i ? "," : "", (long long)a->shape[i]);
    cj_sb_printf(o, "]");
  }
  for (size_t s = 0; s < sizeof stages / sizeof stages[0]; s++) {
    if (!(a->emit & stages[s].stage)) continue;
    cj_strbuf t = {0};
    collect_stage(&t, plans, b, n, stages[s].stage);
    if (a->json) {
      cj_sb_printf(o, ",\"%s\":", stages[s].json);
      cli_json_str(o, t.s ? t.s : "");
    } else {
      cj_sb_printf(o, "; ==== %s ====\n%s", stages[s].title, t.s ? t.s : "");
      if (t.len && t.s[t.len - 1] != '\n') cj_sb_printf(o, "\n");
    }
    cj_sb_free(&t);
  }
  if (a->emit & EMIT_RESOURCES) {
    if (a->json) cj_sb_printf(o, ",\"kernels\":[");
    else cj_sb_printf(o, "; ==== resources (%s) ====\n; %-38s %5s %5s %5s %9s %8s %11s %11s\n", a->arch->name,
                      "kernel", "vgpr", "agpr", "sgpr", "lds_bytes", "scratch", "vgpr_spills", "sgpr_spills");
    for (int k = 0; k < n; k++) {
      const cj_kernel_info *i = b[k].info;
      if (a->json)
        cj_sb_printf(o,
                     "%s{\"name\":\"%s\",\"vgpr\":%u,\"agpr\":%u,\"sgpr\":%u,\"lds_bytes\":%u,"
                     "\"scratch_bytes\":%u,\"vgpr_spills\":%u,\"sgpr_spills\":%u,\"plan_lds_bytes\":%u,"
                     "\"code_object_bytes\":%zu,\"codegen_ms\":%.3f,\"compile_ms\":%.3f,\"link_ms\":%.3f}",
                     k ? "," : "", i->name, i->vgpr_count, i->agpr_count, i->sgpr_count, i->group_segment_size,
                     i->private_segment_size, i->vgpr_spill_count, i->sgpr_spill_count, plans[k].lds_bytes,
                     b[k].code_object.size, b[k].codegen_ms, b[k].compile_ms, b[k].link_ms);
      else
        cj_sb_printf(o, "%-40s %5u %5u %5u %9u %8u %11u %11u\n", i->name, i->vgpr_count, i->agpr_count,
                     i->sgpr_count, i->group_segment_size, i->private_segment_size, i->vgpr_spill_count,
                     i->sgpr_spill_count);
    }
    if (a->json) cj_sb_printf(o, "]");
  }
  if (a->emit & EMIT_MNEMONICS) print_mnemonics(a, b, n, o);
  if (a->emit & EMIT_BOUNDS) print_bounds(a, plans, b, n, o);
  if (a->json) {
    if (built) cj_sb_printf(o, ",\"compile_ms\":%.3f", total_ms);
    cj_sb_printf(o, "}\n");
  } else if (built) {
    double cg = 0, cc = 0, ln = 0;
    for (int k = 0; k < n; k++) cg += b[k].codegen_ms, cc += b[k].compile_ms, ln += b[k].link_ms;
    cj_sb_printf(o, "; compile_ms: %.3f (codegen %.3f, llvm -O3 + isel %.3f, ld.lld %.3f)\n", total_ms, cg, cc, ln);
  }
}

/* ---- main ----------------------------------------------------------------- */

static int save_code_object(const char *dir, const char *name, const cj_blob *co) {
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/%s.co", dir, name);
  FILE *f = n > 0 && (size_t)n < sizeof path ? fopen(path, "wb") : NULL;
  int ok = f && fwrite(co->data, 1, co->size, f) == co->size;
  if (f && fclose(f) != 0) ok = 0;
  if (!ok) fprintf(stderr, "convjit-dump: cannot write %s/%s.co: %s\n", dir, name, strerror(errno));
  return ok;
}

static int run(const dump_args *a, const dump_op *op) {
  cj_kplan *plans = calloc(DUMP_MAX_KERNELS, sizeof *plans);
  cj_built *b = calloc(DUMP_MAX_KERNELS, sizeof *b);
  dump_steps *steps = calloc(1, sizeof *steps);
  dump_args with_steps = *a;
  with_steps.steps = steps;
  int n = 0, rc = 0, built = 0;
  double total = 0;
  if (!plans || !b || !steps) {
    fprintf(stderr, "convjit-dump: out of memory\n");
    rc = 1;
    goto out;
  }
  convjit_status st = op->plans(&with_steps, plans, DUMP_MAX_KERNELS, &n);
  if (st != CONVJIT_OK) {
    fprintf(stderr, "convjit-dump: %s\n", convjit_last_error());
    if (st == CONVJIT_ERR_INVALID_ARG) usage(stderr); /* the shape or dtype was refused */
    rc = st == CONVJIT_ERR_INVALID_ARG ? 2 : 1;
    goto out;
  }
  /* Anything past the plan needs the kernels built. */
  if ((a->emit & ~(unsigned)EMIT_PLAN) || a->check || a->save_dir) {
    unsigned flags = (a->emit & EMIT_IR ? CJ_BUILD_KEEP_IR : 0) | (a->emit & EMIT_OPT_IR ? CJ_BUILD_KEEP_OPT_IR : 0) |
                     (a->emit & EMIT_ASM ? CJ_BUILD_KEEP_ASM : 0);
    double t0 = cj_now_ms();
    for (int k = 0; k < n; k++) {
      if (cj_build_kernel(&plans[k], flags, &b[k]) != CONVJIT_OK) {
        fprintf(stderr, "convjit-dump: building %s: %s\n", plans[k].name, convjit_last_error());
        rc = 1;
        goto out;
      }
    }
    total = cj_now_ms() - t0;
    built = 1;
    for (int k = 0; a->save_dir && k < n; k++)
      if (!save_code_object(a->save_dir, plans[k].name, &b[k].code_object)) {
        rc = 1;
        goto out;
      }
  }
  unsigned emit = a->emit;
  if (!built) emit &= EMIT_PLAN;
  dump_args shown = with_steps;
  shown.emit = emit;
  cj_strbuf o = {0};
  print_all(&shown, op, plans, b, n, built, total, &o);
  if (o.oom) {
    fprintf(stderr, "convjit-dump: out of memory formatting the output\n");
    rc = 1;
  } else if (o.s) fwrite(o.s, 1, o.len, stdout);
  cj_sb_free(&o);
  if (rc == 0 && a->check) {
    for (int k = 0; k < n; k++)
      if (cj_check_resources(b[k].info, a->arch) != CONVJIT_OK) {
        fprintf(stderr, "convjit-dump: --check: %s\n", convjit_last_error());
        rc = 1;
      }
  }
out:
  for (int k = 0; b && k < DUMP_MAX_KERNELS; k++) cj_built_free(&b[k]);
  free(b);
  free(plans);
  free(steps);
  return rc;
}

int main(int argc, char **argv) {
  dump_args a;
  const dump_op *op = NULL;
  int help = 0;
  convjit_status st = parse_args(argc, argv, &a, &op, &help);
  if (help) {
    usage(stdout);
    free(a.op_opts);
    return 0;
  }
  if (st != CONVJIT_OK) {
    if (*convjit_last_error()) fprintf(stderr, "convjit-dump: %s\n", convjit_last_error()); /* else cli.c printed it */
    usage(stderr);
    free(a.op_opts);
    return 2;
  }
  int rc = run(&a, op);
  free(a.op_opts);
  return rc;
}
