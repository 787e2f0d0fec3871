/* convjit-emu — run a gfx942/gfx950 code object on convjit's CPU emulator.
 *
 *   convjit-emu CODE_OBJECT                      list its kernels and arguments
 *   convjit-emu --isa                            the instruction subset
 *   convjit-emu CODE_OBJECT --kernel NAME --grid X,Y,Z --block X,Y,Z [--lds BYTES]
 *               --arg NAME=@in.bin | NAME=zeros:BYTES | NAME=42 | NAME=1.5f | NAME=1.5 ...
 *               [--out NAME=out.bin ...] [--stats] [--hazards on|off] [--max-instructions N]
 *               [--arch A] [--json]
 *
 * Everything goes through the public API's experimental emulator section
 * (convjit_emu_module_load ... convjit_emu_launch): this tool is also its
 * worked example. Buffers are emulator allocations; a number's width comes
 * from the kernel's metadata. Exit 0 when the kernel ran; 2 when anything
 * stopped it: a bad option or argument, a bad code object, or the emulator
 * stopping the kernel (bad access, hazard, an instruction outside the
 * subset, a wave past the instruction budget: the message names the
 * instruction, its offset and the wave or lane).
 * Times are EMULATED counts, never GPU measurements. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "convjit/convjit.h"
#include "emu/emu.h"
#include "cli.h"

#define MAX_ARGS 64

typedef struct buf {
  char name[40];
  void *dptr;
  size_t bytes;
} buf;

typedef struct emu_args {
  const char *co_path, *kernel, *arch;
  const char *argv_arg[MAX_ARGS];
  int nargs;
  const char *argv_out[MAX_ARGS];
  int out_arg[MAX_ARGS]; /* the --arg (index into argv_arg) whose buffer each --out writes */
  int nouts;
  uint32_t grid[3], block[3], lds;
  uint64_t max_insts; /* 0: the library's (CONVJIT_EMU_MAX_INSTRUCTIONS, else the default) */
  int have_grid, have_block, stats, json, hazards, isa;
} emu_args;

static void usage(FILE *f) {
  fprintf(f,
          "usage: convjit-emu CODE_OBJECT                       list the kernels, their arguments and whether\n"
          "                                                     each fits the emulator's instruction subset\n"
          "       convjit-emu --isa                             the instructions the emulator runs\n"
          "       convjit-emu CODE_OBJECT --kernel NAME --grid X,Y,Z --block X,Y,Z [--lds BYTES]\n"
          "                   --arg NAME=VALUE ... [--out NAME=FILE ...] [--stats] [--hazards on|off]\n"
          "                   [--max-instructions N] [--arch %s] [--json]\n"
          "  --grid     WORKGROUPS per dimension (hipModuleLaunchKernel's gridDim); X, X,Y or X,Y,Z\n"
          "  --block    threads per workgroup; X, X,Y or X,Y,Z (missing ones are 1)\n"
          "  --lds      dynamic LDS bytes after the kernel's static LDS (sharedMemBytes; default 0)\n"
          "  --arg      NAME=@FILE      a buffer holding FILE's bytes\n"
          "             NAME=zeros:N    a zeroed buffer of N bytes\n"
          "             NAME=42, -7, 0x2a   an integer (its width is the argument's metadata size)\n"
          "             NAME=1.5f       a 4-byte float;  NAME=1.5  an 8-byte double\n"
          "             NAME is the metadata .name or #I (the I-th explicit argument)\n"
          "  --out      NAME=FILE: after the run, the bytes of buffer NAME into FILE\n"
          "  --stats    per-class instruction counts (EMULATED) and the LDS bank model\n"
          "  --hazards  the hazard checker: on (default) stops at the first hazard; off\n"
          "  --max-instructions N  instructions one wave may execute before the run stops (a kernel that\n"
          "             never ends); default $CONVJIT_EMU_MAX_INSTRUCTIONS, else %llu\n"
          "  --arch     the emulator's arch (default: the code object's); must match it\n"
          "  --json     one JSON object on stdout\n"
          "exit: 0 the kernel ran, 2 anything stopped it (bad option, argument or code object, or the\n"
          "      emulator stopping the kernel: the message names the instruction, offset and lane)\n",
          cli_arch_names('|'), (unsigned long long)CONVJIT_EMU_MAX_INSTRUCTIONS_DEFAULT);
}

