/* Strict command-line values for every tool in tools/ (one parser, linked
 * into each tool as the cj_cli library; CMakeLists.txt).
 *
 * Numbers are unsigned decimal integers: digits only (no sign, no space, no
 * 0x), nothing after them, within the range the caller gives. Lists are
 * values separated by ',' with no empty value (so no trailing ','); pairs
 * are "AxB" (or "A,B"). A bad value prints, on stderr,
 *   <tool>: <option> '<text>': <what was expected>
 * and the function returns -1; the tool then prints its usage and exits 2.
 * Whether a well-formed value is legal for a problem stays the public API's
 * decision (its messages name the descriptor field). */
#ifndef CJ_TOOLS_CLI_H
#define CJ_TOOLS_CLI_H

#include <stdint.h>
#include "arch/arch.h"
#include "codegen/kplan_epi.h"
#include "codegen/kplan_knobs.h"
#include "host/kinds.h"
#include "util/cj.h"

/* The largest value a list option (--shape, --stride, --pad, --dilation)
 * takes: what a descriptor's int64 field holds. The public API then applies
 * its own limits (1..2^31-1 for extents) and names the field. */
#define CLI_MAX_EXTENT INT64_MAX

/* The tool's name for the messages ("convjit-run"). */
void cli_set_tool(const char *name);

/* Prints "<tool>: <opt> '<text>': <why>"; returns -1. */
int cli_fail(const char *opt, const char *text, const char *why);
/* One integer in lo..hi: 0, or -1 with the message. */
int cli_u64(const char *opt, const char *text, uint64_t lo, uint64_t hi, uint64_t *out);
/* A finite decimal number in (lo, hi]. */
int cli_double(const char *opt, const char *text, double lo_excl, double hi, double *out);
/* "a,b,c": between min and max values, each in lo..hi; the count, or -1. */
int cli_list(const char *opt, const char *text, int64_t *out, int min, int max, int64_t lo, int64_t hi);
/* A conv knob (kplan_knobs.h) given as --<name> [text]: a flag takes no text,
 * ONE an integer < 2^32, PAIR "AxB"/"A,B" of them; a 0 where the knob's
 * domain starts above 0 is refused ("--tile 0x128" is no half-auto tile:
 * leaving the option out lets convjit choose). 0, or -1. */
int cli_knob(cj_conv_opts *o, const cj_knob *k, const char *opt, const char *text);
/* A conv --layout: "ncdhw" | "ndhwc" (x and y) or "X,Y" of those (mixed);
 * *x_ndhwc, *y_ndhwc = 1 for channels-last. 0, or -1 with the message. */
int cli_layout(const char *opt, const char *text, int *x_ndhwc, int *y_ndhwc);
/* An --act: one of the epilogue's activation names (cj_epi_act_name);
 * *act = its index. 0, or -1 with the message. */
int cli_act(const char *opt, const char *text, int *act);
/* "identity|relu|silu|gelu": the activation names (cj_epi_act_name), for usages. */
const char *cli_act_names(void);

/* s as a JSON string value, quoted, with quotes, backslashes and control
 * bytes escaped: every tool's --json uses it. */
void cli_json_str(cj_strbuf *sb, const char *s);

/* ---- the option loop --------------------------------------------------------
 *   cli_args c = cli_args_of(argc, argv);
 *   while (cli_next(&c)) {
 *     if (cli_is(&c, "--arch")) { if (!(a->arch = cli_value(&c))) return -1; }
 *     else if (cli_is(&c, "--json")) a->json = 1;
 *     else return cli_unknown(&c);
 *   }
 * Messages: "<tool>: <opt> needs a value", "<tool>: unknown option <opt>". */
typedef struct cli_args {
  int argc;
  char **argv;
  int i;           /* argv index of the current option */
  const char *opt; /* the current option */
} cli_args;
cli_args cli_args_of(int argc, char **argv);
int cli_next(cli_args *c);                     /* 1: c->opt is the next argument; 0: none left */
int cli_is(const cli_args *c, const char *opt); /* c->opt is opt */
const char *cli_value(cli_args *c);            /* the option's value (next argument, consumed); NULL + message */
int cli_unknown(const cli_args *c);            /* the message; -1 */
/* In a parser returning -1 on error: v = the current option's value, or return. */
#define CLI_VALUE(c, v)                              \
  do {                                               \
    if (!((v) = cli_value(c))) return -1;            \
  } while (0)
