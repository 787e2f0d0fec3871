"""Gradients through convjit.ops.conv and conv_transpose (docs/python.md
"Autograd").

ops.conv / ops.conv_transpose route a call here when a tensor input needs a
gradient (grad mode on), or when torch.compile is tracing and torch has
torch.library custom ops (_library.py). The forward is the same C plan as
without grad; backward runs convjit too:

    conv            dx = backward data of dt with w      (kind backward-data)
                    dw (+ db) = backward weight of x, dt  (kind backward-weight)
    conv_transpose  d input = forward conv of dt with w  (kind forward)
                    dw = backward weight of (x = dt, dy = input)

where dt is the gradient at the pre-activation. Each is computed only when
its input needs it (needs_input_grad). The epilogue: bias and residual stay
fused (db = sum of dt, dz = beta dt); relu stays fused (its derivative is
y > 0, read from y); silu and gelu_tanh run in torch under grad (fp32, on
convjit's pre-activation output) so torch's autograd differentiates them,
since their derivative cannot be read from y.

fp8 forward, bf16 backward: convjit's backward kernels take 16-bit
operands, so an fp8 conv's backward is the 16-bit conv of the dequantized
operands, the quantization passed straight through: dx = backward data of
(dt * w_scale) with w's decoded values; dw = x_scale * backward weight of
x's decoded values. fp8 tensors get no gradient themselves.

Backends: with torch.library custom ops (torch >= 2.4) the ops are
convjit::conv and friends with fake functions and a registered backward
(_library.py); before that, the autograd.Function classes here. Both call
conv_backward / conv_transpose_backward below with their kernel set.
"""

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

from . import _lib, ops


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


# silu and gelu_tanh under grad: torch's own op on the fp32 value of
# convjit's pre-activation output, so its autograd gives their backward.
TORCH_ACTS = {"silu": F.silu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}

# dtypes by name (the custom ops' schema has no dtype type in every torch)
DTYPES = {"": None, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def grad_needed(*tensors):
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors)


def compiling():
    """True while torch.compile (dynamo) traces this call."""
    c = getattr(torch, "compiler", None)
    f = getattr(c, "is_compiling", None)
    return bool(f is not None and f())


def routed(x, w, bias, residual, w_scale, out):
    """Whether ops.conv / conv_transpose go through here: a tensor input
    needs a gradient, or torch.compile traces and the custom ops exist (a
    custom op keeps the graph whole; out= stays eager)."""
    from . import _library
    if not (isinstance(x, torch.Tensor) and isinstance(w, torch.Tensor)):
        return False   # the eager path raises the TypeError
    return grad_needed(x, w, bias, residual, w_scale) or (_library.AVAILABLE and out is None and compiling())


def _refuse_under_grad(what, x_prev=None, out=None, fp8_tensors=()):
    if x_prev is not None:
        raise ValueError(f"convjit: x_prev with an input that requires grad: causal streaming is forward only "
                         f"(each chunk's conv reads the previous chunk's frames, which no gradient reaches); "
                         f"train on whole clips with padding_hi for the causal padding, or run {what} under "
                         f"torch.no_grad() / torch.inference_mode()")
    if out is not None:
        raise ValueError(f"convjit: out= with an input that requires grad: an output written in place has no "
                         f"gradient (as torch's out= functions); drop out= or run {what} under torch.no_grad()")
    for name, t in fp8_tensors:
        if t.requires_grad:
            raise TypeError(f"convjit: {name} is {t.dtype} and requires grad: an fp8 tensor gets no gradient "
                            "(convjit's backward is 16-bit, the quantization passed straight through); keep the "
                            "trained tensor in bf16 and let convjit quantize it, or detach it")


