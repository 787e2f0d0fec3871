/* The code object reader on good and bad input.
 *
 * Good: a two-kernel module written as IR text below, compiled and linked by
 * the pipeline; expected values come from that text (LDS array sizes, the
 * argument lists). Bad: the same bytes truncated, overwritten with garbage,
 * or with one offset or name corrupted (found here with <elf.h>, not with the
 * reader under test) -> a status naming the problem, never a crash. A random
 * byte-flip loop checks "never a crash" more broadly.
 */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "arch/arch.h"
#include "pipeline/codeobj.h"
#include "pipeline/compile.h"
#include "pipeline/build.h"

/* ka: 64 x i32 LDS (256 bytes), one pointer; kb: 128 x i64 LDS (1024 bytes),
 * a pointer and an i64. Each kernel uses only its own LDS array. */
static const char *two_kernels_ir =
    "@la = internal addrspace(3) global [64 x i32] poison, align 4\n"
    "@lb = internal addrspace(3) global [128 x i64] poison, align 8\n"
    "declare i32 @llvm.amdgcn.workitem.id.x()\n"
    "declare void @llvm.amdgcn.s.barrier()\n"
    "define amdgpu_kernel void @ka(ptr addrspace(1) %o) #0 {\n"
    "  %t = call i32 @llvm.amdgcn.workitem.id.x()\n"
    "  %p = getelementptr [64 x i32], ptr addrspace(3) @la, i32 0, i32 %t\n"
    "  store i32 %t, ptr addrspace(3) %p\n"
    "  call void @llvm.amdgcn.s.barrier()\n"
    "  %u = xor i32 %t, 3\n"
    "  %q = getelementptr [64 x i32], ptr addrspace(3) @la, i32 0, i32 %u\n"
    "  %v = load i32, ptr addrspace(3) %q\n"
    "  %g = getelementptr i32, ptr addrspace(1) %o, i32 %t\n"
    "  store i32 %v, ptr addrspace(1) %g\n"
    "  ret void\n"
    "}\n"
    "define amdgpu_kernel void @kb(ptr addrspace(1) %o, i64 %a) #1 {\n"
    "  %t = call i32 @llvm.amdgcn.workitem.id.x()\n"
    "  %p = getelementptr [128 x i64], ptr addrspace(3) @lb, i32 0, i32 %t\n"
    "  store i64 %a, ptr addrspace(3) %p\n"
    "  call void @llvm.amdgcn.s.barrier()\n"
    "  %u = xor i32 %t, 1\n"
    "  %q = getelementptr [128 x i64], ptr addrspace(3) @lb, i32 0, i32 %u\n"
    "  %v = load i64, ptr addrspace(3) %q\n"
    "  %g = getelementptr i64, ptr addrspace(1) %o, i32 %t\n"
    "  store i64 %v, ptr addrspace(1) %g\n"
    "  ret void\n"
    "}\n"
    "attributes #0 = { \"amdgpu-flat-work-group-size\"=\"1,64\" }\n"
    "attributes #1 = { \"amdgpu-flat-work-group-size\"=\"1,128\" }\n";

static cj_blob good; /* the linked code object, built once */

static int setup(void **state) {
  (void)state;
  convjit_status st = cj_build_ir_text(cj_arch_from_name("gfx950"), two_kernels_ir, "two_kernels", &good);
  if (st != CONVJIT_OK) fprintf(stderr, "build: %s\n", convjit_last_error());
  return st == CONVJIT_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  cj_blob_free(&good);
  return 0;
}

static void test_two_kernels(void **state) {
  (void)state;
  cj_codeobj *co = NULL;
  assert_int_equal(cj_codeobj_parse(good.data, good.size, &co), CONVJIT_OK);
  assert_int_equal(co->elf_mach, 0x4f); /* gfx950, llvm/BinaryFormat/ELF.h */
  assert_int_equal(co->nkernels, 2);
  const cj_kernel_info *a = cj_codeobj_find(co, "ka"), *b = cj_codeobj_find(co, "kb");
  assert_non_null(a);
  assert_non_null(b);
  assert_null(cj_codeobj_find(co, "kc"));
  assert_null(cj_codeobj_find(NULL, "ka"));
  assert_int_equal(a->group_segment_size, 64 * 4);
  assert_int_equal(b->group_segment_size, 128 * 8);
  assert_int_equal(a->max_flat_workgroup_size, 64);
  assert_int_equal(b->max_flat_workgroup_size, 128);
  assert_int_equal(a->nargs, 1);
  assert_int_equal(a->kernarg_size, 8);
  assert_int_equal(b->nargs, 2);
  assert_int_equal(b->args[1].offset, 8);
  assert_int_equal(b->args[1].size, 8);
  assert_int_equal(b->args[1].kind, CJ_ARG_BY_VALUE);
  assert_string_equal(b->args[1].name, "a");
  assert_int_equal(b->kernarg_size, 16);
  /* Two kernels: two descriptors, two entries, both in .text. */
  assert_true(a->kd_vaddr != b->kd_vaddr);
  assert_true(a->entry_vaddr != b->entry_vaddr);
  for (int i = 0; i < 2; i++) {
    const cj_kernel_info *k = i ? b : a;
    assert_true(k->entry_vaddr >= co->text_vaddr && k->entry_vaddr < co->text_vaddr + co->text.size);
  }
  cj_codeobj_destroy(co);
  cj_codeobj_destroy(NULL);
}

