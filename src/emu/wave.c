/* wave.c — the bottom of the emulator: a wave's registers read and written
 * through decoded operands, and the failure report that names the kernel,
 * offset, workgroup, wave and instruction. Every handler file (exec_*.c,
 * hazard.c) and the dispatcher call down into it; it calls no other emulator
 * file, so the emulator's call graph has no loop. Declarations: emu_internal.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "emu/emu_internal.h"

/* ---- errors ------------------------------------------------------------- */
const char *emu_kernel_name(const emu_wave *w) {
  return (w && w->wg && w->wg->L && w->wg->L->k) ? w->wg->L->k->info->name : "?";
}

convjit_status emu_fail(const emu_wave *w, const emu_inst *in, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  uint32_t pc = in ? in->pc : (w ? w->pc : 0);
  uint32_t entry = (w && w->wg && w->wg->L) ? w->wg->L->k->entry : 0;
  const emu_wg *g = w ? w->wg : NULL;
  return CJ_ERR(CONVJIT_ERR_EMULATION,
                "emulator: kernel %s at .text+0x%x (entry+0x%x), workgroup (%u,%u,%u) wave %u: '%s': %s",
                emu_kernel_name(w), pc, pc - entry, g ? g->id[0] : 0, g ? g->id[1] : 0, g ? g->id[2] : 0,
                w ? w->id : 0, (in && in->text) ? in->text : "?", msg);
}

/* emu.h's query, kept here because the hazard checker names a producer by
 * its text (and must not call up into dispatch.c). */
const char *emu_module_inst_text(const emu_module *m, uint32_t off) {
  if (!m || off >= m->text_size || (off & 3) || !m->inst_at[off / 4]) return NULL;
  return m->inst_at[off / 4]->text;
}

/* ---- operand access ------------------------------------------------------------ */
uint32_t emu_sread(const emu_wave *w, const emu_operand *o, unsigned part) {
  switch (o->kind) {
  case EMU_OPK_SGPR: return w->s[(o->reg + part) & 127];
  case EMU_OPK_VCC: return (uint32_t)(w->vcc >> (32 * ((o->reg + part) & 1)));
  case EMU_OPK_EXEC: return (uint32_t)(w->exec >> (32 * ((o->reg + part) & 1)));
  case EMU_OPK_M0: return w->m0;
  case EMU_OPK_SCC: return w->scc;
  case EMU_OPK_IMM: return part == 0 ? o->imm32 : (uint32_t)(o->imm64 >> 32);
  default: return 0;
  }
}

uint64_t emu_sread64(const emu_wave *w, const emu_operand *o) {
  switch (o->kind) {
  case EMU_OPK_SGPR: return (uint64_t)w->s[o->reg & 127] | (uint64_t)w->s[(o->reg + 1) & 127] << 32;
  case EMU_OPK_VCC: return o->count == 2 ? w->vcc : (uint32_t)(w->vcc >> (32 * o->reg));
  case EMU_OPK_EXEC: return o->count == 2 ? w->exec : (uint32_t)(w->exec >> (32 * o->reg));
  case EMU_OPK_IMM: return o->imm64;
  case EMU_OPK_M0: return w->m0;
  case EMU_OPK_SCC: return w->scc;
  default: return 0;
  }
}

static void set_half(uint64_t *x, unsigned half, uint32_t v) {
  *x = half ? ((*x & 0xffffffffull) | (uint64_t)v << 32) : ((*x & ~0xffffffffull) | v);
}

void emu_swrite(emu_wave *w, const emu_operand *o, unsigned part, uint32_t val) {
  switch (o->kind) {
  case EMU_OPK_SGPR: w->s[(o->reg + part) & 127] = val; break;
  case EMU_OPK_VCC: set_half(&w->vcc, (o->reg + part) & 1, val); break;
  case EMU_OPK_EXEC: set_half(&w->exec, (o->reg + part) & 1, val); break;
  case EMU_OPK_M0: w->m0 = val; break;
  case EMU_OPK_SCC: w->scc = val != 0; break;
  default: break; /* null / immediates: discarded */
  }
}

void emu_swrite64(emu_wave *w, const emu_operand *o, uint64_t val) {
  if ((o->kind == EMU_OPK_VCC || o->kind == EMU_OPK_EXEC) && o->count == 2) {
    if (o->kind == EMU_OPK_VCC) w->vcc = val; else w->exec = val;
    return;
  }
  emu_swrite(w, o, 0, (uint32_t)val);
  if (o->count >= 2 || o->kind == EMU_OPK_SGPR) emu_swrite(w, o, 1, (uint32_t)(val >> 32));
}

uint32_t emu_vread(const emu_wave *w, const emu_operand *o, unsigned part, unsigned lane) {
  if (o->kind == EMU_OPK_VGPR) return w->v[(o->reg + part) & 255][lane];
  if (o->kind == EMU_OPK_AGPR) return w->a[(o->reg + part) & 255][lane];
  return emu_sread(w, o, part);
}

void emu_vread_all(const emu_wave *w, const emu_operand *o, unsigned part, uint32_t out[64]) {
  if (o->kind == EMU_OPK_VGPR) { memcpy(out, w->v[(o->reg + part) & 255], 256); return; }
  if (o->kind == EMU_OPK_AGPR) { memcpy(out, w->a[(o->reg + part) & 255], 256); return; }
  uint32_t v = emu_sread(w, o, part);
  for (int l = 0; l < 64; l++) out[l] = v;
}

uint32_t *emu_vreg(emu_wave *w, const emu_operand *o, unsigned part) {
  if (o->kind == EMU_OPK_VGPR) return w->v[(o->reg + part) & 255];
  if (o->kind == EMU_OPK_AGPR) return w->a[(o->reg + part) & 255];
  return NULL;
}

void emu_vwrite_exec(emu_wave *w, const emu_operand *o, unsigned part, const uint32_t val[64]) {
  uint32_t *d = emu_vreg(w, o, part);
  if (!d) return;
  uint64_t e = w->exec;
  if (e == ~0ull) { memcpy(d, val, 256); return; }
  while (e) {
    int l = __builtin_ctzll(e);
    d[l] = val[l];
    e &= e - 1;
  }
}
