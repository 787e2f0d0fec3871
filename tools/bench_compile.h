/* convjit-bench-compile's parts: the headline layers of every conv kind
 * (convjit-bench-compile.c) and the per-pass profile of their conv kernels
 * (bench_passes.c). Host CPU times of this machine, never a GPU figure. */
#ifndef CJ_TOOLS_BENCH_COMPILE_H
#define CJ_TOOLS_BENCH_COMPILE_H

#include <stdint.h>
#include "codegen/kplan.h"
#include "convjit/convjit.h"

/* One headline conv problem of a kind on an arch in a dtype: its plan on a
 * fresh emulator context (disk cache off), NULL with the reason printed
 * when the kind has no kernels for it. */
typedef struct bench_case {
  const cj_arch *arch;
  const char *layer;   /* the layer's name */
  const char *kind;    /* the kind table's name */
  char dtype[24];      /* "bf16", "fp8", "bf16->f32" */
  convjit_conv_desc desc;
} bench_case;

/* bench_passes.c: the per-pass profile of the plan's conv kernel: a
 * warm-up build, then reps profiled builds, each pass's minimum; the top
 * passes of the middle end and of the backend printed, the rest summed.
 * 0, or -1 after printing why. */
int bench_passes(const bench_case *bc, const convjit_plan *plan, int reps, int json, int first, int top);

#endif
