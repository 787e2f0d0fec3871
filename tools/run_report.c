/* convjit-run's report (run.h): the summary a job prints, its JSON object,
 * and the EMULATED instruction counts of --stats. Times are printed only
 * when a HIP device measured them; the emulator's are counts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "run.h"
#include "tool_data.h"

static const char *src_name(convjit_cache_source s) {
  return s == CONVJIT_CACHE_DISK ? "disk" : s == CONVJIT_CACHE_MEMORY ? "memory" : "compiled";
}

/* ---- --stats: EMULATED dynamic instruction counts per launched kernel ---------- */

convjit_status run_stats_begin(convjit_context *ctx, const run_args *a) {
  return a->emulated ? convjit_emu_record_launches(ctx, 1) : CONVJIT_OK;
}

convjit_status run_stats_end(convjit_context *ctx, const run_args *a, run_result *r) {
  if (!a->emulated) return CONVJIT_OK;
  size_t n = 0, max = sizeof r->st / sizeof r->st[0];
  for (size_t i = 0; i < max; i++) r->st[i].struct_size = sizeof r->st[i];
  convjit_status st = convjit_emu_recorded_stats(ctx, r->st, max, &n);
  convjit_status st2 = convjit_emu_record_launches(ctx, 0);
  r->nst = n < max ? n : max;
  return st != CONVJIT_OK ? st : st2;
}

/* The reported classes; "other" = SMEM + branch (s_load, s_branch, s_cbranch, s_endpgm). */
enum { NCLS = 8 };
static const char *const k_cls[NCLS] = {"salu", "valu", "vmem", "lds", "mfma", "waitcnt", "barrier", "other"};
static void cls_of(const convjit_emu_counts *c, uint64_t v[NCLS]) {
  uint64_t x[NCLS] = {c->salu, c->valu, c->vmem, c->lds, c->mfma, c->waitcnt, c->barrier, c->smem + c->branch};
  memcpy(v, x, sizeof x);
}
static void cls_sum(const convjit_emu_stats *e, uint64_t v[NCLS]) {
  convjit_emu_counts c = {e->salu, e->valu, e->vmem, e->lds, e->mfma, e->waitcnt, e->barrier, e->smem, e->branch,
                          e->total};
  cls_of(&c, v);
}

static void print_stats(const convjit_emu_stats *e) {
  uint64_t sum[NCLS], mn[NCLS], mx[NCLS];
  cls_sum(e, sum);
  cls_of(&e->wave_min, mn);
  cls_of(&e->wave_max, mx);
  double w = e->waves ? (double)e->waves : 1.0;
  printf("emulated instruction counts, kernel %s: %llu workgroups, %llu waves (other = SMEM + branch)\n", e->kernel,
         (unsigned long long)e->workgroups, (unsigned long long)e->waves);
  printf("  %-8s %12s %12s %10s %10s\n", "class", "all waves", "per wave", "min", "max");
  for (int i = 0; i < NCLS; i++)
    printf("  %-8s %12llu %12.1f %10llu %10llu\n", k_cls[i], (unsigned long long)sum[i], (double)sum[i] / w,
           (unsigned long long)mn[i], (unsigned long long)mx[i]);
  printf("  %-8s %12llu %12.1f %10llu %10llu\n", "total", (unsigned long long)e->total, (double)e->total / w,
         (unsigned long long)e->wave_min.total, (unsigned long long)e->wave_max.total);
  printf("  weighted issue cycles: %llu slowest wave, %llu all waves (a count, not a time)\n",
         (unsigned long long)e->weighted_cycles_max_wave, (unsigned long long)e->weighted_cycles_all_waves);
  if (!e->lds_accesses) printf("  LDS (bank model): no LDS accesses\n");
  else
    printf("  LDS (bank model): %llu accesses, %llu cycles, conflict-free %llu, worst %u-way, %u banks\n",
           (unsigned long long)e->lds_accesses, (unsigned long long)e->lds_cycles,
           (unsigned long long)e->lds_conflict_free_cycles, e->lds_max_degree, e->lds_banks);
}

/* Sums over the recorded launches (pack and fwd) for the summary line. */
static void counts_total(const run_result *r, uint64_t *wmax, uint64_t *lds, uint64_t *lds_free, uint32_t *deg) {
  *wmax = *lds = *lds_free = 0;
  *deg = 0;
  for (size_t i = 0; i < r->nst; i++) {
    *wmax += r->st[i].weighted_cycles_max_wave;
    *lds += r->st[i].lds_cycles;
    *lds_free += r->st[i].lds_conflict_free_cycles;
    if (r->st[i].lds_max_degree > *deg) *deg = r->st[i].lds_max_degree;
  }
}

