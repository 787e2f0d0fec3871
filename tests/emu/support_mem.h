/* Test support for the memory/hazard tests (emu-mem): build a kernel from
 * LLVM IR text through the project pipeline (compile.c + link.c), load it
 * into a fresh emulator context, and small device-memory helpers. */
#ifndef CJ_TESTS_EMU_SUPPORT_MEM_H
#define CJ_TESTS_EMU_SUPPORT_MEM_H

#include <stdint.h>
#include "emu/emu.h"
#include "emu/memory.h"
#include "util/cj.h"

typedef struct tmem {
  emu_ctx *ctx;
  emu_mem *mem;
  emu_module *mod;
  const emu_kernel *k;
  cj_blob co;
} tmem;

/* IR text -> code object (-O3, ld.lld). */
convjit_status tmem_build(const char *arch, const char *ir, cj_blob *co);
/* Builds ir, creates a context (hazard on, 1 thread), loads, gets kernel "k". */
convjit_status tmem_open(tmem *t, const char *arch, const char *ir);
void tmem_close(tmem *t);
/* Device buffer of n bytes holding src (or zeros if src NULL). */
uint64_t tmem_buf(tmem *t, const void *src, size_t n);
/* Launch with `args` as the explicit kernarg bytes; grid in workgroups. */
convjit_status tmem_run(tmem *t, uint32_t groups, uint32_t threads, const void *args, size_t argsz);
/* IR constant of type T ("i32" or "<N x i32>") with every element = v. */
void tmem_splat(const char *T, uint32_t v, char *out, size_t n);
/* Disassembly of the kernel, for diagnosing a failing test. */
void tmem_dump_asm(const char *arch, const char *ir);

#endif
