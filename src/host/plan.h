/* The objects behind the public handles (convjit_context, convjit_plan) and
 * the one launch path. Internal: tools and tests may look inside.
 *
 * A plan is resolved at creation into launch-ready steps: each kernel step
 * holds its loaded kernel, its grid/block, and for every explicit argument
 * the bind (what value) and the code object's offset/size (where it goes),
 * so a launch only resolves binds and copies a few words into a stack
 * buffer: no lookup, no allocation, no lock. */
#ifndef CJ_HOST_PLAN_H
#define CJ_HOST_PLAN_H

#include "convjit/convjit.h"
#include "host/select.h"
#include "runtime/cache.h"
#include "runtime/device.h"

#define CJ_KERNARG_MAX 512 /* explicit kernarg bytes a plan may use (stack buffer) */

/* A context's handle (lifetime.c): a slot of a process-wide table that is
 * never freed, and the generation the slot had while this context lived.
 * Plans and events keep a copy, so they can ask whether their context is
 * still alive without reading it (it may be freed memory by then). */
typedef struct cj_ctx_ref {
  uint32_t slot;
  uint64_t gen; /* odd while the context lives; bumped at destroy */
} cj_ctx_ref;

struct convjit_context {
  cj_ctx_ref ref;
  struct convjit_event *events; /* live events (lifetime.c), released at destroy */
  cj_device *dev;
  const cj_arch *arch;
  int cu_count;
  uint32_t code_object_version; /* 5 or 6: every kernel of the context is emitted as this */
  cj_cache *cache;
  char device_name[8];
  /* experimental emulator subset (api_emu.c): the copied id list the
   * emulator's launch options point to */
  uint64_t *emu_wg;
  size_t emu_nwg;
};

typedef struct cj_plan_step {
  cj_step_kind kind;
  /* KERNEL */
  const cj_loaded *k;
  char name[64];
  uint32_t grid[3], block[3];
  uint32_t nargs;
  cj_bind bind[CJ_KPLAN_MAX_ARGS];
  uint16_t off[CJ_KPLAN_MAX_ARGS], size[CJ_KPLAN_MAX_ARGS];
  uint32_t kernarg_bytes;
  cj_cache_src source;
  double compile_ms;
  /* MEMSET */
  cj_bind dst;
  uint64_t memset_bytes;
} cj_plan_step;

typedef enum { CJ_PLAN_CONV = 1, CJ_PLAN_TRANSPOSE = 2 } cj_plan_op;

struct convjit_plan {
  convjit_context *ctx;
  cj_ctx_ref ctx_ref;            /* ctx's handle: checked before ctx is touched */
  cj_plan_op op;
  cj_seq seq;                    /* as selected (kernel plans, for describe) */
  cj_plan_step pack[CJ_SEQ_MAX_STEPS], fwd[CJ_SEQ_MAX_STEPS];
  uint32_t npack, nfwd;
  int fwd_uses_w_packed, has_bias;
  cj_conv_problem prob;          /* CJ_PLAN_CONV */
};

/* The values binds resolve to for one launch. */
typedef struct cj_launch_ptrs {
  const void *x, *w_raw, *w_packed, *bias;
  const void *residual, *scale; /* fused-epilogue inputs (CJ_BIND_RESIDUAL / CJ_BIND_SCALE) */
  void *y, *workspace;
} cj_launch_ptrs;

/* api.c: fills out's argument table (nargs, bind, off, size, kernarg_bytes)
 * from the code object's explicit arguments in order, matched with kp's
 * argument list and its binds; INTERNAL on any disagreement. */
convjit_status cj_plan_step_bind_args(const cj_kplan *kp, const cj_bind *bind, const cj_kernel_info *ki,
                                      cj_plan_step *out);
/* api.c: runs a step list (the only launch code). */
convjit_status cj_plan_run(const convjit_plan *p, const cj_plan_step *steps, uint32_t n, const cj_launch_ptrs *ptrs,
                           void *stream);
/* api.c: convjit_plan_create_conv with forced choices (tests, tools);
 * o NULL = all automatic. */
convjit_status cj_plan_create_conv_opts(convjit_context *ctx, const convjit_conv_desc *desc, const cj_conv_opts *o,
                                        convjit_plan **out);
/* lifetime.c: the context handle table. register gives ctx a live handle
 * (OUT_OF_MEMORY past CJ_MAX_CONTEXTS live contexts); release destroys the
 * context's remaining device events (their handles stay valid, detached)
 * and ends the handle; alive reads only the table. */
#define CJ_MAX_CONTEXTS 4096
convjit_status cj_ctx_register(convjit_context *ctx);
void cj_ctx_release(convjit_context *ctx);
int cj_ctx_alive(cj_ctx_ref r);
/* INVALID_ARG unless the plan's context is alive (every plan entry point
 * that reaches the context or its kernels checks this first). */
convjit_status cj_plan_check_ctx(const convjit_plan *p);
/* desc.c: validation + 3D normalization of a public descriptor. */
convjit_status cj_conv_desc_normalize(const convjit_conv_desc *d, cj_conv_problem *out);
convjit_status cj_check_dtype(convjit_dtype t, const char *field);
/* desc.c: the transpose descriptor's fields (the checks of
 * convjit_plan_create_transpose, for tools that plan without a context). */
convjit_status cj_transpose_desc_check(const convjit_transpose_desc *d);
/* a*b into *r; INVALID_ARG naming `what` past 2^62. */
convjit_status cj_mul_checked(int64_t a, int64_t b, int64_t *r, const char *what);
/* desc.c: a caller's struct_size is known (>= v1 size, <= ours) or VERSION. */
convjit_status cj_check_struct_size(size_t struct_size, size_t v1, size_t ours, const char *what);

#endif
