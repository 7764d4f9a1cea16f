#!/usr/bin/env bash
# The main job: installs dependencies, builds Runnel, runs one of
# TensorFlow's own graphs through the `runnel` command, then trains an MLP
# on Fashion-MNIST with the C++ API (under half a minute on 2 cores; it
# must reach 88% test accuracy), writing TensorBoard summaries that
# `runnel board` turns into build/demo_report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
tf=$(cd .. && pwd)/shared/testdata/tf

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target runnel fashion_mnist_mlp _runnel

echo
echo "== A GraphDef written by TensorFlow 2.x: z = x + y"
echo "\$ runnel run model.pb --feed x=[2] --feed y=[40] --fetch z --json"
build/tools/runnel run "$tf/graphs/tf_addition/model.pb" --feed x=[2] --feed y=[40] --fetch z --json

echo
echo "== Training: examples/fashion_mnist_mlp.cc (784-512-512-10, Adam, 5 epochs)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rm -rf build/demo_logs
OMP_WAIT_POLICY=PASSIVE build/examples/fashion_mnist_mlp --logdir build/demo_logs \
  --summary_every 200 | tee "$log"
accuracy=$(sed -n 's/^test accuracy: \([0-9.]*\)%$/\1/p' "$log")
if [ -z "$accuracy" ] || ! awk -v a="$accuracy" 'BEGIN { exit !(a >= 88) }'; then
  echo "demo: test accuracy ${accuracy:-missing} is below 88%" >&2
  exit 1
fi

echo
echo "== What it wrote: loss and test accuracy by step (runnel events), and a report"
build/tools/runnel events build/demo_logs --tag test_accuracy
build/tools/runnel board build/demo_logs -o build/demo_report.html
echo "open build/demo_report.html in a browser: loss curves, weight histograms, inputs"

echo
echo "== The same from Python: a TF 1.x program run unchanged (import tensorflow as tf)"
echo "\$ PYTHONPATH=build/python/shim:build/python /usr/bin/python3 examples/python/fashion_mnist_mlp.py"
OMP_WAIT_POLICY=PASSIVE PYTHONPATH=build/python/shim:build/python \
  /usr/bin/python3 examples/python/fashion_mnist_mlp.py --epochs 2 | tee "$log"
accuracy=$(sed -n 's/^test accuracy: \([0-9.]*\)%$/\1/p' "$log")
if [ -z "$accuracy" ] || ! awk -v a="$accuracy" 'BEGIN { exit !(a >= 84) }'; then
  echo "demo: the Python program's test accuracy ${accuracy:-missing} is below 84%" >&2
  exit 1
fi
