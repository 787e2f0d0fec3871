/* K-loop schedule "multistage" of the conv kernel (conv_igemm_internal.h):
 * the bf16 family's, gfx942's fp8 and every forced tile.
 *
 *   prologue: DMA K steps 0 .. S-2 into LDS stages 0 .. S-2
 *   loop (runtime trip count, body unrolled S times so stage indices are constants):
 *     s_waitcnt vmcnt((S-2)*L) lgkmcnt(0)   this wave's DMAs of step i have
 *                                landed, its ds_reads of step i-1 are done
 *     s_barrier                  ... everyone's, and stage (i-1)%S is read out
 *     DMA step i+S-1 -> stage (i-1)%S
 *     ds_read fragments of stage i%S, MFMA into the flat accumulator grid
 *
 * Load path (plan field load): 1 DMA, as above; 2 through VGPRs
 * (cj_cv_kloop_vgpr): buffer_load_dwordx4 of step i+S+1 into a two-deep
 * register FIFO, ds_write of step i+S-1 after step i's barrier, so a thread
 * moves one 16-byte chunk per load (one im2col address and bounds check per
 * chunk) where gfx942's 4-byte DMA takes four, each with its own M0.
 */
#include <string.h>
#include "codegen/conv_igemm_internal.h"

/* The K step of the multistage loop's body: ktg (the unrolled group's
 * first step) + s, ktg pinned to one SGPR where columns straddle taps. */
static LLVMValueRef cj_cv_group_kt(cj_cv *v, cj_irb_loop *lp) {
  const cj_conv_plan *c = v->c;
  LLVMValueRef ktg = LLVMBuildAdd(v->b, v->kt0, LLVMBuildMul(v->b, lp->iv, cj_c32(v->g, c->stages), ""), "");
  /* Where a K step's 16-byte columns straddle taps (Cp % tile_k != 0),
   * LLVM strength-reduces every (stage, column) k and its tap decode (k / Cp,
   * / R*S, / S) into loop-carried SGPRs and hoists per-column constants
   * beside them (C = 16 3x3x3 on gfx942: ~26 induction SGPRs, 95..106 SGPRs,
   * spills). Pinning the K step once per iteration makes each stage decode
   * its columns from one SGPR. Not when Cp % tile_k == 0: there all columns
   * of a step share one tap, LLVM finds that only through the induction
   * variables, and the pinned loop would run twice the instructions. */
  return !c->g.wgrad && c->g.cp % c->tile_k ? cj_irb_opaque_sgpr(v->g, ktg) : ktg;
}

/* The wait and barrier that open step s of the multistage body, after which
 * stage (s-1)%S may be overwritten. lgkmcnt(0) too: the barrier must not be
 * passed with this wave's ds_reads of step s-1 outstanding: the DMA or
 * ds_write issued after it (by any wave) overwrites exactly that stage
 * (docs/kernels.md, "LDS ordering"). LLVM's own waits would sink below the
 * barrier (they wait only for the reads' registers); the ISA does not order
 * an outstanding ds_read before another wave's later LDS write. vm: the
 * DMAs this wave may leave in flight (63: no vmcnt wait). */
static void cj_cv_step_sync(cj_cv *v, uint32_t vm) {
  cj_irb_waitcnt(v->g, cj_waitcnt_imm(vm, 7, 0));
  cj_irb_barrier(v->g);
}

/* The multistage loop on the VGPR load path (load 2): the same LDS ring
 * and barriers, but step j's A and B are buffer_load_dwordx4 into VGPRs at
 * step j-S-1 and ds_written into stage j%S at step j-S+1, right after that
 * step's barrier (by which every wave has read out the stage's previous
 * step, j-S): two K steps of loads are in flight in a two-deep register
 * FIFO, and the ds_write waits vmcnt(L), never vmcnt(0):
 *   prologue: load steps 0 .. S; ds_write 0 .. S-2 (vmcnt (S-s)L .. 2L)
 *   step i:   s_waitcnt lgkmcnt(0); s_barrier
 *             ds_write FIFO[0] (step i+S-1) -> stage (i-1)%S   vmcnt(L)
 *             FIFO[0] = FIFO[1]; FIFO[1] = load step i+S+1
 *             ds_read + MFMA stage i%S
 * lgkmcnt(0) before the barrier now also covers this wave's ds_writes of
 * the previous step. The FIFO is loop-carried (phis); the body is unrolled
 * S times, so an even S maps the FIFO onto two fixed register sets. */
