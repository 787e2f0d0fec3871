/* The launches (contract in convjit.h and plan.h): argument checks driven
 * by the plan's kind row and the tensor-role table (kinds.h), binds
 * resolved to the caller's pointers, kernargs packed on the stack, every
 * step enqueued. No compile, no allocation, no lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "host/plan.h"

/* ---- launch ---------------------------------------------------------------- */

/* Pointer alignment (docs/api.md "Alignment"; the rule of each tensor role
 * in kinds.h): every kernel access is aligned to its own width, relative
 * to the tensor base, so a base must be aligned to the widest access any
 * kernel convjit builds makes through it. A fixed rule per role, not per
 * plan, so a pointer that works stays working when selection changes its
 * mind. A transpose's x and y: 16 bytes (its 16-byte accesses). */
static convjit_status check_align(const void *ptr, uint64_t align, const char *f, const char *name) {
  uint64_t a = (uint64_t)(uintptr_t)ptr;
  CJ_CHECK(!ptr || a % align == 0, CONVJIT_ERR_INVALID_ARG,
           "%s%s = %p: must be %llu-byte aligned (address mod %llu = %llu)", f, name, ptr, (unsigned long long)align,
           (unsigned long long)align, (unsigned long long)(a % align));
  return CONVJIT_OK;
}

void cj_plan_launch_facts(convjit_plan *p) {
  const cj_conv_kind_row *k = p->op == CJ_PLAN_CONV ? cj_conv_kind_of(p->prob.kind) : NULL;
  p->need = k ? k->reads | k->writes : 0;
  p->optional = k ? k->optional : 0;
  for (int t = 0; t < CJ_TENSOR_COUNT; t++)
    p->align[t] = (uint8_t)cj_tensor_align((cj_tensor)t, p->prob.x_dtype, p->prob.w_dtype, p->prob.y_dtype);
}

static uint64_t bind_value(const cj_bind *b, const cj_launch_ptrs *ptrs) {
  if (b->kind > CJ_BIND_NONE && (int)b->kind < CJ_TENSOR_COUNT) /* a role's pointer, + a byte offset */
    return (uint64_t)(uintptr_t)ptrs->t[b->kind] + b->value;
  switch (b->kind) {
  case CJ_BIND_CONST_U32:
  case CJ_BIND_CONST_F32: return b->value & 0xffffffffu;
  case CJ_BIND_CONST_U64: return b->value;
  default: return 0;
  }
}

convjit_status cj_plan_run(const convjit_plan *p, const cj_plan_step *steps, uint32_t n, const cj_launch_ptrs *ptrs,
                           void *stream) {
  cj_device *dev = p->ctx->dev;
  for (uint32_t i = 0; i < n; i++) {
    const cj_plan_step *s = &steps[i];
    if (s->kind == CJ_STEP_MEMSET) {
      void *dst = (void *)(uintptr_t)bind_value(&s->dst, ptrs);
      CJ_TRY(dev->ops->memset_d8(dev, dst, 0, (size_t)s->memset_bytes, stream));
      continue;
    }
    _Alignas(16) uint8_t kernargs[CJ_KERNARG_MAX];
    uint64_t v[CJ_KPLAN_MAX_ARGS];
    const void *val[CJ_KPLAN_MAX_ARGS];
    for (uint32_t a = 0; a < s->nargs; a++) {
      v[a] = bind_value(&s->bind[a], ptrs);
      val[a] = &v[a];
    }
    CJ_TRY(cj_kernargs_write(s->k->info, s->k->arg, s->nargs, s->k->kernarg_bytes, val, kernargs));
    CJ_TRY(dev->ops->launch(dev, s->k->kern, s->grid, s->block, kernargs, s->k->kernarg_bytes, stream));
  }
  return CONVJIT_OK;
}

cj_launch_ptrs cj_launch_ptrs_of(const convjit_conv_args *a) {
  cj_launch_ptrs ptrs;
  ptrs.t[CJ_TENSOR_NONE] = NULL;
  for (int t = CJ_TENSOR_NONE + 1; t < CJ_TENSOR_COUNT; t++) ptrs.t[t] = cj_tensor_in_args(a, (cj_tensor)t);
  return ptrs;
}

/* The kind row of a conv plan (INTERNAL for a problem that could not have
 * been planned). */
