/* The conv family's knobs: every forced choice of cj_conv_opts described
 * once (name, fields, domain, help). The kernel-spec parser (kspec.c), the
 * tools' command-line flags (--<name> value) and the tuning database's
 * `knobs` JSON column (cj_tune_knobs_json, src/host/tune_db.c) are
 * generated from this table, so a knob is spelled the same everywhere.
 * Setting a knob checks its syntax only: whether a value is legal for a
 * shape and an arch is the plan init's decision alone. Knobs are tuning
 * choices and test hooks only: a problem property (the shape, the fused
 * epilogue: kplan_epi.h's spec tokens) is never a knob.
 *
 *   K(name, kind, field_a, field_b, lo, hi, tunable, help)
 *   kind    ONE "v", PAIR "AxB" or "A,B" (field_a, field_b), FLAG (no value)
 *   lo..hi  the domain a tuner enumerates (and the help text shows)
 *   tunable 1 for a performance choice, 0 for a test hook
 */
#ifndef CJ_CODEGEN_KPLAN_KNOBS_H
#define CJ_CODEGEN_KPLAN_KNOBS_H

#include <stddef.h>
#include "codegen/kplan.h"

#define CJ_CONV_KNOB_TABLE(K)                                                                              \
  K("tile", PAIR, tile_m, tile_n, 16, 512, 1, "workgroup tile MxN (output positions x output channels)")   \
  K("waves", PAIR, wave_m, wave_n, 1, 16, 1, "wave grid MxN inside the tile")                             \
  K("stages", ONE, stages, stages, 2, 4, 1, "LDS pipeline depth")                                          \
  K("splitk", ONE, splitk, splitk, 1, 64, 1, "K loop split over grid z (1 = never)")                      \
  K("wgm", ONE, wgm, wgm, 1, 64, 1, "grouped-M workgroup order width")                                     \
  K("dma", ONE, dma_bytes, dma_bytes, 4, 16, 1, "bytes per lane of one buffer_load...lds (4 or 16)")      \
  K("load", ONE, load, load, 1, 2, 1, "A/B load path: 1 buffer_load...lds DMA, 2 buffer_load_dwordx4 + ds_write") \
  K("kbytes", ONE, k_bytes, k_bytes, 32, 128, 1, "K bytes of each tile row per LDS stage (32, 64 or 128)")   \
  K("prefetch", ONE, prefetch, prefetch, 1, 2, 1, "multistage operand prefetch across K steps: 1 off, 2 on")  \
  K("sched", ONE, sched, sched, 1, 2, 1, "K-loop schedule: 1 multistage, 2 8-wave half ping-pong (256x256)") \
  K("roll", ONE, roll, roll, 1, 2, 1,                                                                       \
    "multistage DMA loop: 1 S unrolled K steps, 2 one K step per iteration (about 30% less compile time)") \
  K("stage_layout", ONE, stage, stage, 1, 3, 1,                                                              \
    "LDS stage layout: 1 [kq][row][16 B] (a lane per row), 2 row-major swizzled (lanes along a row), "      \
    "3 row-major unswizzled (validation: FlyDSL's bf16 conv stage)")                                        \
  K("big_in", FLAG, force_big_in, force_big_in, 0, 1, 0, "test hook: force the BIG_IN rebase")             \
  K("big_out", FLAG, force_big_out, force_big_out, 0, 1, 0, "test hook: force 64-bit BIG_OUT stores")      \
  K("no_fast", FLAG, no_fast_paths, no_fast_paths, 0, 1, 0, "disable temporal fast path, channel GEMM, vec4") \
  K("pure_gemm_a", FLAG, pure_gemm_a, pure_gemm_a, 0, 1, 0,                                               \
    "test hook (diagnostic): A read as a plain npq x crs matrix, no im2col; not a conv, the API refuses it")

typedef enum cj_knob_kind { CJ_KNOB_ONE = 1, CJ_KNOB_PAIR = 2, CJ_KNOB_FLAG = 3 } cj_knob_kind;

typedef struct cj_knob {
  const char *name;
  cj_knob_kind kind;
  size_t off_a, off_b; /* offsets of the 4-byte fields in cj_conv_opts */
  uint32_t lo, hi;
  int tunable;
  const char *help;
} cj_knob;

const cj_knob *cj_conv_knobs(uint32_t *count);
const cj_knob *cj_conv_knob_find(const char *name, size_t len); /* NULL if none */
/* Stores value (value_len bytes; NULL for a flag) in o. INVALID_ARG as
 * "<what> = <value>: expected ..." for bad syntax or a value past 2^32. */
convjit_status cj_conv_knob_set(cj_conv_opts *o, const cj_knob *k, const char *value, size_t value_len,
                                const char *what);
uint32_t cj_conv_knob_get(const cj_conv_opts *o, const cj_knob *k, int second);
/* 1 when knob k of o holds a 0 (either half of a pair) where its domain
 * starts above 0: a 0 field of cj_conv_opts means "not forced", so a
 * forced 0 (or half of "0x128") would silently run the heuristic's choice.
 * The tools and kernel specs refuse it (cj_conv_knob_zero_why); tuning rows
 * keep 0 as "the plan's default". */
int cj_conv_knob_zero(const cj_conv_opts *o, const cj_knob *k);
/* The refusal's text for k (static storage of the calling thread). */
const char *cj_conv_knob_zero_why(const cj_knob *k);
/* One line per knob for usage text: "  <pre><name><sep>N  help (lo..hi)"
 * (pre "--", sep " " for flags; pre "", sep "=" for kernel specs); keep,
 * when not NULL, picks the knobs a tool takes (cj_conv_knob_tunable: those a
 * tuner varies). */
void cj_conv_knobs_help(cj_strbuf *out, const char *pre, const char *sep, int (*keep)(const cj_knob *k));
int cj_conv_knob_tunable(const cj_knob *k);

#endif
