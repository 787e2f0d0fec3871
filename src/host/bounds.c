/* The bounds model (contract in bounds.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "host/bounds.h"
#include "emu/emu_internal.h"
#include "emu/memory.h"
#include "emu/trace.h"
#include "pipeline/kernargs.h"

/* docs/performance.md gives every rate below its source and every rule of
 * the model. One workgroup (the middle one of the grid) runs on the
 * emulator with zero inputs (procedural x, w, bias; sink outputs: the
 * kernel has no data-dependent branches): its waves' exact instruction
 * counts and LDS bank-model cycles, divided by its K steps (prologue and
 * epilogue included), give per K step:
 *   mfma_cycles   per SIMD: MFMAs x cycles per MFMA / 4 SIMDs
 *   issue_cycles  per SIMD: the non-MFMA instructions' issue cycles / 4
 *   lds_cycles    per CU (one LDS serves the CU's 4 SIMDs): bank model
 * and from the plan and resources: waves per SIMD (VGPRs, LDS, wave
 * limit), VMEM bytes per step (the A and B tiles) and the compulsory HBM
 * bytes of the whole conv per FLOP, as cycles per step at the arch's HBM
 * rate. Every term is for one workgroup's step, so workgroups sharing a CU
 * scale all of them alike. bound = the largest; mfma_fraction = MFMA
 * cycles / that (perfect overlap, no latency, no tail: an upper bound). */

typedef struct bounds_rates {
  uint32_t hbm_gbs;       /* HBM GB/s (decimal) */
  uint32_t lds_cu_bytes;  /* LDS per CU */
  uint32_t waves_simd;    /* wave slots per SIMD */
  uint32_t vgpr_granule;  /* VGPR allocation granule (unified file) */
} bounds_rates;

static bounds_rates rates_of(const cj_arch *a) {
  bounds_rates r = {a->hbm_gbs, a->lds_cu_bytes, a->waves_per_simd, a->vgpr_granule};
  return r;
}

/* Cycles one MFMA keeps its SIMD busy (cj_mfma_row.cycles). */
static uint32_t mfma_cycles_of(uint32_t kind) {
  const cj_mfma_row *mf = cj_mfma_row_of((cj_mfma_kind)kind);
  return mf ? mf->cycles : 0;
}


static void zero_fill(void *user, uint64_t off, void *dst, size_t n) {
  (void)user, (void)off;
  memset(dst, 0, n);
}

/* A pre-pass's or finalize's pointer arguments have no byte sizes in its
 * plan: each is a virtual range far larger than any access (its kernel's
 * buffer resources and bounds checks stop at the tensor's own size). */
#define BOUNDS_ANY_BYTES (1ull << 40)

/* The pointer roles a kernel of op `op` writes (sinks; conv kernels: Y and
 * WORKSPACE); every other pointer is read as zeros. */
static int role_written(cj_kop op, cj_arg_role r) {
  switch (r) {
  case CJ_ARG_DST: case CJ_ARG_Y: case CJ_ARG_DW: case CJ_ARG_DB: return 1;
  case CJ_ARG_WORKSPACE: return op == CJ_KOP_CONV;       /* the finalizes read it */
  case CJ_ARG_DB_PART: return op == CJ_KOP_GRID_PACK;    /* dy's pre-pass writes db's partial sums */
  default: return 0;
  }
}

/* The emulator allocation behind pointer argument d of plan p: a conv's
 * tensors at their sizes, other kernels' at BOUNDS_ANY_BYTES. */
static convjit_status bind_pointer(const cj_kplan *p, emu_mem *m, const cj_karg_desc *d, uint64_t *v) {
  const cj_conv_plan *c = p->op == CJ_KOP_CONV ? &p->u.conv : NULL;
  int out = role_written(p->op, d->role);
  uint64_t bytes = !c                             ? BOUNDS_ANY_BYTES
                   : d->role == CJ_ARG_Y           ? c->y_bytes
                   : d->role == CJ_ARG_WORKSPACE   ? c->ws_bytes + 4
                   : d->role == CJ_ARG_X           ? c->x_bytes
                   : d->role == CJ_ARG_W           ? c->w_bytes
                                                   : 1ull << 32;
  return out ? emu_mem_alloc_sink(m, bytes, NULL, NULL, 0, v) : emu_mem_alloc_procedural(m, bytes, zero_fill, NULL, v);
}

