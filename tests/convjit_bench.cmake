# Included by tests/CMakeLists.txt: convjit-bench (issue 13) on the test
# stand-ins. fakehip_emu (tests/fakehip/fake_hip_emu.c) is a HIP runtime
# whose memory and launches are convjit's emulator, with scripted kernel
# times for the events; fakemiopen (tests/fakemiopen) is an MIOpen whose
# immediate-mode conv is the CPU reference, with scripted errors and a
# scripted disagreement. Their symbols from the static areas stay private
# (--exclude-libs) so they never interpose on the tool's own copies.
add_library(fakehip_emu SHARED ${CMAKE_CURRENT_SOURCE_DIR}/fakehip/fake_hip_emu.c)
target_compile_options(fakehip_emu PRIVATE ${CJ_WARN})
target_include_directories(fakehip_emu PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/fakehip)
target_link_libraries(fakehip_emu PRIVATE cj_runtime)
target_link_options(fakehip_emu PRIVATE -Wl,--exclude-libs,ALL)
set_target_properties(fakehip_emu PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fakehip C_VISIBILITY_PRESET hidden)
add_library(fakemiopen SHARED ${CMAKE_CURRENT_SOURCE_DIR}/fakemiopen/fake_miopen.c)
target_compile_options(fakemiopen PRIVATE ${CJ_WARN})
target_link_libraries(fakemiopen PRIVATE cj_ref ${CMAKE_DL_LIBS})
target_link_options(fakemiopen PRIVATE -Wl,--exclude-libs,ALL)
set_target_properties(fakemiopen PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fakemiopen C_VISIBILITY_PRESET hidden)

