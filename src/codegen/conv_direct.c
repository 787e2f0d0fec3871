/* The direct depthwise conv kernel (plan in kplan_direct.h).
 *
 *   (Cg = C/groups input channels per group: per tap Cg weight vectors,
 *   the x operand of channel i shuffled to lane o = channel (o/M)*Cg + i;
 *   backward data Cg sums per position; docs/kernels.md "Few channels
 *   per group")
 *   grid ceil(items / 256), 256 threads; lane item q -> channel vector
 *   cv = q % ncv (fastest: a wave's loads of one input position are
 *   contiguous), strip q / ncv -> (n, od, oh, ow0 = strip * P).
 *   acc[P] = <vec*M x f32> zeros
 *   for t in 0..T-1 (a counted loop when T > 1: the code stays one depth
 *   plane's):
 *     for r in 0..R-1 (unrolled): the input row (n, id, ih)
 *       for each chunk of tap_chunk taps s0..s1-1:
 *         their weights: one load of vec*M consecutive K per tap, to fp32
 *         for each input position j of the strip's row the chunk reads
 *         (unrolled; j = p*stride + s*dil): one vec-wide load, to fp32,
 *         fma into acc[p] for every (p, s) with that j
 *   epilogue (epilogue.h) per 4 output channels (or per channel), store.
 *
 * Bounds: an input position outside [0, D) x [0, H) x [0, W) (padding)
 * and a lane past `items` read zero through the buffer range check
 * (offset CJ_CONV_OOB); an output past Wo or a lane past `items` stores
 * to CJ_CONV_OOB (dropped). Sizes are constants: every division is by a
 * constant. */
#include "codegen/codegen.h"
#include "codegen/epilogue.h"
#include "codegen/irb.h"

typedef struct dk {
  cj_irb *g;
  LLVMBuilderRef b;
  const cj_kplan *p;
  const cj_direct_plan *c;
  const cj_conv_geom *G;
} dk;

static LLVMValueRef c32(dk *k, uint32_t v) { return cj_c32(k->g, v); }
static LLVMValueRef mul(dk *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildMul(k->b, a, b, ""); }
static LLVMValueRef add(dk *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(k->b, a, b, ""); }
static LLVMValueRef ult(dk *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildICmp(k->b, LLVMIntULT, a, b, ""); }
static LLVMValueRef and1(dk *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAnd(k->b, a, b, ""); }

