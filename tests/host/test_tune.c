/* convjit_plan_tune and the tuning table without a GPU (docs/tuning.md).
 *
 * Fake HIP (tests/fakehip, CONVJIT_HIP_LIBRARY): kernels never run, so the
 * winner is fixed in advance by scripting each candidate's launch time by
 * kernel name (the names come from selecting the candidate's knobs here,
 * a second path to the same plan). Covered: winner selection, the median
 * (a scripted outlier that would lose on the mean), no device allocation
 * (hipMalloc counted), graph capture refused before any launch, the table
 * read by a second context, a plan memoized before a tune not served
 * after it, stale-version, unauthenticated and illegal rows ignored, a row
 * whose kernel fails the resource gate (injected) falling back, the
 * table's own connection following a database moved aside, and
 * export -> import round trip with validation.
 * Emulator: the numerical veto — a forced wrong kernel (the test hook
 * launches a dilation-2 conv's kernels for a dilation-1 problem, same
 * tensor sizes) given the best time must not win. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "convjit/convjit.h"
#include "api_expect.h"
#include "codegen/kplan_knobs.h"
#include "host/plan.h"
#include "host/tune.h"
#include "host/tune_db.h"
#include "pipeline/codeobj.h"

static void *g_lib;
static int (*script)(const char *, const double *, int);
static void (*set_capturing)(int);
static int (*malloc_count)(void), (*launch_count)(void);
static void (*reset)(void);
static const struct fakehip_launch_name { char name[128]; } *(*get_launch)(int);
static char g_dir[256];

static int setup(void **st) {
  (void)st;
  setenv("CONVJIT_HIP_LIBRARY", CJ_FAKEHIP_PATH, 1);
  g_lib = dlopen(CJ_FAKEHIP_PATH, RTLD_NOW);
  if (!g_lib) return -1;
  script = (int (*)(const char *, const double *, int))dlsym(g_lib, "fakehip_script_kernel");
  set_capturing = (void (*)(int))dlsym(g_lib, "fakehip_set_capturing");
  malloc_count = (int (*)(void))dlsym(g_lib, "fakehip_malloc_count");
  launch_count = (int (*)(void))dlsym(g_lib, "fakehip_launch_count");
  reset = (void (*)(void))dlsym(g_lib, "fakehip_reset");
  get_launch = (const struct fakehip_launch_name *(*)(int))dlsym(g_lib, "fakehip_get_launch");
  snprintf(g_dir, sizeof g_dir, "%s/test-tune-%d", CJ_BINARY_DIR, (int)getpid());
  return script && set_capturing && malloc_count && launch_count && reset && get_launch ? 0 : -1;
}

static int teardown(void **st) {
  (void)st;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  (void)!system(cmd);
  return 0;
}

/* The shape every fake test tunes: a 3x3 conv with padding (one 128x128
 * tile on 304 CUs: the candidate list has tiles, stages, split-K and WGM). */
static convjit_conv_desc small_desc(void) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = 2;
  d.n = 1, d.c = 16, d.k = 32, d.in[0] = 8, d.in[1] = 8, d.filter[0] = 3, d.filter[1] = 3;
  d.pad_lo[0] = d.pad_lo[1] = d.pad_hi[0] = d.pad_hi[1] = 1;
  return d;
}

typedef struct bufs {
  convjit_conv_args a;
  void *dw;
} bufs;

static bufs bufs_new(convjit_context *ctx, convjit_plan *p) {
  const cj_conv_problem *q = &p->prob;
  size_t ny = (size_t)(q->n * q->k * q->od * q->oh * q->ow), nx = (size_t)(q->n * q->c * q->d * q->h * q->w);
  size_t pw = 0, ws = 0;
  OK(convjit_plan_packed_weight_size(p, &pw));
  OK(convjit_plan_workspace_size(p, &ws));
  bufs b = {.a = convjit_conv_args_default()};
  void *x, *wp, *y, *wsp;
  OK(convjit_malloc(ctx, nx * 2, &x));
  OK(convjit_malloc(ctx, pw, &wp));
  OK(convjit_malloc(ctx, ny * 2, &y));
  size_t big = ws + ny * 4 + 1024; /* room for the split-K candidates too */
  OK(convjit_malloc(ctx, big, &wsp));
  OK(convjit_memset(ctx, x, 0, nx * 2, NULL));
  OK(convjit_memset(ctx, wp, 0, pw, NULL));
  b.a.x = x, b.a.w_packed = wp, b.a.y = y, b.a.workspace = wsp, b.a.workspace_bytes = big;
  return b;
}

