"""The binding's one layer over the C library: every conv the binding runs
(ops, the gradients, torch.library's custom ops, the operator route) comes
here, without autograd. It checks the arguments, builds the one descriptor
form (a problem key: the convjit_conv_desc's fields as (name, value)
pairs, the plan cache's key for every kind), gets the plan, and launches.

    ops (public) -> _library -> _autograd -> _core -> _runtime -> _lib (ctypes)
    _route (torch's operator) -----------------^
    nn -> ops

Two steps per call: prepare_* does every check and decision for one call
signature (shapes, strides, dtypes, devices and the non-tensor arguments)
and returns a Call; run_* launches a Call on tensors of that signature.
The public entry points below memoize prepare_* per signature, so a
repeated call costs a dict lookup and the launch. A signature holds no
tensor values: a tensor scale (read with .item()) bypasses the memo.

Output extents come from the C library (convjit_conv_output_dims,
convjit_conv_desc_from_transpose): no formula is retyped here.
"""

import ctypes
import functools
import time

import torch

from . import _lib, _runtime

FP8_NAMES = {"fp8_e4m3fn": _lib.DTYPE_FP8_E4M3FN, "e4m3fn": _lib.DTYPE_FP8_E4M3FN,
             "fp8_e4m3fnuz": _lib.DTYPE_FP8_E4M3FNUZ, "e4m3fnuz": _lib.DTYPE_FP8_E4M3FNUZ}
TORCH_FP8 = {}
for _name, _code in (("float8_e4m3fn", _lib.DTYPE_FP8_E4M3FN), ("float8_e4m3fnuz", _lib.DTYPE_FP8_E4M3FNUZ)):
    if hasattr(torch, _name):   # torch >= 2.1 (2.2 for fnuz); Debian 12's 1.13 has neither
        TORCH_FP8[getattr(torch, _name)] = _code
# the 16-bit input dtypes, and y's dtypes (the inputs' own 16-bit type or f32: convjit.h)
TORCH_16 = {torch.bfloat16: _lib.DTYPE_BF16, torch.float16: _lib.DTYPE_F16}
TORCH_Y = {torch.bfloat16: _lib.DTYPE_BF16, torch.float16: _lib.DTYPE_F16, torch.float32: _lib.DTYPE_F32}
Y_TORCH = {v: k for k, v in TORCH_Y.items()}
ACTS = {None: _lib.ACT_IDENTITY, "identity": _lib.ACT_IDENTITY, "relu": _lib.ACT_RELU,
        "silu": _lib.ACT_SILU, "gelu_tanh": _lib.ACT_GELU_TANH}
_CHANNELS_LAST = {5: torch.channels_last_3d, 4: torch.channels_last}
_INT64_MAX = 2 ** 63 - 1   # the descriptor's int64 fields: ctypes would keep only the low 64 bits of a wider int


# ---- argument checks ------------------------------------------------------
def int64(v, name, shown=None):
    """v, refused with the argument's name when the descriptor's int64 cannot hold it."""
    if not -_INT64_MAX - 1 <= v <= _INT64_MAX:
        raise ValueError(f"convjit: {name}={shown if shown is not None else v!r}: {v} does not fit the "
                         f"descriptor's int64 (at most 2**63-1)")
    return v


def dtype_code(t, role, dtype):
    if t.dtype in TORCH_16:
        return TORCH_16[t.dtype]
    if t.dtype in TORCH_FP8:
        return TORCH_FP8[t.dtype]
    if t.dtype == torch.uint8:
        if dtype is None:
            raise TypeError(f"convjit: {role} is torch.uint8: say which fp8 format its bytes hold with "
                            "dtype='fp8_e4m3fn' or dtype='fp8_e4m3fnuz'")
        return dtype
    fp8 = "torch.float8_e4m3fn/fnuz, " if TORCH_FP8 else ""
    raise TypeError(f"convjit: {role} dtype {t.dtype}: convjit takes torch.bfloat16, torch.float16 or fp8 "
                    f"({fp8}or torch.uint8 with dtype='fp8_e4m3fn'/'fp8_e4m3fnuz'); convert with .bfloat16() "
                    "or .half()")


def own_y_dtype(x_dtype):
    """y's dtype when none is asked for: f16 for an f16 conv, else bf16."""
    return _lib.DTYPE_F16 if x_dtype == _lib.DTYPE_F16 else _lib.DTYPE_BF16


def ints(v, rank, name, minimum):
    """An int or rank ints (a 1-tuple repeats) as a tuple, each >= minimum."""
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
        int64(e, name, v)
    return v


def groups_of(v):
    if not isinstance(v, int) or v < 1:
        raise ValueError(f"convjit: groups={v!r}: expected an int >= 1")
    return int64(v, "groups")


def paddings(padding, padding_hi, rank, filt, dilation, stride):
    """(pad_lo, pad_hi) of padding (ints, 'same' or 'valid') and padding_hi."""
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
    lo = ints(padding, rank, "padding", 0)
    hi = lo if padding_hi is None else ints(padding_hi, rank, "padding_hi", 0)
    return lo, hi


