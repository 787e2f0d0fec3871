/* Logging to stderr, level from CONVJIT_LOG (read once), silent by default. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/cj.h"

static pthread_once_t cj_log_once = PTHREAD_ONCE_INIT;
static volatile int cj_log_level_v = CJ_LOG_OFF;

static void cj_log_init(void) {
  const char *e = getenv("CONVJIT_LOG");
  if (!e) return;
  if (!strcmp(e, "error")) cj_log_level_v = CJ_LOG_ERROR;
  else if (!strcmp(e, "info")) cj_log_level_v = CJ_LOG_INFO;
  else if (!strcmp(e, "debug")) cj_log_level_v = CJ_LOG_DEBUG;
}

cj_log_level cj_log_get_level(void) {
  pthread_once(&cj_log_once, cj_log_init);
  return (cj_log_level)cj_log_level_v;
}

void cj_log_set_level(cj_log_level lv) {
  pthread_once(&cj_log_once, cj_log_init);
  cj_log_level_v = lv;
}

void cj_log(cj_log_level lv, const char *fmt, ...) {
  if (cj_log_get_level() < lv) return;
  static const char *names[] = {"off", "error", "info", "debug"};
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "convjit[%s] %s\n", names[lv], line);
}
