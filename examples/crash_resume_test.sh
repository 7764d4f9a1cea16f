#!/usr/bin/env bash
# Crash-safe training (Note [Crash-safe training] in
# examples/fashion_mnist_common.h): a training run killed with SIGKILL and
# started again resumes from its last checkpoint and ends exactly where an
# uninterrupted run ends; the same through the TFRecord queue pipeline.
# Usage: crash_resume_test.sh BUILD_DIR
set -euo pipefail
build=$1
mlp=$build/examples/fashion_mnist_mlp
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
flags=(--epochs 2 --optimizer sgd --learning_rate 0.1 --decay 1
       --save_every 100)
export OMP_WAIT_POLICY=PASSIVE

fail() { echo "FAIL: $*"; exit 1; }
field() { tr '\r' '\n' <"$1" | grep "$2" | tail -1; }

# 1. Reference: never interrupted.
"$mlp" "${flags[@]}" >"$dir/ref.log" 2>&1
ref=$(field "$dir/ref.log" "test accuracy")
echo "uninterrupted: $ref"

# 2. Killed with SIGKILL once a checkpoint at step >= 300 exists.
"$mlp" "${flags[@]}" --checkpoint_dir "$dir/ckpt" >"$dir/run1.log" 2>&1 &
pid=$!
pattern='model_checkpoint_path: "model.ckpt-([3-9][0-9]{2}|[0-9]{4,})"'
until grep -qE "$pattern" "$dir/ckpt/checkpoint" 2>/dev/null; do
  kill -0 "$pid" 2>/dev/null || fail "the run ended before it was killed"
  sleep 0.02
done
kill -9 "$pid"
wait "$pid" 2>/dev/null && fail "the run was not killed"
last=$(sed -n 's/^model_checkpoint_path: "model.ckpt-\([0-9]*\)"/\1/p' \
       "$dir/ckpt/checkpoint")
echo "killed; last checkpoint at global step $last"

# 3. Restarted: resumes at that step and finishes like the reference.
"$mlp" "${flags[@]}" --checkpoint_dir "$dir/ckpt" >"$dir/run2.log" 2>&1
grep -q "resumed from $dir/ckpt/model.ckpt-$last at global step $last" \
  "$dir/run2.log" || fail "did not resume from step $last: $(head -3 "$dir/run2.log")"
[ "$(field "$dir/run2.log" "global step")" = "global step 1876" ] ||
  fail "wrong final step: $(field "$dir/run2.log" "global step")"
resumed=$(field "$dir/run2.log" "test accuracy")
echo "resumed:       $resumed"
[ "$resumed" = "$ref" ] || fail "accuracy differs: '$resumed' vs '$ref'"

# 4. The TFRecord pipeline (queues, readers, queue runners) also resumes.
"$build/tools/fashion_mnist_to_tfrecord" --out_dir="$dir/tfrecord" \
  --shards=2 >/dev/null
tfr=(--data tfrecord --tfrecord_dir "$dir/tfrecord" --epochs 1
     --checkpoint_dir "$dir/ckpt2" --save_every 50)
"$mlp" "${tfr[@]}" --max_steps 150 >"$dir/tfr1.log" 2>&1
"$mlp" "${tfr[@]}" --max_steps 300 >"$dir/tfr2.log" 2>&1
grep -q "at global step 150" "$dir/tfr2.log" || fail "tfrecord run did not resume"
[ "$(field "$dir/tfr2.log" "global step")" = "global step 300" ] ||
  fail "tfrecord run ended at $(field "$dir/tfr2.log" "global step")"
echo "tfrecord: $(field "$dir/tfr2.log" "test accuracy") after 300 steps"
echo PASS
