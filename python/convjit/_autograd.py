"""ops.conv / ops.conv_transpose under autograd (docs/python.md "Autograd"):
the calls whose inputs need a gradient, or that torch.compile traces.

The arguments are normalized once into a Geom (_grad.py) and the call goes
to torch.library's custom op convjit::conv / convjit::conv_transpose
(_library.py, torch >= 2.4: torch.compile traces it whole), else to the
autograd.Function classes below (older torch: Debian's 1.13). Both run the
same forward (_core) and the same backward math (_grad.conv_backward,
conv_transpose_backward).
"""

import torch

from . import _core, _grad, _library

_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)


def grad_needed(*tensors):
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors)


def compiling():
    """True while torch.compile (dynamo) traces this call."""
    return bool(_is_compiling is not None and _is_compiling())


def routed(x, w, bias, residual, w_scale, out):
    """Whether ops.conv / conv_transpose go through here: a tensor input
    needs a gradient, or torch.compile traces and the custom ops exist (a
    custom op keeps the graph whole; out= stays eager)."""
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
    grad = grad_needed(x, w, bias, residual, w_scale)
    if grad:
        _refuse_under_grad("the conv", x_prev, out, [(n, t) for n, t in (("x", x), ("w", w))
                                                    if t.dtype not in _core.TORCH_16])
    rank = w.dim() - 2
    if (rank not in (1, 2, 3) or x.dim() not in (rank + 1, rank + 2) or out is not None or act not in _core.ACTS
            or out_dtype not in _grad.DTYPES.values()):
        with torch.no_grad():   # the eager path states what is wrong (or runs out= without grad)
            return _core.conv(x, w, bias, stride, padding, dilation, groups, padding_hi=padding_hi,
                              residual=residual, act=act, beta=beta, x_scale=x_scale, w_scale=w_scale,
                              x_prev=x_prev, dtype=dtype, out=out, out_dtype=out_dtype, upsample=upsample)
    unbatched = x.dim() == rank + 1
    if unbatched:
        if residual is not None or x_prev is not None:
            raise ValueError("convjit: residual or x_prev with an unbatched x: give x a batch dim")
        x = x.unsqueeze(0)
    stride = _core.ints(stride, rank, "stride", 1)
    dilation = _core.ints(dilation, rank, "dilation", 1)
    pad_lo, pad_hi = _core.paddings(padding, padding_hi, rank, tuple(w.shape[2:]), dilation, stride)
    torch_act = act if grad and act in _grad.TORCH_ACTS else None
    ws_t = w_scale if isinstance(w_scale, torch.Tensor) and w_scale.numel() != 1 else None
    g = _grad.Geom(stride, pad_lo, pad_hi, dilation, groups, _core.upsample_of(upsample, rank),
                   "" if torch_act or act in (None, "identity") else act, float(beta),
                   0.0 if x_scale is None else float(x_scale),
                   0.0 if w_scale is None or ws_t is not None else float(w_scale),
                   dtype or "", _grad.dtype_name(out_dtype))
    if _library.AVAILABLE:
        y = _library.conv(x, w, bias, residual, x_prev, ws_t, g)
    else:
        y = _ConvFunction.apply(x, w, bias, residual, ws_t, g)
    if torch_act:
        y = _grad.TORCH_ACTS[torch_act](y.float()).to(y.dtype)
    return y.squeeze(0) if unbatched else y


def conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, *, residual, act,
                   beta, out):
    """ops.conv_transpose through autograd and/or the custom op."""
    grad = grad_needed(input, weight, bias, residual)
    if grad:
        _refuse_under_grad("the transposed conv", out=out)
    rank = weight.dim() - 2
    if rank not in (1, 2, 3) or input.dim() not in (rank + 1, rank + 2) or out is not None or act not in _core.ACTS:
        with torch.no_grad():
            return _core.conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation,
                                        residual=residual, act=act, beta=beta, out=out)
    unbatched = input.dim() == rank + 1
    if unbatched:
        if residual is not None:
            raise ValueError("convjit: residual with an unbatched input: give input a batch dim")
        input = input.unsqueeze(0)
    stride = _core.ints(stride, rank, "stride", 1)
    dilation = _core.ints(dilation, rank, "dilation", 1)
    padding = _core.ints(padding, rank, "padding", 0)
    output_padding = _core.ints(output_padding, rank, "output_padding", 0)
    torch_act = act if grad and act in _grad.TORCH_ACTS else None
    g = _grad.Geom(stride, padding, padding, dilation, groups, (1,) * rank,
                   "" if torch_act or act in (None, "identity") else act, float(beta), 0.0, 0.0, "", "")
    if _library.AVAILABLE:
        y = _library.conv_transpose(input, weight, bias, residual, output_padding, g)
    else:
        y = _ConvTransposeFunction.apply(input, weight, bias, residual, output_padding, g)
    if torch_act:
        y = _grad.TORCH_ACTS[torch_act](y.float()).to(y.dtype)
    return y.squeeze(0) if unbatched else y


def _dtypes(bias, residual):
    return (None if bias is None else bias.dtype, None if residual is None else residual.dtype)


# ---- torch < 2.4: autograd.Function ------------------------------------------
class _ConvFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, bias, residual, ws_t, g):
        y = _grad.run_conv(x, w, bias, residual, None, ws_t, g)
        ctx.g = g
        ctx.dtypes = _dtypes(bias, residual)
        ctx.save_for_backward(x, w, ws_t, y if g.act == "relu" else None)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, ws_t, y = ctx.saved_tensors
        with torch.no_grad():
            grads = _grad.conv_backward(_grad.Kernels, ctx.g, x, w, ws_t, y, dy, ctx.needs_input_grad[:4],
                                        *ctx.dtypes)
        return _grad.refuse_double_backward(grads, (x, w, dy)) + (None, None)


class _ConvTransposeFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias, residual, output_padding, g):
        y = _grad.run_conv_transpose(input, weight, bias, residual, output_padding, g)
        ctx.g = g
        ctx.dtypes = _dtypes(bias, residual)
        ctx.save_for_backward(input, weight, y if g.act == "relu" else None)
        return y

    @staticmethod
    def backward(ctx, dy):
        input, weight, y = ctx.saved_tensors
        with torch.no_grad():
            grads = _grad.conv_transpose_backward(_grad.Kernels, ctx.g, input, weight, y, dy,
                                                  ctx.needs_input_grad[:4], *ctx.dtypes)
        return _grad.refuse_double_backward(grads, (input, weight, dy)) + (None, None)
