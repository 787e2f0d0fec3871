/* What the fake HIP runtime (fake_hip.c) records of each launch, shared by
 * the library and the tests that read it back through dlsym
 * ("fakehip_get_launch"). */
#ifndef CJ_TESTS_FAKE_HIP_H
#define CJ_TESTS_FAKE_HIP_H

#include <stddef.h>
#include <stdint.h>

typedef struct fakehip_launch {
  char name[128];
  unsigned grid[3], block[3], shared;
  void *stream;
  void **kernel_params;
  size_t kernarg_size;
  uint8_t kernargs[512];
  int extra_ok; /* extra[] was {BUFFER_POINTER, p, BUFFER_SIZE, &n, END} */
  const uint8_t *image; /* the loaded code object, valid until its module is unloaded */
  size_t image_size;
} fakehip_launch;

#endif
