/* Backward weight: the padded grid, its pre-pass and its finalize plans
 * (contract in kplan_wgrad.h). Pure C, no LLVM. Called by kplan_conv.c
 * (the grid of the GEMM's plan); calls kplan.c only. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "codegen/kplan.h"

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
static uint64_t round_up(uint64_t a, uint64_t b) { return ceil_div(a, b) * b; }

/* Phase count of one dim: the largest phase index a tap takes, + 1. The
 * phases cycle with period stride / gcd, so a filter at least that long
 * takes all of them; a shorter one is walked (fewer than stride taps). */
static uint32_t phases_of(uint32_t f, uint32_t st, uint32_t dil, uint32_t pg) {
  uint32_t period = st / pg;
  if (f >= period) return period;
  uint32_t top = 0;
  for (uint32_t i = 0; i < f; i++) {
    uint32_t idx = (uint32_t)((uint64_t)i * dil % st) / pg;
    if (idx > top) top = idx;
  }
  return top + 1;
}

convjit_status cj_wgrad_grid_derive(const cj_conv_geom *g, cj_wgrad_grid *w) {
  memset(w, 0, sizeof *w);
  if (!g->wgrad) return CONVJIT_OK;
  w->on = 1;
  w->db = g->wgrad_db ? 1 : 0;
  const uint32_t f[3] = {g->t, g->r, g->s}, o[3] = {g->od, g->oh, g->ow};
  w->pt = 1;
  for (int i = 0; i < 3; i++) {
    w->pg[i] = (uint32_t)cj_gcd(g->stride[i], g->dil[i]);
    w->ph[i] = phases_of(f[i], g->stride[i], g->dil[i], w->pg[i]);
    w->qmax[i] = (uint32_t)((uint64_t)(f[i] - 1) * g->dil[i] / g->stride[i]);
    uint64_t j = (uint64_t)o[i] + w->qmax[i];
    CJ_CHECK(j < (1ull << 31), CONVJIT_ERR_UNSUPPORTED, "conv backward weight: grid extent %" PRIu64 " in dim %d",
             j, i);
    w->j[i] = (uint32_t)j;
    w->pt *= w->ph[i];
  }
  w->positions = (uint64_t)g->n * w->j[0] * w->j[1] * w->j[2];
  w->reduction = (uint64_t)g->n * g->odhw;
  /* The block rule (kplan_wgrad.h): reference tiles of the dw columns alone
   * (the db column does not change dw's blocks, so dw has the same bits
   * with or without db) times blocks near the target, blocks of whole
   * quanta. */
  w->nw = (uint32_t)((uint64_t)g->c * g->taps);
  w->ng = w->nw + w->db;
  w->np = (uint32_t)round_up(w->ng, 4);
  uint64_t tref = (uint64_t)g->groups * ceil_div(g->k, CJ_WGRAD_REF_TILE) * ceil_div(w->nw, CJ_WGRAD_REF_TILE);
  uint64_t want = ceil_div(CJ_WGRAD_TARGET_WGS, tref);
  if (want > CJ_WGRAD_MAX_BLOCKS) want = CJ_WGRAD_MAX_BLOCKS;
  uint64_t lb = ceil_div(w->positions, want);
  if (lb < CJ_WGRAD_MIN_BLOCK) lb = CJ_WGRAD_MIN_BLOCK;
  w->lb = round_up(lb, CJ_WGRAD_BLOCK_QUANTUM);
  w->blocks = (uint32_t)ceil_div(w->positions, w->lb);
  w->lp = (uint64_t)w->blocks * w->lb;
  w->off_max = ((uint64_t)w->qmax[0] * w->j[1] + w->qmax[1]) * w->j[2] + w->qmax[2];
  w->lx = round_up(w->lp + w->off_max, 8);
  /* Element offsets inside a row and the K index are i32 in the kernels. */
  CJ_CHECK(w->lx < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
           "conv backward weight: %" PRIu64 " grid positions (N*Jd*Jh*Jw, padded to blocks, plus the largest tap "
           "shift %" PRIu64 "): must be < 2^31 (32-bit position index)", w->lp, w->off_max);
  w->x_rows_g = g->c * w->pt + w->db;
  w->x_rows = (uint64_t)g->groups * w->x_rows_g;
  for (uint32_t t = 0; t < g->t && !w->odd; t++)
    for (uint32_t r = 0; r < g->r && !w->odd; r++)
      for (uint32_t s = 0; s < g->s && !w->odd; s++) {
        uint32_t row;
        uint64_t off;
        cj_wgrad_tap(g, w, t, r, s, &row, &off);
        w->odd = off & 1;
      }
  return CONVJIT_OK;
}

