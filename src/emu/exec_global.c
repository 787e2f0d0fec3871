/* FLAT-family: global_load/store (saddr and 64-bit vaddr forms), flat_load/
 * store, global/flat_atomic_add_f32.
 *   vaddr form:  addr = v[vaddr:vaddr+1] + offset         ("off" as saddr)
 *   saddr form:  addr = s[saddr:saddr+1] + zext(v[vaddr]) + offset
 * offset is the signed 13-bit immediate. Flat addresses must be emulator
 * device addresses (no LDS/scratch apertures are modelled): anything
 * outside every allocation stops the launch. Global ops count in vmcnt,
 * flat ops in vmcnt and lgkmcnt. An atomic address not a multiple of 4, or
 * in DWORD alignment mode any address not a multiple of min(size, 4), stops
 * it with a memory violation (exec_mem.c). */
#include "emu/exec_mem.h"

#include <string.h>

static int is_flat(const emu_inst *in) { return in->text && !strncmp(in->text, "flat_", 5); }

static uint64_t lane_address(const emu_wave *w, const emu_inst *in, const emu_operand *vaddr,
                             const emu_operand *saddr, unsigned l) {
  uint64_t a;
  if (saddr && saddr->kind != EMU_OPK_OFF && saddr->kind != EMU_OPK_NONE)
    a = emu_sread64(w, saddr) + emu_vread(w, vaddr, 0, l);
  else
    a = (uint64_t)emu_vread(w, vaddr, 0, l) | (uint64_t)emu_vread(w, vaddr, 1, l) << 32;
  return a + (uint64_t)(int64_t)in->offset;
}

/* load:  vdst, vaddr[, saddr|off]      store: vaddr, vdata[, saddr|off] */
convjit_status emu_x_global(emu_wave *w, const emu_inst *in) {
  const emu_memop *mo = emu_memop_get(in->op);
  if (!mo->valid || in->nops < 2) return emu_fail(w, in, "global/flat access: unexpected operands");
  const emu_operand *data = mo->store ? &in->o[1] : &in->o[0];
  const emu_operand *vaddr = mo->store ? &in->o[0] : &in->o[1];
  const emu_operand *saddr = in->nops >= 3 ? &in->o[2] : NULL;
  int flat = is_flat(in);
  if (vaddr->kind != EMU_OPK_VGPR) return emu_fail(w, in, "global/flat access: address is not a VGPR");
  if (!mo->d16 && mo->bytes >= 4 && data->count < mo->bytes / 4u)
    return emu_fail(w, in, "access of %u bytes with a %u-register data operand", mo->bytes, data->count);
  emu_mem *m = emu_wave_mem(w);
  const unsigned need = emu_mem_align_need(w, EMU_ALIGN_VMEM, mo->bytes);
  for (unsigned l = 0; l < 64; l++) {
    if (!((w->exec >> l) & 1)) continue;
    uint64_t a = lane_address(w, in, vaddr, saddr, l);
    if (emu_mem_is_misaligned(a, need))
      return emu_mem_misaligned(w, in, EMU_ALIGN_VMEM, mo->store ? "global/flat store" : "global/flat load", a,
                                need, l);
    if (w->tr) emu_trace_note_lines(w, a, mo->bytes);
    emu_access_ctx c = emu_actx(w, in, (int)l);
    uint8_t b[16] = {0};
    if (mo->store) {
      emu_mem_get_lane(w, data, mo, l, b);
      CJ_TRY(emu_mem_write(m, a, b, mo->bytes, &c));
    } else {
      CJ_TRY(emu_mem_read(m, a, b, mo->bytes, &c));
      emu_mem_put_lane(w, data, mo, l, b);
    }
  }
  emu_hz_issue(w, in, flat ? EMU_HZ_VM | EMU_HZ_LGKM | EMU_HZ_UNORDERED : EMU_HZ_VM, mo->store ? NULL : data);
  return CONVJIT_OK;
}

/* no return: vaddr, vdata[, saddr|off]; with return (glc/sc0): vdst, vaddr, vdata[, saddr|off] */
convjit_status emu_x_global_atomic(emu_wave *w, const emu_inst *in) {
  int ret = (in->mflags & (EMU_M_GLC | EMU_M_SC0)) != 0;
  unsigned b = ret ? 1 : 0;
  if (in->nops < b + 2) return emu_fail(w, in, "global atomic: unexpected operands");
  const emu_operand *vaddr = &in->o[b], *vdata = &in->o[b + 1];
  const emu_operand *saddr = in->nops >= b + 3 ? &in->o[b + 2] : NULL;
  uint32_t *dst = ret ? emu_vreg(w, &in->o[0], 0) : NULL;
  if (ret && !dst) return emu_fail(w, in, "global atomic: destination is not a vector register");
  emu_mem *m = emu_wave_mem(w);
  const unsigned need = emu_mem_align_need(w, EMU_ALIGN_ATOMIC, 4);
  for (unsigned l = 0; l < 64; l++) {
    if (!((w->exec >> l) & 1)) continue;
    uint64_t a = lane_address(w, in, vaddr, saddr, l);
    if (emu_mem_is_misaligned(a, need))
      return emu_mem_misaligned(w, in, EMU_ALIGN_ATOMIC, "global/flat atomic", a, need, l);
    if (w->tr) emu_trace_note_lines(w, a, 4);
    uint32_t bits = emu_vread(w, vdata, 0, l);
    float x;
    memcpy(&x, &bits, 4);
    if (ret) {
      emu_access_ctx c = emu_actx(w, in, (int)l);
      float old;
      CJ_TRY(emu_mem_atomic_add_f32(m, a, x, &old, &c));
      memcpy(&dst[l], &old, 4);
    } else {
      CJ_TRY(emu_mem_log_atomic(w, in, a, x, (int)l));
    }
  }
  emu_hz_issue(w, in, is_flat(in) ? EMU_HZ_VM | EMU_HZ_LGKM | EMU_HZ_UNORDERED : EMU_HZ_VM,
               ret ? &in->o[0] : NULL);
  return CONVJIT_OK;
}
