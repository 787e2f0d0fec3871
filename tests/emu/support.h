/* Test support for the emu-core tests: exact-instruction kernels written in
 * assembly (llvm-mc-22 + ld.lld-22), run on a fresh emulator context, with
 * the final register state of one wave captured for checking.
 * IR-text kernels are built with tmem_build (support_mem.h). */
#ifndef CJ_TESTS_EMU_SUPPORT_H
#define CJ_TESTS_EMU_SUPPORT_H

#include <stdint.h>
#include "emu/emu.h"
#include "emu/emu_internal.h"
#include "emu/memory.h"
#include "util/cj.h"

/* A kernel "k" whose text is `body` followed by s_endpgm. The kernel gets
 * the kernarg pointer in s[0:1], workgroup id x in s2 (y in s3, z in s4 if
 * dims > 1), v0 = packed work-item ids, `kernarg_bytes` of explicit args
 * (one global_buffer at 0 when >= 8, the rest by_value) and `lds_bytes` of LDS. */
convjit_status tb_asm_build(const char *arch, const char *body, unsigned kernarg_bytes, unsigned lds_bytes,
                            cj_blob *co);

typedef struct tb_run {
  emu_ctx *ctx;
  emu_module *mod;
  const emu_kernel *k;
  emu_wave *wave;   /* final state of the captured wave (heap, sizeof(emu_wave)) */
  emu_stats stats;
} tb_run;

/* Builds, loads and launches: grid of `groups` workgroups (x) of `threads`
 * threads; captures wave `wave` of workgroup 0. args may be NULL. */
convjit_status tb_asm_run(tb_run *r, const char *arch, const char *body, uint32_t groups, uint32_t threads,
                          const void *args, unsigned argsz, unsigned lds_bytes, uint32_t wave);
void tb_run_free(tb_run *r);

/* The whole file at path into out (free out->data); IO error naming it. For
 * the hand-written code objects tests/convjit_emu.cmake builds into
 * <build>/emu-kernels/<name>.<arch>.co. */
convjit_status tb_read_file(const char *path, cj_blob *out);

/* Fills r->ctx etc. from an already-built code object and kernel name; no launch. */
convjit_status tb_load(tb_run *r, const char *arch, const cj_blob *co, const char *kernel);

#endif
