/* C entry points of lld_shim.cpp: lld's ELF linker as a library (liblld).
 * Built only when configure found liblld (CJ_HAVE_LIBLLD); link.c is the
 * one caller and serializes every call with its own mutex, since lld keeps
 * its state in process-wide globals (docs/pipeline.md, "Linking"). */
#ifndef CJ_PIPELINE_LLD_SHIM_H
#define CJ_PIPELINE_LLD_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Checks that the object bytes, if they start with the ELF magic, parse as
 * LLVM's object reader reads it (header, every section's name and bytes,
 * every symbol's name and section, every relocation's symbol): lld stops
 * the whole process (_exit) on the malformed-ELF errors it finds itself, so
 * those must never reach it. Other bytes pass (lld reads them as a linker
 * script and reports a plain error). 0 = fine, else the reason in msg. */
int cj_liblld_check_input(const void *data, size_t size, char *msg, size_t cap);

/* Runs lld's ELF driver on argv (argv[0] is "ld.lld"). Returns the
 * driver's status (0 = linked); what lld printed (both streams) goes to
 * msg, cut to cap. *can_run_again = 0 if lld says its state is no longer
 * usable in this process. Callers serialize. */
int cj_liblld_link(int argc, const char *const *argv, char *msg, size_t cap, int *can_run_again);

/* lld's version, e.g. "Debian LLD 22.1.8". */
void cj_liblld_version(char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
