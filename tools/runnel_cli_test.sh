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


# --- Untrusted input (SECURITY.md) -------------------------------------------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A TF-style saver: save/Const holds the checkpoint prefix, save/SaveV2 writes
# tensor "v" there.
string_const() {  # string_const NAME VALUE
  cat <<PB
node { name: "$1" op: "Const"
  attr { key: "dtype" value { type: DT_STRING } }
  attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { $3 } string_val: "$2" } } } }
PB
}
{
  string_const save/Const "$tmp/graph_ckpt" ""
  string_const save/names v "dim { size: 1 }"
  string_const save/slices "" "dim { size: 1 }"
  cat <<'PB'
node { name: "v" op: "Const"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 3 } } } }
node { name: "save/SaveV2" op: "SaveV2"
  input: "save/Const" input: "save/names" input: "save/slices" input: "v"
  attr { key: "dtypes" value { list { type: DT_FLOAT } } } }
PB
} > "$tmp/save.pbtxt"

err=$("$runnel" run "$tmp/save.pbtxt" --target save/SaveV2 2>&1 >/dev/null)
check "I/O graph refused without --allow_io" 1 "$?"
case "$err" in *"'save/SaveV2' (SaveV2)"*"untrusted"*) echo "ok   refusal names the node";;
  *) echo "FAIL refusal message: $err"; fail=1;; esac
check "refused graph wrote nothing" no "$([ -e "$tmp/graph_ckpt.index" ] && echo yes || echo no)"

"$runnel" run "$tmp/save.pbtxt" --untrusted --target save/SaveV2 >/dev/null 2>&1
check "--untrusted refuses it too" 1 "$?"

out=$("$runnel" run "$tmp/save.pbtxt" --allow_io --target save/SaveV2 2>&1)
check "I/O graph runs with --allow_io ($out)" 'ran save/SaveV2' "$out"
check "--allow_io wrote the checkpoint" yes "$([ -e "$tmp/graph_ckpt.index" ] && echo yes || echo no)"

# A checkpoint path named on the command line stays allowed.
out=$("$runnel" run "$tmp/save.pbtxt" --feed "save/Const='$tmp/fed_ckpt'" --target save/SaveV2 2>&1)
check "fed checkpoint path allowed ($out)" 'ran save/SaveV2' "$out"
check "fed path was written" yes "$([ -e "$tmp/fed_ckpt.index" ] && echo yes || echo no)"

"$runnel" run "$tmp/save.pbtxt" --allow_io --untrusted --target save/SaveV2 >/dev/null 2>&1
check "--allow_io with --untrusted is a usage error" 2 "$?"

# A loop whose condition never turns false: the step times out, cleanly.
cat > "$tmp/forever.pbtxt" <<'PB'
node { name: "zero" op: "Const"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
node { name: "limit" op: "Const"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 10 } } } }
node { name: "w/Enter" op: "Enter" input: "zero"
  attr { key: "T" value { type: DT_INT32 } }
  attr { key: "frame_name" value { s: "w" } } }
node { name: "w/limit" op: "Enter" input: "limit"
  attr { key: "T" value { type: DT_INT32 } }
  attr { key: "frame_name" value { s: "w" } }
  attr { key: "is_constant" value { b: true } } }
node { name: "w/Merge" op: "Merge" input: "w/Enter" input: "w/NextIteration"
  attr { key: "N" value { i: 2 } } attr { key: "T" value { type: DT_INT32 } } }
node { name: "w/Less" op: "Less" input: "w/Merge" input: "w/limit"
  attr { key: "T" value { type: DT_INT32 } } }
node { name: "w/LoopCond" op: "LoopCond" input: "w/Less" }
node { name: "w/Switch" op: "Switch" input: "w/Merge" input: "w/LoopCond"
  attr { key: "T" value { type: DT_INT32 } } }
node { name: "w/Identity" op: "Identity" input: "w/Switch:1"
  attr { key: "T" value { type: DT_INT32 } } }
node { name: "w/NextIteration" op: "NextIteration" input: "w/Identity"
  attr { key: "T" value { type: DT_INT32 } } }