static void json_counts(cj_strbuf *sb, const char *key, const uint64_t v[NCLS], uint64_t total, double div) {
  cj_sb_printf(sb, "\"%s\":{", key);
  for (int i = 0; i < NCLS; i++) cj_sb_printf(sb, "\"%s\":%.10g,", k_cls[i], (double)v[i] / div);
  cj_sb_printf(sb, "\"total\":%.10g}", (double)total / div);
}

static void json_stats(cj_strbuf *sb, const convjit_emu_stats *e) {
  uint64_t sum[NCLS], mn[NCLS], mx[NCLS];
  cls_sum(e, sum);
  cls_of(&e->wave_min, mn);
  cls_of(&e->wave_max, mx);
  cj_sb_printf(sb, ",\"stats\":{\"kind\":\"emulated\",\"workgroups\":%llu,\"waves\":%llu,",
               (unsigned long long)e->workgroups, (unsigned long long)e->waves);
  json_counts(sb, "all_waves", sum, e->total, 1.0);
  cj_sb_printf(sb, ",");
  json_counts(sb, "per_wave_avg", sum, e->total, e->waves ? (double)e->waves : 1.0);
  cj_sb_printf(sb, ",");
  json_counts(sb, "per_wave_min", mn, e->wave_min.total, 1.0);
  cj_sb_printf(sb, ",");
  json_counts(sb, "per_wave_max", mx, e->wave_max.total, 1.0);
  cj_sb_printf(sb,
               ",\"weighted_cycles_max_wave\":%llu,\"weighted_cycles_all_waves\":%llu,\"lds_accesses\":%llu,"
               "\"lds_cycles\":%llu,\"lds_conflict_free_cycles\":%llu,\"lds_max_degree\":%u,\"lds_banks\":%u}",
               (unsigned long long)e->weighted_cycles_max_wave, (unsigned long long)e->weighted_cycles_all_waves,
               (unsigned long long)e->lds_accesses, (unsigned long long)e->lds_cycles,
               (unsigned long long)e->lds_conflict_free_cycles, e->lds_max_degree, e->lds_banks);
}

static const convjit_emu_stats *stats_for(const run_result *r, const char *kernel) {
  for (size_t i = 0; i < r->nst; i++)
    if (!strcmp(r->st[i].kernel, kernel)) return &r->st[i];
  return NULL;
}

void run_collect_kernels(const convjit_plan *plan, run_result *r) {
  convjit_plan_kernel_count(plan, &r->nkernels);
  for (int i = 0; i < r->nkernels; i++) {
    convjit_kernel_info ki = {.struct_size = sizeof ki};
    if (convjit_plan_kernel_info(plan, i, &ki) != CONVJIT_OK) continue;
    r->compile_ms += ki.compile_ms;
    r->cache_hits += ki.source != CONVJIT_CACHE_COMPILED;
  }
}

static const char *fp8_format(convjit_dtype t) {
  return t == CONVJIT_DTYPE_FP8_E4M3FN     ? "E4M3FN (OCP E4M3, PyTorch float8_e4m3fn)"
         : t == CONVJIT_DTYPE_FP8_E4M3FNUZ ? "E4M3FNUZ (PyTorch float8_e4m3fnuz)"
                                           : NULL;
}

