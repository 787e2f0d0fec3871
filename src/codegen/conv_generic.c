/* The shape-generic conv kernel (plan in kplan_generic.h): every size a
 * u32 argument, one kernel per arch, dtypes and epilogue.
 *
 *   grid (ceil(M/64), ceil(K/64), groups), 256 threads = 4 waves in 2 x 2,
 *   each wave 32 x 32 outputs = 2 x 2 16x16 MFMA fragments.
 *   per K step (k_bytes of K per tile row):
 *     A: each thread gathers 16-byte chunks of its A row (an output
 *        position) element by element from x where the caller left it
 *        (NCDHW or NDHWC: no pre-pass), through the pre-pass's conversion,
 *        into LDS [row][k_bytes + 16] (ds_write_b128);
 *     B: one 16-byte buffer load per chunk from w_packed's row;
 *     barrier, MFMAs from LDS in the MFMA row's operand layout, barrier.
 *   epilogue: the conv's ops (epilogue.h) per fragment, element stores.
 *
 * Bounds: an A element reads zero (the buffer range check, offset
 * CJ_CONV_OOB) when its row is past M, its tap outside the input, its
 * channel past C (Cp padding) or its column past T*R*S*Cp; B rows past K
 * and columns past the row read zero the same way. Divisions by the sizes
 * are runtime divisions: once per A row outside the loop, three per chunk
 * and step for the tap (a fallback: simple over fast). */
#include "codegen/codegen.h"
#include "codegen/cvt.h"
#include "codegen/epilogue.h"
#include "codegen/irb.h"

typedef struct gen {
  cj_irb *g;
  LLVMBuilderRef b;
  const cj_kplan *p;
  const cj_generic_plan *c;
  const cj_mfma_row *mf;
  LLVMValueRef v[CJ_GEN_GEOM_COUNT]; /* the size arguments */
  LLVMValueRef cg_all, k_all, crs, odhw, ohw, hw, dhw, npq, rs;
  LLVMValueRef cstride, pstride; /* x: element stride of a channel and of a pixel (NCDHW or NDHWC) */
  LLVMValueRef lds;
  LLVMTypeRef opty;
} gen;

#define CJ_GEN_ROW_PITCH(c) ((c)->k_bytes + 16) /* LDS bytes per tile row: 16 of padding against bank conflicts */

static LLVMValueRef mul(gen *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildMul(k->b, a, b, ""); }
static LLVMValueRef add(gen *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(k->b, a, b, ""); }
static LLVMValueRef ult(gen *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildICmp(k->b, LLVMIntULT, a, b, ""); }
static LLVMValueRef and1(gen *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAnd(k->b, a, b, ""); }

/* The sizes, and what every thread derives from them once (uniform). */
static void gen_sizes(gen *k) {
  cj_irb *g = k->g;
  int base = cj_kplan_arg_index(k->p, CJ_ARG_GEOM);
  for (int i = 0; i < CJ_GEN_GEOM_COUNT; i++) k->v[i] = cj_irb_arg(g, (unsigned)(base + i));
  LLVMValueRef *v = k->v;
  k->cg_all = mul(k, v[CJ_GEN_C], v[CJ_GEN_GROUPS]);
  k->k_all = mul(k, v[CJ_GEN_K], v[CJ_GEN_GROUPS]);
  k->rs = mul(k, v[CJ_GEN_R], v[CJ_GEN_S]);
  k->crs = mul(k, mul(k, v[CJ_GEN_T], k->rs), v[CJ_GEN_CP]);
  k->ohw = mul(k, v[CJ_GEN_OH], v[CJ_GEN_OW]);
  k->odhw = mul(k, v[CJ_GEN_OD], k->ohw);
  k->npq = mul(k, v[CJ_GEN_N], k->odhw);
  k->hw = mul(k, v[CJ_GEN_H], v[CJ_GEN_W]);
  k->dhw = mul(k, v[CJ_GEN_D], k->hw);
  LLVMValueRef x_ndhwc = LLVMBuildICmp(k->b, LLVMIntNE, LLVMBuildAnd(k->b, v[CJ_GEN_FLAGS], cj_c32(g, CJ_GEN_X_NDHWC), ""),
                                       cj_c32(g, 0), "x.ndhwc");
  k->cstride = LLVMBuildSelect(k->b, x_ndhwc, cj_c32(g, 1), k->dhw, "x.cstride");
  k->pstride = LLVMBuildSelect(k->b, x_ndhwc, k->cg_all, cj_c32(g, 1), "x.pstride");
}

