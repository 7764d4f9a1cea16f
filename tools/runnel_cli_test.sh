#!/usr/bin/env bash
# End-to-end test of the runnel command: TensorFlow's addition graph gives 42,
# JSON output is exact, and errors exit non-zero with a message on stderr.
set -u
runnel=$1
tf=$2
fail=0
check() {  # check NAME EXPECTED ACTUAL
  if [ "$2" != "$3" ]; then
    echo "FAIL $1: expected [$2], got [$3]"
    fail=1
  else
    echo "ok   $1"
  fi
}

out=$("$runnel" run "$tf/graphs/tf_addition/model.pb" --feed x=[2] --feed y=[40] --fetch z --json)
check "json 42" '{"z": {"dtype": "int32", "shape": [1], "values": [42]}}' "$out"

out=$("$runnel" run "$tf/graphs/tf_addition/model.pb" --feed x=2 --feed y=40 --fetch z)
check "text 42" 'z (int32 []): 42' "$out"

err=$("$runnel" run "$tf/graphs/tf_addition/model.pb" --feed x=2 --fetch z 2>&1 >/dev/null)
rc=$?
check "unfed placeholder exits 1" 1 "$rc"
case "$err" in *"'y'"*) echo "ok   error names y";; *) echo "FAIL error: $err"; fail=1;; esac

"$runnel" run "$tf/graphs/tf_addition/model.pb" --feed x=abc --feed y=1 --fetch z >/dev/null 2>&1
check "bad feed exits 1" 1 "$?"

"$runnel" run /nonexistent.pb --fetch z >/dev/null 2>&1
check "missing file exits 1" 1 "$?"

"$runnel" bogus >/dev/null 2>&1
check "usage exits 2" 2 "$?"

out=$("$runnel" inspect "$tf/graphs/tf_addition/model.pb" | grep -c AddV2)
check "inspect lists AddV2" 2 "$out"

# Training TensorFlow's own regression graph from the command line: the
# variables initialise once (--init), then 201 SGD steps on y = 0.1 x + 0.3.
xs=$(awk 'BEGIN { for (i = 0; i < 100; i++) printf "%s%.4f", (i ? "," : ""), -1 + 2 * i / 99 }')
ys=$(awk 'BEGIN { for (i = 0; i < 100; i++) printf "%s%.6f", (i ? "," : ""), 0.1 * (-1 + 2 * i / 99) + 0.3 }')
out=$("$runnel" run "$tf/graphs/tf_regression_training/model.pb" --feed "x=[$xs]" --feed "y=[$ys]" \
      --init init --target train --repeat 201 --fetch w --fetch b --json)
ok=$(echo "$out" | awk -F'"values": \\[' '{ split($2, w, "]"); split($3, b, "]");
     print (w[1] - 0.1 < 1e-3 && 0.1 - w[1] < 1e-3 && b[1] - 0.3 < 1e-3 && 0.3 - b[1] < 1e-3) }')
check "train regression graph to w=0.1 b=0.3 ($out)" 1 "$ok"

exit $fail
