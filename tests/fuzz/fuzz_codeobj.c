/* libFuzzer target: the code-object reader (src/pipeline/codeobj.c) on
 * arbitrary bytes, then what the runtime does with a parsed object: kernel
 * lookup, the resource gate, the disassembly of each kernel's bytes and
 * the loader's image (segments, dynamic relocations).
 * A malformed object must be a status; a parsed one must satisfy the
 * reader's contract (checked here, abort() on a violation). Seeds: code
 * objects convjit emits (tests/fuzz/corpus/codeobj). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch/arch.h"
#include "pipeline/build.h"
#include "pipeline/codeobj.h"
#include "pipeline/disasm.h"

#define REQUIRE(c)                                                        \
  do {                                                                    \
    if (!(c)) {                                                           \
      fprintf(stderr, "fuzz_codeobj: contract broken: %s (line %d)\n", #c, __LINE__); \
      abort();                                                            \
    }                                                                     \
  } while (0)

static int count_inst(void *user, const cj_inst_text *in) {
  (void)in;
  return ++*(int *)user >= 256; /* bounded: the first 256 instructions */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cj_codeobj *co = NULL;
  convjit_status st = cj_codeobj_parse(data, size, &co);
  if (st != CONVJIT_OK) {
    REQUIRE(co == NULL && convjit_last_error()[0] != 0);
    return 0;
  }
  REQUIRE(co != NULL && co->text.size > 0 && memchr(co->target, 0, sizeof co->target));
  for (uint32_t i = 0; i < co->nkernels; i++) {
    const cj_kernel_info *k = &co->kernels[i];
    REQUIRE(memchr(k->name, 0, sizeof k->name) && memchr(k->symbol, 0, sizeof k->symbol));
    REQUIRE(k->entry_vaddr >= co->text_vaddr && k->entry_vaddr - co->text_vaddr < co->text.size);
    REQUIRE(k->code_size > 0 && k->code_size <= co->text.size - (k->entry_vaddr - co->text_vaddr));
    for (uint32_t a = 0; a < k->nargs; a++)
      REQUIRE((uint64_t)k->args[a].offset + k->args[a].size <= k->kernarg_size);
    const cj_kernel_info *f = cj_codeobj_find(co, k->name);
    REQUIRE(f != NULL && strcmp(f->name, k->name) == 0);
    (void)cj_check_resources(k, cj_arch_from_name("gfx942"));
    (void)cj_check_resources(k, cj_arch_from_name("gfx950"));
    int n = 0;
    (void)cj_disasm_kernel(co, k, count_inst, &n); /* INVALID_ARG for an unknown machine is fine */
  }
  cj_codeobj_destroy(co);
  /* The loader's view (emu_module_load): segments inside the file and the
   * image; placing it (bounded here) is a status, never a crash. */
  cj_image im;
  if (cj_image_read(data, size, &im) == CONVJIT_OK) {
    REQUIRE(im.nsegs > 0 && im.size <= CJ_IMAGE_MAX_BYTES);
    for (uint32_t i = 0; i < im.nsegs; i++) {
      const cj_image_seg *g = &im.segs[i];
      REQUIRE(g->filesz <= g->memsz && g->vaddr + g->memsz <= im.size);
      REQUIRE(g->bytes >= data && g->filesz <= size - (size_t)(g->bytes - data));
    }
    uint8_t *img = im.size <= (1u << 24) ? malloc(im.size ? im.size : 1) : NULL;
    if (img) (void)cj_image_place(&im, 1ull << 40, img);
    free(img);
    cj_image_free(&im);
  }
  return 0;
}
