#!/usr/bin/env bash
# Training summaries (Note [Training summaries] in
# examples/fashion_mnist_common.h) end to end, as a user runs them: the MLP
# and the CNN train with --logdir and `runnel events` reads back what they
# wrote: the loss, test accuracy, histograms of weights and gradients, input
# images, the graph; a resumed run writes a SessionLog START; --trace_step
# writes a timeline; lstm_lm writes its perplexities.
# Usage: summaries_test.sh BUILD_DIR
set -euo pipefail
build=$1
runnel=$build/tools/runnel
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_WAIT_POLICY=PASSIVE

fail() { echo "FAIL: $*"; exit 1; }
has() {  # has FILE REGEX WHAT
  grep -qE "$2" "$1" || { cat "$1"; fail "$3"; }
}

"$build/examples/fashion_mnist_mlp" --epochs 1 --optimizer sgd \
  --learning_rate 0.1 --max_steps 300 --summary_every 100 \
  --logdir "$dir/mlp" >"$dir/mlp.log" 2>&1 || { cat "$dir/mlp.log"; fail "mlp"; }
"$runnel" events "$dir/mlp" >"$dir/tags.txt"
has "$dir/tags.txt" 'graphs 1,' "the graph is written"
has "$dir/tags.txt" 'session logs 1' "a SessionLog START"
has "$dir/tags.txt" '^  loss +scalar +3 +100-300$' "loss at steps 100, 200, 300"
has "$dir/tags.txt" '^  dense/kernel +histogram +3 ' "weight histograms"
has "$dir/tags.txt" '^  dense/kernel/gradient +histogram +3 ' "gradient histograms"
has "$dir/tags.txt" '^  inputs/image/2 +image +3 ' "three input images"
has "$dir/tags.txt" '^  final_test_accuracy +scalar +1 ' "the test accuracy"
# The loss falls: the last point is below the first.
"$runnel" events "$dir/mlp" --tag loss --json >"$dir/loss.json"
/usr/bin/python3 - "$dir/loss.json" <<'PY' || fail "loss did not fall"
import json, sys
doc = json.load(open(sys.argv[1]))
def points(x):
    if isinstance(x, dict):
        for k, v in x.items():
            if k in ("points", "series") and isinstance(v, list):
                return v
            p = points(v)
            if p: return p
    if isinstance(x, list):
        for v in x:
            p = points(v)
            if p: return p
    return None
p = points(doc)
assert p and len(p) == 3, doc
values = [q["value"] for q in p]
print("loss", values)
sys.exit(0 if values[-1] < values[0] else 1)
PY
acc=$("$runnel" events "$dir/mlp" --tag final_test_accuracy | awk 'NF == 3 && $1 == 300 { print $3 }')
awk -v a="$acc" 'BEGIN { exit !(a + 0 >= 0.7) }' || fail "final_test_accuracy '$acc' < 0.7"
echo "mlp: final test accuracy $acc"

"$build/examples/fashion_mnist_cnn" --epochs 1 --max_steps 20 --summary_every 10 \
  --logdir "$dir/cnn" >"$dir/cnn.log" 2>&1 || { cat "$dir/cnn.log"; fail "cnn"; }
"$runnel" events "$dir/cnn" >"$dir/cnn_tags.txt"
has "$dir/cnn_tags.txt" '^  loss +scalar +2 +10-20$' "cnn loss at steps 10, 20"
has "$dir/cnn_tags.txt" '^  inputs/image/0 +image +2 ' "cnn input images"

# --trace_step: the traced step's Chrome trace in the log directory (valid
# JSON with the step's MatMuls) and its RunMetadata in the event file,
# which `runnel timeline --tag` reads back.
"$build/examples/fashion_mnist_mlp" --epochs 1 --max_steps 30 --trace_step 20 \
  --logdir "$dir/traced" >"$dir/traced.log" 2>&1 || { cat "$dir/traced.log"; fail "traced mlp"; }
[ -f "$dir/traced/timeline_step_20.json" ] || fail "no timeline_step_20.json"
/usr/bin/python3 - "$dir/traced/timeline_step_20.json" <<'PY' || fail "the trace is not a step's"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
ops = [e["name"] for e in events if e["ph"] == "X"]
assert ops.count("MatMul") >= 3, ops
PY
"$runnel" timeline "$dir"/traced/events.out.tfevents.* --tag step_20 --top 5 \
  >"$dir/top.txt" 2>&1 || { cat "$dir/top.txt"; fail "runnel timeline --tag"; }
has "$dir/top.txt" '^MatMul ' "the per-op table lists MatMul"

# The LSTM language model: loss and perplexities.
"$build/examples/lstm_lm" --max_steps 40 --summary_every 20 \
  --logdir "$dir/lstm" >"$dir/lstm.log" 2>&1 || { cat "$dir/lstm.log"; fail "lstm_lm"; }
"$runnel" events "$dir/lstm" >"$dir/lstm_tags.txt"
has "$dir/lstm_tags.txt" '^  train_perplexity +scalar +2 +20-40$' "lstm train perplexity"
has "$dir/lstm_tags.txt" '^  validation_perplexity +scalar +2 +0-40$' "lstm validation perplexity"
has "$dir/lstm_tags.txt" 'graphs 1,' "the lstm graph"

# An unwritable log directory fails at start, before training.
if "$build/examples/fashion_mnist_mlp" --max_steps 5 --logdir /proc/runnel_no \
     >"$dir/bad.log" 2>&1; then
  fail "an unwritable --logdir did not fail"
fi
has "$dir/bad.log" 'opening the log directory' "the error says what failed"
echo "PASS"
