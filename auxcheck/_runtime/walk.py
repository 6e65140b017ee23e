"""Finds the tensors an object holds, walking its attributes and containers.

The walk reads ``__dict__`` entries, ``__slots__`` (dataclass fields live in one of
the two), mapping values and sequence/set items. It is iterative and breadth first
(deep structures cannot raise RecursionError, and a tensor next to a long list is
found before the list's items), cycle-safe, bounded in depth and in objects visited
(a walk cut short by a bound says so, when asked), never runs the plugin's code (no
properties, ``__getattr__``, ``__class__``, ``__iter__`` or ``items()`` overrides: types
are read with ``type()`` and containers through the builtin methods) and skips anything
that raises.
"""

from __future__ import annotations

import sys
import types
from collections import deque
from collections.abc import Iterator
from typing import Any

__all__ = [
    "TensorRef",
    "dense_parts",
    "has_no_data",
    "is_tensor",
    "iter_tensors",
    "unique_tensors",
]

TensorRef = tuple[str, Any]
"""A tensor and the path it was found under, like ``.hidden`` or ``.rows[2]``."""

_MAX_DEPTH = 32
_MAX_OBJECTS = 100_000
_ATOMS = (str, bytes, bytearray, int, float, complex, bool, type(None), range)
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType, types.CodeType, types.FrameType)


def iter_tensors(
    obj: Any, *, max_depth: int = _MAX_DEPTH, max_objects: int = _MAX_OBJECTS,
    cut: list[str] | None = None,
) -> Iterator[TensorRef]:
    """Yields ``(path, tensor)`` for every tensor reachable from ``obj``, nearest first.

    When a bound stops the walk before everything reachable was read, the reason is
    appended to ``cut`` (if given): a tensor past it may have been missed.
    """
    torch = sys.modules.get("torch")
    if torch is None:  # no tensor can exist before torch is imported
        return
    tensor_type = torch.Tensor
    seen: set[int] = set()
    queue: deque[tuple[str, Any, int]] = deque([("", obj, 0)])
    while queue:
        path, value, depth = queue.popleft()
        kind = type(value)  # never isinstance: it reads a plugin's __class__ property
        if issubclass(kind, _ATOMS) or id(value) in seen:
            continue
        if len(seen) >= max_objects:
            _note(cut, f"it holds more than {max_objects:,} objects")
            return
        seen.add(id(value))
        if issubclass(kind, tensor_type):
            yield (path or "<self>", value)
        elif not issubclass(kind, _OPAQUE):
            children = _children(value, path)
            if depth < max_depth:
                queue.extend((p, v, depth + 1) for p, v in children)
            elif any(not issubclass(type(v), _ATOMS) for _, v in children):
                _note(cut, f"it nests deeper than {max_depth} levels (at {path})")


def _note(cut: list[str] | None, reason: str) -> None:
    if cut is not None and not cut:  # the first bound met is the one to tell
        cut.append(reason)


def unique_tensors(refs: Iterator[TensorRef] | list[TensorRef]) -> list[TensorRef]:
    """Returns ``refs`` without repeats of the same tensor object, first path kept."""
    seen: set[int] = set()
    out: list[TensorRef] = []
    for path, tensor in refs:
        if id(tensor) not in seen:
            seen.add(id(tensor))
            out.append((path, tensor))
    return out


def _children(value: Any, path: str) -> list[tuple[str, Any]]:
    """Returns the items or attributes of ``value``; builtin methods only, so no plugin code runs."""
    kind = type(value)
    found: list[tuple[str, Any]] = []
    try:
        if issubclass(kind, dict):
            found += ((f"{path}[{_key_text(k)}]", v) for k, v in dict.items(value))
        elif issubclass(kind, list):
            found += ((f"{path}[{i}]", v) for i, v in enumerate(list.copy(value)))
        elif issubclass(kind, tuple):
            found += ((f"{path}[{i}]", v) for i, v in enumerate(tuple.__iter__(value)))
        elif issubclass(kind, set):
            found += ((f"{path}{{}}", v) for v in list(set.__iter__(value)))
        elif issubclass(kind, frozenset):
            found += ((f"{path}{{}}", v) for v in list(frozenset.__iter__(value)))
        else:
            found += _attributes(value, path)
    except BaseException as exc:  # a hostile container: keep what was read so far
        if _passes(exc):
            raise
    return found


