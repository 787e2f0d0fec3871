/* K-loop schedule "ping-pong" of the conv kernel (conv_igemm_internal.h):
 * 8 waves on half blocks. On gfx950 128-byte rows by 16-byte DMA: fp8 (one
 * f8f6f4 MFMA per K step) and bf16/f16 (two 16x16x32 MFMAs per K step of
 * 64 k); on gfx942 (issue 38) 32-byte rows by 4-byte DMA (8 x 4 KiB of its
 * 64 KiB): one 16x16x16 bf16/f16 or 16x16x32 fp8 MFMA of 8-byte reads per
 * K step. Everything below is said for the 128-byte form; the 32-byte one
 * has the same 8 lanes per row and 64 rows per DMA instruction (4-byte
 * units), the swizzle of the row-major stage (cj_cv_rm_swz: 8-byte slots,
 * ((r >> 2) & 3) * 8 on 32 banks) and one read per operand. Its LDS
 * buffers, per-thread rows, DMAs and operand reads are its own, the MFMA
 * call and loop phis shared. */
#include <stdio.h>
#include "codegen/conv_igemm_internal.h"

/* ---- K-loop schedule "ping-pong" (fp8, gfx950) -------------------------------
 *
 * Tile 256x256x128, 8 waves, one f8f6f4 MFMA deep per K step. A and B are
 * each two 128-row halves, each half a current and a next 16 KiB buffer
 * (8 LDS globals, 128 KiB): step i reads parity i%2 while the DMA of step
 * i+1 fills parity (i+1)%2.
 *
 * Half buffer layout: row-major, 128 bytes (the step's K) per row, 16-byte
 * chunk c of row r stored at chunk c ^ ((r >> 1) & 7) — docs/original-design.md's
 * swizzle col ^ (((r*128 + col) % 2048) >> 8) << 4 for 128-byte rows.
 *  - DMA: one instruction fills 512 x 16 B = 64 rows; lane L of wave w
 *    writes byte (i*512 + w*64 + L)*16 (docs/isa-notes.md §4): row i*64 + tid/8,
 *    stored chunk tid%8. The thread fetches logical chunk
 *    (tid%8) ^ ((tid/16) & 7) — the same for all its rows (64-row steps
 *    keep (r >> 1) & 7), so one im2col column per K step serves its 4 A
 *    rows; 8 lanes fetch one row's 128 contiguous bytes of B (and of A
 *    when a step lies in one tap).
 *  - reads: f8f6f4 lane l holds row l%16, k = 16*(l/16) .. +15 and
 *    64 + the same (docs/isa-notes.md §1): chunks l/16 and l/16 + 4 of the row, two
 *    ds_read_b128. Fragments start at multiples of 16 rows, so the swizzle
 *    term is ((l%16) >> 1): one lane offset per run, fragments are
 *    constant 2 KiB offsets. 16 lanes then touch 64 distinct 4-byte banks
 *    (gfx950 has 64), where the unswizzled rows (128 B apart) would all
 *    start in bank 0 or 32 — an 8-way conflict.
 *
 * Waves: wm = wave/4 (2), wn = wave%4 (4). In quadrant (A half ha, B half
 * hb) a wave owns rows ha*128 + wm*64 + 16*fa (fa < 4) and columns
 * hb*128 + wn*32 + 16*fb (fb < 2): 4 x 2 MFMAs per quadrant, 32 fragments
 * (128 accumulators) per wave, the plan's mi_m = 8, mi_n = 4 with
 * halves = 2 (the epilogue's fragment map).
 *
 * One step (DMA of step i+1 issued in landing order A0, B0, B1, A1, two
 * instructions each, so each wait below names exactly the halves it needs),
 * three phases of a barrier, a DMA and reads, then a hand-off (wait for
 * the reads and the next phase's halves; barrier) and the MFMA burst:
 *   barrier; DMA A0, B0 of i+1; read A0, B0; vmcnt(6) lgkmcnt(0); barrier;
 *            [prio 1] Q00 = A0 x B0 [prio 0]
 *   barrier; DMA B1 of i+1;     read B1;     vmcnt(6) lgkmcnt(0); barrier;
 *            [prio 1] Q01 = A0 x B1 [prio 0]
 *   barrier; DMA A1 of i+1;     read B0, A1; vmcnt(4) lgkmcnt(0); barrier;
 *            [prio 1] Q11 = A1 x B1, Q10 = A1 x B0 [prio 0]
 * Wave row 1 runs one barrier behind row 0 (cj_cv_pp_stagger), so each
 * barrier meets one row's phase barrier with the other's hand-off: the
 * two waves of a SIMD (w, w + 4) alternate memory and MFMA work. A DMA of
 * step i+1 writes a buffer last read in step i-1, released by a barrier
 * every wave reaches after a hand-off's lgkmcnt(0) retired its reads of it
 * (docs/kernels.md, "LDS ordering"). A0 lives from Q00 to Q01, B0 is read
 * again for Q10. The loop runs steps in pairs (constant parities); the
 * last two steps are peeled, the last one without DMA (hand-off waits
 * vmcnt 2, 0, 0). K steps are even (the plan pads).
 */
