/* MUBUF: buffer_load / buffer_store (dword..dwordx4, byte, short, d16),
 * buffer_load ... lds (DMA into LDS) and buffer_atomic_add_f32.
 *
 * Addressing and the range check follow docs/isa-notes.md §3 (gfx9/CDNA, no
 * OOB_SELECT):
 *   off  = (u32)(voffset + inst_offset)          wraps at 32 bits
 *   addr = base + index*stride + off + soffset
 *   idxen && stride != 0: the lane is in range iff index < NUM_RECORDS
 *   otherwise each element e (4 bytes for dword types, else the access
 *   size) is in range iff off + soffset + (e+1)*elem <= NUM_RECORDS
 *   (64-bit, unsigned); atomics are all or nothing.
 * Out-of-range loads give 0, stores are dropped, out-of-range elements of a
 * DMA write zeros into LDS. Swizzled descriptors and ADD_TID are not
 * modelled: they stop the launch with a message (nothing is guessed).
 * LDS side of the DMA (docs/isa-notes.md §4): LDS address = M0 + inst_offset +
 * lane*size, for every lane in EXEC; EXEC-masked lanes write nothing. The
 * LDS write is priced by the arch's bank model (lds_banks.h) like a
 * ds_write of the per-lane size.
 * Alignment (exec_mem.c, docs/emulator.md): an atomic lane and an LDS DMA
 * destination must be multiples of 4, and in DWORD alignment mode a lane
 * that accesses memory a multiple of min(size, 4); otherwise the launch
 * stops with a memory violation. */
#include "emu/exec_mem.h"

#include <string.h>

typedef struct vsharp {
  uint64_t base;
  uint32_t stride, nrec;
} vsharp;

static convjit_status read_vsharp(emu_wave *w, const emu_inst *in, const emu_operand *o, vsharp *v) {
  if (o->kind != EMU_OPK_SGPR || o->count != 4) return emu_fail(w, in, "buffer resource is not an SGPR quad");
  uint32_t w0 = emu_sread(w, o, 0), w1 = emu_sread(w, o, 1), w3 = emu_sread(w, o, 3);
  v->base = w0 | (uint64_t)(w1 & 0xffff) << 32;
  v->stride = (w1 >> 16) & 0x3fff;
  v->nrec = emu_sread(w, o, 2);
  if (w1 >> 31) return emu_fail(w, in, "swizzled buffer resource (SWIZZLE_EN) is not modelled");
  if ((w3 >> 23) & 1) return emu_fail(w, in, "buffer resource with ADD_TID is not modelled");
  return CONVJIT_OK;
}

/* Lane address and per-element range mask (bit e = element e in range). */
typedef struct lane_addr {
  uint64_t addr;
  uint32_t ok; /* element mask */
} lane_addr;

static lane_addr buffer_lane(const emu_wave *w, const emu_inst *in, const vsharp *v, const emu_operand *vaddr,
                             uint32_t soff, unsigned lane, unsigned nelem, unsigned elem, int all_or_nothing) {
  uint32_t index = 0, voff = 0;
  int idxen = (in->mflags & EMU_M_IDXEN) != 0, offen = (in->mflags & EMU_M_OFFEN) != 0;
  if (idxen) index = emu_vread(w, vaddr, 0, lane);
  if (offen) voff = emu_vread(w, vaddr, idxen ? 1 : 0, lane);
  uint32_t off = voff + (uint32_t)in->offset; /* 32-bit wrap */
  lane_addr r;
  r.addr = v->base + (uint64_t)index * v->stride + off + soff;
  uint32_t all = nelem >= 32 ? 0xffffffffu : (1u << nelem) - 1;
  if (idxen && v->stride != 0) {
    r.ok = index < v->nrec ? all : 0;
  } else {
    r.ok = 0;
    for (unsigned e = 0; e < nelem; e++)
      if ((uint64_t)off + soff + (uint64_t)(e + 1) * elem <= v->nrec) r.ok |= 1u << e;
    if (all_or_nothing && r.ok != all) r.ok = 0;
  }
  return r;
}

