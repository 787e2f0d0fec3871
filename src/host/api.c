/* The public API: entry points, validation, thread-local error text.
 *
 * Every entry point checks its arguments and returns a status; the error
 * text names the field and the value ("desc.c = 0: must be > 0"). Plans
 * are resolved into launch-ready steps at creation (plan.h), so the launch
 * functions only resolve binds, pack kernargs on the stack and enqueue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "host/plan.h"
#include "host/tune_db.h"


/* ---- context --------------------------------------------------------------- */

/* Bytes of convjit_context_options in version 0.1: a caller's struct must
 * hold at least these; a larger struct comes from a newer header. */
#define OPTS_V1_SIZE (offsetof(convjit_context_options, log_level) + sizeof(convjit_log_level))
#define INFO_V1_SIZE (offsetof(convjit_context_info, disk_misses) + sizeof(uint64_t))


static convjit_status open_device(const convjit_context_options *o, cj_device **dev) {
  const char *emu_arch = o->arch ? o->arch : "gfx950";
  switch (o->device) {
  case CONVJIT_DEVICE_EMU: return cj_device_emu_create(emu_arch, dev);
  case CONVJIT_DEVICE_HIP: return cj_device_hip_create(o->device_index, dev);
  case CONVJIT_DEVICE_AUTO: {
    convjit_status st = cj_device_hip_create(o->device_index, dev);
    if (st == CONVJIT_OK) return st;
    char why[600];
    snprintf(why, sizeof why, "%s", cj_error_text());
    return CJ_ERR(CONVJIT_ERR_DEVICE,
                  "options.device = auto: no usable HIP device (%s); set device = CONVJIT_DEVICE_EMU to use the "
                  "CPU emulator",
                  why);
  }
  }
  return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "options.device = %d: unknown", (int)o->device);
}

CONVJIT_API convjit_status convjit_context_create(const convjit_context_options *opts, convjit_context **out) {
  cj_error_clear();
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "ctx = NULL: need somewhere to store the context");
  *out = NULL;
  convjit_context_options o = convjit_context_options_default();
  if (opts) {
    CJ_TRY(cj_check_struct_size(opts->struct_size, OPTS_V1_SIZE, sizeof o, "options"));
    CJ_CHECK(opts->header_version / 10000 == CONVJIT_VERSION_MAJOR, CONVJIT_ERR_VERSION,
             "options.header_version = %d: header major %d, library %s (major %d)", opts->header_version,
             opts->header_version / 10000, CJ_VERSION_STRING, CONVJIT_VERSION_MAJOR);
    memcpy(&o, opts, opts->struct_size);
  }
  CJ_CHECK(o.device >= CONVJIT_DEVICE_AUTO && o.device <= CONVJIT_DEVICE_EMU, CONVJIT_ERR_INVALID_ARG,
           "options.device = %d: must be auto (0), hip (1) or emu (2)", (int)o.device);
  CJ_CHECK(o.device_index >= -1, CONVJIT_ERR_INVALID_ARG, "options.device_index = %d: must be >= -1",
           o.device_index);
  CJ_CHECK(o.log_level >= CONVJIT_LOG_FROM_ENV && o.log_level <= CONVJIT_LOG_DEBUG, CONVJIT_ERR_INVALID_ARG,
           "options.log_level = %d: must be 0..4", (int)o.log_level);
  CJ_CHECK(o.code_object_version == 0 || o.code_object_version == 5 || o.code_object_version == 6,
           CONVJIT_ERR_INVALID_ARG, "options.code_object_version = %d: must be 5 or 6 (0 = default, %u)",
           o.code_object_version, CJ_CODE_OBJECT_VERSION_DEFAULT);
  const cj_arch *want = NULL;
  if (o.arch) {
    want = cj_arch_from_name(o.arch);
    CJ_CHECK(want, CONVJIT_ERR_INVALID_ARG, "options.arch = \"%.32s\": supported are \"gfx942\" and \"gfx950\"",
             o.arch);
  }
  if (o.log_level != CONVJIT_LOG_FROM_ENV) cj_log_set_level((cj_log_level)(o.log_level - 1));

  cj_device *dev = NULL;
  CJ_TRY(open_device(&o, &dev));
  convjit_status st = CONVJIT_OK;
  const cj_arch *arch = cj_arch_from_name(dev->arch);
  if (!arch) {
    st = CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "device arch \"%s\": convjit builds for gfx942 and gfx950",
                dev->arch[0] ? dev->arch : "(unknown)");
    goto fail;
  }
  if (want && want != arch) {
    st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "options.arch = \"%s\" but the %s device is %s", want->name,
                dev->ops->name, arch->name);
    goto fail;
  }
  convjit_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) {
    st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (context)");
    goto fail;
  }
  st = cj_ctx_register(ctx);
  if (st != CONVJIT_OK) {
    free(ctx);
    goto fail;
  }
  ctx->dev = dev;
  ctx->arch = arch;
  ctx->cu_count = dev->cu_count > 0 ? dev->cu_count : (int)arch->cu_count_default;
  ctx->code_object_version =
      o.code_object_version ? (uint32_t)o.code_object_version : CJ_CODE_OBJECT_VERSION_DEFAULT;
  snprintf(ctx->device_name, sizeof ctx->device_name, "%s", dev->ops->name);
  cj_cache_opts co = {.dir = o.cache_dir, .disable_disk = o.disable_disk_cache};
  st = cj_cache_create(dev, &co, &ctx->cache);
  if (st != CONVJIT_OK) {
    cj_ctx_release(ctx);
    free(ctx);
    goto fail;
  }
  cj_tune_db_open(ctx, co.dir, co.disable_disk);
  cj_plan_memo_init(&ctx->memo);
  cj_log(CJ_LOG_INFO, "context: device %s, arch %s, %d CUs%s, code object v%u", ctx->device_name, arch->name,
         ctx->cu_count, dev->is_emulated ? " (emulated)" : "", ctx->code_object_version);
  *out = ctx;
  return CONVJIT_OK;
