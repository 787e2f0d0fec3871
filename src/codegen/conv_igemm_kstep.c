/* The pieces every K-loop schedule of the conv kernel is made of
 * (conv_igemm_internal.h): how a K step's A and B tiles land in an LDS
 * stage (DMA, or buffer loads + ds_writes on the VGPR path), how the MFMA
 * operands are read out of it, the MFMA call, and the loop-carried phis.
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
 * (That is the stage of the channel GEMM's B-less cases and the
 * backward-weight GEMM; the forward kernel's A and B stages are row-major,
 * below.)
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
#include "codegen/conv_igemm_internal.h"

/* ---- The row-major swizzled stage (forward A and B, both load paths) ----
 *
 * A stage of A (B) is [row][RB bytes], RB = tile_k * elem_bytes (32, 64 or
 * 128), with the swizzle: the byte b of a row r is stored at b ^ xb(r).
 * Loads: instruction i of thread t covers stage bytes (i*threads + t)*u
 * (u = dma_bytes: the DMA's lane-contiguous LDS write, docs/isa-notes.md
 * §4, which the VGPR path's ds_write copies), so the RB/u consecutive
 * lanes of a row read its RB contiguous global bytes (one 128-byte line
 * per row: 8 lines per instruction at most where rows are >= 32 bytes and
 * u = 4, or >= 128 and u = 16), and lane t fetches the logical bytes at
 * ((t % (RB/u))*u) ^ xb(row): the swizzle is applied on the global side.
 * Reads: MFMA lane l reads w = k_per_lane*elem_bytes bytes of row l%16 at
 * k-group l/16; a bank phase is W/w lanes (W = 4 x banks bytes: 128 on
 * gfx942, 256 on gfx950; lds_banks.c), i.e. P = W/w consecutive rows at
 * one logical offset. q = max(1, W/RB) rows share a W-byte window, so the
 * P/q rows of each window residue need distinct w-slots:
 *   xb(r) = ((r / q) % cnt) * w,  cnt = min(W, RB) / w  (q*cnt <= 16)
 * covers the W bytes of each phase exactly once (conflict-free). q*cnt
 * divides 16, so fragment blocks (16 rows) are constant offsets apart. The
 * DMA can fetch a swizzled piece only at its own granule (u = 16 on
 * gfx950): xb keeps multiples of max(w, u) there; the VGPR path fetches
 * 16 bytes and swaps its 8-byte halves in registers where xb has bit 3. */
typedef struct cj_cv_swzp {
  uint32_t rb, lq, cnt, w, gran;
} cj_cv_swzp;

static cj_cv_swzp cj_cv_rm_params(const cj_cv *v) {
  const cj_conv_plan *c = v->c;
  cj_cv_swzp s;
  uint32_t W = v->p->arch->lds_banks * 4;
  s.rb = c->tile_k * c->elem_bytes;
  s.w = v->mf->k_per_lane * c->elem_bytes;
  uint32_t q = W > s.rb ? W / s.rb : 1;
  s.cnt = (W < s.rb ? W : s.rb) / s.w;
  /* stage_rm 2: the row-major stage unswizzled (a validation knob: the
   * stage of the published FlyDSL bf16 conv, docs/performance.md) */
  if (q >= 16 || c->stage_rm == 2) s.cnt = 1;
  else if (q * s.cnt > 16) s.cnt = 16 / q;
  if (s.cnt == 0) s.cnt = 1;
  s.lq = (uint32_t)__builtin_ctz(q);
  s.gran = c->load == CJ_CONV_LOAD_VGPR ? s.w : (s.w > c->dma_bytes ? s.w : c->dma_bytes);
  return s;
}

/* xb(row) in bytes (see above). */
static LLVMValueRef cj_cv_rm_xb(cj_cv *v, const cj_cv_swzp *s, LLVMValueRef row) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  if (s->cnt <= 1) return cj_c32(g, 0);
  LLVMValueRef x = LLVMBuildAnd(b, LLVMBuildLShr(b, row, cj_c32(g, s->lq), ""), cj_c32(g, s->cnt - 1), "");
  x = LLVMBuildMul(b, x, cj_c32(g, s->w), "");
  return s->gran > s->w ? LLVMBuildAnd(b, x, cj_c32(g, ~(s->gran - 1)), "xb") : x;
}