static void bufs_free(convjit_context *ctx, bufs *b) {
  convjit_free(ctx, (void *)b->a.x);
  convjit_free(ctx, (void *)b->a.w_packed);
  convjit_free(ctx, b->a.y);
  convjit_free(ctx, b->a.workspace);
}

/* The conv kernel's name of a candidate given in the kspec option form:
 * selected here from the knob text, independently of the tuner. */
static void conv_name_of(convjit_context *ctx, const cj_conv_problem *p, const char *knobs, char *name, size_t cap) {
  cj_conv_opts o;
  memset(&o, 0, sizeof o);
  char buf[160];
  snprintf(buf, sizeof buf, "%s", knobs);
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
    char *eq = strchr(tok, '=');
    assert_non_null(eq);
    const cj_knob *k = cj_conv_knob_find(tok, (size_t)(eq - tok));
    assert_non_null(k);
    OK(cj_conv_knob_set(&o, k, eq + 1, strlen(eq + 1), "test"));
  }
  cj_target t = {ctx->arch, (uint32_t)ctx->cu_count};
  cj_seq seq;
  OK(cj_select_conv_with(p, &t, &o, &seq));
  for (uint32_t i = 0; i < seq.fwd.nsteps; i++)
    if (seq.fwd.step[i].kind == CJ_STEP_KERNEL && seq.fwd.step[i].plan.op == CJ_KOP_CONV) {
      snprintf(name, cap, "%s", seq.fwd.step[i].plan.name);
      return;
    }
  fail_msg("no conv step for %s", knobs);
}

/* The conv kernel the plan launches (its fwd steps, by name). */
static const char *plan_conv_name(const convjit_plan *p) {
  for (uint32_t i = 0; i < p->nfwd; i++)
    if (p->fwd[i].kind == CJ_STEP_KERNEL && !strncmp(p->fwd[i].name, "cj_conv_", 8)) return p->fwd[i].name;
  return "";
}

static convjit_tune_options quick(int store) {
  convjit_tune_options o = convjit_tune_options_default();
  o.warmup = 2, o.min_reps = 3, o.max_reps = 3, o.store = store;
  return o;
}

/* The index of a timed candidate after `after` with no split-K (its
 * forward is the transpose and the conv: two launches, as the default's). */
static int pick(const convjit_tune_result *r, int after) {
  for (int i = after + 1; i < r->count; i++)
    if (r->cand[i].status == CONVJIT_TUNE_TIMED && strstr(r->cand[i].knobs, "splitk=1")) return i;
  fail_msg("no timed candidate after %d", after);
  return -1;
}

static void clear_table(convjit_context *ctx) {
  if (cj_tune_db_count(ctx) > 0) OK(cj_tune_db_clear(ctx));
}

/* A context of kind, a plan of small_desc() on it, its buffers. */
typedef struct fixture {
  convjit_context *ctx;
  convjit_conv_desc d;
  convjit_plan *p;
  bufs b;
} fixture;

static fixture fix_open(convjit_device_kind kind) {
  fixture f = {.ctx = api_ctx_disk(kind, g_dir), .d = small_desc()};
  clear_table(f.ctx); /* so the plan is the heuristic's */
  OK(convjit_plan_create_conv(f.ctx, &f.d, &f.p));
  f.b = bufs_new(f.ctx, f.p);
  return f;
}

static void fix_close(fixture *f) {
  script(NULL, NULL, 0);
  bufs_free(f->ctx, &f->b);
  convjit_plan_destroy(f->p);
  convjit_context_destroy(f->ctx);
}

/* Scripted times: candidate j's conv kernel takes 0.01 ms on two launches
 * of three and 50 ms on the third (median 0.01: wins; mean ~16.7: would
 * lose), candidate k's a steady 0.2 ms; the rest the fake's 0.25 ms. The
 * plan switches to j, launches j's kernel, allocates nothing, and the
 * table answers a second context with j. */