fail:
  cj_device_destroy(dev);
  return st;
}

CONVJIT_API void convjit_context_destroy(convjit_context *ctx) {
  if (!ctx) return;
  cj_ctx_release(ctx); /* its plans and events now see it gone */
  cj_plan_memo_free(&ctx->memo); /* copies only: the plans handed out own themselves */
  cj_tune_db_close(ctx);
  cj_cache_destroy(ctx->cache);
  cj_device_destroy(ctx->dev);
  free(ctx->emu_wg);
  free(ctx);
}

CONVJIT_API convjit_status convjit_context_get_info(const convjit_context *ctx, convjit_context_info *info) {
  cj_error_clear();
  CJ_CHECK(ctx, CONVJIT_ERR_INVALID_ARG, "ctx = NULL");
  CJ_CHECK(info, CONVJIT_ERR_INVALID_ARG, "info = NULL");
  CJ_TRY(cj_check_struct_size(info->struct_size, INFO_V1_SIZE, sizeof *info, "info"));
  convjit_context_info f = {.struct_size = info->struct_size}; /* copied up to the caller's size */
  snprintf(f.device, sizeof f.device, "%s", ctx->device_name);
  snprintf(f.device_model, sizeof f.device_model, "%s", ctx->dev->model);
  snprintf(f.arch, sizeof f.arch, "%s", ctx->arch->name);
  f.cu_count = ctx->cu_count;
  f.emulated = ctx->dev->is_emulated;
  const char *path = cj_cache_disk_path(ctx->cache);
  f.disk_cache = path[0] != 0;
  snprintf(f.cache_path, sizeof f.cache_path, "%s", path);
  cj_cache_stats s;
  cj_cache_get_stats(ctx->cache, &s);
  f.kernels_compiled = s.compiled;
  f.memory_hits = s.memory_hits;
  f.disk_hits = s.disk_hits;
  f.disk_misses = s.disk_misses;
  f.plan_memo_hits = cj_plan_memo_hits(&ctx->memo);
  memcpy(info, &f, f.struct_size);
  return CONVJIT_OK;
}

/* ---- plans ------------------------------------------------------------------- */

/* The plan's binds beside the kernel's argument layout (cj_loaded.arg,
 * fitted to the plan by the cache). */
convjit_status cj_plan_step_bind_args(const cj_kplan *kp, const cj_bind *bind, const cj_loaded *k, cj_plan_step *out) {
  CJ_CHECK(k->nargs == kp->nargs, CONVJIT_ERR_INTERNAL, "kernel %s: loaded with %u explicit arguments, plan %u",
           kp->name, k->nargs, kp->nargs);
  for (uint32_t j = 0; j < kp->nargs; j++) {
    CJ_CHECK(bind[j].kind != CJ_BIND_NONE, CONVJIT_ERR_INTERNAL, "kernel %s: argument %u (%s) has no binding",
             kp->name, j, kp->args[j].name);
    out->bind[j] = bind[j];
  }
  out->nargs = kp->nargs;
  return CONVJIT_OK;
}

/* Step of the selection -> launch-ready step: kernel through the cache (in
 * the context's code object version, which the plan's key then holds),
 * fitted to its plan there (a disk entry that does not fit is rebuilt by
 * the cache). pre: the cache's answer for this step already fetched by
 * plan_prefetch, else NULL. */
static convjit_status resolve_step(convjit_context *ctx, cj_step *s, cj_plan_step *out, const cj_cache_req *pre) {
  memset(out, 0, sizeof *out);
  out->kind = s->kind;
  if (s->kind == CJ_STEP_MEMSET) {
    out->dst = s->dst;
    out->memset_bytes = s->memset_bytes;
    return CONVJIT_OK;
  }
  CJ_CHECK(s->kind == CJ_STEP_KERNEL, CONVJIT_ERR_INTERNAL, "launch step kind %d", (int)s->kind);
  s->plan.code_object_version = ctx->code_object_version;
  const cj_kplan *kp = &s->plan;
  for (int i = 0; i < 3; i++) {
    CJ_CHECK(kp->grid[i] >= 1 && kp->grid[i] <= UINT32_MAX, CONVJIT_ERR_UNSUPPORTED,
             "kernel %s: grid[%d] = %llu work-groups exceeds the launch limit", kp->name, i,
             (unsigned long long)kp->grid[i]);
    out->grid[i] = (uint32_t)kp->grid[i];
    out->block[i] = kp->block[i];
  }
  if (!pre) {
    CJ_TRY(cj_cache_get(ctx->cache, kp, &out->k, &out->source));
  } else if (pre->st != CONVJIT_OK) {
    return cj_error_restore(pre->st, pre->err);
  } else {
    out->k = pre->k;
    out->source = pre->built && !cj_cache_claim(ctx->cache, pre->k) ? CJ_SRC_MEMORY : pre->src;
  }
  out->compile_ms = out->source == CJ_SRC_COMPILED ? out->k->compile_ms : 0.0;
  snprintf(out->name, sizeof out->name, "%s", kp->name);
  CJ_TRY(cj_plan_step_bind_args(kp, s->bind, out->k, out));
  cj_log(CJ_LOG_INFO, "kernel %s: grid %ux%ux%u block %ux%ux%u, %s", kp->name, out->grid[0], out->grid[1],
         out->grid[2], out->block[0], out->block[1], out->block[2],
         out->source == CJ_SRC_COMPILED ? "compiled" : out->source == CJ_SRC_DISK ? "disk cache hit" : "memory hit");
  return CONVJIT_OK;
}

