/* Layout kernels: NCDHW -> NDHWC transpose and KCTRS -> KTRSC weight pack
 * (plans in kplan_layout.c, contract in kplan_layout.h).
 *
 * Transpose, one 64(c) x 64(s) tile per work-group of 256 threads:
 *
 *   x[n][c0+r][s0 .. s0+63]  --buffer_load (load_bytes/lane, along s)-->  LDS tile[c][s]
 *   workgroup sync (fence + s_barrier + fence)
 *   LDS tile[c0 .. c0+k][s]  --ds_read per element, packed in VGPRs-->
 *   y[n][s0+r][c0 ..]        --buffer_store (store_bytes/lane, along c)
 *
 * cvt plans (bf16 x -> fp8 y) keep the bf16 tile in LDS and convert in the
 * store phase (cj_cvt_fp8), so y's stores are fp8-wide.
 *
 * Masking: a lane outside the tensor gets the offset CJ_OOB (past every
 * resource's num_records), so the hardware range check returns 0 / drops the
 * store: no divergent branches. The plan picks access widths that divide the
 * row bytes, so an access is never partly in range.
 *
 * Addressing: non-BIG tensors use one resource over the whole tensor and
 * 32-bit offsets from its start. BIG ones (>= 2^31 bytes) rebase each
 * resource at the block's tile origin, computed in 64 bits on the scalar
 * unit, so every lane offset is tile-local (< 2^31, checked by the plan).
 *
 * LDS layout: rows of 64*eb bytes, no padding, 16-byte chunks XOR-swizzled:
 *   addr(c, s) = c*pitch + ((s*eb/16) ^ key(c))*16 + (s*eb)%16,
 *   key(c) = (c / (16/eb)) % (4*eb).
 * A store lane reads one column piece c .. c+16/eb-1 element by element; in
 * a half-wave those lanes differ in c by multiples of 16/eb, so without the
 * swizzle they would hit the same 4-byte bank of 32 (row pitch is a multiple
 * of 128 bytes for bf16, 64 for fp8). The XOR moves each c-group to its own
 * chunk, and keeps every 16-byte load-side write contiguous and aligned.
 */
#include "codegen/codegen.h"
#include "codegen/cvt.h"
#include "codegen/irb.h"

#define CJ_OOB 0x80000000u /* > every num_records used here (<= 2^31) */

typedef struct cj_tr_ctx {
  cj_irb *g;
  const cj_transpose_plan *t;
  LLVMValueRef lds;
} cj_tr_ctx;

/* Byte address of element (c, s) of the LDS tile (i32 values, tile-local). */
static LLVMValueRef cj_tr_lds_addr(cj_tr_ctx *k, LLVMValueRef c, LLVMValueRef s) {
  cj_irb *g = k->g;
  LLVMBuilderRef b = g->b;
  uint32_t eb = k->t->elem_bytes;
  LLVMValueRef sb = LLVMBuildMul(b, s, cj_c32(g, eb), "");
  LLVMValueRef chunk = LLVMBuildLShr(b, sb, cj_c32(g, 4), "");
  LLVMValueRef key = LLVMBuildAnd(b, LLVMBuildUDiv(b, c, cj_c32(g, 16 / eb), ""), cj_c32(g, 4 * eb - 1), "");
  LLVMValueRef col = LLVMBuildOr(b, LLVMBuildShl(b, LLVMBuildXor(b, chunk, key, ""), cj_c32(g, 4), ""),
                                 LLVMBuildAnd(b, sb, cj_c32(g, 15), ""), "");
  return LLVMBuildAdd(b, LLVMBuildMul(b, c, cj_c32(g, k->t->lds_pitch), ""), col, "");
}

/* Resource over one tensor (total_bytes) for this block, and the i32 byte
 * offset of the block's tile origin inside it. origin is the tile origin's
 * i64 byte offset from the tensor start. BIG: the resource starts at the
 * origin (num_records = the rest of the tensor, at most 2 GiB) and the
 * returned offset is 0. */
static LLVMValueRef cj_tr_rsrc(cj_irb *g, LLVMValueRef base, LLVMValueRef origin, uint64_t total_bytes, int big,
                               LLVMValueRef *origin_off) {
  LLVMBuilderRef b = g->b;
  if (!big) {
    *origin_off = LLVMBuildTrunc(b, origin, g->i32, "");
    return cj_irb_rsrc(g, base, cj_c64(g, total_bytes));
  }
  *origin_off = cj_c32(g, 0);
  return cj_irb_rsrc_at(g, base, origin, total_bytes);
}