void cj_wgrad_tap(const cj_conv_geom *g, const cj_wgrad_grid *w, uint32_t t, uint32_t r, uint32_t s, uint32_t *row,
                  uint64_t *off) {
  const uint32_t f[3] = {t, r, s};
  uint32_t idx[3];
  uint64_t q[3];
  for (int i = 0; i < 3; i++) {
    uint64_t fd = (uint64_t)f[i] * g->dil[i];
    idx[i] = (uint32_t)(fd % g->stride[i]) / w->pg[i];
    q[i] = fd / g->stride[i];
  }
  *row = (idx[0] * w->ph[1] + idx[1]) * w->ph[2] + idx[2];
  *off = (q[0] * w->j[1] + q[1]) * w->j[2] + q[2];
}

void cj_wgrad_grid_key(cj_strbuf *key, const char *field, cj_wgrad_grid w) {
  (void)key, (void)field, (void)w; /* derived from the keyed geometry: never keyed */
}

void cj_wgrad_grid_print(cj_strbuf *out, const char *field, cj_wgrad_grid w, const char *reason) {
  if (!w.on) return;
  cj_sb_printf(out, "  %-14s = grid %ux%ux%u, phases %ux%ux%u, %" PRIu64 " positions (%" PRIu64
               " real), %u blocks of %" PRIu64 "  # %s\n", field, w.j[0], w.j[1], w.j[2], w.ph[0], w.ph[1], w.ph[2],
               w.positions, w.reduction, w.blocks, w.lb, reason);
  cj_sb_printf(out, "  %-14s = dy rows %" PRIu64 ", x rows %" PRIu64 " x %" PRIu64 ", columns %u (dw %u%s), "
               "partial pitch %u%s\n", "", w.lp, w.x_rows, w.lx, w.ng, w.nw, w.db ? " + db" : "", w.np,
               w.odd ? ", odd column offsets (2-byte shifted loads)" : "");
}

/* ---- grid_pack ---- */

static uint32_t one_bits(uint32_t dtype) {
  /* 1.0 in the 2-byte float formats: bf16 (fp32's high half), f16 (IEEE binary16) */
  return dtype == CONVJIT_DTYPE_BF16 ? 0x3F80u : dtype == CONVJIT_DTYPE_F16 ? 0x3C00u : 0u;
}

convjit_status cj_kplan_grid_pack_init(cj_kplan *p, const cj_arch *arch, const cj_conv_plan *c, cj_wgrad_side side,
                                       int ndhwc) {
  CJ_CHECK(p && arch && c, CONVJIT_ERR_INVALID_ARG, "grid_pack plan: NULL argument");
  const cj_conv_geom *g = &c->g;
  const cj_wgrad_grid *w = &c->wg;
  CJ_CHECK(w->on, CONVJIT_ERR_INVALID_ARG, "grid_pack plan: the conv plan is not a backward-weight GEMM");
  CJ_CHECK(side == CJ_WGRAD_SIDE_DY || side == CJ_WGRAD_SIDE_X, CONVJIT_ERR_INVALID_ARG,
           "grid_pack plan: side = %d: must be 0 (dy) or 1 (x)", (int)side);
  CJ_CHECK(ndhwc == 0 || ndhwc == 1, CONVJIT_ERR_INVALID_ARG, "grid_pack plan: ndhwc = %d: must be 0 or 1", ndhwc);
  const uint32_t one = one_bits(g->dtype);
  CJ_CHECK(g->elem_bytes == 2 && one, CONVJIT_ERR_UNSUPPORTED, "grid_pack plan: dtype %s: 2-byte floats only",
           cj_dtype_name((convjit_dtype)g->dtype));
  memset(p, 0, sizeof *p);
  p->op = CJ_KOP_GRID_PACK;
  p->arch = arch;
  cj_grid_pack_plan *k = &p->u.gp;
  const int x = side == CJ_WGRAD_SIDE_X;
  k->elem_bytes = g->elem_bytes;
  k->ndhwc = (uint32_t)ndhwc;
  k->n = g->n;
  k->groups = g->groups;
  k->cg = x ? g->c : g->k;
  k->ch = k->cg * g->groups;
  k->in_d = x ? g->d : g->od;
  k->in_h = x ? g->h : g->oh;
  k->in_w = x ? g->w : g->ow;
  k->jd = w->j[0], k->jh = w->j[1], k->jw = w->j[2];
  k->st_d = x ? g->stride[0] : 1, k->st_h = x ? g->stride[1] : 1, k->st_w = x ? g->stride[2] : 1;
  k->lo_d = x ? g->pad_lo[0] : 0, k->lo_h = x ? g->pad_lo[1] : 0, k->lo_w = x ? g->pad_lo[2] : 0;
  k->ph_d = x ? w->ph[0] : 1, k->ph_h = x ? w->ph[1] : 1, k->ph_w = x ? w->ph[2] : 1;
  k->pg_d = x ? w->pg[0] : 1, k->pg_h = x ? w->pg[1] : 1, k->pg_w = x ? w->pg[2] : 1;
  k->ones = x ? w->db : 0;
  k->one_bits = one;
  k->positions = w->positions;
  k->row_len = x ? w->lx : w->lp;
  k->rows = x ? w->x_rows : (uint64_t)g->k_all;
  k->in_elems = (uint64_t)k->n * k->ch * k->in_d * k->in_h * k->in_w;
  /* The kernel's per-dim input index stride*j + phase is i32. */
  const uint32_t jv[3] = {k->jd, k->jh, k->jw}, sv[3] = {k->st_d, k->st_h, k->st_w};
  for (int i = 0; i < 3; i++)
    CJ_CHECK((uint64_t)jv[i] * sv[i] + sv[i] < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
             "grid_pack plan: grid extent %u x stride %u in dim %d: must stay below 2^31", jv[i], sv[i], i);
  /* one workgroup: 256 threads x 8 elements of one row (rows are whole
   * 16-byte chunks); grid y = row */
  p->block[0] = CJ_WGRAD_PACK_THREADS;
  p->block[1] = p->block[2] = 1;
  p->grid[0] = ceil_div(k->row_len, (uint64_t)CJ_WGRAD_PACK_THREADS * CJ_WGRAD_PACK_ELEMS);
  p->grid[1] = k->rows;
  p->grid[2] = 1;
  cj_kplan_add_arg(p, CJ_ARG_SRC, x ? "x" : "dy");
  cj_kplan_add_arg(p, CJ_ARG_DST, x ? "x_grid" : "dy_grid");
  char prefix[48];
  snprintf(prefix, sizeof prefix, "%s_%s", cj_kop_prefix(CJ_KOP_GRID_PACK), x ? "x" : "dy");
  return cj_kplan_name_from_key(p, prefix, cj_kplan_grid_pack_key);
}

