#!/usr/bin/python3
"""convjit-emu, the tool that runs any gfx942/gfx950 code object on the
emulator (issue 16), on the hand-written kernels of tests/emu/kernels and on
a transpose kernel that convjit-dump --save-dir writes (the acceptance case).

usage: test_convjit_emu.py CONVJIT_EMU CONVJIT_DUMP KERNEL_DIR
(registered by tests/convjit_emu.cmake as ctest tools/convjit_emu). Every
expected output is computed here from the inputs this script writes; stdlib
only. Exit 0 when every check passes, 1 otherwise (each failure printed).
"""
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

EMU, DUMP, KDIR = sys.argv[1:4]
ARCHES = ("gfx942", "gfx950")
TMP = tempfile.mkdtemp(prefix="cj_emu_tool_")


def co(name, arch):
    return os.path.join(KDIR, "%s.%s.co" % (name, arch))


def path(name):
    return os.path.join(TMP, name)


def write(name, data):
    p = path(name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def read(p):
    with open(p, "rb") as f:
        return f.read()


def run(args, rc=0, tool=EMU):
    """Runs the tool; fails unless it exits rc. Returns (stdout, stderr)."""
    p = subprocess.run([tool] + args, capture_output=True, text=True, timeout=60)
    if p.returncode != rc:
        raise AssertionError("%s %s: exit %d, expected %d\nstdout: %s\nstderr: %s"
                             % (os.path.basename(tool), " ".join(args), p.returncode, rc,
                                p.stdout[-2000:], p.stderr[-2000:]))
    return p.stdout, p.stderr


def fails(args, *fragments):
    """The tool exits 2 with "convjit-emu: " + a message holding every fragment."""
    _, err = run(args, rc=2)
    if not err.startswith("convjit-emu: "):
        raise AssertionError("%s: stderr does not start with 'convjit-emu: ': %r" % (args, err))
    for f in fragments:
        if f not in err:
            raise AssertionError("%s: stderr lacks %r: %r" % (args, f, err))
    return err


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def launch(kernel_co, kernel, grid, block, args, outs=(), extra=()):
    a = [kernel_co, "--kernel", kernel, "--grid", ",".join(map(str, grid)),
         "--block", ",".join(map(str, block))]
    for k, v in args:
        a += ["--arg", "%s=%s" % (k, v)]
    for k, v in outs:
        a += ["--out", "%s=%s" % (k, v)]
    return a + list(extra)


# ---- the hand-written kernels -------------------------------------------

def saxpy_inputs(seed, n):
    # integers in [-1000, 1000] and a = 1.5: a*x + y is a multiple of 0.5
    # below 2^12, exact in float32, so the result is compared bit for bit
    r = random.Random(seed)
    x = [float(r.randint(-1000, 1000)) for _ in range(n)]
    y = [float(r.randint(-1000, 1000)) for _ in range(n)]
    want = struct.pack("<%df" % n, *[1.5 * a + b for a, b in zip(x, y)])
    return (write("x%d.bin" % seed, struct.pack("<%df" % n, *x)),
            write("y%d.bin" % seed, struct.pack("<%df" % n, *y)), want)


def saxpy_args(xp, yp, n):
    return [("x", "@" + xp), ("y", "@" + yp), ("a", "1.5f"), ("n", str(n))]


def test_saxpy():
    for i, arch in enumerate(ARCHES):
        for grid, block in (((4, 1, 1), (256, 1, 1)), ((10, 1, 1), (100, 1, 1))):
            xp, yp, want = saxpy_inputs(100 * i + block[0], 1000)
            out = path("saxpy_out.bin")
            run(launch(co("saxpy", arch), "saxpy", grid, block, saxpy_args(xp, yp, 1000), [("y", out)],
                       ["--arch", arch]))
            check(read(out) == want, "saxpy %s grid %s block %s: y differs" % (arch, grid, block))


def test_saxpy_json_stats_hazards_off():
    xp, yp, want = saxpy_inputs(7, 1000)
    out = path("saxpy_json.bin")
    so, _ = run(launch(co("saxpy", "gfx942"), "saxpy", (4, 1, 1), (256, 1, 1), saxpy_args(xp, yp, 1000),
                       [("y", out)], ["--json", "--hazards", "off"]))
    j = json.loads(so)
    check(j["tool"] == "convjit-emu" and j["ok"] is True and j["kernel"] == "saxpy", "json head: %s" % so)
    s = j["stats"]
    for key in ("total", "salu", "valu", "vmem", "lds", "mfma", "waitcnt", "barrier", "smem", "branch",
                "workgroups", "waves"):
        check(isinstance(s.get(key), int), "json stats lack %s: %s" % (key, so))
    # saxpy.s: 16 waves, each runs all 18 instructions (3 of them VMEM)
    check(s["workgroups"] == 4 and s["waves"] == 16, "json workgroups/waves: %s" % s)
    check(s["total"] == 16 * 18 and s["vmem"] == 16 * 3, "json total/vmem: %s" % s)
    check(j["outputs"] == [{"name": "y", "file": out, "bytes": 4000}], "json outputs: %s" % j["outputs"])
    check(read(out) == want, "saxpy --hazards off: y differs")
    # --stats (text) runs and reports the counts
    so, _ = run(launch(co("saxpy", "gfx950"), "saxpy", (4, 1, 1), (256, 1, 1), saxpy_args(xp, yp, 1000),
                       extra=["--stats", "--hazards", "on"]))
    check("vmem" in so and "288" in so, "--stats output lacks vmem / the total 288: %s" % so)


def test_args():
    # args.s copies kernarg bytes [0, 176) to out (offsets from its metadata)
    for arch in ARCHES:
        out = path("args_out.bin")
        run(launch(co("args", arch), "args", (3, 2, 2), (16, 2, 2),
                   [("out", "zeros:176"), ("i32", "-123456789"), ("i64", "0x123456789abcdef0"), ("f32", "0.1f"),
                    ("f64", "0.1"), ("i16", "-2"), ("#6", "200")], [("out", out)], ["--lds", "256"]))
        b = read(out)
        check(len(b) == 176, "args: out is %d bytes" % len(b))
        check(struct.unpack_from("<i", b, 8)[0] == -123456789, "args: i32")
        check(struct.unpack_from("<q", b, 16)[0] == 0x123456789abcdef0, "args: i64")
        check(b[24:28] == struct.pack("<f", 0.1), "args: f32 is not 0.1 rounded to float")
        check(b[32:40] == struct.pack("<d", 0.1), "args: f64")
        check(b[40:42] == b"\xfe\xff" and b[42] == 200, "args: i16 / i8")
        check(struct.unpack_from("<3I", b, 48) == (3, 2, 2), "args: hidden_block_count")
        check(struct.unpack_from("<3H", b, 60) == (16, 2, 2), "args: hidden_group_size")
        check(struct.unpack_from("<H", b, 112)[0] == 3, "args: hidden_grid_dims")
        check(struct.unpack_from("<I", b, 168)[0] == 256, "args: hidden_dynamic_lds_size")


def test_lds_reduce():
    r = random.Random(3)
    x = [r.getrandbits(32) for _ in range(3 * 256)]
    want = struct.pack("<3I", *[sum(x[256 * g:256 * g + 256]) & 0xffffffff for g in range(3)])
    xp = write("lds_x.bin", struct.pack("<768I", *x))
    for arch in ARCHES:
        for kernel, lds in (("lds_reduce", ["--lds", "1024"]), ("lds_reduce_static", [])):
            out = path("lds_out.bin")
            so, _ = run(launch(co("lds_reduce", arch), kernel, (3, 1, 1), (256, 1, 1),
                               [("x", "@" + xp), ("out", "zeros:12")], [("out", out)], lds + ["--json"]))
            check(read(out) == want, "%s %s: sums differ" % (kernel, arch))
            s = json.loads(so)["stats"]
            # lds_reduce.s: 9 barriers per wave, 12 waves
            check(s["barrier"] == 9 * 12 and s["waves"] == 12, "%s: stats %s" % (kernel, s))
    # the dynamic-LDS kernel given no dynamic LDS stops at its first LDS store
    fails(launch(co("lds_reduce", "gfx942"), "lds_reduce", (1, 1, 1), (256, 1, 1),
                 [("x", "@" + xp), ("out", "zeros:12")]), "ds_write_b32", "lane")


def bf16_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0] >> 16  # exact: small integers