static uint32_t gcd32(uint32_t a, uint32_t b) {
  while (b) {
    uint32_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Elements lo .. lo+n-1 of vector v (n >= 1) as an <n x T> vector. */
static LLVMValueRef sub_vec(dk *k, LLVMValueRef v, uint32_t lo, uint32_t n) {
  LLVMValueRef idx[64];
  for (uint32_t i = 0; i < n; i++) idx[i] = c32(k, lo + i);
  return LLVMBuildShuffleVector(k->b, v, LLVMGetPoison(LLVMTypeOf(v)), LLVMConstVector(idx, n), "");
}

/* n elements of `eb` bytes at byte offset off (i32) of resource rsrc, in
 * loads of `align` bytes (a power of two dividing n*eb and every lane's
 * offset), as <n x i(8*eb)>. */
static LLVMValueRef load_elems(dk *k, LLVMValueRef rsrc, LLVMValueRef off, uint32_t n, uint32_t eb, uint32_t align) {
  cj_irb *g = k->g;
  LLVMTypeRef et = eb == 4 ? g->i32 : g->i16;
  uint32_t piece = align > 16 ? 16 : align, total = n * eb;
  if (piece > total) piece = total;
  uint32_t pe = piece / eb, np = total / piece;
  LLVMValueRef parts[64];
  for (uint32_t i = 0; i < np; i++) {
    LLVMValueRef o = i ? add(k, off, c32(k, i * piece)) : off;
    LLVMValueRef v = cj_irb_buf_load(g, cj_irb_mem_type(g, piece), rsrc, o, NULL, 0);
    parts[i] = LLVMBuildBitCast(k->b, v, LLVMVectorType(et, pe), "");
  }
  if (np == 1) return parts[0];
  LLVMValueRef idx[64];
  for (uint32_t i = 0; i < n; i++) idx[i] = c32(k, i);
  LLVMValueRef all = LLVMGetPoison(LLVMVectorType(et, n));
  for (uint32_t i = 0; i < np; i++) {
    /* widen part i to n lanes, then blend its lanes in */
    LLVMValueRef wi[64];
    for (uint32_t j = 0; j < n; j++) wi[j] = c32(k, j < pe ? j : 0);
    LLVMValueRef wide = LLVMBuildShuffleVector(k->b, parts[i], LLVMGetPoison(LLVMTypeOf(parts[i])),
                                               LLVMConstVector(wi, n), "");
    for (uint32_t j = 0; j < n; j++) idx[j] = c32(k, (j >= i * pe && j < (i + 1) * pe) ? n + j - i * pe : j);
    all = LLVMBuildShuffleVector(k->b, all, wide, LLVMConstVector(idx, n), "");
  }
  return all;
}

/* Stores v (<n x iN>, n elements of eb bytes) at byte offset off in pieces
 * of `align` bytes. */
static void store_elems(dk *k, LLVMValueRef v, LLVMValueRef rsrc, LLVMValueRef off, uint32_t n, uint32_t eb,
                        uint32_t align) {
  cj_irb *g = k->g;
  uint32_t piece = align > 16 ? 16 : align, total = n * eb;
  if (piece > total) piece = total;
  uint32_t pe = piece / eb, np = total / piece;
  for (uint32_t i = 0; i < np; i++) {
    LLVMValueRef part = sub_vec(k, v, i * pe, pe);
    LLVMValueRef o = i ? add(k, off, c32(k, i * piece)) : off;
    cj_irb_buf_store(g, LLVMBuildBitCast(k->b, part, cj_irb_mem_type(g, piece), ""), rsrc, o, NULL, 0);
  }
}

/* <n x i16> bf16 or f16 bits -> <n x float> (exact). */
static LLVMValueRef to_f32(dk *k, LLVMValueRef bits, uint32_t n) {
  cj_irb *g = k->g;
  if (k->G->dtype == CONVJIT_DTYPE_F16) {
    /* Each converted value opaque: LLVM would otherwise fold the fpext into
     * every fma that reads it (v_fma_mix_f32: one unpacked fma per use
     * instead of one conversion and packed fmas; and not in the emulator) */
    LLVMValueRef f = LLVMBuildFPExt(k->b, LLVMBuildBitCast(k->b, bits, LLVMVectorType(g->f16, n), ""),
                                    LLVMVectorType(g->f32, n), "");
    for (uint32_t i = 0; i < n; i++)
      f = LLVMBuildInsertElement(k->b, f, cj_irb_opaque(g, LLVMBuildExtractElement(k->b, f, c32(k, i), "")),
                                 c32(k, i), "");
    return f;
  }
  LLVMValueRef w = LLVMBuildZExt(k->b, bits, LLVMVectorType(g->i32, n), "");
  LLVMValueRef sh[64];
  for (uint32_t i = 0; i < n; i++) sh[i] = c32(k, 16);
  w = LLVMBuildShl(k->b, w, LLVMConstVector(sh, n), "");
  return LLVMBuildBitCast(k->b, w, LLVMVectorType(g->f32, n), "");
}

/* A tap's accw loaded weights as fp32: wf32's are (the pack widened them), else converted. */
static LLVMValueRef w_f32(dk *k, LLVMValueRef raw) {
  if (!k->c->wf32) return to_f32(k, raw, k->c->accw);
  return LLVMBuildBitCast(k->b, raw, LLVMVectorType(k->g->f32, k->c->accw), "");
}

/* The <vec*M> operand of input channel ci of each of a lane's vec groups
 * from its <vec*Cg> x channels xv: lane o reads channel (o/M)*Cg + ci. */
static LLVMValueRef chan_expand(dk *k, LLVMValueRef xv, uint32_t ci) {
  const uint32_t M = k->c->mult, cg = k->c->cg, accw = k->c->accw;
  if (M == 1 && cg == 1) return xv;
  LLVMValueRef idx[64];
  for (uint32_t o = 0; o < accw; o++) idx[o] = c32(k, o / M * cg + ci);
  return LLVMBuildShuffleVector(k->b, xv, LLVMGetPoison(LLVMTypeOf(xv)), LLVMConstVector(idx, accw), "");
}

static LLVMValueRef fma_v(dk *k, LLVMValueRef a, LLVMValueRef b, LLVMValueRef acc) {
  LLVMTypeRef t = LLVMTypeOf(acc);
  LLVMValueRef args[3] = {a, b, acc};
  return cj_irb_call(k->g, "llvm.fma", &t, 1, args, 3);
}

/* The epilogue of lane outputs acc (<outs x f32>) of output position pos
 * (i32, valid ok) and first channel k0, stored to y. */
static void store_out(dk *k, LLVMValueRef acc, LLVMValueRef pos, LLVMValueRef nn, LLVMValueRef sp, LLVMValueRef k0,
                      LLVMValueRef ok, const cj_epi_rsrc *er, LLVMValueRef yr) {
  cj_irb *g = k->g;
  const cj_direct_plan *c = k->c;
  const cj_conv_geom *G = k->G;
  const cj_epilogue *e = &c->epi;
  const uint32_t outs = c->outs, ydt = (uint32_t)cj_epi_out_dtype(e), yb = cj_dtype_bytes((convjit_dtype)ydt);
  const uint32_t K = c->bwd ? G->groups * c->cg : G->k_all; /* the output's channels */
  const uint64_t odhw = c->bwd ? G->dhw : G->odhw;
  LLVMValueRef chan[CJ_EPI_MAX_OPS];
  if (ydt == CONVJIT_DTYPE_F16) /* else LLVM fuses the last fma with the f16 rounding (v_fma_mixlo_f16) */
    for (uint32_t o = 0; o < outs; o++)
      acc = LLVMBuildInsertElement(k->b, acc, cj_irb_opaque(g, LLVMBuildExtractElement(k->b, acc, c32(k, o), "")),
                                   c32(k, o), "");
  if (G->y_ndhwc && outs % 4 == 0) {
    LLVMValueRef el0 = add(k, mul(k, pos, c32(k, K)), k0);
    LLVMValueRef res[16] = {0};
    for (uint32_t q = 0; q < outs / 4; q++) {
      LLVMValueRef a4 = sub_vec(k, acc, 4 * q, 4);
      cj_epi_load_channel(g, e, er, add(k, k0, c32(k, 4 * q)), 4, chan);
      LLVMValueRef zoff = cj_irb_oob(g, ok, mul(k, add(k, el0, c32(k, 4 * q)), c32(k, yb)), CJ_CONV_OOB);
      LLVMValueRef z = cj_epi_load_z(g, e, er, zoff, ok, 4);
      res[q] = cj_epi_apply(g, e, a4, chan, z);
    }
    LLVMValueRef all = res[0];
    if (outs > 4) { /* concatenate the <4 x T> results */
      LLVMValueRef idx[64];
      for (uint32_t i = 0; i < 8; i++) idx[i] = c32(k, i);
      LLVMValueRef cat[8];
      uint32_t m = outs / 4;
      for (uint32_t q = 0; q < m; q++) cat[q] = res[q];
      uint32_t w = 4;
      while (m > 1) {
        for (uint32_t i = 0; i < 2 * w; i++) idx[i] = c32(k, i);
        for (uint32_t q = 0; q < m / 2; q++)
          cat[q] = LLVMBuildShuffleVector(k->b, cat[2 * q], cat[2 * q + 1], LLVMConstVector(idx, 2 * w), "");
        m /= 2;
        w *= 2;
      }
      all = cat[0];
    }
    uint32_t align = gcd32(gcd32(outs * yb, K * yb), 16);
    LLVMValueRef off = cj_irb_oob(g, ok, mul(k, el0, c32(k, yb)), CJ_CONV_OOB);
    store_elems(k, all, yr, off, outs, yb, align);
    return;
  }
  /* element by element (NCDHW y, or vec*M not a multiple of 4), in groups
   * of 4 channels through the epilogue's vector form (as the NDHWC path) */
  for (uint32_t o0 = 0; o0 < outs; o0 += 4) {
    uint32_t n4 = outs - o0 < 4 ? outs - o0 : 4;
    LLVMValueRef a4 = LLVMGetPoison(LLVMVectorType(g->f32, 4)), z = NULL, off[4];
    cj_epi_load_channel(g, e, er, add(k, k0, c32(k, o0)), 4, chan);
    for (uint32_t i = 0; i < 4; i++) {
      uint32_t o = o0 + (i < n4 ? i : 0);
      a4 = LLVMBuildInsertElement(k->b, a4, LLVMBuildExtractElement(k->b, acc, c32(k, o), ""), c32(k, i), "");
      LLVMValueRef ch = add(k, k0, c32(k, o));
      LLVMValueRef el = G->y_ndhwc ? add(k, mul(k, pos, c32(k, K)), ch)
                                   : add(k, mul(k, add(k, mul(k, nn, c32(k, K)), ch), c32(k, (uint32_t)odhw)), sp);
      off[i] = cj_irb_oob(g, ok, mul(k, el, c32(k, yb)), CJ_CONV_OOB);
      LLVMValueRef zi = cj_epi_load_z(g, e, er, off[i], ok, 1);
      if (!zi) continue;
      if (!z) z = LLVMGetPoison(LLVMVectorType(g->f32, 4));
      z = LLVMBuildInsertElement(k->b, z, zi, c32(k, i), "");
    }
    LLVMValueRef v = cj_epi_apply(g, e, a4, chan, z);
    for (uint32_t i = 0; i < n4; i++)
      cj_irb_buf_store(g, LLVMBuildExtractElement(k->b, v, c32(k, i), ""), yr, off[i], NULL, 0);
  }
}

/* The input coordinate of output coordinate o (i32) and tap term tdil =
 * tap * dil in one dim, and whether it exists: forward o*st - pad + tdil in
 * [0, extent); backward data (o + pad - tdil) / st when that divides and
 * lands in [0, extent). Negative values wrap high: unsigned compares. */
static LLVMValueRef in_coord(dk *k, LLVMValueRef o, uint32_t pad, LLVMValueRef tdil, uint32_t st, uint32_t extent,
                             LLVMValueRef *ok) {
  LLVMBuilderRef b = k->b;
  if (!k->c->bwd) {
    LLVMValueRef v = add(k, LLVMBuildSub(b, mul(k, o, c32(k, st)), c32(k, pad), ""), tdil);
    *ok = ult(k, v, c32(k, extent));
    return v;
  }
  LLVMValueRef num = LLVMBuildSub(b, add(k, o, c32(k, pad)), tdil, "");
  if (st == 1) {
    *ok = ult(k, num, c32(k, extent));
    return num;
  }
  LLVMValueRef q = LLVMBuildUDiv(b, num, c32(k, st), "");
  LLVMValueRef exact = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildURem(b, num, c32(k, st), ""), c32(k, 0), "");
  LLVMValueRef nonneg = LLVMBuildICmp(b, LLVMIntSGE, num, c32(k, 0), "");
  *ok = and1(k, and1(k, nonneg, exact), ult(k, q, c32(k, extent)));
  return q;
}

static int64_t floordiv(int64_t a, int64_t f) { return a >= 0 ? a / f : -((-a + f - 1) / f); }

/* Whether output p of the strip and tap s meet at input position j of the
 * strip's row (relative to its first position: forward ow0*st - pad,
 * backward data ow0 / st). */
static int pair_pos(const cj_direct_plan *c, uint32_t p, uint32_t s, int64_t *j) {
  const int64_t st = c->g.stride[2], dl = c->g.dil[2], pad = cj_conv_pad(c->g.pad_lo[2]);
  if (!c->bwd) {
    *j = (int64_t)p * st + (int64_t)s * dl;
    return 1;
  }
  int64_t q = (int64_t)p + pad - (int64_t)s * dl;
  if (((q % st) + st) % st) return 0;
  *j = floordiv(q, st);
  return 1;
}

/* bal: workgroup w's items are [w*items/G, (w+1)*items/G) (G the grid,
 * 64-bit products of uniform values: scalar code); lane tid takes the
 * first plus tid, valid below the next workgroup's first. */
static LLVMValueRef lane_item_balanced(dk *k, LLVMValueRef *valid) {
  cj_irb *g = k->g;
  LLVMBuilderRef b = k->b;
  LLVMValueRef w = LLVMBuildZExt(b, cj_irb_wgid(g, 0), g->i64, "");
  LLVMValueRef items = cj_c64(g, k->c->items), grid = cj_c64(g, k->p->grid[0]);
  LLVMValueRef lo = LLVMBuildUDiv(b, LLVMBuildMul(b, w, items, ""), grid, "");
  LLVMValueRef hi = LLVMBuildUDiv(b, LLVMBuildMul(b, LLVMBuildAdd(b, w, cj_c64(g, 1), ""), items, ""), grid, "");
  LLVMValueRef lo32 = LLVMBuildTrunc(b, lo, g->i32, ""), hi32 = LLVMBuildTrunc(b, hi, g->i32, "");
  LLVMValueRef q = add(k, lo32, cj_irb_tid(g, 0));
  *valid = ult(k, q, hi32);
  return q;
}

/* The lane's item q and whether it has work; bal: the lanes past the
 * workgroup's share branch to *done (exec-masked: no loads, no stores). */
static LLVMValueRef lane_item(dk *k, LLVMValueRef *valid, LLVMBasicBlockRef *done) {
  cj_irb *g = k->g;
  if (!k->c->bal) {
    LLVMValueRef q = add(k, mul(k, cj_irb_wgid(g, 0), c32(k, CJ_DIRECT_THREADS)), cj_irb_tid(g, 0));
    *valid = ult(k, q, c32(k, (uint32_t)k->c->items));
    return q;
  }
  LLVMValueRef q = lane_item_balanced(k, valid);
  LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "work");
  *done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "done");
  LLVMBuildCondBr(k->b, *valid, work, *done);
  LLVMPositionBuilderAtEnd(k->b, work);
  return q;
}

