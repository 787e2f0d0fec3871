/* One candidate's launch sequence over a conv's output phases (contract in
 * select.h; the phases in codegen/kplan_phase.h): every conv kind with
 * kernels runs it, the forward conv as its one phase.
 *   pack: w KCTRS -> KTRSC, C zero-padded to a 16-byte chunk (once per
 *         weight; fp8 convs: E4M3FN -> FNUZ on gfx942, bf16 w quantized);
 *         backward data: one block per phase (its taps reversed, K and C
 *         swapped), at 256-byte aligned offsets
 *   fwd:  the input (x, or dy) NCDHW -> NDHWC(Cp) into the workspace
 *         (layout transpose when C == Cp, else the pack kernel used as a
 *         channel-padding transpose: per sample [C][DHW] -> [DHW][Cp] is its
 *         [K][C][TRS] -> [K][TRS][c_pad] with K = N, TRS = DHW), in the same
 *         modes for x; none on the 1x1x1 channel-GEMM path (reads the input
 *         as given) or for an NDHWC input read in place
 *         [zero the fp32 split-K workspace]
 *         one conv (implicit GEMM) per phase: its weights, and y (or dx,
 *         and a residual shaped like it) at the phase's first position
 *         [split-K finalize: alpha, scale[k], bias, bf16, NCDHW]
 * With split-K every phase accumulates into the one fp32 workspace (a
 * phase with fewer K steps than the split, unsplit, with ws_out) and the
 * finalize stores the whole output once, so a phase with no taps needs no
 * kernel; unsplit, such a phase is a kernel of the epilogue alone. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "host/select.h"

#define CJ_WS_ALIGN 256 /* workspace and packed-weight sub-buffers start 256-byte aligned */

static uint64_t cj_align(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* The NCDHW input pre-pass refused the tensor (UNSUPPORTED, in the transpose's
 * own terms: its s is D*H*W): the same refusal in the descriptor's terms,
 * for every candidate alike (the pre-pass does not depend on the tile). */
static convjit_status cj_x_prepass_terms(const cj_conv_problem *p, int part, uint64_t s, convjit_status st) {
  if (st != CONVJIT_ERR_UNSUPPORTED) return st;
  char why[400];
  snprintf(why, sizeof why, "%s", cj_error_text());
  return CJ_ERR(CONVJIT_ERR_UNSUPPORTED,
                "desc.in = %" PRId64 "x%" PRId64 "x%" PRId64 " with desc.x_layout = NCDHW: %s%" PRIu64
                " positions per channel are more than the pre-pass that makes x channels-last takes (%s); give x "
                "channels-last (desc.x_layout = NDHWC, read in place) or fewer positions per sample",
                p->d, p->h, p->w, part ? "" : "x_prev's ", s, why);
}

static cj_bind cj_f32_bind(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return (cj_bind){CJ_BIND_CONST_F32, u};
}

/* Phase i's conv plan for candidate o. Phase 0 (the largest, and the only
 * one of a plain conv) takes o as it is: a split the heuristic proposed
 * that its K loop cannot take is no candidate (UNSUPPORTED, skipped
 * quietly), a forced one stays the caller's INVALID_ARG. The others follow
 * it: split to their own K steps (unsplit but still accumulating into the
 * workspace, ws_out, when they have one), no split for a phase with no
 * taps (the finalize covers it). */
static convjit_status cj_phase_plan(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep, uint32_t i,
                                    const cj_conv_opts *o, const cj_conv_opts *forced, cj_kplan *kp) {
  const cj_conv_phase *ph = &prep->ph.ph[i];
  cj_conv_opts co = *o;
  if (p->has_x_prev) co.splitk = 1; /* split-K's atomics would make the chunked result depend on the chunking */
  if (ph->fill) co.splitk = 1;
  convjit_status st = cj_kplan_conv_init(kp, t->arch, &ph->g, &co, &p->epi);
  const uint32_t kt = kp->u.conv.k_tiles;
  if (st == CONVJIT_ERR_INVALID_ARG && co.splitk > 1 && kt && co.splitk > kt) {
    if (i == 0 && forced && !forced->splitk)
      return CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "conv.splitk = %u (a fallback): the K loop has %u steps to split",
                    co.splitk, kt);
    if (i > 0) { /* the sequence splits: this phase to its own steps */
      co.splitk = kt >= 2 ? kt : 1;
      co.ws_out = kt < 2;
      st = cj_kplan_conv_init(kp, t->arch, &ph->g, &co, &p->epi);
    }
  }
  return st;
}

