// globals: out[i] = tab[i & 15] + bias for the 64 work-items of workgroup 0,
// where tab is a constant table in .rodata reached PC-relative (s_getpc_b64
// + rel32, resolved by the linker) and bias a default-visibility global in
// .data reached through the GOT (an s_load of the entry the loader fills
// from the R_AMDGPU_ABS64 of .rela.dyn). Checks that the emulator loads
// the image and relocates it (tests/host/test_emu_api.c,
// tests/tools/test_convjit_emu.py).
// Written for gfx942; CMake retargets the text to gfx950 (tests/convjit_emu.cmake).
//
// SGPRs: s[0:1] kernarg pointer. v0 packed work-item ids. kernarg: out @0.
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl globals
.p2align 8
.type globals,@function
globals:
  s_load_dwordx2 s[4:5], s[0:1], 0x0      // out
  s_getpc_b64 s[6:7]                      // address of the s_add_u32
  s_add_u32 s6, s6, tab@rel32@lo+4        // its literal lies 4 bytes further
  s_addc_u32 s7, s7, tab@rel32@hi+12
  s_getpc_b64 s[8:9]
  s_add_u32 s8, s8, bias@gotpcrel32@lo+4  // &GOT[bias]
  s_addc_u32 s9, s9, bias@gotpcrel32@hi+12
  s_load_dwordx2 s[8:9], s[8:9], 0x0      // &bias
  v_and_b32 v1, 0x3ff, v0                 // work-item id x
  v_and_b32 v2, 15, v1
  v_lshlrev_b32 v2, 2, v2                 // byte offset of tab[i & 15]
  global_load_dword v3, v2, s[6:7]
  s_waitcnt lgkmcnt(0)
  s_load_dword s10, s[8:9], 0x0           // bias
  v_lshlrev_b32 v1, 2, v1                 // byte offset of out[i]
  s_waitcnt vmcnt(0) lgkmcnt(0)
  v_add_u32 v3, s10, v3
  global_store_dword v1, v3, s[4:5]
  s_endpgm
.Lglobals_end:
.size globals, .Lglobals_end-globals

.rodata
.p2align 6
tab:
  .long 31, -4, 159, 26, -535, 89, 79, 3, 238, -462, 643, 38, 327, -950, 288, 41

.data
.globl bias
.p2align 2
.type bias,@object
bias:
  .long 1000
.size bias, 4

.rodata
.p2align 6
.amdhsa_kernel globals
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_vgpr_workitem_id 0
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 12
  .amdhsa_accum_offset 8
  .amdhsa_group_segment_fixed_size 0
  .amdhsa_kernarg_size 8
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - .name: globals
    .symbol: globals.kd
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 14
    .vgpr_count: 8
    .agpr_count: 0
    .max_flat_workgroup_size: 64
    .sgpr_spill_count: 0
    .vgpr_spill_count: 0
    .args:
      - { .name: out, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
...
.end_amdgpu_metadata
