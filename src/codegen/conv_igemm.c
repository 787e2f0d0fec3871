/* The implicit-GEMM conv kernel (plan in kplan_conv.h, address in
 * im2col.h, epilogue ops in epilogue.h). One builder over dtype rows: element
 * size, chunk and MFMA come from the plan, never from constants here. Two
 * K-loop schedules share it (cj_cv_schedules[]): "multistage", below, and
 * the 8-wave half-block "ping-pong" of fp8 on gfx950 (its own section).
 *
 *   workgroup (tm, tn) from the WGM-grouped linear id; grid z = K split
 *   prologue: DMA K steps 0 .. S-2 into LDS stages 0 .. S-2
 *   loop (runtime trip count, body unrolled S times so stage indices are constants):
 *     s_waitcnt vmcnt((S-2)*L) lgkmcnt(0)   this wave's DMAs of step i have
 *                                landed, its ds_reads of step i-1 are done
 *     s_barrier                  ... everyone's, and stage (i-1)%S is read out
 *     DMA step i+S-1 -> stage (i-1)%S
 *     ds_read fragments of stage i%S, MFMA into the flat accumulator grid
 *   epilogue: (+bias) -> bf16 NCDHW stores (vec4 when n == 1), or fp32
 *             buffer atomics into the split-K workspace
 *
 * Load path (plan field load): 1 DMA, as above; 2 through VGPRs
 * (cj_cv_kloop_vgpr): buffer_load_dwordx4 of step i+S+1 into a two-deep
 * register FIFO, ds_write of step i+S-1 after step i's barrier, so a thread
 * moves one 16-byte chunk per load (one im2col address and bounds check per
 * chunk) where gfx942's 4-byte DMA takes four, each with its own M0.
 *
 * LDS tile layout: one stage of A (B) holds TILE_M (TILE_N) rows x 32 k as
 * [kq = k/chunk][row][chunk k] (16 bytes per row and kq; chunk = 16 / element
 * bytes). A DMA instruction writes
 * 64 lanes x dma_bytes contiguously at M0 (wave-uniform) + lane*dma_bytes
 * (docs/isa-notes.md §4), so chunk q = i*threads + tid of instruction i lands at byte
 * q*dma_bytes = ((kq*rows + row)*16 + sub*dma_bytes): M0 = stage + (i*threads
 * + wave*64)*dma_bytes. With 4-byte DMA (gfx942) a thread then loads all 4
 * kq of few rows rather than one kq of 4x as many rows: fewer hoisted im2col
 * rows (VGPRs). An MFMA operand (8 or 4 consecutive k of one row) is one
 * ds_read, and the 16 lanes of a row group read 256 contiguous bytes.
 * Where that read is 8 bytes (gfx942: half a chunk, 128 bytes per 16
 * lanes, so rows r and r+8 would share banks) rows with bit 3 set store
 * their chunks' two halves swapped (cj_cv_swizzled): the DMA lane fetches
 * the swapped half, the read XORs its byte offset, conflict-free.
 * Every stage of A and B is its own LDS global, so LLVM's waitcnt pass can
 * tell a ds_read of one stage from DMAs still landing in another.
 *
 * Channel GEMM (1x1x1, stride 1, no padding): the A stage is k-major,
 * [32 k][TILE_M positions], filled straight from the caller's NCDHW x
 * (positions are contiguous there); each operand is then mfma_k/4 2-byte
 * reads. No im2col, no transpose.
 *
 * MFMA operands (docs/isa-notes.md §1): 16x16x32 bf16 (gfx950) lane l holds row l%16,
 * k = 8*(l/16) .. +7 (one ds_read_b128); 16x16x16 bf16 (gfx942) holds
 * k = 4*(l/16) .. +3 of each 16-wide half (ds_read_b64, two MFMAs per K
 * step). B uses the same layout with the output channel as the row. The
 * result holds column l%16, rows 4*(l/16) .. +3: 4 consecutive positions.
 */
#include <stdio.h>
#include <string.h>
#include "codegen/codegen.h"
#include "codegen/epilogue.h"
#include "codegen/im2col.h"
#include "codegen/irb.h"

#define CJ_CONV_MAX_FRAG 64
#define CJ_CONV_MAX_KQ 8 /* 16-byte K chunks per stage row: 128 fp8 */

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
} cj_cv_map;

typedef struct cj_cv {
  cj_irb *g;
  const cj_kplan *p;
  const cj_conv_plan *c;
  const cj_mfma_row *mf;               /* the plan's MFMA row */
  LLVMBuilderRef b;
  LLVMValueRef tid, wave, lane, wm, wn;
  LLVMValueRef lds_a[4], lds_b[4];
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
  LLVMValueRef wave_off;               /* wave*64*dma_bytes: the DMAs' M0 base (pinned per stage in the loop) */
  LLVMValueRef wave_off0;              /* ... as computed before the loop */
  LLVMValueRef wra, wrb;               /* VGPR path: per-lane ds_write offsets of A and B instruction 0 */
  /* channel GEMM (1x1x1 on NCDHW x): per A instruction, the byte offset of
   * x[n][0][p] for its position chunk, that chunk's validity, its k row */
  LLVMValueRef cg_base[CJ_CONV_MAX_DMA], cg_ok[CJ_CONV_MAX_DMA], cg_krow[CJ_CONV_MAX_DMA];
  LLVMValueRef acc[CJ_CONV_MAX_FRAG];
  LLVMTypeRef opty, accty;             /* MFMA operand and accumulator types */
  /* ping-pong schedule: LDS [half][parity], the thread's logical chunk,
   * per-run lane offsets of the operands, this step's A column */
  LLVMValueRef pa[2][2], pb[2][2];
  LLVMValueRef pp_chunk, pp_opa[2], pp_opb[2];
  cj_im2col_col pp_col;
} cj_cv;

/* The 8-byte-read swizzle (gfx942): an operand read is 8 bytes (half a
 * 16-byte chunk) and 16 lanes read rows r .. r+15 of one kq, so rows r and
 * r+8 (128 bytes apart) would share banks on 32 banks. Rows with bit 3 set
 * keep the two 8-byte halves of each chunk swapped: byte b of a row's
 * chunk is stored at b ^ cj_cv_swz(row). Only where the DMA writes at most
 * 8 bytes per lane (it can then fetch the swapped half); 16-byte reads
 * (gfx950 bf16, f8f6f4 runs) take whole chunks and need none. */
static int cj_cv_swizzled(const cj_cv *v) {
  return v->mf->k_runs == 1 && v->mf->k_per_lane * v->c->elem_bytes == 8 && v->c->dma_bytes <= 8;
}

static LLVMValueRef cj_cv_swz(cj_cv *v, LLVMValueRef row) {
  return LLVMBuildMul(v->b, LLVMBuildAnd(v->b, LLVMBuildLShr(v->b, row, cj_c32(v->g, 3), ""), cj_c32(v->g, 1), ""),
                      cj_c32(v->g, 8), "swz");
}

/* The VGPR path's stage layout where operand reads are 8 bytes (gfx942):
 * "half-major" [kq][half][row][8 B] instead of [kq][row][16 B]. A read
 * phase (16 lanes, rows r .. r+15, one kq and half) is then 128 contiguous
 * bytes, all 32 banks, with no swizzle; a lane's 16-byte chunk goes out as
 * its two halves rows*8 bytes apart (one ds_write2(st64)_b64: 16 lanes of
 * consecutive rows per phase, 128 contiguous bytes again). Elsewhere (16-byte
 * reads) the VGPR path keeps [kq][row][16 B] and one ds_write_b128 (8 lanes
 * per phase, 128 contiguous bytes). */
static int cj_cv_halfmajor(const cj_cv *v) {
  return v->c->load == CJ_CONV_LOAD_VGPR && v->mf->k_runs == 1 && v->mf->k_per_lane * v->c->elem_bytes == 8;
}

/* Bytes between stage rows (and so between 16-row fragment blocks / 16). */
static uint32_t cj_cv_row_pitch(const cj_cv *v) { return cj_cv_halfmajor(v) ? 8 : 16; }

