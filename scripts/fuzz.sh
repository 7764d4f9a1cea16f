#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) with clang, ASan and UBSan in
# build-fuzz/ and runs each for SECONDS (default 60) on its corpus: the
# seeds made from ../shared/testdata/tf, the checked-in regression inputs in
# fuzz/corpus/<harness>/, and what earlier runs found (kept in the work dir).
# Prints per-harness executions and coverage; exits non-zero on any crash,
# sanitizer report, timeout or out-of-memory, naming the reproducer.
#
# Usage: scripts/fuzz.sh [SECONDS]
# Environment: FUZZ_HARNESSES="graphdef kernel" runs only those;
#   FUZZ_OPT (default -O1; CI uses -O0, which compiles the sanitized tree
#   about 4x faster and runs it about 2x slower); FUZZ_BUILD (default
#   build-fuzz, build-fuzz-O0 for -O0) and FUZZ_WORK (default $FUZZ_BUILD/work).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
opt=${FUZZ_OPT:--O1}
if [ "$opt" = "-O1" ]; then
  build=${FUZZ_BUILD:-build-fuzz}
else
  build=${FUZZ_BUILD:-build-fuzz$opt}
fi
work=${FUZZ_WORK:-$build/work}
all_harnesses="graphdef session tensor_proto tensor_bundle record example meta_graph kernel feed_parser iterator_state rpc"
harnesses=${FUZZ_HARNESSES:-$all_harnesses}

start=$(date +%s)
# Line tables only: file:line in stack traces without full debug info.
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$opt -gline-tables-only -DNDEBUG" \
  -DRUNNEL_WITH_FUZZERS=ON -DRUNNEL_BUILD_TESTS=OFF \
  -DRUNNEL_BUILD_BENCHMARKS=OFF >/dev/null
nice -n 10 cmake --build "$build" -j2 --target fuzzers
built=$(date +%s)
echo "fuzz: build took $((built - start)) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_odr_violation=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
export OMP_WAIT_POLICY=PASSIVE

rm -rf "$work/seeds"
"$build/fuzz/fuzz_seeds" ../shared/testdata/tf "$work/seeds"

failed=()
printf '%-14s %10s %8s %8s %7s  %s\n' harness execs cov ft corpus result
for h in $harnesses; do
  corpus="$work/corpus/$h"
  artifacts="$work/artifacts/$h"
  log="$work/logs/$h.log"
  mkdir -p "$corpus" "$artifacts" "$work/logs" "$work/seeds/$h" "fuzz/corpus/$h"
  rm -f "$artifacts"/*
  rc=0
  "$build/fuzz/${h}_fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" "$work/seeds/$h" "fuzz/corpus/$h" >"$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" |
    tail -1 | awk '{print $2}')
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | awk '{print $2}')
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | awk '{print $2}')
  units=$(find "$corpus" -type f | wc -l)
  result=ok
  repro=$(find "$artifacts" -type f | head -1)
  if [ "$rc" -ne 0 ] || [ -n "$repro" ]; then
    result="FAILED (rc $rc) ${repro:-no reproducer; see $log}"
    failed+=("$h")
  fi
  printf '%-14s %10s %8s %8s %7s  %s\n' "$h" "${execs:-?}" "${cov:-?}" \
    "${ft:-?}" "$units" "$result"
done
echo "fuzz: $((($(date +%s) - built))) s of fuzzing, $((($(date +%s) - start))) s in all"

if [ ${#failed[@]} -ne 0 ]; then
  for h in "${failed[@]}"; do
    echo "---- $h: $work/logs/$h.log"
    grep -m1 -B2 -A25 -E 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error:|CHECK failed|==ERROR' \
      "$work/logs/$h.log" || tail -30 "$work/logs/$h.log"
  done
  echo "fuzz: FAILED: ${failed[*]} (replay: $build/fuzz/<harness>_fuzzer <reproducer>)"
  exit 1
fi
echo "fuzz: all harnesses passed"
