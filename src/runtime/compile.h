/* LLVM module -> relocatable AMDGPU object (and assembly text), at -O3.
 * LLVM's process-wide initialization happens once, thread-safely, here.
 * The module is not consumed; it is never modified except by the optimizer
 * when CJ_COMPILE_OPT_IR asks for the optimized IR. */
#ifndef CJ_RUNTIME_COMPILE_H
#define CJ_RUNTIME_COMPILE_H

#include <llvm-c/Core.h>
#include "codegen/arch.h"
#include "util/cj.h"

void cj_llvm_init(void); /* idempotent, thread-safe */

typedef struct cj_compile_out {
  cj_blob object;   /* relocatable ELF (always) */
  cj_blob asm_text; /* assembly, NUL-terminated, when want_asm */
  cj_blob opt_ir;   /* optimized IR text, NUL-terminated, when want_opt_ir */
  double ms;        /* wall time of optimize + codegen */
} cj_compile_out;

/* Verifies the module (LLVMVerifyModule) first; an invalid module is
 * CONVJIT_ERR_INTERNAL with the verifier's message. */
convjit_status cj_compile_module(LLVMModuleRef m, const cj_arch *arch, int want_asm,
                                 int want_opt_ir, cj_compile_out *out);
void cj_compile_out_free(cj_compile_out *o);

#endif
