/* The backend interface: everything convjit asks of a GPU, implemented by
 * HIP (device_hip.c, dlopen of libamdhip64) and by the emulator
 * (device_emu.c). Device pointers are opaque 64-bit addresses (void *);
 * for the emulator they are addresses in its own device address space,
 * not host pointers. Streams and events are opaque backend handles
 * (NULL stream = the backend's default stream).
 *
 * Contract: no function here allocates or synchronizes unless its name says
 * so; launch only enqueues (the emulator runs the kernel at once, which is
 * an allowed implementation of "enqueue"). Every failure sets the error text
 * and returns CONVJIT_ERR_DEVICE (or ERR_EMULATION from the emulator). */
#ifndef CJ_RUNTIME_DEVICE_H
#define CJ_RUNTIME_DEVICE_H

#include <stddef.h>
#include <stdint.h>
#include "util/cj.h"

typedef struct cj_device cj_device;

typedef struct cj_device_ops {
  const char *name; /* "hip" / "emu" */
  void (*destroy)(cj_device *d);
  /* code objects */
  convjit_status (*module_load)(cj_device *d, const void *co, size_t size, void **mod);
  void (*module_unload)(cj_device *d, void *mod);
  convjit_status (*kernel_get)(cj_device *d, void *mod, const char *name, void **kern);
  /* kernargs: the explicit-argument bytes laid out by the code-object
   * metadata offsets (size = the explicit part); hidden arguments are the
   * backend's job (HIP fills them itself, the emulator from the metadata). */
  convjit_status (*launch)(cj_device *d, void *kern, const uint32_t grid[3], const uint32_t block[3],
                           const void *kernargs, size_t kernarg_size, void *stream);
  /* memory */
  convjit_status (*mem_alloc)(cj_device *d, size_t bytes, void **dptr);
  /* INVALID_ARG (nothing freed) when dptr is not the start of a live
   * allocation of this device: unknown, interior or already freed. */
  convjit_status (*mem_free)(cj_device *d, void *dptr);
  convjit_status (*memcpy_h2d)(cj_device *d, void *dst, const void *src, size_t n, void *stream);
  convjit_status (*memcpy_d2h)(cj_device *d, void *dst, const void *src, size_t n, void *stream);
  convjit_status (*memset_d8)(cj_device *d, void *dst, int value, size_t n, void *stream);
  /* timing and ordering */
  convjit_status (*event_create)(cj_device *d, void **ev);
  void (*event_destroy)(cj_device *d, void *ev);
  convjit_status (*event_record)(cj_device *d, void *ev, void *stream);
  convjit_status (*event_elapsed_ms)(cj_device *d, void *start, void *stop, float *ms);
  convjit_status (*synchronize)(cj_device *d, void *stream);
  /* *capturing = 1 while a graph capture is in progress on stream (HIP:
   * hipStreamIsCapturing, 0 when the runtime lacks it; emulator: never).
   * For callers that must synchronize (the tuner), which would break it. */
  convjit_status (*stream_capturing)(cj_device *d, void *stream, int *capturing);
} cj_device_ops;

struct cj_device {
  const cj_device_ops *ops;
  char arch[16];      /* "gfx942" / "gfx950" */
  char model[64];     /* HIP: hipDeviceGetName, "" if unknown; emu: "" */
  int cu_count;       /* compute units, for split-K and grid decisions */
  int is_emulated;    /* 1 for the emulator: times are emulated, not measured */
  void *impl;         /* backend state */
};

/* HIP: dlopen("libamdhip64.so"); CONVJIT_ERR_DEVICE with the loader's text
 * when the library or a device is missing. device_index < 0 = current. */
convjit_status cj_device_hip_create(int device_index, cj_device **out);
/* Emulator for the given arch ("gfx942" / "gfx950"). */
convjit_status cj_device_emu_create(const char *arch, cj_device **out);
void cj_device_destroy(cj_device *d); /* NULL-safe */

#endif
