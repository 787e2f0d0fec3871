/* Test support for the tests that take their conv kernels from the host
 * selection (src/host/select_conv.c), as convjit_plan_create does, so they
 * cover whatever schedule the selection ships for a shape and dtype. */
#ifndef CJ_TESTS_HOST_SUPPORT_SELECT_H
#define CJ_TESTS_HOST_SUPPORT_SELECT_H

#include "codegen/kplan.h"
#include "host/select.h"

/* The arch's own fp8 format (the one its MFMA reads). */
uint32_t ts_fp8_native(const cj_arch *a);

/* The selection's conv step (and its split-K finalize, *has_fin = 1) for
 * a conv of this geometry on arch a, with the device's default CU count
 * and `forced` options (NULL: none). Fails the test on any error. */
void ts_select_conv(const cj_arch *a, const cj_conv_geom *g, int has_bias, const cj_conv_opts *forced,
                    cj_kplan *conv, cj_kplan *fin, int *has_fin);

/* The selection's whole launch sequence (weight pack, transpose, conv,
 * finalize) for that conv. Fails the test on any error. */
void ts_select_seq(const cj_arch *a, const cj_conv_geom *g, int has_bias, const cj_conv_opts *forced, cj_seq *seq);
/* The same two with the fused epilogue's description epi (NULL: none) in
 * place of has_bias. y's dtype is the geometry's (cj_conv_y_dtype). */
void ts_select_conv_epi(const cj_arch *a, const cj_conv_geom *g, const cj_epilogue *epi, const cj_conv_opts *forced,
                        cj_kplan *conv, cj_kplan *fin, int *has_fin);
void ts_select_seq_epi(const cj_arch *a, const cj_conv_geom *g, const cj_epilogue *epi, const cj_conv_opts *forced,
                       cj_seq *seq);

/* Issue 11's headline shapes, i < TS_HEADLINE_N, in dtype dt: 1024->1024
 * [120,160,90] 1x3x3 pad 0,1,1; 2048->2048 [60,80,45] 3x3x3 pad 1;
 * 1024->1024 [120,160,90] 3x1x1 pad 1,0,0. */
#define TS_HEADLINE_N 3
void ts_headline_geom(int i, uint32_t dt, cj_conv_geom *g);

#endif
