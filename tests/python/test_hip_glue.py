"""The ROCm path's glue (_core.run_hip and the HIP branch of
_runtime.packed_weight) with the C calls recorded instead of made: no
machine here has a GPU or a ROCm torch, so this checks what the binding
hands convjit, not a device result. A real emulator plan supplies the
sizes; torch.cuda's stream and event are stand-ins that record what is done
to them; every buffer the binding allocates must come from torch.empty (the
caching allocator) on the tensors' device.

Checked: the forward gets x, y, bias (fp32), residual, x_prev and the
packed weight by pointer, the workspace is a torch allocation of the plan's
size, the stream handle is the current stream's; the weight is packed once
per version on the stream current then, and a call on another stream waits
for that pack's event and record_stream()s the packed buffer; a view below
16-byte alignment is copied."""

import ctypes
import os
import sys
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cjtest as cj  # noqa: E402

import torch  # noqa: E402

from convjit import _core, _lib, _runtime, ops  # noqa: E402

setUpModule = cj.quiet


class FakeStream:
    def __init__(self, handle):
        self.cuda_stream = handle
        self.waited = []

    def wait_event(self, ev):
        self.waited.append(ev)


class FakeEvent:
    def __init__(self):
        self.recorded_on = None

    def record(self, stream):
        self.recorded_on = stream


class FakeHipContext:
    """Stands for a HIP Context: packed_weight and _run_hip only read these."""
    emulated = False
    handle = 0xC0