/* Backward data: dx channel o of the lane (group o / Cg, channel o % Cg)
 * is its group's M dy channels' sums of a[o % Cg] (in order j = 0 ..
 * M-1): <outs x f32> from the position's Cg sums of <vec*M x f32>. */
static LLVMValueRef reduce_mult(dk *k, const LLVMValueRef *a) {
  const uint32_t outs = k->c->outs, M = k->c->mult, cg = k->c->cg;
  LLVMValueRef red = LLVMGetPoison(LLVMVectorType(k->g->f32, outs));
  for (uint32_t o = 0; o < outs; o++) {
    LLVMValueRef ao = a[o % cg];
    const uint32_t l0 = o / cg * M;
    LLVMValueRef v = LLVMBuildExtractElement(k->b, ao, c32(k, l0), "");
    for (uint32_t jm = 1; jm < M; jm++)
      v = LLVMBuildFAdd(k->b, v, LLVMBuildExtractElement(k->b, ao, c32(k, l0 + jm), ""), "");
    red = LLVMBuildInsertElement(k->b, red, v, c32(k, o), "");
  }
  return red;
}

/* The forward main loop's values for one depth plane (plane_pipelined). */
typedef struct drow {
  LLVMValueRef xr, wr, xc, wk0, iw0, nn, id, okd, oh, wtap_t;
  uint32_t walign, xalign;
} drow;

/* One input row's loads, raw bits: the weights of its S taps (vec*M
 * consecutive K each) and the strip row's input positions j < span that
 * some (output, tap) pair reads (NULL: none does). */
typedef struct drow_ld {
  LLVMValueRef w[CJ_DIRECT_MAX_TAPS], x[CJ_DIRECT_MAX_PF_SPAN];
} drow_ld;

static void row_loads(dk *k, const drow *d, uint32_t r, drow_ld *ld) {
  cj_irb *g = k->g;
  const cj_direct_plan *c = k->c;
  const cj_conv_geom *G = k->G;
  const uint32_t eb = c->elem_bytes, S = G->s, K = G->k_all;
  LLVMValueRef okh;
  LLVMValueRef ih = in_coord(k, d->oh, G->pad_lo[1], c32(k, r * G->dil[1]), G->stride[1], G->h, &okh);
  okh = and1(k, d->okd, okh);
  LLVMValueRef rowbase = mul(k, add(k, mul(k, add(k, mul(k, d->nn, c32(k, G->d)), d->id), c32(k, G->h)), ih),
                             c32(k, G->w));
  for (uint32_t s = 0; s < S; s++) {
    LLVMValueRef tap = add(k, d->wtap_t, c32(k, r * S + s));
    const uint32_t web = c->wf32 ? 4 : eb; /* wf32: the pack's fp32 weights */
    ld->w[s] = load_elems(k, d->wr, mul(k, add(k, mul(k, tap, c32(k, K)), d->wk0), c32(k, web)), c->accw, web,
                          d->walign);
  }
  int64_t j;
  for (uint32_t i = 0; i < c->span; i++) ld->x[i] = NULL;
  /* positions inside [0, W) in every strip (j >= pad, and the last strip's
   * first position + j < W) need no range check of their own: the row's
   * offset, selected once, plus a constant (CJ_CONV_OOB + j*C*2 stays past
   * the tensor and below 2^32 while the span's bytes are below 2^28) */
  const uint32_t cb = G->groups * eb;
  const int64_t pad = cj_conv_pad(G->pad_lo[2]), last0 = (int64_t)(c->strips - 1) * c->strip * G->stride[2] - pad;
  const int fast = (uint64_t)c->span * cb < (1u << 28);
  LLVMValueRef rowoff =
      fast ? cj_irb_oob(g, okh, add(k, mul(k, add(k, rowbase, d->iw0), c32(k, cb)), d->xc), CJ_CONV_OOB) : NULL;
  for (uint32_t s = 0; s < S; s++)
    for (uint32_t pp = 0; pp < c->strip; pp++)
      if (pair_pos(c, pp, s, &j) && !ld->x[j]) {
        LLVMValueRef off;
        if (fast && j >= pad && last0 + j < (int64_t)G->w) {
          off = add(k, rowoff, c32(k, (uint32_t)j * cb));
        } else {
          LLVMValueRef iw = add(k, d->iw0, c32(k, (uint32_t)j));
          LLVMValueRef ok = and1(k, okh, ult(k, iw, c32(k, G->w)));
          off = cj_irb_oob(g, ok, add(k, mul(k, add(k, rowbase, iw), c32(k, cb)), d->xc), CJ_CONV_OOB);
        }
        ld->x[j] = load_elems(k, d->xr, off, c->vec, eb, d->xalign);
      }
}

