"""The fused epilogue (residual, beta, act) and causal chunked streaming
(x_prev) through convjit.ops.conv. EMULATED.

Epilogue reference: act(conv + beta*z + bias) in float64. Bound
(cjtest.bound with act): the pre-activation fp32 value errs by at most
gamma_{n+3} * (F.conv(|x|,|w|) + |beta z| + |bias|) (n exact products, the
bias, the rounded beta*z and its add); act is Lipschitz with
sup|act'| <= 1 (relu) / 1.13 (silu, gelu_tanh: checked below on a grid), so
that error passes through times the slope; the activation's own fp32
evaluation adds at most 2^-15 of |act| (cjtest.ACT_REL; valid for
|t| < 16, asserted); then the bf16 rounding adds 2^-8."""

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
    cj.report("test_epilogue")


class TestEpilogue(unittest.TestCase):
    def tearDown(self):
        convjit.set_emulator_arch(None)

    def test_activation_slopes(self):
        """The Lipschitz constants the bound uses: sup |act'| over a fine grid
        (both tails are flat: silu' -> 0/1, gelu' -> 0/1 beyond |t| = 20)."""
        t = torch.linspace(-20, 20, 400001, dtype=torch.float64, requires_grad=True)
        for name in ("silu", "gelu_tanh"):
            (d,) = torch.autograd.grad(cj.ACT64[name](t).sum(), t)
            s = float(d.abs().max())
            self.assertLess(s, cj.ACT_SLOPE[name], name)
            self.assertGreater(s, 1.09, f"{name}: slope {s} (silu 1.0998, gelu_tanh 1.1289)")

    def epi_case(self, arch, act, beta, residual=True, seed=0):
        convjit.set_emulator_arch(arch)
        g = cj.gen(seed)
        x = cj.randn_bf16((1, 16, 4, 6, 6), g)
        w = cj.weight_bf16((16, 16, 3, 3, 3), g)
        b = cj.randn_bf16((16,), g)
        z = cj.randn_bf16((1, 16, 4, 6, 6), g) if residual else None
        y = ops.conv(x, w, b, padding=1, residual=z, beta=beta, act=act)
        t, mag = cj.conv64(x, w, b, padding=1)
        if residual:
            bz = float(torch.tensor(beta, dtype=torch.float32)) * z.double()   # beta is an fp32 plan constant
            t, mag = t + bz, mag + bz.abs()
        self.assertLess(float(t.abs().max()), 16.0, "cjtest.ACT_REL holds for |t| < 16")
        ref = cj.ACT64[act](t)
        # n products, bias, beta*z's rounding and its add: n + 3 (module docstring)
        cj.check(self, y, ref, cj.bound(ref, mag, cj.products(w) + 3, act=act),
                 f"{arch} act={act} beta={beta if residual else '-'}")

    def test_residual_relu(self):
        self.epi_case("gfx950", "relu", 1.0)

    def test_residual_beta_silu(self):
        for arch in ("gfx950", "gfx942"):
            with self.subTest(arch=arch):
                self.epi_case(arch, "silu", 0.5)

    def test_gelu_tanh_no_residual(self):
        self.epi_case("gfx942", "gelu_tanh", 1.0, residual=False)

    def test_residual_negative_beta(self):
        self.epi_case("gfx950", None, -1.5, seed=2)

    def test_residual_beta_zero(self):
        """beta=0 must drop the residual (y = conv + bias), even though the C
        descriptor reads beta = 0 as 1.0."""
        self.epi_case("gfx950", None, 0.0, seed=3)


class TestCausalChunks(unittest.TestCase):
    """A causal 3x3x3 conv (time padding 2 before, 0 after; 1/1 in H, W) over
    D = 8 frames equals, bit for bit, the concatenation of chunked calls
    (docs/api.md "Causal streaming"): the first chunk runs without x_prev
    (zero padding, as the whole-video conv), each later one with x_prev =
    the previous P = 2 input frames; the first chunk has 1 frame, so the
    second chunk's x_prev is [zeros, frame 0]."""

    PAD, PAD_HI = (2, 1, 1), (0, 1, 1)

    def tearDown(self):
        convjit.set_emulator_arch(None)

    def stream(self, arch):
        convjit.set_emulator_arch(arch)
        g = cj.gen(5)
        x = cj.randn_bf16((1, 16, 8, 6, 6), g)
        w = cj.weight_bf16((16, 16, 3, 3, 3), g)
        b = cj.randn_bf16((16,), g)
        whole = ops.conv(x, w, b, padding=self.PAD, padding_hi=self.PAD_HI)
        ref, mag = cj.conv64(x, w, b, padding=self.PAD, padding_hi=self.PAD_HI)
        cj.check(self, whole, ref, cj.bound(ref, mag, cj.products(w) + 1), f"{arch} causal whole")

        cache = torch.zeros((1, 16, 2, 6, 6), dtype=torch.bfloat16)   # stands for the zero padding
        parts, start = [], 0
        for i, length in enumerate((1, 3, 4)):
            chunk = x[:, :, start:start + length]
            parts.append(ops.conv(chunk, w, b, padding=self.PAD, padding_hi=self.PAD_HI,
                                  x_prev=None if i == 0 else cache))
            cache = torch.cat([cache, chunk], dim=2)[:, :, -2:]    # the last P input frames so far
            start += length
        chunked = torch.cat(parts, dim=2)
        self.assertEqual(chunked.shape, whole.shape)
        diff = (chunked.double() - whole.double()).abs()
        self.assertTrue(torch.equal(chunked, whole),
                        f"{arch}: chunked differs from whole in {int((diff > 0).sum())} elements "
                        f"(max {float(diff.max()):.3e})")

    def test_causal_chunks_gfx950(self):
        self.stream("gfx950")

    def test_causal_chunks_gfx942(self):
        self.stream("gfx942")


if __name__ == "__main__":
    unittest.main()
