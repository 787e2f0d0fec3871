"""Error paths of convjit.ops.conv: each raises the documented exception
type with a message naming the field and value; non-dense inputs are made
contiguous (counted) and still give the contiguous input's result; the
refusals convjit itself makes arrive as convjit's exception classes
carrying convjit's own message. EMULATED."""

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
    cj.report("test_errors")


def copies():
    return convjit.stats()["binding"]["input_copies"]


class TestErrors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        g = cj.gen(0)
        cls.x = cj.randn_bf16((1, 16, 6, 6), g)
        cls.w = cj.weight_bf16((16, 16, 3, 3), g)

    def raises(self, exc, *needles, **kw):
        """ops.conv(self.x, self.w, **kw) raises exc whose text contains every needle."""
        args = {"x": self.x, "w": self.w} | kw
        with self.assertRaises(exc) as cm:
            ops.conv(args.pop("x"), args.pop("w"), **args)
        for s in needles:
            self.assertIn(s, str(cm.exception))
        return cm.exception

    def test_wrong_dtype(self):
        self.raises(TypeError, "x dtype torch.float32", x=self.x.float())
        self.raises(TypeError, "w dtype torch.float16", w=self.w.half())

    def test_uint8_needs_dtype(self):
        self.raises(TypeError, "torch.uint8", "dtype=", x=torch.zeros((1, 16, 6, 6), dtype=torch.uint8),
                    w=torch.zeros((16, 16, 3, 3), dtype=torch.uint8))
        self.raises(ValueError, "dtype='fp8'", dtype="fp8")   # an unknown format name

    def test_mismatched_devices(self):
        e = self.raises(ValueError, "w", "meta", "cpu", w=self.w.to("meta"))
        self.assertNotIsInstance(e, convjit.ConvjitError)   # the binding's own check, before any C call

    def test_non_contiguous_input_is_copied(self):
        g = cj.gen(1)
        want = ops.conv(self.x, self.w, padding=1)
        wide = cj.randn_bf16((1, 16, 6, 12), g)
        wide[..., ::2] = self.x
        sliced = wide[..., ::2]                               # W stride 2
        permuted = self.x.transpose(2, 3).contiguous().transpose(2, 3)   # H and W strides swapped
        for name, xs in (("sliced", sliced), ("permuted", permuted)):
            with self.subTest(x=name):
                self.assertFalse(xs.is_contiguous() or xs.is_contiguous(memory_format=torch.channels_last))
                before = copies()
                y = ops.conv(xs, self.w, padding=1)
                self.assertEqual(copies(), before + 1, "one input copy counted")
                self.assertTrue(torch.equal(y, want), f"{name} x: the result of the contiguous x")
                self.assertTrue(y.is_contiguous())

    def test_out_not_dense(self):
        out = torch.empty((1, 16, 6, 12), dtype=torch.bfloat16)[..., ::2]
        self.raises(ValueError, "out", "strides", padding=1, out=out)

    def test_out_wrong_shape_and_dtype(self):
        self.raises(ValueError, "out (1, 16, 5, 6)", padding=1, out=torch.empty((1, 16, 5, 6), dtype=torch.bfloat16))
        self.raises(TypeError, "out dtype torch.int32", padding=1, out=torch.empty((1, 16, 6, 6), dtype=torch.int32))

    def test_wrong_bias_shape(self):
        self.raises(ValueError, "bias (17,)", "K=16", bias=torch.zeros(17, dtype=torch.bfloat16))

    def test_wrong_channels(self):
        self.raises(ValueError, "groups=1", "has 16", w=self.w[:, :8].contiguous())

    def test_invalid_geometry(self):
        self.raises(ValueError, "stride=(0, 0)", stride=0)
        self.raises(ValueError, "dilation=(1, 0)", dilation=(1, 0))
        self.raises(ValueError, "padding=(-1, -1)", padding=-1)
        self.raises(ValueError, "padding=(1, 2, 3)", padding=(1, 2, 3))
        self.raises(ValueError, "padding='full'", padding="full")
        self.raises(ValueError, "groups=0", groups=0)
        self.raises(ValueError, "act='tanh'", act="tanh")
        self.raises(ValueError, "x_scale=-1.0", x_scale=-1.0)

    def test_depthwise_is_convjits_refusal(self):
        g = cj.gen(2)
        # one input channel per group and 9 outputs per channel: the direct family takes 1..8
        e = self.raises(convjit.UnsupportedError, "depthwise", "groups = 16", w=cj.weight_bf16((144, 1, 3, 3), g),
                        groups=16, padding=1)
        self.assertIsInstance(e, NotImplementedError)
        self.assertEqual(e.function, "convjit_plan_create_conv")
        self.assertIn("depthwise", e.message)       # convjit's own text, as convjit_last_error gave it

    def test_convjit_invalid_argument(self):
        # a 3x3 filter over an unpadded 2x2 input: the C validator's refusal, a ValueError subclass
        e = self.raises(convjit.InvalidArgumentError, "filter", x=self.x[:, :, :2, :2].contiguous())
        self.assertIsInstance(e, ValueError)
        self.assertEqual(e.status_name, "invalid argument")

    def test_x_prev_batch_is_unsupported(self):
        g = cj.gen(3)
        x = cj.randn_bf16((2, 16, 2, 4, 4), g)
        w = cj.weight_bf16((16, 16, 3, 3, 3), g)
        with self.assertRaises(convjit.UnsupportedError) as cm:
            ops.conv(x, w, padding=(2, 1, 1), padding_hi=(0, 1, 1), x_prev=torch.zeros((2, 16, 2, 4, 4),
                     dtype=torch.bfloat16))
        self.assertIn("n = 2", str(cm.exception))

    def test_unbatched_with_residual(self):
        self.raises(ValueError, "residual", "unbatched", x=self.x[0], residual=torch.zeros((16, 6, 6)))

    def test_integers_past_int64(self):
        """Every integer argument is checked against the descriptor's int64
        before ctypes, which would keep only its low 64 bits (2^64 + 1 -> 1)
        and so compute another conv: a ValueError of the binding's own
        naming the argument and the value the caller gave."""
        big, wide = 2 ** 64 + 1, 2 ** 63
        cases = [("stride", big, dict(stride=big)), ("stride", wide, dict(stride=(1, wide))),
                 ("padding", big, dict(padding=big)), ("padding", wide, dict(padding=(wide, 1))),
                 ("dilation", big, dict(dilation=big)), ("dilation", wide, dict(dilation=(wide, 1))),
                 ("padding_hi", big, dict(padding=1, padding_hi=big)),
                 ("padding_hi", wide, dict(padding=1, padding_hi=(1, wide))), ("groups", big, dict(groups=big))]
        for name, value, kw in cases:
            with self.subTest(name=name, value=value):
                e = self.raises(ValueError, name + "=", str(value), "int64", **kw)
                self.assertNotIsInstance(e, convjit.ConvjitError)   # refused before any C call
        # a module's own attributes and its per-call padding go through the same check
        m = convjit.nn.Conv2d(16, 16, 3, stride=big).to(torch.bfloat16)
        with self.assertRaises(ValueError) as cm:
            m(self.x)
        self.assertIn("stride=", str(cm.exception))
        self.assertIn(str(big), str(cm.exception))
        m = convjit.nn.Conv2d(16, 16, 3).to(torch.bfloat16)
        with self.assertRaises(ValueError) as cm:
            m(self.x, padding=(1, big))
        self.assertIn(str(big), str(cm.exception))

    def test_x_prev_shape(self):
        """x_prev is (N, C, padding[0], H, W) of x: a wrong frame count,
        channel count, height or width (or rank) is refused naming the
        dimension and both values, never read as if it were right."""
        g = cj.gen(4)
        x = cj.randn_bf16((1, 16, 3, 6, 6), g)
        w = cj.weight_bf16((16, 16, 3, 3, 3), g)
        causal = dict(padding=(2, 1, 1), padding_hi=(0, 1, 1))
        for shape, needles in (((1, 16, 3, 6, 6), ("frames", "= 3", "expected 2")),
                               ((1, 16, 1, 6, 6), ("frames", "= 1", "expected 2")),
                               ((1, 8, 2, 6, 6), ("channels", "= 8", "expected 16")),
                               ((1, 16, 2, 5, 6), ("height", "= 5", "expected 6")),
                               ((1, 16, 2, 6, 5), ("width", "= 5", "expected 6")),
                               ((1, 16, 2, 6), ("4 dims", "expected 5"))):
            with self.subTest(shape=shape):
                e = self.raises(ValueError, "x_prev", *needles, x=x, w=w,
                                x_prev=torch.zeros(shape, dtype=torch.bfloat16), **causal)
                self.assertNotIsInstance(e, convjit.ConvjitError)
        ok = ops.conv(x, w, x_prev=torch.zeros((1, 16, 2, 6, 6), dtype=torch.bfloat16), **causal)
        self.assertEqual(tuple(ok.shape), (1, 16, 3, 6, 6))


if __name__ == "__main__":
    unittest.main()
