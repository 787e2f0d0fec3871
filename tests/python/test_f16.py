"""torch.float16 through convjit.ops.conv and convjit.nn, and fp32 outputs
(out_dtype=torch.float32 / an fp32 out=), against torch.nn.functional in
float64 on the same values, on both emulated arches. Every element is held
to cjtest.bound with y's dtype (derivation there): products of f16 values
are exact in fp32 (11x11 significant bits), the fp32 sum errs by at most
gamma_{n+1} * sum|terms|, an f16 y adds its round to nearest even (2^-11
relative, 2^-25 absolute for its subnormals), an fp32 y nothing. The bound
has teeth: the f16 outputs rounded to bf16 fall outside it. EMULATED."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cjtest as cj  # noqa: E402

import torch  # noqa: E402

import convjit  # noqa: E402
from convjit import ops  # noqa: E402

setUpModule = cj.quiet
F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32


def tearDownModule():
    convjit.set_emulator_arch(None)
    cj.report("test_f16")


class _F16Cases:
    ARCH = None

    def setUp(self):
        convjit.set_emulator_arch(self.ARCH)

    def case(self, label, xshape, wshape, dtype=F16, out_dtype=None, bias=False, groups=1, seed=0,
             residual=False, act=None, channels_last=False, **geom):
        g = cj.gen(seed)
        x = cj.randn_bf16(xshape, g, dtype=dtype)
        w = cj.weight_bf16(wshape, g, dtype)
        b = cj.randn_bf16((wshape[0],), g) if bias else None
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last_3d if x.dim() == 5 else torch.channels_last)
        ref, mag = cj.conv64(x, w, b, groups=groups, **geom)
        yt = out_dtype or dtype
        z = cj.randn_bf16(tuple(ref.shape), g, dtype=yt) if residual else None
        y = ops.conv(x, w, b, groups=groups, residual=z, act=act, out_dtype=out_dtype, **geom)
        if z is not None:
            ref, mag = ref + z.double(), mag + z.double().abs()
        ref = cj.ACT64[act](ref)
        # n products + the bias (+ z and its add: test_epilogue's count)
        b_ = cj.bound(ref, mag, cj.products(w) + (3 if residual else 1), act=act, y_dtype=yt)
        cj.check(self, y, ref, b_, f"{self.ARCH} {label}", y_dtype=yt)
        if channels_last:
            self.assertTrue(y.is_contiguous(memory_format=torch.channels_last_3d if y.dim() == 5
                                            else torch.channels_last), "y has x's layout")
        return y, ref, b_

    def test_conv1d_stride_dilation_padding_hi(self):
        self.case("f16 1d s2 d2 pad 1/2", (2, 16, 9), (16, 16, 3), bias=True, stride=2, dilation=2, padding=1,
                  padding_hi=2)

    def test_conv2d_groups(self):
        self.case("f16 2d groups 2", (2, 32, 6, 6), (32, 16, 3, 3), bias=True, groups=2, padding=1)

    def test_conv3d_bound_has_teeth(self):
        y, ref, b = self.case("f16 3d", (1, 16, 4, 6, 6), (32, 16, 3, 3, 3), bias=True, padding=1)
        # the same outputs rounded to bf16 (a kernel of the old output type): mostly outside the f16 bound
        frac = float(((y.to(BF16).double() - ref).abs() > b).double().mean())
        print(f"\n{self.ARCH} f16 3d outputs rounded to bf16: {frac:.0%} outside the bound", file=sys.stderr)
        self.assertGreater(frac, 0.25)   # measured 51%: bf16's rounding is 8x f16's, the accumulation term covers some

    def test_channels_last_residual_silu(self):
        self.case("f16 3d channels_last residual silu", (1, 16, 3, 5, 6), (16, 16, 3, 3, 3), bias=True,
                  residual=True, act="silu", channels_last=True, padding=1)

    def test_out_dtype_f32(self):
        for dt in (F16, BF16):
            with self.subTest(dtype=dt):
                self.case(f"{dt} -> f32 residual gelu", (1, 16, 4, 6, 6), (16, 16, 3, 3, 3), dtype=dt,
                          out_dtype=F32, bias=True, residual=True, act="gelu_tanh", padding=1)

    def test_fp32_out_tensor(self):
        g = cj.gen(3)
        x, w = cj.randn_bf16((1, 16, 6, 6), g, dtype=F16), cj.weight_bf16((16, 16, 3, 3), g, F16)
        out = torch.full((1, 16, 6, 6), float("nan"), dtype=F32)   # NaN: every element is written
        y = ops.conv(x, w, padding=1, out=out)
        self.assertIs(y, out)
        ref, mag = cj.conv64(x, w, padding=1)
        cj.check(self, y, ref, cj.bound(ref, mag, cj.products(w), y_dtype=F32), f"{self.ARCH} f16 -> f32 out=",
                 y_dtype=F32)

    def test_overflow_is_inf(self):
        """docs/api.md: an f16 y past 65504 is inf (round to nearest even: from 65520 on)."""
        x = torch.full((1, 16, 1, 4), 256.0, dtype=F16)
        w = torch.zeros((16, 16, 1, 1), dtype=F16)
        w[0, :] = 16.0     # 16 * 256 * 16 = 65536 -> inf
        w[2, 0] = 255.875  # 256 * 255.875 = 65504: the largest finite
        y = ops.conv(x, w)
        self.assertTrue(bool(torch.isinf(y[0, 0]).all()) and bool((y[0, 0] > 0).all()))
        self.assertEqual(float(y[0, 2, 0, 0]), 65504.0)
        y32 = ops.conv(x, w, out_dtype=F32)   # fp32 keeps it
        self.assertEqual(float(y32[0, 0, 0, 0]), 65536.0)


class TestF16Gfx950(_F16Cases, unittest.TestCase):
    ARCH = "gfx950"

    def test_nn_patch_half_model_causal(self):
        """A half model patched: its Conv3d forwards through convjit in f16;
        causal chunks with x_prev equal the whole call bit for bit."""
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Conv3d(16, 16, 3, padding=1)).half()
        res = convjit.nn.patch(m)
        self.assertEqual(res.swapped, ["0"])
        g = cj.gen(9)
        x = cj.randn_bf16((1, 16, 6, 5, 5), g, dtype=F16)
        causal = dict(padding=(2, 1, 1), padding_hi=(0, 1, 1))
        with torch.no_grad():
            whole = m[0](x, **causal)
            first = m[0](x[:, :, :2], **causal)
            second = m[0](x[:, :, 2:], x_prev=x[:, :, :2], **causal)
            y32 = m[0](x, out_dtype=F32)
        ref, mag = cj.conv64(x, m[0].weight, m[0].bias, padding=(2, 1, 1), padding_hi=(0, 1, 1))
        n = cj.products(m[0].weight) + 1
        cj.check(self, whole, ref, cj.bound(ref, mag, n, y_dtype=F16), "nn f16 causal whole", y_dtype=F16)
        self.assertTrue(torch.equal(torch.cat([first, second], dim=2), whole))
        ref, mag = cj.conv64(x, m[0].weight, m[0].bias, padding=1)
        cj.check(self, y32, ref, cj.bound(ref, mag, n, y_dtype=F32), "nn f16 -> f32", y_dtype=F32)

    def test_fp8_out_dtype_f32(self):
        """fp8 x and w (uint8 codes of the arch's format) with an fp32 y: the
        dequantized sum, unrounded."""
        g = cj.gen(5)
        fmt = "fp8_e4m3fn"
        xc = cj.fp8_random_codes((1, 16, 4, 5, 5), g, fmt, max_exp_code=8)
        wc = cj.fp8_random_codes((16, 16, 3, 3, 3), g, fmt, max_exp_code=6)
        y = ops.conv(xc, wc, padding=1, dtype=fmt, x_scale=0.5, out_dtype=F32)
        x64, w64 = cj.fp8_decode(xc, fmt), cj.fp8_decode(wc, fmt)
        ref, mag = cj.conv64(x64, w64, padding=1)
        ref, mag = ref * 0.5, mag * 0.5   # the scale: exact (a power of 2)
        # products exact; the alpha multiply is one more fp32 rounding
        cj.check(self, y, ref, cj.bound(ref, mag, cj.products(wc) + 1, y_dtype=F32), "fp8 -> f32", y_dtype=F32)


class TestF16Gfx942(_F16Cases, unittest.TestCase):
    ARCH = "gfx942"


class TestF16Errors(unittest.TestCase):
    """Refusals name what is wrong: the binding's own (dtype pairs) before
    any C call, convjit's (desc fields) as its exception classes."""

    def setUp(self):
        g = cj.gen(1)
        self.x, self.w = cj.randn_bf16((1, 16, 6, 6), g, dtype=F16), cj.weight_bf16((16, 16, 3, 3), g, F16)

    def test_mixed_dtypes(self):
        with self.assertRaises(TypeError) as cm:
            ops.conv(self.x, self.w.bfloat16())
        self.assertIn("f16 conv takes torch.float16 x and w", str(cm.exception))

    def test_out_dtype_refusals(self):
        with self.assertRaises(TypeError) as cm:
            ops.conv(self.x, self.w, out_dtype=torch.int8)
        self.assertIn("out_dtype=torch.int8", str(cm.exception))
        with self.assertRaises(NotImplementedError) as cm:   # convjit's: bf16 y of an f16 conv
            ops.conv(self.x, self.w, out_dtype=BF16)
        self.assertIn("desc.y_dtype = 1 (bf16)", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            ops.conv(self.x, self.w, out=torch.empty((1, 16, 4, 4), dtype=F32), out_dtype=F16)
        self.assertIn("give one of them", str(cm.exception))

    def test_residual_in_y_dtype(self):
        z = torch.zeros((1, 16, 4, 4), dtype=BF16)
        with self.assertRaises(TypeError) as cm:
            ops.conv(self.x, self.w, residual=z)
        self.assertIn("residual dtype torch.bfloat16", str(cm.exception))
        self.assertIn("torch.float16", str(cm.exception))

    def test_fp8_scales_on_f16(self):
        with self.assertRaises(ValueError) as cm:   # convjit's INVALID_ARG naming the field
            ops.conv(self.x, self.w, x_scale=0.5)
        self.assertIn("desc.x_scale = 0.5", str(cm.exception))
        self.assertIn("x_dtype = f16", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