if(TARGET convjit-bench)
  set(cj_bench $<TARGET_FILE:convjit-bench>)
  set(cj_bench_env "CONVJIT_HIP_LIBRARY=$<TARGET_FILE:fakehip_emu>;CONVJIT_MIOPEN_LIBRARY=$<TARGET_FILE:fakemiopen>")
  set(cj_bench_shapes ${CMAKE_CURRENT_SOURCE_DIR}/bench/tiny_shapes.txt)
  # Acceptance: on a machine without a GPU, --device hip exits 3 with a
  # clear message (a missing runtime here, so the result does not depend
  # on what the machine has installed).
  add_test(NAME tools/bench_no_gpu
           COMMAND bash -c "err=$(CONVJIT_HIP_LIBRARY=/nonexistent/libamdhip64.so \"$0\" --device hip 2>&1); rc=$?; echo \"$err\"; [ $rc -eq 3 ] && echo \"$err\" | grep -q 'no usable HIP device' && echo \"$err\" | grep -q -- '--device emu'"
                   ${cj_bench})
  # --help documents every option the parser takes (the list is the
  # parser's, tools/convjit-bench.c parse_args).
  add_test(NAME tools/bench_help
           COMMAND bash -c "h=$(\"$0\" --help) || exit 1; for o in --device --arch --shapes --vs --json --budget-ms --warmup --min-reps --max-reps --seed --selftest --quick --full --case --list --sampled --report --no-disk-cache --help; do echo \"$h\" | grep -q -- \"$o\" || { echo \"--help lacks $o\"; exit 1; }; done"
                   ${cj_bench})
  # Timing with scripted kernel times, checked against hand-derived
  # values (tests/bench/check_fake_timing.sh says which).
  add_test(NAME tools/bench_fake_timing
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bench/check_fake_timing.sh ${cj_bench} ${cj_bench_shapes})
  set_tests_properties(tools/bench_fake_timing PROPERTIES
    ENVIRONMENT "${cj_bench_env};CJ_FAKEHIP_KERNEL_MS=cj_conv_bf16=0.5,cj_conv_fp8=0.4,0.125;CJ_FAKEMIOPEN_MS=2")
  # A disagreeing MIOpen (one output off by 1 + |y|/2): exit 1, named.
  add_test(NAME tools/bench_fake_miopen_disagree
           COMMAND bash -c "out=$(\"$0\" --shapes \"$1\" --vs miopen --warmup 0 --min-reps 1 --max-reps 1); rc=$?; echo \"$out\"; [ $rc -eq 1 ] && echo \"$out\" | grep -q 'MIOpen DISAGREES: output 3 '"
                   ${cj_bench} ${cj_bench_shapes})
  set_tests_properties(tools/bench_fake_miopen_disagree PROPERTIES ENVIRONMENT "${cj_bench_env};CJ_FAKEMIOPEN_DISAGREE=1")
  # MIOpen errors: a failing immediate call leaves convjit's figures and
  # names the entry point and MIOpen's status (exit 0: nothing disagreed);
  # a failing handle creation stops the run with exit 3.
  add_test(NAME tools/bench_fake_miopen_errors
           COMMAND bash -c "out=$(CJ_FAKEMIOPEN_FAIL=miopenConvolutionForwardImmediate \"$0\" --shapes \"$1\" --vs miopen --warmup 0 --min-reps 1 --max-reps 1) || exit 1; echo \"$out\"; echo \"$out\" | grep -q 'tiny_bf16_3x3x3: MIOpen miopenConvolutionForwardImmediate failed: miopenStatusNotImplemented (fake) (status 6)' || exit 1; err=$(CJ_FAKEMIOPEN_FAIL=miopenCreateWithStream \"$0\" --shapes \"$1\" --vs miopen 2>&1); rc=$?; echo \"$err\"; [ $rc -eq 3 ] && echo \"$err\" | grep -q 'miopenCreateWithStream failed'"
                   ${cj_bench} ${cj_bench_shapes})
  set_tests_properties(tools/bench_fake_miopen_errors PROPERTIES ENVIRONMENT "${cj_bench_env}")
  # The whole user run on the stand-ins: bench + self-test + report. The
  # quick self-test passes on every case, each small case compared bit for
  # bit with the emulator and equal (the fake's launches are the
  # emulator's: a difference would be a bug in the comparison); the report
  # has every section and says FAKE.
  add_test(NAME tools/bench_fake_report
           COMMAND bash -c "rm -f \"$2\"; out=$(\"$0\" --shapes \"$1\" --vs miopen --warmup 0 --min-reps 1 --max-reps 1 --report \"$2\") || exit 1; echo \"$out\"; cat \"$2\"; echo \"$out\" | grep -q 'self-test: [0-9]* passed, 0 failed, 0 skipped; \\([0-9]*\\) compared bit for bit with the emulator, \\1 equal' && ! echo \"$out\" | grep -q 'compared bit for bit with the emulator, 0 equal' && for s in '# convjit-bench report (FAKE' '| arch | gfx942 |' '| compute units | 304 |' '| ROCm / HIP runtime | 6.2.0 (HIP_VERSION 60200000) FAKE |' '| LLVM |' '| MIOpen | 3.0.0 FAKE |' '## Bench' '| tiny_bf16_3x3x3 |' '## Self-test' '## Tuning' 'no tuning rows'; do grep -qF \"$s\" \"$2\" || { echo \"report lacks: $s\"; exit 1; }; done"
                   ${cj_bench} ${cj_bench_shapes} ${PROJECT_BINARY_DIR}/bench-test-report.md)
  set_tests_properties(tools/bench_fake_report PROPERTIES ENVIRONMENT "${cj_bench_env}")
  # A scripted hardware/emulator disagreement: the fake runtime flips an
  # exponent bit of element 5 in the case's one device-to-host copy. The
  # self-test reports the case, the element (device value vs emulator
  # value, and vs the reference), and the reproduction command; exit 1.
  add_test(NAME tools/bench_selftest_disagree
           COMMAND bash -c "out=$(\"$0\" --selftest --case bf16_3x3x3_bias); rc=$?; echo \"$out\"; [ $rc -eq 1 ] && echo \"$out\" | grep -q '^FAIL bf16_3x3x3_bias' && echo \"$out\" | grep -q 'device and emulator differ (same code objects) first at y\\[n 0\\]\\[k 0\\]\\[d 0\\]\\[h 0\\]\\[w 5\\] (output 5)' && echo \"$out\" | grep -q 'outside the reference.s bound; first at y\\[n 0\\]\\[k 0\\]\\[d 0\\]\\[h 0\\]\\[w 5\\]' && echo \"$out\" | grep -q 'reproduce: convjit-bench --device hip --selftest --case bf16_3x3x3_bias --seed 1'"
                   ${cj_bench})
  set_tests_properties(tools/bench_selftest_disagree PROPERTIES ENVIRONMENT "${cj_bench_env};CJ_FAKEHIP_CORRUPT_D2H=1")
  # The sampled check of the large cases (cj_ref_conv_point, with a |x|,
  # |w| pass for the bound), here on small cases: bf16 and fp8 with the
  # quantizing pre-pass and channel scales pass; element 0 (always
  # sampled) flipped in the device copy fails with its coordinates.
  add_test(NAME tools/bench_selftest_sampled
           COMMAND bash -c "for c in bf16_3x3x3_bias fp8_bf16x_quant_chscale; do out=$(\"$0\" --selftest --sampled --case $c) || exit 1; echo \"$out\"; echo \"$out\" | grep -q \"^PASS $c .*\\[sampled\\]\" || exit 1; done; out=$(CJ_FAKEHIP_CORRUPT_D2H=1@1 \"$0\" --selftest --sampled --case bf16_1x3x3); rc=$?; echo \"$out\"; [ $rc -eq 1 ] && echo \"$out\" | grep -q 'of 48 outputs outside the reference.s bound; first at y\\[n 0\\]\\[k 0\\]\\[d 0\\]\\[h 0\\]\\[w 0\\]'"
                   ${cj_bench})
  set_tests_properties(tools/bench_selftest_sampled PROPERTIES ENVIRONMENT "${cj_bench_env}")
  # On the emulator device: figures say EMULATED and no TFLOPS are printed.
  add_test(NAME tools/bench_emu
           COMMAND bash -c "out=$(\"$0\" --device emu --arch gfx942 --shapes \"$1\") || exit 1; echo \"$out\"; echo \"$out\" | grep -q 'ms EMULATED' && ! echo \"$out\" | grep -q ' TF'"
                   ${cj_bench} ${cj_bench_shapes})
  set_tests_properties(tools/bench_no_gpu tools/bench_help tools/bench_fake_timing tools/bench_fake_miopen_disagree
                       tools/bench_fake_miopen_errors tools/bench_fake_report tools/bench_selftest_disagree tools/bench_selftest_sampled tools/bench_emu
                       PROPERTIES LABELS tools)
endif()
