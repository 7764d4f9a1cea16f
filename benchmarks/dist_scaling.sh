#!/usr/bin/env bash
# Scaling of asynchronous between-graph training over W workers and P PS
# tasks on loopback: the Fashion-MNIST MLP (784-512-512-10, SGD lr 0.1,
# batch 64 per worker, 1 thread per process) run by scripts/local_cluster.sh
# for STEPS steps per worker; prints the sum of the workers' throughputs
# (each worker's examples/s over its whole run, as the example reports it)
# for W in 1, 2, 4 and P in 1, 2. On a 2-core machine W + P processes share
# 2 cores: the curve's shape, not its height, is what carries over.
#
#   benchmarks/dist_scaling.sh [BUILD_DIR] [STEPS]
#   dist_scaling runnel workers=W ps=P examples_per_s=X (per worker: a b ...)
set -euo pipefail
build=${1:-build}
steps=${2:-300}
here=$(cd "$(dirname "$0")/.." && pwd)
for ps in 1 2; do
  for workers in 1 2 4; do
    out=$(RUNNEL_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE \
      "$here/scripts/local_cluster.sh" "$ps" "$workers" -- \
      "$build/examples/fashion_mnist_mlp" --optimizer=sgd --learning_rate=0.1 \
      --batch_size=64 --epochs=1 --max_steps="$steps")
    rates=$(echo "$out" | sed -n '/^--- throughput ---$/,$p' |
      sed -n 's/^worker [0-9]*: [0-9]* steps, \([0-9.]*\) examples\/s.*/\1/p')
    [ -n "$rates" ] || { echo "$out" >&2; exit 1; }
    total=$(echo "$rates" | awk '{ s += $1 } END { printf "%.0f", s }')
    echo "dist_scaling runnel workers=$workers ps=$ps examples_per_s=$total" \
      "(per worker: $(echo $rates))"
  done
done
