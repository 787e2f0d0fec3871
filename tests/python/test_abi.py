"""The ctypes structs of python/convjit/_lib.py against the C compiler's
layout of include/convjit/convjit.h: every struct's size, every field's
offset and size, and no C field missing on the Python side.

The C side is tests/python/abi_layout.c (its path in $CJ_ABI_LAYOUT, set by
tests/python.cmake), which prints sizeof/offsetof as JSON. Its field lists
are hand-written, so this test also parses the header's struct bodies on
its own and requires abi_layout to list exactly those fields, in order.
"""

import ctypes
import json
import os
import re
import subprocess
import unittest

from convjit import _lib

SRC = os.environ.get("CJ_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
HEADER = os.path.join(SRC, "include", "convjit", "convjit.h")
# C names that are Python keywords get a trailing underscore in _lib.py
PY_NAME = {"in": "in_"}


def header_fields():
    """{struct: [field, ...]} of every `typedef struct X { ... } X;` of the
    header, in declaration order, from the text alone."""
    with open(HEADER, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    out = {}
    for name, body in re.findall(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*\1\s*;", text, flags=re.S):
        fields = []
        for decl in body.split(";"):
            if not decl.strip():
                continue
            # "uint64_t a, b" / "const char *arch" / "int64_t in[3]": the
            # declarators are the comma-separated parts; each ends in its name
            for part in decl.split(","):
                m = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", part)
                fields.append(m.group(1))
        out[name] = fields
    return out


class AbiLayout(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        exe = os.environ.get("CJ_ABI_LAYOUT")
        if not exe:
            raise unittest.SkipTest("SKIP: CJ_ABI_LAYOUT (the abi_layout executable) not set: run through ctest")
        cls.c = json.loads(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)
        cls.header = header_fields()

    def test_same_structs(self):
        self.assertEqual(sorted(self.c), sorted(_lib.STRUCTS))

    def test_layout_program_lists_every_header_field(self):
        for name, layout in self.c.items():
            with self.subTest(struct=name):
                self.assertIn(name, self.header)
                self.assertEqual(list(layout["fields"]), self.header[name])

    def test_sizes(self):
        for name, cls in _lib.STRUCTS.items():
            with self.subTest(struct=name):
                self.assertEqual(ctypes.sizeof(cls), self.c[name]["size"])

    def test_field_offsets_and_sizes(self):
        for name, cls in _lib.STRUCTS.items():
            c_fields = {PY_NAME.get(f, f): (off, self.c[name]["field_sizes"][f])
                        for f, off in self.c[name]["fields"].items()}
            for field in cls._fields_:
                fname = field[0]
                with self.subTest(struct=name, field=fname):
                    self.assertIn(fname, c_fields, "a ctypes field the C struct does not have")
                    d = getattr(cls, fname)
                    self.assertEqual((d.offset, d.size), c_fields[fname])

    def test_no_c_field_missing(self):
        for name, cls in _lib.STRUCTS.items():
            py = {f[0] for f in cls._fields_}
            missing = [f for f in self.c[name]["fields"] if PY_NAME.get(f, f) not in py]
            self.assertEqual(missing, [], f"{name}: C fields without a ctypes field")


if __name__ == "__main__":
    unittest.main()
