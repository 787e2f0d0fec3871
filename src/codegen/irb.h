/* irb — the small layer over the LLVM C API that every kernel builder uses
 * (layout.c, conv_igemm*.c, conv_finalize.c, epilogue.c). Contract:
 *
 *  - cj_irb_begin creates a module (triple amdgcn-amd-amdhsa, AMDGPU data
 *    layout) and a builder in the caller's LLVMContext; cj_irb_kernel adds the
 *    one kernel (amdgpu_kernel calling convention, arguments from plan->args,
 *    flat work-group size and waves-per-EU attributes) and positions the
 *    builder in its entry block. cj_irb_end verifies the module and hands it
 *    over (or disposes it on any error); it always disposes the builder.
 *  - Errors are sticky, like cj_strbuf's oom: a helper that is misused (e.g.
 *    a 16-byte DMA on an arch without it, which would make llc abort the
 *    process) records CJ_ERR once in g->st and returns a poison value (of
 *    the expected type for the typed helpers), so builders need no per-call
 *    checks; cj_irb_end returns the status and disposes the module.
 *  - Intrinsics are declared by name through LLVMLookupIntrinsicID, with the
 *    overload types given explicitly; nothing is declared by hand-written
 *    signatures, so a renamed intrinsic is an error, not a silent miscompile.
 *  - LDS: cj_irb_lds adds a static addrspace(3) global; g->lds_bytes is the
 *    sum of their sizes rounded to their alignments, which equals the code
 *    object's group_segment_fixed_size when every global is used.
 *  - Nothing here prints, allocates outside LLVM, or knows about a kernel kind.
 *
 * Buffer resources (V#, docs/isa-notes.md §3): cj_irb_rsrc(base, num_records) has stride
 * 0 and flags arch->buffer_flags, so every access is a raw byte offset
 * `voffset + imm + soffset` range-checked per element against num_records:
 * an access past num_records reads 0 / is dropped. Builders route masked
 * lanes to an offset past num_records (cj_irb_oob) instead of branching.
 */
#ifndef CJ_CODEGEN_IRB_H
#define CJ_CODEGEN_IRB_H

#include <llvm-c/Core.h>
#include "codegen/kplan.h"

/* Address spaces of AMDGPU. */
enum { CJ_AS_FLAT = 0, CJ_AS_GLOBAL = 1, CJ_AS_LDS = 3, CJ_AS_RSRC = 8 };

/* AMDGPU data layout of LLVM 22 (checked: `opt-22 -mcpu=gfx950` on a module
 * with only the triple; tests compare it with the target machine's). */
#define CJ_AMDGPU_DATALAYOUT                                                                  \
  "e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-"   \
  "p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-" \
  "v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"

typedef struct cj_irb {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  const cj_arch *arch;
  LLVMValueRef fn;     /* the kernel (after cj_irb_kernel) */
  convjit_status st;   /* sticky: first error, CONVJIT_OK otherwise */
  uint32_t lds_bytes;  /* static LDS declared so far */
  /* Common types. */
  LLVMTypeRef vd, i1, i8, i16, i32, i64, f32, bf16, f16, v2i32, v4i32;
  LLVMTypeRef p1, p3, p8; /* ptr in address space 1 / 3 / 8 */
} cj_irb;

/* Module + builder for arch, module named `name`. */
convjit_status cj_irb_begin(cj_irb *g, LLVMContextRef ctx, const char *name, const cj_arch *arch);
/* Verify (LLVMVerifyModule) and hand over the module in *out; on any error
 * (sticky or verifier) dispose it and return the status. Always disposes
 * the builder. Safe to call after a failed begin. */
convjit_status cj_irb_end(cj_irb *g, LLVMModuleRef *out);
/* Record an error (first one wins) from a builder; returns g->st. */
convjit_status cj_irb_fail(cj_irb *g, convjit_status st);

/* The kernel: name p->name, arguments p->args (pointers: ptr addrspace(1)
 * noalias; 4/8-byte scalars: i32/i64 by value), attributes
 * "amdgpu-flat-work-group-size"="1,<threads>" (threads = block x*y*z) and,
 * if waves_per_eu > 0, "amdgpu-waves-per-eu"="<waves_per_eu>". Builder is
 * left at the end of the entry block. */
LLVMValueRef cj_irb_kernel(cj_irb *g, const cj_kplan *p, uint32_t waves_per_eu);
LLVMValueRef cj_irb_arg(cj_irb *g, unsigned i); /* by position: hand-made test kernels */
/* The kernel parameter of the plan's argument with that role (a failed
 * build, INTERNAL, if the plan has none). */
LLVMValueRef cj_irb_arg_role(cj_irb *g, const cj_kplan *p, cj_arg_role role);

