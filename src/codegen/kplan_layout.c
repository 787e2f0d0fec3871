/* Plans of the layout family: transpose and weight pack (contract in
 * kplan_layout.h). Pure C: every decision layout.c needs, made here, with
 * its reason beside it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "codegen/kplan.h"
#include "util/numfmt.h"

#define CJ_2G (UINT64_C(1) << 31)
#define CJ_GRID_YZ_MAX 65535u /* HIP's gridDim.y/z limit (blocks) */

/* Largest power of two <= 16 dividing row_bytes: the widest access that stays
 * aligned along a row and never crosses its end. */
static uint32_t cj_access_bytes(uint64_t row_bytes) {
  uint32_t w = 16;
  while (w > 1 && row_bytes % w) w >>= 1;
  return w;
}

static convjit_status cj_mul(uint64_t a, uint64_t b, uint64_t *r, const char *what) {
  CJ_CHECK(!__builtin_mul_overflow(a, b, r), CONVJIT_ERR_INVALID_ARG,
           "%s overflows 64 bits (%" PRIu64 " * %" PRIu64 ")", what, a, b);
  return CONVJIT_OK;
}

static void cj_plan_header(cj_kplan *p, cj_kop op, const cj_arch *arch) {
  memset(p, 0, sizeof *p);
  p->op = op;
  p->arch = arch;
  p->block[0] = CJ_TR_THREADS;
  p->block[1] = 1;
  p->block[2] = 1;
}

static void cj_plan_xy_args(cj_kplan *p, const char *in, const char *out) {
  p->nargs = 0;
  cj_kplan_add_arg(p, CJ_ARG_SRC, in);
  cj_kplan_add_arg(p, CJ_ARG_DST, out);
}

static uint32_t cj_arch_sat_max(const cj_arch *arch) {
  return (uint32_t)cj_fp8_max(arch->fp8 == CJ_FP8_E4M3FNUZ ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN);
}

/* The element bytes a mode reads: QUANT bf16, FN_FNUZ fp8, COPY either. */
static convjit_status cj_prep_check(const char *what, uint32_t elem_bytes, cj_prep_mode mode) {
  CJ_CHECK(mode == CJ_PREP_COPY || mode == CJ_PREP_FN_FNUZ || mode == CJ_PREP_QUANT, CONVJIT_ERR_INVALID_ARG,
           "%s: mode = %d: must be copy (0), fn->fnuz (1) or quantize (2)", what, (int)mode);
  CJ_CHECK(mode == CJ_PREP_COPY || elem_bytes == (mode == CJ_PREP_QUANT ? 2u : 1u), CONVJIT_ERR_INVALID_ARG,
           "%s: elem_bytes = %u: mode %s reads %s", what, elem_bytes, mode == CJ_PREP_QUANT ? "quantize" : "fn->fnuz",
           mode == CJ_PREP_QUANT ? "bf16 (2)" : "fp8 (1)");
  return CONVJIT_OK;
}

