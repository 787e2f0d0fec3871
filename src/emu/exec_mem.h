/* Private to the memory handlers (exec_mem.c, exec_buffer.c, exec_global.c,
 * exec_lds.c): the per-opcode access shape and shared helpers. */
#ifndef CJ_EMU_EXEC_MEM_H
#define CJ_EMU_EXEC_MEM_H

#include "emu/emu_internal.h"
#include "emu/hazard.h"
#include "emu/memory.h"

/* Shape of one memory opcode, from its ISA table row (bytes, access). */
typedef struct emu_memop {
  uint8_t valid;
  uint8_t store;   /* store / ds_write */
  uint8_t bytes;   /* bytes per lane (per address for ds_*2*) */
  uint8_t elem;    /* range-check element: 4 for dword types, else bytes */
  uint8_t sext;    /* sign-extend the loaded value (sbyte, sshort, i8, i16) */
  uint8_t d16;     /* 0, 1 = low half (_d16), 2 = high half (_d16_hi) */
  uint8_t two;     /* ds_read2 / ds_write2 */
  uint8_t st64;    /* ds_*2st64 */
} emu_memop;

const emu_memop *emu_memop_get(uint16_t op);

static inline emu_mem *emu_wave_mem(const emu_wave *w) { return w->wg->L->ctx->mem; }

static inline emu_access_ctx emu_actx(const emu_wave *w, const emu_inst *in, int lane) {
  emu_access_ctx c = {emu_kernel_name(w), in->pc, in->text, lane};
  return c;
}

/* Places up to 4 loaded dwords (bytes already zero/sign extended into
 * d[0..]) into a destination register tuple lane, honouring d16 halves. */
void emu_mem_put_lane(emu_wave *w, const emu_operand *dst, const emu_memop *mo, unsigned lane, const uint8_t *bytes);
/* Gathers the bytes a store writes for one lane (honouring _d16_hi). */
void emu_mem_get_lane(emu_wave *w, const emu_operand *src, const emu_memop *mo, unsigned lane, uint8_t *bytes);

/* Alignment rules (docs/emulator.md, "Misaligned accesses"): the
 * alignment an access of `bytes` needs in the launch's alignment mode (1 =
 * none), and the memory-violation error when it lacks it (what: "global/
 * flat load", "LDS write", ...). */
enum { EMU_ALIGN_VMEM = 1, EMU_ALIGN_ATOMIC = 2, EMU_ALIGN_LDS = 3, EMU_ALIGN_LDS_DMA = 4 };
unsigned emu_mem_align_need(const emu_wave *w, int kind, unsigned bytes);
convjit_status emu_mem_misaligned(emu_wave *w, const emu_inst *in, int kind, const char *what, uint64_t addr,
                                  unsigned need, unsigned lane);
static inline int emu_mem_is_misaligned(uint64_t addr, unsigned need) { return (addr & (need - 1u)) != 0; }

/* Prices one LDS access with the arch's bank model (lds_banks.h) into the
 * wave's LDS statistics: addr[l] for the lanes in exec, `bytes` per lane.
 * `inst` is 1 for the first access of an instruction, 0 for the second
 * half of a ds_read2/ds_write2 (one instruction, two accesses). */
static inline void emu_lds_price(emu_wave *w, const uint32_t addr[64], uint64_t exec, unsigned bytes, int inst) {
  emu_lds_cost c = emu_lds_cost_of(&w->wg->L->lds_banks, addr, exec, bytes);
  w->lds.accesses += (unsigned)inst;
  w->lds.cycles += c.cycles;
  w->lds.min_cycles += c.min_cycles;
  w->lds.excess += c.cycles - c.min_cycles;
  if (c.degree > w->lds.max_degree) w->lds.max_degree = c.degree;
}

/* Logs a no-return f32 atomic add for in-order application at launch end. */
convjit_status emu_mem_log_atomic(emu_wave *w, const emu_inst *in, uint64_t addr, float v, int lane);

#endif
