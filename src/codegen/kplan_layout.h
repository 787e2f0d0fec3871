/* Plan fields of the layout family (transpose, weight pack). Included by
 * kplan.h only. (Owned by the layout work; placeholder until it lands.) */
#ifndef CJ_CODEGEN_KPLAN_LAYOUT_H
#define CJ_CODEGEN_KPLAN_LAYOUT_H
typedef struct cj_transpose_plan { uint32_t elem_bytes; } cj_transpose_plan;
typedef struct cj_wpack_plan { uint32_t elem_bytes; } cj_wpack_plan;
#endif
