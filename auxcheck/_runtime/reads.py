"""Which tensors' values plugin code read during a call: for reads SGLang makes unsafe.

Two reads are wrong in SGLang though they work on a CPU: a ``copy_to_host`` that reads the
values of what ``copy_tensor`` returned (SGLang synchronizes the copy only later: on a GPU
the host tensor still holds old bytes, AUX114), and an ``after_sample`` that reads logits it
kept from ``before_grammar`` (the sampler has since edited them in place: grammar mask,
temperature, softmax, AUX115).

:func:`watch_reads` runs a call under a torch function mode (``torch.overrides``, public
API) that records every torch function or tensor method given a watched tensor, but those
that read no value (views, shapes, metadata). ``tolist()``, ``item()``, ``float()`` and
``numpy()`` are tensor methods too, so they are seen. torch is imported when a watch starts,
never at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from auxcheck._runtime.walk import is_tensor

__all__ = ["Reads", "storage_key", "watch_reads"]

_NO_VALUES = frozenset({
    "__get__", "__getitem__", "__len__", "size", "dim", "ndimension", "numel", "nelement",
    "stride", "storage_offset", "element_size", "is_contiguous", "data_ptr", "untyped_storage",
    "view", "view_as", "reshape", "reshape_as", "detach", "t", "permute", "transpose",
    "swapaxes", "unsqueeze", "squeeze", "flatten", "unflatten", "expand", "expand_as", "narrow",
    "select", "as_strided", "split", "chunk", "unbind", "movedim", "__repr__", "__format__",
    "__hash__", "__eq__", "__bool__",
})
"""Functions that give a view or metadata, reading no value (``__bool__`` and ``__eq__`` of a
tensor do read, but also run for dict and set lookups of the tensor object: left out)."""
_SCALAR = frozenset({"item", "__float__", "__int__", "__index__", "__complex__"})


def storage_key(tensor: Any) -> int | None:
    """Returns the address of ``tensor``'s storage (None for a tensor without one)."""
    try:
        return int(tensor.untyped_storage().data_ptr()) or None
    except Exception:  # noqa: BLE001 - meta, fake and sparse tensors have no storage to read
        return None


@dataclass(slots=True)
class Reads:
    """What was read: one entry per kind of read (``tolist()``, ``mul()``), in order."""

    seen: list[str] = field(default_factory=list)

    def add(self, what: str) -> None:
        """Records one kind of read (once)."""
        if what not in self.seen:
            self.seen.append(what)


_MODE: Any = None
"""The function mode class, made once: a class made per watch would be a reference cycle
holding what the watch refers to (a plugin's host output) until the garbage collector ran."""


def _mode_class() -> Any:
    global _MODE
    if _MODE is None:
        from torch.overrides import TorchFunctionMode

        _MODE = type("WatchReads", (TorchFunctionMode,), {"__torch_function__": _function})
    return _MODE


def _function(mode: Any, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
    kwargs = kwargs or {}
    name = getattr(func, "__name__", "")
    if name not in _NO_VALUES and mode.hits([*args, *kwargs.values()]):
        mode.reads.add("indexing into Python" if name in _SCALAR else f"{name}()")
    return func(*args, **kwargs)


@contextmanager
def watch_reads(watched: Callable[[], Collection[int]]) -> Iterator[Reads]:
    """Records the reads of tensors whose storage address is in ``watched()`` (asked at each call).

    The watched set may grow during the call (each ``copy_tensor`` adds its result).
    """
    reads = Reads()

    def hits(values: Iterable[Any]) -> bool:
        keys = watched()
        return bool(keys) and any(is_tensor(v) and storage_key(v) in keys for v in _flat(values))

    mode = _mode_class()()
    mode.hits, mode.reads = hits, reads
    try:
        with mode:
            yield reads
    finally:
        del mode.hits, mode.reads


def _flat(values: Iterable[Any]) -> Iterator[Any]:
    """Yields ``values``, one level of lists and tuples opened (``torch.cat([a, b])``)."""
    for value in values:
        if type(value) in (list, tuple):
            yield from value
        else:
            yield value