def _key_text(key: Any) -> str:
    from auxcheck._core.report import describe

    return describe(key, limit=40)


def _passes(exc: BaseException) -> bool:
    from auxcheck._core.plugin_calls import passes_through

    return passes_through(exc)


def _attributes(value: Any, path: str) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    try:
        attrs = object.__getattribute__(value, "__dict__")
    except BaseException as exc:  # no __dict__, or a property named __dict__
        if _passes(exc):
            raise
        attrs = None
    if type(attrs) is dict:
        found += ((f"{path}.{k}", v) for k, v in dict.items(attrs) if type(k) is str)
    for name in _slot_names(type(value)):
        try:
            found.append((f"{path}.{name}", object.__getattribute__(value, name)))
        except BaseException as exc:  # an unset slot, or a descriptor that raises
            if _passes(exc):
                raise
    return found


def _slot_names(cls: type) -> list[str]:
    names: list[str] = []
    for klass in type.__dict__["__mro__"].__get__(cls):
        slots = type.__dict__["__dict__"].__get__(klass).get("__slots__", ())
        if type(slots) is str:
            slots = (slots,)
        if type(slots) not in (tuple, list):
            continue  # __slots__ rebound after the class was made: not the real slots
        names += (n for n in slots if type(n) is str and n not in ("__dict__", "__weakref__"))
    return names


def dense_parts(refs: Iterator[TensorRef] | list[TensorRef]) -> list[TensorRef]:
    """Returns the dense strided tensors holding the bytes of each tensor in ``refs``.

    Byte ranges need sizes, strides and a data pointer: a sparse tensor becomes its
    index and value tensors, a nested one its components, a dense one stays as is.
    Tensors with no bytes to compare (meta, fake, opaque layouts) are left out.
    """
    out: list[TensorRef] = []
    for path, tensor in refs:
        try:
            out.extend(_parts(path, tensor))
        except BaseException as exc:  # a tensor whose bytes cannot be read
            if _passes(exc):
                raise
    return out


def _parts(path: str, tensor: Any) -> list[TensorRef]:
    import torch

    if has_no_data(tensor):
        return []
    layout = tensor.layout
    if tensor.is_nested:
        if layout == torch.strided:
            return [(f"{path}[{i}]", t) for i, t in enumerate(tensor.unbind())]
        return _strided([(f"{path}.values()", tensor.values())])
    if layout == torch.sparse_coo:
        return _strided([(f"{path}.indices()", tensor._indices()),
                         (f"{path}.values()", tensor._values())])
    if layout in (torch.sparse_csr, torch.sparse_bsr):
        return _strided([(f"{path}.crow_indices()", tensor.crow_indices()),
                         (f"{path}.col_indices()", tensor.col_indices()),
                         (f"{path}.values()", tensor.values())])
    if layout in (torch.sparse_csc, torch.sparse_bsc):
        return _strided([(f"{path}.ccol_indices()", tensor.ccol_indices()),
                         (f"{path}.row_indices()", tensor.row_indices()),
                         (f"{path}.values()", tensor.values())])
    return _strided([(path, tensor)])


def is_tensor(value: Any) -> bool:
    """Returns True for a torch tensor, read from its type: no plugin code runs.

    ``isinstance`` (and ``torch.is_tensor``) would read a ``__class__`` property; torch
    is never imported here, as no tensor exists before it is.
    """
    torch = sys.modules.get("torch")
    return torch is not None and issubclass(type(value), torch.Tensor)


def has_no_data(tensor: Any) -> bool:
    """Returns True for a meta or fake tensor: shapes and dtypes, no bytes to copy or compare."""
    if tensor.device.type == "meta":
        return True
    return _is_fake(tensor)


def _is_fake(tensor: Any) -> bool:
    """Returns True for a FakeTensor (no real storage: its data pointer is 0 for all of them)."""
    fake = sys.modules.get("torch._subclasses.fake_tensor")
    return fake is not None and issubclass(type(tensor), fake.FakeTensor)


def _strided(refs: list[TensorRef]) -> list[TensorRef]:
    from auxcheck._runtime.byteranges import byte_range

    out = []
    for path, tensor in refs:
        byte_range(tensor)  # raises for a tensor without strides or storage
        out.append((path, tensor))
    return out
