"""ctypes view of libconvjit.so: finding the library, the public structs of
include/convjit/convjit.h field for field, the prototypes, and one error
check that turns a convjit status into a Python exception carrying
convjit's own message.

Nothing here computes: every conv, pack and copy is a call into the C
library. tests/python/test_abi.py compares every struct below with the
sizes and offsets a C compiler gives the header.
"""

import ctypes
import os
import threading

# ---- status codes, dtypes, enums (fixed numeric values of convjit.h) ------
OK = 0
ERR_INVALID_ARG = 1
ERR_UNSUPPORTED = 2
ERR_OUT_OF_MEMORY = 3
ERR_COMPILE = 4
ERR_DEVICE = 5
ERR_RESOURCE = 6
ERR_IO = 7
ERR_VERSION = 8
ERR_INTERNAL = 9
ERR_EMULATION = 10

DEVICE_AUTO, DEVICE_HIP, DEVICE_EMU = 0, 1, 2
LOG_FROM_ENV = 0
DTYPE_BF16, DTYPE_FP8_E4M3FN, DTYPE_FP8_E4M3FNUZ, DTYPE_F32, DTYPE_F16 = 1, 2, 3, 4, 5
ACT_IDENTITY, ACT_RELU, ACT_SILU, ACT_GELU_TANH = 0, 1, 2, 3
LAYOUT_NCDHW, LAYOUT_NDHWC = 1, 2
CONV_FORWARD, CONV_BACKWARD_DATA, CONV_BACKWARD_WEIGHT = 0, 1, 2
PLAN_ASYNC_COMPILE, PLAN_SYNC_COMPILE = 1, 2   # convjit.h CONVJIT_PLAN_*
CACHE_SOURCES = ("compiled", "memory", "disk")

_i64x3 = ctypes.c_int64 * 3
_u32x3 = ctypes.c_uint32 * 3
_u64x3 = ctypes.c_uint64 * 3


class ContextOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("header_version", ctypes.c_int),
                ("device", ctypes.c_int), ("device_index", ctypes.c_int),
                ("arch", ctypes.c_char_p), ("cache_dir", ctypes.c_char_p),
                ("disable_disk_cache", ctypes.c_int), ("log_level", ctypes.c_int),
                ("code_object_version", ctypes.c_int)]


class ContextInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("device", ctypes.c_char * 8),
                ("arch", ctypes.c_char * 16), ("cu_count", ctypes.c_int), ("emulated", ctypes.c_int),
                ("disk_cache", ctypes.c_int), ("cache_path", ctypes.c_char * 512),
                ("kernels_compiled", ctypes.c_uint64), ("memory_hits", ctypes.c_uint64),
                ("disk_hits", ctypes.c_uint64), ("disk_misses", ctypes.c_uint64),
                ("device_model", ctypes.c_char * 64), ("plan_memo_hits", ctypes.c_uint64)]


class ConvDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("spatial_rank", ctypes.c_int),
                ("n", ctypes.c_int64), ("c", ctypes.c_int64), ("k", ctypes.c_int64),
                ("in_", _i64x3), ("filter", _i64x3), ("stride", _i64x3),
                ("pad_lo", _i64x3), ("pad_hi", _i64x3), ("dilation", _i64x3),
                ("groups", ctypes.c_int64),
                ("x_dtype", ctypes.c_int), ("w_dtype", ctypes.c_int), ("y_dtype", ctypes.c_int),
                ("x_layout", ctypes.c_int), ("y_layout", ctypes.c_int),
                ("has_bias", ctypes.c_int), ("x_scale", ctypes.c_float), ("w_scale", ctypes.c_float),
                ("has_channel_scale", ctypes.c_int), ("has_residual", ctypes.c_int),
                ("beta", ctypes.c_float), ("act", ctypes.c_int), ("has_x_prev", ctypes.c_int),
                ("kind", ctypes.c_int), ("output_padding", _i64x3), ("upsample", _i64x3),
                ("nondeterministic", ctypes.c_int)]


class ConvTransposeParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("spatial_rank", ctypes.c_int),
                ("n", ctypes.c_int64), ("c_in", ctypes.c_int64), ("c_out", ctypes.c_int64),
                ("in_", _i64x3), ("filter", _i64x3), ("stride", _i64x3), ("padding", _i64x3),
                ("output_padding", _i64x3), ("dilation", _i64x3), ("groups", ctypes.c_int64)]


class ConvArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("x", ctypes.c_void_p), ("w_packed", ctypes.c_void_p),
                ("bias", ctypes.c_void_p), ("residual", ctypes.c_void_p), ("scale", ctypes.c_void_p),
                ("y", ctypes.c_void_p), ("workspace", ctypes.c_void_p),
                ("workspace_bytes", ctypes.c_size_t), ("x_prev", ctypes.c_void_p),
                ("x_prev_bytes", ctypes.c_size_t),
                ("dy", ctypes.c_void_p), ("dx", ctypes.c_void_p), ("dw", ctypes.c_void_p), ("db", ctypes.c_void_p)]


class KernelInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char * 128), ("stage", ctypes.c_char * 8),
                ("vgpr", ctypes.c_uint32), ("agpr", ctypes.c_uint32), ("sgpr", ctypes.c_uint32),
                ("lds_bytes", ctypes.c_uint32), ("scratch_bytes", ctypes.c_uint32),
                ("vgpr_spills", ctypes.c_uint32), ("sgpr_spills", ctypes.c_uint32),
                ("block", _u32x3), ("grid", _u64x3), ("source", ctypes.c_int), ("compile_ms", ctypes.c_double)]


class EmuCounts(ctypes.Structure):
    _fields_ = [(f, ctypes.c_uint64) for f in
                ("salu", "valu", "vmem", "lds", "mfma", "waitcnt", "barrier", "smem", "branch", "total")]


class EmuStats(ctypes.Structure):
    _fields_ = ([("struct_size", ctypes.c_size_t)] +
                [(f, ctypes.c_uint64) for f in
                 ("salu", "valu", "vmem", "lds", "mfma", "waitcnt", "barrier", "smem", "branch", "total",
                  "workgroups", "waves")] +
                [("emulated_ms", ctypes.c_double), ("host_ms", ctypes.c_double),
                 ("wave_min", EmuCounts), ("wave_max", EmuCounts), ("kernel", ctypes.c_char * 128),
                 ("weighted_cycles_max_wave", ctypes.c_uint64), ("weighted_cycles_all_waves", ctypes.c_uint64),
                 ("lds_accesses", ctypes.c_uint64), ("lds_cycles", ctypes.c_uint64),
                 ("lds_conflict_free_cycles", ctypes.c_uint64),
                 ("lds_max_degree", ctypes.c_uint32), ("lds_banks", ctypes.c_uint32)])


# Structs the ABI test checks against the C compiler's view of convjit.h.
STRUCTS = {"convjit_context_options": ContextOptions, "convjit_context_info": ContextInfo,
           "convjit_conv_desc": ConvDesc, "convjit_conv_args": ConvArgs,
           "convjit_conv_transpose_params": ConvTransposeParams,
           "convjit_kernel_info": KernelInfo, "convjit_emu_counts": EmuCounts, "convjit_emu_stats": EmuStats}


class ConvjitError(RuntimeError):
    """A convjit call failed. `status` is the convjit_status number,
    `status_name` its text ("invalid argument", ...), `function` the C entry
    point and the message convjit's own (it names the field and value)."""

    def __init__(self, status, function, message):
        self.status = status
        self.function = function
        self.status_name = status_string(status)
        self.message = message
        super().__init__(f"{function}: {self.status_name}: {message}")


class UnsupportedError(ConvjitError, NotImplementedError):
    """CONVJIT_ERR_UNSUPPORTED: a valid request no kernel handles (yet)."""


class InvalidArgumentError(ConvjitError, ValueError):
    """CONVJIT_ERR_INVALID_ARG: a field or argument is wrong."""


_ERRORS = {ERR_UNSUPPORTED: UnsupportedError, ERR_INVALID_ARG: InvalidArgumentError}

# ---- finding and loading the library --------------------------------------
_here = os.path.dirname(os.path.abspath(__file__))


def candidate_paths():
    """Where the library is looked for, in order: $CONVJIT_LIBRARY, next to
    the package, the CMake install prefix recorded at install time
    (_install_prefix.py), the source tree's build directory (a checkout run
    with PYTHONPATH=python), then the dynamic loader's own search."""
    out = []
    env = os.environ.get("CONVJIT_LIBRARY")
    if env:
        return [env]
    out.append(os.path.join(_here, "libconvjit.so"))
    try:
        from . import _install_prefix  # written by `cmake --install` (cmake/install.cmake)
        out.append(os.path.join(_install_prefix.LIBDIR, "libconvjit.so"))
    except ImportError:
        pass
    src = os.path.dirname(os.path.dirname(_here))
    if os.path.isfile(os.path.join(src, "include", "convjit", "convjit.h")):
        out.append(os.path.join(src, os.environ.get("BUILD_DIR", "build"), "libconvjit.so"))
    out.append("libconvjit.so.0")
    return out


_lib = None
_lib_path = None
_lock = threading.Lock()