static convjit_status plan_kind(const convjit_plan *p, const cj_conv_kind_row **k) {
  *k = cj_conv_kind_of(p->prob.kind);
  CJ_CHECK(*k, CONVJIT_ERR_INTERNAL, "plan: kind %d", (int)p->prob.kind);
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_weight_pack(const convjit_plan *p, const void *w, void *w_packed, void *stream) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_TRY(cj_plan_check_ctx(p));
  CJ_CHECK(p->op == CJ_PLAN_CONV, CONVJIT_ERR_INVALID_ARG, "plan: a transpose plan has no weight to pack");
  const cj_conv_kind_row *k;
  CJ_TRY(plan_kind(p, &k));
  CJ_CHECK(k->packs, CONVJIT_ERR_INVALID_ARG, "plan: a %s plan reads no weight: there is nothing to pack", k->name);
  CJ_CHECK(w, CONVJIT_ERR_INVALID_ARG, "w = NULL");
  CJ_CHECK(w_packed || p->seq.packed_weight_bytes == 0, CONVJIT_ERR_INVALID_ARG,
           "w_packed = NULL: the plan needs %llu bytes there (convjit_plan_packed_weight_size)",
           (unsigned long long)p->seq.packed_weight_bytes);
  CJ_TRY(check_align(w, p->align[CJ_TENSOR_W_RAW], "", "w"));
  CJ_TRY(check_align(w_packed, p->align[CJ_TENSOR_W_PACKED], "", "w_packed"));
  cj_launch_ptrs ptrs = {.w_raw = w, .w_packed = w_packed};
  cj_plan_lists l;
  CJ_TRY(cj_plan_launch_lists(p, stream, &l));
  return cj_plan_run(p, l.pack, l.npack, &ptrs, stream);
}

/* The tensor roles the launch list binds, one bit per role: an optional
 * role of the kind is taken exactly when one of the plan's kernels reads it.
 * One pass over a few dozen binds per launch, nothing cached, so the plan
 * stays immutable. */
static uint32_t bound_tensors(const cj_plan_step *fwd, uint32_t nfwd) {
  uint32_t m = 0;
  for (uint32_t i = 0; i < nfwd; i++)
    for (uint32_t a = 0; a < fwd[i].nargs; a++)
      if ((int)fwd[i].bind[a].kind < CJ_TENSOR_COUNT) m |= CJ_TENSOR_BIT(fwd[i].bind[a].kind);
  return m;
}

/* The first (in table order) of the roles in `bad`, as its error: a
 * required one missing, an optional one given to a plan that does not take
 * it or missing from one that does, one the kind does not take given. */
static convjit_status tensor_error(const cj_conv_kind_row *k, const cj_launch_ptrs *q, uint32_t bad, uint32_t bound,
                                   const char *f) {
  const cj_tensor t = (cj_tensor)__builtin_ctz(bad);
  const uint32_t bit = CJ_TENSOR_BIT(t);
  const void *v = q->t[t];
  const char *name = cj_tensor_rows[t].field;
  const cj_tensor_texts *tx = &cj_tensor_rows[t].texts;
  if ((k->reads | k->writes) & bit) return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "%s%s = NULL", f, name);
  if ((k->optional & bit) && v)
    return CJ_ERR(tx->given, "%s%s = %p: this plan has no %s %s (the descriptor has %s = 0)", f, name, v, tx->noun,
                  cj_tensor_access_of(t) == CJ_TENSOR_OUT ? "output" : "input", tx->flag);
  if ((k->optional & bit) && (bound & bit))
    return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "%s%s = NULL: the plan %s (%s = 1)%s", f, name, tx->does, tx->flag,
                  *f ? "" : "; pass it with convjit_conv_forward");
  return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "%s%s = %p: a %s plan does not take %s (convjit_conv_execute runs the "
                "plan's kind)", f, name, v, k->name, name);
}

/* A device pointer carries no size: the caller's stated x_prev size against
 * the N*C*pad_lo[0]*H*W elements the pre-pass reads (a tensor of another
 * shape would be read past its end, or its frames read as the wrong ones).
 * The time dim is the descriptor's first: problem dim 3 - rank (D in 3D,
 * W in 1D), its pad that many frames of the other dims' extents. */
