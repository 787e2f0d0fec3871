/* Golden quality numbers (STYLE habit 11): tests/golden/resources.tsv holds,
 * per canonical shipped kernel, the register, spill, scratch, LDS and code
 * size figures of the code object LLVM 22 makes for it. This test builds
 * every row's kernel once and compares field by field; any difference is
 * printed as "field old -> new" and fails the test, so a change in codegen
 * or LLVM that moves register pressure or code size is never silent.
 *
 * A deliberate change is one command and a reviewed diff:
 *   CONVJIT_GOLDEN_UPDATE=1 build/test_golden && git diff tests/golden
 * rewrites the value columns of every row (comments and row order kept).
 * To add a kernel: add a row with the five key columns (a kernel spec,
 * src/codegen/kspec.h) and '?' in the value columns, then update.
 * CONVJIT_GOLDEN_SAVE_DIR=DIR also writes every row's IR as built and its
 * code object to DIR/<row>_<arch>_<kernel>.{ll,co}: two runs before and
 * after a refactor that must not change kernels compare with diff -r.
 *
 * The table is a TRIPWIRE, not an oracle: its values are measurements that
 * the code under test regenerates (CONVJIT_GOLDEN_UPDATE=1), meaning "what we
 * shipped and reviewed", so it catches change, not wrongness. What it can
 * catch as wrong comes from derived_bounds() below: per row, bounds
 * computed here from arch constants (src/arch) and the tile knobs alone
 * (register file, SGPR file, occupancy of the work-group, LDS of the
 * stages x tile rows, accumulator registers the tile implies, a code-size
 * budget) -- none read from the plan's derived fields or the code object.
 * More independent checks (spill-free, LDS == plan) live in
 * test_pipeline_build / test_layout_build / test_conv_spill. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pipeline/build.h"
#include "codegen/kspec.h"
#include "codegen/kplan.h"
#include "arch/arch.h"

#define GOLDEN_PATH CJ_SOURCE_DIR "/tests/golden/resources.tsv"
#define GOLDEN_HEADER "op\tarch\tdtype\tshape\topts\tkernel\tvgpr\tagpr\tsgpr\tvgpr_spills\tsgpr_spills\tscratch\tlds\tcode_bytes"

/* The value columns, in file order after "kernel". */
enum { G_VGPR, G_AGPR, G_SGPR, G_VSPILL, G_SSPILL, G_SCRATCH, G_LDS, G_CODE, G_NVAL };
static const char *const VAL_NAMES[G_NVAL] = {"vgpr", "agpr", "sgpr", "vgpr_spills", "sgpr_spills",
                                              "scratch", "lds", "code_bytes"};

typedef struct golden_row {
  char op[24], arch[16], dtype[16], shape[96], opts[160], kernel[128];
  int64_t v[G_NVAL]; /* -1: '?' (no golden value yet) */
} golden_row;

typedef struct golden_file {
  char **lines;      /* every line as read (comments kept for rewriting) */
  int nlines;
  int *row_of_line;  /* index into rows, or -1 for comments / header */
  golden_row *rows;
  int nrows;
} golden_file;

static void golden_free(golden_file *f) {
  for (int i = 0; i < f->nlines; i++) free(f->lines[i]);
  free(f->lines);
  free(f->row_of_line);
  free(f->rows);
  memset(f, 0, sizeof *f);
}

/* Splits a tab-separated line in place; returns the number of fields. */
static int split_tabs(char *s, char **f, int max) {
  int n = 0;
  for (;;) {
    if (n == max) return max + 1;
    f[n++] = s;
    char *t = strchr(s, '\t');
    if (!t) return n;
    *t = 0;
    s = t + 1;
  }
}

static void copy_field(char *dst, size_t cap, const char *src, const char *where, int line, const char *name) {
  if (strlen(src) >= cap) fail_msg("%s:%d: %s '%s' longer than %zu", where, line, name, src, cap - 1);
  strcpy(dst, src);
}

