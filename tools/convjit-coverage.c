/* convjit-coverage: does the emulator know every instruction convjit can
 * generate? A seeded, reproducible sample of plans is built and every
 * instruction of every kernel is checked against the emulator.
 *
 *   sample i (its own RNG stream: seed, i) --> an op and its fields
 *     conv:        a random problem + forced knobs --cj_select_conv--> the
 *                  launch sequence's kernels (transpose or pad-transpose,
 *                  weight pack, conv, split-K finalize), as convjit-dump
 *                  --op conv builds them
 *     transpose, weight_pack: a kernel spec (kspec.h), every layout dtype
 *   --> for each arch: cj_build_kernel (each distinct kernel once)
 *   --> mnemonics (cj_mnem_hist_kernel: the set `convjit-dump --emit
 *       mnemonics` prints) looked up in src/emu/isa_table.h, and every
 *       instruction through the emulator's decoder (emu_decode_why: an
 *       operand or modifier it cannot parse stops a run just as well)
 *
 * A larger --samples with the same --seed is a superset of a smaller one.
 * Plans the selection or the plan init refuses (an illegal forced knob) are
 * counted, not failures. Exit: 0 every instruction is emulated; 1 some are
 * not (each named with the first plan it came from, as a convjit-dump
 * command or a kernel spec) or a legal plan failed to build; 2 bad
 * arguments. The CI sample and the full sweep are in docs/emulator.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "codegen/kplan_knobs.h"
#include "codegen/kspec.h"
#include "emu/emu.h"
#include "host/select.h"
#include "pipeline/build.h"
#include "pipeline/disasm.h"

/* ---- the sweep's axes ------------------------------------------------------ */

/* Conv dtypes (text, descriptor dtype; fp8: the arch's native format, as
 * convjit-dump --dtype fp8 builds it). */
static const struct { const char *name; convjit_dtype dt; } CONV_DTYPES[] = {{"bf16", CONVJIT_DTYPE_BF16},
                                                                            {"fp8", CONVJIT_DTYPE_FP8_E4M3FN},
                                                                            {"f16", CONVJIT_DTYPE_F16}};
/* Layout kernels' dtypes (kspec.h): bf16-fp8 is the converting transpose. */
static const char *const TRANSPOSE_DTYPES[] = {"bf16", "fp8", "bf16-fp8"};
static const char *const WPACK_DTYPES[] = {"bf16", "fp8"};
/* Channel counts worth hitting on purpose (chunk and tile edges, odd). */
static const uint32_t EDGE_C[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 63, 64, 65,
                                  127, 128, 129, 192, 255, 256, 257, 384, 511, 512, 513, 520};
static const uint32_t TILES[] = {16, 32, 64, 128, 256};
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define COV_MAX_KERNELS 8

/* ---- a reproducible stream per sample (splitmix64) ------------------------- */

