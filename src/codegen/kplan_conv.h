/* Plan fields of the implicit-GEMM conv family (bf16 now; fp8 is a dtype
 * row and a K-loop schedule of the same plan). Included by kplan.h only;
 * plans in kplan_conv.c, the kernel in conv_igemm.c, the im2col address in
 * im2col.c, the epilogue in epilogue.c; the split-K finalize has its own
 * plan (kplan_finalize.h).
 *
 * GEMM view (docs/original-design.md): M = N*Do*Ho*Wo output positions, N_gemm = K
 * output channels, K_gemm = T*R*S*Cp taps x channels with c fastest (KTRSC).
 * Cp = C rounded up to a 16-byte chunk (8 bf16, 16 fp8), so a DMA (16 bytes
 * on gfx950, 4 on gfx942) never straddles a tap. Inputs the conv kernel reads:
 *   x  NDHWC with channel stride x_cs: the caller's own NDHWC x in place
 *      (x_ndhwc: x_cs = C*groups; when C % chunk != 0 the loads are 4 bytes
 *      per lane and mask channels >= C, c_mask), or the workspace the
 *      layout transpose (C == Cp) / pad-transpose (C < Cp) wrote (x_cs =
 *      Cp*groups); the 1x1x1 channel-GEMM path reads the caller's NCDHW x.
 *   w  K*groups rows of crs = T*R*S*Cp elements (KTRSC, pad channels zero);
 *      group gi's K rows follow group gi-1's.
 *   bias K*groups fp32 (optional).
 * Grouped conv (groups > 1): c and k are per group; grid y is the group,
 * which offsets x by gi*C channels, w by gi*K rows and y by gi*K channels.
 * Output: y NCDHW (or NDHWC, y_ndhwc) in the epilogue's type, or (split-K,
 * NCDHW only) an fp32 workspace in NCDHW order that the finalize kernel
 * turns into y (+bias).
 *
 * The plan is filled before any IR exists; every flag has a reason printed
 * next to it (cj_kplan_print). Tile/stages/split-K/WGM come from the caller
 * (src/host/select_conv.c heuristics, or forced by tests and convjit-dump).
 */
#ifndef CJ_CODEGEN_KPLAN_CONV_H
#define CJ_CODEGEN_KPLAN_CONV_H

#include <stdint.h>
#include "arch/arch.h"
#include "codegen/kplan_epi.h"
#include "codegen/kplan_fields.h"
#include "codegen/kplan_wgrad.h" /* cj_wgrad_grid, a field below */
#include "util/cj.h"

/* Byte offset for masked lanes: past every num_records the kernel builds
 * (non-BIG x and w are <= this, rebased BIG_IN resources are 2 GiB), so
 * the per-element range check zero-fills LDS. 0x7FFFFF80 was inside a
 * 2 GiB resource in the original and read live data (docs/original-design.md). */
#define CJ_CONV_OOB 0xF0000000u
#define CJ_CONV_BIG_IN_RECORDS 0x80000000ull /* rebased x resource: 2 GiB */
#define CJ_CONV_CHUNK_BYTES 16 /* one im2col chunk: the widest DMA; Cp pads C to whole chunks */
#define CJ_CONV_STAGE_ROW_BYTES 64 /* K bytes of one tile row per pipeline stage: 4 chunks */
#define CJ_CONV_MAX_LOAD_VGPRS 64 /* VGPR path: registers of the loads two K steps keep in flight */
#define CJ_CONV_MAX_DMA 64         /* DMA loads of A (and of B) per thread and K step the builder unrolls */
#define CJ_CONV_MAX_PAD (1 << 20)  /* |pad| bound: keeps every coordinate of the i32 address math exact */

/* Field tables. F(type, name, in_key, reason) is a scalar field,
 * A(type, name, count, in_key, reason) an array; each table generates the
 * struct members, the cache key (fields with in_key = 1) and the printout
 * (every field with its reason). A field not in the key must be a function
 * of keyed fields and the arch: tests/codegen/test_conv_plan.c changes
 * every keyed field in turn and asserts the key changes. */

