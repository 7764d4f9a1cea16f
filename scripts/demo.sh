#!/usr/bin/env bash
# The main job: installs dependencies, builds Runnel, then runs TensorFlow's
# own graphs through the `runnel` command.
set -euo pipefail
cd "$(dirname "$0")/.."
tf=$(cd .. && pwd)/shared/testdata/tf

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target runnel

echo
echo "== A GraphDef written by TensorFlow 2.x: z = x + y"
build/tools/runnel inspect "$tf/graphs/tf_addition/model.pb" | sed -n '1,8p'
echo
echo "\$ runnel run model.pb --feed x=[2] --feed y=[40] --fetch z --json"
build/tools/runnel run "$tf/graphs/tf_addition/model.pb" --feed x=[2] --feed y=[40] --fetch z --json

echo
echo "== Partial execution: fetch a tensor while feeding a different one"
build/tools/runnel run "$tf/graphs/tf_addition/model.pb" --feed x=[[1,2],[3,4]] --feed y=[[10,20],[30,40]] --fetch z
