"""convjit's convs as torch.library custom ops (torch >= 2.4), so
torch.compile traces a model through them without a graph break:

    convjit::conv                  the forward conv (ops.conv's epilogue, upsample, x_prev)
    convjit::conv_transpose        the transposed conv
    convjit::conv_backward_data    dx of a forward conv (kind backward-data)
    convjit::conv_backward_weight  (dw, db) of a forward conv (kind backward-weight)

Each has a fake (meta) function giving the output's shape, dtype and
strides from its arguments alone (the extents from the C library,
_core.out_dims and transpose_key; the layout of the input), and the first
two a registered backward that calls the last two (_grad.conv_backward,
the same code as the autograd.Function path of older torch). The backward
ops refuse a double backward with convjit's message. Nothing here runs on
torch 1.13 (AVAILABLE is False): _autograd's Functions do.
"""

from typing import List, Optional, Tuple

import torch

from . import _core, _grad, _lib

AVAILABLE = all(hasattr(torch.library, n) for n in ("custom_op", "register_fake", "register_autograd"))


def _ints(shape):
    """Extents as ints (a symbolic size is specialized: convjit's plans are per shape)."""
    return tuple(int(e) for e in shape)


def geom_args(g):
    """A Geom as the custom ops' trailing arguments."""
    return (list(g.stride), list(g.pad_lo), list(g.pad_hi), list(g.dilation), g.groups, list(g.upsample), g.act,
            g.beta, g.x_scale, g.w_scale, g.fp8, g.out_dtype)


def _geom(stride, pad_lo, pad_hi, dilation, groups, upsample, act, beta, x_scale, w_scale, fp8, out_dtype):
    return _grad.Geom(tuple(stride), tuple(pad_lo), tuple(pad_hi), tuple(dilation), groups, tuple(upsample),
                          act, beta, x_scale, w_scale, fp8, out_dtype)


def _layout(t):
    return _core.dense_layout(t, t.dim() - 2)


def conv(x, w, bias, residual, x_prev, ws_t, g):
    """convjit::conv of a Geom (_autograd.conv's normalized call)."""
    return torch.ops.convjit.conv(x, w, bias, residual, x_prev, ws_t, *geom_args(g))


def conv_transpose(input, weight, bias, residual, output_padding, g):
    """convjit::conv_transpose of a Geom."""
    return torch.ops.convjit.conv_transpose(input, weight, bias, residual, list(output_padding), *geom_args(g))


class OpKernels:
    """_grad.Kernels through the custom ops (traced by torch.compile)."""

    @staticmethod
    def conv(x, w, g):
        plain = g._replace(act="", beta=1.0, x_scale=0.0, w_scale=0.0, fp8="", out_dtype="",
                           upsample=(1,) * (w.dim() - 2))
        return torch.ops.convjit.conv(x, w, None, None, None, None, *geom_args(plain))

    @staticmethod
    def backward_data(dy, w, x_size, channels_last, g):
        return torch.ops.convjit.conv_backward_data(dy, w, list(x_size), channels_last, list(g.stride),
                                                    list(g.pad_lo), list(g.pad_hi), list(g.dilation), g.groups)

    @staticmethod
    def backward_weight(x, dy, w_size, g, dw_dtype, with_db):
        dw, db = torch.ops.convjit.conv_backward_weight(x, dy, list(w_size), list(g.stride), list(g.pad_lo),
                                                        list(g.pad_hi), list(g.dilation), g.groups,
                                                        _grad.dtype_name(dw_dtype), with_db)
        return dw, (db if with_db else None)


def _dtypes(bias, residual):
    return (None if bias is None else bias.dtype, None if residual is None else residual.dtype)


def _no_double_backward(ctx, *grads):
    raise RuntimeError(_grad.DOUBLE_BACKWARD)