/* The kernels of a plan's steps, fetched from the cache at once so that
 * its misses compile concurrently (cj_cache_get_many). pre[list][step]
 * points at a step's answer, NULL for steps left to resolve_step alone:
 * memsets, grids past the launch limit (refused there before any build),
 * and plans with a single kernel (nothing to overlap). Each answer is the
 * one cj_cache_get would give, and plan_finish consumes them in step order,
 * so statuses, texts and sources are those of the serial walk; only a
 * failing plan differs: its later kernels are built (and cached) too. */
static void plan_prefetch(convjit_context *ctx, convjit_plan *p, cj_cache_req *req,
                          const cj_cache_req *pre[2][CJ_SEQ_MAX_STEPS]) {
  cj_step_list *lists[2] = {&p->seq.pack, &p->seq.fwd};
  uint32_t n = 0;
  memset(pre, 0, 2 * sizeof pre[0]);
  for (int l = 0; l < 2; l++)
    for (uint32_t i = 0; i < lists[l]->nsteps; i++) {
      cj_step *s = &lists[l]->step[i];
      int fits = s->kind == CJ_STEP_KERNEL;
      for (int d = 0; d < 3 && fits; d++) fits = s->plan.grid[d] >= 1 && s->plan.grid[d] <= UINT32_MAX;
      if (!fits || n == CJ_CACHE_BATCH_MAX) continue;
      s->plan.code_object_version = ctx->code_object_version;
      req[n].p = &s->plan;
      pre[l][i] = &req[n++];
    }
  if (n < 2) {
    memset(pre, 0, 2 * sizeof pre[0]);
    return;
  }
  cj_cache_get_many(ctx->cache, req, n);
}

static convjit_status plan_finish(convjit_context *ctx, convjit_plan *p) {
  CJ_CHECK(p->seq.fwd.nsteps > 0, CONVJIT_ERR_INTERNAL, "selection produced an empty launch sequence");
  cj_cache_req req[CJ_CACHE_BATCH_MAX];
  const cj_cache_req *pre[2][CJ_SEQ_MAX_STEPS];
  plan_prefetch(ctx, p, req, pre);
  for (uint32_t i = 0; i < p->seq.pack.nsteps; i++)
    CJ_TRY(resolve_step(ctx, &p->seq.pack.step[i], &p->pack[i], pre[0][i]));
  p->npack = p->seq.pack.nsteps;
  for (uint32_t i = 0; i < p->seq.fwd.nsteps; i++) {
    CJ_TRY(resolve_step(ctx, &p->seq.fwd.step[i], &p->fwd[i], pre[1][i]));
    for (uint32_t a = 0; a < p->fwd[i].nargs; a++)
      if (p->fwd[i].bind[a].kind == CJ_BIND_W_PACKED) p->fwd_uses_w_packed = 1;
  }
  p->nfwd = p->seq.fwd.nsteps;
  cj_log(CJ_LOG_INFO, "plan: %s (workspace %llu bytes, packed weight %llu bytes)", p->seq.summary,
         (unsigned long long)p->seq.workspace_bytes, (unsigned long long)p->seq.packed_weight_bytes);
  return CONVJIT_OK;
}

/* Clears what a failed attempt left in p's steps. */
static void plan_steps_reset(convjit_plan *p) {
  memset(p->pack, 0, sizeof p->pack);
  memset(p->fwd, 0, sizeof p->fwd);
  p->npack = p->nfwd = 0;
  p->fwd_uses_w_packed = 0;
}

CONVJIT_API convjit_status convjit_plan_create_conv(convjit_context *ctx, const convjit_conv_desc *desc,
                                                    convjit_plan **out) {
  return cj_plan_create_conv_opts(ctx, desc, NULL, out);
}

/* Plan creation walks the selection's candidates (select.h): an illegal one
 * (UNSUPPORTED from its plan init) or one whose kernel fails the resource
 * gate (RESOURCE: spills, scratch, LDS) is logged at debug and the next is
 * tried (one info line counts them when a later one is taken), so a valid
 * shape only fails when no candidate fits — with UNSUPPORTED and the
 * reasons, as the header promises: a refusal in the descriptor's terms
 * ("desc.<field> ...": a limit of the descriptor, such as the x pre-pass's,
 * not of a tile) alone when there is one. Other errors end the walk. A
 * rejection is expected, so the candidates' errors are quiet (cj.h): a
 * plan that succeeds logs no error. */
