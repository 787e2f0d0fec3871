/* Test support for kernel-argument checks (host tests):
 *
 *  - md_read: the kernels and explicit arguments of a code object's
 *    metadata note as LLVM's own reader prints them (llvm-readelf-22
 *    --notes), so a check of convjit's packing does not trust convjit's
 *    metadata reader (src/pipeline/codeobj.c);
 *  - the probe kernel: a hand-written LLVM IR kernel
 *    cj_probe_args(ptr x, u32 a, ptr y, f32 b, u32 c) storing x[0] = a,
 *    x[1] = c, y[0] = b, compiled by convjit's pipeline and made a
 *    launch-ready plan step (cj_plan_step_bind_args) whose by-value
 *    arguments are bound to constants. Its metadata offsets are 0, 8, 16,
 *    24, 28: c follows b without padding, so packing at 8*j would put it
 *    at 32. */
#ifndef CJ_TESTS_HOST_SUPPORT_KERNARGS_H
#define CJ_TESTS_HOST_SUPPORT_KERNARGS_H

#include <stddef.h>
#include <stdint.h>
#include "host/plan.h"

#define MD_MAX_ARGS 32
typedef struct md_arg {
  char name[48], value_kind[48];
  unsigned offset, size;
} md_arg;
typedef struct md_kernel {
  char name[128];
  int nargs;
  md_arg args[MD_MAX_ARGS]; /* explicit ones only: global_buffer and by_value */
} md_kernel;

/* Up to max kernels of the image; returns how many, or -1 (with a message
 * printed) when llvm-readelf fails or prints no kernel. */
int md_read(const void *image, size_t size, md_kernel *k, int max);
const md_kernel *md_find(const md_kernel *k, int n, const char *name);

#define PROBE_NAME "cj_probe_args"
typedef struct probe {
  cj_blob co;            /* the code object */
  cj_codeobj *parsed;
  void *mod;             /* loaded on the context's device */
  cj_loaded loaded;
  cj_kplan kp;           /* the argument list: x, a, y, b, c */
  cj_bind bind[5];
  cj_plan_step step;     /* launch-ready: 1 work-group of 64 threads */
} probe;

/* Builds the probe for the context's arch, loads it on its device and
 * binds x, y to CJ_BIND_X, CJ_BIND_Y and a, b, c to the constants given. */
convjit_status probe_open(probe *p, convjit_context *c, uint32_t a, float b, uint32_t cc);
void probe_close(probe *p, convjit_context *c);

#endif
