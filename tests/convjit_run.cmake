# Included by tests/CMakeLists.txt: convjit-run's acceptance jobs on the
# emulator, each run twice (check passes; the second run is all disk hits).
if(TARGET convjit-run)
  add_test(NAME host/run_transpose_bf16
           COMMAND ${CMAKE_COMMAND} -DRUN=$<TARGET_FILE:convjit-run> -DWORK=${PROJECT_BINARY_DIR}/run-test-tr
                   "-DARGS=--device;emu;--arch;gfx942;--op;transpose;--dtype;bf16;--shape;2,24,1000;--check;--json"
                   -P ${PROJECT_SOURCE_DIR}/cmake/run_test.cmake)
  add_test(NAME host/run_default
           COMMAND ${CMAKE_COMMAND} -DRUN=$<TARGET_FILE:convjit-run> -DWORK=${PROJECT_BINARY_DIR}/run-test-default
                   "-DARGS=--device;emu;--json" -P ${PROJECT_SOURCE_DIR}/cmake/run_test.cmake)
  # Issue 8 item 10: the first candidate for this gfx942 shape fails the
  # resource gate (SGPR spills at 4 stages, no split); plan creation walks
  # on to a candidate that fits instead of failing, and the result checks.
  # (Its own job, not run_test.cmake's twice-run: the rejected candidate
  # already loads the pack and transpose kernels, so those are memory hits.)
  add_test(NAME host/run_conv_fallback_gfx942
           COMMAND bash -c "${CJ_RUN_PASS}; run --device emu --arch gfx942 --op conv --dtype bf16 --shape 1,16,2,2,3,640,3,3,3 --pad 1,1,1 --bias --check"
                   $<TARGET_FILE:convjit-run>)
  # Issue 9 item 10c: --check on a real-valued C = 128 conv, where the old
  # tolerance (2^-8 of sum |x*w|, > 3 here, above any single |x*w| <= 1)
  # could not see a dropped product; the derived bound (ref_conv.h) can
  # (a weight pack dropping each row's last element passed the old check
  # and fails this one).
  add_test(NAME host/run_check_c128
           COMMAND bash -c "${CJ_RUN_PASS}; for a in gfx942 gfx950; do run --device emu --arch $a --op conv --dtype bf16 --shape 1,128,3,4,4,16,3,3,3 --no-disk-cache --check || exit 1; done"
                   $<TARGET_FILE:convjit-run>)
  # Issue 14 items 3-5: the fused epilogue's acceptance command (residual +
  # SiLU + bias) on both arches and dtypes, and the causal streaming run (17
  # frames in chunks of 1+4+4+4+4 with x_prev, bit-identical to the whole).
  add_test(NAME host/run_epilogue_residual_silu
           COMMAND bash -c "${CJ_RUN_PASS}; for a in gfx950 gfx942; do for d in bf16 fp8; do run --device emu --arch $a --op conv --dtype $d --shape 1,64,4,10,10,128,3,3,3 --pad 1,1,1 --residual --act silu --bias --check || exit 1; done; done"
                   $<TARGET_FILE:convjit-run>)
  add_test(NAME host/run_stream_chunks
           COMMAND bash -c "${CJ_RUN_PASS}; for a in gfx950 gfx942; do run --device emu --arch $a --op conv --dtype bf16 --shape 1,16,17,6,6,32,3,3,3 --pad 2,1,1,0,1,1 --bias --act gelu --residual --stream-chunks 1,4,4,4,4 && echo \"$out\" | grep -q 'bit-identical' || exit 1; done"
                   $<TARGET_FILE:convjit-run>)
  # Issue 27 item 4 from the command line: f16 (y f16, and y f32 with an
  # f32 residual) with the fused epilogue, both arches, checked against the
  # reference with y's rounding (docs/api.md "Dtypes").
  add_test(NAME host/run_f16
           COMMAND bash -c "${CJ_RUN_PASS}; for a in gfx950 gfx942; do for y in f16 f32; do run --device emu --arch $a --op conv --dtype f16 --y-dtype $y --shape 1,32,4,8,10,64,3,3,3 --pad 1,1,1 --residual --act silu --bias --no-disk-cache --check || exit 1; done; done"
                   $<TARGET_FILE:convjit-run>)
  # Issue 27's acceptance commands: backward data of the forward problem
  # --shape/--stride/--pad describe (dx from a dy of its output's shape),
  # bf16 and f16 on both arches; the transposed conv's form (output_padding
  # 0,1,1: dx one position longer in h and w, and the epilogue over dx);
  # the fused 2x upsample (f16 and bf16, a bias and silu), each checked
  # against the definition references (ref_conv.h) with the derived bound.
  add_test(NAME host/run_bwd_data
           COMMAND bash -c "${CJ_RUN_PASS}; for a in gfx950 gfx942; do for d in bf16 f16; do run --device emu --arch $a --kind bwd-data --dtype $d --shape 1,64,4,8,8,64,3,3,3 --stride 1,2,2 --pad 1,1,1 --check || exit 1; done; run --device emu --arch $a --kind bwd-data --dtype bf16 --shape 1,32,4,9,9,48,3,3,3 --stride 1,2,2 --pad 1,1,1 --output-padding 0,1,1 --bias --residual --act silu --check && echo \"$out\" | grep -q '\"shape\":\\[1,32,4,9,9' || exit 1; for d in bf16 f16; do run --device emu --arch $a --dtype $d --upsample 1,2,2 --shape 1,32,4,6,6,48,3,3,3 --pad 1,1,1 --bias --act silu --check || exit 1; done; done"
                   $<TARGET_FILE:convjit-run>)
  # Issue 28's acceptance: the backward weight of 2,32,4,8,8 -> 48 3x3x3 pad
  # 1 passes its check on both arches, bf16 and f16, and two invocations give
  # the same dw (the printed digest of its bytes; each invocation also runs it
  # twice).
  # Then with db and f32 dw, and the atomics variant (checked, not required
  # bit-identical).
  add_test(NAME host/run_bwd_weight
           COMMAND bash -c "${CJ_RUN_PASS}; for a in gfx942 gfx950; do for t in bf16 f16; do run --device emu --arch $a --kind bwd-weight --dtype $t --shape 2,32,4,8,8,48,3,3,3 --pad 1,1,1 --check || exit 1; d1=$(echo \"$out\" | grep -o '\"digest\":\"[0-9a-f]*\"'); echo \"$out\" | grep -q '\"bit_identical_runs\":true' || exit 1; run --device emu --arch $a --kind bwd-weight --dtype $t --shape 2,32,4,8,8,48,3,3,3 --pad 1,1,1 --check || exit 1; d2=$(echo \"$out\" | grep -o '\"digest\":\"[0-9a-f]*\"'); [ -n \"$d1\" ] && [ \"$d1\" = \"$d2\" ] || { echo \"digests differ: $d1 $d2\"; exit 1; }; done; run --device emu --arch $a --kind bwd-weight --shape 2,24,9,11,20,3,3 --stride 2,2 --pad 1,1 --bias --dw-dtype f32 --check || exit 1; run --device emu --arch $a --kind bwd-weight --shape 2,24,9,11,20,3,3 --pad 1,1 --bias --nondeterministic --check || exit 1; done"
                   $<TARGET_FILE:convjit-run>)
  # Issue 40's acceptance: the depthwise 3x3x3 conv (groups = C = 64) on the
  # direct family, both arches: forward in bf16 (NCDHW) and f16 (NDHWC);
  # backward data and backward weight (with db: two invocations give the
  # same dw digest, each runs it twice bit-identical) in bf16 NCDHW on
  # gfx950 and f16 NDHWC on gfx942.
  add_test(NAME host/run_depthwise
           COMMAND bash -c "${CJ_RUN_PASS}; S='--shape 2,64,4,16,16,64,3,3,3 --groups 64 --pad 1,1,1 --device emu --check'; for al in gfx950,bf16,ncdhw gfx942,f16,ndhwc; do IFS=, read a d l <<< \"$al\"; for dl in bf16,ncdhw f16,ndhwc; do run $S --arch $a --dtype \${dl%,*} --layout \${dl#*,} && echo \"$out\" | grep -q 'cj_convd_' || exit 1; done; run $S --arch $a --dtype $d --layout $l --kind bwd-data && echo \"$out\" | grep -q 'cj_convd_' || exit 1; run $S --arch $a --dtype $d --layout $l --kind bwd-weight --bias && echo \"$out\" | grep -q '\"bit_identical_runs\":true' || exit 1; d1=$(echo \"$out\" | grep -o '\"digest\":\"[0-9a-f]*\"'); run $S --arch $a --dtype $d --layout $l --kind bwd-weight --bias || exit 1; d2=$(echo \"$out\" | grep -o '\"digest\":\"[0-9a-f]*\"'); [ -n \"$d1\" ] && [ \"$d1\" = \"$d2\" ] || exit 1; done"
                   $<TARGET_FILE:convjit-run>)
  set_tests_properties(host/run_transpose_bf16 host/run_default host/run_conv_fallback_gfx942 host/run_check_c128
                       host/run_epilogue_residual_silu host/run_stream_chunks host/run_f16 host/run_bwd_data
                       host/run_bwd_weight host/run_depthwise
                       PROPERTIES LABELS host)
  # Issue 10 item 13: convjit-run with no arguments (scripts/run's job)
  # prints the fp8 and the bf16 summary, each checked and passing.
  add_test(NAME tools/run_no_args
           COMMAND ${CMAKE_COMMAND} -DRUN=$<TARGET_FILE:convjit-run> -P ${PROJECT_SOURCE_DIR}/tests/tools/run_no_args_check.cmake)
  set_tests_properties(tools/run_no_args PROPERTIES LABELS tools
    ENVIRONMENT "CONVJIT_CACHE_DIR=${PROJECT_BINARY_DIR}/run-test-no-args")
  # The summary on a HIP device (the fake runtime, tests/fakehip: kernels
  # never run, so no --check): the device line carries hipDeviceGetName's
  # model name, and no kernel time is printed (no GPU times by default).
  add_test(NAME tools/run_hip_summary
           COMMAND bash -c "out=$(CONVJIT_HIP_LIBRARY=\"$1\" \"$0\" --shape 1,16,2,4,4,16,3,3,3 --pad 1,1,1 --no-disk-cache) && echo \"$out\" && echo \"$out\" | grep -qx 'device   HIP device AMD Instinct MI300X (fake), 304 CUs' && ! echo \"$out\" | grep -q '^time'"
                   $<TARGET_FILE:convjit-run> $<TARGET_FILE:fakehip>)
  set_tests_properties(tools/run_hip_summary PROPERTIES LABELS tools)
  # Issue 10 items 5 and 6 from the command line: E4M3FN data on gfx942
  # (mapped by the pre-pass) with per-tensor scales, checked against the
  # reference in E4M3FN; E4M3FNUZ data on gfx950 is refused (exit 1, the
  # reason named), never run.
  add_test(NAME tools/run_fp8_fn_on_gfx942
           COMMAND bash -c "${CJ_RUN_PASS}; run --device emu --arch gfx942 --op conv --dtype fp8 --fp8-format fn --x-scale 0.5 --w-scale 0.03 --shape 1,32,4,8,8,48,3,3,3 --pad 1,1,1 --bias --no-disk-cache --check && { err=$(\"$0\" --device emu --arch gfx950 --op conv --dtype fp8 --fp8-format fnuz --shape 1,32,4,8,8,48,3,3,3 --no-disk-cache 2>&1); rc=$?; echo \"$err\"; [ $rc -ne 0 ] && echo \"$err\" | grep -q 'no exact image of E4M3FNUZ'; }"
                   $<TARGET_FILE:convjit-run>)
  set_tests_properties(tools/run_fp8_fn_on_gfx942 PROPERTIES LABELS tools)
  # Issue 14 acceptance (items 1, 2, 5): channels-last x and y read and
  # written in place (C = 40: a whole number of bf16 chunks, but 2.5 fp8
  # chunks, so fp8 takes the masked 4-byte path): the check passes, no
  # transpose kernel runs and the workspace is 0; grouped conv (4 groups of
  # 16 -> 32 channels) passes on both arches and dtypes.
  add_test(NAME tools/run_ndhwc_groups
           COMMAND bash -c "${CJ_RUN_PASS}; for a in gfx950 gfx942; do for t in bf16 fp8; do run --device emu --arch $a --op conv --dtype $t --layout ndhwc --shape 1,40,5,12,12,64,3,3,3 --pad 1,1,1 --no-disk-cache --check && echo \"$out\" | grep -q '\"workspace_bytes\":0' && ! echo \"$out\" | grep -q 'transpose' || exit 1; run --device emu --arch $a --op conv --dtype $t --groups 4 --shape 1,64,4,10,10,128,3,3,3 --pad 1,1,1 --no-disk-cache --check || exit 1; done; done"
                   $<TARGET_FILE:convjit-run>)
  set_tests_properties(tools/run_ndhwc_groups PROPERTIES LABELS tools)
  # The issue-14 features together: a grouped conv with NDHWC x and y,
  # residual (in y's layout), GELU and bias, both arches and dtypes; and a
  # grouped causal conv streamed in chunks with a residual, bit-identical
  # to the whole tensor.
  add_test(NAME tools/run_issue14_combined
           COMMAND bash -c "${CJ_RUN_PASS}; for a in gfx950 gfx942; do for t in bf16 fp8; do run --device emu --arch $a --op conv --dtype $t --groups 4 --layout ndhwc --residual --act gelu --bias --shape 1,64,4,10,10,128,3,3,3 --pad 1,1,1 --no-disk-cache --check || exit 1; done; done; run --device emu --arch gfx950 --op conv --dtype bf16 --groups 2 --residual --act silu --shape 1,32,9,8,8,64,3,3,3 --pad 2,1,1,0,1,1 --stream-chunks 1,4,4 --no-disk-cache --check && echo \"$out\" | grep -q 'bit-identical'"
                   $<TARGET_FILE:convjit-run>)
  set_tests_properties(tools/run_issue14_combined PROPERTIES LABELS tools)
  # Issue 25 item 5: a run that succeeds logs no error. With CONVJIT_LOG=error
  # the candidates the selection rejects on the way (a split-K one on a
  # single K step; on gfx942 one that fails the resource gate) print
  # nothing: they are logged at debug (one info line counts them).
  set(CJ_RUN_LOG_ERROR_SH [=[
for args in "--arch gfx950 --shape 1,16,6,6,8,1,1" "--arch gfx942 --shape 1,16,6,6,8,1,1" \
            "--arch gfx942 --shape 1,16,2,2,3,640,3,3,3 --pad 1,1,1 --bias"; do
  err=$(CONVJIT_LOG=error "$0" --device emu --check --no-disk-cache $args 2>&1 >/dev/null); rc=$?
  [[ $rc -eq 0 ]] || { echo "$args: exit $rc"; echo "$err"; exit 1; }
  [[ -z $err ]] || { echo "$args: CONVJIT_LOG=error printed on a run that succeeds:"; echo "$err"; exit 1; }
done
]=])
  add_test(NAME tools/run_log_error_quiet COMMAND bash -c "${CJ_RUN_LOG_ERROR_SH}" $<TARGET_FILE:convjit-run>)
  # Issue 25 item 4: 2^31 input elements, 8 -> 8 channels, 1x1x1 (a valid
  # descriptor): the selection's own candidates never surface as the user's
  # invalid argument (exit 2 with usage); the answer is a plan or a status
  # in the descriptor's terms (docs/api.md "Size limits").
  set(CJ_RUN_HUGE_SH [=[
err=$("$0" --device emu --shape 1,8,64,2048,2048,8,1,1,1 --pad 0,0,0 --no-disk-cache 2>&1 >/dev/null); rc=$?
echo "exit $rc: $err"
[[ $rc -ne 2 ]] || { echo "exit 2: refused as a usage error"; exit 1; }
! grep -q '^usage' <<<"$err" || { echo "usage printed"; exit 1; }
! grep -q 'splitk\|candidate' <<<"$err" || { echo "an internal candidate's message"; exit 1; }
[[ $rc -eq 0 ]] || grep -q 'unsupported.*desc\.' <<<"$err" || { echo "no descriptor field named"; exit 1; }
]=])
  add_test(NAME tools/run_huge_1x1x1 COMMAND bash -c "${CJ_RUN_HUGE_SH}" $<TARGET_FILE:convjit-run>)
  set_tests_properties(tools/run_log_error_quiet tools/run_huge_1x1x1 PROPERTIES LABELS tools)
