/* Plan -> LLVM IR module. No HIP, no I/O, no globals.
 * The module is created in the caller's LLVMContext and holds exactly one
 * kernel, named plan->name, whose explicit arguments are plan->args. */
#ifndef CJ_CODEGEN_CODEGEN_H
#define CJ_CODEGEN_CODEGEN_H

#include <llvm-c/Core.h>
#include "codegen/kplan.h"

convjit_status cj_codegen_build(const cj_kplan *p, LLVMContextRef ctx, LLVMModuleRef *out);

/* The op table's builders (kops.h), internal to src/codegen: cj_codegen_build
 * has begun the module (irb.h); each adds its one kernel and returns the
 * builder's status. */
struct cj_irb;
#define CJ_KOP_BUILDER(id, name, key, print, build, spec, prefix) \
  convjit_status build(struct cj_irb *g, const cj_kplan *p);
CJ_KOP_TABLE(CJ_KOP_BUILDER)
#undef CJ_KOP_BUILDER

#endif
