"""convjit.ops: the public conv functions. conv (a forward convolution,
optionally of a nearest-upsampled input), conv_transpose (the transposed
convolution), and the two gradient kernels as plain functions. A call
whose inputs need a gradient, or that torch.compile traces, goes through
autograd (_autograd.py); every other call straight to _core, the binding's
one layer over the C library."""

from . import _autograd, _core

__all__ = ["conv", "conv_transpose", "conv_backward_data", "conv_backward_weight"]


def conv(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, *, padding_hi=None, residual=None,
         act=None, beta=1.0, x_scale=None, w_scale=None, x_prev=None, dtype=None, out=None, out_dtype=None,
         upsample=None):
    """y = act(alpha * conv(x, w) + beta * residual + bias), computed by convjit.

    x: (N, C, *spatial) or unbatched (C, *spatial); w: (K, C/groups,
    *filter) with 1 to 3 spatial dims (w.dim() decides 1D/2D/3D), like
    torch.nn.functional.conv1d/2d/3d. Dtypes: torch.bfloat16 or
    torch.float16 (x and w alike), or fp8 (torch.float8_e4m3fn/fnuz where
    torch has them, else torch.uint8 holding the bytes plus
    dtype='fp8_e4m3fn'/'fp8_e4m3fnuz'; bf16 beside fp8 is quantized). y is
    float16 for float16 inputs, else bfloat16, rounded to nearest even
    (float16 past 65504 becomes inf); out_dtype=torch.float32 (or an fp32
    out=) keeps the fp32 result, unrounded. An fp8 conv dequantizes with
    alpha = x_scale * w_scale, where w_scale may also be a tensor of K
    per-output-channel scales (fp8 w only).

    Layout: x may be contiguous or channels-last (channels_last_3d,
    channels_last, or N,W,C strides for 1D); convjit reads it in place and
    y has x's layout (or out='s, when given). Any other strides are copied
    to contiguous first. padding: int, tuple, 'same' or 'valid';
    padding_hi gives the padding after each dim when it differs (causal:
    padding=(2,1,1), padding_hi=(0,1,1)). x_prev: for causal streaming, the
    previous chunk's last padding[0] frames (N, C, padding[0], H, W).
    act: None, 'relu', 'silu' or 'gelu_tanh'. residual: y's shape and dtype.
    upsample: 1 or 2, or one factor per spatial dim: the conv reads x
    nearest-neighbour upsampled by it (F.interpolate(x, scale_factor=2)
    then the conv, in one kernel per output phase and without the
    upsampled tensor; bit for bit the two-step result); stride, padding
    and y's shape are those of the conv of the upsampled input.

    CPU tensors run on convjit's emulator; ROCm tensors on their device and
    torch's current stream. Errors from convjit raise ConvjitError (or its
    ValueError / NotImplementedError subclasses) with convjit's message.
    """
    if _autograd.routed(x, w, bias, residual, w_scale, out):
        return _autograd.conv(x, w, bias, stride, padding, dilation, groups, padding_hi=padding_hi,
                              residual=residual, act=act, beta=beta, x_scale=x_scale, w_scale=w_scale, x_prev=x_prev,
                              dtype=dtype, out=out, out_dtype=out_dtype, upsample=upsample)
    return _core.conv(x, w, bias, stride, padding, dilation, groups, padding_hi, residual, act, beta, x_scale,
                      w_scale, x_prev, dtype, out, out_dtype, upsample)


def conv_transpose(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1, *,
                   residual=None, act=None, beta=1.0, out=None):
    """y = act(conv_transpose(input, weight) + beta * residual + bias), computed by convjit.

    Mirrors torch.nn.functional.conv_transpose1d/2d/3d (their argument order):
    input (N, C_in, *spatial) or unbatched (C_in, *spatial), weight (C_in,
    C_out/groups, *filter), bias C_out elements; 1 to 3 spatial dims by
    weight.dim(). Output extents (in-1)*stride - 2*padding +
    dilation*(filter-1) + output_padding + 1, output_padding < max(stride,
    dilation). convjit runs it as the backward data of the forward conv it
    transposes, one dense implicit GEMM per output phase (no MFMA on the
    zeros a strided transposed conv would insert). torch.bfloat16 or
    torch.float16 (input and weight alike; the output in that dtype,
    rounded to nearest even, float16 past 65504 inf).
    Layout, residual (the output's shape), act and out= as for conv.
    """
    if _autograd.routed(input, weight, bias, residual, None, out):
        return _autograd.conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation,
                                        residual=residual, act=act, beta=beta, out=out)
    return _core.conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, residual, act,
                                beta, out)


def conv_backward_data(dy, w, x_size, stride=1, pad_lo=0, pad_hi=0, dilation=1, groups=1, channels_last=False):
    """dx, of shape x_size, of the forward conv y = conv(x, w, stride,
    padding=pad_lo, padding_hi=pad_hi, dilation, groups) for y's gradient
    dy: convjit's backward-data kind (docs/api.md "Problem kinds"). dy and w
    of one 16-bit dtype; dx in it, channels-last when asked, else
    contiguous. No autograd (ops.conv's backward calls it)."""
    return _core.backward_data(dy, w, x_size, stride, pad_lo, pad_hi, dilation, groups, channels_last)


def conv_backward_weight(x, dy, w_size, stride=1, pad_lo=0, pad_hi=0, dilation=1, groups=1, dw_dtype=None,
                         bias=False):
    """(dw, db) of the forward conv y = conv(x, w, stride, padding=pad_lo,
    padding_hi=pad_hi, dilation, groups) for y's gradient dy: convjit's
    backward-weight kind. x and dy of one 16-bit dtype, dense (contiguous
    or channels-last, else copied); dw of shape w_size (K, C/groups,
    *filter), contiguous, in dw_dtype (None: x's dtype; or torch.float32);
    db (fp32, K) when bias, else None. Deterministic: the same bits on every
    run (docs/api.md "Problem kinds"). No autograd."""
    return _core.backward_weight(x, dy, w_size, stride, pad_lo, pad_hi, dilation, groups, dw_dtype, bias)
