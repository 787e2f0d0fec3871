"""convjit for PyTorch: JIT-specialized implicit-GEMM convolutions.

    import convjit
    y = convjit.ops.conv(x, w, bias, stride=1, padding=1)   # like F.conv3d
    convjit.nn.patch(model)                                  # swap nn.Conv*d
    with convjit.enabled(): model(x)                         # route torch's own convs

Pure Python over libconvjit's C API (ctypes): the C library does every
conv, weight pack and copy. CPU tensors run on convjit's CPU emulator (for
development and tests; EmulatorWarning once); ROCm tensors on their HIP
device and torch's current stream. docs/python.md documents it all.
"""

from . import _lib, _runtime
from ._lib import ConvjitError, InvalidArgumentError, UnsupportedError, library_path
from ._runtime import EmulatorWarning, GradientWarning, set_emulator_arch, emulator_arch, clear_caches
from ._runtime import set_async_compile, wait_compiles
from . import ops  # noqa: E402  (imports torch)
from . import nn   # noqa: E402
from ._route import (enable, disable, enabled, is_enabled, routing_report, routing_summary,  # noqa: E402
                     reset_routing_report, set_routing_policy, Problem)

__all__ = ["ops", "nn", "enable", "disable", "enabled", "is_enabled", "routing_report", "routing_summary",
           "reset_routing_report", "set_routing_policy", "Problem", "ConvjitError", "InvalidArgumentError", "UnsupportedError", "EmulatorWarning", "GradientWarning",
           "set_emulator_arch", "emulator_arch", "clear_caches", "set_async_compile", "wait_compiles", "stats", "plans",
           "library_path",
           "version"]


def version():
    """The C library's version, "major.minor.patch"."""
    return _lib.version_string()


def __getattr__(name):
    if name == "__version__":
        return _lib.version_string()
    raise AttributeError(f"module 'convjit' has no attribute {name!r}")


def stats():
    """Counters of this process: the binding's (calls, plan and pack cache
    hits, copies it made, seconds inside the C library vs in the whole
    call), the operator route's totals (routing_summary; routing_report()
    has them per problem) and each context's (kernels compiled,
    memory/disk cache hits, the C plan memo)."""
    with _runtime._counters_lock:
        out = {"binding": dict(_runtime.counters)}
    out["routing"] = routing_summary()
    out["contexts"] = {f"{k[0]}:{k[1]}": c.info() for k, c in _runtime.contexts().items()}
    return out


def plans():
    """Every cached plan: its descriptor and kernels (name, registers, LDS,
    compile ms, where the kernel came from)."""
    out = []
    for ck, c in _runtime.contexts().items():
        with c.lock:
            ps = list(c.plans.values())
        for p in ps:
            out.append({"context": f"{ck[0]}:{ck[1]}", "arch": c.arch, "desc": dict(p.key),
                        "create_ms": p.create_ms, "workspace_bytes": p.workspace_bytes,
                        "packed_weight_bytes": p.packed_bytes, "kernels": p.kernels})
    return out