/* Constants. */
LLVMValueRef cj_c1(cj_irb *g, int v);
LLVMValueRef cj_c16(cj_irb *g, uint32_t v);
LLVMValueRef cj_c32(cj_irb *g, uint32_t v);
LLVMValueRef cj_c64(cj_irb *g, uint64_t v);
LLVMValueRef cj_cf32(cj_irb *g, float v);
/* An integer or <k x i32> type of exactly `bytes` bytes (1, 2, 4, 8, 12, 16):
 * the natural type for a `bytes`-wide memory access. */
LLVMTypeRef cj_irb_mem_type(cj_irb *g, uint32_t bytes);
/* An MFMA row's operand type: <lanes x kind>, or the scalar when lanes == 1. */
LLVMTypeRef cj_irb_operand_type(cj_irb *g, cj_opnd_kind kind, uint32_t lanes);

/* Intrinsic call by name ("llvm.amdgcn.s.barrier"); `over` are the
 * overload types in LLVM's order (e.g. the return type of
 * raw.ptr.buffer.load). Returns the call (void calls too). */
LLVMValueRef cj_irb_call(cj_irb *g, const char *name, LLVMTypeRef *over, unsigned nover,
                         LLVMValueRef *args, unsigned nargs);

/* Work-item / work-group ids (i32); dim 0..2. tid has range [0, threads). */
LLVMValueRef cj_irb_tid(cj_irb *g, unsigned dim);
LLVMValueRef cj_irb_wgid(cj_irb *g, unsigned dim);
LLVMValueRef cj_irb_readfirstlane(cj_irb *g, LLVMValueRef v_i32);

/* Buffer resource over a global pointer (ptr addrspace(1)); num_records is
 * i64 (the low 32 bits are used; keep it <= 0xFFFFFFFF). */
LLVMValueRef cj_irb_rsrc(cj_irb *g, LLVMValueRef base, LLVMValueRef num_records);
/* A resource over a tensor of total_bytes from byte `origin` (i64,
 * uniform) on: base + origin, num_records = min(total_bytes - origin,
 * 2^31), so a workgroup rebased at its own origin addresses a tensor past
 * any 32-bit offset with 32-bit lane offsets, and reads past the tensor's
 * end are 0. */
LLVMValueRef cj_irb_rsrc_at(cj_irb *g, LLVMValueRef base, LLVMValueRef origin, uint64_t total_bytes);
/* valid ? off : oob (i32): lanes that must not touch memory. */
LLVMValueRef cj_irb_oob(cj_irb *g, LLVMValueRef valid, LLVMValueRef off, uint32_t oob);
/* raw.ptr.buffer.load/store of type ty (cj_irb_mem_type, or any legal type),
 * at voffset (i32, per lane) + soffset (i32, uniform); aux = cache bits (0). */
LLVMValueRef cj_irb_buf_load(cj_irb *g, LLVMTypeRef ty, LLVMValueRef rsrc, LLVMValueRef voff,
                             LLVMValueRef soff, uint32_t aux);
void cj_irb_buf_store(cj_irb *g, LLVMValueRef val, LLVMValueRef rsrc, LLVMValueRef voff,
                      LLVMValueRef soff, uint32_t aux);
/* raw.ptr.buffer.atomic.fadd (f32, result unused): split-K accumulation.
 * buffer_atomic_add_f32 on both arches (llc-22). */
void cj_irb_buf_atomic_fadd(cj_irb *g, LLVMValueRef val_f32, LLVMValueRef rsrc, LLVMValueRef voff,
                            LLVMValueRef soff);
/* 64-bit addressing for tensors past any 32-bit offset: base (ptr
 * addrspace(1)) + byte_off (i64), and plain global loads/stores there. */
LLVMValueRef cj_irb_gep1(cj_irb *g, LLVMValueRef base, LLVMValueRef byte_off_i64);
LLVMValueRef cj_irb_global_load(cj_irb *g, LLVMTypeRef ty, LLVMValueRef ptr, unsigned align);
void cj_irb_global_store(cj_irb *g, LLVMValueRef val, LLVMValueRef ptr, unsigned align);
/* Buffer -> LDS DMA (llvm.amdgcn.raw.ptr.buffer.load.lds): lane l writes
 * `bytes` at lds + imm + l*bytes (docs/isa-notes.md §4); memory side voff + soff + imm.
 * `lds` must be wave-uniform. bytes must pass cj_arch_dma_ok (sticky error
 * otherwise). imm is the 12-bit instruction offset. */
LLVMValueRef cj_irb_buf_load_lds(cj_irb *g, LLVMValueRef rsrc, LLVMValueRef lds, uint32_t bytes,
                                 LLVMValueRef voff, LLVMValueRef soff, uint32_t imm, uint32_t aux);

/* Scoped noalias (LLVM LangRef "Scoped noalias metadata"): cj_irb_scope
 * makes a scope named `name` of the module's one domain and returns the
 * one-element scope list !{scope} (one name, one scope: names are uniqued); cj_irb_scope_decl emits
 * llvm.experimental.noalias.scope.decl(list) at the builder: a scope
 * declared inside a loop body makes every noalias claim of it hold within
 * one iteration only. cj_irb_alias tags a memory instruction with
 * !alias.scope `scope` and !noalias `noalias` (either may be NULL). */
