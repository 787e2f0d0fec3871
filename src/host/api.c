/* The public API, by purpose: this file the context and the device memory
 * entry points; api_plan.c plan creation and introspection; api_launch.c
 * the launches; api_emu.c / api_emu_module.c the emulator's experimental
 * API; lifetime.c the handle tables and events.
 *
 * Every entry point checks its arguments and returns a status; the error
 * text names the field and the value ("desc.c = 0: must be > 0"). */
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
    CJ_CHECK(want, CONVJIT_ERR_INVALID_ARG, "options.arch = \"%.32s\": supported are %s", o.arch, cj_arch_names());
  }
  if (o.log_level != CONVJIT_LOG_FROM_ENV) cj_log_set_level((cj_log_level)(o.log_level - 1));

  cj_device *dev = NULL;
  CJ_TRY(open_device(&o, &dev));
  convjit_status st = CONVJIT_OK;
  const cj_arch *arch = cj_arch_from_name(dev->arch);
  if (!arch) {
    st = CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "device arch \"%s\": convjit builds for %s",
                dev->arch[0] ? dev->arch : "(unknown)", cj_arch_names());
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
  cj_jobs_init(&ctx->jobs);
  const char *async = getenv("CONVJIT_ASYNC_COMPILE");
  ctx->async_default = async && !strcmp(async, "1");
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
  atomic_store(&ctx->async_hold, 0);
  cj_jobs_wait(&ctx->jobs); /* background builds use the cache and the device below */
  cj_jobs_destroy(&ctx->jobs);
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
