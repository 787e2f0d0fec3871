/* Plan -> LLVM IR module. No HIP, no I/O, no globals.
 * The module is created in the caller's LLVMContext and holds exactly one
 * kernel, named plan->name, whose explicit arguments are plan->args. */
#ifndef CJ_CODEGEN_CODEGEN_H
#define CJ_CODEGEN_CODEGEN_H

#include <llvm-c/Core.h>
#include "codegen/kplan.h"

convjit_status cj_codegen_build(const cj_kplan *p, LLVMContextRef ctx, LLVMModuleRef *out);

#endif
