"""Drop-in convolution modules that forward through convjit, and patch().

convjit.nn.Conv1d/2d/3d and ConvTranspose1d/2d/3d are torch's classes with
the same constructor, parameters and state_dict; only forward (and the
convs' _conv_forward, the step torch's forward calls) differs. The convs'
forward also takes the inputs torch's lacks: a residual fused into the
epilogue, the previous chunk's frames for causal streaming, a padding that
differs before and after (causal time padding); their `upsample` attribute
(patch sets it where an nn.Upsample(mode='nearest') feeds them in an
nn.Sequential) reads the input nearest-upsampled inside the conv.

patch() swaps a model's conv modules, subclasses included: a subclass of
torch's conv class gets a class of its own deriving from both (so its own
forward, if it has one, runs, and the conv step inside it is convjit's).
"""

import ctypes

import torch
import torch.nn.functional as F

from . import _core, _lib, ops

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "patch",
           "PatchResult", "FusedUpsample"]


class _ConvjitConv:
    """The forward shared by the three ranks (a mixin before torch's class)."""

    act = None       # 'relu' / 'silu' / 'gelu_tanh' applied in the epilogue; None = identity
    upsample = None  # 1 or 2 per spatial dim: the conv reads its input nearest-upsampled (patch sets it)

    def forward(self, input, *, residual=None, x_prev=None, padding=None, padding_hi=None, act=None,
                out_dtype=None):
        """y = act(conv(input) + bias + residual). padding/padding_hi
        override the module's padding for this call (causal: padding=(2,1,1),
        padding_hi=(0,1,1)); x_prev is the previous chunk's last padding[0]
        frames; act overrides the module's act attribute; out_dtype
        (torch.float32) keeps y in fp32 (default: the weight's dtype); the
        upsample attribute upsamples the input inside the conv."""
        return self._convjit(input, self.weight, self.bias, residual=residual, x_prev=x_prev, padding=padding,
                             padding_hi=padding_hi, act=act, out_dtype=out_dtype)

    def _conv_forward(self, input, weight, bias):
        """torch's conv step (what torch's forward, and a subclass's own
        forward, call with the weight and bias to use): convjit's."""
        return self._convjit(input, weight, bias)

    def _convjit(self, input, weight, bias, *, residual=None, x_prev=None, padding=None, padding_hi=None, act=None,
                 out_dtype=None):
        pad = self.padding if padding is None else padding
        if self.padding_mode != "zeros" and self.upsample is not None:
            raise ValueError(f"convjit: padding_mode={self.padding_mode!r} with a fused upsample: the padding of "
                             "the upsampled input is not convjit's (only zero padding fuses)")
        if self.padding_mode != "zeros":
            if padding is not None or padding_hi is not None or x_prev is not None:
                raise ValueError(f"convjit: padding_mode={self.padding_mode!r} with a per-call padding or x_prev: "
                                 "only zero padding can be changed per call")
            # torch pads these modes itself before its conv; so do we, then convolve unpadded
            if input.dtype in (torch.bfloat16, torch.float16):   # torch 1.13's CPU reflect/replicate pads lack
                input = F.pad(input.float(), self._reversed_padding_repeated_twice,   # them; exact via fp32
                              mode=self.padding_mode).to(input.dtype)
            else:
                input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            pad = 0
        return ops.conv(input, weight, bias, self.stride, pad, self.dilation, self.groups,
                        padding_hi=padding_hi, residual=residual, x_prev=x_prev,
                        act=self.act if act is None else act, out_dtype=out_dtype, upsample=self.upsample)

    def extra_repr(self):
        s = super().extra_repr()
        return (s + (f", act={self.act!r}" if self.act else "") +
                (f", upsample={self.upsample!r}" if self.upsample else "") + ", backend=convjit")


