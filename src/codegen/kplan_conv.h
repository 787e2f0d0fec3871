/* Plan fields of the conv family and its split-K finalize. Included by
 * kplan.h only. (Owned by the conv work; placeholder until it lands.) */
#ifndef CJ_CODEGEN_KPLAN_CONV_H
#define CJ_CODEGEN_KPLAN_CONV_H
typedef struct cj_conv_plan { uint32_t tile_m; } cj_conv_plan;
typedef struct cj_finalize_plan { uint32_t k; } cj_finalize_plan;
#endif
