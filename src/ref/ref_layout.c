/* CPU reference transposes (contract in ref.h). Deliberately the plainest
 * possible loops: one element at a time, full 64-bit index arithmetic. */
#include <string.h>
#include "ref/ref.h"
#include "util/numfmt.h"

void cj_ref_transpose(const void *x, void *y, size_t elem_bytes, uint64_t n, uint64_t c, uint64_t s) {
  const unsigned char *src = x;
  unsigned char *dst = y;
  for (uint64_t in = 0; in < n; in++)
    for (uint64_t ic = 0; ic < c; ic++)
      for (uint64_t is = 0; is < s; is++) {
        uint64_t from = (in * c + ic) * s + is; /* x[n][c][s] */
        uint64_t to = (in * s + is) * c + ic;   /* y[n][s][c] */
        memcpy(dst + to * elem_bytes, src + from * elem_bytes, elem_bytes);
      }
}

void cj_ref_transpose_bf16_fp8(const uint16_t *x, uint8_t *y, int fmt, uint64_t n, uint64_t c, uint64_t s) {
  for (uint64_t in = 0; in < n; in++)
    for (uint64_t ic = 0; ic < c; ic++)
      for (uint64_t is = 0; is < s; is++)
        y[(in * s + is) * c + ic] = cj_f32_to_fp8_rne(cj_bf16_to_f32(x[(in * c + ic) * s + is]), (cj_nf_fp8)fmt, 1);
}

void cj_ref_weight_pack(const void *w, void *wp, size_t elem_bytes, uint64_t k, uint64_t c, uint64_t trs,
                        uint64_t c_pad, uint64_t row_elems) {
  const unsigned char *src = w;
  unsigned char *dst = wp;
  memset(dst, 0, k * row_elems * elem_bytes); /* padding channels and row tails */
  for (uint64_t ik = 0; ik < k; ik++)
    for (uint64_t ic = 0; ic < c; ic++)
      for (uint64_t t = 0; t < trs; t++) {
        uint64_t from = (ik * c + ic) * trs + t;     /* w[k][c][tap] */
        uint64_t to = ik * row_elems + t * c_pad + ic; /* wp[k][tap][c] */
        memcpy(dst + to * elem_bytes, src + from * elem_bytes, elem_bytes);
      }
}
