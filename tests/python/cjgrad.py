"""Float64 gradients and their derived bounds for the binding's autograd
tests (test_autograd.py) and the training example.

A convjit gradient is a sum of exact products (bf16 x bf16 is exact in
fp32) in fp32, rounded once to the gradient's dtype. What enters the sums
is dt, the gradient at the conv's pre-activation, which convjit may hold
with an error delta (elementwise, bounded below). With M the linear map
that takes dt to the gradient with every operand replaced by its absolute
value (a float64 vector-Jacobian product of the float64 conv of |x| or
|w|), and n the products per gradient element:

  |g - ref| <= rel |ref| + (1 + rel) E + tiny,
  E = gamma_n M(|dt64| + delta) + M(delta) + n 2^-52 M(|dt64|) + (n + 2) 2^-126

(gamma_n any-order fp32 summation, Higham; the float64 reference's own
sums; an fp32 denormal flushed per step; rel and tiny the output dtype's
rounding, cjtest.Y_REL and Y_ABS; cjtest.check asserts it.) delta:
- no activation, bias, residual: 0 (dt is dy, the same bf16 values);
- relu (fused; mask y > 0): |dy| where |t64| <= Bt (the forward's bound
  on the pre-activation t: there the mask may differ), else 0;
- silu, gelu_tanh (torch's fp32 op on convjit's bf16 t under grad):
  |dy| (A2 Bt + EVAL (1 + |t64|)) plus dt's rounding to the conv's dtype
  (2^-8 |dt| for bf16),
  with A2 = sup |act''| (test_autograd checks it on a dense grid) and EVAL
  the fp32 evaluation of act' (a few ulps of terms below 8 |t| for
  |t| < 16, which the tests assert, far under 2^-15 (1 + |t|)).
Every expected value comes from torch in float64; nothing here runs
convjit.

A fused nearest upsample's dx is the backward data over the upsampled
extents (rounded), summed over each position's copies and rounded again:
pooled_bound.
"""

import math

import torch
import torch.nn.functional as F

import cjtest as cj

A2 = {"silu": 0.55, "gelu_tanh": 0.85}   # sup |act''|: 0.5 (silu) and 0.798 (gelu_tanh), both at t = 0
EVAL = 2.0 ** -15
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def vjp(f, args, i, v):
    """The vector-Jacobian product of f at args (float64) for input i."""
    args = [a.detach().double().requires_grad_(j == i) for j, a in enumerate(args)]
    (g,) = torch.autograd.grad(f(*args), args[i], v)
    return g


def conv_fn(rank, stride=1, pad_lo=0, pad_hi=None, dilation=1, groups=1, upsample=None):
    """f(x, w): the float64 forward conv (padding before/after each dim by
    F.pad, x nearest-upsampled first when upsample is given)."""
    def tup(v):
        return (v,) * rank if isinstance(v, int) else tuple(v)
    lo = tup(pad_lo)
    hi = lo if pad_hi is None else tup(pad_hi)
    pads = []
    for i in reversed(range(rank)):
        pads += [lo[i], hi[i]]

    def f(x, w):
        if upsample is not None:
            for i, u in enumerate(tup(upsample)):
                x = x.repeat_interleave(u, dim=2 + i)
        return _CONV[rank](F.pad(x, pads), w, None, stride, 0, dilation, groups)
    return f


def conv_transpose_fn(rank, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    def f(x, w):
        return _CT[rank](x, w, None, stride, padding, output_padding, groups, dilation)
    return f


def act_delta(act, t64, bt, dy, dtype=torch.bfloat16):
    """delta: the bound on |dt - dt64| of the module docstring (dt rounded
    to dtype, the conv's)."""
    dy = dy.double().abs()
    if act in (None, "identity"):
        return torch.zeros_like(t64)
    if act == "relu":
        return torch.where(t64.abs() <= bt, dy, torch.zeros_like(dy))
    t = t64.detach().clone().requires_grad_()
    (a1,) = torch.autograd.grad(cj.ACT64[act](t).sum(), t)   # act'(t64)
    e = dy * (A2[act] * bt + EVAL * (1.0 + t64.abs()))
    return e + cj.Y_REL[dtype] * (dy * (a1.abs() + A2[act] * bt) + e)


def bound(ref, m_dt, m_delta, terms, dtype):
    """The bound of the module docstring: ref the float64 gradient, m_dt =
    M(|dt64| + delta), m_delta = M(delta), terms the products per element."""
    e = cj.gamma(terms) * m_dt + m_delta + terms * 2.0 ** -52 * m_dt + (terms + 2) * 2.0 ** -126
    rel = cj.Y_REL[dtype]
    return rel * ref.abs() + (1.0 + rel) * e + cj.Y_ABS[dtype]


def pool(v, up):
    """The adjoint of nearest upsampling by up: each position's sum over
    its copies."""
    shape = list(v.shape[:2])
    for s, f in zip(v.shape[2:], up):
        shape += [s // f, f]
    return v.reshape(shape).sum(dim=tuple(range(3, len(shape), 2)))


def pooled_bound(ref, child_ref, child_bound, up, dtype):
    """A fused upsample's dx: each copy's gradient is rounded to dtype
    (child_bound, from bound()), the f = prod(up) copies summed in fp32
    (gamma_f), the sum rounded once more."""
    e = pool(child_bound, up) + cj.gamma(math.prod(up)) * pool(child_ref.abs() + child_bound, up)
    rel = cj.Y_REL[dtype]
    return rel * ref.abs() + (1.0 + rel) * e + cj.Y_ABS[dtype]


def positions(t):
    """N times the spatial extents: the terms of a sum over a tensor's positions."""
    return t.shape[0] * math.prod(t.shape[2:])