static void cj_cv_map_init(cj_cv *v, cj_cv_map *mp, uint32_t rows, uint32_t ndma) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  uint32_t spc = 16 / c->dma_bytes, rpi = c->threads / spc; /* lanes per 16 B chunk, rows per instruction */
  LLVMValueRef sub = LLVMBuildURem(b, v->tid, cj_c32(g, spc), "");
  LLVMValueRef rt = LLVMBuildUDiv(b, v->tid, cj_c32(g, spc), "");
  mp->rows = rows;
  mp->ndma = ndma;
  if (rpi <= rows) {
    mp->period = rows / rpi;
    mp->nrow = mp->period < ndma ? mp->period : ndma;
    for (uint32_t j = 0; j < mp->nrow; j++) mp->row[j] = LLVMBuildAdd(b, rt, cj_c32(g, j * rpi), "");
    for (uint32_t i = 0; i < ndma; i++) mp->kq[i] = i / mp->period;
    mp->kthr = cj_c32(g, 0);
  } else {
    mp->period = mp->nrow = 1;
    mp->row[0] = LLVMBuildURem(b, rt, cj_c32(g, rows), "");
    for (uint32_t i = 0; i < ndma; i++) mp->kq[i] = i * (rpi / rows);
    mp->kthr = LLVMBuildMul(b, LLVMBuildUDiv(b, rt, cj_c32(g, rows), ""), cj_c32(g, c->chunk_elems), "");
  }
  /* The lane writes stored byte sub*dma_bytes of its chunk, so it fetches
   * logical byte sub*dma_bytes ^ swz. The thread's rows are row[0] plus
   * multiples of rpi (a multiple of 16 with <= 8-byte DMA): one swz. */
  LLVMValueRef byte = LLVMBuildMul(b, sub, cj_c32(g, c->dma_bytes), "");
  if (cj_cv_swizzled(v)) byte = LLVMBuildXor(b, byte, cj_cv_swz(v, mp->row[0]), "");
  mp->kin = LLVMBuildUDiv(b, byte, cj_c32(g, c->elem_bytes), "kin");
}

/* Start (elements) of the 16-byte K chunk instruction i loads at K step kt. */
static LLVMValueRef cj_cv_k(cj_cv *v, const cj_cv_map *mp, LLVMValueRef kt, uint32_t i) {
  LLVMValueRef base = LLVMBuildMul(v->b, kt, cj_c32(v->g, v->c->tile_k), "");
  return LLVMBuildAdd(v->b, LLVMBuildAdd(v->b, base, cj_c32(v->g, mp->kq[i] * v->c->chunk_elems), ""), mp->kthr,
                      "k");
}

/* One A/B load of instruction i: DMA into `lds` (out NULL: lane l's bytes
 * land at M0 = lds + wave_off + i*threads*dma_bytes, + l*dma_bytes), or
 * (VGPR path) a 16-byte buffer load into *out. */
static void cj_cv_xfer(cj_cv *v, LLVMValueRef rsrc, LLVMValueRef lds, uint32_t i, LLVMValueRef voff,
                       LLVMValueRef *out) {
  cj_irb *g = v->g;
  if (out) {
    *out = cj_irb_buf_load(g, LLVMVectorType(g->i32, 4), rsrc, voff, NULL, 0);
    return;
  }
  LLVMValueRef lo = LLVMBuildAdd(v->b, v->wave_off, cj_c32(g, i * v->c->threads * v->c->dma_bytes), "");
  cj_irb_buf_load_lds(g, rsrc, cj_irb_lds_ptr(g, lds, lo), v->c->dma_bytes, voff, NULL, 0, 0);
}

/* Issue the loads of K step kt: DMAs into LDS stage st (out NULL), or
 * (VGPR path) buffer loads into out[0 .. a_dma) (A) and out[a_dma ..) (B). */
static void cj_cv_issue(cj_cv *v, LLVMValueRef kt, uint32_t st, LLVMValueRef *out) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  cj_im2col_col col[CJ_CONV_MAX_KQ];
  int have[CJ_CONV_MAX_KQ] = {0};
  for (uint32_t i = 0; c->channel_gemm && i < c->a_dma; i++) {
    LLVMValueRef ch = LLVMBuildAdd(b, LLVMBuildMul(b, kt, cj_c32(g, c->tile_k), ""), v->cg_krow[i], "ch");
    LLVMValueRef ok = LLVMBuildAnd(b, v->cg_ok[i], LLVMBuildICmp(b, LLVMIntULT, ch, cj_c32(g, c->g.c), ""), "");
    ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, ch, v->k_end, ""), "");
    LLVMValueRef off =
        LLVMBuildAdd(b, v->cg_base[i], LLVMBuildMul(b, ch, cj_c32(g, (uint32_t)c->g.odhw * c->elem_bytes), ""), "");
    cj_cv_xfer(v, v->xr, v->lds_a[st], i, cj_irb_oob(g, ok, off, CJ_CONV_OOB), out ? &out[i] : NULL);
  }
  for (uint32_t i = 0; !c->channel_gemm && i < c->a_dma; i++) {
    uint32_t q = v->ma.kq[i];
    if (!have[q]) { /* one tap decode per distinct K column */
      cj_im2col_col_init(g, &v->ic, cj_cv_k(v, &v->ma, kt, i), v->ma.kin, v->k_end, &col[q]);
      have[q] = 1;
    }
    LLVMValueRef voff = cj_im2col_voffset(g, &v->ic, &v->arow[i % v->ma.period], &col[q], CJ_CONV_OOB);
    cj_cv_xfer(v, v->xr, v->lds_a[st], i, voff, out ? &out[i] : NULL);
  }
  for (uint32_t i = 0; i < c->b_dma; i++) {
    LLVMValueRef k = cj_cv_k(v, &v->mb, kt, i);
    LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, k, v->k_end, "");
    k = LLVMBuildAdd(b, k, v->mb.kin, "");
    uint32_t r = i % v->mb.period;
    if (v->bok[r]) ok = LLVMBuildAnd(b, ok, v->bok[r], "");
    LLVMValueRef off = LLVMBuildAdd(b, v->brow[r], LLVMBuildMul(b, k, cj_c32(g, c->elem_bytes), ""), "");
    cj_cv_xfer(v, v->wr, v->lds_b[st], i, cj_irb_oob(g, ok, off, CJ_CONV_OOB), out ? &out[c->a_dma + i] : NULL);
  }
}

/* Per-lane byte offset of the MFMA operands inside a [kq][row][16 B] stage
 * of `rows` rows, for fragment block 0 and K slice 0: lane l reads row
 * wbase + l%16 at k0 = (l/16)*k_per_lane (the MFMA row's layout), i.e.
 * kq = k0/chunk and byte (k0%chunk)*elem_bytes. Block b and slice kk add the
 * constant b*256 + kk*(mfma_k/chunk)*rows*16, which the ds_read offset field
 * absorbs (one address VGPR per operand). */
static LLVMValueRef cj_cv_lane_off(cj_cv *v, uint32_t rows, LLVMValueRef wbase) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  uint32_t per = v->mf->k_per_lane, ch = v->c->chunk_elems;
  LLVMValueRef row = LLVMBuildAdd(b, wbase, LLVMBuildURem(b, v->lane, cj_c32(g, 16), ""), "");
  LLVMValueRef k0 = LLVMBuildMul(b, LLVMBuildUDiv(b, v->lane, cj_c32(g, 16), ""), cj_c32(g, per), "");
  LLVMValueRef kq = LLVMBuildUDiv(b, k0, cj_c32(g, ch), "");
  LLVMValueRef byte = LLVMBuildMul(b, LLVMBuildURem(b, k0, cj_c32(g, ch), ""), cj_c32(g, v->c->elem_bytes), "");
  if (cj_cv_swizzled(v)) byte = LLVMBuildXor(b, byte, cj_cv_swz(v, row), ""); /* row + 16*blk: the same swz */
  /* half-major: byte is 0 or 8, the half, rows*8 bytes per half */
  if (cj_cv_halfmajor(v)) byte = LLVMBuildMul(b, byte, cj_c32(g, rows), "");
  LLVMValueRef kqoff = LLVMBuildMul(b, kq, cj_c32(g, rows * 16), "");
  LLVMValueRef rowoff = LLVMBuildMul(b, row, cj_c32(g, cj_cv_row_pitch(v)), "");
  return LLVMBuildAdd(b, LLVMBuildAdd(b, kqoff, rowoff, ""), byte, "op.lane");
}

/* lds + (lane_off - address of lds0) + cst: lane_off is opaque(lane offset
 * + address of stage 0), so the address of stage lds is stage-0-relative
 * and every constant stays below 64 KiB (the ds offset field). */
static LLVMValueRef cj_cv_stage_ptr(cj_cv *v, LLVMValueRef lds, LLVMValueRef lds0, LLVMValueRef lane_off,
                                    uint32_t cst) {
  cj_irb *g = v->g;
  LLVMValueRef rel = LLVMBuildSub(v->b, lane_off, LLVMBuildPtrToInt(v->b, lds0, g->i32, ""), "");
  return cj_irb_lds_ptr(g, cj_irb_lds_ptr(g, lds, rel), cj_c32(g, cst));
}

/* ---- VGPR load path: the ds_writes ----
 * Instruction i of a map writes chunk (kq, row) = (kq[i] + kthr/chunk,
 * row[i % period]); the stage offset is linear in both, so instruction 0's
 * per-lane offset (cj_cv_write_lane) plus a constant serves every i. */
static LLVMValueRef cj_cv_write_lane(cj_cv *v, const cj_cv_map *mp, LLVMValueRef lds0) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  LLVMValueRef kq = LLVMBuildUDiv(b, mp->kthr, cj_c32(g, v->c->chunk_elems), "");
  LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, kq, cj_c32(g, mp->rows * 16), ""),
                                  LLVMBuildMul(b, mp->row[0], cj_c32(g, cj_cv_row_pitch(v)), ""), "wr.lane");
  return cj_irb_opaque(g, LLVMBuildAdd(b, off, LLVMBuildPtrToInt(b, lds0, g->i32, ""), ""));
}