/* The pack list: the plain weight pack (one block every phase reads), or
 * backward data's one block per phase; the packed bytes and each phase's
 * offset into them. */
static convjit_status cj_phase_pack(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                                    const cj_kplan *plans, uint64_t *w_off, cj_seq *out) {
  const cj_conv_fmt *fm = &prep->fm;
  const uint32_t w_in = cj_dtype_bytes(p->w_dtype);
  const cj_role_bind pack_binds[] = {
      {CJ_ARG_SRC, {CJ_BIND_W_RAW, 0}}, {CJ_ARG_DST, {CJ_BIND_W_PACKED, 0}}, {CJ_ARG_QSCALE, cj_f32_bind(fm->w_q)}};
  cj_kplan kp;
  if (!prep->bwd) {
    const cj_conv_geom *g = &plans[0].u.conv.g;
    CJ_TRY(cj_kplan_wpack_prep_init(&kp, t->arch, w_in, fm->w_mode, g->k_all, g->c, g->taps, g->cp, (uint32_t)g->crs));
    CJ_TRY(cj_seq_add_bound(&out->pack, &kp, pack_binds, 3));
    out->packed_weight_bytes = plans[0].u.conv.w_bytes;
    memset(w_off, 0, prep->ph.n * sizeof *w_off);
    return CONVJIT_OK;
  }
  uint64_t off = 0;
  for (uint32_t i = 0; i < prep->ph.nreal; i++) {
    CJ_TRY(cj_conv_phase_pack_init(&kp, t->arch, w_in, fm->w_mode, &prep->ph.ph[i], &plans[i].u.conv.g));
    cj_role_bind b[3];
    memcpy(b, pack_binds, sizeof b);
    b[1].bind.value = off;
    CJ_TRY(cj_seq_add_bound(&out->pack, &kp, b, 3));
    w_off[i] = off;
    off = cj_align(off + plans[i].u.conv.w_bytes, CJ_WS_ALIGN);
  }
  out->packed_weight_bytes = off;
  return CONVJIT_OK;
}

/* The input pre-pass into the workspace at offset 0 (prep's input, x_prev
 * first), unless every phase reads the input as given. */
static convjit_status cj_phase_input(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                                     const cj_conv_plan *c, cj_seq *out) {
  const cj_conv_fmt *fm = &prep->fm;
  const cj_conv_geom g = c->g;
  const uint32_t x_in = cj_dtype_bytes(prep->bwd ? p->y_dtype : p->x_dtype);
  cj_kplan kp;
  if (prep->x_copy) {
    /* NDHWC(C) -> NDHWC(Cp): the pack kernel with K = N*D*H*W pixels of C
     * channels and one tap (same modes) */
    uint64_t pix = (uint64_t)g.n * g.dhw, cpg = (uint64_t)g.cp * g.groups;
    CJ_CHECK(pix <= UINT32_MAX, CONVJIT_ERR_UNSUPPORTED,
             "conv with NDHWC %s copied to the workspace: N*D*H*W = %" PRIu64 " must be < 2^32",
             prep->bwd ? "dy" : "x", pix);
    CJ_TRY(cj_kplan_wpack_prep_init(&kp, t->arch, x_in, fm->x_mode, (uint32_t)pix, g.c * g.groups, 1, (uint32_t)cpg,
                                    (uint32_t)cpg));
    const cj_role_bind copy_binds[] = {{CJ_ARG_SRC, {prep->in_role, 0}},
                                       {CJ_ARG_DST, {CJ_BIND_WORKSPACE, 0}},
                                       {CJ_ARG_QSCALE, cj_f32_bind(fm->x_q)}};
    return cj_seq_add_bound(&out->fwd, &kp, copy_binds, 3);
  }
  /* NCDHW input (and x_prev first, to the frames before it: same pre-pass) -> NDHWC(Cp) */
  const uint64_t hw = (uint64_t)g.h * g.w, frames_in = prep->bwd ? (uint64_t)g.d : (uint64_t)p->d;
  for (int part = p->has_x_prev ? 0 : 1; part < 2; part++) {
    const uint64_t frames = part ? frames_in : prep->prev_frames, s = frames * hw;
    const uint64_t dst = part ? prep->prev_frames * hw * g.cp * g.groups * c->elem_bytes : 0;
    if (g.c == g.cp) { /* grouped convs always: C/groups is a whole number of chunks */
      CJ_TRY(cj_x_prepass_terms(p, part, s, cj_kplan_transpose_prep_init(&kp, t->arch, x_in, fm->x_mode, g.n,
                                                                         g.c * g.groups, s)));
    } else {
      CJ_CHECK(s * g.cp <= UINT32_MAX, CONVJIT_ERR_UNSUPPORTED,
               "conv with C = %u (not a multiple of %u) and D*H*W = %" PRIu64 ": the channel-padding transpose "
               "addresses at most 2^32 elements per sample", g.c, c->chunk_elems, s);
      CJ_TRY(cj_kplan_wpack_prep_init(&kp, t->arch, x_in, fm->x_mode, g.n, g.c, (uint32_t)s, g.cp,
                                      (uint32_t)(s * g.cp)));
    }
    const cj_role_bind layout_binds[] = {{CJ_ARG_SRC, {part ? prep->in_role : CJ_BIND_X_PREV, 0}},
                                         {CJ_ARG_DST, {CJ_BIND_WORKSPACE, dst}},
                                         {CJ_ARG_QSCALE, cj_f32_bind(fm->x_q)}};
    CJ_TRY(cj_seq_add_bound(&out->fwd, &kp, layout_binds, 3));
  }
  return CONVJIT_OK;
}