/* ---- corrupting the good object: offsets located with <elf.h> here ------- */

static Elf64_Ehdr ehdr_of(const uint8_t *p) {
  Elf64_Ehdr eh;
  memcpy(&eh, p, sizeof eh);
  return eh;
}

static Elf64_Shdr shdr_of(const uint8_t *p, unsigned i) {
  Elf64_Ehdr eh = ehdr_of(p);
  Elf64_Shdr sh;
  memcpy(&sh, p + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
  return sh;
}

/* Index of the first section of type t. */
static unsigned section_of_type(const uint8_t *p, uint32_t t) {
  Elf64_Ehdr eh = ehdr_of(p);
  for (unsigned i = 0; i < eh.e_shnum; i++)
    if (shdr_of(p, i).sh_type == t) return i;
  fail_msg("no section of type %u", t);
  return 0;
}

static uint8_t *copy_good(void) {
  uint8_t *p = malloc(good.size);
  assert_non_null(p);
  memcpy(p, good.data, good.size);
  return p;
}

static void expect_invalid(const uint8_t *p, size_t n, const char *needle) {
  cj_codeobj *co = (cj_codeobj *)1;
  assert_int_equal(cj_codeobj_parse(p, n, &co), CONVJIT_ERR_INVALID_ARG);
  assert_null(co);
  if (needle && !strstr(convjit_last_error(), needle))
    fail_msg("error \"%s\" does not mention \"%s\"", convjit_last_error(), needle);
}

static void test_truncated(void **state) {
  (void)state;
  expect_invalid(NULL, 100, "NULL");
  expect_invalid(good.data, 0, "shorter than an ELF64 header");
  expect_invalid(good.data, 63, "shorter than an ELF64 header");
  /* Section headers sit at the end of an lld output, so every truncation
   * loses something the reader needs. */
  for (size_t n = 64; n < good.size; n += (n < 4096 ? 1 : 61)) expect_invalid(good.data, n, NULL);
}

static void test_garbage(void **state) {
  (void)state;
  uint8_t *p = malloc(good.size);
  assert_non_null(p);
  srand(12345);
  for (size_t i = 0; i < good.size; i++) p[i] = (uint8_t)rand();
  expect_invalid(p, good.size, "bad magic");
  memcpy(p, ELFMAG, SELFMAG); /* right magic, garbage after it */
  expect_invalid(p, good.size, "EI_CLASS");
  free(p);
}

static void test_bad_header_fields(void **state) {
  (void)state;
  uint8_t *p = copy_good();
  p[EI_CLASS] = ELFCLASS32;
  expect_invalid(p, good.size, "EI_CLASS");
  p[EI_CLASS] = ELFCLASS64;
  Elf64_Ehdr eh = ehdr_of(p), bad = eh;
  bad.e_machine = EM_X86_64;
  memcpy(p, &bad, sizeof bad);
  expect_invalid(p, good.size, "e_machine");
  bad = eh;
  bad.e_shoff = good.size - 10; /* section headers run off the end */
  memcpy(p, &bad, sizeof bad);
  expect_invalid(p, good.size, "section headers");
  bad = eh;
  bad.e_shoff = UINT64_MAX - 8; /* offset + size overflows */
  memcpy(p, &bad, sizeof bad);
  expect_invalid(p, good.size, "section headers");
  bad = eh;
  bad.e_shstrndx = eh.e_shnum;
  memcpy(p, &bad, sizeof bad);
  expect_invalid(p, good.size, "e_shstrndx");
  free(p);
}

static void put_shdr(uint8_t *p, unsigned i, const Elf64_Shdr *sh) {
  Elf64_Ehdr eh = ehdr_of(p);
  memcpy(p + eh.e_shoff + (uint64_t)i * sizeof *sh, sh, sizeof *sh);
}

static void test_bad_sections_and_notes(void **state) {
  (void)state;
  uint8_t *p = copy_good();
  unsigned ni = section_of_type(p, SHT_NOTE);
  Elf64_Shdr note = shdr_of(p, ni), bad = note;
  bad.sh_offset = good.size + 100;
  put_shdr(p, ni, &bad);
  expect_invalid(p, good.size, "outside");
  put_shdr(p, ni, &note);

  /* The first note's descsz (second word of its header) claims 1 GiB. */
  uint32_t descsz = 1u << 30, old;
  memcpy(&old, p + note.sh_offset + 4, 4);
  memcpy(p + note.sh_offset + 4, &descsz, 4);
  expect_invalid(p, good.size, "overruns");
  memcpy(p + note.sh_offset + 4, &old, 4);

  /* The msgpack payload (after 12-byte header + "AMDGPU\0" padded to 8):
   * 0xc1 is the one byte msgpack never uses. */
  uint8_t *desc = p + note.sh_offset + 12 + 8;
  uint8_t save = desc[0];
  desc[0] = 0xc1;
  expect_invalid(p, good.size, "msgpack");
  desc[0] = 0x90; /* an empty array: valid msgpack, not a map */
  expect_invalid(p, good.size, "msgpack map");
  desc[0] = save;

  /* Note type 32 -> 33: no metadata note left. */
  uint32_t t = 33;
  memcpy(p + note.sh_offset + 8, &t, 4);
  expect_invalid(p, good.size, "NT_AMDGPU_METADATA");
  free(p);
}

/* Renames every "ka.kd" in the string tables: the descriptor is gone. */
static void test_missing_kd(void **state) {
  (void)state;
  uint8_t *p = copy_good();
  int renamed = 0;
  for (size_t i = 0; i + 7 <= good.size; i++)
    if (memcmp(p + i, "\0ka.kd\0", 7) == 0) { p[i + 5] = 'x'; renamed++; }
  assert_true(renamed >= 1);
  expect_invalid(p, good.size, "ka.kd not found");
  free(p);
}

/* The descriptor's entry offset (kd + 16) points outside .text. */
static void test_bad_entry(void **state) {
  (void)state;
  cj_codeobj *co = NULL;
  assert_int_equal(cj_codeobj_parse(good.data, good.size, &co), CONVJIT_OK);
  uint64_t kd_vaddr = cj_codeobj_find(co, "kb")->kd_vaddr;
  cj_codeobj_destroy(co);
  uint8_t *p = copy_good();
  /* File offset of the kd: through the section that holds its address. */
  Elf64_Ehdr eh = ehdr_of(p);
  size_t off = 0;
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh = shdr_of(p, i);
    if (sh.sh_addr && kd_vaddr >= sh.sh_addr && kd_vaddr < sh.sh_addr + sh.sh_size)
      off = sh.sh_offset + (kd_vaddr - sh.sh_addr);
  }
  assert_true(off != 0);
  int64_t rel = -(int64_t)kd_vaddr - 4096;
  memcpy(p + off + 16, &rel, 8);
  expect_invalid(p, good.size, "outside .text");
  free(p);
}

