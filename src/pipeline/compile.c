/* LLVM module -> relocatable AMDGPU object, at -O3 (contract in compile.h).
 *
 *   verify -> target machine (amdgcn-amd-amdhsa, arch CPU + features)
 *          -> new-PM CJ_PASSES (in place) -> [optimized IR text]
 *          -> [asm text, from a clone] -> object
 *
 * Everything is per call (its own pass options, the caller's LLVMContext)
 * but the TargetMachine, which one call at a time borrows from a small
 * free list (cj_tm_take/cj_tm_give, under g_tm_mu): a fresh one costs each
 * build its subtarget and register tables again (docs/pipeline.md, "Target
 * machine reuse"). The other process-wide state we touch is the AMDGPU
 * target registration, done once under pthread_once (docs/pipeline.md,
 * "Threads", lists LLVM's globals and why each is safe). While compiling,
 * the context's diagnostic handler is replaced by one that collects
 * errors: LLVM's default handler would print and exit(1) on a backend
 * error (e.g. LDS over the limit), and a library must return a status
 * instead.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include "pipeline/compile.h"
#include "pipeline/pass_profile.h"

#define CJ_AMDGPU_TRIPLE "amdgcn-amd-amdhsa"

#if defined(__SANITIZE_THREAD__)
#define CJ_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CJ_TSAN 1
#endif
#endif

static pthread_once_t cj_llvm_once = PTHREAD_ONCE_INIT;

/* Idle target machines, one call at a time using each. A TargetMachine
 * keeps, per CPU and feature string, its subtarget (instruction info,
 * lowering tables, register info and its lazily built alias lists), which
 * every build of a fresh one makes again: 1.5 ms of a trivial kernel's 3 ms
 * codegen, and the alias lists grow with the registers a kernel touches.
 * Reuse changes no byte (tests/codegen/test_pipeline_build.c, and the 8-thread
 * comparison of tests/host/test_stress_threads.c, whose threads hand the
 * machines to each other). Kept: at most CJ_TM_KEEP, for the life of the
 * process (still reachable, like LLVM's own registries). */
enum { CJ_TM_KEEP = 16, CJ_TM_KEY = 256 };
typedef struct cj_tm_slot {
  char key[CJ_TM_KEY]; /* "cpu\nfeatures" */
  LLVMTargetMachineRef tm;
} cj_tm_slot;
static pthread_mutex_t g_tm_mu = PTHREAD_MUTEX_INITIALIZER;
static cj_tm_slot g_tm_idle[CJ_TM_KEEP];
static uint32_t g_tm_nidle;

/* 0 when the key does not fit: that machine is made fresh and disposed. */
static int cj_tm_key(const cj_arch *arch, char key[CJ_TM_KEY]) {
  int n = snprintf(key, CJ_TM_KEY, "%s\n%s", arch->name, arch->features ? arch->features : "");
  return n >= 0 && n < CJ_TM_KEY;
}

/* An idle machine for the arch, else a new one (NULL: LLVM refused). */
static LLVMTargetMachineRef cj_tm_take(LLVMTargetRef target, const cj_arch *arch) {
  char key[CJ_TM_KEY];
  LLVMTargetMachineRef tm = NULL;
  if (cj_tm_key(arch, key)) {
    pthread_mutex_lock(&g_tm_mu);
    for (uint32_t i = g_tm_nidle; i-- > 0;)
      if (!strcmp(g_tm_idle[i].key, key)) {
        tm = g_tm_idle[i].tm;
        g_tm_idle[i] = g_tm_idle[--g_tm_nidle];
        break;
      }
    pthread_mutex_unlock(&g_tm_mu);
  }
  return tm ? tm
            : LLVMCreateTargetMachine(target, CJ_AMDGPU_TRIPLE, arch->name, arch->features ? arch->features : "",
                                      LLVMCodeGenLevelAggressive, LLVMRelocPIC, LLVMCodeModelDefault);
}

/* Back to the idle list, or disposed when the list is full. */
static void cj_tm_give(const cj_arch *arch, LLVMTargetMachineRef tm) {
  char key[CJ_TM_KEY];
  if (cj_tm_key(arch, key)) {
    pthread_mutex_lock(&g_tm_mu);
    if (g_tm_nidle < CJ_TM_KEEP) {
      memcpy(g_tm_idle[g_tm_nidle].key, key, sizeof key);
      g_tm_idle[g_tm_nidle++].tm = tm;
      tm = NULL;
    }
    pthread_mutex_unlock(&g_tm_mu);
  }
  if (tm) LLVMDisposeTargetMachine(tm);
}

