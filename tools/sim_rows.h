/* The validation rows of convjit-bench-sim (docs/performance.md,
 * "Validation"): published MI355X (gfx950) and MI325X (gfx942)
 * measurements with their public source, and the convjit schedule each is
 * compared with. */
#ifndef CJ_TOOLS_SIM_ROWS_H
#define CJ_TOOLS_SIM_ROWS_H

#include <stddef.h>

typedef struct sim_row {
  const char *id;
  const char *what;          /* the published kernel, in a few words */
  int fp8;
  const char *shape;         /* N,C,D,H,W,K,T,R,S */
  const char *knobs;         /* kernel-spec options (codegen/kspec.h): pad, schedule knobs */
  double published;          /* in the row's unit; 0: only an order is published */
  int unit_ms;               /* 1: milliseconds, 0: TFLOPS */
  const char *source_short;
  const char *source;
  const char *arch;          /* NULL: gfx950 */
  const char *device;        /* the product measured (perf.h cj_perf_defaults_device); NULL: the arch's own */
  const char *closest;       /* knobs of the closest schedule convjit builds, taken when `knobs` (the
                              * published schedule) is refused as unsupported; NULL: none */
} sim_row;

/* "faster is faster than slower", as the sources report it */
typedef struct sim_pair {
  const char *faster, *slower;
  const char *published;     /* the published comparison, as text */
} sim_pair;

extern const sim_row sim_rows[];
extern const size_t sim_nrows;
extern const sim_pair sim_pairs[];
extern const size_t sim_npairs;

#endif
