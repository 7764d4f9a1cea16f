#!/usr/bin/env bash
# Clusters started from the command line, three ways, each running a graph
# whose variable lives on the PS and whose compute lives on a worker, with
# the same answer as one process: `runnel server --cluster ...`, TF_CONFIG,
# and `mpirun ... runnel server --mpi`. Every server listens on 127.0.0.1
# and is stopped on exit; every wait is bounded.
# Usage: cluster_cli_test.sh RUNNEL_BINARY
set -euo pipefail
runnel=$1
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

free_ports() {  # N free ports of 127.0.0.1
  /usr/bin/python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

wait_listening() {  # LOG: waits up to 30 s for the "listening" line
  for _ in $(seq 300); do
    grep -q "listening on" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "FAIL: no server came up ($1):"; cat "$1"; exit 1
}

cat > "$work/g.pbtxt" <<'PB'
node { name: "w" op: "VariableV2" device: "/job:ps/task:0"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: 2 } } } } }
node { name: "w0" op: "Const" device: "/job:ps/task:0"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT
    tensor_shape { dim { size: 2 } } float_val: 1 float_val: -2 } } } }
node { name: "init" op: "Assign" input: "w" input: "w0" device: "/job:ps/task:0"
  attr { key: "T" value { type: DT_FLOAT } } }
node { name: "x" op: "Placeholder" device: "/job:worker/task:1"
  attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "wx" op: "Mul" input: "w" input: "x" device: "/job:worker/task:1"
  attr { key: "T" value { type: DT_FLOAT } } }
node { name: "step" op: "AssignAdd" input: "w" input: "wx" device: "/job:ps/task:0"
  attr { key: "T" value { type: DT_FLOAT } } }
PB
args=(run "$work/g.pbtxt" --init init --feed 'x=[0.5,0.25]' --fetch step
      --repeat 3 --json --timeout_ms 20000)
# One process (the job/task devices relaxed onto this process's CPU).
want=$("$runnel" "${args[@]}" --soft_placement)
echo "one process: $want"

check() {  # NAME TARGET
  got=$("$runnel" "${args[@]}" --master "$2")
  if [ "$got" != "$want" ]; then
    echo "FAIL ($1): got $got, want $want"; exit 1
  fi
  echo "ok: $1 ($2): $got"
}

# 1. --cluster flags, one process per task; worker 1 from TF_CONFIG.
read -r p0 p1 p2 <<<"$(free_ports 3)"
spec="ps=127.0.0.1:$p0;worker=127.0.0.1:$p1,127.0.0.1:$p2"
"$runnel" server --cluster "$spec" --job ps --task 0 >"$work/ps.log" 2>&1 &
pids+=($!)
"$runnel" server --cluster "$spec" --job worker --task 0 >"$work/w0.log" 2>&1 &
pids+=($!)
TF_CONFIG="{\"cluster\": {\"ps\": [\"127.0.0.1:$p0\"], \"worker\": [\"127.0.0.1:$p1\", \"127.0.0.1:$p2\"]}, \"task\": {\"type\": \"worker\", \"index\": 1}}" \
  "$runnel" server >"$work/w1.log" 2>&1 &
pids+=($!)
for l in ps w0 w1; do wait_listening "$work/$l.log"; done
grep -q "/job:worker/replica:0/task:1 listening on 127.0.0.1:$p2" "$work/w1.log" ||
  { echo "FAIL: TF_CONFIG task"; cat "$work/w1.log"; exit 1; }
check "flags + TF_CONFIG, master on worker 0" "grpc://127.0.0.1:$p1"
check "master on the ps" "grpc://127.0.0.1:$p0"
for p in "${pids[@]}"; do kill "$p"; done
for p in "${pids[@]}"; do wait "$p" || true; done
pids=()

# 2. mpirun: three ranks become ps 0, worker 0, worker 1 at port_base+rank.
if command -v mpirun >/dev/null; then
  read -r base <<<"$(free_ports 1)"
  base=$(( (base % 20000) + 20000 ))
  mpirun --allow-run-as-root --oversubscribe -np 3 \
    "$runnel" server --mpi --jobs ps=1,worker=2 --port_base "$base" \
    >"$work/mpi.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do
    [ "$(grep -c 'listening on' "$work/mpi.log" 2>/dev/null)" = 3 ] && break
    sleep 0.1
  done
  [ "$(grep -c 'listening on' "$work/mpi.log")" = 3 ] ||
    { echo "FAIL: mpirun servers"; cat "$work/mpi.log"; exit 1; }
  check "mpirun -np 3" "grpc://127.0.0.1:$((base + 1))"
else
  echo "FAIL: mpirun not found (Debian's openmpi-bin)"; exit 1
fi
# 3. --memory_limit_mb: a 60-byte constant declaring 2^24 floats (64 MiB)
# is refused by a server capped at 16 MiB, and the same graph with 1000
# floats runs.
big_graph() {  # N
  cat <<PB
node { name: "c" op: "Const" device: "/job:worker/task:0"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT
    tensor_shape { dim { size: $1 } } float_val: 0.5 } } } }
node { name: "axis" op: "Const" device: "/job:worker/task:0"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32
    tensor_shape { } int_val: 0 } } } }
node { name: "sum" op: "Sum" input: "c" input: "axis" device: "/job:worker/task:0"
  attr { key: "T" value { type: DT_FLOAT } }
  attr { key: "Tidx" value { type: DT_INT32 } } }
PB
}
big_graph 16777216 >"$work/big.pbtxt"
big_graph 1000 >"$work/small.pbtxt"
read -r p0 <<<"$(free_ports 1)"
"$runnel" server --cluster "worker=127.0.0.1:$p0" --job worker --task 0 \
  --memory_limit_mb 16 >"$work/capped.log" 2>&1 &
pids+=($!)
wait_listening "$work/capped.log"
if out=$("$runnel" run "$work/big.pbtxt" --fetch sum --timeout_ms 20000 \
           --master "grpc://127.0.0.1:$p0" 2>&1); then
  echo "FAIL (--memory_limit_mb): a 64 MiB constant ran: $out"; exit 1
fi
echo "$out" | grep -q "over the limit of 16777216 bytes" ||
  { echo "FAIL (--memory_limit_mb): wrong error: $out"; exit 1; }
echo "ok: --memory_limit_mb 16 refuses a 64 MiB constant"
got=$("$runnel" run "$work/small.pbtxt" --fetch sum --timeout_ms 20000 \
        --master "grpc://127.0.0.1:$p0")
[ "$got" = "sum (float []): 500" ] ||
  { echo "FAIL (--memory_limit_mb): small graph gave '$got'"; exit 1; }
echo "ok: --memory_limit_mb 16 runs a 4000-byte constant: $got"
echo "cluster_cli_test: all passed"
