"""The CUDA-graph aliasing detector: finds device tensors that share bytes with static memory.

A device auxiliary output must not alias a CUDA graph's static buffers or its private
memory pool: the next replay can overwrite those bytes before the scheduler's
asynchronous device-to-host copy completes (AUX110, AUX111).

Two tensors alias when they lie on the same device (type and index) and the byte
ranges they touch overlap (see :mod:`auxcheck._runtime.byteranges`); ``exact=True`` settles
interleaved strided views by comparing the bytes their elements really touch.

:class:`StaticBufferRegistry` keeps, per device, the registered ranges sorted and
merged, so a lookup is one bisection whatever the number of buffers. A registration
made from a tensor holds a weak reference to the tensor's *storage* (the C++ object,
through ``torch.multiprocessing.reductions.StorageWeakRef``; the Python storage
wrapper is not a reliable lifetime handle across torch 2.x), so a freed buffer stops
counting and a later tensor at the same address is not reported. Expiry is checked
where it matters, on a hit and when the index is rebuilt, so the common lookup (a
miss) pays nothing for it.

Importing this module does not import torch; the functions that need it import it.
"""

from auxcheck._runtime.static_buffers import CaptureContext as CaptureContext  # noqa: PLC0414
from auxcheck._runtime.static_buffers import (
    CaptureHandle,
    Overlap,
    Registration,
    StaticBufferRegistry,
    as_registry,
    capture,
    guard_copy,
    static_buffer_findings,
    tensors_overlap,
)
from auxcheck._runtime.static_buffers import DeviceKey as DeviceKey  # noqa: PLC0414
from auxcheck._runtime.static_buffers import Segments as Segments  # noqa: PLC0414
from auxcheck._runtime.static_buffers import SegmentSource as SegmentSource  # noqa: PLC0414
from auxcheck._runtime.static_buffers import StaticBuffers as StaticBuffers  # noqa: PLC0414

# The type aliases above (CaptureContext ... StaticBuffers) are public outside __all__, as they
# were; ``X as X`` is the explicit re-export mypy --strict asks for.
__all__ = [
    "CaptureHandle",
    "Overlap",
    "Registration",
    "StaticBufferRegistry",
    "as_registry",
    "capture",
    "guard_copy",
    "static_buffer_findings",
    "tensors_overlap",
]
