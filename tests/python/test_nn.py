"""convjit.nn: Conv1d/2d/3d against the torch modules run in float64 on
the same bf16 values (bound: cjtest.bound, as in test_ops), state_dict
round trips, padding modes, patch() on a small model (subclasses too: one
without a forward of its own, as torchvision's Conv3DSimple, one with its
own, as a causal conv that concatenates cached frames and pads before
calling Conv3d.forward), and the forward extras (residual=, x_prev=, act)
of convjit.nn.Conv3d. EMULATED."""

import copy
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cjtest as cj  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import convjit  # noqa: E402
import convjit.nn as cnn  # noqa: E402

setUpModule = cj.quiet
BF16 = torch.bfloat16


def tearDownModule():
    cj.report("test_nn")


def ref_of_module(m, x):
    """(ref, mag) of torch module m on x: ref = m run in float64 (a copy,
    so m keeps its dtype; padding modes included), mag = the same conv of
    |padded x| and |w| plus |bias|."""
    m64 = copy.deepcopy(m).double()
    with torch.no_grad():
        ref = m64(x.double())
        xp = x.double()
        if m.padding_mode != "zeros":
            xp = F.pad(xp, m._reversed_padding_repeated_twice, mode=m.padding_mode)
            pad = 0
        else:
            pad = m.padding
        conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[m.weight.dim() - 2]
        mag = conv(xp.abs(), m64.weight.abs(), None, m.stride, pad, m.dilation, m.groups)
        if m.bias is not None:
            mag = mag + m64.bias.abs().view((1, -1) + (1,) * (m.weight.dim() - 2))
    return ref, mag


def seed_params(m, seed):
    """Parameters with bf16-exact random values (torch's init, re-drawn from a fixed generator)."""
    g = cj.gen(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(cj.weight_bf16(tuple(m.weight.shape), g).reshape(-1)[:p.numel()].reshape(p.shape)
                    if p is m.weight else cj.randn_bf16(tuple(p.shape), g))
    return m


class TestModules(unittest.TestCase):
    RANKS = {1: (torch.nn.Conv1d, cnn.Conv1d, (2, 16, 8)),
             2: (torch.nn.Conv2d, cnn.Conv2d, (2, 16, 7, 8)),
             3: (torch.nn.Conv3d, cnn.Conv3d, (1, 16, 4, 5, 6))}

    def test_forward_vs_torch(self):
        for rank, (tcls, ccls, xshape) in self.RANKS.items():
            with self.subTest(rank=rank):
                kw = dict(kernel_size=3, stride=(2,) + (1,) * (rank - 1), padding=1, dilation=1, bias=True,
                          dtype=BF16)
                tm = seed_params(tcls(16, 32, **kw), rank)
                cm = ccls(16, 32, **kw)
                cm.load_state_dict(tm.state_dict())
                self.assertIsInstance(cm, tcls)
                x = cj.randn_bf16(xshape, cj.gen(10 + rank))
                with torch.no_grad():
                    y = cm(x)
                ref, mag = ref_of_module(tm, x)
                cj.check(self, y, ref, cj.bound(ref, mag, cj.products(tm.weight) + 1), f"nn.Conv{rank}d")
                self.assertIn("backend=convjit", repr(cm))

    def test_state_dict_round_trip(self):
        for rank, (tcls, ccls, _) in self.RANKS.items():
            with self.subTest(rank=rank):
                tm = seed_params(tcls(16, 24, 3, padding=1, groups=2, dtype=BF16), rank)
                cm = ccls(16, 24, 3, padding=1, groups=2, dtype=BF16)
                cm.load_state_dict(tm.state_dict())
                sd_t, sd_c = tm.state_dict(), cm.state_dict()
                self.assertEqual(list(sd_t), list(sd_c))
                for k in sd_t:
                    self.assertTrue(torch.equal(sd_t[k], sd_c[k]), k)
                back = tcls(16, 24, 3, padding=1, groups=2, dtype=BF16)
                back.load_state_dict(sd_c)
                for k, v in back.state_dict().items():
                    self.assertTrue(torch.equal(v, sd_t[k]), k)

    def test_padding_modes(self):
        x = cj.randn_bf16((1, 16, 6, 7), cj.gen(20))
        for mode in ("reflect", "replicate", "circular"):
            with self.subTest(mode=mode):
                tm = seed_params(torch.nn.Conv2d(16, 16, 3, padding=(1, 2), padding_mode=mode, dtype=BF16), 21)
                cm = cnn.Conv2d(16, 16, 3, padding=(1, 2), padding_mode=mode, dtype=BF16)
                cm.load_state_dict(tm.state_dict())
                with torch.no_grad():
                    y = cm(x)
                ref, mag = ref_of_module(tm, x)
                cj.check(self, y, ref, cj.bound(ref, mag, cj.products(tm.weight) + 1), f"nn padding_mode={mode}")


class OwnForward(torch.nn.Conv3d):
    def forward(self, x):
        return super().forward(x) * 2


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv3d(8, 16, 3, padding=1, dtype=BF16),
            torch.nn.GroupNorm(4, 16, dtype=BF16),
            torch.nn.SiLU(),
            torch.nn.Conv3d(16, 8, 3, padding=1, dtype=BF16))
        self.extras = torch.nn.ModuleDict({
            "dw": torch.nn.Conv2d(16, 16, 3, padding=1, groups=16, dtype=BF16),
            "g4": torch.nn.Conv2d(16, 16, 3, padding=1, groups=4, dtype=BF16),
            "g12": torch.nn.Conv2d(48, 48, 3, padding=1, groups=4, dtype=BF16),
            "up": torch.nn.ConvTranspose3d(16, 16, 2, stride=2, dtype=BF16),
            "own": OwnForward(16, 16, 1, dtype=BF16),
            "f32": torch.nn.Conv1d(16, 16, 3)})

    def forward(self, x):
        return self.body(x)