/* The conv problem in codegen terms (3D; 1D/2D are normalized by the
 * caller). Arrays are (depth/time, height, width). Derived fields (in_key 0)
 * are filled by cj_conv_geom_derive. in_key 2 (3): keyed only when nonzero
 * (> 1), so the kernels that existed before the field keep their keys. */
#define CJ_CONV_GEOM_FIELDS(F, A)                                                               \
  F(uint32_t, dtype, 1, "convjit_dtype of x and w (bf16 1, fp8 e4m3fn 2, fp8 e4m3fnuz 3, f16 5)") \
  F(uint32_t, n, 1, "batch")                                                                     \
  F(uint32_t, c, 1, "input channels")                                                            \
  F(uint32_t, d, 1, "input depth (time)")                                                        \
  F(uint32_t, h, 1, "input height")                                                              \
  F(uint32_t, w, 1, "input width")                                                               \
  F(uint32_t, k, 1, "output channels")                                                           \
  F(uint32_t, t, 1, "filter depth")                                                              \
  F(uint32_t, r, 1, "filter height")                                                             \
  F(uint32_t, s, 1, "filter width")                                                              \
  A(uint32_t, stride, 3, 1, "stride (d, h, w)")                                                  \
  A(uint32_t, dil, 3, 1, "dilation (d, h, w)")                                                   \
  A(uint32_t, pad_lo, 3, 1, "padding before (d, h, w); an int32 (cj_conv_pad): a phase's may be < 0") \
  A(uint32_t, pad_hi, 3, 1, "padding after (d, h, w); an int32; 0 when out is given (unused)")    \
  F(uint32_t, groups, 3, "groups (0 = 1): c and k are per group, the group is grid y")           \
  F(uint32_t, x_ndhwc, 2, "x is the caller's NDHWC (channel stride C*groups), read in place")     \
  F(uint32_t, y_ndhwc, 2, "y is NDHWC (channels-last): channel stride 1, position stride K*groups") \
  F(uint32_t, wgrad, 2, "backward weight: the GEMM dw = dy x over the padded grid (kplan_wgrad.h), not the forward conv") \
  F(uint32_t, wgrad_db, 2, "backward weight: one ones column per group, the bias gradient") \
  F(uint32_t, wgrad_atomic, 2, "backward weight: fp32 atomics of every block into one accumulator (opt-in, not deterministic)") \
  F(uint32_t, y_dtype, 2, "convjit_dtype of y; 0 = the compute dtype's own (bf16 for bf16 and fp8, f16 for f16), to which derive normalizes it") \
  A(uint32_t, up, 3, 2, "tap divisor (0 = 1): input coordinate o*stride + floor((t*dil - pad_lo) / up); 2 reads a "  \
                        "nearest 2x upsampled input (kplan_phase.h)")                                                \
  A(uint32_t, out, 3, 2, "output extent when given (a phase's, kplan_phase.h); 0 = derived from in, filter, "        \
                         "stride and pads")                                                                           \
  A(uint32_t, ys, 3, 2, "output placement (0 = 1): output position o is y position o*ys (+ the phase's first "      \
                        "position, an offset of y's pointer)")                                                       \
  A(uint32_t, yext, 3, 2, "y extents when placed (0 = the output extents)")                                          \
  F(uint32_t, x_converted, 0, "x reaches the kernel through a converting pre-pass: never read as given (keyed as channel_gemm)") \
  F(uint32_t, elem_bytes, 0, "bytes per x/w element")                                            \
  F(uint32_t, od, 0, "output depth")                                                             \
  F(uint32_t, oh, 0, "output height")                                                            \
  F(uint32_t, ow, 0, "output width")                                                             \
  F(uint32_t, cp, 0, "C padded to whole 16-byte chunks: a DMA chunk never straddles a tap")      \
  F(uint32_t, x_cs, 0, "x channel stride (elements per pixel): C*groups in place, else Cp*groups") \
  F(uint32_t, c_mask, 0, "x in place with C % chunk != 0: loads mask channels >= C per lane")      \
  F(uint32_t, k_all, 0, "K*groups: the output channels of y")                                    \
  F(uint32_t, taps, 0, "T*R*S")                                                                  \
  F(uint64_t, dhw, 0, "D*H*W")                                                                   \
  F(uint64_t, odhw, 0, "Do*Ho*Wo")                                                               \
  F(uint64_t, npq, 0, "GEMM M = N*Do*Ho*Wo output positions")                                    \
  F(uint32_t, placed, 0, "output positions land strided (ys) in a larger y (yext): the store decodes (od, oh, ow)") \
  F(uint64_t, ydhw, 0, "y positions per channel: Yd*Yh*Yw (= Do*Ho*Wo unless placed)")            \
  F(uint64_t, crs, 0, "GEMM K = T*R*S*Cp, c fastest (KTRSC)")

