/* irb helpers: waitcnt encodings (values from llvm-mc-22 -show-encoding,
 * docs/isa-notes.md), sticky errors instead of LLVM aborts, and a kernel
 * using every helper compiled for both arches and checked in the ISA. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "codegen/irb.h"
#include "pipeline/build.h"
#include "pipeline/compile.h"

static void test_waitcnt_encoding(void **st) {
  (void)st;
  /* llvm-mc-22 -mcpu=gfx942 -show-encoding: simm16 is the low half of the word. */
  assert_int_equal(cj_waitcnt_vmcnt(0), 0x0F70);
  assert_int_equal(cj_waitcnt_lgkmcnt(0), 0xC07F);
  assert_int_equal(cj_waitcnt_imm(5, 7, 3), 0x0375);
  assert_int_equal(cj_waitcnt_vmcnt(40), 0x8F78); /* vmcnt high bits in [15:14] */
  assert_int_equal(cj_waitcnt_imm(63, 7, 15), 0xCF7F);
  assert_int_equal(cj_waitcnt_vmcnt(100), 0xCF7F); /* clamped to 63: no wait */
}

static cj_kplan test_plan(const cj_arch *a) {
  cj_kplan p;
  memset(&p, 0, sizeof p);
  p.op = CJ_KOP_TRANSPOSE;
  p.arch = a;
  strcpy(p.name, "irb_probe");
  p.block[0] = 256; /* > 1 wave: LLVM drops s_barrier in single-wave groups */
  p.block[1] = p.block[2] = 1;
  p.grid[0] = p.grid[1] = p.grid[2] = 1;
  p.nargs = 3;
  p.args[0] = (cj_karg_desc){.name = "x", .is_ptr = 1, .size = 8};
  p.args[1] = (cj_karg_desc){.name = "y", .is_ptr = 1, .size = 8};
  p.args[2] = (cj_karg_desc){.name = "count", .is_ptr = 0, .size = 4};
  return p;
}

/* Builds: DMA x -> LDS, waitcnt, barrier, loop summing `count` LDS words,
 * setprio, readfirstlane, buffer store to y. */
static LLVMModuleRef build_probe(LLVMContextRef ctx, const cj_arch *a, uint32_t dma_bytes, convjit_status *st) {
  cj_irb g;
  cj_kplan p = test_plan(a);
  assert_int_equal(cj_irb_begin(&g, ctx, "irb_probe", a), CONVJIT_OK);
  assert_non_null(cj_irb_kernel(&g, &p, 2));
  LLVMBuilderRef b = g.b;
  LLVMValueRef lds = cj_irb_lds(&g, "buf", 1024, 16);
  LLVMValueRef lds2 = cj_irb_lds(&g, "buf2", 100, 4);
  LLVMValueRef tid = cj_irb_tid(&g, 0);
  LLVMValueRef xr = cj_irb_rsrc(&g, cj_irb_arg(&g, 0), cj_c64(&g, 4096));
  LLVMValueRef yr = cj_irb_rsrc(&g, cj_irb_arg(&g, 1), cj_c64(&g, 4096));
  LLVMValueRef voff = LLVMBuildMul(b, tid, cj_c32(&g, dma_bytes), "");
  cj_irb_buf_load_lds(&g, xr, lds, dma_bytes, voff, NULL, 0, 0);
  cj_irb_waitcnt(&g, cj_waitcnt_vmcnt(0));
  cj_irb_barrier(&g);
  /* sum = sum of lds words [0, count) */
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  cj_irb_loop l;
  cj_irb_loop_begin(&g, &l, cj_c32(&g, 0), cj_irb_arg(&g, 2), cj_c32(&g, 1), "sum");
  LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(l.header));
  LLVMValueRef acc = LLVMBuildPhi(b, g.i32, "acc");
  LLVMPositionBuilderAtEnd(b, l.body);
  LLVMValueRef w = cj_irb_lds_load(&g, g.i32, lds, LLVMBuildShl(b, LLVMBuildAnd(b, l.iv, cj_c32(&g, 255), ""),
                                                                 cj_c32(&g, 2), ""), 4);
  LLVMValueRef acc2 = LLVMBuildAdd(b, acc, w, "");
  LLVMBasicBlockRef body_end = LLVMGetInsertBlock(b);
  cj_irb_loop_end(&g, &l);
  LLVMValueRef z = cj_c32(&g, 0);
  LLVMAddIncoming(acc, &z, &pre, 1);
  LLVMAddIncoming(acc, &acc2, &body_end, 1);
  cj_irb_setprio(&g, 3);
  LLVMValueRef u = cj_irb_readfirstlane(&g, acc);
  cj_irb_setprio(&g, 0);
  cj_irb_lds_store(&g, u, lds2, LLVMBuildShl(b, LLVMBuildAnd(b, tid, cj_c32(&g, 15), ""), cj_c32(&g, 2), ""), 4);
  cj_irb_workgroup_sync(&g);
  LLVMValueRef back = cj_irb_lds_load(&g, g.i32, lds2, LLVMBuildShl(b, LLVMBuildAnd(b, LLVMBuildAdd(b, tid, cj_c32(&g, 1), ""),
                                                                             cj_c32(&g, 15), ""), cj_c32(&g, 2), ""), 4);
  cj_irb_buf_store(&g, back, yr, LLVMBuildAdd(b, LLVMBuildShl(b, tid, cj_c32(&g, 2), ""), cj_c32(&g, 2048), ""), NULL, 0);
  LLVMValueRef v = cj_irb_buf_load(&g, cj_irb_mem_type(&g, 16), xr, LLVMBuildShl(b, tid, cj_c32(&g, 4), ""), NULL, 0);
  cj_irb_buf_store(&g, v, yr, cj_irb_oob(&g, LLVMBuildICmp(b, LLVMIntULT, tid, cj_c32(&g, 32), ""),
                                           LLVMBuildShl(b, tid, cj_c32(&g, 4), ""), 0x80000000u),
                   NULL, 0);
  /* split-K style atomic add and a 64-bit addressed store past 4 GiB */
  cj_irb_buf_atomic_fadd(&g, LLVMBuildUIToFP(b, back, g.f32, ""), yr, LLVMBuildShl(b, tid, cj_c32(&g, 2), ""), NULL);
  LLVMValueRef far = cj_irb_gep1(&g, cj_irb_arg(&g, 1), LLVMBuildAdd(b, LLVMBuildZExt(b, tid, g.i64, ""),
                                                                    cj_c64(&g, UINT64_C(5) << 32), ""));
  cj_irb_global_store(&g, cj_irb_global_load(&g, g.i8, cj_irb_gep1(&g, cj_irb_arg(&g, 0), cj_c64(&g, 0)), 1), far, 1);
  LLVMBuildRetVoid(b);
  assert_int_equal(g.lds_bytes, 1124); /* 1024 + 100 (align 4 after 1024) */
  LLVMModuleRef m = NULL;
  *st = cj_irb_end(&g, &m);
  return m;
}