def test_mfma():
    r = random.Random(11)
    a = [float(r.randint(-8, 8)) for _ in range(256)]
    bt = [float(r.randint(-8, 8)) for _ in range(256)]
    # integers in [-8, 8]: exact in bf16, products and 16-term sums exact in
    # float32, so D equals the plain matmul exactly (bt is N x K)
    d = [sum(a[16 * i + k] * bt[16 * j + k] for k in range(16)) for i in range(16) for j in range(16)]
    ap = write("a.bin", struct.pack("<256H", *map(bf16_bits, a)))
    bp = write("bt.bin", struct.pack("<256H", *map(bf16_bits, bt)))
    for arch in ARCHES:
        out = path("d.bin")
        so, _ = run(launch(co("mfma", arch), "mfma", (1, 1, 1), (64, 1, 1),
                           [("a", "@" + ap), ("bt", "@" + bp), ("d", "zeros:1024")], [("d", out)], ["--json"]))
        check(read(out) == struct.pack("<256f", *d), "mfma %s: d differs" % arch)
        check(json.loads(so)["stats"]["mfma"] == 1, "mfma %s: stats %s" % (arch, so))


# ---- listing and --isa ---------------------------------------------------

def has_line(text, *words):
    for line in text.splitlines():
        toks = re.findall(r"[A-Za-z0-9_#.]+", line)
        if all(w in toks for w in words):
            return True
    return False