static convjit_status cj_transpose_fill(cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes, uint32_t cvt,
                                        uint64_t n, uint64_t c, uint64_t s) {
  CJ_CHECK(p != NULL, CONVJIT_ERR_INVALID_ARG, "transpose plan: plan = NULL");
  CJ_CHECK(arch != NULL, CONVJIT_ERR_INVALID_ARG, "transpose plan: arch = NULL");
  CJ_CHECK(elem_bytes == 1 || elem_bytes == 2, CONVJIT_ERR_INVALID_ARG,
           "transpose plan: elem_bytes = %u: must be 1 (fp8) or 2 (bf16)", elem_bytes);
  CJ_CHECK(n > 0, CONVJIT_ERR_INVALID_ARG, "transpose plan: n = %" PRIu64 ": must be > 0", n);
  CJ_CHECK(c > 0, CONVJIT_ERR_INVALID_ARG, "transpose plan: c = %" PRIu64 ": must be > 0", c);
  CJ_CHECK(s > 0, CONVJIT_ERR_INVALID_ARG, "transpose plan: s = %" PRIu64 ": must be > 0", s);
  uint64_t nc, ncs, bytes;
  CJ_TRY(cj_mul(n, c, &nc, "transpose plan: n*c"));
  CJ_TRY(cj_mul(nc, s, &ncs, "transpose plan: n*c*s"));
  CJ_TRY(cj_mul(ncs, elem_bytes, &bytes, "transpose plan: tensor bytes"));

  const uint64_t T = CJ_TR_TILE;
  uint64_t ct = (c + T - 1) / T, st = (s + T - 1) / T;
  /* One work-group per (c tile, s tile) on grid.x, c tiles fastest: the 64*eb
   * bytes a tile writes to each y row are completed by the neighbouring
   * work-groups right away (whole cache lines), while the other half of an
   * x row segment is read only c_tiles work-groups later (still in L2). */
  CJ_CHECK(ct * st <= UINT32_MAX / CJ_TR_THREADS, CONVJIT_ERR_UNSUPPORTED,
           "transpose plan: c = %" PRIu64 ", s = %" PRIu64 ": %" PRIu64 " x %" PRIu64
           " tiles exceed the 2^32 work-item grid",
           c, s, ct, st);
  CJ_CHECK(n <= CJ_GRID_YZ_MAX, CONVJIT_ERR_UNSUPPORTED,
           "transpose plan: n = %" PRIu64 ": exceeds grid.z <= %u", n, CJ_GRID_YZ_MAX);
  /* Tile-local offsets (BIG path) span up to 64 rows of x (s*eb bytes each)
   * and of y (c*eb): both must stay below the 2 GiB num_records and the
   * 0x80000000 out-of-range sentinel. */
  CJ_CHECK((T * s + T) * elem_bytes <= CJ_2G, CONVJIT_ERR_UNSUPPORTED,
           "transpose plan: s = %" PRIu64 ": a 64-row tile of x spans more than 2 GiB", s);
  CJ_CHECK((T * c + T) * (cvt ? 1 : elem_bytes) <= CJ_2G, CONVJIT_ERR_UNSUPPORTED,
           "transpose plan: c = %" PRIu64 ": a 64-row tile of y spans more than 2 GiB", c);

  cj_plan_header(p, CJ_KOP_TRANSPOSE, arch);
  cj_transpose_plan *t = &p->u.tr;
  t->elem_bytes = elem_bytes;
  t->out_bytes = cvt ? 1 : elem_bytes;
  t->cvt = cvt;
  t->sat_max = cvt ? cj_arch_sat_max(arch) : 0;
  t->n = n;
  t->c = c;
  t->s = s;
  t->tile = CJ_TR_TILE;
  t->load_bytes = cj_access_bytes(s * elem_bytes);
  t->store_bytes = cj_access_bytes(c * t->out_bytes);
  t->big = bytes >= CJ_2G;
  t->lds_pitch = CJ_TR_TILE * elem_bytes;
  t->c_tiles = (uint32_t)ct;
  t->s_tiles = (uint32_t)st;
  p->grid[0] = ct * st;
  p->grid[1] = 1;
  p->grid[2] = n;
  p->lds_bytes = CJ_TR_TILE * CJ_TR_TILE * elem_bytes;
  cj_plan_xy_args(p, "x", "y");
  const char *kind = cvt ? "cj_transpose_bf16fp8" : (elem_bytes == 2 ? "cj_transpose_e2" : "cj_transpose_e1");
  int len = snprintf(p->name, sizeof p->name, "%s_n%" PRIu64 "_c%" PRIu64 "_s%" PRIu64, kind, n, c, s);
  if (len < 0 || (size_t)len >= sizeof p->name) {
    uint64_t dims[3] = {n, c, s};
    snprintf(p->name, sizeof p->name, "%s_h%016" PRIx64, kind, cj_hash64(dims, sizeof dims, 0));
  }
  return CONVJIT_OK;
}

convjit_status cj_kplan_transpose_init(cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes, uint64_t n, uint64_t c,
                                       uint64_t s) {
  return cj_transpose_fill(p, arch, elem_bytes, 0, n, c, s);
}

convjit_status cj_kplan_transpose_cvt_init(cj_kplan *p, const cj_arch *arch, uint64_t n, uint64_t c, uint64_t s) {
  return cj_transpose_fill(p, arch, 2, 1, n, c, s);
}