typedef struct cj_conv_geom {
  CJ_CONV_GEOM_FIELDS(CJ_FIELD_MEMBER, CJ_FIELD_ARRAY_MEMBER)
} cj_conv_geom;

/* The geometry as one keyed field of the plan: every input field, then
 * (printout only) the derived ones. */
void cj_conv_geom_key(cj_strbuf *key, const char *field, cj_conv_geom g);
void cj_conv_geom_print(cj_strbuf *out, const char *field, cj_conv_geom g, const char *reason);

/* K-loop schedules of the family (conv_igemm.c's strategy table, one file each). */
typedef enum cj_conv_sched {
  CJ_CONV_SCHED_MULTISTAGE = 1, /* S-stage LDS ring, DMA S-1 steps ahead, one barrier per step (bf16) */
  CJ_CONV_SCHED_PINGPONG = 2,   /* 8 waves, 256x256x128, A/B in 128-row halves x {current, next}; per
                                   step 3 barriers, one per half landing, DMA of the next step
                                   between the quadrants' MFMA bursts (fp8 on gfx950) */
  CJ_CONV_SCHED_COUNT
} cj_conv_sched;

/* How A and B reach LDS (conv_igemm_multistage.c "Load path"). */
typedef enum cj_conv_load {
  CJ_CONV_LOAD_DMA = 1,  /* buffer_load...lds: no VGPRs, but gfx942's is 4 bytes per lane (one M0,
                            address and bounds check per 4 bytes) */
  CJ_CONV_LOAD_VGPR = 2, /* buffer_load_dwordx4 into VGPRs two K steps ahead, ds_write into the stage:
                            16 bytes per lane on every arch, one im2col check per 16-byte chunk */
  CJ_CONV_LOAD_COUNT
} cj_conv_load;

/* The conv's tuning choices and test hooks; 0 = the plan's default. Tile
 * defaults to (128,128,2,4), stages 4, split-K 1, WGM 8, DMA the widest
 * legal. Nothing here is a property of the problem: the shape is the
 * geometry (cj_conv_geom), the fused epilogue its own description (the plan
 * init's epi argument). Test hooks force the large-tensor paths on small
 * shapes so the emulator can check them numerically. */