node { name: "w/Exit" op: "Exit" input: "w/Switch"
  attr { key: "T" value { type: DT_INT32 } } }
PB
start=$(date +%s)
err=$(timeout 60 "$runnel" run "$tmp/forever.pbtxt" --fetch w/Exit --timeout_ms 300 2>&1 >/dev/null)
rc=$?
check "endless loop times out with exit 1" 1 "$rc"
case "$err" in *DEADLINE_EXCEEDED*"--timeout_ms"*) echo "ok   timeout message";;
  *) echo "FAIL timeout message: $err"; fail=1;; esac
check "timeout took under 30 s" 1 "$(( $(date +%s) - start < 30 ))"

"$runnel" run "$tmp/forever.pbtxt" --fetch w/Exit --timeout_ms soon >/dev/null 2>&1
check "bad --timeout_ms is a usage error" 2 "$?"

# A memory budget: a 4 GB Fill fails cleanly under --memory_limit_mb 256.
cat > "$tmp/bigfill.pbtxt" <<'PB'
node { name: "dims" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
  attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { dim { size: 2 } }
    int64_val: 32768 int64_val: 32768 } } } }
node { name: "v" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }
node { name: "big" op: "Fill" input: "dims" input: "v"
  attr { key: "T" value { type: DT_FLOAT } }
  attr { key: "index_type" value { type: DT_INT64 } } }
PB
err=$("$runnel" run "$tmp/bigfill.pbtxt" --fetch big --memory_limit_mb 256 2>&1 >/dev/null)
check "over the memory limit exits 1" 1 "$?"
case "$err" in *RESOURCE_EXHAUSTED*"'big'"*) echo "ok   memory limit message names the node";;
  *) echo "FAIL memory limit message: $err"; fail=1;; esac
"$runnel" run "$tmp/bigfill.pbtxt" --fetch big --memory_limit_mb lots >/dev/null 2>&1
check "bad --memory_limit_mb is a usage error" 2 "$?"
# The per-step limit: the same 4 GB Fill past a 64 MiB step limit names the
# node, the bytes and the limit.
err=$("$runnel" run "$tmp/bigfill.pbtxt" --fetch big --step_memory_limit_mb 64 2>&1 >/dev/null)
check "over the step memory limit exits 1" 1 "$?"
case "$err" in *RESOURCE_EXHAUSTED*"'big'"*"4294967296 bytes"*"step limit 67108864 bytes"*)
  echo "ok   step memory limit message names the node, bytes and limit";;
  *) echo "FAIL step memory limit message: $err"; fail=1;; esac
"$runnel" run "$tmp/bigfill.pbtxt" --fetch big --step_memory_limit_mb 0 >/dev/null 2>&1
check "bad --step_memory_limit_mb is a usage error" 2 "$?"

# Hostile feeds and files: errors and exit codes, never a crash.
deep=$(awk 'BEGIN { for (i = 0; i < 100000; i++) printf "["; }')
err=$("$runnel" run "$tf/graphs/tf_addition/model.pb" --feed "x=$deep" --feed y=1 --fetch z 2>&1 >/dev/null)
check "100000-deep feed exits 1" 1 "$?"
case "$err" in *"deeper than 64"*) echo "ok   deep feed names the limit";;
  *) echo "FAIL deep feed: ${err:0:300}"; fail=1;; esac

"$runnel" run "$tf/graphs/tf_addition/model.pb" --feed x=1e999 --feed y=1 --fetch z >/dev/null 2>&1
check "out-of-range feed exits 1" 1 "$?"

"$runnel" run "$tf/graphs/tf_addition/model.pb" --feed "x=[[1],[2,3]]" --feed y=1 --fetch z >/dev/null 2>&1
check "ragged feed exits 1" 1 "$?"

err=$("$runnel" run "$tf/graphs/tf_addition/model.pb" --max_graph_bytes 100 --feed x=1 --feed y=1 --fetch z 2>&1 >/dev/null)
check "graph over --max_graph_bytes exits 1" 1 "$?"
case "$err" in *RESOURCE_EXHAUSTED*"--max_graph_bytes"*) echo "ok   size cap message";;
  *) echo "FAIL size cap message: $err"; fail=1;; esac

