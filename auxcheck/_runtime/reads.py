"""Which tensors' values plugin code read during a call: for reads SGLang makes unsafe.

Two reads are wrong in SGLang though they work on a CPU: a ``copy_to_host`` that reads the
values of what ``copy_tensor`` returned (SGLang synchronizes the copy only later: on a GPU
the host tensor still holds old bytes, AUX114), and an ``after_sample`` that reads logits it
kept from ``before_grammar`` (the sampler has since edited them in place: grammar mask, bias,
temperature, softmax, AUX115).

:func:`watch_reads` runs a call under a torch dispatch mode that records every operation
whose arguments include a watched tensor's storage, views and metadata aside; ``tolist``,
``item`` and ``numpy`` read memory without dispatching an operation, so they are watched
for the call's duration too. torch is imported when a watch starts, never at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from auxcheck._runtime.walk import is_tensor

__all__ = ["Reads", "storage_key", "watch_reads"]

_DIRECT = ("tolist", "item", "numpy", "__array__")
"""Tensor methods that read values without dispatching an operation."""
_METADATA = frozenset({"detach", "alias", "lift_fresh", "_to_copy_meta", "size", "stride",
                       "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "dim",
                       "is_contiguous", "_reshape_alias"})
"""Operations (by name) that read no value although they are no views."""


def storage_key(tensor: Any) -> int | None:
    """Returns the address of ``tensor``'s storage (None for a tensor without one)."""
    try:
        return int(tensor.untyped_storage().data_ptr()) or None
    except Exception:  # noqa: BLE001 - meta, fake and sparse tensors have no storage to read
        return None


@dataclass(slots=True)
class Reads:
    """What was read: one line per kind of read (``tolist()``, ``aten.add``), in order."""

    seen: list[str] = field(default_factory=list)

    def add(self, what: str) -> None:
        if what not in self.seen:
            self.seen.append(what)


_MODE: Any = None
"""The dispatch mode class, made once: a class made per watch would be a reference cycle
holding what the watch refers to (a plugin's host output) until the garbage collector ran."""


def _mode_class() -> Any:
    global _MODE
    if _MODE is None:
        from torch.utils._python_dispatch import TorchDispatchMode

        _MODE = type("WatchReads", (TorchDispatchMode,), {"__torch_dispatch__": _dispatch})
    return _MODE


def _dispatch(mode: Any, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
    kwargs = kwargs or {}
    name = func.overloadpacket.__name__
    if not (func.is_view or name in _METADATA):
        import torch

        if mode.hits(torch.utils._pytree.tree_leaves((args, kwargs))):
            mode.reads.add("indexing into Python" if name == "_local_scalar_dense"
                           else f"aten.{name}")
    return func(*args, **kwargs)


@contextmanager
def watch_reads(watched: Callable[[], Collection[int]]) -> Iterator[Reads]:
    """Records the reads of tensors whose storage address is in ``watched()`` (asked at each read).

    The watched set may grow during the call (each ``copy_tensor`` adds its result).
    """
    import torch

    reads = Reads()

    def hits(values: Iterable[Any]) -> bool:
        keys = watched()
        return bool(keys) and any(is_tensor(v) and storage_key(v) in keys for v in values)

    originals = {name: getattr(torch.Tensor, name) for name in _DIRECT}

    def direct(name: str) -> Callable[..., Any]:
        original = originals[name]

        def read(self: Any, *args: Any, **kwargs: Any) -> Any:
            if hits([self]):
                reads.add(f"{name}()")
            return original(self, *args, **kwargs)

        return read

    mode = _mode_class()()
    mode.hits, mode.reads = hits, reads
    for name in _DIRECT:
        setattr(torch.Tensor, name, direct(name))
    try:
        with mode:
            yield reads
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)
        del mode.hits, mode.reads
