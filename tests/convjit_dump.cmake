# convjit-dump acceptance (issue 2): resources as JSON with --check for the
# transpose shapes (the 1x1024x3456000 one is past 2^31 elements), ISA with
# LDS instructions, and IR that llvm-as-22 accepts. Exit status and output
# both decide: --check fails the test by exiting 1.
set(CJ_DUMP $<TARGET_FILE:convjit-dump>)
# (PASS_REGULAR_EXPRESSION would ignore the exit status, so bash checks both.)
set(CJ_DUMP_OK "\"lds_bytes\":[1-9][0-9]*,\"scratch_bytes\":0,\"vgpr_spills\":0,\"sgpr_spills\":0")
foreach(cfg "gfx950;fp8;1,1024,3456000" "gfx942;bf16;1,1024,3456000" "gfx942;bf16;2,24,1000"
            "gfx950;fp8;2,24,1000" "gfx942;bf16-fp8;1,1024,3456000" "gfx950;bf16-fp8;2,24,1000"
            "gfx942;fn-fnuz;1,1024,3456000" "gfx950;bf16-fp8q;2,24,1000")
  list(GET cfg 0 arch)
  list(GET cfg 1 dt)
  list(GET cfg 2 shape)
  add_test(NAME tools/dump_check_${arch}_${dt}_${shape}
           COMMAND bash -c "out=$(\"$0\" --arch $1 --op transpose --dtype $2 --shape $3 --emit resources --json --check) && echo \"$out\" && echo \"$out\" | grep -Eq -- \"$4\""
                   ${CJ_DUMP} ${arch} ${dt} ${shape} ${CJ_DUMP_OK})
  set_tests_properties(tools/dump_check_${arch}_${dt}_${shape} PROPERTIES LABELS tools)
endforeach()
# bf16 -> fp8 transpose: the conversion is in the ISA (packed fp8 convert).
add_test(NAME tools/dump_asm_bf16_fp8_converts
         COMMAND bash -c "set -o pipefail; \"$0\" --arch gfx942 --op transpose --dtype bf16-fp8 --shape 2,24,1000 --emit asm | grep -Ec '^\\s+v_cvt_pk_fp8_f32' >/dev/null"
                 ${CJ_DUMP})
set_tests_properties(tools/dump_asm_bf16_fp8_converts PROPERTIES LABELS tools)
add_test(NAME tools/dump_asm_has_lds
         COMMAND bash -c "set -o pipefail; \"$0\" --arch gfx950 --op transpose --dtype fp8 --shape 2,24,1000 --emit asm | grep -Ec '^\\s+ds_(read|write)' >/dev/null"
                 ${CJ_DUMP})
set_tests_properties(tools/dump_asm_has_lds PROPERTIES LABELS tools)
add_test(NAME tools/dump_ir_is_valid
         COMMAND bash -c "set -o pipefail; \"$0\" --arch gfx942 --op transpose --dtype bf16 --shape 1,1024,3456000 --emit ir | \"$1\" -o /dev/null -"
                 ${CJ_DUMP} ${LLVM_BINDIR}/llvm-as)
set_tests_properties(tools/dump_ir_is_valid PROPERTIES LABELS tools)
# Bad arguments: usage on stderr and exit status 2 (not 1, not a crash).
add_test(NAME tools/dump_bad_args
         COMMAND bash -c "\"$0\" --arch gfx950 --op transpose --dtype fp16 --shape 1,2,3; test $? -eq 2 && \"$0\" --arch gfx950 --op nope --shape 1; test $? -eq 2 && \"$0\" --arch gfx950 --op transpose --dtype fp8 --shape 1,2; test $? -eq 2"
                 ${CJ_DUMP})
set_tests_properties(tools/dump_bad_args PROPERTIES LABELS tools)
# --emit mnemonics: the histogram's counts add up to the instruction total it
# reports, and it lists the LDS reads and the s_endpgm every kernel ends with.
add_test(NAME tools/dump_mnemonics
         COMMAND bash -c "set -o pipefail; out=$(\"$0\" --arch gfx942 --op transpose --dtype bf16 --shape 2,24,1000 --emit mnemonics) && echo \"$out\" && echo \"$out\" | grep -Eq '^ +[0-9]+ s_endpgm$' && echo \"$out\" | grep -Eq '^ +[0-9]+ ds_read' && echo \"$out\" | awk '/^; kernel/ {want=$4} /^ +[0-9]+ / {sum+=$1} END {exit !(want > 0 && sum == want)}'"
                 ${CJ_DUMP})
