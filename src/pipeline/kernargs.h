/* The one kernel-argument packer (docs/pipeline.md, "Kernel arguments").
 *
 * A kernel's explicit arguments are its metadata's non-hidden ones
 * (cj_kernel_arg_is_explicit), in metadata order; a launcher gives one
 * value per explicit argument, in that order. Each value goes at its
 * metadata offset with its metadata size (little-endian: an integer's low
 * bytes), every other byte up to the end of the last explicit argument is
 * zero, and the hidden arguments are the runtime's (HIP's, or the
 * emulator's dispatch) to fill. Every launcher uses these two steps:
 *
 *   cj_kernargs_layout  reads the layout from the metadata once, checked:
 *                       with a plan, the code object must fit it (as many
 *                       explicit arguments as the plan lists, each of the
 *                       plan's size, a pointer 8 bytes); every argument
 *                       ends within the caller's buffer. The runtime cache
 *                       runs it when it loads a kernel (cj_loaded.arg), so
 *                       plans launch with offsets computed at creation.
 *   cj_kernargs_write   writes values into a buffer: no allocation, no
 *                       lock (the hot launch path); a missing value is
 *                       INVALID_ARG naming the argument.
 *
 * Users: the API's launch path (host/api.c, through the cache's layout),
 * the emulator module API (host/api_emu_module.c, values by name), and
 * cj_kernargs_pack (values by role: the bounds model, tools, tests). */
#ifndef CJ_PIPELINE_KERNARGS_H
#define CJ_PIPELINE_KERNARGS_H

#include <string.h>
#include "codegen/kplan.h"
#include "pipeline/codeobj.h"

/* Explicit kernarg bytes a convjit kernel may use: a launch packs them in
 * a stack buffer of this size (a conv has at most a dozen 8-byte ones). */
#define CJ_KERNARG_MAX 512

typedef struct cj_kernarg_slot {
  uint32_t meta;         /* index in cj_kernel_info.args */
  uint32_t offset, size; /* bytes in the explicit kernarg segment */
} cj_kernarg_slot;

/* The explicit arguments of ki in metadata order into slot[0..*n) (at most
 * max of them) and the end of the last one into *bytes. With p (may be
 * NULL) the code object must fit p: INTERNAL "kernel <name>: argument <i>
 * (<name>) is <size> bytes at offset <off> in the code object, plan says
 * <size>" (or a count that differs) otherwise. An argument ending past cap
 * bytes, or more than max explicit arguments, is INTERNAL too. */
convjit_status cj_kernargs_layout(const cj_kernel_info *ki, const cj_kplan *p, uint32_t cap, cj_kernarg_slot *slot,
                                  uint32_t max, uint32_t *n, uint32_t *bytes);

/* Zeroes ka[0..bytes) and writes value i (val[i]: at least slot[i].size
 * bytes) at slot[i].offset, i < n. A NULL val[i] is INVALID_ARG: "argument
 * '<name>' (#<i>, <value kind>, <size> bytes at offset <off>) of kernel
 * <name> is not given" (ka then holds the values before it). */
static inline convjit_status cj_kernargs_write(const cj_kernel_info *ki, const cj_kernarg_slot *slot, uint32_t n,
                                               uint32_t bytes, const void *const *val, uint8_t *ka);
/* cj_kernargs_write's error for argument i. */
convjit_status cj_kernargs_missing(const cj_kernel_info *ki, const cj_kernarg_slot *slot, uint32_t i);

/* Inline: the launch path of every plan step runs it (a call and its
 * argument set-up cost as much as the copies). */
static inline convjit_status cj_kernargs_write(const cj_kernel_info *ki, const cj_kernarg_slot *slot, uint32_t n,
                                               uint32_t bytes, const void *const *val, uint8_t *ka) {
  memset(ka, 0, bytes);
  for (uint32_t i = 0; i < n; i++) {
    if (!val[i]) return cj_kernargs_missing(ki, slot, i);
    memcpy(ka + slot[i].offset, val[i], slot[i].size); /* little-endian: an integer's low bytes */
  }
  return CONVJIT_OK;
}

/* Plan p's explicit arguments by role, for launchers that bypass the API's
 * binding (the bounds model, tools and tests on the emulator): layout of ki
 * against p within cap bytes, then argument i gets role_val[its role] (a
 * device address, or a by-value argument's bits in the low bytes), which
 * must be set in have (bit = role). ka (cap bytes) is written as
 * cj_kernargs_write does. */
convjit_status cj_kernargs_pack(const cj_kplan *p, const cj_kernel_info *ki, const uint64_t role_val[CJ_ARG_ROLE_COUNT],
                                uint32_t have, uint8_t *ka, size_t cap);

#endif