convjit_status cj_kplan_transpose_widen_init(cj_kplan *p, const cj_arch *arch, uint32_t widen, uint64_t n, uint64_t c,
                                             uint64_t s) {
  CJ_CHECK(widen == 1 || widen == 2, CONVJIT_ERR_INVALID_ARG, "transpose plan: widen = %u: must be 1 (bf16) or 2 (f16)",
           widen);
  CJ_TRY(cj_transpose_fill(p, arch, 2, 0, n, c, s));
  cj_transpose_plan *t = &p->u.tr;
  CJ_CHECK(!t->big && (CJ_TR_TILE * c + CJ_TR_TILE) * 4 <= CJ_2G, CONVJIT_ERR_UNSUPPORTED,
           "transpose plan: widen: c = %" PRIu64 ", s = %" PRIu64 ": x past 2 GiB or a 64-row tile of y past 2 GiB", c,
           s);
  t->widen = widen;
  t->out_bytes = 4;
  t->store_bytes = cj_access_bytes(c * 4);
  char base[sizeof p->name];
  snprintf(base, sizeof base, "%s", p->name);
  int len = snprintf(p->name, sizeof p->name, "%s_f32", base);
  if (len < 0 || (size_t)len >= sizeof p->name)
    snprintf(p->name, sizeof p->name, "cj_transpose_f32_h%016" PRIx64, cj_hash64(base, strlen(base), 0));
  return CONVJIT_OK;
}

/* Names a prep plan's kernel "<base>_fnuz" / "_q" after its shape name,
 * hashing the whole name when it does not fit. */
static void cj_prep_name(cj_kplan *p, cj_prep_mode mode) {
  if (mode == CJ_PREP_COPY) return;
  char base[sizeof p->name];
  snprintf(base, sizeof base, "%s", p->name);
  int len = snprintf(p->name, sizeof p->name, "%s_%s", base, mode == CJ_PREP_QUANT ? "q" : "fnuz");
  if (len < 0 || (size_t)len >= sizeof p->name)
    snprintf(p->name, sizeof p->name, "cj_prep%d_h%016" PRIx64, (int)mode, cj_hash64(base, strlen(base), 0));
}

convjit_status cj_kplan_transpose_prep_init(cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes, cj_prep_mode mode,
                                            uint64_t n, uint64_t c, uint64_t s) {
  CJ_TRY(cj_prep_check("transpose plan", elem_bytes, mode));
  CJ_TRY(cj_transpose_fill(p, arch, elem_bytes, mode == CJ_PREP_QUANT, n, c, s));
  p->u.tr.qscale = mode == CJ_PREP_QUANT;
  p->u.tr.fn_map = mode == CJ_PREP_FN_FNUZ;
  if (p->u.tr.qscale) cj_kplan_add_value_arg(p, CJ_ARG_QSCALE, NULL);
  cj_prep_name(p, mode);
  return CONVJIT_OK;
}

convjit_status cj_kplan_wpack_init(cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes, uint32_t k, uint32_t c,
                                   uint32_t trs, uint32_t c_pad, uint32_t row_elems) {
  return cj_kplan_wpack_prep_init(p, arch, elem_bytes, CJ_PREP_COPY, k, c, trs, c_pad, row_elems);
}

