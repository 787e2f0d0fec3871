// Kernels whose timing under the compute-unit simulation (src/perf) is
// derivable by hand; tests/perf/test_perf_mechanics.c derives each from the
// rules of docs/performance.md ("Simulation") and compares. One workgroup
// each; no hazard s_nop where the test wants the simulation's own
// dependency rule to show (the results are never stored).
//   perf_mfma_chain   8 MFMAs accumulating into v[8:11] (SrcC exactly the
//                     previous vDst), then a VALU reads the last result
//   perf_mfma_srcab   the second MFMA reads the first one's result as SrcA
//   perf_lds_conflict a ds_read_b32 of lane * 128 bytes: every lane in one
//                     bank (32 banks) or two (64 banks)
//   perf_barrier      two waves; wave 0 spends 4 x s_nop 15 before s_barrier
//   perf_vmem_wait    a global_load_dword, then s_waitcnt vmcnt(0)
//   perf_vmem_lines   a global_store_dword of lane * 128 bytes (64 lines),
//                     then one of lane * 4 bytes (2 lines), s_waitcnt vmcnt(0)
// Written for gfx942; CMake retargets the text to gfx950 (tests/convjit_emu.cmake).
//
// SGPRs: s[0:1] kernarg pointer (perf_vmem_wait, perf_vmem_lines: x @0,
// 8 KiB).
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl perf_mfma_chain
.p2align 8
.type perf_mfma_chain,@function
perf_mfma_chain:
  v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], 0
  v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], v[8:11]
  v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], v[8:11]
  v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], v[8:11]
  v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], v[8:11]
  v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], v[8:11]
  v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], v[8:11]
  v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], v[8:11]
  v_mov_b32 v12, v8                       // reads the last MFMA's result
  s_endpgm
.Lperf_mfma_chain_end:
.size perf_mfma_chain, .Lperf_mfma_chain_end-perf_mfma_chain

.globl perf_mfma_srcab
.p2align 8
.type perf_mfma_srcab,@function
perf_mfma_srcab:
  v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], 0
  v_mfma_f32_16x16x16_bf16 v[12:15], v[8:9], v[6:7], 0   // SrcA = the first one's vDst
  s_endpgm
.Lperf_mfma_srcab_end:
.size perf_mfma_srcab, .Lperf_mfma_srcab_end-perf_mfma_srcab

.globl perf_lds_conflict
.p2align 8
.type perf_lds_conflict,@function
perf_lds_conflict:
  v_lshlrev_b32 v1, 7, v0                 // lane * 128 bytes
  ds_read_b32 v2, v1
  s_waitcnt lgkmcnt(0)
  s_endpgm
.Lperf_lds_conflict_end:
.size perf_lds_conflict, .Lperf_lds_conflict_end-perf_lds_conflict

.globl perf_barrier
.p2align 8
.type perf_barrier,@function
perf_barrier:
  v_cmp_gt_u32 vcc, 64, v0                // wave 0: every lane; wave 1: none
  s_cbranch_vccz 1f
  s_nop 15
  s_nop 15
  s_nop 15
  s_nop 15
1:
  s_barrier
  s_endpgm
.Lperf_barrier_end:
.size perf_barrier, .Lperf_barrier_end-perf_barrier

.globl perf_vmem_wait
.p2align 8
.type perf_vmem_wait,@function
perf_vmem_wait:
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  v_lshlrev_b32 v1, 2, v0
  global_load_dword v2, v1, s[4:5]
  s_waitcnt vmcnt(0)
  s_endpgm
.Lperf_vmem_wait_end:
.size perf_vmem_wait, .Lperf_vmem_wait_end-perf_vmem_wait

.globl perf_vmem_lines
.p2align 8
.type perf_vmem_lines,@function
perf_vmem_lines:
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  v_lshlrev_b32 v1, 7, v0                 // lane * 128 bytes: a line per lane
  v_lshlrev_b32 v2, 2, v0                 // lane * 4 bytes: 256 bytes, 2 lines
  global_store_dword v1, v0, s[4:5]
  global_store_dword v2, v0, s[4:5]
  s_waitcnt vmcnt(0)
  s_endpgm
.Lperf_vmem_lines_end:
.size perf_vmem_lines, .Lperf_vmem_lines_end-perf_vmem_lines

.rodata
.macro PERF_KD name, lds, kargs
.p2align 6
.amdhsa_kernel \name
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_vgpr_workitem_id 0
  .amdhsa_next_free_vgpr 16
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 16
  .amdhsa_group_segment_fixed_size \lds
  .amdhsa_kernarg_size \kargs
.end_amdhsa_kernel
.endm
  PERF_KD perf_mfma_chain, 0, 0
  PERF_KD perf_mfma_srcab, 0, 0
  PERF_KD perf_lds_conflict, 8192, 0
  PERF_KD perf_barrier, 0, 0
  PERF_KD perf_vmem_wait, 0, 8
  PERF_KD perf_vmem_lines, 0, 8

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - { .name: perf_mfma_chain, .symbol: perf_mfma_chain.kd, .kernarg_segment_size: 0, .kernarg_segment_align: 8,
      .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 10,
      .vgpr_count: 16, .agpr_count: 0, .max_flat_workgroup_size: 64, .sgpr_spill_count: 0, .vgpr_spill_count: 0 }
  - { .name: perf_mfma_srcab, .symbol: perf_mfma_srcab.kd, .kernarg_segment_size: 0, .kernarg_segment_align: 8,
      .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 10,
      .vgpr_count: 16, .agpr_count: 0, .max_flat_workgroup_size: 64, .sgpr_spill_count: 0, .vgpr_spill_count: 0 }
  - { .name: perf_lds_conflict, .symbol: perf_lds_conflict.kd, .kernarg_segment_size: 0, .kernarg_segment_align: 8,
      .group_segment_fixed_size: 8192, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 10,
      .vgpr_count: 16, .agpr_count: 0, .max_flat_workgroup_size: 64, .sgpr_spill_count: 0, .vgpr_spill_count: 0 }
  - { .name: perf_barrier, .symbol: perf_barrier.kd, .kernarg_segment_size: 0, .kernarg_segment_align: 8,
      .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 10,
      .vgpr_count: 16, .agpr_count: 0, .max_flat_workgroup_size: 128, .sgpr_spill_count: 0, .vgpr_spill_count: 0 }
  - .name: perf_vmem_wait
    .symbol: perf_vmem_wait.kd
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 10
    .vgpr_count: 16
    .agpr_count: 0
    .max_flat_workgroup_size: 64
    .sgpr_spill_count: 0
    .vgpr_spill_count: 0
    .args:
      - { .name: x, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
  - { .name: perf_vmem_lines, .symbol: perf_vmem_lines.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8,
      .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 10,
      .vgpr_count: 16, .agpr_count: 0, .max_flat_workgroup_size: 64, .sgpr_spill_count: 0, .vgpr_spill_count: 0,
      .args: [ { .name: x, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global } ] }
...
.end_amdgpu_metadata