static void cj_cv_write_map(cj_cv *v, const cj_cv_map *mp, LLVMValueRef lds, LLVMValueRef lds0, LLVMValueRef lane,
                            LLVMValueRef *vals) {
  cj_irb *g = v->g;
  uint32_t pitch = cj_cv_row_pitch(v), rpi = v->c->threads; /* one 16-byte chunk per lane */
  for (uint32_t i = 0; i < mp->ndma; i++) {
    LLVMValueRef p = cj_cv_stage_ptr(v, lds, lds0, lane, mp->kq[i] * mp->rows * 16 + i % mp->period * rpi * pitch);
    if (!cj_cv_halfmajor(v)) {
      LLVMSetAlignment(LLVMBuildStore(v->b, vals[i], p), 16);
      continue;
    }
    for (uint32_t h = 0; h < 2; h++) { /* the chunk's halves, rows*8 bytes apart */
      LLVMValueRef idx[2] = {cj_c32(g, 2 * h), cj_c32(g, 2 * h + 1)};
      LLVMValueRef half = LLVMBuildShuffleVector(v->b, vals[i], vals[i], LLVMConstVector(idx, 2), "");
      LLVMSetAlignment(LLVMBuildStore(v->b, half, cj_irb_lds_ptr(g, p, cj_c32(g, h * mp->rows * 8))), 8);
    }
  }
}

/* The registers of one K step (cj_cv_issue's out) into LDS stage st. */
static void cj_cv_write(cj_cv *v, uint32_t st, LLVMValueRef *vals) {
  cj_cv_write_map(v, &v->ma, v->lds_a[st], v->lds_a[0], v->wra, vals);
  cj_cv_write_map(v, &v->mb, v->lds_b[st], v->lds_b[0], v->wrb, vals + v->c->a_dma);
}

/* A two-run operand (f8f6f4): one ds_read per run at q[0], q[1],
 * concatenated into the MFMA operand. */
static LLVMValueRef cj_cv_load_runs(cj_cv *v, LLVMValueRef q[2]) {
  cj_irb *g = v->g;
  uint32_t run_bytes = v->mf->k_per_lane * v->c->elem_bytes, nel = run_bytes / 4;
  LLVMTypeRef rt = LLVMVectorType(g->i32, nel);
  LLVMValueRef part[2], idx[16];
  for (uint32_t r = 0; r < 2; r++) {
    part[r] = LLVMBuildLoad2(v->b, rt, q[r], "");
    LLVMSetAlignment(part[r], run_bytes);
  }
  for (uint32_t e = 0; e < 2 * nel; e++) idx[e] = cj_c32(g, e);
  LLVMValueRef cat = LLVMBuildShuffleVector(v->b, part[0], part[1], LLVMConstVector(idx, 2 * nel), "");
  return LLVMBuildBitCast(v->b, cat, v->opty, "");
}

/* lane_off: see cj_cv_stage_ptr. */
static LLVMValueRef cj_cv_operand(cj_cv *v, LLVMValueRef lds, LLVMValueRef lds0, LLVMValueRef lane_off,
                                  uint32_t rows, uint32_t blk, uint32_t kk) {
  cj_irb *g = v->g;
  const cj_conv_plan *c = v->c;
  LLVMValueRef p = cj_cv_stage_ptr(v, lds, lds0, lane_off,
                                   blk * 16 * cj_cv_row_pitch(v) + kk * (c->mfma_k / c->chunk_elems) * rows * 16);
  if (v->mf->k_runs == 1) {
    LLVMValueRef ld = LLVMBuildLoad2(v->b, v->opty, p, "");
    LLVMSetAlignment(ld, v->mf->k_per_lane * c->elem_bytes);
    return ld;
  }
  /* Two runs (f8f6f4: k = 16*(l/16) .. +15 and 64 + the same, docs/isa-notes.md §1):
   * one 16-byte read per run, (mfma_k / k_runs) k apart, concatenated. */
  LLVMValueRef q[2];
  for (uint32_t r = 0; r < 2; r++)
    q[r] = cj_irb_lds_ptr(g, p, cj_c32(g, r * (c->mfma_k / v->mf->k_runs / c->chunk_elems) * rows * 16));
  return cj_cv_load_runs(v, q);
}

/* Channel GEMM: the A stage is [k = tile_k][TILE_M positions] (DMA chunks
 * run along positions), so a lane's k_per_lane consecutive k of its row are
 * TILE_M elements apart: one element-wide ds_read each, packed into the
 * operand. lane_off = opaque(stage 0 + ((l/16)*per*TILE_M + wm*MI_M*16 +
 * l%16)*elem_bytes). */
static LLVMValueRef cj_cv_operand_kmajor(cj_cv *v, LLVMValueRef lds, LLVMValueRef lds0, LLVMValueRef lane_off,
                                         uint32_t blk, uint32_t kk) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  uint32_t per = v->mf->k_per_lane, eb = c->elem_bytes;
  LLVMValueRef rel = LLVMBuildSub(b, lane_off, LLVMBuildPtrToInt(b, lds0, g->i32, ""), "");
  LLVMValueRef base = cj_irb_lds_ptr(g, lds, rel);
  uint32_t runs = v->mf->k_runs, run_k = c->mfma_k / runs;
  LLVMTypeRef et = LLVMIntTypeInContext(g->ctx, eb * 8);
  LLVMTypeRef vt = LLVMVectorType(et, per * runs);
  LLVMValueRef vec = LLVMGetPoison(vt);
  for (uint32_t e = 0; e < per * runs; e++) { /* run e / per (f8f6f4: k + 64), element e % per */
    uint32_t k = kk * c->mfma_k + e / per * run_k + e % per;
    LLVMValueRef p = cj_irb_lds_ptr(g, base, cj_c32(g, (k * c->tile_m + blk * 16) * eb));
    LLVMValueRef ld = LLVMBuildLoad2(b, et, p, "");
    LLVMSetAlignment(ld, eb);
    vec = LLVMBuildInsertElement(b, vec, ld, cj_c32(g, e), "");
  }
  return LLVMBuildBitCast(b, vec, v->opty, "");
}

/* One MFMA of the plan's row. The f8f6f4 intrinsic is the scaled form
 * (a, b, c, cbsz, blgp, opsel_a, scale_a, opsel_b, scale_b): zero scales
 * select the unscaled instruction (docs/isa-notes.md §1 "Scale operands = 0"); the
 * others take (a, b, c, cbsz, abid, blgp). */
static LLVMValueRef cj_cv_mfma(cj_cv *v, LLVMValueRef a, LLVMValueRef b, LLVMValueRef acc) {
  cj_irb *g = v->g;
  if (v->c->vec_ch_store) { /* accumulate D^T = B A^T: lane l holds channels 4*(l/16) .. +3 of position l%16 */
    LLVMValueRef t = a;
    a = b;
    b = t;
  }
  if (v->mf->k_runs == 2) {
    LLVMValueRef args[9] = {a, b, acc, cj_c32(g, v->mf->cbsz), cj_c32(g, v->mf->blgp),
                            cj_c32(g, 0), cj_c32(g, 0), cj_c32(g, 0), cj_c32(g, 0)};
    LLVMTypeRef over[2] = {v->opty, v->opty}; /* overloaded on the A and B formats' widths */
    return cj_irb_call(g, v->mf->intrinsic, over, 2, args, 9);
  }
  LLVMValueRef args[6] = {a, b, acc, cj_c32(g, 0), cj_c32(g, 0), cj_c32(g, 0)};
  return cj_irb_call(g, v->mf->intrinsic, NULL, 0, args, 6);
}

/* One K slice's operands (mfma_k deep) of a wave: its mi_m A and mi_n B
 * fragments, a[0 .. mi_m-1] then b. */
typedef struct cj_cv_ops {
  LLVMValueRef v[2 * CJ_CONV_MAX_FRAG];
} cj_cv_ops;

static LLVMValueRef cj_cv_read_a(cj_cv *v, uint32_t st, uint32_t i, uint32_t kk) {
  const cj_conv_plan *c = v->c;
  return c->channel_gemm ? cj_cv_operand_kmajor(v, v->lds_a[st], v->lds_a[0], v->opa, i, kk)
                         : cj_cv_operand(v, v->lds_a[st], v->lds_a[0], v->opa, c->tile_m, i, kk);
}

static LLVMValueRef cj_cv_read_b(cj_cv *v, uint32_t st, uint32_t j, uint32_t kk) {
  return cj_cv_operand(v, v->lds_b[st], v->lds_b[0], v->opb, v->c->tile_n, j, kk);
}

static void cj_cv_read_slice(cj_cv *v, uint32_t st, uint32_t kk, cj_cv_ops *o) {
  const cj_conv_plan *c = v->c;
  for (uint32_t i = 0; i < c->mi_m; i++) o->v[i] = cj_cv_read_a(v, st, i, kk);
  for (uint32_t j = 0; j < c->mi_n; j++) o->v[c->mi_m + j] = cj_cv_read_b(v, st, j, kk);
}

