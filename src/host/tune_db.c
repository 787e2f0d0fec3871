/* The tuning table (contract in tune_db.h, docs/tuning.md). JSON is read
 * with SQLite's own JSON functions (json_each, json_extract: built into
 * the SQLite the cache already uses), written by hand. */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "codegen/kplan_knobs.h"
#include "host/tune_db.h"
#include "runtime/cache_db.h"

#define TUNE_TABLE                                                                                              \
  "CREATE TABLE IF NOT EXISTS tuning(key TEXT PRIMARY KEY, problem TEXT NOT NULL, arch TEXT NOT NULL,"          \
  " device TEXT NOT NULL, cus INTEGER NOT NULL, convjit TEXT NOT NULL, llvm TEXT NOT NULL, knobs TEXT NOT NULL," \
  " ms REAL NOT NULL, default_ms REAL NOT NULL, modelled INTEGER NOT NULL, created INTEGER NOT NULL,"           \
  " mac BLOB NOT NULL);"                                                                                          \
  "CREATE INDEX IF NOT EXISTS tuning_problem ON tuning(problem)" /* plan creation looks rows up by problem */
#define TUNE_COLS "problem, arch, device, cus, convjit, llvm, knobs, ms, default_ms, modelled, created, mac"
/* TUNE_TABLE's columns as pragma_table_info lists them: another table of
 * the name is not ours (tune_table_ensure) */
#define TUNE_TABLE_COLUMNS "key,problem,arch,device,cus,convjit,llvm,knobs,ms,default_ms,modelled,created,mac"

static _Atomic uint64_t g_generation;
uint64_t cj_tune_generation(void) { return atomic_load(&g_generation); }
void cj_tune_generation_bump(void) { atomic_fetch_add(&g_generation, 1); }

/* ---- canonical problem text ------------------------------------------------- */

/* The fields of the problem table (select.h) with text = 1, as
 * "name=value" in table order, one space apart; the others stay out for the
 * reason their row gives (the scales: kernel arguments; the output extents
 * follow from the rest; spatial_rank: a 2D conv and the same conv written as
 * 3D with depth 1 run the same kernels). One writer and one reader per
 * field type. */

static void text_I64(cj_strbuf *o, const int64_t *v) { cj_sb_printf(o, "%" PRId64, *v); }
static void text_I64X3(cj_strbuf *o, const int64_t (*v)[3]) {
  cj_sb_printf(o, "%" PRId64 ",%" PRId64 ",%" PRId64, (*v)[0], (*v)[1], (*v)[2]);
}
static void text_DTYPE(cj_strbuf *o, const convjit_dtype *v) { cj_sb_printf(o, "%s", cj_dtype_name(*v)); }
static const char *layout_name(convjit_layout l) { return l == CONVJIT_LAYOUT_NCDHW ? "ncdhw" : "ndhwc"; }
static void text_LAYOUT(cj_strbuf *o, const convjit_layout *v) { cj_sb_printf(o, "%s", layout_name(*v)); }
static void text_KIND(cj_strbuf *o, const convjit_conv_kind *v) { cj_sb_printf(o, "%s", cj_conv_kind_name(*v)); }
static void text_F32(cj_strbuf *o, const float *v) { cj_sb_printf(o, "%a", (double)*v); }
static void text_FLAG(cj_strbuf *o, const int *v) { cj_sb_printf(o, "%d", *v); }
static void text_INT(cj_strbuf *o, const int *v) { cj_sb_printf(o, "%d", *v); }
static void text_EPI(cj_strbuf *o, const cj_epilogue *e) {
  if (e->nops == 0) cj_sb_printf(o, "none");
  cj_epi_spec_text(e, ",", o);
}

/* A field of text = 2 is written when present: not all zero. */
#define CJ_TEXT_PRESENT_I64X3(v) ((v)[0] || (v)[1] || (v)[2])
#define CJ_TEXT_PRESENT_I64(v) 1
#define CJ_TEXT_PRESENT_DTYPE(v) 1
#define CJ_TEXT_PRESENT_LAYOUT(v) 1
#define CJ_TEXT_PRESENT_KIND(v) 1
#define CJ_TEXT_PRESENT_F32(v) 1
#define CJ_TEXT_PRESENT_FLAG(v) 1
#define CJ_TEXT_PRESENT_INT(v) 1
#define CJ_TEXT_PRESENT_EPI(v) 1

