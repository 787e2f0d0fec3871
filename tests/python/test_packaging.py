"""python/ as a pip package, built offline: `pip install --no-build-isolation
--no-deps --no-index --target` into a temporary directory must give a
distribution whose version is the C header's, holding every module of
python/convjit, that imports and loads the library named by
$CONVJIT_LIBRARY. The build runs on a copy of python/ and the header (pip
builds in place and would leave build/ and convjit.egg-info/ in the
source tree).
"""

import glob
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("CJ_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
HEADER = os.path.join(SRC, "include", "convjit", "convjit.h")


def header_version(path):
    """x.y.z from the three #defines, read here on its own (not setup.py's code)."""
    with open(path, encoding="utf-8") as f:
        defs = dict(re.findall(r"#define CONVJIT_VERSION_(MAJOR|MINOR|PATCH)\s+(\d+)", f.read()))
    return "%s.%s.%s" % (defs["MAJOR"], defs["MINOR"], defs["PATCH"])


def pip_install(source, target):
    return subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                           "--no-cache-dir", "--disable-pip-version-check", "--quiet", "--target", target, source],
                          capture_output=True, text=True)


def installed_version(target):
    dists = list(importlib.metadata.distributions(path=[target]))
    return [(d.metadata["Name"], d.version) for d in dists]


class Packaging(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
            raise unittest.SkipTest(f"SKIP: pip not available ({sys.executable} -m pip; Debian's python3-pip)")
        cls.tmp = tempfile.TemporaryDirectory(prefix="convjit-pkg-")
        cls.version = header_version(HEADER)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def checkout_copy(self, name, header_text=None):
        """<tmp>/<name>/{python, include/convjit/convjit.h}: the checkout's layout."""
        root = os.path.join(self.tmp.name, name)
        shutil.copytree(os.path.join(SRC, "python"), os.path.join(root, "python"),
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info", "_version.py",
                                                      "_install_prefix.py"))
        os.makedirs(os.path.join(root, "include", "convjit"))
        with open(HEADER, encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(root, "include", "convjit", "convjit.h"), "w", encoding="utf-8") as f:
            f.write(header_text(text) if header_text else text)
        return os.path.join(root, "python")

    def install(self, source, name):
        target = os.path.join(self.tmp.name, name)
        r = pip_install(source, target)
        self.assertEqual(r.returncode, 0, f"pip install failed:\n{r.stdout}\n{r.stderr}")
        return target

    def test_install_version_modules_and_library(self):
        target = self.install(self.checkout_copy("src"), "target")
        self.assertEqual(installed_version(target), [("convjit", self.version)])
        ns = {}
        with open(os.path.join(target, "convjit", "_version.py"), encoding="utf-8") as f:
            exec(f.read(), ns)
        self.assertEqual(ns["VERSION"], self.version)
        # every module of python/convjit is in the wheel (a new subpackage too), and no library:
        # the package finds libconvjit.so at run time (convjit._lib.candidate_paths)
        src_pkg = os.path.join(SRC, "python", "convjit")
        mods = {os.path.relpath(p, src_pkg) for p in glob.glob(os.path.join(src_pkg, "**", "*.py"), recursive=True)}
        got = {os.path.relpath(p, os.path.join(target, "convjit"))
               for p in glob.glob(os.path.join(target, "convjit", "**", "*.py"), recursive=True)}
        self.assertEqual(mods - got, set(), "modules missing from the wheel")
        self.assertEqual(glob.glob(os.path.join(target, "**", "*.so*"), recursive=True), [])

        lib = os.environ.get("CONVJIT_LIBRARY")
        if not lib:
            self.fail("CONVJIT_LIBRARY not set: run through ctest (tests/python.cmake sets it)")
        env = dict(os.environ, PYTHONPATH=target, PYTHONDONTWRITEBYTECODE="1")
        r = subprocess.run([sys.executable, "-c", "import convjit, convjit._lib as l; "
                            "print(l.__file__); print(l.library_path()); print(l.version_string())"],
                           capture_output=True, text=True, env=env, cwd=self.tmp.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        pyfile, libpath, libversion = r.stdout.split()[-3:]
        self.assertEqual(pyfile, os.path.join(target, "convjit", "_lib.py"))  # the installed copy, not the source tree
        self.assertEqual(libpath, lib)
        self.assertEqual(libversion, self.version)  # the library's convjit_version() agrees with its header

    def test_version_follows_the_header(self):
        # the header of the copy says 3.5.7 more: the wheel must follow it (not a version written elsewhere)
        major, minor, patch = (int(v) for v in self.version.split("."))
        bumped = f"{major + 3}.{minor + 5}.{patch + 7}"

        def bump(text):
            for part, v in zip(("MAJOR", "MINOR", "PATCH"), bumped.split(".")):
                text, n = re.subn(rf"(#define CONVJIT_VERSION_{part}\s+)\d+", rf"\g<1>{v}", text)
                self.assertEqual(n, 1)
            return text

        target = self.install(self.checkout_copy("bumped", bump), "target-bumped")
        self.assertEqual(installed_version(target), [("convjit", bumped)])

    def test_sdist_without_header(self):
        # an sdist carries convjit/_version.py instead of the header
        src = self.checkout_copy("sd")
        dist = os.path.join(self.tmp.name, "dist")
        r = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", dist], cwd=src, capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        (sdist,) = glob.glob(os.path.join(dist, "convjit-*.tar.gz"))
        shutil.rmtree(os.path.dirname(src))  # no header anywhere near the sdist's build
        target = self.install(sdist, "target-sdist")
        self.assertEqual(installed_version(target), [("convjit", self.version)])


if __name__ == "__main__":
    unittest.main()
