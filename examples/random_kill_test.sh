#!/usr/bin/env bash
# Tasks killed at random (whitepaper §3.3, issue 11's fault test): a
# loopback cluster of 1 PS and 2 workers trains Fashion-MNIST asynchronously
# with a checkpoint every 50 global steps. ROUNDS times (default 3), once
# the checkpoints have advanced by a random 50-300 steps, a random task is
# killed with SIGKILL: the PS (every worker's step fails naming it) or the
# chief (the other worker finishes its share), and in the last round also
# the other worker (the chief finishes the job). Whatever the job does
# then, it must end within a bound; it is started again from the last
# checkpoint until it has done the uninterrupted run's updates. It must end
# at the uninterrupted run's global step (within one step per worker),
# having learned as an uninterrupted run does (test accuracy >= 75% after 1
# epoch; asynchronous SGD lands at 80-85%, chance is 10%), and no restart
# may go back before the last checkpoint. Every wait is bounded, and every
# process started is stopped.
#
# Usage: random_kill_test.sh BUILD_DIR SOURCE_DIR [ROUNDS]
# RANDOM_KILL_SEED=N replays the choices of an earlier run (it prints its
# seed).
set -euo pipefail
build=$1
src=$2
rounds=${3:-3}
seed=${RANDOM_KILL_SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$seed
echo "seed $seed (RANDOM_KILL_SEED=$seed replays it)"
dir=$(mktemp -d)
trap 'pkill -KILL -f -- "--checkpoint_dir=$dir/ckpt" 2>/dev/null || true; rm -rf "$dir"' EXIT
export OMP_WAIT_POLICY=PASSIVE LOCAL_CLUSTER_TIMEOUT=240
run=("$src/scripts/local_cluster.sh" 1 2 -- "$build/examples/fashion_mnist_mlp"
     --optimizer=sgd --learning_rate=0.1 --epochs=1 --save_every=50
     "--checkpoint_dir=$dir/ckpt")
target=938  # 1 epoch of 60,000 examples in batches of 64.
fail() { echo "FAIL: $*"; exit 1; }
saved() {
  sed -n 's/^model_checkpoint_path: "model.ckpt-\([0-9]*\)"/\1/p' \
    "$dir/ckpt/checkpoint" 2>/dev/null || true
}
# The global step the chief printed at the end of run $1, or nothing.
finished() { sed -n 's/^global step \([0-9]*\)$/\1/p' "$dir/run$1.log"; }

n=0
last=0
done_at=""
for ((round = 1; round <= rounds; round++)); do
  n=$((n + 1))
  wait_for=$((last + 50 + RANDOM % 251))
  [ "$wait_for" -lt 880 ] || wait_for=880
  # Killing the non-chief worker lets the chief finish the job, so only
  # the last round may pick it: every round before kills a task the job
  # cannot finish without.
  choices=3
  [ "$round" = "$rounds" ] || choices=2
  case $((RANDOM % choices)) in
    0) victim_job=ps victim_task=0 ;;
    1) victim_job=worker victim_task=0 ;;
    2) victim_job=worker victim_task=1 ;;
  esac
  LOCAL_CLUSTER_LOGS=$dir/logs$n "${run[@]}" >"$dir/run$n.log" 2>&1 &
  job=$!
  killed=0
  for _ in $(seq 6000); do  # 120 s.
    s=$(saved)
    if [ -n "$s" ] && [ "$s" -ge "$wait_for" ]; then
      pkill -KILL -f -- \
        "checkpoint_dir=$dir/ckpt.*job_name=$victim_job --task_index=$victim_task\$" &&
        killed=1
      break
    fi
    kill -0 "$job" 2>/dev/null || break
    sleep 0.02
  done
  rc=0
  wait "$job" || rc=$?  # Bounded by LOCAL_CLUSTER_TIMEOUT.
  grep -q "still running after" "$dir/run$n.log" && fail "round $round hung"
  s=$(saved)
  if [ $killed = 1 ]; then
    echo "round $round: killed $victim_job $victim_task at checkpoint" \
         ">= $wait_for; the job exited with $rc; last checkpoint $s"
  else
    echo "round $round: the job ended (status $rc) before checkpoint $wait_for"
  fi
  [ -n "$s" ] && [ "$s" -ge "$last" ] || fail "checkpoint went back: $s < $last"
  last=$s
  done_at=$(finished "$n")
  [ -z "$done_at" ] || break
done
# Started again until the job has done its updates (at most 3 more runs:
# each resumes from the last checkpoint).
for _ in 1 2 3; do
  [ -z "$done_at" ] || break
  n=$((n + 1))
  LOCAL_CLUSTER_LOGS=$dir/logs$n "${run[@]}" >"$dir/run$n.log" 2>&1 || true
  resumed=$(sed -n 's/^worker 0: resuming at global step \([0-9]*\)$/\1/p' \
    "$dir/run$n.log")
  echo "run $n: resumed at global step ${resumed:-0}"
  [ "${resumed:-0}" -ge "$last" ] || fail "resumed at $resumed, before $last"
  done_at=$(finished "$n")
done
[ -n "$done_at" ] || { cat "$dir/run$n.log"; fail "the job never finished"; }
acc=$(sed -n 's/^test accuracy: \([0-9.]*\)%$/\1/p' "$dir/run$n.log")
echo "finished after $n runs at global step $done_at, test accuracy $acc%"
[ "$done_at" -ge $((target - 2)) ] && [ "$done_at" -le $((target + 2)) ] ||
  fail "ended at $done_at, not $target"
awk -v a="$acc" 'BEGIN { exit !(a + 0 >= 75) }' || fail "accuracy $acc%"
echo PASS
