/* dispatch.c — contexts, modules, and launching a kernel (docs/isa-notes.md §5).
 *
 * A launch builds the kernarg segment (explicit bytes at the caller's
 * offsets + hidden arguments by metadata value_kind) in emulator memory,
 * then runs workgroups on host threads. Each workgroup's waves start with
 * the user SGPRs the kernel descriptor enables (in the hardware order),
 * workgroup ids after USER_SGPR_COUNT, v0 = packed work-item ids
 * (x[9:0] y[19:10] z[29:20]) and EXEC = the lanes that exist. Waves of a
 * workgroup run cooperatively on one thread: each runs until s_barrier or
 * s_endpgm; a barrier releases when every wave that has not ended arrives.
 * Workgroups never share state except memory, so any thread count gives the
 * same memory (logged atomics are applied in workgroup order by memory.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "emu/emu_internal.h"
#include "emu/memory.h"
#include "emu/trace.h"

/* ---- context --------------------------------------------------------------- */
convjit_status emu_ctx_create(const char *arch, const emu_options *opt, emu_ctx **out) {
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "emu_ctx_create: out = NULL");
  *out = NULL;
  CJ_CHECK(arch, CONVJIT_ERR_INVALID_ARG, "emu_ctx_create: arch = NULL");
  const cj_arch *a = cj_arch_from_name(arch);
  CJ_CHECK(a, CONVJIT_ERR_INVALID_ARG, "emu_ctx_create: arch = \"%s\": must be one of %s", arch, cj_arch_names());
  if (opt) {
    CJ_CHECK(opt->size == sizeof(emu_options), CONVJIT_ERR_INVALID_ARG,
             "emu_ctx_create: options.size = %u: must be sizeof(emu_options) = %zu", opt->size, sizeof(emu_options));
    CJ_CHECK(opt->threads >= 0 && opt->threads <= 1024, CONVJIT_ERR_INVALID_ARG,
             "emu_ctx_create: options.threads = %d: must be in 0..1024", opt->threads);
  }
  emu_ctx *c = calloc(1, sizeof *c);
  CJ_ALLOC_CHECK(c);
  c->arch = a;
  c->hazard = opt ? (opt->hazard != 0) : 1;
  c->threads = opt ? opt->threads : 0;
  convjit_status st = emu_mem_create(&c->mem);
  if (st != CONVJIT_OK) { free(c); return st; }
  *out = c;
  return CONVJIT_OK;
}

void emu_ctx_destroy(emu_ctx *c) {
  if (!c) return;
  emu_mem_destroy(c->mem);
  free(c);
}
emu_mem *emu_ctx_mem(emu_ctx *c) { return c ? c->mem : NULL; }
const char *emu_ctx_arch(const emu_ctx *c) { return c ? c->arch->name : ""; }
void emu_ctx_set_hazard(emu_ctx *c, int on) { if (c) c->hazard = on != 0; }
void emu_ctx_set_threads(emu_ctx *c, int threads) { if (c && threads >= 0) c->threads = threads; }
void emu_ctx_set_align_mode(emu_ctx *c, int mode) {
  if (c && mode >= EMU_ALIGN_MODE_DEFAULT && mode <= EMU_ALIGN_MODE_DWORD) c->align_mode = mode;
}

/* ---- modules ----------------------------------------------------------------- */
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }

/* What the HSA loader does: one allocation for the whole image, the
 * segments copied to their p_vaddr, the dynamic relocations applied
 * (pipeline/codeobj.h cj_image_place). */
static convjit_status load_image(emu_module *m, const void *elf, size_t size) {
  cj_image im;
  CJ_TRY(cj_image_read(elf, size, &im));
  uint64_t text_end = m->co->text_vaddr + m->co->text.size;
  convjit_status st = CONVJIT_OK;
  if (im.size < text_end)
    st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "code object: .text [0x%llx, 0x%llx) is not inside the %llu-byte loaded image",
                (unsigned long long)m->co->text_vaddr, (unsigned long long)text_end, (unsigned long long)im.size);
  if (st == CONVJIT_OK) st = emu_mem_alloc(m->ctx->mem, im.size, &m->image_addr);
  if (st == CONVJIT_OK) {
    m->image_size = im.size;
    uint8_t *p = emu_mem_host_ptr(m->ctx->mem, m->image_addr, im.size);
    st = p ? cj_image_place(&im, m->image_addr, p)
           : CJ_ERR(CONVJIT_ERR_INTERNAL, "emu_module_load: the image allocation has no host bytes");
  }
  cj_image_free(&im);
  return st;
}

