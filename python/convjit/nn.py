"""Drop-in convolution modules that forward through convjit, and patch().

convjit.nn.Conv1d/2d/3d are torch.nn.Conv1d/2d/3d with the same
constructor, parameters and state_dict; only forward differs. Their forward
also takes the inputs torch's lacks: a residual fused into the epilogue, the
previous chunk's frames for causal streaming, and a padding that differs
before and after (causal time padding).
"""

import ctypes

import torch
import torch.nn.functional as F

from . import _lib, ops

__all__ = ["Conv1d", "Conv2d", "Conv3d", "patch", "PatchResult"]


class _ConvjitConv:
    """The forward shared by the three ranks (a mixin before torch's class)."""

    act = None   # 'relu' / 'silu' / 'gelu_tanh' applied in the epilogue; None = identity

    def forward(self, input, *, residual=None, x_prev=None, padding=None, padding_hi=None, act=None,
                out_dtype=None):
        """y = act(conv(input) + bias + residual). padding/padding_hi
        override the module's padding for this call (causal: padding=(2,1,1),
        padding_hi=(0,1,1)); x_prev is the previous chunk's last padding[0]
        frames; act overrides the module's act attribute; out_dtype
        (torch.float32) keeps y in fp32 (default: the weight's dtype)."""
        pad = self.padding if padding is None else padding
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
        return ops.conv(input, self.weight, self.bias, self.stride, pad, self.dilation, self.groups,
                        padding_hi=padding_hi, residual=residual, x_prev=x_prev,
                        act=self.act if act is None else act, out_dtype=out_dtype)

    def extra_repr(self):
        s = super().extra_repr()
        return s + (f", act={self.act!r}" if self.act else "") + ", backend=convjit"


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


_SWAP = {torch.nn.Conv1d: Conv1d, torch.nn.Conv2d: Conv2d, torch.nn.Conv3d: Conv3d}


class PatchResult:
    """What patch() did: swapped = qualified names of the modules now
    forwarding through convjit; skipped = (name, reason) of the conv-like
    modules left alone."""

    def __init__(self):
        self.swapped, self.skipped = [], []

    def __repr__(self):
        return f"PatchResult(swapped={self.swapped!r}, skipped={self.skipped!r})"


def _why_not(m):
    """None when convjit can run module m for some input, else the reason."""
    w = m.weight
    if w.dtype not in ops._TORCH_16:
        return (f"weight is {w.dtype}: convjit computes in bf16, f16 or fp8; convert the model "
                "(model.to(torch.bfloat16) or model.half()) before patching")
    if w.device.type not in ("cpu", "cuda"):
        return f"weight on {w.device}: convjit runs CPU tensors (emulator) and ROCm tensors"
    rank = w.dim() - 2
    # The shape-independent constraints (channels per group, groups, dtypes)
    # are convjit's: ask its validator with an input just large enough.
    pad = (0,) * rank if isinstance(m.padding, str) else m.padding
    filt = tuple(w.shape[2:])
    d = ops.desc_of(ops.conv_key(rank, 1, m.in_channels, m.out_channels,
                                 [(f - 1) * dl + 1 for f, dl in zip(filt, m.dilation)], filt, m.stride, pad, pad,
                                 m.dilation, m.groups, bias=m.bias is not None,
                                 x_dtype=ops._TORCH_16[w.dtype], w_dtype=ops._TORCH_16[w.dtype]))
    st = _lib.load().convjit_conv_desc_validate(ctypes.byref(d))
    if st != _lib.OK:
        return "convjit refuses it: " + _lib.load().convjit_last_error().decode(errors="replace")
    return None


def patch(model):
    """Makes every supported torch.nn.Conv1d/2d/3d of model forward through
    convjit, in place: the module keeps its identity, parameters, hooks and
    state_dict; only its class changes to convjit.nn.ConvNd. Subclasses with
    their own forward, transposed convs, weights neither bf16 nor f16 and
    shapes convjit refuses are left alone. Returns a PatchResult (swapped, skipped with
    reasons)."""
    res = PatchResult()
    for name, m in model.named_modules():
        cls = type(m)
        if isinstance(m, _ConvjitConv):
            continue
        if cls in _SWAP:
            why = _why_not(m)
            if why is None:
                m.__class__ = _SWAP[cls]
                m.act = None
                res.swapped.append(name)
            else:
                res.skipped.append((name, why))
        elif isinstance(m, torch.nn.modules.conv._ConvNd):
            base = next((b for b in _SWAP if isinstance(m, b)), None)
            if m.transposed:
                why = "transposed convolution: convjit runs forward convs only"
            elif base is None:
                why = f"{cls.__name__} is not a Conv1d/2d/3d"
            elif cls.forward is not base.forward:
                why = f"{cls.__name__} subclasses {base.__name__} with its own forward: swapping would drop it"
            else:
                why = f"{cls.__name__} subclasses {base.__name__}: patch swaps torch's own classes only"
            res.skipped.append((name, why))
    return res
