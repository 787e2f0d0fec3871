"""convjit.ops.conv_transpose, conv(..., upsample=), nn.ConvTranspose*d and
nn.patch's Upsample + conv fusion, on both emulated arches, against torch
in float64 on the same bf16 values:
- conv_transpose vs F.conv_transpose1d/2d/3d: strides 1/2/3, dilation,
  groups, output_padding, channels-last, bias, residual and act, unbatched;
- backward data vs torch.autograd.grad of a float64 F.conv3d (dx for dy);
- upsample vs F.interpolate(mode='nearest') + F.conv, and bit for bit
  convjit's own conv of the upsampled tensor (the same products in the same
  order: docs/kernels.md "Fused nearest upsample");
- nn.patch of a ConvTranspose3d and of an Upsample + Conv3d Sequential;
- float16 (input, weight and output f16: the f16 MFMA rows and an f16
  output rounding) for the transposed conv, autograd's dx, the upsample and
  a half model's patch;
- bad input: each a ValueError (or convjit's InvalidArgumentError) naming it.
Bound (cjtest.bound): a transposed conv's output element sums at most
C_in/groups*T*R*S exact bf16 products (every tap of every input channel),
plus the bias and the residual: gamma of that many terms times the float64
conv_transpose of |x|, |w| (+ |bias|, |beta z|), and the output's rounding
(bf16 2^-8; f16 2^-11 relative and 2^-25 absolute for its subnormals).
EMULATED: no time here is a GPU time."""

import copy
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cjtest as cj  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import convjit  # noqa: E402
import convjit.nn as cnn  # noqa: E402
from convjit import ops  # noqa: E402

setUpModule = cj.quiet
_CT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def tearDownModule():
    convjit.set_emulator_arch(None)
    cj.report("test_transpose")


def ct64(x, w, b, stride, padding, output_padding, groups, dilation):
    """(ref, mag): float64 conv_transpose of x, w (+ bias) and of |x|, |w| (+ |bias|)."""
    rank = w.dim() - 2
    args = (stride, padding, output_padding, groups, dilation)
    ref = _CT[rank](x.double(), w.double(), None if b is None else b.double(), *args)
    mag = _CT[rank](x.double().abs(), w.double().abs(), None if b is None else b.double().abs(), *args)
    return ref, mag