void cj_compile_drop_machines(void) {
  LLVMTargetMachineRef idle[CJ_TM_KEEP];
  pthread_mutex_lock(&g_tm_mu);
  uint32_t n = g_tm_nidle;
  for (uint32_t i = 0; i < n; i++) idle[i] = g_tm_idle[i].tm;
  g_tm_nidle = 0;
  pthread_mutex_unlock(&g_tm_mu);
  for (uint32_t i = 0; i < n; i++) LLVMDisposeTargetMachine(idle[i]);
}

static convjit_status cj_compile(LLVMModuleRef m, const cj_arch *arch, const char *passes, int want_asm,
                                 int want_opt_ir, cj_compile_out *out);

/* The middle end: LLVM 22's default<O3> as `opt -passes='default<O3>'
 * -print-pipeline-passes` spells it for amdgcn, less every pass whose
 * removal (28 instances) left the code objects of a 55-kernel corpus (every kernel of the
 * default plans of the three headline shapes and two video-VAE layers, bf16
 * and fp8, both arches) byte-identical; it runs in about two thirds of the
 * time (docs/pipeline.md, "Middle end"). tests/host/test_passes.c keeps
 * checking the identity against default<O3>. */
static const char CJ_PASSES[] =
    "memprof-remove-attributes,annotation2metadata,forceattrs,inferattrs,coro-early,"
    "function<eager-inv>(ee-instrument<>,lower-expect,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;no-switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,"
    "sroa<modify-cfg>,early-cse<>),amdgpu-printf-runtime-binding,ipsccp,called-value-propagation,"
    "globalopt,function<eager-inv>(mem2reg,instcombine<max-iterations=1;no-verify-fixpoint>,"
    "amdgpu-usenative,amdgpu-simplifylib,amdgpu-uniform-intrinsic-combine,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>),"
    "always-inline,require<globals-aa>,function(invalidate<aa>),require<profile-summary>,"
    "cgscc(devirt<4>(inline,function-attrs<skip-non-recursive-function-attrs>,argpromotion,"
    "openmp-opt-cgscc,function(amdgpu-promote-kernel-arguments,infer-address-spaces,"
    "amdgpu-lower-kernel-attributes,amdgpu-promote-alloca-to-vector),"
    "function<eager-inv;no-rerun>(sroa<modify-cfg>,early-cse<memssa>,correlated-propagation,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,"
    "instcombine<max-iterations=1;no-verify-fixpoint>,amdgpu-usenative,amdgpu-simplifylib,"
    "amdgpu-uniform-intrinsic-combine,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,"
    "reassociate,loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-allowspeculation>,"
    "loop-rotate<header-duplication;no-prepare-for-lto>,licm<allowspeculation>),"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,"
    "instcombine<max-iterations=1;no-verify-fixpoint>,loop(indvars,extra-simple-loop-unswitch-passes,"
    "loop-deletion,loop-unroll-full),sroa<modify-cfg>,gvn<>,sccp,amdgpu-usenative,amdgpu-simplifylib,"
    "amdgpu-uniform-intrinsic-combine,jump-threading,correlated-propagation,move-auto-init,"
    "loop-mssa(licm<allowspeculation>),coro-elide,infer-address-spaces,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;switch-to-arithmetic;no-switch-to-lookup;keep-loops;hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,"
    "amdgpu-usenative,amdgpu-simplifylib,amdgpu-uniform-intrinsic-combine),function-attrs,"
    "function(require<should-not-run-function-passes>),coro-split,coro-annotation-elide)),deadargelim,"
    "coro-cleanup,globalopt,globaldce,elim-avail-extern,rpo-function-attrs,recompute-globalsaa,"
    "function<eager-inv>(drop-unnecessary-assumes,lower-constant-intrinsics,"
    "loop(loop-rotate<header-duplication;no-prepare-for-lto>,loop-deletion),inject-tli-mappings,"
    "drop-unnecessary-assumes,infer-alignment,"
    "simplifycfg<bonus-inst-threshold=1;forward-switch-cond;switch-range-to-icmp;switch-to-arithmetic;switch-to-lookup;no-keep-loops;hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,"
    "vector-combine,instcombine<max-iterations=1;no-verify-fixpoint>,loop-unroll<O3>,transform-warning,"
    "sroa<preserve-cfg>,infer-alignment,instcombine<max-iterations=1;no-verify-fixpoint>,"
    "loop-mssa(licm<allowspeculation>),alignment-from-assumptions,infer-address-spaces,tailcallelim,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;speculate-unpredictables>),"
    "alloc-token,amdgpu-attributor,globaldce,constmerge,cg-profile,rel-lookup-table-converter,"
    "function(annotation-remarks),verify";

