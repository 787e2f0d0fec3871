"""Contexts, plans, packed weights and device memory for the binding.

One convjit context per device, made on first use and kept for the
process: a CPU tensor runs on convjit's emulator (one context per emulated
arch), a ROCm tensor on the HIP backend of its torch device. Plans are
cached per (descriptor, context); packed weights per (weight tensor, plan),
re-packed when the tensor's version counter or storage changes.

Memory: on a HIP device every buffer (output, workspace, packed weights,
the fp32 bias) is a torch tensor, so torch's caching allocator owns device
memory and its stream rules apply. The emulator's device memory is not host
memory (its pointers are emulator addresses), so CPU tensors are copied in
and out with convjit_memcpy_*; the packed weights and, per context, one
grow-only staging buffer per tensor role live in emulator memory.
"""

import ctypes
import logging
import os
import sys
import threading
import time
import warnings
import weakref

from . import _lib

log = logging.getLogger("convjit")


class EmulatorWarning(UserWarning):
    """Given once per process when a CPU tensor first runs on the emulator."""


_EMU_ARCHS = ("gfx942", "gfx950")
_emu_arch = None
_async_compile = None   # set_async_compile: None = the C library's default
_contexts = {}
_contexts_lock = threading.Lock()
_warned_emulator = False
MAX_PLANS_PER_CONTEXT = 256   # LRU beyond this (each holds loaded kernels)
MAX_PACKS_PER_WEIGHT = 8      # packed forms of one weight (one per distinct packing its plans use), LRU

counters = {"calls": 0, "bwd_data_calls": 0, "bwd_weight_calls": 0, "routed_calls": 0, "plan_hits": 0, "plan_misses": 0, "packs": 0,
            "pack_hits": 0, "input_copies": 0, "c_seconds": 0.0, "call_seconds": 0.0}
_counters_lock = threading.Lock()


def count(name, n=1):
    with _counters_lock:
        counters[name] += n


def count_call(name, seconds, plan_hit):
    """One more `name` call, its seconds, and a plan cache hit when the
    call's prepared plan was reused: one lock for the three."""
    with _counters_lock:
        counters[name] += 1
        counters["call_seconds"] += seconds
        counters["plan_hits"] += plan_hit


# Bumped whenever what a prepared call holds may change (the emulated arch,
# async compile, the caches): _core's memo drops calls of an older generation.
generation = 0


def _new_generation():
    global generation
    generation += 1


def set_emulator_arch(arch):
    """The arch CPU tensors are emulated as: "gfx942" or "gfx950" (default:
    $CONVJIT_EMU_ARCH, else gfx950, the C library's default). None resets to
    that default."""
    global _emu_arch
    if arch is not None and arch not in _EMU_ARCHS:
        raise ValueError(f"convjit: emulator arch {arch!r}: expected one of {', '.join(_EMU_ARCHS)}")
    _emu_arch = arch
    _new_generation()


def set_async_compile(on):
    """Whether plans created from now on return before their own kernels are
    built (docs/api.md "Asynchronous compile"): True, False, or None for the
    C library's default ($CONVJIT_ASYNC_COMPILE=1 when the context was
    created). Meanwhile a forward conv runs convjit's shape-generic kernel,
    within the same error bound, and switches at its first call after the
    build; other kinds, upsampled or streamed convs are built at once."""
    global _async_compile
    if on is not None and not isinstance(on, bool):
        raise TypeError(f"convjit: set_async_compile({on!r}): expected True, False or None")
    _async_compile = on
    _new_generation()


def wait_compiles():
    """Waits until every cached plan runs its own kernels; raises the first
    background build's failure (such a plan keeps the generic kernels)."""
    for c in list(contexts().values()):
        with c.lock:
            ps = list(c.plans.values())
        for p in ps:
            p.wait()


def emulator_arch():
    a = _emu_arch or os.environ.get("CONVJIT_EMU_ARCH") or "gfx950"
    if a not in _EMU_ARCHS:
        raise ValueError(f"convjit: CONVJIT_EMU_ARCH={a!r}: expected one of {', '.join(_EMU_ARCHS)}")
    return a


def timed_call(name, *args):
    t0 = time.perf_counter()
    try:
        _lib.call(name, *args)
    finally:
        count("c_seconds", time.perf_counter() - t0)


class _EmuBuffer:
    """A block of emulator memory (convjit_malloc), freed with its owner."""

    __slots__ = ("ptr", "nbytes", "_fin", "__weakref__")

    def __init__(self, ctx, nbytes):
        p = ctypes.c_void_p()
        timed_call("convjit_malloc", ctx.handle, max(nbytes, 1), ctypes.byref(p))
        self.ptr, self.nbytes = p.value, nbytes
        self._fin = weakref.finalize(self, _emu_free, ctx, p.value)

    def free(self):
        self._fin()