/* Random corruption: any status is fine, a crash or a leak is not. Every
 * other round flips bytes of the metadata note only, to reach the msgpack
 * decoding with bad lengths and types. */
static void test_random_flips(void **state) {
  (void)state;
  uint8_t *p = malloc(good.size);
  assert_non_null(p);
  Elf64_Shdr note = shdr_of(good.data, section_of_type(good.data, SHT_NOTE));
  srand(777);
  int ok = 0;
  for (int it = 0; it < 4000; it++) {
    memcpy(p, good.data, good.size);
    int flips = 1 + rand() % 4;
    size_t base = it % 2 ? note.sh_offset : 0, span = it % 2 ? note.sh_size : good.size;
    for (int f = 0; f < flips; f++) p[base + (size_t)rand() % span] ^= (uint8_t)(1 + rand() % 255);
    cj_codeobj *co = NULL;
    convjit_status st = cj_codeobj_parse(p, good.size, &co);
    if (st == CONVJIT_OK) {
      ok++;
      assert_non_null(co);
      for (uint32_t k = 0; k < co->nkernels; k++) {
        const cj_kernel_info *ki = &co->kernels[k];
        assert_true(ki->entry_vaddr >= co->text_vaddr && ki->entry_vaddr < co->text_vaddr + co->text.size);
        for (uint32_t a = 0; a < ki->nargs; a++)
          assert_true((uint64_t)ki->args[a].offset + ki->args[a].size <= ki->kernarg_size);
      }
    } else {
      assert_int_equal(st, CONVJIT_ERR_INVALID_ARG);
      assert_null(co);
    }
    cj_codeobj_destroy(co);
  }
  assert_true(ok > 0); /* most flips land in padding or code bytes */
  free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_two_kernels),
    cmocka_unit_test(test_truncated),
    cmocka_unit_test(test_garbage),
    cmocka_unit_test(test_bad_header_fields),
    cmocka_unit_test(test_bad_sections_and_notes),
    cmocka_unit_test(test_missing_kd),
    cmocka_unit_test(test_bad_entry),
    cmocka_unit_test(test_random_flips),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