#define CJ_PP_HALF_ROWS 128
#define CJ_PP_DMA_ROWS 64 /* rows of one DMA instruction: 512 lanes x 16 bytes of 128-byte rows, or x 4 of 32 */

/* Bytes of a row (one K step): 128 where the arch has 16-byte DMA and
 * 128 KiB of LDS (gfx950), 32 with 4-byte DMA (gfx942, issue 38: 8 x 4 KiB
 * in its 64 KiB). Either way 8 DMA lanes per row, 64 rows per instruction. */
static uint32_t cj_cv_pp_rb(const cj_cv *v) { return v->c->tile_k * v->c->elem_bytes; }
/* 16-byte operand reads per row and fragment: 2 on 128-byte rows (f8f6f4
 * runs or bf16 slices), 1 on gfx942's 32-byte rows (one 8-byte read). */
static uint32_t cj_cv_pp_reads(const cj_cv *v) {
  return cj_cv_pp_rb(v) / (4 * v->mf->k_per_lane * v->c->elem_bytes);
}

void cj_cv_pp_lds(cj_cv *v) {
  uint32_t bytes = CJ_PP_HALF_ROWS * cj_cv_pp_rb(v);
  for (uint32_t ab = 0; ab < 2; ab++)
    for (uint32_t h = 0; h < 2; h++)
      for (uint32_t par = 0; par < 2; par++) {
        char n[16];
        snprintf(n, sizeof n, "lds_%c%u%u", ab ? 'b' : 'a', h, par);
        (ab ? v->pb : v->pa)[h][par] = cj_irb_lds(v->g, n, bytes, 16);
      }
}

/* Lane offsets (one per read) of the operands of fragment 0 of a wave whose
 * rows start at wrow in a half, as opaque(offset + address of buf0): lane
 * l reads row wrow + l%16 at logical byte (l/16)*w + r*4w, stored at that
 * XOR xb(row) (cj_cv_rm_swz; on 128-byte rows ((row >> 1) & 7) * 16). */
static void cj_cv_pp_lane_off(cj_cv *v, LLVMValueRef wrow, LLVMValueRef buf0, LLVMValueRef out[2]) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  uint32_t w = v->mf->k_per_lane * v->c->elem_bytes;
  LLVMValueRef l16 = LLVMBuildURem(b, v->lane, cj_c32(g, 16), "");
  LLVMValueRef row = LLVMBuildAdd(b, wrow, l16, "");
  LLVMValueRef swz = cj_cv_rm_swz(v, row);
  LLVMValueRef lb0 = LLVMBuildMul(b, LLVMBuildUDiv(b, v->lane, cj_c32(g, 16), ""), cj_c32(g, w), "");
  for (uint32_t r = 0; r < cj_cv_pp_reads(v); r++) {
    LLVMValueRef lb = LLVMBuildXor(b, LLVMBuildAdd(b, lb0, cj_c32(g, r * 4 * w), ""), swz, "");
    LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, row, cj_c32(g, cj_cv_pp_rb(v)), ""), lb, "pp.lane");
    out[r] = cj_irb_opaque(g, LLVMBuildAdd(b, off, LLVMBuildPtrToInt(b, buf0, g->i32, ""), ""));
  }
}

/* Per-thread DMA rows (4 A rows' im2col decompositions, 4 weight rows),
 * the thread's chunk, and the operand lane offsets, before the K loop. */
