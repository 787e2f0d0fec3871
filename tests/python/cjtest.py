"""Shared helpers of the binding's tests: float64 references, an fp8
decoder and quantizer written from the format definitions, the error bound
of a convjit output, and a check that asserts it element by element and
records the worst fraction of the bound reached.

Nothing here calls convjit's numerics: every expected value comes from
torch.nn.functional in float64 or from the format tables below.

Test files import it with the test directory on sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
"""

import math
import os
import subprocess
import sys
import warnings

import torch
import torch.nn.functional as F

import convjit



def quiet():
    """Silences the once-per-process EmulatorWarning (test_runtime checks it
    in a subprocess) and GradientWarning. unittest's runner resets the
    filters when it starts, so test files call this from setUpModule."""
    warnings.simplefilter("ignore", convjit.EmulatorWarning)
    warnings.simplefilter("ignore", convjit.GradientWarning)


# ---- the bound --------------------------------------------------------------
# fp32 unit roundoff of one addition: 2^-23 (a whole ulp), the hardware's
# bound, since MFMA truncates its partial sums (docs/isa-notes.md §1, MFMA
# arithmetic; src/ref/ref_conv.c uses the same). The emulated MFMA rounds
# once to nearest (docs/emulator.md "Accumulation choice"), which is inside
# it; holding the emulator to the hardware's bound keeps these tests valid
# on a GPU and still fails a dropped product (test_ops).
U32 = 2.0 ** -23
BF16_REL = 2.0 ** -8      # bf16 round to nearest even: 8 significant bits -> relative error <= 2^-8
# y's final rounding per dtype: relative (unit roundoff of RNE) and absolute
# (half the subnormal step: f16 keeps subnormals in steps of 2^-24); an
# fp32 y is the kernel's fp32 value itself
Y_REL = {torch.bfloat16: BF16_REL, torch.float16: 2.0 ** -11, torch.float32: 0.0}
Y_ABS = {torch.bfloat16: 0.0, torch.float16: 2.0 ** -25, torch.float32: 0.0}
ACT_SLOPE = {None: 1.0, "relu": 1.0, "silu": 1.13, "gelu_tanh": 1.13}   # sup |act'|, checked in test_epilogue
# The kernel's fp32 sigmoid(t) = rcp(1 + exp2(-t log2 e)) (docs/api.md
# "Fused epilogue"): the fp32 rounding of -t log2 e moves exp by |t| 2^-24
# relative, exp2, rcp, the add and the multiply by v add ~1 ulp each, and
# gelu's cubic argument a few ulps times |t|; for |t| < 16 (asserted where
# used) that is < (4 |t| + 8) 2^-24 < 2^-17 of |act(t)|. 2^-15 leaves 4x.
ACT_REL = {None: 0.0, "relu": 0.0, "silu": 2.0 ** -15, "gelu_tanh": 2.0 ** -15}


def _silu64(t):
    return t * torch.sigmoid(t)


def _gelu_tanh64(t):   # docs/api.md: 0.5 v (1 + tanh(sqrt(2/pi)(v + 0.044715 v^3)))
    return 0.5 * t * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (t + 0.044715 * t ** 3)))


ACT64 = {None: lambda t: t, "relu": torch.relu, "silu": _silu64, "gelu_tanh": _gelu_tanh64}   # float64 references


def gamma(m):
    """Higham's gamma_m: any order of fp32 additions of m+1 terms (each with
    up to one prior rounding) errs by at most gamma_m * sum|terms|."""
    return m * U32 / (1.0 - m * U32)


