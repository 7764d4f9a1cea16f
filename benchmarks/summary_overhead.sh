#!/usr/bin/env bash
# What training summaries cost (issue 14's goal: at most 2% of training
# time): the Fashion-MNIST MLP trains 900 steps without and with --logdir
# (the loss, 12 weight and gradient histograms and 3 input images every
# --summary_every=100 steps, plus the graph), in alternating pairs, and the
# ratio of the printed training times is reported per pair. That ratio is
# as noisy as the machine (+-15% between identical runs here), so each
# logged run also reports its own measure, which does not drift with the
# machine: the wall time its summary steps took beyond its other steps, as
# a share of its training time ("summary cost" in the example's output).
# Usage: benchmarks/summary_overhead.sh [BUILD_DIR] [PAIRS]
set -euo pipefail
build=${1:-build}
pairs=${2:-3}
mlp=$build/examples/fashion_mnist_mlp
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
flags=(--epochs 1 --optimizer sgd --learning_rate 0.1 --max_steps 900)
seconds() { tr '\r' '\n' | sed -n 's/^training time: \([0-9.]*\)s.*/\1/p'; }
for i in $(seq "$pairs"); do
  plain=$("$mlp" "${flags[@]}" 2>&1 | seconds)
  rm -rf "$dir/logs"
  out=$("$mlp" "${flags[@]}" --logdir "$dir/logs" --summary_every 100 2>&1 | tr '\r' '\n')
  logged=$(echo "$out" | seconds)
  cost=$(echo "$out" | sed -n 's/.*: \([0-9.]*\)% of training time$/\1/p')
  echo "summary_overhead pair $i: plain=${plain}s logdir=${logged}s ratio=$(awk -v a="$logged" -v b="$plain" 'BEGIN { printf "%.3f", a / b }') summary_steps_cost=${cost}%"
done