/* widen: n bf16 (1) or f16 (2) values (i16) -> their fp32 bits (i32), exact. */
static void cj_widen_f32(cj_irb *g, LLVMValueRef *e, uint32_t n, uint32_t widen) {
  for (uint32_t j = 0; j < n; j++) {
    if (widen == 1) {
      e[j] = LLVMBuildShl(g->b, LLVMBuildZExt(g->b, e[j], g->i32, ""), cj_c32(g, 16), "");
    } else {
      LLVMValueRef h = LLVMBuildBitCast(g->b, e[j], g->f16, "");
      e[j] = LLVMBuildBitCast(g->b, LLVMBuildFPExt(g->b, h, g->f32, ""), g->i32, "");
    }
  }
}

static LLVMValueRef cj_pack(cj_irb *g, LLVMValueRef *e, uint32_t n, LLVMTypeRef et, uint32_t bytes) {
  if (n == 1) return e[0];
  LLVMTypeRef vt = LLVMVectorType(et, n);
  LLVMValueRef v = LLVMGetPoison(vt);
  for (uint32_t j = 0; j < n; j++) v = LLVMBuildInsertElement(g->b, v, e[j], cj_c32(g, j), "");
  return LLVMBuildBitCast(g->b, v, cj_irb_mem_type(g, bytes), "");
}

/* n bf16 values (i16) -> n fp8 bytes in the arch's format, packed in a
 * cj_irb_mem_type(n). v_cvt_pk_fp8_f32 rounds to nearest even but does not
 * saturate (docs/isa-notes.md §2), so values are clamped to +-sat first. The clamp's
 * ordered compares are false for NaN, which passes through unclamped.
 * mul (NULL: none): an fp32 factor applied first, one fp32 rounding — the
 * quantizing rule fp8(fl32(x * qscale)) of docs/api.md. */
LLVMValueRef cj_cvt_fp8(cj_irb *g, LLVMValueRef *e, uint32_t n, uint32_t sat, LLVMValueRef mul) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef f[16], w[4];
  LLVMValueRef hi = cj_cf32(g, (float)sat), lo = cj_cf32(g, -(float)sat);
  for (uint32_t j = 0; j < 16; j++) {
    if (j >= n) { f[j] = cj_cf32(g, 0.0f); continue; }
    /* bf16 is the high half of an f32 */
    LLVMValueRef x = LLVMBuildBitCast(b, LLVMBuildShl(b, LLVMBuildZExt(b, e[j], g->i32, ""), cj_c32(g, 16), ""),
                                      g->f32, "");
    if (mul) x = LLVMBuildFMul(b, x, mul, "");
    x = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, x, hi, ""), hi, x, "");
    f[j] = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, lo, ""), lo, x, "");
  }
  uint32_t nw = (n + 3) / 4;
  for (uint32_t i = 0; i < nw; i++) {
    LLVMValueRef a0[4] = {f[4 * i], f[4 * i + 1], cj_c32(g, 0), cj_c1(g, 0)};
    LLVMValueRef lo = cj_irb_call(g, "llvm.amdgcn.cvt.pk.fp8.f32", NULL, 0, a0, 4);
    if (n - 4 * i > 2) {
      LLVMValueRef a1[4] = {f[4 * i + 2], f[4 * i + 3], lo, cj_c1(g, 1)};
      lo = cj_irb_call(g, "llvm.amdgcn.cvt.pk.fp8.f32", NULL, 0, a1, 4);
    }
    w[i] = lo;
  }
  if (n == 1) return LLVMBuildTrunc(b, w[0], g->i8, "");
  if (n == 2) return LLVMBuildTrunc(b, w[0], g->i16, "");
  if (n == 4) return w[0];
  LLVMValueRef v = LLVMGetPoison(cj_irb_mem_type(g, n));
  for (uint32_t i = 0; i < nw; i++) v = LLVMBuildInsertElement(b, v, w[i], cj_c32(g, i), "");
  return v;
}

