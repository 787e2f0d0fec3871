/* Procedural tensors of the tests past 2 GiB (test_conv_bwd_big.c,
 * test_conv_direct_big.c): element e of a tensor is grid8(e, span), a value
 * on the 1/8 grid in [-span/8, span/8] picked by a 64-bit mix of e, so a
 * test recomputes any element it checks without storing the tensor. */
#ifndef CJ_TESTS_HOST_GRID_FILL_H
#define CJ_TESTS_HOST_GRID_FILL_H

#include <stddef.h>
#include <stdint.h>

#include "util/numfmt.h"

static inline uint64_t grid_mix(uint64_t e) {
  e ^= e >> 33;
  e *= 0xff51afd7ed558ccdull;
  e ^= e >> 33;
  return e;
}

static inline float grid8(uint64_t e, int span) {
  return (float)((int)(grid_mix(e) % (2 * (uint64_t)span + 1)) - span) / 8.0f;
}

/* A convjit_emu_alloc_procedural fill: bf16 element e = grid8(e, 8), bytes [off, off + n). */
static inline void grid_fill_bf16(void *user, uint64_t off, void *dst, size_t n) {
  (void)user;
  uint8_t *d = dst;
  for (size_t i = 0; i < n; i++) {
    uint16_t b = cj_f32_to_bf16_rne(grid8((off + i) / 2, 8));
    d[i] = (uint8_t)((off + i) & 1 ? b >> 8 : b);
  }
}

#endif