void cj_tune_problem_text(const cj_conv_problem *p, cj_strbuf *o) {
  int first = 1;
#define CJ_TEXT_FIELD(type, name, in_text, reason)   \
  if (in_text == 1 || (in_text == 2 && CJ_TEXT_PRESENT_##type(p->name))) { \
    cj_sb_printf(o, "%s" #name "=", first ? "" : " "); \
    text_##type(o, &p->name);                        \
    first = 0;                                       \
  }
  CJ_CONV_PROBLEM_FIELDS(CJ_TEXT_FIELD)
#undef CJ_TEXT_FIELD
}

/* One unsigned decimal of v[0..len) into *out. */
static int parse_u64(const char *v, size_t len, int64_t *out) {
  int64_t x = 0;
  if (len == 0 || len > 18) return 0;
  for (size_t i = 0; i < len; i++) {
    if (v[i] < '0' || v[i] > '9') return 0;
    x = x * 10 + (v[i] - '0');
  }
  *out = x;
  return 1;
}
static int parse_I64(const char *v, size_t len, int64_t *out) { return parse_u64(v, len, out); }
static int parse_I64X3(const char *v, size_t len, int64_t (*out)[3]) {
  for (int i = 0; i < 3; i++) {
    size_t n = 0;
    while (n < len && v[n] != ',') n++;
    if ((i < 2) != (n < len) || !parse_u64(v, n, &(*out)[i])) return 0;
    v += n + 1;
    len -= n < len ? n + 1 : n;
  }
  return 1;
}
static int parse_DTYPE(const char *v, size_t len, convjit_dtype *out) {
  for (int t = CONVJIT_DTYPE_BF16; t <= CONVJIT_DTYPE_F16; t++)
    if (strlen(cj_dtype_name((convjit_dtype)t)) == len && !strncmp(cj_dtype_name((convjit_dtype)t), v, len)) {
      *out = (convjit_dtype)t;
      return 1;
    }
  return 0;
}
static int parse_LAYOUT(const char *v, size_t len, convjit_layout *out) {
  for (int l = CONVJIT_LAYOUT_NCDHW; l <= CONVJIT_LAYOUT_NDHWC; l++)
    if (len == 5 && !strncmp(layout_name((convjit_layout)l), v, 5)) {
      *out = (convjit_layout)l;
      return 1;
    }
  return 0;
}
static int parse_KIND(const char *v, size_t len, convjit_conv_kind *out) {
  int k = cj_conv_kind_from_name(v, len);
  if (k < 0) return 0;
  *out = (convjit_conv_kind)k;
  return 1;
}
static int parse_F32(const char *v, size_t len, float *out) {
  char buf[48], *end = NULL;
  if (len == 0 || len >= sizeof buf) return 0;
  memcpy(buf, v, len);
  buf[len] = 0;
  *out = strtof(buf, &end);
  return end == buf + len;
}
static int parse_INT(const char *v, size_t len, int *out) {
  int64_t x;
  if (!parse_u64(v, len, &x) || x > INT32_MAX) return 0;
  *out = (int)x;
  return 1;
}
static int parse_FLAG(const char *v, size_t len, int *out) { return parse_INT(v, len, out) && *out <= 1; }
static int parse_EPI(const char *v, size_t len, cj_epilogue *e) {
  memset(e, 0, sizeof *e);
  if (len == 4 && !strncmp(v, "none", 4)) return 1;
  while (len) {
    size_t n = 0, k;
    while (n < len && v[n] != ',') n++;
    for (k = 0; k < n && v[k] != '='; k++) {}
    cj_epi_op op = cj_epi_spec_op(v, k);
    if (op == CJ_EPI_NONE || cj_epi_spec_set(e, op, k < n ? v + k + 1 : NULL, k < n ? n - k - 1 : 0, "epi") != CONVJIT_OK)
      return 0;
    if (n < len && n + 1 == len) return 0; /* a trailing comma */
    v += n < len ? n + 1 : n;
    len -= n < len ? n + 1 : n;
  }
  cj_error_clear();
  return 1;
}

/* The next token of *s as "name=value" for the field named name. */
static int next_field(const char **s, const char *name, const char **v, size_t *vlen) {
  size_t len = strcspn(*s, " "), nl = strlen(name);
  if (len <= nl || strncmp(*s, name, nl) != 0 || (*s)[nl] != '=') return 0;
  *v = *s + nl + 1;
  *vlen = len - nl - 1;
  *s += len;
  if (**s == ' ') (*s)++;
  return 1;
}

convjit_status cj_tune_problem_parse(const char *text, cj_conv_problem *out) {
  CJ_CHECK(text, CONVJIT_ERR_INVALID_ARG, "problem = NULL");
  cj_conv_problem q;
  memset(&q, 0, sizeof q);
  q.x_scale = q.w_scale = 1.0f;
  const char *s = text, *v;
  size_t vlen;
#define CJ_PARSE_FIELD(type, name, in_text, reason)                                                               \
  if (in_text == 1 || (in_text == 2 && !strncmp(s, #name "=", sizeof #name)))                                     \
    CJ_CHECK(next_field(&s, #name, &v, &vlen) && parse_##type(v, vlen, &q.name), CONVJIT_ERR_INVALID_ARG,        \
             "problem \"%.120s\": expected " #name "=<%s> at \"%.40s\"", text, #type, s);
  CJ_CONV_PROBLEM_FIELDS(CJ_PARSE_FIELD)
#undef CJ_PARSE_FIELD
  CJ_CHECK(!*s, CONVJIT_ERR_INVALID_ARG, "problem \"%.120s\": unexpected \"%.40s\" after the last field", text, s);
  /* Valid and canonical: the descriptor it stands for normalizes back to
   * the very same text. */
  convjit_conv_desc d;
  cj_conv_problem_to_desc(&q, &d);
  CJ_TRY(cj_conv_desc_normalize(&d, out));
  cj_strbuf again = {0};
  cj_tune_problem_text(out, &again);
  int same = again.s && !strcmp(again.s, text);
  cj_sb_free(&again);
  CJ_CHECK(same, CONVJIT_ERR_INVALID_ARG, "problem \"%.120s\": not in canonical form (not normalized)", text);
  return CONVJIT_OK;
}

/* ---- knobs ---------------------------------------------------------------- */

void cj_tune_knobs_json(const cj_conv_opts *o, cj_strbuf *out) {
  uint32_t n;
  const cj_knob *k = cj_conv_knobs(&n);
  int first = 1;
  cj_sb_printf(out, "{");
  for (uint32_t i = 0; i < n; i++) {
    if (!k[i].tunable) continue;
    uint32_t a = cj_conv_knob_get(o, &k[i], 0), b = cj_conv_knob_get(o, &k[i], 1);
    if (k[i].kind == CJ_KNOB_PAIR) cj_sb_printf(out, "%s\"%s\":\"%ux%u\"", first ? "" : ",", k[i].name, a, b);
    else cj_sb_printf(out, "%s\"%s\":%u", first ? "" : ",", k[i].name, a);
    first = 0;
  }
  cj_sb_printf(out, "}");
}

void cj_tune_knobs_text(const cj_conv_opts *o, char *buf, size_t cap) {
  uint32_t n;
  const cj_knob *k = cj_conv_knobs(&n);
  size_t used = 0;
  buf[0] = 0;
  for (uint32_t i = 0; i < n && used < cap; i++) {
    uint32_t a = cj_conv_knob_get(o, &k[i], 0), b = cj_conv_knob_get(o, &k[i], 1);
    if (!k[i].tunable || !a) continue;
    int w = k[i].kind == CJ_KNOB_PAIR ? snprintf(buf + used, cap - used, "%s%s=%ux%u", used ? " " : "", k[i].name, a, b)
                                      : snprintf(buf + used, cap - used, "%s%s=%u", used ? " " : "", k[i].name, a);
    if (w > 0) used += (size_t)w;
  }
}

/* 1 when JSON text escapes a NUL character (\u0000) in a string. SQLite's
 * JSON functions end the decoded text there, so the text they give cannot
 * tell: a cut "tile":"64x64\u0000..." or problem still reads as valid. */
static int json_str_has_nul(const char *raw) {
  for (const char *p = raw; p && *p; p++)
    if (*p == '\\') {
      if (p[1] == 'u' && !strncmp(p + 2, "0000", 4)) return 1;
      if (p[1]) p++; /* the escaped character: an escaped backslash is not an escape */
    }
  return 0;
}

/* The knobs JSON object of a row -> opts: every key a tunable knob of the
 * table, each value of its kind (PAIR "AxB", ONE an integer), 0 (the plan's
 * default) or inside the knob's lo..hi. */
static convjit_status knobs_from_json(sqlite3 *db, const char *json, cj_conv_opts *o) {
  memset(o, 0, sizeof *o);
  CJ_CHECK(!json_str_has_nul(json), CONVJIT_ERR_INVALID_ARG,
           "knobs: a name or value holds a NUL character (\\u0000): not a knob convjit writes");
  sqlite3_stmt *st = NULL;
  CJ_CHECK(sqlite3_prepare_v2(db, "SELECT key, value, type FROM json_each(?1)", -1, &st, NULL) == SQLITE_OK,
           CONVJIT_ERR_IO, "tuning table: %s", sqlite3_errmsg(db));
  sqlite3_bind_text(st, 1, json, -1, SQLITE_TRANSIENT);
  convjit_status res = CONVJIT_OK;
  int rc, seen = 0;
  while (res == CONVJIT_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *key = (const char *)sqlite3_column_text(st, 0), *val = (const char *)sqlite3_column_text(st, 1);
    const char *type = (const char *)sqlite3_column_text(st, 2);
    const cj_knob *k = key ? cj_conv_knob_find(key, strlen(key)) : NULL;
    seen++;
    if (!k || !k->tunable) {
      res = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "knobs.%s: not a tunable knob", key ? key : "?");
      break;
    }
    int want_text = k->kind == CJ_KNOB_PAIR;
    if (!type || !val || strcmp(type, want_text ? "text" : "integer") != 0) {
      res = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "knobs.%s = %s: expected %s", key, val ? val : "null",
                   want_text ? "a string \"AxB\"" : "an integer");
      break;
    }
    char what[48];
    snprintf(what, sizeof what, "knobs.%s", key);
    res = cj_conv_knob_set(o, k, val, strlen(val), what);
    for (int second = 0; res == CONVJIT_OK && second < (want_text ? 2 : 1); second++) {
      uint32_t v = cj_conv_knob_get(o, k, second);
      if (v && (v < k->lo || v > k->hi))
        res = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "knobs.%s = %s: outside %u..%u", key, val, k->lo, k->hi);
    }
  }
  sqlite3_finalize(st);
  if (res == CONVJIT_OK && !seen) res = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "knobs: not a JSON object of knobs");
  return res;
}

/* ---- rows --------------------------------------------------------------- */

void cj_tune_row_init(cj_tune_row *row, const convjit_context *ctx, const cj_conv_problem *p) {
  memset(row, 0, sizeof *row);
  cj_strbuf t = {0};
  cj_tune_problem_text(p, &t);
  snprintf(row->problem, sizeof row->problem, "%s", t.s ? t.s : "");
  cj_sb_free(&t);
  snprintf(row->arch, sizeof row->arch, "%s", ctx->arch->name);
  snprintf(row->device, sizeof row->device, "%s", ctx->dev->model[0] ? ctx->dev->model : ctx->device_name);
  row->cus = ctx->cu_count;
  snprintf(row->convjit, sizeof row->convjit, "%s", CJ_VERSION_STRING);
  snprintf(row->llvm, sizeof row->llvm, "%s", CJ_LLVM_VERSION);
}

static void row_key(const cj_tune_row *r, cj_strbuf *k) {
  cj_sb_printf(k, "tune|%s|arch=%s|device=%s|cus=%d|convjit=%s|llvm=%s", r->problem, r->arch, r->device, r->cus,
               r->convjit, r->llvm);
}

/* What the MAC covers besides the key: every value column, as text. */
static void row_value(const cj_tune_row *r, const char *knobs_json, cj_strbuf *v) {
  cj_sb_printf(v, "knobs=%s|ms=%.17g|default_ms=%.17g|modelled=%d|created=%lld", knobs_json, r->ms, r->default_ms,
               r->modelled, r->created);
}

static void row_mac(const uint8_t *key, const cj_tune_row *r, const char *knobs_json, uint8_t mac[CJ_MAC_BYTES]) {
  cj_strbuf k = {0}, v = {0};
  row_key(r, &k);
  row_value(r, knobs_json, &v);
  cj_entry_mac(key, k.s ? k.s : "", v.s ? v.s : "", v.len, mac);
  cj_sb_free(&k);
  cj_sb_free(&v);
}

static void col_text(sqlite3_stmt *st, int i, char *dst, size_t cap) {
  const char *s = (const char *)sqlite3_column_text(st, i);
  snprintf(dst, cap, "%s", s ? s : "");
}

/* One row of a SELECT TUNE_COLS: 1 and *r when it authenticates and its
 * knobs parse; 0 with why. */
static int row_read(sqlite3 *db, const uint8_t *key, sqlite3_stmt *st, cj_tune_row *r, char *why, size_t cap) {
  memset(r, 0, sizeof *r);
  col_text(st, 0, r->problem, sizeof r->problem);
  col_text(st, 1, r->arch, sizeof r->arch);
  col_text(st, 2, r->device, sizeof r->device);
  r->cus = sqlite3_column_int(st, 3);
  col_text(st, 4, r->convjit, sizeof r->convjit);
  col_text(st, 5, r->llvm, sizeof r->llvm);
  const char *knobs = (const char *)sqlite3_column_text(st, 6);
  r->ms = sqlite3_column_double(st, 7);
  r->default_ms = sqlite3_column_double(st, 8);
  r->modelled = sqlite3_column_int(st, 9);
  r->created = sqlite3_column_int64(st, 10);
  const uint8_t *mac = sqlite3_column_blob(st, 11);
  uint8_t want[CJ_MAC_BYTES];
  if (!knobs || !mac || sqlite3_column_bytes(st, 11) != CJ_MAC_BYTES) {
    snprintf(why, cap, "knobs or MAC missing");
    return 0;
  }
  row_mac(key, r, knobs, want);
  if (!cj_mac_equal(mac, want)) {
    snprintf(why, cap, "MAC mismatch (damaged, or written with another key)");
    return 0;
  }
  if (knobs_from_json(db, knobs, &r->knobs) != CONVJIT_OK) {
    snprintf(why, cap, "%s", cj_error_text());
    cj_error_clear();
    return 0;
  }
  return 1;
}

/* ---- the table's own connection ---------------------------------------------- */

void cj_tune_db_open(convjit_context *ctx, const char *dir, int disable) {
  ctx->tune_db = NULL;
  if (cj_db_disabled(disable)) return;
  cj_db *d = malloc(sizeof *d);
  if (!d) {
    cj_log(CJ_LOG_ERROR, "tuning: out of memory: tuning table off");
    return;
  }
  cj_db_init_off(d);
  /* quiet: the context's kernel cache opened the same file just before and
   * logged why it is off or read-only; follow: a damaged file it moves
   * aside later is left for the new one, as its own connection does. */
  d->follow = 1;
  cj_db_open_user(d, dir, NULL, 1, NULL, 0);
  ctx->tune_db = d;
}

void cj_tune_db_close(convjit_context *ctx) {
  if (!ctx->tune_db) return;
  cj_db_close(ctx->tune_db);
  free(ctx->tune_db);
  ctx->tune_db = NULL;
}

/* The connection while held (tune_take .. tune_give). */
typedef struct tune_conn {
  sqlite3 *db;
  const uint8_t *key; /* CJ_KEY_BYTES */
  int readonly;
  const char *path;
  cj_db *d;
} tune_conn;

/* 1 with the connection locked, or 0 (nothing held) when the table is off. */
static int tune_take(convjit_context *ctx, tune_conn *h) {
  memset(h, 0, sizeof *h);
  if (!ctx->tune_db || !cj_db_lock(ctx->tune_db)) return 0;
  *h = (tune_conn){ctx->tune_db->db, ctx->tune_db->key, ctx->tune_db->readonly, ctx->tune_db->path, ctx->tune_db};
  return 1;
}

static void tune_give(tune_conn *h) { cj_db_unlock(h->d); }

int cj_tune_db_lookup(convjit_context *ctx, const cj_conv_problem *p, cj_tune_row *row) {
  cj_tune_row want;
  cj_tune_row_init(&want, ctx, p);
  tune_conn h;
  if (!tune_take(ctx, &h)) return 0;
  sqlite3 *db = h.db;
  sqlite3_stmt *st = NULL;
  int found = 0;
  /* every version's row of this machine, so stale ones can be named */
  if (sqlite3_prepare_v2(db, "SELECT " TUNE_COLS " FROM tuning WHERE problem = ?1 AND arch = ?2 AND device = ?3"
                         " AND cus = ?4", -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, want.problem, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, want.arch, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, want.device, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, want.cus);
    while (!found && sqlite3_step(st) == SQLITE_ROW) {
      char why[256] = "";
      cj_tune_row r;
      int ok = row_read(db, h.key, st, &r, why, sizeof why);
      int current = !strcmp(r.convjit, want.convjit) && !strcmp(r.llvm, want.llvm);
      if (!current)
        cj_log(CJ_LOG_INFO, "tuning: row for this shape from convjit %s / LLVM %s is stale (now %s / %s): ignored",
               r.convjit, r.llvm, want.convjit, want.llvm);
      else if (!ok)
        cj_log(CJ_LOG_ERROR, "tuning: row for this shape in %s ignored: %s", h.path, why);
      else {
        *row = r;
        found = 1;
      }
    }
  }
  sqlite3_finalize(st); /* no table yet (nothing tuned) is simply no row */
  tune_give(&h);
  return found;
}

/* BEGIN IMMEDIATE takes the write lock at once, so the busy timeout (not
 * a deadlock between two readers upgrading) arbitrates concurrent writers. */
static int exec(sqlite3 *db, const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL); }

/* The columns of table `tuning` in order ("" when there is none). */
static int tune_table_columns(sqlite3 *db, char *cols, size_t cap) {
  sqlite3_stmt *st = NULL;
  cols[0] = 0;
  int rc = sqlite3_prepare_v2(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('tuning')"
                              " ORDER BY cid)", -1, &st, NULL);
  if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *c = (const char *)sqlite3_column_text(st, 0);
    snprintf(cols, cap, "%s", c ? c : "");
    rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Inside a write transaction: our tuning table exists afterwards. A table
 * (or view) named tuning of another schema — another program's, or another
 * version's — is never written into or reported as ours: as the kernel
 * cache moves a database of a foreign schema aside (runtime/cache_db.c), it is
 * renamed to *aside (its rows kept; "" when nothing was moved) and ours
 * created in its place; the caller logs that after its commit. What cannot
 * be renamed (a view) refuses the write, named. */
static convjit_status tune_table_ensure(sqlite3 *db, const char *path, char *aside, size_t cap) {
  char cols[512];
  aside[0] = 0;
  int rc = tune_table_columns(db, cols, sizeof cols);
  CJ_CHECK(rc == SQLITE_OK, CONVJIT_ERR_IO, "tuning table in %s: %s (nothing written)", path, sqlite3_errmsg(db));
  if (cols[0] && strcmp(cols, TUNE_TABLE_COLUMNS) != 0) {
    char sql[160], idx_table[80] = "";
    snprintf(aside, cap, "tuning_foreign_%lld_%d", (long long)time(NULL), (int)getpid());
    snprintf(sql, sizeof sql, "ALTER TABLE tuning RENAME TO %s", aside);
    rc = exec(db, sql);
    CJ_CHECK(rc == SQLITE_OK, CONVJIT_ERR_IO,
             "tuning table in %s: the database's `tuning` has another schema (%.200s; convjit's is %s) and cannot "
             "be moved aside: %s (nothing written)", path, cols, TUNE_TABLE_COLUMNS, sqlite3_errmsg(db));
    /* its index of our index's name now indexes the renamed table: ours gets the name back */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT tbl_name FROM sqlite_master WHERE type = 'index' AND name = 'tuning_problem'",
                           -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      snprintf(idx_table, sizeof idx_table, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (!strcmp(idx_table, aside)) exec(db, "DROP INDEX tuning_problem");
  }
  rc = exec(db, TUNE_TABLE);
  CJ_CHECK(rc == SQLITE_OK, CONVJIT_ERR_IO, "tuning table in %s: %s (nothing written)", path, sqlite3_errmsg(db));
  return CONVJIT_OK;
}

static void tune_table_log_aside(const char *path, const char *aside) {
  if (aside[0])
    cj_log(CJ_LOG_ERROR, "tuning: the table `tuning` in %s had another schema (not convjit's %s): renamed to %s "
           "with its rows, and convjit's tuning table created", path, TUNE_TABLE_COLUMNS, aside);
}

static int row_insert(sqlite3 *db, const uint8_t *key, const cj_tune_row *r) {
  cj_strbuf k = {0}, kj = {0};
  row_key(r, &k);
  cj_tune_knobs_json(&r->knobs, &kj);
  if (k.oom || kj.oom || !k.s || !kj.s) {
    cj_sb_free(&k);
    cj_sb_free(&kj);
    return SQLITE_NOMEM;
  }
  uint8_t mac[CJ_MAC_BYTES];
  row_mac(key, r, kj.s, mac);
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO tuning(key, " TUNE_COLS ")"
                              " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)", -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, k.s, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->problem, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, r->arch, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r->device, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 5, r->cus);
    sqlite3_bind_text(st, 6, r->convjit, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, r->llvm, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, kj.s, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 9, r->ms);
    sqlite3_bind_double(st, 10, r->default_ms);
    sqlite3_bind_int(st, 11, r->modelled);
    sqlite3_bind_int64(st, 12, r->created);
    sqlite3_bind_blob(st, 13, mac, sizeof mac, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  cj_sb_free(&k);
  cj_sb_free(&kj);
  return rc;
}

/* Writes rows[0..n) in one transaction; IO with the reason otherwise. */
static convjit_status rows_write(convjit_context *c, const cj_tune_row *rows, int n) {
  tune_conn h;
  CJ_CHECK(tune_take(c, &h), CONVJIT_ERR_IO, "tuning table: the disk cache is off (no database to write)");
  sqlite3 *db = h.db;
  convjit_status res = CONVJIT_OK;
  char aside[64] = "";
  if (h.readonly) {
    res = CJ_ERR(CONVJIT_ERR_IO, "tuning table: %s is read-only", h.path);
  } else {
    int rc = exec(db, "BEGIN IMMEDIATE");
    if (rc == SQLITE_OK && (res = tune_table_ensure(db, h.path, aside, sizeof aside)) != CONVJIT_OK) rc = SQLITE_ABORT;
    for (int i = 0; rc == SQLITE_OK && i < n; i++) rc = row_insert(db, h.key, &rows[i]);
    if (rc == SQLITE_OK) rc = exec(db, "COMMIT");
    if (rc != SQLITE_OK) {
      if (res == CONVJIT_OK)
        res = CJ_ERR(CONVJIT_ERR_IO, "tuning table in %s: %s (nothing written)", h.path, sqlite3_errmsg(db));
      exec(db, "ROLLBACK");
    } else {
      tune_table_log_aside(h.path, aside);
    }
  }
  tune_give(&h);
  if (res == CONVJIT_OK) cj_tune_generation_bump();
  return res;
}

convjit_status cj_tune_db_store(convjit_context *c, const cj_tune_row *row) {
  cj_tune_row r = *row;
  if (!r.created) r.created = (long long)time(NULL);
  return rows_write(c, &r, 1);
}

/* JSON string body: the few characters a device name may need escaped. */
static void json_str(cj_strbuf *o, const char *s) {
  cj_sb_printf(o, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') cj_sb_printf(o, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) cj_sb_printf(o, "\\u%04x", (unsigned char)*s);
    else cj_sb_printf(o, "%c", *s);
  }
  cj_sb_printf(o, "\"");
}

convjit_status cj_tune_db_export(convjit_context *c, cj_strbuf *o, int *nrows) {
  *nrows = 0;
  tune_conn h;
  CJ_CHECK(tune_take(c, &h), CONVJIT_ERR_IO, "tuning table: the disk cache is off");
  sqlite3 *db = h.db;
  sqlite3_stmt *st = NULL;
  cj_sb_printf(o, "{\"format\":\"%s\",\"rows\":[", CJ_TUNE_FORMAT);
  if (sqlite3_prepare_v2(db, "SELECT " TUNE_COLS " FROM tuning ORDER BY key", -1, &st, NULL) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      char why[256];
      cj_tune_row r;
      if (!row_read(db, h.key, st, &r, why, sizeof why)) {
        cj_log(CJ_LOG_ERROR, "tuning: export skips a row of %s: %s", h.path, why);
        continue;
      }
      cj_sb_printf(o, "%s\n{\"problem\":", *nrows ? "," : "");
      json_str(o, r.problem);
      cj_sb_printf(o, ",\"arch\":");
      json_str(o, r.arch);
      cj_sb_printf(o, ",\"device\":");
      json_str(o, r.device);
      cj_sb_printf(o, ",\"cus\":%d,\"convjit\":", r.cus);
      json_str(o, r.convjit);
      cj_sb_printf(o, ",\"llvm\":");
      json_str(o, r.llvm);
      cj_sb_printf(o, ",\"knobs\":");
      cj_tune_knobs_json(&r.knobs, o);
      cj_sb_printf(o, ",\"ms\":%.17g,\"default_ms\":%.17g,\"modelled\":%d,\"created\":%lld}", r.ms, r.default_ms,
                   r.modelled, r.created);
      (*nrows)++;
    }
  }
  sqlite3_finalize(st);
  tune_give(&h);
  cj_sb_printf(o, "\n]}\n");
  CJ_CHECK(!o->oom && o->s, CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (tuning export)");
  return CONVJIT_OK;
}

/* Text column i of st as a C string, raw_i the same field as JSON text:
 * refused when the JSON string holds a NUL (\u0000), which ends the text
 * early and would make the row another one than the file holds (a cut
 * problem text can still be canonical). */
static convjit_status text_column(sqlite3_stmt *st, int i, int raw_i, const char *name, const char **out) {
  const char *s = (const char *)sqlite3_column_text(st, i);
  CJ_CHECK(s && sqlite3_column_type(st, i) == SQLITE_TEXT, CONVJIT_ERR_INVALID_ARG, "%s: missing or not a string",
           name);
  CJ_CHECK(!json_str_has_nul((const char *)sqlite3_column_text(st, raw_i)) &&
               (size_t)sqlite3_column_bytes(st, i) == strlen(s),
           CONVJIT_ERR_INVALID_ARG, "%s: holds a NUL character (\\u0000) after \"%.60s\": not a text convjit writes",
           name, s);
  *out = s;
  return CONVJIT_OK;
}

/* One imported row, checked: fields present and typed (no NUL inside a
 * text), versions ours, the problem text canonical (it parses, and prints
 * back as the same text), knobs known and in range, legal for its problem
 * on its arch, modelled 0 or 1, created a time. */
static convjit_status import_row(sqlite3 *db, sqlite3_stmt *st, cj_tune_row *r) {
  memset(r, 0, sizeof *r);
  static const char *const names[] = {"problem", "arch", "device", "convjit", "llvm"};
  char *dst[] = {r->problem, r->arch, r->device, r->convjit, r->llvm};
  size_t cap[] = {sizeof r->problem, sizeof r->arch, sizeof r->device, sizeof r->convjit, sizeof r->llvm};
  for (int i = 0; i < 5; i++) {
    const char *s = NULL;
    CJ_TRY(text_column(st, i, 11 + i, names[i], &s));
    CJ_CHECK(strlen(s) < cap[i], CONVJIT_ERR_INVALID_ARG, "%s: longer than %zu bytes", names[i], cap[i] - 1);
    snprintf(dst[i], cap[i], "%s", s);
  }
  CJ_CHECK(sqlite3_column_type(st, 5) == SQLITE_INTEGER && sqlite3_column_int64(st, 5) >= 1 &&
               sqlite3_column_int64(st, 5) <= 4096,
           CONVJIT_ERR_INVALID_ARG, "cus = %s: expected an integer 1..4096", sqlite3_column_text(st, 5) ?
           (const char *)sqlite3_column_text(st, 5) : "null");
  r->cus = sqlite3_column_int(st, 5);
  CJ_CHECK(!strcmp(r->convjit, CJ_VERSION_STRING) && !strcmp(r->llvm, CJ_LLVM_VERSION), CONVJIT_ERR_VERSION,
           "version mismatch: row from convjit %s / LLVM %s, this is convjit %s / LLVM %s", r->convjit, r->llvm,
           CJ_VERSION_STRING, CJ_LLVM_VERSION);
  for (int i = 7; i <= 8; i++)
    CJ_CHECK(sqlite3_column_type(st, i) == SQLITE_FLOAT || sqlite3_column_type(st, i) == SQLITE_INTEGER,
             CONVJIT_ERR_INVALID_ARG, "%s: expected a number", i == 7 ? "ms" : "default_ms");
  r->ms = sqlite3_column_double(st, 7);
  r->default_ms = sqlite3_column_double(st, 8);
  CJ_CHECK(r->ms > 0 && r->default_ms > 0, CONVJIT_ERR_INVALID_ARG, "ms = %g, default_ms = %g: must be > 0", r->ms,
           r->default_ms);
  int mt = sqlite3_column_type(st, 9), ct = sqlite3_column_type(st, 10); /* NULL: absent (0; now) */
  CJ_CHECK(mt == SQLITE_NULL || (mt == SQLITE_INTEGER && (uint64_t)sqlite3_column_int64(st, 9) <= 1),
           CONVJIT_ERR_INVALID_ARG, "modelled = %s: expected 0 or 1", (const char *)sqlite3_column_text(st, 9));
  CJ_CHECK(ct == SQLITE_NULL || (ct == SQLITE_INTEGER && sqlite3_column_int64(st, 10) >= 0), CONVJIT_ERR_INVALID_ARG,
           "created = %s: expected a time (seconds since 1970)", (const char *)sqlite3_column_text(st, 10));
  r->modelled = sqlite3_column_int(st, 9);
  r->created = sqlite3_column_int64(st, 10);
  const char *knobs = (const char *)sqlite3_column_text(st, 6);
  CJ_CHECK(knobs, CONVJIT_ERR_INVALID_ARG, "knobs: missing");
  CJ_TRY(knobs_from_json(db, knobs, &r->knobs));
  cj_conv_problem p;
  CJ_TRY(cj_tune_problem_parse(r->problem, &p));
  const cj_arch *arch = cj_arch_from_name(r->arch);
  CJ_CHECK(arch, CONVJIT_ERR_INVALID_ARG, "arch = %s: not one of %s", r->arch, cj_arch_names());
  const cj_target t = {arch, (uint32_t)r->cus};
  /* the planner's own check, as plan creation would build the row */
  convjit_status s = cj_select_conv_choice_check(&p, &t, &r->knobs);
  if (s != CONVJIT_OK) {
    char why[400]; /* the error text is rewritten below: its copy, not itself, is formatted in */
    snprintf(why, sizeof why, "%s", cj_error_text());
    return CJ_ERR(s == CONVJIT_ERR_INVALID_ARG ? s : CONVJIT_ERR_UNSUPPORTED, "knobs illegal for this problem on %s: %s",
                  r->arch, why);
  }
  return CONVJIT_OK;
}

convjit_status cj_tune_db_import(convjit_context *c, const char *json, int *imported, int *skipped, cj_strbuf *report) {
  *imported = *skipped = 0;
  tune_conn h;
  CJ_CHECK(tune_take(c, &h), CONVJIT_ERR_IO, "tuning import: the disk cache is off");
  sqlite3 *db = h.db;
  convjit_status res = CONVJIT_OK;
  sqlite3_stmt *st = NULL;
  cj_tune_row *rows = NULL;
  int n = 0, cap = 0;
  if (sqlite3_prepare_v2(db, "SELECT json_valid(?1), json_extract(?1, '$.format'), json_type(?1, '$.rows')", -1,
                         &st, NULL) != SQLITE_OK) {
    res = CJ_ERR(CONVJIT_ERR_IO, "tuning import: %s", sqlite3_errmsg(db));
  } else {
    sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
    const char *fmt = NULL, *rt = NULL;
    int valid = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    if (valid) fmt = (const char *)sqlite3_column_text(st, 1), rt = (const char *)sqlite3_column_text(st, 2);
    if (!valid) res = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "tuning import: not valid JSON");
    else if (!fmt || strcmp(fmt, CJ_TUNE_FORMAT) != 0)
      res = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "tuning import: format = %s: expected \"%s\"", fmt ? fmt : "absent",
                   CJ_TUNE_FORMAT);
    else if (!rt || strcmp(rt, "array") != 0)
      res = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "tuning import: rows = %s: expected an array", rt ? rt : "absent");
  }
  sqlite3_finalize(st);
  st = NULL;
  if (res == CONVJIT_OK &&
      sqlite3_prepare_v2(db, "SELECT json_extract(value,'$.problem'), json_extract(value,'$.arch'),"
                         " json_extract(value,'$.device'), json_extract(value,'$.convjit'),"
                         " json_extract(value,'$.llvm'), json_extract(value,'$.cus'),"
                         " json(json_extract(value,'$.knobs')), json_extract(value,'$.ms'),"
                         " json_extract(value,'$.default_ms'), json_extract(value,'$.modelled'),"
                         " json_extract(value,'$.created'), value -> '$.problem', value -> '$.arch',"
                         " value -> '$.device', value -> '$.convjit', value -> '$.llvm'"
                         " FROM json_each(?1, '$.rows') ORDER BY key",
                         -1, &st, NULL) != SQLITE_OK)
    res = CJ_ERR(CONVJIT_ERR_IO, "tuning import: %s", sqlite3_errmsg(db));
  if (res == CONVJIT_OK) sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
  for (int i = 0; res == CONVJIT_OK && sqlite3_step(st) == SQLITE_ROW; i++) {
    cj_tune_row r;
    if (import_row(db, st, &r) != CONVJIT_OK) {
      cj_sb_printf(report, "row %d: %s: skipped\n", i, cj_error_text());
      cj_error_clear();
      (*skipped)++;
      continue;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      cj_tune_row *nr = realloc(rows, (size_t)cap * sizeof *nr);
      if (!nr) {
        res = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (tuning import)");
        break;
      }
      rows = nr;
    }
    if (!r.created) r.created = (long long)time(NULL);
    rows[n++] = r;
  }
  sqlite3_finalize(st);
  tune_give(&h);
  if (res == CONVJIT_OK && n) res = rows_write(c, rows, n);
  if (res == CONVJIT_OK) *imported = n;
  free(rows);
  return res;
}

int cj_tune_db_count(convjit_context *c) {
  tune_conn h;
  if (!tune_take(c, &h)) return -1;
  sqlite3_stmt *st = NULL;
  int n = 0;
  char cols[512];
  /* another schema's table of the name holds no rows of ours */
  if (tune_table_columns(h.db, cols, sizeof cols) == SQLITE_OK && !strcmp(cols, TUNE_TABLE_COLUMNS) &&
      sqlite3_prepare_v2(h.db, "SELECT count(*) FROM tuning", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  tune_give(&h);
  return n;
}

convjit_status cj_tune_db_clear(convjit_context *c) {
  tune_conn h;
  CJ_CHECK(tune_take(c, &h), CONVJIT_ERR_IO, "tuning table: the disk cache is off");
  char aside[64] = "";
  convjit_status res = CONVJIT_OK;
  int rc = h.readonly ? SQLITE_READONLY : exec(h.db, "BEGIN IMMEDIATE");
  if (rc == SQLITE_OK && (res = tune_table_ensure(h.db, h.path, aside, sizeof aside)) != CONVJIT_OK) rc = SQLITE_ABORT;
  if (rc == SQLITE_OK) rc = exec(h.db, "DELETE FROM tuning");
  if (rc == SQLITE_OK) rc = exec(h.db, "COMMIT");
  const char *msg = rc == SQLITE_READONLY ? "read-only" : sqlite3_errmsg(h.db);
  if (rc != SQLITE_OK && res == CONVJIT_OK) res = CJ_ERR(CONVJIT_ERR_IO, "tuning table in %s: %s", h.path, msg);
  if (rc != SQLITE_OK && rc != SQLITE_READONLY) exec(h.db, "ROLLBACK");
  if (res == CONVJIT_OK) tune_table_log_aside(h.path, aside);
  tune_give(&h);
  if (res == CONVJIT_OK) cj_tune_generation_bump();
  return res;
}