typedef struct rng { uint64_t s; } rng;
static uint64_t rng_next(rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint32_t rng_in(rng *r, uint32_t lo, uint32_t hi) { /* [lo, hi] */
  return lo + (uint32_t)(rng_next(r) % ((uint64_t)hi - lo + 1));
}
static int rng_pct(rng *r, unsigned pct) { return rng_in(r, 0, 99) < pct; }

/* C or K in 1..520: uniform, small, around multiples of 8, or an edge. */
static uint32_t draw_channels(rng *r) {
  switch (rng_in(r, 0, 4)) {
  case 0: case 1: return rng_in(r, 1, 520);
  case 2: return rng_in(r, 1, 16);
  case 3: { uint32_t m = 8 * rng_in(r, 1, 64); return m + rng_in(r, 0, 2) - 1; } /* 7..513 */
  default: return EDGE_C[rng_in(r, 0, NELEM(EDGE_C) - 1)];
  }
}

/* ---- one sample: plans + how to reproduce them ------------------------------ */

typedef struct sample {
  cj_kplan plans[COV_MAX_KERNELS];
  int n;
  char repro[512]; /* a convjit-dump command or a kernel spec */
} sample;

/* The convjit-dump command that builds the same kernels (--emit mnemonics). */
static void conv_repro(char *repro, size_t cap, const cj_arch *arch, const char *dtype, const cj_conv_problem *pp,
                       const cj_conv_opts *o, int bias, int residual, int y32) {
  const cj_conv_problem p = *pp;
  /* the same build as: convjit-dump ... --emit mnemonics */
  int len = snprintf(repro, cap,
                     "convjit-dump --arch %s --op conv --dtype %s --shape %lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld "
                     "--stride %lld,%lld,%lld --dilation %lld,%lld,%lld --pad %lld,%lld,%lld,%lld,%lld,%lld",
                     arch->name, dtype, (long long)p.n, (long long)p.c, (long long)p.d,
                     (long long)p.h, (long long)p.w, (long long)p.k, (long long)p.t, (long long)p.r,
                     (long long)p.s, (long long)p.stride[0], (long long)p.stride[1], (long long)p.stride[2],
                     (long long)p.dil[0], (long long)p.dil[1], (long long)p.dil[2], (long long)p.pad_lo[0],
                     (long long)p.pad_lo[1], (long long)p.pad_lo[2], (long long)p.pad_hi[0], (long long)p.pad_hi[1],
                     (long long)p.pad_hi[2]);
  uint32_t nk;
  const cj_knob *kn = cj_conv_knobs(&nk);
  for (uint32_t i = 0; i < nk && len > 0 && (size_t)len < cap; i++) {
    uint32_t a = cj_conv_knob_get(o, &kn[i], 0), b = cj_conv_knob_get(o, &kn[i], 1);
    if (!a) continue;
    if (kn[i].kind == CJ_KNOB_FLAG) len += snprintf(repro + len, cap - (size_t)len, " --%s", kn[i].name);
    else if (kn[i].kind == CJ_KNOB_PAIR)
      len += snprintf(repro + len, cap - (size_t)len, " --%s %ux%u", kn[i].name, a, b);
    else len += snprintf(repro + len, cap - (size_t)len, " --%s %u", kn[i].name, a);
  }
  if (bias && len > 0 && (size_t)len < cap)
    len += snprintf(repro + len, cap - (size_t)len, " --bias");
  if (residual && len > 0 && (size_t)len < cap)
    len += snprintf(repro + len, cap - (size_t)len, " --residual");
  if (y32 && len > 0 && (size_t)len < cap)
    len += snprintf(repro + len, cap - (size_t)len, " --y-dtype f32");

}

/* A conv problem with its forced knobs, drawn for arch (the DMA width
 * depends on it), selected as convjit-dump --op conv does. */
static convjit_status conv_sample(rng *r, const cj_arch *arch, sample *out) {
  cj_conv_problem p;
  memset(&p, 0, sizeof p);
  const uint32_t dt = rng_in(r, 0, NELEM(CONV_DTYPES) - 1);
  p.n = rng_pct(r, 70) ? 1 : rng_in(r, 2, 4);
  p.c = draw_channels(r);
  p.k = draw_channels(r);
  uint32_t f[3], rank = rng_in(r, 1, 3); /* spatial rank: 1D and 2D are the degenerate 3D */
  switch (rng_in(r, 0, 5)) {
  case 0: f[0] = f[1] = f[2] = 1; break;                    /* 1x1x1: channel GEMM */
  case 1: f[0] = rng_in(r, 1, 7); f[1] = f[2] = 1; break;   /* (T,1,1): temporal fast path */
  default: for (int i = 0; i < 3; i++) f[i] = rng_in(r, 1, 7);
  }
  if (rank < 3) f[0] = 1;
  if (rank < 2) f[1] = 1;
  int64_t *in[3] = {&p.d, &p.h, &p.w};
  int64_t *flt[3] = {&p.t, &p.r, &p.s};
  const int padmode = (int)rng_in(r, 0, 4); /* 0,1 none; 2 symmetric; 3 asymmetric; 4 causal time */
  const int plain = rng_pct(r, 30);         /* stride 1, dilation 1 everywhere */
  for (int i = 0; i < 3; i++) {
    int live = i >= 3 - (int)rank;
    uint32_t st = !live || plain ? 1 : rng_pct(r, 60) ? 1 : rng_in(r, 2, 4);
    uint32_t dl = !live || plain || f[i] == 1 ? 1 : rng_pct(r, 60) ? 1 : rng_in(r, 2, 3);
    uint32_t span = dl * (f[i] - 1), lo = 0, hi = 0;
    if (live && padmode == 2) lo = hi = rng_in(r, 0, span);
    if (live && padmode == 3) { lo = rng_in(r, 0, span + 1); hi = rng_in(r, 0, span + 1); }
    if (live && padmode == 4) {
      if (i == 3 - (int)rank) lo = span;          /* causal: all padding before, in the first live dim */
      else lo = hi = span / 2;
    }
    uint32_t o = !live ? 1 : rng_pct(r, 80) ? rng_in(r, 1, 12) : rng_in(r, 13, 70); /* output extent */
    int64_t need = (int64_t)(o - 1) * st + span + 1 - lo - hi;
    *in[i] = need < 1 ? 1 : need;
    *flt[i] = f[i];
    p.stride[i] = st;
    p.dil[i] = dl;
    p.pad_lo[i] = lo;
    p.pad_hi[i] = hi;
  }
  /* forced knobs: each drawn or left to the heuristic */
  cj_conv_opts o;
  memset(&o, 0, sizeof o);
  if (rng_pct(r, 40)) {
    o.tile_m = TILES[rng_in(r, 0, NELEM(TILES) - 1)];
    o.tile_n = TILES[rng_in(r, 0, NELEM(TILES) - 1)];
    do {
      o.wave_m = 1u << rng_in(r, 0, 2);
      o.wave_n = 1u << rng_in(r, 0, 2);
    } while (o.tile_m % (16 * o.wave_m) || o.tile_n % (16 * o.wave_n));
  }
  if (rng_pct(r, 30)) o.stages = rng_in(r, 2, 4);
  const uint64_t cp = ((uint64_t)p.c + 7) / 8 * 8, k_tiles = ((uint64_t)p.t * p.r * p.s * cp + 31) / 32;
  if (rng_pct(r, 30) && k_tiles >= 2) o.splitk = rng_in(r, 2, k_tiles < 8 ? (uint32_t)k_tiles : 8);
  if (rng_pct(r, 20)) o.wgm = rng_in(r, 1, 16);
  /* every draw is made whatever the arch, so a sample is the same problem on both */
  const int force_dma = rng_pct(r, 30), wide = rng_pct(r, 50);
  if (force_dma) o.dma_bytes = wide && cj_arch_dma_ok(arch, 16) ? 16 : 4;
  if (rng_pct(r, 25)) o.k_bytes = rng_pct(r, 50) ? 32 : 64;
  if (rng_pct(r, 20)) o.prefetch = rng_pct(r, 50) ? 2 : 1;
  const int bias = rng_pct(r, 30);
  o.force_big_in = rng_pct(r, 10);
  o.force_big_out = rng_pct(r, 10);
  o.no_fast_paths = rng_pct(r, 15);
  const int sched1 = rng_pct(r, 20); /* fp8: the multistage schedule where the arch defaults to ping-pong */
  /* y f32 (16-byte stores) instead of the dtype's own; a residual in y's dtype (its loads and conversions) */
  const int y32 = rng_pct(r, 15), residual = rng_pct(r, 20);

  p.groups = 1;
  p.x_dtype = p.w_dtype = CONV_DTYPES[dt].dt;
  const int fp8 = p.x_dtype == CONVJIT_DTYPE_FP8_E4M3FN;
  if (fp8) p.x_dtype = p.w_dtype = (convjit_dtype)cj_mfma_row_of(arch->mfma_fp8)->in_dtype;
  p.y_dtype = y32 ? CONVJIT_DTYPE_F32 : p.x_dtype == CONVJIT_DTYPE_F16 ? CONVJIT_DTYPE_F16 : CONVJIT_DTYPE_BF16;
  if (sched1 && fp8) o.sched = CJ_CONV_SCHED_MULTISTAGE;
  p.x_layout = p.y_layout = CONVJIT_LAYOUT_NCDHW;
  if (bias) cj_epi_add(&p.epi, CJ_EPI_BIAS);
  if (residual) cj_epi_add(&p.epi, CJ_EPI_RESIDUAL);
  p.x_scale = p.w_scale = 1.0f;
  p.spatial_rank = 3;

  conv_repro(out->repro, sizeof out->repro, arch, CONV_DTYPES[dt].name, &p, &o, bias, residual, y32);

  cj_seq *seq = calloc(1, sizeof *seq);
  CJ_ALLOC_CHECK(seq);
  const cj_target t = {arch, arch->cu_count_default};
  convjit_status st = cj_select_conv(&p, &t, &o, seq);
  out->n = 0;
  const cj_step_list *lists[2] = {&seq->pack, &seq->fwd};
  for (int l = 0; st == CONVJIT_OK && l < 2; l++)
    for (uint32_t i = 0; i < lists[l]->nsteps; i++)
      if (lists[l]->step[i].kind == CJ_STEP_KERNEL) {
        if (out->n >= COV_MAX_KERNELS) { st = CJ_ERR(CONVJIT_ERR_INTERNAL, "conv: more than %d kernels", COV_MAX_KERNELS); break; }
        out->plans[out->n++] = lists[l]->step[i].plan;
      }
  free(seq);
  return st;
}

static convjit_status spec_sample(const cj_arch *arch, const char *op, const char *dtype, const char *shape,
                                  sample *out) {
  snprintf(out->repro, sizeof out->repro, "kernel spec: %s %s %s %s -", op, arch->name, dtype, shape);
  out->n = 0;
  CJ_TRY(cj_kspec_plan(op, arch->name, dtype, shape, "-", &out->plans[0]));
  out->n = 1;
  return CONVJIT_OK;
}

static convjit_status transpose_sample(rng *r, const cj_arch *arch, sample *out) {
  const char *dt = TRANSPOSE_DTYPES[rng_in(r, 0, NELEM(TRANSPOSE_DTYPES) - 1)];
  char shape[64];
  if (rng_pct(r, 10)) /* past 2^31 elements: the big-tensor path */
    snprintf(shape, sizeof shape, "%u,%u,%u", rng_in(r, 1, 2), 1024u, rng_in(r, 1u << 21, 1u << 22));
  else snprintf(shape, sizeof shape, "%u,%u,%u", rng_in(r, 1, 4), draw_channels(r), rng_in(r, 1, rng_pct(r, 50) ? 64 : 5000));
  return spec_sample(arch, "transpose", dt, shape, out);
}

static convjit_status wpack_sample(rng *r, const cj_arch *arch, sample *out) {
  const char *dt = WPACK_DTYPES[rng_in(r, 0, NELEM(WPACK_DTYPES) - 1)];
  uint32_t chunk = !strcmp(dt, "fp8") ? 16 : 8;
  uint32_t k = draw_channels(r), c = draw_channels(r), trs = rng_pct(r, 30) ? 1 : rng_in(r, 1, 343);
  uint32_t cpad = (c + chunk - 1) / chunk * chunk, row = trs * cpad + (rng_pct(r, 50) ? 0 : chunk * rng_in(r, 1, 4));
  char shape[64];
  snprintf(shape, sizeof shape, "%u,%u,%u,%u,%u", k, c, trs, cpad, row);
  return spec_sample(arch, "weight_pack", dt, shape, out);
}

/* ---- what was seen ----------------------------------------------------------- */

typedef struct seen {
  char mnemonic[48];
  uint64_t count;
  uint32_t nkernels;
  const char *bad;      /* NULL: emulated; else why not (table, decoder) */
  char example[160];    /* one instruction text (decoder refusals) */
  char first[768];      /* the first plan it came from (repro + kernel name) */
} seen;

typedef struct sweep {
  seen *v;
  uint32_t n, cap;
  char (*built)[96]; /* arch/kernel names already scanned */
  uint32_t nbuilt, capbuilt;
  const char *pretend_missing; /* test hook: treat this mnemonic as absent from the table */
  uint64_t instructions;
  uint32_t samples[3], refused, build_failed, gated;
} sweep;

static seen *seen_get(sweep *s, const char *mn, const char *bad) {
  for (uint32_t i = 0; i < s->n; i++)
    if (!strcmp(s->v[i].mnemonic, mn) && s->v[i].bad == bad) return &s->v[i];
  if (s->n == s->cap) {
    uint32_t cap = s->cap ? 2 * s->cap : 256;
    seen *v = realloc(s->v, cap * sizeof *v);
    if (!v) return NULL;
    s->v = v;
    s->cap = cap;
  }
  seen *e = &s->v[s->n++];
  memset(e, 0, sizeof *e);
  snprintf(e->mnemonic, sizeof e->mnemonic, "%s", mn);
  e->bad = bad;
  return e;
}

/* 1 if arch/name was scanned already, else records it and returns 0. */
static int already_built(sweep *s, const char *arch, const char *name) {
  char key[96];
  snprintf(key, sizeof key, "%s/%s", arch, name);
  for (uint32_t i = 0; i < s->nbuilt; i++)
    if (!strcmp(s->built[i], key)) return 1;
  if (s->nbuilt == s->capbuilt) {
    uint32_t cap = s->capbuilt ? 2 * s->capbuilt : 1024;
    char (*v)[96] = realloc(s->built, cap * sizeof *v);
    if (!v) return 0; /* out of memory: scan it again, harmless */
    s->built = v;
    s->capbuilt = cap;
  }
  snprintf(s->built[s->nbuilt++], sizeof s->built[0], "%s", key);
  return 0;
}

typedef struct scan_ctx {
  sweep *s;
  const char *first; /* repro text of the kernel being scanned */
  const char *kernel;
} scan_ctx;

static void note_first(seen *e, const char *repro, const char *kernel) {
  if (!e->first[0]) snprintf(e->first, sizeof e->first, "%s  (kernel %s)", repro, kernel);
}

/* Per instruction: the emulator's decoder must accept it. */
static int decode_one(void *user, const cj_inst_text *it) {
  scan_ctx *c = user;
  if (!it->text) return 0; /* undecodable words are counted by the histogram */
  const char *bad = emu_decode_why(it->text, it->offset, it->bytes, it->size);
  if (!bad) return 0;
  char mn[48];
  cj_mnemonic_of(it->text, mn, sizeof mn);
  if (!emu_isa_has(mn)) return 0; /* reported by the table check */
  seen *e = seen_get(c->s, mn, bad);
  if (!e) return 1;
  e->count++;
  if (!e->example[0]) snprintf(e->example, sizeof e->example, "%s", it->text);
  note_first(e, c->first, c->kernel);
  return 0;
}

static convjit_status scan_kernel(sweep *s, const cj_built *b, const char *repro) {
  cj_mnem_hist h;
  CJ_TRY(cj_mnem_hist_kernel(b->co, b->info, &h));
  s->instructions += h.total;
  for (uint32_t i = 0; i < h.n; i++) {
    const char *mn = h.v[i].name;
    int missing = !emu_isa_has(mn) ||
                  (s->pretend_missing && !strncmp(mn, s->pretend_missing, strlen(s->pretend_missing)) &&
                   (mn[strlen(s->pretend_missing)] == 0 || mn[strlen(s->pretend_missing)] == '_'));
    seen *e = seen_get(s, mn, missing ? "not in the emulator's ISA table (src/emu/isa_table.h)" : NULL);
    if (!e) { cj_mnem_hist_free(&h); return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory"); }
    e->count += h.v[i].count;
    e->nkernels++;
    if (missing) note_first(e, repro, b->info->name);
  }
  if (h.undecoded) {
    seen *e = seen_get(s, "(undecodable words)", "bytes LLVM's disassembler does not decode");
    if (e) { e->count += h.undecoded; e->nkernels++; note_first(e, repro, b->info->name); }
  }
  cj_mnem_hist_free(&h);
  scan_ctx c = {s, repro, b->info->name};
  return cj_disasm_kernel(b->co, b->info, decode_one, &c);
}

/* ---- driver ------------------------------------------------------------------- */

typedef struct cov_args {
  uint64_t seed, samples, first, progress;
  int arch_mask; /* bit i: cj_arch_list()[i] */
  int verbose, list, plans_only;
  const char *pretend_missing;
} cov_args;

static void usage(FILE *f) {
  fprintf(f,
          "usage: convjit-coverage [--samples N] [--seed S] [--arch %s|all] [--list] [--verbose]\n"
          "  --samples N  plans to draw (default 60); each is built for every --arch\n"
          "  --seed S     the sample's seed (default 1); sample i is the same for every N\n"
          "  --first I    start at sample I (default 0): samples I..I+N-1, to split a sweep\n"
          "  --progress K print a running summary every K samples\n"
          "  --list       print every mnemonic seen with its count and kernel count\n"
          "  --verbose    print each sample's plan as it is built\n"
          "  --plans-only draw and select the plans, build nothing (the sample's make-up, fast)\n"
          "  --pretend-missing MNEMONIC  test hook: treat MNEMONIC as absent from the emulator's table\n"
          "exit: 0 all instructions emulated, 1 some are not (or a plan failed to build), 2 bad arguments\n",
          cli_arch_names('|'));
}

/* One value of the current option through the tools' strict parser (cli.h): 1 if good. */
static int take_u64(cli_args *c, uint64_t lo, uint64_t hi, uint64_t *out) {
  const char *opt = c->opt, *v = cli_value(c);
  return v && cli_u64(opt, v, lo, hi, out) == 0;
}

static int parse_args(int argc, char **argv, cov_args *a) {
  memset(a, 0, sizeof *a);
  a->seed = 1;
  a->samples = 60;
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  a->arch_mask = (1 << na) - 1;
  cli_args c = cli_args_of(argc, argv);
  while (cli_next(&c)) {
    const char *o = c.opt, *v;
    if (!strcmp(o, "--samples")) { if (!take_u64(&c, 1, 1000000, &a->samples)) return 0; }
    else if (!strcmp(o, "--seed")) { if (!take_u64(&c, 0, UINT64_MAX, &a->seed)) return 0; }
    else if (!strcmp(o, "--first")) { if (!take_u64(&c, 0, 1000000, &a->first)) return 0; }
    else if (!strcmp(o, "--progress")) { if (!take_u64(&c, 1, 1000000, &a->progress)) return 0; }
    else if (!strcmp(o, "--arch")) {
      if (!(v = cli_value(&c))) return 0;
      a->arch_mask = !strcmp(v, "all") ? (1 << na) - 1 : 0;
      for (int i = 0; i < na; i++)
        if (!strcmp(v, arches[i]->name)) a->arch_mask = 1 << i;
      if (!a->arch_mask) { fprintf(stderr, "convjit-coverage: --arch %s: %s or all\n", v, cj_arch_names()); return 0; }
    } else if (!strcmp(o, "--pretend-missing")) {
      if (!(v = cli_value(&c))) return 0;
      if (!*v) { fprintf(stderr, "convjit-coverage: --pretend-missing needs a mnemonic\n"); return 0; }
      a->pretend_missing = v;
    } else if (!strcmp(o, "--list")) a->list = 1;
    else if (!strcmp(o, "--verbose")) a->verbose = 1;
    else if (!strcmp(o, "--plans-only")) a->plans_only = 1;
    else if (!strcmp(o, "--help")) { usage(stdout); exit(0); }
    else { cli_unknown(&c); return 0; }
  }
  return 1;
}

static int seen_cmp(const void *x, const void *y) {
  const seen *a = x, *b = y;
  if ((a->bad != NULL) != (b->bad != NULL)) return a->bad ? -1 : 1;
  return a->count < b->count ? 1 : a->count > b->count ? -1 : strcmp(a->mnemonic, b->mnemonic);
}

int main(int argc, char **argv) {
  cov_args a;
  cli_set_tool("convjit-coverage");
  if (!parse_args(argc, argv, &a)) { usage(stderr); return 2; }
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  char arch_text[80]; /* "(gfx942, gfx950)" or the one arch */
  snprintf(arch_text, sizeof arch_text, "(%s)", cj_arch_names());
  for (int ai = 0; ai < na; ai++)
    if (a.arch_mask == 1 << ai) snprintf(arch_text, sizeof arch_text, "%s", arches[ai]->name);
  sweep s;
  memset(&s, 0, sizeof s);
  s.pretend_missing = a.pretend_missing;
  sample *sm = calloc(1, sizeof *sm);
  if (!sm) { fprintf(stderr, "convjit-coverage: out of memory\n"); return 1; }
  double t0 = cj_now_ms();
  for (uint64_t i = a.first; i < a.first + a.samples; i++) {
    if (a.progress && i > a.first && (i - a.first) % a.progress == 0) {
      uint32_t nbad = 0;
      for (uint32_t j = 0; j < s.n; j++) nbad += s.v[j].bad != NULL;
      printf("progress: samples %llu..%llu, %u kernels, %llu instructions, %u mnemonic rows, %u not emulated, "
             "%u build failures, %.1f s\n",
             (unsigned long long)a.first, (unsigned long long)i - 1, s.nbuilt, (unsigned long long)s.instructions, s.n,
             nbad, s.build_failed, (cj_now_ms() - t0) / 1000.0);
      fflush(stdout);
    }
    for (int ai = 0; ai < na; ai++) {
      if (!(a.arch_mask & (1 << ai))) continue;
      const cj_arch *arch = arches[ai];
      /* the stream depends on (seed, i) only: the same problem on both arches */
      rng r = {a.seed * 0x2545f4914f6cdd1dull ^ (i + 1) * 0x9e3779b97f4a7c15ull};
      rng_next(&r);
      uint32_t kind = rng_in(&r, 0, 9) < 7 ? 0 : rng_in(&r, 1, 2); /* 70% conv (3-4 kernels each) */
      convjit_status st = kind == 0 ? conv_sample(&r, arch, sm) : kind == 1 ? transpose_sample(&r, arch, sm)
                                                                           : wpack_sample(&r, arch, sm);
      s.samples[kind]++;
      if (st != CONVJIT_OK) {
        s.refused++;
        if (a.verbose) printf("sample %llu refused: %s: %s\n", (unsigned long long)i, sm->repro, cj_error_text());
        continue;
      }
      if (a.verbose) printf("sample %llu: %s (%d kernels)\n", (unsigned long long)i, sm->repro, sm->n);
      for (int k = 0; k < sm->n; k++) {
        /* each distinct kernel once (--plans-only: counted, not built) */
        if (already_built(&s, arch->name, sm->plans[k].name) || a.plans_only) continue;
        cj_built b = {0};
        if (cj_build_kernel(&sm->plans[k], 0, &b) != CONVJIT_OK) {
          printf("BUILD FAILED %s (kernel %s): %s\n", sm->repro, sm->plans[k].name, cj_error_text());
          s.build_failed++;
          continue;
        }
        /* A kernel that spills or uses scratch is never shipped: the API's
         * resource gate refuses it and walks on to the next candidate
         * (convjit.h, CONVJIT_ERR_RESOURCE), so its scratch instructions
         * are not ones the emulator must run. */
        if (b.info->private_segment_size || b.info->vgpr_spill_count || b.info->sgpr_spill_count) {
          if (a.verbose) printf("gated (spills/scratch, not shipped): %s (kernel %s)\n", sm->repro, sm->plans[k].name);
          s.gated++;
          cj_built_free(&b);
          continue;
        }
        if (scan_kernel(&s, &b, sm->repro) != CONVJIT_OK) {
          printf("SCAN FAILED %s (kernel %s): %s\n", sm->repro, sm->plans[k].name, cj_error_text());
          s.build_failed++;
        }
        cj_built_free(&b);
      }
    }
  }
  double secs = (cj_now_ms() - t0) / 1000.0;
  if (s.n) qsort(s.v, s.n, sizeof *s.v, seen_cmp);
  uint32_t distinct = 0, bad = 0;
  for (uint32_t i = 0; i < s.n; i++) {
    int dup = 0; /* a mnemonic can appear once emulated and once refused by the decoder */
    for (uint32_t j = 0; j < i; j++) dup |= !strcmp(s.v[j].mnemonic, s.v[i].mnemonic);
    distinct += !dup && strcmp(s.v[i].mnemonic, "(undecodable words)") != 0;
    if (s.v[i].bad) {
      bad++;
      printf("MISSING %s: %s; %llu times%s%s, first in: %s\n", s.v[i].mnemonic, s.v[i].bad,
             (unsigned long long)s.v[i].count, s.v[i].example[0] ? ", e.g. " : "", s.v[i].example, s.v[i].first);
    }
  }
  if (a.list)
    for (uint32_t i = 0; i < s.n; i++)
      if (!s.v[i].bad) printf("  %10llu %6u %s\n", (unsigned long long)s.v[i].count, s.v[i].nkernels, s.v[i].mnemonic);
  printf("convjit-coverage: seed %llu, samples %llu..%llu x %s: %u conv, %u transpose, %u weight_pack plans, "
         "%u refused by selection or plan\n",
         (unsigned long long)a.seed, (unsigned long long)a.first, (unsigned long long)(a.first + a.samples - 1),
         arch_text, s.samples[0], s.samples[1],
         s.samples[2], s.refused);
  printf("convjit-coverage: %u distinct kernels %s (%u of them gated by the resource gate: spills or scratch, never "
         "shipped, not scanned), %llu instructions, %u distinct mnemonics, %u not emulated, %u build failures, %.1f s\n",
         s.nbuilt, a.plans_only ? "planned (--plans-only: none built)" : "built", s.gated,
         (unsigned long long)s.instructions, distinct, bad, s.build_failed, secs);
  printf("%s\n", bad || s.build_failed ? "FAIL" : "PASS");
  free(sm);
  free(s.v);
  free(s.built);
  return bad || s.build_failed ? 1 : 0;
}
