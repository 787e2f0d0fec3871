/* Machine code as text: LLVM's disassembler (bare CPU name, no feature
 * string) walked over .text bytes. This is the one disassembly loop: the
 * emulator decodes a whole module's .text with cj_disasm_range, the ISA
 * coverage gate and convjit-dump --emit mnemonics walk a kernel's own bytes
 * [entry, entry + code_size) with cj_disasm_kernel, never the padding after
 * it. Words that would crash LLVM 22's instruction printer (disasm.c lists
 * them) are reported as undecodable without asking LLVM. Reads only; the
 * code object is not changed. */
#ifndef CJ_PIPELINE_DISASM_H
#define CJ_PIPELINE_DISASM_H

#include <stdint.h>
#include "arch/arch.h"
#include "pipeline/codeobj.h"
#include "util/cj.h"

typedef struct cj_inst_text {
  uint32_t offset;      /* bytes from the start of .text (the emulator's pc) */
  uint32_t size;        /* 4 or 8 (4 when the bytes do not decode) */
  const uint8_t *bytes; /* the encoding, inside co->text */
  const char *text;     /* "s_endpgm", "v_add_u32_e32 v0, v1, v2"; NULL: undecodable */
} cj_inst_text;

/* Calls fn once per instruction in address order; fn returns nonzero to
 * stop early. */
typedef int (*cj_disasm_fn)(void *user, const cj_inst_text *inst);
/* .text bytes [start, end) as arch. INVALID_ARG if the range is outside
 * .text; INTERNAL if LLVM has no disassembler for arch. */
convjit_status cj_disasm_range(const cj_codeobj *co, const cj_arch *arch, uint64_t start, uint64_t end, cj_disasm_fn fn,
                               void *user);
/* One kernel's bytes, as the arch of the code object's ELF mach.
 * INVALID_ARG if that machine is not an arch of arch.h or the kernel's
 * range is outside .text. */
convjit_status cj_disasm_kernel(const cj_codeobj *co, const cj_kernel_info *k, cj_disasm_fn fn, void *user);

/* Mnemonic (first word of the text, encoding suffix kept) -> count. */
typedef struct cj_mnem_count {
  char name[48];
  uint32_t count;
} cj_mnem_count;
typedef struct cj_mnem_hist {
  cj_mnem_count *v;    /* sorted: count descending, then name */
  uint32_t n, cap;
  uint32_t total;      /* instructions, undecodable ones included */
  uint32_t undecoded;  /* byte words LLVM could not decode */
} cj_mnem_hist;

convjit_status cj_mnem_hist_kernel(const cj_codeobj *co, const cj_kernel_info *k, cj_mnem_hist *h);
void cj_mnem_hist_free(cj_mnem_hist *h); /* NULL-safe; leaves *h zeroed */
/* Copies the first word of an instruction text into out (cap bytes, NUL
 * ended, truncated); returns its length before truncation. */
size_t cj_mnemonic_of(const char *text, char *out, size_t cap);

#endif