static void cj_cv_mma_slice(cj_cv *v, const cj_cv_ops *o) {
  const cj_conv_plan *c = v->c;
  for (uint32_t i = 0; i < c->mi_m; i++)
    for (uint32_t j = 0; j < c->mi_n; j++)
      v->acc[i * c->mi_n + j] = cj_cv_mfma(v, o->v[i], o->v[c->mi_m + j], v->acc[i * c->mi_n + j]);
}

/* Keeps LLVM from moving instructions across phase boundaries. */
static void cj_cv_fence_sched(cj_cv *v) {
  LLVMValueRef zero = cj_c32(v->g, 0);
  cj_irb_call(v->g, "llvm.amdgcn.sched.barrier", NULL, 0, &zero, 1);
}

static void cj_cv_compute(cj_cv *v, uint32_t st) {
  const cj_conv_plan *c = v->c;
  for (uint32_t kk = 0; kk < c->tile_k / c->mfma_k; kk++) {
    cj_cv_ops o;
    cj_cv_read_slice(v, st, kk, &o);
    cj_cv_mma_slice(v, &o);
    /* 1024-thread tiles have 128 VGPRs: read one K slice's operands at a
     * time (no ds_read2 pairing across slices) so they are not all live. */
    if (c->threads >= 1024 && kk + 1 < c->tile_k / c->mfma_k) cj_cv_fence_sched(v);
  }
}

/* Workgroup -> (tile_m index, tile_n index): WGM M-tiles sweep all N-tiles
 * before the next group, so a group's weight tiles stay hot in L2. */
static void cj_cv_tile_ids(cj_cv *v, LLVMValueRef pid, LLVMValueRef *tm, LLVMValueRef *tn) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  uint32_t gs = c->wgm * (uint32_t)c->tiles_n;
  LLVMValueRef grp = LLVMBuildUDiv(b, pid, cj_c32(g, gs), "");
  LLVMValueRef first = LLVMBuildMul(b, grp, cj_c32(g, c->wgm), "");
  LLVMValueRef left = LLVMBuildSub(b, cj_c32(g, (uint32_t)c->tiles_m), first, "");
  LLVMValueRef small = LLVMBuildICmp(b, LLVMIntULT, left, cj_c32(g, c->wgm), "");
  LLVMValueRef gsz = LLVMBuildSelect(b, small, left, cj_c32(g, c->wgm), "");
  LLVMValueRef in = LLVMBuildSub(b, pid, LLVMBuildMul(b, grp, cj_c32(g, gs), ""), "");
  *tn = LLVMBuildUDiv(b, in, gsz, "tn");
  *tm = LLVMBuildAdd(b, first, LLVMBuildSub(b, in, LLVMBuildMul(b, *tn, gsz, ""), ""), "tm");
}

/* The group's first output channel plus col: y's channel of fragment column
 * col (the bias and scale index too). */
static LLVMValueRef cj_cv_y_chan(cj_cv *v, LLVMValueRef col) {
  if (v->c->g.groups == 1) return col;
  return LLVMBuildAdd(v->b, LLVMBuildMul(v->b, v->grp, cj_c32(v->g, v->c->g.k), ""), col, "y.chan");
}

/* Element index of output (row m, channel col of this group), in type ty
 * (i32, or i64 for BIG_OUT), with ch = the y channel (cj_cv_y_chan) and
 * K' = K*groups: NCDHW (n*K' + ch)*Do*Ho*Wo + p with m = n*Do*Ho*Wo + p;
 * NDHWC m*K' + ch (m already counts n's positions). */
static LLVMValueRef cj_cv_y_elem(cj_cv *v, LLVMValueRef m, LLVMValueRef col, LLVMTypeRef ty) {
  LLVMBuilderRef b = v->b;
  const cj_conv_geom *G = &v->c->g;
  LLVMValueRef odhw = LLVMConstInt(ty, G->odhw, 0), ch = cj_cv_y_chan(v, col);
  if (ty != v->g->i32) {
    m = LLVMBuildZExt(b, m, ty, "");
    ch = LLVMBuildZExt(b, ch, ty, "");
  }
  if (G->y_ndhwc) return LLVMBuildAdd(b, LLVMBuildMul(b, m, LLVMConstInt(ty, G->k_all, 0), ""), ch, "y.elem");
  LLVMValueRef n = G->n == 1 ? LLVMConstInt(ty, 0, 0) : LLVMBuildUDiv(b, m, odhw, "");
  LLVMValueRef p = LLVMBuildSub(b, m, LLVMBuildMul(b, n, odhw, ""), "");
  LLVMValueRef nk = LLVMBuildAdd(b, LLVMBuildMul(b, n, LLVMConstInt(ty, G->k_all, 0), ""), ch, "");
  return LLVMBuildAdd(b, LLVMBuildMul(b, nk, odhw, ""), p, "y.elem");
}

/* Byte offset of output row m, channel col: i32 routed past the range
 * when masked, or i64 (BIG_OUT). */
static LLVMValueRef cj_cv_y_off(cj_cv *v, LLVMValueRef m, LLVMValueRef col, LLVMValueRef ok, uint32_t yb) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  if (v->c->big_out) return LLVMBuildMul(b, cj_cv_y_elem(v, m, col, g->i64), cj_c64(g, yb), "");
  return cj_irb_oob(g, ok, LLVMBuildMul(b, cj_cv_y_elem(v, m, col, g->i32), cj_c32(g, yb), ""), CJ_CONV_OOB);
}

/* Store r of a fragment's values val4 (element bits) at byte offset off
 * (NULL: row m's, cj_cv_y_off): the buffer store, or, BIG_OUT, a 64-bit
 * addressed store that masked lanes branch around. */
static void cj_cv_store_one(cj_cv *v, LLVMValueRef val4, uint32_t r, LLVMValueRef ok, LLVMValueRef off,
                            LLVMValueRef m, LLVMValueRef col, LLVMValueRef yr, LLVMValueRef yptr) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  uint32_t yb = cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(&c->epi));
  /* vec4: the 4 values as one 4*yb-byte store (yb == 2: <2 x i32>) */
  LLVMTypeRef vt = yb == 1 ? g->i32 : LLVMVectorType(g->i32, yb);
  const int vec = c->vec4_store || c->vec_ch_store;
  LLVMValueRef val = vec ? LLVMBuildBitCast(b, val4, vt, "") : LLVMBuildExtractElement(b, val4, cj_c32(g, r), "");
  if (!off) off = cj_cv_y_off(v, m, col, ok, yb);
  if (!c->big_out) {
    cj_irb_buf_store(g, val, yr, off, NULL, 0);
    return;
  }
  LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "st");
  LLVMBasicBlockRef nx = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "st.next");
  LLVMBuildCondBr(b, ok, st, nx);
  LLVMPositionBuilderAtEnd(b, st);
  LLVMValueRef ptr = LLVMBuildGEP2(b, g->i8, yptr, &off, 1, "");
  LLVMValueRef sti = LLVMBuildStore(b, val, ptr);
  LLVMSetAlignment(sti, vec ? 4 * yb : yb);
  LLVMBuildBr(b, nx);
  LLVMPositionBuilderAtEnd(b, nx);
}

/* Stores one accumulator fragment's 4 values (rows row0 .. +3 of channel
 * col) through the epilogue ops: fp32 atomics into the split-K workspace
 * (raw sums: the finalize runs the ops), or the output's element bits (one
 * 8-byte vec4 store when 4 rows are 4 consecutive outputs; 64-bit
 * addressed when BIG_OUT). A residual z (bf16 like y) is read at the
 * stores' own offsets, with the same masks. */