convjit_status emu_module_load(emu_ctx *c, const void *elf, size_t size, emu_module **out) {
  CJ_CHECK(c && elf && out, CONVJIT_ERR_INVALID_ARG, "emu_module_load: NULL argument");
  CJ_CHECK(size > 0, CONVJIT_ERR_INVALID_ARG, "emu_module_load: size = 0");
  *out = NULL;
  emu_module *m = calloc(1, sizeof *m);
  CJ_ALLOC_CHECK(m);
  m->ctx = c;
  convjit_status st = cj_codeobj_parse(elf, size, &m->co);
  if (st != CONVJIT_OK) { free(m); return st; }
  if (m->co->elf_mach != c->arch->elf_mach) {
    st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "emu_module_load: code object mach 0x%x (target \"%s\") does not match the emulator's arch %s",
                m->co->elf_mach, m->co->target, c->arch->name);
    goto fail;
  }
  m->arch = c->arch;
  st = emu_decode_module(m);
  if (st != CONVJIT_OK) goto fail;
  st = load_image(m, elf, size);
  if (st != CONVJIT_OK) goto fail;
  m->kernels = calloc(m->co->nkernels ? m->co->nkernels : 1, sizeof *m->kernels);
  if (!m->kernels) { st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "emu_module_load: out of memory"); goto fail; }
  for (uint32_t i = 0; i < m->co->nkernels; i++) {
    const cj_kernel_info *ki = &m->co->kernels[i];
    emu_kernel *k = &m->kernels[i];
    k->mod = m;
    k->info = ki;
    k->entry = (uint32_t)(ki->entry_vaddr - m->co->text_vaddr);
    k->lds_bytes = rd32(ki->kd + 0);
    k->private_bytes = rd32(ki->kd + 4);
    k->rsrc3 = rd32(ki->kd + 44);
    k->rsrc1 = rd32(ki->kd + 48);
    k->rsrc2 = rd32(ki->kd + 52);
    k->code_props = rd16(ki->kd + 56);
    k->kernarg_preload = rd16(ki->kd + 58);
    k->user_sgprs = (k->rsrc2 >> 1) & 31;
    k->accum_offset = ((k->rsrc3 & 63) + 1) * 4;
  }
  *out = m;
  return CONVJIT_OK;
fail:
  emu_module_unload(m);
  return st;
}

void emu_module_unload_detached(emu_module *m) {
  if (!m) return;
  emu_decode_free(m);
  cj_codeobj_destroy(m->co);
  free(m->kernels);
  free(m);
}

void emu_module_unload(emu_module *m) {
  if (!m) return;
  emu_mem_free(m->ctx->mem, m->image_addr); /* 0 (nothing placed yet) is a no-op */
  emu_module_unload_detached(m);
}

uint64_t emu_module_image(const emu_module *m, uint64_t *size) {
  if (size) *size = m ? m->image_size : 0;
  return m ? m->image_addr : 0;
}

const cj_codeobj *emu_module_codeobj(const emu_module *m) { return m ? m->co : NULL; }

convjit_status emu_kernel_get(emu_module *m, const char *name, const emu_kernel **out) {
  CJ_CHECK(m && name && out, CONVJIT_ERR_INVALID_ARG, "emu_kernel_get: NULL argument");
  for (uint32_t i = 0; i < m->co->nkernels; i++)
    if (!strcmp(m->co->kernels[i].name, name)) { *out = &m->kernels[i]; return CONVJIT_OK; }
  *out = NULL;
  return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "emu_kernel_get: kernel \"%s\" not in the module (%u kernels)", name,
                m->co->nkernels);
}
const cj_kernel_info *emu_kernel_info(const emu_kernel *k) { return k ? k->info : NULL; }

/* The kernel's code: [entry, entry + code_size), or to the end of .text. */
static void code_range(const emu_kernel *k, uint32_t *lo, uint32_t *hi) {
  uint32_t tsz = k->mod->text_size;
  uint64_t end = k->info->code_size ? (uint64_t)k->entry + k->info->code_size : tsz;
  *lo = k->entry < tsz ? k->entry : tsz;
  *hi = end < tsz ? (uint32_t)end : tsz;
}

void emu_kernel_scan(const emu_kernel *k, uint32_t *ninsts, uint32_t *nbad) {
  uint32_t lo, hi, n = 0, bad = 0;
  code_range(k, &lo, &hi);
  for (uint32_t pc = lo; pc < hi; pc += 4) {
    const emu_inst *in = k->mod->inst_at[pc / 4];
    if (!in) continue;
    n++;
    bad += in->bad != NULL;
  }
  *ninsts = n;
  *nbad = bad;
}

int emu_kernel_bad_inst(const emu_kernel *k, uint32_t i, uint32_t *offset, const char **text, const char **reason) {
  uint32_t lo, hi;
  code_range(k, &lo, &hi);
  for (uint32_t pc = lo; pc < hi; pc += 4) {
    const emu_inst *in = k->mod->inst_at[pc / 4];
    if (!in || !in->bad || i--) continue;
    *offset = pc - k->entry;
    *text = in->text;
    *reason = in->bad;
    return 0;
  }
  return -1;
}

/* ---- kernarg segment ------------------------------------------------------------ */
static void put(uint8_t *seg, uint32_t segsz, const cj_kernel_arg *a, uint64_t v) {
  if (a->offset + a->size > segsz || a->size > 8) return;
  memcpy(seg + a->offset, &v, a->size); /* little-endian host */
}

