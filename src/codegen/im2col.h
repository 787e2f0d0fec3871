/* im2col: THE address of implicit-GEMM A[m][k] in the channels-last input,
 * for every conv family (bf16 now, fp8 next). One C model, one IR builder.
 *
 * A[m][k]: m = ((n*Do + od)*Ho + oh)*Wo + ow is an output position;
 * k = tap*Cp + c with tap = (t*R + r)*S + s (c fastest, KTRSC). The input
 * element is x[n][id][ih][iw][c] in NDHWC with channel stride x_cs (Cp*groups
 * in the workspace, C*groups in the caller's NDHWC x; a group's x pointer is
 * offset to its first channel), where
 * id = od*stride - pad_lo + t*dil (likewise ih, iw), or, where the plan's
 * tap divisor up is 2 (a nearest 2x upsampled input, kplan_phase.h),
 * id = od*stride + floor((t*dil - pad_lo) / 2): the pad moves into the tap
 * part, one arithmetic shift of the wave-uniform tap (pad_lo is signed
 * there and in phases: cj_conv_in_coord). Taps outside the input,
 * rows m >= N*Do*Ho*Wo, columns k >= k_end and (c_mask: in-place x with
 * C % chunk != 0) channels c >= C read zero; c_mask's check is per lane,
 * so the plan gives it 4-byte loads that never straddle a pixel.
 *
 * IR contract: the row part (n, od, oh, ow: 4 divisions) is built once per
 * A row a thread loads, outside the K loop; the column part (tap, c: by
 * constants) once per K step and thread, shared by all its rows; the
 * voffset is one add, up to three unsigned compares and a select per row.
 * Zero taps get the offset `oob`, past every num_records, so the buffer
 * range check returns zeros (the DMA path has no register to mask in).
 * Offsets are i32 bytes from the origin, computed modulo 2^32: a valid tap's
 * offset is exact as long as it is < 2^32 from the origin (the plan checks).
 *
 * Rebase origin (BIG_IN, docs/original-design.md "Tensors larger than 2^31"): the
 * workgroup's first row m0 gives nbase = m0 / (Do*Ho*Wo) and tbase =
 * max(0, the coordinate of od(m0) at tap 0); offsets are then relative to
 * x[nbase][tbase][0][0][0], where no valid tap of a later row can lie
 * before it (rows only grow from m0). Not rebased: both are constant 0.
 *
 * Pure GEMM A (plan flag pure_gemm_a, a diagnostic that measures what the
 * im2col costs, docs/kernels.md): x is a plain row-major npq x crs matrix,
 * A[m][k] at m*crs + k; the row part is one multiply, the column part one
 * multiply, and the only checks are m < npq and k < k_end.
 */
#ifndef CJ_CODEGEN_IM2COL_H
#define CJ_CODEGEN_IM2COL_H

#include <llvm-c/Core.h>
#include "codegen/irb.h"
#include "codegen/kplan.h"

/* Element offset of A[m][k] in NDHWC x (channel stride x_cs, group 0), or
 * -1 when it reads zero (padding tap, m >= npq or k >= crs). Pad channels
 * (C <= c < Cp) are real (zero) elements of a workspace x and get their
 * offset; of an in-place x (c_mask) they read zero. */
int64_t cj_im2col_ref(const cj_conv_geom *g, uint64_t m, uint64_t k);

typedef struct cj_im2col {
  const cj_conv_geom *g;
  uint32_t eb;            /* element bytes: 2 (bf16) or 1 (fp8) */
  int check_t, check_h, check_w; /* emit this dim's bounds check */
  int mask_rows;          /* rows may be >= npq (forces the time check) */
  int temporal_fast;      /* n == 1, R = S = 1, stride 1, no H/W check: one division per row */
  int pure_gemm;          /* A is a plain npq x crs matrix (diagnostic; see above) */
  LLVMValueRef nbase, tbase; /* i32 rebase origin (constants 0 if none) */
} cj_im2col;

typedef struct cj_im2col_row {
  LLVMValueRef id0, ih0, iw0; /* input coords of tap (0,0,0); id0 huge for masked rows (pure GEMM: id0 = m) */
  LLVMValueRef base;          /* i32 byte offset of x[n][id0][ih0][iw0][0] from the origin */
} cj_im2col_row;

typedef struct cj_im2col_col {
  LLVMValueRef dt, dh, dw;    /* t*dil_d, r*dil_h, s*dil_w */
  LLVMValueRef off;           /* i32 byte offset of (dt, dh, dw, c) */
  LLVMValueRef valid;         /* k < k_end */
} cj_im2col_col;

/* Checks and fast path from a conv plan; origin constant 0. */
void cj_im2col_init(cj_irb *g, cj_im2col *ic, const cj_conv_plan *c, uint32_t eb);
/* BIG_IN: set ic's origin from the workgroup's first row m0 (uniform i32)
 * and return the origin's i64 byte offset from the start of x. */
LLVMValueRef cj_im2col_rebase(cj_irb *g, cj_im2col *ic, LLVMValueRef m0);
void cj_im2col_row_init(cj_irb *g, const cj_im2col *ic, LLVMValueRef m, cj_im2col_row *row);
/* Column k + k_in, where k is the start of an aligned vector chunk (a
 * multiple of the channel vector, so the chunk is inside one tap; k_end is
 * a multiple of it too) and k_in (may be NULL) the lane's offset inside the
 * chunk. Only k is decoded, so when k is wave-uniform the tap arithmetic
 * runs on the scalar unit. */
void cj_im2col_col_init(cj_irb *g, const cj_im2col *ic, LLVMValueRef k, LLVMValueRef k_in, LLVMValueRef k_end,
                        cj_im2col_col *col);
/* The column dk elements after `col` when both lie in one tap and on the
 * same side of k_end (the caller knows: Cp and k_end are multiples of the
 * K step, no c_mask): the same tap and validity, the offset moved by a
 * constant, so a K step decodes its tap once. */
void cj_im2col_col_shift(cj_irb *g, const cj_im2col *ic, const cj_im2col_col *col, uint32_t dk, cj_im2col_col *out);
/* valid ? row.base + col.off : oob */
LLVMValueRef cj_im2col_voffset(cj_irb *g, const cj_im2col *ic, const cj_im2col_row *row,
                               const cj_im2col_col *col, uint32_t oob);

#endif
