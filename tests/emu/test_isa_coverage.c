/* ISA coverage gate: the emulator must know every instruction LLVM 22
 * emits for the kernels convjit ships (STYLE habit 1: an instruction the
 * emulator lacks stops a run; this test finds it before a run does).
 *
 * Kernels: every row of tests/golden/resources.tsv (the canonical shipped
 * kernels) plus the configurations below, chosen to reach each code path:
 * transpose and weight-pack shape classes, every conv tile of the tile
 * sweep, and each named conv flag (bias, split-K atomics + finalize,
 * BIG_IN / BIG_OUT, temporal fast path, vec4 store, full tiles, strides,
 * dilation, the 4-byte DMA), on both arches.
 *
 * Each kernel is built once, its own bytes [entry, entry + code_size) are
 * disassembled (pipeline/disasm.h, the disassembler the emulator uses) and
 * every instruction goes through the emulator's decoder (emu_decode_text):
 * a mnemonic missing from src/emu/isa_table.h, an operand or modifier the
 * decoder does not parse, or bytes that do not decode all fail the test,
 * listed once per mnemonic with how often it occurs and the kernels it
 * came from. CONVJIT_ISA_HISTOGRAM=1 also prints each kernel's mnemonic
 * histogram ('!' marks what the emulator cannot run). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "emu/emu_internal.h"
#include "pipeline/build.h"
#include "pipeline/disasm.h"
#include "codegen/kspec.h"

#define GOLDEN_PATH CJ_SOURCE_DIR "/tests/golden/resources.tsv"

typedef struct spec {
  char op[24], arch[16], dtype[16], shape[96], opts[160];
  const char *flags; /* conv plan flags the config must have ("" = none checked) */
  const char *why;   /* NULL for golden rows */
} spec;

/* Configurations beyond the golden rows; each line names the path it is
 * there for, and `flags` lists the conv plan flags that path needs (checked
 * against the plan, so a config that drifts off its path fails here rather
 * than silently covering less). Every one is built for both arches. */
