/* DS (LDS) instructions: ds_read_* / ds_write_* at every width (b8..b128,
 * u8/i8/u16/i16, d16 halves) and ds_read2 / ds_write2 (b32/b64, st64).
 *   ds_read/write:  address = v[vaddr] + offset (16-bit unsigned)
 *   ds_*2:          address_k = v[vaddr] + offset_k * size (* 64 for st64)
 * Every access must lie inside the workgroup's LDS allocation (the kernel
 * descriptor's group segment size); anything past it stops the launch
 * (hardware would silently drop it, hiding a JIT bug). In DWORD alignment
 * mode an address not a multiple of min(size, 4) stops it with a memory
 * violation (exec_mem.c). EXEC-masked lanes do nothing. Results count in
 * lgkmcnt. Every access is priced by the arch's LDS bank model
 * (lds_banks.h) into the wave's LDS statistics; a ds_*2 as two accesses. */
#include "emu/exec_mem.h"

#include <string.h>

static convjit_status lds_check(emu_wave *w, const emu_inst *in, uint64_t a, unsigned n, unsigned lane) {
  if (a + n > w->wg->lds_size)
    return emu_fail(w, in, "LDS access of %u bytes at 0x%llx (lane %u) is past the workgroup's %u LDS bytes "
                    "(static %u + dynamic %u)", n, (unsigned long long)a, lane, w->wg->lds_size, w->wg->L->k->lds_bytes,
                    w->wg->L->dyn_lds_bytes);
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
    const uint32_t *arow = emu_vreg(w, vaddr, 0);
    if (!arow) return emu_fail(w, in, "ds_*2: address is not a vector register");
    uint32_t *rows[8] = {NULL};
    for (unsigned k = 0; k < 2; k++)
      for (unsigned r = 0; r < per; r++) {
        rows[k * per + r] = mo->store ? emu_vreg(w, &in->o[1 + k], r) : emu_vreg(w, &in->o[0], k * per + r);
        if (!rows[k * per + r]) return emu_fail(w, in, "ds_*2: data is not a vector register");
      }
    const int kind = mo->store ? EMU_HZ_LDS_WRITE : EMU_HZ_LDS_READ;
    uint32_t ra[128];
    uint32_t nra = 0;
    uint32_t a2[2][64]; /* each offset's lane addresses, for the bank model */
    const unsigned need = emu_mem_align_need(w, EMU_ALIGN_LDS, mo->bytes);
    for (uint64_t e = w->exec; e; e &= e - 1) {
      unsigned l = (unsigned)__builtin_ctzll(e);
      uint32_t base = arow[l];
      uint32_t val[4];
      for (unsigned k = 0; k < 2; k++) {
        uint64_t a = (uint64_t)base + (k ? in->offset1 : in->offset0) * scale;
        if (emu_mem_is_misaligned(a, need))
          return emu_mem_misaligned(w, in, EMU_ALIGN_LDS, mo->store ? "LDS write" : "LDS read", a, need, l);
        CJ_TRY(lds_check(w, in, a, mo->bytes, l));
        CJ_TRY(emu_hz_lds(w, in, (uint32_t)a, mo->bytes, kind, 0));
        a2[k][l] = (uint32_t)a;
        uint8_t *p = w->wg->lds + a;
        if (mo->store) {
          for (unsigned r = 0; r < per; r++) memcpy(p + 4 * r, &rows[k * per + r][l], 4);
          emu_hz_op_lds(op, (uint32_t)a, mo->bytes);
        } else {
          memcpy(val + k * per, p, mo->bytes); /* both halves read before any register is written */
          ra[nra++] = (uint32_t)a;
        }
      }
      if (!mo->store)
        for (unsigned r = 0; r < 2 * per; r++) rows[r][l] = val[r];
    }
    emu_lds_price(w, a2[0], w->exec, mo->bytes, 1);
    emu_lds_price(w, a2[1], w->exec, mo->bytes, 0);
    if (!mo->store) {
      emu_hz_op *rop = emu_hz_issue(w, in, EMU_HZ_LGKM, &in->o[0]);
      for (uint32_t i = 0; rop && i < nra; i++) emu_hz_op_lds_read(rop, ra[i], mo->bytes);
    }
    return CONVJIT_OK;
  }
  /* read: vdst, vaddr        write: vaddr, vdata */
  if (in->nops < 2) return emu_fail(w, in, "ds: unexpected operands");
  const emu_operand *vaddr = mo->store ? &in->o[0] : &in->o[1];
  const emu_operand *data = mo->store ? &in->o[1] : &in->o[0];
  if (!mo->d16 && mo->bytes >= 4 && data->count < mo->bytes / 4u)
    return emu_fail(w, in, "ds access of %u bytes with a %u-register data operand", mo->bytes, data->count);
  emu_hz_op *op = mo->store ? emu_hz_issue(w, in, EMU_HZ_LGKM, NULL) : NULL;
  const uint32_t off = (uint16_t)in->offset;
  const uint32_t *arow = emu_vreg(w, vaddr, 0);
  if (!arow) return emu_fail(w, in, "ds: address is not a vector register");
  /* whole dwords (b32..b128): straight register rows <-> LDS */
  unsigned ndw = (!mo->d16 && mo->bytes >= 4) ? mo->bytes / 4u : 0;
  uint32_t *rows[4] = {NULL, NULL, NULL, NULL};
  for (unsigned k = 0; k < ndw; k++) rows[k] = emu_vreg(w, data, k);
  /* addresses and bounds first, then the hazard check of all lanes at once */
  uint32_t la[64];
  const unsigned need = emu_mem_align_need(w, EMU_ALIGN_LDS, mo->bytes);
  for (uint64_t e = w->exec; e; e &= e - 1) {
    unsigned l = (unsigned)__builtin_ctzll(e);
    uint64_t a = (uint64_t)arow[l] + off;
    if (emu_mem_is_misaligned(a, need))
      return emu_mem_misaligned(w, in, EMU_ALIGN_LDS, mo->store ? "LDS write" : "LDS read", a, need, l);
    CJ_TRY(lds_check(w, in, a, mo->bytes, l));
    la[l] = (uint32_t)a;
  }
  CJ_TRY(emu_hz_lds_lanes(w, in, la, w->exec, mo->bytes, mo->store ? EMU_HZ_LDS_WRITE : EMU_HZ_LDS_READ));
  emu_lds_price(w, la, w->exec, mo->bytes, 1);
  for (uint64_t e = w->exec; e; e &= e - 1) {
    unsigned l = (unsigned)__builtin_ctzll(e);
    uint32_t a = la[l];
    uint8_t *p = w->wg->lds + a;
    if (ndw && rows[ndw - 1]) {
      if (mo->store)
        for (unsigned k = 0; k < ndw; k++) memcpy(p + 4 * k, &rows[k][l], 4);
      else
        for (unsigned k = 0; k < ndw; k++) memcpy(&rows[k][l], p + 4 * k, 4);
    } else {
      uint8_t b[16] = {0};
      if (mo->store) {
        emu_mem_get_lane(w, data, mo, l, b);
        memcpy(p, b, mo->bytes);
      } else {
        memcpy(b, p, mo->bytes);
        emu_mem_put_lane(w, data, mo, l, b);
      }
    }
    if (op) emu_hz_op_lds(op, a, mo->bytes);
  }
  if (!mo->store) {
    emu_hz_op *rop = emu_hz_issue(w, in, EMU_HZ_LGKM, data);
    for (uint64_t e = w->exec; rop && e; e &= e - 1) emu_hz_op_lds_read(rop, la[__builtin_ctzll(e)], mo->bytes);
  }
  return CONVJIT_OK;
}
