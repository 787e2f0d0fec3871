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


class Kinds(unittest.TestCase):
    """The descriptor's kind through the ctypes structs: a struct_size
    without it reads as forward; backward data and backward weight validate
    with their own fields (output_padding, nondeterministic: INVALID_ARG
    naming the field when out of range); a kind's dtype limit (fp8
    gradients) is UNSUPPORTED, raised as convjit's UnsupportedError with
    convjit's message; an unknown kind is INVALID_ARG naming the value."""

    def desc(self, kind):
        d = _lib.ConvDesc()
        d.struct_size = ctypes.sizeof(d)
        d.spatial_rank, d.n, d.c, d.k = 3, 1, 16, 32
        for i in range(3):
            d.in_[i], d.filter[i], d.stride[i], d.dilation[i] = 6, 3, 1, 1
        d.groups = 1
        d.x_dtype = d.w_dtype = d.y_dtype = _lib.DTYPE_BF16
        d.x_layout = d.y_layout = _lib.LAYOUT_NCDHW
        d.kind = kind
        return d

    def validate(self, d):
        _lib.call("convjit_conv_desc_validate", ctypes.byref(d))

    def test_forward_and_older_struct(self):
        self.validate(self.desc(_lib.CONV_FORWARD))
        d = self.desc(0x5A5A)
        d.struct_size = _lib.ConvDesc.kind.offset  # an older header: kind is not read
        self.validate(d)

    def test_backward_data_fields(self):
        d = self.desc(_lib.CONV_BACKWARD_DATA)
        self.validate(d)  # has kernels
        d.stride[2], d.output_padding[2] = 2, 1  # the transposed conv's output_padding
        self.validate(d)
        d.output_padding[2] = 2
        with self.assertRaises(_lib.InvalidArgumentError) as cm:
            self.validate(d)
        self.assertIn("desc.output_padding[2] = 2", str(cm.exception))
        d.output_padding[2] = 0
        d.x_dtype = _lib.DTYPE_FP8_E4M3FN  # fp8 gradients are not offered
        with self.assertRaises(_lib.UnsupportedError) as cm:
            self.validate(d)
        self.assertIn("with kind backward-data", str(cm.exception))

    def test_backward_weight_fields(self):
        d = self.desc(_lib.CONV_BACKWARD_WEIGHT)
        self.validate(d)  # has kernels
        d.w_dtype = _lib.DTYPE_F32  # dw in f32
        d.nondeterministic = 1
        self.validate(d)
        d.nondeterministic = 2
        with self.assertRaises(_lib.InvalidArgumentError) as cm:
            self.validate(d)
        self.assertIn("desc.nondeterministic = 2", str(cm.exception))

    def test_unknown_kind(self):
        with self.assertRaises(_lib.InvalidArgumentError) as cm:
            self.validate(self.desc(7))
        self.assertIn("desc.kind = 7", str(cm.exception))

    def test_execute_bound(self):
        self.assertEqual(_lib.load().convjit_conv_execute.argtypes[1], ctypes.POINTER(_lib.ConvArgs))


if __name__ == "__main__":
    unittest.main()