static void cj_cv_kloop_vgpr(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  uint32_t L = cj_cv_loads(v), S = c->stages;
  LLVMValueRef pro[5][3 * CJ_CONV_MAX_DMA], fifo[2][3 * CJ_CONV_MAX_DMA];
  for (uint32_t s = 0; s <= S; s++) {
    cj_cv_issue(v, LLVMBuildAdd(b, v->kt0, cj_c32(g, s), ""), 0, pro[s]);
    /* The prologue's loads in step order: the loop's first ds_writes wait
     * vmcnt(L) for the oldest. The row-major stage's B offsets of
     * successive steps differ by constants, and the scheduler would
     * otherwise issue a later step's loads first; the wait at the loop
     * header (which merges the prologue's order) then becomes vmcnt(0)
     * in every trip. */
    if (v->mb.rm) cj_cv_fence_sched(v);
  }
  for (uint32_t s = 0; s + 1 < S; s++) cj_cv_write(v, s, pro[s]);
  for (uint32_t f = 0; f < 2; f++) memcpy(fifo[f], pro[S - 1 + f], L * sizeof fifo[f][0]);

  cj_irb_loop lp;
  LLVMValueRef phis[CJ_CONV_MAX_FRAG], fphi[2][3 * CJ_CONV_MAX_DMA];
  cj_cv_acc_loop_begin(v, &lp, phis, c->k_tiles_split / S);
  LLVMBasicBlockRef body = LLVMGetInsertBlock(b);
  LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(lp.header));
  for (uint32_t f = 0; f < 2; f++)
    for (uint32_t i = 0; i < L; i++) {
      fphi[f][i] = LLVMBuildPhi(b, LLVMTypeOf(fifo[f][i]), "fifo");
      LLVMAddIncoming(fphi[f][i], &fifo[f][i], &lp.pre, 1);
      fifo[f][i] = fphi[f][i];
    }
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef ktg = cj_cv_group_kt(v, &lp);
  for (uint32_t s = 0; s < S; s++) {
    LLVMValueRef kt = LLVMBuildAdd(b, ktg, cj_c32(g, s), "kt");
    cj_cv_step_sync(v, 63);
    cj_cv_write(v, (s + S - 1) % S, fifo[0]);
    cj_cv_fence_sched(v); /* the write before the next load: two register sets live, not three */
    memcpy(fifo[0], fifo[1], L * sizeof fifo[0][0]);
    cj_cv_issue(v, LLVMBuildAdd(b, kt, cj_c32(g, S + 1), ""), 0, fifo[1]);
    cj_cv_fence_sched(v); /* each stage's ds_reads with its own MFMAs (cj_cv_kloop_multistage) */
    cj_cv_compute(v, s);
  }
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  for (uint32_t f = 0; f < 2; f++)
    for (uint32_t i = 0; i < L; i++) LLVMAddIncoming(fphi[f][i], &fifo[f][i], &latch, 1);
  cj_cv_acc_loop_end(v, &lp, phis);
}

/* M0 bases from a copy pinned at the barrier: LLVM would otherwise hoist
 * one SGPR per (stage, DMA instruction) out of the loop and spill SGPRs
 * (measured: 26 -> 11 spilling configs over 256 small-shape builds); not
 * where VGPRs are the tight budget (1024 threads, 32-fragment waves): the
 * pinned copy constrains scheduling and they spill VGPRs. */
static void cj_cv_pin_wave_off(cj_cv *v, LLVMValueRef wave_off0) {
  if (v->c->threads <= 512 && v->c->mi_m * v->c->mi_n < 32) v->wave_off = cj_irb_opaque_sgpr(v->g, wave_off0);
}

/* Step kt in stage slot s with operand prefetch (the loop's comment
 * below), the next step's stage in slot ns: cur holds the step's first
 * slice on entry and step kt+1's on return. */