def upsample_of(v, rank):
    """upsample= as per-dim factors, each 1 or 2 (nearest)."""
    if v is None:
        return (1,) * rank
    f = ints(v, rank, "upsample", 1)
    if any(e not in (1, 2) for e in f):
        raise ValueError(f"convjit: upsample={v!r}: every factor must be 1 or 2 (nearest-neighbour)")
    return f


def act_code(act):
    if act not in ACTS:
        raise ValueError(f"convjit: act={act!r}: expected None, 'relu', 'silu' or 'gelu_tanh'")
    return ACTS[act]


def scalar(v, name):
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


def same_device(dev, named, first="x"):
    for name, t in named:
        if t is not None and t.device != dev:
            raise ValueError(f"convjit: {name} is on {t.device} but {first} is on {dev}: put them on one device")


def batched(x, w, names, w_dims, batch_only):
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


_X_PREV_DIMS = ("batch", "channels", "frames", "height", "width")


def check_x_prev(x_prev, x, pad_lo):
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


# ---- layouts ----------------------------------------------------------------
def layout_of(t, rank):
    """NCDHW or NDHWC when t is dense in one of them, else None."""
    if t.is_contiguous():
        return _lib.LAYOUT_NCDHW
    if rank + 2 in _CHANNELS_LAST and t.is_contiguous(memory_format=_CHANNELS_LAST[rank + 2]):
        return _lib.LAYOUT_NDHWC
    if rank == 1 and t.permute(0, 2, 1).is_contiguous():   # NWC: torch has no memory format for 3-D tensors
        return _lib.LAYOUT_NDHWC
    return None


def dense(t, layout, rank):
    """t as a dense tensor of layout (a copy only when it is not one)."""
    if layout_of(t, rank) == layout:
        return t
    _runtime.count("input_copies")
    if layout == _lib.LAYOUT_NCDHW:
        return t.contiguous()
    if rank == 1:
        return t.permute(0, 2, 1).contiguous().permute(0, 2, 1)
    return t.contiguous(memory_format=_CHANNELS_LAST[rank + 2])


def dense_layout(t, rank):
    """t's layout when it is dense, else NCDHW (what dense() copies it to)."""
    return layout_of(t, rank) or _lib.LAYOUT_NCDHW


def out_layout(out, rank, what):
    """The layout of a caller's out, which convjit writes in place: dense, or a ValueError."""
    layout = layout_of(out, rank)
    if layout is None:
        raise ValueError(f"convjit: out (strides {out.stride()}) is neither contiguous nor channels-last: "
                         f"convjit writes {what} in place, so out must be dense")
    return layout


def empty(shape, layout, rank, device, dtype):
    if layout == _lib.LAYOUT_NCDHW:
        return torch.empty(shape, dtype=dtype, device=device)
    if rank == 1:
        n, k, w = shape
        return torch.empty((n, w, k), dtype=dtype, device=device).permute(0, 2, 1)
    return torch.empty(shape, dtype=dtype, device=device, memory_format=_CHANNELS_LAST[rank + 2])


def nbytes(t):
    return t.numel() * t.element_size()


# ---- the one descriptor form -------------------------------------------------
def conv_key(rank, n, c, k, in_, filt, stride, pad_lo, pad_hi, dilation, groups, *,
             x_dtype=_lib.DTYPE_BF16, w_dtype=_lib.DTYPE_BF16, x_layout=_lib.LAYOUT_NCDHW,
             y_layout=_lib.LAYOUT_NCDHW, bias=False, x_scale=0.0, w_scale=0.0, channel_scale=False,
             residual=False, beta=0.0, act=_lib.ACT_IDENTITY, x_prev=False, y_dtype=None, upsample=None,
             kind=_lib.CONV_FORWARD, output_padding=None):
    """Every field of a conv descriptor as a hashable tuple of (name, value):
    the plan cache's key for every kind, and (desc_of) the descriptor
    itself. y_dtype None: the inputs' own (own_y_dtype). A transposed conv
    is the backward data of the forward conv it transposes
    (transpose_key)."""
    return (("rank", rank), ("n", n), ("c", c), ("k", k), ("in", tuple(in_)), ("filter", tuple(filt)),
            ("stride", tuple(stride)), ("pad_lo", tuple(pad_lo)), ("pad_hi", tuple(pad_hi)),
            ("dilation", tuple(dilation)), ("groups", groups), ("x_dtype", x_dtype), ("w_dtype", w_dtype),
            ("x_layout", x_layout), ("y_layout", y_layout), ("bias", bias), ("x_scale", x_scale),
            ("w_scale", w_scale), ("channel_scale", channel_scale), ("residual", residual), ("beta", beta),
            ("act", act), ("x_prev", x_prev), ("y_dtype", own_y_dtype(x_dtype) if y_dtype is None else y_dtype),
            ("upsample", tuple(upsample or (1,) * rank)), ("kind", kind),
            ("output_padding", tuple(output_padding or (0,) * rank)))