static void test_winner_median_noalloc_two_contexts(void **st) {
  (void)st;
  fixture f = fix_open(CONVJIT_DEVICE_HIP);
  convjit_tune_result r = {.struct_size = sizeof r};
  convjit_tune_options o = quick(0);
  script(NULL, NULL, 0);
  OK(convjit_plan_tune(f.p, &f.b.a, NULL, &o, &r)); /* unscripted: every candidate ties, the default stays */
  assert_int_equal(r.winner, 0);
  assert_int_equal(r.modelled, 0);
  assert_true(r.count >= 4);
  int j = pick(&r, 1), k = pick(&r, j);
  char nj[64], nk[64], n0[64];
  conv_name_of(f.ctx, &f.p->prob, r.cand[j].knobs, nj, sizeof nj);
  conv_name_of(f.ctx, &f.p->prob, r.cand[k].knobs, nk, sizeof nk);
  conv_name_of(f.ctx, &f.p->prob, r.cand[0].knobs, n0, sizeof n0);
  assert_string_not_equal(nj, n0);
  const double tj[3] = {0.01, 0.01, 50.0}, tk[1] = {0.2};
  assert_int_equal(script(nj, tj, 3), 0);
  assert_int_equal(script(nk, tk, 1), 0);
  int mallocs = malloc_count();
  o = quick(1);
  OK(convjit_plan_tune(f.p, &f.b.a, NULL, &o, &r));
  assert_int_equal(malloc_count(), mallocs); /* the caller's buffers only */
  assert_int_equal(r.winner, j);
  assert_int_equal(r.cand[j].status, CONVJIT_TUNE_TIMED);
  assert_int_equal(r.cand[j].reps, 3);
  assert_true(r.stored);
  assert_string_equal(plan_conv_name(f.p), nj);
  reset();
  OK(convjit_conv_forward(f.p, &f.b.a, NULL));
  int seen = 0;
  for (int i = 0; i < launch_count(); i++) seen |= !strcmp(get_launch(i)->name, nj);
  assert_true(seen);
  /* a second context (a new process would do the same) reads the row */
  convjit_context *ctx2 = api_ctx_disk(CONVJIT_DEVICE_HIP, g_dir);
  convjit_plan *p2 = NULL;
  OK(convjit_plan_create_conv(ctx2, &f.d, &p2));
  assert_string_equal(plan_conv_name(p2), nj);
  assert_int_equal(p2->tuned, 1);
  convjit_plan_destroy(p2);
  convjit_context_destroy(ctx2);
  fix_close(&f);
}

/* A plan memoized before the tune is not served after it: on the tuning
 * context and on another context of the process. */
static void test_memo_not_stale(void **st) {
  (void)st;
  convjit_context *ctx = api_ctx_disk(CONVJIT_DEVICE_HIP, g_dir), *other = api_ctx_disk(CONVJIT_DEVICE_HIP, g_dir);
  clear_table(ctx);
  convjit_conv_desc d = small_desc();
  convjit_plan *p = NULL, *q = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &p));
  OK(convjit_plan_create_conv(other, &d, &q)); /* memoized there with the heuristic */
  char before[64];
  snprintf(before, sizeof before, "%s", plan_conv_name(q));
  convjit_plan_destroy(q);
  bufs b = bufs_new(ctx, p);
  convjit_tune_result r = {.struct_size = sizeof r};
  convjit_tune_options o = quick(0);
  script(NULL, NULL, 0);
  OK(convjit_plan_tune(p, &b.a, NULL, &o, &r));
  int j = pick(&r, 0);
  char nj[64];
  conv_name_of(ctx, &p->prob, r.cand[j].knobs, nj, sizeof nj);
  const double fast[1] = {0.01};
  script(nj, fast, 1);
  o = quick(1);
  OK(convjit_plan_tune(p, &b.a, NULL, &o, &r));
  assert_int_equal(r.winner, j);
  OK(convjit_plan_create_conv(ctx, &d, &q));
  assert_string_equal(plan_conv_name(q), nj);
  convjit_plan_destroy(q);
  OK(convjit_plan_create_conv(other, &d, &q));
  assert_string_equal(plan_conv_name(q), nj);
  assert_string_not_equal(before, nj);
  convjit_plan_destroy(q);
  script(NULL, NULL, 0);
  bufs_free(ctx, &b);
  convjit_plan_destroy(p);
  convjit_context_destroy(other);
  convjit_context_destroy(ctx);
}

