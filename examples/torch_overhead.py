#!/usr/bin/env python3
"""What a torch user sees from convjit.ops.conv: the first call (plan,
compile, messages), a repeated call's host overhead per call, the same
conv through torch's own F.conv3d routed to convjit (convjit.enabled():
what the operator route adds per call), and a second process that finds
the kernels in the disk cache.

    PYTHONPATH=python /usr/bin/python3 examples/torch_overhead.py [--calls 200]

Every figure is HOST time measured from Python on this machine. CPU
tensors run on convjit's CPU EMULATOR, so the time inside C includes
emulating the kernels: none of it is a GPU time. The binding's own Python
overhead (total - time inside C) is what a GPU user would pay on top of
the C library's launch, give or take the emulator-only copies.
"""

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch

import convjit   # contexts (and the disk cache dir they read) are made on first use

SHAPE_X, SHAPE_W = (1, 16, 1, 4, 4), (16, 16, 1, 1, 1)   # tiny: the emulated kernel is short


def first_call(x, w):
    """Runs the first conv, capturing every message: warnings, the convjit
    logger (INFO; silent unless the user configures logging) and anything
    the C library writes to stderr (fd 2)."""
    logs = io.StringIO()
    handler = logging.StreamHandler(logs)
    logging.getLogger("convjit").addHandler(handler)
    logging.getLogger("convjit").setLevel(logging.INFO)
    err = tempfile.TemporaryFile()
    saved = os.dup(2)
    os.dup2(err.fileno(), 2)
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            t0 = time.perf_counter()   # what the first call does on first use, timed apart
            convjit._lib.load()
            convjit._runtime.context_for(x.device)
            t1 = time.perf_counter()
            convjit.ops.conv(x, w)
            t2 = time.perf_counter()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        logging.getLogger("convjit").removeHandler(handler)
    err.seek(0)
    msgs = [f"warning {m.category.__name__}: {m.message}" for m in said]
    msgs += [f"log: {line}" for line in logs.getvalue().splitlines()]
    msgs += [f"stderr: {line}" for line in err.read().decode(errors="replace").splitlines()]
    (plan,) = convjit.plans()
    ctx = next(iter(convjit.stats()["contexts"].values()))
    return {"setup_ms": (t1 - t0) * 1e3, "wall_ms": (t2 - t1) * 1e3, "create_ms": plan["create_ms"], "messages": msgs, "context": ctx,
            "kernels": [(k["stage"], k["name"], k["compile_ms"], k["source"]) for k in plan["kernels"]]}


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def repeated(x, w, calls, fn=None):
    """Per-call host times in us of fn(x, w) (default convjit.ops.conv):
    total wall, inside the C library (the binding's c_seconds counter,
    which times each ctypes call), the rest."""
    fn = fn or convjit.ops.conv
    counters = convjit._runtime.counters   # read directly: convjit.stats() itself calls into C
    tot, inside = [], []
    for _ in range(calls):
        c0 = counters["c_seconds"]
        t0 = time.perf_counter()
        fn(x, w)
        t1 = time.perf_counter()
        tot.append((t1 - t0) * 1e6)
        inside.append((counters["c_seconds"] - c0) * 1e6)
    py = [t - c for t, c in zip(tot, inside)]
    return {name: (statistics.median(v), pct(v, 0.9)) for name, v in
            (("total", tot), ("in C", inside), ("Python", py))}


class launch_stubbed:
    """Diagnostic only (y is not computed): convjit_conv_execute (and _forward) become a
    no-op, every other call (plan lookup, copies, emulator malloc/free)
    stays. On the emulator the real launch spends ms emulating the kernel
    on this thread, which (most likely) leaves the caches cold for the
    Python that follows; without it, what is left is the binding's own cost
    with warm caches, as before an asynchronous GPU launch."""

    def __enter__(self):
        self.lib, self.real = convjit._lib, convjit._lib.call
        self.lib.call = lambda name, *a: 0 if name in ("convjit_conv_forward", "convjit_conv_execute") else self.real(name, *a)

    def __exit__(self, *exc):
        self.lib.call = self.real


