// mfma: one wave computes d = a * bt^T with one v_mfma_f32_16x16x16_bf16
// (valid on gfx942 and gfx950): a is 16x16 bf16 row-major (M x K), bt is
// 16x16 bf16 row-major (N x K, i.e. B transposed), d is 16x16 f32 row-major.
// The operand layout is AMD's (matrix instruction calculator, CDNA3; see
// docs/isa-notes.md §1), written out here so the tests only need a
// plain matmul:
//   A[i][k]: lane 16 (k / 4) + i, register (k % 4) / 2, half k % 2
//            -> lane l holds a[l % 16][4 (l / 16) .. 4 (l / 16) + 3]: one
//               8-byte load at byte 32 (l % 16) + 8 (l / 16)
//   B[k][j]: the same with j for i -> the same load from bt
//   D[i][j]: register i % 4 of lane 16 (i / 4) + j
//            -> lane l, register r holds d[4 (l / 16) + r][l % 16]: byte
//               256 (l / 16) + 64 r + 4 (l % 16)
// Written for gfx942; CMake retargets the text to gfx950 (tests/convjit_emu.cmake).
//
// SGPRs: s[0:1] kernarg pointer. kernarg: a @0, bt @8, d @16. Block: 64.
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl mfma
.p2align 8
.type mfma,@function
mfma:
  s_load_dwordx4 s[4:7], s[0:1], 0x0      // s[4:5] = a, s[6:7] = bt
  s_load_dwordx2 s[8:9], s[0:1], 0x10     // s[8:9] = d
  v_and_b32 v1, 15, v0                    // l % 16
  v_lshrrev_b32 v2, 4, v0                 // l / 16 (v0 < 64: the id is x alone)
  v_lshlrev_b32 v3, 5, v1
  v_lshl_add_u32 v3, v2, 3, v3            // 32 (l % 16) + 8 (l / 16)
  s_waitcnt lgkmcnt(0)
  global_load_dwordx2 v[4:5], v3, s[4:5]  // A operand
  global_load_dwordx2 v[6:7], v3, s[6:7]  // B operand
  v_lshlrev_b32 v8, 2, v1
  v_lshl_add_u32 v8, v2, 8, v8            // 256 (l / 16) + 4 (l % 16)
  s_waitcnt vmcnt(0)
  v_mfma_f32_16x16x16_bf16 v[10:13], v[4:5], v[6:7], 0
  s_nop 7                                 // the MFMA's result before a VMEM reads it
  s_nop 7
  s_nop 7
  global_store_dword v8, v10, s[8:9]
  global_store_dword v8, v11, s[8:9] offset:64
  global_store_dword v8, v12, s[8:9] offset:128
  global_store_dword v8, v13, s[8:9] offset:192
  s_endpgm
.Lmfma_end:
.size mfma, .Lmfma_end-mfma

.rodata
.p2align 6
.amdhsa_kernel mfma
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_vgpr_workitem_id 0
  .amdhsa_next_free_vgpr 16
  .amdhsa_next_free_sgpr 10
  .amdhsa_accum_offset 16
  .amdhsa_group_segment_fixed_size 0
  .amdhsa_kernarg_size 24
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - .name: mfma
    .symbol: mfma.kd
    .kernarg_segment_size: 24
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 12
    .vgpr_count: 16
    .agpr_count: 0
    .max_flat_workgroup_size: 64
    .sgpr_spill_count: 0
    .vgpr_spill_count: 0
    .args:
      - { .name: a, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .name: bt, .offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .name: d, .offset: 16, .size: 8, .value_kind: global_buffer, .address_space: global }
...
.end_amdgpu_metadata
