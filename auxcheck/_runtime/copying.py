"""Copying a published tensor as SGLang's asynchronous copy does, and comparing its bytes later.

torch is imported by the functions that need it, never at import time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auxcheck._core.plugin_calls import attempt, kind_name, passes_through
from auxcheck._runtime.reads import storage_key
from auxcheck._runtime.walk import has_no_data, is_tensor

__all__ = [
    "DeferredCopy",
    "covered_bytes",
    "covered_view",
    "host_copy",
    "raw_bytes",
    "same_bytes",
    "still_holds",
]

@dataclass(slots=True)
class _Copy:
    number: int
    source: Any
    dest: Any
    snapshot: Any


@dataclass(slots=True, eq=False)
class DeferredCopy:
    """The ``copy_tensor`` SGLang passes (``_async_d2h``), on a copy stream nobody waits for.

    Each call returns a fresh host tensor holding the value at the call, and remembers
    it; :meth:`complete` then reads the device bytes again, as a copy that only ran
    after the next forward would. Hashable by identity, like the function SGLang passes.
    The checker's own memory is the bytes the tensor covers, twice (the host copy and a
    snapshot), whatever its logical size: an expanded view is copied as the bytes under
    it, never materialised. A meta or fake tensor copies to a tensor like it (no data).
    """

    copies: list[_Copy] = field(default_factory=list)
    late: list[Any] = field(default_factory=list)
    closed: bool = False
    returned: set[int] = field(default_factory=set)
    """The storage addresses of the host tensors returned so far (the reads AUX114 watches)."""

    def __call__(self, tensor: Any) -> Any:
        if not is_tensor(tensor):
            raise TypeError(f"copy_tensor expects a tensor, got {kind_name(tensor)}")
        if self.closed:
            self.late.append(tensor)
        dest = host_copy(tensor)
        key = storage_key(dest)
        if key is not None:
            self.returned.add(key)
        self.copies.append(_Copy(len(self.copies) + 1, tensor, dest, covered_bytes(tensor)))
        return dest

    def complete(self) -> list[_Copy]:
        """Reads every source again; returns the copies whose bytes changed (their host tensor updated)."""
        changed = []
        for item in self.copies:
            if still_holds(item.source, item.snapshot):
                continue
            changed.append(item)
            attempt(_update, item.dest, item.source)  # what a copy that ran only now delivers
        return changed


def _update(dest: Any, source: Any) -> None:
    if _overlapping(source):
        covered_view(dest).copy_(covered_view(source))
    else:
        dest.copy_(source)


def _span(tensor: Any) -> int | None:
    """Returns how many storage elements ``tensor`` covers, first to last; None without strides."""
    try:
        if tensor.layout != _strided_layout() or tensor.is_nested:
            return None
        if tensor.numel() == 0:
            return 0
        return 1 + sum((int(n) - 1) * int(s) for n, s in zip(tensor.shape, tensor.stride()))
    except BaseException as exc:  # a tensor subclass that will not tell
        if passes_through(exc):
            raise
        return None


def _strided_layout() -> Any:
    import torch

    return torch.strided


def _overlapping(tensor: Any) -> bool:
    """Returns True when elements of ``tensor`` share memory (an expanded view)."""
    span = _span(tensor)
    return span is not None and 0 < span < tensor.numel()


def covered_view(tensor: Any) -> Any:
    """Returns the elements ``tensor`` covers, flat: a view of its storage when that is cheaper.

    An expanded view's storage is smaller than its logical size, so the storage is
    what the checker copies and compares; a dense tensor is its elements.
    """
    detached = tensor.detach()
    span = _span(tensor)
    if span is not None and 0 < span < tensor.numel():
        return detached.as_strided((span,), (1,), tensor.storage_offset())
    return detached.reshape(-1)


def covered_bytes(tensor: Any) -> Any:
    """Returns a host copy of what :func:`covered_view` shows, or None for a tensor without data."""
    if has_no_data(tensor):
        return None
    try:
        return covered_view(tensor).to("cpu", copy=True)
    except BaseException as exc:  # a tensor with no readable bytes: nothing to compare
        if passes_through(exc):
            raise
        return None


def host_copy(tensor: Any) -> Any:
    """Returns a host tensor equal to ``tensor``, as SGLang's copy gives, costing its covered bytes.

    An expanded view comes back as the same view of a host copy of its bytes; a meta
    or fake tensor as a tensor like it, with no data to compare.
    """
    if has_no_data(tensor):
        return tensor.detach().clone()
    if not _overlapping(tensor):
        return tensor.detach().to("cpu", copy=True)
    flat = covered_view(tensor).to("cpu", copy=True)
    return flat.as_strided(tuple(tensor.shape), tuple(tensor.stride()), 0)


def still_holds(tensor: Any, snapshot: Any) -> bool:
    """Returns True when ``tensor`` still holds what :func:`covered_bytes` took of it."""
    if snapshot is None:
        return True
    view = attempt(covered_view, tensor)
    return view.error is not None or same_bytes(view.value, snapshot)


def same_bytes(a: Any, b: Any) -> bool:
    """Returns True when two tensors hold the same bytes (NaN included); unreadable ones count as same."""
    import torch

    if b is None:
        return True
    try:
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        left, right = raw_bytes(a), raw_bytes(b)
        return bool(torch.equal(left.to(right.device), right))
    except BaseException as exc:  # sparse, nested or meta tensors: not compared
        if passes_through(exc):
            raise
        return True


def raw_bytes(tensor: Any) -> Any:
    """Returns ``tensor``'s elements as flat bytes; a quantized one as its integer values.

    Viewing a quantized tensor as bytes crashes the process (torch 2.13): its stored
    integers are what a copy must keep.
    """
    import torch

    plain = tensor.int_repr() if tensor.is_quantized else tensor
    return plain.detach().contiguous().reshape(-1).view(torch.uint8)