void cj_cv_pp_rows(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  /* 8 lanes per row (RB / dma_bytes); the thread's unit (dma_bytes) of the
   * row, fetched at the swizzled place: one value for all its rows, which
   * are 64 apart (a multiple of the swizzle's 16-row period) */
  uint32_t u = c->dma_bytes;
  LLVMValueRef r0 = LLVMBuildUDiv(b, v->tid, cj_c32(g, 8), "");
  v->pp_chunk = LLVMBuildXor(b, LLVMBuildURem(b, v->tid, cj_c32(g, 8), ""),
                             LLVMBuildUDiv(b, cj_cv_rm_swz(v, r0), cj_c32(g, u), ""), "pp.chunk");
  for (uint32_t slot = 0; slot < 4; slot++) { /* half slot/2, instruction slot%2 */
    LLVMValueRef row = LLVMBuildAdd(b, r0, cj_c32(g, slot / 2 * CJ_PP_HALF_ROWS + slot % 2 * CJ_PP_DMA_ROWS), "");
    cj_im2col_row_init(g, &v->ic, LLVMBuildAdd(b, v->m0, row, ""), &v->arow[slot]);
    LLVMValueRef n = LLVMBuildAdd(b, v->n0, row, "");
    v->brow[slot] = LLVMBuildMul(b, n, cj_c32(g, (uint32_t)c->g.crs * c->elem_bytes), "b.row");
    v->bok[slot] = c->n_tail ? LLVMBuildICmp(b, LLVMIntULT, n, cj_c32(g, c->g.k), "") : NULL;
  }
  cj_cv_pp_lane_off(v, LLVMBuildMul(b, v->wm, cj_c32(g, 64), ""), v->pa[0][0], v->pp_opa);
  cj_cv_pp_lane_off(v, LLVMBuildMul(b, v->wn, cj_c32(g, 32), ""), v->pb[0][0], v->pp_opb);
}

/* The thread's A column of K step kt: one tap decode, uniform (scalar)
 * when every step lies inside one tap (Cp % 128 == 0), else per lane. */
static void cj_cv_pp_col(cj_cv *v, LLVMValueRef kt) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  LLVMValueRef k = LLVMBuildMul(b, kt, cj_c32(g, v->c->tile_k), "");
  LLVMValueRef kin = LLVMBuildMul(b, v->pp_chunk, cj_c32(g, v->c->dma_bytes / v->c->elem_bytes), "");
  if (v->c->g.cp % v->c->tile_k == 0) cj_im2col_col_init(g, &v->ic, k, kin, v->k_end, &v->pp_col);
  else cj_im2col_col_init(g, &v->ic, LLVMBuildAdd(b, k, kin, ""), NULL, v->k_end, &v->pp_col);
}

/* The DMA of one half (A or B, h) of K step kt into parity par. */
static void cj_cv_pp_issue(cj_cv *v, int is_b, uint32_t h, LLVMValueRef kt, uint32_t par) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  for (uint32_t i = 0; i < CJ_PP_HALF_ROWS / CJ_PP_DMA_ROWS; i++) {
    uint32_t slot = h * 2 + i;
    LLVMValueRef voff;
    if (!is_b) {
      voff = cj_im2col_voffset(g, &v->ic, &v->arow[slot], &v->pp_col, CJ_CONV_OOB);
    } else {
      LLVMValueRef k = LLVMBuildAdd(b, LLVMBuildMul(b, kt, cj_c32(g, c->tile_k), ""),
                                    LLVMBuildMul(b, v->pp_chunk, cj_c32(g, c->dma_bytes / c->elem_bytes), ""), "k");
      LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, k, v->k_end, "");
      if (v->bok[slot]) ok = LLVMBuildAnd(b, ok, v->bok[slot], "");
      voff = cj_irb_oob(g, ok, LLVMBuildAdd(b, v->brow[slot], LLVMBuildMul(b, k, cj_c32(g, c->elem_bytes), ""), ""),
                        CJ_CONV_OOB);
    }
    LLVMValueRef buf = is_b ? v->pb[h][par] : v->pa[h][par];
    LLVMValueRef lo = LLVMBuildAdd(b, v->wave_off, cj_c32(g, i * CJ_PP_DMA_ROWS * cj_cv_pp_rb(v)), "");
    cj_irb_buf_load_lds(g, is_b ? v->wr : v->xr, cj_irb_lds_ptr(g, buf, lo), c->dma_bytes, voff, NULL, 0, 0);
  }
}

/* Slices of one K step: one f8f6f4 MFMA (two 16-byte runs per operand),
 * or two bf16/f16 MFMAs 16x16x32 (one 16-byte read each, k 32 apart:
 * the same bytes as the two runs, docs/isa-notes.md §1). */
