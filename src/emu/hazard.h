/* Hazard checker: catches the JIT bugs a functional emulator would hide.
 *
 * The emulator completes every memory operation at issue. On hardware the
 * result arrives later, so this module keeps it *pending* until the
 * s_waitcnt that guarantees it on hardware:
 *   - vmcnt(N) retires all but the N most recent vector-memory operations
 *     (buffer/global loads, stores, atomics, buffer_load ... lds), in issue
 *     order;
 *   - lgkmcnt(N) retires an LDS operation once at least N LDS operations
 *     were issued after it (LDS returns in order), but an SMEM or FLAT
 *     operation only at lgkmcnt(0) (they return out of order);
 *   - FLAT counts in both counters and is retired when both have retired it;
 *   - a counter never exceeds its hardware maximum (vmcnt 63, lgkmcnt 15):
 *     the issue that would overflow it first retires the oldest operation,
 *     as the hardware stalls there.
 * Errors (CONVJIT_ERR_EMULATION, naming the instruction, its offset and the
 * producer's offset and text):
 *   - an ALU or memory instruction reading a pending VGPR/AGPR/SGPR, or an
 *     ALU instruction overwriting one (its value would be clobbered when the
 *     load lands);
 *   - any wave touching LDS bytes that an outstanding `buffer_load ... lds`
 *     is writing;
 *   - a cross-wave LDS race: one wave writes bytes that another wave reads or
 *     writes in the same barrier epoch (no s_barrier between). An LDS write
 *     still pending at a barrier (no lgkmcnt/vmcnt wait before it) becomes
 *     visible only when it is retired, so it counts in the epoch of its
 *     retiring s_waitcnt.
 *   - an LDS write-after-read: a `buffer_load ... lds` DMA (any wave) whose
 *     bytes overlap a ds_read that is still outstanding (issued, not yet
 *     retired by lgkmcnt; any wave, the DMA's own included), or overlap a
 *     read of another wave that passed a barrier outstanding and was retired
 *     only in the DMA's barrier epoch. The DMA may write LDS at any moment
 *     from its issue to its vmcnt completion; a read is safe from it only if
 *     its wave retired it (s_waitcnt lgkmcnt) before a barrier that the
 *     DMA's wave passed before issuing it. Reads outstanding at the reading
 *     wave's s_endpgm are dropped (their results go nowhere).
 * Off by default only when the context or launch says so (emu_options.hazard).
 * Everything here is a no-op when w->hazard is 0.
 */
#ifndef CJ_EMU_HAZARD_H
#define CJ_EMU_HAZARD_H

#include "emu/emu_internal.h"

/* Counters an operation occupies. */
enum { EMU_HZ_VM = 1, EMU_HZ_LGKM = 2, EMU_HZ_UNORDERED = 4 /* SMEM/FLAT in lgkm */ };
/* LDS access kinds. */
enum { EMU_HZ_LDS_READ = 1, EMU_HZ_LDS_WRITE = 2 };

typedef struct emu_hz_op emu_hz_op;

/* A memory instruction was issued. dst (may be NULL) is the register tuple
 * its result lands in (VGPR, AGPR or SGPR operand; count registers).
 * Returns the operation record to attach LDS bytes to, or NULL when the
 * checker is off. Never fails. */
emu_hz_op *emu_hz_issue(emu_wave *w, const emu_inst *in, unsigned counters, const emu_operand *dst);
/* The operation writes LDS bytes [addr, addr+n) (n <= 16) when it completes:
 * a DMA (buffer_load ... lds; bytes stay pending until retired) or a
 * ds_write (re-stamped for the race check if retired after a barrier). */
void emu_hz_op_lds(emu_hz_op *op, uint32_t addr, uint32_t n);
/* The ds_read op reads LDS bytes [addr, addr+n) (n <= 16): outstanding until
 * its lgkmcnt retires it (the write-after-read rule). */
void emu_hz_op_lds_read(emu_hz_op *op, uint32_t addr, uint32_t n);
/* Race and DMA-pending check of one LDS access by wave w, then stamping.
 * dma: the access is the LDS side of buffer_load ... lds. */
convjit_status emu_hz_lds(emu_wave *w, const emu_inst *in, uint32_t addr, uint32_t n, int kind, int dma);
/* The same for every lane in `lanes`, lane l at addr[l] (not a DMA). */
convjit_status emu_hz_lds_lanes(emu_wave *w, const emu_inst *in, const uint32_t addr[64], uint64_t lanes, uint32_t n,
                                int kind);

#endif
