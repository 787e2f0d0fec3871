/* The experimental, emulator-only part of the public API: thin forwards to
 * the emu device's extras (runtime/device_emu.h). On any other backend each
 * entry point is CONVJIT_ERR_UNSUPPORTED. Times are EMULATED. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "host/plan.h"
#include "runtime/device_emu.h"

convjit_status cj_need_emu(convjit_context *ctx, const char *fn) {
  CJ_CHECK(ctx, CONVJIT_ERR_INVALID_ARG, "ctx = NULL");
  CJ_CHECK(cj_device_emu_ctx(ctx->dev), CONVJIT_ERR_UNSUPPORTED, "%s: the context's device is %s, not the emulator",
           fn, ctx->device_name);
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_emu_alloc_procedural(convjit_context *ctx, uint64_t bytes,
                                                        convjit_emu_fill_fn fill, void *user, void **dptr) {
  cj_error_clear();
  CJ_TRY(cj_need_emu(ctx, "convjit_emu_alloc_procedural"));
  CJ_CHECK(dptr, CONVJIT_ERR_INVALID_ARG, "dptr = NULL");
  *dptr = NULL;
  CJ_CHECK(fill, CONVJIT_ERR_INVALID_ARG, "fill = NULL");
  CJ_CHECK(bytes > 0, CONVJIT_ERR_INVALID_ARG, "bytes = 0: must be > 0");
  return cj_device_emu_alloc_procedural(ctx->dev, bytes, (emu_fill_fn)fill, user, dptr);
}

CONVJIT_API convjit_status convjit_emu_alloc_sink(convjit_context *ctx, uint64_t bytes, const uint64_t *off,
                                                  const uint64_t *len, uint32_t nwindows, void **dptr) {
  cj_error_clear();
  CJ_TRY(cj_need_emu(ctx, "convjit_emu_alloc_sink"));
  CJ_CHECK(dptr, CONVJIT_ERR_INVALID_ARG, "dptr = NULL");
  *dptr = NULL;
  CJ_CHECK(bytes > 0, CONVJIT_ERR_INVALID_ARG, "bytes = 0: must be > 0");
  CJ_CHECK(nwindows == 0 || (off && len), CONVJIT_ERR_INVALID_ARG, "nwindows = %u with off or len NULL", nwindows);
  for (uint32_t i = 0; i < nwindows; i++)
    CJ_CHECK(off[i] <= bytes && len[i] <= bytes - off[i], CONVJIT_ERR_INVALID_ARG,
             "window %u = [%llu, +%llu): outside the %llu-byte sink", i, (unsigned long long)off[i],
             (unsigned long long)len[i], (unsigned long long)bytes);
  return cj_device_emu_alloc_sink(ctx->dev, bytes, off, len, nwindows, dptr);
}

CONVJIT_API convjit_status convjit_emu_set_workgroups(convjit_context *ctx, const uint64_t *ids, size_t count) {
  cj_error_clear();
  CJ_TRY(cj_need_emu(ctx, "convjit_emu_set_workgroups"));
  CJ_CHECK(count == 0 || ids, CONVJIT_ERR_INVALID_ARG, "ids = NULL with count = %zu", count);
  if (count == 0) {
    CJ_TRY(cj_device_emu_set_launch_opts(ctx->dev, NULL));
    free(ctx->emu_wg);
    ctx->emu_wg = NULL;
    ctx->emu_nwg = 0;
    return CONVJIT_OK;
  }
  CJ_CHECK(count <= SIZE_MAX / sizeof(uint64_t), CONVJIT_ERR_INVALID_ARG, "count = %zu: the id list would not fit in memory",
           count);
  uint64_t *copy = malloc(count * sizeof *copy);
  CJ_ALLOC_CHECK(copy);
  memcpy(copy, ids, count * sizeof *copy);
  emu_launch_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.wg_list = copy;
  o.wg_list_len = count;
  o.hazard = -1; /* the context's setting */
  convjit_status st = cj_device_emu_set_launch_opts(ctx->dev, &o);
  if (st != CONVJIT_OK) {
    free(copy);
    return st;
  }
  free(ctx->emu_wg); /* the device now points at the new copy */
  ctx->emu_wg = copy;
  ctx->emu_nwg = count;
  return CONVJIT_OK;
}

