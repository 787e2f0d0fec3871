/* Problem kinds (src/host/kinds.h) through the public API and the tables
 * behind them:
 *   - desc.kind: validated (INVALID_ARG naming the value), a struct_size
 *     without it reads as forward, every kind validates (a family of the
 *     family table plans each); a kind's own dtype limits (fp8 gradients) are UNSUPPORTED
 *     naming the field from convjit_plan_create_conv; an epilogue op the
 *     kind has none of is INVALID_ARG naming the field;
 *   - the kind rows: names, tool spellings, tensors (each read or written
 *     tensor is a field of convjit_conv_args), weight packing;
 *   - the family table: its rows, a problem of each kind planned by the
 *     first family serving it;
 *   - convjit_conv_execute on a forward plan: the bytes of
 *     convjit_conv_forward; a tensor the kind does not take is INVALID_ARG
 *     naming it; the appended args fields past an older struct_size read as
 *     NULL; a plan of another kind (its internals edited here: the API
 *     cannot make one yet) is refused by convjit_conv_forward /
 *     convjit_conv_fwd naming convjit_conv_execute, its tensors checked by
 *     execute from its row, and convjit_weight_pack refuses a kind that
 *     reads no weight;
 *   - the tuning table's problem text, generated from the problem's field
 *     table: text -> parse -> the same problem and text (round trip) for
 *     every kind of field, and non-canonical texts refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api_expect.h"
#include "host/plan.h"
#include "host/tune_db.h"
#include "ref/ref_epi.h"

static convjit_conv_desc good(void) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 1; d.c = 16; d.k = 32;
  d.in[0] = 4; d.in[1] = 6; d.in[2] = 6;
  for (int i = 0; i < 3; i++) { d.filter[i] = 3; d.pad_lo[i] = d.pad_hi[i] = 1; }
  return d;
}

static void test_desc_kind(void **st) {
  (void)st;
  convjit_conv_desc d = good();
  assert_int_equal(d.kind, CONVJIT_CONV_FORWARD);
  OK(convjit_conv_desc_validate(&d));
  d.kind = (convjit_conv_kind)7;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG,
         "desc.kind = 7: must be 0 (forward), 1 (backward data) or 2 (backward weight)");
  d.kind = (convjit_conv_kind)-1;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.kind = -1");
  d.kind = CONVJIT_CONV_BACKWARD_DATA;
  OK(convjit_conv_desc_validate(&d)); /* every kind has kernels */
  d.c = 0; /* a kind's descriptor gets the common checks */
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.c = 0");
  d = good();
  d.kind = CONVJIT_CONV_BACKWARD_WEIGHT; /* has kernels: valid */
  OK(convjit_conv_desc_validate(&d));
  d.has_bias = 1; /* the forward's bias: its gradient db */
  OK(convjit_conv_desc_validate(&d));
  d.has_bias = 0;
  d.act = CONVJIT_ACT_RELU; /* no other epilogue op */
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.act: a backward-weight conv has no activation");
  /* backward data takes the transposed conv's epilogue */
  d = good();
  d.kind = CONVJIT_CONV_BACKWARD_DATA;
  d.has_bias = 1;
  d.act = CONVJIT_ACT_SILU;
  OK(convjit_conv_desc_validate(&d));
  /* an older header's struct: the garbage where kind is now is not read */
  d = good();
  d.kind = (convjit_conv_kind)0x5A5A5A5A;
  d.struct_size = offsetof(convjit_conv_desc, kind);
  OK(convjit_conv_desc_validate(&d));
  cj_conv_problem p;
  OK(cj_conv_desc_normalize(&d, &p));
  assert_int_equal(p.kind, CONVJIT_CONV_FORWARD);
}

/* The family table (select.h cj_conv_family): every row named, with a
 * serves predicate and at least one planner; every kind of the kind table
 * planned by some family; a problem of each kind gets the first family
 * that serves it (today igemm, which serves all) and that family's
 * planner of its kind. */
