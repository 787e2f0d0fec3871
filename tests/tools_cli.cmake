# Included by tests/CMakeLists.txt: every tool refuses a malformed or
# out-of-range value (issue 9 item 4) with exit status 2, a message naming
# the option and the text (or the descriptor field the public API refused,
# with its value and the API's limits), and its usage on stderr.
#   cj_bad_args(<name> <tool target> <text stderr must contain> <args>...)
# An argument spelled __EMPTY__ is passed as the empty string.
set(CJ_BAD_ARGS_SH [=[
tool=$0 want=$1; shift; args=()
for a in "$@"; do [[ $a == __EMPTY__ ]] && a=; args+=("$a"); done
err=$("$tool" "${args[@]}" 2>&1 >/dev/null); rc=$?
printf '%s\n' "$err"
[[ $rc -eq 2 ]] || { echo "exit status $rc, expected 2"; exit 1; }
grep -qF -- "$want" <<<"$err" || { echo "stderr lacks: $want"; exit 1; }
grep -q '^usage' <<<"$err" || { echo 'no usage on stderr'; exit 1; }
]=])
function(cj_bad_args name tool want)
  if(NOT TARGET ${tool})
    return()
  endif()
  add_test(NAME tools/bad_args_${name} COMMAND bash -c "${CJ_BAD_ARGS_SH}" $<TARGET_FILE:${tool}> "${want}" ${ARGN})
  set_tests_properties(tools/bad_args_${name} PROPERTIES LABELS tools
    ENVIRONMENT "CONVJIT_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
endfunction()

set(RUN --device emu --no-disk-cache)
cj_bad_args(run_stages convjit-run "--stages 'abc': expected an unsigned integer" ${RUN} --stages abc)
cj_bad_args(run_seed convjit-run "--seed 'xyz': expected an unsigned integer" ${RUN} --seed xyz)
cj_bad_args(run_seed_negative convjit-run "--seed '-1'" ${RUN} --seed -1)
cj_bad_args(run_wgm convjit-run "--wgm '8x'" ${RUN} --wgm 8x)
cj_bad_args(run_splitk_empty convjit-run "--splitk ''" ${RUN} --splitk __EMPTY__)
cj_bad_args(run_split_k_unknown convjit-run "unknown option --split-k" ${RUN} --split-k __EMPTY__)
cj_bad_args(run_shape_trailing_comma convjit-run "--shape '1,24,8,8,32,3,3,': value 8 is empty"
            ${RUN} --shape 1,24,8,8,32,3,3,)
cj_bad_args(run_tile_junk convjit-run "--tile '256x128x': expected AxB" ${RUN} --tile 256x128x)
# dtypes: an output dtype the tools do not know; f16 with fp8's options; a
# pair without kernels is the API's refusal naming desc.y_dtype (exit 3, tests/convjit_run.cmake's run_f16 runs the good ones)
cj_bad_args(run_y_dtype convjit-run "--y-dtype 'fp8': bf16, f16 or f32" ${RUN} --dtype fp16 --y-dtype fp8)
cj_bad_args(run_f16_scale convjit-run "--x-scale, --w-scale and --alpha need --dtype fp8" ${RUN} --dtype f16 --x-scale 0.5)
cj_bad_args(dump_y_dtype convjit-dump "--y-dtype 'i8': bf16, f16 or f32" --arch gfx942 --op conv --dtype f16
            --shape 1,8,4,8,8,16,3,3,3 --y-dtype i8)
# backward weight's options (cli_problem): a dtype dw is not written in, on
# another kind, a y dtype for dy (dy is in --dtype)
cj_bad_args(run_dw_dtype convjit-run "--dw-dtype 'f64': expected bf16, f16 or f32 (the dtype table's" ${RUN} --kind bwd-weight --dw-dtype f64)
cj_bad_args(run_dw_dtype_fwd convjit-run "--dw-dtype and --nondeterministic need --kind bwd-weight" ${RUN}
            --shape 1,8,8,8,3 --dw-dtype f32)
cj_bad_args(run_bwd_weight_y_dtype convjit-run "--y-dtype f32: kind bwd-weight writes dw (its dtype: --dw-dtype) and reads dy in --dtype" ${RUN}
            --kind bwd-weight --shape 1,8,8,8,3 --y-dtype f32)
cj_bad_args(dump_nondeterministic_fwd convjit-dump "--dw-dtype and --nondeterministic need --kind bwd-weight"
            --arch gfx942 --op conv --dtype bf16 --shape 1,8,4,8,8,16,3,3,3 --nondeterministic)
cj_bad_args(run_pad_too_many convjit-run "--pad '1,1,1,1,1,1,1': more than 6 values" ${RUN} --pad 1,1,1,1,1,1,1)
# well-formed but refused by the API: its field, value and limits
cj_bad_args(run_shape_zero convjit-run "desc.n = 0: must be in 1..2^31-1" ${RUN} --shape 0,24,8,8,32,3,3)
cj_bad_args(run_transpose_zero convjit-run "desc.c = 0: must be in 1..2^31-1" ${RUN} --op transpose --shape 1,0,9)
# (3 - 1) * 2^30 + 1 = 2^31 + 1 taps: the dilation is named, not the filter
cj_bad_args(run_dilation_overflow convjit-run "desc.dilation[1] = 1073741824: the dilated filter[1] = 3 spans"
            ${RUN} --shape 1,8,4,4,8,3,3 --dilation 1,1073741824)

# Issue 25 item 6: a knob given 0 would read as "not forced" and run the
# default plan; every tool sharing the knob parser refuses it, naming the
# option (leave the option out to let convjit choose).
foreach(k stages splitk wgm dma)
  cj_bad_args(run_${k}_zero convjit-run "--${k} '0': 0 is not a choice" ${RUN} --${k} 0)
endforeach()
cj_bad_args(run_tile_half_auto convjit-run "--tile '0x128': 0 is not a choice" ${RUN} --tile 0x128)
cj_bad_args(run_waves_zero convjit-run "--waves '0x4': 0 is not a choice" ${RUN} --waves 0x4)
cj_bad_args(run_tile_zero_second convjit-run "--tile '128,0': 0 is not a choice" ${RUN} --tile 128,0)

set(DUMP --arch gfx942 --dtype bf16 --op conv)
cj_bad_args(dump_shape_zero convjit-dump "desc.n = 0: must be in 1..2^31-1" ${DUMP} --shape 0,8,4,8,8,16,3,3,3)
cj_bad_args(dump_shape_2g convjit-dump "desc.n = 3000000000: must be in 1..2^31-1" ${DUMP}
            --shape 3000000000,8,4,8,8,16,3,3,3)
cj_bad_args(dump_dilation_overflow convjit-dump "desc.dilation[2] = 1073741824" ${DUMP}
            --shape 1,8,4,8,8,16,3,3,3 --dilation 1,1,1073741824)
cj_bad_args(dump_stages convjit-dump "--stages 'abc'" ${DUMP} --shape 1,8,4,8,8,16,3,3,3 --stages abc)
cj_bad_args(dump_wgm_eq convjit-dump "--wgm '8x'" ${DUMP} --shape 1,8,4,8,8,16,3,3,3 --wgm=8x)
cj_bad_args(dump_pad_count convjit-dump "--pad '1,1,1,1': takes 3 values" ${DUMP} --shape 1,8,4,8,8,16,3,3,3
            --pad 1,1,1,1)
cj_bad_args(dump_shape_trailing_comma convjit-dump "--shape '1,8,9,': value 4 is empty" --arch gfx942 --dtype bf16
            --op transpose --shape 1,8,9,)
cj_bad_args(dump_transpose_zero convjit-dump "desc.n = 0: must be in 1..2^31-1" --arch gfx942 --dtype bf16
            --op transpose --shape 0,8,9)

cj_bad_args(mix_stages convjit-mix "--stages 'abc'" --stages abc)
cj_bad_args(mix_shape_trailing_comma convjit-mix "--shape '1,128,4,8,8,128,3,3,3,'" --shape 1,128,4,8,8,128,3,3,3,
            --shape 1,128,4,8,8,128,5,3,3)
cj_bad_args(mix_shape_zero convjit-mix "desc.c = 0: must be in 1..2^31-1" --shape 1,0,4,8,8,128,3,3,3
            --shape 1,128,4,8,8,128,5,3,3)
cj_bad_args(bench_api_iters convjit-bench-api "--iters '10x': expected an unsigned integer in 100..1000000000"
            --iters 10x)
cj_bad_args(bench_mfma_seconds convjit-bench-mfma "--seconds 'abc': expected a decimal number" --seconds abc)
cj_bad_args(bench_kstep_lengths convjit-bench-kstep "--lengths '2,2,4': expected a < b < c"
            --arch gfx942 --shape 1,64,2,8,8,128,3,3,3 --lengths 2,2,4)
cj_bad_args(bench_kstep_dtype convjit-bench-kstep "--dtype 'fp32': bf16, f16 (or fp16) or fp8" --dtype fp32)
cj_bad_args(dump_stages_zero convjit-dump "--stages '0': 0 is not a choice" ${DUMP} --shape 1,8,4,8,8,16,3,3,3
            --stages 0)
cj_bad_args(dump_tile_half_auto convjit-dump "--tile '0x128': 0 is not a choice" ${DUMP} --shape 1,8,4,8,8,16,3,3,3
            --tile 0x128)
cj_bad_args(mix_splitk_zero convjit-mix "--splitk '0': 0 is not a choice" --splitk 0)
cj_bad_args(bench_kstep_waves_zero convjit-bench-kstep "--waves '0x4': 0 is not a choice" --arch gfx942
            --shape 1,64,2,8,8,128,3,3,3 --waves 0x4)
# convjit-bench-sim (the simulation's validation table): a bad option or
# a malformed --candidates spec is refused before anything is built
cj_bad_args(bench_sim_option convjit-bench-sim "--bogus" --bogus)
cj_bad_args(bench_sim_candidates convjit-bench-sim "expected ARCH:DTYPE:SHAPE:OPTS" --candidates gfx950:bf16)
cj_bad_args(bench_sim_candidates_arch convjit-bench-sim "--candidates 'gfx9': expected one of gfx942, gfx950"
            --candidates gfx9:bf16:1,8,4,8,8,16,3,3,3:-)
cj_bad_args(bench_sim_rows_value convjit-bench-sim "--rows needs a value" --rows)
