/* Plan of the shape-generic conv kernel: the fallback that runs a forward
 * conv while its specialized kernel is still being compiled (docs/api.md
 * "Asynchronous compile"). One kernel per arch, dtypes and epilogue, every
 * size a kernel argument, so a process compiles it once (the disk cache
 * and an application's warm cache keep it) and every new shape of that
 * kind finds it. Included by kplan.h only; plan in kplan_generic.c, the
 * kernel in conv_generic.c.
 *
 * What it computes is the conv plan's: y = epilogue(sum over (c, t, r, s)
 * of x * w) in fp32 on the same MFMA, with the same x conversion as the
 * conv's pre-pass (copy, E4M3FN -> E4M3FNUZ map, or bf16 quantized to fp8
 * with qscale) and the same packed weight (w_packed from
 * convjit_weight_pack: K*groups rows of T*R*S*Cp, KTRSC), so the caller's
 * buffers work for both kernels and both meet the conv's error bound. It reads x where the caller left
 * it (NCDHW or NDHWC, element by element: no pre-pass, no workspace) and
 * writes y in the caller's layout. MFMA 16x16 on 64 x 64 output tiles,
 * one LDS stage, a barrier per K step: a fraction of the specialized
 * kernel's speed, for the first calls only.
 *
 * Not for: causal streaming (x_prev), tensors of 2^32 bytes or more (its
 * offsets are 32-bit), batch or spatial extents past what its grid holds
 * (cj_generic_legal says why: the caller then compiles synchronously). */
#ifndef CJ_CODEGEN_KPLAN_GENERIC_H
#define CJ_CODEGEN_KPLAN_GENERIC_H

#include <stdint.h>
#include "arch/arch.h"
#include "codegen/kplan_epi.h"
#include "codegen/kplan_conv.h"
#include "codegen/kplan_fields.h"
#include "util/cj.h"

#define CJ_GENERIC_THREADS 256 /* 4 waves, 2 x 2 over the 64 x 64 tile */
#define CJ_GENERIC_TILE 64

/* X(type, name, in_key, reason), as the conv plan's table (kplan_conv.h). */
#define CJ_GENERIC_PLAN_FIELDS(X)                                                                             \
  X(uint32_t, dtype, 1, "compute dtype (convjit_dtype): w_packed's elements and the MFMA's")                  \
  X(uint32_t, x_dtype, 1, "x as the caller holds it (convjit_dtype)")                                         \
  X(uint32_t, x_mode, 1, "cj_prep_mode of x on its way to the MFMA: 0 copy, 1 E4M3FN -> E4M3FNUZ, 2 quantize") \
  X(cj_epilogue, epi, 1, "after the K loop (kplan_epi.h): the conv's, constants included")                    \
  X(uint32_t, mfma, 0, "MFMA row (arch.h cj_mfma_kind): the arch's best for dtype")                           \
  X(uint32_t, elem_bytes, 0, "bytes per compute element")                                                     \
  X(uint32_t, x_bytes, 0, "bytes per x element as given")                                                    \
  X(uint32_t, k_bytes, 0, "K bytes per step and tile row: 64, or one MFMA's K when wider (f8f6f4: 128)")      \
  X(uint32_t, sat_max, 0, "quantize: the arch's largest finite fp8 (v_cvt_pk_fp8_f32 does not saturate)")

typedef struct cj_generic_plan {
  CJ_GENERIC_PLAN_FIELDS(CJ_FIELD_MEMBER)
} cj_generic_plan;

/* The sizes the kernel reads, one u32 argument each (role GEOM), in this
 * order. Per group: C and K are the group's channels. FLAGS: bit 0 x is
 * NDHWC, bit 1 y is NDHWC. */
#define CJ_GENERIC_GEOM_TABLE(G)                                                   \
  G(N, "n") G(GROUPS, "groups") G(C, "c") G(K, "k") G(D, "d") G(H, "h") G(W, "w")  \
  G(OD, "od") G(OH, "oh") G(OW, "ow") G(T, "t") G(R, "r") G(S, "s") G(CP, "cp")    \
  G(ST_D, "st_d") G(ST_H, "st_h") G(ST_W, "st_w") G(DIL_D, "dil_d") G(DIL_H, "dil_h") \
  G(DIL_W, "dil_w") G(PAD_D, "pad_d") G(PAD_H, "pad_h") G(PAD_W, "pad_w") G(FLAGS, "flags")
typedef enum cj_generic_geom {
#define CJ_GENERIC_GEOM_ENUM(id, name) CJ_GEN_##id,
  CJ_GENERIC_GEOM_TABLE(CJ_GENERIC_GEOM_ENUM)
#undef CJ_GENERIC_GEOM_ENUM
  CJ_GEN_GEOM_COUNT
} cj_generic_geom;
#define CJ_GEN_X_NDHWC 1u
#define CJ_GEN_Y_NDHWC 2u

struct cj_kplan;

/* Fills p for the generic kernel of conv geometry g's dtypes (g->dtype the
 * compute dtype, g->y_dtype y's) with x held as x_dtype and converted by
 * x_mode, and the fused epilogue description epi (NULL: none). Only the
 * dtypes and the epilogue make the key: the launch shape is nominal
 * (1 x 1 x 1, the caller's step sets the real grid, cj_generic_grid).
 * INVALID_ARG for a bad epilogue or mode, UNSUPPORTED for a dtype the arch
 * has no MFMA for. */
convjit_status cj_kplan_generic_init(struct cj_kplan *p, const cj_arch *arch, const cj_conv_geom *g,
                                     uint32_t x_dtype, uint32_t x_mode, const cj_epilogue *epi);
/* OK when the generic kernel computes conv g (derived geometry, the
 * problem's groups, layouts, sizes); UNSUPPORTED naming what it cannot. */
convjit_status cj_generic_legal(const cj_conv_geom *g, uint32_t x_bytes, int has_x_prev);
/* The u32 geometry arguments of g, in CJ_GENERIC_GEOM_TABLE order; x_ndhwc:
 * the caller's x is NDHWC (g->x_ndhwc says how the specialized kernel reads
 * it, which may be a workspace copy). */
void cj_generic_geom_values(const cj_conv_geom *g, int x_ndhwc, uint32_t v[CJ_GEN_GEOM_COUNT]);
/* The launch grid of g: 64 x 64 tiles over (N*Do*Ho*Wo, K), groups. */
void cj_generic_grid(const cj_conv_geom *g, uint64_t grid[3]);

#endif
