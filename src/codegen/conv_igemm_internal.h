/* The implicit-GEMM conv builder's shared state and its files' entry points:
 * internal to src/codegen/conv_igemm*.c (cj_conv_build in conv_igemm.c is
 * the one function the rest of convjit calls, through the op table).
 *
 *   conv_igemm.c             cj_conv_build: ids, buffer resources, per-thread
 *                            DMA rows and operand offsets, the schedule table
 *   conv_igemm_kstep.c       what every schedule's K step is made of: the LDS
 *                            stage layout, DMA / VGPR loads, ds_writes, MFMA
 *                            operand reads, the MFMA call, loop-carried phis
 *   conv_igemm_multistage.c  K-loop schedule "multistage" (and its VGPR load path)
 *   conv_igemm_pingpong.c    K-loop schedule "ping-pong" (8 waves, fp8 on gfx950)
 *   conv_igemm_store.c       the epilogue: accumulators through the ops to y
 *                            (or the split-K workspace)
 *   conv_igemm_wgrad.c       the backward-weight GEMM's operand setup and its
 *                            partial-tile store (kplan_wgrad.h)
 *
 * A schedule (cj_cv_schedules[] in conv_igemm.c) takes the cj_cv that
 * cj_conv_build has set up and leaves the accumulators in v->acc. */
#ifndef CJ_CODEGEN_CONV_IGEMM_INTERNAL_H
#define CJ_CODEGEN_CONV_IGEMM_INTERNAL_H

#include "codegen/codegen.h"
#include "codegen/epilogue.h"
#include "codegen/im2col.h"
#include "codegen/irb.h"

#define CJ_CONV_MAX_FRAG 64
#define CJ_CONV_MAX_KQ 8 /* 16-byte K chunks per stage row: 128 fp8 */
#define CJ_CV_CUR 4       /* cj_cv.lds_a slot: the rolled loop's current stage */
#define CJ_CV_NEXT 5      /* ... and the other stage its step touches */

/* How one thread's DMA instructions of one operand (A or B) map onto the
 * [kq][row][16 B] stage: instruction i loads tile row row[i % period] at
 * K column kt*tile_k + kq[i]*chunk + kthr + kin (kthr: the thread's kq
 * chunk, a multiple of chunk; kin: its lane's place inside the chunk). */
typedef struct cj_cv_map {
  uint32_t rows, ndma, period, nrow;
  uint32_t kq[CJ_CONV_MAX_DMA];
  LLVMValueRef row[CJ_CONV_MAX_DMA]; /* tile-local row of each distinct slot */
  LLVMValueRef kthr;                 /* the thread's chunk offset (multiple of chunk, often 0) */
  LLVMValueRef kin;                  /* the lane's element offset inside its 16-byte chunk */
  /* Row-major swizzled stage (cj_cv_map_init's rm; conv_igemm_kstep.c):
   * kq and kthr are 0; per row slot j the lane's logical element offset in
   * its row (kin_r[j]), and on the VGPR path whether its 16-byte piece is
   * stored with its 8-byte halves swapped (swap[j], i1, NULL when never);
   * such a piece is written as two 8-byte halves at the per-lane offsets
   * wr_sw[j][h] (cj_cv_write_lane: loop-invariant, no per-step select) */
  int rm;
  LLVMValueRef kin_r[CJ_CONV_MAX_DMA];
  LLVMValueRef swap[CJ_CONV_MAX_DMA];
  LLVMValueRef wr_sw[CJ_CONV_MAX_DMA][2];
} cj_cv_map;