/* The fmas of one loaded row into acc[p]: for each output p the taps in
 * order s = 0 .. S-1 (the chunked loop's order: the same fp32 sums). */
static void row_fmas(dk *k, const drow_ld *ld, LLVMValueRef *acc) {
  const cj_direct_plan *c = k->c;
  const uint32_t S = k->G->s;
  LLVMValueRef wv[CJ_DIRECT_MAX_TAPS];
  for (uint32_t s = 0; s < S; s++) wv[s] = w_f32(k, ld->w[s]);
  for (uint32_t j = 0; j < c->span; j++) {
    if (!ld->x[j]) continue;
    LLVMValueRef xe = to_f32(k, ld->x[j], c->vec);
    xe = chan_expand(k, xe, 0); /* Cg = 1: channel o/M */
    int64_t jj;
    for (uint32_t s = 0; s < S; s++)
      for (uint32_t pp = 0; pp < c->strip; pp++)
        if (pair_pos(c, pp, s, &jj) && jj == (int64_t)j) acc[pp] = fma_v(k, xe, wv[s], acc[pp]);
  }
}

/* LLVM's scheduler moves nothing across it (llvm.amdgcn.sched.barrier 0). */
static void sched_fence(dk *k) {
  LLVMValueRef zero = c32(k, 0);
  cj_irb_call(k->g, "llvm.amdgcn.sched.barrier", NULL, 0, &zero, 1);
}

/* hr: input row u of a plane's window (u = q*sh + r: output row q of the
 * lane's hr, tap row r; H dilation 1) into every output row reading it.
 * Tap row r's weights are converted at u = r (output row 0's first use)
 * into wc[r] and kept for the rows after; per output the taps still run
 * in order (r, then s), so the sums are the one-row kernel's. */
static void row_fmas_hr(dk *k, const drow_ld *ld, uint32_t u,
                        LLVMValueRef (*wc)[CJ_DIRECT_MAX_TAPS], LLVMValueRef *acc) {
  const cj_direct_plan *c = k->c;
  const uint32_t S = k->G->s, R = k->G->r, sh = k->G->stride[1], P = c->strip;
  for (uint32_t s = 0; u < R && s < S; s++) wc[u][s] = w_f32(k, ld->w[s]);
  for (uint32_t j = 0; j < c->span; j++) {
    if (!ld->x[j]) continue;
    LLVMValueRef xe = to_f32(k, ld->x[j], c->vec);
    xe = chan_expand(k, xe, 0); /* Cg = 1: channel o/M */
    int64_t jj;
    for (uint32_t q = 0; q < c->hr && q * sh <= u; q++) {
      const uint32_t r = u - q * sh;
      for (uint32_t s = 0; r < R && s < S; s++)
        for (uint32_t pp = 0; pp < P; pp++)
          if (pair_pos(c, pp, s, &jj) && jj == (int64_t)j) acc[q * P + pp] = fma_v(k, xe, wc[r][s], acc[q * P + pp]);
    }
  }
}

/* hr: the nd planes' windows of (hr-1)*sh + R input rows each (d[t]: plane
 * t's), pipelined as plane_pipelined's rows (row u's loads are row_loads'
 * of tap row u: its weights are used only while u < R). */
static void rows_hr(dk *k, const drow *d, uint32_t nd, LLVMValueRef *acc) {
  const uint32_t U = (k->c->hr - 1) * k->G->stride[1] + k->G->r, n = nd * U;
  LLVMValueRef wc[CJ_DIRECT_MAX_TAPS][CJ_DIRECT_MAX_TAPS];
  drow_ld ld[2];
  row_loads(k, &d[0], 0, &ld[0]);
  for (uint32_t i = 0; i < n; i++) {
    if (i + 1 < n) row_loads(k, &d[(i + 1) / U], (i + 1) % U, &ld[(i + 1) & 1]);
    sched_fence(k);
    row_fmas_hr(k, &ld[i & 1], i % U, wc, acc);
    sched_fence(k);
  }
}

/* Forward, pf = 1: the R input rows of a depth plane, each row's loads
 * issued together and the next row's before this row's fmas (a fence on
 * either side keeps LLVM's scheduler from sinking them to their uses,
 * which serialises a load's latency per input position). */
static void plane_pipelined(dk *k, const drow *d, LLVMValueRef *acc) {
  const uint32_t R = k->G->r;
  drow_ld ld[2];
  if (k->c->hr) {
    rows_hr(k, d, 1, acc);
    return;
  }
  row_loads(k, d, 0, &ld[0]);
  for (uint32_t r = 0; r < R; r++) {
    if (r + 1 < R) row_loads(k, d, r + 1, &ld[(r + 1) & 1]);
    sched_fence(k);
    row_fmas(k, &ld[r & 1], acc);
    sched_fence(k);
  }
}

/* Forward, pf = 2: the T depth planes unrolled, their T*R input rows
 * pipelined as one plane's (the next row's loads before this row's fmas,
 * across the planes' boundaries too). d's id, okd and wtap_t are replaced
 * per plane. */
static void planes_unrolled(dk *k, const drow *d0, LLVMValueRef od, LLVMValueRef valid, LLVMValueRef *acc) {
  const cj_conv_geom *G = k->G;
  const uint32_t T = G->t, R = G->r, n = T * R;
  drow d[CJ_DIRECT_MAX_TAPS] = {{0}};
  for (uint32_t t = 0; t < T; t++) {
    LLVMValueRef okd;
    d[t] = *d0;
    d[t].id = in_coord(k, od, G->pad_lo[0], c32(k, t * G->dil[0]), G->stride[0], G->d, &okd);
    d[t].okd = and1(k, valid, okd);
    d[t].wtap_t = c32(k, t * R * G->s);
  }
  if (k->c->hr) {
    rows_hr(k, d, T, acc);
    return;
  }
  drow_ld ld[2];
  row_loads(k, &d[0], 0, &ld[0]);
  for (uint32_t i = 0; i < n; i++) {
    if (i + 1 < n) row_loads(k, &d[(i + 1) / R], (i + 1) % R, &ld[(i + 1) & 1]);
    sched_fence(k);
    row_fmas(k, &ld[i & 1], acc);
    sched_fence(k);
  }
}

/* Opens counted loop lp (0 .. n-1, step 1) and, at its head, n_acc
 * accumulator phis of type vf starting at zero: phi[i] (the sums entering
 * an iteration) and acc[i] (= phi[i], to update in the body). Leaves the
 * builder in the loop body. */