static void cj_cv_slices_pf(cj_cv *v, uint32_t s, uint32_t ns, LLVMValueRef kt, cj_cv_ops *cur) {
  cj_irb *g = v->g;
  const cj_conv_plan *c = v->c;
  const uint32_t S = c->stages, L = c->a_dma + c->b_dma, nk = c->tile_k / c->mfma_k;
  for (uint32_t kk = 0; kk < nk; kk++) {
    int last = kk + 1 == nk;
    uint32_t nst = last ? ns : s, nkk = last ? 0 : kk + 1;
    cj_cv_ops nxt = {{0}};
    for (uint32_t i = 0; i < c->mi_m; i++) {
      for (uint32_t j = 0; j < c->mi_n; j++)
        v->acc[i * c->mi_n + j] = cj_cv_mfma(v, cur->v[i], cur->v[c->mi_m + j], v->acc[i * c->mi_n + j]);
      if (i == 0 && last) { /* lgkmcnt(0): as in the loop without prefetch, for stage s itself */
        cj_cv_step_sync(v, (S - 2) * L);
        cj_cv_pin_wave_off(v, v->wave_off0);
        cj_cv_issue(v, LLVMBuildAdd(v->b, kt, cj_c32(g, S), ""), s, NULL);
      }
      if (i == 0)
        for (uint32_t j = 0; j < c->mi_n; j++) nxt.v[c->mi_m + j] = cj_cv_read_b(v, nst, j, nkk);
      nxt.v[i] = cj_cv_read_a(v, nst, i, nkk);
    }
    *cur = nxt;
  }
}

/* Step kt of the multistage DMA loop in stage slot s: with prefetch
 * (cj_cv_slices_pf) slot o holds the next step's stage, whose operands it
 * reads; without, the stage its DMA refills (the previous step's), after
 * the step's wait and barrier, before the step's own reads and MFMAs. */
static void cj_cv_step(cj_cv *v, uint32_t s, uint32_t o, LLVMValueRef kt, cj_cv_ops *cur) {
  const cj_conv_plan *c = v->c;
  const uint32_t S = c->stages, L = c->a_dma + c->b_dma;
  if (c->prefetch) {
    cj_cv_slices_pf(v, s, o, kt, cur);
    return;
  }
  cj_cv_step_sync(v, (S - 2) * L); /* step kt's DMAs (issued S-1 steps ago) landed */
  cj_cv_pin_wave_off(v, v->wave_off0);
  cj_cv_issue(v, LLVMBuildAdd(v->b, kt, cj_c32(v->g, S - 1), ""), o, NULL);
  /* Keep each stage's ds_reads with its own MFMAs: hoisting the next
   * stage's operands above them doubles the operand registers. */
  cj_cv_fence_sched(v);
  cj_cv_compute(v, s);
}

/* The rolled form of the multistage loop (plan.roll): one K step per
 * iteration instead of S unrolled ones, the same instructions in the same
 * order (cj_cv_slices_pf with prefetch, else sync, DMA, compute), with the
 * stage no longer a constant: the iteration's stage s and one more are
 * loop-carried SGPR offsets into one LDS global per operand (slot
 * CJ_CV_CUR = s; CJ_CV_NEXT = s+1 with prefetch, whose reads are the next
 * step's, else s-1, the stage the step's DMA refills). LLVM's waitcnt pass
 * tells LDS DMA targets apart only by alias scopes (per global, from its
 * LDS lowering), so with one global it would wait for every DMA in flight
 * (vmcnt(0)) before each operand read. What holds: within one iteration
 * the DMA writes one stage (s with prefetch, s-1 without) and every operand
 * read reads another (s+1, s: with prefetch one MFMA slice per step, so all
 * its reads are the next step's). The body declares two scopes
 * (llvm.experimental.noalias.scope.decl: the claim holds per iteration,
 * while across iterations one stage is written and read) and tags the DMAs
 * and the reads noalias each other; the order across iterations is each
 * step's explicit vmcnt + barrier, as in the unrolled loop. A quarter of
 * the body for LLVM's backend to schedule and allocate (docs/pipeline.md,
 * "The rolled K loop"). */