static void print_problem(const run_args *a, const convjit_plan *plan) {
  if (!strcmp(a->op, "transpose")) {
    printf("op       transpose NCDHW -> NDHWC (the conv's activation layout)\n");
    printf("shape    N,C,S %lld,%lld,%lld (S = D*H*W)\n", (long long)a->shape[0], (long long)a->shape[1],
           (long long)a->shape[2]);
    convjit_conv_desc dt = convjit_conv_desc_default(); /* run_transpose's dtype (fp8: E4M3FN bytes) */
    (void)cli_conv_dtypes(a->dtype, NULL, NULL, &dt);
    const char *t = cj_dtype_name(dt.x_dtype);
    printf("dtypes   x %s, y %s\n", t, t);
    return;
  }
  const cj_conv_problem *p = cj_plan_problem(plan);
  int act = cj_epi_activation(&p->epi);
  if (tool_kind_output(p->kind) == CJ_TENSOR_DW) /* a weight gradient */
    printf("op       conv backward weight: dw%s from x and dy (the GEMM over the padded grid)%s\n",
           cj_epi_has(&p->epi, CJ_EPI_BIAS) ? " and db" : "",
           p->nondeterministic ? ", fp32 atomics across blocks (nondeterministic)" : ", deterministic");
  else { /* the epilogue's ops in their order: the flag ops' texts (the library's table), the activation */
    char epi[256] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < p->epi.nops && used < sizeof epi; i++) {
      const int op = p->epi.ops[i].op;
      const cj_epi_flag *fl = cj_epi_flag_of(op);
      int m = op == CJ_EPI_ACTIVATION ? snprintf(epi + used, sizeof epi - used, ", then %s",
                                                 act == 3 ? "gelu (tanh)" : cj_epi_act_name(act))
              : fl                    ? snprintf(epi + used, sizeof epi - used, "%s", fl->report)
                                      : 0;
      if (m > 0) used += (size_t)m;
    }
    printf("op       conv forward (implicit GEMM)%s\n", epi);
  }
  printf("shape    N,C,D,H,W %lld,%lld,%lld,%lld,%lld -> K %lld (y %lld,%lld,%lld,%lld,%lld), filter %lldx%lldx%lld, "
         "stride %lld,%lld,%lld, pad %lld/%lld,%lld/%lld,%lld/%lld (before/after, D,H,W)",
         (long long)p->n, (long long)p->c, (long long)p->d, (long long)p->h, (long long)p->w, (long long)p->k,
         (long long)p->n, (long long)p->k, (long long)p->od, (long long)p->oh, (long long)p->ow, (long long)p->t,
         (long long)p->r, (long long)p->s, (long long)p->stride[0], (long long)p->stride[1],
         (long long)p->stride[2], (long long)p->pad_lo[0], (long long)p->pad_hi[0], (long long)p->pad_lo[1],
         (long long)p->pad_hi[1], (long long)p->pad_lo[2], (long long)p->pad_hi[2]);
  if (p->dil[0] != 1 || p->dil[1] != 1 || p->dil[2] != 1)
    printf(", dilation %lld,%lld,%lld", (long long)p->dil[0], (long long)p->dil[1], (long long)p->dil[2]);
  printf("\n");
  if (p->groups > 1 || p->x_layout != CONVJIT_LAYOUT_NCDHW || p->y_layout != CONVJIT_LAYOUT_NCDHW)
    printf("layout   x %s, y %s, groups %lld\n", p->x_layout == CONVJIT_LAYOUT_NDHWC ? "NDHWC" : "NCDHW",
           p->y_layout == CONVJIT_LAYOUT_NDHWC ? "NDHWC" : "NCDHW", (long long)p->groups);
  const char *f8 = fp8_format(p->x_dtype);
  printf("dtypes   x %s, w %s, y %s", cj_dtype_name(p->x_dtype), cj_dtype_name(p->w_dtype), cj_dtype_name(p->y_dtype));
  if (f8) {
    int native = p->x_dtype == cli_fp8_dtype(cj_plan_arch(plan));
    printf("; fp8 format %s, %s", f8, native ? "the arch's native one" : "mapped exactly to the arch's by the pre-pass");
    if (p->x_scale != 1.0f || p->w_scale != 1.0f) printf("; scales x %g, w %g", (double)p->x_scale, (double)p->w_scale);
  }
  printf("\n");
}

/* The check's verdict: max error, and the tolerance it was compared to. */
static void print_check(const run_result *r) {
  if (!r->checked) return;
  const char *v = r->pass ? "PASS" : "FAIL";
  if (!r->bound) {
    printf("check    %s: %zu outputs vs the CPU reference, bit-exact required (a transpose moves bytes), "
           "max |err| %.3g\n", v, r->nout, r->max_abs);
  } else {
    printf("check    %s: %zu outputs vs the CPU reference, max |err| %.3g (tolerance there %.3g; the worst "
           "output reached %.0f%% of its own)\n", v, r->nout, r->max_abs, r->tol_at_max, 100.0 * r->worst_ratio);
    printf("         tolerance = %.3g |ref| + %.3g sum|x*w| + %.3g per output: the reference's error bound "
           "(%s, src/ref/ref_conv.h)\n", r->tol.rel, r->tol.mag, r->tol.abs, r->bound);
  }
  if (r->note[0]) printf("         %s\n", r->note);
  if (r->digest[0]) printf("digest   %s (FNV-1a 64 of the output bytes: compare runs)\n", r->digest);
}

