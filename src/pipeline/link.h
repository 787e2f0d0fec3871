/* Relocatable object -> loadable code object (ld.lld -shared).
 * Linked in process by liblld when configure found it (CJ_HAVE_LIBLLD),
 * else by spawning CJ_LLD_PATH from configure time; $CONVJIT_LLD naming a
 * linker binary always spawns that one (debugging, another linker).
 * Temporary files are always removed; on failure the linker's own message
 * is in the error text. */
#ifndef CJ_PIPELINE_LINK_H
#define CJ_PIPELINE_LINK_H

#include "util/cj.h"

convjit_status cj_link_code_object(const cj_blob *object, cj_blob *code_object);
const char *cj_lld_path(void);
/* 1 if the next link runs in process (liblld), 0 if it spawns cj_lld_path(). */
int cj_lld_in_process(void);
/* First line of the linker's --version (run once per path and process;
 * "unavailable:<path>" if it does not run), or "<lld version> (liblld, in
 * process)" when linking in process. Part of the cache key. */
void cj_lld_version(char *out, size_t cap);
/* The linker's file identity, "<realpath>|<dev>:<ino>|<size>|<mtime>"
 * (0, or -1 if it cannot be stat'ed or the link runs in process): the disk
 * cache memoizes the spawned linker's version line under it, since running
 * the linker costs ~40 ms per process. */
int cj_lld_identity(char *out, size_t cap);
/* Sets the version line of the linker at path (NULL: forget it, so the
 * next cj_lld_version runs it). */
void cj_lld_version_seed(const char *path, const char *version);

#endif
