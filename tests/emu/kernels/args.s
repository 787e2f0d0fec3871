// args: copies the first 176 bytes of its kernarg segment (every explicit
// argument and the hidden ones below) to out, from work-item 0 of workgroup
// 0 only. tests/host/test_emu_api.c decodes the copy at the offsets the
// metadata below gives and compares each value with what it launched with:
// the launch must pack by-value arguments of every size by the metadata and
// fill the hidden arguments as the HIP runtime does.
// Written for gfx942; CMake retargets the text to gfx950 (tests/convjit_emu.cmake).
//
// kernarg: out @0, i32 @8, i64 @16, f32 @24, f64 @32, i16 @40, i8 @42;
// hidden (from 48, LLVM's code object v5 layout): block counts @48/52/56,
// group sizes @60/62/64, grid dims @112, dynamic LDS size @168.
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl args
.p2align 8
.type args,@function
args:
  s_load_dwordx16 s[16:31], s[0:1], 0x0
  s_load_dwordx16 s[32:47], s[0:1], 0x40
  s_load_dwordx8 s[48:55], s[0:1], 0x80
  s_load_dwordx4 s[56:59], s[0:1], 0xa0
  s_or_b32 s5, s2, s3                     // workgroup (0, 0, 0) only
  s_or_b32 s5, s5, s4
  s_cmp_lg_u32 s5, 0
  s_cbranch_scc1 .Largs_done
  v_cmp_eq_u32 vcc, 0, v0                 // work-item (0, 0, 0) only
  s_and_saveexec_b64 s[6:7], vcc
  s_cbranch_execz .Largs_done
  v_mov_b32 v63, 0
  s_waitcnt lgkmcnt(0)
  v_mov_b32 v0, s16
  v_mov_b32 v1, s17
  v_mov_b32 v2, s18
  v_mov_b32 v3, s19
  v_mov_b32 v4, s20
  v_mov_b32 v5, s21
  v_mov_b32 v6, s22
  v_mov_b32 v7, s23
  v_mov_b32 v8, s24
  v_mov_b32 v9, s25
  v_mov_b32 v10, s26
  v_mov_b32 v11, s27
  v_mov_b32 v12, s28
  v_mov_b32 v13, s29
  v_mov_b32 v14, s30
  v_mov_b32 v15, s31
  v_mov_b32 v16, s32
  v_mov_b32 v17, s33
  v_mov_b32 v18, s34
  v_mov_b32 v19, s35
  v_mov_b32 v20, s36
  v_mov_b32 v21, s37
  v_mov_b32 v22, s38
  v_mov_b32 v23, s39
  v_mov_b32 v24, s40
  v_mov_b32 v25, s41
  v_mov_b32 v26, s42
  v_mov_b32 v27, s43
  v_mov_b32 v28, s44
  v_mov_b32 v29, s45
  v_mov_b32 v30, s46
  v_mov_b32 v31, s47
  v_mov_b32 v32, s48
  v_mov_b32 v33, s49
  v_mov_b32 v34, s50
  v_mov_b32 v35, s51
  v_mov_b32 v36, s52
  v_mov_b32 v37, s53
  v_mov_b32 v38, s54
  v_mov_b32 v39, s55
  v_mov_b32 v40, s56
  v_mov_b32 v41, s57
  v_mov_b32 v42, s58
  v_mov_b32 v43, s59
  global_store_dwordx4 v63, v[0:3], s[16:17] offset:0
  global_store_dwordx4 v63, v[4:7], s[16:17] offset:16
  global_store_dwordx4 v63, v[8:11], s[16:17] offset:32
  global_store_dwordx4 v63, v[12:15], s[16:17] offset:48
  global_store_dwordx4 v63, v[16:19], s[16:17] offset:64
  global_store_dwordx4 v63, v[20:23], s[16:17] offset:80
  global_store_dwordx4 v63, v[24:27], s[16:17] offset:96
  global_store_dwordx4 v63, v[28:31], s[16:17] offset:112
  global_store_dwordx4 v63, v[32:35], s[16:17] offset:128
  global_store_dwordx4 v63, v[36:39], s[16:17] offset:144
  global_store_dwordx4 v63, v[40:43], s[16:17] offset:160
.Largs_done:
  s_endpgm
.Largs_end:
.size args, .Largs_end-args

.rodata
.p2align 6
.amdhsa_kernel args
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_system_sgpr_workgroup_id_y 1
  .amdhsa_system_sgpr_workgroup_id_z 1
  .amdhsa_system_vgpr_workitem_id 2
  .amdhsa_next_free_vgpr 64
  .amdhsa_next_free_sgpr 60
  .amdhsa_accum_offset 64
  .amdhsa_group_segment_fixed_size 0
  .amdhsa_kernarg_size 304
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - .name: args
    .symbol: args.kd
    .kernarg_segment_size: 304
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 62
    .vgpr_count: 64
    .agpr_count: 0
    .max_flat_workgroup_size: 256
    .sgpr_spill_count: 0
    .vgpr_spill_count: 0
    .args:
      - { .name: out, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .name: i32, .offset: 8, .size: 4, .value_kind: by_value }
      - { .name: i64, .offset: 16, .size: 8, .value_kind: by_value }
      - { .name: f32, .offset: 24, .size: 4, .value_kind: by_value }
      - { .name: f64, .offset: 32, .size: 8, .value_kind: by_value }
      - { .name: i16, .offset: 40, .size: 2, .value_kind: by_value }
      - { .name: i8, .offset: 42, .size: 1, .value_kind: by_value }
      - { .offset: 48, .size: 4, .value_kind: hidden_block_count_x }
      - { .offset: 52, .size: 4, .value_kind: hidden_block_count_y }
      - { .offset: 56, .size: 4, .value_kind: hidden_block_count_z }
      - { .offset: 60, .size: 2, .value_kind: hidden_group_size_x }
      - { .offset: 62, .size: 2, .value_kind: hidden_group_size_y }
      - { .offset: 64, .size: 2, .value_kind: hidden_group_size_z }
      - { .offset: 112, .size: 2, .value_kind: hidden_grid_dims }
      - { .offset: 168, .size: 4, .value_kind: hidden_dynamic_lds_size }
...
.end_amdgpu_metadata
