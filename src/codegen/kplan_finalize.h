/* Plan fields of the split-K finalize: the conv's fp32 NCDHW workspace ->
 * y = epilogue(ws) elementwise (today: + bias[k], then convert to y's type).
 * Included by kplan.h only; plan in kplan_finalize.c, kernel in
 * conv_finalize.c, the epilogue ops in epilogue.c. */
#ifndef CJ_CODEGEN_KPLAN_FINALIZE_H
#define CJ_CODEGEN_KPLAN_FINALIZE_H

#include <stdint.h>
#include "arch/arch.h"
#include "codegen/kplan_epi.h"
#include "codegen/kplan_fields.h"
#include "util/cj.h"

/* X(type, name, in_key, reason), as the conv plan's table (kplan_conv.h). */
#define CJ_FINALIZE_PLAN_FIELDS(X)                                                               \
  X(uint64_t, total, 1, "N*K*Do*Ho*Wo fp32 partial sums to finish")                              \
  X(uint64_t, odhw, 1, "Do*Ho*Wo: output channel of element i is (i / odhw) % k")                \
  X(uint32_t, k, 1, "output channels (bias index)")                                              \
  X(uint32_t, per_thread, 1, "4 when Do*Ho*Wo % 4 == 0 (vector load/store, one channel)")        \
  X(int, has_bias, 1, "the epilogue has a bias (of epi; keyed since the first kernels)")         \
  X(cj_epilogue, epi, 1, "on each element (kplan_epi.h): the conv's epilogue, done here")       \
  X(uint32_t, y_elem_bytes, 0, "bytes per y element (the epilogue's result type)")

typedef struct cj_finalize_plan {
  CJ_FINALIZE_PLAN_FIELDS(CJ_FIELD_MEMBER)
} cj_finalize_plan;

struct cj_kplan;
struct cj_conv_plan;

/* Fills p for the split-K finalize of conv plan c with the conv's fused
 * epilogue description epi (the one c's plan init took; NULL: none).
 * INVALID_ARG if c has no split-K workspace or epi is not a description. */
convjit_status cj_kplan_finalize_init(struct cj_kplan *p, const cj_arch *arch, const struct cj_conv_plan *c,
                                      const cj_epilogue *epi);

#endif
