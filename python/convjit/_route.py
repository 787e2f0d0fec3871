"""Routing torch's convolution operator through convjit (docs/python.md
"Routing torch's convolutions").

Every torch conv -- F.conv1d/2d/3d, F.conv_transpose1d/2d/3d, nn.Conv*,
nn.ConvTranspose*, their subclasses, and autograd's conv backward --
reaches two operators: aten::convolution and aten::convolution_backward.
Their CPU kernel (and, on a ROCm build of torch, their CUDA one, which is
HIP's) is registered once, on the first enable() / enabled(), with
torch.library; autograd, torch.compile's graphs and every caller above the
dispatcher stay torch's. The registered kernel runs the call on convjit
when routing is on for this thread and convjit can run it; otherwise it
calls torch's own kernel for the operator (its CompositeExplicitAutograd
kernel, which is what the operator runs without the registration) with
the same arguments, so such a result is torch's bit for bit.

The same mechanism serves torch 1.13 and 2.x: torch.library.Library's
IMPL registration and OpOverload._op_dk (a call of one dispatch key's
kernel) exist in both. A TorchDispatchMode would see every aten op of the
model, and torch.compile does not trace under one; a registered kernel is
called only for convs, eagerly and from compiled graphs alike.

What is routed: bf16 and f16 convs (input, weight and bias of one dtype)
on CPU tensors (the emulator) and ROCm tensors, whose problem convjit
accepts. What falls back, with the reason in routing_report(): float32
and float64 (never computed in a lower precision), fp8 tensors
(aten::convolution's output is the input's dtype; convjit's fp8 conv
returns bf16: use convjit.ops.conv), mixed dtypes or devices, a double
backward (convolution_backward under create_graph=True), what the policy
denies, and every problem convjit refuses (the C library's message).
"""

import os
import sys
import threading
import time
from typing import NamedTuple

import torch

from . import _core, _grad, _lib, _runtime

_DK = torch._C.DispatchKey.CompositeExplicitAutograd
_CONV = torch.ops.aten.convolution.default
_CONV_BWD = torch.ops.aten.convolution_backward.default


def torch_convolution(*args):
    """torch's own kernel of aten::convolution (what it runs unrouted)."""
    return _CONV._op_dk(_DK, *args)


def torch_convolution_backward(*args):
    """torch's own kernel of aten::convolution_backward."""
    return _CONV_BWD._op_dk(_DK, *args)


# ---- on and off ------------------------------------------------------------
_global_on = False
_tls = threading.local()   # .stack: enabled() nesting; .inside: a routed or fallen-back call runs


def is_enabled():
    """Whether convs of this thread are routed now: the innermost enabled()
    block's setting, else the process-wide enable()/disable()."""
    stack = getattr(_tls, "stack", None)
    return stack[-1] if stack else _global_on


def enable():
    """Routes every conv of the process through convjit where it can
    (threads inside an enabled(False) block excepted)."""
    global _global_on
    install()
    _global_on = True


def disable():
    """Stops routing (threads inside an enabled(True) block excepted):
    torch's convs run torch's kernels, bit for bit as before enable()."""
    global _global_on
    _global_on = False


class enabled:
    """with convjit.enabled(): ...  routes this thread's convs inside the
    block (enabled(False): keeps them torch's); nestable, per thread."""

    def __init__(self, on=True):
        if not isinstance(on, bool):
            raise TypeError(f"convjit: enabled({on!r}): expected True or False")
        self.on = on

    def __enter__(self):
        if self.on:
            install()
        stack = getattr(_tls, "stack", None)
        if stack is None:
            stack = _tls.stack = []
        stack.append(self.on)
        return self

    def __exit__(self, *exc):
        _tls.stack.pop()
        return False


_installed = None
_install_lock = threading.Lock()


def install():
    """Registers the route's kernels with torch's dispatcher, once per
    process (enable() and enabled() call it). They stay registered:
    torch does not make a registration safe against calls running in
    other threads, so it is made once, and while routing is off the
    kernels pass each call to torch's own (docs/python.md)."""
    global _installed
    with _install_lock:
        if _installed is not None:
            return
        lib = torch.library.Library("aten", "IMPL")
        keys = ["CPU"] + (["CUDA"] if getattr(torch.version, "hip", None) else [])
        for key in keys:
            lib.impl("convolution", _convolution, key)
            lib.impl("convolution_backward", _convolution_backward, key)
        _installed = lib