static convjit_status build_kernargs(emu_run *L, const void *kernargs, size_t kernarg_size, uint8_t **segp,
                                     uint32_t *segsz) {
  const cj_kernel_info *ki = L->k->info;
  uint32_t explicit_end = 0;
  for (uint32_t i = 0; i < ki->nargs; i++) {
    const cj_kernel_arg *a = &ki->args[i];
    if (cj_kernel_arg_is_explicit(a))
      if (a->offset + a->size > explicit_end) explicit_end = a->offset + a->size;
  }
  CJ_CHECK(kernarg_size >= explicit_end, CONVJIT_ERR_INVALID_ARG,
           "emu_launch: kernarg_size = %zu: kernel %s needs %u bytes of explicit arguments", kernarg_size,
           ki->name, explicit_end);
  uint32_t sz = ki->kernarg_size;
  if (kernarg_size > sz) sz = (uint32_t)kernarg_size;
  sz = (sz + 255) & ~255u;
  if (sz == 0) sz = 256;
  uint8_t *seg = calloc(1, sz);
  CJ_ALLOC_CHECK(seg);
  if (kernarg_size) memcpy(seg, kernargs, kernarg_size);
  uint32_t dims = (L->grid[2] > 1 || L->block[2] > 1) ? 3 : (L->grid[1] > 1 || L->block[1] > 1) ? 2 : 1;
  for (uint32_t i = 0; i < ki->nargs; i++) {
    const cj_kernel_arg *a = &ki->args[i];
    switch (a->kind) {
    case CJ_ARG_HIDDEN_BLOCK_COUNT_X: put(seg, sz, a, L->grid[0]); break;
    case CJ_ARG_HIDDEN_BLOCK_COUNT_Y: put(seg, sz, a, L->grid[1]); break;
    case CJ_ARG_HIDDEN_BLOCK_COUNT_Z: put(seg, sz, a, L->grid[2]); break;
    case CJ_ARG_HIDDEN_GROUP_SIZE_X: put(seg, sz, a, L->block[0]); break;
    case CJ_ARG_HIDDEN_GROUP_SIZE_Y: put(seg, sz, a, L->block[1]); break;
    case CJ_ARG_HIDDEN_GROUP_SIZE_Z: put(seg, sz, a, L->block[2]); break;
    /* grid[] counts whole workgroups, so there is no partial last group. */
    case CJ_ARG_HIDDEN_REMAINDER_X: case CJ_ARG_HIDDEN_REMAINDER_Y: case CJ_ARG_HIDDEN_REMAINDER_Z:
    case CJ_ARG_HIDDEN_GLOBAL_OFFSET_X: case CJ_ARG_HIDDEN_GLOBAL_OFFSET_Y: case CJ_ARG_HIDDEN_GLOBAL_OFFSET_Z:
      put(seg, sz, a, 0); break;
    case CJ_ARG_HIDDEN_GRID_DIMS: put(seg, sz, a, dims); break;
    case CJ_ARG_HIDDEN_DYNAMIC_LDS_SIZE: put(seg, sz, a, L->dyn_lds_bytes); break;
    default: break; /* other hidden args (heap, queue, hostcall...) stay zero */
    }
  }
  *segp = seg;
  *segsz = sz;
  return CONVJIT_OK;
}

/* ---- the wave loop ----------------------------------------------------------- */
static convjit_status run_wave(emu_wave *w, const emu_module *m) {
  emu_inst *const *at = m->inst_at;
  const uint32_t tsz = m->text_size;
  const emu_run *L = w->wg->L;
  while (w->state == EMU_WAVE_RUNNING) {
    uint32_t pc = w->pc;
    const emu_inst *in;
    if (pc >= tsz || (pc & 3) || !(in = at[pc >> 2])) {
      w->pc = pc;
      return emu_fail(w, NULL, "program counter 0x%x is not the start of a decoded instruction", pc);
    }
    if (in->bad) return emu_fail(w, in, "%s", in->bad);
    /* a kernel that never ends (a branch to itself, a loop whose exit is
     * never taken) would hold the caller forever: the budget stops it here */
    if (w->insts == L->max_insts)
      return emu_fail(w, in,
                      "the wave executed %llu instructions without ending, the launch's instruction budget (%s): a "
                      "loop that never ends? A kernel that needs more: raise max_instructions (launch options) or "
                      "CONVJIT_EMU_MAX_INSTRUCTIONS",
                      (unsigned long long)w->insts, L->max_insts_from);
    w->insts++;
    w->pc_next = pc + in->size;
    w->count[in->cls]++;
    if (in->cls == EMU_CLASS_MFMA) w->cover_mfma += (uint64_t)w->cover_open;
    if (w->hz_npending) {
      convjit_status hs = emu_hazard_check_inst(w, in);
      if (hs != CONVJIT_OK) return hs;
    }
    /* one pointer test per instruction when no trace is recorded */
    convjit_status st = w->tr ? emu_trace_step(w, in) : in->fn(w, in);
    if (st != CONVJIT_OK) return st;
    w->pc = w->pc_next;
  }
  return CONVJIT_OK;
}