/* A conv knob option "--<knob> [value]" (kplan_knobs.h; tunable_only: only
 * the performance choices) into o: 1 taken, 0 not a knob, -1 bad (printed). */
int cli_knob_opt(cli_args *c, cj_conv_opts *o, int tunable_only);
/* An --arch value: its cj_arch, or NULL with "expected one of <the arch
 * table's names>" (cj_arch_names). */
const cj_arch *cli_arch(const char *opt, const char *text);
/* The arch table's names joined by sep ("gfx942|gfx950" for '|'), for
 * usages and defaults: no tool types an arch name. A static string per
 * separator ('|', ',' or ' '). */
const char *cli_arch_names(char sep);

/* ---- convjit calls in a tool -------------------------------------------------
 * CLI_TRY: on failure prints "<tool>: <status>: <error text>", keeps the
 * status in the caller's `int rc` and jumps to its `done:` label.
 * CLI_TRY_QUIET: the status into the caller's `convjit_status st`, then
 * `done:` (the caller reports it). */
void cli_report(convjit_status st);
#define CLI_TRY(call)                                \
  do {                                               \
    convjit_status s_ = (call);                      \
    if (s_ != CONVJIT_OK) {                          \
      cli_report(s_);                                \
      rc = s_;                                       \
      goto done;                                     \
    }                                                \
  } while (0)
#define CLI_TRY_QUIET(call)                          \
  do {                                               \
    if ((st = (call)) != CONVJIT_OK) goto done;      \
  } while (0)

/* ---- shape -> descriptor, written once -----------------------------------------
 * A conv's geometry as the tools take it: rank 3 (N,C,D,H,W,K,T,R,S), 2
 * (N,C,H,W,K,R,S: D = T = 1) or 1 (N,C,W,K,S: also H = R = 1), always held
 * in the 3D form, per-dimension values in D,H,W order. */
typedef struct cli_shape {
  int rank;
  int64_t v[9];                     /* N, C, D, H, W, K, T, R, S */
  int64_t pad_lo[3], pad_hi[3];     /* D, H, W; 0 unless given */
  int64_t stride[3], dil[3];        /* D, H, W; 1 unless given */
} cli_shape;
/* The 3D shape of 9 values (rank 3, no padding, stride and dilation 1). */
cli_shape cli_shape_3d(const int64_t v[9]);
/* A --shape list of 9, 7 or 5 values (any other count: -1 with a message
 * naming opt and the forms). */
int cli_shape_set(cli_shape *s, const char *opt, const int64_t *v, int n);
/* --stride / --dilation (rank values) and --pad (rank values, both sides;
 * or 2*rank: all low, then all high), in the shape's rank; n = 0 leaves the
 * default. -1 with "--stride/--dilation need R values, --pad R or 2R". */
int cli_shape_dims(cli_shape *s, const int64_t *stride, int nstride, const int64_t *dil, int ndil,
                   const int64_t *pad, int npad);
/* The public descriptor of the geometry (convjit_conv_desc_default's
 * dtypes, layouts and epilogue): the one place a tool's shape becomes one. */
convjit_conv_desc cli_conv_desc(const cli_shape *s);
int cli_shape_equal(const cli_shape *a, const cli_shape *b); /* field by field */
/* ---- the problem's kind and its own fields ------------------------------------
 * --kind K (the kind table's tool spellings, kinds.h: fwd, bwd-data, ...;
 * the shape options then describe the forward problem, as MIOpen's
 * directions do), --output-padding LIST (backward data: the transposed
 * conv's, one value per spatial dim), --upsample LIST (forward: 1 or 2
 * per spatial dim, the fused nearest upsample of x), --dw-dtype T
 * (backward weight: dw in f32, or in the inputs' 16-bit dtype, the
 * default) and --nondeterministic (backward weight: fp32 atomics across
 * the reduction blocks, desc.nondeterministic). */