class HipGlue(unittest.TestCase):
    def setUp(self):
        g = cj.gen(3)
        self.x = cj.randn_bf16((1, 16, 3, 6, 6), g)
        self.w = cj.weight_bf16((32, 16, 3, 3, 3), g)
        self.bias = cj.randn_bf16((32,), g)
        # A real plan (on the emulator) for the sizes; causal with x_prev and a
        # residual so every pointer role is present.
        self.res = cj.randn_bf16((1, 32, 3, 6, 6), g)
        self.x_prev = cj.randn_bf16((1, 16, 2, 6, 6), g)
        ops.conv(self.x, self.w, self.bias, padding=(2, 1, 1), padding_hi=(0, 1, 1), residual=self.res,
                 x_prev=self.x_prev)
        emu_plan = [p for p in _runtime.contexts()[("emu", _runtime.emulator_arch())].plans.values()
                    if dict(p.key).get("x_prev") and dict(p.key).get("residual") and dict(p.key).get("c") == 16][-1]
        # what packed_weight and _run_hip read of a plan: the emulator plan's sizes on a fake HIP context
        self.plan = types.SimpleNamespace(ctx=FakeHipContext(), handle=0xB0, pack_id=emu_plan.pack_id,
                                          packed_bytes=emu_plan.packed_bytes,
                                          workspace_bytes=emu_plan.workspace_bytes, out_dims=emu_plan.out_dims)
        self.calls, self.allocs = [], []
        real_empty = torch.empty

        def empty(*a, **k):
            t = real_empty(*a, **k)
            self.allocs.append(t)
            return t

        def timed_call(name, *args):
            if name == "convjit_conv_execute":
                a = ctypes.cast(args[1], ctypes.POINTER(_lib.ConvArgs)).contents
                args = (args[0], {f: getattr(a, f) for f, _ in _lib.ConvArgs._fields_}, args[2])
            self.calls.append((name, args))

        self.stream = FakeStream(0x5A)
        self.streams = [self.stream]
        self.recorded = []
        recorded = self.recorded
        patches = [mock.patch.object(_runtime, "timed_call", timed_call),
                   mock.patch.object(torch, "empty", empty),
                   mock.patch.object(torch.cuda, "current_stream", lambda device=None: self.streams[-1]),
                   mock.patch.object(torch.cuda, "Event", FakeEvent),
                   mock.patch.object(torch.Tensor, "record_stream", lambda t, s: recorded.append((t, s)))]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)

    def launch(self, x, bias, y):
        _core.run_hip(self.plan.ctx, self.plan, {"x": x, "bias": bias, "residual": self.res, "scale": None,
                                                "x_prev": self.x_prev}, {"y": y}, self.w)

    def run_hip(self, x):
        y = torch.zeros((1, 32, 3, 6, 6), dtype=torch.bfloat16)
        self.launch(x, self.bias.float(), y)
        return y

    def forwards(self):
        return [a for n, a in self.calls if n == "convjit_conv_execute"]

    def packs(self):
        return [a for n, a in self.calls if n == "convjit_weight_pack"]

    def test_pointers_workspace_stream(self):
        bias = self.bias.float()
        y = torch.zeros((1, 32, 3, 6, 6), dtype=torch.bfloat16)
        self.launch(self.x, bias, y)
        (pack,), (fwd,) = self.packs(), self.forwards()
        handle, args, stream = fwd
        self.assertEqual(handle, 0xB0)
        self.assertEqual(stream.value, 0x5A, "the forward runs on torch's current stream")
        self.assertEqual(pack[3].value, 0x5A, "the pack runs on torch's current stream")
        self.assertEqual(args["x"], self.x.data_ptr())
        self.assertEqual(args["y"], y.data_ptr())
        self.assertEqual(args["bias"], bias.data_ptr())
        self.assertEqual(args["residual"], self.res.data_ptr())
        self.assertEqual(args["x_prev"], self.x_prev.data_ptr())
        self.assertIsNone(args["scale"])
        self.assertEqual(args["struct_size"], ctypes.sizeof(_lib.ConvArgs))
        packed = [t for t in self.allocs if t.data_ptr() == args["w_packed"]]
        self.assertEqual(len(packed), 1, "the packed weight is a torch allocation")
        self.assertEqual(packed[0].numel(), self.plan.packed_bytes)
        self.assertEqual(pack[2].value, args["w_packed"], "the pack writes the buffer the forward reads")
        self.assertEqual(pack[1].value, self.w.data_ptr(), "a contiguous weight is packed from its own memory")
        if self.plan.workspace_bytes:
            ws = [t for t in self.allocs if t.data_ptr() == args["workspace"]]
            self.assertEqual(len(ws), 1, "the workspace is a torch allocation")
            self.assertEqual(ws[0].numel(), self.plan.workspace_bytes)
            self.assertEqual(args["workspace_bytes"], self.plan.workspace_bytes)

    def test_backward_data_fields(self):
        """A transposed conv's launch (conv_transpose) binds its input as
        args.dy and its output as args.dx, never x or y."""
        y = torch.zeros((1, 32, 3, 6, 6), dtype=torch.bfloat16)
        _core.run_hip(self.plan.ctx, self.plan, {"dy": self.x}, {"dx": y}, self.w)
        args = self.forwards()[-1][1]
        self.assertEqual((args["dy"], args["dx"]), (self.x.data_ptr(), y.data_ptr()))
        self.assertIsNone(args["x"])
        self.assertIsNone(args["y"])

    def test_pack_once_and_cross_stream_wait(self):
        self.run_hip(self.x)
        self.run_hip(self.x)
        self.assertEqual(len(self.packs()), 1, "one pack per weight version")
        self.assertEqual(self.stream.waited, [], "same stream: no wait")
        other = FakeStream(0x77)
        self.streams.append(other)
        self.run_hip(self.x)
        self.assertEqual(len(self.packs()), 1)
        self.assertEqual(len(other.waited), 1, "another stream waits for the pack's event")
        self.assertIs(other.waited[0].recorded_on, self.stream, "the event was recorded on the pack's stream")
        self.assertEqual([s for _, s in self.recorded], [other], "the packed buffer is record_stream()ed")
        self.assertEqual(self.forwards()[-1][2].value, 0x77)
        with torch.no_grad():
            self.w.mul_(2)
        self.run_hip(self.x)
        self.assertEqual(len(self.packs()), 2, "an in-place update re-packs")
        self.assertEqual(self.packs()[-1][3].value, 0x77, "on the stream current then")

    def test_misaligned_view_copied(self):
        flat = torch.zeros(self.x.numel() + 1, dtype=torch.bfloat16)
        xv = flat[1:].view(self.x.shape)     # 2 bytes past a 64-byte aligned block
        xv.copy_(self.x)
        self.assertNotEqual(xv.data_ptr() % 16, 0)
        before = _runtime.counters["input_copies"]
        self.run_hip(xv)
        xptr = self.forwards()[-1][1]["x"]
        self.assertEqual(xptr % 16, 0, "convjit gets a 16-byte aligned x")
        self.assertNotEqual(xptr, xv.data_ptr())
        self.assertEqual(_runtime.counters["input_copies"] - before, 1)


    def test_backward_weight_pointers(self):
        """A backward-weight launch: x and dy in, dw and db out by pointer,
        no weight pack (the kind reads no weight), the workspace a torch
        allocation, the current stream."""
        dw = torch.zeros((32, 16, 3, 3, 3), dtype=torch.bfloat16)
        db = torch.zeros(32, dtype=torch.float32)
        dy = torch.zeros((1, 32, 3, 6, 6), dtype=torch.bfloat16)
        _core.run_hip(self.plan.ctx, self.plan, {"x": self.x, "dy": dy}, {"dw": dw, "db": db})
        self.assertEqual(self.packs(), [], "backward weight packs no weight")
        ((handle, args, stream),) = self.forwards()
        self.assertEqual(stream.value, 0x5A)
        self.assertEqual((args["x"], args["dy"], args["dw"], args["db"]),
                         (self.x.data_ptr(), dy.data_ptr(), dw.data_ptr(), db.data_ptr()))
        self.assertIsNone(args["w_packed"])
        self.assertIsNone(args["y"])


class CudaBuild(unittest.TestCase):
    def test_cuda_device_without_rocm_is_refused(self):
        """A 'cuda' tensor of a torch without ROCm (this one: CPU only; or an
        NVIDIA build) is refused with the reason, before any context."""
        with mock.patch.object(torch.version, "hip", None):
            with self.assertRaisesRegex(ValueError, r"cuda:0 of a torch built without ROCm"):
                _runtime.context_for(torch.device("cuda", 0))


if __name__ == "__main__":
    unittest.main()