typedef struct worker {
  emu_run *L;
  struct launch_shared *S;
  emu_wave *waves;
  uint32_t maxwaves;
  uint8_t *lds;
  emu_stats stats;
  emu_wave_stats *pw;
  size_t npw, cappw;
  pthread_t th;
} worker;

typedef struct launch_shared {
  pthread_mutex_t mu;
  uint64_t next;         /* next work index */
  uint64_t nwork;
  const emu_launch_opts *opts;
  int failed;
  uint64_t fail_linear;
  convjit_status fail_st;
  char fail_text[1024];
} launch_shared;

static void init_wave(emu_wave *w, emu_wg *g, uint32_t idx, uint32_t nthreads) {
  const emu_run *L = g->L;
  const emu_kernel *k = L->k;
  uint32_t vg = k->info->vgpr_count > 256 ? 256 : k->info->vgpr_count;
  uint32_t ag = k->info->agpr_count > 256 ? 256 : k->info->agpr_count;
  /* Registers the kernel uses start at zero (hardware leaves garbage; a
   * kernel that reads them uninitialised is wrong either way). */
  memset(w->v, 0, sizeof(w->v[0]) * (vg ? vg : 1));
  if (ag) memset(w->a, 0, sizeof(w->a[0]) * ag);
  memset(w->s, 0, sizeof w->s);
  w->vcc = 0; w->m0 = 0; w->scc = 0;
  w->id = idx;
  w->wg = g;
  w->state = EMU_WAVE_RUNNING;
  /* Firmware that preloads kernargs skips the 256-byte compatibility
   * prologue LLVM puts first (AMDGPUUsage, "Preloaded Kernel Arguments");
   * starting there checks the preloaded SGPRs themselves. */
  w->pc = (k->kernarg_preload & 0x7f) ? k->entry + 256 : k->entry;
  w->hazard = L->hazard;
  w->hz_npending = 0;
  w->hz = NULL;
  memset(w->count, 0, sizeof w->count);
  w->insts = 0;
  w->cycles = 0; w->mfma_macs = 0; w->prio = 0; w->vmcnt0 = 0;
  w->barriers = w->cover_mfma = 0; w->cover_open = 0;
  memset(&w->lds, 0, sizeof w->lds);
  w->lds.banks = L->lds_banks.banks;
  w->tr = NULL;
  uint64_t live = 0;
  for (uint32_t l = 0; l < 64; l++) {
    uint32_t t = idx * 64 + l;
    if (t >= nthreads) { w->v[0][l] = 0; continue; }
    live |= 1ull << l;
    uint32_t x = t % g->size[0], y = (t / g->size[0]) % g->size[1], z = t / (g->size[0] * g->size[1]);
    w->v[0][l] = x | y << 10 | z << 20;
  }
  w->live = live;
  w->exec = live;
  /* user SGPRs in hardware order (docs/isa-notes.md §5) */
  unsigned s = 0;
  uint16_t p = k->code_props;
  if (p & 1) s += 4;                                           /* private segment buffer: no scratch */
  if (p & 2) { w->s[s] = (uint32_t)L->dispatch_addr; w->s[s + 1] = (uint32_t)(L->dispatch_addr >> 32); s += 2; }
  if (p & 4) { w->s[s] = (uint32_t)L->queue_addr; w->s[s + 1] = (uint32_t)(L->queue_addr >> 32); s += 2; }
  if (p & 8) { w->s[s] = (uint32_t)L->kernarg_addr; w->s[s + 1] = (uint32_t)(L->kernarg_addr >> 32); s += 2; }
  if (p & 16) { w->s[s] = 0; w->s[s + 1] = 0; s += 2; }        /* dispatch id 0 */
  if (p & 32) s += 2;                                          /* flat scratch init: unused (no scratch) */
  if (p & 64) { w->s[s] = k->private_bytes; s += 1; }
  uint32_t plen = k->kernarg_preload & 0x7f, poff = (k->kernarg_preload >> 7) * 4;
  for (uint32_t i = 0; i < plen && s < 128; i++, s++)
    if (poff + 4 * i + 4 <= L->kernarg_size) memcpy(&w->s[s], L->kernarg_host + poff + 4 * i, 4);
  s = k->user_sgprs;
  if (k->rsrc2 & (1u << 7)) w->s[s++] = g->id[0];
  if (k->rsrc2 & (1u << 8)) w->s[s++] = g->id[1];
  if (k->rsrc2 & (1u << 9)) w->s[s++] = g->id[2];
  if (k->rsrc2 & (1u << 10)) w->s[s++] = 0; /* workgroup info: not modelled */
}

