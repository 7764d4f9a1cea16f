#!/usr/bin/env bash
# The main job: installs dependencies, builds Runnel, runs one of
# TensorFlow's own graphs through the `runnel` command, then trains an MLP
# on Fashion-MNIST with the C++ API (under half a minute on 2 cores; it
# must reach 88% test accuracy).
set -euo pipefail
cd "$(dirname "$0")/.."
tf=$(cd .. && pwd)/shared/testdata/tf

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target runnel fashion_mnist_mlp

echo
echo "== A GraphDef written by TensorFlow 2.x: z = x + y"
echo "\$ runnel run model.pb --feed x=[2] --feed y=[40] --fetch z --json"
build/tools/runnel run "$tf/graphs/tf_addition/model.pb" --feed x=[2] --feed y=[40] --fetch z --json

echo
echo "== Training: examples/fashion_mnist_mlp.cc (784-512-512-10, Adam, 5 epochs)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
OMP_WAIT_POLICY=PASSIVE build/examples/fashion_mnist_mlp | tee "$log"
accuracy=$(sed -n 's/^test accuracy: \([0-9.]*\)%$/\1/p' "$log")
if [ -z "$accuracy" ] || ! awk -v a="$accuracy" 'BEGIN { exit !(a >= 88) }'; then
  echo "demo: test accuracy ${accuracy:-missing} is below 88%" >&2
  exit 1
fi