typedef struct cli_problem {
  int kind;            /* convjit_conv_kind: forward unless --kind */
  int64_t out_pad[3], up[3];
  int nop, nup;        /* values given (0: none) */
  int dw_dtype;        /* convjit_dtype of --dw-dtype, 0: the inputs' */
  int nondeterministic;
} cli_problem;
/* One of those options at c into pr: 1 taken, 0 not one of them, -1 bad (printed). */
int cli_problem_opt(cli_args *c, cli_problem *pr);
/* The same for a tool with its own option loop: opt ("--kind", "--upsample",
 * "--output-padding", "--dw-dtype" or "--nondeterministic", whose v is
 * not read) with value v; 0, or -1 (printed). */
int cli_problem_set(cli_problem *pr, const char *opt, const char *v);
/* Writes them into d (its spatial_rank's dims), after d's dtypes are set:
 * backward weight reads dy in x's dtype and writes dw in --dw-dtype's.
 * 0, or -1 with the message (an option the kind does not take). */
int cli_problem_desc(const cli_problem *pr, convjit_conv_desc *d);
/* ---- the fused epilogue's options, written once ---------------------------------
 * The flag ops' options from the library's table (host/kinds.h
 * CJ_EPI_FLAG_TABLE: --bias, --residual, ...; the per-channel scales are
 * set by --alpha k, whose --alpha S form is the fp8 x_scale, the tool's
 * own), --beta B (z's factor) and --act A (cj_epi_act_name): the
 * descriptor's epilogue fields. An op asked for by a flag is its row there
 * and needs nothing here. */
typedef struct cli_epi {
  uint32_t flags; /* 1 << cj_epi_op of each flag op asked for (CJ_EB(BIAS), ...) */
  int act;
  double beta; /* 0 = 1.0 (the descriptor's rule) */
} cli_epi;
/* The flag row whose option is opt ("--bias"); NULL if none. */
const cj_epi_flag *cli_epi_flag_option(const char *opt);
/* The flag options' usage lines ("  --bias  fused epilogue: ..."), the
 * option names padded to width. */
void cli_epi_usage(FILE *f, int width);
/* One of them: opt (a flag option: v not read; "--beta", "--act") with
 * value v into e: 1 taken, 0 not one of them, -1 bad (printed). */
int cli_epi_set(cli_epi *e, const char *opt, const char *v);
/* The same at c (its value consumed when the option takes one). */
int cli_epi_opt(cli_args *c, cli_epi *e);
/* Writes them into d's epilogue fields. */
void cli_epi_desc(const cli_epi *e, convjit_conv_desc *d);
/* A parsed epilogue description (a shapes line's tokens) as the options. */
cli_epi cli_epi_of(const cj_epilogue *e);

/* "fwd|bwd-data|..." from the kind table, for usages. */
const char *cli_kind_names(void);

/* The arch's native fp8 format (cj_arch.fp8) as a convjit dtype: the conv's
 * fp8 tensors' default; arch NULL or unknown: E4M3FN. */
convjit_dtype cli_fp8_dtype(const cj_arch *arch);
/* A conv's --dtype (bf16 | f16 | fp8: x and w; fp8 = the arch's native
 * format) and --y-dtype (bf16 | f16 | f32, NULL: the inputs' own output,
 * bf16 for bf16 and fp8, f16 for f16; fp16 and fp32 are read as f16 and
 * f32) into d's x/w/y dtypes. Whether the
 * combination has kernels stays the API's to say (naming desc.y_dtype).
 * 0, or -1 with "<tool>: --dtype 'x': ..." printed. */
int cli_conv_dtypes(const char *dtype, const char *y_dtype, const cj_arch *arch, convjit_conv_desc *d);

/* ---- shapes files (convjit-tune, convjit-prebuild) ---------------------------------
 * One conv per line in the kernel-spec form of the conv op (codegen/kspec.h),
 * "conv <arch|-> <bf16|f16|fp8> N,C,D,H,W,K,T,R,S [options]": '#' starts a
 * comment, blank lines are skipped. The descriptor of a line: 0, 1 when it
 * names another arch than `arch` (skipped), -1 after printing "<tool>:
 * shapes line N: why". Options: pad= stride= dil= y= and bias; with
 * epilogue = 1 also the rest of the descriptor (layout= groups= scale
 * residual[=BETA] act=); knobs never (they are the tuner's choice). pr: the
 * tool's --kind options (NULL: forward); a line's wgrad and atomic make it
 * backward weight whatever pr says. */
int cli_shapes_line(const char *line, const char *arch, int epilogue, const cli_problem *pr, int lineno,
                    convjit_conv_desc *d);

#endif
