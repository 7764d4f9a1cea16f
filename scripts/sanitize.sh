#!/usr/bin/env bash
# Builds and runs the core tests under sanitizers (the CMakePresets.json
# presets `asan` (g++) and `tsan` (clang)):
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer over the framework,
#         graph, io, runtime (executor, session, hostile graphs) and queue
#         tests;
#   tsan: ThreadSanitizer (clang) over the executor/session/queue
#         concurrency tests. Abseil is linked from a TSan-instrumented build
#         of Debian's own Abseil source (scripts/build_absl_tsan.sh, cached
#         in ${RUNNEL_TSAN_CACHE:-~/.cache/runnel}; built once, ~3 min), so
#         absl::Mutex / absl::Notification hand-offs are visible to TSan.
#         Protobuf, libgomp and OpenBLAS stay uninstrumented; see
#         scripts/tsan.supp for what is suppressed and why.
# ASAN_BUILD=DIR reuses an ASan+UBSan tree that exists (the fuzz build).
# Only the targets those tests need are built. Exits non-zero on any failing
# test or sanitizer report. Usage: scripts/sanitize.sh [asan|tsan|all]
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}

# The test binaries each preset builds and runs, whole.
asan_targets=(env_test framework_test graph_test scope_test io_test runtime_test
              untrusted_graph_test untrusted_session_test queue_ops_session_test
              queue_ops_test accumulator_ops_session_test function_test
              dataset_ops_session_test dataset_transform_ops_session_test
              interleave_dataset_ops_session_test linalg_ops_test
              iterator_checkpoint_session_test)
# The distributed runtime's parsers and services (they take bytes from the
# network); Debian's gRPC itself is not instrumented.
if grep -q "^RUNNEL_WITH_GRPC:BOOL=ON" "${ASAN_BUILD:-build-asan}/CMakeCache.txt" 2>/dev/null ||
   [ ! -f "${ASAN_BUILD:-build-asan}/CMakeCache.txt" ]; then
  asan_targets+=(cluster_spec_test tensor_coding_test distributed_test)
fi
tsan_targets=(runtime_test queue_ops_session_test accumulator_ops_session_test
              function_test dataset_transform_ops_session_test
              interleave_dataset_ops_session_test
              iterator_checkpoint_session_test)

run_preset() {
  local preset=$1
  shift
  local targets=("$@")
  local dir="build-$preset"
  if [ "$preset" = asan ] && [ -n "${ASAN_BUILD:-}" ]; then
    # Reuse a tree that is already ASan+UBSan-instrumented (CI passes the
    # fuzz build, build-fuzz-O0): only the test binaries are compiled.
    dir=$ASAN_BUILD
    echo "sanitize: asan: building ${targets[*]} in $dir"
    cmake -S . -B "$dir" -DRUNNEL_BUILD_TESTS=ON >/dev/null
    nice -n 5 cmake --build "$dir" -j2 --target "${targets[@]}"
  elif [ "$preset" = tsan ]; then
    local prefix
    prefix=$(bash scripts/build_absl_tsan.sh | tail -n 1)
    # A tree configured before (g++, or Debian's uninstrumented Abseil)
    # cannot be switched in place: start it again.
    if [ -f "$dir/CMakeCache.txt" ] &&
       ! grep -q "^CMAKE_CXX_COMPILER:.*clang++" "$dir/CMakeCache.txt"; then
      echo "sanitize: tsan: $dir was configured with another compiler; removing it"
      rm -rf "$dir"
    fi
    echo "sanitize: tsan: configuring and building ${targets[*]} (Abseil: $prefix)"
    cmake --preset tsan -DCMAKE_PREFIX_PATH="$prefix" \
      -Dabsl_DIR="$prefix/lib/cmake/absl" >/dev/null
    if ! grep -qx "absl_DIR:[A-Z]*=$prefix/lib/cmake/absl" "$dir/CMakeCache.txt" ||
       ! grep -q -- "-isystem $prefix/include" "$dir/build.ninja"; then
      echo "sanitize: tsan: $dir did not pick up the instrumented Abseil" >&2
      grep "^absl_DIR" "$dir/CMakeCache.txt" >&2 || true
      return 1
    fi
    nice -n 15 cmake --build "$dir" -j2 --target "${targets[@]}"
  else
    echo "sanitize: $preset: configuring and building ${targets[*]}"
    cmake --preset "$preset" >/dev/null
    cmake --build --preset "$preset" --target "${targets[@]}"
  fi
  local failed=()
  for t in "${targets[@]}"; do
    local bin
    bin=$(find "$dir" -name "$t" -type f -perm -u+x | head -1)
    echo "sanitize: $preset: $t"
    # Debian's libabsl*.so are not instrumented: none may be linked in.
    if [ "$preset" = tsan ] && ldd "$bin" | grep -q "libabsl"; then
      echo "sanitize: tsan: $t links a shared (uninstrumented) Abseil:" >&2
      ldd "$bin" | grep libabsl >&2
      return 1
    fi
    # Test data paths are compiled in; run from the binary's folder.
    if ! (cd "$(dirname "$bin")" && "./$t" --gtest_brief=1 \
            >"/tmp/sanitize-$preset-$t.log" 2>&1); then
      failed+=("$t")
      tail -n 60 "/tmp/sanitize-$preset-$t.log"
    fi
    grep -E "^\[  PASSED  \]|^\[  FAILED  \]" "/tmp/sanitize-$preset-$t.log" || true
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "sanitize: $preset: FAILED: ${failed[*]} (logs in /tmp/sanitize-$preset-*.log)"
    return 1
  fi
}

export OMP_WAIT_POLICY=PASSIVE
# Reports abort the test (so ctest sees a failure); leaks count as reports.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp"

case "$which" in
  asan) run_preset asan "${asan_targets[@]}" ;;
  tsan) run_preset tsan "${tsan_targets[@]}" ;;
  all)
    run_preset asan "${asan_targets[@]}"
    run_preset tsan "${tsan_targets[@]}"
    ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan|all]" >&2; exit 2 ;;
esac
echo "sanitize: $which: no sanitizer reports"
