/* convjit-bench's shapes (bench.h): the default headline shapes with their
 * published numbers, the --shapes file, and a shape's descriptor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"

#define TOOL "convjit-bench"

#define SH(nm, f8, c, d, h, w, k, t, r, s, p0, p1, p2, kt, et, mt)                                           \
  {nm, f8, 0, {3, {1, c, d, h, w, k, t, r, s}, {p0, p1, p2}, {p0, p1, p2}, {1, 1, 1}, {1, 1, 1}}, kt, et, mt, 0, 0}
/* The seed's headline shapes (docs/original-design.md "Measured numbers"; the
 * "M=216k" rows are C2048 [60,80,45]: 60*80*45 = 216000 output positions;
 * its 3x3x3 row was published twice, 967 TF (async DMA) then 977 TF). */
const bench_shape bench_default_shapes[] = {
    SH("bf16 c2048 [60,80,45] 1x3x3", 0, 2048, 60, 80, 45, 2048, 1, 3, 3, 0, 1, 1, 924, 0, 0),
    SH("bf16 c2048 [60,80,45] 3x3x3", 0, 2048, 60, 80, 45, 2048, 3, 3, 3, 1, 1, 1, 977, 0, 0),
    SH("bf16 c512 [240,320,180] 1x3x3", 0, 512, 240, 320, 180, 512, 1, 3, 3, 0, 1, 1, 784, 0, 0),
    SH("bf16 c1024 [240,160,90] 1x3x3", 0, 1024, 240, 160, 90, 1024, 1, 3, 3, 0, 1, 1, 887, 0, 0),
    SH("fp8 c1024 [120,160,90] 1x3x3", 1, 1024, 120, 160, 90, 1024, 1, 3, 3, 0, 1, 1, 2310, 1991, 674),
    SH("fp8 c1024 [120,160,90] 3x1x1", 1, 1024, 120, 160, 90, 1024, 3, 1, 1, 1, 0, 0, 0, 1379, 574),
};
#undef SH
const int bench_ndefault_shapes = (int)(sizeof bench_default_shapes / sizeof bench_default_shapes[0]);

static int shape_line(const char *file, int line, char *text, bench_shape *s) {
  memset(s, 0, sizeof *s);
  s->g.rank = 3;
  for (int i = 0; i < 3; i++) s->g.stride[i] = s->g.dil[i] = 1;
  int have_shape = 0;
  char where[300];
  snprintf(where, sizeof where, "%s:%d", file, line);
  for (char *save = NULL, *t = strtok_r(text, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
    char *eq = strchr(t, '=');
    const char *val = eq ? eq + 1 : "";
    if (eq) *eq = 0;
    int64_t v[6];
    int n;
    if (!strcmp(t, "shape")) {
      if (cli_list(where, val, s->g.v, 9, 9, 1, CLI_MAX_EXTENT) < 0) return -1;
      have_shape = 1;
    } else if (!strcmp(t, "dtype")) {
      if (strcmp(val, "bf16") && strcmp(val, "f16") && strcmp(val, "fp8"))
        return cli_fail(where, val, "dtype=bf16, dtype=f16 or dtype=fp8");
      s->fp8 = !strcmp(val, "fp8");
      s->f16 = !strcmp(val, "f16");
    } else if (!strcmp(t, "y")) {
      if (strcmp(val, "f32")) return cli_fail(where, val, "y=f32 (y is otherwise the inputs' own 16-bit type)");
      s->y32 = 1;
    } else if (!strcmp(t, "pad")) {
      if ((n = cli_list(where, val, v, 3, 6, 0, CLI_MAX_EXTENT)) < 0) return -1;
      if (n != 3 && n != 6) return cli_fail(where, val, "pad=3 values (both sides) or 6 (all low, then all high)");
      for (int i = 0; i < 3; i++) { s->g.pad_lo[i] = v[i]; s->g.pad_hi[i] = v[n == 3 ? i : 3 + i]; }
    } else if (!strcmp(t, "stride") || !strcmp(t, "dilation")) {
      if (cli_list(where, val, t[0] == 's' ? s->g.stride : s->g.dil, 3, 3, 1, CLI_MAX_EXTENT) < 0) return -1;
    } else if (!strcmp(t, "bias") && !eq) {
      s->bias = 1;
    } else if (!strcmp(t, "name")) {
      snprintf(s->name, sizeof s->name, "%s", val);
    } else {
      return cli_fail(where, t, "shape=, dtype=, y=, pad=, stride=, dilation=, name= or bias");
    }
  }
  if (!have_shape) return cli_fail(where, "", "a shape line needs shape=N,C,D,H,W,K,T,R,S");
  if (!s->name[0])
    snprintf(s->name, sizeof s->name, "%s%s c%lld [%lld,%lld,%lld] %lldx%lldx%lld", s->fp8 ? "fp8" : s->f16 ? "f16" : "bf16",
             s->y32 ? "->f32" : "",
             (long long)s->g.v[1], (long long)s->g.v[2], (long long)s->g.v[3], (long long)s->g.v[4],
             (long long)s->g.v[6], (long long)s->g.v[7], (long long)s->g.v[8]);
  return 0;
}

bench_shape *bench_read_shapes(const char *file, int *n) {
  FILE *f = fopen(file, "r");
  if (!f) { fprintf(stderr, TOOL ": --shapes %s: cannot open it\n", file); return NULL; }
  bench_shape *v = NULL;
  int cap = 0, line = 0;
  char buf[1024];
  *n = 0;
  while (fgets(buf, sizeof buf, f)) {
    line++;
    char *hash = strchr(buf, '#');
    if (hash) *hash = 0;
    if (strspn(buf, " \t\r\n") == strlen(buf)) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 8;
      bench_shape *g = realloc(v, (size_t)cap * sizeof *v);
      if (!g) { fprintf(stderr, TOOL ": out of memory\n"); free(v); fclose(f); return NULL; }
      v = g;
    }
    if (shape_line(file, line, buf, &v[*n])) { free(v); fclose(f); return NULL; }
    (*n)++;
  }
  fclose(f);
  if (!*n) { fprintf(stderr, TOOL ": --shapes %s: no shape lines\n", file); free(v); return NULL; }
  return v;
}

convjit_conv_desc bench_shape_desc(const bench_shape *s, const char *arch) {
  convjit_conv_desc d = cli_conv_desc(&s->g);
  if (s->fp8) d.w_dtype = cli_fp8_dtype(cj_arch_from_name(arch));
  if (s->f16) d.x_dtype = d.w_dtype = d.y_dtype = CONVJIT_DTYPE_F16;
  if (s->y32) d.y_dtype = CONVJIT_DTYPE_F32;
  d.has_bias = s->bias;
  return d;
}

const bench_shape *bench_published(const bench_shape *s) {
  for (int i = 0; i < bench_ndefault_shapes; i++) {
    const bench_shape *d = &bench_default_shapes[i];
    if (d->fp8 == s->fp8 && !s->f16 && !s->y32 && cli_shape_equal(&d->g, &s->g))
      return d;
  }
  return NULL;
}
