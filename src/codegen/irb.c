/* LLVM C API helpers shared by every kernel builder (contract in irb.h). */
#include <stdio.h>
#include <string.h>
#include <llvm-c/Analysis.h>
#include "codegen/irb.h"

convjit_status cj_irb_fail(cj_irb *g, convjit_status st) {
  if (g->st == CONVJIT_OK) g->st = st;
  return g->st;
}

convjit_status cj_irb_begin(cj_irb *g, LLVMContextRef ctx, const char *name, const cj_arch *arch) {
  memset(g, 0, sizeof *g);
  CJ_CHECK(ctx != NULL, CONVJIT_ERR_INVALID_ARG, "cj_irb_begin: ctx is NULL");
  CJ_CHECK(arch != NULL, CONVJIT_ERR_INVALID_ARG, "cj_irb_begin: arch is NULL");
  g->ctx = ctx;
  g->arch = arch;
  g->mod = LLVMModuleCreateWithNameInContext(name ? name : "convjit", ctx); /* LLVM aborts on OOM, never NULL */
  g->b = LLVMCreateBuilderInContext(ctx);
  LLVMSetTarget(g->mod, "amdgcn-amd-amdhsa");
  LLVMSetDataLayout(g->mod, CJ_AMDGPU_DATALAYOUT);
  g->vd = LLVMVoidTypeInContext(ctx);
  g->i1 = LLVMInt1TypeInContext(ctx);
  g->i8 = LLVMInt8TypeInContext(ctx);
  g->i16 = LLVMInt16TypeInContext(ctx);
  g->i32 = LLVMInt32TypeInContext(ctx);
  g->i64 = LLVMInt64TypeInContext(ctx);
  g->f32 = LLVMFloatTypeInContext(ctx);
  g->bf16 = LLVMBFloatTypeInContext(ctx);
  g->f16 = LLVMHalfTypeInContext(ctx);
  g->v2i32 = LLVMVectorType(g->i32, 2);
  g->v4i32 = LLVMVectorType(g->i32, 4);
  g->p1 = LLVMPointerTypeInContext(ctx, CJ_AS_GLOBAL);
  g->p3 = LLVMPointerTypeInContext(ctx, CJ_AS_LDS);
  g->p8 = LLVMPointerTypeInContext(ctx, CJ_AS_RSRC);
  return CONVJIT_OK;
}

convjit_status cj_irb_end(cj_irb *g, LLVMModuleRef *out) {
  if (out) *out = NULL;
  if (g->b) LLVMDisposeBuilder(g->b);
  g->b = NULL;
  convjit_status st = g->st;
  if (st == CONVJIT_OK && !g->mod) st = CJ_ERR(CONVJIT_ERR_INTERNAL, "cj_irb_end: no module");
  if (st == CONVJIT_OK) {
    char *msg = NULL;
    if (LLVMVerifyModule(g->mod, LLVMReturnStatusAction, &msg))
      st = CJ_ERR(CONVJIT_ERR_INTERNAL, "built module %s is invalid: %s",
                  LLVMGetModuleIdentifier(g->mod, &(size_t){0}), msg ? msg : "?");
    LLVMDisposeMessage(msg);
  }
  if (st != CONVJIT_OK) {
    if (g->mod) LLVMDisposeModule(g->mod);
    g->mod = NULL;
    return st;
  }
  if (out) *out = g->mod;
  else LLVMDisposeModule(g->mod);
  g->mod = NULL;
  return CONVJIT_OK;
}

/* ---- kernel ---------------------------------------------------------------- */

static void cj_fn_str_attr(cj_irb *g, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAttributeRef a = LLVMCreateStringAttribute(g->ctx, k, (unsigned)strlen(k), v, (unsigned)strlen(v));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, a);
}

static void cj_enum_attr(cj_irb *g, LLVMValueRef fn, unsigned idx, const char *k, uint64_t v) {
  unsigned kind = LLVMGetEnumAttributeKindForName(k, strlen(k));
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(g->ctx, kind, v));
}

