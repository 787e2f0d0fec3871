/* Plan fields of the layout family (transpose, weight pack). Included by
 * kplan.h only; kernels in layout.c, plans in kplan_layout.c.
 *
 * Transpose: x NCDHW -> y NDHWC, seen per sample as [C][S] -> [S][C] with
 * S = D*H*W. One work-group of 256 threads moves one 64(c) x 64(s) tile
 * through LDS: loads run along S (coalesced in x), stores along C
 * (coalesced in y). Grid = (c_tiles * s_tiles, 1, N), c tiles fastest.
 *
 * Weight pack: w KCTRS -> wp KTRSC, C zero-padded to c_pad, each of the K
 * rows row_elems long (>= trs*c_pad; tail zero). One thread per output
 * element; runs once per weight, so simple beats fast.
 *
 * Both kernels take (x, y) — plus the by-value fp32 QSCALE in the
 * quantizing mode — and bake every shape constant (plans are per shape). Preconditions: x and y are distinct, 16-byte aligned allocations
 * of exactly the tensor's bytes or more.
 */
#ifndef CJ_CODEGEN_KPLAN_LAYOUT_H
#define CJ_CODEGEN_KPLAN_LAYOUT_H

#include <stdint.h>
#include "arch/arch.h"
#include "util/cj.h"

#define CJ_TR_TILE 64      /* tile edge in elements (c and s) */

/* What a layout kernel does to each element on its way (the conv
 * pre-passes, docs/api.md "fp8 formats"):
 *   COPY      bytes moved unchanged
 *   FN_FNUZ   fp8 E4M3FN bytes -> the same bits read as E4M3FNUZ (half the
 *             value: the conv folds the factor 2 into its alpha) with the
 *             only codes that differ mapped: 0x80 (-0) -> 0x00, 0x7F/0xFF
 *             (NaN) -> 0x80 (the FNUZ NaN)
 *   QUANT     bf16 -> fp8 in the arch's format: fp8(fl32(x * qscale)), RNE,
 *             saturated to +-sat_max, NaN -> NaN; qscale (= fl32(1/s)) is a
 *             by-value fp32 argument, so one kernel serves every scale */
typedef enum cj_prep_mode { CJ_PREP_COPY = 0, CJ_PREP_FN_FNUZ = 1, CJ_PREP_QUANT = 2 } cj_prep_mode;
#define CJ_TR_THREADS 256  /* 4 waves: 16 KiB tile moves in 1-16 passes */

typedef struct cj_transpose_plan {
  uint32_t elem_bytes; /* of x (and of the LDS tile): 2 = bf16, 1 = fp8 */
  uint32_t out_bytes;  /* of y: elem_bytes, or 1 when cvt */
  /* 1: bf16 x -> fp8 y in the arch's format (gfx942 E4M3FNUZ, gfx950 OCP
   * E4M3FN), RNE, finite values clamped to +-sat_max first because
   * v_cvt_pk_fp8_f32 does not saturate (docs/isa-notes.md §2); NaN stays NaN. */
  uint32_t cvt;
  uint32_t sat_max;    /* 240 / 448 when cvt, else 0 */
  uint32_t qscale;     /* cvt: 1 = multiply by the QSCALE argument first (CJ_PREP_QUANT) */
  uint32_t fn_map;     /* 1: fp8 E4M3FN x -> E4M3FNUZ y (CJ_PREP_FN_FNUZ) */
  uint32_t widen;      /* 1: bf16 x -> fp32 y, 2: f16 x -> fp32 y (exact; out_bytes 4), in the store phase */
  uint64_t n, c, s;    /* per sample [C][S] -> [S][C] */
  uint32_t tile;       /* CJ_TR_TILE */
  uint32_t c_tiles, s_tiles; /* ceil(c/tile), ceil(s/tile): grid.x = their product */
  /* Widest power-of-two access (bytes, <= 16) dividing a row of x (S*eb) /
   * of y (C*out_bytes): an aligned access then never straddles a row end, so a lane
   * is wholly in or out of range and 16 B vectors are used whenever C, S
   * allow (1 B / 2 B element accesses at worst: any C, S is correct). */
  uint32_t load_bytes;
  uint32_t store_bytes;
  /* 1 when x (the larger side) has >= 2^31 bytes (so possibly elements): 32-bit
   * buffer offsets from the tensor start would overflow, so each block
   * rebases its x and y resources at its tile origin (64-bit, uniform) and
   * every lane offset is tile-local (< 64 rows * row bytes < 2^31). */
  uint32_t big;
  /* LDS row pitch in bytes (= 64*eb): no padding; bank conflicts are
   * avoided by a 16-byte-chunk XOR swizzle instead (see layout.c). */
  uint32_t lds_pitch;
} cj_transpose_plan;

