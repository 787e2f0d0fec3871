/* What the fake HIP runtime (fake_hip.c) records of each launch, shared by
 * the library and the tests that read it back through dlsym
 * ("fakehip_get_launch"). */
#ifndef CJ_TESTS_FAKE_HIP_H
#define CJ_TESTS_FAKE_HIP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* hipGetDeviceProperties of a fake gfx942: the ROCm 5.x hipDeviceProp_t
 * layout (name first, gcnArchName at byte 396), the rest zero. */
static inline void fakehip_fill_props(void *p, const char *name) {
  memset(p, 0, 792);
  strcpy((char *)p, name);
  strcpy((char *)p + 396, "gfx942:sramecc+:xnack-");
}

/* Bytes of an ELF64 image: the end of its section header table or of its
 * furthest section, whichever is later (the loader gets no size). */
static inline size_t fakehip_elf_size(const uint8_t *b) {
  uint64_t shoff, end;
  uint16_t shnum, shentsize;
  memcpy(&shoff, b + 0x28, 8);
  memcpy(&shentsize, b + 0x3a, 2);
  memcpy(&shnum, b + 0x3c, 2);
  end = shoff + (uint64_t)shnum * shentsize;
  for (unsigned i = 0; i < shnum; i++) {
    const uint8_t *sh = b + shoff + (uint64_t)i * shentsize;
    uint32_t type;
    uint64_t off, size;
    memcpy(&type, sh + 4, 4);
    memcpy(&off, sh + 0x18, 8);
    memcpy(&size, sh + 0x20, 8);
    if (type != 8 /* SHT_NOBITS */ && off + size > end) end = off + size;
  }
  return (size_t)end;
}

#endif
