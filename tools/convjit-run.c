/* convjit-run — the main job: one op through the public API on a device,
 * checked against the CPU reference.
 *
 *   convjit-run [--device auto|emu|hip] [--op conv|transpose] [--kind fwd|bwd-data|bwd-weight] [--arch ARCH]
 *               [--dtype bf16|fp8] [--shape ...] [--stride ..] [--pad ..] [--dilation ..]
 *               [--bias] [--check] [--json] [--verbose] [--no-disk-cache] [--seed N]
 *               [--tile MxN] [--waves MxN] [--stages S] [--splitk K] [--wgm W] [--stats]
 *               [--residual [--beta B]] [--act A] [--alpha S|k]
 *               [--stream-chunks LIST]
 *
 * With no arguments: a video-VAE decoder layer scaled down for the emulator
 * (default_conv: 256 -> 256 channels, causal 3x3x3 conv + bias), first in
 * fp8 (the arch's native format), then in bf16, each checked.
 * Each job prints a summary (print_summary): op, shape, dtypes, arch,
 * device, one line per kernel (registers, LDS, spills, compile ms, cache
 * source), total compile ms and cache hits, the kernel time only when it is
 * EMULATED (a cycle model, not a measurement), and the check's verdict with
 * its max error and the reference's tolerance. --verbose adds every
 * kernel's plan fields (convjit_plan_describe) and launch geometry, the
 * plan-creation time and, on HIP, the event-timed kernel time; --stats
 * (emulator only) each kernel's EMULATED dynamic instruction counts by
 * class. Exit: 0 pass (or ran, without --check), 1 check failed, 2 bad
 * arguments, 3 convjit error.
 * (Internally the run_* functions return 0, RUN_BAD_ARGS or RUN_USAGE, or a convjit status.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "run.h"
#include "tool_data.h"

/* "gfx942 E4M3FNUZ, gfx950 E4M3FN": each arch's native fp8 format, from the arch table. */
static const char *native_fp8_formats(void) {
  static char s[128];
  int n = 0;
  const cj_arch *const *l = cj_arch_list(&n);
  size_t len = 0;
  for (int i = 0; i < n && len < sizeof s; i++)
    len += (size_t)snprintf(s + len, sizeof s - len, "%s%s %s", i ? ", " : "", l[i]->name,
                            cli_fp8_dtype(l[i]) == CONVJIT_DTYPE_FP8_E4M3FNUZ ? "E4M3FNUZ" : "E4M3FN");
  return s;
}

