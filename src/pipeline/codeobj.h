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
void cj_codeobj_destroy(cj_codeobj *co); /* NULL-safe */
const cj_kernel_info *cj_codeobj_find(const cj_codeobj *co, const char *name);

#endif
