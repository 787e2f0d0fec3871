/* The build pipeline on a hand-built kernel: LLVM C API module -> compile
 * (-O3) -> ld.lld -> code object metadata, for gfx942 and gfx950.
 *
 * The kernel is written here, independently of src/codegen, so every expected
 * value comes from its signature and the LDS array it declares:
 *   tiny(ptr addrspace(1) out, i32 n, ptr addrspace(1) in, float f)
 *     lds[tid] = n + in[tid];  barrier;  out[tid] = lds[tid ^ 1] + (int)f
 * with lds = [TINY_LDS_WORDS x i32] in addrspace(3). The "hidden" variant
 * also adds the work-group size read from the implicit arguments, so the
 * hidden kernargs must appear; without it -O3 proves they are unused
 * ("amdgpu-no-implicitarg-ptr") and the segment holds the explicit ones only.
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <llvm-c/Core.h>
#include "arch/arch.h"
#include "pipeline/codeobj.h"
#include "pipeline/compile.h"
#include "pipeline/link.h"

#define TINY_LDS_WORDS 750 /* 3000 bytes: not a power of two, so rounding would show */
#define TINY_NAME "cj_tiny"

static LLVMValueRef intrinsic(LLVMModuleRef m, const char *name) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  assert_true(id != 0);
  return LLVMGetIntrinsicDeclaration(m, id, NULL, 0);
}

enum { TINY_OK = 0, TINY_BROKEN = 1, TINY_HIDDEN = 2 };

/* lds_words: size of the LDS array; TINY_BROKEN: leave the entry block
 * without a terminator (an invalid module); TINY_HIDDEN: read group_size_x
 * from the hidden arguments. */
static LLVMModuleRef tiny_module(LLVMContextRef c, unsigned lds_words, int variant) {
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("tiny", c);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c), f32 = LLVMFloatTypeInContext(c);
  LLVMTypeRef gptr = LLVMPointerTypeInContext(c, 1);
  LLVMTypeRef params[4] = {gptr, i32, gptr, f32};
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), params, 4, 0);
  LLVMValueRef fn = LLVMAddFunction(m, TINY_NAME, fty);
  LLVMSetFunctionCallConv(fn, LLVMAMDGPUKERNELCallConv);
  const char *k = "amdgpu-flat-work-group-size", *v = "1,256";
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(c, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
  const char *names[4] = {"out", "n", "in", "f"};
  for (unsigned i = 0; i < 4; i++) LLVMSetValueName2(LLVMGetParam(fn, i), names[i], strlen(names[i]));

  LLVMTypeRef arr = LLVMArrayType2(i32, lds_words);
  LLVMValueRef lds = LLVMAddGlobalInAddressSpace(m, arr, "tiny_lds", 3);
  LLVMSetInitializer(lds, LLVMGetPoison(arr));
  LLVMSetLinkage(lds, LLVMInternalLinkage);
  LLVMSetAlignment(lds, 16);

  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, fn, "entry"));
  LLVMValueRef tid_fn = intrinsic(m, "llvm.amdgcn.workitem.id.x");
  LLVMValueRef tid = LLVMBuildCall2(b, LLVMGlobalGetValueType(tid_fn), tid_fn, NULL, 0, "tid");
  LLVMValueRef pin = LLVMBuildInBoundsGEP2(b, i32, LLVMGetParam(fn, 2), &tid, 1, "");
  LLVMValueRef x = LLVMBuildAdd(b, LLVMBuildLoad2(b, i32, pin, ""), LLVMGetParam(fn, 1), "");
  LLVMValueRef idx0[2] = {LLVMConstInt(i32, 0, 0), tid};
  LLVMBuildStore(b, x, LLVMBuildInBoundsGEP2(b, arr, lds, idx0, 2, ""));
  if (variant == TINY_BROKEN) return LLVMDisposeBuilder(b), m;
  LLVMValueRef bar = intrinsic(m, "llvm.amdgcn.s.barrier");
  LLVMBuildCall2(b, LLVMGlobalGetValueType(bar), bar, NULL, 0, "");
  LLVMValueRef idx1[2] = {LLVMConstInt(i32, 0, 0), LLVMBuildXor(b, tid, LLVMConstInt(i32, 1, 0), "")};
  LLVMValueRef y = LLVMBuildLoad2(b, i32, LLVMBuildInBoundsGEP2(b, arr, lds, idx1, 2, ""), "");
  y = LLVMBuildAdd(b, y, LLVMBuildFPToSI(b, LLVMGetParam(fn, 3), i32, ""), "");
  if (variant == TINY_HIDDEN) {
    LLVMValueRef ia = intrinsic(m, "llvm.amdgcn.implicitarg.ptr");
    LLVMValueRef ip = LLVMBuildCall2(b, LLVMGlobalGetValueType(ia), ia, NULL, 0, "");
    LLVMValueRef off = LLVMConstInt(i32, 12, 0); /* hidden group_size_x (docs/isa-notes.md §5) */
    LLVMTypeRef i8 = LLVMInt8TypeInContext(c), i16 = LLVMInt16TypeInContext(c);
    LLVMValueRef gs = LLVMBuildLoad2(b, i16, LLVMBuildInBoundsGEP2(b, i8, ip, &off, 1, ""), "");
    y = LLVMBuildAdd(b, y, LLVMBuildZExt(b, gs, i32, ""), "");
  }
  LLVMBuildStore(b, y, LLVMBuildInBoundsGEP2(b, i32, LLVMGetParam(fn, 0), &tid, 1, ""));
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return m;
}

