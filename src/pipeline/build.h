/* One plan -> one loaded-ready code object: codegen (IR) -> compile (-O3,
 * object) -> link (ld.lld) -> codeobj (metadata, resources). The single
 * path every caller uses (convjit-dump, the runtime cache on a miss, tests).
 * Each stage's text is kept only when asked (flags), for convjit-dump. */
#ifndef CJ_PIPELINE_BUILD_H
#define CJ_PIPELINE_BUILD_H

#include "codegen/kplan.h"
#include "pipeline/codeobj.h"
#include "util/cj.h"

enum {
  CJ_BUILD_KEEP_IR = 1,     /* IR as built (text) */
  CJ_BUILD_KEEP_OPT_IR = 2, /* IR after the -O3 pipeline (text) */
  CJ_BUILD_KEEP_ASM = 4     /* ISA text from the target machine */
};

typedef struct cj_built {
  cj_blob code_object;          /* the linked ELF, ready for module_load */
  cj_codeobj *co;               /* parsed metadata of code_object */
  const cj_kernel_info *info;   /* the plan's kernel inside co */
  cj_blob ir, opt_ir, asm_text; /* NUL-terminated text when kept */
  /* Wall time per stage: codegen (IR build), compile (-O3 + codegen; its
   * middle-end share opt_ms), link (temp files + lld in process, or the ld.lld spawn), parse. */
  double codegen_ms, compile_ms, opt_ms, link_ms, parse_ms;
} cj_built;

convjit_status cj_build_kernel(const cj_kplan *p, unsigned flags, cj_built *out);
void cj_built_free(cj_built *b); /* NULL-safe; leaves *b zeroed */

/* Hand-written LLVM IR text (test kernels, benchmarks) -> linked code object
 * through the same compile (-O3) and link stages; no plan, no metadata
 * checks. An IR parse error is CONVJIT_ERR_INVALID_ARG naming `what`. */
convjit_status cj_build_ir_text(const cj_arch *arch, const char *ir, const char *what, cj_blob *co);

/* The shipped-kernel policy: no VGPR/SGPR spills, no scratch, no dynamic
 * stack, LDS within arch->lds_bytes. CONVJIT_ERR_RESOURCE with the reason
 * (kernel name, which resource, the value and the limit) otherwise. */
convjit_status cj_check_resources(const cj_kernel_info *k, const cj_arch *arch);

#endif