static void test_capture_refused(void **st) {
  (void)st;
  fixture f = fix_open(CONVJIT_DEVICE_HIP);
  char before[64];
  snprintf(before, sizeof before, "%s", plan_conv_name(f.p));
  set_capturing(1);
  reset();
  convjit_tune_result r = {.struct_size = sizeof r};
  assert_int_equal(convjit_plan_tune(f.p, &f.b.a, (void *)0x1234, NULL, &r), CONVJIT_ERR_INVALID_ARG);
  set_capturing(0);
  assert_non_null(strstr(convjit_last_error(), "graph capture"));
  assert_int_equal(launch_count(), 0); /* nothing enqueued into the capture */
  assert_string_equal(plan_conv_name(f.p), before);
  fix_close(&f);
}

static void test_bad_fields_named(void **st) {
  (void)st;
  fixture f = fix_open(CONVJIT_DEVICE_HIP);
  convjit_tune_options o = quick(0);
  o.max_reps = 1, o.min_reps = 2;
  assert_int_equal(convjit_plan_tune(f.p, &f.b.a, NULL, &o, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(convjit_last_error(), "opts.max_reps = 1"));
  o = quick(0);
  o.budget_ms = -1;
  assert_int_equal(convjit_plan_tune(f.p, &f.b.a, NULL, &o, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(convjit_last_error(), "opts.budget_ms = -1"));
  convjit_conv_args a = f.b.a;
  a.y = NULL;
  assert_int_equal(convjit_plan_tune(f.p, &a, NULL, NULL, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(convjit_last_error(), "args.y = NULL"));
  convjit_tune_result r = {.struct_size = 8};
  assert_int_equal(convjit_plan_tune(f.p, &f.b.a, NULL, NULL, &r), CONVJIT_ERR_VERSION);
  assert_int_equal(convjit_plan_tune(NULL, &f.b.a, NULL, NULL, NULL), CONVJIT_ERR_INVALID_ARG);
  fix_close(&f);
}

/* A row for p's problem with knobs from text (kspec form), versions given. */
static void put_row(convjit_context *ctx, const cj_conv_problem *p, const char *knobs, const char *version) {
  cj_tune_row row;
  cj_tune_row_init(&row, ctx, p);
  snprintf(row.convjit, sizeof row.convjit, "%s", version);
  char buf[160];
  snprintf(buf, sizeof buf, "%s", knobs);
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
    char *eq = strchr(tok, '=');
    OK(cj_conv_knob_set(&row.knobs, cj_conv_knob_find(tok, (size_t)(eq - tok)), eq + 1, strlen(eq + 1), "t"));
  }
  row.ms = 1, row.default_ms = 2;
  OK(cj_tune_db_store(ctx, &row));
}

static void sql(const char *path, const char *q) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  char *err = NULL;
  if (sqlite3_exec(db, q, NULL, NULL, &err) != SQLITE_OK) fail_msg("%s: %s", q, err);
  sqlite3_close(db);
}

/* Rows that must not be used: another convjit version (stale), a value
 * changed after writing (MAC mismatch), knobs illegal for the shape (the
 * plan init refuses them), an unknown knob. Each time the plan is the
 * heuristic's, and a fresh current row is then used. */
static void test_bad_rows_ignored(void **st) {
  (void)st;
  convjit_conv_desc d = small_desc();
  convjit_context *ctx = api_ctx_disk(CONVJIT_DEVICE_HIP, g_dir);
  cj_plan_memo_set_cap(&ctx->memo, 0);
  clear_table(ctx);
  convjit_plan *p = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &p));
  char heur[64], alt[64];
  snprintf(heur, sizeof heur, "%s", plan_conv_name(p));
  const char *alt_knobs = "tile=64x64 waves=2x2 stages=2 splitk=1 wgm=8";
  conv_name_of(ctx, &p->prob, alt_knobs, alt, sizeof alt);
  assert_string_not_equal(alt, heur);
  const char *path = cj_cache_disk_path(ctx->cache);
  struct { const char *what, *knobs, *version, *damage; } cases[] = {
      {"stale version", alt_knobs, "0.0.1", NULL},
      {"MAC mismatch", alt_knobs, CJ_VERSION_STRING, "UPDATE tuning SET ms = ms * 2"},
      {"illegal knobs", "tile=64x64 waves=2x2 stages=2 splitk=64 wgm=8", CJ_VERSION_STRING, NULL},
      {"unknown knob", alt_knobs, CJ_VERSION_STRING,
       "UPDATE tuning SET knobs = json_set(knobs, '$.bogus', 3)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    clear_table(ctx);
    put_row(ctx, &p->prob, cases[i].knobs, cases[i].version);
    if (cases[i].damage) sql(path, cases[i].damage);
    convjit_plan *q = NULL;
    OK(convjit_plan_create_conv(ctx, &d, &q));
    if (strcmp(plan_conv_name(q), heur) != 0) fail_msg("%s: the row was used", cases[i].what);
    assert_int_equal(q->tuned, 0);
    convjit_plan_destroy(q);
  }
  clear_table(ctx);
  put_row(ctx, &p->prob, alt_knobs, CJ_VERSION_STRING); /* a good row is used */
  convjit_plan *q = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &q));
  assert_string_equal(plan_conv_name(q), alt);
  assert_int_equal(q->tuned, 1);
  convjit_plan_destroy(q);
  /* ... also by the same conv written as 3D with depth 1 (convjit-tune's form) */
  convjit_conv_desc d3 = d;
  d3.spatial_rank = 3;
  d3.in[2] = d.in[1], d3.in[1] = d.in[0], d3.in[0] = 1;
  d3.filter[2] = d.filter[1], d3.filter[1] = d.filter[0], d3.filter[0] = 1;
  d3.pad_lo[2] = d3.pad_hi[2] = d.pad_lo[1], d3.pad_lo[1] = d3.pad_hi[1] = d.pad_lo[0];
  d3.pad_lo[0] = d3.pad_hi[0] = 0;
  OK(convjit_plan_create_conv(ctx, &d3, &q));
  assert_string_equal(plan_conv_name(q), alt);
  convjit_plan_destroy(q);
  clear_table(ctx);
  convjit_plan_destroy(p);
  convjit_context_destroy(ctx);
}

