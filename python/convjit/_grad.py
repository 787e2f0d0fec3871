"""The gradients of convjit's convs (docs/python.md "Autograd"): the math
shared by the autograd.Function classes (_autograd.py, torch < 2.4), the
torch.library custom ops' registered backward (_library.py) and the
operator route's convolution_backward (_route.py). Each runs convjit:

    conv            dx = backward data of dt with w      (kind backward-data)
                    dw (+ db) = backward weight of x, dt  (kind backward-weight)
    conv_transpose  d input = forward conv of dt with w  (kind forward)
                    dw = backward weight of (x = dt, dy = input)

where dt is the gradient at the pre-activation. Each is computed only when
its input needs it. The epilogue: bias and residual stay fused (db = sum of
dt, dz = beta dt); relu stays fused (its derivative is y > 0, read from
y); silu and gelu_tanh run in torch under grad (fp32, on convjit's
pre-activation output) so torch's autograd differentiates them, since
their derivative cannot be read from y.

fp8 forward, bf16 backward: convjit's backward kernels take 16-bit
operands, so an fp8 conv's backward is the 16-bit conv of the dequantized
operands, the quantization passed straight through: dx = backward data of
(dt * w_scale) with w's decoded values; dw = x_scale * backward weight of
x's decoded values. fp8 tensors get no gradient themselves.

A backward calls its kernels through a Kernels class: Kernels here runs
them directly; _library.OpKernels through the custom ops, so that
torch.compile traces them.
"""

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

from . import _core, _lib


class Geom(NamedTuple):
    """A conv's normalized non-tensor arguments (the custom op's, the
    Function's and the backward's): tuples of ints, "" for none."""
    stride: tuple
    pad_lo: tuple
    pad_hi: tuple
    dilation: tuple
    groups: int
    upsample: tuple
    act: str          # "", "relu", "silu", "gelu_tanh": what the kernel applies
    beta: float
    x_scale: float    # 0.0: none
    w_scale: float    # 0.0: none (or a per-channel tensor beside)
    fp8: str          # "" or the uint8 tensors' fp8 format name
    out_dtype: str    # "" (the inputs' own) or "float32"


def plain_geom(stride, pad_lo, pad_hi, dilation, groups):
    """The Geom of a conv without epilogue, upsampling or scales."""
    return Geom(tuple(stride), tuple(pad_lo), tuple(pad_hi), tuple(dilation), groups, (1,) * len(stride), "", 1.0,
                0.0, 0.0, "", "")


# silu and gelu_tanh under grad: torch's own op on the fp32 value of
# convjit's pre-activation output, so its autograd gives their backward.
TORCH_ACTS = {"silu": F.silu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}