def bound(ref, mag, terms, act=None, y_dtype=torch.bfloat16):
    """|y - ref| allowed for a convjit output y of y_dtype (bf16, f16 or
    f32), where ref is the float64 reference (after act) and mag the float64
    sum of |terms| before act (F.conv of |x|, |w|, plus |bias|, |beta z|,
    scaled for fp8).

    terms: the number of fp32 roundings an element's sum goes through
    (products, bias, residual, scale multiplies; each product of bf16, f16
    or fp8 values is exact in fp32: 8x8, 11x11 or 4x4 significant bits <= 24).
      E  = gamma_terms * mag                   fp32 accumulation, any order
         + terms * 2^-52 * mag                 the float64 reference's own sums
         + (terms + 2) * 2^-126                an fp32 denormal flushed per step
      Ea = slope * E + act_rel * (|ref| + slope * E)   through act (Lipschitz), and
                                               act's own fp32 evaluation
      |y - ref| <= 2^-8 |ref| + (1 + 2^-8) Ea  bf16 rounding of the fp32 value
                                               v, |v| <= |ref| + Ea (f16:
                                               2^-11 and + 2^-25 for its
                                               subnormals; f32: none)
    """
    e = gamma(terms) * mag + terms * 2.0 ** -52 * mag + (terms + 2) * 2.0 ** -126
    ea = ACT_SLOPE[act] * e + ACT_REL[act] * (ref.abs() + ACT_SLOPE[act] * e)
    rel = Y_REL[y_dtype]   # an fp32 y is the fp32 value v itself: |y - ref| <= Ea
    return rel * ref.abs() + (1.0 + rel) * ea + Y_ABS[y_dtype]


WORST = {}   # label -> worst fraction of the bound reached


def check(tc, y, ref, b, label, y_dtype=torch.bfloat16):
    """Asserts every element of y (y_dtype) is within b of ref (float64) and
    records max(|y - ref| / b) under label."""
    tc.assertEqual(tuple(y.shape), tuple(ref.shape), f"{label}: shape")
    tc.assertEqual(y.dtype, y_dtype, f"{label}: dtype")
    yd = y.double()
    tc.assertTrue(bool(torch.isfinite(yd).all()), f"{label}: non-finite output")
    err = (yd - ref).abs()
    frac = err / b
    worst = float(frac.max()) if frac.numel() else 0.0
    WORST[label] = max(WORST.get(label, 0.0), worst)
    bad = err > b
    if bool(bad.any()):
        i = int(frac.flatten().argmax())
        tc.fail(f"{label}: {int(bad.sum())} of {err.numel()} elements outside the bound; worst at flat "
                f"index {i}: y={float(yd.flatten()[i])!r} ref={float(ref.flatten()[i])!r} "
                f"err={float(err.flatten()[i]):.3e} bound={float(b.flatten()[i]):.3e} ({worst:.2f}x)")
    return worst


def report(name):
    """Prints the worst fractions (call from tearDownModule)."""
    if WORST:
        w = max(WORST.values())
        print(f"\n{name}: worst fraction of the bound {w:.3f} over {len(WORST)} checks; per check: " +
              ", ".join(f"{k}={v:.3f}" for k, v in sorted(WORST.items())), file=sys.stderr)


# ---- float64 references -----------------------------------------------------
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _tup(v, rank):
    return (v,) * rank if isinstance(v, int) else tuple(v)


def conv64(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, padding_hi=None):
    """F.conv in float64 of x, w (any dtype already holding the values,
    converted with .double()), with padding before (padding) and after
    (padding_hi, default = padding) each spatial dim applied by F.pad.
    Returns (ref, mag): the conv + bias and the conv of |x|, |w| + |bias|."""
    rank = w.dim() - 2
    x64, w64 = x.double(), w.double()
    unbatched = x64.dim() == rank + 1
    if unbatched:
        x64 = x64.unsqueeze(0)
    if isinstance(padding, str):
        ref = _CONV[rank](x64, w64, None, stride, padding, dilation, groups)
        mag = _CONV[rank](x64.abs(), w64.abs(), None, stride, padding, dilation, groups)
    else:
        lo = _tup(padding, rank)
        hi = lo if padding_hi is None else _tup(padding_hi, rank)
        pads = []
        for i in reversed(range(rank)):   # F.pad lists the last dim first
            pads += [lo[i], hi[i]]
        x64 = F.pad(x64, pads)
        ref = _CONV[rank](x64, w64, None, stride, 0, dilation, groups)
        mag = _CONV[rank](x64.abs(), w64.abs(), None, stride, 0, dilation, groups)
    if bias is not None:
        shape = (1, -1) + (1,) * rank
        ref = ref + bias.double().view(shape)
        mag = mag + bias.double().abs().view(shape)
    if unbatched:
        ref, mag = ref.squeeze(0), mag.squeeze(0)
    return ref, mag


def products(w):
    """Products per output element: C/groups * T*R*S (w.shape[1] is C/groups)."""
    return math.prod(w.shape[1:])


