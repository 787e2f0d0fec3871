// unsupported: a kernel with one instruction outside the emulator's subset
// (v_mfma_f64_16x16x4_f64: convjit never emits FP64 MFMAs), reached only
// when the by-value argument go is nonzero. Its kernel info must count it,
// a launch with go = 0 runs, and one with go = 1 stops naming it
// (tests/host/test_emu_api.c, tests/tools/test_convjit_emu.py). If the
// emulator ever runs FP64 MFMAs, pick another instruction it does not run.
// Written for gfx942; CMake retargets the text to gfx950 (tests/convjit_emu.cmake).
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl unsupported
.p2align 8
.type unsupported,@function
unsupported:
  s_load_dword s4, s[0:1], 0x0            // go
  s_waitcnt lgkmcnt(0)
  s_cmp_eq_u32 s4, 0
  s_cbranch_scc1 .Lunsupported_done
  v_mfma_f64_16x16x4_f64 v[0:7], v[8:9], v[10:11], 0
.Lunsupported_done:
  s_endpgm
.Lunsupported_end:
.size unsupported, .Lunsupported_end-unsupported

.rodata
.p2align 6
.amdhsa_kernel unsupported
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 16
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 16
  .amdhsa_kernarg_size 8
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - .name: unsupported
    .symbol: unsupported.kd
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
      - { .name: go, .offset: 0, .size: 4, .value_kind: by_value }
...
.end_amdgpu_metadata
