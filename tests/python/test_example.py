"""examples/torch_vae_block.py and examples/torch_vae_upblock.py run
(EMULATED) and pass: every convjit conv call is within convjit's own error
bound of the float64 conv of its inputs, the whole-clip and chunked decodes
are within the stage budget of the float64 block, and each exits 0. No
verdict uses torch's bf16 result (its accuracy depends on the CPU and the
torch build): that line carries none. The up-block's fused upsample + conv
is also bit for bit convjit's conv of the upsampled tensor.

examples/torch_train_block.py, short (2 SGD steps): every convjit gradient
within its bound of the float64 gradient of its own inputs, the parameters
within the stage budget of the float64 run, the weights re-packed after
every step, exit 0.

examples/torch_vae_decoder.py, small (2 latent frames of 2x2, gfx942; the
route's own tests run gfx950): the unmodified Wan-design decoder under
convjit.enable() runs 100% of its conv multiply-adds on convjit, every
forward and gradient call within its bound of the float64 op of its own
inputs, and the causal convs' cat + F.pad copies counted against none on
convjit's causal padding. All run with this interpreter (sys.executable)."""

import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLE = os.path.join(ROOT, "examples", "torch_vae_block.py")
UPBLOCK = os.path.join(ROOT, "examples", "torch_vae_upblock.py")
TRAIN = os.path.join(ROOT, "examples", "torch_train_block.py")
DECODER = os.path.join(ROOT, "examples", "torch_vae_decoder.py")


def run_example(path, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, path, *args], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=600)


class TorchVaeBlockExample(unittest.TestCase):
    def test_whole_and_chunked_pass(self):
        p = run_example(EXAMPLE)
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


class TorchVaeUpBlockExample(unittest.TestCase):
    def test_both_upsamplers_whole_and_chunked_pass(self):
        p = run_example(UPBLOCK)
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)
        # two variants: the fused Upsample + Conv3d, the ConvTranspose3d
        self.assertIn("fused [('up.0', 'up.1')]", p.stdout)   # the pair became one convjit conv
        self.assertRegex(p.stdout, re.compile(r"^\(T\) ConvTranspose3d.*swapped \[.*'up\.0'\]", re.M))
        results = re.findall(r"^  convjit (whole|chunked) +max abs error vs float64 (\S+)  tol (\S+) .*  (PASS|FAIL)",
                             p.stdout, re.M)
        self.assertEqual([r[0] for r in results], ["whole", "chunked"] * 2, out)
        for how, err, tol, verdict in results:
            self.assertEqual(verdict, "PASS", f"{how}: {err} > {tol}")
            self.assertLessEqual(float(err), float(tol))   # the verdict agrees with its numbers
            self.assertGreater(float(tol), 0.0)
        calls = re.findall(r"^  convjit calls: (\d+) causal convs worst (\S+), (\d+) up convs worst (\S+) "
                           r".*  (PASS|FAIL)$", p.stdout, re.M)
        self.assertEqual(len(calls), 2, out)
        for nc, wc, nu, wu, verdict in calls:
            # whole + 3 chunks: 2 causal convs each, one up conv each
            self.assertEqual((int(nc), int(nu)), (8, 4))
            self.assertLessEqual(max(float(wc), float(wu)), 1.0)
            self.assertEqual(verdict, "PASS")
        self.assertRegex(p.stdout, re.compile(r"^  fused upsample \+ conv vs .*: bit-identical  PASS$", re.M))
        self.assertRegex(p.stdout, re.compile(r"^RESULT PASS$", re.M))


class TorchTrainBlockExample(unittest.TestCase):
    def test_short_fine_tune_passes(self):
        steps = 2
        p = run_example(TRAIN, "--steps", str(steps))
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)
        losses = re.findall(r"^step (\d+): loss convjit (\S+)  float64 (\S+)", p.stdout, re.M)
        self.assertEqual([int(s) for s, _, _ in losses], list(range(steps)), out)
        m = re.search(r"^convjit gradient calls: (\d+) conv calls, .* worst (\S+) of the bound .*  (PASS|FAIL)$",
                      p.stdout, re.M)
        self.assertIsNotNone(m, f"no gradient check line in:\n{out}")
        self.assertEqual(int(m.group(1)), 3 * steps, m.group(0))   # three convs per step
        self.assertLessEqual(float(m.group(2)), 1.0, m.group(0))
        self.assertEqual(m.group(3), "PASS", m.group(0))
        m = re.search(r"^parameters after \d+ steps: max relative difference (\S+) .*  tol (\S+) .*  (PASS|FAIL)$",
                      p.stdout, re.M)
        self.assertIsNotNone(m, f"no parameter line in:\n{out}")
        self.assertLessEqual(float(m.group(1)), float(m.group(2)), m.group(0))   # the verdict agrees with its numbers
        self.assertEqual(m.group(3), "PASS", m.group(0))
        self.assertRegex(p.stdout, re.compile(r"^weights re-packed after every step: .*  PASS$", re.M))
        self.assertRegex(p.stdout, re.compile(r"^RESULT PASS$", re.M))


class TorchVaeDecoderExample(unittest.TestCase):
    def test_unmodified_decoder_routed_and_trained(self):
        p = run_example(DECODER, "--frames", "2", "--size", "2", "--arch", "gfx942")
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)
        m = re.search(r"^convjit ran (\d+) of (\d+) conv calls, (\S+)% of their multiply-adds \((\d+) of (\d+)\)$",
                      p.stdout, re.M)
        self.assertIsNotNone(m, out)
        self.assertEqual(m.group(1), m.group(2), m.group(0))
        self.assertEqual(m.group(4), m.group(5), "every multiply-add on convjit: " + m.group(0))
        self.assertNotIn(" torch x", p.stdout, "no fallback in the report")
        for kind in ("forward", "backward"):
            m = re.search(rf"^  {kind}: (\d+) calls, worst (\S+) of the bound", p.stdout, re.M)
            self.assertIsNotNone(m, out)
            self.assertGreater(int(m.group(1)), 0)
            self.assertLessEqual(float(m.group(2)), 1.0, m.group(0))
        chunks = re.findall(r"^  chunk (\d+): cat \+ F.pad (\d+) bytes, convjit (\d+) bytes$", p.stdout, re.M)
        self.assertEqual(len(chunks), 2, out)
        self.assertTrue(all(int(c) < int(w) for _, w, c in chunks), chunks)
        self.assertRegex(p.stdout, re.compile(r"^RESULT PASS$", re.M))


if __name__ == "__main__":
    unittest.main()