def _bind(lib):
    P, V, I, SZ = ctypes.c_void_p, None, ctypes.c_int, ctypes.c_size_t
    pp = ctypes.POINTER(ctypes.c_void_p)
    protos = {
        "convjit_status_string": (ctypes.c_char_p, [I]),
        "convjit_last_error": (ctypes.c_char_p, []),
        "convjit_version": (I, []),
        "convjit_context_create": (I, [ctypes.POINTER(ContextOptions), pp]),
        "convjit_context_destroy": (V, [P]),
        "convjit_context_get_info": (I, [P, ctypes.POINTER(ContextInfo)]),
        "convjit_conv_desc_validate": (I, [ctypes.POINTER(ConvDesc)]),
        "convjit_conv_output_dims": (I, [ctypes.POINTER(ConvDesc), ctypes.POINTER(ctypes.c_int64)]),
        "convjit_conv_desc_from_transpose": (I, [ctypes.POINTER(ConvTransposeParams), ctypes.POINTER(ConvDesc)]),
        "convjit_plan_create_conv": (I, [P, ctypes.POINTER(ConvDesc), pp]),
        "convjit_plan_create_conv_flags": (I, [P, ctypes.POINTER(ConvDesc), ctypes.c_uint, pp]),
        "convjit_plan_wait": (I, [P]),
        "convjit_plan_destroy": (V, [P]),
        "convjit_plan_workspace_size": (I, [P, ctypes.POINTER(SZ)]),
        "convjit_plan_packed_weight_size": (I, [P, ctypes.POINTER(SZ)]),
        "convjit_weight_pack": (I, [P, P, P, P]),
        "convjit_conv_forward": (I, [P, ctypes.POINTER(ConvArgs), P]),
        "convjit_conv_execute": (I, [P, ctypes.POINTER(ConvArgs), P]),
        "convjit_plan_kernel_count": (I, [P, ctypes.POINTER(I)]),
        "convjit_plan_kernel_info": (I, [P, I, ctypes.POINTER(KernelInfo)]),
        "convjit_plan_describe": (I, [P, ctypes.c_char_p, SZ, ctypes.POINTER(SZ)]),
        "convjit_malloc": (I, [P, SZ, pp]),
        "convjit_free": (I, [P, P]),
        "convjit_memcpy_h2d": (I, [P, P, P, SZ, P]),
        "convjit_memcpy_d2h": (I, [P, P, P, SZ, P]),
        "convjit_memset": (I, [P, P, I, SZ, P]),
        "convjit_synchronize": (I, [P, P]),
        "convjit_emu_last_launch_stats": (I, [P, ctypes.POINTER(EmuStats)]),
    }
    for name, (res, args) in protos.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args


def _built_version():
    """The header version an installed package was built from
    (convjit/_version.py, written by setup.py or cmake --install); None in
    a source checkout, which has no such file."""
    try:
        from . import _version
    except ImportError:
        return None
    return _version.VERSION


def load():
    """The loaded library (ctypes.CDLL), loading it on first use. Raises
    OSError naming every place it looked when none holds a loadable
    libconvjit.so."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for p in candidate_paths():
            if os.sep in p and not os.path.isfile(p):
                tried.append(f"{p} (no such file)")
                continue
            try:
                lib = ctypes.CDLL(p)
            except OSError as e:
                tried.append(f"{p} ({e})")
                continue
            try:
                _bind(lib)
            except AttributeError as e:  # an older library without an entry point this binding uses
                raise OSError(f"{p} lacks a convjit entry point this binding needs ({e}): rebuild it") from e
            built = _built_version()
            if built is not None and int(built.split(".")[0]) != lib.convjit_version() // 10000:
                raise OSError(f"{p} is convjit {lib.convjit_version()}, this package was built for "
                              f"{built}: the major versions differ (rebuild one of them)")
            _lib, _lib_path = lib, p
            return lib
        raise OSError("convjit: libconvjit.so not found; tried: " + "; ".join(tried) +
                      ". Build it (scripts/build) or set CONVJIT_LIBRARY to its path.")


def library_path():
    load()
    return _lib_path


def status_string(s):
    return load().convjit_status_string(s).decode()


def check(status, function):
    """Raises the ConvjitError subclass for a failed status, with the text
    convjit_last_error() gives on this thread (read at once, before any
    other convjit call can replace it)."""
    if status != OK:
        msg = load().convjit_last_error().decode(errors="replace")
        raise _ERRORS.get(status, ConvjitError)(status, function, msg)


def call(name, *args):
    """lib.name(*args), raising on a failed status."""
    check(getattr(load(), name)(*args), name)


def version_number():
    return load().convjit_version()


def version_string():
    v = version_number()
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"
