#!/usr/bin/env bash
# Installs Runnel's build dependencies from Debian's archive (Debian 12).
# Skips packages already present; works as root or through sudo.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang-format python3 git
  clang libclang-rt-14-dev libomp-dev
  libabsl-dev libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc libgloo-dev python3-grpcio python3-protobuf
  python3-crc32c  # runnel/training/event_file_test.py checks our CRCs with it
  python3-dev python3-pybind11 python3-numpy python3-pytest  # the Python API
  python3-absl  # tf.app.flags, tf.app.run and tf.test are absl-py's, as in TF 1.x
  python3-yaml  # deploy/kubernetes/tfjob_test.py reads the manifests
  openmpi-bin openssl
  ccache  # CMakeLists.txt compiles through it when present (CI's three trees)
  libdnnl-dev libopenblas-dev libeigen3-dev
  libleveldb-dev libsnappy-dev zlib1g-dev libpng-dev libre2-dev pkg-config
  fortunes
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
  chromium  # headless: tools/board_browser_test.sh renders `runnel board`'s page
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