# ---- random inputs ----------------------------------------------------------
def gen(seed):
    return torch.Generator().manual_seed(seed)


def randn_bf16(shape, g, scale=1.0, dtype=torch.bfloat16):
    """Normal values rounded to dtype (bf16, or f16: torch's own RNE conversions)."""
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def weight_bf16(shape, g, dtype=torch.bfloat16):
    """A weight scaled by 1/sqrt(fan_in), so outputs stay O(1)."""
    return randn_bf16(shape, g, 1.0 / math.sqrt(math.prod(shape[1:])), dtype)


# ---- fp8, from the format definitions ---------------------------------------
# E4M3FN (OCP): sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0
# is subnormal (m/8 * 2^-6); no inf; S.1111.111 (0x7f, 0xff) is NaN; 0x80 is -0.
# E4M3FNUZ: bias 8 (subnormal m/8 * 2^-7); 0x80 is the only NaN; no -0, no inf.
def _fp8_value(code, bias, nan):
    if code in nan:
        return math.nan
    s = -1.0 if code & 0x80 else 1.0
    e, m = (code >> 3) & 0xF, code & 7
    if e == 0:
        return s * (m / 8.0) * 2.0 ** (1 - bias)
    return s * (1.0 + m / 8.0) * 2.0 ** (e - bias)


FP8_TABLE = {
    "fp8_e4m3fn": torch.tensor([_fp8_value(c, 7, (0x7F, 0xFF)) for c in range(256)], dtype=torch.float64),
    "fp8_e4m3fnuz": torch.tensor([_fp8_value(c, 8, (0x80,)) for c in range(256)], dtype=torch.float64),
}
FP8_NAN = {"fp8_e4m3fn": (0x7F, 0xFF), "fp8_e4m3fnuz": (0x80,)}


def fp8_decode(codes, fmt):
    """float64 values of a uint8 tensor of fp8 codes."""
    return FP8_TABLE[fmt][codes.long()]


def fp8_random_codes(shape, g, fmt, max_exp_code=None):
    """Random non-NaN codes (uniform over the codes, so every binade and the
    subnormals appear); max_exp_code caps the exponent field to keep sums small."""
    c = torch.randint(0, 256, shape, generator=g, dtype=torch.int64)
    if max_exp_code is not None:
        e = (c >> 3) & 0xF
        c = torch.where(e > max_exp_code, (c & 0x87) | (max_exp_code << 3), c)
    for n in FP8_NAN[fmt]:
        c = torch.where(c == n, torch.zeros_like(c), c)
    return c.to(torch.uint8)


def fp8_quantize(v, fmt):
    """Values (float64) of v rounded to fmt: round to nearest, ties to the
    even code (mantissa lsb 0), saturating at the largest finite value."""
    tab = FP8_TABLE[fmt]
    pos = torch.tensor([c for c in range(128) if not math.isnan(tab[c])], dtype=torch.int64)
    vals = tab[pos]                     # increasing with the code
    a = v.abs()
    hi = torch.searchsorted(vals, a).clamp(max=len(vals) - 1)   # first value >= a
    lo = (hi - 1).clamp(min=0)
    dlo, dhi = (a - vals[lo]).abs(), (vals[hi] - a).abs()
    even_hi = (pos[hi] & 1) == 0
    pick = torch.where((dhi < dlo) | ((dhi == dlo) & even_hi), hi, lo)
    q = vals[pick]
    q = torch.where(a >= vals[-1], vals[-1].expand_as(a), q)
    return torch.where(v < 0, -q, q)


def fp8_quantize_like_prepass(x_bf16, scale, fmt):
    """docs/api.md "Quantizing": q = fp8(fl32(v * fl32(1/s))), returned as
    the dequantized float64 value q * fl32(s)."""
    r = torch.tensor(1.0 / scale, dtype=torch.float32)
    t = x_bf16.float() * r              # one fp32 multiply, round to nearest even
    s32 = float(torch.tensor(scale, dtype=torch.float32))
    return fp8_quantize(t.double(), fmt) * s32


# ---- subprocesses -----------------------------------------------------------
def run_python(code, timeout=120, env=None):
    """Runs code in a fresh /usr/bin/python3 with this process's environment
    (PYTHONPATH, CONVJIT_LIBRARY, CONVJIT_CACHE_DIR) updated by env;
    returns CompletedProcess."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