static void run_usage(FILE *f) {
  cj_strbuf kh = {0};
  cj_conv_knobs_help(&kh, "--", " ", NULL);
  fprintf(f,
          "usage: convjit-run [--device auto|emu|hip] [--op conv|transpose] [--arch %s]\n"
          "                   [--dtype bf16|f16|fp8] [--y-dtype bf16|f16|f32] [--shape LIST] [--stride LIST] [--pad LIST]\n"
          "                   [--dilation LIST] [--bias] [--check] [--json] [--verbose] [--no-disk-cache] [--seed N]\n"
          "                   [--layout ncdhw|ndhwc|X,Y] [--groups G]\n"
          "                   [--<knob> V]... [--stats]\n"
          "                   [--residual [--beta B]] [--act A] [--alpha S|k] [--stream-chunks LIST]\n"
          "                   [--kind %s] [--output-padding LIST] [--upsample LIST]\n"
          "                   [--dw-dtype f32] [--nondeterministic]\n"
          "  --shape   conv: N,C,D,H,W,K,T,R,S (3D) | N,C,H,W,K,R,S (2D) | N,C,W,K,S (1D)\n"
          "            of the forward problem whatever the kind (x N,C,D,H,W; w K,C,T,R,S), as MIOpen's\n"
          "            directions; --stride, --pad, --dilation too\n"
          "            transpose: N,C,S (S = D*H*W)\n"
          "  --pad     one value per spatial dim (both sides) or 2x that (all low, then all high)\n"
          "  --layout  conv: x and y NCDHW (default) or NDHWC (channels-last, read/written in place);\n"
          "            X,Y for mixed (ndhwc,ncdhw)\n"
          "  --groups  conv: grouped conv, G divides C and K (w is K x C/G x T x R x S)\n"
          "  --dtype   conv: x and w bf16 (y bf16), f16 (y f16), or fp8 = the arch's native E4M3\n"
          "            format (%s; y bf16); transpose: the elements\n"
          "            moved unchanged (fp8 = E4M3FN bytes)\n"
          "  --y-dtype conv: y (and a residual z) in f32 instead (no final rounding), or the\n"
          "            inputs' own 16-bit type (the default)\n"
          "  --fp8-format fn|fnuz   conv fp8 tensors in that format instead (fn on gfx942: mapped\n"
          "            exactly by the pre-pass; fnuz on gfx950 is refused)\n"
          "  --x-scale S, --w-scale S   fp8 per-tensor dequantization scales (y = acc*S_x*S_w + bias)\n"
          "  --alpha S|k  fp8: the per-tensor dequantization factor alpha = S (as --x-scale S), or k:\n"
          "            per-output-channel weight scales too (random, args.scale)\n"
          "  --beta B      z's factor (default 1)\n"
          "  --act %s   activation applied last: y = act(alpha*conv + beta*z + bias)\n"
          "  --kind    fwd (default): y from x; bwd-data: dx from a dy of the forward output's shape\n"
          "            (the transposed conv's forward); bwd-weight: dw [and db with --bias] from x and dy,\n"
          "            run twice, the two dw bit-identical; the check runs the kind's own reference\n"
          "  --dw-dtype f32   bwd-weight: dw in f32 (default: the inputs' dtype)\n"
          "  --nondeterministic   bwd-weight: fp32 atomics across the reduction blocks (the runs may differ)\n"
          "  --output-padding LIST   bwd-data: the transposed conv's output_padding, one value per dim\n"
          "  --upsample LIST   fwd: nearest-upsample x by 1 or 2 per dim inside the conv (no upsampled\n"
          "            tensor in memory)\n"
          "  --stream-chunks LIST   causal streaming: run the conv over chunks of LIST frames (sum = D,\n"
          "            pad (T-1, 0) in time), each with x_prev = the previous chunk's last T-1 frames,\n"
          "            and require the result bit-identical to the whole-tensor conv\n"
          "  --device  auto (default): HIP if a device is present, else the emulator (arch: the\n"
          "            HIP device's; on the emulator --arch, default gfx950)\n"
          "  --json    one JSON object instead of the text summary\n"
          "  --verbose also every kernel's plan fields and launch geometry\n"
          "  --stats   emulator only: dynamic instruction counts by class per kernel\n"
          "  no shape: the default job, always checked: a video-VAE decoder layer scaled down\n"
          "            (1,256,5,8,8 -> 256, 3x3x3, causal pad 2/0,1/1,1/1, bias) in fp8, then\n"
          "            in bf16 (--dtype picks one); --op transpose: that layer's activation transpose\n"
          "conv knobs (src/codegen/kplan_knobs.h; forced in every kernel the plan builds):\n%s",
          cli_arch_names('|'), cli_kind_names(), native_fp8_formats(), cli_act_names(), kh.s ? kh.s : "");
  fprintf(f, "the fused epilogue's flag ops (the library's table):\n");
  cli_epi_usage(f, 12);
  cj_sb_free(&kh);
}

