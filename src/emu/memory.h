/* The emulator's device address space.
 *
 * Contract:
 * - Every allocation is a registered range [base, base+size) at an emulator
 *   device address (never a host pointer, never 0). Bases start at
 *   EMU_MEM_BASE, are page aligned and are never reused; one unmapped guard
 *   page separates ranges, so an access just past an allocation is caught.
 * - Three kinds of range:
 *     plain       host-allocated bytes (zero-filled at allocation);
 *     procedural  bytes computed from the offset by the caller's fill
 *                 function; nothing is stored; a write into it is an error;
 *     sink        writes are accepted anywhere; only bytes inside the
 *                 caller-chosen windows are kept (zero until written) and
 *                 can be read back; a read outside every window is an error
 *                 (the emulator never invents bytes a kernel would depend on).
 * - Lookups (emu_mem_read/write/find) are lock-free and safe from any
 *   number of host threads; registration and free take a lock and publish
 *   a new immutable snapshot of the sorted range table. Freeing a range
 *   while a launch still uses it is the caller's bug (as on a GPU).
 * - An access that is not wholly inside one range returns
 *   CONVJIT_ERR_EMULATION with the address, the kernel and the instruction
 *   offset from the caller's emu_access_ctx.
 * - Nothing here prints; nothing aborts.
 */
#ifndef CJ_EMU_MEMORY_H
#define CJ_EMU_MEMORY_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include "util/cj.h"

#define EMU_MEM_BASE 0x10000000000ull /* 2^40: fits the 48-bit V# base, far from 0 */
#define EMU_MEM_PAGE 4096ull

typedef struct emu_mem emu_mem;

/* How an out-of-allocation error names the allocation nearest below the
 * address (base, size): callers that know which buffer is which (the
 * public launch names the argument) find that text in the error. */
#define EMU_MEM_RANGE_FMT "0x%" PRIx64 " + %" PRIu64 " bytes"

/* Fills dst with the n bytes at `offset` of a procedural range. Must be
 * pure (same offset -> same bytes) and thread-safe: it is called
 * concurrently from the host threads that run workgroups. */
typedef void (*emu_fill_fn)(void *user, uint64_t offset, void *dst, size_t n);

typedef enum { EMU_RANGE_PLAIN = 1, EMU_RANGE_PROCEDURAL = 2, EMU_RANGE_SINK = 3 } emu_range_kind;

/* Who is accessing: for error text only. Any field may be NULL/0. */
typedef struct emu_access_ctx {
  const char *kernel;  /* kernel name */
  uint64_t offset;     /* byte offset of the instruction in the kernel */
  const char *insn;    /* instruction text */
  int lane;            /* lane, or -1 */
} emu_access_ctx;

typedef struct emu_sink_window {
  uint64_t off, size;  /* within the range */
  uint8_t *bytes;      /* kept bytes (owned) */
} emu_sink_window;

/* One registered range. Immutable after registration except the bytes. */
typedef struct emu_range {
  uint64_t base, size;
  emu_range_kind kind;
  uint8_t *data;             /* plain */
  emu_fill_fn fill;          /* procedural */
  void *user;                /* procedural */
  emu_sink_window *win;      /* sink: sorted by off, non-overlapping */
  uint32_t nwin;
  struct emu_range *retired_next; /* memory.c's retire list (after free) */
} emu_range;

convjit_status emu_mem_create(emu_mem **out);
void emu_mem_destroy(emu_mem *m); /* frees every range; NULL-safe */

/* Registration. size 0 gives *addr = 0 and CONVJIT_OK (like hipMalloc). */
convjit_status emu_mem_alloc(emu_mem *m, uint64_t size, uint64_t *addr);
convjit_status emu_mem_alloc_procedural(emu_mem *m, uint64_t size, emu_fill_fn fill, void *user,
                                        uint64_t *addr);
/* A sink of `size` bytes keeping the windows [off[i], off[i]+len[i]).
 * Windows must lie inside the range; overlapping windows are merged. */
convjit_status emu_mem_alloc_sink(emu_mem *m, uint64_t size, const uint64_t *off, const uint64_t *len,
                                  uint32_t nwin, uint64_t *addr);
/* Frees the range starting at addr (0 is a no-op). An address that is not
 * the base of a live range is CONVJIT_ERR_INVALID_ARG. */
convjit_status emu_mem_free(emu_mem *m, uint64_t addr);

/* The range holding [addr, addr+n), or NULL (no error text set). */
const emu_range *emu_mem_find(emu_mem *m, uint64_t addr, uint64_t n);

/* Kernel-side accesses (lock-free). Errors name ctx. */
convjit_status emu_mem_read(emu_mem *m, uint64_t addr, void *dst, size_t n, const emu_access_ctx *ctx);
convjit_status emu_mem_write(emu_mem *m, uint64_t addr, const void *src, size_t n, const emu_access_ctx *ctx);
/* Atomic f32 add at once, under the address space's atomic lock; *old (may
 * be NULL) receives the previous value. Used for atomics with return and to
 * apply logged no-return atomics in workgroup order at the end of a launch.
 * On a sink outside its windows the add is dropped and *old = 0. */
convjit_status emu_mem_atomic_add_f32(emu_mem *m, uint64_t addr, float v, float *old, const emu_access_ctx *ctx);

/* Host copies (the device backend's memcpy/memset). A procedural range
 * can be read but not written; a sink obeys its windows. */
convjit_status emu_mem_h2d(emu_mem *m, uint64_t dst, const void *src, size_t n);
convjit_status emu_mem_d2h(emu_mem *m, void *dst, uint64_t src, size_t n);
convjit_status emu_mem_memset(emu_mem *m, uint64_t dst, int value, size_t n);

/* Host pointer to n bytes of a plain range (tests, fast paths), or NULL. */
void *emu_mem_host_ptr(emu_mem *m, uint64_t addr, uint64_t n);

/* Statistics: live ranges and bytes actually held on the host. */
void emu_mem_usage(emu_mem *m, uint32_t *nranges, uint64_t *host_bytes);

#endif