/* Compiles and links the tiny kernel for arch in a fresh context. */
static convjit_status tiny_build_v(const cj_arch *arch, unsigned lds_words, int variant, int want_text,
                                   cj_compile_out *co, cj_blob *code) {
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = tiny_module(c, lds_words, variant);
  convjit_status st = cj_compile_module(m, arch, want_text, want_text, co);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  if (st == CONVJIT_OK) st = cj_link_code_object(&co->object, code);
  return st;
}

static convjit_status tiny_build(const cj_arch *arch, unsigned lds_words, int want_text, cj_compile_out *co,
                                 cj_blob *code) {
  return tiny_build_v(arch, lds_words, TINY_OK, want_text, co, code);
}

static const cj_kernel_arg *arg_of_kind(const cj_kernel_info *k, const char *vk) {
  for (uint32_t i = 0; i < k->nargs; i++)
    if (strcmp(k->args[i].value_kind, vk) == 0) return &k->args[i];
  return NULL;
}

static void check_tiny_metadata(const cj_arch *arch, const cj_codeobj *co, int hidden) {
  assert_int_equal(co->elf_mach, arch->elf_mach);
  /* ELF e_flags mach values from llvm/BinaryFormat/ELF.h, written here by hand. */
  assert_int_equal(co->elf_mach, strcmp(arch->name, "gfx942") == 0 ? 0x4c : 0x4f);
  char target[64];
  snprintf(target, sizeof target, "amdgcn-amd-amdhsa--%s", arch->name);
  assert_true(strncmp(co->target, target, strlen(target)) == 0);
  assert_int_equal(co->nkernels, 1);
  const cj_kernel_info *k = cj_codeobj_find(co, TINY_NAME);
  assert_non_null(k);
  assert_null(cj_codeobj_find(co, "cj_tin"));
  assert_string_equal(k->symbol, TINY_NAME ".kd");
  assert_int_equal(k->group_segment_size, TINY_LDS_WORDS * 4);
  assert_int_equal(k->private_segment_size, 0);
  assert_int_equal(k->wavefront_size, 64);
  assert_int_equal(k->max_flat_workgroup_size, 256);
  assert_int_equal(k->vgpr_spill_count, 0);
  assert_int_equal(k->sgpr_spill_count, 0);
  assert_false(k->uses_dynamic_stack);
  assert_true(k->vgpr_count >= 1 && k->vgpr_count <= 512);
  assert_true(k->sgpr_count >= 1 && k->sgpr_count <= 112);
  /* Explicit arguments: C layout of (ptr, i32, ptr, float) with natural alignment. */
  assert_true(k->nargs >= 4);
  static const struct { const char *name, *vk; uint32_t off, size; } want[4] = {
    {"out", "global_buffer", 0, 8}, {"n", "by_value", 8, 4}, {"in", "global_buffer", 16, 8}, {"f", "by_value", 24, 4}};
  for (int i = 0; i < 4; i++) {
    assert_string_equal(k->args[i].name, want[i].name);
    assert_string_equal(k->args[i].value_kind, want[i].vk);
    assert_int_equal(k->args[i].offset, want[i].off);
    assert_int_equal(k->args[i].size, want[i].size);
    assert_int_equal(k->args[i].kind, i % 2 == 0 ? CJ_ARG_GLOBAL_BUFFER : CJ_ARG_BY_VALUE);
  }
  if (!hidden) {
    /* Nothing reads the implicit arguments: the segment ends at f (24 + 4). */
    assert_int_equal(k->nargs, 4);
    assert_int_equal(k->kernarg_size, 28);
  } else {
    /* Hidden arguments start at the first 8-aligned offset after the explicit
     * ones (28 -> 32) and take 256 bytes in code object v5/v6 (AMDGPUUsage). */
    const cj_kernel_arg *bx = arg_of_kind(k, "hidden_block_count_x");
    assert_non_null(bx);
    assert_int_equal(bx->offset, 32);
    assert_int_equal(bx->kind, CJ_ARG_HIDDEN_BLOCK_COUNT_X);
    const cj_kernel_arg *gx = arg_of_kind(k, "hidden_group_size_x");
    assert_non_null(gx);
    assert_int_equal(gx->offset, 32 + 12);
    assert_int_equal(gx->size, 2);
    assert_int_equal(gx->kind, CJ_ARG_HIDDEN_GROUP_SIZE_X);
    assert_int_equal(k->kernarg_size, 32 + 256);
  }
  assert_int_equal(k->kernarg_align, 8);
  /* Kernel descriptor: group segment at offset 0 and kernarg size at offset 8
   * repeat the metadata; the entry point lies inside .text, 256-aligned. */
  uint32_t kd_group, kd_kernarg;
  memcpy(&kd_group, k->kd + 0, 4);
  memcpy(&kd_kernarg, k->kd + 8, 4);
  assert_int_equal(kd_group, TINY_LDS_WORDS * 4);
  assert_int_equal(kd_kernarg, k->kernarg_size);
  assert_true(k->entry_vaddr >= co->text_vaddr && k->entry_vaddr < co->text_vaddr + co->text.size);
  assert_int_equal(k->entry_vaddr % 256, 0);
  assert_true(k->kd_vaddr != 0);
}