static uint32_t cj_cv_pp_slices(const cj_cv *v) { return v->mf->k_runs == 2 ? 1 : cj_cv_pp_reads(v); }

/* Operands f0 .. f0+n-1 of a half buffer: fragment f at f*16 rows; with
 * several slices out[(f-f0)*slices + s]. */
static void cj_cv_pp_operand_rows(cj_cv *v, LLVMValueRef buf, LLVMValueRef buf0, const LLVMValueRef off[2], uint32_t f0,
                                  uint32_t n, LLVMValueRef *out) {
  cj_irb *g = v->g;
  uint32_t ns = cj_cv_pp_slices(v), nr = cj_cv_pp_reads(v);
  for (uint32_t f = f0; f < f0 + n; f++) {
    LLVMValueRef q[2];
    for (uint32_t r = 0; r < nr; r++) {
      LLVMValueRef rel = LLVMBuildSub(v->b, off[r], LLVMBuildPtrToInt(v->b, buf0, g->i32, ""), "");
      q[r] = cj_irb_lds_ptr(g, cj_irb_lds_ptr(g, buf, rel), cj_c32(g, f * 16 * cj_cv_pp_rb(v)));
    }
    if (v->mf->k_runs == 2) {
      out[f - f0] = cj_cv_load_runs(v, q);
      continue;
    }
    for (uint32_t r = 0; r < nr; r++) {
      LLVMValueRef ld = LLVMBuildLoad2(v->b, v->opty, q[r], "");
      LLVMSetAlignment(ld, v->mf->k_per_lane * v->c->elem_bytes);
      out[(f - f0) * ns + r] = ld;
    }
  }
}

/* The MFMAs of A fragment row fa of A half ha against B half hb (a: the
 * row's slices, bb: the half's fragments' slices). */
static void cj_cv_pp_row(cj_cv *v, uint32_t ha, uint32_t fa, const LLVMValueRef *a, const LLVMValueRef *bb,
                         uint32_t hb) {
  const cj_conv_plan *c = v->c;
  uint32_t ns = cj_cv_pp_slices(v);
  for (uint32_t fb = 0; fb < c->mi_n / 2; fb++) {
    uint32_t f = (ha * c->mi_m / 2 + fa) * c->mi_n + hb * c->mi_n / 2 + fb;
    for (uint32_t s = 0; s < ns; s++) v->acc[f] = cj_cv_mfma(v, a[s], bb[fb * ns + s], v->acc[f]);
  }
}

/* The 4 x 2 MFMAs of quadrant (ha, hb). */
static void cj_cv_pp_quad(cj_cv *v, uint32_t ha, uint32_t hb, const LLVMValueRef *a, const LLVMValueRef *bb) {
  uint32_t ns = cj_cv_pp_slices(v);
  for (uint32_t fa = 0; fa < v->c->mi_m / 2; fa++) cj_cv_pp_row(v, ha, fa, a + fa * ns, bb, hb);
}

/* A phase of a step: the barrier that opens it (every wait it needs was
 * made before the previous phase's hand-off barrier, cj_cv_pp_burst), the
 * next step's DMA of the halves (A or B, h) it may now issue; the caller's
 * operand reads follow, then cj_cv_pp_burst. */
static void cj_cv_pp_phase(cj_cv *v, const uint32_t (*halves)[2], uint32_t nhalves, LLVMValueRef kn, uint32_t q) {
  cj_irb_barrier(v->g);
  for (uint32_t i = 0; i < nhalves; i++) cj_cv_pp_issue(v, (int)halves[i][0], halves[i][1], kn, q);
}

/* The hand-off from a phase's memory part to its MFMA burst: this wave's
 * reads done and the DMAs the next phase reads landed (vm_next: what the
 * next phase's own wait will ask), then a barrier, then priority 1 (the
 * burst; cj_cv_pp_burst_end closes it). With the two wave halves one
 * barrier apart (cj_cv_pp_stagger) this barrier meets the other half's
 * phase barrier: one half's MFMA burst runs while the other half issues
 * its DMA and reads, and every DMA a phase reads has landed before either
 * half passes the barrier that opens that phase. */
static void cj_cv_pp_burst(cj_cv *v, uint32_t vm_next) {
  cj_cv_fence_sched(v);
  cj_irb_waitcnt(v->g, cj_waitcnt_imm(vm_next, 7, 0));
  cj_irb_barrier(v->g);
  cj_irb_setprio(v->g, 1);
}