# ---- problems, decisions, the report -------------------------------------
class Problem(NamedTuple):
    """One distinct conv the route has seen: what the policy is asked
    about and the report lists. str(problem) is its one-line name."""
    op: str               # "conv" or "conv_transpose"
    pass_: str            # "forward" or "backward" (outputs: "dx", "dw", "db")
    dtype: str            # "bfloat16", "float32", ...
    device: str           # "cpu", "cuda:0", ...
    input: tuple          # the input's shape (a transposed conv's input)
    weight: tuple         # torch's weight shape
    bias: bool
    stride: tuple
    padding: tuple
    dilation: tuple
    groups: int
    output_padding: tuple
    channels_last: bool   # the input is channels-last
    outputs: tuple = ()   # backward: which gradients autograd asked for

    def __str__(self):
        rank = len(self.weight) - 2
        name = f"{self.op}{rank}d {self.pass_}"
        if self.outputs:
            name += "[" + ",".join(self.outputs) + "]"
        geo = f" stride={_dims(self.stride)} pad={_dims(self.padding)}"
        if any(d != 1 for d in self.dilation):
            geo += f" dil={_dims(self.dilation)}"
        if self.groups != 1:
            geo += f" groups={self.groups}"
        if any(self.output_padding):
            geo += f" out_pad={_dims(self.output_padding)}"
        return (f"{name} {self.dtype} {self.device} in{_dims(self.input)} w{_dims(self.weight)}{geo}"
                + (" bias" if self.bias else "") + (" channels_last" if self.channels_last else ""))


def _dims(t):
    return "x".join(map(str, t))


class _Entry:
    """The report's counters of one problem."""
    __slots__ = ("problem", "convjit", "torch", "reasons", "macs_convjit", "macs_torch")

    def __init__(self, problem):
        self.problem, self.convjit, self.torch, self.reasons = problem, 0, 0, {}
        self.macs_convjit = self.macs_torch = 0


class _Decision:
    """What the route does with one call signature: call (a prepared
    forward; None for a backward, whose kernels _core memoizes) when it
    routes, else the reason it falls back."""
    __slots__ = ("entry", "reason", "call", "macs", "gen")


_decisions = {}          # call signature -> _Decision
MAX_DECISIONS = 4096
_entries = {}            # str(problem) -> _Entry
_report_lock = threading.Lock()
_policy = (None, None)   # (allow, deny)
_LOG = "route" in os.environ.get("CONVJIT_LOG", "").split(",")


def _log(problem, reason):
    if _LOG:
        sys.stderr.write(f"convjit[route] {problem}: " + (f"torch ({reason})" if reason else "convjit") + "\n")


def _entry(problem):
    name = str(problem)
    with _report_lock:
        e = _entries.get(name)
        if e is None:
            e = _entries[name] = _Entry(problem)
    return e


def _record(d, routed, reason=None):
    with _report_lock:
        e = d.entry
        if routed:
            e.convjit += 1
            e.macs_convjit += d.macs
        else:
            e.torch += 1
            e.macs_torch += d.macs
            e.reasons[reason] = e.reasons.get(reason, 0) + 1


def _matches(rule, problem):
    if callable(rule):
        return bool(rule(problem))
    name = str(problem)
    return any(r(problem) if callable(r) else (r == problem or r == name) for r in rule)


def set_routing_policy(allow=None, deny=None):
    """Which problems the route may give convjit: each of allow and deny is
    None, a callable taking a Problem and returning a bool, or a list of
    Problems, their names (str(problem), as routing_report() prints them)
    or such callables. A problem is routed only if allow is None or
    matches it, and deny does not (then torch runs it, with the reason
    "policy"). Applies to calls from now on."""
    global _policy
    _policy = (_rule("allow", allow), _rule("deny", deny))
    _decisions.clear()


def _rule(name, rule):
    if rule is None or callable(rule):
        return rule
    if isinstance(rule, (list, tuple, set, frozenset)):
        return list(rule)
    raise TypeError(f"convjit: set_routing_policy({name}={rule!r}): expected None, a callable or a list")


def _policy_refusal(problem):
    allow, deny = _policy
    if allow is not None and not _matches(allow, problem):
        return "policy: not in allow"
    if deny is not None and _matches(deny, problem):
        return "policy: denied"
    return None


def routing_report(text=False):
    """Per distinct problem since the process started (or
    reset_routing_report): how many calls convjit ran and torch ran, the
    reason of each fallback with its count, and the multiply-adds each
    side computed. text=True: the same as a printable table with a
    summary line."""
    with _report_lock:
        rows = [{"problem": str(e.problem), "pass": e.problem.pass_, "calls": e.convjit + e.torch,
                 "convjit": e.convjit, "torch": e.torch, "reasons": dict(e.reasons),
                 "macs_convjit": e.macs_convjit, "macs_torch": e.macs_torch} for e in _entries.values()]
    return _format(rows) if text else rows


