/* The LDS bank model (docs/emulator.md, "LDS bank model"): how many LDS
 * cycles one wave's LDS access takes on an arch, from the addresses of its
 * active lanes. Pure functions of their arguments (no emulator state), so
 * tests and tools can ask them directly.
 *
 *   - LDS has `banks` banks of `bank_bytes` (4) bytes; the dword at byte
 *     address a lives in bank (a / bank_bytes) % banks;
 *   - the wave's lanes are served in phases of consecutive lanes: as many
 *     lanes as fill the banks once at the access width (lanes per phase =
 *     banks / dwords per lane, dwords per lane 1 for <= 4 bytes, 2 for 8,
 *     4 for 12 and 16), at most 64; a phase without an active lane costs
 *     nothing;
 *   - a phase costs the largest number of distinct dwords any one bank
 *     holds among its lanes' accesses (lanes reading the same dword share
 *     it: broadcast), at least 1;
 *   - the conflict-free minimum is one cycle per phase that has an active
 *     lane; the conflict degree is the costliest phase's cycles.
 * A ds_read2/ds_write2 is two accesses of its element size (one per
 * offset) and an LDS DMA write one access of its per-lane size, each
 * priced on its own. */
#ifndef CJ_EMU_LDS_BANKS_H
#define CJ_EMU_LDS_BANKS_H

#include <stdint.h>
#include "arch/arch.h"

typedef struct emu_lds_banks {
  uint32_t banks;      /* 32 (gfx942) / 64 (gfx950); a power of two <= 64 */
  uint32_t bank_bytes; /* 4 */
} emu_lds_banks;

typedef struct emu_lds_cost {
  uint32_t cycles;     /* LDS cycles of the access */
  uint32_t min_cycles; /* conflict-free minimum: phases with an active lane */
  uint32_t degree;     /* conflict degree: cycles of the costliest phase (0 if no lane is active) */
} emu_lds_cost;

/* The model of an arch (its lds_banks field, 4-byte banks); returns 0, or
 * -1 (and leaves *out alone) for NULL or an arch without one (lds_banks 0). */
int emu_lds_banks_for(const cj_arch *arch, emu_lds_banks *out);

/* Lanes served per phase for an access of `bytes` (1..16) per lane. */
unsigned emu_lds_phase_lanes(const emu_lds_banks *m, unsigned bytes);

/* Cost of one access: addr[l] is lane l's byte address (read only for lanes
 * in exec), `bytes` (1..16) what each lane reads or writes from there. */
emu_lds_cost emu_lds_cost_of(const emu_lds_banks *m, const uint32_t addr[64], uint64_t exec, unsigned bytes);

#endif
