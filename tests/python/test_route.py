"""The operator route (convjit.enable / disable / enabled, docs/python.md
"Routing torch's convolutions"): torch's own F.conv*d and
F.conv_transpose*d, unmodified, through convjit, on the emulator.

- routed: every parameter kind of F.conv1d/2d/3d (stride, padding as ints,
  'same' and 'valid', dilation, groups with 8 channels per group,
  depthwise (channel multiplier 1 and 2, 1D-3D), bias None, channels-last and non-contiguous inputs, unbatched) and of
  F.conv_transpose1d/2d/3d (stride, padding, output_padding, dilation,
  groups), float16 too: each result within convjit's derived bound of the
  float64 conv (cjtest.bound), and the routing report says convjit ran it;
- fallen back, each with its reason in the report and a result (or an
  error) bit for bit torch's: float32, float64, depthwise with a channel
  multiplier of 9, 4 channels per
  group, a float32 bias beside bf16, a double backward;
- autograd through the route against float64 (cjgrad.bound): dx, dw, db of
  a conv and a transposed conv; output_mask honoured (only the asked
  gradients' kernels launch);
- disable() gives torch's bits again; enabled() nests and is per thread
  (two threads, one routed and one not); the policy hook; CONVJIT_LOG=route
  logs each new decision once, and the C library takes its level words
  from the same comma-separated list.
EMULATED: no time here is a GPU time.
"""

import os
import sys
import threading
import unittest
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cjtest as cj  # noqa: E402
import cjgrad as cg  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import convjit  # noqa: E402
from convjit import _runtime  # noqa: E402

BF16, F16 = torch.bfloat16, torch.float16
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def setUpModule():
    cj.quiet()
    # torch's own note on 'same' with an even filter (it pads a copy first, then convolves: routed too)
    warnings.filterwarnings("ignore", "Using padding='same'")
    convjit.disable()


def tearDownModule():
    convjit.disable()
    convjit.set_routing_policy()
    cj.report("test_route")


def report_row(name_part, pass_="forward"):
    """The one report row whose problem name contains every part of name_part."""
    rows = [r for r in convjit.routing_report() if r["pass"] == pass_ and all(p in r["problem"] for p in name_part)]
    if len(rows) != 1:
        raise AssertionError(f"{len(rows)} report rows match {name_part}: {[r['problem'] for r in rows]}")
    return rows[0]


def ct64(x, w, b, stride, padding, output_padding, groups, dilation):
    rank = w.dim() - 2
    args = (stride, padding, output_padding, groups, dilation)
    ref = _CT[rank](x.double(), w.double(), None if b is None else b.double(), *args)
    mag = _CT[rank](x.double().abs(), w.double().abs(), None if b is None else b.double().abs(), *args)
    return ref, mag


