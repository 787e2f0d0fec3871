/* Thread-local error text and status strings. */
#include <stdio.h>
#include <string.h>
#include "util/cj.h"

static _Thread_local char cj_err_text[1024];
static _Thread_local int cj_err_quiet; /* depth of quiet sections (cj.h) */

convjit_status cj_error_at(const char *file, int line, convjit_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cj_err_text, sizeof cj_err_text, fmt, ap);
  va_end(ap);
  if (CJ_LOG_ON(CJ_LOG_DEBUG))
    cj_log(CJ_LOG_DEBUG, "error %s at %s:%d: %s", convjit_status_string(st), file, line, cj_err_text);
  else if (!cj_err_quiet && CJ_LOG_ON(CJ_LOG_ERROR))
    cj_log(CJ_LOG_ERROR, "%s: %s", convjit_status_string(st), cj_err_text);
  return st;
}

void cj_error_quiet_begin(void) { cj_err_quiet++; }
void cj_error_quiet_end(void) {
  if (cj_err_quiet > 0) cj_err_quiet--;
}

void cj_error_log_escaped(convjit_status st) {
  if (st != CONVJIT_OK && !cj_err_quiet && !CJ_LOG_ON(CJ_LOG_DEBUG) && CJ_LOG_ON(CJ_LOG_ERROR))
    cj_log(CJ_LOG_ERROR, "%s: %s", convjit_status_string(st), cj_err_text);
}

void cj_trace_at(const char *file, int line, const char *expr, convjit_status st) {
  if (CJ_LOG_ON(CJ_LOG_DEBUG))
    cj_log(CJ_LOG_DEBUG, "  from %s:%d: %s -> %s", file, line, expr, convjit_status_string(st));
}

void cj_error_clear(void) { cj_err_text[0] = 0; }

convjit_status cj_error_restore(convjit_status st, const char *text) {
  snprintf(cj_err_text, sizeof cj_err_text, "%s", text);
  return st;
}
const char *cj_error_text(void) { return cj_err_text; }

CONVJIT_API const char *convjit_last_error(void) { return cj_err_text; }
CONVJIT_API int convjit_version(void) { return CONVJIT_VERSION_NUMBER; }

CONVJIT_API const char *convjit_status_string(convjit_status s) {
  switch (s) {
  case CONVJIT_OK: return "ok";
  case CONVJIT_ERR_INVALID_ARG: return "invalid argument";
  case CONVJIT_ERR_UNSUPPORTED: return "unsupported";
  case CONVJIT_ERR_OUT_OF_MEMORY: return "out of memory";
  case CONVJIT_ERR_COMPILE: return "compile error";
  case CONVJIT_ERR_DEVICE: return "device error";
  case CONVJIT_ERR_RESOURCE: return "resource limit";
  case CONVJIT_ERR_IO: return "i/o error";
  case CONVJIT_ERR_VERSION: return "version mismatch";
  case CONVJIT_ERR_INTERNAL: return "internal error";
  case CONVJIT_ERR_EMULATION: return "emulation error";
  }
  return "unknown status";
}