typedef struct cj_conv_opts {
  uint32_t tile_m, tile_n, wave_m, wave_n;
  uint32_t stages;                 /* 2..4 */
  uint32_t splitk;                 /* >= 1 */
  uint32_t wgm;                    /* >= 1 */
  uint32_t dma_bytes;              /* 4 or 16 */
  uint32_t load;                   /* cj_conv_load: 1 DMA, 2 through VGPRs (0: DMA) */
  uint32_t sched;                  /* cj_conv_sched */
  uint32_t k_bytes;                /* K bytes of each tile row per stage: 32, 64 or 128 (0: 64, ping-pong 128) */
  uint32_t prefetch;               /* multistage operand prefetch: 0 default, 1 off, 2 on */
  uint32_t roll;                   /* multistage DMA loop body: 0 default (1), 1 S unrolled K steps, 2 one K step */
  uint32_t stage;                  /* multistage/backward-weight LDS stage layout: 0 default, 1 [kq][row][16 B],
                                    * 2 row-major swizzled (coalesced copies), 3 row-major unswizzled */
  int force_big_in, force_big_out; /* test hooks */
  int no_fast_paths;               /* disable temporal fast path, channel GEMM, vec4 */
  int pure_gemm_a;                 /* diagnostic (im2col overhead): A is a plain row-major npq x crs
                                    * matrix; the kernel is then a GEMM, not the conv (the API refuses it) */
  int ws_out;                      /* fp32 atomics into the workspace even unsplit: a phase of a split
                                    * sequence whose finalize stores y (kplan_phase.h); not a knob */
} cj_conv_opts;