class Routed(unittest.TestCase):
    def setUp(self):
        convjit.reset_routing_report()

    def conv_case(self, label, x, w, b=None, dtype=BF16, **kw):
        """F.conv of x, w (b) under enabled(): routed, within the bound."""
        rank = w.dim() - 2
        with convjit.enabled():
            y = _CONV[rank](x, w, b, **kw)
        ref, mag = cj.conv64(x, w, b, kw.get("stride", 1), kw.get("padding", 0), kw.get("dilation", 1),
                             kw.get("groups", 1))
        # bf16/f16 products exact in fp32, summed over C/groups*taps (+ bias), one rounding to y's dtype
        cj.check(self, y, ref, cj.bound(ref, mag, cj.products(w) + (b is not None), y_dtype=dtype), label,
                 y_dtype=dtype)
        rows = convjit.routing_report()
        self.assertEqual([(r["convjit"], r["torch"]) for r in rows], [(1, 0)], f"{label}: {rows}")
        convjit.reset_routing_report()
        return y

    def test_conv_parameter_kinds(self):
        g = cj.gen(70)
        r = lambda *s: cj.randn_bf16(s, g)   # noqa: E731
        wt = lambda *s: cj.weight_bf16(s, g)   # noqa: E731
        # 1D: stride, padding, bias; dilation; 'same' with an even filter (torch pads the odd element
        # itself, then convolves); 'valid'; an N,W,C view (convjit reads it in place)
        self.conv_case("1d stride 2 pad 1 bias", r(2, 16, 11), wt(24, 16, 3), r(24), stride=2, padding=1)
        self.conv_case("1d dilation 2", r(1, 16, 12), wt(16, 16, 3), dilation=2, padding=2)
        self.conv_case("1d same, even filter", r(1, 8, 9), wt(16, 8, 4), padding="same")
        self.conv_case("1d valid", r(1, 8, 9), wt(8, 8, 3), padding="valid")
        self.conv_case("1d NWC view", r(2, 9, 16).permute(0, 2, 1), wt(16, 16, 3), padding=1)
        # 2D: groups (8 channels per group), channels-last, a strided (non-contiguous) view, bias None,
        # asymmetric stride and padding
        self.conv_case("2d groups 2", r(1, 16, 6, 7), wt(16, 8, 3, 3), r(16), padding=1, groups=2)
        # depthwise (one channel per group: the direct family), channel multiplier 1 and 2, 1D to 3D
        self.conv_case("2d depthwise", r(1, 16, 6, 7), wt(16, 1, 3, 3), r(16), padding=1, groups=16)
        self.conv_case("2d depthwise x2 stride 2", r(2, 8, 7, 6), wt(16, 1, 3, 3), stride=2, padding=1, groups=8)
        self.conv_case("1d depthwise k4", r(1, 32, 12), wt(32, 1, 4), padding=3, groups=32)
        self.conv_case("3d depthwise", r(1, 16, 3, 5, 4), wt(16, 1, 3, 3, 3), padding=1, groups=16)
        # a few channels per group (the direct family too): ResNeXt's 4, stride 1 and 2; 3 per group, x2
        self.conv_case("2d 4 channels per group", r(1, 16, 6, 7), wt(16, 4, 3, 3), r(16), padding=1, groups=4)
        self.conv_case("2d 4 channels per group stride 2", r(2, 16, 7, 6), wt(16, 4, 3, 3), stride=2, padding=1,
                       groups=4)
        self.conv_case("1d 3 channels per group x2", r(1, 12, 10), wt(8, 3, 4), padding=3, groups=4)
        y = self.conv_case("2d channels-last", r(2, 16, 5, 6).contiguous(memory_format=torch.channels_last),
                           wt(8, 16, 3, 3), padding=1)
        self.assertTrue(y.is_contiguous(memory_format=torch.channels_last), "y channels-last as torch's would be")
        self.conv_case("2d strided view", r(1, 16, 10, 7)[:, :, ::2], wt(8, 16, 1, 3), stride=(2, 1), padding=(0, 1))
        # 3D: stride and dilation per dim, 'same', channels-last, unbatched input
        self.conv_case("3d stride, dilation", r(1, 8, 5, 7, 7), wt(16, 8, 3, 3, 3), stride=(1, 2, 2),
                       dilation=(1, 2, 1), padding=(1, 2, 1))
        self.conv_case("3d same", r(1, 8, 3, 5, 4), wt(8, 8, 3, 3, 3), padding="same")
        self.conv_case("3d channels-last", r(1, 16, 3, 4, 5).contiguous(memory_format=torch.channels_last_3d),
                       wt(16, 16, 1, 3, 3), padding=(0, 1, 1))
        y = self.conv_case("3d unbatched", r(8, 3, 4, 4), wt(8, 8, 3, 3, 3), padding=1)
        self.assertEqual(tuple(y.shape), (8, 3, 4, 4))

    def test_conv_float16(self):
        g = cj.gen(71)
        x, w, b = (cj.randn_bf16((1, 16, 5, 6), g, dtype=F16), cj.weight_bf16((16, 16, 3, 3), g, dtype=F16),
                   cj.randn_bf16((16,), g, dtype=F16))
        self.conv_case("2d f16", x, w, b, dtype=F16, padding=1)

    def test_conv_transpose_parameter_kinds(self):
        g = cj.gen(72)
        cases = [("1d stride 2 output_padding 1", (2, 16, 5), (16, 8, 3), True, dict(stride=2, padding=1,
                                                                                     output_padding=1)),
                 ("2d groups 2 dilation 2", (1, 16, 4, 5), (16, 8, 3, 3), False, dict(groups=2, dilation=2)),
                 ("3d stride (1,2,2) bias", (1, 16, 2, 3, 3), (16, 8, 1, 2, 2), True, dict(stride=(1, 2, 2))),
                 ("2d channels-last stride 2", (2, 16, 3, 4), (16, 8, 3, 3), True, dict(stride=2, padding=1))]
        for label, xs, ws, with_b, kw in cases:
            with self.subTest(label):
                x, w = cj.randn_bf16(xs, g), cj.weight_bf16(ws, g)
                if "channels-last" in label:
                    x = x.contiguous(memory_format=torch.channels_last)
                c_out = ws[1] * kw.get("groups", 1)
                b = cj.randn_bf16((c_out,), g) if with_b else None
                rank = len(ws) - 2
                with convjit.enabled():
                    y = _CT[rank](x, w, b, **kw)
                ref, mag = ct64(x, w, b, kw.get("stride", 1), kw.get("padding", 0), kw.get("output_padding", 0),
                                kw.get("groups", 1), kw.get("dilation", 1))
                # at most C_in/groups * taps exact products per output element (+ bias), one bf16 rounding
                terms = ws[0] // kw.get("groups", 1) * cj.products(w[:1, :1]) + with_b
                cj.check(self, y, ref, cj.bound(ref, mag, terms), f"transposed {label}")
                if "channels-last" in label:
                    self.assertTrue(y.is_contiguous(memory_format=torch.channels_last), "channels-last as torch's")
                self.assertEqual([(r["convjit"], r["torch"]) for r in convjit.routing_report()], [(1, 0)])
                convjit.reset_routing_report()

    def test_report_counts_and_macs(self):
        g = cj.gen(73)
        x, w = cj.randn_bf16((1, 16, 4, 4), g), cj.weight_bf16((8, 16, 3, 3), g)
        with convjit.enabled():
            for _ in range(3):
                F.conv2d(x, w, padding=1)
            F.conv2d(x.float(), w.float(), padding=1)
        row = report_row(("conv2d forward bfloat16",))
        self.assertEqual((row["calls"], row["convjit"], row["torch"]), (3, 3, 0))
        self.assertEqual(row["macs_convjit"], 3 * 8 * 16 * 16 * 9, "3 calls of 16x8 outputs x 16*9 products")
        s = convjit.stats()["routing"]
        self.assertEqual((s["convjit"], s["torch"]), (3, 1))
        self.assertAlmostEqual(s["mac_share_convjit"], 0.75)