static convjit_status run_wg(worker *wk, uint64_t linear) {
  emu_run *L = wk->L;
  emu_wg g;
  memset(&g, 0, sizeof g);
  g.L = L;
  g.linear = linear;
  g.id[0] = (uint32_t)(linear % L->grid[0]);
  g.id[1] = (uint32_t)((linear / L->grid[0]) % L->grid[1]);
  g.id[2] = (uint32_t)(linear / ((uint64_t)L->grid[0] * L->grid[1]));
  memcpy(g.size, L->block, sizeof g.size);
  uint32_t nthreads = L->block[0] * L->block[1] * L->block[2];
  g.nwaves = (nthreads + 63) / 64;
  g.waves = wk->waves;
  g.lds = wk->lds;
  g.lds_size = L->k->lds_bytes + L->dyn_lds_bytes;
  if (g.lds_size) memset(g.lds, 0, g.lds_size);
  for (uint32_t i = 0; i < g.nwaves; i++) init_wave(&g.waves[i], &g, i, nthreads);
  struct emu_trace *tr = wk->S->opts ? wk->S->opts->trace : NULL;
  convjit_status st = CONVJIT_OK;
  for (uint32_t i = 0; tr && i < g.nwaves && st == CONVJIT_OK; i++) st = emu_trace_wave_begin(&g.waves[i], tr);
  if (st == CONVJIT_OK) st = emu_mem_wg_begin(&g);
  if (st != CONVJIT_OK) return tr ? emu_trace_wg_end(&g, tr, st) : st;
  if (L->hazard && (st = emu_hazard_wg_begin(&g)) != CONVJIT_OK) {
    emu_mem_wg_end(&g, st);
    return tr ? emu_trace_wg_end(&g, tr, st) : st;
  }
  const emu_module *m = L->k->mod;
  for (;;) {
    uint32_t done = 0;
    for (uint32_t i = 0; i < g.nwaves && st == CONVJIT_OK; i++) {
      emu_wave *w = &g.waves[i];
      if (w->state == EMU_WAVE_RUNNING) st = run_wave(w, m);
      if (w->state == EMU_WAVE_DONE) done++;
    }
    if (st != CONVJIT_OK || done == g.nwaves) break;
    /* every wave that has not ended waits at the barrier: release them */
    if (L->hazard && (st = emu_hazard_barrier(&g)) != CONVJIT_OK) break;
    for (uint32_t i = 0; i < g.nwaves; i++)
      if (g.waves[i].state == EMU_WAVE_BARRIER) g.waves[i].state = EMU_WAVE_RUNNING;
    g.barriers++;
  }
  if (L->hazard) emu_hazard_wg_end(&g);
  convjit_status st2 = emu_mem_wg_end(&g, st);
  if (st == CONVJIT_OK) st = st2;
  if (tr) st = emu_trace_wg_end(&g, tr, st);
  if (st != CONVJIT_OK) return st;
  const emu_launch_opts *o = wk->S->opts;
  if (o && o->final_state && o->final_wg == linear && o->final_wave < g.nwaves)
    memcpy(o->final_state, &g.waves[o->final_wave], sizeof(emu_wave));
  wk->stats.workgroups++;
  for (uint32_t i = 0; i < g.nwaves; i++) {
    emu_stats_add_wave(&wk->stats, &g.waves[i]);
    if (wk->S->opts && wk->S->opts->per_wave_stats) {
      if (wk->npw == wk->cappw) {
        size_t nc = wk->cappw ? wk->cappw * 2 : 64;
        emu_wave_stats *np = realloc(wk->pw, nc * sizeof *np);
        if (!np) return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "emu_launch: out of memory for per-wave stats");
        wk->pw = np; wk->cappw = nc;
      }
      emu_wave_stats *r = &wk->pw[wk->npw++];
      const emu_wave *w = &g.waves[i];
      memcpy(r->wg, g.id, sizeof r->wg);
      r->wave = i;
      memcpy(r->count, w->count, sizeof r->count);
      r->total = 0;
      for (int c = 0; c < EMU_CLASS_COUNT; c++) r->total += w->count[c];
      r->cycles = w->cycles;
      r->lds = w->lds;
    }
  }
  return CONVJIT_OK;
}

static void *worker_main(void *arg) {
  worker *wk = arg;
  launch_shared *S = wk->S;
  const emu_launch_opts *o = S->opts;
  const emu_run *L = wk->L;
  for (;;) {
    pthread_mutex_lock(&S->mu);
    uint64_t i = S->next++;
    int stop = S->failed;
    pthread_mutex_unlock(&S->mu);
    if (stop || i >= S->nwork) break;
    uint64_t linear = (o && o->wg_list_len) ? o->wg_list[i] : i;
    if (o && o->filter && !(o->wg_list_len)) {
      uint32_t id[3] = {(uint32_t)(linear % L->grid[0]), (uint32_t)((linear / L->grid[0]) % L->grid[1]),
                        (uint32_t)(linear / ((uint64_t)L->grid[0] * L->grid[1]))};
      if (!o->filter(o->filter_user, id)) continue;
    }
    cj_error_clear();
    convjit_status st = run_wg(wk, linear);
    if (st != CONVJIT_OK) {
      pthread_mutex_lock(&S->mu);
      if (!S->failed || linear < S->fail_linear) {
        S->failed = 1;
        S->fail_linear = linear;
        S->fail_st = st;
        snprintf(S->fail_text, sizeof S->fail_text, "%s", cj_error_text());
      }
      pthread_mutex_unlock(&S->mu);
      break;
    }
  }
  return NULL;
}

