#!/usr/bin/env python3
"""Rejects #includes that point up the layer table of DESIGN.md §2.

Each folder may include only itself and the folders it lists below; a
violation prints FILE:LINE and the offending include, and the script exits 1.
Tests (*_test.cc) may also use testing/. Run from the repository root:
  /usr/bin/python3 scripts/check_layers.py
"""
import pathlib
import re
import sys

# folder -> folders it may include (besides itself). "proto" is the
# generated proto/*.pb.h headers.
BELOW = {
    "runnel/base": set(),
    "runnel/framework": {"runnel/base", "proto"},
    "runnel/graph": {"runnel/framework", "runnel/base", "proto"},
    "runnel/cpu": {"runnel/framework", "runnel/base", "proto"},
    "runnel/io": {"runnel/framework", "runnel/base", "proto"},
    "runnel/devices": {"runnel/framework", "runnel/base", "proto"},
    "runnel/ops": {"runnel/graph", "runnel/framework", "runnel/cpu",
                   "runnel/io", "runnel/base", "proto"},
    # The runtime reaches ops only through the registries.
    "runnel/runtime": {"runnel/graph", "runnel/devices", "runnel/framework",
                       "runnel/base", "proto"},
    "runnel/distributed": {"runnel/runtime", "runnel/graph", "runnel/devices",
                           "runnel/framework", "runnel/base", "proto"},
    "runnel/api": {"runnel/runtime", "runnel/graph", "runnel/framework",
                   "runnel/base", "proto", "runnel/ops"},
}
# training: api and below.
BELOW["runnel/training"] = BELOW["runnel/api"] | {
    "runnel/api", "runnel/io", "runnel/cpu", "runnel/devices",
    "runnel/distributed"}
# runnel/runnel.h is the public umbrella header: it may include any layer.
UNCHECKED = {"tools", "examples", "benchmarks", "testing", "python", "fuzz"}

INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]([^">]+)[">]')


def layer_of(path):
    parts = path.split("/")
    if parts[0] == "runnel" and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def main():
    root = pathlib.Path(".")
    bad = []
    for f in sorted(root.glob("runnel/*/**/*")):
        if f.suffix not in (".h", ".cc") or not f.is_file():
            continue
        src = layer_of(str(f))
        if src not in BELOW:
            continue
        allowed = BELOW[src] | {src}
        is_test = f.name.endswith("_test.cc") or "test_util" in f.name
        for lineno, line in enumerate(f.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            if not (inc.startswith("runnel/") or inc.startswith("proto/") or
                    inc.startswith("testing/")):
                continue  # std, absl, protobuf, ...
            dst = layer_of(inc)
            if dst == "runnel/runnel.h":
                dst = "public"
            if dst in allowed:
                continue
            if is_test:
                continue  # Tests may use any layer (DESIGN.md §2: testing/).
            bad.append(f"{f}:{lineno}: {src} may not include {inc} "
                       f"(layer {dst})")
    for b in bad:
        print(b)
    if bad:
        print(f"check_layers: {len(bad)} include(s) point up the layer table "
              "(../shared/DESIGN.md §2)")
        return 1
    print("check_layers: every include points down the layer table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