endif()
# convjit-bench-api runs (a smoke run: numbers are printed, never asserted):
# every call of the timed loops reached the backend (launches_ok) and the
# conv plan is the 4-kernel default layer it documents.
add_test(NAME host/bench_api_smoke
         COMMAND bash -c "out=$(\"$0\" --iters 1000 --json) && echo \"$out\" && echo \"$out\" | grep -q '\"launches_ok\":true' && echo \"$out\" | grep -q '\"conv_kernels\":4'"
                 $<TARGET_FILE:convjit-bench-api>)
set_tests_properties(host/bench_api_smoke PROPERTIES LABELS host
  ENVIRONMENT "CONVJIT_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache-bench")
# convjit-bench-compile (issue 9 item 10h: the compile-time comparison moved
# out of test_conv_spill): a smoke run, numbers printed, never asserted.
add_test(NAME host/bench_compile_smoke
         COMMAND bash -c "out=$(\"$0\" --reps 1 --json) && echo \"$out\" && echo \"$out\" | grep -q '\"arch\":\"gfx950\",\"small_ms\"'"
                 $<TARGET_FILE:convjit-bench-compile>)
set_tests_properties(host/bench_compile_smoke PROPERTIES LABELS host)
# --json stays one JSON document when a kind refuses a case (fp8 backward
# data: an entry with its reason, not a text line inside the JSON).
add_test(NAME host/bench_compile_json
         COMMAND bash -c "\"$0\" --passes --reps 1 --json | \"$1\" -c 'import json, sys; d = json.load(sys.stdin); n = [p for p in d[\"passes\"] if \"no_kernels\" in p]; assert n and all(p[\"dtype\"] == \"fp8\" and p[\"kind\"] != \"forward\" for p in n), n; print(len(d[\"passes\"]), \"entries,\", len(n), \"refused\")'"
                 $<TARGET_FILE:convjit-bench-compile> ${CJ_PYTHON})