static void cj_cv_store(cj_cv *v, LLVMValueRef acc4, const LLVMValueRef chan[CJ_EPI_MAX_OPS], const cj_epi_rsrc *er,
                        LLVMValueRef row0, LLVMValueRef col, LLVMValueRef yr, LLVMValueRef yptr) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  const cj_conv_geom *G = &c->g;
  int has_z = cj_epi_find(&c->epi, CJ_EPI_RESIDUAL) != NULL;
  /* Without z the values come first (the order every kernel without a
   * residual has always been built in); with z after the offsets. */
  LLVMValueRef val4 = has_z ? NULL : cj_epi_apply(g, &c->epi, acc4, chan, NULL);
  LLVMValueRef col_ok = LLVMBuildICmp(b, LLVMIntULT, col, cj_c32(g, G->k), "");
  if (c->splitk > 1) {
    for (uint32_t r = 0; r < 4; r++) {
      LLVMValueRef m = LLVMBuildAdd(b, row0, cj_c32(g, r), "");
      LLVMValueRef e = cj_cv_y_elem(v, m, col, g->i32);
      LLVMValueRef ok = LLVMBuildAnd(b, col_ok, LLVMBuildICmp(b, LLVMIntULT, m, cj_c32(g, (uint32_t)G->npq), ""), "");
      LLVMValueRef voff = cj_irb_oob(g, ok, LLVMBuildMul(b, e, cj_c32(g, 4), ""), CJ_CONV_OOB);
      LLVMValueRef val = LLVMBuildExtractElement(b, val4, cj_c32(g, r), "");
      LLVMTypeRef f32 = g->f32;
      LLVMValueRef a[5] = {val, yr, voff, cj_c32(g, 0), cj_c32(g, 0)};
      cj_irb_call(g, "llvm.amdgcn.raw.ptr.buffer.atomic.fadd", &f32, 1, a, 5);
    }
    return;
  }
  uint32_t yb = cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(&c->epi));
  /* one store: 4 consecutive positions (vec4_store) or channels (vec_ch_store, row0 the position, col the first) */
  const int vec = c->vec4_store || c->vec_ch_store;
  uint32_t nst = vec ? 1 : 4;
  LLVMValueRef ok[4], off[4];
  for (uint32_t r = 0; r < nst; r++) {
    LLVMValueRef m = LLVMBuildAdd(b, row0, cj_c32(g, r), "");
    ok[r] = LLVMBuildAnd(b, col_ok, LLVMBuildICmp(b, LLVMIntULT, m, cj_c32(g, (uint32_t)G->npq), ""), "");
    if (!has_z) {
      cj_cv_store_one(v, val4, r, ok[r], NULL, m, col, yr, yptr);
      continue;
    }
    off[r] = cj_cv_y_off(v, m, col, ok[r], yb);
  }
  if (!has_z) return;
  /* z is bf16 like y (yb == 2): its byte offsets and masks are y's */
  LLVMValueRef z;
  if (vec) {
    z = cj_epi_load_z(g, &c->epi, er, off[0], ok[0], 4);
  } else {
    z = LLVMGetPoison(v->accty);
    for (uint32_t r = 0; r < 4; r++)
      z = LLVMBuildInsertElement(b, z, cj_epi_load_z(g, &c->epi, er, off[r], ok[r], 1), cj_c32(g, r), "");
  }
  val4 = cj_epi_apply(g, &c->epi, acc4, chan, z);
  for (uint32_t r = 0; r < nst; r++) cj_cv_store_one(v, val4, r, ok[r], off[r], NULL, NULL, yr, yptr);
}

/* ---- the kernel, in its parts ---------------------------------------------- */

/* LDS: one global per stage of A and of B, so LLVM's waitcnt pass can tell a
 * ds_read of one stage from DMAs still landing in another. */
static void cj_cv_lds(cj_cv *v) {
  for (uint32_t s = 0; s < v->c->stages; s++) {
    char n[16];
    snprintf(n, sizeof n, "lds_a%u", s);
    v->lds_a[s] = cj_irb_lds(v->g, n, v->c->lds_a_stage, 16);
  }
  for (uint32_t s = 0; s < v->c->stages; s++) {
    char n[16];
    snprintf(n, sizeof n, "lds_b%u", s);
    v->lds_b[s] = cj_irb_lds(v->g, n, v->c->lds_b_stage, 16);
  }
}

/* Thread, wave and tile ids; the split's K range. */
static void cj_cv_ids(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  v->tid = cj_irb_tid(g, 0);
  v->wave = cj_irb_readfirstlane(g, LLVMBuildLShr(b, v->tid, cj_c32(g, 6), ""));
  v->lane = LLVMBuildAnd(b, v->tid, cj_c32(g, 63), "lane");
  v->wm = LLVMBuildUDiv(b, v->wave, cj_c32(g, c->wave_n), "wm");
  v->wn = LLVMBuildURem(b, v->wave, cj_c32(g, c->wave_n), "wn");
  LLVMValueRef tm, tn;
  cj_cv_tile_ids(v, cj_irb_wgid(g, 0), &tm, &tn);
  v->m0 = LLVMBuildMul(b, tm, cj_c32(g, c->tile_m), "m0");
  v->n0 = LLVMBuildMul(b, tn, cj_c32(g, c->tile_n), "n0");
  LLVMValueRef kz = c->splitk > 1 ? cj_irb_wgid(g, 2) : cj_c32(g, 0);
  v->grp = c->g.groups > 1 ? cj_irb_wgid(g, 1) : cj_c32(g, 0);
  v->kt0 = LLVMBuildMul(b, kz, cj_c32(g, c->k_tiles_split), "kt0");
  LLVMValueRef kend = LLVMBuildMul(b, LLVMBuildAdd(b, v->kt0, cj_c32(g, c->k_tiles_split), ""),
                                   cj_c32(g, c->tile_k), "");
  LLVMValueRef over = LLVMBuildICmp(b, LLVMIntUGT, kend, cj_c32(g, (uint32_t)c->g.crs), "");
  v->k_end = LLVMBuildSelect(b, over, cj_c32(g, (uint32_t)c->g.crs), kend, "k.end");
}

/* Buffer resources of x (rebased per workgroup when BIG_IN) and w, both
 * from the group's first channel / weight row (grouped conv: x + gi*C
 * channels, w + gi*K rows; num_records shrinks by the same bytes). */
static void cj_cv_resources(cj_cv *v, LLVMValueRef xptr, LLVMValueRef wptr) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  cj_im2col_init(g, &v->ic, c, c->elem_bytes);
  LLVMValueRef gi = LLVMBuildZExt(b, v->grp, g->i64, "");
  LLVMValueRef xg = LLVMBuildMul(b, gi, cj_c64(g, (uint64_t)c->g.c * c->elem_bytes), "x.group");
  LLVMValueRef wg = LLVMBuildMul(b, gi, cj_c64(g, (uint64_t)c->g.k * c->g.crs * c->elem_bytes), "w.group");
  if (c->big_in) {
    LLVMValueRef origin = LLVMBuildAdd(b, cj_im2col_rebase(g, &v->ic, v->m0), xg, "");
    LLVMValueRef xb = LLVMBuildGEP2(b, g->i8, xptr, &origin, 1, "x.rebased");
    v->xr = cj_irb_rsrc(g, xb, cj_c64(g, CJ_CONV_BIG_IN_RECORDS));
  } else if (c->g.groups > 1) {
    v->xr = cj_irb_rsrc(g, LLVMBuildGEP2(b, g->i8, xptr, &xg, 1, ""), LLVMBuildSub(b, cj_c64(g, c->x_bytes), xg, ""));
  } else {
    v->xr = cj_irb_rsrc(g, xptr, cj_c64(g, c->x_bytes));
  }
  if (c->g.groups > 1)
    v->wr = cj_irb_rsrc(g, LLVMBuildGEP2(b, g->i8, wptr, &wg, 1, ""), cj_c64(g, c->w_bytes / c->g.groups));
  else
    v->wr = cj_irb_rsrc(g, wptr, cj_c64(g, c->w_bytes));
}

/* Per-thread DMA rows (im2col row decompositions, weight rows) and MFMA
 * operand lane offsets, hoisted out of the K loop. */
static void cj_cv_dma_rows(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  const cj_conv_geom *G = &c->g;
  cj_cv_map_init(v, &v->ma, c->tile_m, c->a_dma);
  cj_cv_map_init(v, &v->mb, c->tile_n, c->b_dma);
  if (c->channel_gemm) {
    /* chunk q = i*threads + tid of the [k][TILE_M] stage: k row q / cpr,
     * positions m0 + (q % cpr)*vec .. +vec-1 (one sample: Do*Ho*Wo % vec == 0) */
    uint32_t vec = c->dma_bytes / c->elem_bytes, cpr = c->tile_m / vec;
    for (uint32_t i = 0; i < c->a_dma; i++) {
      LLVMValueRef q = LLVMBuildAdd(b, v->tid, cj_c32(g, i * c->threads), "");
      v->cg_krow[i] = LLVMBuildUDiv(b, q, cj_c32(g, cpr), "");
      LLVMValueRef m = LLVMBuildAdd(
          b, v->m0, LLVMBuildMul(b, LLVMBuildURem(b, q, cj_c32(g, cpr), ""), cj_c32(g, vec), ""), "");
      LLVMValueRef n = G->n == 1 ? cj_c32(g, 0) : LLVMBuildUDiv(b, m, cj_c32(g, (uint32_t)G->odhw), "");
      LLVMValueRef pp = LLVMBuildSub(b, m, LLVMBuildMul(b, n, cj_c32(g, (uint32_t)G->odhw), ""), "");
      LLVMValueRef e = LLVMBuildAdd(b, LLVMBuildMul(b, n, cj_c32(g, (uint32_t)(G->c * G->odhw)), ""), pp, "");
      v->cg_base[i] = LLVMBuildMul(b, e, cj_c32(g, c->elem_bytes), "cg.base");
      v->cg_ok[i] = LLVMBuildICmp(b, LLVMIntULT, m, cj_c32(g, (uint32_t)G->npq), "");
    }
  }
  for (uint32_t j = 0; !c->channel_gemm && j < v->ma.nrow; j++)
    cj_im2col_row_init(g, &v->ic, LLVMBuildAdd(b, v->m0, v->ma.row[j], ""), &v->arow[j]);
  for (uint32_t j = 0; j < v->mb.nrow; j++) {
    LLVMValueRef n = LLVMBuildAdd(b, v->n0, v->mb.row[j], "");
    v->brow[j] = LLVMBuildMul(b, n, cj_c32(g, (uint32_t)G->crs * c->elem_bytes), "b.row");
    v->bok[j] = c->n_tail ? LLVMBuildICmp(b, LLVMIntULT, n, cj_c32(g, G->k), "") : NULL;
  }
  if (c->channel_gemm) {
    LLVMValueRef row = LLVMBuildAdd(b, LLVMBuildMul(b, v->wm, cj_c32(g, c->mi_m * 16), ""),
                                    LLVMBuildURem(b, v->lane, cj_c32(g, 16), ""), "");
    LLVMValueRef k0 = LLVMBuildMul(b, LLVMBuildUDiv(b, v->lane, cj_c32(g, 16), ""), cj_c32(g, v->mf->k_per_lane), "");
    v->opa = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, k0, cj_c32(g, c->tile_m), ""), row, ""),
                          cj_c32(g, c->elem_bytes), "");
  } else {
    v->opa = cj_cv_lane_off(v, c->tile_m, LLVMBuildMul(b, v->wm, cj_c32(g, c->mi_m * 16), ""));
  }
  v->opb = cj_cv_lane_off(v, c->tile_n, LLVMBuildMul(b, v->wn, cj_c32(g, c->mi_n * 16), ""));
  v->opa = cj_irb_opaque(g, LLVMBuildAdd(b, v->opa, LLVMBuildPtrToInt(b, v->lds_a[0], g->i32, ""), ""));
  v->opb = cj_irb_opaque(g, LLVMBuildAdd(b, v->opb, LLVMBuildPtrToInt(b, v->lds_b[0], g->i32, ""), ""));
  if (c->load == CJ_CONV_LOAD_VGPR) {
    v->wra = cj_cv_write_lane(v, &v->ma, v->lds_a[0]);
    v->wrb = cj_cv_write_lane(v, &v->mb, v->lds_b[0]);
  }
}

