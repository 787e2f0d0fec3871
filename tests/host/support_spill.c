/* Spill-gate test support (contract in support_spill.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "support_spill.h"
#include "pipeline/build.h"

void ts_build_spill_free(const cj_kplan *p, const char *mfma, int name_width) {
  cj_built b = {0};
  if (cj_build_kernel(p, mfma ? CJ_BUILD_KEEP_ASM : 0, &b) != CONVJIT_OK)
    fail_msg("%s: build: %s", p->name, cj_error_text());
  if (cj_check_resources(b.info, p->arch) != CONVJIT_OK) fail_msg("%s: %s", p->name, cj_error_text());
  assert_int_equal(b.info->vgpr_spill_count, 0);
  assert_int_equal(b.info->sgpr_spill_count, 0);
  assert_int_equal(b.info->private_segment_size, 0);
  assert_int_equal(b.info->group_segment_size, p->lds_bytes);
  assert_true(b.info->group_segment_size <= p->arch->lds_bytes);
  assert_int_equal(b.info->max_flat_workgroup_size, p->block[0] * p->block[1] * p->block[2]);
  if (mfma && !strstr((const char *)b.asm_text.data, mfma)) fail_msg("%s: no %s in the ISA", p->name, mfma);
  printf("    %-6s %-*s vgpr %3u agpr %3u sgpr %3u lds %6u B  %6.1f ms\n", p->arch->name, name_width, p->name,
         b.info->vgpr_count, b.info->agpr_count, b.info->sgpr_count, b.info->group_segment_size,
         b.codegen_ms + b.compile_ms + b.link_ms);
  cj_built_free(&b);
}
