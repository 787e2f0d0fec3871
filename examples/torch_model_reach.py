#!/usr/bin/env python3
"""How much of a real model's conv work reaches convjit, two ways: the
operator route (convjit.enabled(): torch's own convs, unmodified) and
convjit.nn.patch (module swap, subclasses included). Models are
torchvision's (random weights, bf16, eval, small inputs so the emulator
runs them).

    PYTHONPATH=python python3 examples/torch_model_reach.py [--models r3d_18,mobilenet_v2] [--arch gfx950]

Per model it prints: the conv modules patch() swapped and skipped (with
reasons), and the forward's routing report summary -- conv calls and
multiply-adds convjit ran, and every distinct fallback reason. CPU tensors
run on convjit's EMULATOR; nothing here is a GPU time. Needs torchvision.
"""

import argparse
import sys
import time
import warnings

import torch

import convjit

# model name -> input shape (small: the emulator runs every conv)
MODELS = {"r3d_18": (1, 3, 4, 32, 32), "mc3_18": (1, 3, 4, 32, 32), "r2plus1d_18": (1, 3, 4, 32, 32),
          "mobilenet_v2": (1, 3, 64, 64), "convnext_tiny": (1, 3, 64, 64), "resnext50_32x4d": (1, 3, 64, 64)}


def build(name):
    import torchvision.models as tvm
    import torchvision.models.video as tvv
    fn = getattr(tvv, name, None) or getattr(tvm, name)
    return fn(weights=None).to(torch.bfloat16).eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--arch", default=None, choices=("gfx942", "gfx950"))
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    try:
        import torchvision  # noqa: F401
    except ImportError:
        print("SKIP: torchvision is not installed")
        return 0
    if a.arch:
        convjit.set_emulator_arch(a.arch)
    torch.manual_seed(0)
    for name in a.models.split(","):
        x = torch.randn(MODELS[name]).to(torch.bfloat16)
        convs = sum(isinstance(m, torch.nn.modules.conv._ConvNd) for m in build(name).modules())
        res = convjit.nn.patch(build(name))
        print(f"{name}: patch swapped {len(res.swapped)} of {convs} conv modules")
        for why in sorted({w for _, w in res.skipped}):
            print(f"  skipped x{sum(w == why for _, w in res.skipped)}: {why[:160]}")
        model = build(name)
        convjit.reset_routing_report()
        t0 = time.perf_counter()
        with torch.no_grad(), convjit.enabled():
            model(x)
        s = convjit.routing_summary()
        print(f"  routed forward of {MODELS[name]} ({time.perf_counter() - t0:.1f} s host): convjit ran "
              f"{s['convjit']} of {s['calls']} conv calls, {100 * s['mac_share_convjit']:.1f}% of the conv "
              "multiply-adds")
        reasons = {}
        for r in convjit.routing_report():
            for why, n in r["reasons"].items():
                reasons[why] = reasons.get(why, 0) + n
        for why, n in sorted(reasons.items()):
            print(f"  torch x{n}: {why[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