/* NAME=@FILE or NAME=zeros:BYTES: the value of an --arg that makes a buffer. */
static int is_buffer_value(const char *v) { return v[0] == '@' || !strncmp(v, "zeros:", 6); }

static int parse_dim3(const char *opt, const char *text, uint32_t out[3]) {
  int64_t v[3] = {1, 1, 1};
  int n = cli_list(opt, text, v, 1, 3, 1, 1024 * 1024 * 1024);
  if (n < 0) return -1;
  for (int i = 0; i < 3; i++) out[i] = (uint32_t)v[i];
  return 0;
}

static int parse_args(int argc, char **argv, emu_args *a) {
  memset(a, 0, sizeof *a);
  a->hazards = 1;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = 1;
    if (!strcmp(o, "--isa")) { a->isa = 1; takes = 0; }
    else if (!strcmp(o, "--stats")) { a->stats = 1; takes = 0; }
    else if (!strcmp(o, "--json")) { a->json = 1; takes = 0; }
    else if (!strcmp(o, "--help") || !strcmp(o, "-h")) { usage(stdout); exit(0); }
    else if (o[0] != '-' || !o[1]) {
      if (a->co_path) return cli_fail("CODE_OBJECT", o, "given twice (one code object per run)");
      a->co_path = o;
      takes = 0;
    } else if (!v) {
      return cli_fail(o, "", "needs a value");
    } else if (!strcmp(o, "--kernel")) {
      if (a->kernel) return cli_fail(o, v, "given twice (one kernel per run)");
      a->kernel = v;
    } else if (!strcmp(o, "--arch")) a->arch = v;
    else if (!strcmp(o, "--grid")) { if (parse_dim3(o, v, a->grid)) return -1; a->have_grid = 1; }
    else if (!strcmp(o, "--block")) { if (parse_dim3(o, v, a->block)) return -1; a->have_block = 1; }
    else if (!strcmp(o, "--lds")) {
      uint64_t x;
      if (cli_u64(o, v, 0, UINT32_MAX, &x)) return -1;
      a->lds = (uint32_t)x;
    } else if (!strcmp(o, "--max-instructions")) {
      if (cli_u64(o, v, 1, UINT64_MAX, &a->max_insts)) return -1;
    } else if (!strcmp(o, "--hazards")) {
      if (strcmp(v, "on") && strcmp(v, "off")) return cli_fail(o, v, "expected on or off");
      a->hazards = !strcmp(v, "on");
    } else if (!strcmp(o, "--arg") || !strcmp(o, "--out")) {
      int is_arg = !strcmp(o, "--arg");
      if (!strchr(v, '=') || v[0] == '=') return cli_fail(o, v, "expected NAME=VALUE");
      if ((is_arg ? a->nargs : a->nouts) == MAX_ARGS) return cli_fail(o, v, "more than 64 given");
      if (is_arg) a->argv_arg[a->nargs++] = v;
      else a->argv_out[a->nouts++] = v;
    } else {
      fprintf(stderr, "convjit-emu: unknown option %s\n", o);
      return -1;
    }
    i += takes;
  }
  if (a->isa) return a->co_path ? cli_fail("--isa", a->co_path, "takes no code object") : 0;
  if (!a->co_path) return cli_fail("CODE_OBJECT", "", "missing: the ELF file to load");
  int run = a->kernel || a->have_grid || a->have_block || a->nargs || a->nouts;
  if (run && !a->kernel) return cli_fail("--kernel", "", "missing: which kernel to run");
  if (run && !a->have_grid) return cli_fail("--grid", "", "missing: workgroups per dimension");
  if (run && !a->have_block) return cli_fail("--block", "", "missing: threads per workgroup");
  for (int i = 0; i < a->nouts; i++) { /* each --out names a buffer an --arg makes */
    const char *o = a->argv_out[i], *eq = strchr(o, '=');
    a->out_arg[i] = -1;
    for (int j = 0; j < a->nargs && a->out_arg[i] < 0; j++) {
      const char *g = a->argv_arg[j], *ge = strchr(g, '=');
      if (ge - g == eq - o && !strncmp(g, o, (size_t)(eq - o)) && is_buffer_value(ge + 1)) a->out_arg[i] = j;
    }
    if (a->out_arg[i] < 0) return cli_fail("--out", o, "no --arg gives a buffer (@FILE or zeros:BYTES) of that name");
    if (!eq[1]) return cli_fail("--out", o, "expected NAME=FILE");
  }
  return 0;
}