def test_listing():
    so, _ = run([co("saxpy", "gfx942")])
    for name, kind, off, size in (("x", "global_buffer", 0, 8), ("y", "global_buffer", 8, 8),
                                  ("a", "by_value", 16, 4), ("n", "by_value", 20, 4)):
        check(has_line(so, name, kind, str(off), str(size)), "listing lacks arg %s %s %d %d:\n%s"
              % (name, kind, off, size, so))
    check(has_line(so, "hidden_group_size_x", "36", "2"), "listing lacks hidden_group_size_x:\n" + so)
    check("saxpy" in so and "gfx942" in so, "listing lacks the kernel or its arch:\n" + so)
    so, _ = run([co("lds_reduce", "gfx950")])
    check("lds_reduce_static" in so and re.search(r"\blds_reduce\b(?!_)", so), "listing lacks a kernel:\n" + so)
    check("1024" in so, "listing lacks lds_reduce_static's 1024 LDS bytes:\n" + so)
    so, _ = run([co("unsupported", "gfx942")])
    check("v_mfma_f64_16x16x4_f64" in so, "listing does not name the instruction outside the subset:\n" + so)


def test_isa():
    so, _ = run(["--isa"])
    # "mnemonic class" lines, and one "# N mnemonics ..." comment counting them
    lines = [l.split() for l in so.splitlines() if l.strip() and not l.startswith("#")]
    check(len(lines) > 100 and all(len(l) == 2 for l in lines), "--isa: not 'mnemonic class' lines:\n" + so[:500])
    counts = re.findall(r"^# (\d+) mnemonics", so, re.M)
    check(counts == [str(len(lines))], "--isa: the count %s is not the %d lines" % (counts, len(lines)))
    names = {l[0] for l in lines}
    for m in ("s_endpgm", "v_mfma_f32_16x16x16_bf16", "global_load_dword", "ds_read_b32", "s_barrier"):
        check(m in names, "--isa lacks " + m)
    check("v_mfma_f64_16x16x4_f64" not in names, "--isa lists the FP64 MFMA unsupported.s relies on")


# ---- bad inputs ----------------------------------------------------------

