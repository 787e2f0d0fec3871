/* Split-K finalize kernel (plan in kplan_finalize.h): the conv's fp32 NCDHW
 * workspace -> y = epilogue(ws), elementwise, with the same epilogue ops the
 * conv would have run (epilogue.c). per_thread = 4 when Do*Ho*Wo % 4 == 0:
 * the 4 elements then share one output channel, so one 16-byte load, one
 * load per per-channel operand and one 4-element store. The workspace is
 * < 2^31 bytes (the plan refuses larger splits), so i32 offsets suffice;
 * lanes past the end get the conv's OOB offset CJ_CONV_OOB, past
 * num_records (zeros / dropped stores). */
#include "codegen/codegen.h"
#include "codegen/epilogue.h"
#include "codegen/irb.h"

convjit_status cj_conv_finalize_build(cj_irb *g, const cj_kplan *p) {
  const cj_finalize_plan *f = &p->u.fin;
  if (f->per_thread != 1 && f->per_thread != 4)
    return cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "finalize plan %s: per_thread = %u", p->name, f->per_thread));
  LLVMBuilderRef b = g->b;
  cj_irb_kernel(g, p, 0);
  if (g->st) return g->st;
  uint32_t yb = f->y_elem_bytes;
  LLVMValueRef wsr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_WORKSPACE), cj_c64(g, f->total * 4));
  LLVMValueRef yr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_Y), cj_c64(g, f->total * yb));
  LLVMValueRef gid = LLVMBuildAdd(b, LLVMBuildMul(b, cj_irb_wgid(g, 0), cj_c32(g, p->block[0]), ""),
                                  cj_irb_tid(g, 0), "");
  LLVMValueRef e = LLVMBuildMul(b, gid, cj_c32(g, f->per_thread), "e");
  LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, e, cj_c32(g, (uint32_t)f->total), "");
  LLVMTypeRef vt = f->per_thread == 4 ? LLVMVectorType(g->f32, 4) : g->f32;
  LLVMValueRef val = cj_irb_buf_load(g, vt, wsr, cj_irb_oob(g, ok, LLVMBuildMul(b, e, cj_c32(g, 4), ""), CJ_CONV_OOB),
                                     NULL, 0);
  cj_epi_rsrc er;
  cj_epi_rsrc_init(g, p, &f->epi, f->k, f->total, &er);
  LLVMValueRef chan[CJ_EPI_MAX_OPS];
  LLVMValueRef k = LLVMBuildURem(b, LLVMBuildUDiv(b, e, cj_c32(g, (uint32_t)f->odhw), ""), cj_c32(g, f->k), "k");
  cj_epi_load_channel(g, &f->epi, &er, k, 1, chan);
  /* z (y's dtype and shape) at the element's own offset */
  LLVMValueRef z = cj_epi_load_z(g, &f->epi, &er, cj_irb_oob(g, ok, LLVMBuildMul(b, e, cj_c32(g, yb), ""), CJ_CONV_OOB),
                                 ok, f->per_thread);
  LLVMValueRef h = cj_epi_apply(g, &f->epi, val, chan, z);
  if (f->per_thread == 4) h = LLVMBuildBitCast(b, h, yb == 1 ? g->i32 : LLVMVectorType(g->i32, yb), "");
  cj_irb_buf_store(g, h, yr, cj_irb_oob(g, ok, LLVMBuildMul(b, e, cj_c32(g, yb), ""), CJ_CONV_OOB), NULL, 0);
  LLVMBuildRetVoid(b);
  return g->st;
}