def _emu_free(ctx, ptr):
    if ctx.handle:  # the context outlives its buffers, but not interpreter shutdown order
        _lib.load().convjit_free(ctx.handle, ptr)


class Plan:
    """A convjit plan for one descriptor on one context."""

    def __init__(self, ctx, key, desc):
        h = ctypes.c_void_p()
        t0 = time.perf_counter()
        if _async_compile is None:
            timed_call("convjit_plan_create_conv", ctx.handle, ctypes.byref(desc), ctypes.byref(h))
        else:
            flags = _lib.PLAN_ASYNC_COMPILE if _async_compile else _lib.PLAN_SYNC_COMPILE
            timed_call("convjit_plan_create_conv_flags", ctx.handle, ctypes.byref(desc), flags, ctypes.byref(h))
        self.create_ms = (time.perf_counter() - t0) * 1e3
        self.handle, self.ctx, self.key = h.value, ctx, key
        self._fin = weakref.finalize(self, _lib.load().convjit_plan_destroy, h.value)
        sz = ctypes.c_size_t()
        _lib.call("convjit_plan_workspace_size", h, ctypes.byref(sz))
        self.workspace_bytes = sz.value
        _lib.call("convjit_plan_packed_weight_size", h, ctypes.byref(sz))
        self.packed_bytes = sz.value
        out = (ctypes.c_int64 * 3)()
        _lib.call("convjit_conv_output_dims", ctypes.byref(desc), out)
        self.out_dims = tuple(out[3 - desc.spatial_rank:])   # (Do, Ho, Wo) in 3D order: 2D is out[1:], 1D out[2:]
        self.in_dims = tuple(desc.in_[:desc.spatial_rank])    # x's (backward data: dx's, a transposed conv's output)
        self.kernels = self._kernel_infos()
        # What decides the packed bytes: the weight-pack kernels (their names
        # carry every specialization field), the size, and the value
        # arguments a quantizing pack takes (w's dtype and scale). Plans that
        # agree share one packed copy of a weight (e.g. the chunk plans of a
        # causal stream, which differ only in D and x_prev).
        kd = dict(key)
        self.pack_id = (tuple(k["name"] for k in self.kernels if k["stage"] == "pack"), self.packed_bytes,
                        kd["w_dtype"], kd["w_scale"])

    def wait(self):
        """Until the plan runs its own kernels (at once when it was built
        synchronously); then its kernel list is theirs."""
        timed_call("convjit_plan_wait", self.handle)
        self.kernels = self._kernel_infos()

    def _kernel_infos(self):
        n = ctypes.c_int()
        _lib.call("convjit_plan_kernel_count", self.handle, ctypes.byref(n))
        out = []
        for i in range(n.value):
            ki = _lib.KernelInfo()
            ki.struct_size = ctypes.sizeof(ki)
            _lib.call("convjit_plan_kernel_info", self.handle, i, ctypes.byref(ki))
            out.append({"name": ki.name.decode(), "stage": ki.stage.decode(), "vgpr": ki.vgpr, "agpr": ki.agpr,
                        "sgpr": ki.sgpr, "lds_bytes": ki.lds_bytes, "scratch_bytes": ki.scratch_bytes,
                        "spills": ki.vgpr_spills + ki.sgpr_spills, "source": _lib.CACHE_SOURCES[ki.source],
                        "compile_ms": ki.compile_ms})
        return out

    def describe(self):
        need = ctypes.c_size_t()
        _lib.call("convjit_plan_describe", self.handle, None, 0, ctypes.byref(need))
        buf = ctypes.create_string_buffer(need.value)
        _lib.call("convjit_plan_describe", self.handle, buf, need.value, None)
        return buf.value.decode()