static void test_families(void **st) {
  (void)st;
  uint32_t n = 0;
  const cj_conv_family *f = cj_conv_families(&n);
  assert_true(n >= 1);
  for (uint32_t i = 0; i < n; i++) {
    assert_non_null(f[i].name);
    assert_non_null(f[i].serves);
    int any = 0;
    for (int k = 0; k < CJ_CONV_KIND_COUNT; k++) any |= f[i].planner[k] != NULL;
    assert_true(any);
  }
  assert_string_equal(f[n - 1].name, "igemm"); /* the general family is last */
  assert_int_equal(cj_conv_kind_planned((convjit_conv_kind)CJ_CONV_KIND_COUNT), 0);
  assert_int_equal(cj_conv_kind_planned((convjit_conv_kind)-1), 0);
  const cj_target t = {cj_arch_from_name("gfx950"), 256};
  for (int k = 0; k < CJ_CONV_KIND_COUNT; k++) {
    convjit_conv_desc d = good();
    d.kind = (convjit_conv_kind)k;
    cj_conv_problem p;
    OK(cj_conv_desc_normalize(&d, &p));
    const cj_conv_family *fam = NULL;
    const cj_conv_planner *pl = NULL;
    OK(cj_conv_family_for(&p, &t, &fam, &pl));
    assert_string_equal(fam->name, "igemm");
    assert_ptr_equal(pl, fam->planner[k]);
    char why[64] = "";
    assert_int_equal(fam->serves(&p, &t, why, sizeof why), 1);
    /* a depthwise problem of the kind (groups = c = 16, k = 32: multiplier
     * 2) is the direct family's; multiplier 9 is nobody's but igemm's,
     * whose prepare refuses it in the descriptor's terms */
    d.groups = d.c = 16;
    d.k = 32;
    OK(cj_conv_desc_normalize(&d, &p));
    OK(cj_conv_family_for(&p, &t, &fam, &pl));
    assert_string_equal(fam->name, "direct");
    assert_ptr_equal(pl, fam->planner[k]);
    p.k = 16 * 9;
    OK(cj_conv_family_for(&p, &t, &fam, &pl));
    assert_string_equal(fam->name, "igemm");
  }
  cj_conv_problem p;
  convjit_conv_desc d = good();
  OK(cj_conv_desc_normalize(&d, &p));
  p.kind = (convjit_conv_kind)9; /* past the table: no family asked */
  const cj_conv_family *fam = NULL;
  const cj_conv_planner *pl = NULL;
  EXPECT(cj_conv_family_for(&p, &t, &fam, &pl), CONVJIT_ERR_INVALID_ARG, "desc.kind = 9: unknown");
  assert_null(fam);
  assert_null(pl);
}

/* The one dtype table (kinds.h CJ_CONV_DTYPE_TABLE), by the rules of
 * docs/api.md "Dtypes" written out here: forward takes bf16/fp8 x and w
 * (bf16 or f32 y) or f16 x and w (f16 or f32 y); backward data one 16-bit
 * type for dx, w, dy; backward weight x = dy in bf16 or f16, dw in it or
 * f32. A refusal names the first field (x, w, y) no row holds. */