/* The job at a glance (the default output); --verbose adds each kernel's
 * launch geometry, the plan-creation time and, last, every plan field. */
void run_print_summary(const run_args *a, const convjit_context_info *ci, const convjit_plan *plan,
                       const run_result *r) {
  print_problem(a, plan);
  printf("arch     %s\n", ci->arch);
  if (ci->emulated)
    printf("device   emulator (convjit's CPU emulator of the wave64 ISA, %d CUs modelled; no GPU)\n", ci->cu_count);
  else
    printf("device   HIP device %s%s%d CUs\n", ci->device_model, ci->device_model[0] ? ", " : "", ci->cu_count);
  printf("kernels  %-5s %5s %5s %5s %8s %7s %11s  %-8s  %s\n", "stage", "VGPR", "AGPR", "SGPR", "LDS B", "spills",
         "compile ms", "cache", "name");
  for (int i = 0; i < r->nkernels; i++) {
    convjit_kernel_info ki = {.struct_size = sizeof ki};
    if (convjit_plan_kernel_info(plan, i, &ki) != CONVJIT_OK) continue;
    char sp[24];
    snprintf(sp, sizeof sp, "%u/%u", ki.vgpr_spills, ki.sgpr_spills);
    printf("         %-5s %5u %5u %5u %8u %7s %11.1f  %-8s  %s\n", ki.stage, ki.vgpr, ki.agpr, ki.sgpr, ki.lds_bytes, sp,
           ki.compile_ms, src_name(ki.source), ki.name);
    if (a->verbose)
      printf("         %5s grid %llux%llux%llu, block %ux%ux%u, scratch %u B\n", "", (unsigned long long)ki.grid[0],
             (unsigned long long)ki.grid[1], (unsigned long long)ki.grid[2], ki.block[0], ki.block[1], ki.block[2],
             ki.scratch_bytes);
  }
  printf("compile  %.1f ms for %d kernel%s (codegen + LLVM + link), cache hits %d of %d\n", r->compile_ms,
         r->nkernels, r->nkernels == 1 ? "" : "s", r->cache_hits, r->nkernels);
  if (a->verbose) printf("plan     created in %.1f ms (compile included)\n", r->plan_ms);
  if (ci->emulated) {
    uint64_t wmax, lds, lds_free;
    uint32_t deg;
    counts_total(r, &wmax, &lds, &lds_free, &deg);
    printf("counts   EMULATED, not a time: %llu weighted issue cycles (slowest wave, summed over the %zu launches);"
           " LDS %llu cycles (conflict-free %llu, worst %u-way); convjit-dump --emit bounds models time\n",
           (unsigned long long)wmax, r->nst, (unsigned long long)lds, (unsigned long long)lds_free, deg);
  } else if (a->verbose) {
    printf("time     %.4f ms, HIP events around the launches\n", r->kernel_ms);
  }
  for (size_t i = 0; a->stats && i < r->nst; i++) print_stats(&r->st[i]);
  print_check(r);
  if (a->verbose) {
    size_t need = 0;
    convjit_plan_describe(plan, NULL, 0, &need);
    char *d = malloc(need ? need : 1);
    if (d && convjit_plan_describe(plan, d, need, NULL) == CONVJIT_OK) printf("plan:\n%s", d);
    free(d);
  }
}

