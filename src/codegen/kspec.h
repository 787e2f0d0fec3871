/* Kernel specs: one shipped kernel named by five text fields, so tables of
 * kernels (tests/golden/resources.tsv, the emulator's ISA coverage list,
 * tools) share one way of turning a row into a plan.
 *
 *   op     a name from the op table (kops.h):
 *          transpose      shape N,C,S             (layout.c)
 *          weight_pack    shape K,C,TRS,CPAD,ROW  (layout.c; also the
 *                                                  conv's pad-transpose),
 *                         or a conv's shape with bwd=I: the weight pack
 *                         of that backward-data phase (its taps reversed,
 *                         K and C swapped; kplan_phase.h)
 *          conv           shape N,C,D,H,W,K,T,R,S (conv_igemm.c)
 *          conv_finalize  shape as conv; the split-K finalize of that
 *                         conv (needs splitk >= 2)
 *          grid_pack      shape as conv; a backward-weight pre-pass of that
 *                         conv (wgrad implied), opts + side=x|dy
 *          wgrad_finalize shape as conv; its backward-weight finalize,
 *                         opts + dw=f32|<dtype> (default the dtype)
 *          conv_direct    shape as conv but C and K the totals (groups=C
 *                         required): the direct depthwise conv
 *                         (conv_direct.c; x NDHWC whatever layout= says),
 *                         opts + strip=P chunk=N, dgrad=1 (its
 *                         backward data), wgrad [db] [stage=1|2] (its
 *                         backward weight's partials / finalize;
 *                         kplan_direct.h)
 *          conv_generic   shape as conv; the shape-generic fallback kernel
 *                         of that conv's dtypes and epilogue (conv_generic.c;
 *                         x in the compute dtype)
 *   arch   gfx942 | gfx950
 *   dtype  bf16 | fp8 (layout ops); bf16-fp8 (transpose only: bf16 in,
 *          saturated fp8 out, cj_kplan_transpose_cvt_init); bf16-fp8q,
 *          fn-fnuz (layout ops: the fp8 conv's quantizing and E4M3FN ->
 *          FNUZ pre-passes, cj_kplan_*_prep_init); f16 (layout ops: the
 *          2-byte kernels of bf16); bf16 | f16 | fp8 (conv ops; fp8 is the
 *          arch's native format: E4M3FNUZ on gfx942, E4M3FN on gfx950)
 *   shape  unsigned decimals separated by commas
 *   opts   "-" (none) or space-separated options of the conv ops:
 *            pad=P (all dims) or pad=Pd,Ph,Pw   (lo = hi)
 *            stride=..  dil=..                  (same forms, default 1)
 *            groups=G  layout=ndhwc|ncdhw|X,Y   (grouped; NDHWC x read in place, y)
 *            wgrad  db  atomic    (flags: the backward-weight GEMM of this
 *                                  conv, its bias-gradient column, its
 *                                  opt-in atomics; kplan_wgrad.h)
 *            y=bf16|f16|f32                     (y's dtype; default the dtype's own:
 *                                                bf16 for bf16 and fp8, f16 for f16)
 *            knobs (kplan_knobs.h): tile=MxN  waves=MxN  stages=S  splitk=K
 *              wgm=G  dma=B  load=L  kbytes=N  prefetch=P  sched=1|2  roll=1|2, and
 *              the test hooks big_in  big_out  no_fast  pure_gemm_a (flags)
 *            epilogue ops (kplan_epi.h spec tokens, never knobs): scale
 *              residual[=BETA]  bias  act=relu|silu|gelu|0..3
 *            an output phase (kplan_phase.h) of the conv the other
 *            options describe, so a table can name the kernels a
 *            backward-data or upsampled plan launches:
 *              bwd=I [opad=O or Od,Oh,Ow]  phase I of the backward data
 *                  of that forward conv (the transposed conv's output
 *                  padding O; the knobs and epilogue apply to the phase)
 *              up=F or Fd,Fh,Fw phase=I   phase I of the conv of its x
 *                  nearest-upsampled by F (1 or 2 per dim)
 *              phases are numbered as the planners launch them (largest
 *              first, fills last); I past the last is INVALID_ARG
 *          unset conv options take the plan's defaults (cj_conv_opts = 0),
 *          the epilogue none.
 *
 * Never reads files and never builds: text in, plan out. A bad field is
 * CONVJIT_ERR_INVALID_ARG naming the field and its value. */
#ifndef CJ_CODEGEN_KSPEC_H
#define CJ_CODEGEN_KSPEC_H

#include "codegen/kplan.h"
#include "util/cj.h"

/* The op table's spec column (kops.h): a parsed shape -> plan. */
#define CJ_KSPEC_HOOK(id, name, key, print, build, spec, prefix)                                          \
  convjit_status spec(const cj_arch *a, const char *dtype, const char *shape_text, const uint64_t *shape,     \
                      int nshape, const char *opts, cj_kplan *out);
CJ_KOP_TABLE(CJ_KSPEC_HOOK)
#undef CJ_KSPEC_HOOK

convjit_status cj_kspec_plan(const char *op, const char *arch, const char *dtype, const char *shape,
                             const char *opts, cj_kplan *out);
/* The fields of a conv spec (op conv) without building a plan: geometry
 * (extents, pad, stride, dil; fp8 = the arch's native format), the knobs
 * it sets and its epilogue description. For the tuning shapes file
 * (docs/tuning.md). */
convjit_status cj_kspec_conv_parse(const char *arch, const char *dtype, const char *shape, const char *opts,
                                   cj_conv_geom *g, cj_conv_opts *o, cj_epilogue *e);
/* The spec's number lists, for tools parsing their own options: "a,b,c" ->
 * v[0..*n), at most max unsigned decimals; INVALID_ARG naming `what` and
 * the text ("--shape = 1,x: expected unsigned integers and commas"). */
convjit_status cj_parse_u64_list(const char *what, const char *s, uint64_t *v, int max, int *n);

#endif