static const struct {
  const char *op, *dtype, *shape, *opts, *flags, *why;
} EXTRA[] = {
    {"transpose", "bf16", "3,5,7", "-", "", "tiny, every tile partial, 2-byte accesses"},
    {"transpose", "fp8", "1,3,1001", "-", "", "1-byte accesses, odd S"},
    {"transpose", "fp8", "1,64,64", "-", "", "one full tile, 16-byte accesses"},
    {"transpose", "bf16", "2,1024,1048576", "-", "", "big path with n > 1"},
    {"transpose", "bf16-fp8", "3,5,7", "-", "", "bf16 -> fp8 with 1-byte stores, every tile partial"},
    {"weight_pack", "fp8", "32,20,9,32,384", "-", "", "fp8 pack, padded row tail"},
    {"weight_pack", "bf16", "64,3,27,8,224", "-", "", "C=3 padded to 8, row tail"},
    {"transpose", "fn-fnuz", "3,5,7", "-", "", "E4M3FN -> FNUZ map on 1-byte accesses"},
    {"transpose", "fn-fnuz", "1,64,64", "-", "", "E4M3FN -> FNUZ map on 16-byte accesses"},
    {"transpose", "bf16-fp8q", "2,24,1000", "-", "", "quantizing transpose (qscale argument)"},
    {"weight_pack", "fn-fnuz", "32,20,9,32,384", "-", "", "E4M3FN -> FNUZ weight pack"},
    {"weight_pack", "bf16-fp8q", "64,3,27,16,432", "-", "", "quantizing weight / channel-padding pack"},
    {"conv", "bf16", "2,64,6,18,18,192,3,3,3", "pad=1 bias", "bias need_t need_h need_w m_partial n_tail",
     "default tile, bias, every bounds check"},
    {"conv", "bf16", "2,64,6,18,18,192,3,3,3", "pad=1 splitk=4 bias", "splitk bias", "split-K fp32 atomics"},
    /* (the finalize with bias is a golden row) */
    {"conv_finalize", "bf16", "2,64,6,18,18,192,3,3,3", "pad=1 splitk=4", "", "finalize without bias"},
    {"conv", "bf16", "1,32,5,9,9,64,3,3,3", "pad=1 big_in big_out", "big_in big_out",
     "BIG_IN rebase, BIG_OUT 64-bit stores (forced on a small shape)"},
    {"conv", "bf16", "1,64,8,16,16,128,3,1,1", "pad=1,0,0", "temporal_fast vec4_store need_t",
     "temporal fast path (T,1,1), vec4 store"},
    {"conv", "bf16", "1,64,8,16,16,128,1,1,1", "-", "temporal_fast vec4_store",
     "1x1x1 (generic A loader until the channel-GEMM one exists)"},
    {"conv", "bf16", "1,128,8,16,16,128,1,1,1", "no_fast", "k_full",
     "fast paths off; every tile full, K a whole number of stage groups"},
    {"conv", "bf16", "2,20,5,11,13,40,3,3,3", "pad=1 stride=2", "m_partial n_tail need_h",
     "stride 2, C and K partial"},
    {"conv", "bf16", "1,16,7,12,12,32,3,3,3", "pad=2 dil=2", "need_t need_h need_w", "dilation 2"},
    {"conv", "bf16", "1,64,4,12,12,64,3,3,3", "pad=1 dma=4", "dma4", "4-byte DMA (gfx950's 16-byte default off)"},
    {"conv", "bf16", "2,64,6,18,18,192,3,3,3", "pad=1 tile=128x256 waves=2x4 stages=2", "",
     "tile 128x256 (2 stages fit gfx942)"},
    {"conv", "bf16", "2,64,6,18,18,192,3,3,3", "pad=1 tile=256x128 waves=2x4 stages=2", "",
     "tile 256x128 (2 stages fit gfx942)"},
    {"conv", "bf16", "2,64,6,18,18,192,3,3,3", "pad=1 tile=256x256 waves=2x4 stages=2", "", "tile 256x256 w2x4"},
    {"conv", "bf16", "2,64,6,18,18,192,3,3,3", "pad=1 tile=256x256 waves=4x4 stages=2", "", "tile 256x256 w4x4"},
    {"conv", "bf16", "2,64,6,18,18,192,3,3,3", "pad=1 tile=128x128 waves=4x2", "", "tile 128x128 w4x2"},
    {"conv", "bf16", "2,64,6,18,18,192,3,3,3", "pad=1 tile=64x128 waves=1x4", "", "tile 64x128"},
    {"conv", "bf16", "2,64,6,18,18,192,3,3,3", "pad=1 tile=64x64 waves=2x2", "", "tile 64x64"},
    /* backward weight (kplan_wgrad.h): even column offsets only (no shifted
     * loads), stride 2 phases with db, 64x64 at 2 stages; the dy and x
     * pre-passes of channels-last tensors; a grouped finalize */
    {"conv", "bf16", "2,24,1,6,20,24,1,1,3", "pad=0,0,2 dil=1,1,2 wgrad", "", "wgrad even offsets"},
    {"conv", "bf16", "2,24,1,9,11,20,1,3,3", "pad=0,1,1 stride=1,2,2 wgrad db", "m_partial n_tail", "wgrad stride 2, db"},
    {"conv", "bf16", "2,16,4,8,8,32,3,3,3", "pad=1 wgrad tile=64x64 waves=2x2 stages=2", "", "wgrad 64x64 s2"},
    {"grid_pack", "bf16", "2,16,4,8,8,32,3,3,3", "pad=1 stride=2 layout=ndhwc side=dy", "", "wgrad dy NDHWC gather"},
    {"grid_pack", "bf16", "2,16,4,8,8,32,3,3,3", "pad=1 groups=4 db layout=ndhwc side=x", "", "wgrad grouped x gather"},
    {"wgrad_finalize", "bf16", "2,16,4,8,8,32,3,3,3", "pad=1 groups=4 db", "", "wgrad grouped finalize"},
    /* db where no ones column fits (64*27 columns): dy's pre-pass sums it (LDS tree), the finalize adds the chunks */
    {"grid_pack", "bf16", "2,64,4,6,6,32,3,3,3", "pad=1 db side=dy", "", "wgrad dy pre-pass summing db"},
    {"grid_pack", "f16", "2,64,4,6,6,32,3,3,3", "pad=1 db side=dy", "", "wgrad f16 dy pre-pass summing db"},
    {"wgrad_finalize", "bf16", "2,64,4,6,6,32,3,3,3", "pad=1 db dw=f32", "", "wgrad finalize of db's chunks"},
    /* f16 (the f16 MFMA, f16 conversions) and f32 outputs */
    {"conv", "f16", "2,64,6,18,18,192,3,3,3", "pad=1 bias", "bias need_t need_h need_w m_partial n_tail",
     "f16: default tile, bias, every bounds check, scalar f16 stores"},
    {"conv_finalize", "f16", "2,64,6,18,18,192,3,3,3", "pad=1 splitk=4 bias residual act=gelu", "",
     "f16 finalize: f16 z, the conversion of 4 elements"},
    {"conv", "f16", "1,64,8,16,16,128,3,1,1", "pad=1,0,0 residual act=silu", "temporal_fast vec4_store",
     "f16 vec4 stores with an f16 z"},
    {"conv", "f16", "2,20,5,11,13,40,3,3,3", "pad=1 residual", "m_partial n_tail", "f16 scalar stores, scalar z"},
    {"conv", "f16", "1,64,4,12,12,64,3,3,3", "pad=1 layout=ndhwc residual big_out", "big_out",
     "f16 NDHWC y (vec_ch) 64-bit stores, z"},
    {"conv", "f16", "1,64,4,12,12,64,3,3,3", "pad=1 y=f32 residual", "", "f16 in, f32 y and z"},
    {"conv_finalize", "bf16", "2,64,6,18,18,192,3,3,3", "pad=1 splitk=4 y=f32 residual", "", "f32 finalize"},
    {"conv", "fp8", "1,64,4,12,12,64,3,3,3", "pad=1 y=f32 bias", "bias", "fp8 (gfx950: ping-pong epilogue), f32 y"},
    /* the direct depthwise conv (kplan_direct.h): f16 with M = 2 (vec 4) and a residual into f32 y, M = 5
     * (vec 1, element-wise outputs), a 31-tap 1D row with dilation, bf16 gelu into NDHWC f16-free y */
    {"conv_direct", "f16", "1,16,4,8,8,32,3,3,3", "pad=1 stride=2 groups=16 y=f32 residual", "",
     "direct f16 M=2 stride 2, f32 y, z"},
    {"conv_direct", "bf16", "1,8,1,6,6,40,1,3,3", "pad=0,1,1 groups=8 layout=ndhwc residual act=gelu", "",
     "direct M=5: vec 1, outputs element by element"},
    {"conv_direct", "bf16", "1,16,1,1,70,16,1,1,31", "pad=0,0,30 dil=1,1,2 groups=16", "", "direct 1D 31 taps dil 2"},
    /* output phases (kplan_phase.h): backward data's and the fused upsample's */
    {"conv", "bf16", "1,32,4,9,9,48,3,3,3", "pad=1 stride=1,2,2 bwd=3 bias residual act=silu", "placed bias",
     "backward-data phase: 3x2x2 taps, stores placed at stride 2 (two divisions per row)"},
    {"conv", "bf16", "1,32,4,9,9,48,3,3,3", "pad=1 stride=1,2,2 bwd=0 big_out", "placed big_out",
     "placed stores with 64-bit addresses (the divisions in 32 bits)"},
    {"conv", "f16", "1,32,4,9,9,48,1,4,4", "pad=0,1,1 stride=1,2,2 bwd=1 layout=ndhwc bias", "placed bias",
     "f16 transposed-conv phase, NDHWC dx placed (channel-contiguous stores at strided positions)"},
    {"conv", "bf16", "1,16,3,5,5,24,1,1,1", "stride=1,2,2 bwd=3 bias act=gelu", "placed fill bias",
     "a phase no tap reaches: no K loop, the epilogue of zero"},
    {"weight_pack", "bf16", "1,16,3,9,9,24,3,4,4", "pad=1 stride=2,3,2 dil=1,2,1 bwd=1", "",
     "a phase's weight pack: taps gathered at a step, reversed, K and C swapped"},
    {"conv", "bf16", "1,16,3,5,6,24,3,3,3", "pad=1 up=1,2,2 phase=3 bias", "placed",
     "upsample phase: tap divisor 2, odd stride (placed at 2)"},
    {"conv", "bf16", "1,16,3,5,6,24,1,4,4", "pad=0,1,1 stride=1,2,2 up=1,2,2 phase=0", "",
     "upsample with even stride: one phase, tap divisor 2, dense stores"},
};

