/* Test support for the spill gates of shipped kernel configurations
 * (test_conv_fp8_spill.c, test_conv_wgrad_spill.c). */
#ifndef CJ_TESTS_HOST_SUPPORT_SPILL_H
#define CJ_TESTS_HOST_SUPPORT_SPILL_H

#include "codegen/kplan.h"

/* Builds p through the whole pipeline (codegen -> -O3 -> ld.lld ->
 * metadata) and fails the test unless it passes cj_check_resources and,
 * from the code object's metadata: no VGPR/SGPR spills, no scratch, the
 * group segment equal to the plan's LDS bytes and within the arch's, the
 * flat work-group size equal to the plan's block; mfma (NULL: none) must
 * be in its ISA. Prints the registers, LDS and compile ms (cold, this
 * machine), never asserted; name_width pads the kernel name. */
void ts_build_spill_free(const cj_kplan *p, const char *mfma, int name_width);

#endif