convjit_status cj_kplan_wpack_prep_init(cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes, cj_prep_mode mode,
                                        uint32_t k, uint32_t c, uint32_t trs, uint32_t c_pad, uint32_t row_elems) {
  CJ_CHECK(p != NULL, CONVJIT_ERR_INVALID_ARG, "weight-pack plan: plan = NULL");
  CJ_CHECK(arch != NULL, CONVJIT_ERR_INVALID_ARG, "weight-pack plan: arch = NULL");
  CJ_CHECK(elem_bytes == 1 || elem_bytes == 2, CONVJIT_ERR_INVALID_ARG,
           "weight-pack plan: elem_bytes = %u: must be 1 (fp8) or 2 (bf16)", elem_bytes);
  CJ_TRY(cj_prep_check("weight-pack plan", elem_bytes, mode));
  const uint32_t ob = mode == CJ_PREP_QUANT ? 1 : elem_bytes;
  CJ_CHECK(k > 0, CONVJIT_ERR_INVALID_ARG, "weight-pack plan: k = %u: must be > 0", k);
  CJ_CHECK(c > 0, CONVJIT_ERR_INVALID_ARG, "weight-pack plan: c = %u: must be > 0", c);
  CJ_CHECK(trs > 0, CONVJIT_ERR_INVALID_ARG, "weight-pack plan: trs = %u: must be > 0", trs);
  CJ_CHECK(c_pad >= c, CONVJIT_ERR_INVALID_ARG, "weight-pack plan: c_pad = %u: must be >= c = %u", c_pad, c);
  uint64_t tap_elems = (uint64_t)trs * c_pad;
  CJ_CHECK(row_elems >= tap_elems, CONVJIT_ERR_INVALID_ARG,
           "weight-pack plan: row_elems = %u: must be >= trs*c_pad = %" PRIu64, row_elems, tap_elems);
  /* 32-bit lane offsets into both tensors (one resource each, no rebase):
   * weights are far below 2 GiB in every real network. */
  uint64_t out_bytes = (uint64_t)k * row_elems * ob;
  uint64_t in_bytes = (uint64_t)k * c * trs * elem_bytes;
  CJ_CHECK(out_bytes < CJ_2G, CONVJIT_ERR_UNSUPPORTED,
           "weight-pack plan: k*row_elems = %" PRIu64 " elements: packed weight of 2 GiB or more",
           out_bytes / ob);
  CJ_CHECK(in_bytes < CJ_2G, CONVJIT_ERR_UNSUPPORTED,
           "weight-pack plan: k*c*trs = %" PRIu64 " elements: weight of 2 GiB or more", in_bytes / elem_bytes);

  cj_plan_header(p, CJ_KOP_WEIGHT_PACK, arch);
  cj_wpack_plan *w = &p->u.wp;
  w->elem_bytes = elem_bytes;
  w->out_bytes = ob;
  w->mode = (uint32_t)mode;
  w->sat_max = mode == CJ_PREP_QUANT ? cj_arch_sat_max(arch) : 0;
  w->k = k;
  w->c = c;
  w->trs = trs;
  w->c_pad = c_pad;
  w->row_elems = row_elems;
  w->per_thread = 1;
  uint64_t total = (uint64_t)k * row_elems;
  p->grid[0] = (total + CJ_TR_THREADS - 1) / CJ_TR_THREADS;
  p->grid[1] = 1;
  p->grid[2] = 1;
  p->lds_bytes = 0;
  cj_plan_xy_args(p, "w", "wp");
  if (mode == CJ_PREP_QUANT) cj_kplan_add_value_arg(p, CJ_ARG_QSCALE, NULL);
  snprintf(p->name, sizeof p->name, "cj_wpack_e%u_k%u_c%u_t%u_p%u_r%u", elem_bytes, k, c, trs, c_pad, row_elems);
  cj_prep_name(p, mode);
  return CONVJIT_OK;
}

convjit_status cj_kplan_wpack_bwd_init(cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes, cj_prep_mode mode,
                                       uint32_t groups, uint32_t kg, uint32_t cg, const uint32_t src[3],
                                       const uint32_t jtap[3], const uint32_t tf[3], const uint32_t ts[3],
                                       uint32_t k_pad, uint32_t row_elems) {
  CJ_CHECK(src && jtap && tf && ts, CONVJIT_ERR_INVALID_ARG, "backward weight-pack plan: NULL tap map");
  uint64_t rows = (uint64_t)groups * cg, taps = (uint64_t)jtap[0] * jtap[1] * jtap[2];
  CJ_CHECK(groups > 0 && rows <= UINT32_MAX && taps > 0 && taps <= UINT32_MAX, CONVJIT_ERR_INVALID_ARG,
           "backward weight-pack plan: groups %u x cg %u rows, %u x %u x %u taps", groups, cg, jtap[0], jtap[1],
           jtap[2]);
  for (int i = 0; i < 3; i++)
    CJ_CHECK(src[i] > 0 && tf[i] < src[i] && (uint64_t)(jtap[i] - 1) * ts[i] <= tf[i], CONVJIT_ERR_INVALID_ARG,
             "backward weight-pack plan: dim %d: taps %u - j*%u for j < %u leave the filter of %u", i, tf[i], ts[i],
             jtap[i], src[i]);
  uint64_t in_bytes = (uint64_t)groups * kg * cg * src[0] * src[1] * src[2] * elem_bytes;
  CJ_CHECK(in_bytes < CJ_2G, CONVJIT_ERR_UNSUPPORTED,
           "backward weight-pack plan: the weight (%" PRIu64 " bytes) must be < 2 GiB", in_bytes);
  CJ_TRY(cj_kplan_wpack_prep_init(p, arch, elem_bytes, mode, (uint32_t)rows, kg, (uint32_t)taps, k_pad, row_elems));
  cj_wpack_plan *w = &p->u.wp;
  w->bwd = 1;
  w->groups = groups;
  w->cg = cg;
  for (int i = 0; i < 3; i++) {
    w->src[i] = src[i];
    w->jtap[i] = jtap[i];
    w->tf[i] = tf[i];
    w->ts[i] = ts[i];
  }
  p->name[0] = 0; /* one name per key: the tap map is part of it */
  char prefix[24];
  snprintf(prefix, sizeof prefix, "cj_wpackt_e%u", elem_bytes);
  return cj_kplan_name_from_key(p, prefix, cj_kplan_wpack_key);
}