def test_bad_inputs():
    s942 = co("saxpy", "gfx942")
    xp, yp, _ = saxpy_inputs(1, 1000)
    good = saxpy_args(xp, yp, 1000)
    g, b = (4, 1, 1), (256, 1, 1)
    text = write("text.co", b"this is not a code object\n" * 4)
    fails([text], "not an ELF")
    fails(launch(text, "saxpy", g, b, good), "not an ELF")
    fails([co("bad_arch", "gfx90a")], "gfx90a")
    fails(launch(s942, "saxpy", g, b, good, extra=["--arch", "gfx950"]), "gfx942", "gfx950")
    fails(launch(s942, "nope", g, b, good), "nope", "saxpy")
    fails(launch(s942, "saxpy", g, b, good[:3]), "'n'", "not given")
    fails(launch(s942, "saxpy", g, b, good[:2] + [("a", "@" + xp), good[3]]), "'a'", "by_value")
    fails(launch(s942, "saxpy", g, b, [("x", "42")] + good[1:]), "'x'", "global_buffer")
    fails(launch(s942, "saxpy", g, b, good + [("zz", "1")]), "'zz'")
    fails(launch(s942, "saxpy", g, b, good[:3] + [("n", "4294967296")]), "'n'")
    fails(launch(s942, "saxpy", g, b, [good[0], ("y", "zeros:256")] + good[2:]), "outside every allocation", "lane",
          "argument 'y'")
    fails(launch(s942, "saxpy", g, b, [("x", "@" + path("missing.bin"))] + good[1:]), "missing.bin")
    fails(launch(s942, "saxpy", (0, 1, 1), b, good), "grid")
    fails(launch(s942, "saxpy", g, (2048, 1, 1), good), "block")
    fails(launch(s942, "saxpy", g, b, good, extra=["--bogus"]), "--bogus")
    fails(launch(s942, "saxpy", g, b, good, extra=["--out", "zz=" + path("zz.bin")]), "zz", "no --arg gives a buffer")
    fails(launch(s942, "saxpy", g, b, good, extra=["--kernel", "saxpy"]), "--kernel", "given twice")
    fails(launch(s942, "saxpy", g, b, good + [("#0", "@" + xp)]), "'#0' (x)", "given twice")
    fails(launch(s942, "saxpy", g, b, good, extra=["--hazards", "maybe"]), "hazards")
    fails(launch(co("args", "gfx942"), "args", (1, 1, 1), (64, 1, 1),
                 [("out", "zeros:176"), ("i32", "1"), ("i64", "2"), ("f32", "3.0f"), ("f64", "4.0"),
                  ("i16", "5"), ("i8", "256")]), "'i8'")
    fails(launch(co("unsupported", "gfx950"), "unsupported", (1, 1, 1), (64, 1, 1), [("go", "1")]),
          "v_mfma_f64_16x16x4_f64", "wave 0")  # a whole-wave stop: no lane to name
    run(launch(co("unsupported", "gfx950"), "unsupported", (1, 1, 1), (64, 1, 1), [("go", "0")]))
    # --json on failure: one object with ok false, still exit 2
    p = subprocess.run([EMU] + launch(s942, "nope", g, b, good, extra=["--json"]), capture_output=True, text=True)
    check(p.returncode == 2, "--json failure: exit %d" % p.returncode)
    j = json.loads(p.stdout)
    check(j["tool"] == "convjit-emu" and j["ok"] is False and "nope" in j["error"], "--json failure: %s" % p.stdout)


# ---- the instruction budget (loop.s) ---------------------------------------