static void test_dtype_table(void **st) {
  (void)st;
  enum { B = CONVJIT_DTYPE_BF16, FN = CONVJIT_DTYPE_FP8_E4M3FN, NZ = CONVJIT_DTYPE_FP8_E4M3FNUZ,
         F32 = CONVJIT_DTYPE_F32, H = CONVJIT_DTYPE_F16 };
  const int dts[] = {B, FN, NZ, F32, H};
  for (int k = 0; k < CJ_CONV_KIND_COUNT; k++)
    for (int xi = 0; xi < 5; xi++)
      for (int wi = 0; wi < 5; wi++)
        for (int yi = 0; yi < 5; yi++) {
          const int x = dts[xi], w = dts[wi], y = dts[yi];
          const int x8 = x == FN || x == NZ, w8 = w == FN || w == NZ;
          int want;
          if (k == CONVJIT_CONV_FORWARD)
            want = ((x == B || x8) && (w == B || w8) && (y == B || y == F32)) ||
                   (x == H && w == H && (y == H || y == F32));
          else if (k == CONVJIT_CONV_BACKWARD_DATA)
            want = (x == B || x == H) && w == x && y == x;
          else
            want = (x == B || x == H) && y == x && (w == x || w == F32);
          convjit_status s = cj_conv_kind_dtypes_check((convjit_conv_kind)k, (convjit_dtype)x, (convjit_dtype)w,
                                                       (convjit_dtype)y);
          if ((s == CONVJIT_OK) != want)
            fail_msg("kind %d x %d w %d y %d: %s", k, x, w, y, s == CONVJIT_OK ? "accepted" : cj_error_text());
          if (!want) assert_int_equal(s, CONVJIT_ERR_UNSUPPORTED);
        }
  EXPECT(cj_conv_kind_dtypes_check(CONVJIT_CONV_FORWARD, CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_F16, CONVJIT_DTYPE_BF16),
         CONVJIT_ERR_UNSUPPORTED,
         "desc.w_dtype = f16 with kind forward, desc.x_dtype = bf16: w_dtype must be bf16, fp8_e4m3fn or "
         "fp8_e4m3fnuz (");
  EXPECT(cj_conv_kind_dtypes_check(CONVJIT_CONV_BACKWARD_DATA, CONVJIT_DTYPE_F16, CONVJIT_DTYPE_F16,
                                   CONVJIT_DTYPE_F32),
         CONVJIT_ERR_UNSUPPORTED,
         "desc.y_dtype = 4 (f32) with kind backward-data, desc.x_dtype = f16, desc.w_dtype = f16: y_dtype must be f16 "
         "(dx, w and dy share one element type");
  EXPECT(cj_conv_kind_dtypes_check((convjit_conv_kind)5, CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_BF16),
         CONVJIT_ERR_INVALID_ARG, "desc.kind = 5: unknown");
  uint32_t n = 0;
  const cj_kind_dtypes *r = cj_conv_dtype_rows(&n);
  for (uint32_t i = 0; i < n; i++) assert_non_null(cj_conv_kind_of(r[i].kind)); /* every row a kind of the table */
}

static void test_plan_create_refuses_kind_limits(void **st) {
  (void)st;
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_conv_desc d = good();
  convjit_plan *p = (convjit_plan *)&d; /* must be reset to NULL */
  /* a kind's own dtype limits, after the common checks: fp8 gradients are
   * not offered (each refusal names the field and resets the plan) */
  d.x_dtype = CONVJIT_DTYPE_FP8_E4M3FN;
  d.kind = CONVJIT_CONV_BACKWARD_DATA;
  EXPECT(convjit_plan_create_conv(ctx, &d, &p), CONVJIT_ERR_UNSUPPORTED, "with kind backward-data");
  assert_null(p);
  p = (convjit_plan *)&d;
  d.kind = CONVJIT_CONV_BACKWARD_WEIGHT;
  d.w_dtype = d.y_dtype = CONVJIT_DTYPE_FP8_E4M3FN;
  EXPECT(convjit_plan_create_conv(ctx, &d, &p), CONVJIT_ERR_UNSUPPORTED, "desc.x_dtype = ");
  assert_null(p);
  convjit_context_destroy(ctx);
}

