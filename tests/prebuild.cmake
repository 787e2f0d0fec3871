# Included by tests/CMakeLists.txt: convjit-prebuild (docs/cache.md "An
# application's read-only cache"): build an application cache from
# examples/prebuild-shapes.txt, then --verify makes every plan again with an
# empty user cache and that application cache: nothing compiles, every
# kernel (the plans' own and the generic ones of asynchronous plans) is read
# from it. --verify against an empty directory must fail (the check has
# teeth), and the files are 0644 in a 0755 directory (the trust rules).
# The tool stages in $TMPDIR, here a directory of the test's own that must
# be empty after every run (the stage's cache lock file once stayed behind).
if(NOT TARGET convjit-prebuild)
  return()
endif()
set(CJ_PREBUILD_SH [=[
set -u; tool=$0 shapes=$1 dir=$2; rm -rf "$dir" "$dir.empty" "$dir.tmp"; mkdir -p "$dir.empty" "$dir.tmp"
chmod 755 "$dir.empty"; export TMPDIR=$dir.tmp
staged() { [[ -z $(ls -A "$TMPDIR") ]] || { ls -laR "$TMPDIR"; echo "the staging directory stayed behind"; exit 1; }; }
out=$("$tool" --shapes "$shapes" --app-cache "$dir" --json) || { echo "$out"; echo "build failed"; exit 1; }
staged
grep -q '"pass":true' <<<"$out" || { echo "$out"; exit 1; }
[[ $(stat -c %a "$dir") == 755 && $(stat -c %a "$dir/kernels.sqlite3") == 644 && $(stat -c %a "$dir/cache.key") == 644 ]] ||
  { ls -la "$dir"; echo "modes"; exit 1; }
v=$("$tool" --verify --shapes "$shapes" --app-cache "$dir" --json) || { echo "$v"; echo "verify failed"; exit 1; }
echo "$v"; staged
grep -q '"compiled":0,' <<<"$v" || { echo "kernels compiled with the app cache in place"; exit 1; }
grep -Eq '"disk_hits":[1-9]' <<<"$v" || { echo "no kernel read from the app cache"; exit 1; }
[[ $(grep -o '"shapes":[0-9]*' <<<"$v") == '"shapes":5' ]] || { echo "not every line of both arches planned"; exit 1; }
"$tool" --verify --shapes "$shapes" --app-cache "$dir.empty" --json >"$dir.neg" && { cat "$dir.neg"; echo "an empty cache verified"; exit 1; }
grep -q '"pass":false' "$dir.neg" || { cat "$dir.neg"; exit 1; }
staged; rm -rf "$dir" "$dir.empty" "$dir.neg" "$dir.tmp"
]=])
add_test(NAME tools/prebuild_app_cache COMMAND bash -c "${CJ_PREBUILD_SH}" $<TARGET_FILE:convjit-prebuild>
  ${PROJECT_SOURCE_DIR}/examples/prebuild-shapes.txt ${PROJECT_BINARY_DIR}/test-prebuild-app)
set_tests_properties(tools/prebuild_app_cache PROPERTIES LABELS tools)