static convjit_status check_x_prev_bytes(const convjit_plan *p, size_t bytes, const char *f) {
  const cj_conv_problem *q = &p->prob;
  const int ti = q->spatial_rank >= 1 && q->spatial_rank <= 3 ? 3 - q->spatial_rank : 0;
  const int64_t ext[3] = {q->d, q->h, q->w};
  uint64_t need = (uint64_t)q->n * q->c * q->pad_lo[ti] * (uint64_t)(q->d * q->h * q->w / ext[ti]) *
                  cj_dtype_bytes(q->x_dtype);
  CJ_CHECK(bytes == need, CONVJIT_ERR_INVALID_ARG,
           "%sx_prev_bytes = %zu: the plan reads x_prev as (N, C, pad_lo[0], the other dims) = (%lld, %lld, %lld, "
           "%lld) %s = %llu bytes", f, bytes, (long long)q->n, (long long)q->c, (long long)q->pad_lo[ti],
           (long long)(q->d * q->h * q->w / ext[ti]), cj_dtype_name(q->x_dtype), (unsigned long long)need);
  return CONVJIT_OK;
}

/* The checks of a conv launch over the tensor roles, as masks: the kind's
 * inputs and output present; an optional role given exactly when the plan
 * takes it; a role the kind does not take absent; then x_prev's stated
 * size (when the caller's struct_size holds x_prev_bytes: an older
 * header's is not checked), the workspace and every given pointer's
 * alignment.
 * a: the caller's args as read (cj_conv_args_read), q its pointers by role.
 * f is the field prefix of the messages: "args." for the struct entry
 * points, "" for convjit_conv_fwd, whose texts stay those of its
 * parameters. */
static convjit_status check_tensors(const convjit_plan *p, const cj_plan_lists *l, const cj_launch_ptrs *q,
                                    const convjit_conv_args *a, const char *f) {
  uint32_t given = 0;
  for (int i = CJ_TENSOR_NONE + 1; i < CJ_TENSOR_COUNT; i++) given |= (uint32_t)(q->t[i] != NULL) << i;
  const uint32_t need = p->need, opt = p->optional, bound = bound_tensors(l->fwd, l->nfwd);
  const uint32_t own = CJ_TENSOR_BIT(CJ_TENSOR_WORKSPACE) | CJ_TENSOR_BIT(CJ_TENSOR_W_RAW); /* checked apart */
  const uint32_t bad = ((need & ~given) | (given & ~(need | opt)) | ((given ^ bound) & opt)) & ~own;
  if (bad) {
    const cj_conv_kind_row *k;
    CJ_TRY(plan_kind(p, &k));
    return tensor_error(k, q, bad, bound, f);
  }
  if (q->t[CJ_TENSOR_X_PREV] && a->struct_size >= offsetof(convjit_conv_args, x_prev_bytes) + sizeof(size_t))
    CJ_TRY(check_x_prev_bytes(p, a->x_prev_bytes, f));
  CJ_CHECK(a->workspace_bytes >= p->seq.workspace_bytes, CONVJIT_ERR_INVALID_ARG,
           "%sworkspace_bytes = %zu: the plan needs %llu (convjit_plan_workspace_size)", f, a->workspace_bytes,
           (unsigned long long)p->seq.workspace_bytes);
  CJ_CHECK(q->workspace || p->seq.workspace_bytes == 0, CONVJIT_ERR_INVALID_ARG,
           "%sworkspace = NULL: the plan needs %llu bytes", f, (unsigned long long)p->seq.workspace_bytes);
  for (uint32_t m = given; m; m &= m - 1) {
    const cj_tensor t = (cj_tensor)__builtin_ctz(m);
    CJ_TRY(check_align(q->t[t], p->align[t], f, cj_tensor_rows[t].field));
  }
  return CONVJIT_OK;
}

/* The plan's context alive and a conv plan: before its lists are read. */
static convjit_status check_conv_plan(const convjit_plan *p) {
  CJ_TRY(cj_plan_check_ctx(p));
  CJ_CHECK(p->op == CJ_PLAN_CONV, CONVJIT_ERR_INVALID_ARG, "plan: not a conv plan (use convjit_transpose)");
  return CONVJIT_OK;
}

convjit_status cj_conv_args_check(const convjit_plan *p, const convjit_conv_args *a, const char *f) {
  CJ_TRY(check_conv_plan(p));
  cj_launch_ptrs q = cj_launch_ptrs_of(a);
  cj_plan_lists l;
  cj_plan_lists_now(p, &l);
  return check_tensors(p, &l, &q, a, f);
}

