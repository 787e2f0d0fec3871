/* Split-K finalize kernel (plan in kplan_conv.h): the conv's fp32 NCDHW
 * workspace -> y = bf16(ws + bias[k]), elementwise. per_thread = 4 when
 * Do*Ho*Wo % 4 == 0: the 4 elements then share one output channel, so one
 * 16-byte load, one bias load and one 8-byte store. The workspace is < 2^31
 * bytes (the plan refuses larger splits), so i32 offsets suffice; lanes
 * past the end get the conv's OOB offset CJ_CONV_OOB, past num_records
 * (zeros / dropped stores). */
#include "codegen/codegen.h"
#include "codegen/irb.h"
#include "codegen/kplan_conv.h"

convjit_status cj_conv_finalize_build(cj_irb *g, const cj_kplan *p) {
  const cj_finalize_plan *f = &p->u.fin;
  if (f->per_thread != 1 && f->per_thread != 4)
    return cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "finalize plan %s: per_thread = %u", p->name, f->per_thread));
  LLVMBuilderRef b = g->b;
  cj_irb_kernel(g, p, 0);
  if (g->st) return g->st;
  unsigned ai = 0;
  LLVMValueRef wsp = cj_irb_arg(g, ai++);
  LLVMValueRef bp = f->has_bias ? cj_irb_arg(g, ai++) : NULL;
  LLVMValueRef yp = cj_irb_arg(g, ai++);
  LLVMValueRef wsr = cj_irb_rsrc(g, wsp, cj_c64(g, f->total * 4));
  LLVMValueRef yr = cj_irb_rsrc(g, yp, cj_c64(g, f->total * 2));
  LLVMValueRef gid = LLVMBuildAdd(b, LLVMBuildMul(b, cj_irb_wgid(g, 0), cj_c32(g, p->block[0]), ""),
                                  cj_irb_tid(g, 0), "");
  LLVMValueRef e = LLVMBuildMul(b, gid, cj_c32(g, f->per_thread), "e");
  LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, e, cj_c32(g, (uint32_t)f->total), "");
  LLVMTypeRef vt = f->per_thread == 4 ? LLVMVectorType(g->f32, 4) : g->f32;
  LLVMValueRef val = cj_irb_buf_load(g, vt, wsr, cj_irb_oob(g, ok, LLVMBuildMul(b, e, cj_c32(g, 4), ""), CJ_CONV_OOB),
                                     NULL, 0);
  if (bp) {
    LLVMValueRef br = cj_irb_rsrc(g, bp, cj_c64(g, (uint64_t)f->k * 4));
    LLVMValueRef k = LLVMBuildURem(b, LLVMBuildUDiv(b, e, cj_c32(g, (uint32_t)f->odhw), ""), cj_c32(g, f->k), "k");
    LLVMValueRef bias = cj_irb_buf_load(g, g->f32, br, LLVMBuildMul(b, k, cj_c32(g, 4), ""), NULL, 0);
    if (f->per_thread == 4) {
      LLVMValueRef zero4[4] = {cj_c32(g, 0), cj_c32(g, 0), cj_c32(g, 0), cj_c32(g, 0)};
      LLVMValueRef bv = LLVMBuildInsertElement(b, LLVMGetPoison(vt), bias, cj_c32(g, 0), "");
      bias = LLVMBuildShuffleVector(b, bv, LLVMGetPoison(vt), LLVMConstVector(zero4, 4), "");
    }
    val = LLVMBuildFAdd(b, val, bias, "");
  }
  LLVMTypeRef ht = f->per_thread == 4 ? LLVMVectorType(g->bf16, 4) : g->bf16;
  LLVMValueRef h = LLVMBuildFPTrunc(b, val, ht, "");
  h = LLVMBuildBitCast(b, h, f->per_thread == 4 ? g->v2i32 : g->i16, "");
  cj_irb_buf_store(g, h, yr, cj_irb_oob(g, ok, LLVMBuildMul(b, e, cj_c32(g, 2), ""), CJ_CONV_OOB), NULL, 0);
  LLVMBuildRetVoid(b);
  return g->st;
}
