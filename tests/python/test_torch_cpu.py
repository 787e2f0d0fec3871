"""What scripts/test's second Python pass relies on: ATEN_CPU_CAPABILITY=default
makes this torch run its plainest CPU kernels (no AVX), so a test whose
verdict depended on which torch kernel ran would show it there. torch
reports the capability it dispatches to in torch.__config__.show()."""

import os
import re
import subprocess
import sys
import unittest

SHOW = "import torch; print(torch.__config__.show())"
# torch's name for its plainest CPU kernels: "NO AVX" in torch 1.x (Debian's 1.13), "DEFAULT" in 2.x (2.11)
PLAIN = ("NO AVX", "DEFAULT")


def capability(env_value):
    env = dict(os.environ)
    env.pop("ATEN_CPU_CAPABILITY", None)
    if env_value is not None:
        env["ATEN_CPU_CAPABILITY"] = env_value
    p = subprocess.run([sys.executable, "-c", SHOW], capture_output=True, text=True, env=env, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"python -c {SHOW!r} failed:\n{p.stdout}{p.stderr}")
    m = re.search(r"CPU capability usage: (.+)", p.stdout)
    if m is None:
        raise AssertionError(f"no 'CPU capability usage' line in torch.__config__.show():\n{p.stdout}")
    return m.group(1).strip()


class TorchCpuCapability(unittest.TestCase):
    def test_default_means_no_avx(self):
        self.assertIn(capability("default"), PLAIN)

    def test_this_run(self):
        """This process's own capability (what the other tests of this pass
        run on), printed for the log; under the variable it must be the
        plainest (PLAIN)."""
        import torch
        m = re.search(r"CPU capability usage: (.+)", torch.__config__.show())
        self.assertIsNotNone(m, "no 'CPU capability usage' line in torch.__config__.show()")
        want = os.environ.get("ATEN_CPU_CAPABILITY")
        print(f"\ntorch CPU capability: {m.group(1).strip()} (ATEN_CPU_CAPABILITY={want or 'unset'})", file=sys.stderr)
        if want == "default":
            self.assertIn(m.group(1).strip(), PLAIN)

if __name__ == "__main__":
    unittest.main()