static void counts_of(const uint64_t *c, uint64_t total, convjit_emu_counts *o) {
  o->salu = c[EMU_CLASS_SALU];
  o->valu = c[EMU_CLASS_VALU];
  o->vmem = c[EMU_CLASS_VMEM];
  o->lds = c[EMU_CLASS_LDS];
  o->mfma = c[EMU_CLASS_MFMA];
  o->waitcnt = c[EMU_CLASS_WAITCNT];
  o->barrier = c[EMU_CLASS_BARRIER];
  o->smem = c[EMU_CLASS_SMEM];
  o->branch = c[EMU_CLASS_BRANCH];
  o->total = total;
}

static convjit_status export_stats(const emu_stats *s, const char *kernel, convjit_emu_stats *out) {
  CJ_CHECK(out->struct_size == sizeof *out, CONVJIT_ERR_VERSION, "stats.struct_size = %zu: expected %zu",
           out->struct_size, sizeof *out);
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  convjit_emu_counts all;
  counts_of(s->count, s->total, &all);
  out->salu = all.salu;
  out->valu = all.valu;
  out->vmem = all.vmem;
  out->lds = all.lds;
  out->mfma = all.mfma;
  out->waitcnt = all.waitcnt;
  out->barrier = all.barrier;
  out->smem = all.smem;
  out->branch = all.branch;
  out->total = all.total;
  counts_of(s->wave_min, s->wave_min_total, &out->wave_min);
  counts_of(s->wave_max, s->wave_max_total, &out->wave_max);
  out->workgroups = s->workgroups;
  out->waves = s->waves;
  out->emulated_ms = s->emulated_ms;
  out->host_ms = s->host_ms;
  snprintf(out->kernel, sizeof out->kernel, "%s", kernel ? kernel : "");
  out->weighted_cycles_max_wave = s->max_wave_cycles;
  out->weighted_cycles_all_waves = s->sum_wave_cycles;
  out->lds_accesses = s->lds.accesses;
  out->lds_cycles = s->lds.cycles;
  out->lds_conflict_free_cycles = s->lds.min_cycles;
  out->lds_max_degree = s->lds.max_degree;
  out->lds_banks = s->lds.banks;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_emu_last_launch_stats(convjit_context *ctx, convjit_emu_stats *out) {
  cj_error_clear();
  CJ_TRY(cj_need_emu(ctx, "convjit_emu_last_launch_stats"));
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "stats = NULL");
  const emu_stats *s = cj_device_emu_last_stats(ctx->dev);
  CJ_CHECK(s, CONVJIT_ERR_INTERNAL, "emulator device without statistics");
  return export_stats(s, cj_device_emu_last_kernel(ctx->dev), out);
}

CONVJIT_API convjit_status convjit_emu_record_launches(convjit_context *ctx, int on) {
  cj_error_clear();
  CJ_TRY(cj_need_emu(ctx, "convjit_emu_record_launches"));
  return cj_device_emu_record_launches(ctx->dev, on);
}

CONVJIT_API convjit_status convjit_emu_recorded_stats(convjit_context *ctx, convjit_emu_stats *stats, size_t max,
                                                      size_t *count) {
  cj_error_clear();
  CJ_TRY(cj_need_emu(ctx, "convjit_emu_recorded_stats"));
  CJ_CHECK(count, CONVJIT_ERR_INVALID_ARG, "count = NULL");
  CJ_CHECK(max == 0 || stats, CONVJIT_ERR_INVALID_ARG, "stats = NULL with max = %zu", max);
  size_t n = 0;
  const cj_emu_launch_record *r = cj_device_emu_launch_records(ctx->dev, &n);
  *count = n;
  for (size_t i = 0; i < n && i < max; i++) CJ_TRY(export_stats(&r[i].stats, r[i].kernel, &stats[i]));
  return CONVJIT_OK;
}
