/* DS (LDS) instructions: ds_read_* / ds_write_* at every width (b8..b128,
 * u8/i8/u16/i16, d16 halves) and ds_read2 / ds_write2 (b32/b64, st64).
 *   ds_read/write:  address = v[vaddr] + offset (16-bit unsigned)
 *   ds_*2:          address_k = v[vaddr] + offset_k * size (* 64 for st64)
 * Every access must lie inside the workgroup's LDS allocation (the kernel
 * descriptor's group segment size); anything past it stops the launch
 * (hardware would silently drop it, hiding a JIT bug). EXEC-masked lanes do
 * nothing. Results count in lgkmcnt. */
#include "emu/exec_mem.h"

#include <string.h>

static convjit_status lds_check(emu_wave *w, const emu_inst *in, uint64_t a, unsigned n, unsigned lane) {
  if (a + n > w->wg->lds_size)
    return emu_fail(w, in, "LDS access of %u bytes at 0x%llx (lane %u) is past the workgroup's %u LDS bytes", n,
                    (unsigned long long)a, lane, w->wg->lds_size);
  return CONVJIT_OK;
}

convjit_status emu_x_ds(emu_wave *w, const emu_inst *in) {
  const emu_memop *mo = emu_memop_get(in->op);
  if (!mo->valid) return emu_fail(w, in, "ds: unknown access shape");
  if (mo->two) {
    /* read2: vdst, vaddr        write2: vaddr, data0, data1 */
    if (in->nops < (mo->store ? 3u : 2u)) return emu_fail(w, in, "ds_*2: unexpected operands");
    const emu_operand *vaddr = mo->store ? &in->o[0] : &in->o[1];
    unsigned per = mo->bytes / 4u; /* registers per element */
    uint64_t scale = (uint64_t)mo->bytes * (mo->st64 ? 64u : 1u);
    emu_hz_op *op = NULL;
    if (mo->store) op = emu_hz_issue(w, in, EMU_HZ_LGKM, NULL);
    else if (in->o[0].count < 2 * per) return emu_fail(w, in, "ds_read2 into %u registers", in->o[0].count);
    for (unsigned l = 0; l < 64; l++) {
      if (!((w->exec >> l) & 1)) continue;
      uint32_t base = emu_vread(w, vaddr, 0, l);
      uint32_t val[4];
      for (unsigned k = 0; k < 2; k++) {
        uint64_t a = (uint64_t)base + (k ? in->offset1 : in->offset0) * scale;
        CJ_TRY(lds_check(w, in, a, mo->bytes, l));
        CJ_TRY(emu_hz_lds(w, in, (uint32_t)a, mo->bytes, mo->store ? EMU_HZ_LDS_WRITE : EMU_HZ_LDS_READ, 0));
        if (mo->store) {
          for (unsigned r = 0; r < per; r++) val[r] = emu_vread(w, &in->o[1 + k], r, l);
          memcpy(w->wg->lds + a, val, mo->bytes);
          emu_hz_op_lds(op, (uint32_t)a, mo->bytes);
        } else {
          memcpy(val + k * per, w->wg->lds + a, mo->bytes);
        }
      }
      if (!mo->store)
        for (unsigned r = 0; r < 2 * per; r++) {
          uint32_t *row = emu_vreg(w, &in->o[0], r);
          if (row) row[l] = val[r];
        }
    }
    if (!mo->store) emu_hz_issue(w, in, EMU_HZ_LGKM, &in->o[0]);
    return CONVJIT_OK;
  }
  /* read: vdst, vaddr        write: vaddr, vdata */
  if (in->nops < 2) return emu_fail(w, in, "ds: unexpected operands");
  const emu_operand *vaddr = mo->store ? &in->o[0] : &in->o[1];
  const emu_operand *data = mo->store ? &in->o[1] : &in->o[0];
  if (!mo->d16 && mo->bytes >= 4 && data->count < mo->bytes / 4u)
    return emu_fail(w, in, "ds access of %u bytes with a %u-register data operand", mo->bytes, data->count);
  emu_hz_op *op = mo->store ? emu_hz_issue(w, in, EMU_HZ_LGKM, NULL) : NULL;
  uint32_t off = (uint16_t)in->offset;
  for (unsigned l = 0; l < 64; l++) {
    if (!((w->exec >> l) & 1)) continue;
    uint64_t a = (uint64_t)emu_vread(w, vaddr, 0, l) + off;
    CJ_TRY(lds_check(w, in, a, mo->bytes, l));
    CJ_TRY(emu_hz_lds(w, in, (uint32_t)a, mo->bytes, mo->store ? EMU_HZ_LDS_WRITE : EMU_HZ_LDS_READ, 0));
    uint8_t b[16] = {0};
    if (mo->store) {
      emu_mem_get_lane(w, data, mo, l, b);
      memcpy(w->wg->lds + a, b, mo->bytes);
      emu_hz_op_lds(op, (uint32_t)a, mo->bytes);
    } else {
      memcpy(b, w->wg->lds + a, mo->bytes);
      emu_mem_put_lane(w, data, mo, l, b);
    }
  }
  if (!mo->store) emu_hz_issue(w, in, EMU_HZ_LGKM, data);
  return CONVJIT_OK;
}
