# cmake -DRUN=<convjit-run> -P run_no_args_check.cmake
# The main job as scripts/run starts it: convjit-run with no arguments
# (CONVJIT_HIP_LIBRARY points at no library, so it runs on the emulator on
# any machine). It must exit 0 and print, per job, the summary: two jobs,
# the fp8 layer first (its dtypes line names the fp8 format), then bf16,
# each with a PASS check line and its tolerance; no FAIL anywhere, and no
# plan fields (those are --verbose's).
cmake_minimum_required(VERSION 3.19)
execute_process(COMMAND ${CMAKE_COMMAND} -E env CONVJIT_HIP_LIBRARY=/nonexistent/libamdhip64.so ${RUN}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message(STATUS "${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "convjit-run with no arguments exited ${rc}: ${err}")
endif()
# ';' in the output becomes ',': a match holding one would count as two
# list items.
string(REPLACE ";" "," out "${out}")
function(expect_count regex want what)
  string(REGEX MATCHALL "${regex}" hits "${out}")
  list(LENGTH hits n)
  if(NOT n EQUAL want)
    message(FATAL_ERROR "${what}: ${n} lines match '${regex}', expected ${want}")
  endif()
endfunction()
expect_count("== job [12] of 2: " 2 "job headers")
expect_count("== job 1 of 2: fp8 conv: " 1 "the first job is the fp8 conv")
expect_count("== job 2 of 2: bf16 conv: " 1 "the second job is the bf16 conv")
expect_count("\ndtypes   x fp8_e4m3fn(uz)?, w fp8_e4m3fn(uz)?, y bf16, fp8 format E4M3FN(UZ)? " 1 "the fp8 dtypes line")
expect_count("\ndevice   emulator " 2 "device lines naming the emulator")
expect_count("\ncheck    PASS: [0-9]+ outputs vs the CPU reference, max \\|err\\| [0-9.e+-]+ \\(tolerance there " 2
             "PASS check lines")
expect_count("\n         tolerance = " 2 "tolerance lines")
expect_count("\noverall: PASS\n" 1 "the overall verdict")
expect_count("FAIL" 0 "FAIL")
expect_count("\nplan:" 0 "plan printouts without --verbose")
