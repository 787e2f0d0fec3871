/* Internal module map and shared helpers of convjit (src/util: the bottom
 * area; it includes only the public header). Declared here: err.c, log.c,
 * misc.c (blobs, text building, clock, hashing); util/numfmt.h declares
 * numfmt.c (bf16/fp8 number formats).
 *
 * Errors: internal functions return convjit_status. On failure they set the
 * thread-local error text once, at the place that knows the field and value
 * (CJ_ERR / CJ_CHECK); callers forward with CJ_TRY without rewriting it.
 * At CONVJIT_LOG=debug every forwarded failure logs file:line:expression.
 * Nothing here prints unless logging is on; nothing aborts.
 */
#ifndef CJ_UTIL_CJ_H
#define CJ_UTIL_CJ_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "convjit/convjit.h"

/* "MAJOR.MINOR.PATCH" from the public header's CONVJIT_VERSION_*, which
 * CMakeLists.txt checks against project(VERSION) at configure time: the
 * version is written there and in convjit.h only. */
#define CJ_STR_(x) #x
#define CJ_STR(x) CJ_STR_(x)
#define CJ_VERSION_STRING CJ_STR(CONVJIT_VERSION_MAJOR) "." CJ_STR(CONVJIT_VERSION_MINOR) "." CJ_STR(CONVJIT_VERSION_PATCH)

/* misc.c — element types: name for messages ("bf16", "fp8_e4m3fn", ...; "?"
 * if unknown) and bytes per element (0 if unknown). */
const char *cj_dtype_name(convjit_dtype t);
uint32_t cj_dtype_bytes(convjit_dtype t);

/* err.c */
convjit_status cj_error_at(const char *file, int line, convjit_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void cj_error_clear(void);
/* Sets this thread's error text to one reported on another thread (already
 * logged there): returns st, logs nothing. */
convjit_status cj_error_restore(convjit_status st, const char *text);
const char *cj_error_text(void);
void cj_trace_at(const char *file, int line, const char *expr, convjit_status st);
/* A quiet section: errors set on this thread between begin and end are
 * expected and handled by the caller (a selection candidate it rejects and
 * skips), so they are logged at debug only, never at error level. Sections
 * nest. An error the caller returns after all is logged with
 * cj_error_log_escaped (once, at error level, as if it had not been quiet). */
void cj_error_quiet_begin(void);
void cj_error_quiet_end(void);
void cj_error_log_escaped(convjit_status st);

#define CJ_ERR(st, ...) cj_error_at(__FILE__, __LINE__, (st), __VA_ARGS__)
#define CJ_CHECK(cond, st, ...) \
  do { if (!(cond)) return CJ_ERR((st), __VA_ARGS__); } while (0)
#define CJ_TRY(expr) \
  do { convjit_status cj_s_ = (expr); \
       if (cj_s_ != CONVJIT_OK) { cj_trace_at(__FILE__, __LINE__, #expr, cj_s_); return cj_s_; } } while (0)
/* Allocation failure is a status, never a crash. */
#define CJ_ALLOC_CHECK(p) \
  do { if (!(p)) return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory at %s:%d", __FILE__, __LINE__); } while (0)

/* log.c — CONVJIT_LOG=error|info|debug (read once); silent by default. */
typedef enum { CJ_LOG_OFF = 0, CJ_LOG_ERROR = 1, CJ_LOG_INFO = 2, CJ_LOG_DEBUG = 3 } cj_log_level;
cj_log_level cj_log_get_level(void);
void cj_log_set_level(cj_log_level lv);
void cj_log(cj_log_level lv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define CJ_LOG_ON(lv) (cj_log_get_level() >= (lv))

/* misc.c — an owned byte buffer (code objects, ELF, text). */
typedef struct cj_blob {
  uint8_t *data;
  size_t size;
} cj_blob;
void cj_blob_free(cj_blob *b); /* frees data, zeroes the struct; NULL-safe */
/* Copies size bytes and a NUL after them (not counted in size). */
convjit_status cj_blob_set(cj_blob *b, const void *data, size_t size);

/* misc.c — growable text (IR dumps, JSON, keys). */
typedef struct cj_strbuf {
  char *s;
  size_t len, cap;
  int oom; /* sticky: a failed append makes the whole buffer invalid */
} cj_strbuf;
void cj_sb_printf(cj_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cj_sb_vprintf(cj_strbuf *sb, const char *fmt, va_list ap);
void cj_sb_free(cj_strbuf *sb);

/* misc.c — clock */
double cj_now_ms(void); /* monotonic clock, milliseconds */
double cj_thread_cpu_ms(void); /* this thread's CPU time, milliseconds */

/* misc.c — FNV-1a 64 (cache keys, integrity of cached code objects). */
uint64_t cj_hash64(const void *data, size_t n, uint64_t seed);

/* misc.c — the greatest common divisor (gcd(a, 0) = a): conv phases. */
uint64_t cj_gcd(uint64_t a, uint64_t b);

#endif