static int parse_row(char *text, const char *where, int line, golden_row *r) {
  char *f[32];
  int n = split_tabs(text, f, 32);
  if (n != 6 + G_NVAL) {
    printf("%s:%d: %d fields, want %d (header: %s)\n", where, line, n, 6 + G_NVAL, GOLDEN_HEADER);
    return -1;
  }
  copy_field(r->op, sizeof r->op, f[0], where, line, "op");
  copy_field(r->arch, sizeof r->arch, f[1], where, line, "arch");
  copy_field(r->dtype, sizeof r->dtype, f[2], where, line, "dtype");
  copy_field(r->shape, sizeof r->shape, f[3], where, line, "shape");
  copy_field(r->opts, sizeof r->opts, f[4], where, line, "opts");
  copy_field(r->kernel, sizeof r->kernel, f[5], where, line, "kernel");
  for (int i = 0; i < G_NVAL; i++) {
    const char *s = f[6 + i];
    if (!strcmp(s, "?")) {
      r->v[i] = -1;
      continue;
    }
    char *end;
    long long x = strtoll(s, &end, 10);
    if (end == s || *end || x < 0) {
      printf("%s:%d: %s = '%s': not a count (or '?')\n", where, line, VAL_NAMES[i], s);
      return -1;
    }
    r->v[i] = x;
  }
  return 0;
}

static int golden_read(const char *path, golden_file *g) {
  memset(g, 0, sizeof *g);
  FILE *fp = fopen(path, "r");
  if (!fp) {
    printf("%s: cannot open\n", path);
    return -1;
  }
  char *buf = NULL;
  size_t cap = 0;
  ssize_t len;
  int bad = 0, seen_header = 0;
  while ((len = getline(&buf, &cap, fp)) >= 0) {
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = 0;
    g->lines = realloc(g->lines, (size_t)(g->nlines + 1) * sizeof *g->lines);
    g->row_of_line = realloc(g->row_of_line, (size_t)(g->nlines + 1) * sizeof *g->row_of_line);
    assert_non_null(g->lines);
    assert_non_null(g->row_of_line);
    g->lines[g->nlines] = strdup(buf);
    g->row_of_line[g->nlines] = -1;
    int line = ++g->nlines;
    if (buf[0] == '#' || buf[0] == 0) continue;
    if (!seen_header) {
      if (strcmp(buf, GOLDEN_HEADER) != 0) {
        printf("%s:%d: header is not\n%s\n", path, line, GOLDEN_HEADER);
        bad = 1;
      }
      seen_header = 1;
      continue;
    }
    g->rows = realloc(g->rows, (size_t)(g->nrows + 1) * sizeof *g->rows);
    assert_non_null(g->rows);
    if (parse_row(buf, path, line, &g->rows[g->nrows]) != 0) bad = 1;
    else g->row_of_line[line - 1] = g->nrows++;
  }
  free(buf);
  fclose(fp);
  if (!seen_header) {
    printf("%s: no header line\n", path);
    bad = 1;
  }
  return bad ? -1 : 0;
}

/* The measured row of the built kernel (key columns copied from want). */
static void measure(const golden_row *want, const cj_built *b, golden_row *got) {
  *got = *want;
  const cj_kernel_info *k = b->info;
  snprintf(got->kernel, sizeof got->kernel, "%s", k->name);
  got->v[G_VGPR] = k->vgpr_count;
  got->v[G_AGPR] = k->agpr_count;
  got->v[G_SGPR] = k->sgpr_count;
  got->v[G_VSPILL] = k->vgpr_spill_count;
  got->v[G_SSPILL] = k->sgpr_spill_count;
  got->v[G_SCRATCH] = k->private_segment_size;
  got->v[G_LDS] = k->group_segment_size;
  got->v[G_CODE] = (int64_t)k->code_size;
}

/* ---- derived bounds ---------------------------------------------------------
 * Each bound comes from arch constants and the kernel's tile knobs (tile,
 * waves, stages: the inputs of the plan) or the documented fixed tiles of
 * the layout kernels (docs/kernels.md), never from the plan's computed
 * fields or the measured values. */
#define SGPR_MAX 108   /* s0..s101 addressable (llvm-mc-22 -mcpu=gfx942 rejects s102) + VCC, FLAT_SCRATCH,
                          XNACK_MASK (2 each), which the metadata's sgpr_count includes */