LLVMValueRef cj_irb_kernel(cj_irb *g, const cj_kplan *p, uint32_t waves_per_eu) {
  if (g->st != CONVJIT_OK) return NULL;
  if (!p || p->nargs > CJ_KPLAN_MAX_ARGS) {
    cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "cj_irb_kernel: bad plan"));
    return NULL;
  }
  LLVMTypeRef at[CJ_KPLAN_MAX_ARGS];
  for (uint32_t i = 0; i < p->nargs; i++) {
    const cj_karg_desc *a = &p->args[i];
    if (a->is_ptr) at[i] = g->p1;
    else if (a->size == 4) at[i] = g->i32;
    else if (a->size == 8) at[i] = g->i64;
    else {
      cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "plan %s arg %u (%s): size %u is not 4 or 8", p->name,
                            i, a->name ? a->name : "?", a->size));
      return NULL;
    }
  }
  LLVMTypeRef ft = LLVMFunctionType(g->vd, at, p->nargs, 0);
  LLVMValueRef fn = LLVMAddFunction(g->mod, p->name, ft);
  LLVMSetFunctionCallConv(fn, LLVMAMDGPUKERNELCallConv);
  for (uint32_t i = 0; i < p->nargs; i++) {
    LLVMValueRef v = LLVMGetParam(fn, i);
    if (p->args[i].name) LLVMSetValueName2(v, p->args[i].name, strlen(p->args[i].name));
    /* Distinct tensors never overlap (documented precondition of every
     * kernel); lets LLVM reorder loads past stores. */
    if (p->args[i].is_ptr) cj_enum_attr(g, fn, i + 1, "noalias", 0);
  }
  uint32_t threads = p->block[0] * (p->block[1] ? p->block[1] : 1) * (p->block[2] ? p->block[2] : 1);
  char buf[32];
  snprintf(buf, sizeof buf, "1,%u", threads);
  cj_fn_str_attr(g, fn, "amdgpu-flat-work-group-size", buf);
  if (waves_per_eu) {
    snprintf(buf, sizeof buf, "%u", waves_per_eu);
    cj_fn_str_attr(g, fn, "amdgpu-waves-per-eu", buf);
  }
  cj_enum_attr(g, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->ctx, fn, "entry");
  LLVMPositionBuilderAtEnd(g->b, entry);
  g->fn = fn;
  return fn;
}

LLVMValueRef cj_irb_arg(cj_irb *g, unsigned i) { return LLVMGetParam(g->fn, i); }

LLVMValueRef cj_irb_arg_role(cj_irb *g, const cj_kplan *p, cj_arg_role role) {
  int i = g->fn ? cj_kplan_arg_index(p, role) : -1;
  if (i >= 0) return LLVMGetParam(g->fn, (unsigned)i);
  const char *rn = cj_arg_role_name(role);
  cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "plan %s has no %s argument", p->name, rn ? rn : "?"));
  return LLVMGetPoison(g->p1); /* keeps building well-formed IR; cj_irb_end returns the status */
}

/* ---- constants and types --------------------------------------------------- */

LLVMValueRef cj_c1(cj_irb *g, int v) { return LLVMConstInt(g->i1, v != 0, 0); }
LLVMValueRef cj_c16(cj_irb *g, uint32_t v) { return LLVMConstInt(g->i16, v, 0); }
LLVMValueRef cj_c32(cj_irb *g, uint32_t v) { return LLVMConstInt(g->i32, v, 0); }
LLVMValueRef cj_c64(cj_irb *g, uint64_t v) { return LLVMConstInt(g->i64, v, 0); }
LLVMValueRef cj_cf32(cj_irb *g, float v) { return LLVMConstReal(g->f32, v); }

LLVMTypeRef cj_irb_operand_type(cj_irb *g, cj_opnd_kind kind, uint32_t lanes) {
  LLVMTypeRef e = kind == CJ_OPND_I16    ? g->i16
                  : kind == CJ_OPND_BF16 ? g->bf16
                  : kind == CJ_OPND_F16  ? g->f16
                  : kind == CJ_OPND_I64  ? g->i64
                                         : g->i32;
  return lanes > 1 ? LLVMVectorType(e, lanes) : e;
}