_DIM_FIELDS = ("in", "filter", "stride", "pad_lo", "pad_hi", "dilation", "upsample", "output_padding")
_DIM_UNUSED = {"in": 0, "filter": 0, "stride": 1, "pad_lo": 0, "pad_hi": 0, "dilation": 1, "upsample": 0,
               "output_padding": 0}
_DESC_NAMES = {"in": "in_", "bias": "has_bias", "channel_scale": "has_channel_scale", "residual": "has_residual",
               "x_prev": "has_x_prev", "rank": "spatial_rank"}


def desc_of(key):
    """The convjit_conv_desc of a problem key."""
    d = _lib.ConvDesc()
    d.struct_size = ctypes.sizeof(d)
    rank = key[0][1]
    for name, v in key:   # the last gate before ctypes: derived values too ('same' padding of a huge dilation)
        field = _DESC_NAMES.get(name, name)
        if name in _DIM_FIELDS:
            arr = getattr(d, field)
            for i in range(3):
                arr[i] = int64(v[i], name, v) if i < rank else _DIM_UNUSED[name]
        else:
            setattr(d, field, int64(v, name) if isinstance(v, int) and not isinstance(v, bool) else v)
    return d


def key_of(d):
    """The problem key of a convjit_conv_desc (the inverse of desc_of)."""
    rank = d.spatial_rank

    def dims(field):
        return tuple(getattr(d, field)[:rank])
    return conv_key(rank, d.n, d.c, d.k, dims("in_"), dims("filter"), dims("stride"), dims("pad_lo"), dims("pad_hi"),
                    dims("dilation"), d.groups, x_dtype=d.x_dtype, w_dtype=d.w_dtype, x_layout=d.x_layout,
                    y_layout=d.y_layout, bias=bool(d.has_bias), x_scale=d.x_scale, w_scale=d.w_scale,
                    channel_scale=bool(d.has_channel_scale), residual=bool(d.has_residual), beta=d.beta, act=d.act,
                    x_prev=bool(d.has_x_prev), y_dtype=d.y_dtype,
                    upsample=tuple(u or 1 for u in dims("upsample")), kind=d.kind,
                    output_padding=dims("output_padding"))


@functools.lru_cache(maxsize=1024)
def transpose_key(rank, n, c_in, c_out, in_, filt, stride, padding, output_padding, dilation, groups, fields):
    """The problem key of a transposed conv (fields: conv_key's dtype, layout
    and epilogue ones as sorted (name, value) pairs): the backward data of
    the forward conv it transposes, filled by the C library's one formula
    (convjit_conv_desc_from_transpose); its "in" is the output's extents."""
    d = desc_of(conv_key(rank, n, c_out, c_in, (1,) * rank, filt, (1,) * rank, (0,) * rank, (0,) * rank,
                         (1,) * rank, groups, **dict(fields)))
    t = _lib.ConvTransposeParams()
    t.struct_size = ctypes.sizeof(t)
    t.spatial_rank, t.n, t.c_in, t.c_out, t.groups = rank, int64(n, "n"), c_in, c_out, groups
    for i in range(3):
        used = i < rank
        t.in_[i], t.filter[i] = (in_[i], filt[i]) if used else (1, 1)
        t.stride[i], t.dilation[i] = (stride[i], dilation[i]) if used else (1, 1)
        t.padding[i], t.output_padding[i] = (padding[i], output_padding[i]) if used else (0, 0)
    _lib.call("convjit_conv_desc_from_transpose", ctypes.byref(t), ctypes.byref(d))
    return key_of(d)


@functools.lru_cache(maxsize=1024)
def out_dims(key):
    """The forward problem's output extents (its y; backward data: dy's) by
    the C library (convjit_conv_output_dims), spatial dims only."""
    out = (ctypes.c_int64 * 3)()
    _lib.call("convjit_conv_output_dims", ctypes.byref(desc_of(key)), out)
    return tuple(out[3 - key[0][1]:])   # (Do, Ho, Wo) in 3D order: 2D is out[1:], 1D out[2:]


def geometry_key(rank, in_, filt, stride, pad_lo, pad_hi, dilation, upsample=None):
    """A forward key with only the geometry set (one channel, bf16): what
    out_dims needs, for callers that have no tensors (the fake functions)."""
    return conv_key(rank, 1, 8, 8, in_, filt, stride, pad_lo, pad_hi, dilation, 1, upsample=upsample)


# ---- prepared calls ----------------------------------------------------------
class Call:
    """What one call signature needs at run time, decided once: the
    context and plan, the output's shape, layout and dtype, the layouts
    the inputs are read in (a tensor not dense in its layout is copied)."""

    __slots__ = ("ctx", "plan", "rank", "unbatched", "y_shape", "y_layout", "y_dtype", "in_layouts", "res_layout",
                 "with_db", "stat", "gen")


def _plan(dev, key):
    ctx = _runtime.context_for(dev)
    return ctx, ctx.plan(key, lambda: desc_of(key))


