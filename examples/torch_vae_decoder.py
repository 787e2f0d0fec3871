#!/usr/bin/env python3
"""A video-VAE decoder of the published Wan2.1 design, written as such
models are and left unmodified, run through convjit by routing torch's own
convolution operator (convjit.enable()); then one training step.

    PYTHONPATH=python /usr/bin/python3 examples/torch_vae_decoder.py [--frames 3] [--arch gfx950]

The model (written here from the design's description, scaled down for the
emulator): a causal Conv3d subclass whose own forward concatenates the
cached frames of the previous chunk, pads causally with F.pad, then calls
Conv3d.forward; residual blocks of RMS norm, SiLU and two causal 3x3x3
convs (a 1x1x1 shortcut where the channels change); up-blocks that run a
(3,1,1) causal time conv doubling the frames, then per frame an
nn.Upsample (nearest-exact) and a Conv2d halving the channels; a head of
RMS norm, SiLU and a causal conv to 3 channels. The latent is decoded
chunk by chunk (one latent frame each), every causal conv carrying its
last two input frames to the next chunk, as the design streams.

What it prints and checks (against float64, bounds from convjit's own
arithmetic: n exact bf16 products per element summed in fp32, gamma_n
times the sum of |products| (Higham, u = 2^-23), the float64 reference's
own n 2^-52, one bf16 rounding 2^-8):
1. the routing report of the decode under convjit.enable(): every conv
   call, and the share of the decoder's conv multiply-adds convjit ran;
2. every conv call of the decode, each against the float64 conv of the
   very bf16 tensors it received;
3. one training step (loss = mean of the output's squares): every conv
   gradient call (dx, dw, db, as autograd asked) against the float64
   gradient of the very tensors it received;
4. the causal conv's cat + F.pad, per chunk, against convjit's own causal
   padding and x_prev (docs/python.md "Causal convs without copies"): the
   bytes each way copies, printed, and the two outputs compared.
Every figure is a host figure or an EMULATED count: CPU tensors run on
convjit's CPU emulator, and no time here is a GPU time. Exit status 1 when
a check fails.
"""

import argparse
import math
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import convjit

CACHE_T = 2   # frames a 3-tap causal time conv reads before the first one of a chunk


# ---- the model (the Wan2.1 VAE decoder's design) ----------------------------
class CausalConv3d(nn.Conv3d):
    """A Conv3d padded causally in time: the frames before a chunk are the
    previous chunk's cached ones (cache_x), or zeros."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        t, h, w = self.padding
        self.causal_pad = (w, w, h, h, 2 * t, 0)   # F.pad's order: W, H, then T before / after
        self.padding = (0, 0, 0)

    def forward(self, x, cache_x=None):
        pad = list(self.causal_pad)
        if cache_x is not None and pad[4] > 0:
            x = torch.cat([cache_x, x], dim=2)
            pad[4] -= cache_x.shape[2]
        return super().forward(F.pad(x, pad))


class RMSNorm(nn.Module):
    """Channel RMS norm (x / ||x||_channels * sqrt(C) * gamma), computed in fp32."""

    def __init__(self, dim, images=False):
        super().__init__()
        self.scale = dim ** 0.5
        self.gamma = nn.Parameter(torch.ones((dim, 1, 1) if images else (dim, 1, 1, 1)))

    def forward(self, x):
        return (F.normalize(x.float(), dim=1) * self.scale * self.gamma.float()).type_as(x)


class NearestExact(nn.Upsample):
    def forward(self, x):
        return super().forward(x.float()).type_as(x)


class Cache:
    """Each causal conv's last input frames, carried from chunk to chunk."""

    def __init__(self):
        self.frames = {}

    def conv(self, conv, x):
        """conv of x with the previous chunk's frames, then keeps x's last ones."""
        prev = self.frames.get(id(conv))
        keep = x[:, :, -CACHE_T:]
        if keep.shape[2] < CACHE_T and prev is not None:   # a one-frame chunk: one frame of the older cache
            keep = torch.cat([prev[:, :, -1:], keep], dim=2)
        self.frames[id(conv)] = keep.detach().clone()
        return conv(x, prev)


class ResidualBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1, self.conv1 = RMSNorm(cin), CausalConv3d(cin, cout, 3, padding=1)
        self.norm2, self.conv2 = RMSNorm(cout), CausalConv3d(cout, cout, 3, padding=1)
        self.shortcut = CausalConv3d(cin, cout, 1) if cin != cout else None

    def forward(self, x, cache):
        h = x if self.shortcut is None else self.shortcut(x)
        x = cache.conv(self.conv1, F.silu(self.norm1(x)))
        x = cache.conv(self.conv2, F.silu(self.norm2(x)))
        return x + h


class UpBlock(nn.Module):
    """Frames doubled by a causal (3,1,1) conv to 2C channels (time=True),
    then per frame: nearest-exact x2 and a 3x3 Conv2d to C/2 channels."""

    def __init__(self, dim, time):
        super().__init__()
        self.time_conv = CausalConv3d(dim, dim * 2, (3, 1, 1), padding=(1, 0, 0)) if time else None
        self.resample = nn.Sequential(NearestExact(scale_factor=(2.0, 2.0), mode="nearest-exact"),
                                      nn.Conv2d(dim, dim // 2, 3, padding=1))

    def forward(self, x, cache, first):
        b, c, t, h, w = x.shape
        if self.time_conv is not None and not first:   # the first chunk's frame is not doubled
            x = cache.conv(self.time_conv, x).reshape(b, 2, c, t, h, w)
            x = torch.stack((x[:, 0], x[:, 1]), 3).reshape(b, c, t * 2, h, w)
        elif self.time_conv is not None:
            cache.frames[id(self.time_conv)] = x[:, :, -CACHE_T:].detach().clone()
        t = x.shape[2]
        x = self.resample(x.transpose(1, 2).reshape(b * t, c, h, w))
        return x.reshape(b, t, c // 2, 2 * h, 2 * w).transpose(1, 2)


class Decoder(nn.Module):
    def __init__(self, z_dim=16, dim=16, mult=(1, 2, 2)):
        super().__init__()
        dims = [dim * m for m in (mult[-1],) + tuple(reversed(mult))]   # 32, 32, 32, 16
        self.conv_in = CausalConv3d(z_dim, dims[0], 3, padding=1)
        self.middle = nn.ModuleList([ResidualBlock(dims[0], dims[0]), ResidualBlock(dims[0], dims[0])])
        self.stages = nn.ModuleList()
        for i, (cin, cout) in enumerate(zip(dims[:-1], dims[1:])):
            cin = cin // 2 if i > 0 else cin   # the previous up-block halved the channels
            blocks = nn.ModuleList([ResidualBlock(cin if j == 0 else cout, cout) for j in range(2)])
            up = UpBlock(cout, time=(i == 0)) if i < len(mult) - 1 else None
            self.stages.append(nn.ModuleList([blocks, up] if up is not None else [blocks]))
        self.head_norm, self.head = RMSNorm(dims[-1]), CausalConv3d(dims[-1], 3, 3, padding=1)

    def forward(self, z, cache, first):
        x = cache.conv(self.conv_in, z)
        for blk in self.middle:
            x = blk(x, cache)
        for stage in self.stages:
            for blk in stage[0]:
                x = blk(x, cache)
            if len(stage) > 1:
                x = stage[1](x, cache, first)
        return cache.conv(self.head, F.silu(self.head_norm(x)))


def decode(model, z):
    """The latent decoded one frame at a time, caches carried (the design's streaming)."""
    cache = Cache()
    return torch.cat([model(z[:, :, i:i + 1], cache, i == 0) for i in range(z.shape[2])], dim=2)


# ---- recording the conv calls and checking each against float64 ----------------
_CONV, _CONV_BWD = torch.ops.aten.convolution.default, torch.ops.aten.convolution_backward.default


class ConvCalls(TorchDispatchMode):
    """Keeps every convolution / convolution_backward call's inputs and outputs."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in (_CONV, _CONV_BWD):
            keep = lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v   # noqa: E731
            self.calls.append((func, [keep(a) for a in args],
                               [keep(o) for o in (out if isinstance(out, tuple) else (out,))]))
        return out


def bf16_bound(ref, mag, n):
    """n exact products summed in fp32 (gamma_n |.|), the float64 sums' own
    error, an fp32 denormal flushed per step, one bf16 rounding."""
    gamma = n * 2.0 ** -23 / (1.0 - n * 2.0 ** -23)
    return 2.0 ** -8 * ref.abs() + (1 + 2.0 ** -8) * ((gamma + n * 2.0 ** -52) * mag + (n + 2) * 2.0 ** -126)


def worst(got, ref, bound):
    return float(((got.double() - ref).abs() / bound).max())


def check_forward(args, y):
    x, w, b, stride, padding, dilation, transposed, out_pad, groups = args
    a64 = lambda v: None if v is None else v.double()   # noqa: E731
    geo = (stride, padding, dilation, transposed, out_pad, groups)
    ref = torch.ops.aten.convolution(a64(x), a64(w), a64(b), *geo)
    mag = torch.ops.aten.convolution(a64(x).abs(), a64(w).abs(), None if b is None else a64(b).abs(), *geo)
    taps = math.prod(w.shape[2:])
    n = (w.shape[0] // groups if transposed else w.shape[1]) * taps + (b is not None)
    return worst(y, ref, bf16_bound(ref, mag, n))


def check_backward(args, grads):
    go, x, w, bias_sizes, stride, padding, dilation, transposed, out_pad, groups, mask = args
    geo = (bias_sizes, stride, padding, dilation, transposed, out_pad, groups, mask)
    ref = torch.ops.aten.convolution_backward(go.double(), x.double(), w.double(), *geo)
    mag = torch.ops.aten.convolution_backward(go.double().abs(), x.double().abs(), w.double().abs(), *geo)
    taps = math.prod(w.shape[2:])
    positions = lambda t: t.shape[0] * math.prod(t.shape[2:])   # noqa: E731
    n = ((w.shape[1] if transposed else w.shape[0] // groups) * taps,   # dx: over the other side's channels x taps
         positions(x if transposed else go),                             # dw: over the y-side positions
         positions(go))                                                  # db
    return max(worst(g, r, bf16_bound(r, m, k)) for g, r, m, k, asked in zip(grads, ref, mag, n, mask) if asked)


def check_calls(calls):
    """(worst fraction of the bound, number of calls) of forwards and backwards."""
    out = {"forward": [0.0, 0], "backward": [0.0, 0]}
    for func, args, outs in calls:
        kind, frac = (("forward", check_forward(args, outs[0])) if func is _CONV else
                      ("backward", check_backward(args, outs)))
        out[kind][0] = max(out[kind][0], frac)
        out[kind][1] += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=3, help="latent frames (the output has 1 + 2 (frames - 1))")
    ap.add_argument("--size", type=int, default=4, help="latent height and width (the output is 4x)")
    ap.add_argument("--arch", default=None, choices=("gfx942", "gfx950"), help="emulated arch")
    a = ap.parse_args()
    warnings.simplefilter("ignore", convjit.EmulatorWarning)
    if a.arch:
        convjit.set_emulator_arch(a.arch)
    torch.manual_seed(0)
    model = Decoder().to(torch.bfloat16)
    z = torch.randn(1, 16, a.frames, a.size, a.size).to(torch.bfloat16)
    print(f"Wan2.1-design decoder, bf16, latent {tuple(z.shape)}, on convjit's {convjit.emulator_arch()} "
          "EMULATOR (host times; no GPU time)")

    # 1-2: the decode, routed, every conv call checked
    ok = True
    rec = ConvCalls()
    convjit.reset_routing_report()
    t0 = time.perf_counter()
    with torch.no_grad(), convjit.enabled(), rec:
        y = decode(model, z)
    t_dec = time.perf_counter() - t0
    print(f"\ndecode: output {tuple(y.shape)} in {t_dec:.1f} s host; routing report:")
    print(convjit.routing_report(text=True))
    share = convjit.routing_summary()["mac_share_convjit"]
    ok &= share == 1.0
    res = check_calls(rec.calls)
    frac, n = res["forward"]
    print(f"every conv call against the float64 conv of its own bf16 inputs: {n} calls, worst {frac:.3f} of "
          "the bound")
    ok &= frac <= 1.0

    # 3: one training step, every conv gradient call checked
    rec = ConvCalls()
    convjit.reset_routing_report()
    t0 = time.perf_counter()
    with convjit.enabled(), rec:
        y = decode(model, z)
        loss = y.float().pow(2).mean()
        loss.backward()
    t_step = time.perf_counter() - t0
    res = check_calls(rec.calls)
    s = convjit.routing_summary()
    print(f"\ntraining step (loss {float(loss.detach()):.4f}) in {t_step:.1f} s host: convjit ran {s['convjit']} of "
          f"{s['calls']} conv calls, {100 * s['mac_share_convjit']:.1f}% of their multiply-adds")
    for kind in ("forward", "backward"):
        frac, n = res[kind]
        print(f"  {kind}: {n} calls, worst {frac:.3f} of the bound against float64 of their own inputs")
        ok &= frac <= 1.0
    ok &= s["mac_share_convjit"] == 1.0 and res["backward"][1] > 0
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    print(f"  parameters with a gradient: {len(grads)} of {len(list(model.parameters()))}")

    # 4: causal padding: the copies of cat + F.pad against convjit's own causal padding and x_prev
    print("\ncausal convs, bytes copied per chunk (cat of the cached frames + F.pad, vs convjit's causal padding "
          "and x_prev):")
    with torch.no_grad():
        rows = causal_copies(model, z)
    for i, (wan, cj) in enumerate(rows["bytes"]):
        print(f"  chunk {i}: cat + F.pad {wan} bytes, convjit {cj} bytes")
    d = float((rows["convjit"].double() - rows["cat + pad"].double()).abs().max())
    print(f"  outputs of the two decodes: max |diff| {d:.3e} (max |y| {float(rows['cat + pad'].abs().max()):.3e})")
    print("\nRESULT " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


# ---- causal padding without copies -------------------------------------------
def causal_copies(model, z):
    """Decodes z twice: with the model's own causal conv (cat + F.pad, the
    bytes they copy counted), and with each causal conv run as one convjit
    conv with causal padding and x_prev (nothing concatenated or padded;
    only a one-frame cache is topped up with its zero frame, counted).
    Returns the per-chunk byte counts and both outputs."""
    counts = [[0, 0] for _ in range(z.shape[2])]
    chunk = [0]
    own = CausalConv3d.forward

    def counted(self, x, cache_x=None):
        pad = list(self.causal_pad)
        if cache_x is not None and pad[4] > 0:
            counts[chunk[0]][0] += (cache_x.shape[2] + x.shape[2]) * x[:, :, :1].numel() * x.element_size()
            pad[4] -= cache_x.shape[2]
        if any(pad):
            frames = x.shape[2] + (0 if cache_x is None or self.causal_pad[4] == 0 else cache_x.shape[2]) + pad[4]
            per_frame = (x.shape[3] + pad[2] + pad[3]) * (x.shape[4] + pad[0] + pad[1]) * x.shape[0] * x.shape[1]
            counts[chunk[0]][0] += frames * per_frame * x.element_size()
        return own(self, x, cache_x)

    def native(self, x, cache_x=None):
        t, h, w = self.causal_pad[4], self.causal_pad[2], self.causal_pad[0]
        prev = None
        if cache_x is not None and t > 0:
            prev = cache_x
            if cache_x.shape[2] < t:   # one cached frame: the zero frame before it, explicitly
                zero = cache_x.new_zeros(cache_x.shape[:2] + (t - cache_x.shape[2],) + cache_x.shape[3:])
                prev = torch.cat([zero, cache_x], dim=2)
                counts[chunk[0]][1] += prev.numel() * prev.element_size()
        return convjit.ops.conv(x, self.weight, self.bias, padding=(t, h, w), padding_hi=(0, h, w), x_prev=prev)

    out = {}
    try:
        for name, fwd in (("cat + pad", counted), ("convjit", native)):
            CausalConv3d.forward = fwd
            cache, ys = Cache(), []
            for i in range(z.shape[2]):
                chunk[0] = i
                with convjit.enabled():
                    ys.append(model(z[:, :, i:i + 1], cache, i == 0))
            out[name] = torch.cat(ys, dim=2)
    finally:
        CausalConv3d.forward = own
    out["bytes"] = counts
    return out


if __name__ == "__main__":
    sys.exit(main())