/* Runs workgroups wg[0..nwg) of the kernel (plan p of any op, built b),
 * sums their waves' statistics into st and, when tr is set, records their
 * instruction traces into it. */
convjit_status cj_bounds_emulate(const cj_kplan *p, const cj_built *b, const uint64_t *wg, size_t nwg,
                                 emu_trace *tr, emu_stats *st) {
  CJ_CHECK(p && b && b->info, CONVJIT_ERR_INVALID_ARG, "bounds: plan or built kernel = NULL");
  emu_options eo = {sizeof eo, 0, 1}; /* hazard checks off: counts only */
  emu_ctx *ctx = NULL;
  emu_module *mod = NULL;
  const emu_kernel *k = NULL;
  CJ_TRY(emu_ctx_create(p->arch->name, &eo, &ctx));
  convjit_status s = emu_module_load(ctx, b->code_object.data, b->code_object.size, &mod);
  if (s == CONVJIT_OK) s = emu_kernel_get(mod, p->name, &k);
  uint8_t ka[8 * CJ_KPLAN_MAX_ARGS] = {0};
  emu_mem *m = emu_ctx_mem(ctx);
  uint64_t rv[CJ_ARG_ROLE_COUNT] = {0};
  uint32_t have = 0;
  for (uint32_t i = 0; s == CONVJIT_OK && i < p->nargs; i++) {
    const cj_karg_desc *d = &p->args[i];
    uint64_t *v = &rv[d->role];
    have |= 1u << d->role;
    if (d->role == CJ_ARG_ALPHA || d->role == CJ_ARG_QSCALE) { /* factors: 1.0f (counts do not depend on them) */
      const float one = 1.0f;
      memcpy(v, &one, 4);
    } else if (!d->is_ptr) {
      s = CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "bounds: by-value argument %s is not modelled", d->name);
    } else {
      s = bind_pointer(p, m, d, v);
    }
  }
  if (s == CONVJIT_OK) s = cj_kernargs_pack(p, b->info, rv, have, ka, sizeof ka);
  if (s == CONVJIT_OK) {
    uint32_t grid[3] = {(uint32_t)p->grid[0], (uint32_t)p->grid[1], (uint32_t)p->grid[2]};
    emu_launch_opts lo = {.size = sizeof lo, .wg_list = wg, .wg_list_len = nwg, .hazard = 0, .trace = tr};
    s = emu_launch(k, grid, p->block, ka, b->info->kernarg_size, &lo, st);
  }
  emu_module_unload(mod);
  emu_ctx_destroy(ctx);
  return s;
}

/* Workgroups of `waves` waves one CU holds at once: registers (unified
 * file), LDS per CU, wave slots, the waves spread evenly over the SIMDs. */
static uint32_t wgs_per_cu_of(const cj_arch *a, const cj_kernel_info *ki, uint32_t waves) {
  const bounds_rates r = rates_of(a);
  /* .vgpr_count already holds arch (aligned to 4) + acc registers on these
   * arches (llc-22: 14 arch + 10 acc VGPRs give .vgpr_count 26) */
  uint32_t regs = (ki->vgpr_count + r.vgpr_granule - 1) / r.vgpr_granule * r.vgpr_granule;
  uint32_t by_regs = regs ? a->vgprs / regs : r.waves_simd;
  if (by_regs > r.waves_simd) by_regs = r.waves_simd;
  uint32_t wgs = waves ? by_regs * a->simds_per_cu / waves : 0;
  if (ki->group_segment_size && r.lds_cu_bytes / ki->group_segment_size < wgs) wgs = r.lds_cu_bytes / ki->group_segment_size;
  return wgs;
}