def _call(ctx, plan, rank, unbatched, y_shape, y_layout, y_dtype, in_layouts, stat, res_layout=None, with_db=False):
    c = Call()
    c.ctx, c.plan, c.rank, c.unbatched = ctx, plan, rank, unbatched
    c.y_shape, c.y_layout, c.y_dtype, c.in_layouts = y_shape, y_layout, y_dtype, in_layouts
    c.res_layout, c.with_db, c.stat, c.gen = res_layout, with_db, stat, _runtime.generation
    return c


def prepare_conv(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, padding_hi=None, residual=None,
                 act=None, beta=1.0, x_scale=None, w_scale=None, x_prev=None, dtype=None, out=None, out_dtype=None,
                 upsample=None, y_layout=None):
    """Every check of a forward conv (ops.conv's arguments; y_layout: y's
    layout when out is None, default x's) and its plan: a Call."""
    x, rank, unbatched = batched(x, w, ("x", "w"), "K, C/groups",
                                 (("residual", residual), ("x_prev", x_prev), ("out", out)))
    dev = x.device
    same_device(dev, (("w", w), ("bias", bias), ("residual", residual), ("x_prev", x_prev), ("out", out),
                      ("w_scale", w_scale if isinstance(w_scale, torch.Tensor) else None)))
    fp8 = None
    if dtype is not None:
        fp8 = FP8_NAMES.get(dtype) if isinstance(dtype, str) else TORCH_FP8.get(dtype)
        if fp8 is None:
            raise ValueError(f"convjit: dtype={dtype!r}: expected 'fp8_e4m3fn' or 'fp8_e4m3fnuz' "
                             "(the fp8 format of uint8 tensors)")
    xdt, wdt = dtype_code(x, "x", fp8), dtype_code(w, "w", fp8)
    if (xdt == _lib.DTYPE_F16) != (wdt == _lib.DTYPE_F16):
        raise TypeError(f"convjit: x dtype {x.dtype}, w dtype {w.dtype}: an f16 conv takes torch.float16 x and w "
                        "(convjit converts f16 to nothing else); convert both with .half()")
    if out_dtype is not None and out_dtype not in TORCH_Y:
        raise TypeError(f"convjit: out_dtype={out_dtype!r}: expected torch.float32, or the inputs' own "
                        "torch.bfloat16 / torch.float16")
    if out is not None and out_dtype is not None and out.dtype != out_dtype:
        raise TypeError(f"convjit: out dtype {out.dtype} with out_dtype={out_dtype}: give one of them")
    # y's dtype: out's, out_dtype, else the inputs' own; convjit refuses a pair it has no kernel for
    ydt = own_y_dtype(xdt) if out is None and out_dtype is None else TORCH_Y.get(
        out_dtype if out is None else out.dtype)
    stride = ints(stride, rank, "stride", 1)
    dilation = ints(dilation, rank, "dilation", 1)
    filt = tuple(w.shape[2:])
    pad_lo, pad_hi = paddings(padding, padding_hi, rank, filt, dilation, stride)
    up = upsample_of(upsample, rank)
    groups_of(groups)
    actc = act_code(act)
    n, c, k = x.shape[0], x.shape[1], w.shape[0]
    if w.shape[1] * groups != c:
        raise ValueError(f"convjit: w {tuple(w.shape)} with groups={groups} takes {w.shape[1] * groups} input "
                         f"channels, x {tuple(x.shape)} has {c}")
    xs = scalar(x_scale, "x_scale")
    channel_scale = isinstance(w_scale, torch.Tensor) and w_scale.numel() != 1
    if channel_scale and w_scale.shape != (k,):
        raise ValueError(f"convjit: w_scale {tuple(w_scale.shape)}: expected one scale or K={k} "
                         "per-output-channel scales")
    ws = 0.0 if channel_scale else scalar(w_scale, "w_scale")
    x_layout = dense_layout(x, rank)
    if out is not None:
        if ydt is None:
            raise TypeError(f"convjit: out dtype {out.dtype}: y is torch.bfloat16, torch.float16 or torch.float32")
        y_layout = out_layout(out, rank, "y")
    elif y_layout is None:
        y_layout = x_layout
    if x_prev is not None:
        check_x_prev(x_prev, x, pad_lo)   # the time dim is the first (D in 3D, L in 1D)
        if dtype_code(x_prev, "x_prev", fp8) != xdt:
            raise TypeError(f"convjit: x_prev dtype {x_prev.dtype} differs from x's {x.dtype}")
    # beta = 0 drops the residual: the descriptor's beta 0 means 1.0 (convjit.h), so it cannot say 0
    fuse_res = residual is not None and float(beta) != 0.0
    key = conv_key(rank, n, c, k, tuple(x.shape[2:]), filt, stride, pad_lo, pad_hi, dilation, groups,
                   x_dtype=xdt, w_dtype=wdt, x_layout=x_layout, y_layout=y_layout, bias=bias is not None,
                   x_scale=xs, w_scale=ws, channel_scale=channel_scale, residual=fuse_res,
                   beta=float(beta) if fuse_res else 0.0, act=actc, x_prev=x_prev is not None, y_dtype=ydt,
                   upsample=up)
    ctx, plan = _plan(dev, key)
    y_shape = (n, k) + plan.out_dims
    if out is not None and tuple(out.shape) != y_shape:
        raise ValueError(f"convjit: out {tuple(out.shape)}: y is {y_shape}")
    if residual is not None:
        if tuple(residual.shape) != y_shape:
            raise ValueError(f"convjit: residual {tuple(residual.shape)}: expected y's shape {y_shape}")
        if residual.dtype != Y_TORCH[ydt]:
            raise TypeError(f"convjit: residual dtype {residual.dtype}: the fused residual is in y's dtype, "
                            f"{Y_TORCH[ydt]}")
    if bias is not None and bias.shape != (k,):
        raise ValueError(f"convjit: bias {tuple(bias.shape)}: expected K={k} elements")
    return _call(ctx, plan, rank, unbatched, y_shape, y_layout, Y_TORCH[ydt], (x_layout,), "calls",
                 y_layout if fuse_res else None)