class TestPatch(unittest.TestCase):
    def test_patch_model(self):
        torch.manual_seed(0)
        model = Model()   # torch's init, in bf16
        x = cj.randn_bf16((1, 8, 4, 6, 6), cj.gen(30))
        torch_model = copy.deepcopy(model)
        with torch.no_grad():
            y_torch = torch_model(x)
        ids = {n: id(p) for n, p in model.named_parameters()}
        mods = {n: id(m) for n, m in model.named_modules()}

        res = convjit.nn.patch(model)
        self.assertEqual(res.swapped, ["body.0", "body.3", "extras.dw", "extras.g4", "extras.up", "extras.own"])
        reasons = dict(res.skipped)   # only what convjit cannot run
        self.assertEqual(sorted(reasons), ["extras.f32", "extras.g12"])
        self.assertIn("multiple of 8", reasons["extras.g12"])    # convjit's validator's reason
        self.assertIsInstance(model.extras["up"], cnn.ConvTranspose3d)
        self.assertIn("torch.float32", reasons["extras.f32"])
        self.assertIsInstance(model.body[0], cnn.Conv3d)
        self.assertIsInstance(model.extras["dw"], cnn.Conv2d)    # depthwise: the direct family
        self.assertIsInstance(model.extras["g4"], cnn.Conv2d)    # 4 channels per group: the direct family too
        self.assertIs(type(model.extras["g12"]), torch.nn.Conv2d)
        # a subclass with its own forward: still an OwnForward (its forward runs), and a convjit conv
        own = model.extras["own"]
        self.assertIsInstance(own, OwnForward)
        self.assertIsInstance(own, cnn.Conv3d)
        self.assertIs(type(own).forward, OwnForward.forward)
        self.assertEqual({n: id(p) for n, p in model.named_parameters()}, ids, "parameters are the same objects")
        self.assertEqual({n: id(m) for n, m in model.named_modules()}, mods, "modules are the same objects")
        self.assertEqual(convjit.nn.patch(model).swapped, [], "a second patch swaps nothing")

        seen = {}
        hooks = [model.body[i].register_forward_hook(lambda m, inp, out, i=i: seen.__setitem__(i, (inp[0], out)))
                 for i in (0, 3)]
        with torch.no_grad():
            y = model(x)
        for h in hooks:
            h.remove()
        self.assertIs(y, seen[3][1])
        # each swapped conv against the float64 conv of the input it received: the model's output is
        # the last one's, so it is within the bound of a conv of its actual input
        for i in (0, 3):
            m, (inp, out) = torch_model.body[i], seen[i]
            ref, mag = ref_of_module(m, inp)
            cj.check(self, out, ref, cj.bound(ref, mag, cj.products(m.weight) + 1), f"patched body.{i}")
        # against the unpatched bf16 torch model (its own bf16 roundings in every layer): informational
        d = float((y.double() - y_torch.double()).abs().max())
        print(f"\npatched model vs torch bf16 model: max |diff| {d:.3e} (max |y| {float(y.abs().max()):.3e})",
              file=sys.stderr)
        self.assertEqual(y.shape, y_torch.shape)
        # the patched depthwise conv (the direct family) against float64 of its input
        dw, xd = model.extras["dw"], cj.randn_bf16((2, 16, 5, 6), cj.gen(32))
        with torch.no_grad():
            yd = dw(xd)
        ref, mag = ref_of_module(torch_model.extras["dw"], xd)
        # 9 exact bf16 products per output (one channel per group) + bias, fp32 sums, one bf16 rounding
        cj.check(self, yd, ref, cj.bound(ref, mag, cj.products(dw.weight) + 1), "patched extras.dw")
        # the patched 4-channels-per-group conv: 36 exact products per output + bias, one bf16 rounding
        g4 = model.extras["g4"]
        with torch.no_grad():
            yg = g4(xd)
        ref, mag = ref_of_module(torch_model.extras["g4"], xd)
        cj.check(self, yg, ref, cj.bound(ref, mag, cj.products(g4.weight) + 1), "patched extras.g4")
        # the subclass's own forward (x 2) around convjit's conv: twice the conv, exactly (a power of two)
        xo = cj.randn_bf16((1, 16, 2, 3, 3), cj.gen(31))
        with torch.no_grad():
            yo = own(xo)
            y1 = convjit.ops.conv(xo, own.weight, own.bias)
        self.assertTrue(torch.equal(yo, y1 * 2), "OwnForward.forward ran around convjit's conv")


