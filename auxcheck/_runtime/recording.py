"""Recording auxiliary outputs and append plans: the test doubles behind the properties.

A :class:`RecordingDeviceOutput` counts its copies and records what it passed to
``copy_tensor``; the :class:`RecordingHostOutput` it returns records every
``consume``. Both can wrap a user's own output and delegate to it, so a plugin
author's outputs are recorded too. Every record carries a tick of one process-wide
clock, so the order of copies and consumes across outputs can be checked.

Importing this module does not import torch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from auxcheck._core.errors import LeafRaised

if TYPE_CHECKING:
    import torch

__all__ = [
    "Appended",
    "ConsumeRecord",
    "CopyRecord",
    "LeafRaised",
    "Operand",
    "RecordingDeviceOutput",
    "RecordingHostOutput",
    "build_operand",
    "count_leaves",
    "operand_leaves",
]

_clock = itertools.count()


@dataclass(frozen=True, slots=True)
class CopyRecord:
    """One ``copy_to_host`` call: its tick, the tensors passed to ``copy_tensor``, the result."""

    tick: int
    passed: tuple[torch.Tensor, ...]
    host: RecordingHostOutput


@dataclass(frozen=True, slots=True)
class ConsumeRecord:
    """One ``consume`` call: its tick and the very batch and commits objects received."""

    tick: int
    batch: Any
    commits: Any


class RecordingDeviceOutput:
    """A device output that records its copies; equal to any other with the same label.

    Equality by label (not identity) is deliberate: an implementation that
    de-duplicates equal children is then caught. With ``inner`` it wraps a user's
    output: ``copy_to_host`` delegates to it and records what it passed.
    """

    __slots__ = ("copies", "inner", "label", "tensors")

    def __init__(
        self, label: str, tensors: Sequence[torch.Tensor] = (), *, inner: Any = None
    ) -> None:
        self.label = label
        self.tensors = tuple(tensors)
        self.inner = inner
        self.copies: list[CopyRecord] = []

    @property
    def copy_count(self) -> int:
        """Returns how many times ``copy_to_host`` ran."""
        return len(self.copies)

    def copy_to_host(
        self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]
    ) -> RecordingHostOutput:
        """Returns a recording host output, passing each tensor to ``copy_tensor`` once."""
        tick = next(_clock)
        passed: list[torch.Tensor] = []

        def record(tensor: torch.Tensor) -> torch.Tensor:
            passed.append(tensor)
            return copy_tensor(tensor)

        if self.inner is None:
            host = RecordingHostOutput(self, tuple(record(t) for t in self.tensors))
        else:
            inner_host = _leaf_call(self.inner, "copy_to_host", ("AUX101", "AUX103"), record)
            host = RecordingHostOutput(self, (), inner=inner_host)
        self.copies.append(CopyRecord(tick, tuple(passed), host))
        return host

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecordingDeviceOutput):
            return NotImplemented
        return self.label == other.label

    def __hash__(self) -> int:
        return hash(self.label)

    def __repr__(self) -> str:
        if self.inner is not None:  # never the user's repr: it may hang or raise
            return f"RecordingDeviceOutput({self.label!r}, inner={_describe(self.inner)})"
        shapes = ", ".join(_describe_tensor(t) for t in self.tensors)
        return f"RecordingDeviceOutput({self.label!r}, tensors=[{shapes}])"


class RecordingHostOutput:
    """A host output that records every ``consume`` (and forwards it to ``inner``, if any)."""

    __slots__ = ("consumed", "inner", "source", "tensors")

    def __init__(
        self,
        source: RecordingDeviceOutput | None,
        tensors: Sequence[torch.Tensor] = (),
        *,
        inner: Any = None,
    ) -> None:
        self.source = source
        self.tensors = tuple(tensors)
        self.inner = inner
        self.consumed: list[ConsumeRecord] = []

    def consume(self, batch: Any, commits: Any) -> None:
        """Records the batch and commits objects received, then forwards them to ``inner``."""
        self.consumed.append(ConsumeRecord(next(_clock), batch, commits))
        if self.inner is not None:
            _leaf_call(self.inner, "consume", ("AUX201", "AUX202"), batch, commits)

    def __repr__(self) -> str:
        label = None if self.source is None else self.source.label
        return f"RecordingHostOutput({label!r}, consumed={len(self.consumed)})"


def _leaf_call(leaf: Any, method: str, codes: tuple[str, str], *args: Any) -> Any:
    """Returns ``leaf.method(*args)`` run under the guard; raises LeafRaised when it cannot.

    ``codes`` are the rules of a missing (or raising) lookup and of a raising call:
    SystemExit from a user's leaf is its own fault too, never the checker's exit.
    """
    from auxcheck._core.plugin_calls import MISSING, attempt, lookup

    found = lookup(leaf, method)
    if found.error is not None or found.value is MISSING or not callable(found.value):
        missing = found.error or AttributeError(f"no callable `{method}`")
        raise LeafRaised(codes[0], method, leaf, missing) from None
    called = attempt(found.value, *args)
    if called.error is not None:
        raise LeafRaised(codes[1], method, leaf, called.error) from None
    return called.value


def _describe(obj: Any) -> str:
    """Returns :func:`auxcheck.report.describe` of ``obj`` (imported late: the report imports rules)."""
    from auxcheck._core.report import describe as safe

    return safe(obj)


def _describe_tensor(tensor: Any) -> str:
    dtype = str(tensor.dtype).removeprefix("torch.")
    layout = "" if tensor.is_contiguous() else ", strided"
    return f"{dtype}{list(tensor.shape)}{layout}"


@dataclass(frozen=True, slots=True)
class Appended:
    """An operand built by appending ``operands`` in order to None, with the implementation under test."""

    operands: tuple[Operand, ...]


Operand = None | RecordingDeviceOutput | Appended
"""What an append sequence holds: None, a leaf output, or the result of earlier appends."""


def build_operand(append: Callable[[Any, Any], Any], operand: Operand) -> Any:
    """Returns the output ``operand`` stands for, building ``Appended`` operands with ``append``."""
    if not isinstance(operand, Appended):
        return operand
    current: Any = None
    for item in operand.operands:
        current = append(current, build_operand(append, item))
    return current


def operand_leaves(operand: Operand) -> tuple[RecordingDeviceOutput, ...]:
    """Returns the leaf outputs of ``operand`` in append order, Nones dropped."""
    if operand is None:
        return ()
    if isinstance(operand, Appended):
        return tuple(leaf for item in operand.operands for leaf in operand_leaves(item))
    return (operand,)


def count_leaves(operands: Sequence[Operand]) -> int:
    """Returns how many leaf outputs ``operands`` hold."""
    return len(operand_leaves(Appended(tuple(operands))))
