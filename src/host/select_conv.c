/* OWNED BY THE CONV WORK (issue 5): replace this whole file.
 *
 * Placeholder so the public API builds before any conv kernel exists:
 * every conv problem is CONVJIT_ERR_UNSUPPORTED with a clear reason. The
 * contract of cj_select_conv is in src/host/select.h. */
#include "host/select.h"

convjit_status cj_select_conv(const cj_conv_problem *p, const cj_arch *arch, int cu_count,
                              const cj_select_opts *o, cj_seq *out) {
  (void)p; (void)arch; (void)cu_count; (void)o; (void)out;
  return CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "conv kernels are not built yet (op conv arrives with the conv issue)");
}