static void test_tiny_both_archs(void **state) {
  (void)state;
  int n = 0;
  const cj_arch *const *archs = cj_arch_list(&n);
  assert_int_equal(n, 2);
  for (int i = 0; i < 2 * n; i++) {
    const cj_arch *a = archs[i / 2];
    int hidden = i % 2;
    cj_compile_out co;
    cj_blob code = {0};
    assert_int_equal(tiny_build_v(a, TINY_LDS_WORDS, hidden ? TINY_HIDDEN : TINY_OK, 1, &co, &code), CONVJIT_OK);
    assert_true(co.ms > 0);
    /* The optimized IR still names the kernel; the ISA uses LDS and the barrier. */
    assert_non_null(strstr((const char *)co.opt_ir.data, "define amdgpu_kernel void @" TINY_NAME));
    assert_non_null(strstr((const char *)co.asm_text.data, "ds_write"));
    assert_non_null(strstr((const char *)co.asm_text.data, "ds_read"));
    assert_non_null(strstr((const char *)co.asm_text.data, "s_barrier"));
    cj_codeobj *obj = NULL;
    assert_int_equal(cj_codeobj_parse(code.data, code.size, &obj), CONVJIT_OK);
    check_tiny_metadata(a, obj, hidden);
    cj_codeobj_destroy(obj);
    cj_compile_out_free(&co);
    cj_blob_free(&code);
  }
}

/* Same module twice, fresh contexts -> byte-identical code objects (the
 * cache and its integrity hash rely on this). */
static void test_deterministic(void **state) {
  (void)state;
  const cj_arch *a = cj_arch_from_name("gfx950");
  cj_compile_out c1, c2;
  cj_blob o1 = {0}, o2 = {0};
  assert_int_equal(tiny_build(a, TINY_LDS_WORDS, 0, &c1, &o1), CONVJIT_OK);
  assert_int_equal(tiny_build(a, TINY_LDS_WORDS, 0, &c2, &o2), CONVJIT_OK);
  assert_int_equal(o1.size, o2.size);
  assert_memory_equal(o1.data, o2.data, o1.size);
  assert_int_equal(c1.object.size, c2.object.size);
  assert_memory_equal(c1.object.data, c2.object.data, c1.object.size);
  cj_compile_out_free(&c1);
  cj_compile_out_free(&c2);
  cj_blob_free(&o1);
  cj_blob_free(&o2);
}