def routing_summary():
    """Totals of routing_report(): calls and multiply-adds per side."""
    rows = routing_report()
    s = {k: sum(r[k] for r in rows) for k in ("calls", "convjit", "torch", "macs_convjit", "macs_torch")}
    macs = s["macs_convjit"] + s["macs_torch"]
    s["mac_share_convjit"] = s["macs_convjit"] / macs if macs else 0.0
    return s


def reset_routing_report():
    with _report_lock:
        _entries.clear()
    _decisions.clear()


def _format(rows):
    out = []
    for r in sorted(rows, key=lambda r: r["problem"]):
        out.append(f"{r['convjit']:6d} convjit {r['torch']:6d} torch  {r['problem']}")
        for reason, n in sorted(r["reasons"].items()):
            out.append(f"{'':22}torch x{n}: {reason}")
    macs_c, macs_t = sum(r["macs_convjit"] for r in rows), sum(r["macs_torch"] for r in rows)
    share = 100.0 * macs_c / (macs_c + macs_t) if macs_c + macs_t else 0.0
    out.append(f"convjit ran {sum(r['convjit'] for r in rows)} of {sum(r['calls'] for r in rows)} conv calls, "
               f"{share:.1f}% of their multiply-adds ({macs_c} of {macs_c + macs_t})")
    return "\n".join(out)


# ---- the kernels registered with torch --------------------------------------
_CL = {4: torch.channels_last, 5: torch.channels_last_3d}


def _channels_last(t):
    """torch's memory-format suggestion for t is channels-last."""
    return t.dim() in _CL and not t.is_contiguous() and t.is_contiguous(memory_format=_CL[t.dim()])


def _static_refusal(input, weight, bias, extra=()):
    """Why a call cannot be convjit's whatever its shape, or None."""
    dt = input.dtype
    if dt not in _core.TORCH_16:
        if dt.is_floating_point and dt in _core.TORCH_FP8:
            return (f"{dt}: aten::convolution returns the input's dtype, convjit's fp8 conv returns bf16 "
                    "(call convjit.ops.conv for fp8)")
        return f"{dt}: convjit computes in bfloat16, float16 or fp8; a {dt} conv is never computed in a lower precision"
    for name, t in (("weight", weight), ("bias", bias)) + tuple(extra):
        if t is not None and t.dtype != dt:
            return f"{name} is {t.dtype}, input {dt}: one dtype for all (torch's rule)"
        if t is not None and t.device != input.device:
            return f"{name} on {t.device}, input on {input.device}"
    if input.device.type == "cuda" and not getattr(torch.version, "hip", None):
        return "a CUDA tensor of a torch without ROCm"
    return None


def _problem(op_transposed, pass_, input, weight, bias, stride, padding, dilation, groups, output_padding,
             outputs=()):
    return Problem("conv_transpose" if op_transposed else "conv", pass_, str(input.dtype).replace("torch.", ""),
                   str(input.device), tuple(input.shape), tuple(weight.shape), bias, tuple(stride), tuple(padding),
                   tuple(dilation), groups, tuple(output_padding), _channels_last(input), tuple(outputs))


def _macs(transposed, y, input, weight, groups):
    """Multiply-adds of one conv: the forward GEMM's output elements times
    its reduction (a transposed conv's input plays the GEMM's y)."""
    filt = 1
    for f in weight.shape[2:]:
        filt *= f
    if transposed:
        return input.numel() * weight.shape[1] * filt
    return y.numel() * weight.shape[1] * filt


def _decide(sig, d_problem, refusal, prepare, macs):
    d = _Decision()
    d.entry, d.reason, d.call, d.macs, d.gen = _entry(d_problem), refusal, None, macs, _runtime.generation
    if d.reason is None and prepare is not None:
        try:
            d.call = prepare()
        except (_lib.UnsupportedError, _lib.InvalidArgumentError, ValueError, TypeError) as e:
            d.reason = "convjit refuses it: " + (e.message if isinstance(e, _lib.ConvjitError) else str(e))
    if len(_decisions) >= MAX_DECISIONS:
        _decisions.clear()
    _decisions[sig] = d
    _log(d_problem, d.reason)
    return d