"$runnel" run "$tmp" --fetch z >/dev/null 2>&1
check "a directory as GRAPH exits 1" 1 "$?"

head -c 4096 /dev/urandom > "$tmp/garbage.pb"
"$runnel" run "$tmp/garbage.pb" --fetch z >/dev/null 2>&1
check "garbage graph exits 1" 1 "$?"
"$runnel" inspect "$tmp/garbage.pb" >/dev/null 2>&1
check "inspect of a garbage graph exits 1" 1 "$?"

touch "$tmp/unreadable.pb" && chmod 000 "$tmp/unreadable.pb"
if [ -r "$tmp/unreadable.pb" ]; then
  echo "skip unreadable file (running as root)"
else
  "$runnel" run "$tmp/unreadable.pb" --fetch z >/dev/null 2>&1
  check "unreadable graph exits 1" 1 "$?"
fi

# Two CPU devices: b = a * 2 on CPU:1, c = b + 1 on CPU:0 (devices in the
# graph); placements on stderr in TF's format, one graph per device written.
cat > "$tmp/two_devices.pbtxt" <<'PB'
node { name: "a" op: "Placeholder" device: "/device:CPU:0"
  attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "two" op: "Const" device: "/device:CPU:1"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 2 } } } }
node { name: "b" op: "Mul" input: "a" input: "two" device: "/device:CPU:1"
  attr { key: "T" value { type: DT_FLOAT } } }
node { name: "one" op: "Const" device: "/device:CPU:0"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }
node { name: "c" op: "AddV2" input: "b" input: "one" device: "/device:CPU:0"
  attr { key: "T" value { type: DT_FLOAT } } }
PB
out=$("$runnel" run "$tmp/two_devices.pbtxt" --device_count CPU=2 --feed a=20 --fetch c \
      --log_device_placement --partition_graphs "$tmp/parts" 2>"$tmp/placement.txt")
check "two devices compute 41" 'c (float []): 41' "$out"
check "placement of b logged" 1 \
  "$(grep -c '^b: (Mul): /job:localhost/replica:0/task:0/device:CPU:1$' "$tmp/placement.txt")"
check "two partition graphs written" 2 "$(ls "$tmp/parts" | grep -c '^partition_.*pbtxt$')"
# The fed value of a goes straight to its consumer's device (CPU:1), so only
# b crosses: one _Send/_Recv pair.
check "partitions joined by one _Send" 1 "$(cat "$tmp/parts"/*.pbtxt | grep -c 'op: "_Send"')"
check "and one _Recv" 1 "$(cat "$tmp/parts"/*.pbtxt | grep -c 'op: "_Recv"')"
"$runnel" run "$tmp/two_devices.pbtxt" --feed a=20 --fetch c >/dev/null 2>"$tmp/err.txt"
check "CPU:1 without --device_count exits 1" 1 "$?"
check "the error names the node and device" 1 \
  "$(grep -c "'two'.*CPU:1\|CPU:1.*'two'" "$tmp/err.txt")"
out=$("$runnel" run "$tmp/two_devices.pbtxt" --soft_placement --feed a=20 --fetch c)
check "soft placement runs on one CPU" 'c (float []): 41' "$out"
"$runnel" run "$tmp/two_devices.pbtxt" --device_count CPU >/dev/null 2>&1
check "bad --device_count is a usage error" 2 "$?"

# --placement greedy_cost_model: two independent 256x256 MatMuls that no
# device constraint pins go to the two CPUs (TF's default rule keeps them on
# CPU:0); the answer is the same.
cat >"$tmp/branches.pbtxt" <<'PB'
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "y" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "dims" op: "Const"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 256 int_val: 256 } } } }
node { name: "fx" op: "Fill" input: "dims" input: "x"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "index_type" value { type: DT_INT32 } } }
node { name: "fy" op: "Fill" input: "dims" input: "y"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "index_type" value { type: DT_INT32 } } }
node { name: "mx" op: "MatMul" input: "fx" input: "fx" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "my" op: "MatMul" input: "fy" input: "fy" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "s" op: "AddV2" input: "mx" input: "my" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "axes" op: "Const"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 0 int_val: 1 } } } }
node { name: "total" op: "Sum" input: "s" input: "axes"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "Tidx" value { type: DT_INT32 } }
  attr { key: "keep_dims" value { b: false } } }