/* The bounds of the middle workgroup; tr (may be NULL) records its trace. */
static convjit_status bounds_compute(const cj_kplan *p, const cj_built *b, emu_trace *tr, cj_bounds *o) {
  const cj_conv_plan *c = &p->u.conv;
  const cj_arch *a = p->arch;
  const bounds_rates r = rates_of(a);
  memset(o, 0, sizeof *o);
  o->wg = p->grid[0] * p->grid[1] * p->grid[2] / 2;
  emu_stats st;
  CJ_CHECK(p->op == CJ_KOP_CONV && b && b->info, CONVJIT_ERR_INVALID_ARG, "bounds: %s is not a built conv kernel",
           p->name);
  CJ_TRY(cj_bounds_emulate(p, b, &o->wg, 1, tr, &st));
  o->vmcnt0_waits = st.vmcnt0_wave_max;
  o->insts = st.total;
  o->insts_mfma = st.count[EMU_CLASS_MFMA];
  o->insts_lds = st.count[EMU_CLASS_LDS];
  o->insts_vmem = st.count[EMU_CLASS_VMEM];
  o->wave_insts_max = st.wave_max_total;
  o->barrier_cover_mfma = st.barriers ? (double)st.barrier_cover_mfma / (double)st.barriers : 0;
  o->barriers_per_step = st.waves && c->k_tiles_split ? (double)st.barriers / (double)st.waves / c->k_tiles_split : 0;
  o->loop_trips = c->sched == CJ_CONV_SCHED_PINGPONG ? (c->k_tiles_split - 2) / 2
                  : c->roll                             ? c->k_tiles_split /* one K step per trip */
                                                        : c->k_tiles_split / c->stages;
  o->waves = c->threads / 64;
  o->k_steps = c->k_tiles_split;
  double steps = o->k_steps ? o->k_steps : 1, simds = a->simds_per_cu;
  uint64_t issue = 0;
  _Static_assert(EMU_CLASS_COUNT == sizeof o->per_step / sizeof o->per_step[0], "cj_bounds.per_step");
  for (int cl = 0; cl < EMU_CLASS_COUNT; cl++)
    o->per_step[cl] = st.waves ? (double)st.count[cl] / (double)st.waves / steps : 0;
  for (int cl = 0; cl < EMU_CLASS_COUNT; cl++) {
    if (cl == EMU_CLASS_MFMA) continue;
    emu_inst in = {.cls = (uint8_t)cl};
    issue += st.count[cl] * emu_inst_cycles(&in); /* the emulator's issue weights */
  }
  o->mfma = (double)st.count[EMU_CLASS_MFMA] * mfma_cycles_of(c->mfma) / simds / steps;
  o->issue = (double)issue / simds / steps;
  o->lds = (double)st.lds.cycles / steps;
  o->lds_min = (double)st.lds.min_cycles / steps;
  o->lds_degree = st.lds.max_degree;
  o->lds_banks = st.lds.banks;
  emu_stats_free(&st);
  uint64_t nload = 0, nlines = 0, rextra = 0;
  for (size_t i = 0; tr && i < emu_trace_count(tr); i++) {
    const emu_trace_wg *g = emu_trace_get(tr, i);
    for (uint32_t w = 0; w < g->nwaves; w++)
      for (size_t r = 0; r < g->waves[w].n; r++) {
        const emu_trace_rec *e = &g->waves[w].rec[r];
        if (e->kind == EMU_TK_VMEM_LOAD || e->kind == EMU_TK_VMEM_LDS) {
          nload++;
          nlines += e->lines;
          if (e->lines > o->lines_max) o->lines_max = e->lines;
        } else if (e->kind == EMU_TK_LDS_READ) {
          rextra += e->lds_cycles - e->lds_min;
        }
      }
  }
  o->lines_per_load = nload ? (double)nlines / (double)nload : 0;
  o->read_conflict_cycles = (double)rextra / steps;
  uint32_t wgs = wgs_per_cu_of(a, b->info, o->waves);
  o->wgs_per_cu = wgs;
  o->waves_per_simd = (double)wgs * o->waves / simds;
  /* memory: the step's A and B tiles; the conv's compulsory HBM bytes */
  double flops_step = 2.0 * c->tile_m * c->tile_n * c->tile_k;
  o->vmem_bytes = (double)(c->tile_m + c->tile_n) * c->tile_k * c->elem_bytes;
  o->vmem_bytes_per_flop = o->vmem_bytes / flops_step;
  o->hbm_bytes_per_flop = cj_conv_hbm_bytes(c) / cj_conv_gemm_flops(c);
  double hbm_per_cu_clk = r.hbm_gbs * 1e9 / ((double)a->cu_count_default * a->clock_mhz * 1e6);
  o->hbm = flops_step * o->hbm_bytes_per_flop / hbm_per_cu_clk;
  const struct { const char *name; double v; } t[] = {{"mfma", o->mfma}, {"lds", o->lds}, {"issue", o->issue}, {"hbm", o->hbm}};
  int best = 0;
  for (int i = 1; i < 4; i++)
    if (t[i].v > t[best].v) best = i;
  o->bound = wgs == 0 ? "occupancy" : t[best].name;
  o->mfma_fraction = t[best].v > 0 && wgs ? o->mfma / t[best].v : 0;
  return CONVJIT_OK;
}