set_tests_properties(tools/dump_mnemonics PROPERTIES LABELS tools)
# --check on a kernel that really spills: the 256x256 (2x4 waves) tile forced
# onto a tiny-K shape on gfx942 runs out of SGPRs (selection never picks it).
# The test needs both halves: the resources say it spills (so the fixture is
# still a spilling kernel), and --check then exits 1 naming the spill. If a
# codegen change makes this config spill-free, pick another that spills.
add_test(NAME tools/dump_check_fails_on_spills
         COMMAND bash -c "\"$0\" --arch gfx942 --op conv --dtype bf16 --shape 1,32,4,16,16,96,1,3,3 --tile 256x128 --waves 2x1 --emit resources --json | grep -Eq '\"sgpr_spills\":[1-9]' || { echo 'fixture no longer spills'; exit 1; }; err=$(\"$0\" --arch gfx942 --op conv --dtype bf16 --shape 1,32,4,16,16,96,1,3,3 --tile 256x128 --waves 2x1 --emit resources --check 2>&1 >/dev/null); rc=$?; echo \"$err\"; test $rc -eq 1 && echo \"$err\" | grep -q 'spill_count'"
                 ${CJ_DUMP})
set_tests_properties(tools/dump_check_fails_on_spills PROPERTIES LABELS tools)
# --emit bounds (issue 11 item 2): the MODELLED per-K-step report of the conv
# kernel on a headline shape has every field; the MFMA cycles are checked
# against the tile, independently of the emulator: gfx942 bf16 256x256x32 (the
# VGPR path's 64-byte rows, issue 38) is 512 v_mfma_f32_16x16x16_bf16 per step
# x 16 cycles / 4 SIMDs = 2048; gfx950 fp8 256x256x128 is 256
# v_mfma_f32_16x16x128_f8f6f4 x 32 / 4 = 2048.
set(CJ_BOUNDS_FIELDS "\"kind\":\"modelled\",\"sampled_workgroup\":[0-9]+,\"waves\":[0-9]+,\"k_steps\":[0-9]+,\"per\":\"K step\",\"mfma_cycles\":MFMA,\"lds_cycles\":[0-9.]+,\"lds_conflict_free_cycles\":[0-9.]+,\"lds_max_degree\":[1-9][0-9]*,\"lds_banks\":BANKS,\"issue_cycles\":[0-9.]+,\"hbm_cycles\":[0-9.]+,\"waves_per_simd\":[0-9.]+,\"workgroups_per_cu\":[0-9]+,\"vmem_bytes\":[0-9]+,\"vmem_bytes_per_flop\":[0-9.]+,\"hbm_bytes_per_flop\":[0-9.]+,\"bound\":\"(mfma|lds|issue|hbm|occupancy)\",\"mfma_fraction\":[0-9.]+,\"vmcnt0_waits\":[0-9]+,\"loop_trips\":[0-9]+")
foreach(cfg "gfx942;bf16;2048.0;32" "gfx950;fp8;2048.0;64")
  list(GET cfg 0 arch)
  list(GET cfg 1 dt)
  list(GET cfg 2 mfma)
  list(GET cfg 3 banks)
  string(REPLACE "MFMA" "${mfma}" re "${CJ_BOUNDS_FIELDS}")
  string(REPLACE "BANKS" "${banks}" re "${re}")
  add_test(NAME tools/dump_bounds_${arch}_${dt}
           COMMAND bash -c "out=$(\"$0\" --arch $1 --op conv --dtype $2 --shape 1,1024,120,160,90,1024,1,3,3 --pad 0,1,1 --emit bounds --no-sim --json) && echo \"$out\" && echo \"$out\" | grep -Eq -- \"$3\""
                   ${CJ_DUMP} ${arch} ${dt} ${re})
  set_tests_properties(tools/dump_bounds_${arch}_${dt} PROPERTIES LABELS tools)