def test_instruction_budget():
    """Kernels that never end stop at the per-wave instruction budget with
    exit 2, naming the kernel, the wave and the program counter: with the
    default budget (the acceptance: `timeout 30 convjit-emu loop.co --kernel
    spin ...` exits 2 well inside 30 s; the seconds are printed, not
    asserted), with --max-instructions and with CONVJIT_EMU_MAX_INSTRUCTIONS."""
    for kernel, args in (("spin", []), ("valu_loop", [("trips", "0")])):
        a = launch(co("loop", "gfx942"), kernel, (1, 1, 1), (256, 1, 1), args)
        t0 = time.monotonic()
        try:
            p = subprocess.run([EMU] + a, capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s with the default budget did not stop within 30 s" % kernel)
        secs = time.monotonic() - t0
        print("  %s, default budget: exit %d after %.1f s (host)" % (kernel, p.returncode, secs))
        check(p.returncode == 2, "%s: exit %d, expected 2: %s" % (kernel, p.returncode, p.stderr[-500:]))
        for f in ("kernel %s at .text+0x" % kernel, "wave 0", "instructions", "--max-instructions"):
            check(f in p.stderr, "%s: stderr lacks %r: %r" % (kernel, f, p.stderr))
    for arch in ARCHES:
        kco = co("loop", arch)
        fails(launch(kco, "spin", (2, 1, 1), (64, 1, 1), [], extra=["--max-instructions", "1000"]),
              "kernel spin at .text+0x0", "'s_branch", "1000 instructions")
        # valu_loop executes 3 * trips + 4 instructions per wave: exactly the budget runs, one fewer stops
        run(launch(kco, "valu_loop", (1, 1, 1), (128, 1, 1), [("trips", "100")], extra=["--max-instructions", "304"]))
        fails(launch(kco, "valu_loop", (1, 1, 1), (128, 1, 1), [("trips", "100")],
                     extra=["--max-instructions", "303"]), "kernel valu_loop at .text+0x11c", "303 instructions")
    env = dict(os.environ, CONVJIT_EMU_MAX_INSTRUCTIONS="500")
    p = subprocess.run([EMU] + launch(co("loop", "gfx950"), "spin", (1, 1, 1), (64, 1, 1), []), capture_output=True,
                       text=True, timeout=30, env=env)
    check(p.returncode == 2 and "500 instructions" in p.stderr, "CONVJIT_EMU_MAX_INSTRUCTIONS=500: %r" % p.stderr)
    kco = co("loop", "gfx942")
    for bad in ("0", "x", "-5", "18446744073709551616"):
        _, err = run(launch(kco, "spin", (1, 1, 1), (64, 1, 1), [], extra=["--max-instructions", bad]), rc=2)
        check("--max-instructions '%s'" % bad in err, "--max-instructions %s: %r" % (bad, err))


# ---- acceptance: convjit-dump's transpose kernel on the tool -------------

def plan_field(text, key):
    m = re.search(r"^\s*%s\s*=\s*(\S.*?)\s*(#.*)?$" % key, text, re.M)
    check(m, "convjit-dump output lacks '%s = ...':\n%s" % (key, text))
    return m.group(1)


def test_globals():
    # globals.s: a .rodata table (rel32) plus a .data global through the GOT
    tab = [31, -4, 159, 26, -535, 89, 79, 3, 238, -462, 643, 38, 327, -950, 288, 41]
    want = struct.pack("<64i", *[tab[i & 15] + 1000 for i in range(64)])
    for arch in ARCHES:
        out = path("globals_out.bin")
        run(launch(co("globals", arch), "globals", (1, 1, 1), (64, 1, 1), [("out", "zeros:256")], [("out", out)]))
        check(read(out) == want, "globals %s: out is not tab[i & 15] + 1000" % arch)


def test_dump_transpose():
    for arch, (n, c, s) in (("gfx942", (2, 16, 64)), ("gfx942", (1, 24, 40)), ("gfx950", (2, 16, 64))):
        d = tempfile.mkdtemp(dir=TMP)
        so, _ = run(["--arch", arch, "--op", "transpose", "--dtype", "bf16", "--shape", "%d,%d,%d" % (n, c, s),
                     "--save-dir", d], tool=DUMP)
        name = plan_field(so, "name")
        grid = [int(v) for v in plan_field(so, "grid").split(" x ")]
        block = [int(v) for v in plan_field(so, "block").split(" x ")]
        if (n, c, s) == (2, 16, 64):  # the plan of the example
            check(grid == [1, 1, 2] and block == [256, 1, 1], "plan grid %s block %s" % (grid, block))
        kco = os.path.join(d, name + ".co")
        check(os.path.exists(kco), "convjit-dump --save-dir wrote no %s" % kco)
        r = random.Random(n * 1000 + c * 10 + s)
        # random bf16 bits, NaN codes and all: the kernel moves them unchanged
        x = [r.getrandbits(16) for _ in range(n * c * s)]
        want = [x[(i * c + k) * s + j] for i in range(n) for j in range(s) for k in range(c)]  # y[n][s][c] = x[n][c][s]
        xp = write("t_in.bin", struct.pack("<%dH" % len(x), *x))
        out = path("t_out.bin")
        run(launch(kco, name, grid, block, [("x", "@" + xp), ("y", "zeros:%d" % (2 * n * c * s))], [("y", out)]))
        check(read(out) == struct.pack("<%dH" % len(want), *want),
              "transpose %s %d,%d,%d: y is not x transposed" % (arch, n, c, s))


def main():
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_") and callable(v)]
    failed = 0
    for t in tests:
        try:
            t()
            print("PASS", t.__name__)
        except (AssertionError, KeyError, ValueError, subprocess.TimeoutExpired) as e:
            failed += 1
            print("FAIL", t.__name__ + ":", e)
    print("%d of %d passed" % (len(tests) - failed, len(tests)))
    shutil.rmtree(TMP, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
