// bad_arch: an empty kernel for gfx90a, an arch the emulator does not run:
// loading it must fail naming both arches (tests/host/test_emu_api.c,
// tests/tools/test_convjit_emu.py). Assembled for gfx90a only.
.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
.text
.globl bad_arch
.p2align 8
.type bad_arch,@function
bad_arch:
  s_endpgm
.Lbad_arch_end:
.size bad_arch, .Lbad_arch_end-bad_arch

.rodata
.p2align 6
.amdhsa_kernel bad_arch
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 8
  .amdhsa_kernarg_size 8
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx90a
amdhsa.kernels:
  - .name: bad_arch
    .symbol: bad_arch.kd
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 10
    .vgpr_count: 8
    .agpr_count: 0
    .max_flat_workgroup_size: 64
    .sgpr_spill_count: 0
    .vgpr_spill_count: 0
    .args:
      - { .name: p, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
...
.end_amdgpu_metadata
