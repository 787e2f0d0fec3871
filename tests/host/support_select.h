/* Test support for the tests that take their conv kernels from the host
 * selection (src/host/select_conv.c), as convjit_plan_create does, so they
 * cover whatever schedule the selection ships for a shape and dtype. */
#ifndef CJ_TESTS_HOST_SUPPORT_SELECT_H
#define CJ_TESTS_HOST_SUPPORT_SELECT_H

#include "codegen/kplan.h"

/* The arch's own fp8 format (the one its MFMA reads). */
uint32_t ts_fp8_native(const cj_arch *a);

/* The selection's conv step (and its split-K finalize, *has_fin = 1) for
 * a conv of this geometry on arch a, with the device's default CU count
 * and `forced` options (NULL: none). Fails the test on any error. */
void ts_select_conv(const cj_arch *a, const cj_conv_geom *g, int has_bias, const cj_conv_opts *forced,
                    cj_kplan *conv, cj_kplan *fin, int *has_fin);

#endif