/* The sizes the K loop's gather reads, copied to VGPRs: uniform values live
 * across the loop each hold an SGPR, and with the arguments, the buffer
 * resources and the f8f6f4 kernel's two A rows they would pass the 102
 * SGPRs a wave has (measured: gfx950 fp8 spilled 2-8 SGPRs). */
static void gen_sizes_to_vgprs(gen *k) {
  static const cj_generic_geom in_loop[] = {CJ_GEN_C, CJ_GEN_K, CJ_GEN_D, CJ_GEN_H, CJ_GEN_W, CJ_GEN_S,
                                            CJ_GEN_CP, CJ_GEN_DIL_D, CJ_GEN_DIL_H, CJ_GEN_DIL_W};
  for (size_t i = 0; i < sizeof in_loop / sizeof in_loop[0]; i++) k->v[in_loop[i]] = cj_irb_opaque(k->g, k->v[in_loop[i]]);
  k->rs = cj_irb_opaque(k->g, k->rs);
  k->crs = cj_irb_opaque(k->g, k->crs);
  k->cstride = cj_irb_opaque(k->g, k->cstride);
  k->pstride = cj_irb_opaque(k->g, k->pstride);
}

/* One A row (output position m) decoded once: its sample's element base in
 * x, the input coordinates of tap (0,0,0), and whether it exists. */
typedef struct gen_row {
  LLVMValueRef ok, xbase, id0, ih0, iw0;
} gen_row;

static void gen_row_init(gen *k, LLVMValueRef m, gen_row *r) {
  LLVMBuilderRef b = k->b;
  LLVMValueRef *v = k->v;
  r->ok = ult(k, m, k->npq);
  LLVMValueRef n = LLVMBuildUDiv(b, m, k->odhw, "");
  LLVMValueRef p = LLVMBuildSub(b, m, mul(k, n, k->odhw), "");
  LLVMValueRef od = LLVMBuildUDiv(b, p, k->ohw, "");
  LLVMValueRef q = LLVMBuildSub(b, p, mul(k, od, k->ohw), "");
  LLVMValueRef oh = LLVMBuildUDiv(b, q, v[CJ_GEN_OW], "");
  LLVMValueRef ow = LLVMBuildSub(b, q, mul(k, oh, v[CJ_GEN_OW]), "");
  /* negative coordinates wrap high: one unsigned compare per dim later */
  r->id0 = LLVMBuildSub(b, mul(k, od, v[CJ_GEN_ST_D]), v[CJ_GEN_PAD_D], "id0");
  r->ih0 = LLVMBuildSub(b, mul(k, oh, v[CJ_GEN_ST_H]), v[CJ_GEN_PAD_H], "ih0");
  r->iw0 = LLVMBuildSub(b, mul(k, ow, v[CJ_GEN_ST_W]), v[CJ_GEN_PAD_W], "iw0");
  r->xbase = mul(k, mul(k, n, k->cg_all), k->dhw);
}

/* Chunk of 16 compute bytes of row r at K column k0 (a multiple of the
 * chunk: never straddles a tap, Cp is whole chunks) of group gi, as
 * <4 x i32>: element by element from x, converted as the pre-pass would. */
