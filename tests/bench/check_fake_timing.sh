#!/bin/bash
# tools/bench_fake_timing (tests/convjit_bench.cmake): convjit-bench's JSON
# on the fake HIP runtime with scripted kernel times (CJ_FAKEHIP_KERNEL_MS:
# the conv kernel 0.5 ms bf16 / 0.4 ms fp8, other launches 0.125 ms) and
# the fake MIOpen (CJ_FAKEMIOPEN_MS=2). Expected values by hand: the
# kernel-only medians are the scripted times (3 reps, no spread); the
# end-to-end figure adds at least one other launch, so it is larger;
# MIOpen/convjit = 2 / end-to-end; TFLOPS = gflop * 1e9 / (ms * 1e-3) / 1e12;
# the fake MIOpen computes the reference conv, so the outputs agree.
# Ratios to 1e-5 relative: the JSON prints 6 significant digits.
# Usage: check_fake_timing.sh <convjit-bench> <shapes file>
out=$("$1" --shapes "$2" --vs miopen --json --warmup 1 --min-reps 3 --max-reps 3) || exit 1
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
echo "$out" | grep -q '^{"tool":"convjit-bench","kind":"FAKE"' || fail "not labelled FAKE"
echo "$out" | grep -q -e '"kind":"measured"' -e '"kind":"EMULATED"' && fail "a figure not labelled FAKE"
field() { # $1 row, $2 object key, $3 field
  echo "$1" | sed -E "s/.*\"$2\":\{[^}]*\"$3\":([-0-9.e+]+).*/\1/"
}
i=0
for want in 0.5 0.4; do
  i=$((i + 1))
  row=$(echo "$out" | sed 's/{"shape"/\n{"shape"/g' | grep '^{"shape"' | sed -n "${i}p")
  [ -n "$row" ] || fail "row $i missing"
  k=$(field "$row" kernel_only median_ms); e=$(field "$row" end_to_end median_ms); m=$(field "$row" miopen median_ms)
  kr=$(field "$row" kernel_only reps); ks=$(field "$row" kernel_only spread_pct); tf=$(field "$row" kernel_only tflops)
  ratio=$(echo "$row" | sed -E 's/.*"miopen_over_convjit":([-0-9.e+]+).*/\1/')
  gflop=$(echo "$row" | sed -E 's/.*"gflop":([-0-9.e+]+).*/\1/')
  echo "$row" | grep -q '"agree":true' || fail "row $i: outputs do not agree"
  awk -v k="$k" -v want="$want" -v e="$e" -v m="$m" -v kr="$kr" -v ks="$ks" -v tf="$tf" -v r="$ratio" -v g="$gflop" 'BEGIN {
    rel = 1e-5
    if (k != want) { print "kernel-only median " k " != " want; exit 1 }
    if (kr != 3 || ks != 0) { print "reps " kr " spread " ks; exit 1 }
    if (!(e > want)) { print "end-to-end " e " not above the kernel " want; exit 1 }
    if (m != 2) { print "MIOpen median " m " != 2"; exit 1 }
    x = 2 / e; if ((r - x) > rel * x || (x - r) > rel * x) { print "ratio " r " != " x; exit 1 }
    t = g * 1e9 / (want * 1e-3) / 1e12; if ((tf - t) > rel * t || (t - tf) > rel * t) { print "TFLOPS " tf " != " t; exit 1 }
  }' || fail "row $i"
done
# the table: every TFLOPS figure says FAKE
tab=$("$1" --shapes "$2" --vs miopen --warmup 0 --min-reps 1 --max-reps 1) || exit 1
echo "$tab"
echo "$tab" | grep ' TF' | grep -v -q 'TF FAKE' && fail "a TFLOPS figure without FAKE"
echo "$tab" | grep -q 'TF FAKE' || fail "no TFLOPS printed"
exit 0
