/* Plan -> LLVM IR module. No HIP, no I/O, no globals.
 * The module is created in the caller's LLVMContext and holds exactly one
 * kernel, named plan->name, whose explicit arguments are plan->args. */
#ifndef CJ_CODEGEN_CODEGEN_H
#define CJ_CODEGEN_CODEGEN_H

#include <llvm-c/Core.h>
#include "codegen/kplan.h"

convjit_status cj_codegen_build(const cj_kplan *p, LLVMContextRef ctx, LLVMModuleRef *out);

/* Family builders, internal to src/codegen: cj_codegen_build has begun the
 * module (irb.h) and dispatches on p->op; each adds its one kernel. */
struct cj_irb;
convjit_status cj_layout_build(struct cj_irb *g, const cj_kplan *p); /* layout.c */
convjit_status cj_conv_bf16_build(struct cj_irb *g, const cj_kplan *p); /* conv_bf16.c */
convjit_status cj_conv_finalize_build(struct cj_irb *g, const cj_kplan *p); /* conv_finalize.c */

#endif