/* n more loop-carried values of loop lp: val[i] becomes the header's phi
 * (its preheader value the old val[i]); the builder is left in the body. */
static void cj_cv_loop_phis(cj_cv *v, cj_irb_loop *lp, LLVMValueRef *val, LLVMValueRef *phis, uint32_t n,
                            const char *name) {
  LLVMBuilderRef b = v->b;
  LLVMPositionBuilderBefore(b, LLVMGetNextInstruction(lp->iv));
  for (uint32_t f = 0; f < n; f++) {
    phis[f] = LLVMBuildPhi(b, LLVMTypeOf(val[f]), name);
    LLVMAddIncoming(phis[f], &val[f], &lp->pre, 1);
    val[f] = phis[f];
  }
  LLVMPositionBuilderAtEnd(b, lp->body);
}

/* A counted K loop of `trip` iterations whose accumulators are
 * loop-carried phis; the builder is left in the body. */
static void cj_cv_acc_loop_begin(cj_cv *v, cj_irb_loop *lp, LLVMValueRef *phis, uint32_t trip) {
  cj_irb_loop_begin(v->g, lp, cj_c32(v->g, 0), cj_c32(v->g, trip), cj_c32(v->g, 1), "kloop");
  cj_cv_loop_phis(v, lp, v->acc, phis, v->c->mi_m * v->c->mi_n, "acc");
}

/* Closes the loop; v->acc then holds the accumulators after it. */
static void cj_cv_acc_loop_end(cj_cv *v, cj_irb_loop *lp, LLVMValueRef *phis) {
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(v->b);
  uint32_t nacc = v->c->mi_m * v->c->mi_n;
  for (uint32_t f = 0; f < nacc; f++) LLVMAddIncoming(phis[f], &v->acc[f], &latch, 1);
  cj_irb_loop_end(v->g, lp);
  for (uint32_t f = 0; f < nacc; f++) v->acc[f] = phis[f];
}

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
  return c->g.cp % c->tile_k ? cj_irb_opaque_sgpr(v->g, ktg) : ktg;
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
  uint32_t L = c->a_dma + c->b_dma, S = c->stages;
  LLVMValueRef pro[5][2 * CJ_CONV_MAX_DMA], fifo[2][2 * CJ_CONV_MAX_DMA];
  for (uint32_t s = 0; s <= S; s++) cj_cv_issue(v, LLVMBuildAdd(b, v->kt0, cj_c32(g, s), ""), 0, pro[s]);
  for (uint32_t s = 0; s + 1 < S; s++) cj_cv_write(v, s, pro[s]);
  for (uint32_t f = 0; f < 2; f++) memcpy(fifo[f], pro[S - 1 + f], L * sizeof fifo[f][0]);

  cj_irb_loop lp;
  LLVMValueRef phis[CJ_CONV_MAX_FRAG], fphi[2][2 * CJ_CONV_MAX_DMA];
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

/* Step kt in stage s with operand prefetch (the loop's comment below):
 * cur holds the step's first slice on entry and step kt+1's on return. */
static void cj_cv_slices_pf(cj_cv *v, uint32_t s, LLVMValueRef kt, cj_cv_ops *cur) {
  cj_irb *g = v->g;
  const cj_conv_plan *c = v->c;
  const uint32_t S = c->stages, L = c->a_dma + c->b_dma, nk = c->tile_k / c->mfma_k;
  for (uint32_t kk = 0; kk < nk; kk++) {
    int last = kk + 1 == nk;
    uint32_t nst = last ? (s + 1) % S : s, nkk = last ? 0 : kk + 1;
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
static void cj_cv_kloop_multistage(cj_cv *v) {
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
  for (uint32_t s = 0; s + 1 < S + pf; s++) cj_cv_issue(v, LLVMBuildAdd(b, v->kt0, cj_c32(g, s), ""), s, NULL);
  cj_cv_ops cur = {{0}};
  if (pf) {
    cj_irb_waitcnt(g, cj_waitcnt_imm((S - 1) * L, 7, 15));
    cj_irb_barrier(g);
    cj_cv_read_slice(v, 0, 0, &cur);
  }

  /* ---- K loop: accumulators (and prefetched operands) are loop-carried phis ---- */
  cj_irb_loop lp;
  LLVMValueRef phis[CJ_CONV_MAX_FRAG], ophis[2 * CJ_CONV_MAX_FRAG];
  cj_cv_acc_loop_begin(v, &lp, phis, c->k_tiles_split / S);
  if (pf) cj_cv_loop_phis(v, &lp, cur.v, ophis, nops, "op");
  LLVMValueRef ktg = cj_cv_group_kt(v, &lp);
  for (uint32_t s = 0; s < S; s++) {
    LLVMValueRef kt = LLVMBuildAdd(b, ktg, cj_c32(g, s), "kt");
    if (pf) {
      cj_cv_slices_pf(v, s, kt, &cur);
      continue;
    }
    cj_cv_step_sync(v, (S - 2) * L); /* step s's DMAs (issued S-1 steps ago) landed */
    cj_cv_pin_wave_off(v, wave_off0);
    cj_cv_issue(v, LLVMBuildAdd(b, kt, cj_c32(g, S - 1), ""), (s + S - 1) % S, NULL);
    /* Keep each stage's ds_reads with its own MFMAs: hoisting the next
     * stage's operands above them doubles the operand registers. */
    cj_cv_fence_sched(v);
    cj_cv_compute(v, s);
  }
  if (pf) {
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
    for (uint32_t f = 0; f < nops; f++) LLVMAddIncoming(ophis[f], &cur.v[f], &latch, 1);
  }
  cj_cv_acc_loop_end(v, &lp, phis);
  /* The last DMAs (zeros past the split) still land in LDS. */
  cj_irb_waitcnt(g, cj_waitcnt_vmcnt(0));
}

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
 * instructions each, so each wait below names exactly the halves it needs):
 *   vmcnt(4) lgkmcnt(0); barrier   A0, B0 of step i landed (everyone's);
 *                                  every wave's reads of step i-1 are done
 *   DMA A0, B0 of i+1;  [prio 1] Q00 = A0 x B0 [prio 0]
 *   vmcnt(6); barrier              B1 of step i landed
 *   DMA B1 of i+1;      [prio 1] Q01 = A0 x B1 [prio 0]
 *   vmcnt(6); barrier              A1 of step i landed
 *   DMA A1 of i+1;      [prio 1] Q11 = A1 x B1, Q10 = A1 x B0 [prio 0]
 * A DMA of step i+1 writes a buffer last read in step i-1, before the
 * first barrier every wave passed with lgkmcnt(0) (docs/kernels.md, "LDS
 * ordering"). Each half is read once per step (24 ds_read_b128 per wave):
 * A0 lives from Q00 to Q01, B0 from Q00 to Q10. The loop runs steps in
 * pairs (constant parities); the last two steps are peeled, the last one
 * without DMA (waits vmcnt 4, 2, 0). K steps are even (the plan pads).
 */
#define CJ_PP_HALF_ROWS 128
#define CJ_PP_ROW_BYTES 128
#define CJ_PP_DMA_ROWS 64 /* rows of one 512-lane x 16-byte DMA instruction */

static void cj_cv_pp_lds(cj_cv *v) {
  uint32_t bytes = CJ_PP_HALF_ROWS * CJ_PP_ROW_BYTES;
  for (uint32_t ab = 0; ab < 2; ab++)
    for (uint32_t h = 0; h < 2; h++)
      for (uint32_t par = 0; par < 2; par++) {
        char n[16];
        snprintf(n, sizeof n, "lds_%c%u%u", ab ? 'b' : 'a', h, par);
        (ab ? v->pb : v->pa)[h][par] = cj_irb_lds(v->g, n, bytes, 16);
      }
}

/* Lane offsets (one per run) of the operands of fragment 0 of a wave whose
 * rows start at wrow in a half, as opaque(offset + address of buf0). */
static void cj_cv_pp_lane_off(cj_cv *v, LLVMValueRef wrow, LLVMValueRef buf0, LLVMValueRef out[2]) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  LLVMValueRef l16 = LLVMBuildURem(b, v->lane, cj_c32(g, 16), "");
  LLVMValueRef row = LLVMBuildAdd(b, wrow, l16, "");
  LLVMValueRef swz = LLVMBuildLShr(b, l16, cj_c32(g, 1), "");
  LLVMValueRef q = LLVMBuildUDiv(b, v->lane, cj_c32(g, 16), "");
  for (uint32_t r = 0; r < 2; r++) {
    LLVMValueRef ch = LLVMBuildXor(b, LLVMBuildAdd(b, q, cj_c32(g, 4 * r), ""), swz, "");
    LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, row, cj_c32(g, CJ_PP_ROW_BYTES), ""),
                                    LLVMBuildMul(b, ch, cj_c32(g, 16), ""), "pp.lane");
    out[r] = cj_irb_opaque(g, LLVMBuildAdd(b, off, LLVMBuildPtrToInt(b, buf0, g->i32, ""), ""));
  }
}

