"""Gradients through convjit on both emulated arches (EMULATED: no time
here is a GPU time), against torch.autograd.grad of the float64 conv on the
same bf16 values, each held to the bound of cjgrad.py (the reduction
length of each gradient enters it):
- ops.conv: dx (backward data), dw and db (backward weight), dz; 1D/2D/3D,
  strides, dilation, asymmetric (causal) padding, groups, channels-last,
  unbatched, the fused epilogue (bias, residual, relu fused; silu and
  gelu_tanh in torch), the fused upsample; bf16 and f16;
- ops.conv_transpose: d input (a forward conv), d weight (backward weight),
  d bias, output_padding, groups, channels-last;
- patched torch.nn.Conv3d and ConvTranspose3d modules;
- fp8 forward, bf16 backward (straight through the quantization);
- only what needs_input_grad asks is computed (the launch counters);
- the same gradient bits on a second backward (deterministic reduction);
- refusals: x_prev and out= under grad, double backward;
- a training loop: an optimizer step changing w in place re-packs it.
What needs torch >= 2.4 (custom ops, torch.compile, float8 dtypes) is
test_torch2.py."""

import copy
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cjtest as cj  # noqa: E402
import cjgrad as cg  # noqa: E402

import torch  # noqa: E402

import convjit  # noqa: E402
import convjit.nn as cnn  # noqa: E402
from convjit import _runtime, ops  # noqa: E402

setUpModule = cj.quiet
BF16 = torch.bfloat16


def tearDownModule():
    convjit.set_emulator_arch(None)
    cj.report("test_autograd")


def launches():
    c = _runtime.counters
    return c["calls"], c["bwd_data_calls"], c["bwd_weight_calls"]


class Bounds(unittest.TestCase):
    def test_second_derivative_bounds(self):
        """cjgrad.A2 bounds |act''| of silu and gelu_tanh: float64 autograd
        on a dense grid (both peak at t = 0: 0.5 and 0.798)."""
        t = torch.linspace(-40, 40, 160001, dtype=torch.float64, requires_grad=True)
        for name, a2 in cg.A2.items():
            (d1,) = torch.autograd.grad(cj.ACT64[name](t).sum(), t, create_graph=True)
            (d2,) = torch.autograd.grad(d1.sum(), t)
            self.assertLess(float(d2.abs().max()), a2, name)
            self.assertGreater(float(d2.abs().max()), a2 - 0.06, f"{name}: A2 within 0.06 of the peak")


