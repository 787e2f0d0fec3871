/* wgrad_finalize: the backward-weight GEMM's fp32 partial tiles -> dw (and
 * db) (plan in kplan_wgrad.h). One thread per 4 columns of a dw row: the
 * blocks' 16-byte partials added in block order 0, 1, ... (a counted loop:
 * the order, hence every bit of dw, is the problem's alone), converted to
 * dw's dtype by the epilogue's CONVERT (RNE, epilogue.c) and stored; the
 * thread holding column nw writes that sum to db[row] in fp32.
 *
 * The partials are addressed in 64 bits (blocks * K * np fp32 may pass
 * 2^31 bytes); dw and db through buffer resources with the lanes outside
 * routed past num_records (the plan keeps dw below 2^31 bytes). */
#include "codegen/codegen.h"
#include "codegen/epilogue.h"
#include "codegen/irb.h"

#define WF_OOB 0x80000000u /* past every num_records used here (< 2^31) */

convjit_status cj_wgrad_finalize_build(cj_irb *g, const cj_kplan *p) {
  const cj_wgrad_finalize_plan *f = &p->u.wf;
  LLVMBuilderRef b = g->b;
  if (f->np % 4 || !f->blocks)
    return cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "wgrad_finalize plan %s: np = %u, blocks = %u", p->name, f->np,
                                 f->blocks));
  if (!cj_irb_kernel(g, p, 0)) return g->st;
  const uint32_t ob = cj_dtype_bytes((convjit_dtype)f->out_dtype);
  LLVMValueRef ws = cj_irb_arg_role(g, p, CJ_ARG_WORKSPACE);
  LLVMValueRef dwr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_DW), cj_c64(g, (uint64_t)f->rows * f->nw * ob));
  LLVMValueRef t = LLVMBuildAdd(b, LLVMBuildMul(b, cj_irb_wgid(g, 0), cj_c32(g, p->block[0]), ""), cj_irb_tid(g, 0), "");
  LLVMValueRef e = LLVMBuildMul(b, t, cj_c32(g, 4), "e"); /* the first of 4 columns, < rows * np */
  LLVMValueRef live = LLVMBuildICmp(b, LLVMIntULT, e, cj_c32(g, (uint32_t)f->block_elems), "");
  LLVMValueRef row = LLVMBuildUDiv(b, e, cj_c32(g, f->np), "row");
  LLVMValueRef col = LLVMBuildURem(b, e, cj_c32(g, f->np), "col");
  /* sum over the blocks in order: part[z][e] at (z * block_elems + e) * 4 */
  LLVMTypeRef v4 = LLVMVectorType(g->f32, 4);
  LLVMValueRef e64 = LLVMBuildSelect(b, live, LLVMBuildZExt(b, e, g->i64, ""), cj_c64(g, 0), "");
  LLVMValueRef sum0 = LLVMConstNull(v4);
  cj_irb_loop lp;
  cj_irb_loop_begin(g, &lp, cj_c32(g, 0), cj_c32(g, f->blocks), cj_c32(g, 1), "blocks");
  LLVMBasicBlockRef body = LLVMGetInsertBlock(b);
  LLVMPositionBuilderBefore(b, LLVMGetNextInstruction(lp.iv));
  LLVMValueRef sum = LLVMBuildPhi(b, v4, "sum");
  LLVMAddIncoming(sum, &sum0, &lp.pre, 1);
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef z = LLVMBuildZExt(b, lp.iv, g->i64, "");
  LLVMValueRef at = LLVMBuildAdd(b, LLVMBuildMul(b, z, cj_c64(g, f->block_elems), ""), e64, "");
  LLVMValueRef part = cj_irb_global_load(g, v4, cj_irb_gep1(g, ws, LLVMBuildMul(b, at, cj_c64(g, 4), "")), 16);
  LLVMValueRef next = LLVMBuildFAdd(b, sum, part, "sum.next");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMAddIncoming(sum, &next, &latch, 1);
  cj_irb_loop_end(g, &lp); /* at the exit the header's phi holds the total */
  LLVMValueRef out = cj_epi_apply(g, &f->epi, sum, (LLVMValueRef[CJ_EPI_MAX_OPS]){0}, NULL);
  /* dw[row][col .. col+3] for the columns < nw: one store when the row
   * length keeps 4 columns contiguous and aligned, else one per column */
  LLVMValueRef dwe = LLVMBuildAdd(b, LLVMBuildMul(b, row, cj_c32(g, f->nw), ""), col, "dw.e");
  if (f->nw % 4 == 0) {
    LLVMValueRef ok = LLVMBuildAnd(b, live, LLVMBuildICmp(b, LLVMIntULT, col, cj_c32(g, f->nw), ""), "");
    LLVMValueRef v = ob == 4 ? out : LLVMBuildBitCast(b, out, LLVMVectorType(g->i32, 2), "");
    cj_irb_buf_store(g, v, dwr, cj_irb_oob(g, ok, LLVMBuildMul(b, dwe, cj_c32(g, ob), ""), WF_OOB), NULL, 0);
  } else {
    for (uint32_t i = 0; i < 4; i++) {
      LLVMValueRef c = LLVMBuildAdd(b, col, cj_c32(g, i), "");
      LLVMValueRef ok = LLVMBuildAnd(b, live, LLVMBuildICmp(b, LLVMIntULT, c, cj_c32(g, f->nw), ""), "");
      LLVMValueRef off = LLVMBuildMul(b, LLVMBuildAdd(b, dwe, cj_c32(g, i), ""), cj_c32(g, ob), "");
      cj_irb_buf_store(g, LLVMBuildExtractElement(b, out, cj_c32(g, i), ""), dwr, cj_irb_oob(g, ok, off, WF_OOB),
                       NULL, 0);
    }
  }
  if (f->db) { /* column nw of this row, when it is one of the thread's 4 */
    LLVMValueRef dbr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_DB), cj_c64(g, (uint64_t)f->rows * 4));
    LLVMValueRef rel = LLVMBuildSub(b, cj_c32(g, f->nw), col, "");
    LLVMValueRef ok = LLVMBuildAnd(b, live, LLVMBuildICmp(b, LLVMIntULT, rel, cj_c32(g, 4), ""), "db.ok");
    LLVMValueRef v = LLVMBuildExtractElement(b, sum, LLVMBuildAnd(b, rel, cj_c32(g, 3), ""), "");
    cj_irb_buf_store(g, v, dbr, cj_irb_oob(g, ok, LLVMBuildMul(b, row, cj_c32(g, 4), ""), WF_OOB), NULL, 0);
  }
  LLVMBuildRetVoid(b);
  return g->st;
}
