"""examples/torch_vae_block.py runs (EMULATED) and passes: its whole-clip
and chunked convjit decodes are within their stated tolerance of the
float64 torch reference, and it exits 0."""

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
        self.assertIn("swapped ['conv1.conv', 'conv2.conv']", p.stdout)   # both causal convs ran through convjit
        self.assertRegex(p.stdout, re.compile(r"^RESULT PASS$", re.M))


if __name__ == "__main__":
    unittest.main()