/* Each named flag of `flags` must hold in the conv plan. */
static void check_flags(const cj_kplan *p, const char *flags, const char *what) {
  if (!flags || !*flags) return;
  assert_true(p->op == CJ_KOP_CONV);
  const cj_conv_plan *c = &p->u.conv;
  const struct { const char *name; int on; } f[] = {
      {"bias", c->has_bias}, {"splitk", c->splitk > 1}, {"big_in", c->big_in}, {"big_out", c->big_out},
      {"vec4_store", c->vec4_store}, {"temporal_fast", c->temporal_fast}, {"need_t", c->need_t},
      {"need_h", c->need_h}, {"need_w", c->need_w}, {"m_partial", c->m_partial}, {"n_tail", c->n_tail},
      {"k_full", !c->k_partial}, {"dma4", c->dma_bytes == 4}, {"placed", c->g.placed}, {"fill", c->k_tiles == 0}};
  char buf[160];
  snprintf(buf, sizeof buf, "%s", flags);
  char *save = NULL;
  for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
    int known = 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
      if (!strcmp(f[i].name, t)) {
        known = 1;
        if (!f[i].on) fail_msg("[%s]: plan %s does not have %s: the config no longer covers its path", what,
                               p->name, t);
      }
    if (!known) fail_msg("[%s]: unknown flag name %s", what, t);
  }
}

