/* convjit-tune: tunes a list of conv shapes and manages the tuning table
 * (docs/tuning.md).
 *
 *   convjit-tune --shapes FILE [--device hip|emu] [--arch A] [--cache-dir D]
 *                [--json] [--store-modelled] [--no-store] [--budget-ms X]
 *                [--warmup N] [--max-reps N] [--kind K] [--output-padding L] [--upsample L]
 *                [--dw-dtype f32] [--nondeterministic]
 *   convjit-tune --export FILE | --import FILE | --count | --clear  [--cache-dir D]
 *
 * Shapes file: one conv per line in the kernel-spec form of the conv op
 * (codegen/kspec.h), "conv <arch|-> <bf16|fp8> N,C,D,H,W,K,T,R,S [pad=..
 * stride=.. dil=.. bias wgrad atomic]" (wgrad: the backward-weight problem
 * of that conv, dw in the dtype, db with bias; atomic: its nondeterministic
 * form; --kind bwd-weight makes every line one); '#' starts a comment; a
 * line for another arch
 * than the device's is skipped. Each shape gets random inputs in device
 * memory this tool allocates, then convjit_plan_tune. Progress goes to
 * stderr (one line per candidate; rewritten in place on a terminal), the
 * --kind, --output-padding and --upsample apply to every shape (which
 * describes the forward problem; backward data tunes dx from a dy), the
 * summary table (or --json) to stdout. On the emulator every time is the
 * bounds model's and every line says MODELLED; nothing is stored unless
 * --store-modelled. The table's last line says how many winners were
 * stored; a winner that was to be stored and was not (the database could
 * not be written) fails the run. Exit 0 on success, 1 on a failure, 2 on
 * usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "codegen/kspec.h"
#include "host/tool_api.h"
#include "tool_data.h"
#include "util/numfmt.h"

typedef struct tune_args {
  const char *device, *arch, *shapes, *cache_dir, *export_file, *import_file;
  int json, store_modelled, no_store, count, clear;
  convjit_tune_options topt;
  cli_problem prob; /* --kind, --output-padding, --upsample, --dw-dtype, --nondeterministic: every shape's */
} tune_args;

static void usage(FILE *f) {
  fprintf(f,
          "usage: convjit-tune --shapes FILE [--device hip|emu] [--arch %s] [--cache-dir DIR]\n"
          "                    [--json] [--store-modelled] [--no-store] [--budget-ms X] [--warmup N] [--max-reps N]\n"
          "                    [--kind %s] [--output-padding LIST] [--upsample LIST]\n"
          "                    [--dw-dtype f32] [--nondeterministic]\n"
          "       convjit-tune (--export FILE | --import FILE | --count | --clear) [--cache-dir DIR]\n"
          "  shapes: one conv per line, \"conv <arch|-> <bf16|f16|fp8> N,C,D,H,W,K,T,R,S [pad= stride= dil= y= bias\n"
          "          wgrad atomic]\"; wgrad (or --kind bwd-weight): its backward-weight problem (dw in the dtype;\n"
          "          db with bias; atomic: fp32 atomics across blocks), whose tuning rows are its kind's own\n"
          "  --device emu ranks candidates by the bounds model: every figure is MODELLED, and nothing is\n"
          "  stored in the tuning table unless --store-modelled (such rows are marked modelled)\n"
          "  --kind, --output-padding, --upsample, --dw-dtype, --nondeterministic: every shape's (the shape is\n"
          "  the forward problem's)\n",
          cli_arch_names('|'), cli_kind_names());
}