static void test_kind_rows(void **st) {
  (void)st;
  static const struct { convjit_conv_kind k; const char *name, *tool; int packs, planned; } want[] = {
      {CONVJIT_CONV_FORWARD, "forward", "fwd", 1, 1},
      {CONVJIT_CONV_BACKWARD_DATA, "backward-data", "bwd-data", 1, 1},
      {CONVJIT_CONV_BACKWARD_WEIGHT, "backward-weight", "bwd-weight", 0, 1},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const cj_conv_kind_row *r = cj_conv_kind_of(want[i].k);
    assert_non_null(r);
    assert_string_equal(r->name, want[i].name);
    assert_string_equal(cj_conv_kind_name(want[i].k), want[i].name);
    assert_int_equal(cj_conv_kind_from_name(want[i].name, strlen(want[i].name)), want[i].k);
    assert_int_equal(cj_conv_kind_from_name(want[i].tool, strlen(want[i].tool)), want[i].k);
    assert_int_equal(r->packs, want[i].packs);
    assert_int_equal(cj_conv_kind_planned(want[i].k), want[i].planned);
    assert_int_equal(r->writes & (r->writes - 1), 0); /* one output */
    assert_int_equal(r->reads & r->writes, 0);
    for (int t = 1; t < CJ_TENSOR_COUNT; t++) {
      uint32_t bit = CJ_TENSOR_BIT(t);
      if (!((r->reads | r->writes | r->optional) & bit)) continue;
      convjit_conv_args a = convjit_conv_args_default();
      assert_null(cj_tensor_in_args(&a, (cj_tensor)t)); /* an args field, NULL by default */
      assert_int_equal(cj_tensor_access_of((cj_tensor)t), (r->writes & bit) ? CJ_TENSOR_OUT
                                                          : t == CJ_TENSOR_DB ? CJ_TENSOR_OUT
                                                                              : CJ_TENSOR_IN);
    }
  }
  assert_null(cj_conv_kind_of((convjit_conv_kind)3));
  assert_int_equal(cj_conv_kind_from_name("sideways", 8), -1);
  /* the roles resolve to the args' own fields */
  convjit_conv_args a = convjit_conv_args_default();
  a.dy = (const void *)(uintptr_t)0x40;
  a.db = (void *)(uintptr_t)0x80;
  assert_ptr_equal(cj_tensor_in_args(&a, CJ_TENSOR_DY), a.dy);
  assert_ptr_equal(cj_tensor_in_args(&a, CJ_TENSOR_DB), a.db);
  assert_null(cj_tensor_in_args(&a, CJ_TENSOR_W_RAW)); /* weight_pack's parameter, not an args field */
  cj_launch_ptrs ptrs = cj_launch_ptrs_of(&a);
  assert_ptr_equal(ptrs.dy, a.dy);
  assert_ptr_equal(ptrs.t[CJ_TENSOR_DB], a.db);
  assert_int_equal(cj_tensor_align(CJ_TENSOR_Y, CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_F32), 16);
  assert_int_equal(cj_tensor_align(CJ_TENSOR_DX, CONVJIT_DTYPE_FP8_E4M3FN, CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_BF16), 4);
  assert_int_equal(cj_tensor_align(CJ_TENSOR_W_RAW, CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_BF16), 2);
}

/* A forward plan with its buffers (1x1x1: no workspace, x read as given). */
typedef struct fcase {
  convjit_context *ctx;
  convjit_plan *plan;
  void *x, *wp, *y;
  size_t ny;
} fcase;

static void fcase_open(fcase *c) {
  c->ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_conv_desc d = good();
  for (int i = 0; i < 3; i++) { d.filter[i] = 1; d.pad_lo[i] = d.pad_hi[i] = 0; }
  OK(convjit_plan_create_conv(c->ctx, &d, &c->plan));
  size_t ws = 1, pw = 0;
  OK(convjit_plan_workspace_size(c->plan, &ws));
  assert_int_equal(ws, 0);
  OK(convjit_plan_packed_weight_size(c->plan, &pw));
  const size_t nx = 16 * 4 * 6 * 6, nw = 32 * 16;
  c->ny = 32 * 4 * 6 * 6;
  uint16_t *hx = malloc(nx * 2), *hw = malloc(nw * 2);
  assert_true(hx && hw);
  for (size_t i = 0; i < nx; i++) hx[i] = (uint16_t)(0x3C00 + (i * 7) % 64); /* bf16 values near 0.0078..0.0156 */
  for (size_t i = 0; i < nw; i++) hw[i] = (uint16_t)(0x3F80 - (i * 5) % 128);
  c->x = api_upload(c->ctx, hx, nx * 2);
  void *w = api_upload(c->ctx, hw, nw * 2);
  c->wp = api_upload(c->ctx, NULL, pw);
  c->y = api_upload(c->ctx, NULL, c->ny * 2);
  OK(convjit_weight_pack(c->plan, w, c->wp, NULL));
  OK(convjit_synchronize(c->ctx, NULL));
  OK(convjit_free(c->ctx, w));
  free(hx);
  free(hw);
}