if AVAILABLE:
    Tensor = torch.Tensor

    @torch.library.custom_op("convjit::conv", mutates_args=())
    def _conv(x: Tensor, w: Tensor, bias: Optional[Tensor], residual: Optional[Tensor], x_prev: Optional[Tensor],
              w_scale_t: Optional[Tensor], stride: List[int], pad_lo: List[int], pad_hi: List[int],
              dilation: List[int], groups: int, upsample: List[int], act: str, beta: float, x_scale: float,
              w_scale: float, fp8: str, out_dtype: str) -> Tensor:
        g = _geom(stride, pad_lo, pad_hi, dilation, groups, upsample, act, beta, x_scale, w_scale, fp8, out_dtype)
        return _grad.run_conv(x, w, bias, residual, x_prev, w_scale_t, g)

    @_conv.register_fake
    def _conv_fake(x, w, bias, residual, x_prev, w_scale_t, stride, pad_lo, pad_hi, dilation, groups, upsample, act,
                   beta, x_scale, w_scale, fp8, out_dtype):
        rank = w.dim() - 2
        out = _core.out_dims(_core.geometry_key(rank, _ints(x.shape[2:]), _ints(w.shape[2:]), tuple(stride),
                                                tuple(pad_lo), tuple(pad_hi), tuple(dilation), tuple(upsample)))
        ydt = _grad.out_dtype_of(out_dtype) or (torch.float16 if x.dtype == torch.float16 else torch.bfloat16)
        return _core.empty([x.shape[0], w.shape[0]] + list(out), _layout(x), rank, x.device, ydt)

    def _conv_setup(ctx, inputs, output):
        x, w, bias, residual, _x_prev, ws_t = inputs[:6]
        ctx.g = _geom(*inputs[6:])
        ctx.dtypes = _dtypes(bias, residual)
        ctx.save_for_backward(x, w, ws_t, output if ctx.g.act == "relu" else None)

    def _conv_backward(ctx, dy):
        x, w, ws_t, y = ctx.saved_tensors
        grads = _grad.conv_backward(OpKernels, ctx.g, x, w, ws_t, y, dy, ctx.needs_input_grad[:4], *ctx.dtypes)
        return grads + (None,) * 14

    torch.library.register_autograd("convjit::conv", _conv_backward, setup_context=_conv_setup)

    @torch.library.custom_op("convjit::conv_transpose", mutates_args=())
    def _conv_transpose(input: Tensor, weight: Tensor, bias: Optional[Tensor], residual: Optional[Tensor],
                        output_padding: List[int], stride: List[int], pad_lo: List[int], pad_hi: List[int],
                        dilation: List[int], groups: int, upsample: List[int], act: str, beta: float,
                        x_scale: float, w_scale: float, fp8: str, out_dtype: str) -> Tensor:
        g = _geom(stride, pad_lo, pad_hi, dilation, groups, upsample, act, beta, x_scale, w_scale, fp8, out_dtype)
        return _grad.run_conv_transpose(input, weight, bias, residual, output_padding, g)

    @_conv_transpose.register_fake
    def _conv_transpose_fake(input, weight, bias, residual, output_padding, stride, pad_lo, pad_hi, dilation, groups,
                             upsample, act, beta, x_scale, w_scale, fp8, out_dtype):
        rank = weight.dim() - 2
        c_out = weight.shape[1] * groups
        key = _core.transpose_key(rank, int(input.shape[0]), int(input.shape[1]), int(c_out), _ints(input.shape[2:]),
                                  _ints(weight.shape[2:]), tuple(stride), tuple(pad_lo), tuple(output_padding),
                                  tuple(dilation), groups, ())
        return _core.empty([input.shape[0], c_out] + list(dict(key)["in"]), _layout(input), rank, input.device,
                           input.dtype)

    def _conv_transpose_setup(ctx, inputs, output):
        input, weight, bias, residual = inputs[:4]
        ctx.g = _geom(*inputs[5:])
        ctx.dtypes = _dtypes(bias, residual)
        ctx.save_for_backward(input, weight, output if ctx.g.act == "relu" else None)

    def _conv_transpose_backward(ctx, dy):
        input, weight, y = ctx.saved_tensors
        grads = _grad.conv_transpose_backward(OpKernels, ctx.g, input, weight, y, dy, ctx.needs_input_grad[:4],
                                                  *ctx.dtypes)
        return grads + (None,) * 13

    torch.library.register_autograd("convjit::conv_transpose", _conv_transpose_backward,
                                    setup_context=_conv_transpose_setup)

    @torch.library.custom_op("convjit::conv_backward_data", mutates_args=())
    def _conv_backward_data(dy: Tensor, w: Tensor, x_size: List[int], channels_last: bool, stride: List[int],
                            pad_lo: List[int], pad_hi: List[int], dilation: List[int], groups: int) -> Tensor:
        return _core.backward_data(dy, w, x_size, tuple(stride), tuple(pad_lo), tuple(pad_hi), tuple(dilation),
                                   groups, channels_last)

    @_conv_backward_data.register_fake
    def _conv_backward_data_fake(dy, w, x_size, channels_last, stride, pad_lo, pad_hi, dilation, groups):
        layout = _lib.LAYOUT_NDHWC if channels_last else _lib.LAYOUT_NCDHW
        return _core.empty(list(x_size), layout, w.dim() - 2, dy.device, dy.dtype)

    @torch.library.custom_op("convjit::conv_backward_weight", mutates_args=())
    def _conv_backward_weight(x: Tensor, dy: Tensor, w_size: List[int], stride: List[int], pad_lo: List[int],
                              pad_hi: List[int], dilation: List[int], groups: int, dw_dtype: str,
                              with_db: bool) -> Tuple[Tensor, Tensor]:
        dw, db = _core.backward_weight(x, dy, w_size, tuple(stride), tuple(pad_lo), tuple(pad_hi),
                                       tuple(dilation), groups, _grad.out_dtype_of(dw_dtype), with_db)
        return dw, (db if db is not None else torch.zeros(0, dtype=torch.float32, device=x.device))

    @_conv_backward_weight.register_fake
    def _conv_backward_weight_fake(x, dy, w_size, stride, pad_lo, pad_hi, dilation, groups, dw_dtype, with_db):
        return (torch.empty(list(w_size), dtype=_grad.out_dtype_of(dw_dtype), device=x.device),
                torch.empty((w_size[0] if with_db else 0,), dtype=torch.float32, device=x.device))

    # their outputs are gradients: differentiating them again is refused with convjit's message
    torch.library.register_autograd("convjit::conv_backward_data", _no_double_backward)
    torch.library.register_autograd("convjit::conv_backward_weight", _no_double_backward)