static int parse_args(int argc, char **argv, tune_args *a) {
  cli_set_tool("convjit-tune");
  memset(a, 0, sizeof *a);
  a->device = "hip";
  a->topt = convjit_tune_options_default();
  cli_args c = cli_args_of(argc, argv);
  while (cli_next(&c)) {
    const char *o = c.opt, *v = NULL;
    uint64_t u;
    int po = cli_problem_opt(&c, &a->prob);
    if (po) { if (po < 0) return -1; }
    else if (!strcmp(o, "--device")) { CLI_VALUE(&c, v); a->device = v; }
    else if (!strcmp(o, "--arch")) { CLI_VALUE(&c, v); a->arch = v; }
    else if (!strcmp(o, "--shapes")) { CLI_VALUE(&c, v); a->shapes = v; }
    else if (!strcmp(o, "--cache-dir")) { CLI_VALUE(&c, v); a->cache_dir = v; }
    else if (!strcmp(o, "--export")) { CLI_VALUE(&c, v); a->export_file = v; }
    else if (!strcmp(o, "--import")) { CLI_VALUE(&c, v); a->import_file = v; }
    else if (!strcmp(o, "--json")) a->json = 1;
    else if (!strcmp(o, "--store-modelled")) a->store_modelled = 1;
    else if (!strcmp(o, "--no-store")) a->no_store = 1;
    else if (!strcmp(o, "--count")) a->count = 1;
    else if (!strcmp(o, "--clear")) a->clear = 1;
    else if (!strcmp(o, "--budget-ms")) { CLI_VALUE(&c, v); if (cli_double(o, v, -1e-300, 1e6, &a->topt.budget_ms)) return -1; }
    else if (!strcmp(o, "--warmup")) { CLI_VALUE(&c, v); if (cli_u64(o, v, 0, 1000, &u)) return -1; a->topt.warmup = (int)u; }
    else if (!strcmp(o, "--max-reps")) {
      CLI_VALUE(&c, v);
      if (cli_u64(o, v, 1, 10000, &u)) return -1;
      a->topt.max_reps = (int)u;
      if (a->topt.min_reps > a->topt.max_reps) a->topt.min_reps = a->topt.max_reps;
    } else if (!strcmp(o, "--help") || !strcmp(o, "-h")) { usage(stdout); exit(0); }
    else return cli_unknown(&c);
  }
  if (strcmp(a->device, "hip") && strcmp(a->device, "emu")) return cli_fail("--device", a->device, "hip or emu");
  int jobs = !!a->shapes + !!a->export_file + !!a->import_file + a->count + a->clear;
  if (jobs != 1) {
    fprintf(stderr, "convjit-tune: give exactly one of --shapes, --export, --import, --count, --clear\n");
    return -1;
  }
  a->topt.store = !a->no_store;
  a->topt.store_modelled = a->store_modelled && !a->no_store;
  return 0;
}

/* ---- progress --------------------------------------------------------------- */

typedef struct progress {
  int shape, nshapes, tty, modelled;
  double t0;
} progress;

static void on_candidate(void *user, int index, int count, const convjit_tune_candidate *c, double best_ms) {
  const progress *p = user;
  const char *tag = p->modelled ? " MODELLED" : "";
  char now[96];
  if (c->status == CONVJIT_TUNE_TIMED || c->status == CONVJIT_TUNE_MODELLED) snprintf(now, sizeof now, "%.5f ms", c->ms);
  else snprintf(now, sizeof now, "%s (%.60s)", c->status == CONVJIT_TUNE_VETOED ? "vetoed" : "skipped", c->reason);
  fprintf(stderr, "%s[shape %d/%d] candidate %d/%d %s; best %.5f ms%s; elapsed %.1f s%s", p->tty ? "\r\033[K" : "",
          p->shape, p->nshapes, index + 1, count, now, best_ms, tag, (cj_now_ms() - p->t0) / 1e3, p->tty ? "" : "\n");
  fflush(stderr);
}

/* ---- one shape ------------------------------------------------------------- */

typedef struct shape_row {
  char text[160];
  int ok, skipped;
  convjit_tune_result res;
} shape_row;