LLVMTypeRef cj_irb_mem_type(cj_irb *g, uint32_t bytes) {
  switch (bytes) {
  case 1: return g->i8;
  case 2: return g->i16;
  case 4: return g->i32;
  case 8: return g->v2i32;
  case 12: return LLVMVectorType(g->i32, 3);
  case 16: return g->v4i32;
  default:
    cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "cj_irb_mem_type: %u bytes is not a memory access width", bytes));
    return g->i32;
  }
}

/* ---- intrinsics ------------------------------------------------------------ */

static LLVMValueRef cj_irb_intrinsic(cj_irb *g, const char *name, LLVMTypeRef *over, unsigned nover,
                                     LLVMTypeRef *fn_type) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (id == 0) {
    cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "LLVM %s has no intrinsic %s", CJ_LLVM_VERSION, name));
    return NULL;
  }
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->mod, id, over, nover);
  if (fn_type) *fn_type = LLVMGlobalGetValueType(fn);
  return fn;
}

LLVMValueRef cj_irb_call(cj_irb *g, const char *name, LLVMTypeRef *over, unsigned nover,
                         LLVMValueRef *args, unsigned nargs) {
  LLVMTypeRef ft = NULL;
  LLVMValueRef fn = cj_irb_intrinsic(g, name, over, nover, &ft);
  if (!fn) return LLVMGetPoison(g->i32);
  if (LLVMCountParamTypes(ft) != nargs) {
    cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "intrinsic %s takes %u arguments, given %u", name,
                          LLVMCountParamTypes(ft), nargs));
    LLVMTypeRef rt = LLVMGetReturnType(ft);
    return LLVMGetTypeKind(rt) == LLVMVoidTypeKind ? LLVMGetPoison(g->i32) : LLVMGetPoison(rt);
  }
  return LLVMBuildCall2(g->b, ft, fn, args, nargs, "");
}

/* After a failed call the value may have the wrong type: hand builders a
 * poison of the type they expect so later LLVMBuild* calls stay well-typed. */
static LLVMValueRef cj_typed(LLVMValueRef v, LLVMTypeRef ty) { return LLVMTypeOf(v) == ty ? v : LLVMGetPoison(ty); }

LLVMValueRef cj_irb_tid(cj_irb *g, unsigned dim) {
  static const char *const n[3] = {"llvm.amdgcn.workitem.id.x", "llvm.amdgcn.workitem.id.y",
                                   "llvm.amdgcn.workitem.id.z"};
  return cj_irb_call(g, n[dim % 3], NULL, 0, NULL, 0);
}

LLVMValueRef cj_irb_wgid(cj_irb *g, unsigned dim) {
  static const char *const n[3] = {"llvm.amdgcn.workgroup.id.x", "llvm.amdgcn.workgroup.id.y",
                                   "llvm.amdgcn.workgroup.id.z"};
  return cj_irb_call(g, n[dim % 3], NULL, 0, NULL, 0);
}

LLVMValueRef cj_irb_readfirstlane(cj_irb *g, LLVMValueRef v) {
  LLVMTypeRef t = g->i32;
  return cj_irb_call(g, "llvm.amdgcn.readfirstlane", &t, 1, &v, 1);
}

/* ---- buffers --------------------------------------------------------------- */

LLVMValueRef cj_irb_rsrc(cj_irb *g, LLVMValueRef base, LLVMValueRef num_records) {
  LLVMTypeRef over[2] = {g->p8, g->p1};
  LLVMValueRef a[4] = {base, cj_c16(g, 0), num_records, cj_c32(g, g->arch->buffer_flags)};
  return cj_typed(cj_irb_call(g, "llvm.amdgcn.make.buffer.rsrc", over, 2, a, 4), g->p8);
}