/* E4M3FN bytes as the E4M3FNUZ bytes of half their value: the same bits
 * except -0 (0x80, NaN in FNUZ) -> 0x00 and NaN (0x7F, 0xFF) -> 0x80. v is
 * a cj_irb_mem_type (i8, i16, i32, <n x i32>); four bytes per i32 lane
 * with carry-free byte arithmetic (no compares: one op per 4 bytes):
 *   m = v & 0x7F..       magnitudes, each <= 0x7F
 *   nan = (m + 0x01..) & 0x80..   0x80 where m == 0x7F
 *   nz  = (m + 0x7F..) & 0x80..   0x80 where m != 0
 *   v &= ~(~nz & v & 0x80..)      -0 -> +0
 *   v = (v & ~((nan >> 7) * 0xFF)) | nan
 * (carry-free: every byte sum stays <= 0xFE). */
LLVMValueRef cj_fn_to_fnuz(cj_irb *g, LLVMValueRef v) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef t0 = LLVMTypeOf(v);
  int vec = LLVMGetTypeKind(t0) == LLVMVectorTypeKind;
  unsigned n = vec ? LLVMGetVectorSize(t0) : 1;
  if (!vec && t0 != g->i32) v = LLVMBuildZExt(b, v, g->i32, "");
  /* Hidden from the optimizer: knowing the zero high bytes, LLVM rewrites
   * the byte arithmetic into 16-bit SDWA compares. */
  v = cj_irb_opaque(g, v);
  LLVMValueRef k[5]; /* splat to v's lanes */
  static const uint32_t kv[5] = {0x7F7F7F7Fu, 0x01010101u, 0x80808080u, 0xFFu, 7};
  for (int i = 0; i < 5; i++) {
    LLVMValueRef c = cj_c32(g, kv[i]), cs[16];
    for (unsigned j = 0; j < n && j < 16; j++) cs[j] = c;
    k[i] = vec ? LLVMConstVector(cs, n) : c;
  }
  LLVMValueRef seven = k[4];
  LLVMValueRef m = LLVMBuildAnd(b, v, k[0], "");
  LLVMValueRef nan = LLVMBuildAnd(b, LLVMBuildAdd(b, m, k[1], ""), k[2], "");
  LLVMValueRef nz = LLVMBuildAnd(b, LLVMBuildAdd(b, m, k[0], ""), k[2], "");
  LLVMValueRef negz = LLVMBuildAnd(b, LLVMBuildAnd(b, LLVMBuildNot(b, nz, ""), v, ""), k[2], "");
  v = LLVMBuildAnd(b, v, LLVMBuildNot(b, negz, ""), "");
  LLVMValueRef full = LLVMBuildMul(b, LLVMBuildLShr(b, nan, seven, ""), k[3], "");
  v = LLVMBuildOr(b, LLVMBuildAnd(b, v, LLVMBuildNot(b, full, ""), ""), nan, "fnuz");
  return !vec && t0 != g->i32 ? LLVMBuildTrunc(b, v, t0, "") : v;
}

/* The QSCALE argument as fp32 (NULL when the plan has none). */
static LLVMValueRef cj_qscale(cj_irb *g, const cj_kplan *p, int has) {
  return has ? LLVMBuildBitCast(g->b, cj_irb_arg_role(g, p, CJ_ARG_QSCALE), g->f32, "qscale") : NULL;
}

/* One global side of the tile (x on load, y on store): a row-major [rows][cols]
 * view with rows of row_elems elements, lanes along cols, `width` bytes per
 * lane, lpr = 64/ve lanes per tile row, rpp rows per pass. */
typedef struct cj_tr_side {
  LLVMValueRef rsrc, origin; /* buffer resource, i32 byte offset of the tile origin in it */
  LLVMValueRef col, row0;    /* this lane's first column (elements) and row in pass 0 */
  LLVMValueRef col_ok, row_lim;
  uint32_t eb, row_elems, width, ve, rpp, passes; /* eb: element bytes of this tensor */
} cj_tr_side;

