"""The one check that a document read back from a cache has the shape auxcheck wrote.

A cache file is anyone's to damage: a value of the wrong type must make the entry absent
(rebuilt), never be read as something else (``"names": "ab"`` as the names ``a`` and ``b``).
A shape is written as the data it describes: a type (``str``, ``bool``, ``None``), a list of
one shape (every item of that shape), a dict of shapes (exactly those keys), or a tuple of
shapes (any one of them).
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["Shape", "shaped"]

Shape: TypeAlias = type | None | list["Shape"] | dict[str, "Shape"] | tuple["Shape", ...]
"""A type, ``None``, ``[item shape]``, ``{key: shape}`` (exactly those keys) or
``(shape, ...)`` (any one)."""


def shaped(value: object, shape: Shape) -> bool:
    """Returns True when ``value`` is of ``shape`` all the way down (``bool`` is not ``int``)."""
    if shape is None:
        return value is None
    if isinstance(shape, tuple):
        return any(shaped(value, option) for option in shape)
    if isinstance(shape, list):
        return isinstance(value, list) and all(shaped(v, shape[0]) for v in value)
    if isinstance(shape, dict):
        return (isinstance(value, dict) and value.keys() == shape.keys()
                and all(shaped(value[k], s) for k, s in shape.items()))
    if shape is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, shape)