typedef struct spec_list {
  spec *v;
  int n;
} spec_list;

static void add_spec(spec_list *l, const char *op, const char *arch, const char *dtype, const char *shape,
                     const char *opts, const char *flags, const char *why) {
  l->v = realloc(l->v, (size_t)(l->n + 1) * sizeof *l->v);
  assert_non_null(l->v);
  spec *s = &l->v[l->n++];
  memset(s, 0, sizeof *s);
  snprintf(s->op, sizeof s->op, "%s", op);
  snprintf(s->arch, sizeof s->arch, "%s", arch);
  snprintf(s->dtype, sizeof s->dtype, "%s", dtype);
  snprintf(s->shape, sizeof s->shape, "%s", shape);
  snprintf(s->opts, sizeof s->opts, "%s", opts);
  s->flags = flags;
  s->why = why;
}

/* The key columns of the golden table's rows (format: test_golden.c). */
static void add_golden_rows(spec_list *l) {
  FILE *fp = fopen(GOLDEN_PATH, "r");
  if (!fp) fail_msg("%s: cannot open", GOLDEN_PATH);
  char line[1024];
  int header = 0;
  while (fgets(line, sizeof line, fp)) {
    line[strcspn(line, "\r\n")] = 0;
    if (line[0] == '#' || line[0] == 0) continue;
    if (!header) {
      header = 1;
      continue;
    }
    char *f[5], *save = NULL, *p = line;
    int n = 0;
    for (char *t; n < 5 && (t = strtok_r(p, "\t", &save)); p = NULL) f[n++] = t;
    if (n < 5) fail_msg("%s: row '%s' has fewer than 5 key columns", GOLDEN_PATH, line);
    add_spec(l, f[0], f[1], f[2], f[3], f[4], "", NULL);
  }
  fclose(fp);
}

