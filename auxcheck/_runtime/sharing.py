"""Exact byte-sharing between strided views, by comparing the byte runs their elements touch.

The bounding rule of :mod:`auxcheck._runtime.byteranges` reports interleaved views such as
``m[:, 0]`` and ``m[:, 1]`` as overlapping. Here a view becomes a sorted set of byte
runs (contiguous innermost rows collapse into one run each), and two views share
bytes when some run of one intersects some run of the other. Views with more than
``limit`` runs are not expanded: the caller falls back to the bounding answer,
which never misses an overlap. torch is imported on first use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from auxcheck._runtime.byteranges import device_key

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "DEFAULT_LIMIT", "Geometry", "Runs", "geometry", "runs_hit", "runs_of", "runs_share",
    "sharing_indices",
]

DEFAULT_LIMIT = 1 << 22
"""The most byte runs a view is expanded into before exact mode falls back to bounding."""


class Geometry(NamedTuple):
    """Where a view's elements lie: device, first element's address, sizes, strides, itemsize."""

    device: tuple[str, int]
    ptr: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    itemsize: int


class Runs(NamedTuple):
    """Byte runs sorted by start; ``reach[i]`` is the furthest end among runs ``0..i``."""

    starts: Tensor
    reach: Tensor
    ends: Tensor


def geometry(tensor: Any) -> Geometry:
    """Returns the geometry of ``tensor`` (which keeps no reference to it)."""
    return Geometry(device_key(tensor), int(tensor.data_ptr()), tuple(tensor.shape),
                    tuple(tensor.stride()), int(tensor.element_size()))


def _dims(sizes: tuple[int, ...], strides: tuple[int, ...]) -> list[tuple[int, int]]:
    # Size-1 and zero-stride (expanded) dimensions add no address; merging dimensions
    # that tile each other contiguously keeps the run count small.
    dims = sorted(((n, s) for n, s in zip(sizes, strides) if n > 1 and s != 0),
                  key=lambda d: abs(d[1]), reverse=True)
    merged: list[tuple[int, int]] = []
    for size, stride in dims:
        if merged and merged[-1][1] == stride * size:
            merged[-1] = (merged[-1][0] * size, stride)
        else:
            merged.append((size, stride))
    return merged


def runs_of(geo: Geometry, *, limit: int = DEFAULT_LIMIT) -> Runs | None:
    """Returns the byte runs ``geo`` touches, or None when there are more than ``limit``."""
    import torch

    if 0 in geo.sizes:
        empty = torch.empty(0, dtype=torch.int64)
        return Runs(empty, empty, empty)
    dims = _dims(geo.sizes, geo.strides)
    run = geo.itemsize
    if dims and dims[-1][1] == 1:
        run = dims.pop()[0] * geo.itemsize
    if math.prod(n for n, _ in dims) > limit:
        return None
    offsets = torch.zeros(1, dtype=torch.int64)
    for size, stride in dims:
        step = torch.arange(size, dtype=torch.int64) * (stride * geo.itemsize)
        offsets = (offsets[:, None] + step[None, :]).reshape(-1)
    starts = torch.sort(offsets + geo.ptr).values
    ends = starts + run
    return Runs(starts, torch.cummax(ends, 0).values, ends)


def runs_hit(runs: Runs, lo: int, hi: int) -> bool:
    """Returns True when some run shares a byte with ``[lo, hi)``."""
    import torch

    if hi <= lo or runs.starts.numel() == 0:
        return False
    i = int(torch.searchsorted(runs.starts, torch.tensor([hi]), side="left")[0]) - 1
    return i >= 0 and int(runs.reach[i]) > lo


def runs_share(a: Runs, b: Runs) -> bool:
    """Returns True when some run of ``a`` shares a byte with some run of ``b``."""
    import torch

    if a.starts.numel() == 0 or b.starts.numel() == 0:
        return False
    index = torch.searchsorted(a.starts, b.ends, side="left") - 1
    hit = (index >= 0) & (a.reach[index.clamp(min=0)] > b.starts)
    return bool(hit.any())


def sharing_indices(left: Sequence[tuple[str, Any]],
                    right: Sequence[tuple[str, Any]]) -> list[tuple[int, int]]:
    """Returns the sorted (left index, right index) pairs of ``(path, tensor)`` refs sharing bytes.

    A sweep over bounding byte ranges finds the candidates in about n log n; the exact
    byte runs settle them, so interleaved strided views such as ``m[:, 0]`` and
    ``m[:, 1]`` do not count. Sparse and nested tensors count by the dense tensors
    holding their bytes; tensors with no readable bytes share nothing.
    """
    from auxcheck._runtime.byteranges import byte_range
    from auxcheck._runtime.walk import dense_parts

    items = []  # (device, lo, hi, side, index, part)
    for side, refs in ((0, left), (1, right)):
        for index, ref in enumerate(refs):
            for _, part in dense_parts([ref]):
                span = byte_range(part)
                if span is not None:
                    items.append((span.device, span.lo, span.hi, side, index, part))
    items.sort(key=lambda item: (item[0], item[1]))
    runs: dict[int, Any] = {}

    def runs_for(tensor: Any) -> Any:
        if id(tensor) not in runs:
            runs[id(tensor)] = runs_of(geometry(tensor))
        return runs[id(tensor)]

    pairs: set[tuple[int, int]] = set()
    active: list[tuple[Any, int, int, int, Any]] = []  # (device, hi, side, index, part)
    for device, lo, hi, side, index, part in items:
        active = [a for a in active if a[0] == device and a[1] > lo]
        for _, _, other_side, other, other_part in active:
            if other_side == side:
                continue
            pair = (index, other) if side == 0 else (other, index)
            if pair in pairs:
                continue
            a, b = runs_for(part), runs_for(other_part)
            if a is None or b is None or runs_share(a, b):  # too large to expand: bounding
                pairs.add(pair)
        active.append((device, hi, side, index, part))
    return sorted(pairs)