static void cj_cv_kloop_rolled(cj_cv *v, cj_cv_ops *cur) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  const uint32_t S = c->stages, pf = c->prefetch, nops = pf ? c->mi_m + c->mi_n : 0;
  cj_irb_loop lp;
  LLVMValueRef phis[CJ_CONV_MAX_FRAG], ophis[2 * CJ_CONV_MAX_FRAG], sphi;
  /* The prologue's operands through an opaque copy: with loads on both
   * edges InstCombine folds each operand phi into one load at the loop top
   * (phi of loads -> load of phi), before the barrier, undoing the prefetch. */
  for (uint32_t f = 0; f < nops; f++) cur->v[f] = cj_irb_opaque(g, cur->v[f]);
  cj_cv_acc_loop_begin(v, &lp, phis, c->k_tiles_split);
  cj_cv_loop_phis(v, &lp, cur->v, ophis, nops, "op");
  LLVMValueRef s0 = cj_c32(g, 0);
  cj_cv_loop_phis(v, &lp, &s0, &sphi, 1, "stage");
  LLVMMetadataRef md_dma = cj_irb_scope(g, "kstep.dma"), md_rd = cj_irb_scope(g, "kstep.read");
  cj_irb_scope_decl(g, md_dma);
  cj_irb_scope_decl(g, md_rd);
  LLVMValueRef s = cj_irb_opaque_sgpr(g, sphi);
  LLVMValueRef s1 = LLVMBuildAdd(b, s, cj_c32(g, 1), "");
  LLVMValueRef ns = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, s1, cj_c32(g, S), ""), cj_c32(g, 0), s1, "stage.next");
  LLVMValueRef os = pf ? ns
                       : LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, s, cj_c32(g, 0), ""), cj_c32(g, S - 1),
                                         LLVMBuildSub(b, s, cj_c32(g, 1), ""), "stage.prev");
  v->lds_a[CJ_CV_CUR] = cj_irb_lds_ptr(g, v->lds_all_a, LLVMBuildMul(b, s, cj_c32(g, c->lds_a_stage), ""));
  v->lds_b[CJ_CV_CUR] = cj_irb_lds_ptr(g, v->lds_all_b, LLVMBuildMul(b, s, cj_c32(g, c->lds_b_stage), ""));
  v->lds_a[CJ_CV_NEXT] = cj_irb_lds_ptr(g, v->lds_all_a, LLVMBuildMul(b, os, cj_c32(g, c->lds_a_stage), ""));
  v->lds_b[CJ_CV_NEXT] = cj_irb_lds_ptr(g, v->lds_all_b, LLVMBuildMul(b, os, cj_c32(g, c->lds_b_stage), ""));
  v->md_dma = md_dma;
  v->md_rd = md_rd;
  cj_cv_step(v, CJ_CV_CUR, CJ_CV_NEXT, LLVMBuildAdd(b, v->kt0, lp.iv, "kt"), cur);
  v->md_dma = v->md_rd = NULL;
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  for (uint32_t f = 0; f < nops; f++) LLVMAddIncoming(ophis[f], &cur->v[f], &latch, 1);
  LLVMAddIncoming(sphi, &ns, &latch, 1);
  cj_cv_acc_loop_end(v, &lp, phis);
  cj_irb_waitcnt(g, cj_waitcnt_vmcnt(0)); /* the last DMAs (zeros past the split) still land in LDS */
}

/* K-loop schedule "multistage" (the bf16 family's): a prologue fills
 * stages 0 .. S-2, then each step waits for its own stage, issues the DMA
 * S-1 steps ahead into the stage just read out, and runs its MFMAs. The
 * accumulators are loop-carried phis; v->acc holds them afterwards.
 *
 * With operand prefetch (plan.prefetch) each K slice's operands are read
 * during the slice before, across steps too (cj_cv_slice_pf): after the
 * MFMAs of A fragment row i, that row's register is dead and the next
 * slice's A row i is read into it; the next slice's B fragments after row
 * 0. On the last slice of step i the first row is followed by the wait
 * for stage i+1 (vmcnt((S-2)*L) lgkmcnt(0)) and the barrier, then the DMA
 * of step i+S into stage i (read out: every wave's reads of it retired
 * before the barrier), then step i+1's reads between the remaining rows:
 * the MFMAs of rows 1 .. mi_m-1 run on operands already in registers while
 * the barrier's aftermath (DMA issue, the first reads' LDS latency)
 * completes, instead of the MFMA pipe idling behind it; each DMA has S
 * steps (not S-1) to land. The prologue fills all S stages and reads step
 * 0's first slice; operands are loop-carried phis like the accumulators
 * (one B set and the in-flight A rows more registers). The last step
 * prefetches step T's zero stage. */