set_tests_properties(host/bench_compile_json PROPERTIES LABELS host)
# convjit-bench-kstep (docs/kernels.md "im2col overhead"): on the default
# gfx942 fp8 tile (128x128, waves 2x4, tile_k 64 = 2 MFMA K of 32) one K
# step is 4x2 fragments x 2 = 16 MFMAs and 4 + 4 DMAs per thread (8 KiB of
# A and of B per step, 2 KiB per 512-thread 4-byte DMA), for the conv and
# for the pure-GEMM A loader alike (both differences). The pure-GEMM loop
# must also pass the tool's isolation check (exit 0); the conv's may differ
# slightly between lengths (LLVM's choice per trip count, documented).
set(CJ_KSTEP_SH [=[
for f in conv pure; do
  flag=; [[ $f == pure ]] && flag=--pure_gemm_a
  out=$("$0" --arch gfx942 --dtype fp8 --shape 1,128,2,8,8,128,1,3,3 --pad 0,1,1 $flag); rc=$?
  echo "$out"
  [[ $f == conv || $rc == 0 ]] || { echo "$f: exit $rc"; exit 1; }
  grep -Eq '^  mfma .* 16\.000 +16\.000$' <<<"$out" || { echo "$f: not 16 MFMA per step"; exit 1; }
  grep -Eq '^  vmem .* 8\.000 +8\.000$' <<<"$out" || { echo "$f: not 8 VMEM per step"; exit 1; }
done
]=])
add_test(NAME host/bench_kstep_counts COMMAND bash -c "${CJ_KSTEP_SH}" $<TARGET_FILE:convjit-bench-kstep>)
set_tests_properties(host/bench_kstep_counts PROPERTIES LABELS host)