LLVMValueRef cj_cv_rm_swz(cj_cv *v, LLVMValueRef row) {
  cj_cv_swzp s = cj_cv_rm_params(v);
  return cj_cv_rm_xb(v, &s, row);
}

/* The row-major thread map: instruction i of thread t is row
 * t/(RB/u) + i*rpi (rpi = threads*u/RB rows per instruction), its lane
 * piece (t % (RB/u))*u stored, logical kin_r[i]. */
static void cj_cv_rm_map(cj_cv *v, cj_cv_map *mp, uint32_t ndma) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  cj_cv_swzp s = cj_cv_rm_params(v);
  uint32_t u = c->dma_bytes, upr = s.rb / u, rpi = c->threads / upr;
  int vg = c->load == CJ_CONV_LOAD_VGPR;
  LLVMValueRef r0 = LLVMBuildUDiv(b, v->tid, cj_c32(g, upr), "rm.row");
  LLVMValueRef sb = LLVMBuildMul(b, LLVMBuildURem(b, v->tid, cj_c32(g, upr), ""), cj_c32(g, u), "");
  /* every instruction's row has row 0's xb where rpi is a multiple of the
   * swizzle's period (q*cnt) */
  int same = rpi % ((1u << s.lq) * s.cnt) == 0;
  mp->rm = 1;
  mp->period = mp->nrow = ndma;
  mp->kthr = cj_c32(g, 0);
  for (uint32_t i = 0; i < ndma; i++) {
    mp->kq[i] = 0;
    mp->row[i] = i ? LLVMBuildAdd(b, r0, cj_c32(g, i * rpi), "") : r0;
    if (i && same) {
      mp->kin_r[i] = mp->kin_r[0];
      mp->swap[i] = mp->swap[0];
      continue;
    }
    LLVMValueRef xb = cj_cv_rm_xb(v, &s, mp->row[i]);
    LLVMValueRef lb = LLVMBuildXor(b, sb, xb, "");
    mp->swap[i] = NULL;
    if (vg && s.w < 16 && s.cnt > 1) { /* 16-byte fetch: the piece, halves swapped where xb has bit 3 */
      mp->swap[i] = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, xb, cj_c32(g, 8), ""), cj_c32(g, 0), "swap");
      lb = LLVMBuildAnd(b, lb, cj_c32(g, ~15u), "");
    }
    mp->kin_r[i] = LLVMBuildUDiv(b, lb, cj_c32(g, c->elem_bytes), "kin");
  }
  mp->kin = mp->kin_r[0];
}

/* Each row a thread loads holds its im2col decode (or weight row) in
 * VGPRs through the K loop: the row-major map gives a thread one row per
 * load (ndma), [kq][row][16 B] rows / (threads*u/16) of them. More than
 * that and 4 (1 with 1024 threads, 128 VGPRs) spilled: gfx942's 4-byte DMA
 * on 64-byte rows of 256x256 (8 rows per thread; 7 VGPRs spilled) and on
 * 1024-thread tiles (4 rows; 18 spilled), test_conv_spill. */
int cj_cv_rm_ok(const cj_cv *v, uint32_t rows, uint32_t ndma) {
  const cj_conv_plan *c = v->c;
  uint32_t rpi = c->threads * c->dma_bytes / 16, old = rpi <= rows ? rows / rpi : 1;
  if (old > ndma) old = ndma;
  uint32_t lim = c->threads <= 512 ? 4 : 1;
  return ndma <= (old > lim ? old : lim);
}