static uint64_t rng(uint64_t *s) { /* splitmix64: reproducible inputs */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Random finite values: bf16 or f16 in [-1, 1); fp8 bytes with the top
 * exponent bit clear (never a NaN code in either E4M3 flavour). */
static void fill(void *h, size_t n, convjit_dtype t, uint64_t *seed) {
  for (size_t i = 0; i < n; i++) {
    uint64_t r = rng(seed);
    float v = (float)((r >> 40) * (2.0 / 16777216.0) - 1.0);
    if (cj_dtype_bytes(t) == 1) ((uint8_t *)h)[i] = (uint8_t)(r & 0x77);
    else ((uint16_t *)h)[i] = t == CONVJIT_DTYPE_F16 ? cj_f32_to_f16_rne(v) : cj_f32_to_bf16_rne(v);
  }
}


/* One tensor role's device buffer, its inputs filled from the host buffer
 * h: random for a 16- or 8-bit tensor, i / n - 0.5 for an fp32 one (the
 * per-channel operands). */
static convjit_status tune_tensor(convjit_context *ctx, const cj_conv_problem *p, cj_tensor t, void *h,
                                  uint64_t *seed, void **dev) {
  convjit_dtype dt;
  const size_t n = tool_tensor_elems(p, t, &dt), bytes = n * cj_dtype_bytes(dt);
  CJ_TRY(convjit_malloc(ctx, bytes, dev));
  if (cj_tensor_access_of(t) != CJ_TENSOR_IN) return CONVJIT_OK;
  if (dt == CONVJIT_DTYPE_F32)
    for (size_t i = 0; i < n; i++) ((float *)h)[i] = (float)i / (float)n - 0.5f;
  else fill(h, n, dt, seed);
  return convjit_memcpy_h2d(ctx, *dev, h, bytes, NULL);
}

/* The plan's tensors on the device, one per role it takes (cj_plan_tensors;
 * the raw weight too when its kind packs one), inputs filled in table
 * order, the weight packed; the workspace with room for the split-K
 * candidates: their fp32 partial sums after the transposed x (256-byte
 * aligned sub-buffers, select_conv.c), unless the output is a weight
 * gradient (no split-K candidates; a larger tile's partials: the second
 * pass). A candidate wanting more is tuned in a second pass
 * (workspace_needed). */
static convjit_status tune_alloc(convjit_context *ctx, const convjit_plan *plan, void *t[CJ_TENSOR_COUNT],
                                 convjit_conv_args *args) {
  const cj_conv_problem *p = cj_plan_problem(plan);
  uint32_t roles = cj_plan_tensors(plan) & ~(CJ_TB(W_PACKED) | CJ_TB(WORKSPACE));
  if (cj_conv_kind_of(p->kind)->packs) roles |= CJ_TB(W_RAW);
  size_t hbytes = 0, ws = 0, pw = 0;
  for (int r = CJ_TENSOR_NONE + 1; r < CJ_TENSOR_COUNT; r++) {
    convjit_dtype dt;
    const size_t b = tool_tensor_elems(p, (cj_tensor)r, &dt) * cj_dtype_bytes(dt);
    if ((roles & CJ_TENSOR_BIT(r)) && b > hbytes) hbytes = b;
  }
  void *h = malloc(hbytes ? hbytes : 1);
  if (!h) return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "host buffer of %zu bytes", hbytes);
  convjit_status st = CONVJIT_OK;
  uint64_t seed = 1;
  for (int r = CJ_TENSOR_NONE + 1; r < CJ_TENSOR_COUNT && st == CONVJIT_OK; r++)
    if (roles & CJ_TENSOR_BIT(r)) st = tune_tensor(ctx, p, (cj_tensor)r, h, &seed, &t[r]);
  free(h);
  CJ_TRY(st);
  CJ_TRY(convjit_plan_workspace_size(plan, &ws));
  CJ_TRY(convjit_plan_packed_weight_size(plan, &pw));
  const cj_tensor out = tool_kind_output(p->kind);
  size_t ws_all = (ws + 255) / 256 * 256 + tool_tensor_elems(p, out, NULL) * 4 + 256;
  if (out == CJ_TENSOR_DW) ws_all = ws;
  if (ws_all) CJ_TRY(convjit_malloc(ctx, ws_all, &t[CJ_TENSOR_WORKSPACE]));
  if (pw) CJ_TRY(convjit_malloc(ctx, pw, &t[CJ_TENSOR_W_PACKED]));
  if (pw) CJ_TRY(convjit_weight_pack(plan, t[CJ_TENSOR_W_RAW], t[CJ_TENSOR_W_PACKED], NULL));
  *args = convjit_conv_args_default();
  for (int r = CJ_TENSOR_NONE + 1; r < CJ_TENSOR_COUNT; r++) tool_args_set(args, (cj_tensor)r, t[r]);
  if (!pw && (roles & CJ_TB(W_RAW))) args->w_packed = t[CJ_TENSOR_W_RAW]; /* no pack step: the raw weight is used */
  args->workspace_bytes = ws_all;
  return CONVJIT_OK;
}