#define VGPR_ARCH_MAX 256 /* v0..v255 (and a0..a255) per lane */
#define CONV_TILE_K 32 /* one K step of the conv = 32 reduction elements (docs/kernels.md) */
#define INST_BYTES 8   /* an instruction is 4 or 8 bytes: budget at the larger */

static uint32_t pow2_width(uint64_t bytes) { /* largest power of two <= 16 dividing bytes */
  uint32_t w = 16;
  while (bytes % w) w /= 2;
  return w;
}

/* The value of knob `name` (" name=N") in a row's options, else dflt. */
static uint64_t row_knob(const golden_row *w, const char *name, uint64_t dflt) {
  char key[32];
  snprintf(key, sizeof key, "%s=", name);
  for (const char *o = strstr(w->opts, key); o; o = strstr(o + 1, key))
    if (o == w->opts || o[-1] == ' ') return strtoull(o + strlen(key), NULL, 10);
  return dflt;
}

/* Appends "bound: why" for every violated bound; returns their number and,
 * in *desc, the bounds applied. */
static int derived_bounds(const golden_row *w, const cj_kplan *p, const golden_row *m, cj_strbuf *out,
                          cj_strbuf *desc) {
  const cj_arch *a = p->arch;
  int bad = 0;
  uint32_t threads = p->block[0] * (p->block[1] ? p->block[1] : 1) * (p->block[2] ? p->block[2] : 1);
  uint64_t lds_want = 0, acc_min = 0, inst_budget = 0;
  if (p->op == CJ_KOP_CONV) {
    const cj_conv_plan *c = &p->u.conv;
    /* the row's dtype (bf16, f16, or the arch's fp8: 1 byte), not the plan's MFMA field */
    const int fp8 = !strcmp(w->dtype, "fp8");
    const cj_mfma_row *row = cj_mfma_row_of(fp8 ? a->mfma_fp8 : !strcmp(w->dtype, "f16") ? a->mfma_f16 : a->mfma_bf16);
    assert_non_null(row);
    const uint64_t eb = fp8 ? 1 : 2;
    /* one K step: 64 bytes of reduction elements (CONV_TILE_K bf16; the
     * row's kbytes knob if it sets one), rounded up to whole MFMAs (gfx950's
     * fp8 MFMA has k = 128: a 128-byte step) */
    const uint64_t step0 = row_knob(w, "kbytes", CONV_TILE_K * 2) / eb;
    const uint64_t step = (step0 + row->k - 1) / row->k * row->k;
    /* load=2 (VGPR path): 16-byte buffer loads and one ds_write per load;
     * a row's dma=B knob (4 on the masked in-place NDHWC path) sets the
     * DMA width, else the arch's widest */
    const int vload = row_knob(w, "load", 1) == 2;
    uint64_t waves = (uint64_t)c->wave_m * c->wave_n;
    threads = (uint32_t)(waves * a->wave_size);
    /* stages x (A + B rows) x one K step */
    lds_want = (uint64_t)c->stages * (c->tile_m + c->tile_n) * step * eb;
    /* the tile's fp32 accumulators spread over the wave's 64 lanes */
    acc_min = (uint64_t)c->tile_m * c->tile_n / (a->wave_size * waves);
    /* per K step per wave: MFMAs of the fragments, DMA instructions of the
     * A+B stage, one operand read per fragment row/column, K slice and k run */
    uint64_t fm = c->tile_m / 16 / c->wave_m, fn = c->tile_n / 16 / c->wave_n, slices = step / row->k;
    uint64_t mfma = fm * fn * slices,
             dma = (uint64_t)(c->tile_m + c->tile_n) * step * eb /
                   (threads * (vload ? 16 : row_knob(w, "dma", a->dma_max_bytes)));
    uint64_t lds_rd = (fm + fn) * slices * row->k_runs + (vload ? dma : 0);
    /* budget: the loop body is `stages` K steps, each of its essential
     * instructions with up to 3 more for addressing and waits (measured
     * <= 2.9 on gfx942, docs/kernels.md mix); the prologue's stages DMA
     * steps (all of them with operand prefetch) at 8 instructions per DMA; an epilogue of 8 per accumulator
     * (bias, convert, pack, store) and the fused ops' own per element
     * (residual 3: its share of the load, the bf16 -> fp32 shift or f16
     * cvt, the add;
     * relu 1; silu 5: mul, v_exp, add, v_rcp, mul; gelu 7: silu's + v^2 and
     * an fma); 256 of setup. Unrolling the K loop over C*T*R*S would break
     * it by far. */
    static const uint64_t act_inst[4] = {0, 1, 5, 7};
    const int act = cj_epi_activation(&c->epi);
    uint64_t epi = 8 + (cj_epi_has(&c->epi, CJ_EPI_RESIDUAL) ? 3 : 0) + (act >= 0 && act < 4 ? act_inst[act] : 0);
    /* an output phase placed at a stride in a larger y (kplan_phase.h)
     * decodes each stored row's (od, oh, ow): two divisions by constants
     * (multiply-high, shift, multiply, subtract) and the placed index's
     * multiply-adds, 16 per row; a lane stores tile_m / wave_m / 4 rows (4
     * of each 16-row MFMA fragment) */
    const uint64_t placed = c->g.placed ? 16 * (uint64_t)c->tile_m / c->wave_m / 4 : 0;
    inst_budget = c->stages * 4 * (mfma + dma + lds_rd) + 8 * c->stages * dma + epi * acc_min + placed + 256;
  } else if (p->op == CJ_KOP_TRANSPOSE) {
    /* 64 x 64 tile in LDS of the input element (bf16 for bf16-fp8) */
    uint64_t n = 0, cc = 0, sp = 0;
    assert_int_equal(sscanf(w->shape, "%" SCNu64 ",%" SCNu64 ",%" SCNu64, &n, &cc, &sp), 3);
    uint32_t ebi = strcmp(w->dtype, "fp8") ? 2 : 1, ebo = strcmp(w->dtype, "bf16") ? 1 : 2;
    lds_want = 64 * 64 * ebi;
    uint64_t passes = 64 * 64 * ebi / (256 * pow2_width(sp * ebi)) + 64 * 64 * ebo / (256 * pow2_width(cc * ebo));
    inst_budget = 24 * passes + 160; /* a pass: address, mask, access (+ convert/clamp); fixed setup */
  } else if (p->op == CJ_KOP_WEIGHT_PACK) {
    inst_budget = 64; /* one element per thread, no loop */
  } else if (p->op == CJ_KOP_CONV_FINALIZE) {
    inst_budget = 128; /* a few fp32 loads, bias, convert, stores per thread, no loop */
  } else if (p->op == CJ_KOP_GRID_PACK) {
    /* 8 elements per thread, unrolled: each its grid position step, input
     * index and range checks, 64-bit address, load and select (~32); setup */
    inst_budget = 8 * 32 + 160;
    if (p->u.gp.db_sum) { /* db's partial: 8 converts and adds, a tree of 8 levels (compare, branch, 2 LDS
                             reads, add, LDS write, barrier: ~12), thread 0's store; one fp32 slot per thread */
      inst_budget += 8 * 2 + 8 * 12 + 16;
      lds_want = CJ_WGRAD_PACK_THREADS * 4;
    }
  } else if (p->op == CJ_KOP_WGRAD_FINALIZE) {
    /* a loop of one 16-byte load and add per block; convert, stores (+ db's loop over the pre-pass's partials) */
    inst_budget = 160 + (p->u.wf.db_chunks ? 32 : 0);
  } else if (p->op == CJ_KOP_CONV_GENERIC) {
    /* 64 x 64 tiles, one stage of A and B rows of a K step (64 bytes, or one
     * MFMA's K when wider) + 16 bytes of padding each; 4 waves of 2 x 2
     * fragments of 4 fp32 accumulators */
    const int fp8 = !strcmp(w->dtype, "fp8");
    const cj_mfma_row *row = cj_mfma_row_of(fp8 ? a->mfma_fp8 : !strcmp(w->dtype, "f16") ? a->mfma_f16 : a->mfma_bf16);
    assert_non_null(row);
    const uint64_t eb = fp8 ? 1 : 2, kbytes = row->k * eb > 64 ? row->k * eb : 64;
    threads = 256;
    lds_want = 2 * 64 * (kbytes + 16);
    acc_min = 16;
    /* per K step: a gather of up to 2 x 16 elements (address, bounds,
     * load: ~12 each), the pack, 2 loads of B, 4 MFMAs per slice and their
     * operand reads, 2 barriers; per output element the position's runtime
     * division and the store (32), and the fused ops' own (as the conv's:
     * residual 3, relu 1, silu 5, gelu 7); 512 of setup */
    static const uint64_t act_inst[4] = {0, 1, 5, 7};
    const cj_epilogue *e = &p->u.gen.epi;
    const int act = cj_epi_activation(e);
    uint64_t elems = kbytes / 16 * 64 * 16 / eb / 256;
    uint64_t epi = 32 + (cj_epi_has(e, CJ_EPI_RESIDUAL) ? 3 : 0) + (act >= 0 && act < 4 ? act_inst[act] : 0);
    inst_budget = 12 * elems + 64 + 8 * (kbytes / (row->k * eb)) + epi * acc_min + 512;
  } else if (p->op == CJ_KOP_CONV_DIRECT && p->u.dir.wgrad) {
    /* backward weight: no LDS. Partials: a tap chunk of vec*M fp32 sums
     * (and db's) across the position loop, whose body is the dy load and
     * its conversion, the position's decode (divisions by constants, ~24),
     * per tap an address, range check, load, conversion and fmas (~12 +
     * 2 vec*M), then per tap a store of vec*M (~8); 256 of setup. The
     * finalize: a loop of one or two loads and an add, a conversion, two
     * stores: 128. */
    const cj_direct_plan *c = &p->u.dir;
    threads = CJ_DIRECT_THREADS;
    lds_want = 0;
    acc_min = c->wgrad == 1 ? (uint64_t)c->tap_chunk * c->accw : 0;
    inst_budget = c->wgrad == 1 ? 24 + 2 * c->accw + (uint64_t)c->tap_chunk * (12 + 2 * c->accw + 8) + 256 : 128;
  } else if (p->op == CJ_KOP_CONV_DIRECT) {
    /* no LDS; a lane's strip x vec*M fp32 sums; code: the depth loop's
     * body is R input rows unrolled (pf = 2: no depth loop, the T*R rows
     * unrolled), each its taps' weight loads and
     * conversions (~4 + vec*M), its input positions (at most the strip
     * row's span per tap chunk: address, range check, load, ~10 + the
     * conversions) and strip x S fmas of vec*M lanes (packed
     * pairs, at most one instruction per lane value); per output the
     * epilogue (bias, convert, pack, store: ~12 per value, the fused ops
     * as the conv's) and 256 of setup */
    const cj_direct_plan *c = &p->u.dir;
    const uint64_t S = c->g.s, chunks = (S + c->tap_chunk - 1) / c->tap_chunk;
    const uint64_t pos = chunks * c->span; /* each chunk reads at most the strip row's positions */
    static const uint64_t act_inst[4] = {0, 1, 5, 7};
    const int act = cj_epi_activation(&c->epi);
    const uint64_t epi = 12 + (cj_epi_has(&c->epi, CJ_EPI_RESIDUAL) ? 3 : 0) + (act >= 0 && act < 4 ? act_inst[act] : 0);
    threads = CJ_DIRECT_THREADS;
    lds_want = 0;
    acc_min = (uint64_t)c->strip * c->outs;
    const uint64_t rows = (c->pf == 2 ? (uint64_t)c->g.t : 1) * c->g.r;
    inst_budget = rows * (S * (4 + c->accw) + pos * (10 + c->accw) + (uint64_t)c->strip * S * c->accw) +
                  (uint64_t)c->strip * (c->outs * epi + c->accw) + 256; /* + backward data's sums over M */
  } else {
    fail_msg("golden: no derived bounds for op %s", w->op);
  }
  /* A work-group's waves spread over the CU's SIMDs; each SIMD must hold
   * ceil(waves / simds) of them, so the unified register file (arch+acc,
   * VGPRs aligned to 4 before the AGPRs) per lane is shared that way. */
  uint64_t wg_waves = (threads + a->wave_size - 1) / a->wave_size;
  uint64_t per_simd = (wg_waves + a->simds_per_cu - 1) / a->simds_per_cu;
  uint64_t reg_max = a->vgprs / per_simd;
  uint64_t regs = (uint64_t)((m->v[G_VGPR] + 3) / 4 * 4 + m->v[G_AGPR]);
  cj_sb_printf(desc, "vgpr+agpr in [%llu, %llu] (%llu waves/SIMD), vgpr,agpr <= %d, sgpr <= %d, lds == %llu, "
               "code <= %llu B", (unsigned long long)acc_min, (unsigned long long)reg_max,
               (unsigned long long)per_simd, VGPR_ARCH_MAX, SGPR_MAX, (unsigned long long)lds_want,
               (unsigned long long)(inst_budget * INST_BYTES));
#define BOUND(ok, ...)                                          \
  do {                                                          \
    if (!(ok)) {                                                \
      cj_sb_printf(out, "%s", bad ? "; " : "");                 \
      cj_sb_printf(out, __VA_ARGS__);                           \
      bad++;                                                    \
    }                                                           \
  } while (0)
  BOUND(regs <= reg_max, "vgpr %lld (+agpr %lld) = %llu > %llu at %llu waves per SIMD", (long long)m->v[G_VGPR],
        (long long)m->v[G_AGPR], (unsigned long long)regs, (unsigned long long)reg_max, (unsigned long long)per_simd);
  BOUND(regs >= acc_min, "vgpr+agpr %llu < the tile's %llu accumulator registers", (unsigned long long)regs,
        (unsigned long long)acc_min);
  BOUND(m->v[G_VGPR] <= VGPR_ARCH_MAX && m->v[G_AGPR] <= VGPR_ARCH_MAX, "vgpr %lld / agpr %lld > %d",
        (long long)m->v[G_VGPR], (long long)m->v[G_AGPR], VGPR_ARCH_MAX);
  BOUND(m->v[G_SGPR] <= SGPR_MAX, "sgpr %lld > %d", (long long)m->v[G_SGPR], SGPR_MAX);
  BOUND(m->v[G_LDS] == (int64_t)lds_want, "lds %lld != %llu derived from the tile", (long long)m->v[G_LDS],
        (unsigned long long)lds_want);
  BOUND(m->v[G_LDS] <= (int64_t)a->lds_bytes, "lds %lld > the arch's %u", (long long)m->v[G_LDS], a->lds_bytes);
  BOUND(m->v[G_CODE] <= (int64_t)(inst_budget * INST_BYTES), "code %lld B > budget %llu B (%llu instructions)",
        (long long)m->v[G_CODE], (unsigned long long)(inst_budget * INST_BYTES), (unsigned long long)inst_budget);
#undef BOUND
  return bad;
}