def conv(x, w, bias, stride, padding, dilation, groups, *, padding_hi, residual, act, beta, x_scale, w_scale,
         x_prev, dtype, out, out_dtype, upsample):
    """ops.conv through autograd and/or the custom op (ops.conv's arguments)."""
    from . import _library
    grad = grad_needed(x, w, bias, residual, w_scale)
    if grad:
        _refuse_under_grad("the conv", x_prev, out, [(n, t) for n, t in (("x", x), ("w", w))
                                                    if t.dtype not in ops._TORCH_16])
    rank = w.dim() - 2
    if (rank not in (1, 2, 3) or x.dim() not in (rank + 1, rank + 2) or out is not None or act not in ops._ACTS
            or out_dtype not in DTYPES.values()):
        with torch.no_grad():   # the eager path states what is wrong (or runs out= without grad)
            return ops._conv_impl(x, w, bias, stride, padding, dilation, groups, padding_hi=padding_hi,
                                  residual=residual, act=act, beta=beta, x_scale=x_scale, w_scale=w_scale,
                                  x_prev=x_prev, dtype=dtype, out=out, out_dtype=out_dtype, upsample=upsample)
    unbatched = x.dim() == rank + 1
    if unbatched:
        if residual is not None or x_prev is not None:
            raise ValueError("convjit: residual or x_prev with an unbatched x: give x a batch dim")
        x = x.unsqueeze(0)
    stride = ops._tuple(stride, rank, "stride", 1)
    dilation = ops._tuple(dilation, rank, "dilation", 1)
    pad_lo, pad_hi = ops._padding(padding, padding_hi, rank, tuple(w.shape[2:]), dilation, stride)
    torch_act = act if grad and act in TORCH_ACTS else None
    ws_t = w_scale if isinstance(w_scale, torch.Tensor) and w_scale.numel() != 1 else None
    g = Geom(stride, pad_lo, pad_hi, dilation, groups, ops._upsample(upsample, rank),
             "" if torch_act or act in (None, "identity") else act, float(beta),
             0.0 if x_scale is None else float(x_scale),
             0.0 if w_scale is None or ws_t is not None else float(w_scale),
             dtype or "", dtype_name(out_dtype))
    if _library.AVAILABLE:
        y = torch.ops.convjit.conv(x, w, bias, residual, x_prev, ws_t, *_library.geom_args(g))
    else:
        y = _ConvFunction.apply(x, w, bias, residual, ws_t, g)
    if torch_act:
        y = TORCH_ACTS[torch_act](y.float()).to(y.dtype)
    return y.squeeze(0) if unbatched else y


def conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, *, residual, act,
                   beta, out):
    """ops.conv_transpose through autograd and/or the custom op."""
    from . import _library
    grad = grad_needed(input, weight, bias, residual)
    if grad:
        _refuse_under_grad("the transposed conv", out=out)
    rank = weight.dim() - 2
    if rank not in (1, 2, 3) or input.dim() not in (rank + 1, rank + 2) or out is not None or act not in ops._ACTS:
        with torch.no_grad():
            return ops._conv_transpose_impl(input, weight, bias, stride, padding, output_padding, groups, dilation,
                                            residual=residual, act=act, beta=beta, out=out)
    unbatched = input.dim() == rank + 1
    if unbatched:
        if residual is not None:
            raise ValueError("convjit: residual with an unbatched input: give input a batch dim")
        input = input.unsqueeze(0)
    stride = ops._tuple(stride, rank, "stride", 1)
    dilation = ops._tuple(dilation, rank, "dilation", 1)
    padding = ops._tuple(padding, rank, "padding", 0)
    output_padding = ops._tuple(output_padding, rank, "output_padding", 0)
    torch_act = act if grad and act in TORCH_ACTS else None
    g = Geom(stride, padding, padding, dilation, groups, (1,) * rank,
             "" if torch_act or act in (None, "identity") else act, float(beta), 0.0, 0.0, "", "")
    if _library.AVAILABLE:
        y = torch.ops.convjit.conv_transpose(input, weight, bias, residual, list(output_padding),
                                             *_library.geom_args(g))
    else:
        y = _ConvTransposeFunction.apply(input, weight, bias, residual, output_padding, g)
    if torch_act:
        y = TORCH_ACTS[torch_act](y.float()).to(y.dtype)
    return y.squeeze(0) if unbatched else y


def dtype_name(d):
    return next(k for k, v in DTYPES.items() if v == d)


def out_dtype_of(name):
    return DTYPES.get(name, name)


# ---- the forward kernels, called by the Functions and the custom ops -------
def run_conv(x, w, bias, residual, x_prev, ws_t, g):
    return ops._conv_impl(x, w, bias, g.stride, g.pad_lo, g.dilation, g.groups, padding_hi=g.pad_hi,
                          residual=residual, act=g.act or None, beta=g.beta, x_scale=g.x_scale or None,
                          w_scale=ws_t if ws_t is not None else (g.w_scale or None), x_prev=x_prev,
                          dtype=g.fp8 or None, out_dtype=out_dtype_of(g.out_dtype), upsample=g.upsample)


def run_conv_transpose(input, weight, bias, residual, output_padding, g):
    return ops._conv_transpose_impl(input, weight, bias, g.stride, g.pad_lo, tuple(output_padding), g.groups,
                                    g.dilation, residual=residual, act=g.act or None, beta=g.beta)


