/* convjit-bench-api — host overhead of the public API on a warm cache.
 *
 *   convjit-bench-api [--iters N] [--arch gfx942|gfx950] [--json]
 *
 * Measures, on the emulator backend with its launch replaced by a no-op
 * (so only convjit's own host work is timed, not the emulated kernel):
 *   plan_create_us   convjit_plan_create_transpose + destroy on a memory-cache
 *                    hit (validation, selection, cache lookup, step resolution)
 *   enqueue_us       convjit_transpose: argument checks, bind resolution,
 *                    kernarg packing, the backend call
 * Both are wall-clock means over many calls on this host (not a GPU time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "convjit/convjit.h"
#include "host/plan.h"

static uint64_t g_launches;
static convjit_status noop_launch(cj_device *d, void *kern, const uint32_t grid[3], const uint32_t block[3],
                                  const void *ka, size_t n, void *stream) {
  (void)d; (void)kern; (void)grid; (void)block; (void)ka; (void)n; (void)stream;
  g_launches++;
  return CONVJIT_OK;
}

#define TRY(call)                                                                              \
  do {                                                                                         \
    convjit_status s_ = (call);                                                                \
    if (s_ != CONVJIT_OK) {                                                                    \
      fprintf(stderr, "convjit-bench-api: %s: %s\n", convjit_status_string(s_), convjit_last_error()); \
      return 3;                                                                                \
    }                                                                                          \
  } while (0)

int main(int argc, char **argv) {
  long iters = 200000;
  const char *arch = "gfx942";
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atol(argv[++i]);
    else if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
    else if (!strcmp(argv[i], "--json")) json = 1;
    else {
      fprintf(stderr, "usage: convjit-bench-api [--iters N] [--arch gfx942|gfx950] [--json]\n");
      return 2;
    }
  }
  if (iters < 10) iters = 10;
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.arch = arch;
  convjit_context *ctx;
  TRY(convjit_context_create(&o, &ctx));
  convjit_transpose_desc td = {sizeof td, 2, 24, 1000, CONVJIT_DTYPE_BF16};
  convjit_plan *plan;
  double t0 = cj_now_ms();
  TRY(convjit_plan_create_transpose(ctx, &td, &plan)); /* cold: compile or disk */
  double cold_ms = cj_now_ms() - t0;

  /* Only the launch is replaced: everything convjit does before it is real. */
  cj_device_ops ops = *ctx->dev->ops;
  const cj_device_ops *saved = ctx->dev->ops;
  ops.launch = noop_launch;
  ctx->dev->ops = &ops;
  void *x = (void *)(uintptr_t)0x10000, *y = (void *)(uintptr_t)0x20000; /* never dereferenced */

  long plan_iters = iters / 20 > 1000 ? iters / 20 : 1000;
  t0 = cj_now_ms();
  for (long i = 0; i < plan_iters; i++) {
    convjit_plan *p2;
    TRY(convjit_plan_create_transpose(ctx, &td, &p2));
    convjit_plan_destroy(p2);
  }
  double plan_us = (cj_now_ms() - t0) * 1e3 / (double)plan_iters;

  for (long i = 0; i < 1000; i++) TRY(convjit_transpose(plan, x, y, NULL)); /* warm-up */
  g_launches = 0;
  t0 = cj_now_ms();
  for (long i = 0; i < iters; i++) TRY(convjit_transpose(plan, x, y, NULL));
  double enq_us = (cj_now_ms() - t0) * 1e3 / (double)iters;
  int ok = g_launches == (uint64_t)iters;
  ctx->dev->ops = saved;
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
  if (json)
    printf("{\"cold_plan_ms\":%.3f,\"plan_create_us\":%.3f,\"enqueue_us\":%.4f,\"iters\":%ld,\"launches_ok\":%s}\n",
           cold_ms, plan_us, enq_us, iters, ok ? "true" : "false");
  else
    printf("cold plan create: %.1f ms\nwarm plan create (memory-cache hit): %.2f us/call over %ld calls\n"
           "enqueue (convjit_transpose, backend launch stubbed): %.3f us/call over %ld calls\n",
           cold_ms, plan_us, plan_iters, enq_us, iters);
  return ok ? 0 : 1;
}