static void fcase_close(fcase *c) {
  OK(convjit_free(c->ctx, c->x));
  OK(convjit_free(c->ctx, c->wp));
  OK(convjit_free(c->ctx, c->y));
  convjit_plan_destroy(c->plan);
  convjit_context_destroy(c->ctx);
}

static uint16_t *run_read(fcase *c, convjit_status (*launch)(const convjit_plan *, const convjit_conv_args *, void *)) {
  convjit_conv_args a = convjit_conv_args_default();
  a.x = c->x, a.w_packed = c->wp, a.y = c->y;
  OK(convjit_memset(c->ctx, c->y, 0xEE, c->ny * 2, NULL));
  OK(launch(c->plan, &a, NULL));
  OK(convjit_synchronize(c->ctx, NULL));
  uint16_t *y = malloc(c->ny * 2);
  assert_non_null(y);
  OK(convjit_memcpy_d2h(c->ctx, y, c->y, c->ny * 2, NULL));
  return y;
}

static void test_execute_forward(void **st) {
  (void)st;
  fcase c;
  fcase_open(&c);
  uint16_t *by_forward = run_read(&c, convjit_conv_forward), *by_execute = run_read(&c, convjit_conv_execute);
  assert_memory_equal(by_forward, by_execute, c.ny * 2);
  free(by_forward);
  free(by_execute);
  convjit_conv_args a = convjit_conv_args_default();
  a.x = c.x, a.w_packed = c.wp, a.y = c.y;
  void *fake = (void *)(uintptr_t)0x1000; /* never dereferenced: every call below fails its checks */
  a.dy = fake;
  EXPECT(convjit_conv_execute(c.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.dy = ");
  EXPECT(convjit_conv_execute(c.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "a forward plan does not take dy");
  a.dy = NULL;
  a.dw = fake;
  EXPECT(convjit_conv_forward(c.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.dw = ");
  a.dw = NULL;
  a.y = NULL;
  EXPECT(convjit_conv_execute(c.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.y = NULL");
  EXPECT(convjit_conv_execute(NULL, &a, NULL), CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  EXPECT(convjit_conv_execute(c.plan, NULL, NULL), CONVJIT_ERR_INVALID_ARG, "args = NULL");
  a.y = c.y;
  /* an older header's struct ends at x_prev: the appended fields past it
   * (garbage here) read as NULL */
  a.struct_size = offsetof(convjit_conv_args, x_prev) + sizeof(void *);
  a.dy = a.dx = a.dw = a.db = fake;
  OK(convjit_conv_execute(c.plan, &a, NULL));
  /* a struct_size cutting dy in half: dy is not held whole, reads as NULL */
  a.struct_size = offsetof(convjit_conv_args, dy) + 4;
  OK(convjit_conv_execute(c.plan, &a, NULL));
  OK(convjit_synchronize(c.ctx, NULL));
  fcase_close(&c);
}

/* A plan of another kind, made by editing a forward plan's kind (the API
 * cannot plan one yet): the forward entry points refuse it naming
 * convjit_conv_execute, execute checks its row's tensors, weight_pack its
 * row's packing. Nothing is launched. */
static void test_other_kind_plan(void **st) {
  (void)st;
  fcase c;
  fcase_open(&c);
  convjit_plan *p = c.plan;
  convjit_conv_args a = convjit_conv_args_default();
  a.x = c.x, a.w_packed = c.wp, a.y = c.y;
  p->prob.kind = CONVJIT_CONV_BACKWARD_DATA;
  cj_plan_launch_facts(p); /* what creation derives from the kind */
  EXPECT(convjit_conv_forward(p, &a, NULL), CONVJIT_ERR_INVALID_ARG,
         "plan: a backward-data plan; launch it with convjit_conv_execute");
  EXPECT(convjit_conv_fwd(p, c.x, c.wp, NULL, c.y, NULL, 0, NULL), CONVJIT_ERR_INVALID_ARG, "convjit_conv_execute");
  a = convjit_conv_args_default();
  a.w_packed = c.wp;
  EXPECT(convjit_conv_execute(p, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.dy = NULL");
  a.dy = c.x;
  EXPECT(convjit_conv_execute(p, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.dx = NULL");
  a.dx = c.y;
  a.x = c.x; /* a backward-data plan reads dy, not x */
  EXPECT(convjit_conv_execute(p, &a, NULL), CONVJIT_ERR_INVALID_ARG, "a backward-data plan does not take x");
  p->prob.kind = CONVJIT_CONV_BACKWARD_WEIGHT;
  cj_plan_launch_facts(p);
  EXPECT(convjit_weight_pack(p, c.x, c.wp, NULL), CONVJIT_ERR_INVALID_ARG,
         "plan: a backward-weight plan reads no weight: there is nothing to pack");
  p->prob.kind = CONVJIT_CONV_FORWARD;
  cj_plan_launch_facts(p);
  fcase_close(&c);
}

/* text -> parse -> the same problem and the same text */
static void round_trip(const convjit_conv_desc *d, const char *want_part) {
  cj_conv_problem p, q;
  OK(cj_conv_desc_normalize(d, &p));
  p.x_scale = p.w_scale = 1.0f; /* not in the text: kernel arguments */
  p.spatial_rank = 3;           /* not in the text: 2D plans as 3D */
  cj_strbuf t = {0};
  cj_tune_problem_text(&p, &t);
  assert_non_null(t.s);
  if (!strstr(t.s, want_part)) fail_msg("problem text \"%s\" lacks \"%s\"", t.s, want_part);
  OK(cj_tune_problem_parse(t.s, &q));
  assert_memory_equal(&p, &q, sizeof p);
  cj_strbuf u = {0};
  cj_tune_problem_text(&q, &u);
  assert_string_equal(t.s, u.s);
  printf("  %s\n", t.s);
  cj_sb_free(&t);
  cj_sb_free(&u);
}

static void test_problem_text(void **st) {
  (void)st;
  convjit_conv_desc d = good();
  round_trip(&d, "kind=forward n=1 c=16 k=32 d=4 h=6 w=6 t=3 r=3 s=3 stride=1,1,1 pad_lo=1,1,1 pad_hi=1,1,1");
  d.has_bias = 1;
  d.has_residual = 1;
  d.beta = 0.5f;
  d.act = CONVJIT_ACT_GELU_TANH;
  d.x_layout = CONVJIT_LAYOUT_NDHWC;
  d.groups = 2;
  round_trip(&d, "groups=2 x_dtype=bf16 w_dtype=bf16 y_dtype=bf16 x_layout=ndhwc y_layout=ncdhw "
                 "epi=residual=0x1p-1,bias,act=gelu has_x_prev=0");
  d = good();
  d.x_dtype = d.w_dtype = CONVJIT_DTYPE_FP8_E4M3FN;
  d.x_scale = 0.25f; /* left out of the text */
  d.has_channel_scale = 1;
  d.pad_lo[0] = 2;
  d.pad_hi[0] = 0;
  d.has_x_prev = 1;
  round_trip(&d, "epi=scale has_x_prev=1");
  d = good();
  d.spatial_rank = 2;
  round_trip(&d, "d=1 h=4 w=6 t=1 r=3 s=3");
  /* not canonical, or not valid: refused naming what is wrong */
  cj_conv_problem q;
  static const struct { const char *text, *needle; } bad[] = {
      {"n=1", "expected kind=<KIND>"},
      {"kind=sideways n=1", "expected kind=<KIND>"},
      {"kind=forward n=1 c=16 k=32 d=4 h=6 w=6 t=3 r=3 s=3 stride=1,1 pad_lo=1,1,1", "expected stride=<I64X3>"},
      {"kind=forward n=1 c=16 k=32 d=4 h=6 w=6 t=3 r=3 s=3 stride=1,1,1 pad_lo=1,1,1 pad_hi=1,1,1 dil=1,1,1 "
       "groups=1 x_dtype=bf16 w_dtype=bf16 y_dtype=bf16 x_layout=ncdhw y_layout=ncdhw epi=bias,bias has_x_prev=0",
       "expected epi=<EPI>"},
      {"kind=forward n=1 c=16 k=32 d=4 h=6 w=6 t=3 r=3 s=3 stride=1,1,1 pad_lo=1,1,1 pad_hi=1,1,1 dil=1,1,1 "
       "groups=1 x_dtype=bf16 w_dtype=bf16 y_dtype=bf16 x_layout=ncdhw y_layout=ncdhw epi=none has_x_prev=0 x=1",
       "after the last field"},
      {"kind=forward n=1 c=16 k=32 d=4 h=6 w=6 t=3 r=3 s=3 stride=1,1,1 pad_lo=1,1,1 pad_hi=1,1,1 dil=1,1,1 "
       "groups=1 x_dtype=bf16 w_dtype=bf16 y_dtype=bf16 x_layout=ncdhw y_layout=ncdhw epi=residual=1.0 "
       "has_x_prev=0",
       "not in canonical form"},
      {"kind=forward n=1 c=0 k=32 d=4 h=6 w=6 t=3 r=3 s=3 stride=1,1,1 pad_lo=1,1,1 pad_hi=1,1,1 dil=1,1,1 "
       "groups=1 x_dtype=bf16 w_dtype=bf16 y_dtype=bf16 x_layout=ncdhw y_layout=ncdhw epi=none has_x_prev=0",
       "desc.c = 0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(cj_tune_problem_parse(bad[i].text, &q), CONVJIT_ERR_INVALID_ARG);
    if (!strstr(cj_error_text(), bad[i].needle)) fail_msg("\"%s\": \"%s\" lacks \"%s\"", bad[i].text, cj_error_text(),
                                                        bad[i].needle);
  }
}

/* Each row's reference entry on a 1x1 conv small enough to work by hand
 * (n 1, c 2, k 1, 2x2x1 positions; every value a short binary fraction,
 * so the float64 sums are exact and compared with ==): forward y = 2 x0 -
 * 4 x1 + 0.25, backward data dx[c] = dy w[c] + bias[c], backward weight
 * dw[c] = sum dy x[c] and db = sum dy; and the bound each names. */
static void test_kind_refs(void **st) {
  (void)st;
  const float x[8] = {1, 2, 3, 4, 0.5f, 0.5f, 0.5f, 0.5f}, w[2] = {2, -4}, dy[4] = {1, -1, 2, 0.5f};
  for (int k = 0; k < CJ_CONV_KIND_COUNT; k++) assert_non_null(cj_conv_kind_of((convjit_conv_kind)k)->ref);
  cj_kind_ref_io io = {.sh = cj_ref_conv_shape_make(1, 2, 1, 2, 2, 1, 1, 1, 1), .up = {1, 1, 1},
                       .out_dtype = CONVJIT_DTYPE_BF16};
  float out[8], mag[8];
  const float fb[1] = {0.25f};
  io.in[CJ_TENSOR_X] = x, io.in[CJ_TENSOR_W_RAW] = w, io.in[CJ_TENSOR_BIAS] = fb;
  io.out[CJ_TENSOR_Y] = out, io.mag[CJ_TENSOR_Y] = mag;
  assert_int_equal(cj_conv_kind_of(CONVJIT_CONV_FORWARD)->ref(&io), CONVJIT_OK);
  const float y_want[4] = {0.25f, 2.25f, 4.25f, 6.25f}, y_mag[4] = {4.25f, 6.25f, 8.25f, 10.25f};
  assert_memory_equal(out, y_want, sizeof y_want);
  assert_memory_equal(mag, y_mag, sizeof y_mag);
  assert_string_equal(io.bound, "cj_ref_conv_bound");
  assert_true(io.tol.rel >= 1.0 / 256); /* a bf16 output's rounding */

  cj_kind_ref_io bd = io;
  const float cb[2] = {0.25f, -0.5f};
  memset(bd.in, 0, sizeof bd.in), memset(bd.out, 0, sizeof bd.out), memset(bd.mag, 0, sizeof bd.mag);
  bd.in[CJ_TENSOR_DY] = dy, bd.in[CJ_TENSOR_W_RAW] = w, bd.in[CJ_TENSOR_BIAS] = cb;
  bd.out[CJ_TENSOR_DX] = out, bd.mag[CJ_TENSOR_DX] = mag;
  assert_int_equal(cj_conv_kind_of(CONVJIT_CONV_BACKWARD_DATA)->ref(&bd), CONVJIT_OK);
  const float dx_want[8] = {2.25f, -1.75f, 4.25f, 1.25f, -4.5f, 3.5f, -8.5f, -2.5f};
  assert_memory_equal(out, dx_want, sizeof dx_want);

  cj_kind_ref_io wg = bd;
  memset(wg.in, 0, sizeof wg.in), memset(wg.out, 0, sizeof wg.out), memset(wg.mag, 0, sizeof wg.mag);
  wg.in[CJ_TENSOR_X] = x, wg.in[CJ_TENSOR_DY] = dy;
  wg.out[CJ_TENSOR_DW] = out, wg.mag[CJ_TENSOR_DW] = mag;
  wg.out[CJ_TENSOR_DB] = out + 2, wg.mag[CJ_TENSOR_DB] = mag + 2;
  assert_int_equal(cj_conv_kind_of(CONVJIT_CONV_BACKWARD_WEIGHT)->ref(&wg), CONVJIT_OK);
  const float dw_want[3] = {7.0f, 1.25f, 2.5f};
  assert_memory_equal(out, dw_want, sizeof dw_want);
  assert_string_equal(wg.bound, "cj_ref_conv_bwd_bound");
}

/* The epilogue's flag table (kinds.h CJ_EPI_FLAG_TABLE): each row a public
 * op whose descriptor field is an int validation takes as 0 or 1 (else
 * INVALID_ARG naming it) and whose 1 adds the op; the named references of
 * ops past the activation refuse a name they lack. */
static void test_epi_flags(void **st) {
  (void)st;
  uint32_t n = 0;
  const cj_epi_flag *f = cj_epi_flags(&n);
  assert_true(n >= 3);
  for (uint32_t i = 0; i < n; i++) {
    assert_true(cj_epi_op_public((cj_epi_op)f[i].op));
    assert_ptr_equal(cj_epi_flag_of(f[i].op), &f[i]);
    convjit_conv_desc d = good();
    d.x_dtype = d.w_dtype = CONVJIT_DTYPE_FP8_E4M3FN; /* per-channel scales are fp8's */
    cj_epi_flag_set(&d, &f[i], 2);
    char want[64];
    snprintf(want, sizeof want, "desc.%s = 2: must be 0 or 1", f[i].field);
    EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, want);
    cj_epi_flag_set(&d, &f[i], 1);
    assert_int_equal(cj_epi_flag_get(&d, &f[i]), 1);
    cj_conv_problem p;
    OK(cj_conv_desc_normalize(&d, &p));
    assert_true(cj_epi_has(&p.epi, (cj_epi_op)f[i].op));
    convjit_conv_desc back;
    cj_conv_problem_to_desc(&p, &back);
    assert_int_equal(cj_epi_flag_get(&back, &f[i]), 1);
  }
  assert_int_equal(cj_epi_flag_of(CJ_EPI_BIAS)->off, offsetof(convjit_conv_desc, has_bias));
  assert_null(cj_epi_flag_of(CJ_EPI_ACTIVATION)); /* act takes a value, not a flag */
  float v[1] = {1.0f}, m[1] = {1.0f};
  cj_ref_conv_tol t = {0, 0, 0};
  EXPECT(cj_ref_epi_named("nosuch", &t, v, m, 1), CONVJIT_ERR_INVALID_ARG, "epilogue op nosuch: no CPU reference");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_desc_kind),        cmocka_unit_test(test_plan_create_refuses_kind_limits),
      cmocka_unit_test(test_kind_rows),        cmocka_unit_test(test_execute_forward),
      cmocka_unit_test(test_other_kind_plan),  cmocka_unit_test(test_problem_text),
      cmocka_unit_test(test_families),         cmocka_unit_test(test_dtype_table),
      cmocka_unit_test(test_kind_refs),        cmocka_unit_test(test_epi_flags),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