static convjit_status buffer_lds(emu_wave *w, const emu_inst *in, const emu_memop *mo, const vsharp *v,
                                 const emu_operand *vaddr, uint32_t soff) {
  if (mo->bytes < 4) return emu_fail(w, in, "buffer_load ... lds of %u bytes per lane is not modelled", mo->bytes);
  emu_mem *m = emu_wave_mem(w);
  emu_hz_op *op = emu_hz_issue(w, in, EMU_HZ_VM, NULL);
  unsigned nelem = mo->bytes / mo->elem;
  const unsigned need = emu_mem_align_need(w, EMU_ALIGN_VMEM, mo->bytes);
  uint32_t lds_addr[64]; /* for the LDS bank model */
  for (unsigned l = 0; l < 64; l++) {
    if (!((w->exec >> l) & 1)) continue;
    uint64_t la = (uint64_t)w->m0 + (uint32_t)in->offset + (uint64_t)l * mo->bytes;
    lds_addr[l] = (uint32_t)la;
    if (emu_mem_is_misaligned(la, 4))
      return emu_mem_misaligned(w, in, EMU_ALIGN_LDS_DMA, "LDS DMA destination", la, 4, l);
    if (la + mo->bytes > w->wg->lds_size)
      return emu_fail(w, in, "LDS DMA destination 0x%llx + %u (lane %u, M0 = 0x%x) is past the workgroup's %u LDS bytes "
                      "(static %u + dynamic %u)", (unsigned long long)la, mo->bytes, l, w->m0, w->wg->lds_size,
                      w->wg->L->k->lds_bytes, w->wg->L->dyn_lds_bytes);
    lane_addr a = buffer_lane(w, in, v, vaddr, soff, l, nelem, mo->elem, 0);
    if (a.ok && emu_mem_is_misaligned(a.addr, need))
      return emu_mem_misaligned(w, in, EMU_ALIGN_VMEM, "buffer load to LDS", a.addr, need, l);
    if (w->tr && a.ok) emu_trace_note_lines(w, a.addr, mo->bytes);
    uint8_t b[16] = {0};
    emu_access_ctx c = emu_actx(w, in, (int)l);
    for (unsigned e = 0; e < nelem; e++)
      if ((a.ok >> e) & 1) CJ_TRY(emu_mem_read(m, a.addr + e * mo->elem, b + e * mo->elem, mo->elem, &c));
    CJ_TRY(emu_hz_lds(w, in, (uint32_t)la, mo->bytes, EMU_HZ_LDS_WRITE, 1));
    memcpy(w->wg->lds + la, b, mo->bytes);
    emu_hz_op_lds(op, (uint32_t)la, mo->bytes);
  }
  emu_lds_price(w, lds_addr, w->exec, mo->bytes, 1);
  return CONVJIT_OK;
}

