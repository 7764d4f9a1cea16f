"""pip install ./python: installs the runnel package built by CMake.

Build first (cmake -S . -B build -G Ninja && cmake --build build -j2), then
    /usr/bin/python3 -m pip install ./python
(with --target DIR, --user, or in a virtual environment; Debian's pip wants
--break-system-packages for the system interpreter). Nothing is downloaded:
the package, its extension and its generated protos come from
$RUNNEL_BUILD_DIR/python (default ../build/python). Set
RUNNEL_INSTALL_SHIM=1 to also install the `tensorflow` shim package.
"""

import os
import shutil

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("RUNNEL_BUILD_DIR", os.path.join(HERE, "..", "build"))


class BuildFromCMake(build_py):
    """Copies the CMake build's package instead of building anything."""

    def run(self):
        src = os.path.join(BUILD, "python")
        if not any(f.startswith("_runnel") for f in
                   os.listdir(os.path.join(src, "runnel")) if os.path.isdir(
                       os.path.join(src, "runnel"))):
            raise SystemExit("runnel: no built extension under %s; build with CMake first "
                             "(or set RUNNEL_BUILD_DIR)" % src)
        packages = ["runnel"]
        if os.environ.get("RUNNEL_INSTALL_SHIM") == "1":
            packages.append(os.path.join("shim", "tensorflow"))
        for pkg in packages:
            shutil.copytree(os.path.join(src, pkg),
                            os.path.join(self.build_lib, os.path.basename(pkg)),
                            dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


class BinaryDistribution(Distribution):
    """A platform wheel (the extension), whose build_py always runs."""

    def has_ext_modules(self):
        return True

    def has_pure_modules(self):
        return True


setup(
    name="runnel",
    version="0.1.0",
    description="TensorFlow's design in C++, with TensorFlow 1.x's Python API",
    packages=[],
    cmdclass={"build_py": BuildFromCMake},
    distclass=BinaryDistribution,
    python_requires=">=3.9",
)