static LLVMValueRef gen_a_chunk(gen *k, const gen_row *r, LLVMValueRef k0, LLVMValueRef gi, LLVMValueRef xr,
                                LLVMValueRef qscale) {
  cj_irb *g = k->g;
  LLVMBuilderRef b = k->b;
  const cj_generic_plan *c = k->c;
  LLVMValueRef *v = k->v;
  LLVMValueRef tap = LLVMBuildUDiv(b, k0, v[CJ_GEN_CP], "tap");
  LLVMValueRef c0 = LLVMBuildSub(b, k0, mul(k, tap, v[CJ_GEN_CP]), "c0");
  LLVMValueRef t = LLVMBuildUDiv(b, tap, k->rs, "");
  LLVMValueRef rs = LLVMBuildSub(b, tap, mul(k, t, k->rs), "");
  LLVMValueRef rr = LLVMBuildUDiv(b, rs, v[CJ_GEN_S], "");
  LLVMValueRef ss = LLVMBuildSub(b, rs, mul(k, rr, v[CJ_GEN_S]), "");
  LLVMValueRef id = add(k, r->id0, mul(k, t, v[CJ_GEN_DIL_D]));
  LLVMValueRef ih = add(k, r->ih0, mul(k, rr, v[CJ_GEN_DIL_H]));
  LLVMValueRef iw = add(k, r->iw0, mul(k, ss, v[CJ_GEN_DIL_W]));
  LLVMValueRef ok = and1(k, and1(k, r->ok, ult(k, k0, k->crs)), ult(k, id, v[CJ_GEN_D]));
  ok = and1(k, and1(k, ok, ult(k, ih, v[CJ_GEN_H])), ult(k, iw, v[CJ_GEN_W]));
  LLVMValueRef pix = add(k, mul(k, add(k, mul(k, id, v[CJ_GEN_H]), ih), v[CJ_GEN_W]), iw);
  LLVMValueRef xc0 = add(k, mul(k, gi, v[CJ_GEN_C]), c0);
  LLVMValueRef e0 = add(k, add(k, r->xbase, mul(k, pix, k->pstride)), mul(k, xc0, k->cstride));
  const uint32_t n = 16 / c->elem_bytes, xb = c->x_bytes; /* compute elements per chunk; x bytes each */
  LLVMTypeRef xt = xb == 2 ? g->i16 : g->i8;
  LLVMValueRef e[16];
  for (uint32_t j = 0; j < n; j++) {
    LLVMValueRef cj = add(k, c0, cj_c32(g, j));
    LLVMValueRef okj = and1(k, ok, ult(k, cj, v[CJ_GEN_C]));
    LLVMValueRef off = mul(k, add(k, e0, mul(k, cj_c32(g, j), k->cstride)), cj_c32(g, xb));
    e[j] = cj_irb_buf_load(g, xt, xr, cj_irb_oob(g, okj, off, CJ_CONV_OOB), NULL, 0);
  }
  if (c->x_mode == CJ_PREP_QUANT) return cj_cvt_fp8(g, e, n, c->sat_max, qscale);
  LLVMValueRef vec = LLVMGetPoison(LLVMVectorType(xt, n));
  for (uint32_t j = 0; j < n; j++) vec = LLVMBuildInsertElement(b, vec, e[j], cj_c32(g, j), "");
  vec = LLVMBuildBitCast(b, vec, LLVMVectorType(g->i32, 4), "");
  return c->x_mode == CJ_PREP_FN_FNUZ ? cj_fn_to_fnuz(g, vec) : vec;
}

/* Lane l's operand of fragment row block `rows0` (LDS byte of row 0 of the
 * operand's tile region) for MFMA step kk: row rows0/pitch + l%16, its
 * k_per_lane elements of each run (docs/isa-notes.md §1). */
static LLVMValueRef gen_operand(gen *k, LLVMValueRef row, LLVMValueRef lane, uint32_t region, uint32_t kk) {
  cj_irb *g = k->g;
  LLVMBuilderRef b = k->b;
  const cj_generic_plan *c = k->c;
  const cj_mfma_row *mf = k->mf;
  uint32_t eb = c->elem_bytes, run_bytes = mf->k_per_lane * eb;
  LLVMValueRef base = add(k, add(k, cj_c32(g, region), mul(k, row, cj_c32(g, CJ_GEN_ROW_PITCH(c)))),
                          cj_c32(g, kk * mf->k * eb));
  base = add(k, base, mul(k, LLVMBuildUDiv(b, lane, cj_c32(g, 16), ""), cj_c32(g, run_bytes)));
  if (mf->k_runs == 1) return cj_irb_lds_load(g, k->opty, k->lds, base, run_bytes);
  LLVMTypeRef rt = LLVMVectorType(g->i32, run_bytes / 4);
  LLVMValueRef part[2], idx[16];
  for (uint32_t r = 0; r < 2; r++)
    part[r] = cj_irb_lds_load(g, rt, k->lds, add(k, base, cj_c32(g, r * (mf->k / mf->k_runs) * eb)), run_bytes);
  for (uint32_t i = 0; i < 2 * run_bytes / 4; i++) idx[i] = cj_c32(g, i);
  LLVMValueRef cat = LLVMBuildShuffleVector(b, part[0], part[1], LLVMConstVector(idx, 2 * run_bytes / 4), "");
  return LLVMBuildBitCast(b, cat, k->opty, "");
}

