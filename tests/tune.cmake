# Included by tests/CMakeLists.txt: convjit-tune on the emulator (issue 12's
# acceptance, docs/tuning.md). Each test gets its own cache directory; the
# shapes are examples/tune-shapes.txt (small: every candidate is compiled,
# run and modelled) or one 1x1 shape for the concurrency tests.
if(NOT TARGET convjit-tune)
  return()
endif()
set(CJ_TUNE_SHAPES ${PROJECT_SOURCE_DIR}/examples/tune-shapes.txt)
# --json: one row per shape with a winner, every row MODELLED; the progress
# lines on stderr (not a terminal here): plain lines of a fixed format.
set(CJ_TUNE_JSON_SH [=[
set -u; tool=$0 shapes=$1 dir=$2; rm -rf "$dir"
out=$("$tool" --device emu --shapes "$shapes" --cache-dir "$dir" --json 2>"$dir.err") || { cat "$dir.err"; echo "exit $?"; exit 1; }
printf '%s\n' "$out"
n=$(grep -cv '^[[:space:]]*\(#\|$\)' "$shapes")
rows=$(grep -c '^{"shape":' <<<"$out")
[[ $rows -eq $n ]] || { echo "$rows rows for $n shapes"; exit 1; }
[[ $(grep -c '"winner":"tile=' <<<"$out") -eq $n ]] || { echo "a row without a winner"; exit 1; }
[[ $(grep '^{"shape":' <<<"$out" | grep -c '"label":"MODELLED"') -eq $n ]] || { echo "a row not MODELLED"; exit 1; }
grep -q '^{"tool":"convjit-tune","device":"emu",.*"modelled":true,"label":"MODELLED"' <<<"$out" || { echo "header not MODELLED"; exit 1; }
re='^\[shape [0-9]+/[0-9]+\] candidate [0-9]+/[0-9]+ ([0-9.]+ ms|skipped \(.*\)|vetoed \(.*\)); best [0-9.]+ ms MODELLED; elapsed [0-9.]+ s$'
bad=$(grep -Evc "$re" "$dir.err"); lines=$(wc -l <"$dir.err")
[[ $lines -gt 0 && $bad -eq 0 ]] || { echo "progress lines off format ($bad of $lines):"; grep -Ev "$re" "$dir.err"; exit 1; }
grep -q "^\[shape $n/$n\] candidate " "$dir.err" || { echo "no progress line for the last shape"; exit 1; }
[[ $("$tool" --cache-dir "$dir" --count) -eq 0 ]] || { echo "modelled rows stored without --store-modelled"; exit 1; }
"$tool" --device emu --shapes "$shapes" --cache-dir "$dir" | grep -v MODELLED && { echo "a table line without MODELLED"; exit 1; }
rm -rf "$dir" "$dir.err"
]=])
add_test(NAME tools/tune_emu_json COMMAND bash -c "${CJ_TUNE_JSON_SH}" $<TARGET_FILE:convjit-tune> ${CJ_TUNE_SHAPES}
  ${PROJECT_BINARY_DIR}/test-tune-json)