/* ---- output helpers ----------------------------------------------------------- */

static cj_strbuf g_js; /* the --json object while it is built */

static int fail(const emu_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const emu_args *a, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "convjit-emu: %s\n", msg);
  if (a->json) {
    cj_sb_free(&g_js);
    cj_sb_printf(&g_js, "{\"tool\":\"convjit-emu\",\"ok\":false,\"error\":");
    cli_json_str(&g_js, msg);
    printf("%s}\n", g_js.s);
    cj_sb_free(&g_js);
  }
  return 2;
}

static int read_file(const char *path, uint8_t **data, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 1 << 16, len = 0;
  uint8_t *p = malloc(cap);
  for (size_t r; p && (r = fread(p + len, 1, cap - len, f)) > 0;) {
    len += r;
    if (len == cap) {
      uint8_t *q = realloc(p, cap *= 2);
      if (!q) { free(p); p = NULL; }
      else p = q;
    }
  }
  int err = ferror(f) || !p;
  fclose(f);
  if (err) { free(p); return -1; }
  *data = p;
  *n = len;
  return 0;
}

/* ---- --isa ------------------------------------------------------------------ */

static int print_isa(const emu_args *a) {
  int n = 0;
  while (emu_isa_mnemonic(n, NULL)) n++;
  if (a->json) cj_sb_printf(&g_js, "{\"tool\":\"convjit-emu\",\"ok\":true,\"count\":%d,\"isa\":[", n);
  for (int i = 0; i < n; i++) {
    emu_class cls;
    const char *name = emu_isa_mnemonic(i, &cls);
    if (a->json) cj_sb_printf(&g_js, "%s{\"mnemonic\":\"%s\",\"class\":\"%s\"}", i ? "," : "", name,
                              emu_class_name(cls));
    else printf("%-40s %s\n", name, emu_class_name(cls));
  }
  if (a->json) { printf("%s]}\n", g_js.s); cj_sb_free(&g_js); }
  else printf("# %d mnemonics (base names; _e32/_e64/_sdwa/_dpp encodings of each included)\n", n);
  return 0;
}

/* ---- listing ---------------------------------------------------------------- */

