"""convjit.ops.conv (a forward convolution, optionally of a nearest-upsampled
input) and convjit.ops.conv_transpose (the transposed convolution) through the
C library."""

import ctypes
import time

import torch

from . import _lib, _runtime

_FP8_NAMES = {"fp8_e4m3fn": _lib.DTYPE_FP8_E4M3FN, "e4m3fn": _lib.DTYPE_FP8_E4M3FN,
              "fp8_e4m3fnuz": _lib.DTYPE_FP8_E4M3FNUZ, "e4m3fnuz": _lib.DTYPE_FP8_E4M3FNUZ}
_TORCH_FP8 = {}
for _name, _code in (("float8_e4m3fn", _lib.DTYPE_FP8_E4M3FN), ("float8_e4m3fnuz", _lib.DTYPE_FP8_E4M3FNUZ)):
    if hasattr(torch, _name):   # torch >= 2.1 (2.2 for fnuz); Debian 12's 1.13 has neither
        _TORCH_FP8[getattr(torch, _name)] = _code
# the 16-bit input dtypes, and y's dtypes (the inputs' own 16-bit type or f32: convjit.h)
_TORCH_16 = {torch.bfloat16: _lib.DTYPE_BF16, torch.float16: _lib.DTYPE_F16}
_TORCH_Y = {torch.bfloat16: _lib.DTYPE_BF16, torch.float16: _lib.DTYPE_F16, torch.float32: _lib.DTYPE_F32}
_Y_TORCH = {v: k for k, v in _TORCH_Y.items()}
_ACTS = {None: _lib.ACT_IDENTITY, "identity": _lib.ACT_IDENTITY, "relu": _lib.ACT_RELU,
         "silu": _lib.ACT_SILU, "gelu_tanh": _lib.ACT_GELU_TANH}
_CHANNELS_LAST = {5: torch.channels_last_3d, 4: torch.channels_last}
_INT64_MAX = 2 ** 63 - 1   # the descriptor's int64 fields: ctypes would keep only the low 64 bits of a wider int


def _int64(v, name, shown=None):
    """v, refused with the argument's name when the descriptor's int64 cannot hold it."""
    if not -_INT64_MAX - 1 <= v <= _INT64_MAX:
        raise ValueError(f"convjit: {name}={shown if shown is not None else v!r}: {v} does not fit the "
                         f"descriptor's int64 (at most 2**63-1)")
    return v


def _dtype_code(t, role, dtype):
    if t.dtype in _TORCH_16:
        return _TORCH_16[t.dtype]
    if t.dtype in _TORCH_FP8:
        return _TORCH_FP8[t.dtype]
    if t.dtype == torch.uint8:
        if dtype is None:
            raise TypeError(f"convjit: {role} is torch.uint8: say which fp8 format its bytes hold with "
                            "dtype='fp8_e4m3fn' or dtype='fp8_e4m3fnuz'")
        return dtype
    fp8 = "torch.float8_e4m3fn/fnuz, " if _TORCH_FP8 else ""
    raise TypeError(f"convjit: {role} dtype {t.dtype}: convjit takes torch.bfloat16, torch.float16 or fp8 "
                    f"({fp8}or torch.uint8 with dtype='fp8_e4m3fn'/'fp8_e4m3fnuz'); convert with .bfloat16() "
                    "or .half()")


def own_y_dtype(x_dtype):
    """y's dtype when none is asked for: f16 for an f16 conv, else bf16."""
    return _lib.DTYPE_F16 if x_dtype == _lib.DTYPE_F16 else _lib.DTYPE_BF16


def _tuple(v, rank, name, minimum):
    if isinstance(v, torch.Size):
        v = tuple(v)
    if isinstance(v, int):
        v = (v,) * rank
    v = tuple(v)
    if len(v) == 1 and rank > 1:
        v = v * rank
    if len(v) != rank or not all(isinstance(e, int) for e in v):
        raise ValueError(f"convjit: {name}={v!r}: expected an int or {rank} ints for a {rank}D conv")
    if any(e < minimum for e in v):
        raise ValueError(f"convjit: {name}={v!r}: every value must be >= {minimum}")
    for e in v:
        _int64(e, name, v)
    return v


def _groups(v):
    if not isinstance(v, int) or v < 1:
        raise ValueError(f"convjit: groups={v!r}: expected an int >= 1")
    return _int64(v, "groups")


