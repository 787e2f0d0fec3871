/* fp8 conversions of the conv's pre-passes, shared by the layout kernels
 * (layout.c, where they are defined) and the generic conv kernel
 * (conv_generic.c), which applies the same conversion to x on its load. */
#ifndef CJ_CODEGEN_CVT_H
#define CJ_CODEGEN_CVT_H

#include <llvm-c/Core.h>
#include "codegen/irb.h"

/* n (<= 16) bf16 values (i16) -> n fp8 bytes in the arch's format, packed in
 * a cj_irb_mem_type(n): fp8(fl32(x * mul)) (mul NULL: none), RNE, clamped
 * to +-sat first (v_cvt_pk_fp8_f32 does not saturate); NaN stays NaN. */
LLVMValueRef cj_cvt_fp8(cj_irb *g, LLVMValueRef *e, uint32_t n, uint32_t sat, LLVMValueRef mul);
/* E4M3FN bytes as the E4M3FNUZ bytes of half their value, in v's type (i8,
 * i16, i32, <n x i32>): -0 -> +0, NaN -> 0x80, the rest unchanged. */
LLVMValueRef cj_fn_to_fnuz(cj_irb *g, LLVMValueRef v);

#endif