static convjit_status tune_shape(convjit_context *ctx, const convjit_conv_desc *d, const tune_args *a, progress *pg,
                                 shape_row *row) {
  convjit_status st;
  convjit_plan *plan = NULL;
  void *t[CJ_TENSOR_COUNT] = {0};
  convjit_conv_args args;
  CLI_TRY_QUIET(convjit_plan_create_conv(ctx, d, &plan));
  CLI_TRY_QUIET(tune_alloc(ctx, plan, t, &args));
  convjit_tune_options o = a->topt;
  o.progress = on_candidate;
  o.progress_user = pg;
  row->res.struct_size = sizeof row->res;
  CLI_TRY_QUIET(convjit_plan_tune(plan, &args, NULL, &o, &row->res));
  if (row->res.workspace_needed > args.workspace_bytes) { /* a candidate wanted more: once more with room for all */
    args.workspace_bytes = row->res.workspace_needed;
    if (t[CJ_TENSOR_WORKSPACE]) CLI_TRY_QUIET(convjit_free(ctx, t[CJ_TENSOR_WORKSPACE]));
    t[CJ_TENSOR_WORKSPACE] = NULL;
    CLI_TRY_QUIET(convjit_malloc(ctx, args.workspace_bytes, &t[CJ_TENSOR_WORKSPACE]));
    args.workspace = t[CJ_TENSOR_WORKSPACE];
    CLI_TRY_QUIET(convjit_plan_tune(plan, &args, NULL, &o, &row->res));
  }
  row->ok = 1;
done:
  if (st != CONVJIT_OK)
    fprintf(stderr, "%sconvjit-tune: %s: %s: %s\n", pg->tty ? "\r\033[K" : "", row->text, convjit_status_string(st),
            convjit_last_error());
  for (int r = CJ_TENSOR_NONE + 1; r < CJ_TENSOR_COUNT; r++)
    if (t[r]) convjit_free(ctx, t[r]);
  convjit_plan_destroy(plan);
  return st;
}

/* ---- output ----------------------------------------------------------------- */