/* One extra s_barrier for the waves of one wave row (wm == row: uniform,
 * wm comes from readfirstlane): before the loop for row 1, after it for
 * row 0, so row 1 runs one barrier behind row 0 and both execute as many
 * barriers. */
static void cj_cv_pp_stagger(cj_cv *v, uint32_t row) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  LLVMBasicBlockRef bar = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "pp.stagger");
  LLVMBasicBlockRef nx = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "pp.staggered");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, v->wm, cj_c32(g, row), ""), bar, nx);
  LLVMPositionBuilderAtEnd(b, bar);
  cj_irb_barrier(g);
  LLVMBuildBr(b, nx);
  LLVMPositionBuilderAtEnd(b, nx);
}

static void cj_cv_pp_burst_end(cj_cv *v) {
  cj_irb_setprio(v->g, 0);
  cj_cv_fence_sched(v);
}

/* A0 fragments of the next step that a step's last MFMA row reads (its
 * A0 and B0 landed at the Q11 hand-off), on gfx950 fp8: the Q00 phase,
 * which the other wave row's 8-MFMA burst must cover, then reads 10 of its
 * 12 operands (docs/performance.md, issue 38e). One fragment: two gain
 * on 3x3x3 only, at 248 VGPRs (MODELLED; the reads crowd the other row's
 * Q11 phase). */
#define CJ_PP_PRE_A0 1
static uint32_t cj_cv_pp_npre(const cj_cv *v) {
  return v->mf->k_runs == 2 && v->c->elem_bytes == 1 && v->c->mi_m / 2 >= CJ_PP_PRE_A0 ? CJ_PP_PRE_A0 : 0;
}

/* pre_in: this step's first A0 fragments, read by the previous step (NULL:
 * none); pre_out: where this step reads the next step's (NULL: none). */
static void cj_cv_pp_step(cj_cv *v, LLVMValueRef kt, uint32_t par, int next, const LLVMValueRef *pre_in,
                          LLVMValueRef *pre_out) {
  cj_irb *g = v->g;
  const cj_conv_plan *c = v->c;
  uint32_t q = par ^ 1, fa = c->mi_m / 2, fb = c->mi_n / 2, ns = cj_cv_pp_slices(v);
  LLVMValueRef kn = LLVMBuildAdd(v->b, kt, cj_c32(g, 1), "kt.next");
  LLVMValueRef a0[16], a1[16], b0[16], b1[16];
  static const uint32_t A0B0[2][2] = {{0, 0}, {1, 0}}, B1[1][2] = {{1, 1}}, A1[1][2] = {{0, 1}};
  if (next) cj_cv_pp_col(v, kn); /* the A column of step i+1: pure arithmetic, before the wait */
  /* Q00 = A0 x B0 */
  cj_cv_pp_phase(v, A0B0, next ? 2 : 0, kn, q);
  uint32_t npre = pre_in ? cj_cv_pp_npre(v) : 0;
  for (uint32_t i = 0; i < npre * ns; i++) a0[i] = pre_in[i];
  cj_cv_pp_operand_rows(v, v->pa[0][par], v->pa[0][0], v->pp_opa, npre, fa - npre, a0 + npre * ns);
  cj_cv_pp_operand_rows(v, v->pb[0][par], v->pb[0][0], v->pp_opb, 0, fb, b0);
  cj_cv_pp_burst(v, next ? 6 : 2);
  cj_cv_pp_quad(v, 0, 0, a0, b0);
  cj_cv_pp_burst_end(v);
  /* Q01 = A0 x B1 */
  cj_cv_pp_phase(v, B1, next ? 1 : 0, kn, q);
  cj_cv_pp_operand_rows(v, v->pb[1][par], v->pb[0][0], v->pp_opb, 0, fb, b1);
  cj_cv_pp_burst(v, next ? 6 : 0);
  cj_cv_pp_quad(v, 0, 1, a0, b1);
  cj_cv_pp_burst_end(v);
  /* Q11 and Q10 fragment row by fragment row, the next A1 row read one
   * ahead, B0 read again: 2 A1 operands live instead of 4 beside B0 and
   * B1 (the peak of the step: 48 operand VGPRs, not 64). The hand-off
   * waits for the next step's A0 and B0 (vmcnt 4) unless this is the last. */
  cj_cv_pp_phase(v, A1, next ? 1 : 0, kn, q);
  cj_cv_pp_operand_rows(v, v->pb[0][par], v->pb[0][0], v->pp_opb, 0, fb, b0);
  cj_cv_pp_operand_rows(v, v->pa[1][par], v->pa[0][0], v->pp_opa, 0, 1, a1);
  cj_cv_pp_burst(v, next ? 4 : 0);
  for (uint32_t r = 0; r < fa; r++) {
    if (r + 1 < fa) cj_cv_pp_operand_rows(v, v->pa[1][par], v->pa[0][0], v->pp_opa, r + 1, 1, a1 + (r + 1) * ns);
    if (r + 1 == fa && pre_out && next)
      cj_cv_pp_operand_rows(v, v->pa[0][q], v->pa[0][0], v->pp_opa, 0, cj_cv_pp_npre(v), pre_out);
    cj_cv_pp_row(v, 1, r, a1 + r * ns, b1, 1);
    cj_cv_pp_row(v, 1, r, a1 + r * ns, b0, 0);
    cj_cv_fence_sched(v);
  }
  cj_cv_pp_burst_end(v);
}

