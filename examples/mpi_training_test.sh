#!/usr/bin/env bash
# Between-graph training launched by mpirun: three ranks of the same
# program become ps 0, worker 0 and worker 1 (--cluster_from=mpi) at
# 127.0.0.1:port_base+rank, train asynchronously for --max_steps each, and
# the chief reports the global step of both workers' updates and a model
# that learned. The PS serves until it is killed (as TensorFlow's does), so
# the test stops mpirun once the chief is done; every wait is bounded.
# Usage: mpi_training_test.sh BUILD_DIR
set -euo pipefail
build=$1
command -v mpirun >/dev/null ||
  { echo "FAIL: mpirun not found (Debian's openmpi-bin)"; exit 1; }
work=$(mktemp -d)
job=
cleanup() {
  if [ -n "$job" ]; then
    kill "$job" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$job" 2>/dev/null || true
  fi
  pkill -KILL -f -- "--port_base=$base" 2>/dev/null || true
  rm -rf "$work"
}
base=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1] % 20000 + 20000)')
trap cleanup EXIT
export OMP_WAIT_POLICY=PASSIVE
mpirun --allow-run-as-root --oversubscribe -np 3 \
  --output-filename "$work/out" "$build/examples/fashion_mnist_mlp" \
  --cluster_from=mpi --jobs=ps=1,worker=2 "--port_base=$base" \
  --optimizer=sgd --learning_rate=0.1 --epochs=1 --max_steps=100 \
  >"$work/mpirun.log" 2>&1 &
job=$!
chief="$work/out/1/rank.1/stdout"
for _ in $(seq 1800); do
  grep -q "^test accuracy" "$chief" 2>/dev/null && break
  kill -0 "$job" 2>/dev/null ||
    { echo "FAIL: mpirun ended early"; cat "$work/mpirun.log"; exit 1; }
  sleep 0.1
done
grep -q "^test accuracy" "$chief" 2>/dev/null ||
  { echo "FAIL: the chief did not finish"; tail -n 20 "$work"/out/1/rank.*/std*; exit 1; }
cat "$chief"
grep -q "^ps 0 serving on grpc://127.0.0.1:$base$" "$work/out/1/rank.0/stdout" ||
  { echo "FAIL: rank 0 is not ps 0 at port_base"; exit 1; }
grep -q "^worker 1 serving on grpc://127.0.0.1:$((base + 2))$" \
  "$work/out/1/rank.2/stdout" ||
  { echo "FAIL: rank 2 is not worker 1 at port_base + 2"; exit 1; }
step=$(sed -n 's/^global step \([0-9]*\)$/\1/p' "$chief")
acc=$(sed -n 's/^test accuracy: \([0-9.]*\)%$/\1/p' "$chief")
[ "$step" -ge 200 ] && [ "$step" -le 202 ] ||
  { echo "FAIL: global step $step, not 200 (+ at most 1 per worker)"; exit 1; }
awk -v a="$acc" 'BEGIN { exit !(a + 0 >= 60) }' ||
  { echo "FAIL: accuracy $acc%"; exit 1; }
echo PASS
