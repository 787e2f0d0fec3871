#!/bin/bash
# tools/dump_bounds_op_{splitk,wgrad} (tests/convjit_dump.cmake): convjit-dump
# --emit bounds --json simulates every step of the op's launch sequence
# (docs/performance.md "Whole ops"). Checked here, by hand:
#  - the steps the selection launches are there (the kernels named by $3, a
#    memset when $4 = memset);
#  - the per-call sum is the sum of the "call" steps and the pack sum that of
#    the "pack" steps: 4 decimals each, so within 0.0001 x (steps + 1) ms;
#  - a memset of B bytes is B at the arch's HBM rate plus the 2-us launch
#    (gfx950: 8 TB/s, the MI355X data sheet; launch_us's default), to 0.0001 ms.
# Usage: check_op_sum.sh <convjit-dump> <dump options> <kernel prefixes> [memset]
out=$("$1" $2 --emit bounds --json) || exit 1
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
op=$(echo "$out" | grep -o '"op":{"kind":"modelled".*') || fail "no op object"
for k in $3; do echo "$op" | grep -q "\"kernel\":\"$k" || fail "no step of kernel $k"; done
sum_of() { # the simulated_ms of the steps of list $1
  echo "$op" | grep -o "{\"list\":\"$1\",[^}]*}" | sed -E 's/.*"simulated_ms":([0-9.]+).*/\1/' |
    awk '{s += $1; n++} END {printf "%.6f %d\n", s, n}'
}
read -r call ncall <<<"$(sum_of call)"
read -r pack npack <<<"$(sum_of pack)"
call_ms=$(echo "$op" | sed -E 's/.*"call_ms":([0-9.]+).*/\1/')
pack_ms=$(echo "$op" | sed -E 's/.*"pack_ms":([0-9.]+).*/\1/')
[ "$ncall" -ge 1 ] || fail "no call step"
awk -v a="$call" -v b="$call_ms" -v n="$ncall" 'BEGIN {d = a - b; exit !(d < 1e-4 * (n + 1) && -d < 1e-4 * (n + 1))}' ||
  fail "call_ms $call_ms is not the sum of the call steps ($call)"
awk -v a="$pack" -v b="$pack_ms" -v n="$npack" 'BEGIN {d = a - b; exit !(d < 1e-4 * (n + 1) && -d < 1e-4 * (n + 1))}' ||
  fail "pack_ms $pack_ms is not the sum of the pack steps ($pack)"
if [ "$4" = memset ]; then
  m=$(echo "$op" | grep -o '{"list":"call","memset_bytes":[0-9]*,"simulated_ms":[0-9.]*}') || fail "no memset step"
  bytes=$(echo "$m" | sed -E 's/.*"memset_bytes":([0-9]+).*/\1/')
  ms=$(echo "$m" | sed -E 's/.*"simulated_ms":([0-9.]+).*/\1/')
  awk -v b="$bytes" -v ms="$ms" 'BEGIN {w = b / 8000e9 * 1e3 + 2e-3; d = ms - w; exit !(b > 0 && d < 1e-4 && -d < 1e-4)}' ||
    fail "memset of $bytes bytes: $ms ms, by hand $(awk -v b="$bytes" 'BEGIN {print b / 8000e9 * 1e3 + 2e-3}')"
fi
echo "op sum OK: call $call_ms ms ($ncall steps), pack $pack_ms ms ($npack steps)"