static int parse_args(int argc, char **argv, run_args *a) {
  cli_set_tool("convjit-run");
  memset(a, 0, sizeof *a);
  a->device = "auto";
  a->op = "conv";
  a->arch = NULL;
  a->dtype = NULL; /* bf16 unless given; with no shape, both (main) */
  a->seed = 1;
  a->groups = 1;
  uint64_t u = 0;
  int po;
  cli_args c = cli_args_of(argc, argv);
  while (cli_next(&c)) {
    const char *o = c.opt, *v = NULL;
    int eo = cli_epi_opt(&c, &a->epi); /* --bias, --residual, --beta, --act: the problem's, not knobs */
    if (eo) { if (eo < 0) return -1; }
    else if (!strcmp(o, "--device")) { CLI_VALUE(&c, v); a->device = v; }
    else if (!strcmp(o, "--op")) { CLI_VALUE(&c, v); a->op = v; a->op_given = 1; }
    else if (!strcmp(o, "--arch")) { CLI_VALUE(&c, v); a->arch = v; }
    else if (!strcmp(o, "--dtype")) { CLI_VALUE(&c, v); a->dtype = v; }
    else if (!strcmp(o, "--y-dtype")) { CLI_VALUE(&c, v); a->y_dtype = v; }
    else if (!strcmp(o, "--shape")) {
      CLI_VALUE(&c, v);
      if ((a->nshape = cli_list(o, v, a->shape, 1, 9, 0, CLI_MAX_EXTENT)) < 0) return -1;
    } else if (!strcmp(o, "--stride")) {
      CLI_VALUE(&c, v);
      if ((a->nstride = cli_list(o, v, a->stride, 1, 3, 0, CLI_MAX_EXTENT)) < 0) return -1;
    } else if (!strcmp(o, "--dilation")) {
      CLI_VALUE(&c, v);
      if ((a->ndil = cli_list(o, v, a->dil, 1, 3, 0, CLI_MAX_EXTENT)) < 0) return -1;
    } else if (!strcmp(o, "--pad")) {
      CLI_VALUE(&c, v);
      if ((a->npad = cli_list(o, v, a->pad, 1, 6, 0, CLI_MAX_EXTENT)) < 0) return -1;
    } else if (!strcmp(o, "--seed")) { CLI_VALUE(&c, v); if (cli_u64(o, v, 0, UINT64_MAX, &a->seed)) return -1; }
    else if (!strcmp(o, "--fp8-format")) {
      CLI_VALUE(&c, v);
      if (strcmp(v, "fn") && strcmp(v, "fnuz")) return cli_fail(o, v, "fn (E4M3FN) or fnuz (E4M3FNUZ)");
      a->fp8_format = v;
    } else if (!strcmp(o, "--x-scale") || !strcmp(o, "--w-scale")) {
      CLI_VALUE(&c, v);
      if (cli_double(o, v, 0.0, 1e30, o[2] == 'x' ? &a->x_scale : &a->w_scale)) return -1;
    }
    else if (!strcmp(o, "--groups")) { CLI_VALUE(&c, v); if (cli_u64(o, v, 1, 65535, &u)) return -1; a->groups = (int64_t)u; }
    else if (!strcmp(o, "--layout")) { CLI_VALUE(&c, v); if (cli_layout(o, v, &a->x_ndhwc, &a->y_ndhwc)) return -1; }
    else if (!strcmp(o, "--alpha")) {
      CLI_VALUE(&c, v);
      if (!strcmp(v, "k")) a->epi.flags |= CJ_EB(SCALE);
      else if (cli_double(o, v, 0.0, 1e30, &a->x_scale)) return -1;
    } else if (!strcmp(o, "--stream-chunks")) {
      CLI_VALUE(&c, v);
      int64_t ch[32];
      int n = cli_list(o, v, ch, 1, 32, 1, CLI_MAX_EXTENT);
      if (n < 0) return -1;
      for (int j = 0; j < n; j++) a->stream_chunks[j] = (int)ch[j];
      a->nchunks = n;
    }
    else if ((po = cli_problem_opt(&c, &a->prob)) != 0) { if (po < 0) return -1; }
    else if (!strcmp(o, "--check")) a->check = 1;
    else if (!strcmp(o, "--json")) a->json = 1;
    else if (!strcmp(o, "--stats")) a->stats = 1;
    else if (!strcmp(o, "--verbose")) a->verbose = 1;
    else if (!strcmp(o, "--no-disk-cache")) a->no_disk = 1;
    else if (!strcmp(o, "--help") || !strcmp(o, "-h")) { run_usage(stdout); exit(0); }
    else { /* the conv knobs (kplan_knobs.h), tunable choices and test hooks */
      int k = cli_knob_opt(&c, &a->forced, 0);
      if (k < 0) return -1;
      if (!k) return cli_unknown(&c);
    }
  }
  if (strcmp(a->op, "conv") && strcmp(a->op, "transpose")) {
    fprintf(stderr, "convjit-run: --op %s: conv or transpose\n", a->op);
    return -1;
  }
  if (a->prob.kind != CONVJIT_CONV_FORWARD && strcmp(a->op, "conv")) {
    fprintf(stderr, "convjit-run: --kind %s: a conv's (--op conv)\n", cj_conv_kind_of(a->prob.kind)->tool);
    return -1;
  }
  if (a->y_dtype && tool_kind_output(a->prob.kind) == CJ_TENSOR_DW) { /* a weight gradient's dtype: --dw-dtype */
    fprintf(stderr, "convjit-run: --y-dtype %s: kind %s writes %s (its dtype: --dw-dtype) and reads %s in --dtype\n",
            a->y_dtype, cj_conv_kind_of(a->prob.kind)->tool, cj_tensor_field(CJ_TENSOR_DW),
            cj_tensor_field(CJ_TENSOR_DY));
    return -1;
  }
  convjit_conv_desc dt = convjit_conv_desc_default(); /* the names checked once, here (cli.c) */
  if (a->dtype && cli_conv_dtypes(a->dtype, a->y_dtype, NULL, &dt)) return -1;
  if (a->y_dtype && strcmp(a->op, "conv")) {
    fprintf(stderr, "convjit-run: --y-dtype %s: a conv option (--op is %s)\n", a->y_dtype, a->op);
    return -1;
  }
  if (strcmp(a->device, "auto") && strcmp(a->device, "emu") && strcmp(a->device, "hip")) {
    fprintf(stderr, "convjit-run: --device %s: auto, emu or hip\n", a->device);
    return -1;
  }
  return 0;
}

