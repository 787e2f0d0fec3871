# Included by tests/CMakeLists.txt: the emulator's coverage sweep (issue 9
# item 3, docs/emulator.md "Coverage sweep"). The CI sample: seed 1, the
# default 60 samples on both arches (~200 distinct kernels; every mnemonic
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