/* Appends "field old -> new" for every difference; returns their number. */
static int row_diff(const golden_row *old, const golden_row *now, cj_strbuf *out) {
  int n = 0;
  if (strcmp(old->kernel, now->kernel) != 0) {
    cj_sb_printf(out, "%skernel %s -> %s", n ? ", " : "", old->kernel, now->kernel);
    n++;
  }
  for (int i = 0; i < G_NVAL; i++) {
    if (old->v[i] == now->v[i]) continue;
    if (old->v[i] < 0) cj_sb_printf(out, "%s%s ? -> %lld", n ? ", " : "", VAL_NAMES[i], (long long)now->v[i]);
    else
      cj_sb_printf(out, "%s%s %lld -> %lld", n ? ", " : "", VAL_NAMES[i], (long long)old->v[i],
                   (long long)now->v[i]);
    n++;
  }
  return n;
}

static void format_row(const golden_row *r, cj_strbuf *out) {
  cj_sb_printf(out, "%s\t%s\t%s\t%s\t%s\t%s", r->op, r->arch, r->dtype, r->shape, r->opts, r->kernel);
  for (int i = 0; i < G_NVAL; i++) {
    if (r->v[i] < 0) cj_sb_printf(out, "\t?");
    else cj_sb_printf(out, "\t%lld", (long long)r->v[i]);
  }
}