# N processes at once on one shapes file and one cache directory, each
# storing its MODELLED winners: all exit 0, the table holds one row per
# shape, and every row authenticates (--export reads them back). A first
# run fills the kernel cache so the N runs race on the tuning table.
# Then export -> import into an empty directory reproduces the rows.
set(CJ_TUNE_CONCURRENT_SH [=[
set -u; tool=$0 shapes=$1 dir=$2 n=$3; rm -rf "$dir" "$dir.2"
"$tool" --device emu --shapes "$shapes" --cache-dir "$dir" --no-store >/dev/null 2>&1 || { echo "warm-up run failed"; exit 1; }
pids=()
for i in $(seq 1 "$n"); do "$tool" --device emu --shapes "$shapes" --cache-dir "$dir" --store-modelled >"$dir.out$i" 2>&1 & pids+=($!); done
rc=0; for i in "${!pids[@]}"; do wait "${pids[$i]}" || { echo "process $((i+1)) failed:"; cat "$dir.out$((i+1))"; rc=1; }; done
[[ $rc -eq 0 ]] || exit 1
want=$(grep -cv '^[[:space:]]*\(#\|$\)' "$shapes")
got=$("$tool" --cache-dir "$dir" --count)
[[ $got -eq $want ]] || { echo "$got rows for $want shapes"; exit 1; }
"$tool" --cache-dir "$dir" --export "$dir.json" 2>/dev/null || exit 1
[[ $(grep -c '"problem":' "$dir.json") -eq $want ]] || { echo "export lacks rows"; cat "$dir.json"; exit 1; }
grep -q '"modelled":1' "$dir.json" || { echo "rows not marked modelled"; exit 1; }
"$tool" --cache-dir "$dir.2" --import "$dir.json" || exit 1
"$tool" --cache-dir "$dir.2" --export "$dir.2.json" 2>/dev/null || exit 1
cmp "$dir.json" "$dir.2.json" || { echo "import did not reproduce the rows"; exit 1; }
rm -rf "$dir" "$dir.2" "$dir".out* "$dir.json" "$dir.2.json"
]=])
file(WRITE ${PROJECT_BINARY_DIR}/tune-one-shape.txt "conv - bf16 1,32,1,8,8,64,1,1,1\n")
add_test(NAME tools/tune_two_processes COMMAND bash -c "${CJ_TUNE_CONCURRENT_SH}" $<TARGET_FILE:convjit-tune>
  ${CJ_TUNE_SHAPES} ${PROJECT_BINARY_DIR}/test-tune-two 2)
add_test(NAME tools/tune_four_processes COMMAND bash -c "${CJ_TUNE_CONCURRENT_SH}" $<TARGET_FILE:convjit-tune>
  ${PROJECT_BINARY_DIR}/tune-one-shape.txt ${PROJECT_BINARY_DIR}/test-tune-four 4)
set_tests_properties(tools/tune_emu_json tools/tune_two_processes tools/tune_four_processes PROPERTIES LABELS tools)
# Bad values: exit 2, the option and its text named, usage (tools_cli.cmake).
cj_bad_args(tune_budget convjit-tune "--budget-ms 'abc'" --device emu --shapes ${CJ_TUNE_SHAPES} --budget-ms abc)
cj_bad_args(tune_device convjit-tune "--device 'gpu'" --device gpu --shapes ${CJ_TUNE_SHAPES})
cj_bad_args(tune_two_jobs convjit-tune "exactly one of" --count --clear)
# CONVJIT_AUTOTUNE=1: convjit-run tunes a plan the table did not answer (on
# its own buffers; the tuned plan still passes the CPU-reference check);
# after convjit-tune stored that shape's MODELLED winner (a 3D line for
# convjit-run's 2D conv: one problem), convjit-run's plan comes from the
# table — another process's row — and it does not tune again.
if(TARGET convjit-run)
  set(CJ_TUNE_AUTOTUNE_SH [=[
set -u; run=$0 tune=$1 dir=$2; rm -rf "$dir"; export CONVJIT_CACHE_DIR=$dir
job=(--device emu --shape 1,16,8,8,32,3,3 --pad 1,1 --check)
out=$(CONVJIT_AUTOTUNE=1 "$run" "${job[@]}" 2>&1) || { printf '%s\n' "$out"; exit 1; }
grep -q '^convjit-run: CONVJIT_AUTOTUNE=1: tile=.* MODELLED' <<<"$out" || { printf '%s\n' "$out"; echo "no autotune line"; exit 1; }
grep -q '^check    PASS' <<<"$out" || { printf '%s\n' "$out"; echo "tuned plan failed the check"; exit 1; }
echo 'conv - bf16 1,16,1,8,8,32,1,3,3 pad=0,1,1' >"$dir.txt"
"$tune" --device emu --shapes "$dir.txt" --store-modelled >/dev/null 2>&1 || { echo "convjit-tune failed"; exit 1; }
[[ $("$tune" --count) -eq 1 ]] || { echo "no row stored"; exit 1; }
out=$(CONVJIT_AUTOTUNE=1 CONVJIT_LOG=info "$run" "${job[@]}" 2>&1) || { printf '%s\n' "$out"; exit 1; }
grep -q 'plan: tuning table winner (tile=.*) \[MODELLED row\]' <<<"$out" || { printf '%s\n' "$out"; echo "the row was not used"; exit 1; }
grep -q 'CONVJIT_AUTOTUNE=1:' <<<"$out" && { echo "tuned again although the table answered"; exit 1; }
grep -q '^check    PASS' <<<"$out" || { echo "table plan failed the check"; exit 1; }
rm -rf "$dir" "$dir.txt"
]=])
  add_test(NAME tools/tune_autotune_run COMMAND bash -c "${CJ_TUNE_AUTOTUNE_SH}" $<TARGET_FILE:convjit-run>
    $<TARGET_FILE:convjit-tune> ${PROJECT_BINARY_DIR}/test-tune-autotune)
  set_tests_properties(tools/tune_autotune_run PROPERTIES LABELS tools)
