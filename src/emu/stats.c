/* stats.c — per-launch instruction statistics and the EMULATED time model.
 *
 * Counts are exact (dynamic instructions by class). The time is a model,
 * not a measurement, and is always labelled "emulated":
 *   - each wave issues in order; an instruction costs its class's issue
 *     cycles (SALU/branch/waitcnt/barrier 1, SMEM 1, VALU 4 (wave64 on a
 *     16-lane SIMD), VMEM 4, LDS 4; MFMA its pass count, see
 *     emu_x_mfma in exec_mfma.c) — memory latency, caches, bank
 *     conflicts, stalls at s_waitcnt and barriers are NOT modelled (LDS
 *     bank conflicts are counted apart, by lds_banks.c, into emu_stats.lds);
 *   - the device runs 4 waves at once per CU (one per SIMD); a kernel takes
 *     max(slowest wave, total wave cycles / (CUs * 4)) cycles at the arch's
 *     nominal clock (cj_arch clock_mhz, cu_count_default, simds_per_cu:
 *     gfx942 2.1 GHz, 304 CUs; gfx950 2.4 GHz, 256 CUs).
 * It is good for comparing instruction counts between kernel variants, not
 * for predicting hardware time.
 */
#include <stdio.h>
#include <stdlib.h>
#include "emu/emu_internal.h"

static const uint32_t k_class_cycles[EMU_CLASS_COUNT] = {
    [EMU_CLASS_SALU] = 1, [EMU_CLASS_BRANCH] = 1, [EMU_CLASS_SMEM] = 1,   [EMU_CLASS_VALU] = 4,
    [EMU_CLASS_VMEM] = 4, [EMU_CLASS_LDS] = 4,    [EMU_CLASS_MFMA] = 0, /* added per instruction */
    [EMU_CLASS_WAITCNT] = 1, [EMU_CLASS_BARRIER] = 1};

static const char *const k_class_names[EMU_CLASS_COUNT] = {"salu", "branch", "smem", "valu", "vmem",
                                                           "lds",  "mfma",   "waitcnt", "barrier"};

const char *emu_class_name(emu_class c) {
  return (unsigned)c < EMU_CLASS_COUNT ? k_class_names[c] : "invalid";
}

uint32_t emu_inst_cycles(const emu_inst *in) {
  return in && in->cls < EMU_CLASS_COUNT ? k_class_cycles[in->cls] : 0;
}

/* Folds one wave's (or one partial launch's) per-wave extremes into s;
 * `first` when s has no wave yet (its zeros are not minima). */
static void fold_extremes(emu_stats *s, int first, const uint64_t *mn, const uint64_t *mx, uint64_t mn_total,
                          uint64_t mx_total) {
  for (int c = 0; c < EMU_CLASS_COUNT; c++) {
    if (first || mn[c] < s->wave_min[c]) s->wave_min[c] = mn[c];
    if (first || mx[c] > s->wave_max[c]) s->wave_max[c] = mx[c];
  }
  if (first || mn_total < s->wave_min_total) s->wave_min_total = mn_total;
  if (first || mx_total > s->wave_max_total) s->wave_max_total = mx_total;
}

void emu_stats_add_wave(emu_stats *s, const emu_wave *w) {
  uint64_t cyc = w->cycles; /* MFMA cycles accumulated at execution */
  uint64_t tot = 0;
  for (int c = 0; c < EMU_CLASS_COUNT; c++) {
    s->count[c] += w->count[c];
    s->total += w->count[c];
    tot += w->count[c];
    cyc += w->count[c] * k_class_cycles[c];
  }
  fold_extremes(s, s->waves == 0, w->count, w->count, tot, tot);
  s->waves++;
  s->mfma_macs += w->mfma_macs;
  s->sum_wave_cycles += cyc;
  if (cyc > s->max_wave_cycles) s->max_wave_cycles = cyc;
  ((emu_wave *)w)->cycles = cyc; /* per-wave record reads the full figure */
  emu_lds_stats_add(&s->lds, &w->lds);
  if (w->lds.cycles > s->lds_wave_max_cycles) s->lds_wave_max_cycles = w->lds.cycles;
  s->vmcnt0_waits += w->vmcnt0;
  s->barriers += w->barriers;
  s->barrier_cover_mfma += w->cover_mfma;
  if (w->vmcnt0 > s->vmcnt0_wave_max) s->vmcnt0_wave_max = w->vmcnt0;
}

void emu_lds_stats_add(emu_lds_stats *acc, const emu_lds_stats *x) {
  acc->accesses += x->accesses;
  acc->cycles += x->cycles;
  acc->min_cycles += x->min_cycles;
  acc->excess += x->excess;
  if (x->max_degree > acc->max_degree) acc->max_degree = x->max_degree;
  if (x->banks) acc->banks = x->banks;
}

int emu_stats_lds_line(const emu_stats *s, char *buf, size_t n) {
  if (!buf || n == 0) return 0;
  if (!s) return snprintf(buf, n, "LDS MODELLED: no statistics");
  const emu_lds_stats *l = &s->lds;
  double ratio = l->min_cycles ? (double)l->cycles / (double)l->min_cycles : 1.0;
  return snprintf(buf, n,
                  "LDS MODELLED (%u banks x 4 B): %llu accesses, %llu cycles, conflict-free %llu, "
                  "conflicts +%llu (%.2fx), worst %u-way, busiest wave %llu cycles",
                  l->banks, (unsigned long long)l->accesses, (unsigned long long)l->cycles,
                  (unsigned long long)l->min_cycles, (unsigned long long)l->excess, ratio, l->max_degree,
                  (unsigned long long)s->lds_wave_max_cycles);
}

void emu_stats_merge_extremes(emu_stats *acc, const emu_stats *part) {
  if (part->waves == 0) return;
  fold_extremes(acc, acc->waves == 0, part->wave_min, part->wave_max, part->wave_min_total, part->wave_max_total);
}

/* 2100 MHz / 1000.0 is exactly the double 2.1 (division rounds correctly). */
static double clock_ghz(const emu_ctx *c) { return c->arch->clock_mhz / 1000.0; }

double emu_stats_finish_ms(const emu_ctx *c, uint64_t sum_wave_cycles, uint64_t max_wave_cycles) {
  double waves_at_once = (double)c->arch->cu_count_default * c->arch->simds_per_cu;
  double spread = (double)sum_wave_cycles / waves_at_once;
  double cyc = spread > (double)max_wave_cycles ? spread : (double)max_wave_cycles;
  return cyc / (clock_ghz(c) * 1e6);
}

double emu_cycles_to_ms(const emu_ctx *c, uint64_t cycles) {
  return c ? (double)cycles / (clock_ghz(c) * 1e6) : 0.0;
}

void emu_stats_free(emu_stats *s) {
  if (!s) return;
  free(s->per_wave);
  s->per_wave = NULL;
  s->nper_wave = 0;
}