static convjit_status plan_conv_select(convjit_context *ctx, const cj_conv_opts *forced, convjit_plan *p) {
  cj_conv_geom g;
  CJ_TRY(cj_conv_problem_geom(&p->prob, &g));
  CJ_TRY(cj_conv_formats_check(&p->prob, ctx->arch)); /* dtype and scale errors once, not once per candidate */
  const cj_target t = {ctx->arch, (uint32_t)ctx->cu_count};
  cj_conv_opts list[CJ_CONV_MAX_CANDIDATES];
  uint32_t n = cj_conv_candidates(&t, &g, forced, list, CJ_CONV_MAX_CANDIDATES);
  char why[512] = "", desc_why[400] = "";
  size_t used = 0;
  int resource = 0;
  for (uint32_t i = 0; i < n; i++) {
    const cj_conv_opts *o = &list[i];
    cj_error_quiet_begin();
    convjit_status st = cj_select_conv_with(&p->prob, &t, o, &p->seq);
    if (st == CONVJIT_OK) st = plan_finish(ctx, p);
    cj_error_quiet_end();
    if (st == CONVJIT_OK) {
      if (i > 0) cj_log(CJ_LOG_INFO, "plan: candidate %u of %u taken, %u rejected (%s)", i + 1, n, i, why);
      return CONVJIT_OK;
    }
    if (st != CONVJIT_ERR_UNSUPPORTED && st != CONVJIT_ERR_RESOURCE) {
      cj_error_log_escaped(st);
      return st;
    }
    resource |= st == CONVJIT_ERR_RESOURCE;
    if (!desc_why[0] && !strncmp(cj_error_text(), "desc.", 5))
      snprintf(desc_why, sizeof desc_why, "%s", cj_error_text());
    cj_log(CJ_LOG_DEBUG, "plan: candidate %u (tile %ux%u waves %ux%u stages %u splitk %u) rejected: %s", i + 1,
           o->tile_m, o->tile_n, o->wave_m, o->wave_n, o->stages, o->splitk, cj_error_text());
    if (used + 1 < sizeof why) {
      int w = snprintf(why + used, sizeof why - used, "%s%ux%u s%u k%u%s: %s", used ? "; " : "", o->tile_m, o->tile_n,
                       o->stages, o->splitk, o->prefetch == 1 ? " no-prefetch" : "", cj_error_text());
      if (w > 0) used += (size_t)w < sizeof why - used ? (size_t)w : sizeof why - used - 1;
    }
    plan_steps_reset(p);
  }
  if (desc_why[0] && !resource) return CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "%s", desc_why);
  return CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "conv: none of %u candidate kernels %s: %s", n,
                resource ? "fits (resource gate or legality)" : "is legal", why);
}

convjit_status cj_plan_build_with(convjit_context *ctx, const cj_conv_opts *o, convjit_plan *p) {
  const cj_target t = {ctx->arch, (uint32_t)ctx->cu_count};
  plan_steps_reset(p);
  convjit_status st = cj_select_conv_with(&p->prob, &t, o, &p->seq);
  if (st == CONVJIT_OK) st = plan_finish(ctx, p);
  if (st != CONVJIT_OK) plan_steps_reset(p);
  p->has_bias = p->prob.has_bias;
  return st;
}

/* The tuning table's winner for p's problem (tune_db.h), when there is one
 * and it still builds: 1 (p holds it), else 0 and p untouched — an illegal
 * row or one whose kernel fails the resource gate is logged and the
 * heuristic plans instead. Other failures (a device error) are the
 * heuristic's to meet again. */
static int plan_conv_from_db(convjit_context *ctx, convjit_plan *p) {
  cj_tune_row row;
  if (!cj_tune_db_lookup(ctx, &p->prob, &row)) return 0;
  char knobs[160];
  cj_tune_knobs_text(&row.knobs, knobs, sizeof knobs);
  convjit_status st = cj_plan_build_with(ctx, &row.knobs, p);
  if (st == CONVJIT_OK) {
    p->tuned = 1;
    cj_log(CJ_LOG_INFO, "plan: tuning table winner (%s)%s", knobs, row.modelled ? " [MODELLED row]" : "");
    return 1;
  }
  cj_log(CJ_LOG_ERROR, "plan: tuning table row (%s) %s (%s): using the heuristic", knobs,
         st == CONVJIT_ERR_UNSUPPORTED || st == CONVJIT_ERR_INVALID_ARG ? "is illegal now"
         : st == CONVJIT_ERR_RESOURCE                                    ? "fails the resource gate"
                                                                         : "does not build",
         cj_error_text());
  cj_error_clear();
  return 0;
}

convjit_status cj_plan_create_conv_opts(convjit_context *ctx, const convjit_conv_desc *desc, const cj_conv_opts *o,
                                        convjit_plan **out) {
  cj_error_clear();
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "plan = NULL: need somewhere to store the plan");
  *out = NULL;
  CJ_CHECK(ctx, CONVJIT_ERR_INVALID_ARG, "ctx = NULL");
  /* The diagnostic pure-GEMM A loader computes a GEMM of x read as a plain
   * matrix, not the conv: no plan may carry it (docs/kernels.md). */
  CJ_CHECK(!o || !o->pure_gemm_a, CONVJIT_ERR_INVALID_ARG,
           "forced pure_gemm_a = 1: a diagnostic kernel (A read as a plain matrix, not the conv); plans refuse it");
  convjit_plan *p = calloc(1, sizeof *p);
  CJ_ALLOC_CHECK(p);
  p->ctx = ctx;
  p->ctx_ref = ctx->ref;
  p->op = CJ_PLAN_CONV;
  convjit_status st = cj_conv_desc_normalize(desc, &p->prob);
  /* The public path asks the context's memo first (plan_memo.c): a
   * repeated descriptor gets a copy of the plan built the first time. */
  if (st == CONVJIT_OK && !o && cj_plan_memo_get(&ctx->memo, &p->prob, p)) {
    cj_log(CJ_LOG_DEBUG, "plan: memo hit: %s", p->seq.summary);
    *out = p;
    return CONVJIT_OK;
  }
  /* Nothing forced (no options, or all 0): the tuning table's winner first. */
  static const cj_conv_opts automatic;
  int from_table = !o || !memcmp(o, &automatic, sizeof automatic);
  if (st == CONVJIT_OK && !(from_table && plan_conv_from_db(ctx, p))) st = plan_conv_select(ctx, o, p);
  if (st != CONVJIT_OK) {
    free(p);
    return st;
  }
  p->has_bias = p->prob.has_bias;
  if (!o) cj_plan_memo_put(&ctx->memo, p);
  *out = p;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_create_transpose(convjit_context *ctx, const convjit_transpose_desc *d,
                                                         convjit_plan **out) {
  cj_error_clear();
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "plan = NULL: need somewhere to store the plan");
  *out = NULL;
  CJ_CHECK(ctx, CONVJIT_ERR_INVALID_ARG, "ctx = NULL");
  CJ_CHECK(d, CONVJIT_ERR_INVALID_ARG, "desc = NULL");
  CJ_TRY(cj_transpose_desc_check(d));
  convjit_plan *p = calloc(1, sizeof *p);
  CJ_ALLOC_CHECK(p);
  p->ctx = ctx;
  p->ctx_ref = ctx->ref;
  p->op = CJ_PLAN_TRANSPOSE;
  convjit_status st = cj_select_transpose(d->n, d->c, d->s, d->dtype, ctx->arch, &p->seq);
  if (st == CONVJIT_OK) st = plan_finish(ctx, p);
  if (st != CONVJIT_OK) {
    free(p);
    return st;
  }
  *out = p;
  return CONVJIT_OK;
}

