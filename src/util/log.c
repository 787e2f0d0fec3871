/* Logging to stderr, level from CONVJIT_LOG (read once), silent by default. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/cj.h"

static pthread_once_t cj_log_once = PTHREAD_ONCE_INIT;
static volatile int cj_log_level_v = CJ_LOG_OFF;

/* CONVJIT_LOG is a comma-separated list: the C library takes its level
 * words (the most verbose wins) and leaves the others to their readers
 * ("route" is the Python binding's routing log). */
static void cj_log_init(void) {
  static const struct { const char *word; cj_log_level level; } levels[] = {
      {"error", CJ_LOG_ERROR}, {"info", CJ_LOG_INFO}, {"debug", CJ_LOG_DEBUG}};
  const char *e = getenv("CONVJIT_LOG");
  while (e && *e) {
    size_t n = strcspn(e, ",");
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
      if (n == strlen(levels[i].word) && !strncmp(e, levels[i].word, n) && (int)levels[i].level > cj_log_level_v)
        cj_log_level_v = levels[i].level;
    e += n + (e[n] == ',');
  }
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