class Kernels:
    """The three convjit calls a backward makes, run directly (the Function
    path); _library.OpKernels makes the same calls through the custom ops so
    torch.compile traces them."""

    @staticmethod
    def conv(x, w, g):
        return ops._conv_impl(x, w, None, g.stride, g.pad_lo, g.dilation, g.groups, padding_hi=g.pad_hi)

    @staticmethod
    def backward_data(dy, w, x_size, channels_last, g):
        return ops.conv_backward_data(dy, w, x_size, g.stride, g.pad_lo, g.pad_hi, g.dilation, g.groups,
                                      channels_last)

    @staticmethod
    def backward_weight(x, dy, w_size, g, dw_dtype, with_db):
        return ops.conv_backward_weight(x, dy, w_size, g.stride, g.pad_lo, g.pad_hi, g.dilation, g.groups,
                                        dw_dtype, with_db)


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
    if t.dtype in ops._TORCH_16:
        return t
    if t.dtype in ops._TORCH_FP8:
        return t.to(dtype)
    return _fp8_table(ops._FP8_NAMES[fp8], t.device)[t.long()].to(dtype)


def _channels_last(t):
    return ops._layout_of(t, t.dim() - 2) == _lib.LAYOUT_NDHWC


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


def _bias_grad(dt, dtype):
    dims = (0,) + tuple(range(2, dt.dim()))
    return dt.float().sum(dim=dims).to(dtype)


def conv_backward(K, g, x, w, ws_t, y, dy, needs, bias_dtype, residual_dtype):
    """(dx, dw, db, dz) of y = act(alpha conv(x, w) + beta z + bias) for
    its gradient dy; each None unless needs (x, w, bias, residual) asks."""
    rank = w.dim() - 2
    dt, dz = _epilogue_grads(g, y, dy, needs[3], residual_dtype)
    compute = x.dtype if x.dtype in ops._TORCH_16 else w.dtype if w.dtype in ops._TORCH_16 else torch.bfloat16
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
        db = _bias_grad(dt, bias_dtype)
    return dx, dw, db, dz


def conv_transpose_backward(K, g, input, weight, y, dy, needs, bias_dtype, residual_dtype):
    """(d input, d weight, d bias, d residual) of y = act(conv_transpose(
    input, weight) + beta z + bias): the transposed conv is the backward
    data of a forward conv F (x = y's shape, w = weight, F's y = input), so
    d input = F(dt) and d weight = F's backward weight of (x = dt, dy =
    input)."""
    dt, dz = _epilogue_grads(g, y, dy, needs[3], residual_dtype)
    dt16 = dt.to(input.dtype)
    # F's output extents from dt's: input's, or more when output_padding >=
    # stride (dilation > stride): positions past input's see no input
    f_out = [(o + lo + hi - dl * (f - 1) - 1) // s + 1 for o, lo, hi, dl, f, s in
             zip(dt.shape[2:], g.pad_lo, g.pad_hi, g.dilation, weight.shape[2:], g.stride)]
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
        db = _bias_grad(dt, bias_dtype)
    return d_in, d_w, db, dz


DOUBLE_BACKWARD = (b"convjit: double backward (differentiating a gradient that went through convjit's backward "
           b"kernels, e.g. torch.autograd.grad(..., create_graph=True) then backward of the result) is not "
           b"supported: those kernels have no backward of their own; use torch's convs for higher-order "
           b"gradients")


def refuse_double_backward(grads, inputs):
    """With create_graph=True (grad mode on in backward) the returned
    gradients carry a node that raises DOUBLE_BACKWARD if they are differentiated
    (torch's once_differentiable mechanism, with convjit's message)."""
    if not torch.is_grad_enabled() or not any(t is not None and t.requires_grad for t in inputs):
        return grads
    live = [i for i, t in enumerate(grads) if t is not None]
    if not live:
        return grads
    err = torch._C._functions.DelayedError(DOUBLE_BACKWARD, len(live))
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


# ---- torch < 2.4: autograd.Function ------------------------------------------
class _ConvFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, bias, residual, ws_t, g):
        y = run_conv(x, w, bias, residual, None, ws_t, g)
        ctx.g = g
        ctx.dtypes = (None if bias is None else bias.dtype, None if residual is None else residual.dtype)
        ctx.save_for_backward(x, w, ws_t, y if g.act == "relu" else None)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, ws_t, y = ctx.saved_tensors
        with torch.no_grad():
            grads = conv_backward(Kernels, ctx.g, x, w, ws_t, y, dy, ctx.needs_input_grad[:4], *ctx.dtypes)
        return refuse_double_backward(grads, (x, w, dy)) + (None, None)


class _ConvTransposeFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias, residual, output_padding, g):
        y = run_conv_transpose(input, weight, bias, residual, output_padding, g)
        ctx.g = g
        ctx.dtypes = (None if bias is None else bias.dtype, None if residual is None else residual.dtype)
        ctx.save_for_backward(input, weight, y if g.act == "relu" else None)
        return y

    @staticmethod
    def backward(ctx, dy):
        input, weight, y = ctx.saved_tensors
        with torch.no_grad():
            grads = conv_transpose_backward(Kernels, ctx.g, input, weight, y, dy, ctx.needs_input_grad[:4],
                                            *ctx.dtypes)
        return refuse_double_backward(grads, (input, weight, dy)) + (None, None)