def run_conv(call, x, w, bias=None, residual=None, x_prev=None, w_scale=None, out=None):
    """Launches a prepared forward conv: y (unbatched when x was)."""
    rank = call.rank
    if call.unbatched:
        x = x.unsqueeze(0)
    x = dense(x, call.in_layouts[0], rank)
    ins = {"x": x, "bias": None if bias is None else bias.to(torch.float32).contiguous(),
           "residual": None if call.res_layout is None else dense(residual, call.res_layout, rank),
           "scale": (w_scale.to(torch.float32).contiguous() if isinstance(w_scale, torch.Tensor)
                     and w_scale.numel() != 1 else None),
           "x_prev": None if x_prev is None else dense(x_prev, _lib.LAYOUT_NCDHW, rank)}
    y = out if out is not None else empty(call.y_shape, call.y_layout, rank, x.device, call.y_dtype)
    launch(call.ctx, call.plan, ins, {"y": y}, w)
    return y.squeeze(0) if call.unbatched else y


def prepare_conv_transpose(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                           residual=None, act=None, beta=1.0, out=None, y_layout=None):
    """Every check of a transposed conv (ops.conv_transpose's arguments;
    y_layout: the output's layout when out is None, default input's) and
    its plan: a Call."""
    input, rank, unbatched = batched(input, weight, ("input", "weight"), "C_in, C_out/groups",
                                     (("residual", residual), ("out", out)))
    dev = input.device
    same_device(dev, (("weight", weight), ("bias", bias), ("residual", residual), ("out", out)), "input")
    if input.dtype not in TORCH_16 or weight.dtype != input.dtype:
        raise TypeError(f"convjit: input dtype {input.dtype}, weight dtype {weight.dtype}: convjit's transposed conv "
                        "takes torch.bfloat16 or torch.float16, one for both")
    dt = input.dtype
    stride = ints(stride, rank, "stride", 1)
    dilation = ints(dilation, rank, "dilation", 1)
    padding = ints(padding, rank, "padding", 0)
    output_padding = ints(output_padding, rank, "output_padding", 0)
    groups_of(groups)
    actc = act_code(act)
    n, c_in = input.shape[0], input.shape[1]
    if weight.shape[0] != c_in:
        raise ValueError(f"convjit: weight {tuple(weight.shape)} takes {weight.shape[0]} input channels, input "
                         f"{tuple(input.shape)} has {c_in}")
    if c_in % groups:
        raise ValueError(f"convjit: groups={groups} does not divide the input's {c_in} channels")
    c_out = weight.shape[1] * groups
    filt = tuple(weight.shape[2:])
    in_layout = dense_layout(input, rank)
    if out is not None:
        if out.dtype != dt:
            raise TypeError(f"convjit: out dtype {out.dtype}: the output is the input's {dt}")
        y_layout = out_layout(out, rank, "the output")
    elif y_layout is None:
        y_layout = in_layout
    fuse_res = residual is not None and float(beta) != 0.0
    # the descriptor's x is the transposed conv's output, y its input
    fields = (("act", actc), ("beta", float(beta) if fuse_res else 0.0), ("bias", bias is not None),
              ("residual", fuse_res), ("w_dtype", TORCH_16[dt]), ("x_dtype", TORCH_16[dt]), ("x_layout", y_layout),
              ("y_layout", in_layout))
    key = transpose_key(rank, n, c_in, c_out, tuple(input.shape[2:]), filt, stride, padding, output_padding,
                        dilation, groups, fields)
    ctx, plan = _plan(dev, key)
    y_shape = (n, c_out) + plan.in_dims
    if out is not None and tuple(out.shape) != y_shape:
        raise ValueError(f"convjit: out {tuple(out.shape)}: the output is {y_shape}")
    if residual is not None:
        if tuple(residual.shape) != y_shape:
            raise ValueError(f"convjit: residual {tuple(residual.shape)}: expected the output's shape {y_shape}")
        if residual.dtype != dt:
            raise TypeError(f"convjit: residual dtype {residual.dtype}: the fused residual is the output's {dt}")
    if bias is not None and bias.shape != (c_out,):
        raise ValueError(f"convjit: bias {tuple(bias.shape)}: expected C_out={c_out} elements")
    return _call(ctx, plan, rank, unbatched, y_shape, y_layout, dt, (in_layout,), "calls",
                 y_layout if fuse_res else None)


