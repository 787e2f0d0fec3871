"""Build hooks of the convjit package (the metadata is pyproject.toml).

The version is the C library's: CONVJIT_VERSION_MAJOR/MINOR/PATCH of
../include/convjit/convjit.h when building from the source tree. Building
writes it into the package as convjit/_version.py (VERSION = "x.y.z"), in
the wheel's build directory and in an sdist, never into the source tree;
an sdist, which has no header, takes its version from that file.
"""

import os
import re

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join(HERE, "..", "include", "convjit", "convjit.h")
VERSION_PY = os.path.join("convjit", "_version.py")


def header_version(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"^#define CONVJIT_VERSION_{part} +(\d+)\s*$", text, flags=re.M)
        if not m:
            raise RuntimeError(f"{path}: no CONVJIT_VERSION_{part}")
        parts.append(m.group(1))
    return ".".join(parts)


def version():
    if os.path.isfile(HEADER):
        return header_version(HEADER)
    path = os.path.join(HERE, VERSION_PY)
    if not os.path.isfile(path):
        raise RuntimeError(f"convjit: neither {HEADER} nor {path}: build from a convjit checkout "
                           "(python/ beside include/) or from an sdist made from one")
    ns = {}
    with open(path, encoding="utf-8") as f:
        exec(f.read(), ns)
    return ns["VERSION"]


VERSION = version()


def write_version(pkg_root):
    path = os.path.join(pkg_root, VERSION_PY)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):  # sdist's release tree hard-links files: never write through to the source
        os.remove(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write("# Written by python/setup.py from include/convjit/convjit.h (CONVJIT_VERSION_*).\n"
                f'VERSION = "{VERSION}"\n')


class BuildPy(build_py):
    def run(self):
        super().run()
        if not getattr(self, "editable_mode", False):  # an editable install imports the source tree as it is
            write_version(self.build_lib)


class Sdist(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        write_version(base_dir)


setup(version=VERSION, cmdclass={"build_py": BuildPy, "sdist": Sdist})