class _Cases:
    ARCH = None

    def setUp(self):
        convjit.set_emulator_arch(self.ARCH)

    # ---- ops.conv ---------------------------------------------------------
    def conv_case(self, label, xshape, wshape, *, stride=1, pad_lo=0, pad_hi=None, dilation=1, groups=1,
                  bias=True, residual=False, act=None, upsample=None, channels_last=False, unbatched=False,
                  beta=1.0, seed=0, dtype=BF16, out_dtype=None):
        """Runs ops.conv forward and backward with x, w, bias, residual all
        requiring grad (dtype: bf16 or f16) and checks each gradient against
        float64 autograd."""
        g = cj.gen(seed)
        x = cj.randn_bf16(xshape, g, dtype=dtype)
        w = cj.weight_bf16(wshape, g, dtype=dtype)
        b = cj.randn_bf16((wshape[0],), g, dtype=dtype) if bias else None
        rank = w.dim() - 2
        if channels_last:
            x = x.contiguous(memory_format={5: torch.channels_last_3d, 4: torch.channels_last}[x.dim()])
        f = cg.conv_fn(rank, stride, pad_lo, pad_hi, dilation, groups, upsample)
        xb = x.unsqueeze(0) if unbatched else x
        t64 = f(xb.double(), w.double())
        z = cj.randn_bf16(tuple(t64.shape), g, dtype=dtype) if residual else None
        dy = cj.randn_bf16(tuple(t64.shape), g, dtype=dtype)
        mag_t = f(xb.double().abs(), w.double().abs())
        if b is not None:
            t64 = t64 + b.double().view((1, -1) + (1,) * rank)
            mag_t = mag_t + b.double().abs().view((1, -1) + (1,) * rank)
        if z is not None:
            t64, mag_t = t64 + beta * z.double(), mag_t + abs(beta) * z.double().abs()
        products = math.prod(w.shape[1:])
        bt = cj.bound(t64, mag_t, products + 2, y_dtype=dtype)   # the forward's bound on the pre-activation t

        # float64 reference gradients
        leaves = [x.double().requires_grad_(), w.double().requires_grad_()]
        leaves += [b.double().requires_grad_()] if b is not None else []
        leaves += [z.double().requires_grad_()] if z is not None else []

        def ref_fn(xx, ww, *rest):
            t = f(xx.unsqueeze(0) if unbatched else xx, ww)
            i = 0
            if b is not None:
                t = t + rest[i].view((1, -1) + (1,) * rank)
                i += 1
            if z is not None:
                t = t + beta * rest[i]
            return cj.ACT64[act](t).squeeze(0) if unbatched else cj.ACT64[act](t)
        y64 = ref_fn(*leaves)
        refs = torch.autograd.grad(y64, leaves, dy.double().squeeze(0) if unbatched else dy.double())

        # convjit
        ins = [x.clone().requires_grad_(), w.clone().requires_grad_()]
        ins += [b.clone().requires_grad_()] if b is not None else []
        ins += [z.clone().requires_grad_()] if z is not None else []
        y = ops.conv(ins[0], ins[1], ins[2] if b is not None else None, stride, pad_lo, dilation, groups,
                     padding_hi=pad_hi, residual=ins[-1] if z is not None else None, act=act, beta=beta,
                     upsample=upsample, out_dtype=out_dtype)
        self.assertIsNotNone(y.grad_fn, f"{label}: y has a grad_fn")
        self.assertEqual(y.dtype, out_dtype or dtype, f"{label}: y's dtype")
        # an fp32 y's gradient is rounded to the conv's dtype: dy holds values of that dtype, so exactly
        got = torch.autograd.grad(y, ins, (dy.squeeze(0) if unbatched else dy).to(y.dtype))

        if act in cg.A2:
            self.assertLess(float(t64.abs().max()), 16.0, "cjgrad's EVAL term holds for |t| < 16")
        delta = cg.act_delta(act, t64, bt, dy, dtype)
        dt64 = dy.double() * (t64 > 0) if act == "relu" else None
        if dt64 is None:
            t = t64.detach().clone().requires_grad_()
            (dt64,) = torch.autograd.grad(cj.ACT64[act](t), t, dy.double())
        adt = dt64.abs() + delta
        fx = (lambda xx, ww: f(xx.unsqueeze(0), ww).squeeze(0)) if unbatched else f
        xa, wa = x.double().abs(), w.double().abs()
        sq = (lambda v: v.squeeze(0)) if unbatched else (lambda v: v)
        # dx: each sums at most K/groups * taps products
        n_dx = (w.shape[0] // groups) * math.prod(w.shape[2:])
        if upsample is None:
            mx = lambda v: cg.vjp(fx, [x, wa], 0, sq(v))   # noqa: E731
            bx = cg.bound(refs[0], mx(adt), mx(delta), n_dx, dtype)
        else:   # per copy of the upsampled x, then the copies' sum (cjgrad.pooled_bound)
            up = upsample if isinstance(upsample, tuple) else (upsample,) * rank
            fn = cg.conv_fn(rank, stride, pad_lo, pad_hi, dilation, groups)
            xu = xb.double()
            for i, u in enumerate(up):
                xu = xu.repeat_interleave(u, dim=2 + i)
            child = cg.vjp(fn, [xu, w], 0, dt64)
            mc = lambda v: cg.vjp(fn, [xu, wa], 0, v)   # noqa: E731
            bx = cg.pooled_bound(refs[0], child, cg.bound(child, mc(adt), mc(delta), n_dx, dtype), up, dtype)
        cj.check(self, got[0], refs[0], bx, f"{self.ARCH} {label} dx", dtype)
        # dw and db: sums over the N * output positions
        n_dw = cg.positions(t64)
        mw = lambda v: cg.vjp(fx, [xa, w], 1, sq(v))   # noqa: E731
        bw = cg.bound(refs[1], mw(adt), mw(delta), n_dw, dtype)
        cj.check(self, got[1], refs[1], bw, f"{self.ARCH} {label} dw", dtype)
        if upsample is None:   # the bounds are tight enough to see one missing term of a reduction
            one = torch.zeros_like(dt64)
            one.view(-1)[int(dt64.abs().argmax())] = 1.0
            for name, i, m, b_ in (("dw", 1, lambda v: cg.vjp(fx, [x, w], 1, sq(v)), bw),
                                   ("dx", 0, lambda v: cg.vjp(fx, [x, w], 0, sq(v)), bx)):
                dropped = refs[i] - m(dt64 * one)   # the gradient without one output position's terms
                self.assertTrue(bool(((dropped - refs[i]).abs() > b_).any()),
                                f"{label}: a {name} missing one output position's terms would pass the bound")
        i = 2
        if b is not None:
            dims = (0,) + tuple(range(2, adt.dim()))
            cj.check(self, got[i], refs[i], cg.bound(refs[i], adt.sum(dims), delta.sum(dims), n_dw, b.dtype),
                     f"{self.ARCH} {label} db", dtype)
            i += 1
        if z is not None:   # dz = beta dt: dt's own error, one rounding when beta != 1
            zb = delta * abs(beta) + (0.0 if beta == 1.0 else cj.Y_REL[dtype] * abs(beta) * adt)
            cj.check(self, got[i], refs[i], zb + cj.Y_ABS[dtype], f"{self.ARCH} {label} dz", dtype)
        if channels_last:
            self.assertTrue(got[0].is_contiguous(memory_format={5: torch.channels_last_3d,
                                                                4: torch.channels_last}[x.dim()]),
                            f"{label}: dx keeps x's layout")
        return got

    def test_conv3d_stride_bias(self):
        self.conv_case("3d s(1,2,2) k3 p1 bias", (2, 16, 3, 5, 6), (24, 16, 3, 3, 3), stride=(1, 2, 2), pad_lo=1)
        self.conv_case("3d k3 p1 bias, y fp32", (1, 16, 2, 4, 5), (16, 16, 3, 3, 3), pad_lo=1,
                       out_dtype=torch.float32, seed=16)

    def test_conv2d_groups_dilation_channels_last_relu_residual(self):
        self.conv_case("2d g2 d2 channels_last relu residual", (1, 32, 7, 6), (16, 16, 3, 3), pad_lo=2,
                       dilation=2, groups=2, act="relu", residual=True, channels_last=True, seed=1)

    def test_conv2d_four_channels_per_group(self):
        # ResNeXt's 4 channels per group (the direct family): dx, dw, db vs float64
        self.conv_case("2d 4 per group s2 relu", (2, 16, 7, 6), (16, 4, 3, 3), stride=2, pad_lo=1, groups=4,
                       act="relu", seed=5)
        self.conv_case("2d 4 per group channels_last residual", (1, 32, 5, 6), (32, 4, 3, 3), pad_lo=1, groups=8,
                       residual=True, channels_last=True, seed=6)

    def test_mamba_causal_conv1d(self):
        # a Mamba block's short causal depthwise conv1d (k = 4, padding (3,)/(0,), groups = C, silu): the
        # direct family, forward and dx, dw, db against float64 autograd
        self.conv_case("mamba causal conv1d k4 depthwise silu", (2, 64, 40), (64, 1, 4), pad_lo=3, pad_hi=0,
                       groups=64, act="silu", seed=7)
        # streaming inference: the sequence in chunks, each after the first with x_prev = the previous
        # chunk's last 3 frames, equals the unsplit conv bit for bit (same taps, same order, same values)
        g = cj.gen(8)
        x, w, b = cj.randn_bf16((1, 64, 40), g), cj.weight_bf16((64, 1, 4), g), cj.randn_bf16((64,), g)
        conv = lambda xx, prev=None: convjit.ops.conv(xx, w, b, padding=(3,), padding_hi=(0,), groups=64,  # noqa
                                                      x_prev=prev)
        with torch.no_grad():
            whole = conv(x)
            parts, f0 = [], 0
            for n in (16, 9, 15):
                parts.append(conv(x[:, :, f0:f0 + n].contiguous(),
                                  x[:, :, f0 - 3:f0].contiguous() if f0 else None))
                f0 += n
        self.assertTrue(torch.equal(torch.cat(parts, dim=2), whole), "chunked with x_prev == unsplit")
        ref, mag = cj.conv64(x, w, b, padding=3, groups=64, padding_hi=0)
        cj.check(self, whole, ref, cj.bound(ref, mag, cj.products(w) + 1), "mamba conv1d forward")

    def test_conv1d_causal_silu_unbatched(self):
        self.conv_case("1d causal silu unbatched", (16, 11), (16, 16, 3), pad_lo=2, pad_hi=0, act="silu",
                       unbatched=True, bias=False, seed=2)

    def test_upsample(self):
        self.conv_case("3d up(1,2,2) gelu_tanh residual beta 0.5", (1, 16, 2, 3, 4), (16, 16, 3, 3, 3), pad_lo=1,
                       upsample=(1, 2, 2), act="gelu_tanh", residual=True, beta=0.5, seed=3)
        self.conv_case("2d up2 s2 bias", (2, 16, 5, 4), (16, 16, 3, 3), stride=2, pad_lo=1, upsample=2, seed=13)

    # ---- ops.conv_transpose -------------------------------------------------
    def transpose_case(self, label, xshape, wshape, *, stride=1, padding=0, output_padding=0, groups=1,
                       dilation=1, act=None, channels_last=False, seed=0, dtype=BF16):
        g = cj.gen(seed)
        x = cj.randn_bf16(xshape, g, dtype=dtype)
        w = cj.weight_bf16(wshape, g, dtype=dtype)
        b = cj.randn_bf16((wshape[1] * groups,), g, dtype=dtype)
        rank = w.dim() - 2
        if channels_last:
            x = x.contiguous(memory_format={5: torch.channels_last_3d, 4: torch.channels_last}[x.dim()])
        f = cg.conv_transpose_fn(rank, stride, padding, output_padding, groups, dilation)
        view = (1, -1) + (1,) * rank
        t64 = f(x.double(), w.double()) + b.double().view(view)
        mag_t = f(x.double().abs(), w.double().abs()) + b.double().abs().view(view)
        bt = cj.bound(t64, mag_t, (w.shape[0] // groups) * math.prod(w.shape[2:]) + 1, y_dtype=dtype)
        dy = cj.randn_bf16(tuple(t64.shape), g, dtype=dtype)
        leaves = [x.double().requires_grad_(), w.double().requires_grad_(), b.double().requires_grad_()]
        refs = torch.autograd.grad(cj.ACT64[act](f(leaves[0], leaves[1]) + leaves[2].view(view)), leaves,
                                   dy.double())
        ins = [x.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()]
        y = ops.conv_transpose(ins[0], ins[1], ins[2], stride, padding, output_padding, groups, dilation, act=act)
        got = torch.autograd.grad(y, ins, dy)
        delta = cg.act_delta(act, t64, bt, dy, dtype)
        dt64 = dy.double() * (t64 > 0) if act == "relu" else dy.double()
        adt = dt64.abs() + delta
        xa, wa = x.double().abs(), w.double().abs()
        # d input: a forward conv, C_out/groups * taps products each
        n_dx = (w.shape[1]) * math.prod(w.shape[2:])
        mx = lambda v: cg.vjp(f, [x, wa], 0, v)   # noqa: E731
        cj.check(self, got[0], refs[0], cg.bound(refs[0], mx(adt), mx(delta), n_dx, dtype), f"{self.ARCH} {label} dx",
                 dtype)
        # d weight: the sum over N * the input's positions (the forward conv's outputs)
        mw = lambda v: cg.vjp(f, [xa, w], 1, v)   # noqa: E731
        cj.check(self, got[1], refs[1], cg.bound(refs[1], mw(adt), mw(delta), cg.positions(x), dtype),
                 f"{self.ARCH} {label} dw", dtype)
        dims = (0,) + tuple(range(2, adt.dim()))
        cj.check(self, got[2], refs[2], cg.bound(refs[2], adt.sum(dims), delta.sum(dims), cg.positions(t64), dtype),
                 f"{self.ARCH} {label} db", dtype)

    def test_conv_transpose3d_stride_output_padding(self):
        self.transpose_case("ct3d s2 k(1,3,3) p(0,1,1) op1", (1, 16, 2, 3, 3), (16, 8, 1, 3, 3), stride=(1, 2, 2),
                            padding=(0, 1, 1), output_padding=(0, 1, 1))

    def test_conv_transpose2d_groups_channels_last_relu(self):
        self.transpose_case("ct2d s2 g2 channels_last relu", (1, 32, 4, 3), (32, 8, 4, 4), stride=2, padding=1,
                            groups=2, act="relu", channels_last=True, seed=4)

    def test_float16(self):
        """torch.float16 end to end: dx, dw in f16 (2^-11 rounding), db and
        d residual in f16."""
        self.conv_case("f16 3d s(1,2,2) relu residual", (2, 16, 3, 5, 6), (16, 16, 3, 3, 3), stride=(1, 2, 2),
                       pad_lo=1, act="relu", residual=True, seed=14, dtype=torch.float16)
        self.transpose_case("f16 ct2d s2 op1", (1, 16, 3, 4), (16, 16, 3, 3), stride=2, padding=1, output_padding=1,
                            seed=15, dtype=torch.float16)

    # ---- patched modules ----------------------------------------------------
    def test_patched_conv3d_and_conv_transpose3d(self):
        """A patched nn.Conv3d and nn.ConvTranspose3d: the parameters' .grad
        after backward() and the input's gradient, vs the float64 module."""
        torch.manual_seed(5)
        for label, mod, xshape in (
                ("nn.Conv3d k3 p1", torch.nn.Conv3d(16, 16, 3, padding=1), (1, 16, 3, 4, 4)),
                ("nn.ConvTranspose3d k(1,2,2) s(1,2,2)", torch.nn.ConvTranspose3d(16, 16, (1, 2, 2), stride=(1, 2, 2)),
                 (1, 16, 2, 3, 3))):
            with self.subTest(label=label):
                m = mod.to(BF16)
                ref = copy.deepcopy(m).double()
                res = cnn.patch(m)
                self.assertEqual(res.swapped, [""], res)
                g = cj.gen(6)
                x = cj.randn_bf16(xshape, g)
                xr = x.double().requires_grad_()
                xc = x.clone().requires_grad_()
                y64 = ref(xr)
                dy = cj.randn_bf16(tuple(y64.shape), g)
                (y64.double() * dy.double()).sum().backward()
                (m(xc).float() * dy.float()).sum().backward()   # dy exact in fp32: the module's dy is dy
                w = m.weight.detach()
                rank = 3
                if isinstance(m, cnn.ConvTranspose3d):
                    f = cg.conv_transpose_fn(rank, m.stride, m.padding, m.output_padding, m.groups, m.dilation)
                    n_dx, n_dw = w.shape[1] * math.prod(w.shape[2:]), cg.positions(x)
                else:
                    f = cg.conv_fn(rank, m.stride, m.padding, None, m.dilation, m.groups)
                    n_dx, n_dw = (w.shape[0] // m.groups) * math.prod(w.shape[2:]), cg.positions(y64)
                adt = dy.double().abs()
                mx = cg.vjp(f, [x, w.double().abs()], 0, adt)
                mw = cg.vjp(f, [x.double().abs(), w], 1, adt)
                cj.check(self, xc.grad, xr.grad, cg.bound(xr.grad, mx, 0.0, n_dx, BF16),
                         f"{self.ARCH} {label} input.grad")
                cj.check(self, m.weight.grad, ref.weight.grad, cg.bound(ref.weight.grad, mw, 0.0, n_dw, BF16),
                         f"{self.ARCH} {label} weight.grad")
                db_mag = adt.sum((0, 2, 3, 4))
                cj.check(self, m.bias.grad, ref.bias.grad, cg.bound(ref.bias.grad, db_mag, 0.0, cg.positions(y64),
                                                                    BF16), f"{self.ARCH} {label} bias.grad")

    # ---- what is computed -----------------------------------------------------
    def test_needs_input_grad_skips_work(self):
        """Only the gradients asked for are computed: counted launches of
        each kind (the binding's counters)."""
        g = cj.gen(7)
        x0 = cj.randn_bf16((1, 16, 2, 4, 4), g)
        w0 = cj.weight_bf16((16, 16, 3, 3, 3), g)
        b0 = cj.randn_bf16((16,), g)
        for want, expect in ((("x",), (1, 1, 0)), (("w",), (1, 0, 1)), (("b",), (1, 0, 0)),
                             (("x", "w", "b"), (1, 1, 1))):
            with self.subTest(want=want):
                x, w, b = (t.clone().requires_grad_(n in want) for n, t in (("x", x0), ("w", w0), ("b", b0)))
                before = launches()
                y = ops.conv(x, w, b, padding=1)
                y.backward(torch.ones_like(y))
                got = tuple(a - c for a, c in zip(launches(), before))
                self.assertEqual(got, expect, f"requires_grad {want}: (forward, backward-data, backward-weight) "
                                              f"launches")
                for n, t in (("x", x), ("w", w), ("b", b)):
                    self.assertEqual(t.grad is not None, n in want, f"{n}.grad")

    def test_backward_is_deterministic(self):
        """Two backward passes of one forward give the same bits (the
        backward-weight reduction's fixed order)."""
        g = cj.gen(8)
        x = cj.randn_bf16((2, 16, 3, 4, 5), g).requires_grad_()
        w = cj.weight_bf16((32, 16, 3, 3, 3), g).requires_grad_()
        b = cj.randn_bf16((32,), g).requires_grad_()
        y = ops.conv(x, w, b, padding=1)
        dy = cj.randn_bf16(tuple(y.shape), g)
        first = torch.autograd.grad(y, (x, w, b), dy, retain_graph=True)
        second = torch.autograd.grad(y, (x, w, b), dy)
        for name, a, c in zip(("dx", "dw", "db"), first, second):
            self.assertTrue(torch.equal(a, c), f"{name} differs between two backward passes")

    # ---- refusals ---------------------------------------------------------------
    def test_refusals(self):
        g = cj.gen(9)
        x = cj.randn_bf16((1, 16, 2, 4, 4), g).requires_grad_()
        w = cj.weight_bf16((16, 16, 3, 3, 3), g)
        prev = cj.randn_bf16((1, 16, 2, 4, 4), g)
        with self.assertRaisesRegex(ValueError, r"x_prev with an input that requires grad: causal streaming is "
                                                r"forward only"):
            ops.conv(x, w, padding=(2, 1, 1), padding_hi=(0, 1, 1), x_prev=prev)
        with torch.no_grad():   # the same call without grad streams as before
            self.assertEqual(ops.conv(x, w, padding=(2, 1, 1), padding_hi=(0, 1, 1), x_prev=prev).shape,
                             (1, 16, 2, 4, 4))
        with self.assertRaisesRegex(ValueError, r"out= with an input that requires grad"):
            ops.conv(x, w, padding=1, out=torch.empty(1, 16, 2, 4, 4, dtype=BF16))
        wg = w.clone().requires_grad_()
        y = ops.conv(x, wg, padding=1)
        (gx,) = torch.autograd.grad(y.float().square().sum(), x, create_graph=True)
        with self.assertRaisesRegex(RuntimeError, r"convjit: double backward .* is not supported"):
            gx.float().sum().backward()

    # ---- fp8 forward, bf16 backward -----------------------------------------
    def test_fp8_straight_through(self):
        """An fp8 conv's backward is bf16 on the dequantized operands, the
        quantization passed straight through: dx of a bf16 x beside fp8 w
        codes (per-channel scales) is the float64 gradient of conv(x,
        decode(w) * w_scale); dw of a bf16 w beside fp8 x codes that of
        conv(decode(x) * x_scale, w)."""
        fmt = "fp8_e4m3fn"
        g = cj.gen(10)
        x = cj.randn_bf16((1, 16, 2, 4, 4), g)
        codes_w = cj.fp8_random_codes((16, 16, 3, 3, 3), g, fmt, max_exp_code=7)
        ws = torch.rand(16, generator=g, dtype=torch.float64).float() * 0.05 + 0.01
        f = cg.conv_fn(3, 1, 1)
        w64 = cj.fp8_decode(codes_w, fmt) * ws.double().view(-1, 1, 1, 1, 1)
        dy = cj.randn_bf16((1, 16, 2, 4, 4), g)
        ref = cg.vjp(f, [x, w64], 0, dy.double())
        xg = x.clone().requires_grad_()
        y = ops.conv(xg, codes_w, None, 1, 1, dtype=fmt, x_scale=0.5, w_scale=ws)
        (got,) = torch.autograd.grad(y, xg, dy)
        # dt * w_scale rounds to bf16 once (2^-8 |dt ws|), then the usual sum of exact products
        sdy = (dy.double() * ws.double().view(1, -1, 1, 1, 1)).abs()
        wa = cj.fp8_decode(codes_w, fmt).abs()
        m = cg.vjp(f, [x, wa], 0, sdy * (1 + cj.BF16_REL))
        md = cg.vjp(f, [x, wa], 0, sdy * cj.BF16_REL)
        cj.check(self, got, ref, cg.bound(ref, m, md, 16 * 27, BF16), f"{self.ARCH} fp8 w: dx")

        codes_x = cj.fp8_random_codes((1, 16, 2, 4, 4), g, fmt, max_exp_code=9)
        w = cj.weight_bf16((16, 16, 3, 3, 3), g)
        xs = 0.25
        x64 = cj.fp8_decode(codes_x, fmt) * xs
        ref = cg.vjp(f, [x64, w], 1, dy.double())
        wg = w.clone().requires_grad_()
        y = ops.conv(codes_x, wg, None, 1, 1, dtype=fmt, x_scale=xs, w_scale=0.125)
        (got,) = torch.autograd.grad(y, wg, dy)
        # dw in fp32 (exact products of decoded x and dt), times x_scale (exact: a power of 2), one rounding
        m = cg.vjp(f, [x64.abs(), w], 1, dy.double().abs())
        cj.check(self, got, ref, cg.bound(ref, m, 0.0, cg.positions(dy), BF16), f"{self.ARCH} fp8 x: dw")

    # ---- training -------------------------------------------------------------
    def test_training_loop_repacks_after_step(self):
        """SGD steps on a patched conv: each step changes w in place, so the
        next forward and backward pack it again (w._version); a forward
        without a step reuses the packs; the output after a step is the
        conv of the new w (within the forward's bound)."""
        torch.manual_seed(11)
        m = torch.nn.Conv3d(16, 16, 3, padding=1).to(BF16)
        cnn.patch(m)
        opt = torch.optim.SGD(m.parameters(), lr=0.05)
        g = cj.gen(11)
        # x requires grad (as every layer's input but the first's), so backward data runs and packs w too
        x = cj.randn_bf16((1, 16, 2, 4, 4), g).requires_grad_()
        target = cj.randn_bf16((1, 16, 2, 4, 4), g)
        c = _runtime.counters
        for step in range(3):
            packs0 = c["packs"]
            opt.zero_grad()
            loss = (m(x).float() - target.float()).square().mean()
            loss.backward()
            # step 0 packs for the forward and for backward data; after a step both again
            self.assertEqual(c["packs"] - packs0, 2, f"step {step}: packs of this forward + backward")
            v0 = m.weight._version
            opt.step()
            self.assertGreater(m.weight._version, v0, "the optimizer updates w in place")
        packs0 = c["packs"]
        with torch.no_grad():
            y = m(x)
            m(x)
        self.assertEqual(c["packs"] - packs0, 1, "a step's new w is packed once, then reused")
        ref, mag = cj.conv64(x.detach(), m.weight.detach(), m.bias.detach(), padding=1)
        cj.check(self, y, ref, cj.bound(ref, mag, 16 * 27 + 1), f"{self.ARCH} forward after 3 steps")

class Gfx942(_Cases, unittest.TestCase):
    ARCH = "gfx942"


class Gfx950(_Cases, unittest.TestCase):
    ARCH = "gfx950"


if __name__ == "__main__":
    unittest.main()
