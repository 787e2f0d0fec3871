/* convjit — JIT-specialized implicit-GEMM convolution kernels for AMD GPUs
 * (gfx942 / MI300X, gfx950 / MI355X), built with LLVM 22 at run time.
 *
 * This is the only header users include. Every function returns a
 * convjit_status; convjit_last_error() gives the text of the last failure on
 * the calling thread, naming the field and the value that was wrong.
 *
 * OWNERSHIP: every *_create has a *_destroy that accepts NULL.
 *
 * (The runtime/API issue extends this header with contexts, descriptors,
 * plans and launches; the status codes below are fixed and never renumbered.)
 */
#ifndef CONVJIT_CONVJIT_H
#define CONVJIT_CONVJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CONVJIT_BUILDING)
#define CONVJIT_API __attribute__((visibility("default")))
#else
#define CONVJIT_API
#endif

#define CONVJIT_VERSION_MAJOR 0
#define CONVJIT_VERSION_MINOR 1
#define CONVJIT_VERSION_PATCH 0
#define CONVJIT_VERSION_NUMBER \
  (CONVJIT_VERSION_MAJOR * 10000 + CONVJIT_VERSION_MINOR * 100 + CONVJIT_VERSION_PATCH)

/* Status codes: fixed numeric values, stable across versions. */
typedef enum convjit_status {
  CONVJIT_OK = 0,
  CONVJIT_ERR_INVALID_ARG = 1,  /* a parameter or descriptor field is wrong */
  CONVJIT_ERR_UNSUPPORTED = 2,  /* valid, but no kernel handles it (yet) */
  CONVJIT_ERR_OUT_OF_MEMORY = 3,
  CONVJIT_ERR_COMPILE = 4,      /* LLVM or ld.lld failed */
  CONVJIT_ERR_DEVICE = 5,       /* HIP / emulator backend failure */
  CONVJIT_ERR_RESOURCE = 6,     /* kernel spills, uses scratch or too much LDS */
  CONVJIT_ERR_IO = 7,           /* file system / cache database */
  CONVJIT_ERR_VERSION = 8,      /* header and library disagree */
  CONVJIT_ERR_INTERNAL = 9,     /* a convjit bug: please report */
  CONVJIT_ERR_EMULATION = 10    /* the emulator stopped the kernel (bad access, hazard, unknown op) */
} convjit_status;

CONVJIT_API const char *convjit_status_string(convjit_status s);
/* Text of the last error on this thread ("" if none). Valid until the next
 * convjit call on the same thread. */
CONVJIT_API const char *convjit_last_error(void);
/* Library version as CONVJIT_VERSION_NUMBER. */
CONVJIT_API int convjit_version(void);

#ifdef __cplusplus
}
#endif
#endif