/* A device that refuses one kernel with RESOURCE, as the resource gate
 * would (the way tests/host/test_stress_threads.c injects it). */
static const cj_device_ops *g_real_ops;
static char g_refuse[64];
static convjit_status refusing_load(cj_device *d, const void *co, size_t size, void **mod) {
  cj_codeobj *o = NULL;
  convjit_status st = cj_codeobj_parse(co, size, &o);
  if (st != CONVJIT_OK) return st;
  int refuse = o->nkernels && !strcmp(o->kernels[0].name, g_refuse);
  cj_codeobj_destroy(o);
  if (refuse) return CJ_ERR(CONVJIT_ERR_RESOURCE, "injected: %s spills", g_refuse);
  return g_real_ops->module_load(d, co, size, mod);
}

/* A row whose kernel fails the resource gate: plan creation logs it and
 * plans with the heuristic. */
static void test_resource_row_falls_back(void **st) {
  (void)st;
  convjit_context *ctx = api_ctx_disk(CONVJIT_DEVICE_HIP, g_dir);
  cj_plan_memo_set_cap(&ctx->memo, 0);
  clear_table(ctx);
  convjit_conv_desc d = small_desc();
  convjit_plan *p = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &p));
  char heur[64];
  snprintf(heur, sizeof heur, "%s", plan_conv_name(p));
  const char *alt_knobs = "tile=64x64 waves=2x2 stages=3 splitk=1 wgm=4";
  conv_name_of(ctx, &p->prob, alt_knobs, g_refuse, sizeof g_refuse);
  put_row(ctx, &p->prob, alt_knobs, CJ_VERSION_STRING);
  static cj_device_ops ops;
  g_real_ops = ctx->dev->ops;
  ops = *g_real_ops;
  ops.module_load = refusing_load;
  ctx->dev->ops = &ops;
  convjit_plan *q = NULL;
  convjit_status s = convjit_plan_create_conv(ctx, &d, &q);
  ctx->dev->ops = g_real_ops;
  OK(s);
  assert_string_equal(plan_conv_name(q), heur);
  assert_int_equal(q->tuned, 0);
  convjit_plan_destroy(q);
  clear_table(ctx);
  convjit_plan_destroy(p);
  convjit_context_destroy(ctx);
}