/* Two threads compile at once (first use of LLVM included): same bytes. */
typedef struct { cj_compile_out co; cj_blob code; convjit_status st; } thr_res;
static void *thr_build(void *p) {
  thr_res *r = p;
  r->st = tiny_build(cj_arch_from_name("gfx942"), TINY_LDS_WORDS, 0, &r->co, &r->code);
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  thr_res r[2] = {0};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, thr_build, &r[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 2; i++) assert_int_equal(r[i].st, CONVJIT_OK);
  assert_int_equal(r[0].code.size, r[1].code.size);
  assert_memory_equal(r[0].code.data, r[1].code.data, r[0].code.size);
  for (int i = 0; i < 2; i++) {
    cj_compile_out_free(&r[i].co);
    cj_blob_free(&r[i].code);
  }
}

static void test_invalid_module(void **state) {
  (void)state;
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = tiny_module(c, TINY_LDS_WORDS, TINY_BROKEN);
  cj_compile_out co;
  assert_int_equal(cj_compile_module(m, cj_arch_from_name("gfx942"), 1, 1, &co), CONVJIT_ERR_INTERNAL);
  assert_non_null(strstr(convjit_last_error(), "invalid"));
  assert_null(co.object.data);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  assert_int_equal(cj_compile_module(NULL, cj_arch_from_name("gfx942"), 0, 0, &co), CONVJIT_ERR_INVALID_ARG);
}

/* LDS beyond the arch limit is a backend error: a status, not exit(1). */
static void test_lds_over_limit(void **state) {
  (void)state;
  int n = 0;
  const cj_arch *const *archs = cj_arch_list(&n);
  for (int i = 0; i < n; i++) {
    cj_compile_out co;
    cj_blob code = {0};
    unsigned words = archs[i]->lds_bytes / 4 + 1024; /* 4 KiB over the limit */
    assert_int_equal(tiny_build(archs[i], words, 0, &co, &code), CONVJIT_ERR_COMPILE);
    assert_non_null(strstr(convjit_last_error(), "local memory"));
    assert_null(code.data);
  }
}

static int dir_entries(const char *path) {
  DIR *d = opendir(path);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

/* Linker failures surface the linker's words; temp files never stay behind. */
static void test_link_failures(void **state) {
  (void)state;
  char tmp[] = "/tmp/cj-test-link-XXXXXX";
  assert_non_null(mkdtemp(tmp));
  const char *old_tmp = getenv("TMPDIR");
  char *saved = old_tmp ? strdup(old_tmp) : NULL;
  setenv("TMPDIR", tmp, 1);

  cj_compile_out co;
  cj_blob code = {0};
  assert_int_equal(tiny_build(cj_arch_from_name("gfx942"), TINY_LDS_WORDS, 0, &co, &code), CONVJIT_OK);
  assert_int_equal(dir_entries(tmp), 0);
  cj_blob_free(&code);

  /* Not an object: ld.lld itself explains. */
  cj_blob junk = {0};
  assert_int_equal(cj_blob_set(&junk, "this is not an ELF object", 25), CONVJIT_OK);
  assert_int_equal(cj_link_code_object(&junk, &code), CONVJIT_ERR_COMPILE);
  assert_non_null(strstr(convjit_last_error(), "error:"));
  assert_null(code.data);
  assert_int_equal(dir_entries(tmp), 0);

  setenv("CONVJIT_LLD", "/bin/false", 1);
  assert_string_equal(cj_lld_path(), "/bin/false");
  assert_int_equal(cj_link_code_object(&co.object, &code), CONVJIT_ERR_COMPILE);
  assert_non_null(strstr(convjit_last_error(), "/bin/false exited with status 1"));
  assert_int_equal(dir_entries(tmp), 0);

  setenv("CONVJIT_LLD", "/nonexistent/ld.lld", 1);
  assert_int_equal(cj_link_code_object(&co.object, &code), CONVJIT_ERR_COMPILE);
  assert_non_null(strstr(convjit_last_error(), "/nonexistent/ld.lld"));
  assert_int_equal(dir_entries(tmp), 0);
  unsetenv("CONVJIT_LLD");
  assert_string_equal(cj_lld_path(), CJ_LLD_PATH);

  assert_int_equal(cj_link_code_object(NULL, &code), CONVJIT_ERR_INVALID_ARG);
  cj_blob_free(&junk);
  cj_compile_out_free(&co);
  if (saved) setenv("TMPDIR", saved, 1); else unsetenv("TMPDIR");
  free(saved);
  rmdir(tmp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_threads), /* first: races the one-time LLVM init */
    cmocka_unit_test(test_tiny_both_archs),
    cmocka_unit_test(test_deterministic),
    cmocka_unit_test(test_invalid_module),
    cmocka_unit_test(test_lds_over_limit),
    cmocka_unit_test(test_link_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