PB
rm -rf "$tmp/greedy" "$tmp/plain"
out=$("$runnel" run "$tmp/branches.pbtxt" --device_count CPU=2 --placement greedy_cost_model \
      --feed x=1 --feed y=2 --fetch total --partition_graphs "$tmp/greedy")
check "greedy placement computes 256*(1+4)*65536" 'total (float []): 83886080' "$out"
check "greedy placement uses both CPUs" 2 "$(ls "$tmp/greedy" | grep -c '^partition_.*pbtxt$')"
out=$("$runnel" run "$tmp/branches.pbtxt" --device_count CPU=2 \
      --feed x=1 --feed y=2 --fetch total --partition_graphs "$tmp/plain")
check "the default placement gives the same" 'total (float []): 83886080' "$out"
check "and keeps one partition" 1 "$(ls "$tmp/plain" | grep -c '^partition_.*pbtxt$')"
"$runnel" run "$tmp/branches.pbtxt" --placement fastest --feed x=1 --feed y=2 --fetch total >/dev/null 2>"$tmp/err.txt"
check "an unknown --placement exits 1" 1 "$?"
check "and names it" 1 "$(grep -c "runnel_placement_strategy 'fastest'" "$tmp/err.txt")"

# --- Timelines ---------------------------------------------------------------
# The two-device graph traced: `run --trace` writes the last step's
# RunMetadata, `timeline` makes it a Chrome trace (valid JSON, checked by
# Python's parser): a process per device, an event per node, the _Send ->
# _Recv arrow of b; --top prints the op types with their counts (0: all).
"$runnel" run "$tmp/two_devices.pbtxt" --device_count CPU=2 --feed a=20 --fetch c \
  --trace "$tmp/run_metadata.pb" >/dev/null 2>&1
check "run --trace exits 0" 0 "$?"
"$runnel" timeline "$tmp/run_metadata.pb" -o "$tmp/trace.json" >/dev/null 2>&1
check "timeline -o exits 0" 0 "$?"
out=$(/usr/bin/python3 - "$tmp/trace.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
procs = sorted(e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "process_name")
nodes = sorted(e["args"]["name"] for e in events if e["ph"] == "X")
starts = {e["id"]: e["pid"] for e in events if e["ph"] == "s"}
ends = {e["id"]: e["pid"] for e in events if e["ph"] == "f"}
cross = sum(1 for i in starts if i in ends and ends[i] != starts[i])
print(len(procs), procs[1].endswith("CPU:1 Compute"),
      all(n in nodes for n in "bc"), cross >= 1)
PY
)
check "trace: 2 devices, nodes b c, a cross-device arrow" "2 True True True" "$out"
out=$("$runnel" timeline "$tmp/run_metadata.pb" --top 0 | grep -cE '^Mul +1 ')
check "timeline --top 0 lists Mul, run once" 1 "$out"
"$runnel" timeline "$tmp/trace.json" >/dev/null 2>"$tmp/err.txt"
check "a file that is not RunMetadata exits 1" 1 "$?"
printf '' > "$tmp/empty.pb"
"$runnel" timeline "$tmp/empty.pb" >/dev/null 2>"$tmp/err.txt"
check "RunMetadata without step stats exits 1" 1 "$?"
check "and says to trace" 1 "$(grep -c 'FULL_TRACE' "$tmp/err.txt")"
head -c 100000 /dev/urandom > "$tmp/random.pb"
"$runnel" timeline "$tmp/random.pb" >/dev/null 2>&1
rc=$?
check "random bytes exit 1, no crash" 1 "$rc"
"$runnel" timeline "$tmp/run_metadata.pb" --max_bytes 10 >/dev/null 2>&1
check "over --max_bytes exits 1" 1 "$?"
"$runnel" timeline >/dev/null 2>&1
check "timeline without a file is a usage error" 2 "$?"