static void json_text(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* Winners stored out of those tuned (a shape that failed has none). */
static void count_stored(const shape_row *rows, int n, int *stored, int *tuned) {
  *stored = *tuned = 0;
  for (int i = 0; i < n; i++) {
    *tuned += rows[i].ok;
    *stored += rows[i].ok && rows[i].res.stored;
  }
}

/* What happened to the winners, said as it is: the tool never implies a
 * store that did not happen (a table it could not write, moved-aside or
 * not: CONVJIT_LOG=error gives the library's reason). */
static void print_store_line(const shape_row *rows, int n, int modelled, int asked, const char *path) {
  int stored, tuned;
  count_stored(rows, n, &stored, &tuned);
  const char *tag = modelled ? "MODELLED winners" : "winners";
  if (!asked) printf("%s: nothing stored (%s)\n", tag, modelled ? "--store-modelled stores them, marked modelled"
                                                                  : "--no-store");
  else printf("%s: stored %d of %d in the tuning table of %s\n", tag, stored, tuned, path[0] ? path : "(no database)");
}

static void print_table(const shape_row *rows, int n, int modelled, const char *arch, const char *model) {
  const char *tag = modelled ? "  MODELLED" : "";
  printf("%-52s %12s %12s %8s  %s%s\n", "shape", "default ms", "best ms", "speedup", "winner", tag);
  for (int i = 0; i < n; i++) {
    const convjit_tune_result *r = &rows[i].res;
    if (!rows[i].ok) {
      printf("%-52s %12s %12s %8s  %s%s\n", rows[i].text, "-", "-", "-", "(failed)", tag);
      continue;
    }
    printf("%-52s %12.5f %12.5f %7.2fx  %s%s\n", rows[i].text, r->default_ms, r->best_ms,
           r->best_ms > 0 ? r->default_ms / r->best_ms : 0, r->cand[r->winner].knobs, tag);
  }
  if (modelled) printf("MODELLED: the emulator's bounds model (docs/tuning.md) on %s, not a GPU time\n", arch);
  else printf("TIMED: median HIP event times on %s (%s)\n", model[0] ? model : "an unnamed device", arch);
}

static void print_json(const shape_row *rows, int n, int modelled, const char *device, const char *arch,
                       const char *model) {
  printf("{\"tool\":\"convjit-tune\",\"device\":\"%s\",\"arch\":\"%s\",\"modelled\":%s,\"label\":\"%s\",",
         device, arch, modelled ? "true" : "false", modelled ? "MODELLED" : "TIMED");
  printf("\"device_model\":");
  json_text(stdout, model);
  printf(",\"shapes\":[");
  for (int i = 0; i < n; i++) {
    const convjit_tune_result *r = &rows[i].res;
    printf("%s\n{\"shape\":", i ? "," : "");
    json_text(stdout, rows[i].text);
    printf(",\"ok\":%s", rows[i].ok ? "true" : "false");
    if (rows[i].ok) {
      printf(",\"default_ms\":%.6g,\"best_ms\":%.6g,\"speedup\":%.4f,\"winner\":", r->default_ms, r->best_ms,
             r->best_ms > 0 ? r->default_ms / r->best_ms : 0);
      json_text(stdout, r->cand[r->winner].knobs);
      printf(",\"candidates\":%d,\"stored\":%s", r->count, r->stored ? "true" : "false");
    }
    printf(",\"modelled\":%s,\"label\":\"%s\"}", modelled ? "true" : "false", modelled ? "MODELLED" : "TIMED");
  }
  printf("\n]}\n");
}

/* ---- jobs ------------------------------------------------------------------- */

static int run_shapes(convjit_context *ctx, const tune_args *a, const convjit_context_info *ci) {
  const char *arch = ci->arch;
  int modelled = ci->emulated;
  FILE *f = fopen(a->shapes, "r");
  if (!f) {
    fprintf(stderr, "convjit-tune: --shapes %s: cannot open it\n", a->shapes);
    return 1;
  }
  shape_row *rows = NULL;
  convjit_conv_desc *descs = NULL;
  int n = 0, cap = 0, lineno = 0, bad = 0;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    lineno++;
    line[strcspn(line, "#\r\n")] = 0;
    const char *s = line + strspn(line, " \t");
    if (!*s) continue;
    convjit_conv_desc d;
    int pr = cli_shapes_line(s, arch, 0, &a->prob, lineno, &d);
    if (pr < 0) bad = 1;
    if (pr != 0) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      rows = realloc(rows, (size_t)cap * sizeof *rows);
      descs = realloc(descs, (size_t)cap * sizeof *descs);
      if (!rows || !descs) { fprintf(stderr, "convjit-tune: out of memory\n"); exit(1); }
    }
    memset(&rows[n], 0, sizeof rows[n]);
    snprintf(rows[n].text, sizeof rows[n].text, "%.159s", s);
    descs[n++] = d;
  }
  fclose(f);
  if (bad || !n) {
    if (!n && !bad) fprintf(stderr, "convjit-tune: %s holds no shape for %s\n", a->shapes, arch);
    free(rows);
    free(descs);
    return bad ? 2 : 1;
  }
  progress pg = {.nshapes = n, .tty = isatty(2), .modelled = modelled, .t0 = cj_now_ms()};
  int failed = 0;
  for (int i = 0; i < n; i++) {
    pg.shape = i + 1;
    failed |= tune_shape(ctx, &descs[i], a, &pg, &rows[i]) != CONVJIT_OK;
  }
  if (pg.tty) fprintf(stderr, "\n");
  int asked = modelled ? a->topt.store_modelled : a->topt.store, stored, tuned;
  if (a->json) print_json(rows, n, modelled, a->device, arch, ci->device_model);
  else {
    print_table(rows, n, modelled, arch, ci->device_model);
    print_store_line(rows, n, modelled, asked, ci->cache_path);
  }
  count_stored(rows, n, &stored, &tuned);
  if (asked && stored < tuned) {
    fprintf(stderr, "convjit-tune: %d of %d winners not stored: the tuning table of %s could not be written "
            "(CONVJIT_LOG=error gives the reason)\n", tuned - stored, tuned,
            ci->cache_path[0] ? ci->cache_path : "(no database: disk cache off)");
    failed = 1;
  }
  free(rows);
  free(descs);
  return failed;
}

