#!/usr/bin/env bash
# Runs a training program as a cluster on this machine's loopback:
#
#   scripts/local_cluster.sh N_PS N_WORKERS -- COMMAND [ARGS...]
#
# picks N_PS + N_WORKERS free ports on 127.0.0.1 and starts COMMAND once per
# task with TensorFlow's flags added: --ps_hosts=... --worker_hosts=...
# --job_name=ps|worker --task_index=I. It waits for every worker to exit
# (at most LOCAL_CLUSTER_TIMEOUT seconds, default 1800), then stops the PS
# tasks (which serve until stopped) and every other process it started,
# prints worker 0's output and each worker's throughput line, and exits
# non-zero if any worker failed or the time ran out. Logs stay in
# LOCAL_CLUSTER_LOGS (default: a temporary directory, removed at the end).
set -euo pipefail

usage() {
  echo "usage: $0 N_PS N_WORKERS -- COMMAND [ARGS...]" >&2
  exit 2
}
[ $# -ge 4 ] || usage
n_ps=$1
n_workers=$2
shift 2
[ "$1" = "--" ] || usage
shift
[[ "$n_ps" =~ ^[0-9]+$ && "$n_workers" =~ ^[1-9][0-9]*$ ]] || usage
timeout_s=${LOCAL_CLUSTER_TIMEOUT:-1800}

ports=($(/usr/bin/python3 - "$((n_ps + n_workers))" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
))
join() { local IFS=,; echo "$*"; }
ps_addrs=()
worker_addrs=()
for ((i = 0; i < n_ps; i++)); do ps_addrs+=("127.0.0.1:${ports[i]}"); done
for ((i = 0; i < n_workers; i++)); do
  worker_addrs+=("127.0.0.1:${ports[n_ps + i]}")
done
cluster_flags=(--worker_hosts="$(join "${worker_addrs[@]}")")
[ "$n_ps" -gt 0 ] && cluster_flags+=(--ps_hosts="$(join "${ps_addrs[@]}")")

logs=${LOCAL_CLUSTER_LOGS:-}
keep_logs=1
if [ -z "$logs" ]; then
  logs=$(mktemp -d)
  keep_logs=0
fi
mkdir -p "$logs"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ $keep_logs = 1 ] || rm -rf "$logs"
}
trap cleanup EXIT

for ((i = 0; i < n_ps; i++)); do
  "$@" "${cluster_flags[@]}" --job_name=ps --task_index=$i \
    >"$logs/ps$i.log" 2>&1 &
  pids+=($!)
done
worker_pids=()
for ((i = 0; i < n_workers; i++)); do
  "$@" "${cluster_flags[@]}" --job_name=worker --task_index=$i \
    >"$logs/worker$i.log" 2>&1 &
  pids+=($!)
  worker_pids+=($!)
done
echo "cluster: ${n_ps} ps (${ps_addrs[*]:-none}), ${n_workers} workers" \
     "(${worker_addrs[*]}); logs in $logs"

deadline=$((SECONDS + timeout_s))
failed=0
for ((i = 0; i < n_workers; i++)); do
  pid=${worker_pids[i]}
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "worker $i still running after ${timeout_s}s: stopping the cluster" >&2
    failed=1
    break
  fi
  rc=0
  wait "$pid" || rc=$?
  if [ $rc != 0 ]; then
    echo "worker $i exited with status $rc:" >&2
    tail -n 20 "$logs/worker$i.log" >&2
    failed=1
  fi
done

echo "--- worker 0 ---"
cat "$logs/worker0.log"
echo "--- throughput ---"
for ((i = 0; i < n_workers; i++)); do
  grep -h "examples/s" "$logs/worker$i.log" || echo "worker $i: (none)"
done
exit $failed