# dtypes by name (the custom ops' schema has no dtype type in every torch)
DTYPES = {"": None, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def dtype_name(d):
    return next(k for k, v in DTYPES.items() if v == d)


def out_dtype_of(name):
    return DTYPES.get(name, name)


# ---- the forward kernels, called by the Functions and the custom ops -------
def run_conv(x, w, bias, residual, x_prev, ws_t, g):
    return _core.conv(x, w, bias, g.stride, g.pad_lo, g.dilation, g.groups, padding_hi=g.pad_hi,
                      residual=residual, act=g.act or None, beta=g.beta, x_scale=g.x_scale or None,
                      w_scale=ws_t if ws_t is not None else (g.w_scale or None), x_prev=x_prev,
                      dtype=g.fp8 or None, out_dtype=out_dtype_of(g.out_dtype), upsample=g.upsample)


def run_conv_transpose(input, weight, bias, residual, output_padding, g):
    return _core.conv_transpose(input, weight, bias, g.stride, g.pad_lo, tuple(output_padding), g.groups,
                                g.dilation, residual=residual, act=g.act or None, beta=g.beta)


class Kernels:
    """The three convjit calls a backward makes, run directly."""

    @staticmethod
    def conv(x, w, g):
        return _core.conv(x, w, None, g.stride, g.pad_lo, g.dilation, g.groups, padding_hi=g.pad_hi)

    @staticmethod
    def backward_data(dy, w, x_size, channels_last, g):
        return _core.backward_data(dy, w, x_size, g.stride, g.pad_lo, g.pad_hi, g.dilation, g.groups, channels_last)

    @staticmethod
    def backward_weight(x, dy, w_size, g, dw_dtype, with_db):
        return _core.backward_weight(x, dy, w_size, g.stride, g.pad_lo, g.pad_hi, g.dilation, g.groups, dw_dtype,
                                     with_db)


# ---- fp8 operands in the backward -------------------------------------------
_FP8_TABLES = {}


def _fp8_table(code, device):
    """The 256 values of an fp8 format (E4M3FN: exponent bias 7, S.1111.111
    NaN; E4M3FNUZ: bias 8, 0x80 the NaN), each exact in bf16 and f16
    (3 mantissa bits, exponents -10..8)."""
    key = (code, str(device))
    t = _FP8_TABLES.get(key)
    if t is None:
        bias, nan = (7, (0x7F, 0xFF)) if code == _lib.DTYPE_FP8_E4M3FN else (8, (0x80,))
        vals = []
        for c in range(256):
            e, m = (c >> 3) & 0xF, c & 7
            v = (m / 8.0) * 2.0 ** (1 - bias) if e == 0 else (1.0 + m / 8.0) * 2.0 ** (e - bias)
            vals.append(math.nan if c in nan else (-v if c & 0x80 else v))
        t = _FP8_TABLES[key] = torch.tensor(vals, dtype=torch.float32, device=device)
    return t


def decoded(t, fp8, dtype):
    """A 16-bit tensor of t's values: t itself when 16-bit, else its fp8
    values decoded (exact in dtype)."""
    if t.dtype in _core.TORCH_16:
        return t
    if t.dtype in _core.TORCH_FP8:
        return t.to(dtype)
    return _fp8_table(_core.FP8_NAMES[fp8], t.device)[t.long()].to(dtype)


def _channels_last(t):
    return _core.layout_of(t, t.dim() - 2) == _lib.LAYOUT_NDHWC


def _sum_pool(d, up):
    """The adjoint of nearest upsampling by up: each input position's
    gradient is the sum of its up[0]*up[1]*... copies' (in fp32, one
    rounding to d's dtype)."""
    shape = list(d.shape[:2])
    for s, f in zip(d.shape[2:], up):
        shape += [s // f, f]
    return d.float().reshape(shape).sum(dim=tuple(range(3, len(shape), 2))).to(d.dtype)


def _upsampled(x, up):
    for i, f in enumerate(up):
        if f != 1:
            x = x.repeat_interleave(f, dim=2 + i)
    return x


def _channel_view(t, rank):
    return t.view((1, -1) + (1,) * rank)


# ---- the backward -----------------------------------------------------------
def _epilogue_grads(g, y, dy, needs_residual, residual_dtype):
    """(dt, dz): the gradient at the pre-activation (relu's mask from y; the
    other activations ran in torch) and the residual's, beta dt."""
    dt = dy
    if g.act == "relu":   # y > 0 exactly where t > 0; relu'(0) = 0 as torch's
        dt = torch.where(y > 0, dy, torch.zeros_like(dy))
    dz = None
    if needs_residual:
        dz = dt if g.beta == 1.0 else dt.float() * g.beta
        dz = dz.to(residual_dtype)
    return dt, dz


def bias_grad(dt, dtype):
    """db of a conv's bias: the sum of dt over all but the channel dim, in
    fp32, rounded once to dtype."""
    dims = (0,) + tuple(range(2, dt.dim()))
    return dt.float().sum(dim=dims).to(dtype)


def conv_backward(K, g, x, w, ws_t, y, dy, needs, bias_dtype, residual_dtype):
    """(dx, dw, db, dz) of y = act(alpha conv(x, w) + beta z + bias) for
    its gradient dy; each None unless needs (x, w, bias, residual) asks."""
    rank = w.dim() - 2
    dt, dz = _epilogue_grads(g, y, dy, needs[3], residual_dtype)
    compute = x.dtype if x.dtype in _core.TORCH_16 else w.dtype if w.dtype in _core.TORCH_16 else torch.bfloat16
    dt16 = dt.to(compute)   # an fp32 y (out_dtype) or an fp8 conv's bf16 y: the kernels read 16-bit dy
    dx = dw = db = None
    if needs[0]:
        w16 = decoded(w, g.fp8, compute)
        d = dt16
        if w16 is not w:   # dequantize: y = alpha sum(w8 q(x)) = w_scale sum(w8 x) straight through
            s = ws_t.float() if ws_t is not None else torch.tensor(g.w_scale or 1.0, device=dt.device)
            d = (dt.float() * (_channel_view(s, rank) if s.dim() else s)).to(compute)
        size = list(x.shape[:2]) + [e * f for e, f in zip(x.shape[2:], g.upsample)]
        dx = K.backward_data(d, w16, size, _channels_last(x), g)
        if any(f != 1 for f in g.upsample):
            dx = _sum_pool(dx, g.upsample)
    if needs[1]:
        x16 = decoded(x, g.fp8, compute)
        scale = g.x_scale if x16 is not x and g.x_scale else 1.0
        dw, db = K.backward_weight(_upsampled(x16, g.upsample), dt16, list(w.shape), g,
                                   torch.float32 if scale != 1.0 else w.dtype, bool(needs[2]))
        if scale != 1.0:
            dw = (dw * scale).to(w.dtype)
        db = db.to(bias_dtype) if needs[2] else None
    elif needs[2]:
        db = bias_grad(dt, bias_dtype)
    return dx, dw, db, dz


def conv_transpose_backward(K, g, input, weight, y, dy, needs, bias_dtype, residual_dtype):
    """(d input, d weight, d bias, d residual) of y = act(conv_transpose(
    input, weight) + beta z + bias): the transposed conv is the backward
    data of a forward conv F (x = y's shape, w = weight, F's y = input), so
    d input = F(dt) and d weight = F's backward weight of (x = dt, dy =
    input)."""
    dt, dz = _epilogue_grads(g, y, dy, needs[3], residual_dtype)
    dt16 = dt.to(input.dtype)
    # F's output extents from dt's (the C library's formula): input's, or
    # more when output_padding >= stride (dilation > stride): positions past
    # input's see no input
    f_out = _core.out_dims(_core.geometry_key(dt.dim() - 2, tuple(dt.shape[2:]), tuple(weight.shape[2:]), g.stride,
                                              g.pad_lo, g.pad_hi, g.dilation))
    extra = [fo - i for fo, i in zip(f_out, input.shape[2:])]
    d_in = d_w = db = None
    if needs[0]:
        d_in = K.conv(dt16, weight, g)
        if any(extra):
            d_in = d_in[(slice(None), slice(None)) + tuple(slice(0, i) for i in input.shape[2:])]
    if needs[1]:
        src = input
        if any(extra):
            pads = []
            for e in reversed(extra):
                pads += [0, e]
            src = F.pad(input, pads)
        d_w, _ = K.backward_weight(dt16, src, list(weight.shape), g, weight.dtype, False)
    if needs[2]:
        db = bias_grad(dt, bias_dtype)
    return d_in, d_w, db, dz


DOUBLE_BACKWARD = ("convjit: double backward (differentiating a gradient that went through convjit's backward "
                   "kernels, e.g. torch.autograd.grad(..., create_graph=True) then backward of the result) is not "
                   "supported: those kernels have no backward of their own; use torch's convs for higher-order "
                   "gradients")


def refuse_double_backward(grads, inputs):
    """With create_graph=True (grad mode on in backward) the returned
    gradients carry a node that raises DOUBLE_BACKWARD if they are differentiated
    (torch's once_differentiable mechanism, with convjit's message)."""
    if not torch.is_grad_enabled() or not any(t is not None and t.requires_grad for t in inputs):
        return grads
    live = [i for i, t in enumerate(grads) if t is not None]
    if not live:
        return grads
    err = torch._C._functions.DelayedError(DOUBLE_BACKWARD.encode(), len(live))
    fake = []
    for i in live:
        t = grads[i].detach()
        t.requires_grad = True
        fake.append(t)
    out = err(*fake)
    out = out if isinstance(out, tuple) else (out,)
    grads = list(grads)
    for i, t in zip(live, out):
        grads[i] = t
    return tuple(grads)
