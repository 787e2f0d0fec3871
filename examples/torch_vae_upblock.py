#!/usr/bin/env python3
"""A video-VAE decoder up-block in bf16: the causal ResNet block of
torch_vae_block.py, then a 2x spatial upsample of every frame, in two
variants a decoder uses:
  (U) nn.Upsample(scale_factor=(1,2,2), mode="nearest") + nn.Conv3d 1x3x3
      (Wan / CogVideoX / HunyuanVideo style): convjit.nn.patch fuses the
      pair, the conv reads its input upsampled (no 4x tensor);
  (T) nn.ConvTranspose3d 1x4x4, stride (1,2,2), padding (0,1,1): convjit's
      backward-data kernels, one dense GEMM per output phase.
Each runs through convjit.nn.patch on the whole clip and chunked in time
(causal streaming: the ResNet block's convs read x_prev; the upsample is
per frame), and is checked against a float64 torch reference.

    PYTHONPATH=python /usr/bin/python3 examples/torch_vae_upblock.py

CPU tensors run on convjit's CPU emulator: every time printed is a host
time on this machine; none is a GPU time.

Verdicts, all against float64 with bounds from convjit's own rounding
(never against torch's bf16 result, which depends on the CPU and build):
- every convjit conv call against the float64 conv (conv3d of the
  nearest-upsampled input, conv_transpose3d) of the very bf16 tensors it
  received: fp32 accumulation of exact bf16 products (Higham's gamma_n
  times sum |x w| + |bias|), one bf16 rounding (2^-8 relative);
- the fused upsample + conv bit for bit equal to convjit's conv of the
  upsampled tensor (docs/api.md "Fused nearest upsample");
- each up-block, whole and chunked, against its float64 run within a stage
  budget: the ResNet block's 6 bf16 roundings (torch_vae_block.py's
  argument: each at most u = 2^-8 relative, none amplified) at its output
  h, carried through the up conv (rms gain sqrt(sum w^2) < 1 at torch's
  init, so at most 6 u max|h|), plus the up conv's own rounding u max|y|.
Exit status 1 when an error exceeds its bound.
"""

import copy
import math
import os
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_vae_block as vb  # noqa: E402  (the ResNet block and its per-call bound)

import convjit  # noqa: E402
from convjit import ops  # noqa: E402

C2 = 32            # channels after the up-block (a decoder halves them as it doubles H and W)
U = 2.0 ** -8      # bf16 unit roundoff (8 significant bits)
SCALE = (1, 2, 2)  # per frame: time untouched, so chunking in time needs no history in the upsampler


class UpBlock(nn.Module):
    def __init__(self, c, c2, transposed):
        super().__init__()
        self.res = vb.ResBlock(c)
        if transposed:
            self.up = nn.Sequential(nn.ConvTranspose3d(c, c2, (1, 4, 4), stride=SCALE, padding=(0, 1, 1)))
        else:
            self.up = nn.Sequential(nn.Upsample(scale_factor=SCALE, mode="nearest"),
                                    nn.Conv3d(c, c2, (1, 3, 3), padding=(0, 1, 1)))

    def forward(self, x, cache=None):
        return self.up(self.res(x, cache))


def chunked(block, x):
    cache, out = {}, []
    for t0 in range(0, x.shape[2], vb.CHUNK):
        out.append(block(x[:, :, t0:t0 + vb.CHUNK].contiguous(), cache))
    return torch.cat(out, 2)


def bound(ref, mag, n):
    """convjit's bound for one output element of n fp32 roundings: gamma_n
    sum|terms| (u = 2^-23: MFMA truncates partial sums) plus the float64
    reference's n 2^-52, then one bf16 rounding."""
    gamma = n * 2.0 ** -23 / (1.0 - n * 2.0 ** -23)
    return U * ref.abs() + (1.0 + U) * ((gamma + n * 2.0 ** -52) * mag + (n + 2) * 2.0 ** -126)


def up_call_bound(m, x, y):
    """max |y - ref| / bound of one up-conv call, ref the float64 op of the
    bf16 tensors it received (the fused conv: conv3d of x upsampled)."""
    w, b = m.weight.double(), m.bias.double()
    if isinstance(m, nn.ConvTranspose3d):
        args = (m.stride, m.padding, m.output_padding, m.groups, m.dilation)
        ref = F.conv_transpose3d(x.double(), w, b, *args)
        mag = F.conv_transpose3d(x.double().abs(), w.abs(), b.abs(), *args)
        n = w.shape[0] * math.prod(w.shape[2:]) + 1   # at most C_in x every tap per output, + bias
    else:
        xu = F.interpolate(x.double(), scale_factor=SCALE, mode="nearest")
        ref = F.conv3d(xu, w, b, m.stride, m.padding)
        mag = F.conv3d(xu.abs(), w.abs(), b.abs(), m.stride, m.padding)
        n = math.prod(w.shape[1:]) + 1
    return ((y.double() - ref).abs() / bound(ref, mag, n)).max().item()