CONVJIT_API void convjit_plan_destroy(convjit_plan *plan) { free(plan); }

CONVJIT_API convjit_status convjit_plan_workspace_size(const convjit_plan *p, size_t *bytes) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_CHECK(bytes, CONVJIT_ERR_INVALID_ARG, "bytes = NULL");
  *bytes = (size_t)p->seq.workspace_bytes;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_packed_weight_size(const convjit_plan *p, size_t *bytes) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_CHECK(bytes, CONVJIT_ERR_INVALID_ARG, "bytes = NULL");
  *bytes = (size_t)p->seq.packed_weight_bytes;
  return CONVJIT_OK;
}

/* ---- launch ---------------------------------------------------------------- */

/* Pointer alignment (docs/api.md "Alignment"): every kernel access is
 * aligned to its own width, relative to the tensor base, so a base must be
 * aligned to the widest access any kernel convjit builds makes through it:
 * 16 bytes for tensors read or written with 16-byte buffer loads / stores or
 * buffer_load ... lds DMA (x, w_packed, workspace, a transpose's y), 4
 * elements for the conv's y (vec4 and finalize stores), 4 bytes for fp32
 * bias and scale, one element for the raw weight (read element by element
 * by the pack kernel). A fixed rule per argument, not per plan, so a
 * pointer that works stays working when selection changes its mind. */
#define CJ_ALIGN_VEC 16

static convjit_status check_align(const void *ptr, uint64_t align, const char *f, const char *name) {
  uint64_t a = (uint64_t)(uintptr_t)ptr;
  CJ_CHECK(!ptr || a % align == 0, CONVJIT_ERR_INVALID_ARG,
           "%s%s = %p: must be %llu-byte aligned (address mod %llu = %llu)", f, name, ptr, (unsigned long long)align,
           (unsigned long long)align, (unsigned long long)(a % align));
  return CONVJIT_OK;
}

/* A device pointer carries no size: the caller's stated x_prev size against
 * the N*C*pad_lo[0]*H*W elements the pre-pass reads (a tensor of another
 * shape would be read past its end, or its frames read as the wrong ones). */
static convjit_status check_x_prev_bytes(const convjit_plan *p, size_t bytes, const char *f) {
  const cj_conv_problem *q = &p->prob;
  uint64_t need = (uint64_t)q->n * q->c * q->pad_lo[0] * q->h * q->w * cj_dtype_bytes(q->x_dtype);
  CJ_CHECK(bytes == need, CONVJIT_ERR_INVALID_ARG,
           "%sx_prev_bytes = %zu: the plan reads x_prev as (N, C, pad_lo[0], H, W) = (%lld, %lld, %lld, %lld, %lld) "
           "%s = %llu bytes", f, bytes, (long long)q->n, (long long)q->c, (long long)q->pad_lo[0], (long long)q->h,
           (long long)q->w, cj_dtype_name(q->x_dtype), (unsigned long long)need);
  return CONVJIT_OK;
}