static void acc_loop_begin(dk *k, cj_irb_loop *lp, uint32_t n, const char *name, LLVMTypeRef vf, uint32_t n_acc,
                           LLVMValueRef *phi, LLVMValueRef *acc) {
  LLVMValueRef zero = LLVMConstNull(vf);
  cj_irb_loop_begin(k->g, lp, c32(k, 0), c32(k, n), c32(k, 1), name);
  LLVMPositionBuilderBefore(k->b, LLVMGetNextInstruction(lp->iv));
  for (uint32_t i = 0; i < n_acc; i++) {
    phi[i] = LLVMBuildPhi(k->b, vf, "acc");
    LLVMAddIncoming(phi[i], &zero, &lp->pre, 1);
    acc[i] = phi[i];
  }
  LLVMPositionBuilderAtEnd(k->b, lp->body);
}

/* Backward weight, stage 1: lane (cv, group pg) of tap row (t, r) =
 * wgid.y and tap chunk wgid.z sums dy[pos][k] * x[pos's input][c(k)] over
 * its group's positions pos = pg, pg + npg, ... (a counted loop, in order)
 * for the chunk's taps, then stores the partials [pg][tap][K] (fp32). */
static void wgrad_partial(dk *k) {
  cj_irb *g = k->g;
  LLVMBuilderRef b = k->b;
  const cj_kplan *p = k->p;
  const cj_direct_plan *c = k->c;
  const cj_conv_geom *G = k->G;
  const uint32_t eb = c->elem_bytes, vec = c->vec, accw = c->accw, S = G->s, R = G->r, cg = c->cg;
  const uint32_t C = G->groups * cg, K = G->k_all, taps = G->taps, wtaps = taps * cg, lin = vec * cg;
  LLVMTypeRef vf = LLVMVectorType(g->f32, accw);
  LLVMValueRef q = add(k, mul(k, cj_irb_wgid(g, 0), c32(k, CJ_DIRECT_THREADS)), cj_irb_tid(g, 0));
  LLVMValueRef valid = ult(k, q, c32(k, (uint32_t)c->items));
  LLVMValueRef cv = LLVMBuildURem(b, q, c32(k, c->ncv), "cv");
  LLVMValueRef pg = LLVMBuildUDiv(b, q, c32(k, c->ncv), "pg");
  LLVMValueRef trow = cj_irb_wgid(g, 1), chunk = cj_irb_wgid(g, 2);
  LLVMValueRef tt = LLVMBuildUDiv(b, trow, c32(k, R), "t"), rr = LLVMBuildURem(b, trow, c32(k, R), "r");
  LLVMValueRef s0 = mul(k, chunk, c32(k, c->tap_chunk));
  LLVMValueRef xr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_X), cj_c64(g, c->x_bytes));
  LLVMValueRef dyr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_DY), cj_c64(g, c->y_bytes));
  LLVMValueRef wsr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_WORKSPACE),
                                 cj_c64(g, (uint64_t)c->npg * wtaps * K * 4));
  LLVMValueRef xc = mul(k, cv, c32(k, lin * eb)), kc = mul(k, cv, c32(k, accw));
  const uint32_t xalign = gcd32(gcd32(lin * eb, C * eb), 16), dalign = gcd32(gcd32(accw * eb, K * eb), 16);
  /* the tap row's input offsets */
  LLVMValueRef tdil_d = mul(k, tt, c32(k, G->dil[0])), rdil_h = mul(k, rr, c32(k, G->dil[1]));
  const uint32_t nsum = c->tap_chunk * cg, nacc = nsum + (c->db ? 1 : 0); /* sum si*Cg + ci, then db's */
  LLVMValueRef acc[CJ_DIRECT_MAX_TAPS_1D + 1], phi[CJ_DIRECT_MAX_TAPS_1D + 1];
  cj_irb_loop lp;
  acc_loop_begin(k, &lp, c->iters, "posloop", vf, nacc, phi, acc);
  LLVMValueRef pos = add(k, pg, mul(k, lp.iv, c32(k, c->npg)));
  LLVMValueRef pok = and1(k, valid, ult(k, pos, c32(k, (uint32_t)G->npq)));
  LLVMValueRef ow = LLVMBuildURem(b, pos, c32(k, G->ow), ""), r1 = LLVMBuildUDiv(b, pos, c32(k, G->ow), "");
  LLVMValueRef oh = LLVMBuildURem(b, r1, c32(k, G->oh), ""), r2 = LLVMBuildUDiv(b, r1, c32(k, G->oh), "");
  LLVMValueRef od = LLVMBuildURem(b, r2, c32(k, G->od), ""), nn = LLVMBuildUDiv(b, r2, c32(k, G->od), "");
  LLVMValueRef doff = mul(k, add(k, mul(k, pos, c32(k, K)), kc), c32(k, eb));
  LLVMValueRef dv = to_f32(k, load_elems(k, dyr, cj_irb_oob(g, pok, doff, CJ_CONV_OOB), accw, eb, dalign), accw);
  LLVMValueRef id = add(k, LLVMBuildSub(b, mul(k, od, c32(k, G->stride[0])), c32(k, G->pad_lo[0]), ""), tdil_d);
  LLVMValueRef ih = add(k, LLVMBuildSub(b, mul(k, oh, c32(k, G->stride[1])), c32(k, G->pad_lo[1]), ""), rdil_h);
  LLVMValueRef iw0 = LLVMBuildSub(b, mul(k, ow, c32(k, G->stride[2])), c32(k, G->pad_lo[2]), "");
  LLVMValueRef rok = and1(k, and1(k, pok, ult(k, id, c32(k, G->d))), ult(k, ih, c32(k, G->h)));
  LLVMValueRef rowbase = mul(k, add(k, mul(k, add(k, mul(k, nn, c32(k, G->d)), id), c32(k, G->h)), ih), c32(k, G->w));
  for (uint32_t si = 0; si < c->tap_chunk; si++) {
    LLVMValueRef s = add(k, s0, c32(k, si));
    LLVMValueRef iw = add(k, iw0, mul(k, s, c32(k, G->dil[2])));
    LLVMValueRef ok = and1(k, and1(k, rok, ult(k, iw, c32(k, G->w))), ult(k, s, c32(k, S)));
    LLVMValueRef off = add(k, mul(k, add(k, rowbase, iw), c32(k, C * eb)), xc);
    LLVMValueRef xv = to_f32(k, load_elems(k, xr, cj_irb_oob(g, ok, off, CJ_CONV_OOB), lin, eb, xalign), lin);
    for (uint32_t ci = 0; ci < cg; ci++) acc[si * cg + ci] = fma_v(k, dv, chan_expand(k, xv, ci), acc[si * cg + ci]);
  }
  if (c->db) acc[nsum] = LLVMBuildFAdd(b, acc[nsum], dv, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  for (uint32_t i = 0; i < nacc; i++) LLVMAddIncoming(phi[i], &acc[i], &latch, 1);
  cj_irb_loop_end(g, &lp);
  /* partial [pg][ci*taps + tap][K]: taps of the chunk past S and lanes past the work store nowhere */
  const uint32_t walign = gcd32(gcd32(accw * 4, K * 4), 16);
  LLVMValueRef tap0 = add(k, mul(k, trow, c32(k, S)), s0);
  for (uint32_t si = 0; si < c->tap_chunk; si++)
    for (uint32_t ci = 0; ci < cg; ci++) {
      LLVMValueRef ok = and1(k, valid, ult(k, add(k, s0, c32(k, si)), c32(k, S)));
      LLVMValueRef wt = add(k, tap0, c32(k, ci * taps + si));
      LLVMValueRef el = add(k, mul(k, add(k, mul(k, pg, c32(k, wtaps)), wt), c32(k, K)), kc);
      LLVMValueRef bits = LLVMBuildBitCast(b, phi[si * cg + ci], LLVMVectorType(g->i32, accw), "");
      store_elems(k, bits, wsr, cj_irb_oob(g, ok, mul(k, el, c32(k, 4)), CJ_CONV_OOB), accw, 4, walign);
    }
  if (c->db) { /* one tap row and chunk (the first) stores db's partial */
    LLVMValueRef dbr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_DB_PART), cj_c64(g, (uint64_t)c->npg * K * 4));
    LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildOr(b, trow, chunk, ""), c32(k, 0), "");
    LLVMValueRef el = add(k, mul(k, pg, c32(k, K)), kc);
    LLVMValueRef bits = LLVMBuildBitCast(b, phi[nsum], LLVMVectorType(g->i32, accw), "");
    store_elems(k, bits, dbr, cj_irb_oob(g, and1(k, valid, first), mul(k, el, c32(k, 4)), CJ_CONV_OOB), accw, 4,
                walign);
  }
}

