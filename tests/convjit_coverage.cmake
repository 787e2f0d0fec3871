# Included by tests/CMakeLists.txt: the emulator's coverage sweep (issue 9
# item 3, docs/emulator.md "Coverage sweep"). The CI sample: seed 1, the
# default 60 samples on both arches (~300 distinct kernels; every mnemonic
# must be in the emulator's table and every instruction must decode). The
# full sweep is the documented command with a larger --samples.
if(TARGET convjit-coverage)
  add_test(NAME tools/coverage_sample COMMAND convjit-coverage --seed 1)
  set_tests_properties(tools/coverage_sample PROPERTIES LABELS "tools;emu")
  # The gate can fail: a mnemonic every kernel has (s_endpgm), treated as
  # absent, must exit 1 and be named with the plan it came from.
  add_test(NAME tools/coverage_gate_fails
           COMMAND bash -c "out=$(\"$0\" --samples 2 --pretend-missing s_endpgm); rc=$?; echo \"$out\"; test $rc -eq 1 && echo \"$out\" | grep -Eq '^MISSING s_endpgm: .*first in: (convjit-dump|kernel spec)'"
                   $<TARGET_FILE:convjit-coverage>)
  set_tests_properties(tools/coverage_gate_fails PROPERTIES LABELS tools)
  add_test(NAME tools/coverage_bad_args
           COMMAND bash -c "\"$0\" --samples 12x; test $? -eq 2 && \"$0\" --arch gfx90a; test $? -eq 2"
                   $<TARGET_FILE:convjit-coverage>)
  set_tests_properties(tools/coverage_bad_args PROPERTIES LABELS tools)
endif()
# Issue 9 item 3: the two layer shapes reported stopping at an instruction
# the emulator lacked (v_mad_legacy_u16) run and check on both arches.
if(TARGET convjit-run)
  foreach(arch gfx942 gfx950)
    foreach(shape 1,24,8,8,32,3,3 1,40,8,8,16,3,3)
      add_test(NAME tools/coverage_run_${arch}_${shape}
               COMMAND bash -c "${CJ_RUN_PASS}; run --device emu --check --no-disk-cache --arch $1 --shape $2"
                       $<TARGET_FILE:convjit-run> ${arch} ${shape})
      set_tests_properties(tools/coverage_run_${arch}_${shape} PROPERTIES LABELS "tools;emu"
        ENVIRONMENT "CONVJIT_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
    endforeach()
  endforeach()
endif()
