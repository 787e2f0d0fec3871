/* Backward weight (dw, db) as one GEMM over a padded position grid
 * (docs/kernels.md "Backward weight"). Included by kplan.h only; the grid
 * and the pre-pass / finalize plans in kplan_wgrad.c, the GEMM as the conv
 * plan's wgrad mode (kplan_conv.c, conv_igemm*.c), the kernels in
 * wgrad_pack.c and wgrad_finalize.c.
 *
 *   dw[k][c][tap] = sum over positions p of dy[k][p] * x[c][in(p, tap)]
 *
 * GEMM: M = K/groups (rows of dw), N = C/groups * T*R*S (columns, c major,
 * so the result is KCTRS: PyTorch's weight layout), reduction over the
 * positions. Both operands become plain row-major matrices with the
 * reduction contiguous, written by one pre-pass kernel (grid_pack) each:
 *
 *   grid    per dim: stride s, dilation d, tap f reads input
 *           o*s - lo + f*d = phase(f) + s*(o + q(f)) - lo with
 *           phase(f) = f*d mod s, q(f) = f*d div s. Split x by phase
 *           (space-to-depth): x_ph[phase][j] = x[phase + s*j - lo], and
 *           tap f is the linear shift q(f) of the output index. The grid
 *           J = O + q_max per dim holds both: p' = ((n*Jd + jd)*Jh + jh)*Jw + jw.
 *   A       dy_pad[k][p']: dy at jd < Do, jh < Ho, jw < Wo, else 0 (the
 *           padded positions contribute exact zeros), rows of lp elements.
 *   B       column (c, tap) is x_ph row (c, phase(tap)) from element
 *           off(tap) = qd*Jh*Jw + qh*Jw + qw on; rows of lx >= lp + off_max.
 *           With the bias gradient (db) one more column per group reads a
 *           row of ones: db[k] = sum dy_pad[k][p'] * 1, the same MFMA chain.
 *   blocks  the reduction is cut into `blocks` fixed blocks of lb positions,
 *           chosen from the problem alone (the output tile grid at a
 *           reference 128x128 tile and the reduction length; never the CU
 *           count or the tile the selection takes): block z's fp32 partial
 *           tile goes to its own slice of the workspace (plain stores), and
 *           the finalize adds the blocks in block order. Every element is
 *           then the same sequence of MFMAs and adds on every run, grid and
 *           tile (docs/kernels.md says why), so dw is bit-identical.
 *           Opt-in (desc.nondeterministic): fp32 atomics of every block
 *           into one accumulator, no per-block slices.
 *
 * lb is a multiple of 768 = lcm(tile_k * stages) over the tiles the plan
 * takes (tile_k 16, 32, 64; stages 2..4), so every block is whole
 * pipeline groups of K steps and no K step reads past its block. */
#ifndef CJ_CODEGEN_KPLAN_WGRAD_H
#define CJ_CODEGEN_KPLAN_WGRAD_H

#include <stdint.h>
#include "arch/arch.h"
#include "codegen/kplan_epi.h"
#include "codegen/kplan_fields.h"
#include "util/cj.h"

#define CJ_WGRAD_BLOCK_QUANTUM 768u  /* lb is a multiple: lcm of tile_k * stages (see above) */
#define CJ_WGRAD_MIN_BLOCK 768u      /* positions per block at least: the prologue and the partial store amortized */
#define CJ_WGRAD_TARGET_WGS 2048u    /* reference tiles x blocks aimed at: fills any device, no CU count asked */
#define CJ_WGRAD_MAX_BLOCKS 256u
#define CJ_WGRAD_REF_TILE 128u       /* the reference tile of the block rule */
#define CJ_WGRAD_PACK_ELEMS 8u       /* grid_pack: elements per thread, one 16-byte store */
#define CJ_WGRAD_PACK_THREADS 256u

/* The padded grid and the reduction blocks, derived from the conv
 * geometry (cj_wgrad_grid_derive): a function of keyed fields, never keyed
 * itself. Arrays are (d, h, w). */