void cj_cv_kloop_pingpong(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  v->wave_off = LLVMBuildMul(b, v->wave, cj_c32(g, 64 * c->dma_bytes), "");
  /* prologue: step 0 into parity 0, in landing order */
  cj_cv_pp_col(v, v->kt0);
  cj_cv_pp_issue(v, 0, 0, v->kt0, 0);
  cj_cv_pp_issue(v, 1, 0, v->kt0, 0);
  cj_cv_pp_issue(v, 1, 1, v->kt0, 0);
  cj_cv_pp_issue(v, 0, 1, v->kt0, 0);
  /* step 0's A0 and B0 landed (every wave's) before the first phase barrier */
  cj_irb_waitcnt(g, cj_waitcnt_vmcnt(4));
  /* step 0's first A0 fragments, after a barrier of both rows (every
   * wave's A0 landed); later steps' come from the step before */
  uint32_t np = cj_cv_pp_npre(v) * cj_cv_pp_slices(v);
  LLVMValueRef pre[CJ_PP_PRE_A0 * 2], mid[CJ_PP_PRE_A0 * 2], prephi[CJ_PP_PRE_A0 * 2];
  if (np) {
    cj_irb_barrier(g);
    cj_cv_pp_operand_rows(v, v->pa[0][0], v->pa[0][0], v->pp_opa, 0, cj_cv_pp_npre(v), pre);
  }
  cj_cv_pp_stagger(v, 1); /* wave row 1 one barrier behind row 0 */
  /* steps 0 .. T-3 in pairs, then T-2 and T-1 peeled */
  cj_irb_loop lp;
  LLVMValueRef phis[CJ_CONV_MAX_FRAG];
  cj_cv_acc_loop_begin(v, &lp, phis, (c->k_tiles_split - 2) / 2);
  LLVMValueRef kt = LLVMBuildAdd(b, v->kt0, LLVMBuildMul(b, lp.iv, cj_c32(g, 2), ""), "kt");
  if (np) cj_cv_loop_phis(v, &lp, pre, prephi, np, "pre");
  cj_cv_pp_step(v, kt, 0, 1, np ? pre : NULL, np ? mid : NULL);
  cj_cv_pp_step(v, LLVMBuildAdd(b, kt, cj_c32(g, 1), ""), 1, 1, np ? mid : NULL, np ? pre : NULL);
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  for (uint32_t i = 0; i < np; i++) LLVMAddIncoming(prephi[i], &pre[i], &latch, 1);
  for (uint32_t i = 0; i < np; i++) pre[i] = prephi[i];
  cj_cv_acc_loop_end(v, &lp, phis);
  LLVMValueRef tail = cj_c32(g, c->k_tiles_split - 2);
  cj_cv_pp_step(v, LLVMBuildAdd(b, v->kt0, tail, ""), 0, 1, np ? pre : NULL, np ? mid : NULL);
  cj_cv_pp_step(v, LLVMBuildAdd(b, v->kt0, LLVMBuildAdd(b, tail, cj_c32(g, 1), ""), ""), 1, 0, np ? mid : NULL, NULL);
  cj_cv_pp_stagger(v, 0); /* row 0's last barrier meets row 1's */
}