/* Host threads for a launch: the context's setting, else CONVJIT_EMU_THREADS
 * (an integer in 1..1024; anything else is refused, not silently ignored),
 * else all online cores. */
static convjit_status default_threads(const emu_ctx *c, int *out) {
  if (c->threads > 0) { *out = c->threads; return CONVJIT_OK; }
  const char *e = getenv("CONVJIT_EMU_THREADS");
  if (e && *e) {
    char *end;
    long n = strtol(e, &end, 10);
    CJ_CHECK(!*end && n > 0 && n <= 1024, CONVJIT_ERR_INVALID_ARG,
             "emu_launch: CONVJIT_EMU_THREADS = '%.32s': must be an integer in 1..1024", e);
    *out = (int)n;
    return CONVJIT_OK;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  *out = n > 0 ? (int)n : 1;
  return CONVJIT_OK;
}

/* The instruction budget of a launch's waves: the option, else
 * CONVJIT_EMU_MAX_INSTRUCTIONS (an integer >= 1; anything else is refused,
 * not silently ignored), else the default; L->max_insts_from names the source. */
static convjit_status launch_max_insts(const emu_launch_opts *o, emu_run *L) {
  const char *e = getenv("CONVJIT_EMU_MAX_INSTRUCTIONS");
  uint64_t v = CONVJIT_EMU_MAX_INSTRUCTIONS_DEFAULT;
  const char *src = "the default";
  if (o && o->max_wave_insts) {
    v = o->max_wave_insts;
    src = "max_instructions";
  } else if (e && *e) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(e, &end, 10);
    CJ_CHECK(*e >= '0' && *e <= '9' && !*end && !errno && n >= 1, CONVJIT_ERR_INVALID_ARG,
             "emu_launch: CONVJIT_EMU_MAX_INSTRUCTIONS = '%.32s': must be an integer in 1..2^64-1", e);
    v = n;
    src = "CONVJIT_EMU_MAX_INSTRUCTIONS";
  }
  snprintf(L->max_insts_from, sizeof L->max_insts_from, "%s = %llu", src, (unsigned long long)v);
  L->max_insts = v;
  return CONVJIT_OK;
}

/* Alignment mode of a launch: the context's, else CONVJIT_EMU_ALIGN
 * ("unaligned" or "dword"; anything else is refused), else UNALIGNED. */
static convjit_status launch_align_mode(const emu_ctx *c, int *out) {
  *out = c->align_mode ? c->align_mode : EMU_ALIGN_MODE_UNALIGNED;
  const char *e = c->align_mode ? NULL : getenv("CONVJIT_EMU_ALIGN");
  if (!e || !*e) return CONVJIT_OK;
  CJ_CHECK(!strcmp(e, "unaligned") || !strcmp(e, "dword"), CONVJIT_ERR_INVALID_ARG,
           "emu_launch: CONVJIT_EMU_ALIGN = '%.32s': must be unaligned or dword", e);
  *out = !strcmp(e, "dword") ? EMU_ALIGN_MODE_DWORD : EMU_ALIGN_MODE_UNALIGNED;
  return CONVJIT_OK;
}

static int cmp_pw(const void *a, const void *b) {
  const emu_wave_stats *x = a, *y = b;
  for (int d = 2; d >= 0; d--)
    if (x->wg[d] != y->wg[d]) return x->wg[d] < y->wg[d] ? -1 : 1;
  return x->wave < y->wave ? -1 : x->wave > y->wave;
}

/* The launch's counts: the workers' stats summed (extremes as maxima). */
static size_t merge_worker_stats(worker *wks, int nth, emu_stats *out) {
  emu_stats acc;
  memset(&acc, 0, sizeof acc);
  size_t npw = 0;
  for (int i = 0; i < nth; i++) {
    emu_stats *s = &wks[i].stats;
    emu_stats_merge_extremes(&acc, s); /* before acc.waves counts s's waves */
    for (int cl = 0; cl < EMU_CLASS_COUNT; cl++) acc.count[cl] += s->count[cl];
    acc.total += s->total; acc.workgroups += s->workgroups; acc.waves += s->waves;
    acc.mfma_macs += s->mfma_macs;
    if (s->max_wave_cycles > acc.max_wave_cycles) acc.max_wave_cycles = s->max_wave_cycles;
    acc.sum_wave_cycles += s->sum_wave_cycles;
    emu_lds_stats_add(&acc.lds, &s->lds);
    if (s->lds_wave_max_cycles > acc.lds_wave_max_cycles) acc.lds_wave_max_cycles = s->lds_wave_max_cycles;
    acc.vmcnt0_waits += s->vmcnt0_waits;
    acc.barriers += s->barriers;
    acc.barrier_cover_mfma += s->barrier_cover_mfma;
    if (s->vmcnt0_wave_max > acc.vmcnt0_wave_max) acc.vmcnt0_wave_max = s->vmcnt0_wave_max;
    npw += wks[i].npw;
  }
  *out = acc;
  return npw;
}

