/* The one kernel-argument packer (contract in kernargs.h). */
#include <string.h>
#include "pipeline/kernargs.h"

convjit_status cj_kernargs_layout(const cj_kernel_info *ki, const cj_kplan *p, uint32_t cap, cj_kernarg_slot *slot,
                                  uint32_t max, uint32_t *n, uint32_t *bytes) {
  CJ_CHECK(ki && slot && n && bytes, CONVJIT_ERR_INVALID_ARG, "cj_kernargs_layout: NULL argument");
  uint32_t j = 0, end = 0;
  *n = *bytes = 0;
  for (uint32_t a = 0; a < ki->nargs; a++) {
    const cj_kernel_arg *m = &ki->args[a];
    if (!cj_kernel_arg_is_explicit(m)) continue;
    if (p) {
      CJ_CHECK(j < p->nargs, CONVJIT_ERR_INTERNAL, "kernel %s: code object has more arguments than its plan (%u)",
               ki->name, p->nargs);
      uint32_t want = p->args[j].is_ptr ? 8 : p->args[j].size;
      CJ_CHECK(m->size == want && (uint64_t)m->offset + m->size <= cap, CONVJIT_ERR_INTERNAL,
               "kernel %s: argument %u (%s) is %u bytes at offset %u in the code object, plan says %u", ki->name, j,
               p->args[j].name, m->size, m->offset, want);
    }
    CJ_CHECK((uint64_t)m->offset + m->size <= cap, CONVJIT_ERR_INTERNAL,
             "kernel %s: argument %u (%s) is %u bytes at offset %u: past the %u-byte argument buffer", ki->name, j,
             m->name[0] ? m->name : m->value_kind, m->size, m->offset, cap);
    CJ_CHECK(j < max, CONVJIT_ERR_INTERNAL, "kernel %s: more than %u explicit arguments", ki->name, max);
    slot[j] = (cj_kernarg_slot){.meta = a, .offset = m->offset, .size = m->size};
    if (m->offset + m->size > end) end = m->offset + m->size;
    j++;
  }
  CJ_CHECK(!p || j == p->nargs, CONVJIT_ERR_INTERNAL, "kernel %s: code object has %u explicit arguments, plan %u",
           ki->name, j, p ? p->nargs : 0);
  *n = j;
  *bytes = end;
  return CONVJIT_OK;
}

convjit_status cj_kernargs_missing(const cj_kernel_info *ki, const cj_kernarg_slot *slot, uint32_t i) {
  const cj_kernel_arg *m = &ki->args[slot[i].meta];
  return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "argument '%s' (#%u, %s, %u bytes at offset %u) of kernel %s is not given",
                m->name[0] ? m->name : "(unnamed)", i, m->value_kind, m->size, m->offset, ki->name);
}

convjit_status cj_kernargs_pack(const cj_kplan *p, const cj_kernel_info *ki, const uint64_t role_val[CJ_ARG_ROLE_COUNT],
                                uint32_t have, uint8_t *ka, size_t cap) {
  CJ_CHECK(p && ki && role_val && ka, CONVJIT_ERR_INVALID_ARG, "cj_kernargs_pack: NULL argument");
  cj_kernarg_slot slot[CJ_KPLAN_MAX_ARGS];
  const void *val[CJ_KPLAN_MAX_ARGS];
  uint32_t n = 0, bytes = 0;
  CJ_TRY(cj_kernargs_layout(ki, p, cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap, slot, CJ_KPLAN_MAX_ARGS, &n,
                            &bytes));
  for (uint32_t i = 0; i < n; i++) {
    cj_arg_role r = p->args[i].role;
    val[i] = r > CJ_ARG_NONE && r < CJ_ARG_ROLE_COUNT && (have >> r & 1) ? (const void *)&role_val[r] : NULL;
  }
  return cj_kernargs_write(ki, slot, n, bytes, val, ka);
}
