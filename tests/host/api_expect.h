/* Status assertions for the public-API tests (cmocka): the call's status, and
 * for failures a substring of convjit_last_error() that names field and value;
 * and the context most of those tests use. */
#ifndef CJ_TESTS_HOST_API_EXPECT_H
#define CJ_TESTS_HOST_API_EXPECT_H

#include <string.h>

#include "convjit/convjit.h"

#define EXPECT(call, st, needle)                                                                          \
  do {                                                                                                    \
    convjit_status s_ = (call);                                                                           \
    if (s_ != (st)) fail_msg("%s: status %d, expected %d (%s)", #call, s_, (st), convjit_last_error());   \
    if (!strstr(convjit_last_error(), (needle)))                                                          \
      fail_msg("%s: error text \"%s\" lacks \"%s\"", #call, convjit_last_error(), (needle));               \
  } while (0)
#define OK(call)                                                                                          \
  do {                                                                                                    \
    convjit_status s_ = (call);                                                                           \
    if (s_ != CONVJIT_OK) fail_msg("%s: %s: %s", #call, convjit_status_string(s_), convjit_last_error()); \
  } while (0)

/* A context on `kind` (arch NULL = the device's) with the memory cache only:
 * no files, compile counts the test can predict. */
static inline convjit_context *api_ctx(convjit_device_kind kind, const char *arch) {
  convjit_context_options o = convjit_context_options_default();
  o.device = kind;
  o.arch = arch;
  o.disable_disk_cache = 1;
  convjit_context *c = NULL;
  OK(convjit_context_create(&o, &c));
  return c;
}

/* A context on `kind` with its disk cache in `cache_dir` (tests of what
 * persists: tuning rows, cached code objects). */
static inline convjit_context *api_ctx_disk(convjit_device_kind kind, const char *cache_dir) {
  convjit_context_options o = convjit_context_options_default();
  o.device = kind;
  o.cache_dir = cache_dir;
  convjit_context *c = NULL;
  OK(convjit_context_create(&o, &c));
  return c;
}

/* Device buffer of `bytes` on ctx, filled from host when host is not NULL. */
static inline void *api_upload(convjit_context *ctx, const void *host, size_t bytes) {
  void *d = NULL;
  OK(convjit_malloc(ctx, bytes, &d));
  if (host) OK(convjit_memcpy_h2d(ctx, d, host, bytes, NULL));
  return d;
}

#endif
