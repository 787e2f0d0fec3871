/* Fake device backend for runtime tests (see support_fakedev.c). */
#ifndef TESTS_RUNTIME_SUPPORT_FAKEDEV_H
#define TESTS_RUNTIME_SUPPORT_FAKEDEV_H
#include "runtime/device.h"

typedef struct fake_state {
  int loads, unloads, launches;
  void *last_kern;
  uint32_t last_grid[3], last_block[3];
  size_t last_kernarg_size;
  uint8_t last_kernargs[512];
} fake_state;

cj_device *fake_device_create(const char *arch);
fake_state *fake_device_state(cj_device *d);
#endif
