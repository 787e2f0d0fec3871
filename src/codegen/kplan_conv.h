/* Plan fields of the bf16 implicit-GEMM conv family and its split-K
 * finalize. Included by kplan.h only; plans in kplan_conv.c, kernels in
 * conv_bf16.c and conv_finalize.c, the im2col address in im2col.c.
 *
 * GEMM view (REFERENCE.md): M = N*Do*Ho*Wo output positions, N_gemm = K
 * output channels, K_gemm = T*R*S*Cp taps x channels with c fastest (KTRSC).
 * Cp = C rounded up to 8, so a DMA chunk (8 bf16 on gfx950, 2 on gfx942)
 * never straddles a tap. Inputs the conv kernel reads:
 *   x  NDHWC with channel stride Cp (pad channels zero), bf16 — made by the
 *      layout transpose (C == Cp) or the pad-transpose (C < Cp); the 1x1x1
 *      channel-GEMM path reads the caller's NCDHW x directly instead.
 *   w  K rows of crs = T*R*S*Cp bf16 (KTRSC, pad channels zero).
 *   bias K fp32 (optional).
 * Output: y NCDHW bf16, or (split-K) an fp32 workspace in the same NCDHW
 * order that the finalize kernel turns into y (+bias).
 *
 * The plan is filled before any IR exists; every flag has a reason printed
 * next to it (cj_kplan_print). Tile/stages/split-K/WGM come from the caller
 * (src/host/select_conv.c heuristics, or forced by tests and convjit-dump).
 */
#ifndef CJ_CODEGEN_KPLAN_CONV_H
#define CJ_CODEGEN_KPLAN_CONV_H

#include <stdint.h>
#include "arch/arch.h"
#include "util/cj.h"

#define CJ_CONV_TILE_K 32          /* K_gemm per pipeline stage (one 64-byte LDS row) */
#define CJ_CONV_CVEC 8             /* channel padding: 8 bf16 = one 16-byte DMA */
/* Byte offset for masked lanes: past every num_records the kernel builds
 * (non-BIG x and w are <= this, rebased BIG_IN resources are 2 GiB), so
 * the per-element range check zero-fills LDS. 0x7FFFFF80 was inside a
 * 2 GiB resource in the original and read live data (REFERENCE.md). */
#define CJ_CONV_OOB 0xF0000000u
#define CJ_CONV_BIG_IN_RECORDS 0x80000000ull /* rebased x resource: 2 GiB */

/* The conv problem in codegen terms (3D; 1D/2D are normalized by the
 * caller). Arrays are (depth/time, height, width). Derived fields are
 * filled by cj_conv_geom_derive. */
typedef struct cj_conv_geom {
  uint32_t n, c, d, h, w;          /* input NCDHW */
  uint32_t k, t, r, s;             /* filter KCTRS */
  uint32_t stride[3], dil[3], pad_lo[3], pad_hi[3];
  /* derived */
  uint32_t od, oh, ow;             /* output extents */
  uint32_t cp;                     /* C rounded up to CJ_CONV_CVEC */
  uint32_t taps;                   /* T*R*S */
  uint64_t dhw, odhw;              /* D*H*W, Do*Ho*Wo */
  uint64_t npq;                    /* GEMM M */
  uint64_t crs;                    /* GEMM K = taps*cp */
} cj_conv_geom;

/* Forced choices; 0 = default. Tile defaults to (128,128,2,4), stages 4,
 * split-K 1, WGM 8, DMA the widest legal. Test hooks force the large-tensor
 * paths on small shapes so the emulator can check them numerically. */
typedef struct cj_conv_opts {
  uint32_t tile_m, tile_n, wave_m, wave_n;
  uint32_t stages;                 /* 2..4 */
  uint32_t splitk;                 /* >= 1 */
  uint32_t wgm;                    /* >= 1 */
  uint32_t dma_bytes;              /* 4 or 16 */
  int has_bias;
  int force_big_in, force_big_out; /* test hooks */
  int no_fast_paths;               /* disable temporal fast path, channel GEMM, vec4 */
} cj_conv_opts;