void run_json_job(const run_args *a, const convjit_context_info *ci, const convjit_plan *plan, const run_result *r,
                  cj_strbuf *obj, cj_strbuf *kern) {
  char model[sizeof ci->device_model]; /* the runtime's text: nothing that needs a JSON escape */
  for (size_t i = 0; i < sizeof model; i++) {
    char c = ci->device_model[i];
    model[i] = c == '"' || c == '\\' || (c > 0 && c < 32) ? '_' : c;
  }
  cj_sb_printf(obj, "{\"op\":\"%s\",\"device\":\"%s\",\"device_model\":\"%s\",\"arch\":\"%s\",\"dtype\":\"%s\",\"shape\":[",
               a->op, ci->device, model, ci->arch, a->dtype);
  for (int i = 0; i < a->nshape; i++) cj_sb_printf(obj, "%s%lld", i ? "," : "", (long long)a->shape[i]);
  cj_sb_printf(obj, "],\"checked\":%s,\"pass\":%s,\"max_abs_err\":%.6g,\"max_rel_err\":%.6g,",
               r->checked ? "true" : "false", r->checked ? (r->pass ? "true" : "false") : "null", r->max_abs,
               r->max_rel);
  cj_sb_printf(obj, "\"compile_ms\":%.3f,\"plan_ms\":%.3f,\"cache_hits\":%d,", r->compile_ms, r->plan_ms,
               r->cache_hits);
  if (ci->emulated) { /* counts, never a time */
    uint64_t wmax, lds, lds_free;
    uint32_t deg;
    counts_total(r, &wmax, &lds, &lds_free, &deg);
    cj_sb_printf(obj,
                 "\"time_ms\":null,\"time_kind\":\"none\",\"weighted_cycles\":%llu,\"lds_cycles\":%llu,"
                 "\"lds_conflict_free_cycles\":%llu,\"lds_max_degree\":%u,",
                 (unsigned long long)wmax, (unsigned long long)lds, (unsigned long long)lds_free, deg);
  } else {
    cj_sb_printf(obj, "\"time_ms\":%.6f,\"time_kind\":\"device\",", r->kernel_ms);
  }
  size_t k0 = kern->len;
  for (int i = 0; i < r->nkernels; i++) {
    convjit_kernel_info ki = {.struct_size = sizeof ki};
    if (convjit_plan_kernel_info(plan, i, &ki) != CONVJIT_OK) continue;
    cj_sb_printf(kern,
                 "%s{\"name\":\"%s\",\"stage\":\"%s\",\"vgpr\":%u,\"agpr\":%u,\"sgpr\":%u,\"lds_bytes\":%u,"
                 "\"scratch_bytes\":%u,\"vgpr_spills\":%u,\"sgpr_spills\":%u,\"cache\":\"%s\",\"compile_ms\":%.3f}",
                 kern->len ? "," : "", ki.name, ki.stage, ki.vgpr, ki.agpr, ki.sgpr, ki.lds_bytes, ki.scratch_bytes,
                 ki.vgpr_spills, ki.sgpr_spills, src_name(ki.source), ki.compile_ms);
    const convjit_emu_stats *es = a->stats ? stats_for(r, ki.name) : NULL;
    if (es) {
      kern->len--; /* reopen the object */
      json_stats(kern, es);
      cj_sb_printf(kern, "}");
    }
  }
  const char *mine = kern->s ? kern->s + k0 : "";
  if (*mine == ',') mine++;
  cj_sb_printf(obj, "\"kernels\":[%s],\"workspace_bytes\":%zu", mine, r->workspace_bytes);
  const cj_conv_problem *p = cj_plan_problem(plan);
  if (!strcmp(a->op, "conv") && p) cj_sb_printf(obj, ",\"kind\":\"%s\"", cj_conv_kind_of(p->kind)->tool);
  if (r->digest[0]) cj_sb_printf(obj, ",\"digest\":\"%s\"", r->digest);
  if (r->det_checked) cj_sb_printf(obj, ",\"bit_identical_runs\":%s", r->det_same ? "true" : "false");
  if (!strcmp(a->op, "conv") && p)
    cj_sb_printf(obj, ",\"x_dtype\":\"%s\",\"w_dtype\":\"%s\",\"y_dtype\":\"%s\",\"groups\":%lld,\"layout\":\"%s,%s\"",
                 cj_dtype_name(p->x_dtype), cj_dtype_name(p->w_dtype), cj_dtype_name(p->y_dtype), (long long)p->groups,
                 p->x_layout == CONVJIT_LAYOUT_NDHWC ? "ndhwc" : "ncdhw", p->y_layout == CONVJIT_LAYOUT_NDHWC ? "ndhwc" : "ncdhw");
  if (r->checked && r->bound)
    cj_sb_printf(obj,
                 ",\"outputs\":%zu,\"tol_at_max_err\":%.6g,\"worst_ratio\":%.6g,"
                 "\"tolerance\":{\"bound\":\"%s\",\"rel\":%.6g,\"mag\":%.6g,\"abs\":%.6g}",
                 r->nout, r->tol_at_max, r->worst_ratio, r->bound, r->tol.rel, r->tol.mag, r->tol.abs);
  if (r->note[0]) cj_sb_printf(obj, ",\"note\":\"%s\"", r->note);
  cj_sb_printf(obj, "}");
}
