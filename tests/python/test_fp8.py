"""fp8 convs through convjit.ops.conv (torch 1.13 has no float8 dtypes:
torch.uint8 codes plus dtype=) against the float64 conv of the values
decoded by cjtest's own E4M3FN / E4M3FNUZ tables (from the format
definitions), times x_scale * w_scale (per tensor or per output channel)
plus bias. Bound: cjtest.bound with n + 3 terms: products of fp8 values
(4x4 significant bits) are exact in fp32, then the fp32 sum of n products,
the multiplies by alpha and by scale[k], and the bias add each round once
(docs/api.md "fp8 formats": ((acc * alpha) * scale[k]) + bias[k]); the
scales below are exact in fp32 and alpha = x_scale * w_scale * 2^m is exact
for them. EMULATED."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cjtest as cj  # noqa: E402

import torch  # noqa: E402

import convjit  # noqa: E402
from convjit import ops  # noqa: E402

FN, FNUZ = "fp8_e4m3fn", "fp8_e4m3fnuz"


setUpModule = cj.quiet


def tearDownModule():
    convjit.set_emulator_arch(None)
    cj.report("test_fp8")


def fp8_ref(xv, wv, bias, x_scale, w_scale, **geom):
    """float64 reference and mag of y = conv(xv, wv) * x_scale * w_scale[k] + bias."""
    ref, mag = cj.conv64(xv, wv, None, **geom)
    rank = wv.dim() - 2
    s = torch.as_tensor(w_scale, dtype=torch.float64).reshape(-1)   # one or K scales
    s = (s * x_scale).view((1, -1) + (1,) * rank)
    ref, mag = ref * s, mag * s
    if bias is not None:
        b = bias.double().view((1, -1) + (1,) * rank)
        ref, mag = ref + b, mag + b.abs()
    return ref, mag


class TestFp8(unittest.TestCase):
    def tearDown(self):
        convjit.set_emulator_arch(None)

    def fp8_case(self, arch, fmt, label, xshape, wshape, x_scale=0.5, w_scale=0.125, bias=True, seed=0,
                 **geom):
        convjit.set_emulator_arch(arch)
        g = cj.gen(seed)
        # exponent field capped at 12 (|v| <= 2^5 * 1.875): sums stay far from bf16's range
        xc = cj.fp8_random_codes(xshape, g, fmt, max_exp_code=12)
        wc = cj.fp8_random_codes(wshape, g, fmt, max_exp_code=12)
        b = cj.randn_bf16((wshape[0],), g, 50.0) if bias else None
        y = ops.conv(xc, wc, b, x_scale=x_scale, w_scale=w_scale, dtype=fmt, **geom)
        ref, mag = fp8_ref(cj.fp8_decode(xc, fmt), cj.fp8_decode(wc, fmt), b, x_scale, w_scale, **geom)
        # n products, alpha, scale[k], bias: n + 3 fp32 roundings (module docstring)
        cj.check(self, y, ref, cj.bound(ref, mag, cj.products(wc) + 3), f"{arch} {fmt} {label}")

    def test_fn_gfx950_3d(self):
        self.fp8_case("gfx950", FN, "3d", (1, 16, 4, 6, 6), (32, 16, 3, 3, 3), padding=1)

    def test_fn_gfx942_3d(self):   # E4M3FN mapped to FNUZ by the pre-pass and weight pack, alpha x4
        self.fp8_case("gfx942", FN, "3d", (1, 16, 4, 6, 6), (32, 16, 3, 3, 3), padding=1)

    def test_fnuz_gfx942_2d(self):
        self.fp8_case("gfx942", FNUZ, "2d", (2, 32, 6, 6), (16, 32, 3, 3), stride=(1, 2), padding=(1, 0),
                      padding_hi=(0, 1))

    def test_fn_gfx950_2d_groups(self):   # fp8 groups need c/groups % 16 == 0
        self.fp8_case("gfx950", FN, "2d groups 2", (2, 32, 6, 6), (32, 16, 3, 3), groups=2, padding=1)

    def test_channel_scale(self):
        g = cj.gen(7)
        ws = (torch.randint(8, 32, (32,), generator=g) / 16.0).float()   # k/16: exact in fp32
        for arch, fmt in (("gfx950", FN), ("gfx942", FNUZ)):
            with self.subTest(arch=arch, fmt=fmt):
                self.fp8_case(arch, fmt, "2d per-channel w_scale", (1, 16, 8, 8), (32, 16, 3, 3), x_scale=0.25,
                              w_scale=ws, padding=1)

    def test_fnuz_on_gfx950_is_unsupported(self):
        convjit.set_emulator_arch("gfx950")
        g = cj.gen(3)
        xc = cj.fp8_random_codes((1, 16, 6, 6), g, FNUZ)
        wc = cj.fp8_random_codes((16, 16, 3, 3), g, FNUZ)
        with self.assertRaises(convjit.UnsupportedError) as cm:
            ops.conv(xc, wc, dtype=FNUZ)
        self.assertIn("gfx950", str(cm.exception))

    def test_bf16_x_fp8_w(self):
        """bf16 x beside fp8 w: the pre-pass quantizes x to the arch's native
        format, q = fp8(fl32(x * fl32(1/x_scale))) RNE saturating (docs/api.md
        "Quantizing"). The reference quantizes x itself (cjtest.fp8_quantize,
        from the format tables) into gfx950's E4M3FN / gfx942's E4M3FNUZ, and
        convolves q * x_scale. x/x_scale spans +-1000: values past 240 and 448
        saturate, small ones land on subnormals."""
        g = cj.gen(11)
        xs = 2.0 ** -6
        x = cj.randn_bf16((1, 16, 6, 6), g, 4.0)
        self.assertGreater(float((x.double() / xs).abs().max()), 448.0, "the data must exercise saturation")
        for arch, wfmt in (("gfx950", FN), ("gfx942", FN), ("gfx942", FNUZ)):
            with self.subTest(arch=arch, w=wfmt):
                convjit.set_emulator_arch(arch)
                native = FN if arch == "gfx950" else FNUZ
                wc = cj.fp8_random_codes((16, 16, 3, 3), g, wfmt, max_exp_code=9)
                b = cj.randn_bf16((16,), g)
                y = ops.conv(x, wc, b, padding=1, x_scale=xs, w_scale=0.5, dtype=wfmt)
                xq = cj.fp8_quantize_like_prepass(x, xs, native)
                ref, mag = fp8_ref(xq, cj.fp8_decode(wc, wfmt), b, 1.0, 0.5, padding=1)   # xq includes x_scale
                cj.check(self, y, ref, cj.bound(ref, mag, cj.products(wc) + 3), f"{arch} bf16 x, {wfmt} w")


class TestFp8Tables(unittest.TestCase):
    """The decoder itself, on values fixed by the format definitions."""

    def test_known_codes(self):
        fn, uz = cj.FP8_TABLE[FN], cj.FP8_TABLE[FNUZ]
        self.assertEqual(float(fn[0x7E]), 448.0)          # FN max finite
        self.assertEqual(float(uz[0x7F]), 240.0)          # FNUZ max finite
        self.assertEqual(float(fn[0x01]), 2.0 ** -9)      # FN smallest subnormal
        self.assertEqual(float(uz[0x01]), 2.0 ** -10)     # FNUZ smallest subnormal
        self.assertEqual(float(fn[0x38]), 1.0)            # exponent 7 = bias
        self.assertEqual(float(uz[0x40]), 1.0)            # exponent 8 = bias
        self.assertEqual(float(fn[0xB8]), -1.0)
        self.assertTrue(bool(torch.isnan(fn[0x7F])) and bool(torch.isnan(fn[0xFF])))
        self.assertTrue(bool(torch.isnan(uz[0x80])))
        self.assertEqual(int(torch.isnan(uz).sum()), 1)
        self.assertEqual(int(torch.isnan(fn).sum()), 2)
        # every non-NaN FNUZ code but 0 is exactly half the FN value of the same bits
        for c in range(256):
            if c not in (0x00, 0x80, 0x7F, 0xFF):
                self.assertEqual(float(uz[c]) * 2.0, float(fn[c]), hex(c))

    def test_quantize(self):
        q = cj.fp8_quantize(torch.tensor([1.0625, 1.1875, 500.0, -300.0, 2.0 ** -11, 3 * 2.0 ** -11],
                                         dtype=torch.float64), FN)
        # 1.0625 is the tie of 1 and 1.125: even code (1.0); 1.1875 ties 1.125/1.25 -> 1.25 (mantissa 2);
        # 500 saturates to 448; -300 -> -288 (step 32 above 256); 2^-11 is below half the smallest
        # subnormal 2^-9 -> 0; 3*2^-11 = 0.75*2^-9 -> 2^-9
        self.assertEqual(q.tolist(), [1.0, 1.25, 448.0, -288.0, 0.0, 2.0 ** -9])
        self.assertEqual(float(cj.fp8_quantize(torch.tensor([300.0], dtype=torch.float64), FNUZ)), 240.0)


if __name__ == "__main__":
    unittest.main()
