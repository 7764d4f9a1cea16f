#!/usr/bin/env bash
# Builds a ThreadSanitizer-instrumented Abseil for `scripts/sanitize.sh tsan`.
#
# Debian's libabsl-dev is compiled without TSan, so TSan cannot see the
# hand-offs inside absl::Mutex / absl::Notification and reports races that are
# not there. This builds the very same Abseil -- Debian's source package
# 20220623.1-1+deb12u2 (the upstream tarball plus Debian's patches, so
# options.h, the inline namespace and the CVE fix match the installed
# headers) -- with clang -fsanitize=thread, static, C++20, and installs it
# into a prefix outside the clone that later runs reuse:
#
#   ${RUNNEL_TSAN_CACHE:-$HOME/.cache/runnel}/absl-tsan-20220623.1
#
# Does nothing when that prefix exists. The sources come from deb.debian.org
# and are checked against the SHA-256 sums pinned below (the ones the .dsc
# lists in Checksums-Sha256; the .dsc is fetched and cross-checked too).
# Prints the prefix on its last line. JOBS (default 2) sets the parallelism;
# the build runs under nice -n 15.
set -euo pipefail

version=20220623.1
debver=20220623.1-1+deb12u2
orig=abseil_${version}.orig.tar.gz
orig_sha256=abfe2897f3a30edaa74bc34365afe3c2a3cd012091a97dc7e008f7016adcd5fe
deb=abseil_${debver}.debian.tar.xz
deb_sha256=e08490fc7b6f3beca1925953b0c4fb92df2de5e2a01295e4641e2a3d4e528eeb
dsc=abseil_${debver}.dsc
pool=${ABSL_DEBIAN_POOL:-http://deb.debian.org/debian/pool/main/a/abseil}

cache=${RUNNEL_TSAN_CACHE:-$HOME/.cache/runnel}
prefix=$cache/absl-tsan-$version
jobs=${JOBS:-2}

if [ -f "$prefix/lib/cmake/absl/abslConfig.cmake" ]; then
  echo "build_absl_tsan: $prefix exists; nothing to do" >&2
  echo "$prefix"
  exit 0
fi

mkdir -p "$cache"
# One builder at a time per cache; a second waits, then finds the prefix.
exec 9>"$cache/absl-tsan-$version.lock"
flock 9
if [ -f "$prefix/lib/cmake/absl/abslConfig.cmake" ]; then
  echo "$prefix"
  exit 0
fi

src=$cache/src
mkdir -p "$src"
fetch() { # fetch FILE [SHA256]
  local f=$1 want=${2:-}
  if [ -n "$want" ] && [ -f "$src/$f" ] &&
     echo "$want  $src/$f" | sha256sum -c --status; then
    return 0
  fi
  echo "build_absl_tsan: fetching $pool/$f" >&2
  curl -fsSL --retry 3 -o "$src/$f.part" "$pool/$f"
  mv "$src/$f.part" "$src/$f"
  if [ -n "$want" ] && ! echo "$want  $src/$f" | sha256sum -c --status; then
    echo "build_absl_tsan: $f: SHA-256 mismatch (want $want)" >&2
    rm -f "$src/$f"
    exit 1
  fi
}
fetch "$dsc"
fetch "$orig" "$orig_sha256"
fetch "$deb" "$deb_sha256"
for pair in "$orig_sha256 $orig" "$deb_sha256 $deb"; do
  if ! sed -n '/^Checksums-Sha256:/,/^[^ ]/p' "$src/$dsc" |
       grep -q "^ ${pair% *} [0-9]* ${pair#* }\$"; then
    echo "build_absl_tsan: $dsc does not list ${pair#* } with sha256 ${pair% *}" >&2
    exit 1
  fi
done

work=$cache/absl-tsan-$version.work
rm -rf "$work" "$prefix.partial"
mkdir -p "$work"
tar -C "$work" -xzf "$src/$orig"
srcdir=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)
tar -C "$srcdir" -xJf "$src/$deb"
while read -r p; do
  case "$p" in '' | '#'*) continue ;; esac
  patch -d "$srcdir" -p1 -s --no-backup-if-mismatch <"$srcdir/debian/patches/$p"
done <"$srcdir/debian/patches/series"

# Same optimisation as the tsan preset (-O1 -g1, asserts on, like Debian's
# own build); PIC so that PIE executables can link it.
echo "build_absl_tsan: building Abseil $debver with clang -fsanitize=thread" >&2
start=$(date +%s)
CC=clang CXX=clang++ cmake -S "$srcdir" -B "$work/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
  -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DCMAKE_CXX_STANDARD=20 -DABSL_PROPAGATE_CXX_STD=ON \
  -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF -DABSL_BUILD_TESTING=OFF \
  -DABSL_ENABLE_INSTALL=ON \
  -DCMAKE_INSTALL_PREFIX="$prefix.partial" >/dev/null
# Abseil's install rules (and its exported abslTargets.cmake, which checks
# that every library file exists) cover all of its libraries, so all are
# built; tests are not.
nice -n 15 cmake --build "$work/build" -j"$jobs"
cmake --install "$work/build" >/dev/null
# pkg-config files name the install prefix; give them the final one.
find "$prefix.partial/lib/pkgconfig" -name '*.pc' -exec \
  sed -i "s|$prefix.partial|$prefix|g" {} +
cp "$srcdir/LICENSE" "$prefix.partial/"
echo "Abseil $debver (Debian source), clang -fsanitize=thread, C++20, static" \
  >"$prefix.partial/BUILD-INFO"
# The installed CMake package finds itself relative to its own file, so the
# prefix can be renamed into place: it appears whole or not at all.
mv "$prefix.partial" "$prefix"
rm -rf "$work"
echo "build_absl_tsan: built in $(($(date +%s) - start)) s" >&2
echo "$prefix"