/* ---- what the emulator cannot run --------------------------------------- */

typedef struct miss {
  char mnemonic[48];
  const char *reason; /* the decoder's static reason text */
  char example[160];  /* one full instruction text */
  unsigned count;     /* occurrences over all kernels */
  unsigned nkernels;
  char kernels[512];  /* the first few kernels (spec text) */
} miss;

typedef struct scan {
  const spec *s;
  miss *m;
  int nm;
  cj_mnem_hist *hist; /* this kernel's histogram, for '!' marks */
  char (*bad_names)[48];
  int nbad;
} scan;

static miss *miss_find(scan *c, const char *mn, const char *reason) {
  for (int i = 0; i < c->nm; i++)
    if (!strcmp(c->m[i].mnemonic, mn) && c->m[i].reason == reason) return &c->m[i];
  c->m = realloc(c->m, (size_t)(c->nm + 1) * sizeof *c->m);
  assert_non_null(c->m);
  miss *m = &c->m[c->nm++];
  memset(m, 0, sizeof *m);
  snprintf(m->mnemonic, sizeof m->mnemonic, "%s", mn);
  m->reason = reason;
  return m;
}

static void spec_text(const spec *s, char *out, size_t cap) {
  snprintf(out, cap, "%s %s %s %s %s", s->op, s->arch, s->dtype, s->shape, s->opts);
}

/* Per-kernel: has this mnemonic already been counted for this kernel? */
static int kernel_seen(scan *c, const char *mn) {
  for (int i = 0; i < c->nbad; i++)
    if (!strcmp(c->bad_names[i], mn)) return 1;
  c->bad_names = realloc(c->bad_names, (size_t)(c->nbad + 1) * sizeof *c->bad_names);
  assert_non_null(c->bad_names);
  snprintf(c->bad_names[c->nbad++], 48, "%s", mn);
  return 0;
}

static int check_inst(void *user, const cj_inst_text *it) {
  scan *c = user;
  char mn[48];
  const char *reason;
  if (!it->text) {
    snprintf(mn, sizeof mn, ".long 0x%02x%02x%02x%02x", it->bytes[3], it->bytes[2], it->bytes[1], it->bytes[0]);
    reason = "bytes LLVM does not decode";
  } else {
    emu_inst in;
    emu_decode_text(it->text, it->offset, it->bytes, it->size, &in);
    if (!in.bad) return 0;
    cj_mnemonic_of(it->text, mn, sizeof mn);
    reason = in.bad;
  }
  miss *m = miss_find(c, mn, reason);
  if (!m->example[0]) snprintf(m->example, sizeof m->example, "%s", it->text ? it->text : mn);
  m->count++;
  if (!kernel_seen(c, mn)) {
    m->nkernels++;
    if (m->nkernels <= 3) {
      char st[512];
      spec_text(c->s, st, sizeof st);
      size_t len = strlen(m->kernels);
      snprintf(m->kernels + len, sizeof m->kernels - len, "%s[%s]", len ? ", " : "", st);
    }
  }
  return 0;
}

static int is_bad_name(const scan *c, const char *mn) {
  for (int i = 0; i < c->nbad; i++)
    if (!strcmp(c->bad_names[i], mn)) return 1;
  return 0;
}

static void print_hist(const scan *c, const cj_kplan *p, const cj_mnem_hist *h) {
  char st[512];
  spec_text(c->s, st, sizeof st);
  printf("kernel %s [%s]%s%s: %u instructions, %u mnemonics\n", p->name, st, c->s->why ? " -- " : "",
         c->s->why ? c->s->why : "", h->total, h->n);
  for (uint32_t i = 0; i < h->n; i++)
    printf("  %6u %s%s\n", h->v[i].count, h->v[i].name, is_bad_name(c, h->v[i].name) ? "  !" : "");
}