static void golden_write(const char *path, const golden_file *g, const golden_row *rows) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *fp = fopen(tmp, "w");
  if (!fp) fail_msg("cannot write %s", tmp);
  for (int i = 0; i < g->nlines; i++) {
    if (g->row_of_line[i] < 0) fprintf(fp, "%s\n", g->lines[i]);
    else {
      cj_strbuf s = {0};
      format_row(&rows[g->row_of_line[i]], &s);
      fprintf(fp, "%s\n", s.s ? s.s : "");
      cj_sb_free(&s);
    }
  }
  if (fclose(fp) != 0 || rename(tmp, path) != 0) fail_msg("cannot replace %s", path);
}

/* CONVJIT_GOLDEN_SAVE_DIR: row r's IR as built and its code object; 0, or
 * 1 (printed) when a file cannot be written. */
static int save_row(const char *dir, int r, const golden_row *w, const cj_built *b) {
  const struct { const char *ext; const void *data; size_t size; } out[2] = {
      {"ll", b->ir.data, b->ir.data ? strlen((const char *)b->ir.data) : 0},
      {"co", b->code_object.data, b->code_object.size}};
  for (int i = 0; i < 2; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%03d_%s_%s.%s", dir, r, w->arch, b->info->name, out[i].ext);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(out[i].data, 1, out[i].size, f) == out[i].size;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) {
      printf("golden: CONVJIT_GOLDEN_SAVE_DIR: cannot write %s\n", path);
      return 1;
    }
  }
  return 0;
}