uint32_t cj_cv_rm_lane_offs(cj_cv *v, LLVMValueRef wbase, LLVMValueRef lds0, LLVMValueRef *out) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  cj_cv_swzp s = cj_cv_rm_params(v);
  uint32_t nk = c->tile_k / c->mfma_k, runs = v->mf->k_runs, span = 4 * s.w;
  /* xb < span: every (slice, run) is a constant offset from the first */
  uint32_t n = s.cnt * s.w <= span ? 1 : nk * runs;
  LLVMValueRef row = LLVMBuildAdd(b, wbase, LLVMBuildURem(b, v->lane, cj_c32(g, 16), ""), "");
  LLVMValueRef lb0 = LLVMBuildMul(b, LLVMBuildUDiv(b, v->lane, cj_c32(g, 16), ""), cj_c32(g, s.w), "");
  LLVMValueRef xb = cj_cv_rm_xb(v, &s, row);
  LLVMValueRef rowoff = LLVMBuildMul(b, row, cj_c32(g, s.rb), "");
  for (uint32_t f = 0; f < n; f++) { /* f = kk*runs + run */
    uint32_t cst = f / runs * c->mfma_k * c->elem_bytes + f % runs * span;
    LLVMValueRef lb = LLVMBuildXor(b, LLVMBuildAdd(b, lb0, cj_c32(g, cst), ""), xb, "");
    LLVMValueRef off = LLVMBuildAdd(b, rowoff, lb, "op.lane");
    out[f] = cj_irb_opaque(g, LLVMBuildAdd(b, off, LLVMBuildPtrToInt(b, lds0, g->i32, ""), ""));
  }
  v->rm_nop = n;
  return n;
}

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

void cj_cv_map_init(cj_cv *v, cj_cv_map *mp, uint32_t rows, uint32_t ndma, int rm) {
  cj_irb *g = v->g;
  mp->rows = rows;
  mp->ndma = ndma;
  mp->rm = 0;
  if (rm) {
    cj_cv_rm_map(v, mp, ndma);
    return;
  }
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
  LLVMValueRef dma = cj_irb_buf_load_lds(g, rsrc, cj_irb_lds_ptr(g, lds, lo), v->c->dma_bytes, voff, NULL, 0, 0);
  if (v->md_dma) cj_irb_alias(g, dma, v->md_dma, v->md_rd);
}

int cj_cv_rolled(const cj_cv *v) { return v->c->roll && v->c->g.taps; }

void cj_cv_tag_read(cj_cv *v, LLVMValueRef ld) {
  if (v->md_rd) cj_irb_alias(v->g, ld, v->md_rd, v->md_dma);
}

uint32_t cj_cv_loads(const cj_cv *v) {
  const cj_conv_plan *c = v->c;
  return c->a_dma + c->b_dma + (c->wg.odd ? c->b_dma : 0);
}

/* The backward-weight GEMM's loads of K step kt (VGPR path): both operands
 * are plain rows from the workgroup's rebased origins (conv_igemm_wgrad.c),
 * k the step's chunk. A: out[0 .. a_dma), rows >= K read 0. B: out[a_dma ..
 * + b_dma) from the dword-aligned start of the column's elements, and with
 * odd columns one more dword each into out[a_dma + b_dma ..): the write
 * shifts the 20 bytes down by 2 (cj_cv_write). A block is whole K steps,
 * so no K check. */
static void cj_cv_issue_wgrad(cj_cv *v, LLVMValueRef kt, LLVMValueRef *out) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  const uint32_t eb = c->elem_bytes;
  LLVMTypeRef v4 = LLVMVectorType(g->i32, 4);
  for (uint32_t i = 0; i < c->a_dma; i++) {
    LLVMValueRef k = LLVMBuildAdd(b, cj_cv_k(v, &v->ma, kt, i), v->ma.rm ? v->ma.kin_r[i] : v->ma.kin, "");
    uint32_t r = i % v->ma.period;
    LLVMValueRef off = LLVMBuildAdd(b, v->aoff[r], LLVMBuildMul(b, k, cj_c32(g, eb), ""), "");
    out[i] = cj_irb_buf_load(g, v4, v->xr, v->aok[r] ? cj_irb_oob(g, v->aok[r], off, CJ_CONV_OOB) : off, NULL, 0);
  }
  for (uint32_t i = 0; i < c->b_dma; i++) {
    LLVMValueRef k = LLVMBuildAdd(b, cj_cv_k(v, &v->mb, kt, i), v->mb.rm ? v->mb.kin_r[i] : v->mb.kin, "");
    uint32_t r = i % v->mb.period;
    LLVMValueRef off = LLVMBuildAdd(b, v->brow[r], LLVMBuildMul(b, k, cj_c32(g, eb), ""), "");
    if (v->bok[r]) off = cj_irb_oob(g, v->bok[r], off, CJ_CONV_OOB);
    out[c->a_dma + i] = cj_irb_buf_load(g, v4, v->wr, off, NULL, 0);
    if (c->wg.odd) /* an OOB offset stays past num_records 16 bytes on */
      out[c->a_dma + c->b_dma + i] = cj_irb_buf_load(g, g->i32, v->wr, LLVMBuildAdd(b, off, cj_c32(g, 16), ""), NULL, 0);
  }
}

