/* Emulator-only extras of the "emu" device backend (device_emu.c), for the
 * runtime, tools and tests: the underlying emulator context, procedural and
 * sink buffers (tensors too large to store), workgroup subsets and the
 * statistics of the last launch. Every function accepts only a device made
 * by cj_device_emu_create; other devices get CONVJIT_ERR_INVALID_ARG (or
 * NULL). Times are EMULATED (docs/emulator.md), never measured.
 * Launches may run on several threads at once; the last-launch statistics
 * and the launch record point into the device, so read them while no
 * launch on it is running. */
#ifndef CJ_RUNTIME_DEVICE_EMU_H
#define CJ_RUNTIME_DEVICE_EMU_H

#include "emu/emu.h"
#include "emu/memory.h"
#include "runtime/device.h"

emu_ctx *cj_device_emu_ctx(cj_device *d);
/* Options applied to every following launch (workgroup subset, hazard,
 * per-wave stats) until reset with NULL. Copied; the pointers inside
 * (wg_list, filter_user) must stay valid while used. */
convjit_status cj_device_emu_set_launch_opts(cj_device *d, const emu_launch_opts *o);
/* Statistics of the last successful launch (zeroed before the first). */
const emu_stats *cj_device_emu_last_stats(cj_device *d);
const char *cj_device_emu_last_kernel(cj_device *d); /* "" before the first launch */
/* Launch recording: on != 0 clears the record and keeps the statistics of
 * every following successful launch (without per-wave records) in order;
 * on = 0 stops (the record stays readable until the next start). */
typedef struct cj_emu_launch_record {
  char kernel[128];
  emu_stats stats; /* stats.per_wave is always NULL */
} cj_emu_launch_record;
convjit_status cj_device_emu_record_launches(cj_device *d, int on);
const cj_emu_launch_record *cj_device_emu_launch_records(cj_device *d, size_t *n);
/* The device's launch with what only the emulator's own entry points give:
 * dynamic LDS bytes, the hazard checker (-1 = the device's setting, 0
 * off, 1 on) and the instruction budget per wave (0 = the environment's or
 * the default, emu.h); the workgroup subset and the statistics bookkeeping
 * are the ordinary launch's. */
convjit_status cj_device_emu_launch(cj_device *d, const emu_kernel *kern, const uint32_t grid[3],
                                    const uint32_t block[3], const void *kernargs, size_t kernarg_size,
                                    uint32_t dyn_lds_bytes, int hazard, uint64_t max_wave_insts);
convjit_status cj_device_emu_alloc_procedural(cj_device *d, uint64_t size, emu_fill_fn fill, void *user,
                                              void **dptr);
convjit_status cj_device_emu_alloc_sink(cj_device *d, uint64_t size, const uint64_t *off, const uint64_t *len,
                                        uint32_t nwin, void **dptr);

#endif