class Conv1d(_ConvjitConv, torch.nn.Conv1d):
    """torch.nn.Conv1d forwarding through convjit (act= adds a fused activation)."""

    def __init__(self, *args, act=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.act = act


class Conv2d(_ConvjitConv, torch.nn.Conv2d):
    """torch.nn.Conv2d forwarding through convjit (act= adds a fused activation)."""

    def __init__(self, *args, act=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.act = act


class Conv3d(_ConvjitConv, torch.nn.Conv3d):
    """torch.nn.Conv3d forwarding through convjit (act= adds a fused activation)."""

    def __init__(self, *args, act=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.act = act


class _ConvjitConvTranspose:
    """The forward of the three transposed-conv ranks (a mixin before torch's class)."""

    act = None   # 'relu' / 'silu' / 'gelu_tanh' applied in the epilogue; None = identity

    def forward(self, input, output_size=None, *, residual=None, act=None):
        """torch's ConvTranspose forward (output_size picks output_padding as
        torch does), plus a fused residual (the output's shape) and act."""
        if self.padding_mode != "zeros":
            raise ValueError(f"convjit: padding_mode={self.padding_mode!r}: transposed convs take zeros (as torch)")
        rank = self.weight.dim() - 2
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size,
                                              rank, self.dilation)
        return ops.conv_transpose(input, self.weight, self.bias, self.stride, self.padding, tuple(output_padding),
                                  self.groups, self.dilation, residual=residual,
                                  act=self.act if act is None else act)

    def extra_repr(self):
        s = super().extra_repr()
        return s + (f", act={self.act!r}" if self.act else "") + ", backend=convjit"


class ConvTranspose1d(_ConvjitConvTranspose, torch.nn.ConvTranspose1d):
    """torch.nn.ConvTranspose1d forwarding through convjit (act= adds a fused activation)."""

    def __init__(self, *args, act=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.act = act


class ConvTranspose2d(_ConvjitConvTranspose, torch.nn.ConvTranspose2d):
    """torch.nn.ConvTranspose2d forwarding through convjit (act= adds a fused activation)."""

    def __init__(self, *args, act=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.act = act


class ConvTranspose3d(_ConvjitConvTranspose, torch.nn.ConvTranspose3d):
    """torch.nn.ConvTranspose3d forwarding through convjit (act= adds a fused activation)."""

    def __init__(self, *args, act=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.act = act


class FusedUpsample(torch.nn.Upsample):
    """An nn.Upsample(mode='nearest') whose work patch() moved into the
    convjit conv right after it in an nn.Sequential (that conv's upsample
    attribute): it passes its input through unchanged."""

    def forward(self, input):
        return input

    def extra_repr(self):
        return super().extra_repr() + ", fused into the next conv (convjit)"


_TWINS = {torch.nn.Conv1d: Conv1d, torch.nn.Conv2d: Conv2d, torch.nn.Conv3d: Conv3d,
          torch.nn.ConvTranspose1d: ConvTranspose1d, torch.nn.ConvTranspose2d: ConvTranspose2d,
          torch.nn.ConvTranspose3d: ConvTranspose3d}
_DERIVED = {}   # a subclass of a torch conv class -> its convjit class


def _convjit_class(cls):
    """The class patch() gives a module of class cls, or None when cls is
    not a torch conv class or a subclass of one. torch's own classes get
    their twin; a subclass S gets class S(S, twin), whose method order is
    S, twin, torch's class: S's own forward (if any) runs, and what it
    calls of torch's class (forward through super(), _conv_forward) is the
    twin's, so its conv step runs convjit."""
    if cls in _TWINS:
        return _TWINS[cls]
    if cls not in _DERIVED:
        base = next((b for b in cls.__mro__ if b in _TWINS), None)
        _DERIVED[cls] = None if base is None else type(cls.__name__, (cls, _TWINS[base]),
                                                      {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                                       "__doc__": cls.__doc__})
    return _DERIVED[cls]


class PatchResult:
    """What patch() did: swapped = qualified names of the modules now
    forwarding through convjit; skipped = (name, reason) of the conv-like
    modules left alone; fused = (upsample name, conv name) of the
    nn.Upsample + conv pairs now one conv reading the input upsampled."""

    def __init__(self):
        self.swapped, self.skipped, self.fused = [], [], []

    def __repr__(self):
        return f"PatchResult(swapped={self.swapped!r}, skipped={self.skipped!r}, fused={self.fused!r})"


def _why_not(m):
    """None when convjit can run module m for some input, else the reason."""
    w = m.weight
    if w.dtype not in _core.TORCH_16:
        return (f"weight is {w.dtype}: convjit computes in bf16, f16 or fp8; convert the model "
                "(model.to(torch.bfloat16) or model.half()) before patching")
    if w.device.type not in ("cpu", "cuda"):
        return f"weight on {w.device}: convjit runs CPU tensors (emulator) and ROCm tensors"
    rank = w.dim() - 2
    # The shape-independent constraints (channels per group, groups, dtypes)
    # are convjit's: ask its validator with an input just large enough.
    filt = tuple(w.shape[2:])
    dt = _core.TORCH_16[w.dtype]
    try:
        if m.transposed:   # a one-position input: the C library states the output's extents
            key = _core.transpose_key(rank, 1, m.in_channels, m.out_channels, (1,) * rank, filt, tuple(m.stride),
                                      (0,) * rank, tuple(m.output_padding), tuple(m.dilation), m.groups,
                                      (("bias", m.bias is not None), ("w_dtype", dt), ("x_dtype", dt)))
        else:
            pad = (0,) * rank if isinstance(m.padding, str) else m.padding
            key = _core.conv_key(rank, 1, m.in_channels, m.out_channels,
                                 [(f - 1) * dl + 1 for f, dl in zip(filt, m.dilation)], filt, m.stride, pad, pad,
                                 m.dilation, m.groups, bias=m.bias is not None, x_dtype=dt, w_dtype=dt)
        _lib.call("convjit_conv_desc_validate", ctypes.byref(_core.desc_of(key)))
    except _lib.ConvjitError as e:
        return "convjit refuses it: " + e.message
    return None


def _upsample_factors(up, rank):
    """The per-dim factors (1 or 2) of an nn.Upsample that a conv of `rank`
    spatial dims can read fused, or None: mode nearest (or nearest-exact,
    the same for integer factors), a scale factor (no size) of 1 or 2."""
    if type(up) is not torch.nn.Upsample or up.mode not in ("nearest", "nearest-exact") or up.size is not None:
        return None
    sf = up.scale_factor
    f = tuple(sf) if isinstance(sf, (tuple, list)) else (sf,) * rank
    if len(f) != rank or any(float(e) not in (1.0, 2.0) for e in f):
        return None
    return tuple(int(e) for e in f)


def _fuse_upsamples(model, res):
    """nn.Upsample(nearest, x2) directly before a convjit conv in an
    nn.Sequential: the conv reads its input upsampled (its upsample
    attribute), the Upsample passes through (FusedUpsample)."""
    for sname, seq in model.named_modules():
        if not isinstance(seq, torch.nn.Sequential):
            continue
        kids = list(seq.named_children())
        for (uname, up), (cname, conv) in zip(kids, kids[1:]):
            if not isinstance(conv, _ConvjitConv) or conv.upsample is not None or conv.padding_mode != "zeros":
                continue
            f = _upsample_factors(up, conv.weight.dim() - 2)
            if f is None:
                continue
            conv.upsample = f
            up.__class__ = FusedUpsample
            pre = sname + "." if sname else ""
            res.fused.append((pre + uname, pre + cname))


def patch(model):
    """Makes every torch.nn.Conv1d/2d/3d and ConvTranspose1d/2d/3d of model,
    subclasses included, that convjit can run forward through convjit, in
    place: the module keeps its identity, parameters, hooks and state_dict;
    only its class changes, to convjit.nn.ConvNd / ConvTransposeNd, or for
    a subclass to a class deriving from both (_convjit_class): a subclass's
    own forward still runs (a causal conv's cat and pad), and its conv step
    is convjit's. An nn.Upsample(mode='nearest' or 'nearest-exact', scale
    factor 1 or 2 per dim) followed directly by a patched conv in an
    nn.Sequential becomes part of that conv (the conv reads its input
    upsampled, without the upsampled tensor; the Upsample becomes a
    FusedUpsample passing its input through). Weights neither bf16 nor f16
    and shapes convjit refuses are left alone. Returns a PatchResult
    (swapped, skipped with reasons, fused)."""
    res = PatchResult()
    for name, m in model.named_modules():
        if isinstance(m, (_ConvjitConv, _ConvjitConvTranspose)):
            continue
        target = _convjit_class(type(m))
        if target is None:
            if isinstance(m, torch.nn.modules.conv._ConvNd):
                res.skipped.append((name, f"{type(m).__name__} is not a Conv or ConvTranspose 1d/2d/3d"))
            continue
        why = _why_not(m)
        if why is None:
            m.__class__ = target
            m.act = None
            res.swapped.append(name)
        else:
            res.skipped.append((name, why))
    _fuse_upsamples(model, res)
    return res