static int list_kernels(const emu_args *a, convjit_emu_module *mod) {
  int nk = 0;
  convjit_emu_module_kernel_count(mod, &nk);
  if (a->json) cj_sb_printf(&g_js, "{\"tool\":\"convjit-emu\",\"ok\":true,\"kernels\":[");
  for (int i = 0; i < nk; i++) {
    convjit_emu_kernel_info ki = {.struct_size = sizeof ki};
    if (convjit_emu_module_kernel_info(mod, i, &ki) != CONVJIT_OK) return fail(a, "%s", convjit_last_error());
    if (a->json) {
      cj_sb_printf(&g_js, "%s{\"name\":", i ? "," : "");
      cli_json_str(&g_js, ki.name);
      cj_sb_printf(&g_js, ",\"target\":\"%s\",\"kernarg_bytes\":%u,\"static_lds_bytes\":%u,\"max_lds_bytes\":%u,"
                   "\"max_block_threads\":%u,\"vgprs\":%u,\"agprs\":%u,\"sgprs\":%u,\"scratch_bytes\":%u,"
                   "\"instructions\":%u,\"unsupported\":%u,\"args\":[", ki.target, ki.kernarg_bytes,
                   ki.static_lds_bytes, ki.max_lds_bytes, ki.max_block_threads, ki.vgprs, ki.agprs, ki.sgprs,
                   ki.scratch_bytes, ki.instructions, ki.unsupported);
    } else {
      printf("kernel %s (%s)\n", ki.name, ki.target);
      printf("  resources  vgpr %u  agpr %u  sgpr %u  scratch %u B/lane  static LDS %u B (arch limit %u)  "
             "block <= %u threads\n", ki.vgprs, ki.agprs, ki.sgprs, ki.scratch_bytes, ki.static_lds_bytes,
             ki.max_lds_bytes, ki.max_block_threads);
      printf("  arguments  %u explicit, %u hidden; kernarg segment %u bytes\n", ki.explicit_args,
             ki.nargs - ki.explicit_args, ki.kernarg_bytes);
    }
    for (uint32_t j = 0; j < ki.nargs; j++) {
      convjit_emu_arg_info ai = {.struct_size = sizeof ai};
      if (convjit_emu_kernel_arg(mod, i, j, &ai) != CONVJIT_OK) return fail(a, "%s", convjit_last_error());
      if (a->json) {
        cj_sb_printf(&g_js, "%s{\"name\":", j ? "," : "");
        cli_json_str(&g_js, ai.name);
        cj_sb_printf(&g_js, ",\"value_kind\":\"%s\",\"offset\":%u,\"size\":%u,\"hidden\":%s}", ai.value_kind,
                     ai.offset, ai.size, ai.hidden ? "true" : "false");
      } else if (!ai.hidden) {
        printf("    #%-2d %-24s %-16s offset %3u size %u\n", ai.explicit_index, ai.name[0] ? ai.name : "(unnamed)",
               ai.value_kind, ai.offset, ai.size);
      } else {
        printf("        %-24s %-16s offset %3u size %u  (hidden: filled by the launch)\n", "", ai.value_kind,
               ai.offset, ai.size);
      }
    }
    if (a->json) cj_sb_printf(&g_js, "],\"unsupported_list\":[");
    else if (ki.scratch_bytes)
      printf("  subset     NO: the kernel uses %u bytes of scratch per lane, which the emulator does not model\n",
             ki.scratch_bytes);
    else if (ki.unsupported == 0)
      printf("  subset     yes: all %u instructions are in the emulator's subset\n", ki.instructions);
    else
      printf("  subset     NO: %u of %u instructions are outside it (a launch stops if it reaches one):\n",
             ki.unsupported, ki.instructions);
    for (uint32_t j = 0; j < ki.unsupported; j++) {
      convjit_emu_inst_info ii = {.struct_size = sizeof ii};
      if (convjit_emu_kernel_unsupported(mod, i, j, &ii) != CONVJIT_OK) return fail(a, "%s", convjit_last_error());
      if (a->json) {
        cj_sb_printf(&g_js, "%s{\"offset\":%" PRIu64 ",\"text\":", j ? "," : "", ii.offset);
        cli_json_str(&g_js, ii.text);
        cj_sb_printf(&g_js, ",\"reason\":");
        cli_json_str(&g_js, ii.reason);
        cj_sb_printf(&g_js, "}");
      } else {
        printf("    entry+0x%-5" PRIx64 " %-48s %s\n", ii.offset, ii.text, ii.reason);
      }
    }
    if (a->json) cj_sb_printf(&g_js, "]}");
  }
  if (a->json) { printf("%s]}\n", g_js.s); cj_sb_free(&g_js); }
  return 0;
}

/* ---- a run ------------------------------------------------------------------ */

/* The metadata argument NAME (".name" or "#I") of kernel k, or -1. */
static int find_arg(convjit_emu_module *mod, int k, uint32_t nargs, const char *name, convjit_emu_arg_info *out) {
  for (uint32_t j = 0; j < nargs; j++) {
    convjit_emu_arg_info ai = {.struct_size = sizeof ai};
    if (convjit_emu_kernel_arg(mod, k, j, &ai) != CONVJIT_OK || ai.hidden) continue;
    char idx[16];
    snprintf(idx, sizeof idx, "#%d", ai.explicit_index);
    if (!strcmp(ai.name, name) || !strcmp(idx, name)) { *out = ai; return (int)j; }
  }
  return -1;
}

