/* The two ways of linking a code object (src/pipeline/link.c): in process
 * through liblld, and a spawned ld.lld ($CONVJIT_LLD naming the configured
 * binary selects it).
 *
 *   same bytes      every kernel of the default conv plan of the first
 *                   headline shape (weight pack, transpose, conv), bf16
 *                   and the arch's native fp8, both arches: the code object
 *                   linked in process equals the spawned linker's, byte
 *                   for byte (the second computation is the other linker
 *                   process, not the code under test);
 *   key names it    the cache key's linker line says which path made it;
 *   bad objects     truncated or corrupted ELF objects (lld would stop the
 *                   process on them) return CONVJIT_ERR_COMPILE from the
 *                   in-process path, the process lives on, no temp file
 *                   stays behind; the spawned linker refuses them too.
 * A build without liblld has one path only: the tests print SKIP.
 */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <llvm-c/Core.h>
#include "arch/arch.h"
#include "codegen/codegen.h"
#include "host/select.h"
#include "pipeline/build.h"
#include "pipeline/compile.h"
#include "pipeline/link.h"
#include "support_select.h"

#ifndef CJ_HAVE_LIBLLD
#define NEEDS_LIBLLD()                                                              \
  do {                                                                              \
    printf("SKIP: built without liblld (liblld-22-dev): only the spawned ld.lld\n"); \
    skip();                                                                         \
  } while (0)
#else
#define NEEDS_LIBLLD() ((void)0)
#endif

static void use_spawn(int on) {
  if (on) setenv("CONVJIT_LLD", CJ_LLD_PATH, 1);
  else unsetenv("CONVJIT_LLD");
  assert_int_equal(cj_lld_in_process(), !on);
}

static void test_same_bytes(void **state) {
  (void)state;
  NEEDS_LIBLLD();
  static cj_seq seq; /* large: not on the stack */
  int na = 0, nkernels = 0;
  const cj_arch *const *archs = cj_arch_list(&na);
  for (int a = 0; a < na; a++) {
    const convjit_dtype fp8 = !strcmp(archs[a]->name, "gfx942") ? CONVJIT_DTYPE_FP8_E4M3FNUZ : CONVJIT_DTYPE_FP8_E4M3FN;
    const convjit_dtype dts[2] = {CONVJIT_DTYPE_BF16, fp8};
    for (int d = 0; d < 2; d++) {
      cj_conv_geom g;
      ts_headline_geom(0, dts[d], &g);
      ts_select_seq(archs[a], &g, 1, NULL, &seq);
      const cj_step_list *lists[2] = {&seq.pack, &seq.fwd};
      for (int l = 0; l < 2; l++)
        for (uint32_t i = 0; i < lists[l]->nsteps; i++) {
          const cj_step *s = &lists[l]->step[i];
          if (s->kind != CJ_STEP_KERNEL) continue;
          cj_built in = {0}, sp = {0};
          use_spawn(0);
          assert_int_equal(cj_build_kernel(&s->plan, 0, &in), CONVJIT_OK);
          use_spawn(1);
          assert_int_equal(cj_build_kernel(&s->plan, 0, &sp), CONVJIT_OK);
          use_spawn(0);
          if (in.code_object.size != sp.code_object.size ||
              memcmp(in.code_object.data, sp.code_object.data, in.code_object.size))
            fail_msg("%s on %s: in-process code object (%zu bytes) differs from ld.lld's (%zu bytes)", s->plan.name,
                     archs[a]->name, in.code_object.size, sp.code_object.size);
          cj_built_free(&in);
          cj_built_free(&sp);
          nkernels++;
        }
    }
  }
  assert_true(nkernels >= 2 * 2 * 3); /* pack, transpose, conv per arch and dtype */
}

static void test_version_line(void **state) {
  (void)state;
  NEEDS_LIBLLD();
  char in[256], sp[256];
  use_spawn(0);
  cj_lld_version(in, sizeof in);
  assert_non_null(strstr(in, " (liblld, in process)"));
  assert_non_null(strstr(in, "LLD 22."));
  char id[64];
  assert_int_equal(cj_lld_identity(id, sizeof id), -1); /* no binary to memoize */
  use_spawn(1);
  cj_lld_version(sp, sizeof sp);
  use_spawn(0);
  assert_null(strstr(sp, "liblld"));
  assert_non_null(strstr(sp, "LLD 22."));
}

/* No temp file stayed behind: an empty directory can be removed (made again after). */
static void assert_empty_dir(const char *path) {
  assert_int_equal(rmdir(path), 0);
  assert_int_equal(mkdir(path, 0700), 0);
}

/* A real relocatable object: the gfx942 transpose kernel, compiled only. */
static void real_object(cj_blob *obj) {
  static cj_seq seq;
  assert_int_equal(cj_select_transpose(2, 24, 1000, CONVJIT_DTYPE_BF16, cj_arch_from_name("gfx942"), &seq), CONVJIT_OK);
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = NULL;
  assert_int_equal(cj_codegen_build(&seq.fwd.step[0].plan, c, &m), CONVJIT_OK);
  cj_compile_out co;
  assert_int_equal(cj_compile_module(m, cj_arch_from_name("gfx942"), 0, 0, &co), CONVJIT_OK);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  *obj = co.object;
  co.object = (cj_blob){0};
  cj_compile_out_free(&co);
}