class Context:
    """One convjit context: the emulator for one arch, or one HIP device."""

    def __init__(self, kind, index, arch):
        o = _lib.ContextOptions()
        o.struct_size = ctypes.sizeof(o)
        o.header_version = _lib.load().convjit_version()
        o.device = _lib.DEVICE_EMU if kind == "emu" else _lib.DEVICE_HIP
        o.device_index = index
        o.arch = arch.encode() if arch else None
        o.cache_dir = None
        o.disable_disk_cache = 0
        o.log_level = _lib.LOG_FROM_ENV
        o.code_object_version = 0
        h = ctypes.c_void_p()
        _lib.call("convjit_context_create", ctypes.byref(o), ctypes.byref(h))
        self.handle, self.kind, self.index = h.value, kind, index
        self.emulated = kind == "emu"
        self.lock = threading.RLock()   # plan cache; on the emulator also the shared workspace
        self.plans = {}                 # key -> Plan, in LRU order (dicts keep insertion order)
        self._staging = {}              # emulator: grow-only buffer per tensor role
        self.arch = self.info()["arch"]

    def info(self):
        i = _lib.ContextInfo()
        i.struct_size = ctypes.sizeof(i)
        _lib.call("convjit_context_get_info", self.handle, ctypes.byref(i))
        return {"device": i.device.decode(), "arch": i.arch.decode(), "cu_count": i.cu_count,
                "emulated": bool(i.emulated), "disk_cache": bool(i.disk_cache),
                "cache_path": i.cache_path.decode(), "kernels_compiled": i.kernels_compiled,
                "memory_hits": i.memory_hits, "disk_hits": i.disk_hits, "disk_misses": i.disk_misses,
                "device_model": i.device_model.decode(), "plan_memo_hits": i.plan_memo_hits,
                "plans_cached": len(self.plans)}

    def plan(self, key, make_desc):
        with self.lock:
            p = self.plans.pop(key, None)
            if p is not None:
                self.plans[key] = p   # most recent last
                count("plan_hits")
                return p
        desc = make_desc()
        p = Plan(self, key, desc)      # compiles outside the lock: other shapes may plan meanwhile
        count("plan_misses")
        srcs = [k["source"] for k in p.kernels]
        log.info("convjit: planned %s on %s %s in %.1f ms: %d kernels (%s), compile %.1f ms",
                 _key_text(key), self.kind, self.arch, p.create_ms, len(p.kernels),
                 ", ".join(f"{s} {srcs.count(s)}" for s in _lib.CACHE_SOURCES if s in srcs),
                 sum(k["compile_ms"] for k in p.kernels))
        with self.lock:
            self.plans.setdefault(key, p)
            while len(self.plans) > MAX_PLANS_PER_CONTEXT:
                self.plans.pop(next(iter(self.plans)))
            return self.plans[key]

    def staging(self, role, nbytes):
        """Emulator: the context's buffer for one tensor role ("workspace",
        "x", "y", ...) of at least nbytes, grown when a call needs more and
        reused by the next (call with self.lock held, which every emulator
        run holds from its first copy in to its last copy out)."""
        if nbytes == 0:
            return None
        b = self._staging.get(role)
        if b is None or b.nbytes < nbytes:
            if b is not None:
                b.free()
            b = self._staging[role] = _EmuBuffer(self, nbytes)
        return b

    def emu_stats(self):
        s = _lib.EmuStats()
        s.struct_size = ctypes.sizeof(s)
        _lib.call("convjit_emu_last_launch_stats", self.handle, ctypes.byref(s))
        return {f: getattr(s, f) for f, _ in _lib.EmuStats._fields_
                if f not in ("struct_size", "wave_min", "wave_max", "kernel")} | {"kernel": s.kernel.decode()}


_NAMES = {"x_dtype": {_lib.DTYPE_BF16: "bf16", _lib.DTYPE_FP8_E4M3FN: "fp8_e4m3fn",
                      _lib.DTYPE_FP8_E4M3FNUZ: "fp8_e4m3fnuz", _lib.DTYPE_F16: "f16", _lib.DTYPE_F32: "f32"},
          "x_layout": {_lib.LAYOUT_NCDHW: "ncdhw", _lib.LAYOUT_NDHWC: "ndhwc"},
          "act": {_lib.ACT_RELU: "relu", _lib.ACT_SILU: "silu", _lib.ACT_GELU_TANH: "gelu_tanh"}}
_NAMES["w_dtype"], _NAMES["y_dtype"], _NAMES["y_layout"] = _NAMES["x_dtype"], _NAMES["x_dtype"], _NAMES["x_layout"]


def _key_text(key):
    """A plan key as one readable line (neutral fields left out)."""
    def val(k, v):
        v = _NAMES.get(k, {}).get(v, v)
        return "x".join(map(str, v)) if isinstance(v, tuple) else v
    return "conv " + " ".join(f"{k}={val(k, v)}" for k, v in key
                              if v not in (None, 0, 0.0, (), False) and not (k in ("stride", "dilation") and
                                                                             set(v) == {1}))