LLVMMetadataRef cj_irb_scope(cj_irb *g, const char *name);
LLVMMetadataRef cj_irb_scopes(cj_irb *g, const char *const *names, unsigned n); /* the list of n (1..8) named scopes */
void cj_irb_scope_decl(cj_irb *g, LLVMMetadataRef list);
void cj_irb_alias(cj_irb *g, LLVMValueRef inst, LLVMMetadataRef scope, LLVMMetadataRef noalias);

/* A static LDS buffer of `bytes` with `align` (power of two); adds to
 * g->lds_bytes. Returns the global (a ptr addrspace(3)). */
LLVMValueRef cj_irb_lds(cj_irb *g, const char *name, uint32_t bytes, uint32_t align);
/* lds + byte_off (i32): ptr addrspace(3). */
LLVMValueRef cj_irb_lds_ptr(cj_irb *g, LLVMValueRef lds, LLVMValueRef byte_off);
/* Plain LDS load/store of ty at lds + byte_off, with the given alignment. */
LLVMValueRef cj_irb_lds_load(cj_irb *g, LLVMTypeRef ty, LLVMValueRef lds, LLVMValueRef byte_off,
                             unsigned align);
void cj_irb_lds_store(cj_irb *g, LLVMValueRef val, LLVMValueRef lds, LLVMValueRef byte_off,
                      unsigned align);

/* Synchronization and scheduling. */
/* Raw llvm.amdgcn.s.barrier: a rendezvous only. LLVM 22 does not move IR
 * memory accesses across it, but it inserts NO s_waitcnt before it on
 * gfx942/gfx950 (checked: ds_write; s_barrier; ds_read with no wait), so
 * the caller must wait for its own LDS writes (lgkmcnt) / DMA (vmcnt)
 * first, or use cj_irb_workgroup_sync. */
void cj_irb_barrier(cj_irb *g);
/* Work-group sync for LDS handoff: fence release (workgroup) + s_barrier +
 * fence acquire (workgroup). LDS writes before it are visible to every wave
 * after it, and LLVM will not move LDS accesses across it (its memory
 * legalizer adds the s_waitcnt lgkmcnt(0) the release needs). */
void cj_irb_workgroup_sync(cj_irb *g);
void cj_irb_waitcnt(cj_irb *g, uint32_t imm);  /* llvm.amdgcn.s.waitcnt */
void cj_irb_setprio(cj_irb *g, uint32_t prio); /* llvm.amdgcn.s.setprio, 0..3 */
/* s_waitcnt simm16 of the gfx9 wait-counter model (arch.h cj_waitcnt_gfx9,
 * its one definition; docs/isa-notes.md §6), the model of every arch the
 * conv family builds for (its plan init checks arch->waitcnt): a counter
 * left at its maximum is not waited on; values above a field's maximum are
 * clamped to it. */
uint32_t cj_waitcnt_imm(uint32_t vmcnt, uint32_t expcnt, uint32_t lgkmcnt);
uint32_t cj_waitcnt_vmcnt(uint32_t n);   /* wait until vmcnt <= n only */
uint32_t cj_waitcnt_lgkmcnt(uint32_t n); /* wait until lgkmcnt <= n only */

/* Counted loop: for (iv = start; iv < end; iv += step) with i32 values
 * (end may be runtime). cj_irb_loop_begin leaves the builder in the body;
 * cj_irb_loop_end closes it and leaves the builder in the exit block. The
 * body may create blocks; loop_end branches from wherever the builder is. */
typedef struct cj_irb_loop {
  LLVMBasicBlockRef pre, header, body, exit;
  LLVMValueRef iv, step;
} cj_irb_loop;
void cj_irb_loop_begin(cj_irb *g, cj_irb_loop *l, LLVMValueRef start, LLVMValueRef end,
                       LLVMValueRef step, const char *name);
void cj_irb_loop_end(cj_irb *g, cj_irb_loop *l);

/* v (i32, per lane) in a VGPR the optimizer cannot see through (an empty
 * inline asm tied to its input: no instruction is emitted). For an LDS
 * base above 64 KiB: ds_read's offset field has 16 bits, and LLVM folds
 * base+constant into one constant per access, materializing a VGPR per
 * distinct address; an opaque base + small constants keeps one VGPR. */
LLVMValueRef cj_irb_opaque(cj_irb *g, LLVMValueRef v);
/* The same for a wave-uniform i32 in an SGPR, pinned where it is built (a
 * side effect, so LICM keeps it in the loop): values derived from it are
 * recomputed there instead of each holding an SGPR across the loop (M0
 * bases of a pipelined loop's DMAs: one per stage and instruction). */
LLVMValueRef cj_irb_opaque_sgpr(cj_irb *g, LLVMValueRef v);

#endif