LLVMValueRef cj_irb_rsrc_at(cj_irb *g, LLVMValueRef base, LLVMValueRef origin, uint64_t total_bytes) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef p = LLVMBuildGEP2(b, g->i8, base, &origin, 1, "tile.base");
  /* num_records = min(rest of the tensor, 2^31), tested through the high
   * bits so it stays on the scalar unit (gfx9 has no 64-bit s_cmp_lt). */
  LLVMValueRef rem = LLVMBuildSub(b, cj_c64(g, total_bytes), origin, "");
  LLVMValueRef hi = LLVMBuildTrunc(b, LLVMBuildLShr(b, rem, cj_c64(g, 31), ""), g->i32, "");
  LLVMValueRef nr32 = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntNE, hi, cj_c32(g, 0), ""), cj_c32(g, 0x80000000u),
                                      LLVMBuildTrunc(b, rem, g->i32, ""), "");
  return cj_irb_rsrc(g, p, LLVMBuildZExt(b, nr32, g->i64, ""));
}

LLVMValueRef cj_irb_oob(cj_irb *g, LLVMValueRef valid, LLVMValueRef off, uint32_t oob) {
  return LLVMBuildSelect(g->b, valid, off, cj_c32(g, oob), "");
}

LLVMValueRef cj_irb_buf_load(cj_irb *g, LLVMTypeRef ty, LLVMValueRef rsrc, LLVMValueRef voff,
                             LLVMValueRef soff, uint32_t aux) {
  LLVMValueRef a[4] = {rsrc, voff, soff ? soff : cj_c32(g, 0), cj_c32(g, aux)};
  return cj_typed(cj_irb_call(g, "llvm.amdgcn.raw.ptr.buffer.load", &ty, 1, a, 4), ty);
}

void cj_irb_buf_store(cj_irb *g, LLVMValueRef val, LLVMValueRef rsrc, LLVMValueRef voff,
                      LLVMValueRef soff, uint32_t aux) {
  LLVMTypeRef ty = LLVMTypeOf(val);
  LLVMValueRef a[5] = {val, rsrc, voff, soff ? soff : cj_c32(g, 0), cj_c32(g, aux)};
  cj_irb_call(g, "llvm.amdgcn.raw.ptr.buffer.store", &ty, 1, a, 5);
}

void cj_irb_buf_atomic_fadd(cj_irb *g, LLVMValueRef val, LLVMValueRef rsrc, LLVMValueRef voff, LLVMValueRef soff) {
  LLVMTypeRef ty = g->f32;
  LLVMValueRef a[5] = {val, rsrc, voff, soff ? soff : cj_c32(g, 0), cj_c32(g, 0)};
  cj_irb_call(g, "llvm.amdgcn.raw.ptr.buffer.atomic.fadd", &ty, 1, a, 5);
}

LLVMValueRef cj_irb_gep1(cj_irb *g, LLVMValueRef base, LLVMValueRef byte_off) {
  return LLVMBuildGEP2(g->b, g->i8, base, &byte_off, 1, "");
}

LLVMValueRef cj_irb_global_load(cj_irb *g, LLVMTypeRef ty, LLVMValueRef ptr, unsigned align) {
  LLVMValueRef v = LLVMBuildLoad2(g->b, ty, ptr, "");
  LLVMSetAlignment(v, align);
  return v;
}

void cj_irb_global_store(cj_irb *g, LLVMValueRef val, LLVMValueRef ptr, unsigned align) {
  LLVMSetAlignment(LLVMBuildStore(g->b, val, ptr), align);
}

LLVMValueRef cj_irb_buf_load_lds(cj_irb *g, LLVMValueRef rsrc, LLVMValueRef lds, uint32_t bytes,
                                 LLVMValueRef voff, LLVMValueRef soff, uint32_t imm, uint32_t aux) {
  if (!cj_arch_dma_ok(g->arch, bytes)) {
    cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "buffer-to-LDS load of %u bytes per lane is not legal on %s",
                          bytes, g->arch->name));
    return NULL;
  }
  if (imm > 4095) {
    cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "buffer-to-LDS imm offset %u exceeds 12 bits", imm));
    return NULL;
  }
  LLVMValueRef a[7] = {rsrc, lds, cj_c32(g, bytes), voff, soff ? soff : cj_c32(g, 0), cj_c32(g, imm),
                       cj_c32(g, aux)};
  return cj_irb_call(g, "llvm.amdgcn.raw.ptr.buffer.load.lds", NULL, 0, a, 7);
}