/* One MFMA of the plan's row (the f8f6f4 intrinsic in its scaled form with
 * zero scales: the unscaled instruction; conv_igemm_kstep.c does the same). */
static LLVMValueRef gen_mfma(gen *k, LLVMValueRef a, LLVMValueRef bb, LLVMValueRef acc) {
  cj_irb *g = k->g;
  if (k->mf->k_runs == 2) {
    LLVMValueRef args[9] = {a, bb, acc, cj_c32(g, k->mf->cbsz), cj_c32(g, k->mf->blgp),
                            cj_c32(g, 0), cj_c32(g, 0), cj_c32(g, 0), cj_c32(g, 0)};
    LLVMTypeRef over[2] = {k->opty, k->opty};
    return cj_irb_call(g, k->mf->intrinsic, over, 2, args, 9);
  }
  LLVMValueRef args[6] = {a, bb, acc, cj_c32(g, 0), cj_c32(g, 0), cj_c32(g, 0)};
  return cj_irb_call(g, k->mf->intrinsic, NULL, 0, args, 6);
}

/* Fragment acc (rows row0 .. +3 of channel col of group gi) through the
 * epilogue to y, element by element in y's layout. */
static void gen_store(gen *k, LLVMValueRef acc, LLVMValueRef row0, LLVMValueRef col, LLVMValueRef gi,
                      const cj_epi_rsrc *er, LLVMValueRef yr) {
  cj_irb *g = k->g;
  LLVMBuilderRef b = k->b;
  const cj_epilogue *e = &k->c->epi;
  uint32_t yb = cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(e));
  LLVMValueRef ch = add(k, mul(k, gi, k->v[CJ_GEN_K]), col);
  LLVMValueRef chan[CJ_EPI_MAX_OPS];
  cj_epi_load_channel(g, e, er, ch, 1, chan);
  LLVMValueRef y_ndhwc = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, k->v[CJ_GEN_FLAGS], cj_c32(g, CJ_GEN_Y_NDHWC), ""),
                                       cj_c32(g, 0), "");
  LLVMValueRef col_ok = ult(k, col, k->v[CJ_GEN_K]), off[4], z = NULL;
  for (uint32_t j = 0; j < 4; j++) {
    LLVMValueRef m = add(k, row0, cj_c32(g, j));
    LLVMValueRef n = LLVMBuildUDiv(b, m, k->odhw, "");
    LLVMValueRef p = LLVMBuildSub(b, m, mul(k, n, k->odhw), "");
    LLVMValueRef ncdhw = add(k, mul(k, add(k, mul(k, n, k->k_all), ch), k->odhw), p);
    LLVMValueRef ndhwc = add(k, mul(k, m, k->k_all), ch);
    LLVMValueRef el = LLVMBuildSelect(b, y_ndhwc, ndhwc, ncdhw, "y.elem");
    LLVMValueRef ok = and1(k, col_ok, ult(k, m, k->npq));
    off[j] = cj_irb_oob(g, ok, mul(k, el, cj_c32(g, yb)), CJ_CONV_OOB);
    LLVMValueRef zj = cj_epi_load_z(g, e, er, off[j], ok, 1);
    if (!zj) continue;
    if (!z) z = LLVMGetPoison(LLVMVectorType(g->f32, 4));
    z = LLVMBuildInsertElement(b, z, zj, cj_c32(g, j), "");
  }
  LLVMValueRef val = cj_epi_apply(g, e, acc, chan, z);
  for (uint32_t j = 0; j < 4; j++)
    cj_irb_buf_store(g, LLVMBuildExtractElement(b, val, cj_c32(g, j), ""), yr, off[j], NULL, 0);
}