#ifdef CJ_TSAN
/* TSan builds only: one -O3 + codegen of a kernel calling inline asm, inside
 * the pthread_once. LLVM keeps some tables in function-local statics built
 * on first use (C++ guarded initialization, thread-safe). The Attributor's
 * call-edge analysis inserts "ompx_no_call_asm" for each inline-asm call
 * into one of them (getKnownAssumptionStrings(), a StringSet seeded with
 * that string among 7, so the insert only looks up). A thread that finds
 * the guard already set skips
 * __cxa_guard_acquire with a plain load inside uninstrumented libLLVM, so
 * TSan never sees the ordering and reports the seeding thread's writes
 * against the later lookups (StringMapImpl::LookupBucketFor): a false
 * positive. Building those statics here, under pthread_once, gives TSan
 * the happens-before it cannot see otherwise; other builds need nothing. */
static void cj_llvm_warmup(void) {
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("cj_warmup", c);
  LLVMTypeRef vt = LLVMFunctionType(LLVMVoidTypeInContext(c), NULL, 0, 0);
  LLVMValueRef fn = LLVMAddFunction(m, "cj_warmup", vt);
  LLVMSetFunctionCallConv(fn, LLVMAMDGPUKERNELCallConv);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, fn, "entry"));
  LLVMValueRef nop = LLVMGetInlineAsm(vt, "s_nop 0", 7, "", 0, 1, 0, LLVMInlineAsmDialectATT, 0);
  LLVMBuildCall2(b, vt, nop, NULL, 0, "");
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  cj_compile_out out;
  if (cj_compile(m, cj_arch_from_name("gfx942"), CJ_PASSES, 1, 0, &out) == CONVJIT_OK) cj_compile_out_free(&out);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
}
#endif

static void cj_llvm_init_once(void) {
  LLVMInitializeAMDGPUTargetInfo();
  LLVMInitializeAMDGPUTarget();
  LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUAsmPrinter();
  LLVMInitializeAMDGPUAsmParser();
  LLVMInitializeAMDGPUDisassembler();
#ifdef CJ_TSAN
  cj_llvm_warmup();
#endif
}

void cj_llvm_init(void) { pthread_once(&cj_llvm_once, cj_llvm_init_once); }

void cj_compile_out_free(cj_compile_out *o) {
  if (!o) return;
  cj_blob_free(&o->object);
  cj_blob_free(&o->asm_text);
  cj_blob_free(&o->opt_ir);
  o->ms = 0;
}

/* Backend errors reported through the context while this call runs. */
typedef struct cj_diag {
  cj_strbuf errors;
  int nerrors;
} cj_diag;

static void cj_diag_handler(LLVMDiagnosticInfoRef di, void *ctx) {
  cj_diag *d = ctx;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError) return; /* warnings/remarks: not ours to print */
  char *msg = LLVMGetDiagInfoDescription(di);
  if (d->nerrors < 4) cj_sb_printf(&d->errors, "%s%s", d->nerrors ? "; " : "", msg ? msg : "?");
  d->nerrors++;
  LLVMDisposeMessage(msg);
}

static convjit_status cj_emit(LLVMTargetMachineRef tm, LLVMModuleRef m, LLVMCodeGenFileType ft,
                              cj_blob *out, cj_diag *diag) {
  char *err = NULL;
  LLVMMemoryBufferRef mb = NULL;
  const char *what = ft == LLVMObjectFile ? "object" : "assembly";
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, ft, &err, &mb)) {
    convjit_status st = CJ_ERR(CONVJIT_ERR_COMPILE, "LLVM could not emit %s: %s", what, err ? err : "?");
    LLVMDisposeMessage(err);
    return st;
  }
  LLVMDisposeMessage(err);
  if (diag->nerrors) {
    LLVMDisposeMemoryBuffer(mb);
    return CJ_ERR(CONVJIT_ERR_COMPILE, "LLVM backend error while emitting %s: %s", what,
                  diag->errors.s ? diag->errors.s : "?");
  }
  convjit_status st = cj_blob_set(out, LLVMGetBufferStart(mb), LLVMGetBufferSize(mb));
  LLVMDisposeMemoryBuffer(mb);
  return st;
}

