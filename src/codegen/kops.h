/* The kernel-op table: one row per kind of kernel convjit builds. Every place
 * that dispatches on an op expands this one X-macro (the enum and names in
 * kplan.h/kplan.c, the key and print hooks in kops.c, the builders in
 * codegen.c, the spec parsers in kspec.c), so adding an op is one row here
 * plus its plan file (kplan_<op>.c) and its builder file. An op's plan file
 * calls only kplan.c (below it); the files that expand the hook columns sit
 * above every op (scripts/check-layers finds a call loop otherwise).
 *
 *   X(ID, name, key, print, build, spec, prefix)
 *   ID      the enum constant CJ_KOP_<ID>
 *   name    text name: plan printouts, cache keys, kernel specs, tools
 *   key     void (const cj_kplan *, cj_strbuf *): the op's own key fields
 *   print   void (const cj_kplan *, cj_strbuf *): the same fields with reasons
 *   build   convjit_status (struct cj_irb *, const cj_kplan *): adds the one
 *           kernel to the begun module (codegen.h)
 *   spec    convjit_status (const cj_arch *, const char *dtype, const char
 *           *shape_text, const uint64_t *shape, int nshape, const char *opts,
 *           cj_kplan *): a kernel spec's fields -> plan (kspec.c)
 *   prefix  kernel symbol prefix (the plan appends what makes it unique)
 */
#ifndef CJ_CODEGEN_KOPS_H
#define CJ_CODEGEN_KOPS_H

#define CJ_KOP_TABLE(X)                                                                                       \
  X(TRANSPOSE, "transpose", cj_kplan_transpose_key, cj_kplan_transpose_print, cj_transpose_build,            \
    cj_kspec_transpose, "cj_transpose")                                                                       \
  X(WEIGHT_PACK, "weight_pack", cj_kplan_wpack_key, cj_kplan_wpack_print, cj_wpack_build, cj_kspec_wpack,   \
    "cj_wpack")                                                                                               \
  X(CONV, "conv", cj_kplan_conv_key, cj_kplan_conv_print, cj_conv_build, cj_kspec_conv, "cj_conv")           \
  X(CONV_FINALIZE, "conv_finalize", cj_kplan_finalize_key, cj_kplan_finalize_print, cj_conv_finalize_build,  \
    cj_kspec_finalize, "cj_conv_finalize")                                                                    \
  X(GRID_PACK, "grid_pack", cj_kplan_grid_pack_key, cj_kplan_grid_pack_print, cj_grid_pack_build,            \
    cj_kspec_grid_pack, "cj_grid_pack")                                                                       \
  X(WGRAD_FINALIZE, "wgrad_finalize", cj_kplan_wgrad_finalize_key, cj_kplan_wgrad_finalize_print,            \
    cj_wgrad_finalize_build, cj_kspec_wgrad_finalize, "cj_wgrad_finalize") \
  X(CONV_GENERIC, "conv_generic", cj_kplan_generic_key, cj_kplan_generic_print, cj_conv_generic_build,        \
    cj_kspec_generic, "cj_convg")                                                                             \
  X(CONV_DIRECT, "conv_direct", cj_kplan_direct_key, cj_kplan_direct_print, cj_conv_direct_build,            \
    cj_kspec_direct, "cj_convd")

#endif