static void cj_phase_summary(const cj_conv_problem *p, const cj_conv_prep *prep, const cj_conv_plan *c, int x_given,
                             uint32_t nconv, cj_seq *out) {
  static const char *const prep_name[] = {"", " fn->fnuz", " quantize"};
  const cj_conv_geom *g = &c->g;
  char grp[32] = "", ph[48] = "";
  if (g->groups > 1) snprintf(grp, sizeof grp, " groups %u", g->groups);
  if (prep->ph.n > 1)
    snprintf(ph, sizeof ph, " x %u phases%s", nconv, prep->ph.n > prep->ph.nreal ? " (some fill)" : "");
  snprintf(out->summary, sizeof out->summary, "%s%s%s + conv %s%s%s%s %ux%ux%u w%ux%u s%u%s%s%s",
           prep->bwd ? "dy: " : "",
           c->channel_gemm ? "no transpose (channel GEMM)"
           : prep->x_in_place
               ? (g->c_mask ? "no transpose (NDHWC in place, channel mask)" : "no transpose (NDHWC in place)")
           : prep->x_copy   ? "NDHWC pad-copy"
           : g->c == g->cp ? "transpose"
                            : "pad-transpose",
           x_given ? "" : prep_name[prep->fm.x_mode], cj_dtype_name((convjit_dtype)g->dtype), grp,
           g->y_ndhwc ? " y NDHWC" : "", ph, c->tile_m, c->tile_n, c->tile_k, c->wave_m, c->wave_n, c->stages,
           c->splitk > 1 ? " splitk" : "", cj_epi_has(&p->epi, CJ_EPI_SCALE) ? " scale[k]" : "",
           c->atomic ? " + finalize" : "");
}

/* One candidate's launch sequence, each phase's conv plan initialized here
 * once; a plan that prefetches operands by default (kplan_conv.c decides)
 * asks for its no-prefetch twin next: the second operand set is what a
 * register-tight kernel spills first, and the twin keeps the tile. */