static void test_probe_compiles(void **state) {
  (void)state;
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (int a = 0; a < na; a++) {
    LLVMContextRef ctx = LLVMContextCreate();
    convjit_status st;
    LLVMModuleRef m = build_probe(ctx, arches[a], 4, &st);
    if (st != CONVJIT_OK) fail_msg("%s", cj_error_text());
    assert_non_null(m);
    cj_compile_out co = {0};
    if (cj_compile_module(m, arches[a], 1, 0, &co) != CONVJIT_OK) fail_msg("%s", cj_error_text());
    const char *as = (const char *)co.asm_text.data;
    assert_non_null(strstr(as, "buffer_load_dword"));
    assert_non_null(strstr(as, " lds"));          /* the DMA form */
    assert_non_null(strstr(as, "s_setprio 3"));
    assert_non_null(strstr(as, "s_barrier"));
    assert_non_null(strstr(as, "s_waitcnt vmcnt(0)"));
    assert_non_null(strstr(as, "buffer_store_dwordx4"));
    assert_non_null(strstr(as, "s_cbranch"));
    assert_non_null(strstr(as, "buffer_atomic_add_f32"));
    assert_non_null(strstr(as, "global_store_byte"));      /* the loop is a loop */
    assert_non_null(strstr(as, ".amdhsa_group_segment_fixed_size 1124"));
    cj_compile_out_free(&co);
    LLVMDisposeModule(m);
    LLVMContextDispose(ctx);
  }
}

static void test_illegal_dma_is_an_error(void **state) {
  (void)state;
  /* llc-22 would abort the process on a 16-byte DMA for gfx942: irb must refuse it. */
  LLVMContextRef ctx = LLVMContextCreate();
  convjit_status st;
  LLVMModuleRef m = build_probe(ctx, cj_arch_from_name("gfx942"), 16, &st);
  assert_int_equal(st, CONVJIT_ERR_INTERNAL);
  assert_null(m);
  assert_non_null(strstr(cj_error_text(), "gfx942"));
  /* and gfx950 accepts it */
  m = build_probe(ctx, cj_arch_from_name("gfx950"), 16, &st);
  assert_int_equal(st, CONVJIT_OK);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
}

static void test_unknown_intrinsic(void **state) {
  (void)state;
  LLVMContextRef ctx = LLVMContextCreate();
  cj_irb g;
  cj_kplan p = test_plan(cj_arch_from_name("gfx950"));
  assert_int_equal(cj_irb_begin(&g, ctx, "bad", p.arch), CONVJIT_OK);
  cj_irb_kernel(&g, &p, 0);
  cj_irb_call(&g, "llvm.amdgcn.no.such.thing", NULL, 0, NULL, 0);
  LLVMBuildRetVoid(g.b);
  LLVMModuleRef m = (LLVMModuleRef)1;
  assert_int_equal(cj_irb_end(&g, &m), CONVJIT_ERR_INTERNAL);
  assert_null(m);
  assert_non_null(strstr(cj_error_text(), "llvm.amdgcn.no.such.thing"));
  /* begin with a NULL arch: a status, no crash */
  assert_int_equal(cj_irb_begin(&g, ctx, "x", NULL), CONVJIT_ERR_INVALID_ARG);
  LLVMContextDispose(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_waitcnt_encoding),
      cmocka_unit_test(test_probe_compiles),
      cmocka_unit_test(test_illegal_dma_is_an_error),
      cmocka_unit_test(test_unknown_intrinsic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
