/* Reads an AMDGPU code object: ELF header, symbols, .text, kernel descriptors
 * and the NT_AMDGPU_METADATA msgpack note (read with msgpack-c).
 * Never trusts the input: a malformed object is CONVJIT_ERR_INVALID_ARG with
 * what was wrong, never a crash. */
#ifndef CJ_PIPELINE_CODEOBJ_H
#define CJ_PIPELINE_CODEOBJ_H

#include <stdint.h>
#include "util/cj.h"

typedef enum {
  CJ_ARG_OTHER = 0,
  CJ_ARG_BY_VALUE,
  CJ_ARG_GLOBAL_BUFFER,
  CJ_ARG_HIDDEN_BLOCK_COUNT_X, CJ_ARG_HIDDEN_BLOCK_COUNT_Y, CJ_ARG_HIDDEN_BLOCK_COUNT_Z,
  CJ_ARG_HIDDEN_GROUP_SIZE_X, CJ_ARG_HIDDEN_GROUP_SIZE_Y, CJ_ARG_HIDDEN_GROUP_SIZE_Z,
  CJ_ARG_HIDDEN_REMAINDER_X, CJ_ARG_HIDDEN_REMAINDER_Y, CJ_ARG_HIDDEN_REMAINDER_Z,
  CJ_ARG_HIDDEN_GLOBAL_OFFSET_X, CJ_ARG_HIDDEN_GLOBAL_OFFSET_Y, CJ_ARG_HIDDEN_GLOBAL_OFFSET_Z,
  CJ_ARG_HIDDEN_GRID_DIMS,
  CJ_ARG_HIDDEN_DYNAMIC_LDS_SIZE, /* the launch's dynamic LDS bytes (hipModuleLaunchKernel sharedMemBytes) */
  CJ_ARG_HIDDEN_OTHER /* any other hidden_*: zero-filled by launchers */
} cj_arg_kind;

typedef struct cj_kernel_arg {
  uint32_t offset, size;
  cj_arg_kind kind;
  char value_kind[40]; /* metadata text, e.g. "global_buffer", "hidden_block_count_x" */
  char name[40];       /* ".name" if present, else "" */
} cj_kernel_arg;

typedef struct cj_kernel_info {
  char name[128];
  char symbol[136];            /* "<name>.kd" */
  uint32_t kernarg_size, kernarg_align;
  uint32_t group_segment_size; /* static LDS bytes */
  uint32_t private_segment_size; /* scratch bytes per lane */
  uint32_t vgpr_count, agpr_count, sgpr_count;
  uint32_t vgpr_spill_count, sgpr_spill_count;
  uint32_t max_flat_workgroup_size;
  uint32_t wavefront_size;
  int uses_dynamic_stack;
  uint32_t nargs;
  cj_kernel_arg *args;
  /* From the ELF: the 64-byte kernel descriptor and the entry point. */
  uint64_t kd_vaddr;           /* address of <name>.kd */
  uint8_t kd[64];              /* its bytes */
  uint64_t entry_vaddr;        /* kd_vaddr + kernel_code_entry_byte_offset */
  /* Bytes of machine code from entry_vaddr: the function symbol's size when
   * the object has one (.text after it is alignment padding), else to the
   * end of .text. Instructions past it are never the kernel's. */
  uint64_t code_size;
} cj_kernel_info;

typedef struct cj_codeobj {
  char target[64];             /* amdhsa.target, e.g. "amdgcn-amd-amdhsa--gfx950" */
  uint32_t elf_mach;           /* e_flags & 0xff */
  uint32_t nkernels;
  cj_kernel_info *kernels;
  /* .text, for disassembly and emulation (a copy, owned). */
  uint64_t text_vaddr;
  cj_blob text;
} cj_codeobj;

/* 1 for an argument the caller gives (global_buffer, by_value and any other
 * non-hidden value kind); 0 for hidden_* ones, which the launcher fills.
 * The one rule every packer (plans, convjit_emu_launch, the emulator's
 * kernarg segment) uses. */
int cj_kernel_arg_is_explicit(const cj_kernel_arg *a);

convjit_status cj_codeobj_parse(const void *elf, size_t size, cj_codeobj **out);
/* Calls of cj_codeobj_parse in this process so far (atomic): lets a test
 * prove that plan creation parses each code object it builds once. */
uint64_t cj_codeobj_parse_count(void);

/* ---- the loaded image (what an HSA loader maps) ---------------------------
 * cj_image_read reads the PT_LOAD program headers and the dynamic
 * relocations (SHF_ALLOC SHT_RELA sections, i.e. .rela.dyn, with the
 * symbols of their linked symbol table) of the same untrusted bytes.
 * cj_image_place then lays the image out for load address `base`: every
 * segment's file bytes at dst + p_vaddr, zero to p_memsz (.bss), and applies
 * the relocations (AMDGPUUsage "Relocation Records"):
 *   R_AMDGPU_NONE        nothing
 *   R_AMDGPU_RELATIVE64  base + addend
 *   R_AMDGPU_ABS64       base + symbol value + addend (an SHN_ABS symbol's
 *                        value without base; an undefined weak one is 0)
 * Anything else (another type, a strong undefined symbol, a target outside
 * the image) is CONVJIT_ERR_INVALID_ARG naming it; cj_image_read accepts
 * it, so disassembly of such objects still works. Segment bytes point into
 * the caller's ELF buffer: place before that buffer is freed. */
typedef struct cj_image_seg {
  uint64_t vaddr, memsz, filesz;
  const uint8_t *bytes; /* filesz bytes inside the ELF buffer */
} cj_image_seg;

typedef struct cj_reloc {
  uint64_t offset;      /* r_offset: image address of the 8 patched bytes */
  uint32_t type;        /* ELF64_R_TYPE */
  int64_t addend;
  uint32_t sym_index;   /* 0: no symbol */
  uint64_t sym_value;
  uint16_t sym_shndx;   /* SHN_UNDEF: undefined, SHN_ABS: absolute */
  uint8_t sym_bind;     /* STB_* */
  char sym[128];        /* its name ("" for none), truncated to fit */
} cj_reloc;

typedef struct cj_image {
  uint64_t size;        /* bytes from address 0 to the end of the last PT_LOAD */
  uint32_t nsegs;
  cj_image_seg *segs;
  uint32_t nrelocs;
  cj_reloc *relocs;
} cj_image;

/* The largest image accepted (a corrupt p_memsz must not ask for terabytes). */
#define CJ_IMAGE_MAX_BYTES (1ull << 32)

convjit_status cj_image_read(const void *elf, size_t size, cj_image *out);
/* dst holds im->size bytes (any contents: every byte is written). */
convjit_status cj_image_place(const cj_image *im, uint64_t base, uint8_t *dst);
void cj_image_free(cj_image *im); /* NULL-safe; leaves it empty */
void cj_codeobj_destroy(cj_codeobj *co); /* NULL-safe */
const cj_kernel_info *cj_codeobj_find(const cj_codeobj *co, const char *name);

#endif