/* Backward weight, stage 2: thread e < taps*K: dw[k][tap] (k = e / taps)
 * = the npg partials [pg][tap][k] added in group order, converted to
 * dw's dtype; e - taps*K < K: db[k] from db's partials, fp32. */
static void wgrad_finalize(dk *k) {
  cj_irb *g = k->g;
  LLVMBuilderRef b = k->b;
  const cj_kplan *p = k->p;
  const cj_direct_plan *c = k->c;
  const cj_conv_geom *G = k->G;
  const uint32_t K = G->k_all, taps = G->taps * c->cg, n_dw = taps * K; /* dw [K][Cg][T*R*S] */
  LLVMValueRef e = add(k, mul(k, cj_irb_wgid(g, 0), c32(k, CJ_DIRECT_THREADS)), cj_irb_tid(g, 0));
  LLVMValueRef is_dw = ult(k, e, c32(k, n_dw));
  LLVMValueRef kk = LLVMBuildUDiv(b, e, c32(k, taps), ""), tap = LLVMBuildURem(b, e, c32(k, taps), "");
  LLVMValueRef wsr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_WORKSPACE),
                                 cj_c64(g, (uint64_t)c->npg * taps * K * 4));
  LLVMValueRef e_db = LLVMBuildSub(b, e, c32(k, n_dw), "");
  LLVMValueRef is_db = c->db ? and1(k, LLVMBuildNot(b, is_dw, ""), ult(k, e_db, c32(k, K))) : cj_c1(g, 0);
  LLVMValueRef dbr = c->db ? cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_DB_PART), cj_c64(g, (uint64_t)c->npg * K * 4))
                           : NULL;
  cj_irb_loop lp;
  LLVMValueRef zero = cj_cf32(g, 0.0f);
  cj_irb_loop_begin(g, &lp, c32(k, 0), c32(k, c->npg), c32(k, 1), "pgloop");
  LLVMPositionBuilderBefore(b, LLVMGetNextInstruction(lp.iv));
  LLVMValueRef phi = LLVMBuildPhi(b, g->f32, "sum");
  LLVMAddIncoming(phi, &zero, &lp.pre, 1);
  LLVMPositionBuilderAtEnd(b, lp.body);
  LLVMValueRef wel = add(k, mul(k, add(k, mul(k, lp.iv, c32(k, taps)), tap), c32(k, K)), kk);
  LLVMValueRef v = LLVMBuildBitCast(
      b, cj_irb_buf_load(g, g->i32, wsr, cj_irb_oob(g, is_dw, mul(k, wel, c32(k, 4)), CJ_CONV_OOB), NULL, 0), g->f32,
      "");
  if (c->db) {
    LLVMValueRef del = add(k, mul(k, lp.iv, c32(k, K)), e_db);
    LLVMValueRef vd = LLVMBuildBitCast(
        b, cj_irb_buf_load(g, g->i32, dbr, cj_irb_oob(g, is_db, mul(k, del, c32(k, 4)), CJ_CONV_OOB), NULL, 0),
        g->f32, "");
    v = LLVMBuildSelect(b, is_dw, v, vd, "");
  }
  LLVMValueRef sum = LLVMBuildFAdd(b, phi, v, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMAddIncoming(phi, &sum, &latch, 1);
  cj_irb_loop_end(g, &lp);
  /* dw[k][tap] in dw's dtype (RNE), db[k] in fp32 */
  const uint32_t dwb = cj_dtype_bytes((convjit_dtype)c->dw_dtype);
  LLVMValueRef dwr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_DW), cj_c64(g, (uint64_t)n_dw * dwb));
  LLVMValueRef dwv;
  if (c->dw_dtype == CONVJIT_DTYPE_F32) {
    dwv = LLVMBuildBitCast(b, phi, g->i32, "");
  } else {
    phi = cj_irb_opaque(g, phi); /* else LLVM may fuse the last add with the f16 rounding (v_fma_mixlo_f16) */
    cj_epilogue conv = {0};
    cj_epi_step *st = cj_epi_add(&conv, CJ_EPI_CONVERT);
    if (st) st->dtype = c->dw_dtype;
    LLVMValueRef chan[CJ_EPI_MAX_OPS] = {0};
    dwv = cj_epi_apply(g, &conv, phi, chan, NULL);
  }
  cj_irb_buf_store(g, dwv, dwr, cj_irb_oob(g, is_dw, mul(k, e, c32(k, dwb)), CJ_CONV_OOB), NULL, 0);
  if (c->db) {
    LLVMValueRef dbo = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_DB), cj_c64(g, (uint64_t)K * 4));
    cj_irb_buf_store(g, LLVMBuildBitCast(b, phi, g->i32, ""), dbo, cj_irb_oob(g, is_db, mul(k, e_db, c32(k, 4)),
                                                                          CJ_CONV_OOB),
                     NULL, 0);
  }
}

/* The backward-weight kernels: the partial sums or their finalize. */
static convjit_status direct_build_wgrad(dk *k) {
  const cj_direct_plan *c = k->c;
  if (c->accw > CJ_DIRECT_MAX_ACC || c->tap_chunk * c->cg > CJ_DIRECT_MAX_TAPS_1D)
    return cj_irb_fail(k->g,
                       CJ_ERR(CONVJIT_ERR_INTERNAL, "conv_direct wgrad: accw %u chunk %u", c->accw, c->tap_chunk));
  if (!cj_irb_kernel(k->g, k->p, 0)) return k->g->st;
  if (c->wgrad == 1) wgrad_partial(k);
  else wgrad_finalize(k);
  LLVMBuildRetVoid(k->b);
  return k->g->st;
}

/* The lowest input coordinate a lane of output coordinate o (uniform i32)
 * reads validly along one dim (forward): max(0, o*st - pad). */
static LLVMValueRef in_lo(dk *k, LLVMValueRef o, uint32_t st, uint32_t pad) {
  LLVMBuilderRef b = k->b;
  LLVMValueRef v = mul(k, o, c32(k, st));
  LLVMValueRef ge = LLVMBuildICmp(b, LLVMIntUGE, v, c32(k, pad), "");
  return LLVMBuildSelect(b, ge, LLVMBuildSub(b, v, c32(k, pad), ""), c32(k, 0), "");
}

/* Past 2 GiB (plan field big, kplan_direct.c cj_direct_big): from the
 * workgroup's first item (n0, od0, oh0, ow0), its x window's first pixel
 * *xbase (the lowest input unit any of its lanes reads: a D plane, an H
 * row or a W position, by the input's shape) and its first output
 * position *ybase (i32), and the x and y resources from there (64-bit
 * base pointers, num_records min(rest, 2 GiB)). Lane offsets are then
 * relative to those. */
