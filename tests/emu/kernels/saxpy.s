// saxpy: y[i] = a * x[i] + y[i] for i < n (tests/host/test_emu_api.c,
// tests/tools/test_convjit_emu.py). Any 1-D block size: the block size is
// read from the hidden_group_size_x argument, so a run also checks that the
// launch fills the hidden arguments where the metadata puts them.
// Written for gfx942; CMake retargets the text to gfx950 (tests/convjit_emu.cmake).
//
// SGPRs: s[0:1] kernarg pointer, s2 workgroup id x. v0 packed work-item ids.
// kernarg: x @0 (8), y @8 (8), a @16 (f32), n @20 (i32), hidden from 24:
// block counts @24/28/32, group sizes @36/38/40 (2 bytes each).
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl saxpy
.p2align 8
.type saxpy,@function
saxpy:
  s_load_dwordx4 s[4:7], s[0:1], 0x0      // s[4:5] = x, s[6:7] = y
  s_load_dwordx2 s[8:9], s[0:1], 0x10     // s8 = a, s9 = n
  s_load_dword s10, s[0:1], 0x24          // [15:0] hidden_group_size_x, [31:16] _y
  v_and_b32 v1, 0x3ff, v0                 // work-item id x
  s_waitcnt lgkmcnt(0)
  s_and_b32 s10, s10, 0xffff
  s_mul_i32 s11, s2, s10                  // first index of this workgroup
  v_add_u32 v1, s11, v1                   // i
  v_cmp_gt_u32 vcc, s9, v1                // i < n
  s_and_saveexec_b64 s[12:13], vcc
  s_cbranch_execz .Lsaxpy_done
  v_lshlrev_b32 v2, 2, v1                 // byte offset of element i
  global_load_dword v3, v2, s[4:5]
  global_load_dword v4, v2, s[6:7]
  s_waitcnt vmcnt(0)
  v_fmac_f32 v4, s8, v3                   // y + a * x
  global_store_dword v2, v4, s[6:7]
.Lsaxpy_done:
  s_endpgm
.Lsaxpy_end:
.size saxpy, .Lsaxpy_end-saxpy

.rodata
.p2align 6
.amdhsa_kernel saxpy
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_system_vgpr_workitem_id 0
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 14
  .amdhsa_accum_offset 8
  .amdhsa_group_segment_fixed_size 0
  .amdhsa_kernarg_size 280
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - .name: saxpy
    .symbol: saxpy.kd
    .kernarg_segment_size: 280
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 8
    .agpr_count: 0
    .max_flat_workgroup_size: 1024
    .sgpr_spill_count: 0
    .vgpr_spill_count: 0
    .args:
      - { .name: x, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .name: y, .offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .name: a, .offset: 16, .size: 4, .value_kind: by_value }
      - { .name: n, .offset: 20, .size: 4, .value_kind: by_value }
      - { .offset: 24, .size: 4, .value_kind: hidden_block_count_x }
      - { .offset: 28, .size: 4, .value_kind: hidden_block_count_y }
      - { .offset: 32, .size: 4, .value_kind: hidden_block_count_z }
      - { .offset: 36, .size: 2, .value_kind: hidden_group_size_x }
      - { .offset: 38, .size: 2, .value_kind: hidden_group_size_y }
      - { .offset: 40, .size: 2, .value_kind: hidden_group_size_z }
      - { .offset: 88, .size: 2, .value_kind: hidden_grid_dims }
...
.end_amdgpu_metadata