/* The section header of the first section of type t. */
static Elf64_Shdr *section_of(uint8_t *p, uint32_t t) {
  Elf64_Ehdr *eh = (Elf64_Ehdr *)p;
  for (int i = 0; i < eh->e_shnum; i++) {
    Elf64_Shdr *sh = (Elf64_Shdr *)(p + eh->e_shoff + (size_t)i * eh->e_shentsize);
    if (sh->sh_type == t) return sh;
  }
  return NULL;
}

enum { BAD_TRUNC_HEADER, BAD_TRUNC_HALF, BAD_TRUNC_LAST, BAD_SHOFF, BAD_SHNUM, BAD_SECTION_OFFSET,
       BAD_SYMBOL_NAME, BAD_RELOC_SYMBOL, BAD_N };
static const char *BAD_NAME[BAD_N] = {"truncated to 40 bytes", "truncated to half", "last byte cut",
                                      "e_shoff past the end", "e_shnum 60000", "strtab offset past the end",
                                      "symbol name past its strtab", "relocation symbol 100000"};

/* The object with one defect; 0 if the object has no part to break. */
static int corrupt(const cj_blob *obj, int what, cj_blob *out) {
  assert_int_equal(cj_blob_set(out, obj->data, obj->size), CONVJIT_OK);
  uint8_t *p = (uint8_t *)out->data;
  Elf64_Ehdr *eh = (Elf64_Ehdr *)p;
  Elf64_Shdr *sh;
  switch (what) {
  case BAD_TRUNC_HEADER: out->size = 40; return 1;
  case BAD_TRUNC_HALF: out->size = obj->size / 2; return 1;
  case BAD_TRUNC_LAST: out->size = obj->size - 1; return 1;
  case BAD_SHOFF: eh->e_shoff = obj->size + 4096; return 1;
  case BAD_SHNUM: eh->e_shnum = 60000; return 1;
  case BAD_SECTION_OFFSET:
    if (!(sh = section_of(p, SHT_STRTAB))) return 0;
    sh->sh_offset = obj->size + 4096;
    return 1;
  case BAD_SYMBOL_NAME: {
    if (!(sh = section_of(p, SHT_SYMTAB)) || sh->sh_size < 2 * sizeof(Elf64_Sym)) return 0;
    Elf64_Sym *sym = (Elf64_Sym *)(p + sh->sh_offset) + 1;
    sym->st_name = 0x7fffffff;
    return 1;
  }
  case BAD_RELOC_SYMBOL: {
    if (!(sh = section_of(p, SHT_RELA)) || sh->sh_size < sizeof(Elf64_Rela)) return 0;
    Elf64_Rela *r = (Elf64_Rela *)(p + sh->sh_offset);
    r->r_info = ELF64_R_INFO(100000, ELF64_R_TYPE(r->r_info));
    return 1;
  }
  }
  return 0;
}

static void test_bad_objects(void **state) {
  (void)state;
  NEEDS_LIBLLD();
  char tmp[] = "/tmp/cj-test-linkpaths-XXXXXX";
  assert_non_null(mkdtemp(tmp));
  const char *old_tmp = getenv("TMPDIR");
  char *saved = old_tmp ? strdup(old_tmp) : NULL;
  setenv("TMPDIR", tmp, 1);
  cj_blob obj = {0}, code = {0};
  real_object(&obj);
  use_spawn(0);
  assert_int_equal(cj_link_code_object(&obj, &code), CONVJIT_OK); /* the intact object links */
  cj_blob_free(&code);
  int broken = 0;
  for (int what = 0; what < BAD_N; what++) {
    cj_blob bad = {0};
    if (!corrupt(&obj, what, &bad)) {
      cj_blob_free(&bad);
      continue;
    }
    for (int spawn = 0; spawn < 2; spawn++) {
      use_spawn(spawn);
      convjit_status st = cj_link_code_object(&bad, &code);
      if (st != CONVJIT_ERR_COMPILE)
        fail_msg("%s, %s: status %d, want CONVJIT_ERR_COMPILE", BAD_NAME[what], spawn ? "spawned" : "in process", st);
      assert_null(code.data);
      assert_empty_dir(tmp);
    }
    use_spawn(0);
    cj_blob_free(&bad);
    broken++;
  }
  assert_int_equal(broken, BAD_N); /* the transpose object has a symtab, a strtab and relocations */
  /* still linking in process afterwards */
  assert_int_equal(cj_link_code_object(&obj, &code), CONVJIT_OK);
  assert_int_equal(cj_lld_in_process(), 1);
  cj_blob_free(&code);
  cj_blob_free(&obj);
  if (saved) setenv("TMPDIR", saved, 1); else unsetenv("TMPDIR");
  free(saved);
  rmdir(tmp);
}

int main(void) {
  unsetenv("CONVJIT_LLD");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_line),
      cmocka_unit_test(test_bad_objects),
      cmocka_unit_test(test_same_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
