/* What convjit's tools (tools/) use beyond the public header: plans with
 * forced choices, read-only views of a plan (its normalized problem, its
 * selected kernels), the descriptor checks without a context, and two
 * benchmark hooks. A tool includes this, never host/plan.h (the layout of
 * the public handles; scripts/check-layers refuses it), so the handles can
 * change without touching the tools. Tests may still look inside plan.h. */
#ifndef CJ_HOST_TOOL_API_H
#define CJ_HOST_TOOL_API_H

#include "convjit/convjit.h"
#include "host/select.h"
#include "runtime/device.h"

/* api_plan.c: convjit_plan_create_conv with forced choices (tests, tools);
 * o NULL = all automatic. With nothing forced (NULL or all 0) the tuning
 * table is asked first; only NULL uses the plan memo. */
convjit_status cj_plan_create_conv_opts(convjit_context *ctx, const convjit_conv_desc *desc, const cj_conv_opts *o,
                                        convjit_plan **out);
/* desc.c: validation + 3D normalization of a public descriptor. */
convjit_status cj_conv_desc_normalize(const convjit_conv_desc *d, cj_conv_problem *out);
/* desc.c: the transpose descriptor's fields (the checks of
 * convjit_plan_create_transpose, for tools that plan without a context). */
convjit_status cj_transpose_desc_check(const convjit_transpose_desc *d);

/* tool_api.c: views of a plan, valid while it lives; NULL p answers NULL/0. */
const cj_conv_problem *cj_plan_problem(const convjit_plan *p); /* NULL: not a conv plan */
const cj_arch *cj_plan_arch(const convjit_plan *p);            /* its context's arch */
const cj_seq *cj_plan_seq(const convjit_plan *p);              /* the selected launch sequence */
/* The plan of the forward sequence's conv kernel (the implicit GEMM, not a
 * pre-pass or the finalize): the first, the largest output phase's when
 * there are several (kplan_phase.h); NULL if it has none. */
const cj_kplan *cj_plan_conv_kernel(const convjit_plan *p);
/* How many conv kernel steps the forward sequence has (one per output phase). */
uint32_t cj_plan_conv_kernels(const convjit_plan *p);
/* The tensor roles a launch of p takes (kinds.h, one CJ_TENSOR_BIT each):
 * its kind's reads and writes, and the optional roles one of its forward
 * steps binds (the launch checks' rule); 0 for no conv plan. A tool
 * allocates and passes exactly these. */
uint32_t cj_plan_tensors(const convjit_plan *p);
int cj_plan_tuned(const convjit_plan *p);       /* 1: the tuning table's winner or convjit_plan_tune's */
uint32_t cj_plan_fwd_steps(const convjit_plan *p); /* launches per forward call (kernels and memsets) */

/* tool_api.c: benchmarks. Launches the conv kernel step alone (no pre-pass,
 * memset or finalize) with a's buffers, after convjit_conv_forward's
 * argument checks: the kernel-only figure of convjit-bench. */
convjit_status cj_plan_run_conv_kernel(const convjit_plan *p, const convjit_conv_args *a, void *stream);
/* The context's plan memo capacity (0 = off, at most its default); returns
 * the previous one. convjit-bench-api times plan creation with and without. */
uint32_t cj_context_set_plan_memo(convjit_context *ctx, uint32_t cap);
/* The context's device (runtime/device.h): convjit-bench-compile times its
 * module loads; convjit-bench-api swaps its operations for stubs to time
 * convjit's own host work (and restores them before the context goes). */
cj_device *cj_context_device(convjit_context *ctx);

/* Test hook: while hold is 1, the asynchronous builds of ctx wait before
 * they start (the tests' stand-in for a compile that takes as long as they
 * like: docs/api.md "Asynchronous compile"); 0 lets them go. */
void cj_context_set_async_hold(convjit_context *ctx, int hold);

/* Plans of ctx from now on are selected for cu_count compute units (> 0):
 * convjit-bench's emulator twin of a device context plans the device's. */
void cj_context_set_cu_count(convjit_context *ctx, int cu_count);

/* tool_api.c: the tuning table of the context's cache database (tune_db.h,
 * docs/tuning.md), for convjit-tune and convjit-bench's report. Without a
 * database: IO ("disk cache off"), count -1. */
convjit_status cj_context_tuning_export(convjit_context *ctx, cj_strbuf *json, int *nrows);
convjit_status cj_context_tuning_import(convjit_context *ctx, const char *json, int *imported, int *skipped,
                                        cj_strbuf *report);
int cj_context_tuning_count(convjit_context *ctx);
convjit_status cj_context_tuning_clear(convjit_context *ctx);

#endif