/* Builds every row's kernel and compares (or, updating, rewrites). */
static void test_golden_table(void **state) {
  (void)state;
  const char *upd = getenv("CONVJIT_GOLDEN_UPDATE");
  int update = upd && *upd && strcmp(upd, "0") != 0;
  const char *save_dir = getenv("CONVJIT_GOLDEN_SAVE_DIR");
  if (save_dir && !*save_dir) save_dir = NULL;
  golden_file g;
  if (golden_read(GOLDEN_PATH, &g) != 0) fail_msg("%s: malformed (see above)", GOLDEN_PATH);
  assert_true(g.nrows > 0);
  golden_row *now = calloc((size_t)g.nrows, sizeof *now);
  assert_non_null(now);
  int changed = 0, failed = 0, violated = 0;
  const int verbose_bounds = 1;
  printf("golden: resources.tsv is a tripwire (values the code under test regenerates: it flags change, not "
         "wrongness); the derived bounds are the checks of correctness\n");
  double t0 = cj_now_ms();
  for (int r = 0; r < g.nrows; r++) {
    const golden_row *w = &g.rows[r];
    cj_kplan p;
    cj_built b = {0};
    if (cj_kspec_plan(w->op, w->arch, w->dtype, w->shape, w->opts, &p) != CONVJIT_OK) {
      printf("golden: %s %s %s %s %s: plan: %s\n", w->op, w->arch, w->dtype, w->shape, w->opts, cj_error_text());
      failed++;
      now[r] = *w;
      continue;
    }
    if (cj_build_kernel(&p, save_dir ? CJ_BUILD_KEEP_IR : 0, &b) != CONVJIT_OK) {
      printf("golden: %s %s %s %s %s: build: %s\n", w->op, w->arch, w->dtype, w->shape, w->opts, cj_error_text());
      failed++;
      now[r] = *w;
      continue;
    }
    measure(w, &b, &now[r]);
    if (save_dir && save_row(save_dir, r, w, &b)) failed++;
    cj_built_free(&b);
    cj_strbuf why = {0}, desc = {0};
    if (derived_bounds(w, &p, &now[r], &why, &desc)) {
      printf("golden: %s %s %s %s %s: DERIVED BOUND violated: %s\n", w->op, w->arch, w->dtype, w->shape, w->opts,
             why.s);
      violated++;
    } else if (verbose_bounds) {
      printf("golden: %s %s %s %s: within derived bounds: %s\n", w->op, w->arch, w->dtype, w->shape, desc.s);
    }
    cj_sb_free(&why);
    cj_sb_free(&desc);
    cj_strbuf d = {0};
    if (row_diff(w, &now[r], &d)) {
      printf("golden: %s %s %s %s %s: %s\n", w->op, w->arch, w->dtype, w->shape, w->opts, d.s);
      changed++;
    }
    cj_sb_free(&d);
  }
  printf("golden: %d kernels built in %.0f ms, %d differ from the tripwire table, %d break a derived bound, %d "
         "failed to build\n", g.nrows, cj_now_ms() - t0, changed, violated, failed);
  if (update && !failed && changed) {
    golden_write(GOLDEN_PATH, &g, now);
    printf("golden: rewrote %s: review with git diff\n", GOLDEN_PATH);
  }
  free(now);
  golden_free(&g);
  if (failed) fail_msg("%d golden kernels did not build", failed);
  if (violated) fail_msg("%d golden kernels break a derived bound (above); updating the table does not fix that",
                         violated);
  if (changed && !update)
    fail_msg("%d kernels differ from %s (diff above). If intended: CONVJIT_GOLDEN_UPDATE=1 %s, then review "
             "git diff tests/golden",
             changed, GOLDEN_PATH, "test_golden");
}