class _Cases:
    ARCH = None

    def setUp(self):
        convjit.set_emulator_arch(self.ARCH)

    def transpose_case(self, label, xshape, wshape, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                       bias=True, channels_last=False, act=None, residual=False, seed=0, dtype=torch.bfloat16):
        g = cj.gen(seed)
        x = cj.randn_bf16(xshape, g, dtype=dtype)
        w = cj.weight_bf16(wshape, g, dtype)
        b = cj.randn_bf16((wshape[1] * groups,), g) if bias else None
        if channels_last:
            x = x.contiguous(memory_format={5: torch.channels_last_3d, 4: torch.channels_last}[x.dim()])
        ref, mag = ct64(x, w, b, stride, padding, output_padding, groups, dilation)
        z = cj.randn_bf16(tuple(ref.shape), g, dtype=dtype) if residual else None
        y = ops.conv_transpose(x, w, b, stride, padding, output_padding, groups, dilation, act=act, residual=z)
        if z is not None:
            ref, mag = ref + z.double(), mag + z.double().abs()
        ref = cj.ACT64[act](ref)
        # at most C_in/groups*T*R*S products per output, + bias, + residual
        terms = math.prod(w.shape[2:]) * (w.shape[0] // groups) + 2
        if channels_last:
            self.assertTrue(y.is_contiguous(memory_format={5: torch.channels_last_3d,
                                                           4: torch.channels_last}[x.dim()]),
                            f"{label}: the output keeps the input's layout")
        cj.check(self, y, ref, cj.bound(ref, mag, terms, act, dtype), f"{self.ARCH} {label}", dtype)

    def test_transpose_3d_strides(self):
        self.transpose_case("3d s(1,2,2) k3 p1", (1, 32, 3, 4, 5), (32, 16, 3, 3, 3), stride=(1, 2, 2), padding=1)
        self.transpose_case("3d s2 k(1,4,4) p(0,1,1) op1", (1, 16, 2, 3, 4), (16, 24, 1, 4, 4), stride=2,
                            padding=(0, 1, 1), output_padding=1)
        self.transpose_case("3d s1 k3 p1 silu", (1, 16, 3, 4, 4), (16, 16, 3, 3, 3), padding=1, act="silu")

    def test_transpose_2d_stride3_dilation_groups(self):
        self.transpose_case("2d s3 d2 op2", (2, 16, 4, 5), (16, 8, 3, 2), stride=3, dilation=2, padding=(2, 1),
                            output_padding=(2, 1))
        self.transpose_case("2d s2 g2 channels_last residual relu", (1, 32, 5, 4), (32, 8, 4, 4), stride=2,
                            padding=1, groups=2, channels_last=True, residual=True, act="relu")

    def test_transpose_1d_and_unbatched(self):
        self.transpose_case("1d s2 k5 p2 op1", (2, 16, 9), (16, 24, 5), stride=2, padding=2, output_padding=1)
        g = cj.gen(7)
        x = cj.randn_bf16((16, 9), g)
        w = cj.weight_bf16((16, 8, 3), g)
        y = ops.conv_transpose(x, w, stride=2)
        ref, mag = ct64(x.unsqueeze(0), w, None, 2, 0, 0, 1, 1)
        cj.check(self, y, ref.squeeze(0), cj.bound(ref.squeeze(0), mag.squeeze(0), 16 * 3 + 1),
                 f"{self.ARCH} 1d unbatched")

    def test_transpose_f16(self):
        f16 = torch.float16
        self.transpose_case("f16 3d s(1,2,2) k3 p1", (1, 32, 3, 4, 5), (32, 16, 3, 3, 3), stride=(1, 2, 2),
                            padding=1, dtype=f16)
        self.transpose_case("f16 2d s2 g2 op1 channels_last residual silu", (1, 32, 5, 4), (32, 8, 4, 4),
                            stride=2, padding=1, output_padding=1, groups=2, channels_last=True, residual=True,
                            act="silu", dtype=f16)

    def test_backward_data_is_autograd_dx(self):
        """dx of a float64 F.conv3d (torch.autograd.grad) is conv_transpose of
        dy with the same weight, output_padding picking x's extents."""
        g = cj.gen(3)
        x = cj.randn_bf16((1, 16, 4, 7, 8), g).double().requires_grad_()
        w = cj.weight_bf16((24, 16, 3, 3, 3), g)
        stride, padding = (1, 2, 2), 1
        y = F.conv3d(x, w.double(), None, stride, padding)
        dy = cj.randn_bf16(tuple(y.shape), g)
        (dx,) = torch.autograd.grad(y, x, dy.double())
        # x's extents from dy's: the last positions a stride skips are output_padding
        op = tuple(x.shape[2 + i] - ((y.shape[2 + i] - 1) * stride[i] - 2 * padding + 2 + 1) for i in range(3))
        got = ops.conv_transpose(dy, w, None, stride, padding, op)
        mag = F.conv_transpose3d(dy.double().abs(), w.double().abs(), None, stride, padding, op)
        cj.check(self, got, dx, cj.bound(dx, mag, 24 * 27 + 1), f"{self.ARCH} autograd dx")
        # the same in f16: dy and w rounded to f16, dx of the float64 conv on those values
        dy16, w16 = dy.half(), w.half()
        y = F.conv3d(x, w16.double(), None, stride, padding)
        (dx,) = torch.autograd.grad(y, x, dy16.double())
        got = ops.conv_transpose(dy16, w16, None, stride, padding, op)
        mag = F.conv_transpose3d(dy16.double().abs(), w16.double().abs(), None, stride, padding, op)
        cj.check(self, got, dx, cj.bound(dx, mag, 24 * 27 + 1, y_dtype=torch.float16), f"{self.ARCH} autograd dx f16",
                 torch.float16)

    def test_upsample(self):
        for label, xshape, wshape, up, geom in (
                ("3d up(1,2,2) k3 p1", (1, 16, 3, 4, 5), (24, 16, 3, 3, 3), (1, 2, 2), dict(padding=1)),
                ("2d up2 s3 d2", (1, 16, 5, 6), (8, 16, 3, 3), 2, dict(stride=3, dilation=2, padding=2)),
                ("1d up2 s2", (2, 16, 7), (16, 16, 4), 2, dict(stride=2, padding=1))):
            with self.subTest(label=label):
                g = cj.gen(11)
                x = cj.randn_bf16(xshape, g)
                w = cj.weight_bf16(wshape, g)
                b = cj.randn_bf16((wshape[0],), g)
                y = ops.conv(x, w, b, upsample=up, **geom)
                rank = w.dim() - 2
                f = up if isinstance(up, tuple) else (up,) * rank
                xu = F.interpolate(x.double(), scale_factor=f, mode="nearest")
                ref, mag = cj.conv64(xu, w, b, **geom)
                cj.check(self, y, ref, cj.bound(ref, mag, cj.products(w) + 1), f"{self.ARCH} {label}")
                # bit for bit convjit's conv of the upsampled tensor (nearest copies: exact in bf16)
                two = ops.conv(F.interpolate(x.float(), scale_factor=f, mode="nearest").bfloat16(), w, b, **geom)
                self.assertTrue(torch.equal(y, two), f"{label}: fused upsample differs from the two-step conv")

    def test_patch_convtranspose3d(self):
        torch.manual_seed(5)
        tm = torch.nn.ConvTranspose3d(16, 16, (3, 4, 4), stride=(1, 2, 2), padding=(1, 1, 1), bias=True)
        tm = tm.to(torch.bfloat16)
        ref_m = copy.deepcopy(tm).double()
        model = torch.nn.Sequential(tm)
        res = cnn.patch(model)
        self.assertEqual(res.swapped, ["0"])
        self.assertIsInstance(model[0], cnn.ConvTranspose3d)
        x = cj.randn_bf16((1, 16, 3, 4, 5), cj.gen(2))
        with torch.no_grad():
            y = model(x)
            y_sz = model[0](x, output_size=(3, 9, 11))   # output_size picks output_padding (1, 1), as in torch
            ref = ref_m(x.double())
            ref_sz = ref_m(x.double(), output_size=(3, 9, 11))
        mag = F.conv_transpose3d(x.double().abs(), ref_m.weight.abs(), ref_m.bias.abs(), (1, 2, 2), 1)
        cj.check(self, y, ref, cj.bound(ref, mag, 16 * 48 + 1), f"{self.ARCH} patch ConvTranspose3d")
        mag_sz = F.conv_transpose3d(x.double().abs(), ref_m.weight.abs(), ref_m.bias.abs(), (1, 2, 2), 1,
                                    (0, 1, 1))
        cj.check(self, y_sz, ref_sz, cj.bound(ref_sz, mag_sz, 16 * 48 + 1), f"{self.ARCH} output_size")

    def test_patch_upsample_conv3d(self):
        for dt in (torch.bfloat16, torch.float16):   # a half model fuses the same way
            torch.manual_seed(6)
            model = torch.nn.Sequential(torch.nn.Upsample(scale_factor=(1, 2, 2), mode="nearest-exact"),
                                        torch.nn.Conv3d(16, 24, 3, padding=1)).to(dt)
            ref_m = copy.deepcopy(model).double()
            res = cnn.patch(model)
            self.assertEqual(res.fused, [("0", "1")])
            self.assertIsInstance(model[0], cnn.FusedUpsample)
            self.assertEqual(model[1].upsample, (1, 2, 2))
            x = cj.randn_bf16((1, 16, 2, 3, 4), cj.gen(4), dtype=dt)
            with torch.no_grad():
                y = model(x)
                ref = ref_m(x.double())
            xu = F.interpolate(x.double(), scale_factor=(1, 2, 2), mode="nearest")
            mag = F.conv3d(xu.abs(), ref_m[1].weight.abs(), ref_m[1].bias.abs(), padding=1)
            cj.check(self, y, ref, cj.bound(ref, mag, 16 * 27 + 1, y_dtype=dt), f"{self.ARCH} patch Upsample+Conv3d {dt}",
                     dt)

    def test_patch_convtranspose3d_f16(self):
        torch.manual_seed(7)
        model = torch.nn.Sequential(torch.nn.ConvTranspose3d(16, 8, (1, 4, 4), stride=(1, 2, 2),
                                                             padding=(0, 1, 1))).half()
        ref_m = copy.deepcopy(model).double()
        self.assertEqual(cnn.patch(model).swapped, ["0"])
        x = cj.randn_bf16((1, 16, 2, 3, 4), cj.gen(8), dtype=torch.float16)
        with torch.no_grad():
            y = model(x)
            ref = ref_m(x.double())
        mag = F.conv_transpose3d(x.double().abs(), ref_m[0].weight.abs(), ref_m[0].bias.abs(), (1, 2, 2), (0, 1, 1))
        cj.check(self, y, ref, cj.bound(ref, mag, 16 * 16 + 1, y_dtype=torch.float16),
                 f"{self.ARCH} patch ConvTranspose3d f16", torch.float16)


class TestGfx950(_Cases, unittest.TestCase):
    ARCH = "gfx950"


class TestGfx942(_Cases, unittest.TestCase):
    ARCH = "gfx942"


class TestBadInput(unittest.TestCase):
    def test_errors_name_the_argument(self):
        g = cj.gen(1)
        x = cj.randn_bf16((1, 16, 4, 4), g)
        w = cj.weight_bf16((16, 8, 3, 3), g)
        with self.assertRaisesRegex(ValueError, r"output_padding\[0\] = 2: must be < max\(stride\[0\], "
                                                r"dilation\[0\]\) = 2"):
            ops.conv_transpose(x, w, stride=2, output_padding=2)
        with self.assertRaisesRegex(ValueError, "upsample=3: every factor must be 1 or 2"):
            ops.conv(x, cj.weight_bf16((8, 16, 3, 3), g), upsample=3)
        with self.assertRaisesRegex(ValueError, r"weight \(16, 8, 3, 3\) takes 16 input channels, input "
                                                r"\(1, 8, 4, 4\) has 8"):
            ops.conv_transpose(x[:, :8], w)
        with self.assertRaisesRegex(ValueError, r"bias \(9,\): expected C_out=8"):
            ops.conv_transpose(x, w, torch.zeros(9))
        with self.assertRaisesRegex(TypeError, "torch.bfloat16 or torch.float16, one for both"):
            ops.conv_transpose(x.float(), w)
        with self.assertRaisesRegex(TypeError, "weight dtype torch.float16"):
            ops.conv_transpose(x, w.half())
        # torch's own rule: an Upsample by 3 stays a torch module, its conv convjit's
        model = torch.nn.Sequential(torch.nn.Upsample(scale_factor=3), torch.nn.Conv2d(16, 8, 3)).to(torch.bfloat16)
        res = cnn.patch(model)
        self.assertEqual(res.fused, [])
        self.assertEqual(res.swapped, ["1"])


if __name__ == "__main__":
    unittest.main()