static void cj_tr_side_init(cj_tr_ctx *k, cj_tr_side *sd, LLVMValueRef tid, LLVMValueRef base, LLVMValueRef origin,
                            uint32_t eb, uint64_t row_elems, uint32_t width, LLVMValueRef col_lim,
                            LLVMValueRef row_lim, uint32_t nthr) {
  cj_irb *g = k->g;
  LLVMBuilderRef b = g->b;
  const cj_transpose_plan *t = k->t;
  const uint64_t total = t->n * t->c * t->s * eb;
  sd->rsrc = cj_tr_rsrc(g, base, LLVMBuildMul(b, origin, cj_c64(g, eb), ""), total, t->big, &sd->origin);
  sd->eb = eb;
  sd->row_elems = (uint32_t)row_elems;
  sd->width = width;
  sd->ve = width / eb;
  const uint32_t lpr = t->tile / sd->ve;
  sd->rpp = nthr / lpr;
  sd->passes = t->tile / sd->rpp;
  sd->col = LLVMBuildMul(b, LLVMBuildURem(b, tid, cj_c32(g, lpr), ""), cj_c32(g, sd->ve), "col");
  sd->row0 = LLVMBuildUDiv(b, tid, cj_c32(g, lpr), "row0");
  sd->col_ok = LLVMBuildICmp(b, LLVMIntULT, sd->col, col_lim, "");
  sd->row_lim = row_lim;
}

/* Row of pass ps, and the lane's byte offset there (CJ_OOB if outside). */
static LLVMValueRef cj_tr_side_row(cj_tr_ctx *k, const cj_tr_side *sd, uint32_t ps) {
  return LLVMBuildAdd(k->g->b, sd->row0, cj_c32(k->g, ps * sd->rpp), "row");
}
static LLVMValueRef cj_tr_side_off(cj_tr_ctx *k, const cj_tr_side *sd, LLVMValueRef row) {
  cj_irb *g = k->g;
  LLVMBuilderRef b = g->b;
  LLVMValueRef ok = LLVMBuildAnd(b, sd->col_ok, LLVMBuildICmp(b, LLVMIntULT, row, sd->row_lim, ""), "");
  LLVMValueRef e = LLVMBuildAdd(b, LLVMBuildMul(b, row, cj_c32(g, sd->row_elems), ""), sd->col, "");
  LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, e, cj_c32(g, sd->eb), ""), sd->origin, "");
  return cj_irb_oob(g, ok, off, CJ_OOB);
}

convjit_status cj_transpose_build(cj_irb *g, const cj_kplan *p) {
  const cj_transpose_plan *t = &p->u.tr;
  cj_tr_ctx k = {g, t, NULL};
  LLVMBuilderRef b = g->b;
  const uint32_t T = t->tile, eb = t->elem_bytes, nthr = p->block[0];
  if (!cj_irb_kernel(g, p, 0)) return g->st;
  k.lds = cj_irb_lds(g, "tile", T * t->lds_pitch, 16); /* codegen.c checks it equals p->lds_bytes */

  LLVMValueRef tid = cj_irb_tid(g, 0);
  LLVMValueRef wg = cj_irb_wgid(g, 0); /* c tile fastest (kplan_layout.c says why) */
  LLVMValueRef c0 = LLVMBuildMul(b, LLVMBuildURem(b, wg, cj_c32(g, t->c_tiles), ""), cj_c32(g, T), "c0");
  LLVMValueRef s0 = LLVMBuildMul(b, LLVMBuildUDiv(b, wg, cj_c32(g, t->c_tiles), ""), cj_c32(g, T), "s0");
  LLVMValueRef nn = cj_irb_wgid(g, 2);
  LLVMValueRef s_lim = LLVMBuildSub(b, cj_c32(g, (uint32_t)t->s), s0, "s.lim");
  LLVMValueRef c_lim = LLVMBuildSub(b, cj_c32(g, (uint32_t)t->c), c0, "c.lim");

  /* Tile origins in elements (i64, uniform): x[n][c0][s0], y[n][s0][c0]. */
  LLVMValueRef n64 = LLVMBuildZExt(b, nn, g->i64, ""), s064 = LLVMBuildZExt(b, s0, g->i64, ""),
               c064 = LLVMBuildZExt(b, c0, g->i64, "");
  LLVMValueRef C = cj_c64(g, t->c), S = cj_c64(g, t->s);
  LLVMValueRef ox = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, n64, C, ""), c064, ""), S, ""),
                                 s064, "");
  LLVMValueRef oy = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, n64, S, ""), s064, ""), C, ""),
                                 c064, "");
  /* x: rows c (limit c_lim), columns s; y: rows s (limit s_lim), columns c. */
  cj_tr_side xs, ys;
  cj_tr_side_init(&k, &xs, tid, cj_irb_arg_role(g, p, CJ_ARG_SRC), ox, eb, t->s, t->load_bytes, s_lim, c_lim, nthr);
  cj_tr_side_init(&k, &ys, tid, cj_irb_arg_role(g, p, CJ_ARG_DST), oy, t->out_bytes, t->c, t->store_bytes, c_lim, s_lim, nthr);
  LLVMTypeRef et = eb == 2 ? g->i16 : g->i8;
  LLVMValueRef qs = cj_qscale(g, p, t->cvt && t->qscale);

  /* Load: x row c0+r, columns s0+col.. -> LDS tile[r][col..]. */
  for (uint32_t ps = 0; ps < xs.passes; ps++) {
    LLVMValueRef r = cj_tr_side_row(&k, &xs, ps);
    LLVMValueRef v = cj_irb_buf_load(g, cj_irb_mem_type(g, xs.width), xs.rsrc, cj_tr_side_off(&k, &xs, r), NULL, 0);
    cj_irb_lds_store(g, v, k.lds, cj_tr_lds_addr(&k, r, xs.col), xs.width);
  }
  cj_irb_workgroup_sync(g);
  /* Store: LDS column tile[col..col+ve-1][r], element by element -> y row s0+r. */
  for (uint32_t ps = 0; ps < ys.passes; ps++) {
    LLVMValueRef r = cj_tr_side_row(&k, &ys, ps);
    LLVMValueRef e[16];
    for (uint32_t j = 0; j < ys.ve; j++)
      e[j] = cj_irb_lds_load(g, et, k.lds, cj_tr_lds_addr(&k, LLVMBuildAdd(b, ys.col, cj_c32(g, j), ""), r), eb);
    if (t->widen) cj_widen_f32(g, e, ys.ve, t->widen);
    LLVMValueRef v = t->cvt ? cj_cvt_fp8(g, e, ys.ve, t->sat_max, qs)
                            : cj_pack(g, e, ys.ve, t->widen ? g->i32 : et, ys.width);
    if (t->fn_map) v = cj_fn_to_fnuz(g, v);
    cj_irb_buf_store(g, v, ys.rsrc, cj_tr_side_off(&k, &ys, r), NULL, 0);
  }
  LLVMBuildRetVoid(b);
  return g->st;
}