endif()
# --device hip through the fake HIP library (times are FAKE: the fake's
# 0.25 ms per launch): rows say TIMED, the device model is the fake's, the
# timed winner is stored (not marked modelled).
if(TARGET fakehip)
  set(CJ_TUNE_FAKE_SH [=[
set -u; tool=$0 shapes=$1 dir=$2; rm -rf "$dir"
out=$("$tool" --device hip --shapes "$shapes" --cache-dir "$dir" --json 2>/dev/null) || { echo "exit $?"; exit 1; }
printf '%s\n' "$out"
grep -q '"label":"TIMED","device_model":"AMD Instinct MI300X (fake)"' <<<"$out" || { echo "header"; exit 1; }
grep -q '^{"shape":.*"ok":true.*"stored":true,"modelled":false,"label":"TIMED"}' <<<"$out" || { echo "row"; exit 1; }
[[ $("$tool" --cache-dir "$dir" --count) -eq 1 ]] || { echo "no row stored"; exit 1; }
"$tool" --cache-dir "$dir" --export "$dir.json" 2>/dev/null && grep -q '"device":"AMD Instinct MI300X (fake)".*"modelled":0' "$dir.json" || { echo "export"; exit 1; }
rm -rf "$dir" "$dir.json"
]=])
  add_test(NAME tools/tune_fake_hip COMMAND bash -c "${CJ_TUNE_FAKE_SH}" $<TARGET_FILE:convjit-tune>
    ${PROJECT_BINARY_DIR}/tune-one-shape.txt ${PROJECT_BINARY_DIR}/test-tune-fake)
  set_tests_properties(tools/tune_fake_hip PROPERTIES LABELS tools
    ENVIRONMENT "CONVJIT_HIP_LIBRARY=$<TARGET_FILE:fakehip>")
endif()
# convjit-bench's report carries the tuning rows of its cache database
# (issue 13 item 3): two MODELLED rows stored by convjit-tune appear there.
if(TARGET convjit-bench)
  add_test(NAME tools/bench_report_tuning_rows
           COMMAND bash -c "d=\"$2\"; rm -rf \"$d\"; \"$0\" --device emu --shapes \"$3\" --cache-dir \"$d\" --store-modelled >/dev/null || exit 1; CONVJIT_CACHE_DIR=\"$d\" \"$1\" --device emu --arch gfx950 --shapes \"$4\" --report \"$d/r.md\" >/dev/null || exit 1; grep -q '^2 rows' \"$d/r.md\" && grep -q '\"modelled\"' \"$d/r.md\"; rc=$?; rm -rf \"$d\"; exit $rc"
                   $<TARGET_FILE:convjit-tune> $<TARGET_FILE:convjit-bench> ${PROJECT_BINARY_DIR}/test-bench-tuning
                   ${CJ_TUNE_SHAPES} ${cj_bench_shapes})
  set_tests_properties(tools/bench_report_tuning_rows PROPERTIES LABELS tools)
endif()
# Issue 25 items 7 and 8: --import refuses a NUL inside any text field (and
# fields of the wrong kind), a foreign `tuning` table is moved aside and
# recreated (logged), and the tool never claims a store that did not happen
# (tests/tools/test_tune_db.py).
add_test(NAME tools/tune_db_edges COMMAND ${CJ_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_tune_db.py
  $<TARGET_FILE:convjit-tune> $<TARGET_FILE:convjit-run> ${PROJECT_BINARY_DIR}/test-tune-db)
set_tests_properties(tools/tune_db_edges PROPERTIES LABELS tools)
