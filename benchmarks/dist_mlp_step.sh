#!/usr/bin/env bash
# Data-parallel step time of the W2 MLP (784-512-512-10, SGD lr 0.1) over
# N worker processes on loopback, 1 thread per process, global batch 128
# split over the workers: the same definition as the peer
# ../shared/peers/ddp_mlp.py (PyTorch DDP over Gloo). Runs
# examples/fashion_mnist_mlp under scripts/local_cluster.sh, either with
# 1 PS and --sync_replicas (mode ps: every update averages all N workers'
# gradients on the PS) or with no PS and --allreduce (mode allreduce: the
# workers average their gradients with Gloo's ring all-reduce, as DDP), and
# prints worker 0's median step time after 20 warm-up steps:
#
#   benchmarks/dist_mlp_step.sh [BUILD_DIR] [N] [ps|allreduce]
#   dist_mlp_step runnel procs=2 mode=ps step_time=X ms
set -euo pipefail
build=${1:-build}
procs=${2:-2}
mode=${3:-ps}
case "$mode" in
  ps) n_ps=1; mode_flag=--sync_replicas ;;
  allreduce) n_ps=0; mode_flag=--allreduce ;;
  *) echo "mode must be ps or allreduce, not '$mode'" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(RUNNEL_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE \
  "$here/scripts/local_cluster.sh" "$n_ps" "$procs" -- \
  "$build/examples/fashion_mnist_mlp" --optimizer=sgd --learning_rate=0.1 \
  --batch_size=$((128 / procs)) --epochs=1 --max_steps=221 "$mode_flag")
ms=$(echo "$out" | sed -n 's/^worker 0: median step time \([0-9.]*\) ms.*/\1/p')
acc=$(echo "$out" | sed -n 's/^test accuracy: //p')
[ -n "$ms" ] || { echo "$out" >&2; exit 1; }
echo "dist_mlp_step runnel procs=$procs mode=$mode step_time=$ms ms (test accuracy after 220 steps: $acc)"