# --- Event files (TensorBoard) ------------------------------------------------
# The Keras callback's file (testdata/tf/README.md): 83 records, a graph, a
# meta graph, scalars loss/acc/val_loss/val_acc for steps 0-19.
ev="$tf/events/events.out.tfevents.1548797801.omaha"
out=$("$runnel" events "$ev")
check "events counts 83 events" 1 "$(echo "$out" | grep -c '^run \. .*1 event file(s), 83 events$')"
check "events lists a graph and a meta graph" 1 "$(echo "$out" | grep -c 'graphs 1, meta graphs 1,')"
for t in loss acc val_loss val_acc; do
  check "events lists $t" "$t scalar 20 0-19" "$(echo "$out" | awk -v t=$t '$1 == t { print $1, $2, $3, $4 }')"
done
out=$("$runnel" events "$tf/events" --tag loss)
check "loss series has 20 points" 1 "$(echo "$out" | grep -c '^run \., tag loss (scalar): 20 points$')"
check "loss at step 0" '0 0.2473653' "$(echo "$out" | awk '$1 == "0" { print $1, $3 }')"
check "loss at step 19" '19 0.019036217' "$(echo "$out" | awk '$1 == "19" { print $1, $3 }')"
out=$("$runnel" events "$ev" --tag loss --json)
check "loss json first point" 1 \
  "$(echo "$out" | grep -c '"points": \[{"step": 0, "wall_time": 1548797807.701761, "value": 0.2473653}, ')"
check "loss json last point" 1 \
  "$(echo "$out" | grep -c '{"step": 19, "wall_time": 1548797904.249615, "value": 0.019036217}\]}\]}$')"
out=$("$runnel" events "$ev" --json)
check "events json tag entry" 1 \
  "$(echo "$out" | grep -c '{"tag": "val_acc", "kind": "scalar", "count": 20, "first_step": 0, "last_step": 19}')"
check "events json file entry" 1 "$(echo "$out" | grep -c '"events": 83, "damage": \[\]}')"

# A log directory with two runs, one of them a copy cut inside its last
# record: the cut is a warning naming its offset (230147), the 82 complete
# records count, and the exit status is 0.
mkdir -p "$tmp/logs/train" "$tmp/logs/eval/deep"
cp "$ev" "$tmp/logs/train/"
head -c 230170 "$ev" > "$tmp/logs/eval/deep/events.out.tfevents.1548797801.cut"
echo notes > "$tmp/logs/eval/notes.txt"
out=$("$runnel" events "$tmp/logs" 2>"$tmp/events_err.txt")
check "truncated log dir exits 0" 0 "$?"
check "two runs" 'eval/deep train' "$(echo "$out" | awk '/^run / { printf "%s%s", sep, $2; sep = " " }')"
check "cut run keeps 82 events" 1 "$(echo "$out" | grep -c '^run eval/deep .*, 82 events$')"
check "warning names the offset" 1 "$(grep -c 'truncated record at offset 230147' "$tmp/events_err.txt")"
out=$("$runnel" events "$tmp/logs" --tag loss --json 2>/dev/null)
check "loss in both runs" 1 "$(echo "$out" | grep -c '"run": "eval/deep".*"run": "train"')"
out=$("$runnel" events "$tmp/logs" --json 2>/dev/null)
check "json reports the damage" 1 \
  "$(echo "$out" | grep -c '"damage": \[{"offset": 230147, "kind": "truncated", ')"

# A flipped byte inside record 40's data: that record is skipped, 82 remain.
cp "$ev" "$tmp/flipped.tfevents"
printf '\x00' | dd of="$tmp/flipped.tfevents" bs=1 seek=228342 conv=notrunc 2>/dev/null
out=$("$runnel" events "$tmp/flipped.tfevents" 2>"$tmp/events_err.txt")
check "flipped byte exits 0" 0 "$?"
check "flipped copy keeps 82 events" 1 "$(echo "$out" | grep -c ', 82 events$')"
check "flipped byte warning" 1 "$(grep -c 'corrupted record at offset .*skipped' "$tmp/events_err.txt")"

