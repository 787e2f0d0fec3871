"""Many Python threads calling convjit.ops.conv at once: every result equals
the one-thread result bit for bit, and the plan and packed-weight caches
stay consistent (one cached plan per shape, whatever the race)."""

import threading
import unittest
import warnings

import torch

import convjit

warnings.simplefilter("ignore", convjit.EmulatorWarning)


class Threads(unittest.TestCase):
    def test_concurrent_calls(self):
        g = torch.Generator().manual_seed(7)
        cases = []
        for c, k, shape in ((16, 32, (3, 6, 6)), (24, 16, (2, 5, 7))):
            x = torch.randn((1, c) + shape, generator=g).bfloat16()
            w = torch.randn((k, c, 3, 3, 3), generator=g).bfloat16()
            b = torch.randn(k, generator=g).bfloat16()
            cases.append((x, w, b))
        # the one-thread answers (also compiles, so the threads race on the caches, not the compiler)
        want = [convjit.ops.conv(x, w, b, padding=1) for x, w, b in cases]
        convjit.clear_caches()   # the threads must re-plan and re-pack concurrently
        before = convjit.stats()["binding"]
        errors, got = [], {}

        def work(tid):
            try:
                for it in range(3):
                    i = (tid + it) % len(cases)
                    x, w, b = cases[i]
                    got[(tid, it)] = (i, convjit.ops.conv(x, w, b, padding=1))
            except Exception as e:  # reported below: a thread's exception must fail the test
                errors.append(repr(e))

        ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(got), 12)
        for (i, y) in got.values():
            self.assertTrue(torch.equal(y, want[i]), "a threaded result differs from the one-thread one")
        after = convjit.stats()["binding"]
        self.assertEqual(after["calls"] - before["calls"], 12)
        self.assertEqual((after["plan_hits"] + after["plan_misses"]) - (before["plan_hits"] + before["plan_misses"]), 12)
        ours = [p for p in convjit.plans() if p["desc"]["c"] in (16, 24)]
        self.assertEqual(len(ours), 2, "one cached plan per shape")


if __name__ == "__main__":
    unittest.main()