convjit_status emu_x_buffer(emu_wave *w, const emu_inst *in) {
  const emu_memop *mo = emu_memop_get(in->op);
  int lds = (in->mflags & EMU_M_LDS) != 0;
  unsigned first = lds ? 0 : 1; /* operands: [vdata,] vaddr|off, srsrc, soffset */
  if (!mo->valid || in->nops < first + 3) return emu_fail(w, in, "buffer access: unexpected operands");
  const emu_operand *vdata = &in->o[0], *vaddr = &in->o[first], *rsrc = &in->o[first + 1], *so = &in->o[first + 2];
  if ((in->mflags & (EMU_M_OFFEN | EMU_M_IDXEN)) && vaddr->kind != EMU_OPK_VGPR)
    return emu_fail(w, in, "buffer access: offen/idxen without a VGPR address");
  vsharp v = {0}; /* set by read_vsharp; zeroed for -O3's maybe-uninitialized */
  CJ_TRY(read_vsharp(w, in, rsrc, &v));
  uint32_t soff = emu_sread(w, so, 0);
  if (lds) return buffer_lds(w, in, mo, &v, vaddr, soff);
  if (!mo->d16 && mo->bytes >= 4 && vdata->count < mo->bytes / 4u)
    return emu_fail(w, in, "buffer access of %u bytes with a %u-register data operand", mo->bytes, vdata->count);
  emu_mem *m = emu_wave_mem(w);
  unsigned nelem = mo->bytes / mo->elem;
  uint32_t all = (1u << nelem) - 1;
  const unsigned need = emu_mem_align_need(w, EMU_ALIGN_VMEM, mo->bytes);
  for (unsigned l = 0; l < 64; l++) {
    if (!((w->exec >> l) & 1)) continue;
    lane_addr a = buffer_lane(w, in, &v, vaddr, soff, l, nelem, mo->elem, 0);
    if (a.ok && emu_mem_is_misaligned(a.addr, need)) /* lanes wholly out of range access nothing */
      return emu_mem_misaligned(w, in, EMU_ALIGN_VMEM, mo->store ? "buffer store" : "buffer load", a.addr, need, l);
    if (w->tr && a.ok) emu_trace_note_lines(w, a.addr, mo->bytes);
    emu_access_ctx c = emu_actx(w, in, (int)l);
    uint8_t b[16] = {0};
    if (mo->store) {
      emu_mem_get_lane(w, vdata, mo, l, b);
      if (a.ok == all) CJ_TRY(emu_mem_write(m, a.addr, b, mo->bytes, &c));
      else
        for (unsigned e = 0; e < nelem; e++)
          if ((a.ok >> e) & 1) CJ_TRY(emu_mem_write(m, a.addr + e * mo->elem, b + e * mo->elem, mo->elem, &c));
    } else {
      if (a.ok == all) CJ_TRY(emu_mem_read(m, a.addr, b, mo->bytes, &c));
      else
        for (unsigned e = 0; e < nelem; e++)
          if ((a.ok >> e) & 1) CJ_TRY(emu_mem_read(m, a.addr + e * mo->elem, b + e * mo->elem, mo->elem, &c));
      emu_mem_put_lane(w, vdata, mo, l, b);
    }
  }
  emu_hz_issue(w, in, EMU_HZ_VM, mo->store ? NULL : vdata);
  return CONVJIT_OK;
}

/* buffer_atomic_add_f32 vdata, vaddr, srsrc, soffset [offen|idxen] [glc|sc0] */
convjit_status emu_x_buffer_atomic(emu_wave *w, const emu_inst *in) {
  if (in->nops < 4) return emu_fail(w, in, "buffer atomic: unexpected operands");
  const emu_operand *vdata = &in->o[0], *vaddr = &in->o[1];
  vsharp v = {0}; /* set by read_vsharp; zeroed for -O3's maybe-uninitialized */
  CJ_TRY(read_vsharp(w, in, &in->o[2], &v));
  uint32_t soff = emu_sread(w, &in->o[3], 0);
  int ret = (in->mflags & (EMU_M_GLC | EMU_M_SC0)) != 0;
  emu_mem *m = emu_wave_mem(w);
  uint32_t *row = emu_vreg(w, vdata, 0);
  if (!row) return emu_fail(w, in, "buffer atomic: data is not a vector register");
  const unsigned need = emu_mem_align_need(w, EMU_ALIGN_ATOMIC, 4);
  for (unsigned l = 0; l < 64; l++) {
    if (!((w->exec >> l) & 1)) continue;
    lane_addr a = buffer_lane(w, in, &v, vaddr, soff, l, 1, 4, 1);
    float x;
    memcpy(&x, &row[l], 4);
    if (!a.ok) { /* out of range: dropped; returns 0 */
      if (ret) row[l] = 0;
      continue;
    }
    if (emu_mem_is_misaligned(a.addr, need))
      return emu_mem_misaligned(w, in, EMU_ALIGN_ATOMIC, "buffer atomic", a.addr, need, l);
    if (w->tr) emu_trace_note_lines(w, a.addr, 4);
    if (ret) {
      emu_access_ctx c = emu_actx(w, in, (int)l);
      float old;
      CJ_TRY(emu_mem_atomic_add_f32(m, a.addr, x, &old, &c));
      memcpy(&row[l], &old, 4);
    } else {
      CJ_TRY(emu_mem_log_atomic(w, in, a.addr, x, (int)l));
    }
  }
  emu_hz_issue(w, in, EMU_HZ_VM, ret ? vdata : NULL);
  return CONVJIT_OK;
}

/* buffer_inv / buffer_wbl2: the emulator has no caches (every access goes to
 * the one copy of memory), so only the counter is kept. */
convjit_status emu_x_cache_nop(emu_wave *w, const emu_inst *in) {
  emu_hz_issue(w, in, EMU_HZ_VM, NULL);
  return CONVJIT_OK;
}
