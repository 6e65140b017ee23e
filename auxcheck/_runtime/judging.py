"""What every validator shares: the net for escaping errors, declared batch sizes and buffers."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from auxcheck._core.errors import Interrupted, InvalidArgument
from auxcheck._core.interrupts import interrupted_finding
from auxcheck._core.plugin_calls import (
    announce,
    attempt,
    kind_name,
    passes_through,
    phase_code,
    plain_torch,
    summarize,
)
from auxcheck._core.report import Finding, Report, describe
from auxcheck._runtime.batches import MAX_BATCH_SIZE
from auxcheck._runtime.static_buffers import as_registry

if TYPE_CHECKING:
    from auxcheck._runtime.static_buffers import StaticBufferRegistry

__all__ = [
    "catch_escapes",
    "catch_escapes_and_stops",
    "declared_batch_size",
    "plain_int",
    "static_registry",
]


# ---------------------------------------------------------------- declared values


def declared_batch_size(value: Any, *, what: str = "batch_size=") -> int | None:
    """Returns ``value`` as a plain int from 1 to :data:`MAX_BATCH_SIZE` (None stays None).

    The one reading of a declared batch size, for the validators and the pytest suite
    (a number as :func:`plain_int` reads it). Raises InvalidArgument starting with
    ``what`` and the value (by type when it is not a plain number), and naming the range.
    """
    if value is None:
        return None
    number = plain_int(value)
    if number is not None and 1 <= number <= MAX_BATCH_SIZE:
        return number
    raise InvalidArgument(f"{what}{describe(value)}; expected a whole number from 1 to "
                          f"{MAX_BATCH_SIZE} (the number of requests the output was built for)")


def plain_int(value: Any) -> int | None:
    """Returns ``value`` as a plain int, else None: the one reading of a number plugin code
    gives. Anything ``operator.index`` accepts (numpy integers, an IntEnum) but a bool,
    read under the guard; an int subclass's own methods never run."""
    index = attempt(operator.index, value)
    if index.error is not None or not issubclass(type(index.value), int) or \
            issubclass(type(value), bool):
        return None
    return int.__index__(index.value)


def static_registry(static_buffers: Any, *, strict: bool = True
                    ) -> tuple[StaticBufferRegistry, list[Finding]]:
    """Returns the registry of ``static_buffers``, read under the guard, and AUX110 when unreadable.

    The one reader of a user's static buffers. What reading them raised is an AUX110
    finding (the buffers cannot be matched); a value of the wrong kind is too, unless
    ``strict`` (a caller's argument), where it is the InvalidArgument ``as_registry``
    raised.
    """
    if static_buffers is None or (type(static_buffers) is tuple and not static_buffers):
        return as_registry(None), []
    announce("AUX110", "reading the static buffers {}", static_buffers)
    made = attempt(as_registry, static_buffers)
    if made.error is None:
        return made.value, []
    if strict and type(made.error) is InvalidArgument:
        raise made.error
    seen = (str(made.error) if type(made.error) is InvalidArgument
            else f"reading them raised {kind_name(made.error)}")
    return as_registry(None), [Finding.of(
        "AUX110", f"the static buffers cannot be matched: {seen}", "expected a mapping of "
        "names to tensors, tensors, or None", None,
        detail=None if type(made.error) is InvalidArgument else made.detail)]


# ---------------------------------------------------------------- the net


def catch_escapes_and_stops(default: str, subject: str, obj: Any,
                            check: Callable[[], Report]) -> Report:
    """Returns :func:`catch_escapes` of ``check``; plugin code pytest stopped is a finding too."""
    try:
        return catch_escapes(default, subject, obj, check)
    except Interrupted as stop:
        report = Report(subject)
        report.add(interrupted_finding(stop))
        return report


def catch_escapes(default: str, subject: str, obj: Any, check: Callable[[], Report]) -> Report:
    """Returns ``check()``; an error it lets through becomes a finding under the last plugin phase.

    Each step already turns what plugin code raises into its own finding; this is the
    net for a value the plugin returned that breaks the checker later (a hostile
    ``__eq__``, ``__len__`` or tensor subclass), so a check never raises for it.
    Interrupted passes (the pytest suite stops the whole group with it).
    """
    phase_code("")
    try:
        with plain_torch():
            return check()
    except BaseException as exc:  # what a plugin's value did to the checker
        if passes_through(exc) or type(exc) is InvalidArgument:
            raise
        report = Report(subject)
        report.add(Finding.of(phase_code(default), "auxcheck could not finish judging it: "
                              f"checking what plugin code returned raised {kind_name(exc)}",
                              "expected plain values that behave like their types (no "
                              "hostile __eq__, __len__, __iter__, properties or tensor "
                              "subclasses)", obj, detail=summarize(exc, frames=5)))
        return report