/* The tuning table has its own connection to the cache database, and it
 * follows the file: when the path no longer names the file it opened (the
 * kernel cache, or another process, moved a damaged database aside: here
 * the three files renamed as convjit's move-aside renames them), the next
 * store reopens the path, so the row lands where the next context looks,
 * not in the moved-aside file. */
static void test_follows_moved_db(void **st) {
  (void)st;
  char dir[320], path[360], moved[400], cmd[2048];
  snprintf(dir, sizeof dir, "%s/follow", g_dir);
  snprintf(path, sizeof path, "%s/kernels.sqlite3", dir);
  snprintf(moved, sizeof moved, "%s.corrupt-test", path);
  convjit_context *ctx = api_ctx_disk(CONVJIT_DEVICE_HIP, dir);
  assert_non_null(ctx->tune_db);
  assert_string_equal(cj_cache_disk_path(ctx->cache), path);
  convjit_conv_desc d = small_desc();
  convjit_plan *p = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &p));
  assert_int_equal(cj_tune_db_count(ctx), 0);
  snprintf(cmd, sizeof cmd, "mv '%s' '%s' && for s in -wal -shm; do [ ! -e '%s'$s ] || mv '%s'$s '%s'$s; done", path,
           moved, path, path, moved);
  assert_int_equal(system(cmd), 0);
  put_row(ctx, &p->prob, "tile=64x64 waves=2x2 stages=2 splitk=1 wgm=8", CJ_VERSION_STRING);
  convjit_context *c2 = api_ctx_disk(CONVJIT_DEVICE_HIP, dir);
  assert_int_equal(cj_tune_db_count(c2), 1);
  convjit_context_destroy(c2);
  sqlite3 *db = NULL; /* the moved file got nothing */
  assert_int_equal(sqlite3_open_v2(moved, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM tuning", -1, &q, NULL) == SQLITE_OK) {
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), 0);
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  convjit_plan_destroy(p);
  convjit_context_destroy(ctx);
}

/* export -> import into an empty directory -> export: the same text;
 * invalid rows reported and skipped, a broken file writes nothing. */