convjit_status cj_bounds_conv(const cj_kplan *p, const cj_built *b, cj_bounds *o) {
  return bounds_compute(p, b, NULL, o);
}

/* ---- the compute-unit simulation (perf/perf.h) --------------------------- */

#define BOUNDS_MAX_SAMPLES 8

struct cj_bounds_traces {
  emu_trace *trace;
  cj_perf_kernel_in in;      /* params set per simulation */
  const emu_trace_wg *sample[BOUNDS_MAX_SAMPLES];
};

void cj_bounds_traces_free(cj_bounds_traces *t) {
  if (!t) return;
  emu_trace_destroy(t->trace);
  free(t);
}

/* Samples: the middle workgroup (already in t->trace) and the ones after
 * it, as many as a CU holds at once (they share it in the simulation), and
 * the grid's last one (an edge tile, the tail's last workgroup). Fills
 * t->in for plan p. */
static convjit_status traces_finish(const cj_kplan *p, const cj_built *b, uint64_t mid, uint32_t slots,
                                    cj_bounds_traces *t) {
  uint64_t grid = p->grid[0] * p->grid[1] * p->grid[2], more[BOUNDS_MAX_SAMPLES];
  size_t nmore = 0;
  CJ_CHECK(slots > 0, CONVJIT_ERR_RESOURCE, "bounds: %s fits no workgroup on a CU", p->name);
  for (uint64_t i = 1; i < slots && mid + i < grid && nmore < BOUNDS_MAX_SAMPLES - 2; i++) more[nmore++] = mid + i;
  if (grid - 1 > mid + nmore) more[nmore++] = grid - 1;
  emu_stats st;
  if (nmore) {
    CJ_TRY(cj_bounds_emulate(p, b, more, nmore, t->trace, &st));
    emu_stats_free(&st);
  }
  /* the trace is sorted by linear id: the middle run first, the last workgroup apart */
  size_t n = emu_trace_count(t->trace);
  for (size_t i = 0; i < n; i++) {
    const emu_trace_wg *g = emu_trace_get(t->trace, i);
    if (g->linear == grid - 1 && grid - 1 > mid + slots - 1) t->in.tail = g;
    else if (t->in.nsample < BOUNDS_MAX_SAMPLES) t->sample[t->in.nsample++] = g;
  }
  int conv = p->op == CJ_KOP_CONV, direct = p->op == CJ_KOP_CONV_DIRECT;
  t->in.arch = p->arch;
  t->in.sample = t->sample;
  t->in.grid_wgs = grid;
  t->in.slots = slots;
  /* a pre-pass or finalize does no MFMA work and reads each input byte
   * once: all its loads are HBM traffic; the direct conv reads x rows and
   * weights again from the caches, x and w once from HBM */
  t->in.flops = conv ? cj_conv_gemm_flops(&p->u.conv) : direct ? cj_direct_flops(&p->u.dir) : 0;
  t->in.hbm_read_bytes = conv     ? (double)(p->u.conv.x_bytes + p->u.conv.w_bytes)
                         : direct ? (p->u.dir.wgrad == 1   ? (double)(p->u.dir.x_bytes + p->u.dir.y_bytes)
                                     : p->u.dir.wgrad == 2 ? (double)p->u.dir.ws_bytes
                                                           : (double)(p->u.dir.x_bytes + p->u.dir.w_bytes))
                                  : HUGE_VAL;
  t->in.fp8 = conv && p->u.conv.elem_bytes == 1; /* f16 runs at bf16's MFMA rate and takes its parameters */
  return CONVJIT_OK;
}

