/* libFuzzer target: the kernel spec text parser (src/codegen/kspec.c).
 * The input is up to five newline-separated fields: op, arch, dtype, shape,
 * opts (missing ones are ""). A spec either becomes a plan or is refused
 * with an error naming a field; a plan has a NUL-terminated name, an arch,
 * and a canonical key. The shape field also goes through the tools' list
 * parser (cj_parse_u64_list). Seeds: rows of tests/golden/resources.tsv. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/kspec.h"

#define REQUIRE(c)                                                                  \
  do {                                                                              \
    if (!(c)) {                                                                     \
      fprintf(stderr, "fuzz_kspec: contract broken: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                      \
    }                                                                               \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0; /* specs are one short line */
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = 0;
  const char *f[5] = {"", "", "", "", ""};
  char *p = buf;
  for (int i = 0; i < 5 && p; i++) {
    f[i] = p;
    char *nl = strchr(p, '\n');
    if (nl) *nl = 0;
    p = nl ? nl + 1 : NULL;
  }
  cj_kplan plan;
  convjit_status st = cj_kspec_plan(f[0], f[1], f[2], f[3], f[4], &plan);
  if (st == CONVJIT_OK) {
    REQUIRE(plan.arch != NULL && memchr(plan.name, 0, sizeof plan.name) && plan.name[0]);
    cj_strbuf key = {0};
    cj_kplan_key(&plan, &key);
    REQUIRE(key.s != NULL && key.len == strlen(key.s));
    cj_sb_free(&key);
  } else {
    REQUIRE(st == CONVJIT_ERR_INVALID_ARG || st == CONVJIT_ERR_UNSUPPORTED || st == CONVJIT_ERR_OUT_OF_MEMORY);
    REQUIRE(convjit_last_error()[0] != 0);
  }
  uint64_t v[9];
  int n = -1;
  st = cj_parse_u64_list("--shape", f[3], v, 9, &n);
  REQUIRE(st != CONVJIT_OK || (n >= 1 && n <= 9));
  free(buf);
  return 0;
}
