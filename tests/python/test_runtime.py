"""The binding's runtime: plan and packed-weight caches (convjit.stats()
counters), re-packing after an in-place weight update, clear_caches, and
the once-per-process warnings (checked in fresh subprocesses, since they
are per process). EMULATED."""

import json
import os
import sys
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cjtest as cj  # noqa: E402

import torch  # noqa: E402

import convjit  # noqa: E402
from convjit import ops  # noqa: E402

setUpModule = cj.quiet


def tearDownModule():
    cj.report("test_runtime")


def counters():
    return dict(convjit.stats()["binding"])


def delta(before, after):
    return {k: after[k] - before[k] for k in ("calls", "plan_hits", "plan_misses", "packs", "pack_hits")}


class TestCaches(unittest.TestCase):
    def setUp(self):
        g = cj.gen(0)
        self.x = cj.randn_bf16((1, 16, 3, 6, 6), g)
        self.w = cj.weight_bf16((24, 16, 3, 3, 3), g)
        self.b = cj.randn_bf16((24,), g)

    def test_second_call_hits(self):
        y1 = ops.conv(self.x, self.w, self.b, padding=1)
        c0 = counters()
        y2 = ops.conv(self.x, self.w, self.b, padding=1)
        self.assertEqual(delta(c0, counters()),
                         {"calls": 1, "plan_hits": 1, "plan_misses": 0, "packs": 0, "pack_hits": 1})
        self.assertTrue(torch.equal(y1, y2))

    def test_in_place_update_repacks(self):
        y_old = ops.conv(self.x, self.w, self.b, padding=1)
        with torch.no_grad():
            self.w.add_(1)     # bumps w._version; same tensor object, same storage
        c0 = counters()
        y_new = ops.conv(self.x, self.w, self.b, padding=1)
        self.assertEqual(delta(c0, counters()),
                         {"calls": 1, "plan_hits": 1, "plan_misses": 0, "packs": 1, "pack_hits": 0})
        self.assertFalse(torch.equal(y_new, y_old))
        ref, mag = cj.conv64(self.x, self.w, self.b, padding=1)
        cj.check(self, y_new, ref, cj.bound(ref, mag, cj.products(self.w) + 1), "after w.add_(1)")
        c1 = counters()
        ops.conv(self.x, self.w, self.b, padding=1)
        self.assertEqual(delta(c1, counters())["pack_hits"], 1, "the new pack is cached in turn")

    def test_parameter_weight_hits(self):
        """An nn.Parameter (requires_grad) keys the pack cache like a plain tensor."""
        p = torch.nn.Parameter(self.w.clone())
        with torch.no_grad():
            ops.conv(self.x, p, padding=1)
            c0 = counters()
            ops.conv(self.x, p, padding=1)
        self.assertEqual(delta(c0, counters())["pack_hits"], 1)

    def test_plans_with_one_packing_share_it(self):
        """Two plans that differ only in D (the chunk plans of a stream)
        run the same weight-pack kernel: one packed copy serves both, and
        both results are right."""
        x2 = cj.randn_bf16((1, 16, 5, 6, 6), cj.gen(1))
        ops.conv(self.x, self.w, self.b, padding=1)
        kinds = lambda d: [p["kernels"] for p in convjit.plans() if p["desc"]["in"] == d]  # noqa: E731
        c0 = counters()
        y2 = ops.conv(x2, self.w, self.b, padding=1)
        d = delta(c0, counters())
        pack_names = {tuple(k["name"] for k in ks if k["stage"] == "pack") for d_ in ((3, 6, 6), (5, 6, 6))
                      for ks in kinds(d_)}
        self.assertEqual(len(pack_names), 1, "both plans run one weight-pack kernel")
        self.assertEqual((d["plan_misses"], d["packs"], d["pack_hits"]), (1, 0, 1))
        ref, mag = cj.conv64(x2, self.w, self.b, padding=1)
        cj.check(self, y2, ref, cj.bound(ref, mag, cj.products(self.w) + 1), "shared pack, D=5")

    def test_clear_caches(self):
        ops.conv(self.x, self.w, padding=1)
        convjit.clear_caches()
        c0 = counters()
        ops.conv(self.x, self.w, padding=1)
        d = delta(c0, counters())
        self.assertEqual((d["plan_misses"], d["packs"]), (1, 1))
        ctx = convjit.stats()["contexts"]
        self.assertTrue(any(v["emulated"] for v in ctx.values()))