class NoForward(torch.nn.Conv3d):   # torchvision's Conv3DSimple: a constructor only
    def __init__(self, cin, cout):
        super().__init__(cin, cout, (3, 3, 3), padding=(1, 1, 1), bias=False, dtype=BF16)


class Causal(torch.nn.Conv3d):   # a Wan-style causal conv: its forward pads, then Conv3d.forward
    def __init__(self, cin, cout):
        super().__init__(cin, cout, 3, padding=0, dtype=BF16)

    def forward(self, x, cache_x=None):
        if cache_x is not None:
            x = torch.cat([cache_x, x], dim=2)
        return super().forward(F.pad(x, (1, 1, 1, 1, 2 if cache_x is None else 0, 0)))


class TestPatchSubclasses(unittest.TestCase):
    def test_subclasses_keep_their_forward(self):
        torch.manual_seed(1)
        model = torch.nn.ModuleDict({"simple": NoForward(16, 16), "causal": Causal(16, 16)})
        res = convjit.nn.patch(model)
        self.assertEqual(sorted(res.swapped), ["causal", "simple"])
        self.assertEqual(res.skipped, [])
        simple, causal = model["simple"], model["causal"]
        self.assertIsInstance(simple, NoForward)
        self.assertIsInstance(simple, cnn.Conv3d)
        self.assertIs(type(causal).forward, Causal.forward, "the subclass's own forward is kept")
        self.assertEqual(type(causal).__name__, "Causal")
        g = cj.gen(33)
        x, cache = cj.randn_bf16((1, 16, 3, 5, 5), g), cj.randn_bf16((1, 16, 2, 5, 5), g)
        with torch.no_grad():
            y_simple = simple(x)
            y_causal = causal(x, cache)
        ref, mag = cj.conv64(x, simple.weight, None, 1, 1)
        # C*27 exact bf16 products summed in fp32, one bf16 rounding
        cj.check(self, y_simple, ref, cj.bound(ref, mag, cj.products(simple.weight)), "patched NoForward")
        xc = torch.cat([cache, x], dim=2)
        ref, mag = cj.conv64(xc, causal.weight, causal.bias, 1, (0, 1, 1))
        cj.check(self, y_causal, ref, cj.bound(ref, mag, cj.products(causal.weight) + 1), "patched Causal, cached")
        self.assertEqual(convjit.nn.patch(model).swapped, [], "a second patch swaps nothing")


class TestConv3dExtras(unittest.TestCase):
    def setUp(self):
        g = cj.gen(40)
        self.m = seed_params(cnn.Conv3d(16, 16, 3, padding=1, act="silu", dtype=BF16), 41)
        self.x = cj.randn_bf16((1, 16, 6, 5, 5), g)
        self.z = cj.randn_bf16((1, 16, 6, 5, 5), g)

    def ref(self, act, pad=1, pad_hi=None, residual=True):
        t, mag = cj.conv64(self.x, self.m.weight, self.m.bias, padding=pad, padding_hi=pad_hi)
        if residual:
            t, mag = t + self.z.double(), mag + self.z.double().abs()
        return cj.ACT64[act](t), mag

    def test_residual_and_act(self):
        with torch.no_grad():
            y = self.m(self.x, residual=self.z)              # the module's act: silu
            y_relu = self.m(self.x, residual=self.z, act="relu")
        n = cj.products(self.m.weight) + 3                    # products, bias, z and its add (test_epilogue)
        for act, got in (("silu", y), ("relu", y_relu)):
            ref, mag = self.ref(act)
            cj.check(self, got, ref, cj.bound(ref, mag, n, act=act), f"nn.Conv3d residual act={act}")

    def test_causal_chunks(self):
        """padding=(2,1,1), padding_hi=(0,1,1) per call, x_prev: chunks of
        2 and 4 frames equal the whole call bit for bit (with the residual
        and the module's silu fused)."""
        causal = dict(padding=(2, 1, 1), padding_hi=(0, 1, 1))
        with torch.no_grad():
            whole = self.m(self.x, residual=self.z, **causal)
            first = self.m(self.x[:, :, :2], residual=self.z[:, :, :2], **causal)
            second = self.m(self.x[:, :, 2:], residual=self.z[:, :, 2:], x_prev=self.x[:, :, :2], **causal)
        ref, mag = self.ref("silu", (2, 1, 1), (0, 1, 1))
        cj.check(self, whole, ref, cj.bound(ref, mag, cj.products(self.m.weight) + 3, act="silu"),
                 "nn.Conv3d causal whole")
        self.assertTrue(torch.equal(torch.cat([first, second], dim=2), whole))

    def test_padding_mode_refuses_per_call_padding(self):
        m = cnn.Conv3d(16, 16, 3, padding=1, padding_mode="replicate", dtype=BF16)
        with self.assertRaises(ValueError) as cm:
            m(self.x, x_prev=self.x[:, :, :2])
        self.assertIn("padding_mode='replicate'", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