/* Row-major stage: the A loads of K step kt. Where the step lies in one
 * tap (rm_fold_a) one column serves every row (each row's kin_r folded
 * into its base), decoded once per step or, within an aligned group
 * (cj_cv_group), a constant shift of the group's first; else a column per
 * distinct kin_r, decoded per lane (k + kin_r). */
static void cj_cv_issue_rm_a(cj_cv *v, LLVMValueRef kt, uint32_t st, LLVMValueRef *out) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  LLVMValueRef k = cj_cv_k(v, &v->ma, kt, 0);
  cj_im2col_col col;
  if (v->rm_fold_a) {
    if (v->grp_base && v->grp_at == v->grp_base && v->grp_d > v->grp_d0) {
      cj_im2col_col_shift(g, &v->ic, &v->grp_col, (v->grp_d - v->grp_d0) * c->tile_k, &col);
      col.valid = LLVMBuildICmp(b, LLVMIntULT, k, v->k_end, "k.in");
    } else {
      cj_im2col_col_init(g, &v->ic, k, NULL, v->k_end, &col);
      if (v->grp_base && v->grp_at != v->grp_base) {
        v->grp_at = v->grp_base;
        v->grp_d0 = v->grp_d;
        v->grp_col = col;
      }
    }
  }
  LLVMValueRef last = NULL;
  for (uint32_t i = 0; i < c->a_dma; i++) {
    if (!v->rm_fold_a && v->ma.kin_r[i] != last) {
      last = v->ma.kin_r[i];
      cj_im2col_col_init(g, &v->ic, LLVMBuildAdd(b, k, last, "k.lane"), NULL, v->k_end, &col);
    }
    LLVMValueRef voff = cj_im2col_voffset(g, &v->ic, &v->arow[i], &col, CJ_CONV_OOB);
    cj_cv_xfer(v, v->xr, v->lds_a[st], i, voff, out ? &out[i] : NULL);
  }
}

/* Row-major stage: the B loads of K step kt (brow[] holds kin_r's bytes);
 * k < k_end per step where the reduction is whole steps, else per lane. */
static void cj_cv_issue_rm_b(cj_cv *v, LLVMValueRef kt, uint32_t st, LLVMValueRef *out) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  LLVMValueRef k = cj_cv_k(v, &v->mb, kt, 0);
  LLVMValueRef kb = LLVMBuildMul(b, k, cj_c32(g, c->elem_bytes), "");
  int whole = c->g.crs % c->tile_k == 0;
  LLVMValueRef okk = whole ? LLVMBuildICmp(b, LLVMIntULT, k, v->k_end, "") : NULL;
  for (uint32_t i = 0; i < c->b_dma; i++) {
    LLVMValueRef ok = okk ? okk
                          : LLVMBuildICmp(b, LLVMIntULT, LLVMBuildAdd(b, k, v->mb.kin_r[i], ""), v->k_end, "");
    if (v->bok[i]) ok = LLVMBuildAnd(b, ok, v->bok[i], "");
    LLVMValueRef off = LLVMBuildAdd(b, v->brow[i], kb, "");
    cj_cv_xfer(v, v->wr, v->lds_b[st], i, cj_irb_oob(g, ok, off, CJ_CONV_OOB), out ? &out[c->a_dma + i] : NULL);
  }
}

/* Issue the loads of K step kt: DMAs into LDS stage st (out NULL), or
 * (VGPR path) buffer loads into out[0 .. a_dma) (A) and out[a_dma ..) (B). */
