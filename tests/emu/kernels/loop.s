// loop: kernels that do not end, for the emulator's instruction budget
// (convjit_emu_launch_options.max_instructions, CONVJIT_EMU_MAX_INSTRUCTIONS,
// convjit-emu --max-instructions; tests/host/test_emu_api.c,
// tests/tools/test_convjit_emu.py):
//   spin       an s_branch to itself: one instruction executed forever
//   valu_loop  a VALU counter and compare with a branch on VCC: trips
//              iterations, forever when trips = 0 (the counter wraps only
//              after 2^32 of them). A wave executes exactly 3 * trips + 4
//              instructions (s_load, v_mov, s_waitcnt, 3 per trip,
//              s_endpgm), so a budget of that many lets it end and one
//              fewer stops it.
// Written for gfx942; CMake retargets the text to gfx950 (tests/convjit_emu.cmake).
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl spin
.p2align 8
.type spin,@function
spin:
.Lspin_self:
  s_branch .Lspin_self
  s_endpgm
.Lspin_end:
.size spin, .Lspin_end-spin

.globl valu_loop
.p2align 8
.type valu_loop,@function
valu_loop:
  s_load_dword s4, s[0:1], 0x0            // trips
  v_mov_b32 v1, 0
  s_waitcnt lgkmcnt(0)
.Lvalu_loop_top:
  v_add_u32 v1, 1, v1
  v_cmp_ne_u32 vcc, s4, v1                // count != trips: go on
  s_cbranch_vccnz .Lvalu_loop_top
  s_endpgm
.Lvalu_loop_end:
.size valu_loop, .Lvalu_loop_end-valu_loop

.rodata
.p2align 6
.amdhsa_kernel spin
  .amdhsa_next_free_vgpr 4
  .amdhsa_next_free_sgpr 4
  .amdhsa_accum_offset 4
  .amdhsa_kernarg_size 0
.end_amdhsa_kernel

.p2align 6
.amdhsa_kernel valu_loop
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 4
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 4
  .amdhsa_kernarg_size 8
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - .name: spin
    .symbol: spin.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 6
    .vgpr_count: 4
    .agpr_count: 0
    .max_flat_workgroup_size: 1024
    .sgpr_spill_count: 0
    .vgpr_spill_count: 0
    .args: []
  - .name: valu_loop
    .symbol: valu_loop.kd
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 10
    .vgpr_count: 4
    .agpr_count: 0
    .max_flat_workgroup_size: 1024
    .sgpr_spill_count: 0
    .vgpr_spill_count: 0
    .args:
      - { .name: trips, .offset: 0, .size: 4, .value_kind: by_value }
...
.end_amdgpu_metadata