class TestAsyncCompile(unittest.TestCase):
    """convjit.set_async_compile: with True a new shape's plan may return
    before its own kernels are built and run convjit's shape-generic ones
    meanwhile (which set it runs is the C library's timing: the C test
    tests/host/test_async_compile.c holds the build to prove the switch);
    either way the result meets the conv's bound, and wait_compiles()
    leaves every plan on its own kernels. With False the plan is built at
    creation whatever $CONVJIT_ASYNC_COMPILE says."""

    def tearDown(self):
        convjit.set_async_compile(None)

    def _plan(self, c, k, dhw):
        ps = [p for p in convjit.plans() if (p["desc"]["c"], p["desc"]["k"], p["desc"]["in"]) == (c, k, dhw)]
        self.assertEqual(len(ps), 1, f"one cached plan of C={c}, K={k}, {dhw}")
        return ps[0]

    def _check(self, x, w, b, label):
        y = ops.conv(x, w, b, padding=1)
        ref, mag = cj.conv64(x, w, b, padding=1)
        # bf16 inputs, fp32 sums of C*27 products and the bias, one bf16 rounding (cjtest.bound)
        cj.check(self, y, ref, cj.bound(ref, mag, cj.products(w) + 1), label)

    def test_async_then_own_kernels(self):
        g = cj.gen(30)
        x, w, b = cj.randn_bf16((1, 8, 3, 7, 9), g), cj.weight_bf16((20, 8, 3, 3, 3), g), cj.randn_bf16((20,), g)
        convjit.set_async_compile(True)
        self._check(x, w, b, "first call, async plan")
        first = {k["name"] for k in self._plan(8, 20, (3, 7, 9))["kernels"] if k["name"].startswith("cj_conv")}
        convjit.wait_compiles()
        own = {k["name"] for k in self._plan(8, 20, (3, 7, 9))["kernels"] if k["name"].startswith("cj_conv")}
        self.assertTrue(own and not any(n.startswith("cj_convg_") for n in own),
                        f"after wait_compiles the plan runs its own conv kernel: {own}")
        self.assertTrue(first == own or all(n.startswith("cj_convg_") for n in first),
                        f"at creation: the generic kernel or already its own: {first}")
        self._check(x, w, b, "after the switch")

    def test_sync_builds_at_creation(self):
        g = cj.gen(31)
        x, w, b = cj.randn_bf16((1, 8, 3, 5, 6), g), cj.weight_bf16((12, 8, 3, 3, 3), g), cj.randn_bf16((12,), g)
        convjit.set_async_compile(False)
        self._check(x, w, b, "sync plan")
        names = [k["name"] for k in self._plan(8, 12, (3, 5, 6))["kernels"]]
        self.assertFalse(any(n.startswith("cj_convg_") or n.endswith("_generic") for n in names), names)

    def test_bad_value(self):
        with self.assertRaisesRegex(TypeError, "set_async_compile"):
            convjit.set_async_compile(1)


class TestLibraryLookup(unittest.TestCase):
    def test_missing_library_names_where_it_looked(self):
        """A CONVJIT_LIBRARY that does not exist: importing works (torch users
        may import before building), the first use raises OSError naming
        the path and what to do."""
        code = textwrap.dedent("""
            import convjit, torch
            try:
                convjit.ops.conv(torch.zeros(1, 8, 4).bfloat16(), torch.zeros(8, 8, 1).bfloat16())
            except OSError as e:
                print("OSError:", e)
        """)
        r = cj.run_python(code, env={"CONVJIT_LIBRARY": "/nonexistent/libconvjit.so"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("OSError: convjit: libconvjit.so not found", r.stdout)
        self.assertIn("/nonexistent/libconvjit.so (no such file)", r.stdout)
        self.assertIn("CONVJIT_LIBRARY", r.stdout)

    def test_loaded_library_is_the_one_named(self):
        self.assertEqual(os.path.realpath(convjit.library_path()), os.path.realpath(os.environ["CONVJIT_LIBRARY"]))
        self.assertRegex(convjit.version(), r"^\d+\.\d+\.\d+$")


class TestWarnings(unittest.TestCase):
    def test_emulator_warning_once(self):
        """Two convs (and a module call) in a fresh process: one
        EmulatorWarning, attributed to the caller's line (here '<string>'),
        and no GradientWarning for a weight that requires grad: the module's
        output has a grad_fn (docs/python.md "Autograd")."""
        code = textwrap.dedent("""
            import json, warnings, torch, convjit
            from convjit import ops
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                x = torch.randn(1, 16, 6, 6).bfloat16()
                w = torch.randn(16, 16, 3, 3).bfloat16()
                ops.conv(x, w, padding=1)
                ops.conv(x, w, padding=1)
                m = convjit.nn.Conv2d(16, 16, 3, padding=1, dtype=torch.bfloat16)
                m(x)
                assert m(x).grad_fn is not None
            print(json.dumps([[w.category.__name__, w.filename] for w in ws]))
        """)
        r = cj.run_python(code)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout.strip().splitlines()[-1])
        cats = [c for c, _ in got]
        self.assertEqual(cats.count("EmulatorWarning"), 1, got)
        self.assertEqual(cats.count("GradientWarning"), 0, got)
        self.assertEqual({f for _, f in got if _ in ("EmulatorWarning", "GradientWarning")}, {"<string>"}, got)


if __name__ == "__main__":
    unittest.main()
