/* Small owned buffers, text building, clock and hashing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/cj.h"

void cj_blob_free(cj_blob *b) {
  if (!b) return;
  free(b->data);
  b->data = NULL;
  b->size = 0;
}

convjit_status cj_blob_set(cj_blob *b, const void *data, size_t size) {
  uint8_t *p = malloc(size + 1);
  CJ_ALLOC_CHECK(p);
  if (size) memcpy(p, data, size);
  p[size] = 0; /* text blobs are C strings; binary ones harmlessly terminated */
  free(b->data);
  b->data = p;
  b->size = size;
  return CONVJIT_OK;
}

void cj_sb_vprintf(cj_strbuf *sb, const char *fmt, va_list ap) {
  if (sb->oom) return;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) { sb->oom = 1; return; }
  if (sb->len + (size_t)n + 1 > sb->cap) {
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + (size_t)n + 1) cap *= 2;
    char *s = realloc(sb->s, cap);
    if (!s) { sb->oom = 1; return; }
    sb->s = s;
    sb->cap = cap;
  }
  vsnprintf(sb->s + sb->len, (size_t)n + 1, fmt, ap);
  sb->len += (size_t)n;
}

void cj_sb_printf(cj_strbuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cj_sb_vprintf(sb, fmt, ap);
  va_end(ap);
}

void cj_sb_free(cj_strbuf *sb) {
  if (!sb) return;
  free(sb->s);
  memset(sb, 0, sizeof *sb);
}

double cj_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double cj_thread_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

uint64_t cj_hash64(const void *data, size_t n, uint64_t seed) {
  const uint8_t *p = data;
  uint64_t h = 1469598103934665603ULL ^ seed;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

uint64_t cj_gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

const char *cj_dtype_name(convjit_dtype t) {
  switch (t) {
  case CONVJIT_DTYPE_BF16: return "bf16";
  case CONVJIT_DTYPE_FP8_E4M3FN: return "fp8_e4m3fn";
  case CONVJIT_DTYPE_FP8_E4M3FNUZ: return "fp8_e4m3fnuz";
  case CONVJIT_DTYPE_F32: return "f32";
  case CONVJIT_DTYPE_F16: return "f16";
  }
  return "?";
}

uint32_t cj_dtype_bytes(convjit_dtype t) {
  switch (t) {
  case CONVJIT_DTYPE_BF16:
  case CONVJIT_DTYPE_F16: return 2;
  case CONVJIT_DTYPE_FP8_E4M3FN:
  case CONVJIT_DTYPE_FP8_E4M3FNUZ: return 1;
  case CONVJIT_DTYPE_F32: return 4;
  }
  return 0;
}