static void test_export_import(void **st) {
  (void)st;
  convjit_context *ctx = api_ctx_disk(CONVJIT_DEVICE_HIP, g_dir);
  clear_table(ctx);
  convjit_conv_desc d = small_desc();
  convjit_plan *p = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &p));
  put_row(ctx, &p->prob, "tile=64x64 waves=2x2 stages=2 splitk=1 wgm=8", CJ_VERSION_STRING);
  d.k = 64;
  convjit_plan *p2 = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &p2));
  put_row(ctx, &p2->prob, "tile=128x128 waves=2x4 stages=3 splitk=1 wgm=4", CJ_VERSION_STRING);
  cj_strbuf a = {0}, b = {0}, rep = {0};
  int n = 0, imp = 0, skip = 0;
  OK(cj_tune_db_export(ctx, &a, &n));
  assert_int_equal(n, 2);
  char dir2[300];
  snprintf(dir2, sizeof dir2, "%s/other", g_dir);
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_HIP;
  o.cache_dir = dir2;
  convjit_context *c2 = NULL;
  OK(convjit_context_create(&o, &c2));
  assert_true(cj_tune_db_count(c2) <= 0);
  OK(cj_tune_db_import(c2, a.s, &imp, &skip, &rep));
  assert_int_equal(imp, 2);
  assert_int_equal(skip, 0);
  OK(cj_tune_db_export(c2, &b, &n));
  assert_string_equal(a.s, b.s);
  /* invalid rows: an unknown knob, a value out of range, another version */
  const char *bad =
      "{\"format\":\"convjit-tuning-v1\",\"rows\":["
      "{\"problem\":\"x\",\"arch\":\"gfx942\",\"device\":\"d\",\"cus\":304,\"convjit\":\"" CJ_VERSION_STRING
      "\",\"llvm\":\"" CJ_LLVM_VERSION "\",\"knobs\":{\"bogus\":1},\"ms\":1,\"default_ms\":1,\"modelled\":0},"
      "{\"problem\":\"x\",\"arch\":\"gfx942\",\"device\":\"d\",\"cus\":304,\"convjit\":\"" CJ_VERSION_STRING
      "\",\"llvm\":\"" CJ_LLVM_VERSION "\",\"knobs\":{\"stages\":99},\"ms\":1,\"default_ms\":1,\"modelled\":0},"
      "{\"problem\":\"x\",\"arch\":\"gfx942\",\"device\":\"d\",\"cus\":304,\"convjit\":\"9.9.9\","
      "\"llvm\":\"" CJ_LLVM_VERSION "\",\"knobs\":{\"stages\":2},\"ms\":1,\"default_ms\":1,\"modelled\":0}]}";
  OK(cj_tune_db_import(c2, bad, &imp, &skip, &rep));
  assert_int_equal(imp, 0);
  assert_int_equal(skip, 3);
  assert_non_null(strstr(rep.s, "knobs.bogus: not a tunable knob"));
  assert_non_null(strstr(rep.s, "knobs.stages = 99: outside 2..4"));
  assert_non_null(strstr(rep.s, "version mismatch"));
  /* knobs the planner would refuse for the row's problem (its own check,
   * cj_select_conv_choice_check): a 0 ("the plan's default") where every
   * candidate of the planner chooses, and half a pair, each named */
  char *zero = strdup(a.s);
  char *wv = strstr(zero, "\"waves\":\"2x2\""), *tv = strstr(zero, "\"tile\":\"128x128\"");
  assert_non_null(wv);
  assert_non_null(tv);
  memcpy(wv, "\"waves\":\"0x0\"", 13);
  memcpy(tv, "\"tile\":\"128x000\"", 16);
  cj_sb_free(&rep);
  OK(cj_tune_db_import(c2, zero, &imp, &skip, &rep));
  assert_int_equal(imp, 0);
  assert_int_equal(skip, 2);
  if (!strstr(rep.s, "knobs.waves = 0x0: the igemm planner chooses waves in each of its") ||
      !strstr(rep.s, "knobs.tile = 128x0: half a choice"))
    fail_msg("import report: %s", rep.s);
  free(zero);
  assert_int_not_equal(cj_tune_db_import(c2, "{\"format\":\"convjit-tuning-v1\",\"rows\":[", &imp, &skip,
                                         &rep), CONVJIT_OK);
  assert_int_equal(cj_tune_db_count(c2), 2); /* nothing half-written */
  cj_sb_free(&a);
  cj_sb_free(&b);
  cj_sb_free(&rep);
  clear_table(ctx);
  convjit_context_destroy(c2);
  convjit_plan_destroy(p);
  convjit_plan_destroy(p2);
  convjit_context_destroy(ctx);
}

/* The emulator: every candidate MODELLED; the wrong kernel the hook adds,
 * given the best time, is vetoed and the winner's output is the default's. */
static void test_veto_emulator(void **st) {
  (void)st;
  fixture f = fix_open(CONVJIT_DEVICE_EMU);
  /* nonzero inputs, so that the two convs differ */
  const cj_conv_problem *q = &f.p->prob;
  size_t nx = (size_t)(q->c * q->h * q->w), nw = (size_t)(q->k * q->c * 9);
  uint16_t *hx = malloc(nx * 2), *hw = malloc(nw * 2);
  for (size_t i = 0; i < nx; i++) hx[i] = (uint16_t)(0x3f80 + (i * 7 % 61)); /* bf16 1.0 .. 1.47 */
  for (size_t i = 0; i < nw; i++) hw[i] = (uint16_t)(0x3c00 + (i * 13 % 97)); /* bf16 ~0.0078 .. */
  void *dw = NULL;
  OK(convjit_malloc(f.ctx, nw * 2, &dw));
  OK(convjit_memcpy_h2d(f.ctx, (void *)f.b.a.x, hx, nx * 2, NULL));
  OK(convjit_memcpy_h2d(f.ctx, dw, hw, nw * 2, NULL));
  OK(convjit_weight_pack(f.p, dw, (void *)f.b.a.w_packed, NULL));
  convjit_conv_desc wd = f.d;
  wd.dilation[0] = wd.dilation[1] = 2;
  wd.pad_lo[0] = wd.pad_lo[1] = wd.pad_hi[0] = wd.pad_hi[1] = 2; /* same output extents, other sums */
  cj_conv_problem wrong;
  OK(cj_conv_desc_normalize(&wd, &wrong));
  assert_int_equal(wrong.oh, q->oh);
  cj_tune_hooks h = {.wrong_problem = &wrong, .wrong_ms = 1e-9};
  cj_tune_set_hooks(&h);
  convjit_tune_result r = {.struct_size = sizeof r};
  convjit_status s = convjit_plan_tune(f.p, &f.b.a, NULL, NULL, &r);
  cj_tune_set_hooks(NULL);
  OK(s);
  assert_int_equal(r.modelled, 1);
  int w = r.count - 1;
  assert_string_equal(r.cand[w].knobs, "test hook: a wrong kernel");
  assert_int_equal(r.cand[w].status, CONVJIT_TUNE_VETOED);
  assert_true(r.cand[w].max_err > 1.0);
  assert_int_not_equal(r.winner, w);
  for (int i = 0; i < w; i++)
    if (r.cand[i].status != CONVJIT_TUNE_ILLEGAL && r.cand[i].status != CONVJIT_TUNE_RESOURCE) {
      assert_int_equal(r.cand[i].status, CONVJIT_TUNE_MODELLED);
      assert_true(r.cand[i].max_err >= 0 && r.cand[i].max_err <= 1.0);
    }
  assert_false(r.stored); /* a MODELLED winner is not stored unless asked */
  free(hx);
  free(hw);
  convjit_free(f.ctx, dw);
  fix_close(&f);
}