typedef struct cj_wgrad_grid {
  uint32_t on;           /* 1: a backward-weight geometry (else every field 0) */
  uint32_t db;           /* 1: one ones column per group (the bias gradient) */
  uint32_t ph[3];        /* phases per dim: x rows per channel = ph[0]*ph[1]*ph[2] */
  uint32_t pg[3];        /* phase step gcd(stride, dilation): phase index = phase / pg */
  uint32_t qmax[3];      /* largest tap shift in grid cells */
  uint32_t j[3];         /* grid extents: output extent + qmax */
  uint32_t pt;           /* ph[0]*ph[1]*ph[2] */
  uint32_t odd;          /* some column starts at an odd element: its loads are shifted by 2 bytes */
  uint64_t positions;    /* N * Jd*Jh*Jw grid positions (the padded reduction) */
  uint64_t reduction;    /* N * Do*Ho*Wo real positions */
  uint64_t lb;           /* positions per reduction block */
  uint32_t blocks;       /* reduction blocks */
  uint64_t lp;           /* blocks * lb: dy_pad's row length */
  uint64_t off_max;      /* the largest column offset off(tap) */
  uint64_t lx;           /* x_ph's row length: lp + off_max rounded up to 8 elements (16 bytes) */
  uint32_t x_rows_g;     /* x_ph rows per group: C/groups * pt (+1: the ones row) */
  uint64_t x_rows;       /* groups * x_rows_g */
  uint32_t ng;           /* GEMM columns per group: C/groups * taps (+1 with db) */
  uint32_t nw;           /* dw columns per group: C/groups * taps */
  uint32_t np;           /* partial tile row pitch: ng rounded up to 4 (16-byte stores) */
} cj_wgrad_grid;

struct cj_conv_geom;
struct cj_conv_plan;
struct cj_kplan;

/* The grid of a derived backward-weight geometry (g->wgrad set); an
 * all-zero grid otherwise. UNSUPPORTED naming the limit when the grid
 * passes the kernels' 32-bit position index. */
convjit_status cj_wgrad_grid_derive(const struct cj_conv_geom *g, cj_wgrad_grid *out);
/* Tap (t, r, s) -> (its x_ph row within the channel, its column offset). */
void cj_wgrad_tap(const struct cj_conv_geom *g, const cj_wgrad_grid *w, uint32_t t, uint32_t r, uint32_t s,
                  uint32_t *row, uint64_t *off);
/* The grid as a plan field (kplan_fields.h): never keyed (derived); the
 * printout is empty for a forward geometry. */
void cj_wgrad_grid_key(cj_strbuf *key, const char *field, cj_wgrad_grid w);
void cj_wgrad_grid_print(cj_strbuf *out, const char *field, cj_wgrad_grid w, const char *reason);

/* ---- grid_pack: one tensor onto the grid (the GEMM's A or B) ----
 * Output element (row, e) of rows x row_len: row -> (group, channel c,
 * phase) or, with `ones`, the group's ones row after its channels; e < the
 * grid's positions -> (n, jd, jh, jw) -> input (phase + stride*j - lo) per
 * dim, zero outside the tensor. The dy side is the same with stride 1, no
 * padding, one phase and in = the output extents. */