void cj_kplan_grid_pack_key(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_grid_pack_plan *fpl_ = &p->u.gp;
  CJ_GRID_PACK_PLAN_FIELDS(CJ_FIELD_KEY_ROW)
}

void cj_kplan_grid_pack_print(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_grid_pack_plan *fpl_ = &p->u.gp;
  CJ_GRID_PACK_PLAN_FIELDS(CJ_FIELD_PRINT_ROW)
}

/* ---- wgrad_finalize ---- */

convjit_status cj_kplan_wgrad_finalize_init(cj_kplan *p, const cj_arch *arch, const cj_conv_plan *c,
                                            uint32_t out_dtype) {
  CJ_CHECK(p && arch && c, CONVJIT_ERR_INVALID_ARG, "wgrad_finalize plan: NULL argument");
  const cj_wgrad_grid *w = &c->wg;
  CJ_CHECK(w->on, CONVJIT_ERR_INVALID_ARG, "wgrad_finalize plan: the conv plan is not a backward-weight GEMM");
  CJ_CHECK(out_dtype == CONVJIT_DTYPE_F32 || out_dtype == c->g.dtype, CONVJIT_ERR_UNSUPPORTED,
           "wgrad_finalize plan: dw dtype %s: dw is written in f32 or in the compute dtype %s",
           cj_dtype_name((convjit_dtype)out_dtype), cj_dtype_name((convjit_dtype)c->g.dtype));
  memset(p, 0, sizeof *p);
  p->op = CJ_KOP_WGRAD_FINALIZE;
  p->arch = arch;
  cj_wgrad_finalize_plan *f = &p->u.wf;
  f->rows = c->g.k_all;
  f->nw = w->nw;
  f->np = w->np;
  f->db = w->db;
  /* the atomic GEMM adds every block into one accumulator: one "block" here */
  f->blocks = c->g.wgrad_atomic ? 1 : w->blocks;
  f->out_dtype = out_dtype;
  CJ_TRY(cj_epi_compose(&f->epi, NULL, 0, (int)out_dtype));
  f->block_elems = (uint64_t)f->rows * f->np;
  /* one thread per 4 columns of a row (one 16-byte load per block) */
  p->block[0] = 256;
  p->block[1] = p->block[2] = 1;
  p->grid[0] = ceil_div(f->block_elems / 4, 256);
  p->grid[1] = p->grid[2] = 1;
  cj_kplan_add_arg(p, CJ_ARG_WORKSPACE, "partials");
  cj_kplan_add_arg(p, CJ_ARG_DW, NULL);
  if (f->db) cj_kplan_add_arg(p, CJ_ARG_DB, NULL);
  return cj_kplan_name_from_key(p, cj_kop_prefix(CJ_KOP_WGRAD_FINALIZE), cj_kplan_wgrad_finalize_key);
}

void cj_kplan_wgrad_finalize_key(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_wgrad_finalize_plan *fpl_ = &p->u.wf;
  CJ_WGRAD_FINALIZE_PLAN_FIELDS(CJ_FIELD_KEY_ROW)
}

void cj_kplan_wgrad_finalize_print(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_wgrad_finalize_plan *fpl_ = &p->u.wf;
  CJ_WGRAD_FINALIZE_PLAN_FIELDS(CJ_FIELD_PRINT_ROW)
}
