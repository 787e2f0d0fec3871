"""examples/torch_vae_block.py runs (EMULATED) and passes: every convjit
conv call is within convjit's own error bound of the float64 conv of its
inputs, the whole-clip and chunked decodes are within the stage budget of
the float64 block, and it exits 0. No verdict uses torch's bf16 result (its
accuracy depends on the CPU and the torch build): that line carries none."""

import os
import re
import subprocess
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLE = os.path.join(ROOT, "examples", "torch_vae_block.py")


class TorchVaeBlockExample(unittest.TestCase):
    def test_whole_and_chunked_pass(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
        p = subprocess.run(["/usr/bin/python3", EXAMPLE], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=600)
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)
        for which in ("whole", "chunked"):
            m = re.search(rf"^\(.\) convjit {which} +max abs error vs float64 (\S+)  tol (\S+) .*  (PASS|FAIL)$",
                          p.stdout, re.M)
            self.assertIsNotNone(m, f"no result line for the {which} decode in:\n{out}")
            err, tol, verdict = float(m.group(1)), float(m.group(2)), m.group(3)
            self.assertEqual(verdict, "PASS", m.group(0))
            self.assertLessEqual(err, tol, m.group(0))   # the verdict agrees with its numbers
            self.assertGreater(tol, 0.0, m.group(0))
        m = re.search(r"^convjit conv calls: (\d+), .* worst (\S+) of the bound .*  (PASS|FAIL)$", p.stdout, re.M)
        self.assertIsNotNone(m, f"no per-call result line in:\n{out}")
        self.assertEqual(int(m.group(1)), 10, m.group(0))   # 2 whole + 3 chunks x 2 + 2 warm
        self.assertEqual(m.group(3), "PASS", m.group(0))
        self.assertLessEqual(float(m.group(2)), 1.0, m.group(0))
        m = re.search(r"^\(b\) torch bf16 .*$", p.stdout, re.M)
        self.assertIsNotNone(m, f"no torch yardstick line in:\n{out}")
        self.assertNotRegex(m.group(0), "PASS|FAIL|tol", "torch's bf16 error must not decide a verdict")
        self.assertIn("swapped ['conv1.conv', 'conv2.conv']", p.stdout)   # both causal convs ran through convjit
        self.assertRegex(p.stdout, re.compile(r"^RESULT PASS$", re.M))


if __name__ == "__main__":
    unittest.main()
