/* The kind and tensor-role tables (contract in kinds.h). */
#include <string.h>
#include "host/kinds.h"
#include "codegen/kplan_epi.h"

const cj_tensor_row cj_tensor_rows[CJ_TENSOR_COUNT] = {
#define CJ_TENSOR_OFF_1(field) offsetof(convjit_conv_args, field)
#define CJ_TENSOR_OFF_0(field) SIZE_MAX
#define CJ_TENSOR_ROW(id, field, in_args, align, access, flag, noun, does, given)              \
  [CJ_TENSOR_##id] = {#field, CJ_TENSOR_OFF_##in_args(field), CJ_ALIGN_##align, CJ_TENSOR_##access, \
                      {flag, noun, does, CONVJIT_ERR_##given}},
    CJ_TENSOR_TABLE(CJ_TENSOR_ROW)
#undef CJ_TENSOR_ROW
#undef CJ_TENSOR_OFF_0
#undef CJ_TENSOR_OFF_1
};

/* Every args field of the table is a pointer, so one read fits all. */
#define CJ_TENSOR_SIZE_1(field) \
  _Static_assert(sizeof(((convjit_conv_args *)0)->field) == sizeof(void *), "tensor " #field);
#define CJ_TENSOR_SIZE_0(field)
#define CJ_TENSOR_PTR_CHECK(id, field, in_args, align, access, flag, noun, does, given) CJ_TENSOR_SIZE_##in_args(field)
CJ_TENSOR_TABLE(CJ_TENSOR_PTR_CHECK)
#undef CJ_TENSOR_PTR_CHECK
#undef CJ_TENSOR_SIZE_0
#undef CJ_TENSOR_SIZE_1

uint64_t cj_tensor_align(cj_tensor t, convjit_dtype x_dtype, convjit_dtype w_dtype, convjit_dtype y_dtype) {
  switch (cj_tensor_known(t) ? cj_tensor_rows[t].align : CJ_ALIGN_VEC16) {
  case CJ_ALIGN_VEC16: return 16;
  case CJ_ALIGN_Y4: return 4ull * cj_dtype_bytes(y_dtype);
  case CJ_ALIGN_X4: return 4ull * cj_dtype_bytes(x_dtype);
  case CJ_ALIGN_W4: return 4ull * cj_dtype_bytes(w_dtype);
  case CJ_ALIGN_F32: return 4;
  case CJ_ALIGN_W1: return cj_dtype_bytes(w_dtype);
  }
  return 16;
}

static const cj_conv_kind_row cj_kinds[] = {
#define CJ_KIND_ROW(id, nm, tl, rd, wr, opt, pk, ep, ch) \
  {CONVJIT_CONV_##id, nm, tl, rd, wr, opt, pk, ep, CJ_EPI_CHANNELS_##ch},
    CJ_CONV_KIND_TABLE(CJ_KIND_ROW)
#undef CJ_KIND_ROW
};
#define CJ_NKINDS (sizeof cj_kinds / sizeof cj_kinds[0])

const cj_conv_kind_row *cj_conv_kind_of(convjit_conv_kind kind) {
  /* the rows are in enum order (a launch looks its plan's kind up) */
  return (unsigned)kind < CJ_NKINDS && cj_kinds[kind].kind == kind ? &cj_kinds[kind] : NULL;
}

int cj_conv_kind_from_name(const char *name, size_t len) {
  for (size_t i = 0; name && i < CJ_NKINDS; i++)
    if ((strlen(cj_kinds[i].name) == len && !strncmp(cj_kinds[i].name, name, len)) ||
        (strlen(cj_kinds[i].tool) == len && !strncmp(cj_kinds[i].tool, name, len)))
      return (int)cj_kinds[i].kind;
  return -1;
}

const char *cj_conv_kind_name(convjit_conv_kind kind) {
  const cj_conv_kind_row *r = cj_conv_kind_of(kind);
  return r ? r->name : "?";
}