static convjit_status traces_new(cj_bounds_traces **out) {
  *out = calloc(1, sizeof **out);
  CJ_ALLOC_CHECK(*out);
  convjit_status s = emu_trace_create(0, &(*out)->trace);
  if (s != CONVJIT_OK) {
    free(*out);
    *out = NULL;
  }
  return s;
}

convjit_status cj_bounds_traces_record(const cj_kplan *p, const cj_built *b, cj_bounds *o, cj_bounds_traces **out) {
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "bounds: traces out = NULL");
  *out = NULL;
  cj_bounds_traces *t;
  CJ_TRY(traces_new(&t));
  convjit_status s = bounds_compute(p, b, t->trace, o);
  if (s == CONVJIT_OK) s = traces_finish(p, b, o->wg, o->wgs_per_cu, t);
  if (s != CONVJIT_OK) {
    cj_bounds_traces_free(t);
    return s;
  }
  *out = t;
  return CONVJIT_OK;
}

convjit_status cj_bounds_kernel_traces(const cj_kplan *p, const cj_built *b, cj_bounds_traces **out) {
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "bounds: traces out = NULL");
  *out = NULL;
  CJ_CHECK(p && b && b->info, CONVJIT_ERR_INVALID_ARG, "bounds: plan or built kernel = NULL");
  if (p->op == CJ_KOP_CONV) {
    cj_bounds bd;
    return cj_bounds_traces_record(p, b, &bd, out);
  }
  cj_bounds_traces *t;
  CJ_TRY(traces_new(&t));
  const uint64_t mid = p->grid[0] * p->grid[1] * p->grid[2] / 2;
  const uint32_t waves = (p->block[0] * p->block[1] * p->block[2] + p->arch->wave_size - 1) / p->arch->wave_size;
  emu_stats st;
  convjit_status s = cj_bounds_emulate(p, b, &mid, 1, t->trace, &st);
  if (s == CONVJIT_OK) {
    emu_stats_free(&st);
    s = traces_finish(p, b, mid, wgs_per_cu_of(p->arch, b->info, waves), t);
  }
  if (s != CONVJIT_OK) {
    cj_bounds_traces_free(t);
    return s;
  }
  *out = t;
  return CONVJIT_OK;
}

convjit_status cj_bounds_traces_simulate(const cj_bounds_traces *t, const cj_perf_params *params,
                                         cj_perf_kernel_out *out) {
  CJ_CHECK(t && out, CONVJIT_ERR_INVALID_ARG, "bounds: traces or out = NULL");
  cj_perf_params def;
  if (!params) {
    CJ_TRY(cj_perf_defaults(t->in.arch, t->in.fp8, &def));
    params = &def;
  }
  cj_perf_kernel_in in = t->in;
  in.params = params;
  return cj_perf_kernel(&in, out);
}

convjit_status cj_bounds_kernel_sim(const cj_kplan *p, const cj_built *b, const cj_perf_params *params,
                                    cj_perf_kernel_out *out) {
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "bounds: out = NULL");
  cj_bounds_traces *t = NULL;
  CJ_TRY(cj_bounds_kernel_traces(p, b, &t));
  convjit_status s = cj_bounds_traces_simulate(t, params, out);
  cj_bounds_traces_free(t);
  return s;
}