static int reason_cmp(const void *a, const void *b) {
  const miss *x = a, *y = b;
  int r = strcmp(x->reason, y->reason);
  return r ? r : strcmp(x->mnemonic, y->mnemonic);
}

static void test_shipped_kernels_decode(void **state) {
  (void)state;
  spec_list l = {0};
  add_golden_rows(&l);
  int ngolden = l.n;
  static const char *const arches[] = {"gfx942", "gfx950"};
  for (size_t i = 0; i < sizeof EXTRA / sizeof EXTRA[0]; i++)
    for (int a = 0; a < 2; a++)
      add_spec(&l, EXTRA[i].op, arches[a], EXTRA[i].dtype, EXTRA[i].shape, EXTRA[i].opts, EXTRA[i].flags,
               EXTRA[i].why);
  const char *hv = getenv("CONVJIT_ISA_HISTOGRAM");
  int show = hv && *hv && strcmp(hv, "0") != 0;

  scan c = {0};
  int failed_builds = 0;
  unsigned total = 0;
  double t0 = cj_now_ms();
  for (int i = 0; i < l.n; i++) {
    const spec *s = &l.v[i];
    char st[512];
    spec_text(s, st, sizeof st);
    cj_kplan p;
    cj_built b = {0};
    if (cj_kspec_plan(s->op, s->arch, s->dtype, s->shape, s->opts, &p) != CONVJIT_OK ||
        cj_build_kernel(&p, 0, &b) != CONVJIT_OK) {
      printf("isa coverage: [%s]: %s\n", st, cj_error_text());
      failed_builds++;
      continue;
    }
    check_flags(&p, s->flags, st);
    c.s = s;
    c.nbad = 0;
    assert_int_equal(cj_disasm_kernel(b.co, b.info, check_inst, &c), CONVJIT_OK);
    cj_mnem_hist h;
    assert_int_equal(cj_mnem_hist_kernel(b.co, b.info, &h), CONVJIT_OK);
    total += h.total;
    if (show) print_hist(&c, &p, &h);
    cj_mnem_hist_free(&h);
    cj_built_free(&b);
  }
  printf("isa coverage: %d kernels (%d golden rows), %u instructions, built and scanned in %.0f ms\n", l.n,
         ngolden, total, cj_now_ms() - t0);
  if (c.nm) qsort(c.m, (size_t)c.nm, sizeof *c.m, reason_cmp);
  for (int i = 0; i < c.nm; i++) {
    const miss *m = &c.m[i];
    printf("isa coverage: MISSING %-28s %s; %u times in %u kernels, e.g. \"%s\"; in %s%s\n", m->mnemonic,
           m->reason, m->count, m->nkernels, m->example, m->kernels, m->nkernels > 3 ? ", ..." : "");
  }
  int nm = c.nm;
  free(c.m);
  free(c.bad_names);
  free(l.v);
  if (failed_builds) fail_msg("%d kernel configurations did not build (listed above)", failed_builds);
  if (nm)
    fail_msg("%d instructions of shipped kernels the emulator cannot run (listed above as MISSING): add them to "
             "src/emu/isa_table.h (docs/emulator.md)",
             nm);
}

/* The gate can fail: a mnemonic absent from the table and a malformed
 * operand are both refused by the decoder the scan relies on, and a plain
 * instruction every kernel ends with is accepted. */
static void test_decoder_refuses_unknown(void **state) {
  (void)state;
  static const uint8_t endpgm[4] = {0x00, 0x00, 0x81, 0xbf}; /* llvm-mc -show-encoding */
  emu_inst in;
  emu_decode_text("s_endpgm", 0, endpgm, 4, &in);
  assert_null(in.bad);
  emu_decode_text("v_made_up_b32 v0, v1", 0, NULL, 8, &in);
  assert_non_null(in.bad);
  assert_null(emu_isa_lookup("v_made_up_b32"));
  assert_non_null(emu_isa_lookup("s_endpgm"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decoder_refuses_unknown),
      cmocka_unit_test(test_shipped_kernels_decode),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