/* The conv kernel's plan: X(type, name, in_key, reason). */
#define CJ_CONV_PLAN_FIELDS(X)                                                                              \
  X(cj_conv_geom, g, 1, "the problem")                                                                      \
  /* dtype row */                                                                                           \
  X(uint32_t, elem_bytes, 1, "bytes per x/w element: 2 bf16, 1 fp8")                                        \
  X(uint32_t, chunk_elems, 0, "elements per 16-byte chunk (the LDS k-quad and the channel padding)")        \
  X(uint32_t, mfma, 1, "MFMA row (arch.h cj_mfma_kind): the arch's best for the dtype")                     \
  X(uint32_t, mfma_k, 0, "K of one MFMA")                                                                   \
  /* tile */                                                                                                \
  X(uint32_t, tile_m, 1, "workgroup tile rows (output positions)")                                          \
  X(uint32_t, tile_n, 1, "workgroup tile columns (output channels)")                                        \
  X(uint32_t, tile_k, 1, "K per pipeline stage: k_bytes of each row (default 64; a multiple of the MFMA's K)")         \
  X(uint32_t, wave_m, 1, "wave grid rows")                                                                  \
  X(uint32_t, wave_n, 1, "wave grid columns")                                                               \
  X(uint32_t, threads, 0, "waves * 64")                                                                     \
  X(uint32_t, mi_m, 0, "16x16 accumulator fragments per wave along M (flat grid)")                          \
  X(uint32_t, mi_n, 0, "16x16 accumulator fragments per wave along N")                                      \
  X(uint32_t, sched, 1, "K-loop schedule (cj_conv_sched): 1 multistage LDS ring, 2 8-wave half ping-pong")  \
  X(uint32_t, halves, 0, "row blocks of the A and B tiles (2: half-block ping-pong, quadrant fragments)")    \
  X(uint32_t, stages, 1, "LDS pipeline depth (DMA has no VGPR hop, so deep is cheap)")                      \
  X(uint32_t, prefetch, 1, "multistage: 1 = the next step's first operands are read before this step's last MFMAs") \
  X(uint32_t, roll, 2, "multistage DMA loop: 1 = the loop body is one K step, its LDS stage an SGPR offset (else S unrolled steps)") \
  X(uint32_t, stage_rm, 2, "multistage / backward-weight LDS stage: 1 row-major swizzled (whole lines per copy), 2 row-major unswizzled, 0 [kq][row][16 B]") \
  X(uint32_t, load, 1, "A/B load path (cj_conv_load): 1 buffer_load...lds DMA, 2 buffer_load_dwordx4 + ds_write") \
  X(uint32_t, dma_bytes, 1, "per lane of one A/B load: buffer_load...lds (16 only on gfx950), 16 on load 2")  \
  X(uint32_t, a_dma, 0, "A DMA loads per thread per K step")                                                \
  X(uint32_t, b_dma, 0, "B DMA loads per thread per K step")                                                \
  X(uint32_t, lds_a_stage, 0, "bytes of one A stage")                                                       \
  X(uint32_t, lds_b_stage, 0, "bytes of one B stage")                                                       \
  X(uint64_t, tiles_m, 0, "output tiles along M")                                                           \
  X(uint64_t, tiles_n, 0, "output tiles along N")                                                           \
  X(uint32_t, k_tiles, 0, "K steps: ceil(gemm_k / tile_k)")                                                 \
  X(uint32_t, k_tiles_split, 1, "K steps per split, rounded to whole pipeline groups")                      \
  /* named specialization flags */                                                                          \
  X(uint32_t, splitk, 1, "grid z splits the K loop; fp32 atomics + finalize when > 1")                      \
  X(uint32_t, ws_out, 2, "1: fp32 atomics into the workspace although unsplit (a phase of a split sequence)") \
  X(uint32_t, atomic, 0, "splitk > 1 or ws_out: fp32 atomics into the workspace, the finalize stores y")      \
  X(uint32_t, wgm, 1, "WGM M-tiles visited across all N-tiles: keeps weight tiles in L2")                   \
  X(int, has_bias, 1, "the epilogue description has a bias (of epi, or the finalize's when split; keyed since the first kernels)") \
  X(int, big_in, 1, "x past the OOB sentinel: rebase x per workgroup")                                      \
  X(int, big_out, 1, "y >= 2^31 bytes: 64-bit addressed stores")                                            \
  X(int, vec4_store, 1, "n == 1, no split, Do*Ho*Wo % 4 == 0: 4 rows are 4 consecutive outputs")            \
  X(int, vec_ch_store, 1, "NDHWC y, no split, K/groups % 4 == 0: MFMA operands swapped, a lane's 4 values are 4 consecutive channels of one position, one 8-byte store") \
  X(int, temporal_fast, 1, "(T,1,1), stride 1, no H/W pad, n == 1: A row = m + tap plane, one division")    \
  X(int, channel_gemm, 1, "1x1x1 stride 1 no pad: A read from NCDHW x, no transpose")                       \
  X(int, need_t, 1, "some tap leaves [0, D): bounds check in time")                                         \
  X(int, need_h, 1, "some tap leaves [0, H)")                                                               \
  X(int, need_w, 1, "some tap leaves [0, W)")                                                               \
  X(int, m_partial, 1, "last M tile has rows >= N*Do*Ho*Wo: masked")                                        \
  X(int, n_tail, 1, "last N tile has channels >= K: zero B rows, masked")                                   \
  X(int, k_partial, 1, "K steps past gemm_k load zeros (OOB routing)")                                      \
  X(int, pure_gemm_a, 1, "diagnostic: x is a plain npq x crs A matrix, no im2col (never a conv plan)")      \
  X(cj_epilogue, epi, 1, "on each accumulator fragment before the store (kplan_epi.h)")                     \
  X(uint64_t, x_bytes, 0, "NDHWC(Cp) x, or NCDHW x on the channel-GEMM path")                               \
  X(uint64_t, w_bytes, 0, "packed KTRSC weight")                                                            \
  X(uint64_t, y_bytes, 0, "NCDHW output (the epilogue's element type)")                                     \
  X(uint64_t, ws_bytes, 0, "fp32 split-K workspace (0 if none; zeroed first); backward weight: the partial tiles") \
  X(cj_wgrad_grid, wg, 0, "backward weight: the padded grid and reduction blocks (kplan_wgrad.h; derived)")

typedef struct cj_conv_plan {
  CJ_CONV_PLAN_FIELDS(CJ_FIELD_MEMBER)
} cj_conv_plan;

struct cj_kplan;

/* The signed padding of dim i (pad_lo / pad_hi hold int32 bits: a phase of
 * a backward-data or upsampled conv may start past its input's first
 * position, kplan_phase.h). */
