"""The bytes a tensor touches, from its data pointer, sizes, strides and element size.

A tensor with at least one element touches
``[ptr + itemsize*sum(min(0,(n-1)*s)), ptr + itemsize*(1 + sum(max(0,(n-1)*s))))``;
a zero-element tensor touches nothing. Two tensors can share bytes only on the same
device (type and index). This bounding rule never misses an overlap; interleaved
strided views may be reported as overlapping when no element address is shared.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["ByteRange", "byte_range", "device_key", "ranges_overlap"]


class ByteRange(NamedTuple):
    """A half-open byte interval ``[lo, hi)`` on one device."""

    device: tuple[str, int]
    lo: int
    hi: int


_DEVICE_KEYS: dict[Any, tuple[str, int]] = {}


def device_key(tensor: Any) -> tuple[str, int]:
    """Returns ``(device type, index)``; an index-less CPU device counts as index -1."""
    device = tensor.device
    key = _DEVICE_KEYS.get(device)
    if key is None:  # a handful of devices per process: each is spelled out once
        index = device.index
        key = _DEVICE_KEYS[device] = (str(device.type), -1 if index is None else int(index))
    return key


def byte_range(tensor: Any) -> ByteRange | None:
    """Returns the bytes ``tensor`` touches, or None for a zero-element tensor."""
    count = tensor.numel()
    if count == 0:
        return None
    itemsize = tensor.element_size()
    ptr = tensor.data_ptr()
    if tensor.is_contiguous():  # the common case: one dense block, no stride walk
        return ByteRange(device_key(tensor), ptr, ptr + itemsize * count)
    low = high = 0
    for size, stride in zip(tensor.shape, tensor.stride()):
        extent = (size - 1) * stride
        if extent < 0:
            low += extent
        else:
            high += extent
    return ByteRange(device_key(tensor), ptr + itemsize * low, ptr + itemsize * (high + 1))


def ranges_overlap(a: ByteRange | None, b: ByteRange | None) -> bool:
    """Returns True when both ranges exist, lie on one device and share at least one byte."""
    if a is None or b is None or a.device != b.device:
        return False
    return a.lo < b.hi and b.lo < a.hi
