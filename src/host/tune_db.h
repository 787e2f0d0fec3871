/* The tuning table (docs/tuning.md): one row per conv problem and machine,
 * holding the winning knob settings of convjit_plan_tune, in the user's
 * cache database, through the context's own connection to it (ctx->tune_db,
 * opened by runtime/cache_db.h's trust and open code: WAL, busy timeout,
 * trust rules, damage moved aside), not the kernel cache's.
 *
 *   tuning(key TEXT PRIMARY KEY, problem, arch, device, cus, convjit, llvm,
 *          knobs, ms, default_ms, modelled, created, mac)
 *
 * key = "tune|" problem "|arch=" arch "|device=" device "|cus=" cus
 *       "|convjit=" version "|llvm=" version
 * problem = the canonical text of the normalized descriptor, field by field
 *       (cj_tune_problem_text); knobs = a JSON object of the knob table's
 *       tunable knobs (kplan_knobs.h), so the columns a row carries are
 *       generated from the same table as the kernel-spec options.
 * mac = keyed BLAKE2b (cache_trust.h, the kernel rows' MAC) over the key
 *       and the value text: a row another user wrote, or a damaged one, is
 *       ignored like an unauthenticated kernel row.
 *
 * Contract: lookups never fail plan creation (a missing, stale,
 * unauthenticated or unreadable row is logged and answers "none"); a store
 * is one transaction (INSERT OR REPLACE), so concurrent tuners of one shape
 * both succeed and leave one row. Import validates every row before one
 * transaction writes the valid ones: nothing is half-written. */
#ifndef CJ_HOST_TUNE_DB_H
#define CJ_HOST_TUNE_DB_H

#include "host/plan.h"

#define CJ_TUNE_FORMAT "convjit-tuning-v1" /* the export file's format tag */

typedef struct cj_tune_row {
  char problem[512];
  char arch[16];
  char device[64];  /* the device model ("AMD Instinct MI300X"), else the backend name ("emu") */
  int cus;
  char convjit[16], llvm[32];
  cj_conv_opts knobs; /* the tunable knobs; the rest 0 */
  double ms, default_ms;
  int modelled;     /* 1: ranked by the bounds model (convjit-tune --store-modelled), not timed */
  long long created;
} cj_tune_row;

/* The canonical problem text (scales excluded: they are kernel arguments,
 * not constants, so one winner serves every calibration; spatial_rank
 * excluded: 2D and 1D convs are planned as 3D ones). */
void cj_tune_problem_text(const cj_conv_problem *p, cj_strbuf *out);
/* Its inverse; INVALID_ARG naming the token when text is not canonical. */
convjit_status cj_tune_problem_parse(const char *text, cj_conv_problem *out);
/* The tunable knobs as JSON ({"tile":"128x128","stages":4,...}) and in the
 * kernel-spec option form ("tile=128x128 stages=4 ..."; unset knobs left out). */
void cj_tune_knobs_json(const cj_conv_opts *o, cj_strbuf *out);
void cj_tune_knobs_text(const cj_conv_opts *o, char *buf, size_t cap);

/* The context's connection (ctx->tune_db): the user's database of dir
 * (the context's cache_dir option; NULL: the default), none when disable
 * or $CONVJIT_DISABLE_CACHE=1, or when the database is refused (logged by
 * the kernel cache). Never fails. close: NULL-safe. */
void cj_tune_db_open(convjit_context *ctx, const char *dir, int disable);
void cj_tune_db_close(convjit_context *ctx);

/* The key parts of a context (arch, device, CU count, versions) in row. */
void cj_tune_row_init(cj_tune_row *row, const convjit_context *ctx, const cj_conv_problem *p);
/* 1 and *row filled: an authenticated row of this context's machine and
 * versions for p; 0: none (rows of other versions are logged as stale). */
int cj_tune_db_lookup(convjit_context *ctx, const cj_conv_problem *p, cj_tune_row *row);
/* Writes row (key from its fields) in one transaction. IO when the table
 * cannot be written (no disk cache, read-only); the text says why. */
convjit_status cj_tune_db_store(convjit_context *ctx, const cj_tune_row *row);
/* Every authenticated row as the export JSON ({"format":..., "rows":[...]}). */
convjit_status cj_tune_db_export(convjit_context *ctx, cj_strbuf *json, int *nrows);
/* Rows of an export JSON: each validated (format, fields, version, knob
 * names and values, legality on its arch); the valid ones written in one
 * transaction, the others reported (one line each) and skipped. */
convjit_status cj_tune_db_import(convjit_context *ctx, const char *json, int *imported, int *skipped,
                                 cj_strbuf *report);
/* Rows in the table (-1 when the disk cache is off); removes them all. */
int cj_tune_db_count(convjit_context *ctx);
convjit_status cj_tune_db_clear(convjit_context *ctx);

/* Bumped by every store in this process: plan memo entries made before
 * are not served (plan_memo.c), so a tuned problem is planned afresh. */
uint64_t cj_tune_generation(void);
void cj_tune_generation_bump(void);

#endif