/* The tolerance: one rounding step of y's dtype passes, a second fails, a
 * NaN against a number fails, identical NaN bits pass. */
static void test_compare(void **st) {
  (void)st;
  const uint16_t ref[4] = {0x3f80, 0x4000, 0x4040, 0xffff}; /* bf16 1, 2, 3, NaN */
  uint16_t got[4] = {0x3f81, 0x4000, 0x4040, 0xffff};       /* 1 + 2^-7: one step of 1 */
  assert_true(cj_tune_compare(got, ref, 4, CONVJIT_DTYPE_BF16) <= 1.0);
  got[0] = 0x3f83; /* 1 + 3 * 2^-7: past 2^-7 * 1 + 2^-8 * 3 */
  assert_true(cj_tune_compare(got, ref, 4, CONVJIT_DTYPE_BF16) > 1.0);
  got[0] = 0x3f80;
  got[3] = 0x3f80;
  assert_true(cj_tune_compare(got, ref, 4, CONVJIT_DTYPE_BF16) > 1e30);
  /* f16: 1, 2, 3 as 0x3c00, 0x4000, 0x4200; a step of 1 is 2^-10. Slack
   * 2^-8 * 3: 1 + 13 * 2^-10 (0x3c0d, 12.7e-3 off) passes, 1 + 15 * 2^-10 fails */
  const uint16_t r16[3] = {0x3c00, 0x4000, 0x4200};
  uint16_t g16[3] = {0x3c0d, 0x4000, 0x4200};
  assert_true(cj_tune_compare(g16, r16, 3, CONVJIT_DTYPE_F16) <= 1.0);
  g16[0] = 0x3c0f;
  assert_true(cj_tune_compare(g16, r16, 3, CONVJIT_DTYPE_F16) > 1.0);
  /* f32: a step of 2^-23 relative; 2^-8 of the peak 4 is 2^-6 */
  const float r32[2] = {1.0f, 4.0f};
  float g32[2] = {1.0f + 0x1p-7f, 4.0f};
  assert_true(cj_tune_compare(g32, r32, 2, CONVJIT_DTYPE_F32) <= 1.0);
  g32[0] = 1.0f + 0x1p-5f;
  assert_true(cj_tune_compare(g32, r32, 2, CONVJIT_DTYPE_F32) > 1.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compare),
      cmocka_unit_test(test_winner_median_noalloc_two_contexts),
      cmocka_unit_test(test_memo_not_stale),
      cmocka_unit_test(test_capture_refused),
      cmocka_unit_test(test_bad_fields_named),
      cmocka_unit_test(test_bad_rows_ignored),
      cmocka_unit_test(test_resource_row_falls_back),
      cmocka_unit_test(test_follows_moved_db),
      cmocka_unit_test(test_export_import),
      cmocka_unit_test(test_veto_emulator),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
