"""convjit.ops.conv (bf16) against torch.nn.functional.conv1d/2d/3d in
float64 on the same bf16 values, on both emulated arches: ranks, stride,
dilation, asymmetric padding, 'same'/'valid', bias, groups, unbatched
input, out=. Every element is checked against cjtest.bound (derivation
there): products of bf16 values are exact in fp32, the fp32 sum of
n = C/groups*T*R*S products and the bias errs by at most
gamma_{n+1} * (F.conv(|x|,|w|) + |bias|), and the bf16 output adds 2^-8
relative. EMULATED: no time here is a GPU time."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cjtest as cj  # noqa: E402

import torch  # noqa: E402

import convjit  # noqa: E402
from convjit import ops  # noqa: E402


setUpModule = cj.quiet


def tearDownModule():
    convjit.set_emulator_arch(None)
    cj.report("test_ops")


class _Bf16Cases:
    ARCH = None

    def setUp(self):
        convjit.set_emulator_arch(self.ARCH)

    def case(self, label, xshape, wshape, bias=False, groups=1, seed=0, out=None, **geom):
        g = cj.gen(seed)
        x = cj.randn_bf16(xshape, g)
        w = cj.weight_bf16(wshape, g)
        b = cj.randn_bf16((wshape[0],), g) if bias else None
        y = ops.conv(x, w, b, groups=groups, out=out, **geom)
        if out is not None:
            self.assertIs(y, out, "out=: the result is out itself")
        ref, mag = cj.conv64(x, w, b, groups=groups, **geom)
        # n products + the bias: gamma_{n+1} (cjtest.bound)
        cj.check(self, y, ref, cj.bound(ref, mag, cj.products(w) + 1), f"{self.ARCH} {label}")
        return y

    def test_conv1d(self):
        self.case("1d", (2, 16, 8), (32, 16, 3), bias=True, padding=1)

    def test_conv1d_stride_dilation_padding_hi(self):
        self.case("1d s2 d2 pad 1/2", (2, 16, 8), (16, 16, 3), stride=2, dilation=2, padding=1, padding_hi=2)

    def test_conv2d(self):
        self.case("2d", (2, 16, 8, 8), (24, 16, 3, 3), bias=True, padding=1)

    def test_conv2d_stride_dilation_padding_hi(self):
        self.case("2d s(2,1) d(1,2) pad (0,2)/(1,0)", (1, 16, 8, 8), (16, 16, 3, 3), stride=(2, 1),
                  dilation=(1, 2), padding=(0, 2), padding_hi=(1, 0))

    def test_conv3d(self):
        self.case("3d", (1, 16, 4, 6, 6), (32, 16, 3, 3, 3), bias=True, padding=1)

    def test_conv3d_stride_dilation_padding_hi(self):
        self.case("3d s(1,2,2) d(2,1,1) pad (2,0,1)/(0,1,1)", (2, 8, 5, 7, 6), (16, 8, 3, 2, 3),
                  stride=(1, 2, 2), dilation=(2, 1, 1), padding=(2, 0, 1), padding_hi=(0, 1, 1))

    def test_padding_same(self):
        # an even filter with dilation: total padding 3 along H (split 1/2) and 4 along W;
        # the reference is torch's own padding='same', so the split is checked too
        y = self.case("2d same", (1, 16, 7, 7), (16, 16, 4, 3), dilation=(1, 2), padding="same")
        self.assertEqual(tuple(y.shape[2:]), (7, 7))

    def test_padding_valid(self):
        y = self.case("3d valid", (1, 16, 4, 6, 6), (16, 16, 3, 3, 3), bias=True, padding="valid")
        self.assertEqual(tuple(y.shape[2:]), (2, 4, 4))

    def test_groups_2d(self):
        self.case("2d groups 2", (2, 32, 6, 6), (32, 16, 3, 3), bias=True, groups=2, padding=1)

    def test_groups_3d(self):
        self.case("3d groups 4", (1, 32, 4, 4, 4), (16, 8, 3, 3, 3), groups=4, padding=1)

    def test_unbatched(self):
        y = self.case("2d unbatched", (16, 8, 8), (24, 16, 3, 3), bias=True, padding=1)
        self.assertEqual(tuple(y.shape), (24, 8, 8))

    def test_out(self):
        out = torch.full((2, 24, 8, 8), float("nan"), dtype=torch.bfloat16)   # NaN: every element is written
        self.case("2d out=", (2, 16, 8, 8), (24, 16, 3, 3), bias=True, seed=1, out=out, padding=1)


class TestOpsGfx950(_Bf16Cases, unittest.TestCase):
    ARCH = "gfx950"

    def test_bound_rejects_a_dropped_product(self):
        """The bound is tight enough to matter: against the reference of w
        with one centre tap of output channel 0 zeroed (a kernel that drops
        one product), most of channel 0's outputs are outside it."""
        g = cj.gen(0)
        x = cj.randn_bf16((1, 16, 4, 6, 6), g)
        w = cj.weight_bf16((32, 16, 3, 3, 3), g)
        y = ops.conv(x, w, padding=1)
        w_drop = w.clone()
        w_drop[0, 5, 1, 1, 1] = 0
        ref, mag = cj.conv64(x, w_drop, padding=1)
        out = (y.double() - ref).abs() > cj.bound(ref, mag, cj.products(w) + 1)
        frac = float(out[:, 0].double().mean())
        print(f"\ndropped product: {frac:.0%} of channel 0 outside the bound", file=sys.stderr)
        self.assertGreater(frac, 0.5)
        self.assertFalse(bool(out[:, 1:].any()), "the other channels are unaffected")


class TestOpsGfx942(_Bf16Cases, unittest.TestCase):
    ARCH = "gfx942"


if __name__ == "__main__":
    unittest.main()