def run_variant(name, base, x):
    """(ok, lines) of one up-block variant: float64 reference, convjit whole
    and chunked, every call's bound, the stage budget."""
    block = base
    ref_block = copy.deepcopy(block).double()
    patched = copy.deepcopy(block)
    res = convjit.nn.patch(patched)
    calls = []
    conv = patched.up[-1]
    conv.register_forward_hook(lambda m, inp, out: calls.append((inp[0], out)))
    with torch.no_grad():
        h_ref = ref_block.res(x.double())
        ref = ref_block.up(h_ref)
        y_whole, ms_whole = vb.timed(patched, x)
        y_chunk, ms_chunk = vb.timed(chunked, patched, x)
    lines = [f"{name}: patch swapped {res.swapped}, fused {res.fused}; output {tuple(y_whole.shape)}"]
    ok = True
    causal = [(cc.conv, *c) for cc in (patched.res.conv1, patched.res.conv2) for c in cc.calls]
    worst_causal = max(vb.conv_call_bound(*c) for c in causal)
    worst_up = max(up_call_bound(conv, i, o) for i, o in calls)
    ok &= worst_causal <= 1.0 and worst_up <= 1.0
    lines.append(f"  convjit calls: {len(causal)} causal convs worst {worst_causal:.3f}, {len(calls)} up convs worst "
                 f"{worst_up:.3f} of their bounds (float64 of each call's own bf16 inputs)  "
                 f"{'PASS' if worst_causal <= 1.0 and worst_up <= 1.0 else 'FAIL'}")
    if not isinstance(conv, nn.ConvTranspose3d):
        # the fused read is the two-step conv bit for bit: convjit's conv of the upsampled tensor
        with torch.no_grad():
            same = all(torch.equal(o, ops.conv(F.interpolate(i.float(), scale_factor=SCALE, mode="nearest")
                                               .bfloat16(), conv.weight, conv.bias, padding=conv.padding))
                       for i, o in calls)
        ok &= same
        lines.append(f"  fused upsample + conv vs convjit's conv of the upsampled tensor: "
                     f"{'bit-identical' if same else 'DIFFERENT'}  {'PASS' if same else 'FAIL'}")
    tol = U * (6 * h_ref.abs().max().item() + ref.abs().max().item())
    for how, y, ms in (("whole  ", y_whole, ms_whole), ("chunked", y_chunk, ms_chunk)):
        e = (y.double() - ref).abs().max().item()
        verdict = "PASS" if e <= tol else "FAIL"
        ok &= verdict == "PASS"
        lines.append(f"  convjit {how} max abs error vs float64 {e:.4f}  tol {tol:.4f} (stage budget "
                     f"u*(6 max|h| + max|y|))  {verdict}  ({ms:.0f} host ms, EMULATED)")
    diff = (y_chunk.double() - y_whole.double()).abs().max().item()
    lines.append("  chunked vs whole: " + ("bit-identical" if diff == 0 else
                                            f"max diff {diff:.4g} (different plans: the chunk's extents)"))
    return ok, lines


def main():
    torch.manual_seed(0)
    base = UpBlock(vb.C, C2, transposed=False)
    with torch.no_grad():   # non-trivial norm affines and biases (a dropped bias must show)
        for m in (base.res.norm1, base.res.norm2):
            m.weight.normal_(1.0, 0.2)
            m.bias.normal_(0.0, 0.2)
        for m in (base.res.conv1.conv, base.res.conv2.conv, base.up[1]):
            m.bias.normal_(0.0, 0.2)
    tr = UpBlock(vb.C, C2, transposed=True)
    tr.res.load_state_dict(base.res.state_dict())   # one ResNet block, two upsamplers
    with torch.no_grad():
        tr.up[0].bias.normal_(0.0, 0.2)
    x = torch.randn(1, vb.C, vb.T, vb.H, vb.W).to(torch.bfloat16)
    print(f"up-block: causal ResNet block (C={vb.C}, 3x3x3, x_prev when chunked) -> 2x spatial upsample to C2={C2};"
          f" x {tuple(x.shape)} bf16, chunks of {vb.CHUNK} frames")
    ok = True
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for name, blk in (("(U) Upsample(nearest) + Conv3d 1x3x3, fused", base),
                          ("(T) ConvTranspose3d 1x4x4 stride (1,2,2)", tr)):
            good, lines = run_variant(name, blk.to(torch.bfloat16).eval(), x)
            ok &= good
            print("\n".join(lines))
    for w in said:
        print(f"convjit said: {w.category.__name__}: {w.message}")
    print("RESULT", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