def _y_layout(input, weight):
    rank = weight.dim() - 2
    if rank == 1:
        return _lib.LAYOUT_NCDHW   # torch's 1D convs return contiguous outputs
    return _lib.LAYOUT_NDHWC if _channels_last(input) or _channels_last(weight) else _lib.LAYOUT_NCDHW


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """aten::convolution on CPU (and ROCm) tensors."""
    if not is_enabled() or getattr(_tls, "inside", False):
        return torch_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    t0 = time.perf_counter()
    sig = (input.shape, input.stride(), input.dtype, input.device, weight.shape, weight.stride(), weight.dtype,
           None if bias is None else (bias.shape, bias.dtype, bias.device), tuple(stride), tuple(padding),
           tuple(dilation),
           transposed, tuple(output_padding), groups)
    d = _decisions.get(sig)
    if d is None or d.gen != _runtime.generation:
        y_layout = _y_layout(input, weight)
        if transposed:
            prepare = lambda: _core.prepare_conv_transpose(  # noqa: E731
                input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding), groups, tuple(dilation),
                y_layout=y_layout)
        else:
            prepare = lambda: _core.prepare_conv(  # noqa: E731
                input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups, y_layout=y_layout)
        problem = _problem(transposed, "forward", input, weight, bias is not None, stride, padding, dilation, groups,
                           output_padding)
        refusal = _static_refusal(input, weight, bias) or _policy_refusal(problem)
        d = _decide(sig, problem, refusal, prepare, 0)
    _tls.inside = True
    try:
        if d.reason is not None:
            y = torch_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
        elif transposed:
            y = _core.run_conv_transpose(d.call, input, weight, bias)
        else:
            y = _core.run_conv(d.call, input, weight, bias)
    finally:
        _tls.inside = False
    if not d.macs:
        d.macs = _macs(transposed, y, input, weight, groups)
    _record(d, d.reason is None, d.reason)
    if d.reason is None:
        _runtime.count_call("routed_calls", time.perf_counter() - t0, True)
    return y


_DOUBLE = ("double backward: convolution_backward under create_graph=True (convjit's gradient kernels have no "
           "backward of their own)")


def _convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                          output_padding, groups, output_mask):
    """aten::convolution_backward on CPU (and ROCm) tensors: dx, dw and db
    as output_mask asks (None for the others), each by convjit's kernels."""
    args = (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
            output_mask)
    if not is_enabled() or getattr(_tls, "inside", False):
        return torch_convolution_backward(*args)
    t0 = time.perf_counter()
    mask = tuple(bool(m) for m in output_mask)
    sig = ("bwd", grad_output.shape, grad_output.dtype, grad_output.device, input.shape, input.stride(), input.dtype,
           weight.shape, weight.stride(), weight.dtype, bias_sizes is not None, tuple(stride), tuple(padding),
           tuple(dilation), transposed, tuple(output_padding), groups, mask)
    d = _decisions.get(sig)
    if d is None or d.gen != _runtime.generation:
        outputs = [n for n, m in zip(("dx", "dw", "db"), mask) if m]
        problem = _problem(transposed, "backward", input, weight, False, stride, padding, dilation, groups,
                           output_padding, outputs)   # the bias shows as its gradient, db
        refusal = (_static_refusal(input, weight, None, (("grad_output", grad_output),))
                   or _policy_refusal(problem))
        per_output = _macs(transposed, grad_output, input, weight, groups)
        d = _decide(sig, problem, refusal, None, per_output * (mask[0] + mask[1]))
    if d.reason is None and torch.is_grad_enabled():
        reason = _DOUBLE
    else:
        reason = d.reason
    _tls.inside = True
    try:
        if reason is None:
            try:
                grads = _backward(grad_output, input, weight, stride, padding, dilation, transposed, groups, mask)
            except (_lib.UnsupportedError, _lib.InvalidArgumentError, ValueError, TypeError) as e:
                # a gradient kernel convjit refuses (learned once per signature): torch computes the whole call
                reason = d.reason = "convjit refuses it: " + (e.message if isinstance(e, _lib.ConvjitError)
                                                              else str(e))
                _log(d.entry.problem, reason)
        if reason is not None:
            grads = torch_convolution_backward(*args)
            grads = tuple(g if m else None for g, m in zip(grads, mask))
    finally:
        _tls.inside = False
    _record(d, reason is None, reason)
    if reason is None:
        _runtime.count_call("routed_calls", time.perf_counter() - t0, True)
    return grads


def _backward(grad_output, input, weight, stride, padding, dilation, transposed, groups, mask):
    g = _grad.plain_geom(stride, padding, padding, dilation, groups)
    needs = mask + (False,)
    if transposed:
        dx, dw, db, _ = _grad.conv_transpose_backward(_grad.Kernels, g, input, weight, None, grad_output, needs,
                                                      grad_output.dtype, None)
    else:
        dx, dw, db, _ = _grad.conv_backward(_grad.Kernels, g, input, weight, None, None, grad_output, needs,
                                            grad_output.dtype, None)
    return dx, dw, db