/* The default job: the 3x3x3 conv of a video-VAE decoder's 256-channel
 * stage (docs/original-design.md "Real video-VAE layers": causal temporal padding, 2
 * frames before and none after, zero padding 1 in H and W, bias), scaled
 * down for the emulator: 5 frames (a causal VAE's 1 + 4k) of 8x8 instead of
 * up to 240 frames of 320x180. Channels and filter are the real layer's;
 * M = 320 output positions leave a partial 256-row tile. */
static const char k_default_title[] = "a video-VAE decoder layer (causal 3x3x3 conv, 256 channels), scaled down";

static void default_conv(run_args *a) {
  static const int64_t s[9] = {1, 256, 5, 8, 8, 256, 3, 3, 3};
  memcpy(a->shape, s, sizeof s);
  a->nshape = 9;
  static const int64_t pad[6] = {2, 1, 1, 0, 1, 1}; /* lo D,H,W, then hi */
  memcpy(a->pad, pad, sizeof pad);
  a->npad = 6;
  a->epi.flags |= CJ_EB(BIAS);
  a->title = k_default_title;
}

/* --op transpose with no shape: that layer's activation transpose. */
static void default_transpose(run_args *a) {
  a->shape[0] = 1; a->shape[1] = 256; a->shape[2] = 5 * 8 * 8; /* N, C, D*H*W */
  a->nshape = 3;
  a->title = "the default layer's activation transpose";
}