static convjit_status cj_compile_steps(LLVMModuleRef m, LLVMTargetMachineRef tm, const char *passes, int want_asm,
                                       int want_opt_ir, cj_compile_out *out, cj_diag *diag) {
  /* The new pass manager; the target machine supplies AMDGPU's own passes
   * (the amdgpu-* names in CJ_PASSES) and TTI (address spaces, uniformity),
   * like clang's -O3. */
  double t0 = cj_now_ms();
  void *prof;
  cj_pass_cb cb = cj_pass_profile_opt_cb(&prof);
  LLVMErrorRef e = cj_llvm_run_passes(m, passes, tm, cb, prof);
  out->opt_ms = cj_now_ms() - t0;
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    convjit_status st = CJ_ERR(CONVJIT_ERR_COMPILE, "LLVM middle-end pipeline failed: %s", msg ? msg : "?");
    LLVMDisposeErrorMessage(msg);
    return st;
  }
  CJ_CHECK(diag->nerrors == 0, CONVJIT_ERR_COMPILE, "LLVM error in the middle-end pipeline: %s",
           diag->errors.s ? diag->errors.s : "?");
  if (want_opt_ir) {
    char *s = LLVMPrintModuleToString(m);
    CJ_ALLOC_CHECK(s);
    convjit_status st = cj_blob_set(&out->opt_ir, s, strlen(s));
    LLVMDisposeMessage(s);
    CJ_TRY(st);
  }
  if (want_asm) {
    /* Codegen lowers the IR it runs on, so the assembly comes from a clone and
     * the object from the original: both see the same optimized module. */
    LLVMModuleRef c = LLVMCloneModule(m);
    CJ_ALLOC_CHECK(c);
    convjit_status st = cj_emit(tm, c, LLVMAssemblyFile, &out->asm_text, diag);
    LLVMDisposeModule(c);
    CJ_TRY(st);
  }
  cj_pass_profile_backend_begin();
  convjit_status st = cj_emit(tm, m, LLVMObjectFile, &out->object, diag);
  cj_pass_profile_backend_end();
  return st;
}

convjit_status cj_compile_module(LLVMModuleRef m, const cj_arch *arch, int want_asm,
                                 int want_opt_ir, cj_compile_out *out) {
  return cj_compile_module_passes(m, arch, NULL, want_asm, want_opt_ir, out);
}

convjit_status cj_compile_module_passes(LLVMModuleRef m, const cj_arch *arch, const char *passes, int want_asm,
                                        int want_opt_ir, cj_compile_out *out) {
  CJ_CHECK(m != NULL, CONVJIT_ERR_INVALID_ARG, "cj_compile_module: module is NULL");
  CJ_CHECK(arch != NULL && arch->name != NULL, CONVJIT_ERR_INVALID_ARG, "cj_compile_module: arch is NULL");
  CJ_CHECK(out != NULL, CONVJIT_ERR_INVALID_ARG, "cj_compile_module: out is NULL");
  cj_llvm_init();
  return cj_compile(m, arch, passes ? passes : CJ_PASSES, want_asm, want_opt_ir, out);
}

/* cj_compile_module after its checks and LLVM's initialization. */
static convjit_status cj_compile(LLVMModuleRef m, const cj_arch *arch, const char *passes, int want_asm,
                                 int want_opt_ir, cj_compile_out *out) {
  memset(out, 0, sizeof *out);
  double t0 = cj_now_ms();

  char *vmsg = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &vmsg)) {
    convjit_status st = CJ_ERR(CONVJIT_ERR_INTERNAL, "generated LLVM module is invalid: %s",
                               vmsg ? vmsg : "?");
    LLVMDisposeMessage(vmsg);
    return st;
  }
  LLVMDisposeMessage(vmsg);

  char *terr = NULL;
  LLVMTargetRef target = NULL;
  if (LLVMGetTargetFromTriple(CJ_AMDGPU_TRIPLE, &target, &terr)) {
    convjit_status st = CJ_ERR(CONVJIT_ERR_COMPILE, "LLVM has no AMDGPU target: %s", terr ? terr : "?");
    LLVMDisposeMessage(terr);
    return st;
  }
  LLVMDisposeMessage(terr);
  LLVMTargetMachineRef tm = cj_tm_take(target, arch);
  CJ_CHECK(tm != NULL, CONVJIT_ERR_COMPILE, "LLVM could not create a target machine for %s (features \"%s\")",
           arch->name, arch->features ? arch->features : "");

  LLVMSetTarget(m, CJ_AMDGPU_TRIPLE);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m, td);
  LLVMDisposeTargetData(td);

  LLVMContextRef ctx = LLVMGetModuleContext(m);
  LLVMDiagnosticHandler old_h = LLVMContextGetDiagnosticHandler(ctx);
  void *old_c = LLVMContextGetDiagnosticContext(ctx);
  cj_diag diag = {0};
  LLVMContextSetDiagnosticHandler(ctx, cj_diag_handler, &diag);

  convjit_status st = cj_compile_steps(m, tm, passes, want_asm, want_opt_ir, out, &diag);

  LLVMContextSetDiagnosticHandler(ctx, old_h, old_c);
  cj_sb_free(&diag.errors);
  cj_tm_give(arch, tm);
  if (st != CONVJIT_OK) {
    cj_compile_out_free(out);
    return st;
  }
  out->ms = cj_now_ms() - t0;
  return CONVJIT_OK;
}
