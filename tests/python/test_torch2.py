"""What the binding does only with a modern torch (>= 2.4; Debian's 1.13,
what CI runs, skips this file with the reason; the lent machine's torch
2.11 runs it, docs/python.md "Autograd"), on both emulated arches (EMULATED):
- the torch.library custom ops: torch.library.opcheck of convjit::conv and
  convjit::conv_transpose (schema, fake function, autograd registration,
  the fake function's strides against the real output's);
- torch.compile of a patched block: torch._dynamo.explain finds no graph
  break, and fullgraph=True forward and backward give the eager run's bits;
- an fp8 tensor (torch.float8_e4m3fn) requiring grad is refused;
- torch.float8_e4m3fn weights in a conv under grad: dx through them, the
  quantization passed straight through;
- the operator route under torch.compile: an unpatched block of torch's
  own Conv3d and ConvTranspose3d, compiled with fullgraph=True under
  convjit.enable(), runs convjit's kernels forward and backward (the
  routing report counts them) with the eager routed run's bits, and no
  graph break."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cjtest as cj  # noqa: E402
import cjgrad as cg  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import convjit  # noqa: E402
import convjit.nn as cnn  # noqa: E402
from convjit import _grad, _library, ops  # noqa: E402

BF16 = torch.bfloat16


def setUpModule():
    if not _library.AVAILABLE or not hasattr(torch, "float8_e4m3fn"):
        raise unittest.SkipTest(f"SKIP: torch {torch.__version__} has no torch.library.custom_op (torch >= 2.4): "
                                "the autograd.Function path runs instead (test_autograd covers it)")
    cj.quiet()


def tearDownModule():
    convjit.set_emulator_arch(None)
    cj.report("test_torch2")


class _Cases:
    ARCH = None

    def setUp(self):
        convjit.set_emulator_arch(self.ARCH)

    def test_custom_ops_and_compile(self):
        g = cj.gen(12)
        x = cj.randn_bf16((1, 16, 2, 4, 4), g).requires_grad_()
        w = cj.weight_bf16((16, 16, 3, 3, 3), g).requires_grad_()
        b = cj.randn_bf16((16,), g).requires_grad_()
        geom = _library.geom_args(_grad.Geom((1, 1, 1), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1, (1, 1, 1),
                                                     "relu", 1.0, 0.0, 0.0, "", ""))
        torch.library.opcheck(torch.ops.convjit.conv.default, (x, w, b, None, None, None) + geom)
        ct = _library.geom_args(_grad.Geom((2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1, (1, 1, 1), "",
                                                   1.0, 0.0, 0.0, "", ""))
        wt = cj.weight_bf16((16, 16, 3, 3, 3), g).requires_grad_()
        torch.library.opcheck(torch.ops.convjit.conv_transpose.default, (x, wt, b, None, [1, 1, 1]) + ct)

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv3d(16, 16, 3, padding=1)
                self.up = torch.nn.ConvTranspose3d(16, 16, (1, 2, 2), stride=(1, 2, 2))

            def forward(self, x):
                return self.up(F.silu(self.conv(x)))
        torch.manual_seed(12)
        blk = Block().to(BF16)
        cnn.patch(blk)
        xe = x.detach().clone().requires_grad_()
        explain = torch._dynamo.explain(blk)(xe)
        self.assertEqual(explain.graph_break_count, 0, str(explain.break_reasons))
        # forward and backward compiled whole; relu fused (no torch op between the convs), so the compiled
        # graph runs the same convjit kernels on the same bits as eager: equal, not close
        blk.conv.act = "relu"
        blk.forward = lambda t: blk.up(blk.conv(t))
        comp = torch.compile(blk, fullgraph=True)
        ye = blk(xe)
        ye.float().sum().backward()
        eager = [xe.grad] + [p.grad.clone() for p in blk.parameters()]
        blk.zero_grad()
        xc = x.detach().clone().requires_grad_()
        yc = comp(xc)
        yc.float().sum().backward()
        compiled = [xc.grad] + [p.grad for p in blk.parameters()]
        self.assertTrue(torch.equal(yc, ye), "compiled forward vs eager")
        for name, a, c in zip(("x", "conv.weight", "conv.bias", "up.weight", "up.bias"), eager, compiled):
            self.assertTrue(torch.equal(a, c), f"compiled {name}.grad vs eager")

    def test_float8(self):
        """A torch.float8_e4m3fn weight: requiring grad is refused; beside a
        bf16 x that requires grad, dx is the float64 gradient of the conv
        with w's decoded values times w_scale (straight through)."""
        g = cj.gen(13)
        x = cj.randn_bf16((1, 16, 2, 4, 4), g)
        w8 = cj.weight_bf16((16, 16, 3, 3, 3), g).float().mul(4).to(torch.float8_e4m3fn)
        with self.assertRaisesRegex(TypeError, r"w is torch.float8_e4m3fn and requires grad"):
            ops.conv(x.clone().requires_grad_(), w8.clone().requires_grad_(), padding=1, w_scale=0.25)
        xg = x.clone().requires_grad_()
        y = ops.conv(xg, w8, None, 1, 1, x_scale=0.5, w_scale=0.25)
        dy = cj.randn_bf16(tuple(y.shape), g)
        (got,) = torch.autograd.grad(y, xg, dy)
        f = cg.conv_fn(3, 1, 1)
        w64 = w8.double() * 0.25
        ref = cg.vjp(f, [x, w64], 0, dy.double())
        # dt * 0.25 is exact (a power of two), then the sum of exact products and one rounding
        m = cg.vjp(f, [x, w64.abs()], 0, dy.double().abs())
        cj.check(self, got, ref, cg.bound(ref, m, 0.0, 16 * 27, BF16), f"{self.ARCH} float8 w: dx")


    def test_route_compile(self):
        g = cj.gen(14)
        x = cj.randn_bf16((1, 16, 2, 4, 4), g)

        class Block(torch.nn.Module):   # no op between the convs: compiled and eager run the same aten calls
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv3d(16, 16, 3, padding=1)
                self.up = torch.nn.ConvTranspose3d(16, 16, (1, 2, 2), stride=(1, 2, 2))

            def forward(self, x):
                return self.up(self.conv(x))
        torch.manual_seed(14)
        blk = Block().to(BF16)
        torch._dynamo.reset()
        try:
            convjit.enable()
            explain = torch._dynamo.explain(blk)(x)
            self.assertEqual(explain.graph_break_count, 0, str(explain.break_reasons))
            runs = {}
            for name, fn in (("eager", blk), ("compiled", torch.compile(blk, fullgraph=True))):
                convjit.reset_routing_report()
                blk.zero_grad()
                xg = x.clone().requires_grad_()
                y = fn(xg)
                y.float().sum().backward()
                runs[name] = [y, xg.grad] + [p.grad.clone() for p in blk.parameters()]
                rows = convjit.routing_report()
                by_pass = {p: sum(r["convjit"] for r in rows if r["pass"] == p) for p in ("forward", "backward")}
                self.assertEqual(by_pass, {"forward": 2, "backward": 2}, f"{name}: {rows}")
                self.assertEqual(sum(r["torch"] for r in rows), 0, f"{name}: {rows}")
        finally:
            convjit.disable()
        for what, a, c in zip(("y", "x.grad", "conv.weight", "conv.bias", "up.weight", "up.bias"), runs["eager"],
                              runs["compiled"]):
            self.assertTrue(torch.equal(a, c), f"compiled {what} vs eager, both routed")


class Gfx942(_Cases, unittest.TestCase):
    ARCH = "gfx942"


class Gfx950(_Cases, unittest.TestCase):
    ARCH = "gfx950"


if __name__ == "__main__":
    unittest.main()