convjit_status emu_launch(const emu_kernel *k, const uint32_t grid[3], const uint32_t block[3], const void *kernargs,
                          size_t kernarg_size, const emu_launch_opts *o, emu_stats *stats) {
  double t0 = cj_now_ms();
  if (stats) memset(stats, 0, sizeof *stats);
  CJ_CHECK(k && grid && block, CONVJIT_ERR_INVALID_ARG, "emu_launch: NULL kernel, grid or block");
  CJ_CHECK(kernarg_size == 0 || kernargs, CONVJIT_ERR_INVALID_ARG, "emu_launch: kernargs = NULL with kernarg_size = %zu",
           kernarg_size);
  for (int d = 0; d < 3; d++) {
    CJ_CHECK(grid[d] > 0, CONVJIT_ERR_INVALID_ARG, "emu_launch: grid[%d] = 0: must be > 0", d);
    CJ_CHECK(block[d] > 0, CONVJIT_ERR_INVALID_ARG, "emu_launch: block[%d] = 0: must be > 0", d);
  }
  const uint32_t maxbt = k->mod->arch->max_block_threads; /* the arch's flat work-group size limit */
  CJ_CHECK(block[0] <= maxbt && block[1] <= maxbt && block[2] <= maxbt, CONVJIT_ERR_INVALID_ARG,
           "emu_launch: block = (%u,%u,%u): each dimension must be <= %u (%s's max_block_threads)", block[0], block[1],
           block[2], maxbt, k->mod->arch->name);
  uint64_t nthreads = (uint64_t)block[0] * block[1] * block[2];
  const cj_kernel_info *ki = k->info;
  uint32_t maxwg = ki->max_flat_workgroup_size ? ki->max_flat_workgroup_size : maxbt;
  CJ_CHECK(nthreads <= maxwg, CONVJIT_ERR_INVALID_ARG,
           "emu_launch: block = (%u,%u,%u) = %llu threads: kernel %s allows at most %u", block[0], block[1], block[2],
           (unsigned long long)nthreads, ki->name, maxwg);
  if (o) {
    CJ_CHECK(o->size == sizeof(emu_launch_opts), CONVJIT_ERR_INVALID_ARG,
             "emu_launch: opts.size = %u: must be sizeof(emu_launch_opts) = %zu", o->size, sizeof(emu_launch_opts));
    CJ_CHECK(!o->wg_list_len || o->wg_list, CONVJIT_ERR_INVALID_ARG, "emu_launch: opts.wg_list = NULL with wg_list_len = %zu",
             o->wg_list_len);
  }
  CJ_CHECK(k->private_bytes == 0 && ki->private_segment_size == 0, CONVJIT_ERR_UNSUPPORTED,
           "emu_launch: kernel %s uses %u bytes of scratch per lane: the emulator does not model scratch", ki->name,
           ki->private_segment_size ? ki->private_segment_size : k->private_bytes);
  CJ_CHECK(ki->wavefront_size == 0 || ki->wavefront_size == 64, CONVJIT_ERR_UNSUPPORTED,
           "emu_launch: kernel %s wavefront size %u: only wave64 is emulated", ki->name, ki->wavefront_size);
  uint64_t total = (uint64_t)grid[0] * grid[1] * grid[2];
  if (o && o->wg_list_len)
    for (size_t i = 0; i < o->wg_list_len; i++)
      CJ_CHECK(o->wg_list[i] < total, CONVJIT_ERR_INVALID_ARG,
               "emu_launch: opts.wg_list[%zu] = %llu: must be < %llu workgroups", i,
               (unsigned long long)o->wg_list[i], (unsigned long long)total);
  emu_ctx *c = k->mod->ctx;
  int nth = 1;
  CJ_TRY(default_threads(c, &nth));
  emu_run L;
  memset(&L, 0, sizeof L);
  L.ctx = c; L.k = k; L.arch = k->mod->arch;
  if (emu_lds_banks_for(L.arch, &L.lds_banks) != 0)
    return CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "emu_launch: arch %s has no LDS bank model", L.arch->name);
  memcpy(L.grid, grid, sizeof L.grid);
  memcpy(L.block, block, sizeof L.block);
  L.hazard = (o && o->hazard >= 0) ? (o->hazard != 0) : c->hazard;
  L.dyn_lds_bytes = o ? o->dyn_lds_bytes : 0;
  CJ_CHECK(L.dyn_lds_bytes <= L.arch->lds_bytes && k->lds_bytes <= L.arch->lds_bytes - L.dyn_lds_bytes,
           CONVJIT_ERR_INVALID_ARG,
           "emu_launch: kernel %s: %u bytes of static LDS + %u dynamic = %llu: %s allows %u per workgroup", ki->name,
           k->lds_bytes, L.dyn_lds_bytes, (unsigned long long)k->lds_bytes + L.dyn_lds_bytes, L.arch->name,
           L.arch->lds_bytes);
  CJ_TRY(launch_align_mode(c, &L.align_mode));
  CJ_TRY(launch_max_insts(o, &L));
  uint8_t *seg = NULL;
  uint32_t segsz = 0;
  CJ_TRY(build_kernargs(&L, kernargs, kernarg_size, &seg, &segsz));
  convjit_status st;
  /* dispatch packet (HSA layout) and a zeroed queue stand-in, for kernels that ask */
  uint8_t pkt[64] = {0};
  uint16_t ws[3] = {(uint16_t)block[0], (uint16_t)block[1], (uint16_t)block[2]};
  memcpy(pkt + 4, ws, 6);
  for (int d = 0; d < 3; d++) { uint32_t gs = grid[d] * block[d]; memcpy(pkt + 12 + 4 * d, &gs, 4); }
  if ((st = emu_mem_alloc(c->mem, segsz, &L.kernarg_addr)) != CONVJIT_OK) { free(seg); return st; }
  L.kernarg_size = segsz;
  L.kernarg_host = seg;
  if ((st = emu_mem_h2d(c->mem, L.kernarg_addr, seg, segsz)) != CONVJIT_OK) goto out_karg;
  if ((st = emu_mem_alloc(c->mem, 256, &L.dispatch_addr)) != CONVJIT_OK) goto out_karg;
  if ((st = emu_mem_h2d(c->mem, L.dispatch_addr, pkt, sizeof pkt)) != CONVJIT_OK) goto out_disp;
  if ((st = emu_mem_alloc(c->mem, 256, &L.queue_addr)) != CONVJIT_OK) goto out_disp;

  launch_shared S;
  memset(&S, 0, sizeof S);
  pthread_mutex_init(&S.mu, NULL);
  S.opts = o;
  S.nwork = (o && o->wg_list_len) ? o->wg_list_len : total;
  if ((uint64_t)nth > S.nwork) nth = (int)S.nwork;
  if (nth < 1) nth = 1;
  uint32_t nwaves = (uint32_t)((nthreads + 63) / 64);
  worker *wks = calloc((size_t)nth, sizeof *wks);
  if (!wks) { st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "emu_launch: out of memory"); goto out_queue; }
  if ((st = emu_mem_launch_begin(&L)) != CONVJIT_OK) { free(wks); goto out_queue; }
  int started = 0;
  for (int i = 0; i < nth; i++) {
    worker *wk = &wks[i];
    wk->L = &L; wk->S = &S; wk->maxwaves = nwaves;
    wk->waves = malloc(sizeof(emu_wave) * nwaves);
    wk->lds = malloc(k->lds_bytes + L.dyn_lds_bytes ? k->lds_bytes + L.dyn_lds_bytes : 16);
    if (!wk->waves || !wk->lds) { st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "emu_launch: out of memory for wave state"); break; }
  }
  if (st == CONVJIT_OK) {
    if (nth == 1) {
      worker_main(&wks[0]);
    } else {
      for (int i = 0; i < nth; i++) {
        if (pthread_create(&wks[i].th, NULL, worker_main, &wks[i]) != 0) break;
        started++;
      }
      if (started == 0) worker_main(&wks[0]);
      for (int i = 0; i < started; i++) pthread_join(wks[i].th, NULL);
    }
    if (S.failed) st = CJ_ERR(S.fail_st, "%s", S.fail_text);
  }
  convjit_status st2 = emu_mem_launch_end(&L, st);
  if (st == CONVJIT_OK) st = st2;
  if (o && o->trace) emu_trace_finish(o->trace);
  emu_stats acc;
  size_t npw = merge_worker_stats(wks, nth, &acc);
  if (st == CONVJIT_OK && stats) {
    *stats = acc;
    stats->lds.banks = L.lds_banks.banks; /* also when no wave ran */
    stats->emulated_ms = emu_stats_finish_ms(c, acc.sum_wave_cycles, acc.max_wave_cycles);
    if (o && o->per_wave_stats && npw) {
      stats->per_wave = malloc(npw * sizeof *stats->per_wave);
      if (stats->per_wave) {
        size_t p = 0;
        for (int i = 0; i < nth; i++) { memcpy(stats->per_wave + p, wks[i].pw, wks[i].npw * sizeof *wks[i].pw); p += wks[i].npw; }
        qsort(stats->per_wave, npw, sizeof *stats->per_wave, cmp_pw);
        stats->nper_wave = npw;
      }
    }
    stats->host_ms = cj_now_ms() - t0;
  }
  for (int i = 0; i < nth; i++) { free(wks[i].waves); free(wks[i].lds); free(wks[i].pw); }
  free(wks);
out_queue:
  pthread_mutex_destroy(&S.mu);
  emu_mem_free(c->mem, L.queue_addr);
out_disp:
  emu_mem_free(c->mem, L.dispatch_addr);
out_karg:
  emu_mem_free(c->mem, L.kernarg_addr);
  free(seg);
  return st;
}