static uint64_t bind_value(const cj_bind *b, const cj_launch_ptrs *ptrs) {
  switch (b->kind) {
  case CJ_BIND_X: return (uint64_t)(uintptr_t)ptrs->x;
  case CJ_BIND_W_RAW: return (uint64_t)(uintptr_t)ptrs->w_raw;
  case CJ_BIND_W_PACKED: return (uint64_t)(uintptr_t)ptrs->w_packed;
  case CJ_BIND_BIAS: return (uint64_t)(uintptr_t)ptrs->bias;
  case CJ_BIND_RESIDUAL: return (uint64_t)(uintptr_t)ptrs->residual;
  case CJ_BIND_SCALE: return (uint64_t)(uintptr_t)ptrs->scale;
  case CJ_BIND_X_PREV: return (uint64_t)(uintptr_t)ptrs->x_prev;
  case CJ_BIND_Y: return (uint64_t)(uintptr_t)ptrs->y;
  case CJ_BIND_WORKSPACE: return (uint64_t)(uintptr_t)ptrs->workspace + b->value;
  case CJ_BIND_CONST_U32:
  case CJ_BIND_CONST_F32: return b->value & 0xffffffffu;
  case CJ_BIND_CONST_U64: return b->value;
  case CJ_BIND_NONE: break;
  }
  return 0;
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

CONVJIT_API convjit_status convjit_weight_pack(const convjit_plan *p, const void *w, void *w_packed, void *stream) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_TRY(cj_plan_check_ctx(p));
  CJ_CHECK(p->op == CJ_PLAN_CONV, CONVJIT_ERR_INVALID_ARG, "plan: a transpose plan has no weight to pack");
  CJ_CHECK(w, CONVJIT_ERR_INVALID_ARG, "w = NULL");
  CJ_CHECK(w_packed || p->seq.packed_weight_bytes == 0, CONVJIT_ERR_INVALID_ARG,
           "w_packed = NULL: the plan needs %llu bytes there (convjit_plan_packed_weight_size)",
           (unsigned long long)p->seq.packed_weight_bytes);
  CJ_TRY(check_align(w, cj_dtype_bytes(p->prob.w_dtype), "", "w"));
  CJ_TRY(check_align(w_packed, CJ_ALIGN_VEC, "", "w_packed"));
  cj_launch_ptrs ptrs = {.w_raw = w, .w_packed = w_packed};
  return cj_plan_run(p, p->pack, p->npack, &ptrs, stream);
}

/* The bind kinds the forward steps use, one bit per cj_bind_kind: the plan
 * takes a fused-epilogue input exactly when one of its kernels has that
 * role. One pass over a few dozen binds per launch, nothing cached, so the
 * plan stays immutable. */
_Static_assert(CJ_BIND_X_PREV < 32, "cj_bind_kind values must fit the mask of fwd_bind_kinds");
static uint32_t fwd_bind_kinds(const convjit_plan *p) {
  uint32_t m = 0;
  for (uint32_t i = 0; i < p->nfwd; i++)
    for (uint32_t a = 0; a < p->fwd[i].nargs; a++) m |= 1u << p->fwd[i].bind[a].kind;
  return m;
}

/* The checks and the launch of both conv entry points. f is the field
 * prefix of the messages: "args." for convjit_conv_forward, "" for
 * convjit_conv_fwd, whose texts stay those of its parameters. */
convjit_status cj_conv_args_check(const convjit_plan *p, const convjit_conv_args *a, const char *f) {
  CJ_TRY(cj_plan_check_ctx(p));
  CJ_CHECK(p->op == CJ_PLAN_CONV, CONVJIT_ERR_INVALID_ARG, "plan: not a conv plan (use convjit_transpose)");
  CJ_CHECK(a->x, CONVJIT_ERR_INVALID_ARG, "%sx = NULL", f);
  CJ_CHECK(a->y, CONVJIT_ERR_INVALID_ARG, "%sy = NULL", f);
  CJ_CHECK(a->w_packed, CONVJIT_ERR_INVALID_ARG, "%sw_packed = NULL", f);
  CJ_CHECK(!a->bias == !p->has_bias, CONVJIT_ERR_INVALID_ARG, "%sbias = %p: the descriptor says has_bias = %d", f,
           a->bias, p->has_bias);
  uint32_t kinds = fwd_bind_kinds(p);
  int takes_residual = (kinds >> CJ_BIND_RESIDUAL) & 1, takes_scale = (kinds >> CJ_BIND_SCALE) & 1;
  CJ_CHECK(!a->residual || takes_residual, CONVJIT_ERR_UNSUPPORTED,
           "%sresidual = %p: this plan has no residual input (the descriptor has has_residual = 0)", f, a->residual);
  CJ_CHECK(a->residual || !takes_residual, CONVJIT_ERR_INVALID_ARG,
           "%sresidual = NULL: the plan adds a residual input shaped like y (has_residual = 1)%s", f,
           *f ? "" : "; pass it with convjit_conv_forward");
  int takes_x_prev = (kinds >> CJ_BIND_X_PREV) & 1;
  CJ_CHECK(!a->x_prev || takes_x_prev, CONVJIT_ERR_UNSUPPORTED,
           "%sx_prev = %p: this plan reads no previous frames (the descriptor has has_x_prev = 0)", f, a->x_prev);
  CJ_CHECK(a->x_prev || !takes_x_prev, CONVJIT_ERR_INVALID_ARG,
           "%sx_prev = NULL: the plan reads the previous chunk's last frames (has_x_prev = 1)%s", f,
           *f ? "" : "; pass them with convjit_conv_forward");
  if (a->x_prev && a->struct_size >= offsetof(convjit_conv_args, x_prev_bytes) + sizeof(size_t))
    CJ_TRY(check_x_prev_bytes(p, a->x_prev_bytes, f));
  CJ_CHECK(!a->scale || takes_scale, CONVJIT_ERR_UNSUPPORTED,
           "%sscale = %p: this plan has no per-channel scale input (the descriptor has has_channel_scale = 0)", f,
           a->scale);
  CJ_CHECK(a->scale || !takes_scale, CONVJIT_ERR_INVALID_ARG,
           "%sscale = NULL: the plan multiplies by fp32 per-channel scales (has_channel_scale = 1)%s", f,
           *f ? "" : "; pass them with convjit_conv_forward");
  CJ_CHECK(a->workspace_bytes >= p->seq.workspace_bytes, CONVJIT_ERR_INVALID_ARG,
           "%sworkspace_bytes = %zu: the plan needs %llu (convjit_plan_workspace_size)", f, a->workspace_bytes,
           (unsigned long long)p->seq.workspace_bytes);
  CJ_CHECK(a->workspace || p->seq.workspace_bytes == 0, CONVJIT_ERR_INVALID_ARG,
           "%sworkspace = NULL: the plan needs %llu bytes", f, (unsigned long long)p->seq.workspace_bytes);
  uint64_t y4 = 4ull * cj_dtype_bytes(p->prob.y_dtype);
  CJ_TRY(check_align(a->x, CJ_ALIGN_VEC, f, "x"));
  CJ_TRY(check_align(a->x_prev, CJ_ALIGN_VEC, f, "x_prev"));
  CJ_TRY(check_align(a->w_packed, CJ_ALIGN_VEC, f, "w_packed"));
  CJ_TRY(check_align(a->bias, 4, f, "bias"));
  CJ_TRY(check_align(a->residual, y4, f, "residual"));
  CJ_TRY(check_align(a->scale, 4, f, "scale"));
  CJ_TRY(check_align(a->y, y4, f, "y"));
  CJ_TRY(check_align(a->workspace, CJ_ALIGN_VEC, f, "workspace"));
  return CONVJIT_OK;
}