class Fallback(unittest.TestCase):
    """Each call convjit cannot run gives torch's result bit for bit (or
    torch's own error) and its reason in the report."""

    def setUp(self):
        convjit.reset_routing_report()

    def same_as_torch(self, label, fn, reason_part):
        try:
            want = fn()
        except RuntimeError as e:   # torch refuses it: routed, the same error (raised before or in the operator)
            with convjit.enabled(), self.assertRaises(RuntimeError) as got:
                fn()
            self.assertEqual(str(got.exception), str(e), label)
            self.assertEqual(sum(r["convjit"] for r in convjit.routing_report()), 0, label)
            convjit.reset_routing_report()
            return
        with convjit.enabled():
            y = fn()
        self.assertTrue(torch.equal(y, want), f"{label}: bit for bit torch's")
        self.assertEqual(y.stride(), want.stride(), f"{label}: torch's strides")
        rows = convjit.routing_report()
        self.assertEqual(len(rows), 1, rows)
        self.assertEqual((rows[0]["convjit"], rows[0]["torch"]), (0, 1), label)
        (reason,) = rows[0]["reasons"]
        self.assertIn(reason_part, reason, label)
        convjit.reset_routing_report()

    def test_fallbacks(self):
        g = cj.gen(74)
        x, w = cj.randn_bf16((1, 16, 5, 5), g), cj.weight_bf16((16, 16, 3, 3), g)
        self.same_as_torch("float32", lambda: F.conv2d(x.float(), w.float(), padding=1), "never computed in a lower")
        self.same_as_torch("float64", lambda: F.conv2d(x.double(), w.double(), padding=1), "float64")
        self.same_as_torch("float32 transposed", lambda: F.conv_transpose2d(x.float(), w.float(), stride=2),
                           "float32")
        wd = cj.weight_bf16((16 * 9, 1, 3, 3), g)   # depthwise with 9 outputs per channel: no kernel serves it
        self.same_as_torch("depthwise x9", lambda: F.conv2d(x, wd, padding=1, groups=16), "depthwise")
        x48, w12 = cj.randn_bf16((1, 48, 5, 5), g), cj.weight_bf16((16, 12, 3, 3), g)   # 12 per group: no kernel
        self.same_as_torch("12 channels per group", lambda: F.conv2d(x48, w12, padding=1, groups=4), "convjit refuses")
        self.same_as_torch("float32 bias", lambda: F.conv2d(x, w, torch.zeros(16), padding=1), "one dtype")
        self.same_as_torch("bf16 x, float32 w", lambda: F.conv2d(x, w.float(), padding=1), "one dtype")

    def test_double_backward_falls_back(self):
        g = cj.gen(75)
        x, w = cj.randn_bf16((1, 8, 4, 4), g), cj.weight_bf16((8, 8, 3, 3), g)

        def second_order():
            xg = x.clone().requires_grad_()
            y = F.conv2d(xg, w, padding=1)
            (gx,) = torch.autograd.grad(y.float().pow(2).sum(), xg, create_graph=True)
            (gg,) = torch.autograd.grad(gx.float().sum(), xg)
            return gx.detach(), gg

        try:
            want = second_order()
        except RuntimeError as e:   # a torch without bf16 CPU kernels for it: the same error routed
            with convjit.enabled(), self.assertRaises(RuntimeError) as got:
                second_order()
            self.assertEqual(str(got.exception), str(e))
            return
        with convjit.enabled():
            got = second_order()
        for a, b in zip(got, want):
            self.assertTrue(torch.equal(a, b), "create_graph backward: torch's bits")
        rows = [r for r in convjit.routing_report() if r["pass"] == "backward" and r["torch"]]
        self.assertTrue(rows and all(any("double backward" in k for k in r["reasons"]) for r in rows), rows)


