/* convjit-bench-api — host overhead of the public API on a warm cache.
 *
 *   convjit-bench-api [--iters N] [--arch ARCH] [--json]
 *
 * Measures, on the emulator backend with its launch replaced by a no-op
 * (so only convjit's own host work is timed, not the emulated kernel):
 *   plan_create_us   convjit_plan_create_transpose + destroy on a memory-cache
 *                    hit (validation, selection, cache lookup, step resolution)
 *   enqueue_us       convjit_transpose: argument checks, bind resolution,
 *                    kernarg packing, the backend call
 * and the same two for the conv path (every step of convjit_conv_fwd: its
 * pre-pass, memset, conv and finalize launches) when a conv kernel exists.
 * A repeated conv plan create is answered by the context's plan memo
 * (conv_plan_create_us); conv_plan_create_nomemo_us is the same call with
 * the memo off: selection and one memory-cache lookup per kernel.
 * Both are wall-clock means over many calls on this host (not a GPU time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "convjit/convjit.h"
#include "host/tool_api.h"
#include "cli.h"

static uint64_t g_launches, g_memsets;
static convjit_status noop_launch(cj_device *d, void *kern, const uint32_t grid[3], const uint32_t block[3],
                                  const void *ka, size_t n, void *stream) {
  (void)d; (void)kern; (void)grid; (void)block; (void)ka; (void)n; (void)stream;
  g_launches++;
  return CONVJIT_OK;
}
static convjit_status noop_memset(cj_device *d, void *dst, int v, size_t n, void *stream) {
  (void)d; (void)dst; (void)v; (void)n; (void)stream;
  g_memsets++;
  return CONVJIT_OK;
}


/* Times `iters` calls of a statement, in microseconds per call. */
#define TIME_US(iters, stmt)                                  \
  ({                                                          \
    double t0_ = cj_now_ms();                                 \
    for (long i_ = 0; i_ < (iters); i_++) { stmt; }           \
    (cj_now_ms() - t0_) * 1e3 / (double)(iters);              \
  })

