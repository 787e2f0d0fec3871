/* C entry points of pass_profile_llvm.cpp: convjit's middle-end runner
 * with optional per-pass CPU timing, and LLVM's backend pass timers
 * (contract of the profile in pass_profile.h). */
#ifndef CJ_PIPELINE_PASS_PROFILE_LLVM_H
#define CJ_PIPELINE_PASS_PROFILE_LLVM_H

#include <llvm-c/Error.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A pass (analysis: 1 for an analysis) ran for cpu_s seconds of this
 * thread's CPU time, exclusive of the passes and analyses it ran inside. */
typedef void (*cj_pass_cb)(void *ctx, const char *name, int analysis, double cpu_s);

/* The new pass manager's pipeline text on m with tm's AMDGPU passes and
 * TTI, as LLVMRunPasses with default options runs it (the same pass
 * builder, analyses and standard instrumentations); with cb, each pass's
 * time goes to cb (own callbacks on this call's instrumentation: nothing
 * process-wide). NULL, or LLVM's error. */
LLVMErrorRef cj_llvm_run_passes(LLVMModuleRef m, const char *passes, LLVMTargetMachineRef tm, cj_pass_cb cb,
                                void *ctx);

/* LLVM's process-wide switch of its pass timers (-time-passes): what the
 * legacy pass manager of codegen reads. */
void cj_llvm_time_passes(int on);
/* LLVM's legacy pass timers since the last call (then reset) handed to
 * add() per timer: name and user + system seconds. add NULL: reset only. */
void cj_llvm_take_timers(void (*add)(void *ctx, const char *name, double cpu_s), void *ctx);

#ifdef __cplusplus
}
#endif

#endif