typedef struct cj_cv {
  cj_irb *g;
  const cj_kplan *p;
  const cj_conv_plan *c;
  const cj_mfma_row *mf;               /* the plan's MFMA row */
  LLVMBuilderRef b;
  LLVMValueRef tid, wave, lane, wm, wn;
  /* stage s of A (B): lds_a[s]. The rolled multistage loop (plan.roll,
   * conv_igemm_multistage.c) keeps all stages of A (B) in one LDS global,
   * lds_a[s] constant offsets into it and slots CJ_CV_CUR / CJ_CV_NEXT
   * the iteration's stage and the next as SGPR offsets; in its body the
   * DMAs carry scope md_dma and the operand reads md_rd, each noalias the
   * other (declared per iteration), else both NULL */
  LLVMValueRef lds_a[6], lds_b[6];
  LLVMValueRef lds_all_a, lds_all_b;
  LLVMMetadataRef md_dma, md_rd;
  LLVMValueRef xr, wr;
  cj_im2col ic;
  cj_cv_map ma, mb;
  cj_im2col_row arow[CJ_CONV_MAX_DMA];
  LLVMValueRef brow[CJ_CONV_MAX_DMA];  /* byte offset of the weight row */
  LLVMValueRef bok[CJ_CONV_MAX_DMA];   /* output channel < K */
  LLVMValueRef kt0, k_end;             /* first K step, end of the split (elements) */
  LLVMValueRef m0, n0;
  LLVMValueRef grp;                    /* group index (grid y; constant 0 when ungrouped) */
  LLVMValueRef opa, opb;               /* per-lane MFMA operand offsets (cj_cv_lane_off) */
  /* row-major stage: per (K slice, run) operand lane offsets (one where the
   * swizzle leaves the slices constant offsets apart: rm_nop 1) */
  LLVMValueRef opa_rm[2 * CJ_CONV_MAX_KQ], opb_rm[2 * CJ_CONV_MAX_KQ];
  uint32_t rm_nop;
  int rm_fold_a;                       /* A's kin_r folded into arow[].base (one column per step) */
  LLVMValueRef wave_off;               /* wave*64*dma_bytes: the DMAs' M0 base (pinned per stage in the loop) */
  LLVMValueRef wave_off0;              /* ... as computed before the loop */
  LLVMValueRef wra, wrb;               /* VGPR path: per-lane ds_write offsets of A and B instruction 0 */
  /* channel GEMM (1x1x1 on NCDHW x): per A instruction, the byte offset of
   * x[n][0][p] for its position chunk, that chunk's validity, its k row */
  LLVMValueRef cg_base[CJ_CONV_MAX_DMA], cg_ok[CJ_CONV_MAX_DMA], cg_krow[CJ_CONV_MAX_DMA];
  /* backward weight (conv_igemm_wgrad.c): the reduction block (grid z);
   * per A slot the row's byte offset from the workgroup's origin and its
   * row < K check; per B slot the 2-byte shift (0 or 16 bits) of an odd
   * column (brow then holds its dword-aligned offset) */
  LLVMValueRef zb;
  LLVMValueRef aoff[CJ_CONV_MAX_DMA], aok[CJ_CONV_MAX_DMA], bsh[CJ_CONV_MAX_DMA];
  LLVMValueRef acc[CJ_CONV_MAX_FRAG];
  LLVMTypeRef opty, accty;             /* MFMA operand and accumulator types */
  /* ping-pong schedule: LDS [half][parity], the thread's logical chunk,
   * per-run lane offsets of the operands, this step's A column */
  LLVMValueRef pa[2][2], pb[2][2];
  LLVMValueRef pp_chunk, pp_opa[2], pp_opb[2];
  cj_im2col_col pp_col;
  /* One tap decode per group of S K steps (cj_cv_group): while grp_base
   * is set, cj_cv_issue loads step grp_base + grp_d, and when the group's
   * steps lie in one tap its A columns are constant shifts of the column
   * decoded first for that base (grp_col, at step grp_base + grp_d0, for
   * instruction 0); grp_at is the base it was decoded for */
  LLVMValueRef grp_base, grp_at;
  uint32_t grp_d, grp_d0;
  cj_im2col_col grp_col;
} cj_cv;

/* One K slice's operands (mfma_k deep) of a wave: its mi_m A and mi_n B
 * fragments, a[0 .. mi_m-1] then b. */
typedef struct cj_cv_ops {
  LLVMValueRef v[2 * CJ_CONV_MAX_FRAG];
} cj_cv_ops;

/* conv_igemm_kstep.c */
int cj_cv_rolled(const cj_cv *v);
void cj_cv_tag_read(cj_cv *v, LLVMValueRef ld);
/* rm: the row-major swizzled stage (forward A and B; conv_igemm_kstep.c),
 * else [kq][row][16 B] (channel GEMM's A, the backward-weight GEMM) */
void cj_cv_map_init(cj_cv *v, cj_cv_map *mp, uint32_t rows, uint32_t ndma, int rm);
/* Whether an operand of `rows` rows and ndma loads per thread takes the
 * row-major stage: its rows per thread (ndma) stay within the
 * [kq][row][16 B] map's or 4 (512 threads or fewer; 1 at 1024) */
int cj_cv_rm_ok(const cj_cv *v, uint32_t rows, uint32_t ndma);
/* Row-major stage: the per-(slice, run) operand lane offsets of a wave
 * whose rows start at wbase, as opaque(offset + address of lds0); returns
 * how many (v->rm_nop) */
