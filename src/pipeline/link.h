/* Relocatable object -> loadable code object (ld.lld -shared).
 * The linker is CJ_LLD_PATH from configure time unless $CONVJIT_LLD names
 * another. Temporary files are always removed; on failure the linker's own
 * message is in the error text. */
#ifndef CJ_PIPELINE_LINK_H
#define CJ_PIPELINE_LINK_H

#include "util/cj.h"

convjit_status cj_link_code_object(const cj_blob *object, cj_blob *code_object);
const char *cj_lld_path(void);

#endif