void cj_cv_issue(cj_cv *v, LLVMValueRef kt, uint32_t st, LLVMValueRef *out) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  const cj_conv_plan *c = v->c;
  if (c->g.wgrad) {
    cj_cv_issue_wgrad(v, kt, out);
    return;
  }
  if (v->ma.rm) cj_cv_issue_rm_a(v, kt, st, out);
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
  /* Cp % tile_k == 0 (so crs and k_end are whole steps) and no per-lane
   * channel mask: all columns of the step lie in one tap, so it is decoded
   * once and the other columns are constant shifts of it; else one decode
   * per distinct K column. With Cp % (S*tile_k) == 0 too, the S steps of
   * an aligned group (cj_cv_group) lie in one tap: the first decode serves
   * the group, each later step a shift of it with its own k < k_end. */
  int one_tap = c->g.cp % c->tile_k == 0 && !c->g.c_mask;
  int grp = v->grp_base != NULL; /* set only where cj_cv_group_ok */
  uint32_t q0 = CJ_CONV_MAX_KQ;
  for (uint32_t i = 0; !c->channel_gemm && !v->ma.rm && i < c->a_dma; i++) {
    uint32_t q = v->ma.kq[i];
    if (!have[q] && one_tap && q0 < CJ_CONV_MAX_KQ) {
      cj_im2col_col_shift(g, &v->ic, &col[q0], (q - q0) * c->chunk_elems, &col[q]);
      have[q] = 1;
    }
    if (!have[q] && grp && v->grp_at == v->grp_base && v->grp_d > v->grp_d0) {
      uint32_t dk = (v->grp_d - v->grp_d0) * c->tile_k + (q - v->ma.kq[0]) * c->chunk_elems;
      cj_im2col_col_shift(g, &v->ic, &v->grp_col, dk, &col[q]);
      col[q].valid = LLVMBuildICmp(b, LLVMIntULT, cj_cv_k(v, &v->ma, kt, i), v->k_end, "k.in");
      have[q] = 1;
      q0 = q;
    }
    if (!have[q]) {
      cj_im2col_col_init(g, &v->ic, cj_cv_k(v, &v->ma, kt, i), v->ma.kin, v->k_end, &col[q]);
      have[q] = 1;
      q0 = q;
      if (grp && v->grp_at != v->grp_base) {
        v->grp_at = v->grp_base;
        v->grp_d0 = v->grp_d;
        v->grp_col = col[q]; /* decoded for instruction 0, column kq[0] */
      }
    }
    LLVMValueRef voff = cj_im2col_voffset(g, &v->ic, &v->arow[i % v->ma.period], &col[q], CJ_CONV_OOB);
    cj_cv_xfer(v, v->xr, v->lds_a[st], i, voff, out ? &out[i] : NULL);
  }
  if (v->mb.rm) {
    cj_cv_issue_rm_b(v, kt, st, out);
    return;
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

int cj_cv_group_ok(const cj_cv *v) {
  const cj_conv_plan *c = v->c;
  int up = c->g.up[0] > 1 || c->g.up[1] > 1 || c->g.up[2] > 1;
  return c->prefetch && !up && !c->g.wgrad && !c->channel_gemm && !c->g.c_mask &&
         c->g.cp % (c->stages * c->tile_k) == 0;
}

void cj_cv_group(cj_cv *v, LLVMValueRef base, uint32_t d) {
  v->grp_base = base;
  v->grp_d = d;
  if (!base) v->grp_at = NULL; /* a later group decodes afresh */
}

/* Per-lane byte offset of the MFMA operands inside a [kq][row][16 B] stage
 * of `rows` rows, for fragment block 0 and K slice 0: lane l reads row
 * wbase + l%16 at k0 = (l/16)*k_per_lane (the MFMA row's layout), i.e.
 * kq = k0/chunk and byte (k0%chunk)*elem_bytes. Block b and slice kk add the
 * constant b*256 + kk*(mfma_k/chunk)*rows*16, which the ds_read offset field
 * absorbs (one address VGPR per operand). */
LLVMValueRef cj_cv_lane_off(cj_cv *v, uint32_t rows, LLVMValueRef wbase) {
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

void cj_cv_op_offs(cj_cv *v, const cj_cv_map *mp, uint32_t rows, LLVMValueRef wbase, LLVMValueRef lds0,
                   LLVMValueRef *op, LLVMValueRef *op_rm) {
  if (mp->rm) {
    cj_cv_rm_lane_offs(v, wbase, lds0, op_rm);
    return;
  }
  LLVMValueRef off = cj_cv_lane_off(v, rows, wbase);
  *op = cj_irb_opaque(v->g, LLVMBuildAdd(v->b, off, LLVMBuildPtrToInt(v->b, lds0, v->g->i32, ""), ""));
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
LLVMValueRef cj_cv_write_lane(cj_cv *v, cj_cv_map *mp, LLVMValueRef lds0) {
  cj_irb *g = v->g;
  LLVMBuilderRef b = v->b;
  if (mp->rm) { /* lane-contiguous, as the DMA writes */
    LLVMValueRef base = LLVMBuildAdd(b, LLVMBuildMul(b, v->tid, cj_c32(g, 16), ""),
                                     LLVMBuildPtrToInt(b, lds0, g->i32, ""), "wr.lane");
    /* a swapped piece: half h at base + (8h ^ 8*swap), one offset per
     * distinct swap flag (the same flag shares its offsets) */
    for (uint32_t i = 0; i < mp->ndma; i++) {
      mp->wr_sw[i][0] = mp->wr_sw[i][1] = NULL;
      if (!mp->swap[i]) continue;
      if (i && mp->swap[i] == mp->swap[i - 1]) {
        mp->wr_sw[i][0] = mp->wr_sw[i - 1][0];
        mp->wr_sw[i][1] = mp->wr_sw[i - 1][1];
        continue;
      }
      LLVMValueRef s8 = LLVMBuildMul(b, LLVMBuildZExt(b, mp->swap[i], g->i32, ""), cj_c32(g, 8), "");
      for (uint32_t h = 0; h < 2; h++)
        mp->wr_sw[i][h] = cj_irb_opaque(g, LLVMBuildAdd(b, base, LLVMBuildXor(b, s8, cj_c32(g, 8 * h), ""), ""));
    }
    return cj_irb_opaque(g, base);
  }
  LLVMValueRef kq = LLVMBuildUDiv(b, mp->kthr, cj_c32(g, v->c->chunk_elems), "");
  LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, kq, cj_c32(g, mp->rows * 16), ""),
                                  LLVMBuildMul(b, mp->row[0], cj_c32(g, cj_cv_row_pitch(v)), ""), "wr.lane");
  return cj_irb_opaque(g, LLVMBuildAdd(b, off, LLVMBuildPtrToInt(b, lds0, g->i32, ""), ""));
}

static void cj_cv_write_map(cj_cv *v, const cj_cv_map *mp, LLVMValueRef lds, LLVMValueRef lds0, LLVMValueRef lane,
                            LLVMValueRef *vals) {
  cj_irb *g = v->g;
  uint32_t pitch = cj_cv_row_pitch(v), rpi = v->c->threads; /* one 16-byte chunk per lane */
  for (uint32_t i = 0; mp->rm && i < mp->ndma; i++) {
    if (mp->swap[i]) { /* the piece's 8-byte halves to their swapped places (cj_cv_rm_map): two
                        * 8-byte writes at per-lane offsets, no per-step select */
      for (uint32_t h = 0; h < 2; h++) {
        LLVMValueRef idx[2] = {cj_c32(g, 2 * h), cj_c32(g, 2 * h + 1)};
        LLVMValueRef half = LLVMBuildShuffleVector(v->b, vals[i], vals[i], LLVMConstVector(idx, 2), "");
        LLVMValueRef p = cj_cv_stage_ptr(v, lds, lds0, mp->wr_sw[i][h], i * rpi * 16);
        LLVMSetAlignment(LLVMBuildStore(v->b, half, p), 8);
      }
      continue;
    }
    LLVMSetAlignment(LLVMBuildStore(v->b, vals[i], cj_cv_stage_ptr(v, lds, lds0, lane, i * rpi * 16)), 16);
  }
  for (uint32_t i = 0; !mp->rm && i < mp->ndma; i++) {
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

/* An odd backward-weight column's 16 bytes from the 20 loaded at its
 * dword-aligned start: dword j = (lo[j+1]:lo[j]) >> sh (sh = 16 for an odd
 * column, 0 otherwise: then the loaded dwords as they are), one
 * v_alignbit_b32 each. */
static LLVMValueRef cj_cv_shift_b(cj_cv *v, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef sh) {
  cj_irb *g = v->g;
  LLVMValueRef w[5], out = LLVMGetPoison(LLVMVectorType(g->i32, 4));
  for (uint32_t j = 0; j < 4; j++) w[j] = LLVMBuildExtractElement(v->b, lo, cj_c32(g, j), "");
  w[4] = hi;
  for (uint32_t j = 0; j < 4; j++) {
    LLVMValueRef a[3] = {w[j + 1], w[j], sh};
    LLVMTypeRef i32 = g->i32;
    out = LLVMBuildInsertElement(v->b, out, cj_irb_call(g, "llvm.fshr", &i32, 1, a, 3), cj_c32(g, j), "");
  }
  return out;
}

/* The registers of one K step (cj_cv_issue's out) into LDS stage st. */
void cj_cv_write(cj_cv *v, uint32_t st, LLVMValueRef *vals) {
  const cj_conv_plan *c = v->c;
  cj_cv_write_map(v, &v->ma, v->lds_a[st], v->lds_a[0], v->wra, vals);
  LLVMValueRef bv[CJ_CONV_MAX_DMA];
  for (uint32_t i = 0; i < c->b_dma; i++)
    bv[i] = c->wg.odd ? cj_cv_shift_b(v, vals[c->a_dma + i], vals[c->a_dma + c->b_dma + i], v->bsh[i % v->mb.period])
                      : vals[c->a_dma + i];
  cj_cv_write_map(v, &v->mb, v->lds_b[st], v->lds_b[0], v->wrb, bv);
}

/* A two-run operand (f8f6f4): one ds_read per run at q[0], q[1],
 * concatenated into the MFMA operand. */
LLVMValueRef cj_cv_load_runs(cj_cv *v, LLVMValueRef q[2]) {
  cj_irb *g = v->g;
  uint32_t run_bytes = v->mf->k_per_lane * v->c->elem_bytes, nel = run_bytes / 4;
  LLVMTypeRef rt = LLVMVectorType(g->i32, nel);
  LLVMValueRef part[2], idx[16];
  for (uint32_t r = 0; r < 2; r++) {
    part[r] = LLVMBuildLoad2(v->b, rt, q[r], "");
    LLVMSetAlignment(part[r], run_bytes);
    cj_cv_tag_read(v, part[r]);
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
    cj_cv_tag_read(v, ld);
    return ld;
  }
  /* Two runs (f8f6f4: k = 16*(l/16) .. +15 and 64 + the same, docs/isa-notes.md §1):
   * one 16-byte read per run, (mfma_k / k_runs) k apart, concatenated. */
  LLVMValueRef q[2];
  for (uint32_t r = 0; r < 2; r++)
    q[r] = cj_irb_lds_ptr(g, p, cj_c32(g, r * (c->mfma_k / v->mf->k_runs / c->chunk_elems) * rows * 16));
  return cj_cv_load_runs(v, q);
}

/* Row-major stage: the operand of fragment block blk, K slice kk from the
 * per-(slice, run) lane offsets (cj_cv_rm_lane_offs): one ds_read per run. */
static LLVMValueRef cj_cv_operand_rm(cj_cv *v, LLVMValueRef lds, LLVMValueRef lds0, const LLVMValueRef *offs,
                                     uint32_t blk, uint32_t kk) {
  const cj_conv_plan *c = v->c;
  uint32_t runs = v->mf->k_runs, rb = c->tile_k * c->elem_bytes, w = v->mf->k_per_lane * c->elem_bytes;
  LLVMValueRef q[2];
  for (uint32_t r = 0; r < runs; r++) {
    uint32_t f = kk * runs + r, cst = blk * 16 * rb;
    if (v->rm_nop == 1) cst += kk * c->mfma_k * c->elem_bytes + r * 4 * w;
    q[r] = cj_cv_stage_ptr(v, lds, lds0, offs[v->rm_nop == 1 ? 0 : f], cst);
  }
  if (runs == 2) return cj_cv_load_runs(v, q);
  LLVMValueRef ld = LLVMBuildLoad2(v->b, v->opty, q[0], "");
  LLVMSetAlignment(ld, w);
  cj_cv_tag_read(v, ld);
  return ld;
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
    cj_cv_tag_read(v, ld);
    vec = LLVMBuildInsertElement(b, vec, ld, cj_c32(g, e), "");
  }
  return LLVMBuildBitCast(b, vec, v->opty, "");
}

/* One MFMA of the plan's row. The f8f6f4 intrinsic is the scaled form
 * (a, b, c, cbsz, blgp, opsel_a, scale_a, opsel_b, scale_b): zero scales
 * select the unscaled instruction (docs/isa-notes.md §1 "Scale operands = 0"); the
 * others take (a, b, c, cbsz, abid, blgp). */
LLVMValueRef cj_cv_mfma(cj_cv *v, LLVMValueRef a, LLVMValueRef b, LLVMValueRef acc) {
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
LLVMValueRef cj_cv_read_a(cj_cv *v, uint32_t st, uint32_t i, uint32_t kk) {
  const cj_conv_plan *c = v->c;
  if (v->ma.rm) return cj_cv_operand_rm(v, v->lds_a[st], v->lds_a[0], v->opa_rm, i, kk);
  return c->channel_gemm ? cj_cv_operand_kmajor(v, v->lds_a[st], v->lds_a[0], v->opa, i, kk)
                         : cj_cv_operand(v, v->lds_a[st], v->lds_a[0], v->opa, c->tile_m, i, kk);
}

LLVMValueRef cj_cv_read_b(cj_cv *v, uint32_t st, uint32_t j, uint32_t kk) {
  if (v->mb.rm) return cj_cv_operand_rm(v, v->lds_b[st], v->lds_b[0], v->opb_rm, j, kk);
  return cj_cv_operand(v, v->lds_b[st], v->lds_b[0], v->opb, v->c->tile_n, j, kk);
}

void cj_cv_read_slice(cj_cv *v, uint32_t st, uint32_t kk, cj_cv_ops *o) {
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
void cj_cv_fence_sched(cj_cv *v) {
  LLVMValueRef zero = cj_c32(v->g, 0);
  cj_irb_call(v->g, "llvm.amdgcn.sched.barrier", NULL, 0, &zero, 1);
}

void cj_cv_compute(cj_cv *v, uint32_t st) {
  const cj_conv_plan *c = v->c;
  for (uint32_t kk = 0; kk < c->tile_k / c->mfma_k; kk++) {
    cj_cv_ops o;
    cj_cv_read_slice(v, st, kk, &o);
    /* the row-major DMA stage: the slice's reads in one batch ahead of its
     * MFMAs (left to itself LLVM splits them in pairs between the MFMAs,
     * one lgkmcnt wait each; docs/performance.md, issue 38d). Not in the
     * rolled loop (there the batch costs 24 VGPRs and 4% of the time),
     * nor for fp8 (the gfx950 NDHWC grouped 256x256 kernel spilled 2),
     * nor below 8 A fragments per wave (128x128: 0.5% slower, MODELLED). */
    if (v->ma.rm && c->load != CJ_CONV_LOAD_VGPR && !c->roll && c->elem_bytes == 2 && c->mi_m >= 8)
      cj_cv_fence_sched(v);
    cj_cv_mma_slice(v, &o);
    /* 1024-thread tiles have 128 VGPRs: read one K slice's operands at a
     * time (no ds_read2 pairing across slices) so they are not all live. */
    if (c->threads >= 1024 && kk + 1 < c->tile_k / c->mfma_k) cj_cv_fence_sched(v);
  }
}

/* n more loop-carried values of loop lp: val[i] becomes the header's phi
 * (its preheader value the old val[i]); the builder is left in the body. */
void cj_cv_loop_phis(cj_cv *v, cj_irb_loop *lp, LLVMValueRef *val, LLVMValueRef *phis, uint32_t n,
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
void cj_cv_acc_loop_begin(cj_cv *v, cj_irb_loop *lp, LLVMValueRef *phis, uint32_t trip) {
  cj_irb_loop_begin(v->g, lp, cj_c32(v->g, 0), cj_c32(v->g, trip), cj_c32(v->g, 1), "kloop");
  cj_cv_loop_phis(v, lp, v->acc, phis, v->c->mi_m * v->c->mi_n, "acc");
}

/* Closes the loop; v->acc then holds the accumulators after it. */
void cj_cv_acc_loop_end(cj_cv *v, cj_irb_loop *lp, LLVMValueRef *phis) {
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(v->b);
  uint32_t nacc = v->c->mi_m * v->c->mi_n;
  for (uint32_t f = 0; f < nacc; f++) LLVMAddIncoming(phis[f], &v->acc[f], &latch, 1);
  cj_irb_loop_end(v->g, lp);
  for (uint32_t f = 0; f < nacc; f++) v->acc[f] = phis[f];
}