/* Per-thread DMA rows (4 A rows' im2col decompositions, 4 weight rows),
 * the thread's chunk, and the operand lane offsets, before the K loop. */
static void cj_cv_pp_rows(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  LLVMValueRef r0 = LLVMBuildUDiv(b, v->tid, cj_c32(g, 8), "");
  v->pp_chunk = LLVMBuildXor(b, LLVMBuildURem(b, v->tid, cj_c32(g, 8), ""),
                             LLVMBuildAnd(b, LLVMBuildLShr(b, v->tid, cj_c32(g, 4), ""), cj_c32(g, 7), ""), "pp.chunk");
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
  LLVMValueRef kin = LLVMBuildMul(b, v->pp_chunk, cj_c32(g, v->c->chunk_elems), "");
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
                                    LLVMBuildMul(b, v->pp_chunk, cj_c32(g, c->chunk_elems), ""), "k");
      LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, k, v->k_end, "");
      if (v->bok[slot]) ok = LLVMBuildAnd(b, ok, v->bok[slot], "");
      voff = cj_irb_oob(g, ok, LLVMBuildAdd(b, v->brow[slot], LLVMBuildMul(b, k, cj_c32(g, c->elem_bytes), ""), ""),
                        CJ_CONV_OOB);
    }
    LLVMValueRef buf = is_b ? v->pb[h][par] : v->pa[h][par];
    LLVMValueRef lo = LLVMBuildAdd(b, v->wave_off, cj_c32(g, i * CJ_PP_DMA_ROWS * CJ_PP_ROW_BYTES), "");
    cj_irb_buf_load_lds(g, is_b ? v->wr : v->xr, cj_irb_lds_ptr(g, buf, lo), 16, voff, NULL, 0, 0);
  }
}

/* Operands f0 .. f0+n-1 of a half buffer: fragment f at f*16 rows. */
static void cj_cv_pp_operand_rows(cj_cv *v, LLVMValueRef buf, LLVMValueRef buf0, const LLVMValueRef off[2], uint32_t f0,
                                  uint32_t n, LLVMValueRef *out) {
  cj_irb *g = v->g;
  for (uint32_t f = f0; f < f0 + n; f++) {
    LLVMValueRef q[2];
    for (uint32_t r = 0; r < 2; r++) {
      LLVMValueRef rel = LLVMBuildSub(v->b, off[r], LLVMBuildPtrToInt(v->b, buf0, g->i32, ""), "");
      q[r] = cj_irb_lds_ptr(g, cj_irb_lds_ptr(g, buf, rel), cj_c32(g, f * 16 * CJ_PP_ROW_BYTES));
    }
    out[f - f0] = cj_cv_load_runs(v, q);
  }
}

/* The MFMAs of A fragment row fa of A half ha against B half hb. */
static void cj_cv_pp_row(cj_cv *v, uint32_t ha, uint32_t fa, LLVMValueRef a, const LLVMValueRef *bb, uint32_t hb) {
  const cj_conv_plan *c = v->c;
  for (uint32_t fb = 0; fb < c->mi_n / 2; fb++) {
    uint32_t f = (ha * c->mi_m / 2 + fa) * c->mi_n + hb * c->mi_n / 2 + fb;
    v->acc[f] = cj_cv_mfma(v, a, bb[fb], v->acc[f]);
  }
}

/* The 4 x 2 MFMAs of quadrant (ha, hb). */
static void cj_cv_pp_quad(cj_cv *v, uint32_t ha, uint32_t hb, const LLVMValueRef *a, const LLVMValueRef *bb) {
  for (uint32_t fa = 0; fa < v->c->mi_m / 2; fa++) cj_cv_pp_row(v, ha, fa, a[fa], bb, hb);
}

/* Wait until at most vm of this wave's DMAs are in flight (and, first in a
 * step, its LDS reads are done), then the workgroup barrier. */
static void cj_cv_pp_sync(cj_cv *v, uint32_t vm, int reads_done) {
  cj_irb_waitcnt(v->g, cj_waitcnt_imm(vm, 7, reads_done ? 0 : 15));
  cj_irb_barrier(v->g);
}

/* A phase of a step: wait (vmcnt(vm), and lgkmcnt(0) first in a step),
 * barrier, the next step's DMA of the halves (A or B, h) it may now issue,
 * then the MFMA burst at priority 1 (cj_cv_pp_burst_end closes it). */
static void cj_cv_pp_phase(cj_cv *v, uint32_t vm, int reads_done, const uint32_t (*halves)[2], uint32_t nhalves,
                           LLVMValueRef kn, uint32_t q) {
  cj_cv_pp_sync(v, vm, reads_done);
  for (uint32_t i = 0; i < nhalves; i++) cj_cv_pp_issue(v, (int)halves[i][0], halves[i][1], kn, q);
  cj_cv_fence_sched(v);
  cj_irb_setprio(v->g, 1);
}

static void cj_cv_pp_burst_end(cj_cv *v) {
  cj_irb_setprio(v->g, 0);
  cj_cv_fence_sched(v);
}

static void cj_cv_pp_step(cj_cv *v, LLVMValueRef kt, uint32_t par, int next) {
  cj_irb *g = v->g;
  const cj_conv_plan *c = v->c;
  uint32_t q = par ^ 1, fa = c->mi_m / 2, fb = c->mi_n / 2;
  LLVMValueRef kn = LLVMBuildAdd(v->b, kt, cj_c32(g, 1), "kt.next");
  LLVMValueRef a0[8], a1[8], b0[8], b1[8];
  static const uint32_t A0B0[2][2] = {{0, 0}, {1, 0}}, B1[1][2] = {{1, 1}}, A1[1][2] = {{0, 1}};
  if (next) cj_cv_pp_col(v, kn); /* the A column of step i+1: pure arithmetic, before the wait */
  /* Q00 = A0 x B0 */
  cj_cv_pp_phase(v, 4, 1, A0B0, next ? 2 : 0, kn, q);
  cj_cv_pp_operand_rows(v, v->pa[0][par], v->pa[0][0], v->pp_opa, 0, fa, a0);
  cj_cv_pp_operand_rows(v, v->pb[0][par], v->pb[0][0], v->pp_opb, 0, fb, b0);
  cj_cv_pp_quad(v, 0, 0, a0, b0);
  cj_cv_pp_burst_end(v);
  /* Q01 = A0 x B1 */
  cj_cv_pp_phase(v, next ? 6 : 2, 0, B1, next ? 1 : 0, kn, q);
  cj_cv_pp_operand_rows(v, v->pb[1][par], v->pb[0][0], v->pp_opb, 0, fb, b1);
  cj_cv_pp_quad(v, 0, 1, a0, b1);
  cj_cv_pp_burst_end(v);
  /* Q11 and Q10 fragment row by fragment row, the next A1 row read one
   * ahead, B0 read again: 2 A1 operands live instead of 4 beside B0 and
   * B1 (the peak of the step: 48 operand VGPRs, not 64). */
  cj_cv_pp_phase(v, next ? 6 : 0, 0, A1, next ? 1 : 0, kn, q);
  cj_cv_pp_operand_rows(v, v->pb[0][par], v->pb[0][0], v->pp_opb, 0, fb, b0);
  cj_cv_pp_operand_rows(v, v->pa[1][par], v->pa[0][0], v->pp_opa, 0, 1, a1);
  for (uint32_t r = 0; r < fa; r++) {
    if (r + 1 < fa) cj_cv_pp_operand_rows(v, v->pa[1][par], v->pa[0][0], v->pp_opa, r + 1, 1, a1 + r + 1);
    cj_cv_pp_row(v, 1, r, a1[r], b1, 1);
    cj_cv_pp_row(v, 1, r, a1[r], b0, 0);
    cj_cv_fence_sched(v);
  }
  cj_cv_pp_burst_end(v);
}

