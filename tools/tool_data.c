/* tool_data.h: the tools' reproducible test data and dtype helpers. */
#include <stdlib.h>
#include <string.h>
#include "tool_data.h"

uint64_t tool_rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float tool_rng_unit(uint64_t *s) { return (float)((tool_rng_next(s) >> 40) * (2.0 / 16777216.0) - 1.0); }

void tool_fill_random(void *dst, float *vals, size_t n, convjit_dtype t, uint64_t *seed) {
  const cj_nf_fp8 fmt = tool_fp8_format(t);
  for (size_t i = 0; i < n; i++) {
    float f = tool_rng_unit(seed);
    if (t == CONVJIT_DTYPE_F32) {
      ((float *)dst)[i] = f;
      if (vals) vals[i] = f;
    } else if (tool_dtype_bytes(t) == 2) {
      uint16_t h = t == CONVJIT_DTYPE_F16 ? cj_f32_to_f16_rne(f) : cj_f32_to_bf16_rne(f);
      ((uint16_t *)dst)[i] = h;
      if (vals) vals[i] = tool_decode(dst, i, t);
    } else {
      uint8_t b = cj_f32_to_fp8_rne(f, fmt, 1);
      ((uint8_t *)dst)[i] = b;
      if (vals) vals[i] = cj_fp8_to_f32(b, fmt);
    }
  }
}

float tool_decode(const void *p, size_t i, convjit_dtype t) {
  switch (t) {
  case CONVJIT_DTYPE_BF16: return cj_bf16_to_f32(((const uint16_t *)p)[i]);
  case CONVJIT_DTYPE_F16: return cj_f16_to_f32(((const uint16_t *)p)[i]);
  case CONVJIT_DTYPE_F32: return ((const float *)p)[i];
  case CONVJIT_DTYPE_FP8_E4M3FNUZ: return cj_fp8_to_f32(((const uint8_t *)p)[i], CJ_NF_E4M3FNUZ);
  default: return cj_fp8_to_f32(((const uint8_t *)p)[i], CJ_NF_E4M3FN);
  }
}

size_t tool_dtype_bytes(convjit_dtype t) { return cj_dtype_bytes(t); }

int tool_is_fp8(convjit_dtype t) { return t == CONVJIT_DTYPE_FP8_E4M3FN || t == CONVJIT_DTYPE_FP8_E4M3FNUZ; }

cj_nf_fp8 tool_fp8_format(convjit_dtype t) { return t == CONVJIT_DTYPE_FP8_E4M3FNUZ ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN; }

cj_ref_conv_shape tool_ref_shape(const cj_conv_problem *p) {
  cj_ref_conv_shape sh = cj_ref_conv_shape_make((uint64_t)p->n, (uint64_t)p->c, (uint64_t)p->d, (uint64_t)p->h,
                                                (uint64_t)p->w, (uint64_t)p->k, (uint64_t)p->t, (uint64_t)p->r,
                                                (uint64_t)p->s);
  for (int i = 0; i < 3; i++) {
    sh.stride[i] = (uint32_t)p->stride[i];
    sh.pad_lo[i] = (uint32_t)p->pad_lo[i];
    sh.pad_hi[i] = (uint32_t)p->pad_hi[i];
    sh.dilation[i] = (uint32_t)p->dil[i];
  }
  return sh;
}

uint8_t *tool_upsample_bytes(const void *x, const cj_ref_conv_shape *sh, const uint32_t up[3], int ndhwc) {
  const uint64_t in[3] = {sh->d, sh->h, sh->w}, o[3] = {sh->d * up[0], sh->h * up[1], sh->w * up[2]};
  const uint64_t S = in[0] * in[1] * in[2], So = o[0] * o[1] * o[2];
  uint8_t *u = malloc(sh->n * sh->c * So);
  if (!u) return NULL;
  for (uint64_t n = 0; n < sh->n; n++)
    for (uint64_t c = 0; c < sh->c; c++)
      for (uint64_t q = 0; q < So; q++) {
        uint64_t a = q / (o[1] * o[2]) / up[0], b = q / o[2] % o[1] / up[1], e = q % o[2] / up[2];
        uint64_t p = (a * in[1] + b) * in[2] + e;
        u[ndhwc ? (n * So + q) * sh->c + c : (n * sh->c + c) * So + q] =
            ((const uint8_t *)x)[ndhwc ? (n * S + p) * sh->c + c : (n * sh->c + c) * S + p];
      }
  return u;
}

/* ---- tensors by role --------------------------------------------------------- */

int64_t tool_kind_channels(const cj_conv_problem *p) {
  const cj_conv_kind_row *k = cj_conv_kind_of(p->kind);
  return k && k->channels == CJ_EPI_CHANNELS_C ? p->c : p->k;
}

size_t tool_tensor_elems(const cj_conv_problem *p, cj_tensor t, convjit_dtype *dt) {
  const int64_t xs = p->n * p->c * p->d * p->h * p->w, ys = p->n * p->k * p->od * p->oh * p->ow;
  const int64_t ws = p->k * (p->c / p->groups) * p->t * p->r * p->s;
  convjit_dtype d = CONVJIT_DTYPE_F32;
  int64_t n = 0;
  switch (t) {
  case CJ_TENSOR_X:
  case CJ_TENSOR_DX: d = p->x_dtype, n = xs; break;
  case CJ_TENSOR_Y:
  case CJ_TENSOR_DY: d = p->y_dtype, n = ys; break;
  case CJ_TENSOR_W_RAW:
  case CJ_TENSOR_DW: d = p->w_dtype, n = ws; break;
  case CJ_TENSOR_BIAS:
  case CJ_TENSOR_SCALE: n = tool_kind_channels(p); break;
  case CJ_TENSOR_DB: n = p->k; break;
  case CJ_TENSOR_X_PREV: d = p->x_dtype, n = p->n * p->c * p->pad_lo[0] * p->h * p->w; break;
  case CJ_TENSOR_RESIDUAL: {
    const cj_tensor out = tool_kind_output(p->kind);
    return out == CJ_TENSOR_RESIDUAL || out == CJ_TENSOR_NONE ? 0 : tool_tensor_elems(p, out, dt);
  }
  default: break; /* W_PACKED, WORKSPACE: the plan's sizes */
  }
  if (dt) *dt = d;
  return (size_t)n;
}

static cj_tensor first_role(uint32_t mask) {
  return mask ? (cj_tensor)__builtin_ctz(mask) : CJ_TENSOR_NONE;
}

cj_tensor tool_kind_input(convjit_conv_kind kind) {
  const cj_conv_kind_row *k = cj_conv_kind_of(kind);
  return k ? first_role(k->reads & ~(CJ_TB(W_RAW) | CJ_TB(W_PACKED))) : CJ_TENSOR_NONE;
}

cj_tensor tool_kind_output(convjit_conv_kind kind) {
  const cj_conv_kind_row *k = cj_conv_kind_of(kind);
  return k ? first_role(k->writes) : CJ_TENSOR_NONE;
}

void tool_args_set(convjit_conv_args *a, cj_tensor t, void *ptr) {
  if (!cj_tensor_known(t) || cj_tensor_rows[t].off == SIZE_MAX) return;
  memcpy((char *)a + cj_tensor_rows[t].off, &ptr, sizeof ptr);
}