static convjit_status conv_forward(const convjit_plan *p, const convjit_conv_args *a, const char *f, void *stream) {
  CJ_TRY(cj_conv_args_check(p, a, f));
  cj_launch_ptrs ptrs = {.x = a->x, .w_packed = a->w_packed, .bias = a->bias, .residual = a->residual,
                         .scale = a->scale, .x_prev = a->x_prev, .y = a->y, .workspace = a->workspace};
  return cj_plan_run(p, p->fwd, p->nfwd, &ptrs, stream);
}

CONVJIT_API convjit_status convjit_conv_forward(const convjit_plan *p, const convjit_conv_args *args, void *stream) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_CHECK(args, CONVJIT_ERR_INVALID_ARG, "args = NULL: need the tensors (convjit_conv_args_default)");
  CJ_TRY(cj_check_struct_size(args->struct_size, CONV_ARGS_V1_SIZE, sizeof *args, "args"));
  convjit_conv_args a = convjit_conv_args_default(); /* fields past an older caller's struct_size stay NULL/0 */
  memcpy(&a, args, args->struct_size);
  return conv_forward(p, &a, "args.", stream);
}

/* The positional form: the same checks and launch, messages naming its
 * parameters. */
CONVJIT_API convjit_status convjit_conv_fwd(const convjit_plan *p, const void *x, const void *w_packed,
                                            const void *bias, void *y, void *workspace, size_t workspace_bytes,
                                            void *stream) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  convjit_conv_args a = convjit_conv_args_default();
  a.x = x;
  a.w_packed = w_packed;
  a.bias = bias;
  a.y = y;
  a.workspace = workspace;
  a.workspace_bytes = workspace_bytes;
  return conv_forward(p, &a, "", stream);
}

CONVJIT_API convjit_status convjit_transpose(const convjit_plan *p, const void *x, void *y, void *stream) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_TRY(cj_plan_check_ctx(p));
  CJ_CHECK(p->op == CJ_PLAN_TRANSPOSE, CONVJIT_ERR_INVALID_ARG, "plan: not a transpose plan (use convjit_conv_fwd)");
  CJ_CHECK(x, CONVJIT_ERR_INVALID_ARG, "x = NULL");
  CJ_CHECK(y, CONVJIT_ERR_INVALID_ARG, "y = NULL");
  CJ_CHECK(x != y, CONVJIT_ERR_INVALID_ARG, "y = x = %p: the transpose is out of place", x);
  CJ_TRY(check_align(x, CJ_ALIGN_VEC, "", "x"));
  CJ_TRY(check_align(y, CJ_ALIGN_VEC, "", "y"));
  cj_launch_ptrs ptrs = {.x = x, .y = y};
  return cj_plan_run(p, p->fwd, p->nfwd, &ptrs, stream);
}

/* ---- introspection ------------------------------------------------------------ */

static const cj_plan_step *kernel_step(const convjit_plan *p, int index, const char **stage) {
  int k = 0;
  for (uint32_t i = 0; i < p->npack; i++)
    if (p->pack[i].kind == CJ_STEP_KERNEL && k++ == index) { *stage = "pack"; return &p->pack[i]; }
  for (uint32_t i = 0; i < p->nfwd; i++)
    if (p->fwd[i].kind == CJ_STEP_KERNEL && k++ == index) { *stage = "fwd"; return &p->fwd[i]; }
  return NULL;
}