/* One --arg NAME=VALUE into a typed value (a buffer is allocated and
 * filled). The API then checks it against the argument's value kind. */
static int make_arg(const emu_args *a, convjit_context *ctx, convjit_emu_module *mod, int k, uint32_t nargs,
                    const char *spec, char *name, convjit_emu_arg *out, buf *b) {
  const char *eq = strchr(spec, '=');
  size_t nl = (size_t)(eq - spec);
  if (nl >= 40) return fail(a, "--arg '%s': the name is longer than 39 characters", spec);
  memcpy(name, spec, nl);
  name[nl] = 0;
  const char *v = eq + 1;
  memset(out, 0, sizeof *out);
  out->name = name;
  b->dptr = NULL;
  if (is_buffer_value(v)) {
    uint8_t *data = NULL;
    size_t n = 0;
    if (v[0] == '@') {
      if (read_file(v + 1, &data, &n)) return fail(a, "--arg %s: cannot read %s: %s", name, v + 1, strerror(errno));
      if (n == 0) { free(data); return fail(a, "--arg %s: %s is empty: a buffer needs at least one byte", name, v + 1); }
    } else {
      uint64_t x;
      if (cli_u64("--arg", v + 6, 1, (uint64_t)1 << 40, &x)) return 2;
      n = (size_t)x;
    }
    snprintf(b->name, sizeof b->name, "%s", name);
    b->bytes = n;
    convjit_status st = convjit_malloc(ctx, n, &b->dptr);
    if (st == CONVJIT_OK && data) st = convjit_memcpy_h2d(ctx, b->dptr, data, n, NULL);
    if (st == CONVJIT_OK && !data) st = convjit_memset(ctx, b->dptr, 0, n, NULL);
    free(data);
    if (st != CONVJIT_OK) return fail(a, "--arg %s: %s", name, convjit_last_error());
    out->type = CONVJIT_EMU_ARG_PTR;
    out->ptr = b->dptr;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  const char *digits = v + (v[0] == '-');
  long long iv = strtoll(v, &end, digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') ? 16 : 10);
  if (*v && end && !*end && errno == 0) {
    convjit_emu_arg_info ai;
    int j = find_arg(mod, k, nargs, name, &ai);
    out->type = (j >= 0 && ai.size == 8) ? CONVJIT_EMU_ARG_I64 : CONVJIT_EMU_ARG_I32;
    out->i = iv;
    return 0;
  }
  errno = 0;
  double dv = strtod(v, &end);
  if (*v && end != v && errno == 0 && (!strcmp(end, "f") || !*end)) {
    out->type = *end ? CONVJIT_EMU_ARG_F32 : CONVJIT_EMU_ARG_F64;
    out->f = dv;
    return 0;
  }
  return fail(a, "--arg '%s': VALUE must be @FILE, zeros:BYTES, an integer (42, -7, 0x2a), 1.5f or 1.5", spec);
}

/* bufs[j] is --arg j's buffer (every one was made: parse_args matched each
 * --out with a buffer --arg, out_arg). */
static int write_outputs(const emu_args *a, convjit_context *ctx, const buf *bufs) {
  if (a->json) cj_sb_printf(&g_js, ",\"outputs\":[");
  for (int i = 0; i < a->nouts; i++) {
    const char *spec = a->argv_out[i], *eq = strchr(spec, '=');
    const buf *b = &bufs[a->out_arg[i]];
    uint8_t *host = malloc(b->bytes);
    if (!host) return fail(a, "--out %s: out of memory for %zu bytes", spec, b->bytes);
    if (convjit_memcpy_d2h(ctx, host, b->dptr, b->bytes, NULL) != CONVJIT_OK) {
      free(host);
      return fail(a, "--out %s: %s", spec, convjit_last_error());
    }
    FILE *f = fopen(eq + 1, "wb");
    int ok = f && fwrite(host, 1, b->bytes, f) == b->bytes;
    if (f && fclose(f)) ok = 0;
    free(host);
    if (!ok) return fail(a, "--out %s: cannot write %s: %s", b->name, eq + 1, strerror(errno));
    if (a->json) {
      cj_sb_printf(&g_js, "%s{\"name\":", i ? "," : "");
      cli_json_str(&g_js, b->name);
      cj_sb_printf(&g_js, ",\"file\":");
      cli_json_str(&g_js, eq + 1);
      cj_sb_printf(&g_js, ",\"bytes\":%zu}", b->bytes);
    } else {
      printf("wrote %s: %zu bytes to %s\n", b->name, b->bytes, eq + 1);
    }
  }
  if (a->json) cj_sb_printf(&g_js, "]");
  return 0;
}

static void print_stats(const emu_args *a, const convjit_emu_stats *s) {
  if (a->json) {
    cj_sb_printf(&g_js, ",\"stats\":{\"total\":%" PRIu64 ",\"salu\":%" PRIu64 ",\"valu\":%" PRIu64 ",\"vmem\":%" PRIu64
                 ",\"lds\":%" PRIu64 ",\"mfma\":%" PRIu64 ",\"waitcnt\":%" PRIu64 ",\"barrier\":%" PRIu64
                 ",\"smem\":%" PRIu64 ",\"branch\":%" PRIu64 ",\"workgroups\":%" PRIu64 ",\"waves\":%" PRIu64
                 ",\"emulated_weighted_cycles_max_wave\":%" PRIu64 ",\"lds_accesses\":%" PRIu64
                 ",\"lds_cycles\":%" PRIu64 ",\"lds_conflict_free_cycles\":%" PRIu64 ",\"lds_max_degree\":%u"
                 ",\"host_ms\":%.3f}", s->total, s->salu, s->valu, s->vmem, s->lds, s->mfma, s->waitcnt, s->barrier,
                 s->smem, s->branch, s->workgroups, s->waves, s->weighted_cycles_max_wave, s->lds_accesses,
                 s->lds_cycles, s->lds_conflict_free_cycles, s->lds_max_degree, s->host_ms);
    return;
  }
  printf("ran %s: %" PRIu64 " workgroups, %" PRIu64 " waves, %" PRIu64 " instructions (host %.1f ms)\n", s->kernel,
         s->workgroups, s->waves, s->total, s->host_ms);
  if (!a->stats) return;
  printf("  EMULATED instruction counts, all waves (per wave min..max):\n");
  const char *nm[] = {"salu", "valu", "vmem", "lds", "mfma", "waitcnt", "barrier", "smem", "branch"};
  const uint64_t all[] = {s->salu, s->valu, s->vmem, s->lds, s->mfma, s->waitcnt, s->barrier, s->smem, s->branch};
  const convjit_emu_counts *lo = &s->wave_min, *hi = &s->wave_max;
  const uint64_t mn[] = {lo->salu, lo->valu, lo->vmem, lo->lds, lo->mfma, lo->waitcnt, lo->barrier, lo->smem, lo->branch};
  const uint64_t mx[] = {hi->salu, hi->valu, hi->vmem, hi->lds, hi->mfma, hi->waitcnt, hi->barrier, hi->smem, hi->branch};
  for (int i = 0; i < 9; i++)
    printf("    %-8s %12" PRIu64 "   (%" PRIu64 "..%" PRIu64 ")\n", nm[i], all[i], mn[i], mx[i]);
  printf("  EMULATED weighted issue count of the slowest wave: %" PRIu64 " (a count, not a GPU time)\n",
         s->weighted_cycles_max_wave);
  if (s->lds_accesses)
    printf("  LDS bank model (MODELLED, %u banks): %" PRIu64 " accesses, %" PRIu64 " cycles, conflict-free %" PRIu64
           ", worst %u-way\n", s->lds_banks, s->lds_accesses, s->lds_cycles, s->lds_conflict_free_cycles,
           s->lds_max_degree);
}

static int run_kernel(const emu_args *a, convjit_context *ctx, convjit_emu_module *mod) {
  int k = -1;
  if (convjit_emu_kernel_find(mod, a->kernel, &k) != CONVJIT_OK) return fail(a, "%s", convjit_last_error());
  convjit_emu_kernel_info ki = {.struct_size = sizeof ki};
  if (convjit_emu_module_kernel_info(mod, k, &ki) != CONVJIT_OK) return fail(a, "%s", convjit_last_error());
  static buf bufs[MAX_ARGS];
  static char names[MAX_ARGS][40];
  convjit_emu_arg args[MAX_ARGS];
  int rc = 0, n = 0;
  for (; n < a->nargs && !rc; n++) rc = make_arg(a, ctx, mod, k, ki.nargs, a->argv_arg[n], names[n], &args[n], &bufs[n]);
  if (!rc) {
    convjit_emu_launch_options o = convjit_emu_launch_options_default();
    memcpy(o.grid, a->grid, sizeof o.grid);
    memcpy(o.block, a->block, sizeof o.block);
    o.dynamic_lds_bytes = a->lds;
    o.hazards = a->hazards;
    o.max_instructions = a->max_insts;
    if (convjit_emu_launch(mod, k, &o, args, (size_t)a->nargs) != CONVJIT_OK)
      rc = fail(a, "%s%s", convjit_last_error(),
                strstr(convjit_last_error(), "instruction budget") ? " (here: --max-instructions N)" : "");
  }
  convjit_emu_stats s = {.struct_size = sizeof s};
  if (!rc && convjit_emu_last_launch_stats(ctx, &s) != CONVJIT_OK) rc = fail(a, "%s", convjit_last_error());
  if (!rc && a->json) {
    cj_sb_printf(&g_js, "{\"tool\":\"convjit-emu\",\"kernel\":");
    cli_json_str(&g_js, ki.name);
    cj_sb_printf(&g_js, ",\"ok\":true");
  }
  if (!rc) print_stats(a, &s);
  if (!rc) rc = write_outputs(a, ctx, bufs);
  if (!rc && a->json) { printf("%s}\n", g_js.s); cj_sb_free(&g_js); }
  for (int i = 0; i < n; i++) if (bufs[i].dptr) convjit_free(ctx, bufs[i].dptr);
  return rc;
}

int main(int argc, char **argv) {
  cli_set_tool("convjit-emu");
  emu_args a;
  if (parse_args(argc, argv, &a)) {
    usage(stderr);
    return 2;
  }
  if (a.isa) return print_isa(&a);
  uint8_t *co = NULL;
  size_t n = 0;
  if (read_file(a.co_path, &co, &n)) return fail(&a, "cannot read %s: %s", a.co_path, strerror(errno));
  char arch[16] = "";
  if (convjit_emu_code_object_arch(co, n, arch, sizeof arch) != CONVJIT_OK) {
    free(co);
    return fail(&a, "%s: %s", a.co_path, convjit_last_error());
  }
  if (a.arch && strcmp(a.arch, arch)) {
    free(co);
    return fail(&a, "%s is a %s code object: --arch %s cannot run it", a.co_path, arch, a.arch);
  }
  convjit_context_options opt = convjit_context_options_default();
  opt.device = CONVJIT_DEVICE_EMU;
  opt.arch = arch;
  opt.disable_disk_cache = 1;
  convjit_context *ctx = NULL;
  convjit_emu_module *mod = NULL;
  int rc;
  if (convjit_context_create(&opt, &ctx) != CONVJIT_OK) rc = fail(&a, "%s", convjit_last_error());
  else if (convjit_emu_module_load(ctx, co, n, &mod) != CONVJIT_OK)
    rc = fail(&a, "%s: %s", a.co_path, convjit_last_error());
  else rc = a.kernel ? run_kernel(&a, ctx, mod) : list_kernels(&a, mod);
  free(co);
  convjit_emu_module_unload(mod);
  convjit_context_destroy(ctx);
  return rc;
}