def context_for(device):
    """The context of a torch device: CPU -> the emulator, cuda (ROCm) -> HIP."""
    global _warned_emulator
    if device.type == "cpu":
        key = ("emu", emulator_arch())
    elif device.type == "cuda":
        import torch
        if getattr(torch.version, "hip", None) is None:
            raise ValueError(f"convjit: tensors on {device} of a torch built without ROCm (torch.version.hip is "
                             "None): convjit runs on AMD GPUs through a ROCm (HIP) build of torch, and CPU "
                             "tensors on its emulator")
        key = ("hip", device.index if device.index is not None else _current_cuda_index())
    else:
        raise ValueError(f"convjit: tensors on device {device}: convjit runs CPU tensors on its emulator "
                         "and ROCm (cuda) tensors on the HIP device; nothing else")
    c = _contexts.get(key)
    if c is None:
        with _contexts_lock:
            c = _contexts.get(key)
            if c is None:
                c = Context(key[0], key[1] if key[0] == "hip" else -1, key[1] if key[0] == "emu" else None)
                _contexts[key] = c
    if c.emulated and not _warned_emulator:
        _warned_emulator = True
        warnings.warn(f"convjit: CPU tensors run on convjit's CPU emulator of the {c.arch} ISA, for "
                      "development and tests: slow, and no time it reports is a GPU time", EmulatorWarning,
                      stacklevel=caller_stacklevel())
    return c


def caller_stacklevel():
    """warnings.warn's stacklevel that names the first frame outside this
    package (the user's call, whether through ops.conv or a module)."""
    import torch
    inside = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(torch.__file__)))
    f, level = sys._getframe(1), 1
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(inside):
        f, level = f.f_back, level + 1
    return level


class GradientWarning(UserWarning):
    """Kept for code that filters it: convjit computes its convs' gradients
    (docs/python.md "Autograd"), so this warning is no longer given."""


def _current_cuda_index():
    import torch
    return torch.cuda.current_device()


def contexts():
    with _contexts_lock:
        return dict(_contexts)


# ---- packed weights -------------------------------------------------------
_packs = {}            # id(weight tensor) -> {plan key+ctx: _Pack}
_packs_lock = threading.Lock()


class _Pack:
    __slots__ = ("version", "data_ptr", "buf", "ptr", "event", "stream")


def _drop_packs(wid):
    with _packs_lock:
        _packs.pop(wid, None)


def packed_weight(plan, w, hip_stream=None):
    """The packed form of weight tensor w for plan (a _Pack: .ptr the
    device pointer), packing once per weight version and packing. On HIP
    the pack is enqueued on hip_stream and .event / .stream say where, so a
    call on another stream can wait for it."""
    ctx = plan.ctx
    pk = (id(ctx), plan.pack_id)
    wid = id(w)
    with _packs_lock:
        per = _packs.get(wid)
        e = per.get(pk) if per else None
        if e is not None and e.version == w._version and e.data_ptr == w.data_ptr():
            per[pk] = per.pop(pk)
            count("pack_hits")
            return e
    e = _Pack()
    e.version, e.data_ptr, e.event, e.stream = w._version, w.data_ptr(), None, None
    wc = w.detach().contiguous()   # never the caller's tensor itself: the cache must not keep it alive
    nbytes = wc.numel() * wc.element_size()
    if ctx.emulated:
        raw = _EmuBuffer(ctx, nbytes)
        timed_call("convjit_memcpy_h2d", ctx.handle, raw.ptr, wc.data_ptr(), nbytes, None)
        if plan.packed_bytes:
            e.buf = _EmuBuffer(ctx, plan.packed_bytes)
            timed_call("convjit_weight_pack", plan.handle, raw.ptr, e.buf.ptr, None)
            raw.free()
        else:
            e.buf = raw
        e.ptr = e.buf.ptr
    else:
        import torch
        if plan.packed_bytes:
            e.buf = torch.empty(plan.packed_bytes, dtype=torch.uint8, device=w.device)
            timed_call("convjit_weight_pack", plan.handle, ctypes.c_void_p(wc.data_ptr()),
                        ctypes.c_void_p(e.buf.data_ptr()), ctypes.c_void_p(hip_stream.cuda_stream))
        else:
            e.buf = wc if wc.data_ptr() % 16 == 0 else wc.clone()
        e.ptr = e.buf.data_ptr()
        e.stream = hip_stream
        e.event = torch.cuda.Event()
        e.event.record(hip_stream)
    count("packs")
    with _packs_lock:
        per = _packs.get(wid)
        if per is None:
            per = _packs[wid] = {}
            weakref.finalize(w, _drop_packs, wid)
        per[pk] = e
        while len(per) > MAX_PACKS_PER_WEIGHT:
            per.pop(next(iter(per)))
    return e


def clear_caches():
    """Drops every cached plan and packed weight (the contexts stay)."""
    with _packs_lock:
        _packs.clear()
    _new_generation()
    for c in contexts().values():
        with c.lock:
            c.plans.clear()
