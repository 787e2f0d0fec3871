/* See support_mem.h. */
#include "support_mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "pipeline/compile.h"
#include "pipeline/build.h"

convjit_status tmem_build(const char *arch_name, const char *ir, cj_blob *co) {
  memset(co, 0, sizeof *co);
  const cj_arch *arch = cj_arch_from_name(arch_name);
  CJ_CHECK(arch, CONVJIT_ERR_INVALID_ARG, "arch %s", arch_name);
  return cj_build_ir_text(arch, ir, "test IR", co);
}

convjit_status tmem_open(tmem *t, const char *arch, const char *ir) {
  memset(t, 0, sizeof *t);
  CJ_TRY(tmem_build(arch, ir, &t->co));
  emu_options o = {sizeof o, 1, 1};
  CJ_TRY(emu_ctx_create(arch, &o, &t->ctx));
  t->mem = emu_ctx_mem(t->ctx);
  CJ_TRY(emu_module_load(t->ctx, t->co.data, t->co.size, &t->mod));
  CJ_TRY(emu_kernel_get(t->mod, "k", &t->k));
  return CONVJIT_OK;
}

void tmem_close(tmem *t) {
  emu_module_unload(t->mod);
  emu_ctx_destroy(t->ctx);
  cj_blob_free(&t->co);
  memset(t, 0, sizeof *t);
}

uint64_t tmem_buf(tmem *t, const void *src, size_t n) {
  uint64_t a = 0;
  if (emu_mem_alloc(t->mem, n, &a) != CONVJIT_OK) return 0;
  if (src && emu_mem_h2d(t->mem, a, src, n) != CONVJIT_OK) return 0;
  return a;
}

convjit_status tmem_run(tmem *t, uint32_t groups, uint32_t threads, const void *args, size_t argsz) {
  uint32_t grid[3] = {groups, 1, 1}, block[3] = {threads, 1, 1};
  return emu_launch(t->k, grid, block, args, argsz, NULL, NULL);
}

void tmem_splat(const char *T, uint32_t v, char *out, size_t n) {
  int s = (int)v;
  if (!strcmp(T, "i32")) {
    snprintf(out, n, "%d", s);
    return;
  }
  int cnt = atoi(T + 1), k = snprintf(out, n, "<");
  for (int i = 0; i < cnt && k > 0 && (size_t)k < n; i++)
    k += snprintf(out + k, n - (size_t)k, "%si32 %d", i ? ", " : "", s);
  if (k > 0 && (size_t)k < n) snprintf(out + k, n - (size_t)k, ">");
}

void tmem_dump_asm(const char *arch, const char *ir) {
  char path[] = "/tmp/tmem_XXXXXX.ll";
  int fd = mkstemps(path, 3);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "w");
  fputs(ir, f);
  fclose(f);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s/llc -mtriple=amdgcn-amd-amdhsa -mcpu=%s -O3 %s -o - | grep -v '^\\s*[.;]'",
           CJ_LLVM_BINDIR, arch, path);
  if (system(cmd) != 0) fprintf(stderr, "(llc failed)\n");
  remove(path);
}