uint32_t cj_cv_rm_lane_offs(cj_cv *v, LLVMValueRef wbase, LLVMValueRef lds0, LLVMValueRef *out);
/* The row-major stage's swizzle xb(row) in bytes (the plan's row bytes,
 * MFMA read width, DMA width and the arch's banks): the ping-pong's too */
LLVMValueRef cj_cv_rm_swz(cj_cv *v, LLVMValueRef row);
/* The operand lane offsets of map mp's stage: op_rm[] (row-major) or *op
 * (opaque(cj_cv_lane_off + address of lds0)) */
void cj_cv_op_offs(cj_cv *v, const cj_cv_map *mp, uint32_t rows, LLVMValueRef wbase, LLVMValueRef lds0,
                   LLVMValueRef *op, LLVMValueRef *op_rm);
/* Loads per thread and K step: one per A and B instruction, and on the
 * backward-weight GEMM with odd column offsets one more dword per B one. */
uint32_t cj_cv_loads(const cj_cv *v);
/* The loads of K step kt: DMAs into LDS stage st (out NULL), or (VGPR
 * path) buffer loads into out[0 .. a_dma) (A) and out[a_dma ..) (B). */
void cj_cv_issue(cj_cv *v, LLVMValueRef kt, uint32_t st, LLVMValueRef *out);
/* The next cj_cv_issue loads step base + d of an S-aligned group of S
 * steps (base NULL: a step of its own; non-NULL only where
 * cj_cv_group_ok); see cj_cv.grp_base. */
void cj_cv_group(cj_cv *v, LLVMValueRef base, uint32_t d);
/* Whether cj_cv_group applies: the S steps of an aligned group lie in one
 * tap (Cp % (S*tile_k) == 0, x's columns unmasked, an im2col A: not wgrad,
 * not channel GEMM), on the prefetching multistage loop, not upsampled
 * (docs/kernels.md "im2col": elsewhere some kernels simulated slower). */
int cj_cv_group_ok(const cj_cv *v);
LLVMValueRef cj_cv_lane_off(cj_cv *v, uint32_t rows, LLVMValueRef wbase);
LLVMValueRef cj_cv_write_lane(cj_cv *v, cj_cv_map *mp, LLVMValueRef lds0);
void cj_cv_write(cj_cv *v, uint32_t st, LLVMValueRef *vals); /* VGPR path: one K step's registers -> stage st */
LLVMValueRef cj_cv_load_runs(cj_cv *v, LLVMValueRef q[2]);
LLVMValueRef cj_cv_mfma(cj_cv *v, LLVMValueRef a, LLVMValueRef b, LLVMValueRef acc);
LLVMValueRef cj_cv_read_a(cj_cv *v, uint32_t st, uint32_t i, uint32_t kk);
LLVMValueRef cj_cv_read_b(cj_cv *v, uint32_t st, uint32_t j, uint32_t kk);
void cj_cv_read_slice(cj_cv *v, uint32_t st, uint32_t kk, cj_cv_ops *o);
void cj_cv_fence_sched(cj_cv *v);
void cj_cv_compute(cj_cv *v, uint32_t st); /* every K slice of stage st: reads, then MFMAs */
void cj_cv_loop_phis(cj_cv *v, cj_irb_loop *lp, LLVMValueRef *val, LLVMValueRef *phis, uint32_t n,
                     const char *name);
void cj_cv_acc_loop_begin(cj_cv *v, cj_irb_loop *lp, LLVMValueRef *phis, uint32_t trip);
void cj_cv_acc_loop_end(cj_cv *v, cj_irb_loop *lp, LLVMValueRef *phis);

/* conv_igemm_multistage.c */
void cj_cv_kloop_multistage(cj_cv *v);

/* conv_igemm_pingpong.c: its LDS buffers and per-thread rows (instead of
 * conv_igemm.c's), and its K loop */
void cj_cv_pp_lds(cj_cv *v);
void cj_cv_pp_rows(cj_cv *v);
void cj_cv_kloop_pingpong(cj_cv *v);

/* conv_igemm_store.c */
void cj_cv_epilogue(cj_cv *v);

/* conv_igemm_wgrad.c: the backward-weight GEMM's operands (resources
 * rebased per workgroup, per-thread rows, operand offsets: instead of
 * conv_igemm.c's) and its store of the fp32 partial tile */
void cj_cv_wg_rows(cj_cv *v);
void cj_cv_wg_epilogue(cj_cv *v);

#endif