convjit_status cj_conv_generic_build(cj_irb *g, const cj_kplan *p) {
  const cj_generic_plan *c = &p->u.gen;
  gen k = {.g = g, .b = g->b, .p = p, .c = c, .mf = cj_mfma_row_of((cj_mfma_kind)c->mfma)};
  LLVMBuilderRef b = g->b;
  if (!k.mf) return cj_irb_fail(g, CJ_ERR(CONVJIT_ERR_INTERNAL, "conv_generic: MFMA row %u", c->mfma));
  if (!cj_irb_kernel(g, p, 0)) return g->st;
  k.opty = cj_irb_operand_type(g, k.mf->opnd, k.mf->opnd_lanes);
  const uint32_t T = CJ_GENERIC_TILE, pitch = CJ_GEN_ROW_PITCH(c), eb = c->elem_bytes;
  const uint32_t cpr = c->k_bytes / 16, per = T * cpr / CJ_GENERIC_THREADS; /* chunks per row, per thread */
  const uint32_t ke = c->k_bytes / eb, nk = c->k_bytes / (k.mf->k * eb);  /* K elements and MFMAs per step */
  k.lds = cj_irb_lds(g, "tiles", 2 * T * pitch, 16); /* A rows, then B rows */
  gen_sizes(&k);
  LLVMValueRef *v = k.v;

  const uint32_t ws = g->arch->wave_size; /* 64: the plan init checked it */
  LLVMValueRef tid = cj_irb_tid(g, 0), lane = LLVMBuildAnd(b, tid, cj_c32(g, ws - 1), "lane");
  LLVMValueRef l16 = LLVMBuildURem(b, lane, cj_c32(g, 16), "");
  LLVMValueRef wave = cj_irb_readfirstlane(g, LLVMBuildLShr(b, tid, cj_c32(g, (uint32_t)__builtin_ctz(ws)), ""));
  LLVMValueRef wm = LLVMBuildLShr(b, wave, cj_c32(g, 1), ""), wn = LLVMBuildAnd(b, wave, cj_c32(g, 1), "");
  LLVMValueRef m0 = mul(&k, cj_irb_wgid(g, 0), cj_c32(g, T)), n0 = mul(&k, cj_irb_wgid(g, 1), cj_c32(g, T));
  LLVMValueRef gi = cj_irb_wgid(g, 2);

  /* Resources (sizes < 4 GiB: cj_generic_legal). */
  LLVMValueRef xbytes = LLVMBuildMul(b, LLVMBuildZExt(b, mul(&k, mul(&k, v[CJ_GEN_N], k.cg_all), k.dhw), g->i64, ""),
                                     cj_c64(g, c->x_bytes), "");
  LLVMValueRef wbytes = LLVMBuildMul(b, LLVMBuildZExt(b, mul(&k, k.k_all, k.crs), g->i64, ""), cj_c64(g, eb), "");
  LLVMValueRef yelems = mul(&k, k.npq, k.k_all);
  uint32_t yb = cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(&c->epi));
  LLVMValueRef xr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_X), xbytes);
  LLVMValueRef wr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_W), wbytes);
  LLVMValueRef yr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_Y),
                                LLVMBuildMul(b, LLVMBuildZExt(b, yelems, g->i64, ""), cj_c64(g, yb), ""));
  LLVMValueRef qscale = c->x_mode == CJ_PREP_QUANT
                            ? LLVMBuildBitCast(b, cj_irb_arg_role(g, p, CJ_ARG_QSCALE), g->f32, "qscale")
                            : NULL;
  cj_epi_rsrc er;
  cj_epi_rsrc_init_rt(g, p, &c->epi, k.k_all, yelems, &er);

  /* This thread's chunks: q = tid + i*256 is row q / cpr, chunk q % cpr of
   * both the A and the B tile (cpr divides 256: one chunk column). */
  LLVMValueRef cq = LLVMBuildURem(b, tid, cj_c32(g, cpr), "cq");
  LLVMValueRef row[4], brow[4];
  gen_row arow[4];
  for (uint32_t i = 0; i < per; i++) {
    row[i] = add(&k, LLVMBuildUDiv(b, tid, cj_c32(g, cpr), ""), cj_c32(g, i * CJ_GENERIC_THREADS / cpr));
    gen_row_init(&k, add(&k, m0, row[i]), &arow[i]);
    brow[i] = add(&k, n0, row[i]); /* the output channel within the group */
  }

  gen_sizes_to_vgprs(&k);
  LLVMValueRef zero4 = LLVMConstNull(LLVMVectorType(g->f32, 4)), acc[4];
  for (int f = 0; f < 4; f++) acc[f] = zero4;
  LLVMValueRef nsteps = LLVMBuildUDiv(b, add(&k, k.crs, cj_c32(g, ke - 1)), cj_c32(g, ke), "nsteps");
  cj_irb_loop lp;
  cj_irb_loop_begin(g, &lp, cj_c32(g, 0), nsteps, cj_c32(g, 1), "kloop");
  LLVMValueRef phi[4];
  LLVMPositionBuilderBefore(b, LLVMGetNextInstruction(lp.iv));
  for (int f = 0; f < 4; f++) {
    phi[f] = LLVMBuildPhi(b, LLVMTypeOf(zero4), "acc");
    LLVMAddIncoming(phi[f], &zero4, &lp.pre, 1);
    acc[f] = phi[f];
  }
  LLVMPositionBuilderAtEnd(b, lp.body);
  LLVMValueRef k0 = add(&k, mul(&k, lp.iv, cj_c32(g, ke)), mul(&k, cq, cj_c32(g, 16 / eb)));
  LLVMValueRef kin = ult(&k, k0, k.crs);
  for (uint32_t i = 0; i < per; i++) {
    LLVMValueRef lo = add(&k, mul(&k, row[i], cj_c32(g, pitch)), mul(&k, cq, cj_c32(g, 16)));
    cj_irb_lds_store(g, gen_a_chunk(&k, &arow[i], k0, gi, xr, qscale), k.lds, lo, 16);
    LLVMValueRef wrow = add(&k, mul(&k, gi, v[CJ_GEN_K]), brow[i]);
    LLVMValueRef wok = and1(&k, kin, ult(&k, brow[i], v[CJ_GEN_K]));
    LLVMValueRef woff = mul(&k, add(&k, mul(&k, wrow, k.crs), k0), cj_c32(g, eb));
    LLVMValueRef bv = cj_irb_buf_load(g, LLVMVectorType(g->i32, 4), wr, cj_irb_oob(g, wok, woff, CJ_CONV_OOB), NULL, 0);
    cj_irb_lds_store(g, bv, k.lds, add(&k, lo, cj_c32(g, T * pitch)), 16);
  }
  cj_irb_workgroup_sync(g);
  for (uint32_t kk = 0; kk < nk; kk++) {
    LLVMValueRef a[2], bb[2];
    for (uint32_t f = 0; f < 2; f++) {
      a[f] = gen_operand(&k, add(&k, mul(&k, wm, cj_c32(g, 32)), add(&k, cj_c32(g, f * 16), l16)), lane, 0, kk);
      bb[f] = gen_operand(&k, add(&k, mul(&k, wn, cj_c32(g, 32)), add(&k, cj_c32(g, f * 16), l16)), lane,
                          T * pitch, kk);
    }
    for (uint32_t i = 0; i < 2; i++)
      for (uint32_t j = 0; j < 2; j++) acc[i * 2 + j] = gen_mfma(&k, a[i], bb[j], acc[i * 2 + j]);
  }
  cj_irb_workgroup_sync(g); /* the next step overwrites the tiles */
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  for (int f = 0; f < 4; f++) LLVMAddIncoming(phi[f], &acc[f], &latch, 1);
  cj_irb_loop_end(g, &lp);

  /* Fragment (i, j): lane l holds channel wn*32 + j*16 + l%16, rows
   * wm*32 + i*16 + 4*(l/16) .. +3. */
  LLVMValueRef r4 = mul(&k, LLVMBuildUDiv(b, lane, cj_c32(g, 16), ""), cj_c32(g, 4));
  for (uint32_t i = 0; i < 2; i++)
    for (uint32_t j = 0; j < 2; j++) {
      LLVMValueRef row0 = add(&k, add(&k, m0, mul(&k, wm, cj_c32(g, 32))), add(&k, cj_c32(g, i * 16), r4));
      LLVMValueRef col = add(&k, add(&k, n0, mul(&k, wn, cj_c32(g, 32))), add(&k, cj_c32(g, j * 16), l16));
      gen_store(&k, phi[i * 2 + j], row0, col, gi, &er, yr);
    }
  LLVMBuildRetVoid(b);
  return g->st;
}