convjit_status cj_conv_phased_sequence(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                                       const cj_conv_opts *o, const cj_conv_opts *forced, cj_seq *out,
                                       cj_conv_opts *follow, int *has_follow) {
  CJ_CHECK(p && t && t->arch && prep && o && out && prep->ph.n >= 1 && prep->ph.n <= CJ_PHASE_MAX,
           CONVJIT_ERR_INVALID_ARG, "cj_conv_phased_sequence: NULL argument or no phase");
  memset(out, 0, sizeof *out);
  if (has_follow) *has_follow = 0;
  cj_kplan *plans = calloc(prep->ph.n, sizeof *plans); /* up to 32 plans of ~1 KiB: off the stack */
  CJ_ALLOC_CHECK(plans);
  convjit_status st = CONVJIT_OK;
  const int split = o->splitk > 1 && !p->has_x_prev;
  uint32_t nconv = 0;
  for (uint32_t i = 0; i < prep->ph.n && st == CONVJIT_OK; i++)
    if (!(split && prep->ph.ph[i].fill)) st = cj_phase_plan(p, t, prep, i, o, forced, &plans[i]), nconv++;
  if (st != CONVJIT_OK) goto done;
  const cj_conv_plan *c = &plans[0].u.conv; /* the largest phase: the input side and the finalize */
  if (has_follow && follow && !o->prefetch && c->prefetch) {
    *follow = *o;
    follow->prefetch = 1;
    *has_follow = 1;
  }
  uint64_t w_off[CJ_PHASE_MAX];
  if ((st = cj_phase_pack(p, t, prep, plans, w_off, out)) != CONVJIT_OK) goto done;

  /* ---- fwd ---- */
  /* A phase on the channel-GEMM path reads the caller's NCDHW input, an
   * in-place NDHWC input is read as given: no pre-pass, no workspace, unless
   * another phase needs it. */
  int prepass = 0;
  uint64_t x_bytes = 0;
  for (uint32_t i = 0; i < prep->ph.nreal; i++)
    if (!plans[i].u.conv.channel_gemm && !prep->x_in_place) prepass = 1, x_bytes = plans[i].u.conv.x_bytes;
  if (p->has_x_prev && (!prepass || prep->x_copy)) {
    st = CJ_ERR(CONVJIT_ERR_UNSUPPORTED,
                "desc.has_x_prev = 1 with %s: causal streaming places x_prev before x through the NCDHW transpose "
                "pre-pass; give NCDHW x",
                c->channel_gemm ? "the 1x1x1 channel-GEMM path" : "desc.x_layout = NDHWC");
    goto done;
  }
  if (prepass && (st = cj_phase_input(p, t, prep, c, out)) != CONVJIT_OK) goto done;
  const uint64_t ws_off = prepass ? cj_align(x_bytes, CJ_WS_ALIGN) : 0;
  if (c->atomic &&
      (st = cj_seq_add_memset(&out->fwd, (cj_bind){CJ_BIND_WORKSPACE, ws_off}, c->ws_bytes)) != CONVJIT_OK)
    goto done;
  for (uint32_t i = 0; i < prep->ph.n; i++) {
    if (split && prep->ph.ph[i].fill) continue;
    const cj_conv_plan *ci = &plans[i].u.conv;
    /* the phase's first output element: y's (and z's) element type, or fp32 in the workspace */
    const uint64_t yo = prep->ph.ph[i].y_off, yb = ci->atomic ? 4 : cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(&ci->epi));
    const int given = ci->channel_gemm || prep->x_in_place;
    /* Every role a conv-family kernel may take, bound once for all of them:
     * the phase's first output position is an offset of y, z and the
     * fp32 workspace (kplan_phase.h) */
    const cj_role_bind conv_binds[] = {
        {CJ_ARG_X, given ? (cj_bind){prep->in_role, 0} : (cj_bind){CJ_BIND_WORKSPACE, 0}},
        {CJ_ARG_W, {CJ_BIND_W_PACKED, i < prep->ph.nreal ? w_off[i] : 0}},
        {CJ_ARG_BIAS, {CJ_BIND_BIAS, 0}},
        {CJ_ARG_Y, {prep->out_role, yo * yb}},
        {CJ_ARG_WORKSPACE, {CJ_BIND_WORKSPACE, ws_off + yo * 4}},
        {CJ_ARG_ALPHA, cj_f32_bind(prep->fm.alpha)},
        {CJ_ARG_SCALE, {CJ_BIND_SCALE, 0}},
        {CJ_ARG_RESIDUAL, {CJ_BIND_RESIDUAL, yo * yb}},
    };
    if ((st = cj_seq_add_bound(&out->fwd, &plans[i], conv_binds, sizeof conv_binds / sizeof conv_binds[0])) !=
        CONVJIT_OK)
      goto done;
  }
  if (c->atomic) {
    cj_kplan kp;
    const cj_role_bind fin_binds[] = {
        {CJ_ARG_BIAS, {CJ_BIND_BIAS, 0}},       {CJ_ARG_Y, {prep->out_role, 0}},
        {CJ_ARG_WORKSPACE, {CJ_BIND_WORKSPACE, ws_off}}, {CJ_ARG_ALPHA, cj_f32_bind(prep->fm.alpha)},
        {CJ_ARG_SCALE, {CJ_BIND_SCALE, 0}},     {CJ_ARG_RESIDUAL, {CJ_BIND_RESIDUAL, 0}},
    };
    if ((st = cj_kplan_finalize_init(&kp, t->arch, c, &p->epi)) != CONVJIT_OK ||
        (st = cj_seq_add_bound(&out->fwd, &kp, fin_binds, sizeof fin_binds / sizeof fin_binds[0])) != CONVJIT_OK)
      goto done;
    out->workspace_bytes = ws_off + c->ws_bytes;
  } else {
    out->workspace_bytes = prepass ? x_bytes : 0;
  }
  cj_phase_summary(p, prep, c, !prepass, nconv, out);
done:
  free(plans);
  return st;
}