static int run_export(convjit_context *ctx, const char *file) {
  cj_strbuf js = {0};
  int nrows = 0;
  if (cj_context_tuning_export(ctx, &js, &nrows) != CONVJIT_OK) {
    fprintf(stderr, "convjit-tune: --export: %s\n", convjit_last_error());
    cj_sb_free(&js);
    return 1;
  }
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp-%d", file, (int)getpid());
  FILE *f = fopen(tmp, "w");
  int ok = f && fwrite(js.s, 1, js.len, f) == js.len;
  if (f && fclose(f) != 0) ok = 0;
  if (ok && rename(tmp, file) != 0) ok = 0; /* complete or absent: never half a file */
  if (!ok) {
    remove(tmp);
    fprintf(stderr, "convjit-tune: --export %s: cannot write it\n", file);
  } else {
    fprintf(stderr, "convjit-tune: exported %d rows to %s\n", nrows, file);
  }
  cj_sb_free(&js);
  return !ok;
}

static int run_import(convjit_context *ctx, const char *file) {
  FILE *f = fopen(file, "rb");
  if (!f) {
    fprintf(stderr, "convjit-tune: --import %s: cannot open it\n", file);
    return 1;
  }
  cj_strbuf js = {0};
  char buf[65536];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) cj_sb_printf(&js, "%.*s", (int)got, buf);
  fclose(f);
  if (js.oom || !js.s) {
    fprintf(stderr, "convjit-tune: --import %s: empty or out of memory\n", file);
    cj_sb_free(&js);
    return 1;
  }
  cj_strbuf report = {0};
  int imported = 0, skipped = 0;
  convjit_status st = cj_context_tuning_import(ctx, js.s, &imported, &skipped, &report);
  if (report.s) fprintf(stderr, "%s", report.s);
  if (st != CONVJIT_OK) fprintf(stderr, "convjit-tune: --import %s: %s\n", file, convjit_last_error());
  else fprintf(stderr, "convjit-tune: imported %d rows, skipped %d\n", imported, skipped);
  cj_sb_free(&js);
  cj_sb_free(&report);
  return st != CONVJIT_OK;
}

int main(int argc, char **argv) {
  tune_args a;
  if (parse_args(argc, argv, &a)) {
    usage(stderr);
    return 2;
  }
  convjit_context_options o = convjit_context_options_default();
  int table_only = !a.shapes;
  /* the table jobs need only the database: the emulator opens it anywhere */
  o.device = !strcmp(a.device, "emu") || table_only ? CONVJIT_DEVICE_EMU : CONVJIT_DEVICE_HIP;
  o.arch = a.arch;
  o.cache_dir = a.cache_dir;
  convjit_context *ctx = NULL;
  if (convjit_context_create(&o, &ctx) != CONVJIT_OK) {
    fprintf(stderr, "convjit-tune: %s\n", convjit_last_error());
    return 1;
  }
  convjit_context_info ci = {.struct_size = sizeof ci};
  convjit_context_get_info(ctx, &ci);
  int rc;
  if (table_only && !ci.cache_path[0]) {
    fprintf(stderr, "convjit-tune: no usable cache database (CONVJIT_LOG=info says why)\n");
    rc = 1;
  } else if (a.export_file) rc = run_export(ctx, a.export_file);
  else if (a.import_file) rc = run_import(ctx, a.import_file);
  else if (a.count) {
    printf("%d\n", cj_context_tuning_count(ctx));
    rc = 0;
  } else if (a.clear) {
    rc = cj_context_tuning_clear(ctx) != CONVJIT_OK;
    if (rc) fprintf(stderr, "convjit-tune: --clear: %s\n", convjit_last_error());
  } else {
    rc = run_shapes(ctx, &a, &ci);
  }
  convjit_context_destroy(ctx);
  return rc;
}