static void big_bases(dk *k, const uint32_t in[3], const uint32_t out[3], uint32_t in_c, uint32_t out_c,
                      LLVMValueRef *xbase, LLVMValueRef *ybase, LLVMValueRef *xr, LLVMValueRef *yr) {
  cj_irb *g = k->g;
  LLVMBuilderRef b = k->b;
  const cj_direct_plan *c = k->c;
  const cj_conv_geom *G = k->G;
  LLVMValueRef q0 = mul(k, cj_irb_wgid(g, 0), c32(k, CJ_DIRECT_THREADS));
  LLVMValueRef rest = LLVMBuildUDiv(b, q0, c32(k, c->ncv), "");
  LLVMValueRef sw = LLVMBuildURem(b, rest, c32(k, (uint32_t)c->strips), "");
  LLVMValueRef row = LLVMBuildUDiv(b, rest, c32(k, (uint32_t)c->strips), "");
  LLVMValueRef oh = LLVMBuildURem(b, row, c32(k, out[1]), ""), r2 = LLVMBuildUDiv(b, row, c32(k, out[1]), "");
  LLVMValueRef od = LLVMBuildURem(b, r2, c32(k, out[0]), ""), nn = LLVMBuildUDiv(b, r2, c32(k, out[0]), "");
  LLVMValueRef ow = mul(k, sw, c32(k, c->strip));
  const int lv = in[0] > 1 ? 0 : in[1] > 1 ? 1 : 2;
  LLVMValueRef o = lv == 0 ? od : lv == 1 ? oh : ow;
  LLVMValueRef lo = in_lo(k, o, G->stride[lv], (uint32_t)cj_conv_pad(G->pad_lo[lv]));
  /* unit index (n0 then the level's coordinate; the dims above it are 1) times its pixels */
  LLVMValueRef unit = add(k, mul(k, nn, c32(k, in[lv] * (lv == 0 ? 1 : lv == 1 ? in[0] : in[0] * in[1]))), lo);
  const uint32_t unit_pix = lv == 0 ? in[1] * in[2] : lv == 1 ? in[2] : 1;
  *xbase = cj_irb_readfirstlane(g, mul(k, unit, c32(k, unit_pix)));
  LLVMValueRef orow = add(k, mul(k, add(k, mul(k, nn, c32(k, out[0])), od), c32(k, out[1])), oh);
  *ybase = cj_irb_readfirstlane(g, add(k, mul(k, orow, c32(k, out[2])), ow));
  const uint32_t yb = cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(&c->epi));
  LLVMValueRef xo =
      LLVMBuildMul(b, LLVMBuildZExt(b, *xbase, g->i64, ""), cj_c64(g, (uint64_t)in_c * c->elem_bytes), "");
  LLVMValueRef yo = LLVMBuildMul(b, LLVMBuildZExt(b, *ybase, g->i64, ""), cj_c64(g, (uint64_t)out_c * yb), "");
  *xr = cj_irb_rsrc_at(g, cj_irb_arg_role(g, k->p, CJ_ARG_X), xo, c->x_bytes);
  *yr = cj_irb_rsrc_at(g, cj_irb_arg_role(g, k->p, CJ_ARG_Y), yo, c->y_bytes);
}