/* ---- scoped noalias metadata ------------------------------------------------ */

LLVMMetadataRef cj_irb_scopes(cj_irb *g, const char *const *names, unsigned n) {
  static const char dom[] = "convjit.lds";
  LLVMMetadataRef dname = LLVMMDStringInContext2(g->ctx, dom, sizeof dom - 1);
  LLVMMetadataRef domain = LLVMMDNodeInContext2(g->ctx, &dname, 1);
  LLVMMetadataRef scope[8];
  if (n == 0 || n > 8) {
    cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "scope list of %u scopes: must be 1..8", n));
    static const char *const none[1] = {"convjit.none"};
    return cj_irb_scopes(g, none, 1);
  }
  for (unsigned i = 0; i < n; i++) { /* string-named scopes are uniqued: one name, one scope */
    LLVMMetadataRef sc[2] = {LLVMMDStringInContext2(g->ctx, names[i], strlen(names[i])), domain};
    scope[i] = LLVMMDNodeInContext2(g->ctx, sc, 2);
  }
  return LLVMMDNodeInContext2(g->ctx, scope, n);
}

LLVMMetadataRef cj_irb_scope(cj_irb *g, const char *name) { return cj_irb_scopes(g, &name, 1); }

void cj_irb_scope_decl(cj_irb *g, LLVMMetadataRef list) {
  LLVMValueRef a = LLVMMetadataAsValue(g->ctx, list);
  cj_irb_call(g, "llvm.experimental.noalias.scope.decl", NULL, 0, &a, 1);
}

void cj_irb_alias(cj_irb *g, LLVMValueRef inst, LLVMMetadataRef scope, LLVMMetadataRef noalias) {
  if (!inst || !LLVMIsAInstruction(inst)) return;
  if (scope) LLVMSetMetadata(inst, LLVMGetMDKindIDInContext(g->ctx, "alias.scope", 11), LLVMMetadataAsValue(g->ctx, scope));
  if (noalias) LLVMSetMetadata(inst, LLVMGetMDKindIDInContext(g->ctx, "noalias", 7), LLVMMetadataAsValue(g->ctx, noalias));
}

/* ---- LDS ------------------------------------------------------------------- */

LLVMValueRef cj_irb_lds(cj_irb *g, const char *name, uint32_t bytes, uint32_t align) {
  if (align == 0 || (align & (align - 1)) || bytes == 0) {
    cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "LDS buffer %s: %u bytes, align %u", name, bytes, align));
    return LLVMGetPoison(g->p3);
  }
  LLVMTypeRef t = LLVMArrayType2(g->i8, bytes);
  LLVMValueRef v = LLVMAddGlobalInAddressSpace(g->mod, t, name, CJ_AS_LDS);
  /* LDS cannot be initialized: its content is undefined at dispatch. */
  LLVMSetInitializer(v, LLVMGetPoison(t));
  LLVMSetLinkage(v, LLVMInternalLinkage);
  LLVMSetAlignment(v, align);
  g->lds_bytes = ((g->lds_bytes + align - 1) & ~(align - 1)) + bytes;
  return v;
}

LLVMValueRef cj_irb_lds_ptr(cj_irb *g, LLVMValueRef lds, LLVMValueRef byte_off) {
  return LLVMBuildGEP2(g->b, g->i8, lds, &byte_off, 1, "");
}

LLVMValueRef cj_irb_lds_load(cj_irb *g, LLVMTypeRef ty, LLVMValueRef lds, LLVMValueRef byte_off,
                             unsigned align) {
  LLVMValueRef v = LLVMBuildLoad2(g->b, ty, cj_irb_lds_ptr(g, lds, byte_off), "");
  LLVMSetAlignment(v, align);
  return v;
}