/* Backward data's source element of packed row `row` (a dx channel), phase
 * tap `tap` and dy channel ki (kplan_layout.h, bwd): w[gi*kg + ki][cl][t][r][s]
 * with the phase tap's forward taps t = tf - jt*ts (likewise r, s). */
static LLVMValueRef cj_wpack_bwd_src(cj_irb *g, const cj_wpack_plan *w, LLVMValueRef row, LLVMValueRef ki,
                                     LLVMValueRef tap) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef j[3], rest = tap;
  for (int i = 2; i >= 0; i--) { /* tap = (jt*J_r + jr)*J_s + js */
    LLVMValueRef q = i ? LLVMBuildUDiv(b, rest, cj_c32(g, w->jtap[i]), "") : cj_c32(g, 0);
    j[i] = i ? LLVMBuildSub(b, rest, LLVMBuildMul(b, q, cj_c32(g, w->jtap[i]), ""), "") : rest;
    rest = q;
  }
  LLVMValueRef gi = LLVMBuildUDiv(b, row, cj_c32(g, w->cg), "gi");
  LLVMValueRef cl = LLVMBuildSub(b, row, LLVMBuildMul(b, gi, cj_c32(g, w->cg), ""), "cl");
  LLVMValueRef e = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, gi, cj_c32(g, w->c), ""), ki, ""),
                                                cj_c32(g, w->cg), ""),
                                cl, "");
  for (int i = 0; i < 3; i++) { /* lanes past the taps are masked: their t may wrap */
    LLVMValueRef t = LLVMBuildSub(b, cj_c32(g, w->tf[i]), LLVMBuildMul(b, j[i], cj_c32(g, w->ts[i]), ""), "");
    e = LLVMBuildAdd(b, LLVMBuildMul(b, e, cj_c32(g, w->src[i]), ""), t, "");
  }
  return e;
}

/* Weight pack: one thread per packed element o = k*row + (tap*c_pad + c),
 * through the plan's element mode (padding reads 0, which every mode keeps
 * 0). Also the conv's channel-padding x pre-pass (K = N, TRS = D*H*W). */