def _padding(padding, padding_hi, rank, filt, dilation, stride):
    if isinstance(padding, str):
        if padding_hi is not None:
            raise ValueError(f"convjit: padding={padding!r} with padding_hi: give padding as numbers")
        if padding == "valid":
            return (0,) * rank, (0,) * rank
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"convjit: padding='same' needs stride 1 (as in torch), got stride={stride}")
            total = [d * (f - 1) for d, f in zip(dilation, filt)]
            lo = tuple(t // 2 for t in total)   # torch's split: the odd element goes after
            return lo, tuple(t - l for t, l in zip(total, lo))
        raise ValueError(f"convjit: padding={padding!r}: expected 'same', 'valid', an int or {rank} ints")
    lo = _tuple(padding, rank, "padding", 0)
    hi = lo if padding_hi is None else _tuple(padding_hi, rank, "padding_hi", 0)
    return lo, hi


def _layout_of(t, rank):
    """NCDHW or NDHWC when t is dense in one of them, else None."""
    if t.is_contiguous():
        return _lib.LAYOUT_NCDHW
    if rank + 2 in _CHANNELS_LAST and t.is_contiguous(memory_format=_CHANNELS_LAST[rank + 2]):
        return _lib.LAYOUT_NDHWC
    if rank == 1 and t.permute(0, 2, 1).is_contiguous():   # NWC: torch has no memory format for 3-D tensors
        return _lib.LAYOUT_NDHWC
    return None


def _dense(t, layout, rank):
    """t as a dense tensor of layout (a copy only when it is not one)."""
    if _layout_of(t, rank) == layout:
        return t
    _runtime.count("input_copies")
    if layout == _lib.LAYOUT_NCDHW:
        return t.contiguous()
    if rank == 1:
        return t.permute(0, 2, 1).contiguous().permute(0, 2, 1)
    return t.contiguous(memory_format=_CHANNELS_LAST[rank + 2])


def _as_dense(t, rank):
    """t and its layout: as it is when dense NCDHW or NDHWC, else a contiguous (NCDHW) copy."""
    layout = _layout_of(t, rank)
    if layout is None:
        return _dense(t, _lib.LAYOUT_NCDHW, rank), _lib.LAYOUT_NCDHW
    return t, layout


def _out_layout(out, rank, what):
    """The layout of a caller's out, which convjit writes in place: dense, or a ValueError."""
    layout = _layout_of(out, rank)
    if layout is None:
        raise ValueError(f"convjit: out (strides {out.stride()}) is neither contiguous nor channels-last: "
                         f"convjit writes {what} in place, so out must be dense")
    return layout


def _empty(shape, layout, rank, device, dtype):
    if layout == _lib.LAYOUT_NCDHW:
        return torch.empty(shape, dtype=dtype, device=device)
    if rank == 1:
        n, k, w = shape
        return torch.empty((n, w, k), dtype=dtype, device=device).permute(0, 2, 1)
    return torch.empty(shape, dtype=dtype, device=device, memory_format=_CHANNELS_LAST[rank + 2])


def _scalar(v, name):
    if v is None:
        return 0.0
    if isinstance(v, torch.Tensor):
        if v.numel() != 1:
            raise ValueError(f"convjit: {name} has {v.numel()} elements: expected one (per-tensor scale)")
        v = v.item()
    v = float(v)
    if not (v > 0 and v != float("inf")):
        raise ValueError(f"convjit: {name}={v}: a scale must be finite and > 0")
    return v


def _nbytes(t):
    return t.numel() * t.element_size()


_X_PREV_DIMS = ("batch", "channels", "frames", "height", "width")


def _check_x_prev(x_prev, x, pad_lo):
    """x_prev must be (N, C, padding[0], H, W) of x: the previous chunk's
    last padding[0] input frames, which convjit reads in place of the zero
    padding before x. Another shape would be read as if it were that one."""
    want = (x.shape[0], x.shape[1], pad_lo[0]) + tuple(x.shape[3:])
    if x_prev.dim() != len(want):
        raise ValueError(f"convjit: x_prev {tuple(x_prev.shape)} has {x_prev.dim()} dims, expected {len(want)}: "
                         f"(N, C, padding[0], H, W) = {want}, the frames before x {tuple(x.shape)}")
    for i, (got, exp) in enumerate(zip(x_prev.shape, want)):
        if got != exp:
            raise ValueError(f"convjit: x_prev {tuple(x_prev.shape)}: dim {i} ({_X_PREV_DIMS[i]}) = {got}, expected "
                             f"{exp}: x_prev is (N, C, padding[0], H, W) = {want}, the frames before x "
                             f"{tuple(x.shape)}")


def conv_key(rank, n, c, k, in_, filt, stride, pad_lo, pad_hi, dilation, groups, *,
             x_dtype=_lib.DTYPE_BF16, w_dtype=_lib.DTYPE_BF16, x_layout=_lib.LAYOUT_NCDHW,
             y_layout=_lib.LAYOUT_NCDHW, bias=False, x_scale=0.0, w_scale=0.0, channel_scale=False,
             residual=False, beta=0.0, act=_lib.ACT_IDENTITY, x_prev=False, y_dtype=None, upsample=None,
             kind=_lib.CONV_FORWARD, output_padding=None):
    """Every field of a conv descriptor as a hashable tuple of (name, value):
    the plan cache's key, and (desc_of) the descriptor itself. y_dtype None:
    the inputs' own (own_y_dtype). kind backward-data with output_padding:
    a transposed conv, described as the forward conv it transposes
    (conv_transpose_desc makes one)."""
    return (("rank", rank), ("n", n), ("c", c), ("k", k), ("in", tuple(in_)), ("filter", tuple(filt)),
            ("stride", tuple(stride)), ("pad_lo", tuple(pad_lo)), ("pad_hi", tuple(pad_hi)),
            ("dilation", tuple(dilation)), ("groups", groups), ("x_dtype", x_dtype), ("w_dtype", w_dtype),
            ("x_layout", x_layout), ("y_layout", y_layout), ("bias", bias), ("x_scale", x_scale),
            ("w_scale", w_scale), ("channel_scale", channel_scale), ("residual", residual), ("beta", beta),
            ("act", act), ("x_prev", x_prev), ("y_dtype", own_y_dtype(x_dtype) if y_dtype is None else y_dtype),
            ("upsample", tuple(upsample or (1,) * rank)), ("kind", kind),
            ("output_padding", tuple(output_padding or (0,) * rank)))


def desc_of(key):
    """The convjit_conv_desc of a conv_key."""
    f = dict(key)
    for name, v in key:   # the last gate before ctypes: derived values too ('same' padding of a huge dilation)
        for e in (v if isinstance(v, tuple) else (v,)):
            if isinstance(e, int):
                _int64(e, name, v)
    d = _lib.ConvDesc()
    d.struct_size = ctypes.sizeof(d)
    rank = f["rank"]
    d.spatial_rank, d.n, d.c, d.k, d.groups = rank, f["n"], f["c"], f["k"], f["groups"]
    for i in range(3):
        used = i < rank
        d.in_[i], d.filter[i] = (f["in"][i], f["filter"][i]) if used else (0, 0)
        d.stride[i], d.dilation[i] = (f["stride"][i], f["dilation"][i]) if used else (1, 1)
        d.pad_lo[i], d.pad_hi[i] = (f["pad_lo"][i], f["pad_hi"][i]) if used else (0, 0)
    d.x_dtype, d.w_dtype, d.y_dtype = f["x_dtype"], f["w_dtype"], f["y_dtype"]
    d.x_layout, d.y_layout = f["x_layout"], f["y_layout"]
    d.has_bias, d.x_scale, d.w_scale = f["bias"], f["x_scale"], f["w_scale"]
    d.has_channel_scale, d.has_residual, d.beta = f["channel_scale"], f["residual"], f["beta"]
    d.act, d.has_x_prev = f["act"], f["x_prev"]
    d.kind = f.get("kind", _lib.CONV_FORWARD)
    for i in range(3):
        used = i < rank
        d.upsample[i] = f["upsample"][i] if used and "upsample" in f else 0
        d.output_padding[i] = f["output_padding"][i] if used and "output_padding" in f else 0
    return d


def conv_transpose_desc(rank, n, c_in, c_out, in_, filt, stride, padding, output_padding, dilation, groups,
                        **fields):
    """The backward-data descriptor of a transposed conv, filled by
    convjit_conv_desc_from_transpose (the C library's one formula for the
    output extents): fields are conv_key's dtype, layout and epilogue ones."""
    d = desc_of(conv_key(rank, n, c_out, c_in, (1,) * rank, filt, (1,) * rank, (0,) * rank, (0,) * rank,
                         (1,) * rank, groups, **fields))
    t = _lib.ConvTransposeParams()
    t.struct_size = ctypes.sizeof(t)
    t.spatial_rank, t.n, t.c_in, t.c_out, t.groups = rank, _int64(n, "n"), c_in, c_out, groups
    for i in range(3):
        used = i < rank
        t.in_[i], t.filter[i] = (in_[i], filt[i]) if used else (1, 1)
        t.stride[i], t.dilation[i] = (stride[i], dilation[i]) if used else (1, 1)
        t.padding[i], t.output_padding[i] = (padding[i], output_padding[i]) if used else (0, 0)
    _lib.call("convjit_conv_desc_from_transpose", ctypes.byref(t), ctypes.byref(d))
    return d


def _upsample(v, rank):
    """upsample= as per-dim factors, each 1 or 2 (nearest)."""
    if v is None:
        return (1,) * rank
    f = _tuple(v, rank, "upsample", 1)
    if any(e not in (1, 2) for e in f):
        raise ValueError(f"convjit: upsample={v!r}: every factor must be 1 or 2 (nearest-neighbour)")
    return f


def _batched(x, w, names, w_dims, batch_only):
    """(x with its batch dim, spatial rank, whether x was unbatched) of an
    input x and a filter w named names = (x's, w's): 1 to 3 spatial dims by
    w.dim() (w_dims: what its first two dims are); the batch_only (name,
    tensor) pairs must be None for an unbatched x."""
    xn, wn = names
    if not isinstance(x, torch.Tensor) or not isinstance(w, torch.Tensor):
        raise TypeError(f"convjit: {xn} and {wn} must be torch tensors, got {type(x).__name__} and "
                        f"{type(w).__name__}")
    rank = w.dim() - 2
    if rank not in (1, 2, 3):
        raise ValueError(f"convjit: {wn} has {w.dim()} dims {tuple(w.shape)}: expected {w_dims} and 1 to 3 "
                         "filter dims")
    unbatched = x.dim() == rank + 1
    if unbatched:
        x = x.unsqueeze(0)
        for name, t in batch_only:
            if t is not None:
                raise ValueError(f"convjit: {name} with an unbatched {xn}: give {xn} a batch dim")
    if x.dim() != rank + 2:
        raise ValueError(f"convjit: {xn} has {x.dim()} dims {tuple(x.shape)} but {wn} {tuple(w.shape)} is a "
                         f"{rank}D filter: expected {xn} with {rank + 2} dims (N, C, ...)")
    return x, rank, unbatched


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
    return _conv_impl(x, w, bias, stride, padding, dilation, groups, padding_hi=padding_hi, residual=residual, act=act,
                      beta=beta, x_scale=x_scale, w_scale=w_scale, x_prev=x_prev, dtype=dtype, out=out,
                      out_dtype=out_dtype, upsample=upsample)


def _conv_impl(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, *, padding_hi=None, residual=None,
               act=None, beta=1.0, x_scale=None, w_scale=None, x_prev=None, dtype=None, out=None, out_dtype=None,
               upsample=None):
    """conv without autograd: every check, the plan and the launch."""
    t_start = time.perf_counter()
    x, rank, unbatched = _batched(x, w, ("x", "w"), "K, C/groups",
                                  (("residual", residual), ("x_prev", x_prev), ("out", out)))
    dev = x.device
    for name, t in (("w", w), ("bias", bias), ("residual", residual), ("x_prev", x_prev), ("out", out),
                    ("w_scale", w_scale if isinstance(w_scale, torch.Tensor) else None)):
        if t is not None and t.device != dev:
            raise ValueError(f"convjit: {name} is on {t.device} but x is on {dev}: put them on one device")
    fp8 = None
    if dtype is not None:
        fp8 = _FP8_NAMES.get(dtype) if isinstance(dtype, str) else _TORCH_FP8.get(dtype)
        if fp8 is None:
            raise ValueError(f"convjit: dtype={dtype!r}: expected 'fp8_e4m3fn' or 'fp8_e4m3fnuz' "
                             "(the fp8 format of uint8 tensors)")
    xdt, wdt = _dtype_code(x, "x", fp8), _dtype_code(w, "w", fp8)
    if (xdt == _lib.DTYPE_F16) != (wdt == _lib.DTYPE_F16):
        raise TypeError(f"convjit: x dtype {x.dtype}, w dtype {w.dtype}: an f16 conv takes torch.float16 x and w "
                        "(convjit converts f16 to nothing else); convert both with .half()")
    if out_dtype is not None and out_dtype not in _TORCH_Y:
        raise TypeError(f"convjit: out_dtype={out_dtype!r}: expected torch.float32, or the inputs' own "
                        "torch.bfloat16 / torch.float16")
    if out is not None and out_dtype is not None and out.dtype != out_dtype:
        raise TypeError(f"convjit: out dtype {out.dtype} with out_dtype={out_dtype}: give one of them")
    # y's dtype: out's, out_dtype, else the inputs' own; convjit refuses a pair it has no kernel for
    ydt = own_y_dtype(xdt) if out is None and out_dtype is None else _TORCH_Y.get(
        out_dtype if out is None else out.dtype)
    stride = _tuple(stride, rank, "stride", 1)
    dilation = _tuple(dilation, rank, "dilation", 1)
    filt = tuple(w.shape[2:])
    pad_lo, pad_hi = _padding(padding, padding_hi, rank, filt, dilation, stride)
    up = _upsample(upsample, rank)
    _groups(groups)
    if act not in _ACTS:
        raise ValueError(f"convjit: act={act!r}: expected None, 'relu', 'silu' or 'gelu_tanh'")
    n, c = x.shape[0], x.shape[1]
    k = w.shape[0]
    if w.shape[1] * groups != c:
        raise ValueError(f"convjit: w {tuple(w.shape)} with groups={groups} takes {w.shape[1] * groups} input "
                         f"channels, x {tuple(x.shape)} has {c}")
    xs = _scalar(x_scale, "x_scale")
    channel_scale = None
    if isinstance(w_scale, torch.Tensor) and w_scale.numel() != 1:
        if w_scale.shape != (k,):
            raise ValueError(f"convjit: w_scale {tuple(w_scale.shape)}: expected one scale or K={k} "
                             "per-output-channel scales")
        channel_scale = w_scale.to(torch.float32).contiguous()
        ws = 0.0
    else:
        ws = _scalar(w_scale, "w_scale")

    x, x_layout = _as_dense(x, rank)
    y_layout = x_layout
    if out is not None:
        if ydt is None:
            raise TypeError(f"convjit: out dtype {out.dtype}: y is torch.bfloat16, torch.float16 or torch.float32")
        y_layout = _out_layout(out, rank, "y")
    if x_prev is not None:
        if rank == 3:   # (convjit refuses x_prev of a 1D or 2D conv itself: no time dim)
            _check_x_prev(x_prev, x, pad_lo)
        x_prev = _dense(x_prev, _lib.LAYOUT_NCDHW, rank)
        if _dtype_code(x_prev, "x_prev", fp8) != xdt:
            raise TypeError(f"convjit: x_prev dtype {x_prev.dtype} differs from x's {x.dtype}")

    # beta = 0 drops the residual: the descriptor's beta 0 means 1.0 (convjit.h), so it cannot say 0
    fuse_res = residual is not None and float(beta) != 0.0
    key = conv_key(rank, n, c, k, tuple(x.shape[2:]), filt, stride, pad_lo, pad_hi, dilation, groups,
                   x_dtype=xdt, w_dtype=wdt, x_layout=x_layout, y_layout=y_layout, bias=bias is not None,
                   x_scale=xs, w_scale=ws, channel_scale=channel_scale is not None, residual=fuse_res,
                   beta=float(beta) if fuse_res else 0.0, act=_ACTS[act], x_prev=x_prev is not None, y_dtype=ydt,
                   upsample=up)

    ctx = _runtime.context_for(dev)
    plan = ctx.plan(key, lambda: desc_of(key))
    y_shape = (n, k) + plan.out_dims
    if out is not None and tuple(out.shape) != y_shape:
        raise ValueError(f"convjit: out {tuple(out.shape)}: y is {y_shape}")
    if residual is not None:
        if tuple(residual.shape) != y_shape:
            raise ValueError(f"convjit: residual {tuple(residual.shape)}: expected y's shape {y_shape}")
        if residual.dtype != _Y_TORCH[ydt]:
            raise TypeError(f"convjit: residual dtype {residual.dtype}: the fused residual is in y's dtype, "
                            f"{_Y_TORCH[ydt]}")
        residual = _dense(residual, y_layout, rank) if fuse_res else None
    if bias is not None:
        if bias.shape != (k,):
            raise ValueError(f"convjit: bias {tuple(bias.shape)}: expected K={k} elements")
        bias = bias.to(torch.float32).contiguous()
    y = out if out is not None else _empty(y_shape, y_layout, rank, dev, _Y_TORCH[ydt])
    _launch(ctx, plan, {"x": x, "bias": bias, "residual": residual, "scale": channel_scale, "x_prev": x_prev},
            {"y": y}, w)
    _runtime.count("calls")
    _runtime.count("call_seconds", time.perf_counter() - t_start)
    return y.squeeze(0) if unbatched else y


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
    return _conv_transpose_impl(input, weight, bias, stride, padding, output_padding, groups, dilation,
                                residual=residual, act=act, beta=beta, out=out)


def _conv_transpose_impl(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1, *,
                         residual=None, act=None, beta=1.0, out=None):
    """conv_transpose without autograd: every check, the plan and the launch."""
    t_start = time.perf_counter()
    input, rank, unbatched = _batched(input, weight, ("input", "weight"), "C_in, C_out/groups",
                                      (("residual", residual), ("out", out)))
    dev = input.device
    for name, t in (("weight", weight), ("bias", bias), ("residual", residual), ("out", out)):
        if t is not None and t.device != dev:
            raise ValueError(f"convjit: {name} is on {t.device} but input is on {dev}: put them on one device")
    if input.dtype not in _TORCH_16 or weight.dtype != input.dtype:
        raise TypeError(f"convjit: input dtype {input.dtype}, weight dtype {weight.dtype}: convjit's transposed conv "
                        "takes torch.bfloat16 or torch.float16, one for both")
    dt = input.dtype
    stride = _tuple(stride, rank, "stride", 1)
    dilation = _tuple(dilation, rank, "dilation", 1)
    padding = _tuple(padding, rank, "padding", 0)
    output_padding = _tuple(output_padding, rank, "output_padding", 0)
    _groups(groups)
    if act not in _ACTS:
        raise ValueError(f"convjit: act={act!r}: expected None, 'relu', 'silu' or 'gelu_tanh'")
    n, c_in = input.shape[0], input.shape[1]
    if weight.shape[0] != c_in:
        raise ValueError(f"convjit: weight {tuple(weight.shape)} takes {weight.shape[0]} input channels, input "
                         f"{tuple(input.shape)} has {c_in}")
    if c_in % groups:
        raise ValueError(f"convjit: groups={groups} does not divide the input's {c_in} channels")
    c_out = weight.shape[1] * groups
    filt = tuple(weight.shape[2:])
    input, in_layout = _as_dense(input, rank)
    out_layout = in_layout
    if out is not None:
        if out.dtype != dt:
            raise TypeError(f"convjit: out dtype {out.dtype}: the output is the input's {dt}")
        out_layout = _out_layout(out, rank, "the output")
    fuse_res = residual is not None and float(beta) != 0.0
    # the descriptor's x is the transposed conv's output, y its input
    fields = dict(x_dtype=_TORCH_16[dt], w_dtype=_TORCH_16[dt], x_layout=out_layout, y_layout=in_layout,
                  bias=bias is not None, residual=fuse_res,
                  beta=float(beta) if fuse_res else 0.0, act=_ACTS[act])
    key = (("transpose", True), ("rank", rank), ("n", n), ("c_in", c_in), ("c_out", c_out),
           ("in", tuple(input.shape[2:])), ("filter", filt), ("stride", stride), ("padding", padding),
           ("output_padding", output_padding), ("dilation", dilation), ("groups", groups),
           ("w_scale", 0.0)) + tuple(sorted(fields.items()))
    ctx = _runtime.context_for(dev)
    plan = ctx.plan(key, lambda: conv_transpose_desc(rank, n, c_in, c_out, tuple(input.shape[2:]), filt, stride,
                                                     padding, output_padding, dilation, groups, **fields))
    y_shape = (n, c_out) + plan.in_dims
    if out is not None and tuple(out.shape) != y_shape:
        raise ValueError(f"convjit: out {tuple(out.shape)}: the output is {y_shape}")
    if residual is not None:
        if tuple(residual.shape) != y_shape:
            raise ValueError(f"convjit: residual {tuple(residual.shape)}: expected the output's shape {y_shape}")
        if residual.dtype != dt:
            raise TypeError(f"convjit: residual dtype {residual.dtype}: the fused residual is the output's {dt}")
        residual = _dense(residual, out_layout, rank) if fuse_res else None
    if bias is not None:
        if bias.shape != (c_out,):
            raise ValueError(f"convjit: bias {tuple(bias.shape)}: expected C_out={c_out} elements")
        bias = bias.to(torch.float32).contiguous()
    y = out if out is not None else _empty(y_shape, out_layout, rank, dev, dt)
    _launch(ctx, plan, {"dy": input, "bias": bias, "residual": residual}, {"dx": y}, weight)
    _runtime.count("calls")
    _runtime.count("call_seconds", time.perf_counter() - t_start)
    return y.squeeze(0) if unbatched else y


def _grad_geometry(what, a, b, size, role, stride, pad_lo, pad_hi, dilation, groups):
    """The shared checks of the backward entry points: a and b tensors of
    one 16-bit dtype on one device, size the other tensor's shape (rank + 2
    ints), the geometry as for conv. Returns (rank, dtype code, size,
    stride, pad_lo, pad_hi, dilation)."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"convjit: {what}: {name} must be a torch tensor, got {type(t).__name__}")
    if a.dtype not in _TORCH_16 or b.dtype != a.dtype:
        raise TypeError(f"convjit: {what}: dtypes {a.dtype} and {b.dtype}: the backward kinds take one 16-bit "
                        f"dtype ({', '.join(map(str, _TORCH_16))}) for both")
    if a.device != b.device:
        raise ValueError(f"convjit: {what}: tensors on {a.device} and {b.device}: put them on one device")
    size = tuple(int(e) for e in size)
    rank = len(size) - 2
    if rank not in (1, 2, 3):
        raise ValueError(f"convjit: {what}: {role} {size}: expected N or K, C and 1 to 3 spatial extents")
    stride = _tuple(stride, rank, "stride", 1)
    dilation = _tuple(dilation, rank, "dilation", 1)
    pad_lo = _tuple(pad_lo, rank, "pad_lo", 0)
    pad_hi = _tuple(pad_hi, rank, "pad_hi", 0)
    _groups(groups)
    return rank, _TORCH_16[a.dtype], size, stride, pad_lo, pad_hi, dilation


def conv_backward_data(dy, w, x_size, stride=1, pad_lo=0, pad_hi=0, dilation=1, groups=1, channels_last=False):
    """dx, of shape x_size, of the forward conv y = conv(x, w, stride,
    padding=pad_lo, padding_hi=pad_hi, dilation, groups) for y's gradient
    dy: convjit's backward-data kind (docs/api.md "Problem kinds"). dy and w
    of one 16-bit dtype; dx in it, channels-last when asked, else
    contiguous. No autograd (ops.conv's backward calls it)."""
    t_start = time.perf_counter()
    rank, dt, x_size, stride, pad_lo, pad_hi, dilation = _grad_geometry(
        "conv_backward_data", dy, w, x_size, "x_size", stride, pad_lo, pad_hi, dilation, groups)
    dy, dy_layout = _as_dense(dy, rank)
    x_layout = _lib.LAYOUT_NDHWC if channels_last else _lib.LAYOUT_NCDHW
    n, c, k = x_size[0], x_size[1], w.shape[0]
    key = conv_key(rank, n, c, k, x_size[2:], tuple(w.shape[2:]), stride, pad_lo, pad_hi, dilation, groups,
                   x_dtype=dt, w_dtype=dt, x_layout=x_layout, y_layout=dy_layout, kind=_lib.CONV_BACKWARD_DATA)
    ctx = _runtime.context_for(dy.device)
    plan = ctx.plan(key, lambda: desc_of(key))
    if tuple(dy.shape) != (n, k) + plan.out_dims:
        raise ValueError(f"convjit: conv_backward_data: dy {tuple(dy.shape)}: the conv's y is {(n, k) + plan.out_dims}")
    dx = _empty(x_size, x_layout, rank, dy.device, dy.dtype)
    _launch(ctx, plan, {"dy": dy}, {"dx": dx}, w)
    _runtime.count("bwd_data_calls")
    _runtime.count("call_seconds", time.perf_counter() - t_start)
    return dx


def conv_backward_weight(x, dy, w_size, stride=1, pad_lo=0, pad_hi=0, dilation=1, groups=1, dw_dtype=None,
                         bias=False):
    """(dw, db) of the forward conv y = conv(x, w, stride, padding=pad_lo,
    padding_hi=pad_hi, dilation, groups) for y's gradient dy: convjit's
    backward-weight kind. x and dy of one 16-bit dtype, dense (contiguous
    or channels-last, else copied); dw of shape w_size (K, C/groups,
    *filter), contiguous, in dw_dtype (None: x's dtype; or torch.float32);
    db (fp32, K) when bias, else None. Deterministic: the same bits on every
    run (docs/api.md "Problem kinds"). No autograd."""
    t_start = time.perf_counter()
    rank, dt, w_size, stride, pad_lo, pad_hi, dilation = _grad_geometry(
        "conv_backward_weight", x, dy, w_size, "w_size", stride, pad_lo, pad_hi, dilation, groups)
    dw_dtype = x.dtype if dw_dtype is None else dw_dtype
    if dw_dtype not in (x.dtype, torch.float32):
        raise TypeError(f"convjit: conv_backward_weight: dw_dtype={dw_dtype}: dw is x's {x.dtype} or torch.float32")
    (x, x_layout), (dy, dy_layout) = _as_dense(x, rank), _as_dense(dy, rank)
    n, c, k = x.shape[0], x.shape[1], w_size[0]
    if w_size[1] * groups != c:
        raise ValueError(f"convjit: conv_backward_weight: w_size {w_size} with groups={groups} takes "
                         f"{w_size[1] * groups} input channels, x {tuple(x.shape)} has {c}")
    key = conv_key(rank, n, c, k, tuple(x.shape[2:]), w_size[2:], stride, pad_lo, pad_hi, dilation, groups,
                   x_dtype=dt, w_dtype=_TORCH_16.get(dw_dtype, _lib.DTYPE_F32), x_layout=x_layout,
                   y_layout=dy_layout, bias=bool(bias), kind=_lib.CONV_BACKWARD_WEIGHT)
    ctx = _runtime.context_for(x.device)
    plan = ctx.plan(key, lambda: desc_of(key))
    if tuple(dy.shape) != (n, k) + plan.out_dims:
        raise ValueError(f"convjit: conv_backward_weight: dy {tuple(dy.shape)}: the conv's y is "
                         f"{(n, k) + plan.out_dims}")
    dw = torch.empty(w_size, dtype=dw_dtype, device=x.device)
    db = torch.empty(k, dtype=torch.float32, device=x.device) if bias else None
    _launch(ctx, plan, {"x": x, "dy": dy}, {"dw": dw, "db": db})
    _runtime.count("bwd_weight_calls")
    _runtime.count("call_seconds", time.perf_counter() - t_start)
    return dw, db


def _args():
    a = _lib.ConvArgs()
    a.struct_size = ctypes.sizeof(a)
    return a


def _launch(ctx, plan, ins, outs, w=None):
    """One convjit_conv_execute of plan: ins and outs map convjit_conv_args
    fields (x, dy, bias, residual, scale, x_prev; y, dx, dw, db) to tensors
    (None: not given); w, when the kind reads a packed weight, is packed
    for plan (cached per weight version)."""
    outs = {f: t for f, t in outs.items() if t is not None}
    with torch.no_grad():
        if ctx.emulated:
            _run_emulated(ctx, plan, ins, outs, w)
        else:
            _run_hip(ctx, plan, ins, outs, w)


def _run_emulated(ctx, plan, ins, outs, w=None):
    """The emulator: inputs copied into the context's staging buffer of
    their role (the field), outputs copied back out."""
    def upload(role, t):
        if t is None:
            return None
        b = ctx.staging(role, _nbytes(t))
        _runtime._timed_call("convjit_memcpy_h2d", ctx.handle, b.ptr, t.data_ptr(), _nbytes(t), None)
        return b.ptr

    with ctx.lock:
        a = _args()
        if w is not None:
            a.w_packed = _runtime.packed_weight(plan, w).ptr
        for f, t in ins.items():
            setattr(a, f, upload(f, t))
        x_prev = ins.get("x_prev")
        a.x_prev_bytes = _nbytes(x_prev) if x_prev is not None else 0
        staged = [(t, ctx.staging(f, _nbytes(t))) for f, t in outs.items()]
        for (f, _), (_, b) in zip(outs.items(), staged):
            setattr(a, f, b.ptr)
        ws = ctx.staging("workspace", plan.workspace_bytes)
        a.workspace, a.workspace_bytes = (ws.ptr, plan.workspace_bytes) if ws else (None, 0)
        _runtime._timed_call("convjit_conv_execute", plan.handle, ctypes.byref(a), None)
        for t, b in staged:
            _runtime._timed_call("convjit_memcpy_d2h", ctx.handle, t.data_ptr(), b.ptr, _nbytes(t), None)


def _aligned(t):
    """t, or a copy of it when its pointer is below convjit's alignment
    (docs/api.md "Alignment": 16 bytes covers every input; a view at an odd
    offset is copied, a fresh torch block is 256-byte aligned). Outputs are
    not copied: convjit checks their pointers and names them."""
    if t is None or t.data_ptr() % 16 == 0:
        return t
    _runtime.count("input_copies")
    return t.clone(memory_format=torch.preserve_format)


def _run_hip(ctx, plan, ins, outs, w=None):
    dev = next(t for t in outs.values()).device
    stream = torch.cuda.current_stream(dev)
    a = _args()
    if w is not None:
        pk = _runtime.packed_weight(plan, w, stream)
        if pk.stream is not None and pk.stream != stream:
            stream.wait_event(pk.event)      # packed on another stream: order the read after the pack
            pk.buf.record_stream(stream)
        a.w_packed = pk.ptr
    ins = {f: _aligned(t) for f, t in ins.items()}
    for f, t in list(ins.items()) + list(outs.items()):
        setattr(a, f, t.data_ptr() if t is not None else None)
    x_prev = ins.get("x_prev")
    a.x_prev_bytes = _nbytes(x_prev) if x_prev is not None else 0
    ws = None
    if plan.workspace_bytes:
        ws = torch.empty(plan.workspace_bytes, dtype=torch.uint8, device=dev)
        a.workspace, a.workspace_bytes = ws.data_ptr(), plan.workspace_bytes
    _runtime._timed_call("convjit_conv_execute", plan.handle, ctypes.byref(a), ctypes.c_void_p(stream.cuda_stream))


from . import _autograd  # noqa: E402  (the autograd path imports this module)