class Autograd(unittest.TestCase):
    def setUp(self):
        convjit.reset_routing_report()

    def test_conv_grads(self):
        g = cj.gen(76)
        x, w, b = cj.randn_bf16((2, 16, 5, 6), g), cj.weight_bf16((24, 16, 3, 3), g), cj.randn_bf16((24,), g)
        xg, wg, bg = (t.clone().requires_grad_() for t in (x, w, b))
        with convjit.enabled():
            y = F.conv2d(xg, wg, bg, stride=(1, 2), padding=1)
            dy = cj.randn_bf16(tuple(y.shape), g)
            y.backward(dy)
        f = cg.conv_fn(2, (1, 2), 1)
        for i, (name, got, n) in enumerate((("dx", xg.grad, 24 * 9), ("dw", wg.grad, cg.positions(dy)))):
            ref = cg.vjp(f, [x, w], i, dy.double())
            m = cg.vjp(f, [x.abs(), w.abs()], i, dy.double().abs())
            # dy is the same bf16 values (delta 0); n exact products per element, one bf16 rounding
            cj.check(self, got, ref, cg.bound(ref, m, 0.0, n, BF16), f"route conv2d {name}")
        db_ref = dy.double().sum(dim=(0, 2, 3))
        # db: the fp32 sum of N*Ho*Wo bf16 values, one bf16 rounding
        cj.check(self, bg.grad, db_ref, cg.bound(db_ref, dy.double().abs().sum(dim=(0, 2, 3)), 0.0,
                                                 cg.positions(dy), BF16), "route conv2d db")
        row = report_row(("conv2d backward[dx,dw,db]",), "backward")
        self.assertEqual((row["convjit"], row["torch"]), (1, 0))

    def test_output_mask_launches_only_what_is_asked(self):
        g = cj.gen(77)
        x, w = cj.randn_bf16((1, 16, 4, 4, 4), g), cj.weight_bf16((16, 16, 3, 3, 3), g)
        c = _runtime.counters
        for needs, launched in (((True, False), "bwd_data_calls"), ((False, True), "bwd_weight_calls")):
            with self.subTest(needs=needs):
                xg, wg = x.clone().requires_grad_(needs[0]), w.clone().requires_grad_(needs[1])
                with convjit.enabled():
                    y = F.conv3d(xg, wg, padding=1)
                    before = dict(c)
                    y.float().sum().backward()
                self.assertEqual(c[launched] - before[launched], 1, f"{launched} launched once")
                other = "bwd_weight_calls" if launched == "bwd_data_calls" else "bwd_data_calls"
                self.assertEqual(c[other], before[other], f"{other}: not asked, not launched")
                self.assertEqual((xg.grad is not None, wg.grad is not None), needs)

    def test_conv_transpose_grads(self):
        g = cj.gen(78)
        x, w = cj.randn_bf16((1, 16, 2, 3, 3), g), cj.weight_bf16((16, 8, 1, 3, 3), g)
        xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
        kw = dict(stride=(1, 2, 2), padding=(0, 1, 1), output_padding=(0, 1, 1))
        with convjit.enabled():
            y = F.conv_transpose3d(xg, wg, **kw)
            dy = cj.randn_bf16(tuple(y.shape), g)
            y.backward(dy)
        f = cg.conv_transpose_fn(3, **kw)
        # d input: the forward conv of dy, 8 * 9 products; d weight: a sum over the input's positions
        for i, (name, got, n) in enumerate((("d input", xg.grad, 8 * 9), ("d weight", wg.grad, cg.positions(x)))):
            ref = cg.vjp(f, [x, w], i, dy.double())
            m = cg.vjp(f, [x.abs(), w.abs()], i, dy.double().abs())
            cj.check(self, got, ref, cg.bound(ref, m, 0.0, n, BF16), f"route conv_transpose3d {name}")
        self.assertEqual(report_row(("conv_transpose3d backward",), "backward")["convjit"], 1)