double cj_bounds_memset_ms(const cj_arch *a, const cj_perf_params *params, uint64_t bytes) {
  cj_perf_params def;
  if (!params && cj_perf_defaults(a, 0, &def) == CONVJIT_OK) params = &def;
  if (!params || params->hbm_gbs <= 0) return 0;
  return (double)bytes / (params->hbm_gbs * 1e9) * 1e3 + params->launch_us * 1e-3;
}

convjit_status cj_bounds_conv_sim(const cj_kplan *p, const cj_built *b, const cj_perf_params *params, cj_bounds *o) {
  cj_bounds_traces *t = NULL;
  CJ_TRY(cj_bounds_traces_record(p, b, o, &t));
  convjit_status s = cj_bounds_traces_simulate(t, params, &o->sim);
  o->simulated = s == CONVJIT_OK;
  cj_bounds_traces_free(t);
  return s;
}

convjit_status cj_bounds_direct(const cj_kplan *p, const cj_built *b, const cj_perf_params *params,
                                cj_bounds_direct_out *out) {
  CJ_CHECK(p && b && out && p->op == CJ_KOP_CONV_DIRECT, CONVJIT_ERR_INVALID_ARG,
           "bounds: cj_bounds_direct takes a conv_direct plan");
  memset(out, 0, sizeof *out);
  cj_perf_params def;
  if (!params) {
    CJ_TRY(cj_perf_defaults(p->arch, 0, &def));
    params = &def;
  }
  cj_bounds_traces *t = NULL;
  CJ_TRY(cj_bounds_kernel_traces(p, b, &t));
  convjit_status s = cj_bounds_traces_simulate(t, params, &out->sim);
  if (s == CONVJIT_OK && t->in.nsample > 0) {
    const cj_direct_plan *c = &p->u.dir;
    const emu_trace_wg *wg = t->sample[0]; /* the middle workgroup: every lane has work */
    double ld = 0, stb = 0, valu = 0;
    for (uint32_t w = 0; w < wg->nwaves; w++)
      for (size_t i = 0; i < wg->waves[w].n; i++) {
        const emu_trace_rec *r = &wg->waves[w].rec[i];
        if (r->kind == EMU_TK_VMEM_LOAD) ld += r->bytes;
        else if (r->kind == EMU_TK_VMEM_STORE) stb += r->bytes;
        else if (r->kind == EMU_TK_VALU) valu += 1;
      }
    uint64_t lo = 0, hi = 0; /* the sampled workgroup's items (lanes with work) */
    if (!c->wgrad) cj_direct_wg_items(p, wg->linear, &lo, &hi);
    const uint64_t items = hi - lo;
    /* outputs of those lanes: strip positions (the last strip of a row may be short) x their channels
     * (backward data: dx's; backward weight: no per-output count, the counts stay 0) */
    const double out_w = c->bwd ? c->g.w : c->g.ow;
    double outs = c->wgrad ? 0 : (double)items * c->strip * c->outs * (out_w / ((double)c->strips * c->strip));
    if (c->hr) /* hr output rows per lane (the last row block may be short) */
      outs *= (double)c->g.oh / ((c->g.oh + c->hr - 1) / c->hr);
    const double ny = c->wgrad ? 1 : c->bwd ? (double)c->g.n * c->g.dhw * c->g.groups : (double)c->g.npq * c->g.k_all;
    out->outputs = outs;
    out->load_bytes_per_output = outs > 0 ? ld / outs : 0;
    out->store_bytes_per_output = outs > 0 ? stb / outs : 0;
    out->valu_per_output = outs > 0 ? valu * p->arch->wave_size / outs : 0;
    out->compulsory_bytes = c->wgrad ? (double)(c->x_bytes + c->y_bytes + c->w_bytes) : cj_direct_hbm_bytes(c);
    out->compulsory_per_output = out->compulsory_bytes / ny;
    out->ms = out->sim.ms;
    out->hbm_fraction =
        out->ms > 0 && params->hbm_gbs > 0 ? out->compulsory_bytes / (out->ms * 1e-3) / (params->hbm_gbs * 1e9) : 0;
  }
  cj_bounds_traces_free(t);
  return s;
}
