// lds_reduce and lds_reduce_static: out[wg] = the u32 sum (mod 2^32) of
// x[256 wg .. 256 wg + 255], one workgroup of 256 work-items (4 waves) per
// 256 elements. Each work-item stores its element to LDS, then a tree
// reduction halves the active work-items 8 times (128, 64, ... 1) with an
// s_barrier after the store and after each step: 9 barriers per wave.
// Integer adds keep the expected sum exact in any order.
//   lds_reduce         uses DYNAMIC LDS: group_segment_fixed_size 0, the
//                      launch must give >= 1024 dynamic LDS bytes
//   lds_reduce_static  declares its 1024 bytes statically
// Written for gfx942; CMake retargets the text to gfx950 (tests/convjit_emu.cmake).
//
// SGPRs: s[0:1] kernarg pointer, s2 workgroup id x. kernarg: x @0, out @8.
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"

.macro LDS_REDUCE_BODY
  s_load_dwordx4 s[4:7], s[0:1], 0x0      // s[4:5] = x, s[6:7] = out
  v_and_b32 v1, 0x3ff, v0                 // t
  v_lshlrev_b32 v2, 2, v1                 // 4 t: LDS address of slot t
  s_lshl_b32 s8, s2, 10                   // 1024 wg: the workgroup's first byte in x
  v_add_u32 v3, s8, v2
  s_waitcnt lgkmcnt(0)
  global_load_dword v4, v3, s[4:5]
  s_waitcnt vmcnt(0)
  ds_write_b32 v2, v4
  s_waitcnt lgkmcnt(0)
  s_barrier                               // barrier 1
  s_movk_i32 s10, 0x80                    // stride s = 128
1:
  v_cmp_gt_u32 vcc, s10, v1               // t < s
  s_and_saveexec_b64 s[12:13], vcc
  s_cbranch_execz 2f
  s_lshl_b32 s11, s10, 2
  v_add_u32 v6, s11, v2                   // LDS address of slot t + s
  ds_read_b32 v5, v2
  ds_read_b32 v7, v6
  s_waitcnt lgkmcnt(0)
  v_add_u32 v5, v5, v7
  ds_write_b32 v2, v5
  s_waitcnt lgkmcnt(0)
2:
  s_mov_b64 exec, s[12:13]
  s_barrier                               // barriers 2..9
  s_lshr_b32 s10, s10, 1
  s_cmp_lg_u32 s10, 0
  s_cbranch_scc1 1b
  v_cmp_eq_u32 vcc, 0, v1                 // work-item 0 holds the sum in v5
  s_and_saveexec_b64 s[12:13], vcc
  s_cbranch_execz 3f
  s_lshl_b32 s9, s2, 2
  v_mov_b32 v8, s9
  global_store_dword v8, v5, s[6:7]
3:
  s_endpgm
.endm

.text
.globl lds_reduce
.p2align 8
.type lds_reduce,@function
lds_reduce:
  LDS_REDUCE_BODY
.Llds_reduce_end:
.size lds_reduce, .Llds_reduce_end-lds_reduce

.globl lds_reduce_static
.p2align 8
.type lds_reduce_static,@function
lds_reduce_static:
  LDS_REDUCE_BODY
.Llds_reduce_static_end:
.size lds_reduce_static, .Llds_reduce_static_end-lds_reduce_static

.rodata
.p2align 6
.amdhsa_kernel lds_reduce
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_system_vgpr_workitem_id 0
  .amdhsa_next_free_vgpr 16
  .amdhsa_next_free_sgpr 14
  .amdhsa_accum_offset 16
  .amdhsa_group_segment_fixed_size 0
  .amdhsa_kernarg_size 16
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel lds_reduce_static
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_system_vgpr_workitem_id 0
  .amdhsa_next_free_vgpr 16
  .amdhsa_next_free_sgpr 14
  .amdhsa_accum_offset 16
  .amdhsa_group_segment_fixed_size 1024
  .amdhsa_kernarg_size 16
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - .name: lds_reduce
    .symbol: lds_reduce.kd
    .kernarg_segment_size: 16
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 16
    .agpr_count: 0
    .max_flat_workgroup_size: 256
    .sgpr_spill_count: 0
    .vgpr_spill_count: 0
    .args:
      - { .name: x, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .name: out, .offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global }
  - .name: lds_reduce_static
    .symbol: lds_reduce_static.kd
    .kernarg_segment_size: 16
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 1024
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 16
    .agpr_count: 0
    .max_flat_workgroup_size: 256
    .sgpr_spill_count: 0
    .vgpr_spill_count: 0
    .args:
      - { .name: x, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .name: out, .offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global }
...
.end_amdgpu_metadata