int main(int argc, char **argv) {
  run_args a;
  if (parse_args(argc, argv, &a)) {
    run_usage(stderr);
    return 2;
  }
  /* Jobs: the one asked for; with no shape, the default layer (or its
   * transpose), in fp8 and then bf16 unless --dtype picks one. */
  enum { MAXJOB = 2 };
  run_args ja[MAXJOB];
  int njobs = 1;
  if (a.nshape == 0) {
    a.check = 1; /* the default job always checks itself */
    if (!strcmp(a.op, "conv")) default_conv(&a);
    else default_transpose(&a);
    /* fp8 first where the kind's dtype table takes fp8 x */
    if (!a.dtype && !(cj_conv_kind_dtype_mask(a.prob.kind, 0) & (CJ_DT(FP8_E4M3FN) | CJ_DT(FP8_E4M3FNUZ))))
      a.dtype = "bf16";
    if (!a.dtype) {
      ja[1] = a;
      ja[1].dtype = "bf16";
      a.dtype = "fp8";
      njobs = 2;
    }
  }
  if (!a.dtype) a.dtype = "bf16";
  ja[0] = a;
  convjit_context_options o = convjit_context_options_default();
  o.arch = a.arch;
  o.disable_disk_cache = a.no_disk;
  o.device = !strcmp(a.device, "emu") ? CONVJIT_DEVICE_EMU : !strcmp(a.device, "hip") ? CONVJIT_DEVICE_HIP
                                                                                         : CONVJIT_DEVICE_AUTO;
  convjit_context *ctx = NULL;
  convjit_status st = convjit_context_create(&o, &ctx);
  if (st != CONVJIT_OK && o.device == CONVJIT_DEVICE_AUTO) {
    if (!a.json) {
      printf("no HIP device: running on the emulator\n");
      if (a.verbose) printf("  (%s)\n", convjit_last_error());
    }
    o.device = CONVJIT_DEVICE_EMU;
    st = convjit_context_create(&o, &ctx);
  }
  if (st != CONVJIT_OK) {
    fprintf(stderr, "convjit-run: %s: %s\n", convjit_status_string(st), convjit_last_error());
    return 3;
  }
  convjit_context_info ci = {.struct_size = sizeof ci};
  convjit_context_get_info(ctx, &ci);
  if (!a.json && !a.no_disk && !ci.disk_cache) /* refused or unusable: the library's log line says why */
    printf("disk cache: off (memory cache only; CONVJIT_LOG=error says why)\n");
  if (a.stats && !ci.emulated) {
    fprintf(stderr, "convjit-run: --stats: instruction counts exist only on the emulator (--device emu)\n");
    convjit_context_destroy(ctx);
    return 2;
  }
  for (int i = 0; i < njobs; i++) ja[i].emulated = ci.emulated;
  run_result jr[MAXJOB];
  convjit_plan *jp[MAXJOB] = {NULL, NULL};
  int rc = 0, ran = 0;
  memset(jr, 0, sizeof jr);
  for (int i = 0; i < njobs && rc == 0; i++, ran++) {
    if (!strcmp(ja[i].op, "conv") && tool_kind_output(ja[i].prob.kind) == CJ_TENSOR_DW) /* by the output's role */
      rc = run_bwd_weight(ctx, ci.arch, &ja[i], &jp[i], &jr[i]);
    else if (!strcmp(ja[i].op, "conv")) rc = run_conv(ctx, ci.arch, &ja[i], &jp[i], &jr[i]);
    else rc = run_transpose(ctx, &ja[i], &jp[i], &jr[i]);
  }
  int all_pass = 1, any_checked = 0;
  for (int i = 0; i < ran; i++) {
    any_checked |= jr[i].checked;
    if (jr[i].checked && !jr[i].pass) all_pass = 0;
  }
  if (rc == 0) {
    if (a.json) {
      cj_strbuf obj = {0}, kern = {0}, objs = {0};
      for (int i = 0; i < njobs; i++) {
        obj.len = 0;
        run_json_job(&ja[i], &ci, jp[i], &jr[i], &obj, &kern);
        cj_sb_printf(&objs, "%s%s", i ? "," : "", obj.s ? obj.s : "");
      }
      if (njobs == 1) {
        printf("%s\n", objs.s ? objs.s : "{}");
      } else {
        double mabs = 0, mrel = 0, cms = 0;
        int hits = 0;
        for (int i = 0; i < njobs; i++) {
          mabs = jr[i].max_abs > mabs ? jr[i].max_abs : mabs;
          mrel = jr[i].max_rel > mrel ? jr[i].max_rel : mrel;
          cms += jr[i].compile_ms;
          hits += jr[i].cache_hits;
        }
        printf("{\"checked\":%s,\"pass\":%s,\"max_abs_err\":%.6g,\"max_rel_err\":%.6g,\"compile_ms\":%.3f,"
               "\"cache_hits\":%d,\"kernels\":[%s],\"jobs\":[%s]}\n",
               any_checked ? "true" : "false", any_checked ? (all_pass ? "true" : "false") : "null", mabs, mrel, cms,
               hits, kern.s ? kern.s : "", objs.s ? objs.s : "");
      }
      cj_sb_free(&obj);
      cj_sb_free(&kern);
      cj_sb_free(&objs);
    } else {
      for (int i = 0; i < njobs; i++) {
        printf("%s== job %d of %d: %s %s%s%s ==\n", i ? "\n" : "", i + 1, njobs, ja[i].dtype, ja[i].op,
               ja[i].title ? ": " : "", ja[i].title ? ja[i].title : "");
        run_print_summary(&ja[i], &ci, jp[i], &jr[i]);
      }
      if (njobs > 1 && any_checked) printf("\noverall: %s\n", all_pass ? "PASS" : "FAIL");
    }
  }
  for (int i = 0; i < MAXJOB; i++) convjit_plan_destroy(jp[i]);
  convjit_context_destroy(ctx);
  if (rc == RUN_USAGE) run_usage(stderr);
  if (rc == RUN_BAD_ARGS || rc == RUN_USAGE) return 2; /* bad arguments (printed) */
  if (rc) return 3;       /* a convjit error (printed) */
  return any_checked && !all_pass ? 1 : 0;
}