/* The comparison itself: a hand-made pair of rows must report exactly the
 * fields that differ, in the old -> new form, and '?' as new values. */
static void test_row_diff_reports_each_field(void **state) {
  (void)state;
  golden_row a = {.op = "transpose", .kernel = "k1", .v = {10, 0, 20, 0, 0, 0, 4096, 600}};
  golden_row b = a;
  cj_strbuf d = {0};
  assert_int_equal(row_diff(&a, &b, &d), 0);
  assert_null(d.s);
  b.v[G_VGPR] = 11;
  b.v[G_CODE] = 640;
  assert_int_equal(row_diff(&a, &b, &d), 2);
  assert_string_equal(d.s, "vgpr 10 -> 11, code_bytes 600 -> 640");
  cj_sb_free(&d);
  a.v[G_LDS] = -1;
  strcpy(b.kernel, "k2");
  b.v[G_VGPR] = 10;
  b.v[G_CODE] = 600;
  assert_int_equal(row_diff(&a, &b, &d), 2);
  assert_string_equal(d.s, "kernel k1 -> k2, lds ? -> 4096");
  cj_sb_free(&d);
}

/* A row with a wrong field count or a non-numeric value is refused with
 * the line number, never half-read. */
static void test_parse_row_rejects_malformed(void **state) {
  (void)state;
  golden_row r;
  char ok[] = "transpose\tgfx942\tbf16\t2,24,1000\t-\tk\t19\t0\t23\t0\t0\t0\t8192\t612";
  assert_int_equal(parse_row(ok, "(inline row)", 1, &r), 0);
  assert_int_equal(r.v[G_SGPR], 23);
  assert_int_equal(r.v[G_CODE], 612);
  char q[] = "transpose\tgfx942\tbf16\t2,24,1000\t-\tk\t?\t0\t23\t0\t0\t0\t8192\t?";
  assert_int_equal(parse_row(q, "(inline row)", 2, &r), 0);
  assert_int_equal(r.v[G_VGPR], -1);
  char short_row[] = "transpose\tgfx942\tbf16\t2,24,1000\t-\tk\t19";
  assert_int_equal(parse_row(short_row, "(inline row)", 3, &r), -1);
  char word[] = "transpose\tgfx942\tbf16\t2,24,1000\t-\tk\tmany\t0\t23\t0\t0\t0\t8192\t612";
  assert_int_equal(parse_row(word, "(inline row)", 4, &r), -1);
  char neg[] = "transpose\tgfx942\tbf16\t2,24,1000\t-\tk\t-3\t0\t23\t0\t0\t0\t8192\t612";
  assert_int_equal(parse_row(neg, "(inline row)", 5, &r), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_row_diff_reports_each_field),
      cmocka_unit_test(test_parse_row_rejects_malformed),
      cmocka_unit_test(test_golden_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