def run_conv_transpose(call, input, weight, bias=None, residual=None, out=None):
    """Launches a prepared transposed conv: its output."""
    rank = call.rank
    if call.unbatched:
        input = input.unsqueeze(0)
    ins = {"dy": dense(input, call.in_layouts[0], rank),
           "bias": None if bias is None else bias.to(torch.float32).contiguous(),
           "residual": None if call.res_layout is None else dense(residual, call.res_layout, rank)}
    y = out if out is not None else empty(call.y_shape, call.y_layout, rank, input.device, call.y_dtype)
    launch(call.ctx, call.plan, ins, {"dx": y}, weight)
    return y.squeeze(0) if call.unbatched else y


def _grad_geometry(what, a, b, size, role, stride, pad_lo, pad_hi, dilation, groups):
    """The shared checks of the backward entry points: a and b tensors of
    one 16-bit dtype on one device, size the other tensor's shape (rank + 2
    ints), the geometry as for conv. Returns (rank, dtype code, size,
    stride, pad_lo, pad_hi, dilation)."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"convjit: {what}: {name} must be a torch tensor, got {type(t).__name__}")
    if a.dtype not in TORCH_16 or b.dtype != a.dtype:
        raise TypeError(f"convjit: {what}: dtypes {a.dtype} and {b.dtype}: the backward kinds take one 16-bit "
                        f"dtype ({', '.join(map(str, TORCH_16))}) for both")
    if a.device != b.device:
        raise ValueError(f"convjit: {what}: tensors on {a.device} and {b.device}: put them on one device")
    size = tuple(int(e) for e in size)
    rank = len(size) - 2
    if rank not in (1, 2, 3):
        raise ValueError(f"convjit: {what}: {role} {size}: expected N or K, C and 1 to 3 spatial extents")
    stride = ints(stride, rank, "stride", 1)
    dilation = ints(dilation, rank, "dilation", 1)
    pad_lo = ints(pad_lo, rank, "pad_lo", 0)
    pad_hi = ints(pad_hi, rank, "pad_hi", 0)
    groups_of(groups)
    return rank, TORCH_16[a.dtype], size, stride, pad_lo, pad_hi, dilation


def prepare_backward_data(dy, w, x_size, stride=1, pad_lo=0, pad_hi=0, dilation=1, groups=1, channels_last=False):
    """Every check of a backward data (ops.conv_backward_data's arguments) and its plan."""
    rank, dt, x_size, stride, pad_lo, pad_hi, dilation = _grad_geometry(
        "conv_backward_data", dy, w, x_size, "x_size", stride, pad_lo, pad_hi, dilation, groups)
    dy_layout = dense_layout(dy, rank)
    x_layout = _lib.LAYOUT_NDHWC if channels_last else _lib.LAYOUT_NCDHW
    n, c, k = x_size[0], x_size[1], w.shape[0]
    key = conv_key(rank, n, c, k, x_size[2:], tuple(w.shape[2:]), stride, pad_lo, pad_hi, dilation, groups,
                   x_dtype=dt, w_dtype=dt, x_layout=x_layout, y_layout=dy_layout, kind=_lib.CONV_BACKWARD_DATA)
    ctx, plan = _plan(dy.device, key)
    if tuple(dy.shape) != (n, k) + plan.out_dims:
        raise ValueError(f"convjit: conv_backward_data: dy {tuple(dy.shape)}: the conv's y is {(n, k) + plan.out_dims}")
    return _call(ctx, plan, rank, False, x_size, x_layout, dy.dtype, (dy_layout,), "bwd_data_calls")


def run_backward_data(call, dy, w):
    dx = empty(call.y_shape, call.y_layout, call.rank, dy.device, call.y_dtype)
    launch(call.ctx, call.plan, {"dy": dense(dy, call.in_layouts[0], call.rank)}, {"dx": dx}, w)
    return dx


def prepare_backward_weight(x, dy, w_size, stride=1, pad_lo=0, pad_hi=0, dilation=1, groups=1, dw_dtype=None,
                            bias=False):
    """Every check of a backward weight (ops.conv_backward_weight's arguments) and its plan."""
    rank, dt, w_size, stride, pad_lo, pad_hi, dilation = _grad_geometry(
        "conv_backward_weight", x, dy, w_size, "w_size", stride, pad_lo, pad_hi, dilation, groups)
    dw_dtype = x.dtype if dw_dtype is None else dw_dtype
    if dw_dtype not in (x.dtype, torch.float32):
        raise TypeError(f"convjit: conv_backward_weight: dw_dtype={dw_dtype}: dw is x's {x.dtype} or torch.float32")
    x_layout, dy_layout = dense_layout(x, rank), dense_layout(dy, rank)
    n, c, k = x.shape[0], x.shape[1], w_size[0]
    if w_size[1] * groups != c:
        raise ValueError(f"convjit: conv_backward_weight: w_size {w_size} with groups={groups} takes "
                         f"{w_size[1] * groups} input channels, x {tuple(x.shape)} has {c}")
    key = conv_key(rank, n, c, k, tuple(x.shape[2:]), w_size[2:], stride, pad_lo, pad_hi, dilation, groups,
                   x_dtype=dt, w_dtype=TORCH_16.get(dw_dtype, _lib.DTYPE_F32), x_layout=x_layout,
                   y_layout=dy_layout, bias=bool(bias), kind=_lib.CONV_BACKWARD_WEIGHT)
    ctx, plan = _plan(x.device, key)
    if tuple(dy.shape) != (n, k) + plan.out_dims:
        raise ValueError(f"convjit: conv_backward_weight: dy {tuple(dy.shape)}: the conv's y is "
                         f"{(n, k) + plan.out_dims}")
    return _call(ctx, plan, rank, False, w_size, None, dw_dtype, (x_layout, dy_layout), "bwd_weight_calls",
                 with_db=bool(bias))


def run_backward_weight(call, x, dy):
    """(dw, db): db (fp32, K) when the call was prepared with bias, else None."""
    rank = call.rank
    x_layout, dy_layout = call.in_layouts
    dw = torch.empty(call.y_shape, dtype=call.y_dtype, device=x.device)
    db = torch.empty(call.y_shape[0], dtype=torch.float32, device=x.device) if call.with_db else None
    launch(call.ctx, call.plan, {"x": dense(x, x_layout, rank), "dy": dense(dy, dy_layout, rank)},
           {"dw": dw, "db": db})
    return dw, db


# ---- the memo: one prepared Call per call signature ---------------------------
_memo = {}
MAX_MEMO = 1024


def _tsig(t):
    """What of a tensor a prepared call depends on (never its values)."""
    return None if t is None else (t.shape, t.stride(), t.dtype, t.device)


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v


def _memoized(sig, prepare, args):
    """(the Call of a signature, whether it was memoized): prepared on
    first use (errors are not memoized), dropped when the runtime's
    generation moves on (emulated arch, async compile or caches changed)."""
    c = _memo.get(sig)
    if c is not None and c.gen == _runtime.generation:
        return c, True
    c = prepare(*args)
    if len(_memo) >= MAX_MEMO:
        _memo.clear()
    _memo[sig] = c
    return c, False


def _counted(call, hit, t_start):
    """The call counters (a memo hit is a plan cache hit)."""
    _runtime.count_call(call.stat, time.perf_counter() - t_start, hit)


def conv(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, padding_hi=None, residual=None, act=None,
         beta=1.0, x_scale=None, w_scale=None, x_prev=None, dtype=None, out=None, out_dtype=None, upsample=None,
         y_layout=None):
    """A forward conv without autograd (ops.conv's arguments)."""
    t_start = time.perf_counter()
    args = (x, w, bias, stride, padding, dilation, groups, padding_hi, residual, act, beta, x_scale, w_scale,
            x_prev, dtype, out, out_dtype, upsample, y_layout)
    if isinstance(x_scale, torch.Tensor) or isinstance(w_scale, torch.Tensor) or not isinstance(x, torch.Tensor) \
            or not isinstance(w, torch.Tensor):
        call, hit = prepare_conv(*args), False
    else:
        sig = ("conv", _tsig(x), w.shape, w.dtype, w.device, _tsig(bias), _hashable(stride), _hashable(padding),
               _hashable(dilation), groups, _hashable(padding_hi), _tsig(residual), act, beta, x_scale, w_scale,
               _tsig(x_prev), dtype, _tsig(out), out_dtype, _hashable(upsample), y_layout)
        call, hit = _memoized(sig, prepare_conv, args)
    y = run_conv(call, x, w, bias, residual, x_prev, w_scale, out)
    _counted(call, hit, t_start)
    return y


def conv_transpose(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                   residual=None, act=None, beta=1.0, out=None, y_layout=None):
    """A transposed conv without autograd (ops.conv_transpose's arguments)."""
    t_start = time.perf_counter()
    args = (input, weight, bias, stride, padding, output_padding, groups, dilation, residual, act, beta, out,
            y_layout)
    if not isinstance(input, torch.Tensor) or not isinstance(weight, torch.Tensor):
        call, hit = prepare_conv_transpose(*args), False
    else:
        sig = ("conv_transpose", _tsig(input), weight.shape, weight.dtype, weight.device, _tsig(bias),
               _hashable(stride), _hashable(padding), _hashable(output_padding), groups, _hashable(dilation),
               _tsig(residual), act, beta, _tsig(out), y_layout)
        call, hit = _memoized(sig, prepare_conv_transpose, args)
    y = run_conv_transpose(call, input, weight, bias, residual, out)
    _counted(call, hit, t_start)
    return y


def backward_data(dy, w, x_size, stride=1, pad_lo=0, pad_hi=0, dilation=1, groups=1, channels_last=False):
    """dx of a forward conv (ops.conv_backward_data's arguments)."""
    t_start = time.perf_counter()
    args = (dy, w, x_size, stride, pad_lo, pad_hi, dilation, groups, channels_last)
    if not isinstance(dy, torch.Tensor) or not isinstance(w, torch.Tensor):
        call, hit = prepare_backward_data(*args), False
    else:
        sig = ("bwd_data", _tsig(dy), w.shape, w.dtype, w.device, tuple(x_size), _hashable(stride),
               _hashable(pad_lo), _hashable(pad_hi), _hashable(dilation), groups, channels_last)
        call, hit = _memoized(sig, prepare_backward_data, args)
    dx = run_backward_data(call, dy, w)
    _counted(call, hit, t_start)
    return dx


def backward_weight(x, dy, w_size, stride=1, pad_lo=0, pad_hi=0, dilation=1, groups=1, dw_dtype=None, bias=False):
    """(dw, db) of a forward conv (ops.conv_backward_weight's arguments)."""
    t_start = time.perf_counter()
    args = (x, dy, w_size, stride, pad_lo, pad_hi, dilation, groups, dw_dtype, bias)
    if not isinstance(x, torch.Tensor) or not isinstance(dy, torch.Tensor):
        call, hit = prepare_backward_weight(*args), False
    else:
        sig = ("bwd_weight", _tsig(x), _tsig(dy), tuple(w_size), _hashable(stride), _hashable(pad_lo),
               _hashable(pad_hi), _hashable(dilation), groups, dw_dtype, bool(bias))
        call, hit = _memoized(sig, prepare_backward_weight, args)
    dw, db = run_backward_weight(call, x, dy)
    _counted(call, hit, t_start)
    return dw, db


# ---- launches -------------------------------------------------------------------
def _args():
    a = _lib.ConvArgs()
    a.struct_size = ctypes.sizeof(a)
    return a


def launch(ctx, plan, ins, outs, w=None):
    """One convjit_conv_execute of plan: ins and outs map convjit_conv_args
    fields (x, dy, bias, residual, scale, x_prev; y, dx, dw, db) to tensors
    (None: not given); w, when the kind reads a packed weight, is packed
    for plan (cached per weight version)."""
    outs = {f: t for f, t in outs.items() if t is not None}
    with torch.no_grad():
        if ctx.emulated:
            _run_emulated(ctx, plan, ins, outs, w)
        else:
            run_hip(ctx, plan, ins, outs, w)


def _run_emulated(ctx, plan, ins, outs, w=None):
    """The emulator: inputs copied into the context's staging buffer of
    their role (the field), outputs copied back out."""
    timed = _runtime.timed_call
    with ctx.lock:
        a = _args()
        if w is not None:
            a.w_packed = _runtime.packed_weight(plan, w).ptr
        for f, t in ins.items():
            if t is not None:
                n = nbytes(t)
                b = ctx.staging(f, n)
                timed("convjit_memcpy_h2d", ctx.handle, b.ptr, t.data_ptr(), n, None)
                setattr(a, f, b.ptr)
        x_prev = ins.get("x_prev")
        a.x_prev_bytes = nbytes(x_prev) if x_prev is not None else 0
        staged = []
        for f, t in outs.items():
            b = ctx.staging(f, nbytes(t))
            setattr(a, f, b.ptr)
            staged.append((t, b))
        ws = ctx.staging("workspace", plan.workspace_bytes)
        a.workspace, a.workspace_bytes = (ws.ptr, plan.workspace_bytes) if ws else (None, 0)
        timed("convjit_conv_execute", plan.handle, ctypes.byref(a), None)
        for t, b in staged:
            timed("convjit_memcpy_d2h", ctx.handle, t.data_ptr(), b.ptr, nbytes(t), None)


def _aligned(t):
    """t, or a copy of it when its pointer is below convjit's alignment
    (docs/api.md "Alignment": 16 bytes covers every input; a view at an odd
    offset is copied, a fresh torch block is 256-byte aligned). Outputs are
    not copied: convjit checks their pointers and names them."""
    if t is None or t.data_ptr() % 16 == 0:
        return t
    _runtime.count("input_copies")
    return t.clone(memory_format=torch.preserve_format)


def run_hip(ctx, plan, ins, outs, w=None):
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
    a.x_prev_bytes = nbytes(x_prev) if x_prev is not None else 0
    ws = None
    if plan.workspace_bytes:
        ws = torch.empty(plan.workspace_bytes, dtype=torch.uint8, device=dev)
        a.workspace, a.workspace_bytes = ws.data_ptr(), plan.workspace_bytes
    _runtime.timed_call("convjit_conv_execute", plan.handle, ctypes.byref(a), ctypes.c_void_p(stream.cuda_stream))
