/* LLVM module -> relocatable AMDGPU object (and assembly text), at -O3.
 * LLVM's process-wide initialization happens once, thread-safely, here.
 * The module is optimized in place by convjit's middle end (CJ_PASSES in
 * compile.c: LLVM 22's "default<O3>" less the passes that change no code
 * object, docs/pipeline.md "Middle end") and then lowered by codegen: it is not disposed (the caller owns it and its
 * LLVMContext), but must not be compiled again. Its triple and data layout
 * are set to amdgcn-amd-amdhsa. Thread-safe for modules in distinct
 * contexts (each call borrows a TargetMachine no other call uses meanwhile:
 * compile.c keeps idle ones for the next build). */
#ifndef CJ_PIPELINE_COMPILE_H
#define CJ_PIPELINE_COMPILE_H

#include <llvm-c/Core.h>
#include "arch/arch.h"
#include "util/cj.h"

void cj_llvm_init(void); /* idempotent, thread-safe */

typedef struct cj_compile_out {
  cj_blob object;   /* relocatable ELF (always) */
  cj_blob asm_text; /* assembly, when want_asm */
  cj_blob opt_ir;   /* optimized IR text, when want_opt_ir */
  /* Every blob here has a NUL after its last byte, not counted in size. */
  double ms;        /* wall time of optimize + codegen */
  double opt_ms;    /* the middle end's share of ms (the rest: verify, target machine, codegen) */
} cj_compile_out;

/* Verifies the module (LLVMVerifyModule) first; an invalid module is
 * CONVJIT_ERR_INTERNAL with the verifier's message. A failing pass pipeline
 * or a backend error diagnostic (e.g. LDS over the arch limit) is
 * CONVJIT_ERR_COMPILE with LLVM's message. On failure *out is empty. */
convjit_status cj_compile_module(LLVMModuleRef m, const cj_arch *arch, int want_asm,
                                 int want_opt_ir, cj_compile_out *out);
/* The same with another new-PM pipeline text for the middle end (NULL:
 * convjit's own); tests compare it with "default<O3>". */
convjit_status cj_compile_module_passes(LLVMModuleRef m, const cj_arch *arch, const char *passes, int want_asm,
                                        int want_opt_ir, cj_compile_out *out);
void cj_compile_out_free(cj_compile_out *o);
/* Disposes the idle target machines kept for reuse (the next build makes a
 * fresh one); tests use it to compare a fresh machine's bytes with a reused
 * one's. Thread-safe; machines in use stay theirs. */
void cj_compile_drop_machines(void);

#endif