CONVJIT_API convjit_status convjit_plan_kernel_count(const convjit_plan *p, int *count) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_CHECK(count, CONVJIT_ERR_INVALID_ARG, "count = NULL");
  int n = 0;
  const char *stage;
  while (kernel_step(p, n, &stage)) n++;
  *count = n;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_kernel_info(const convjit_plan *p, int index, convjit_kernel_info *info) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_CHECK(info, CONVJIT_ERR_INVALID_ARG, "info = NULL");
  CJ_TRY(cj_check_struct_size(info->struct_size, sizeof *info, sizeof *info, "info"));
  CJ_TRY(cj_plan_check_ctx(p)); /* the kernel info lives in the context's cache */
  const char *stage = "";
  const cj_plan_step *s = index >= 0 ? kernel_step(p, index, &stage) : NULL;
  int count = 0;
  while (kernel_step(p, count, &stage)) count++;
  CJ_CHECK(s, CONVJIT_ERR_INVALID_ARG, "index = %d: the plan has %d kernels", index, count);
  kernel_step(p, index, &stage);
  const cj_kernel_info *k = s->k->info;
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  snprintf(info->name, sizeof info->name, "%s", k->name);
  snprintf(info->stage, sizeof info->stage, "%s", stage);
  info->vgpr = k->vgpr_count;
  info->agpr = k->agpr_count;
  info->sgpr = k->sgpr_count;
  info->lds_bytes = k->group_segment_size;
  info->scratch_bytes = k->private_segment_size;
  info->vgpr_spills = k->vgpr_spill_count;
  info->sgpr_spills = k->sgpr_spill_count;
  for (int i = 0; i < 3; i++) {
    info->block[i] = s->block[i];
    info->grid[i] = s->grid[i];
  }
  info->source = (convjit_cache_source)s->source;
  info->compile_ms = s->compile_ms;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_describe(const convjit_plan *p, char *buf, size_t cap, size_t *needed) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_CHECK(buf || cap == 0, CONVJIT_ERR_INVALID_ARG, "buf = NULL with cap = %zu", cap);
  cj_strbuf sb = {0};
  cj_sb_printf(&sb, "%s\n", p->seq.summary);
  if (p->tuned) cj_sb_printf(&sb, "tuned: the tuning table's or convjit_plan_tune's winner\n");
  const cj_step_list *lists[2] = {&p->seq.pack, &p->seq.fwd};
  const char *names[2] = {"pack", "fwd"};
  for (int l = 0; l < 2; l++)
    for (uint32_t i = 0; i < lists[l]->nsteps; i++) {
      const cj_step *s = &lists[l]->step[i];
      if (s->kind == CJ_STEP_MEMSET) {
        cj_sb_printf(&sb, "[%s %u] memset 0, %llu bytes\n", names[l], i, (unsigned long long)s->memset_bytes);
        continue;
      }
      cj_sb_printf(&sb, "[%s %u] kernel %s\n", names[l], i, s->plan.name);
      cj_kplan_print(&s->plan, &sb);
    }
  if (sb.oom || !sb.s) {
    cj_sb_free(&sb);
    return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (plan description)");
  }
  if (needed) *needed = sb.len + 1;
  if (cap) {
    size_t n = sb.len < cap - 1 ? sb.len : cap - 1;
    memcpy(buf, sb.s, n);
    buf[n] = 0;
  }
  cj_sb_free(&sb);
  return CONVJIT_OK;
}

/* ---- device memory and events -------------------------------------------- */

#define CTX_CHECK(ctx) CJ_CHECK(ctx, CONVJIT_ERR_INVALID_ARG, "ctx = NULL")

CONVJIT_API convjit_status convjit_malloc(convjit_context *ctx, size_t bytes, void **dptr) {
  cj_error_clear();
  CTX_CHECK(ctx);
  CJ_CHECK(dptr, CONVJIT_ERR_INVALID_ARG, "dptr = NULL");
  *dptr = NULL;
  return ctx->dev->ops->mem_alloc(ctx->dev, bytes, dptr);
}

CONVJIT_API convjit_status convjit_free(convjit_context *ctx, void *dptr) {
  /* A cleanup call: it keeps the text of the failure the caller is
   * cleaning up after (like every *_destroy). */
  CTX_CHECK(ctx);
  if (!dptr) return CONVJIT_OK;
  convjit_status st = ctx->dev->ops->mem_free(ctx->dev, dptr);
  if (st == CONVJIT_ERR_INVALID_ARG)
    return CJ_ERR(st, "dptr = %p: not a live allocation of this context (not the start of a convjit_malloc block "
                  "of it, or already freed)", dptr);
  return st;
}

CONVJIT_API convjit_status convjit_memcpy_h2d(convjit_context *ctx, void *dst, const void *src, size_t n,
                                             void *stream) {
  cj_error_clear();
  CTX_CHECK(ctx);
  if (!n) return CONVJIT_OK;
  CJ_CHECK(dst && src, CONVJIT_ERR_INVALID_ARG, "%s = NULL", dst ? "src" : "dst");
  return ctx->dev->ops->memcpy_h2d(ctx->dev, dst, src, n, stream);
}

CONVJIT_API convjit_status convjit_memcpy_d2h(convjit_context *ctx, void *dst, const void *src, size_t n,
                                             void *stream) {
  cj_error_clear();
  CTX_CHECK(ctx);
  if (!n) return CONVJIT_OK;
  CJ_CHECK(dst && src, CONVJIT_ERR_INVALID_ARG, "%s = NULL", dst ? "src" : "dst");
  CJ_TRY(ctx->dev->ops->memcpy_d2h(ctx->dev, dst, src, n, stream));
  /* The host reads dst right after: complete the copy before returning. */
  return ctx->dev->ops->synchronize(ctx->dev, stream);
}

CONVJIT_API convjit_status convjit_memset(convjit_context *ctx, void *dst, int value, size_t n, void *stream) {
  cj_error_clear();
  CTX_CHECK(ctx);
  if (!n) return CONVJIT_OK;
  CJ_CHECK(dst, CONVJIT_ERR_INVALID_ARG, "dst = NULL");
  CJ_CHECK(value >= 0 && value <= 255, CONVJIT_ERR_INVALID_ARG, "value = %d: must be a byte (0..255)", value);
  return ctx->dev->ops->memset_d8(ctx->dev, dst, value, n, stream);
}

CONVJIT_API convjit_status convjit_synchronize(convjit_context *ctx, void *stream) {
  cj_error_clear();
  CTX_CHECK(ctx);
  return ctx->dev->ops->synchronize(ctx->dev, stream);
}

/* Events: lifetime.c (they outlive their context safely). */