"$runnel" events "$ev" --tag no_such_tag >/dev/null 2>&1
check "unknown tag exits 1" 1 "$?"
"$runnel" events "$tmp/nonexistent" >/dev/null 2>&1
check "missing log dir exits 1" 1 "$?"
"$runnel" events "$tmp/logs/eval/notes.txt" >/dev/null 2>&1
check "a file that is not an event file exits 0 (a warning, 0 events)" 0 "$?"
"$runnel" events >/dev/null 2>&1
check "events without PATH is a usage error" 2 "$?"

# --- SavedModels, meta graphs, checkpoints ------------------------------------
# TF Serving's half_plus_two (testdata/tf/README.md): serving_default maps
# x to y = 0.5 x + 2. Its x is declared float [1], so one value at a time.
hp2="$tf/saved_models/half_plus_two_tf2/00000123"
for xy in 1:2.5 2:3 5:4.5; do
  out=$("$runnel" run "$hp2" --input "x=${xy%%:*}")
  check "saved model serving_default x=${xy%%:*}" "y (float [1]): [${xy##*:}]" "$out"
done
out=$("$runnel" run "$hp2" --tag serve --signature serving_default --input x=[5] --json)
check "saved model json" '{"y": {"dtype": "float", "shape": [1], "values": [4.5]}}' "$out"
out=$("$runnel" run "$hp2" --signature regress_x2_to_y3 --input inputs=3)
check "saved model regress_x2_to_y3" 'outputs (float [1]): [4.5]' "$out"
out=$("$runnel" inspect "$hp2")
check "inspect lists serving_default's input" 1 "$(echo "$out" | grep -c '^      x: float \[1\] (serving_default_x:0)$')"
check "inspect lists 6 signatures" 6 "$(echo "$out" | grep -c "^  signature '")"
check "inspect lists the object graph's variables" 1 "$(echo "$out" | grep -c "^    root.a: variable float \[\] 'a'$")"
check "inspect lists the asset" 1 "$(echo "$out" | grep -c '^    root.asset: asset foo.txt$')"
out=$("$runnel" run "$tf/saved_models/regression_tf2" --signature w --json)
check "saved model without inputs" 1 "$(echo "$out" | grep -c '^{"output": {"dtype": "float", "shape": \[1\], "values": \[')"

err=$("$runnel" run "$hp2" --signature nope 2>&1 >/dev/null)
check "unknown signature exits 1" 1 "$?"
case "$err" in *"no signature 'nope'"*"'serving_default'"*"x: float [1]"*) echo "ok   unknown signature lists the signatures";;
  *) echo "FAIL unknown signature message: $err"; fail=1;; esac
err=$("$runnel" run "$hp2" --input z=1 2>&1 >/dev/null)
check "bad input name exits 1" 1 "$?"
case "$err" in *"signature 'serving_default': no input 'z'; its inputs are 'x'"*) echo "ok   bad input names the inputs";;
  *) echo "FAIL bad input message: $err"; fail=1;; esac
err=$("$runnel" run "$hp2" 2>&1 >/dev/null)
check "missing input exits 1" 1 "$?"
case "$err" in *"input 'x' is missing"*) echo "ok   missing input named";; *) echo "FAIL missing input: $err"; fail=1;; esac
"$runnel" run "$hp2" --input x=abc >/dev/null 2>&1
check "unparsable input exits 1" 1 "$?"
"$runnel" run "$hp2" --tag train --input x=1 >/dev/null 2>&1
check "unknown tag set exits 1" 1 "$?"
"$runnel" run "$hp2" --feed x=1 --fetch y >/dev/null 2>&1
check "--feed on a SavedModel is a usage error" 2 "$?"