static void cj_cv_kloop_pingpong(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  v->wave_off = LLVMBuildMul(b, v->wave, cj_c32(g, 64 * 16), "");
  /* prologue: step 0 into parity 0, in landing order */
  cj_cv_pp_col(v, v->kt0);
  cj_cv_pp_issue(v, 0, 0, v->kt0, 0);
  cj_cv_pp_issue(v, 1, 0, v->kt0, 0);
  cj_cv_pp_issue(v, 1, 1, v->kt0, 0);
  cj_cv_pp_issue(v, 0, 1, v->kt0, 0);
  /* steps 0 .. T-3 in pairs, then T-2 and T-1 peeled */
  cj_irb_loop lp;
  LLVMValueRef phis[CJ_CONV_MAX_FRAG];
  cj_cv_acc_loop_begin(v, &lp, phis, (c->k_tiles_split - 2) / 2);
  LLVMValueRef kt = LLVMBuildAdd(b, v->kt0, LLVMBuildMul(b, lp.iv, cj_c32(g, 2), ""), "kt");
  cj_cv_pp_step(v, kt, 0, 1);
  cj_cv_pp_step(v, LLVMBuildAdd(b, kt, cj_c32(g, 1), ""), 1, 1);
  cj_cv_acc_loop_end(v, &lp, phis);
  LLVMValueRef tail = cj_c32(g, c->k_tiles_split - 2);
  cj_cv_pp_step(v, LLVMBuildAdd(b, v->kt0, tail, ""), 0, 1);
  cj_cv_pp_step(v, LLVMBuildAdd(b, v->kt0, LLVMBuildAdd(b, tail, cj_c32(g, 1), ""), ""), 1, 0);
}

/* The plan's K-loop schedules (kplan_conv.h CJ_CONV_SCHED_*): each fills
 * v->acc from the shared DMA map, im2col rows and operand offsets. */
typedef void (*cj_cv_schedule)(cj_cv *v);
static const cj_cv_schedule cj_cv_schedules[CJ_CONV_SCHED_COUNT] = {
    [CJ_CONV_SCHED_MULTISTAGE] = cj_cv_kloop_multistage,
    [CJ_CONV_SCHED_PINGPONG] = cj_cv_kloop_pingpong,
};

/* Every accumulator fragment through the epilogue ops to its store. */
static void cj_cv_epilogue(cj_cv *v) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  LLVMValueRef yr = NULL, yptr = NULL;
  if (c->splitk > 1) {
    yr = cj_irb_rsrc(g, cj_irb_arg_role(g, v->p, CJ_ARG_WORKSPACE), cj_c64(g, c->ws_bytes));
  } else {
    yptr = cj_irb_arg_role(g, v->p, CJ_ARG_Y);
    if (!c->big_out) yr = cj_irb_rsrc(g, yptr, cj_c64(g, c->y_bytes));
  }
  cj_epi_rsrc er;
  cj_epi_rsrc_init(g, v->p, &c->epi, c->g.k_all, (uint64_t)c->g.n * c->g.k_all * c->g.odhw, &er);
  /* The lane re-derived after the loop: otherwise its l16 and g4 forms
   * cross the K loop in two VGPRs (spilled on 1024-thread tiles). */
  LLVMValueRef lane = cj_irb_opaque(g, v->lane);
  LLVMValueRef l16 = LLVMBuildURem(b, lane, cj_c32(g, 16), "");
  LLVMValueRef g4 = LLVMBuildMul(b, LLVMBuildUDiv(b, lane, cj_c32(g, 16), ""), cj_c32(g, 4), "");
  /* Fragment i of a wave: row block i / fm (of tile_m / halves rows), the
   * wave's fm fragments in it from wm*fm*16 (flat grid: one block). */
  uint32_t fm = c->mi_m / c->halves, fn = c->mi_n / c->halves;
  /* vec_ch_store (swapped MFMA operands): the lane's position is l%16 and
   * its 4 channels start at 4*(l/16); else the reverse */
  const int tr = c->vec_ch_store;
  LLVMValueRef rbase = LLVMBuildAdd(b, LLVMBuildAdd(b, v->m0, LLVMBuildMul(b, v->wm, cj_c32(g, fm * 16), ""), ""),
                                    tr ? l16 : g4, "");
  LLVMValueRef cbase = LLVMBuildAdd(b, LLVMBuildAdd(b, v->n0, LLVMBuildMul(b, v->wn, cj_c32(g, fn * 16), ""), ""),
                                    tr ? g4 : l16, "");
  /* Fragments row by row where VGPRs allow (< 1024 threads): LLVM builds
   * each output row's m < npq lane mask (an SGPR pair) once, so column by
   * column all mi_m*4 row masks stay live across the columns (a 256x256
   * split-K tile spilled 22 SGPRs). 1024-thread tiles (128 VGPRs) keep
   * column order: there the columns' VGPRs across the rows spill. */
  int by_row = c->threads < 1024;
  uint32_t n_out = by_row ? c->mi_m : c->mi_n, n_in = by_row ? c->mi_n : c->mi_m;
  LLVMValueRef chan[CJ_CONV_MAX_FRAG][CJ_EPI_MAX_OPS];
  int loaded[CJ_CONV_MAX_FRAG] = {0};
  for (uint32_t o = 0; o < n_out; o++)
    for (uint32_t q = 0; q < n_in; q++) {
      uint32_t i = by_row ? o : q, j = by_row ? q : o;
      LLVMValueRef col = LLVMBuildAdd(b, cbase, cj_c32(g, j / fn * (c->tile_n / c->halves) + j % fn * 16), "col");
      /* One channel per fragment column, its operands loaded once; channels
       * >= K read 0 through the range check. */
      if (!loaded[j]) cj_epi_load_channel(g, &c->epi, &er, cj_cv_y_chan(v, col), tr ? 4 : 1, chan[j]);
      loaded[j] = 1;
      LLVMValueRef row0 = LLVMBuildAdd(b, rbase, cj_c32(g, i / fm * (c->tile_m / c->halves) + i % fm * 16), "row");
      cj_cv_store(v, v->acc[i * c->mi_n + j], chan[j], &er, row0, col, yr, yptr);
      /* One fragment's index math at a time: interleaving them all keeps
       * every fragment's addresses live beside the accumulators. */
      cj_cv_fence_sched(v);
    }
}

convjit_status cj_conv_build(cj_irb *g, const cj_kplan *p) {
  const cj_conv_plan *c = &p->u.conv;
  const cj_mfma_row *mf = cj_mfma_row_of((cj_mfma_kind)c->mfma);
  if (c->a_dma > CJ_CONV_MAX_DMA || c->b_dma > CJ_CONV_MAX_DMA || c->mi_m * c->mi_n > CJ_CONV_MAX_FRAG ||
      c->tile_k * c->elem_bytes > 16 * CJ_CONV_MAX_KQ ||
      c->stages > 4 || !mf || mf->k_runs > 2 ||
      (c->sched == CJ_CONV_SCHED_PINGPONG && (c->threads != 512 || c->mi_m != 8 || c->mi_n != 4 ||
                                              c->k_tiles_split < 2 || c->k_tiles_split % 2)) || c->sched <= 0 || c->sched >= CJ_CONV_SCHED_COUNT ||
      !cj_cv_schedules[c->sched])
    return cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "conv plan %s is outside the builder's limits", p->name));
  cj_cv vv = {0}, *v = &vv;
  v->g = g;
  v->p = p;
  v->c = c;
  v->mf = mf;
  v->b = g->b;
  int pp = c->sched == CJ_CONV_SCHED_PINGPONG;
  /* ping-pong: 2 waves per SIMD (8 per CU), so 256 registers per lane */
  cj_irb_kernel(g, p, pp ? 2 : 0);
  if (g->st) return g->st;
  LLVMValueRef xptr = cj_irb_arg_role(g, p, CJ_ARG_X), wptr = cj_irb_arg_role(g, p, CJ_ARG_W);
  v->opty = cj_irb_operand_type(g, mf->opnd, mf->opnd_lanes);
  v->accty = LLVMVectorType(g->f32, 4);
  if (pp) cj_cv_pp_lds(v);
  else cj_cv_lds(v);
  cj_cv_ids(v);
  cj_cv_resources(v, xptr, wptr);
  if (pp) cj_cv_pp_rows(v);
  else cj_cv_dma_rows(v);
  for (uint32_t f = 0; f < c->mi_m * c->mi_n; f++) v->acc[f] = LLVMConstNull(v->accty);
  cj_cv_schedules[c->sched](v);
  cj_cv_epilogue(v);
  LLVMBuildRetVoid(g->b);
  return g->st;
}