convjit_status cj_conv_direct_build(cj_irb *g, const cj_kplan *p) {
  const cj_direct_plan *c = &p->u.dir;
  const cj_conv_geom *G = &c->g;
  dk k = {.g = g, .b = g->b, .p = p, .c = c, .G = G};
  LLVMBuilderRef b = g->b;
  if (c->wgrad) return direct_build_wgrad(&k);
  if (c->accw > CJ_DIRECT_MAX_ACC || c->strip > CJ_DIRECT_MAX_STRIP || c->vec > 8 || c->elem_bytes != 2 ||
      (c->bwd && c->strip % G->stride[2]))
    return cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "conv_direct: accw %u strip %u vec %u", c->accw, c->strip,
                                 c->vec));
  if (!cj_irb_kernel(g, p, 0)) return g->st;
  const uint32_t eb = c->elem_bytes, vec = c->vec, accw = c->accw, outs = c->outs, P = c->strip;
  const uint32_t cg = c->cg, C = G->groups * cg, K = G->k_all, S = G->s, R = G->r, T = G->t;
  const int bwd = (int)c->bwd;
  /* the tensor read (x; dy) and the one written (y; dx): extents and channels */
  const uint32_t in_d = bwd ? G->od : G->d, in_h = bwd ? G->oh : G->h, in_w = bwd ? G->ow : G->w;
  const uint32_t out_d = bwd ? G->d : G->od, out_h = bwd ? G->h : G->oh, out_w = bwd ? G->w : G->ow;
  const uint32_t in_c = bwd ? K : C, out_c = bwd ? C : K, lin = bwd ? accw : vec * cg; /* channels a lane loads */
  const uint32_t na = bwd ? cg : 1; /* sums per output position: backward data's one per dx channel of a group */
  LLVMTypeRef vf = LLVMVectorType(g->f32, accw);
  /* hr's row blocks; the lane's sums: hr rows (forward) or Cg per position (backward data) */
  const uint32_t HR = c->hr ? c->hr : 1, NA = P * HR, out_hb = (out_h + HR - 1) / HR, NT = NA * na;

  /* The lane's item. */
  LLVMBasicBlockRef done = NULL;
  LLVMValueRef valid, q = lane_item(&k, &valid, &done);
  LLVMValueRef cv = LLVMBuildURem(b, q, c32(&k, c->ncv), "cv");
  LLVMValueRef rest = LLVMBuildUDiv(b, q, c32(&k, c->ncv), "");
  LLVMValueRef sw = LLVMBuildURem(b, rest, c32(&k, (uint32_t)c->strips), "");
  LLVMValueRef row = LLVMBuildUDiv(b, rest, c32(&k, (uint32_t)c->strips), "");
  LLVMValueRef oh = mul(&k, LLVMBuildURem(b, row, c32(&k, out_hb), ""), c32(&k, HR)); /* hr: the first row */
  LLVMValueRef row2 = LLVMBuildUDiv(b, row, c32(&k, out_hb), "");
  LLVMValueRef od = LLVMBuildURem(b, row2, c32(&k, out_d), "od");
  LLVMValueRef nn = LLVMBuildUDiv(b, row2, c32(&k, out_d), "n");
  LLVMValueRef ow0 = mul(&k, sw, c32(&k, P));
  /* the strip row's first input position (forward ow0*st - pad; backward data ow0/st) */
  LLVMValueRef iw0 = bwd ? mul(&k, sw, c32(&k, P / G->stride[2]))
                         : LLVMBuildSub(b, mul(&k, ow0, c32(&k, G->stride[2])), c32(&k, G->pad_lo[2]), "iw0");

  LLVMValueRef xr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_X), cj_c64(g, c->x_bytes));
  LLVMValueRef wr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_W), cj_c64(g, c->w_bytes));
  LLVMValueRef yr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_Y), cj_c64(g, c->y_bytes));
  LLVMValueRef xbase = c32(&k, 0), ybase = c32(&k, 0); /* past 2 GiB: the workgroup's windows */
  if (c->big) {
    const uint32_t in3[3] = {in_d, in_h, in_w}, out3[3] = {out_d, out_h, out_w};
    big_bases(&k, in3, out3, in_c, out_c, &xbase, &ybase, &xr, &yr);
  }
  cj_epi_rsrc er;
  cj_epi_rsrc_init(g, p, &c->epi, out_c, (uint64_t)G->n * out_d * out_h * out_w * out_c, &er);

  LLVMValueRef xc = mul(&k, cv, c32(&k, lin * eb)); /* the lane's channel bytes within an input pixel */
  LLVMValueRef k0 = mul(&k, cv, c32(&k, outs));     /* its first output channel */
  LLVMValueRef wk0 = mul(&k, cv, c32(&k, accw));    /* its first weight channel (K) */
  const uint32_t web = c->wf32 ? 4 : eb; /* wf32: the pack's fp32 weights */
  const uint32_t walign = gcd32(gcd32(accw * web, K * web), 16), xalign = gcd32(gcd32(lin * eb, in_c * eb), 16);

  LLVMValueRef zero = LLVMConstNull(vf), acc[CJ_DIRECT_MAX_STRIP * CJ_DIRECT_MAX_CG * CJ_DIRECT_MAX_HR],
               phi[CJ_DIRECT_MAX_STRIP * CJ_DIRECT_MAX_CG * CJ_DIRECT_MAX_HR];
  for (uint32_t i = 0; i < NT; i++) acc[i] = zero;
  cj_irb_loop lp;
  LLVMValueRef tv = c32(&k, 0);
  const int t_loop = T > 1 && c->pf != 2; /* pf = 2: the depth planes unrolled */
  if (t_loop) {
    acc_loop_begin(&k, &lp, T, "tloop", vf, NT, phi, acc);
    tv = lp.iv;
  }
  LLVMValueRef okd;
  LLVMValueRef id = in_coord(&k, od, G->pad_lo[0], mul(&k, tv, c32(&k, G->dil[0])), G->stride[0], in_d, &okd);
  okd = and1(&k, valid, okd);
  LLVMValueRef wtap_t = mul(&k, tv, c32(&k, R * S)); /* first tap of this depth plane */
  if (c->pf) { /* forward: each row's loads issued whole, the next row's before this row's fmas */
    const drow dr = {.xr = xr, .wr = wr, .xc = xc, .wk0 = wk0, .iw0 = iw0, .nn = nn, .id = id, .okd = okd, .oh = oh,
                     .wtap_t = wtap_t, .walign = walign, .xalign = xalign};
    if (c->pf == 2) planes_unrolled(&k, &dr, od, valid, acc);
    else plane_pipelined(&k, &dr, acc);
  }
  for (uint32_t r = 0; !c->pf && r < R; r++) {
    LLVMValueRef okh;
    LLVMValueRef ih = in_coord(&k, oh, G->pad_lo[1], c32(&k, r * G->dil[1]), G->stride[1], in_h, &okh);
    okh = and1(&k, okd, okh);
    LLVMValueRef rowbase = LLVMBuildSub(
        b, mul(&k, add(&k, mul(&k, add(&k, mul(&k, nn, c32(&k, in_d)), id), c32(&k, in_h)), ih), c32(&k, in_w)), xbase,
        "");
    for (uint32_t s0 = 0; s0 < S; s0 += c->tap_chunk) {
      uint32_t s1 = s0 + c->tap_chunk < S ? s0 + c->tap_chunk : S;
      LLVMValueRef wv[CJ_DIRECT_MAX_TAPS_1D * CJ_DIRECT_MAX_CG]; /* [s][ci] */
      int used_tap[CJ_DIRECT_MAX_TAPS_1D] = {0};
      int64_t jlo = INT64_MAX, jhi = INT64_MIN, j;
      for (uint32_t s = s0; s < s1; s++)
        for (uint32_t pp = 0; pp < P; pp++)
          if (pair_pos(c, pp, s, &j)) {
            used_tap[s] = 1;
            jlo = j < jlo ? j : jlo;
            jhi = j > jhi ? j : jhi;
          }
      for (uint32_t s = s0; s < s1; s++) {
        if (!used_tap[s]) continue;
        for (uint32_t ci = 0; ci < cg; ci++) {
          LLVMValueRef tap = add(&k, wtap_t, c32(&k, ci * G->taps + r * S + s));
          LLVMValueRef off = mul(&k, add(&k, mul(&k, tap, c32(&k, K)), wk0), c32(&k, eb));
          wv[s * cg + ci] = to_f32(&k, load_elems(&k, wr, off, accw, eb, walign), accw);
        }
      }
      for (j = jlo; j <= jhi; j++) {
        int any = 0;
        int64_t jj;
        for (uint32_t s = s0; s < s1 && !any; s++)
          for (uint32_t pp = 0; pp < P && !any; pp++) any = pair_pos(c, pp, s, &jj) && jj == j;
        if (!any) continue;
        LLVMValueRef iw = add(&k, iw0, c32(&k, (uint32_t)(int32_t)j));
        LLVMValueRef ok = and1(&k, okh, ult(&k, iw, c32(&k, in_w)));
        LLVMValueRef off = add(&k, mul(&k, add(&k, rowbase, iw), c32(&k, in_c * eb)), xc);
        LLVMValueRef xv = to_f32(&k, load_elems(&k, xr, cj_irb_oob(g, ok, off, CJ_CONV_OOB), lin, eb, xalign), lin);
        LLVMValueRef xe[CJ_DIRECT_MAX_CG];
        for (uint32_t ci = 0; ci < cg; ci++) xe[ci] = bwd ? xv : chan_expand(&k, xv, ci);
        for (uint32_t s = s0; s < s1; s++)
          for (uint32_t pp = 0; pp < P; pp++)
            if (pair_pos(c, pp, s, &jj) && jj == j)
              for (uint32_t ci = 0; ci < cg; ci++) {
                LLVMValueRef *a = &acc[pp * na + (bwd ? ci : 0)];
                *a = fma_v(&k, xe[ci], wv[s * cg + ci], *a);
              }
      }
    }
  }
  if (t_loop) {
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
    for (uint32_t i = 0; i < NT; i++) LLVMAddIncoming(phi[i], &acc[i], &latch, 1);
    cj_irb_loop_end(g, &lp);
    for (uint32_t i = 0; i < NT; i++) acc[i] = phi[i];
  }

  /* Outputs: position (n, od, oh, ow0 + p); backward data sums each dx
   * channel's M dy channels first (in order j = 0 .. M-1). */
  const uint32_t odhw = out_d * out_h * out_w;
  for (uint32_t i = 0; i < NA; i++) { /* hr: output row oh + i / P */
    LLVMValueRef ohq = add(&k, oh, c32(&k, i / P)), ok_r = out_h % HR ? ult(&k, ohq, c32(&k, out_h)) : valid;
    LLVMValueRef ow = add(&k, ow0, c32(&k, i % P)), ok = and1(&k, and1(&k, valid, ok_r), ult(&k, ow, c32(&k, out_w)));
    LLVMValueRef sp = add(&k, mul(&k, add(&k, mul(&k, od, c32(&k, out_h)), ohq), c32(&k, out_w)), ow);
    LLVMValueRef pos = LLVMBuildSub(b, add(&k, mul(&k, nn, c32(&k, odhw)), sp), ybase, "");
    store_out(&k, bwd ? reduce_mult(&k, &acc[i * na]) : acc[i * na], pos, nn, sp, k0, ok, &er, yr);
  }
  if (done) {
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
  }
  LLVMBuildRetVoid(b);
  return g->st;
}