endforeach()
# The kinds' phase kernels (issue 27): --emit bounds reports every conv
# kernel of a backward-data plan (the issue's acceptance shape, stride
# 1,2,2: four output phases of 3x1x1, 3x1x2, 3x2x1, 3x2x2 taps) and of a
# fused 2x upsample (1,2,2 with stride 1: two phases per upsampled dim),
# each with its own K steps: for backward data 3 / 6 / 6 / 12 taps x 64 dy
# channels / gfx950's 32-element K step = 6 / 12 / 12 / 24, the K loop
# running whole groups of its 4 stages (6 -> 8); four reports either way.
foreach(cfg "bwd;--kind bwd-data --stride 1,2,2;gfx950;k_steps\\\":8,.*k_steps\\\":12,.*k_steps\\\":12,.*k_steps\\\":24,"
            "up;--upsample 1,2,2;gfx942;modelled.*modelled.*modelled.*modelled")
  list(GET cfg 0 name)
  list(GET cfg 1 opts)
  list(GET cfg 2 arch)
  list(GET cfg 3 re)
  add_test(NAME tools/dump_bounds_${name}
           COMMAND bash -c "out=$(\"$0\" --arch $1 --op conv --dtype bf16 --shape 1,64,4,8,8,64,3,3,3 --pad 1,1,1 $2 --emit bounds --no-sim --json) && echo \"$out\" && test $(echo \"$out\" | grep -o '\"kind\":\"modelled\"' | wc -l) = 4 && echo \"$out\" | grep -Eq -- \"$3\""
                   ${CJ_DUMP} ${arch} "${opts}" "${re}")
  set_tests_properties(tools/dump_bounds_${name} PROPERTIES LABELS tools)
endforeach()
# and the text form names the model. These two run the compute-unit
# simulation (the headline ones above skip it with --no-sim: it is not
# their subject, and the suite stays as fast) on a shape of one workgroup
# per CU, where it costs ~10 ms: the simulated time, the fraction of peak
# and every reason of the breakdown are printed (docs/performance.md).
add_test(NAME tools/dump_bounds_text
         COMMAND bash -c "set -o pipefail; \"$0\" --arch gfx950 --op conv --dtype bf16 --shape 1,64,4,16,16,128,3,3,3 --pad 1,1,1 --emit bounds | grep -Eq 'simulated \\(MODELLED.*of peak' "
                 ${CJ_DUMP})
set_tests_properties(tools/dump_bounds_text PROPERTIES LABELS tools)
set(CJ_SIM_FIELDS "\"simulated\":\\{\"kind\":\"modelled\",\"simulated_ms\":[0-9.]+,\"simulated_fraction_of_peak\":[0-9.]+,.*\"breakdown\":\\{\"mfma_busy\":[0-9.]+,\"lds_wait\":[0-9.]+,\"vmem_wait\":[0-9.]+,\"barrier_wait\":[0-9.]+,\"issue\":[0-9.]+,\"tail\":[0-9.]+\\}\\},\"simulated_ms\":[0-9.]+,\"simulated_fraction_of_peak\":[0-9.]+")
add_test(NAME tools/dump_bounds_sim_json
         COMMAND bash -c "out=$(\"$0\" --arch gfx942 --op conv --dtype fp8 --shape 1,64,4,16,16,128,3,3,3 --pad 1,1,1 --emit bounds --json) && echo \"$out\" && echo \"$out\" | grep -Eq -- \"$1\""
                 ${CJ_DUMP} ${CJ_SIM_FIELDS})
set_tests_properties(tools/dump_bounds_sim_json PROPERTIES LABELS tools)
# The op's simulated time is the sum of its launch sequence's steps, each
# kernel simulated (the pre-passes, the split-K memset and finalize, the
# backward-weight grid packs and finalize: docs/performance.md "Whole ops");
# one-workgroup-per-CU shapes, ~1 s with their builds.
add_test(NAME tools/dump_bounds_op_splitk
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_op_sum.sh ${CJ_DUMP}
                 "--arch gfx950 --op conv --dtype bf16 --shape 1,64,4,16,16,64,3,3,3 --pad 1,1,1 --splitk 2"
                 "cj_wpack cj_transpose cj_conv_bf16 cj_conv_finalize" memset)
add_test(NAME tools/dump_bounds_op_wgrad
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_op_sum.sh ${CJ_DUMP}
                 "--arch gfx942 --op conv --dtype bf16 --shape 1,64,4,16,16,64,3,3,3 --pad 1,1,1 --kind bwd-weight --bias"
                 "cj_grid_pack_dy cj_grid_pack_x cj_wgrad_bf16 cj_wgrad_finalize")
set_tests_properties(tools/dump_bounds_op_splitk tools/dump_bounds_op_wgrad PROPERTIES LABELS tools)