static inline int32_t cj_conv_pad(uint32_t bits) { return (int32_t)bits; }
/* Floor division by f > 0 of a signed value (tap offsets of upsampled inputs). */
static inline int64_t cj_conv_floordiv(int64_t a, int64_t f) { return a >= 0 ? a / f : -((-a + f - 1) / f); }
/* The input coordinate of output position o and tap t in dim i (0..2):
 * o*stride + floor((t*dil - pad_lo) / up). THE formula of the im2col's C
 * model and of every derived bounds check. */
int64_t cj_conv_in_coord(const cj_conv_geom *g, int i, int64_t o, int64_t t);

/* Output extent of one dim (the one formula: desc.c uses it too); 0 when the
 * dilated filter does not fit the padded input. */
/* The arch capabilities the conv family's kernels are written for
 * (arch.h): wave64, MFMA, the gfx9 wait counters, AGPRs; UNSUPPORTED naming
 * the arch otherwise. Every conv-family plan init asks it first. */
convjit_status cj_conv_arch_check(const cj_arch *arch);
uint64_t cj_conv_out_extent(uint64_t in, uint64_t f, uint64_t stride, uint64_t dil, uint64_t pad_lo,
                            uint64_t pad_hi);
/* 1 if the arch can run the 8-wave ping-pong schedule: 16-byte LDS DMA and
 * 128 KiB of LDS (gfx950). */
int cj_conv_pingpong_arch(const cj_arch *arch);
/* The row bytes of the ping-pong an arch can build: 128 (16-byte LDS DMA
 * and 128 KiB of LDS: gfx950), 32 (4-byte DMA and 32 KiB: gfx942), or 0 */
uint32_t cj_conv_pingpong_rb(const cj_arch *arch);
/* The conv family's epilogue before the store, cuDNN's ConvBiasActivation
 * form y = act(acc * sx*sw * scale[k] + beta * z + bias), as the kernel's op
 * list: [alpha (fp8 dtype: every fp8 conv dequantizes by a by-value
 * argument, one kernel for every calibration)] desc's ops [convert to
 * y's dtype, cj_conv_y_dtype]. The conv runs it, or (split-K) its finalize. */
convjit_status cj_conv_epi_ops(cj_epilogue *e, const cj_conv_geom *g, const cj_epilogue *desc);
/* y's dtype: g->y_dtype, or the compute dtype's own output when 0 (bf16
 * for bf16 and fp8, f16 for f16). */
uint32_t cj_conv_y_dtype(const cj_conv_geom *g);
/* Validates the shape fields ("conv.c = 0: must be > 0") and fills the
 * derived ones. */
convjit_status cj_conv_geom_derive(cj_conv_geom *g);
/* Fills p for the conv kernel from the input fields of g (derived here),
 * the choices o (NULL: all default) and the fused epilogue's description
 * epi (NULL: none; cj_epi_check_desc's rules). INVALID_ARG for a bad shape,
 * option or epilogue, UNSUPPORTED (with the reason) for an illegal tile on
 * this arch or a dtype it has no MFMA for. On a refusal p holds what the
 * steps before it filled: u.conv.k_tiles is set (non-zero) before the split
 * is checked against it, so a caller tells "a split past the K steps" from
 * other refusals without a second init. */
convjit_status cj_kplan_conv_init(struct cj_kplan *p, const cj_arch *arch, const cj_conv_geom *g,
                                  const cj_conv_opts *o, const cj_epilogue *epi);
/* The GEMM's floating-point operations (2 per MAC, padding included: what
 * the MFMAs do) and the bytes it must move through HBM at least (its
 * operands once, its output once): forward npq x K x crs and x, w, y;
 * backward weight K x columns x the padded reduction, and the grid's dy
 * and x rows and the partial tiles. The bounds model's per-FLOP rates. */
double cj_conv_gemm_flops(const cj_conv_plan *c);
double cj_conv_hbm_bytes(const cj_conv_plan *c);
/* How many times cj_kplan_conv_init ran in this process (all threads): the
 * tests' proof that plan creation initializes each candidate once. */
uint64_t cj_kplan_conv_init_calls(void);

#endif