void cj_cv_kloop_multistage(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  if (c->load == CJ_CONV_LOAD_VGPR) {
    cj_cv_kloop_vgpr(v);
    return;
  }
  const uint32_t S = c->stages, L = c->a_dma + c->b_dma, pf = c->prefetch;
  const uint32_t nops = c->mi_m + c->mi_n;
  LLVMValueRef wave_off0 = LLVMBuildMul(b, v->wave, cj_c32(g, 64 * c->dma_bytes), "");
  v->wave_off = v->wave_off0 = wave_off0;

  /* ---- prologue ---- */
  /* Rolled: stage s's DMAs carry scope pro.s<s>, the first reads (stage 0)
   * pro.s0 and noalias the others, so LLVM's waitcnt pass (which tells
   * DMA targets apart only by scope, one LDS global here) waits for stage
   * 0's DMAs alone, which the explicit wait below already covers. */
  static const char *const pro_name[4] = {"pro.s0", "pro.s1", "pro.s2", "pro.s3"};
  LLVMMetadataRef pro[4] = {NULL}, pro_rest = NULL;
  if (cj_cv_rolled(v)) {
    for (uint32_t s = 0; s < S; s++) pro[s] = cj_irb_scope(g, pro_name[s]);
    pro_rest = cj_irb_scopes(g, pro_name + 1, S - 1);
  }
  /* One tap decode per group of S steps (cj_cv_group): kt0 is a multiple
   * of k_tiles_split, itself one of S */
  const int grp = cj_cv_group_ok(v);
  for (uint32_t s = 0; s + 1 < S + pf; s++) {
    v->md_dma = pro[s];
    if (grp) cj_cv_group(v, v->kt0, s);
    cj_cv_issue(v, LLVMBuildAdd(b, v->kt0, cj_c32(g, s), ""), s, NULL);
  }
  cj_cv_group(v, NULL, 0);
  v->md_dma = NULL;
  cj_cv_ops cur = {{0}};
  if (pf) {
    cj_irb_waitcnt(g, cj_waitcnt_imm((S - 1) * L, 7, 15));
    cj_irb_barrier(g);
    v->md_rd = pro[0];
    v->md_dma = pro_rest;
    cj_cv_read_slice(v, 0, 0, &cur);
    v->md_rd = v->md_dma = NULL;
  }

  if (cj_cv_rolled(v)) {
    cj_cv_kloop_rolled(v, &cur);
    return;
  }
  /* ---- K loop: accumulators (and prefetched operands) are loop-carried phis ---- */
  cj_irb_loop lp;
  LLVMValueRef phis[CJ_CONV_MAX_FRAG], ophis[2 * CJ_CONV_MAX_FRAG];
  cj_cv_acc_loop_begin(v, &lp, phis, c->k_tiles_split / S);
  if (pf) cj_cv_loop_phis(v, &lp, cur.v, ophis, nops, "op");
  LLVMValueRef ktg = cj_cv_group_kt(v, &lp);
  /* With prefetch (cj_cv_group_ok), step s loads step s + S: step s of
   * the next group, whose tap one decode serves */
  LLVMValueRef next = grp ? LLVMBuildAdd(b, ktg, cj_c32(g, S), "kt.next") : NULL;
  for (uint32_t s = 0; s < S; s++) {
    cj_cv_group(v, next, s);
    cj_cv_step(v, s, pf ? (s + 1) % S : (s + S - 1) % S, LLVMBuildAdd(b, ktg, cj_c32(g, s), "kt"), &cur);
  }
  cj_cv_group(v, NULL, 0);
  if (pf) {
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
    for (uint32_t f = 0; f < nops; f++) LLVMAddIncoming(ophis[f], &cur.v[f], &latch, 1);
  }
  cj_cv_acc_loop_end(v, &lp, phis);
  /* The last DMAs (zeros past the split) still land in LDS. */
  cj_irb_waitcnt(g, cj_waitcnt_vmcnt(0));
}