def profile(x, w, calls):
    """cProfile of `calls` stubbed calls: the functions where the Python
    overhead goes (own time, excluding the ctypes calls into C)."""
    pr = cProfile.Profile()
    with launch_stubbed():
        pr.enable()
        for _ in range(calls):
            convjit.ops.conv(x, w)
        pr.disable()
    rows = [(v[2], f"{os.path.basename(k[0])}:{k[1]} {k[2]}") for k, v in pstats.Stats(pr).stats.items()
            if k[2] not in ("call", "<lambda>") or os.path.basename(k[0]) not in ("_lib.py", "torch_overhead.py")]
    total = sum(t for t, _ in rows)
    return total, sorted(rows, reverse=True)


def run(calls, child):
    torch.manual_seed(0)
    x, w = torch.randn(SHAPE_X).bfloat16(), torch.randn(SHAPE_W).bfloat16()
    with torch.no_grad():
        f = first_call(x, w)
        r = repeated(x, w, calls)
        with launch_stubbed():
            rs = repeated(x, w, calls)
            with convjit.enabled():   # torch's own conv, routed to convjit by its operator
                rr = repeated(x, w, calls, torch.nn.functional.conv3d)
                rs2 = repeated(x, w, calls)
        prof = None if child else profile(x, w, calls)
    if child:   # the second process reports to the first
        print(json.dumps({"first": f, "repeated": r, "stubbed": rs}))
        return
    print(f"conv x {SHAPE_X} w {SHAPE_W} bf16 on {convjit.library_path()}")
    print("ALL TIMES: host-measured on this machine from Python; convjit's CPU EMULATOR backend, not a GPU\n")
    show_first("first call, process 1 (empty disk cache: compiles)", f)
    what = {"total": "wall time of ops.conv", "in C": "inside the C library calls, incl. ctypes conversion",
            "Python": "the binding's own Python (total - C)"}
    for title, res in ((f"repeated call, {calls} calls", r),
                       (f"the same {calls} calls with the launch stubbed (diagnostic, see launch_stubbed)", rs),
                       (f"F.conv3d under convjit.enabled(), routed to the same plan, launch stubbed", rr)):
        print(f"\n{title} (us per call, median / p90):")
        for name, (med, p90) in res.items():
            print(f"  {name:>6}: {med:8.1f} / {p90:8.1f}   {what[name]}")
    print("  (the real calls' C time is the emulator emulating the kernel; their Python share is inflated by it)")
    print(f"\nthe operator route's cost per call (launch stubbed, medians): F.conv3d routed {rr['total'][0]:.1f} us "
          f"- ops.conv {rs2['total'][0]:.1f} us = {rr['total'][0] - rs2['total'][0]:.1f} us (torch's dispatcher to "
          "the registered kernel, the route's signature lookup and its report counters)")
    total, rows = prof
    print(f"\nwhere the Python goes: cProfile of {calls} stubbed calls, own time outside C (profiler-inflated "
          f"{total / calls * 1e6:.0f} us per call; the shares are what matters):")
    for t, name in rows[:10]:
        print(f"  {100 * t / total:5.1f}%  {name}")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--calls", str(calls)],
                         capture_output=True, text=True, check=True)
    c = json.loads(out.stdout.splitlines()[-1])
    print()
    show_first("first call, process 2 (same disk cache)", c["first"])
    (m1, p1), (m2, p2) = c["repeated"]["Python"], c["stubbed"]["Python"]
    print(f"  repeated calls there, Python overhead (median / p90): {m1:.1f} / {p1:.1f} us, launch stubbed "
          f"{m2:.1f} / {p2:.1f} us")


def show_first(title, f):
    ctx = f["context"]
    print(f"{title}: loading libconvjit + creating the emulator context {f['setup_ms']:.1f} ms, then the conv "
          f"{f['wall_ms']:.1f} ms wall: plan create {f['create_ms']:.1f} ms (kernels compiled "
          f"{ctx['kernels_compiled']}, disk hits {ctx['disk_hits']}, disk misses {ctx['disk_misses']}, memory "
          f"hits {ctx['memory_hits']}) + {f['wall_ms'] - f['create_ms']:.1f} ms weight pack, emulated run, copies")
    for stage, name, ms, src in f["kernels"]:
        print(f"  {stage:>5} {name}: compile {ms:.1f} ms ({src})")
    for m in f["messages"] or ["(no messages)"]:
        print(f"  said: {m}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return run(a.calls, True)
    with tempfile.TemporaryDirectory(prefix="convjit-overhead-") as d:
        os.environ["CONVJIT_CACHE_DIR"] = d   # a fresh disk cache for both processes: process 1 compiles
        run(a.calls, False)


if __name__ == "__main__":
    main()