void cj_irb_lds_store(cj_irb *g, LLVMValueRef val, LLVMValueRef lds, LLVMValueRef byte_off,
                      unsigned align) {
  LLVMValueRef s = LLVMBuildStore(g->b, val, cj_irb_lds_ptr(g, lds, byte_off));
  LLVMSetAlignment(s, align);
}

/* ---- synchronization ------------------------------------------------------- */

void cj_irb_barrier(cj_irb *g) { cj_irb_call(g, "llvm.amdgcn.s.barrier", NULL, 0, NULL, 0); }

void cj_irb_workgroup_sync(cj_irb *g) {
  unsigned wg = LLVMGetSyncScopeID(g->ctx, "workgroup", 9);
  LLVMBuildFenceSyncScope(g->b, LLVMAtomicOrderingRelease, wg, "");
  cj_irb_barrier(g);
  LLVMBuildFenceSyncScope(g->b, LLVMAtomicOrderingAcquire, wg, "");
}

void cj_irb_waitcnt(cj_irb *g, uint32_t imm) {
  LLVMValueRef a = cj_c32(g, imm);
  cj_irb_call(g, "llvm.amdgcn.s.waitcnt", NULL, 0, &a, 1);
}

void cj_irb_setprio(cj_irb *g, uint32_t prio) {
  LLVMValueRef a = cj_c16(g, prio > 3 ? 3 : prio);
  cj_irb_call(g, "llvm.amdgcn.s.setprio", NULL, 0, &a, 1);
}

uint32_t cj_waitcnt_imm(uint32_t vmcnt, uint32_t expcnt, uint32_t lgkmcnt) {
  return cj_waitcnt_encode(&cj_waitcnt_gfx9, vmcnt, expcnt, lgkmcnt);
}
uint32_t cj_waitcnt_vmcnt(uint32_t n) { return cj_waitcnt_imm(n, 7, 15); }
uint32_t cj_waitcnt_lgkmcnt(uint32_t n) { return cj_waitcnt_imm(63, 7, n); }

/* ---- loops ----------------------------------------------------------------- */

void cj_irb_loop_begin(cj_irb *g, cj_irb_loop *l, LLVMValueRef start, LLVMValueRef end,
                       LLVMValueRef step, const char *name) {
  memset(l, 0, sizeof *l);
  l->pre = LLVMGetInsertBlock(g->b);
  l->header = LLVMAppendBasicBlockInContext(g->ctx, g->fn, name);
  l->body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "body");
  l->exit = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "exit");
  l->step = step;
  LLVMBuildBr(g->b, l->header);
  LLVMPositionBuilderAtEnd(g->b, l->header);
  l->iv = LLVMBuildPhi(g->b, g->i32, "iv");
  LLVMAddIncoming(l->iv, &start, &l->pre, 1);
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, l->iv, end, ""), l->body, l->exit);
  LLVMPositionBuilderAtEnd(g->b, l->body);
}

void cj_irb_loop_end(cj_irb *g, cj_irb_loop *l) {
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMValueRef next = LLVMBuildAdd(g->b, l->iv, l->step, "iv.next");
  LLVMBuildBr(g->b, l->header);
  LLVMAddIncoming(l->iv, &next, &latch, 1);
  LLVMMoveBasicBlockAfter(l->exit, latch);
  LLVMPositionBuilderAtEnd(g->b, l->exit);
}

/* ---- optimization barrier (added by the conv work) ------------------------- */

LLVMValueRef cj_irb_opaque(cj_irb *g, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  LLVMTypeRef ft = LLVMFunctionType(t, &t, 1, 0);
  LLVMValueRef asm_ = LLVMGetInlineAsm(ft, "", 0, "=v,0", 4, 0, 0, LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(g->b, ft, asm_, &v, 1, "opaque");
}

LLVMValueRef cj_irb_opaque_sgpr(cj_irb *g, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  LLVMTypeRef ft = LLVMFunctionType(t, &t, 1, 0);
  LLVMValueRef asm_ = LLVMGetInlineAsm(ft, "", 0, "=s,0", 4, 1, 0, LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(g->b, ft, asm_, &v, 1, "opaque.s");
}