convjit_status cj_wpack_build(cj_irb *g, const cj_kplan *p) {
  const cj_wpack_plan *w = &p->u.wp;
  LLVMBuilderRef b = g->b;
  const uint32_t eb = w->elem_bytes, ob = w->out_bytes;
  if (!cj_irb_kernel(g, p, 0)) return g->st;
  /* the sizes: constants, or (generic) the last five u32 arguments */
  LLVMValueRef K, C, TRS, CP, ROW;
  if (w->generic) {
    int a = cj_kplan_arg_index(p, CJ_ARG_GEOM);
    K = cj_irb_arg(g, (unsigned)a), C = cj_irb_arg(g, (unsigned)a + 1), TRS = cj_irb_arg(g, (unsigned)a + 2);
    CP = cj_irb_arg(g, (unsigned)a + 3), ROW = cj_irb_arg(g, (unsigned)a + 4);
  } else {
    K = cj_c32(g, w->k), C = cj_c32(g, w->c), TRS = cj_c32(g, w->trs), CP = cj_c32(g, w->c_pad);
    ROW = cj_c32(g, w->row_elems);
  }
  LLVMValueRef total = LLVMBuildMul(b, K, ROW, "total");
  LLVMValueRef o = LLVMBuildAdd(b, LLVMBuildMul(b, cj_irb_wgid(g, 0), cj_c32(g, p->block[0]), ""), cj_irb_tid(g, 0),
                                "o");
  LLVMValueRef out_ok = LLVMBuildICmp(b, LLVMIntULT, o, total, "");
  LLVMValueRef kk = LLVMBuildUDiv(b, o, ROW, "k");
  LLVMValueRef j = LLVMBuildSub(b, o, LLVMBuildMul(b, kk, ROW, ""), "j");
  LLVMValueRef tap = LLVMBuildUDiv(b, j, CP, "tap");
  LLVMValueRef c = LLVMBuildSub(b, j, LLVMBuildMul(b, tap, CP, ""), "c");
  LLVMValueRef in_ok = LLVMBuildAnd(b, out_ok, LLVMBuildICmp(b, LLVMIntULT, j, LLVMBuildMul(b, TRS, CP, ""), ""), "");
  in_ok = LLVMBuildAnd(b, in_ok, LLVMBuildICmp(b, LLVMIntULT, c, C, ""), "");
  /* w[k][c][tap] */
  LLVMValueRef in = w->bwd ? cj_wpack_bwd_src(g, w, kk, c, tap)
                           : LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, kk, C, ""), c, ""), TRS, ""),
                                          tap, "");
  in = LLVMBuildMul(b, in, cj_c32(g, eb), "");
  /* backward data's source is the whole forward weight (never generic) */
  LLVMValueRef in_bytes =
      w->bwd ? cj_c64(g, (uint64_t)w->groups * w->c * w->cg * w->src[0] * w->src[1] * w->src[2] * eb)
             : LLVMBuildMul(b, LLVMBuildZExt(b, LLVMBuildMul(b, LLVMBuildMul(b, K, C, ""), TRS, ""), g->i64, ""),
                            cj_c64(g, eb), "");
  LLVMValueRef out_bytes = LLVMBuildMul(b, LLVMBuildZExt(b, total, g->i64, ""), cj_c64(g, ob), "");
  LLVMValueRef wr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_SRC), in_bytes);
  LLVMValueRef pr = cj_irb_rsrc(g, cj_irb_arg_role(g, p, CJ_ARG_DST), out_bytes);
  LLVMTypeRef et = cj_irb_mem_type(g, eb);
  /* Padding channels and the row tail read out of range: the hardware gives 0. */
  LLVMValueRef v = cj_irb_buf_load(g, et, wr, cj_irb_oob(g, in_ok, in, CJ_OOB), NULL, 0);
  if (w->mode == CJ_PREP_FN_FNUZ) v = cj_fn_to_fnuz(g, v);
  if (w->mode == CJ_PREP_QUANT) v = cj_cvt_fp8(g, &v, 1, w->sat_max, cj_qscale(g, p, 1));
  LLVMValueRef oo = LLVMBuildMul(b, o, cj_c32(g, ob), "");
  cj_irb_buf_store(g, v, pr, cj_irb_oob(g, out_ok, oo, CJ_OOB), NULL, 0);
  LLVMBuildRetVoid(b);
  return g->st;
}