convjit_status cj_kplan_wpack_generic_init(cj_kplan *p, const cj_arch *arch, uint32_t elem_bytes, cj_prep_mode mode) {
  CJ_TRY(cj_kplan_wpack_prep_init(p, arch, elem_bytes, mode, 1, 1, 1, 1, 1));
  cj_wpack_plan *w = &p->u.wp;
  w->k = w->c = w->trs = w->c_pad = w->row_elems = 0;
  w->generic = 1;
  p->grid[0] = 1;
  static const char *const sizes[5] = {"k", "c", "trs", "c_pad", "row"};
  for (int i = 0; i < 5; i++) cj_kplan_add_value_arg(p, CJ_ARG_GEOM, sizes[i]);
  snprintf(p->name, sizeof p->name, "cj_wpack_e%u_generic", elem_bytes);
  cj_prep_name(p, mode);
  return CONVJIT_OK;
}

/* One list of the specialization fields serves both the key (every field
 * that changes the code) and the printout (with each field's reason). */
static void cj_layout_field(cj_strbuf *sb, int key, const char *name, uint64_t v, const char *reason) {
  if (key) cj_kplan_key_u64(sb, name, v);
  else cj_kplan_print_u64(sb, name, v, reason);
}

static void cj_layout_fields(const cj_kplan *p, cj_strbuf *out, int key) {
  if (p->op == CJ_KOP_TRANSPOSE) {
    const cj_transpose_plan *t = &p->u.tr;
    cj_layout_field(out, key, "elem_bytes", t->elem_bytes, t->elem_bytes == 2 ? "x is bf16" : "x is fp8");
    cj_layout_field(out, key, "out_bytes", t->out_bytes,
                    t->out_bytes == 4 ? "y is fp32" : t->out_bytes == 2 ? "y is bf16" : "y is fp8");
    if (t->widen)
      cj_layout_field(out, key, "widen", t->widen, t->widen == 1 ? "bf16 -> fp32 (exact)" : "f16 -> fp32 (exact)");
    cj_layout_field(out, key, "cvt", t->cvt,
                    t->cvt ? "bf16 -> fp8 (arch format) in the store phase, RNE after clamping to sat_max"
                           : "bytes moved unchanged");
    if (t->cvt)
      cj_layout_field(out, key, "sat_max", t->sat_max, "largest finite fp8 of the arch (no hardware saturation)");
    if (t->cvt)
      cj_layout_field(out, key, "qscale", t->qscale,
                      t->qscale ? "x * qscale (fp32 argument, 1/x_scale) before the convert" : "no scale");
    cj_layout_field(out, key, "fn_map", t->fn_map,
                    t->fn_map ? "E4M3FN -> E4M3FNUZ bits: 0x80 -> 0x00, 0x7F/0xFF -> 0x80 (NaN)" : "no code map");
    cj_layout_field(out, key, "n", t->n, "samples (grid.z)");
    cj_layout_field(out, key, "c", t->c, "channels: rows of x, columns of y");
    cj_layout_field(out, key, "s", t->s, "D*H*W: columns of x, rows of y");
    cj_layout_field(out, key, "tile", t->tile, "tile edge (c and s) through LDS");
    cj_layout_field(out, key, "c_tiles", t->c_tiles,
                    "grid.x = c_tiles * s_tiles, c tiles fastest: y rows fill whole lines");
    cj_layout_field(out, key, "s_tiles", t->s_tiles, "tiles along s");
    cj_layout_field(out, key, "load_bytes", t->load_bytes,
                    "widest aligned access dividing an x row (s*eb): lanes never straddle a row");
    cj_layout_field(out, key, "store_bytes", t->store_bytes,
                    "widest aligned access dividing a y row (c*out_bytes): lanes never straddle a row");
    cj_layout_field(out, key, "big", t->big,
                    t->big ? "tensor >= 2^31 bytes: per-block 64-bit rebase, tile-local 32-bit offsets"
                           : "tensor < 2^31 bytes: one resource, 32-bit offsets from the start");
    cj_layout_field(out, key, "lds_pitch", t->lds_pitch,
                    "row bytes, unpadded: 16-byte-chunk XOR swizzle avoids bank conflicts");
  } else if (p->op == CJ_KOP_WEIGHT_PACK) {
    const cj_wpack_plan *w = &p->u.wp;
    cj_layout_field(out, key, "elem_bytes", w->elem_bytes, w->elem_bytes == 2 ? "bf16" : "fp8");
    cj_layout_field(out, key, "out_bytes", w->out_bytes, w->out_bytes == 2 ? "bf16" : "fp8");
    cj_layout_field(out, key, "mode", w->mode,
                    w->mode == CJ_PREP_QUANT     ? "bf16 -> fp8(fl32(w * qscale)), RNE, saturated to sat_max"
                    : w->mode == CJ_PREP_FN_FNUZ ? "E4M3FN -> E4M3FNUZ bits: 0x80 -> 0x00, 0x7F/0xFF -> 0x80"
                                                 : "elements moved unchanged");
    if (w->mode == CJ_PREP_QUANT)
      cj_layout_field(out, key, "sat_max", w->sat_max, "largest finite fp8 of the arch (no hardware saturation)");
    cj_layout_field(out, key, "k", w->k, "output channels: rows");
    cj_layout_field(out, key, "c", w->c, "input channels");
    cj_layout_field(out, key, "trs", w->trs, "filter taps T*R*S");
    cj_layout_field(out, key, "c_pad", w->c_pad, "C zero-padded to the conv's vector width");
    cj_layout_field(out, key, "row_elems", w->row_elems, "packed row length; tail past trs*c_pad is zero");
    cj_layout_field(out, key, "per_thread", w->per_thread, "output elements per thread (runs once per weight)");
    if (w->bwd) { /* keyed only here: the forward packs keep their keys */
      cj_layout_field(out, key, "bwd", w->bwd, "backward data: a phase's taps reversed, K and C swapped");
      cj_layout_field(out, key, "groups", w->groups, "groups: row gi*cg + cl reads weight rows gi*kg ..");
      cj_layout_field(out, key, "cg", w->cg, "dx channels per group (the forward weight's second dim)");
      static const char *const dn[3] = {"t", "r", "s"};
      for (int i = 0; i < 3; i++) {
        char f[16];
        snprintf(f, sizeof f, "src_%s", dn[i]);
        cj_layout_field(out, key, f, w->src[i], "forward filter extent");
        snprintf(f, sizeof f, "jtap_%s", dn[i]);
        cj_layout_field(out, key, f, w->jtap[i], "the phase's taps");
        snprintf(f, sizeof f, "tf_%s", dn[i]);
        cj_layout_field(out, key, f, w->tf[i], "forward tap of phase tap 0");
        snprintf(f, sizeof f, "ts_%s", dn[i]);
        cj_layout_field(out, key, f, w->ts[i], "forward taps between phase taps (stride / gcd)");
      }
    }
    if (w->generic) /* keyed only when set: the specialized packs keep their keys */
      cj_layout_field(out, key, "generic", w->generic, "k, c, trs, c_pad, row_elems are u32 arguments");
  }
}

void cj_kplan_transpose_key(const cj_kplan *p, cj_strbuf *key) { cj_layout_fields(p, key, 1); }
void cj_kplan_transpose_print(const cj_kplan *p, cj_strbuf *out) { cj_layout_fields(p, out, 0); }
void cj_kplan_wpack_key(const cj_kplan *p, cj_strbuf *key) { cj_layout_fields(p, key, 1); }
void cj_kplan_wpack_print(const cj_kplan *p, cj_strbuf *out) { cj_layout_fields(p, out, 0); }