# `runnel ckpt`: the half_plus_two variables a, b, c are float scalars.
ck="$tf/checkpoints/half_plus_two/variables"
out=$("$runnel" ckpt "$ck" | awk '{ printf "%s%s %s %s", sep, $1, $2, $3; sep = "; " }')
check "ckpt lists a b c" 'a float []; b float []; c float []' "$out"
check "ckpt b" 'b (float []): 2' "$("$runnel" ckpt "$ck" b)"
check "ckpt .index path" 'a (float []): 0.5' "$("$runnel" ckpt "$ck.index" a)"
check "ckpt c json" '{"c": {"dtype": "float", "shape": [], "values": [3]}}' "$("$runnel" ckpt "$ck" c --json)"
out=$("$runnel" ckpt "$ck" --json)
check "ckpt list json" 1 "$(echo "$out" | grep -c '"tensors": \[{"name": "a", "dtype": "float", "shape": \[\]}, {"name": "b"')"
check "ckpt string tensors" 'strs string [4]' \
  "$("$runnel" ckpt "$tf/checkpoints/string_tensors/foo" | awk '$1 == "strs" { print $1, $2, $3 }')"
err=$("$runnel" ckpt "$tmp/no_such_ckpt" 2>&1 >/dev/null)
check "missing checkpoint exits 1" 1 "$?"
case "$err" in *"not found"*) echo "ok   missing checkpoint message";; *) echo "FAIL missing checkpoint: $err"; fail=1;; esac
"$runnel" ckpt "$ck" no_such_tensor >/dev/null 2>&1
check "unknown tensor exits 1" 1 "$?"
cp "$ck.data-00000-of-00001" "$tmp/damaged.data-00000-of-00001"
head -c 60 "$ck.index" > "$tmp/damaged.index"
"$runnel" ckpt "$tmp/damaged" >/dev/null 2>&1
check "truncated index exits 1" 1 "$?"
cp "$ck.index" "$tmp/flipped.index"
printf '\x00\x00\x00\x00' | dd of="$tmp/flipped.data-00000-of-00001" bs=1 seek=0 conv=notrunc 2>/dev/null
dd if="$ck.data-00000-of-00001" of="$tmp/flipped.data-00000-of-00001" bs=1 skip=4 seek=4 2>/dev/null
"$runnel" ckpt "$tmp/flipped" a >/dev/null 2>&1
check "corrupt data exits 1" 1 "$?"
"$runnel" ckpt >/dev/null 2>&1
check "ckpt without PREFIX is a usage error" 2 "$?"

# --restore: TF's embedding meta graph restored from its checkpoint gives
# what `runnel ckpt` reads from that checkpoint.
emb="$tf/checkpoints/embedding/embedding.ckpt"
want=$("$runnel" ckpt "$emb" my_embedding --json)
check "ckpt my_embedding" '{"my_embedding": {"dtype": "float", "shape": [3, 2], "values": [1, 2, 3, 5, 7, 11]}}' "$want"
out=$("$runnel" run "$emb.meta" --restore "$emb" --fetch my_embedding --json)
check "--restore fetches the checkpoint's value" "$want" "$out"
check "--restore text" 'my_embedding/read (float [3,2]): [[1, 2], [3, 5], [7, 11]]' \
  "$("$runnel" run "$emb.meta" --restore "$emb" --fetch my_embedding/read)"
# Saving elsewhere with the meta graph's own saver, the path a --feed (never
# into the checkpoint restored from).
"$runnel" run "$emb.meta" --restore "$emb" --feed "save/Const='$tmp/resaved'" --target save/SaveV2 >/dev/null
check "--restore then save to a fed path" "$want" "$("$runnel" ckpt "$tmp/resaved" my_embedding --json)"
err=$("$runnel" run "$emb.meta" --restore "$tmp/no_such_ckpt" --fetch my_embedding 2>&1 >/dev/null)
check "--restore of a missing checkpoint exits 1" 1 "$?"
case "$err" in *"no checkpoint at $tmp/no_such_ckpt"*) echo "ok   missing restore named";; *) echo "FAIL: $err"; fail=1;; esac
"$runnel" run "$emb.meta" --restore "$tmp/damaged" --fetch my_embedding >/dev/null 2>&1
check "--restore of a damaged checkpoint exits 1" 1 "$?"
"$runnel" run "$tf/graphs/tf_addition/model.pb" --restore "$emb" --fetch z >/dev/null 2>&1
check "--restore of a non-meta graph exits 1" 1 "$?"
"$runnel" run "$emb.meta" --fetch my_embedding >/dev/null 2>&1
check "meta graph unrestored, untrusted: its saver is refused" 1 "$?"

exit $fail