typedef struct cj_wpack_plan {
  uint32_t elem_bytes;        /* of the input: 2 = bf16, 1 = fp8 */
  uint32_t out_bytes;         /* of the output: elem_bytes, or 1 for CJ_PREP_QUANT */
  uint32_t mode;              /* cj_prep_mode */
  uint32_t sat_max;           /* CJ_PREP_QUANT: the arch's largest finite fp8 */
  uint32_t k, c, trs, c_pad;  /* w[K][C][TRS] */
  uint32_t row_elems;         /* packed row length (elements) */
  uint32_t per_thread;        /* output elements per thread (1) */
  /* Backward data (bwd = 1): one output phase's weights (kplan_phase.h),
   * K and C swapped and the phase's taps reversed: row = gi*cg + cl (a dx
   * channel), tap j = (jt, jr, js) of jtap[], channel ki < c (= kg, dy's
   * per group) reads w[gi*kg + ki][cl][tf[0] - jt*ts[0]][..][..] of the
   * forward weight K x cg x src[0] x src[1] x src[2]. */
  uint32_t bwd;
  uint32_t groups, cg;        /* groups; dx channels per group (rows = groups*cg = k) */
  uint32_t src[3];            /* the forward filter T, R, S */
  uint32_t jtap[3];           /* the phase's taps per dim (trs = their product) */
  uint32_t tf[3], ts[3];      /* forward tap of phase tap j: tf - j*ts */
  uint32_t generic;           /* 1: k, c, trs, c_pad, row_elems are u32 arguments (GEOM, in that order; the
                                 fields above are 0): one kernel for every shape, the async fallback's pack */
} cj_wpack_plan;

struct cj_kplan; /* kplan.h includes this header before defining it */

/* Fills p for a transpose of n samples of [c][s] elements of elem_bytes.
 * CONVJIT_ERR_INVALID_ARG (field and value named) for zero or overflowing
 * sizes, elem_bytes not 1 or 2, arch NULL; CONVJIT_ERR_UNSUPPORTED when the
 * launch grid or a tile's span exceeds what the kernel can address. */
convjit_status cj_kplan_transpose_init(struct cj_kplan *p, const cj_arch *arch,
                                       uint32_t elem_bytes, uint64_t n, uint64_t c, uint64_t s);
/* The same transpose reading bf16 and writing fp8 (cvt = 1): the pre-pass
 * for callers that hold bf16 activations and run an fp8 conv. */
convjit_status cj_kplan_transpose_cvt_init(struct cj_kplan *p, const cj_arch *arch, uint64_t n, uint64_t c,
                                           uint64_t s);
/* The same transpose of 16-bit x writing fp32 y (widen: 1 bf16, 2 f16;
 * exact): the direct depthwise kernel's weight pack (kplan_direct.h wf32). */
convjit_status cj_kplan_transpose_widen_init(struct cj_kplan *p, const cj_arch *arch, uint32_t widen, uint64_t n,
                                             uint64_t c, uint64_t s);
/* Fills p for packing a K x C x TRS weight into K rows of row_elems. */
convjit_status cj_kplan_wpack_init(struct cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes,
                                   uint32_t k, uint32_t c, uint32_t trs, uint32_t c_pad,
                                   uint32_t row_elems);
/* The conv pre-passes: the transpose / weight pack with an element mode
 * (elem_bytes is the input's: 2 for CJ_PREP_QUANT, 1 for CJ_PREP_FN_FNUZ).
 * QUANT plans take a third argument, QSCALE (fp32 by value). */
convjit_status cj_kplan_transpose_prep_init(struct cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes,
                                            cj_prep_mode mode, uint64_t n, uint64_t c, uint64_t s);
convjit_status cj_kplan_wpack_prep_init(struct cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes,
                                        cj_prep_mode mode, uint32_t k, uint32_t c, uint32_t trs, uint32_t c_pad,
                                        uint32_t row_elems);
/* One backward-data phase's weight pack (bwd = 1 above): forward weight of
 * groups*kg rows x cg x src taps -> groups*cg rows of row_elems, taps
 * jtap[] (tap j of dim i = forward tap tf[i] - j*ts[i]), kg channels padded
 * to k_pad, in the element mode. */
convjit_status cj_kplan_wpack_bwd_init(struct cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes,
                                       cj_prep_mode mode, uint32_t groups, uint32_t kg, uint32_t cg,
                                       const uint32_t src[3], const uint32_t jtap[3], const uint32_t tf[3],
                                       const uint32_t ts[3], uint32_t k_pad, uint32_t row_elems);
/* The shape-generic weight pack of an element mode: the sizes are the
 * last five arguments (k, c, trs, c_pad, row_elems, as u32), the launch
 * shape nominal (the caller's step sets grid.x = ceil(k*row_elems / 256)).
 * The caller keeps both tensors below 2 GiB, as the plan init above checks. */
convjit_status cj_kplan_wpack_generic_init(struct cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes,
                                           cj_prep_mode mode);

#endif
