"""Finds the tensors an object holds, walking its attributes and containers.

The walk reads ``__dict__`` entries, ``__slots__`` (dataclass fields live in one of
the two), mapping values and sequence/set items. It is iterative (deep structures
cannot raise RecursionError), cycle-safe, bounded in depth and in objects visited,
never triggers properties or ``__getattr__``, and skips anything that raises.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["TensorRef", "dense_parts", "iter_tensors", "unique_tensors"]

TensorRef = tuple[str, Any]
"""A tensor and the path it was found under, like ``.hidden`` or ``.rows[2]``."""

_MAX_DEPTH = 8
_MAX_OBJECTS = 10_000
_ATOMS = (str, bytes, bytearray, int, float, complex, bool, type(None), range)
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType, types.CodeType, types.FrameType)


def iter_tensors(
    obj: Any, *, max_depth: int = _MAX_DEPTH, max_objects: int = _MAX_OBJECTS
) -> Iterator[TensorRef]:
    """Yields ``(path, tensor)`` for every tensor reachable from ``obj``, depth first."""
    torch = sys.modules.get("torch")
    if torch is None:  # no tensor can exist before torch is imported
        return
    is_tensor = torch.is_tensor
    seen: set[int] = set()
    stack: list[tuple[str, Any, int]] = [("", obj, 0)]
    while stack and len(seen) < max_objects:
        path, value, depth = stack.pop()
        if isinstance(value, _ATOMS) or id(value) in seen:
            continue
        seen.add(id(value))
        if is_tensor(value):
            yield (path or "<self>", value)
        elif depth < max_depth and not isinstance(value, _OPAQUE):
            children = list(_children(value, path))
            stack.extend((p, v, depth + 1) for p, v in reversed(children))


def unique_tensors(refs: Iterator[TensorRef] | list[TensorRef]) -> list[TensorRef]:
    """Returns ``refs`` without repeats of the same tensor object, first path kept."""
    seen: set[int] = set()
    out: list[TensorRef] = []
    for path, tensor in refs:
        if id(tensor) not in seen:
            seen.add(id(tensor))
            out.append((path, tensor))
    return out


def _children(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    try:
        if isinstance(value, dict):
            yield from ((f"{path}[{k!r}]", v) for k, v in list(value.items()))
        elif isinstance(value, (list, tuple)):
            yield from ((f"{path}[{i}]", v) for i, v in enumerate(list(value)))
        elif isinstance(value, (set, frozenset)):
            yield from ((f"{path}{{}}", v) for v in list(value))
        else:
            yield from _attributes(value, path)
    except Exception:  # noqa: BLE001 - a hostile container: keep what was read so far
        return


def _attributes(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    try:
        attrs = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001
        attrs = None
    if isinstance(attrs, dict):
        yield from ((f"{path}.{k}", v) for k, v in list(attrs.items()))
    for name in _slot_names(type(value)):
        try:
            yield (f"{path}.{name}", object.__getattribute__(value, name))
        except Exception:  # noqa: BLE001, S112 - an unset slot, or a descriptor that raises
            continue


def _slot_names(cls: type) -> Iterator[str]:
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__"):
                yield name


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
        except Exception:  # noqa: BLE001, S112 - a tensor whose bytes cannot be read
            continue
    return out


def _parts(path: str, tensor: Any) -> list[TensorRef]:
    import torch

    if tensor.device.type == "meta":
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


def _strided(refs: list[TensorRef]) -> list[TensorRef]:
    from auxcheck._byteranges import byte_range

    out = []
    for path, tensor in refs:
        byte_range(tensor)  # raises for a tensor without strides or storage
        out.append((path, tensor))
    return out