#define CJ_GRID_PACK_PLAN_FIELDS(X)                                                                      \
  X(uint32_t, elem_bytes, 1, "bytes per element (in and out)")                                            \
  X(uint32_t, ndhwc, 1, "the input is channels-last (N,D,H,W,C) instead of NCDHW")                        \
  X(uint32_t, n, 1, "batch")                                                                              \
  X(uint32_t, ch, 1, "the input's channels (all groups)")                                                 \
  X(uint32_t, groups, 1, "groups: row -> group, channel within it")                                       \
  X(uint32_t, cg, 1, "channels per group")                                                                \
  X(uint32_t, in_d, 1, "input depth")                                                                     \
  X(uint32_t, in_h, 1, "input height")                                                                    \
  X(uint32_t, in_w, 1, "input width")                                                                     \
  X(uint32_t, jd, 1, "grid depth")                                                                        \
  X(uint32_t, jh, 1, "grid height")                                                                       \
  X(uint32_t, jw, 1, "grid width")                                                                        \
  X(uint32_t, st_d, 1, "stride (depth): input = phase + stride*j - lo")                                   \
  X(uint32_t, st_h, 1, "stride (height)")                                                                 \
  X(uint32_t, st_w, 1, "stride (width)")                                                                  \
  X(uint32_t, lo_d, 1, "padding before (depth)")                                                          \
  X(uint32_t, lo_h, 1, "padding before (height)")                                                         \
  X(uint32_t, lo_w, 1, "padding before (width)")                                                          \
  X(uint32_t, ph_d, 1, "phases (depth)")                                                                  \
  X(uint32_t, ph_h, 1, "phases (height)")                                                                 \
  X(uint32_t, ph_w, 1, "phases (width)")                                                                  \
  X(uint32_t, pg_d, 1, "phase step (depth): phase = index * step")                                        \
  X(uint32_t, pg_h, 1, "phase step (height)")                                                             \
  X(uint32_t, pg_w, 1, "phase step (width)")                                                              \
  X(uint32_t, ones, 1, "a row of ones after each group's channels (the bias gradient's column)")          \
  X(uint32_t, one_bits, 1, "the element bits of 1.0 in the dtype")                                        \
  X(uint64_t, positions, 1, "grid positions N*Jd*Jh*Jw: elements past them are 0")                        \
  X(uint64_t, row_len, 1, "output row length (elements, a multiple of 8)")                                \
  X(uint64_t, rows, 1, "output rows")                                                                     \
  X(uint64_t, in_elems, 0, "input elements (64-bit addressed)")

typedef struct cj_grid_pack_plan {
  CJ_GRID_PACK_PLAN_FIELDS(CJ_FIELD_MEMBER)
} cj_grid_pack_plan;

typedef enum cj_wgrad_side { CJ_WGRAD_SIDE_DY = 0, CJ_WGRAD_SIDE_X = 1 } cj_wgrad_side;

/* The pre-pass of side `side` of the backward-weight conv plan c (its
 * grid); ndhwc: that tensor's layout. Args SRC (the tensor), DST (its
 * grid rows). */
convjit_status cj_kplan_grid_pack_init(struct cj_kplan *p, const cj_arch *arch, const struct cj_conv_plan *c,
                                       cj_wgrad_side side, int ndhwc);

/* ---- wgrad_finalize: the blocks' partial tiles -> dw (and db) ----
 * dw[row][col] = out(sum over z = 0 .. blocks-1 in order of part[z][row][col])
 * for col < nw, db[row] = the same sum at col nw (fp32). */
#define CJ_WGRAD_FINALIZE_PLAN_FIELDS(X)                                                                 \
  X(uint32_t, rows, 1, "dw rows: K (all groups)")                                                         \
  X(uint32_t, nw, 1, "dw columns: C/groups * T*R*S")                                                      \
  X(uint32_t, np, 1, "partial row pitch (fp32 elements, a multiple of 4)")                                \
  X(uint32_t, blocks, 1, "partials added, in block order")                                                \
  X(uint32_t, db, 1, "column nw is the bias gradient (fp32 db)")                                          \
  X(uint32_t, out_dtype, 1, "dw's dtype (convjit_dtype): the weight's, or f32")                           \
  X(cj_epilogue, epi, 0, "the conversion to dw's dtype (kplan_epi.h): follows from out_dtype")            \
  X(uint64_t, block_elems, 0, "fp32 elements of one block's partial (rows * np)")

typedef struct cj_wgrad_finalize_plan {
  CJ_WGRAD_FINALIZE_PLAN_FIELDS(CJ_FIELD_MEMBER)
} cj_wgrad_finalize_plan;

/* The finalize of the backward-weight conv plan c, writing dw in out_dtype
 * (the compute dtype or f32). Args WORKSPACE (the partials), DW, DB (db only). */
convjit_status cj_kplan_wgrad_finalize_init(struct cj_kplan *p, const cj_arch *arch, const struct cj_conv_plan *c,
                                            uint32_t out_dtype);

#endif
