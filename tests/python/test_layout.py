"""Channels-last through convjit.ops.conv: x in torch.channels_last_3d /
channels_last / N,W,C strides (1D) is read in place (no input copy) and
gives, bit for bit, the contiguous x's result, with y in x's memory format;
out= in the other layout (mixed NCDHW/NDHWC) works too. Equality is exact:
a plan with NDHWC x reads the same values into the same MFMA order
(docs/api.md "Layouts and groups": the layout changes addressing only; a
plan that would split K never does with an NDHWC y, and none of these tiny
shapes splits). EMULATED."""

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
    cj.report("test_layout")


def nwc(t):
    """A 3-D (N, C, W) tensor with N,W,C strides (torch has no 1D channels-last format)."""
    return t.permute(0, 2, 1).contiguous().permute(0, 2, 1)


def is_nwc(t):
    return t.permute(0, 2, 1).is_contiguous()


CASES = {   # rank: (x shape, w shape, groups, to channels-last, is channels-last)
    3: ((1, 16, 4, 6, 6), (32, 16, 3, 3, 3), 1, lambda t: t.contiguous(memory_format=torch.channels_last_3d),
        lambda t: t.is_contiguous(memory_format=torch.channels_last_3d)),
    2: ((2, 32, 6, 8), (24, 16, 3, 3), 2, lambda t: t.contiguous(memory_format=torch.channels_last),
        lambda t: t.is_contiguous(memory_format=torch.channels_last)),
    1: ((2, 16, 8), (32, 16, 3), 1, nwc, is_nwc),
}


class TestChannelsLast(unittest.TestCase):
    def tearDown(self):
        convjit.set_emulator_arch(None)

    def run_rank(self, rank, arch):
        convjit.set_emulator_arch(arch)
        xshape, wshape, groups, to_cl, is_cl = CASES[rank]
        g = cj.gen(rank)
        x = cj.randn_bf16(xshape, g)
        w = cj.weight_bf16(wshape, g)
        b = cj.randn_bf16((wshape[0],), g)
        y = ops.conv(x, w, b, padding=1, groups=groups)
        self.assertTrue(y.is_contiguous())
        ref, mag = cj.conv64(x, w, b, padding=1, groups=groups)
        cj.check(self, y, ref, cj.bound(ref, mag, cj.products(w) + 1), f"{arch} {rank}d contiguous")

        xcl = to_cl(x)
        self.assertFalse(xcl.is_contiguous(), "the test needs a channels-last x that is not also contiguous")
        copies = convjit.stats()["binding"]["input_copies"]
        ycl = ops.conv(xcl, w, b, padding=1, groups=groups)
        self.assertEqual(convjit.stats()["binding"]["input_copies"], copies, "channels-last x is read in place")
        self.assertTrue(is_cl(ycl), f"y has x's memory format (strides {ycl.stride()})")
        self.assertTrue(torch.equal(ycl, y), f"{arch} {rank}d: channels-last y differs from contiguous y")

        # mixed: channels-last x into a contiguous out, contiguous x into a channels-last out
        out_c = torch.empty_like(y)
        r = ops.conv(xcl, w, b, padding=1, groups=groups, out=out_c)
        self.assertIs(r, out_c)
        self.assertTrue(out_c.is_contiguous() and torch.equal(out_c, y), f"{arch} {rank}d: NDHWC x -> NCDHW out")
        out_cl = to_cl(torch.empty_like(y))
        r = ops.conv(x, w, b, padding=1, groups=groups, out=out_cl)
        self.assertIs(r, out_cl)
        self.assertTrue(is_cl(out_cl) and torch.equal(out_cl, y), f"{arch} {rank}d: NCDHW x -> NDHWC out")

    def test_3d_channels_last_3d(self):
        for arch in ("gfx950", "gfx942"):
            with self.subTest(arch=arch):
                self.run_rank(3, arch)

    def test_2d_channels_last_groups(self):
        self.run_rank(2, "gfx950")

    def test_1d_nwc(self):
        self.run_rank(1, "gfx942")


if __name__ == "__main__":
    unittest.main()