int main(int argc, char **argv) {
  long iters = 200000;
  const char *arch = "gfx942";
  int json = 0;
  cli_set_tool("convjit-bench-api");
  for (int i = 1; i < argc; i++) {
    uint64_t v = 0;
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
      if (cli_u64("--iters", argv[++i], 100, 1000000000, &v)) goto usage;
      iters = (long)v;
    }
    else if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
    else if (!strcmp(argv[i], "--json")) json = 1;
    else {
    usage:
      fprintf(stderr, "usage: convjit-bench-api [--iters N (100..10^9)] [--arch %s] [--json]\n", cli_arch_names('|'));
      return 2;
    }
  }
  long plan_iters = iters / 20 > 100 ? iters / 20 : 100;
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.arch = arch;
  convjit_context *ctx = NULL;
  convjit_plan *tp = NULL, *cp = NULL;
  const cj_device_ops *saved = NULL;
  int rc = 0, ok = 0;
  CLI_TRY(convjit_context_create(&o, &ctx));

  /* Plans are built with the real backend (kernels loaded); then only the
   * launch and memset entry points are replaced: everything convjit does
   * before them is real. Pointers are never dereferenced. */
  convjit_transpose_desc td = {sizeof td, 2, 24, 1000, CONVJIT_DTYPE_BF16};
  double t0 = cj_now_ms();
  CLI_TRY(convjit_plan_create_transpose(ctx, &td, &tp));
  double cold_ms = cj_now_ms() - t0;
  /* convjit-run's default video-VAE layer (causal 3x3x3, bias), at 32 channels */
  static const int64_t shape[9] = {1, 32, 4, 16, 16, 32, 3, 3, 3}, pad[6] = {2, 1, 1, 0, 1, 1};
  cli_shape sh = cli_shape_3d(shape);
  if (cli_shape_dims(&sh, NULL, 0, NULL, 0, pad, 6)) return 2;
  convjit_conv_desc cd = cli_conv_desc(&sh);
  cd.has_bias = 1;
  int conv_kernels = 0;
  if (convjit_plan_create_conv(ctx, &cd, &cp) == CONVJIT_OK) convjit_plan_kernel_count(cp, &conv_kernels);
  else fprintf(stderr, "conv plan unavailable (%s): transpose only\n", convjit_last_error());

  cj_device *dev = cj_context_device(ctx);
  cj_device_ops ops = *dev->ops;
  ops.launch = noop_launch;
  ops.memset_d8 = noop_memset;
  saved = dev->ops;
  dev->ops = &ops;
  void *x = (void *)(uintptr_t)0x10000, *y = (void *)(uintptr_t)0x20000, *w = (void *)(uintptr_t)0x30000,
       *b = (void *)(uintptr_t)0x40000, *ws = (void *)(uintptr_t)0x50000;

  double tr_plan_us = TIME_US(plan_iters, convjit_plan *p2; CLI_TRY(convjit_plan_create_transpose(ctx, &td, &p2));
                              convjit_plan_destroy(p2));
  TIME_US(1000, CLI_TRY(convjit_transpose(tp, x, y, NULL))); /* warm-up */
  g_launches = 0;
  double tr_enq_us = TIME_US(iters, CLI_TRY(convjit_transpose(tp, x, y, NULL)));
  ok = g_launches == (uint64_t)iters;
  double cv_plan_us = -1, cv_nomemo_us = -1, cv_enq_us = -1;
  if (cp) {
    size_t wsb = 0;
    CLI_TRY(convjit_plan_workspace_size(cp, &wsb));
    cv_plan_us = TIME_US(plan_iters, convjit_plan *p2; CLI_TRY(convjit_plan_create_conv(ctx, &cd, &p2));
                         convjit_plan_destroy(p2));
    uint32_t memo_cap = cj_context_set_plan_memo(ctx, 0);
    cv_nomemo_us = TIME_US(plan_iters, convjit_plan *p2; CLI_TRY(convjit_plan_create_conv(ctx, &cd, &p2));
                           convjit_plan_destroy(p2));
    cj_context_set_plan_memo(ctx, memo_cap);
    TIME_US(1000, CLI_TRY(convjit_conv_fwd(cp, x, w, b, y, ws, wsb, NULL)));
    g_launches = g_memsets = 0;
    cv_enq_us = TIME_US(iters, CLI_TRY(convjit_conv_fwd(cp, x, w, b, y, ws, wsb, NULL)));
    /* every forward step (kernels and memsets) reached the backend on every call */
    ok = ok && g_launches + g_memsets == (uint64_t)iters * cj_plan_fwd_steps(cp);
  }
  dev->ops = saved;
  saved = NULL;
  if (json)
    printf("{\"cold_plan_ms\":%.3f,\"plan_create_us\":%.3f,\"enqueue_us\":%.4f,\"conv_kernels\":%d,"
           "\"conv_plan_create_us\":%.3f,\"conv_plan_create_nomemo_us\":%.3f,\"conv_enqueue_us\":%.4f,\"iters\":%ld,"
           "\"launches_ok\":%s}\n",
           cold_ms, tr_plan_us, tr_enq_us, conv_kernels, cv_plan_us, cv_nomemo_us, cv_enq_us, iters,
           ok ? "true" : "false");
  else {
    printf("first transpose plan (compile or disk): %.1f ms\n", cold_ms);
    printf("transpose, 1 kernel: warm plan create %.2f us/call (%ld calls); enqueue %.3f us/call (%ld calls)\n",
           tr_plan_us, plan_iters, tr_enq_us, iters);
    if (cp)
      printf("conv, %d kernels: warm plan create %.2f us/call (plan memo hit; memo off: %.2f us/call); conv_fwd "
             "enqueue %.3f us/call\n",
             conv_kernels, cv_plan_us, cv_nomemo_us, cv_enq_us);
  }
done:
  if (saved) cj_context_device(ctx)->ops = saved;
  convjit_plan_destroy(tp);
  convjit_plan_destroy(cp);
  convjit_context_destroy(ctx);
  return rc ? 3 : ok ? 0 : 1;
}
