"""The packed-weight cache: a second call with the same weight tensor reuses
its packed copy; an in-place change of the weight re-packs it (EMULATED)."""

import os
import sys
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import convjit  # noqa: E402


class PackCache(unittest.TestCase):
    def test_reuse_and_repack(self):
        torch.manual_seed(0)
        x = torch.randn(1, 16, 2, 4, 4).bfloat16()
        conv = torch.nn.Conv3d(16, 16, 3, padding=1, bias=False).bfloat16()
        w = conv.weight   # a Parameter requiring grad, as a module holds it
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", convjit.EmulatorWarning)
            b0 = dict(convjit.stats()["binding"])
            convjit.ops.conv(x, w, padding=1)
            convjit.ops.conv(x, w, padding=1)
            b1 = dict(convjit.stats()["binding"])
            self.assertEqual(b1["packs"] - b0["packs"], 1, "the first call packs w once")
            self.assertEqual(b1["pack_hits"] - b0["pack_hits"], 1, "the second call reuses the packed w")
            w.mul_(-1.0)   # in place: w._version changes, the packed copy is stale
            y = convjit.ops.conv(x, w, padding=1)
            b2 = dict(convjit.stats()["binding"])
            self.assertEqual(b2["packs"] - b1["packs"], 1, "an in-place change of w re-packs it")
            ref = F.conv3d(x.double(), w.double(), padding=1)
        # y is ref rounded once to bf16 (fp32 accumulation of 432 products: ~1e-5 relative), so
        # |y - ref| <= 2^-8 |ref| (bf16's unit roundoff) plus that slack; the stale, negated w errs 2|ref|.
        err = ((y.double() - ref).abs() - 2.0 ** -8 * ref.abs()).max().item()
        self.assertLessEqual(err, 1e-3)


if __name__ == "__main__":
    unittest.main()