typedef struct cj_conv_plan {
  cj_conv_geom g;
  /* tile */
  uint32_t tile_m, tile_n, tile_k;     /* workgroup tile; tile_k = CJ_CONV_TILE_K */
  uint32_t wave_m, wave_n, threads;    /* wave grid, threads = waves*64 */
  uint32_t mi_m, mi_n;                 /* 16x16 MFMA fragments per wave (flat accumulator grid) */
  uint32_t mfma_k;                     /* K of one MFMA: 32 (gfx950) / 16 (gfx942) */
  uint32_t stages;                     /* LDS pipeline depth (PIPE_STAGES) */
  uint32_t dma_bytes;                  /* bytes per lane of one buffer_load...lds */
  uint32_t a_dma, b_dma;               /* DMA instructions per thread per K step (A, B) */
  uint32_t lds_a_stage, lds_b_stage;   /* bytes of one stage of A / B */
  uint64_t tiles_m, tiles_n;           /* grid of output tiles */
  uint32_t k_tiles;                    /* ceil(crs / tile_k) */
  uint32_t k_tiles_split;              /* K steps per split, a multiple of stages */
  /* named specialization flags (reasons in kplan_conv.c's print) */
  uint32_t splitk;                     /* K loop split over grid z, fp32 atomics */
  uint32_t wgm;                        /* grouped-M workgroup order width */
  int has_bias;
  int big_in;                          /* x bytes > CJ_CONV_OOB: per-workgroup rebase */
  int big_out;                         /* y bytes >= 2^31: 64-bit addressed stores */
  int vec4_store;                      /* n == 1, no split-K, Do*Ho*Wo % 4 == 0 */
  int temporal_fast;                   /* (T,1,1), stride 1, no H/W padding, n == 1 */
  int channel_gemm;                    /* 1x1x1 stride 1 no pad: NCDHW x, no transpose */
  int need_t, need_h, need_w;          /* some tap leaves the input in that dim */
  int m_partial;                       /* npq % tile_m != 0 */
  int n_tail;                          /* k % tile_n != 0 */
  int k_partial;                       /* crs % (tile_k * stages * splitk granularity) != 0 */
  uint64_t x_bytes, w_bytes, y_bytes;  /* tensors the kernel reads / writes */
  uint64_t ws_bytes;                   /* split-K fp32 workspace (0 if none) */
} cj_conv_plan;

/* Split-K finalize: y[i] = bf16(ws[i] + bias[k(i)]), NCDHW, elementwise. */
typedef struct cj_finalize_plan {
  uint64_t total;      /* N*K*Do*Ho*Wo elements */
  uint64_t odhw;       /* Do*Ho*Wo: k(i) = (i / odhw) % k */
  uint32_t k;
  uint32_t per_thread; /* elements per thread (4: one 16-byte fp32 load) */
  int has_bias;
  int big;             /* ws bytes >= 2^31: 64-bit addressing */
} cj_finalize_plan;

struct cj_kplan;

/* Validates the shape fields ("conv.c = 0: must be > 0") and fills the
 * derived ones. */
convjit_status cj_conv_geom_derive(cj_conv_geom *g);
/* Fills p for the conv kernel. INVALID_ARG for a bad shape or option,
 * UNSUPPORTED (with the reason) for an illegal tile on this arch. */
convjit_status cj_kplan_conv_init(struct cj_kplan *p, const cj_arch *arch, const cj_conv_geom *g,
                                  const cj_conv_opts *o);
/* Fills p for the split-K finalize of conv plan c. */
convjit_status cj_kplan_finalize_init(struct cj_kplan *p, const cj_arch *arch, const cj_conv_plan *c);

/* Per-kind parts of cj_kplan_key / cj_kplan_print (called by kplan.c). */
void cj_kplan_conv_key(const struct cj_kplan *p, cj_strbuf *key);
void cj_kplan_conv_print(const struct cj_kplan *p, cj_strbuf *out);

#endif