/* Bytes of convjit_conv_args in version 0.1 and the fields appended since
 * (they read as NULL when the caller's struct predates them). */
static const cj_appended args_appended[] = {
    CJ_APPENDED(convjit_conv_args, x_prev), CJ_APPENDED(convjit_conv_args, x_prev_bytes),
    CJ_APPENDED(convjit_conv_args, dy),     CJ_APPENDED(convjit_conv_args, dx),
    CJ_APPENDED(convjit_conv_args, dw),     CJ_APPENDED(convjit_conv_args, db),
};

convjit_status cj_conv_args_read(const convjit_conv_args *args, convjit_conv_args *out) {
  CJ_CHECK(args, CONVJIT_ERR_INVALID_ARG, "args = NULL: need the tensors (convjit_conv_args_default)");
  CJ_TRY(cj_check_struct_size(args->struct_size, CONV_ARGS_V1_SIZE, sizeof *args, "args"));
  *out = convjit_conv_args_default();
  cj_versioned_copy(out, args, args->struct_size, args_appended, sizeof args_appended / sizeof args_appended[0]);
  return CONVJIT_OK;
}

/* One read of the plan's lists for the whole launch (an asynchronous plan
 * switches between launches, never inside one: plan_async.c). */
static convjit_status conv_launch(const convjit_plan *p, const convjit_conv_args *a, const char *f, void *stream) {
  CJ_TRY(check_conv_plan(p));
  cj_launch_ptrs ptrs = cj_launch_ptrs_of(a);
  cj_plan_lists l;
  CJ_TRY(cj_plan_launch_lists(p, stream, &l));
  CJ_TRY(check_tensors(p, &l, &ptrs, a, f));
  return cj_plan_run(p, l.fwd, l.nfwd, &ptrs, stream);
}

/* The forward entry points take forward plans only; convjit_conv_execute
 * runs any kind. */
static convjit_status forward_only(const convjit_plan *p) {
  CJ_CHECK(p->op != CJ_PLAN_CONV || p->prob.kind == CONVJIT_CONV_FORWARD, CONVJIT_ERR_INVALID_ARG,
           "plan: a %s plan; launch it with convjit_conv_execute", cj_conv_kind_name(p->prob.kind));
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_conv_execute(const convjit_plan *p, const convjit_conv_args *args, void *stream) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  convjit_conv_args a;
  CJ_TRY(cj_conv_args_read(args, &a));
  return conv_launch(p, &a, "args.", stream);
}

CONVJIT_API convjit_status convjit_conv_forward(const convjit_plan *p, const convjit_conv_args *args, void *stream) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  convjit_conv_args a;
  CJ_TRY(cj_conv_args_read(args, &a));
  CJ_TRY(forward_only(p));
  return conv_launch(p, &a, "args.", stream);
}

/* The positional form: the same checks and launch, messages naming its
 * parameters. */
CONVJIT_API convjit_status convjit_conv_fwd(const convjit_plan *p, const void *x, const void *w_packed,
                                            const void *bias, void *y, void *workspace, size_t workspace_bytes,
                                            void *stream) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_TRY(forward_only(p));
  convjit_conv_args a = convjit_conv_args_default();
  a.x = x;
  a.w_packed = w_packed;
  a.bias = bias;
  a.y = y;
  a.workspace = workspace;
  a.workspace_bytes = workspace_bytes;
  return conv_launch(p, &a, "", stream);
}

CONVJIT_API convjit_status convjit_transpose(const convjit_plan *p, const void *x, void *y, void *stream) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_TRY(cj_plan_check_ctx(p));
  CJ_CHECK(p->op == CJ_PLAN_TRANSPOSE, CONVJIT_ERR_INVALID_ARG, "plan: not a transpose plan (use convjit_conv_fwd)");
  CJ_CHECK(x, CONVJIT_ERR_INVALID_ARG, "x = NULL");
  CJ_CHECK(y, CONVJIT_ERR_INVALID_ARG, "y = NULL");
  CJ_CHECK(x != y, CONVJIT_ERR_INVALID_ARG, "y = x = %p: the transpose is out of place", x);
  CJ_TRY(check_align(x, 16, "", "x"));
  CJ_TRY(check_align(y, 16, "", "y"));
  cj_launch_ptrs ptrs = {.x = x, .y = y};
  return cj_plan_run(p, p->fwd, p->nfwd, &ptrs, stream);
}