class OnOff(unittest.TestCase):
    def setUp(self):
        convjit.reset_routing_report()
        g = cj.gen(79)
        self.x, self.w = cj.randn_bf16((1, 16, 4, 5), g), cj.weight_bf16((8, 16, 3, 3), g)
        self.torch_y = F.conv2d(self.x, self.w, padding=1)   # torch's own, before any routing

    def tearDown(self):
        convjit.disable()
        convjit.set_routing_policy()

    def routed(self):
        return sum(r["convjit"] for r in convjit.routing_report())

    def test_enable_disable(self):
        convjit.enable()
        self.assertTrue(convjit.is_enabled())
        F.conv2d(self.x, self.w, padding=1)
        self.assertEqual(self.routed(), 1)
        convjit.disable()
        y = F.conv2d(self.x, self.w, padding=1)
        self.assertTrue(torch.equal(y, self.torch_y), "after disable(): torch's bits")
        self.assertEqual(self.routed(), 1, "a disabled call is not routed (nor counted)")

    def test_nesting(self):
        with convjit.enabled():
            with convjit.enabled(False):
                y = F.conv2d(self.x, self.w, padding=1)
                self.assertFalse(convjit.is_enabled())
            self.assertTrue(convjit.is_enabled())
            F.conv2d(self.x, self.w, padding=1)
        self.assertFalse(convjit.is_enabled())
        self.assertTrue(torch.equal(y, self.torch_y))
        self.assertEqual(self.routed(), 1)
        with self.assertRaisesRegex(TypeError, "enabled"):
            convjit.enabled(1)

    def test_two_threads(self):
        """Thread A routes inside enabled(), thread B (not enabled) gets torch's bits meanwhile."""
        xb = cj.randn_bf16((1, 16, 3, 7), cj.gen(80))   # B's own shape: its rows would show in the report
        want_b = F.conv2d(xb, self.w, padding=1)
        out, errors, go = {}, [], threading.Barrier(2)

        def a():
            try:
                with convjit.enabled():
                    go.wait()
                    out["a"] = [F.conv2d(self.x, self.w, padding=1) for _ in range(4)]
            except Exception as e:   # noqa: BLE001  (reported below)
                errors.append(e)

        def b():
            try:
                go.wait()
                out["b"] = [F.conv2d(xb, self.w, padding=1) for _ in range(4)]
            except Exception as e:   # noqa: BLE001
                errors.append(e)
        ts = [threading.Thread(target=f) for f in (a, b)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        self.assertTrue(all(torch.equal(y, want_b) for y in out["b"]), "thread B: torch's bits")
        rows = convjit.routing_report()
        self.assertEqual([(r["convjit"], r["torch"]) for r in rows], [(4, 0)], "only thread A's calls, routed")
        ref, mag = cj.conv64(self.x, self.w, None, 1, 1)
        for y in out["a"]:
            cj.check(self, y, ref, cj.bound(ref, mag, cj.products(self.w)), "thread A routed")

    def test_policy(self):
        with convjit.enabled():
            F.conv2d(self.x, self.w, padding=1)
            (name,) = [r["problem"] for r in convjit.routing_report()]
            convjit.set_routing_policy(deny=[name])
            y = F.conv2d(self.x, self.w, padding=1)
            self.assertTrue(torch.equal(y, self.torch_y), "denied: torch's bits")
            convjit.set_routing_policy(allow=lambda p: p.op == "conv" and p.input[2] == 4)
            F.conv2d(self.x, self.w, padding=1)
            F.conv2d(self.x[:, :, :3], self.w, padding=1)
        rows = {r["problem"]: r for r in convjit.routing_report()}
        self.assertEqual((rows[name]["convjit"], rows[name]["torch"]), (2, 1))
        self.assertEqual(rows[name]["reasons"], {"policy: denied": 1})
        (other,) = [r for n, r in rows.items() if n != name]
        self.assertEqual(other["reasons"], {"policy: not in allow": 1})
        with self.assertRaisesRegex(TypeError, "deny"):
            convjit.set_routing_policy(deny=3)

    def test_log_each_decision_once(self):
        code = ("import torch, warnings, convjit, torch.nn.functional as F\n"
                "warnings.simplefilter('ignore')\n"
                "x, w = torch.ones(1, 16, 4, 4).bfloat16(), torch.ones(8, 16, 3, 3).bfloat16()\n"
                "with convjit.enabled():\n"
                "    for _ in range(3): F.conv2d(x, w, padding=1)\n"
                "    F.conv2d(x.float(), w.float(), padding=1)\n")
        for value, c_lines in (("route", False), ("info,route", True)):
            with self.subTest(CONVJIT_LOG=value):
                r = cj.run_python(code, env={"CONVJIT_LOG": value})
                self.assertEqual(r.returncode, 0, r.stderr)
                lines = [ln for ln in r.stderr.splitlines() if ln.startswith("convjit[route]")]
                self.assertEqual(len(lines), 2, r.stderr)
                self.assertTrue(lines[0].endswith(": convjit") and "bfloat16" in lines[0], lines)
                self.assertIn("torch (torch.float32", lines[1])
                # the C library reads its level words from the same list (util/log.c) and ignores "route"
                self.assertEqual(any(ln.startswith("convjit[info]") for ln in r.stderr.splitlines()), c_lines,
                                 r.stderr)


if __name__ == "__main__":
    unittest.main()
