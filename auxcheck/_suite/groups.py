"""What the items of one fixture value share, and how an item is skipped or failed for another's.

A group's report is built once per process and read by every item of the group; an item
whose prerequisite (the output's own contract) fails is skipped naming the failing item;
plugin code pytest stopped fails one item of the group and skips the rest; a fixture value
auxcheck cannot use fails one item, naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from auxcheck._core.errors import ContractViolation, Interrupted, InvalidArgument
from auxcheck._core.interrupts import interrupted_finding
from auxcheck._core.plugin_calls import Outcome, kind_name, plain_torch
from auxcheck._core.report import Finding, Report, describe
from auxcheck._suite.fixture_values import FixtureFailed, fixture_failed

if TYPE_CHECKING:
    from auxcheck._runtime.static_buffers import StaticBufferRegistry

__all__ = [
    "DEPENDS",
    "OBSERVER_DEPENDS",
    "Extras",
    "Group",
    "ItemContext",
    "built",
    "clear_groups",
    "declared_pp",
    "declared_size",
    "dependency",
    "failing_item",
    "failing_prerequisite",
    "fixture_finding",
    "group_of",
    "raise_if",
    "raise_own",
    "read_extras",
    "run_item",
    "skip_if_blocked",
]


# ---------------------------------------------------------------- optional fixtures


def fixture_finding(code: str, failed: FixtureFailed, expected: str) -> Finding:
    """Returns the finding of rule ``code`` for an optional fixture that raised when set up."""
    return Finding.of(code, f"the fixture {failed.name} raised {kind_name(failed.error)}",
                      expected, None, detail=Outcome(error=failed.error).detail)


@dataclass(frozen=True, slots=True)
class Extras:
    """A group's optional fixture values as the checks use them, and what is wrong with them."""

    static: StaticBufferRegistry
    pp_observer: Any
    """The user's PP observer (their object), or None."""
    findings: tuple[Finding, ...]


def read_extras(static_buffers: Any, pp_observer: Any = None) -> Extras:
    """Returns the static-buffer registry and PP observer; AUX110 / AUX403 for unusable ones."""
    from auxcheck._runtime.judging import static_registry
    from auxcheck._runtime.static_buffers import as_registry

    findings: list[Finding] = []
    failed = fixture_failed(static_buffers)
    if failed is not None:
        static = as_registry(None)
        findings.append(fixture_finding("AUX110", failed, "expected a mapping of names to "
                                        "tensors, tensors, or None"))
    else:
        static, unreadable = static_registry(static_buffers, strict=False)
        findings += unreadable
    failed = fixture_failed(pp_observer)
    if failed is not None:
        findings.append(fixture_finding("AUX403", failed, "expected the observer that "
                                        "receives PP tensors (from_pp_tensors)"))
        pp_observer = None
    return Extras(static, pp_observer, tuple(findings))


def raise_if(findings: Iterable[Finding], subject: str, output: Any) -> None:
    """Raises ContractViolation carrying ``findings``, if any, about ``subject`` ``output``.

    The output is described only on failure: a tensor's repr costs milliseconds, and
    passing examples run by the hundred.
    """
    kept = list(findings)
    if kept:
        Report(f"{subject} {describe(output)}", kept).raise_for_findings()


# ---------------------------------------------------------------- dependencies


_COPY = ("AUX101", "AUX102", "AUX103")
_OWN = (*_COPY, "AUX104", "AUX105", "AUX201", "AUX202", "AUX203", "AUX204")
DEPENDS: dict[str, tuple[str, ...]] = {
    "AUX102": ("AUX101",), "AUX103": ("AUX101", "AUX102"),
    "AUX104": _COPY, "AUX105": _COPY, "AUX112": _COPY, "AUX114": ("AUX101", "AUX102"),
    "AUX201": _COPY,
    "AUX202": (*_COPY, "AUX201"), "AUX203": (*_COPY, "AUX201"), "AUX204": (*_COPY, "AUX201"),
    **{code: _OWN for code in ("AUX301", "AUX302", "AUX303", "AUX304", "AUX305", "AUX306")},
    "AUX401": _COPY, "AUX402": (*_COPY, "AUX401"), "AUX403": (*_COPY, "AUX401", "AUX402"),
}
"""For each item's code, the codes of the output's own contract it cannot be judged without."""

OBSERVER_DEPENDS = {code: ("AUX102", *DEPENDS.get(code, ())) for code in
                    ("AUX101", "AUX103", "AUX104", "AUX105", "AUX110", "AUX111", "AUX112",
                     "AUX113", "AUX114", "AUX115", "AUX201", "AUX202", "AUX203", "AUX204")}


@dataclass(frozen=True, slots=True)
class ItemContext:
    """Where an item sits: its group's cache key, the item name of each code in the group,
    and the names of the group's items selected in this run (None: all of them)."""

    key: str
    names: dict[str, str]
    notes: list[Any]
    selected: frozenset[str] | None = None


# ---------------------------------------------------------------- groups


@dataclass(slots=True)
class Group:
    """What the items of one fixture value share: built once per process, read by every item.

    ``report`` holds the findings (for a strategy, those of the strategy itself);
    ``stopped`` the finding of plugin code pytest stopped (every other item is then
    skipped, naming it); ``unusable`` the item that failed, and why, for a fixture
    value auxcheck cannot use; ``silent`` why the outputs were never judged.
    """

    report: Report | None = None
    extras: Extras | None = None
    stopped: Finding | None = None
    unusable: tuple[str, str] | None = None
    silent: str | None = None
    done: set[str] = field(default_factory=set)
    reporter: str = ""
    properties: Any = None
    """The value's shared property search (:class:`~auxcheck._properties.shared_search.SharedSearch`),
    made by its first property item; None before, or when the settings generate nothing."""
    passing: frozenset[str] | None = None
    """A strategy value's rules whose items pass, found by one search shared by its per-rule
    items (the others run their own); None before the first of them ran."""


_GROUPS: dict[str, Group] = {}


def clear_groups() -> None:
    """Forgets every group: group reports belong to one session's fixtures."""
    _GROUPS.clear()


def group_of(context: ItemContext) -> Group:
    """Returns the group of the item's fixture value, made on first use."""
    return _GROUPS.setdefault(context.key, Group())


def built(group: Group, build: Callable[[], Report]) -> Report:
    """Returns the group's report, built on first use (an Interrupted passes to run_item)."""
    if group.report is None:
        group.report = build()
    return group.report


def failing_prerequisite(code: str, report: Report, context: ItemContext,
                         depends: dict[str, tuple[str, ...]]
                         ) -> tuple[str, list[Finding]] | None:
    """Returns the failing prerequisite of ``code``'s item: its rule, and its findings; or None."""
    for needed in depends.get(code, ()):
        failing = [f for f in report if f.code == needed]
        if failing:
            return needed, failing
    return None


def failing_item(context: ItemContext, owner: str, finding: Finding, *,
                 first: bool = False) -> str:
    """Returns how a skip names the item it waits on: ``item NAME fails (CODE what was
    seen)``, NAME the item of rule ``owner`` in the group."""
    return (f"item {context.names.get(owner, owner)} fails{' first' if first else ''} "
            f"({finding.code} {finding.summary})")


def dependency(code: str, needed: str, failing: list[Finding], context: ItemContext) -> str:
    """Returns the skip reason of an item whose prerequisite ``needed`` fails."""
    return (f"{code}: not judged, it depends on the output's own contract: "
            f"{failing_item(context, needed, failing[0])}")


def skip_if_blocked(code: str, report: Report, context: ItemContext,
                    depends: dict[str, tuple[str, ...]]) -> None:
    """Skips the item of ``code`` when a prerequisite fails, naming the failing item."""
    blocked = failing_prerequisite(code, report, context, depends)
    if blocked is not None:
        needed, failing = blocked
        pytest.skip(dependency(code, needed, failing, context))


def raise_own(code: str, report: Report, context: ItemContext, subject: str, obj: Any,
              depends: dict[str, tuple[str, ...]]) -> None:
    """Skips when a prerequisite failed, else raises ContractViolation with ``code``'s findings."""
    skip_if_blocked(code, report, context, depends)
    if code == "AUX105":
        context.notes.extend(("auxcheck note", f.to_text()) for f in report.notes)
    raise_if([f for f in report if f.code == code], f"{code} on {subject}", obj)


# ---------------------------------------------------------------- stopped and unusable


def run_item(code: str, context: ItemContext, work: Callable[[], None]) -> None:
    """Runs the item of ``code``; when pytest stopped plugin code, in this item or an earlier one
    of the group, the item of that call's rule fails with it and the others are skipped.

    A hang ends once (pytest-timeout's one alarm): the group's other items never call
    the hanging code again, so they cannot hang where no alarm is left.
    """
    group = group_of(context)
    if group.unusable is not None:
        _unusable(code, group, context)
    if group.stopped is None:
        try:
            with plain_torch():
                work()
            return
        except Interrupted as stop:
            group.stopped = interrupted_finding(stop)
            # The item of the stopped call's rule reports it, unless it is not in this
            # group, not selected in this run, or already ran (it passed without meeting
            # the hang): then this item, the one the hang was met in, does.
            rule = group.stopped.code
            later = rule not in group.done and (
                context.selected is None or context.names.get(rule) in context.selected)
            group.reporter = rule if rule in context.names and (rule == code or later) else code
        finally:
            group.done.add(code)
    stopped, owner = group.stopped, group.reporter
    if owner == code:
        raise ContractViolation(Report(f"{code} stopped", [stopped])) from None
    pytest.skip(f"{code}: not judged, {failing_item(context, owner, stopped)}")


def _unusable(code: str, group: Group, context: ItemContext) -> None:
    """Fails the item that found the group's fixture value unusable; skips the others."""
    if group.unusable is None:
        return
    item, message = group.unusable
    if item == context.names.get(code, code):
        pytest.fail(message, pytrace=False)
    pytest.skip(f"{code}: not judged, item {item} fails: {message}")


def declared_pp(code: str, mark: tuple[tuple[Any, ...], dict[str, Any]] | None,
                context: ItemContext) -> bool | None:
    """Returns whether the fixture value crosses pipeline-parallel stages, as its mark
    ``auxcheck_pp(crosses)`` says (None: no mark, judged by what the value has).

    ``mark`` is the mark's (args, kwargs). A mark auxcheck cannot read fails the group's
    first item that reads it, naming the form it takes, and skips the rest.
    """
    if mark is None:
        return None
    args, kwargs = mark
    given = [*args, *kwargs.values()]
    if len(given) <= 1 and set(kwargs) <= {"crosses"} and all(type(v) is bool for v in given):
        return bool(given[0]) if given else True
    group = group_of(context)
    if group.unusable is None:
        shown = ", ".join([*map(describe, args), *(f"{k}={describe(v)}" for k, v in kwargs.items())])
        group.unusable = (context.names.get(code, code),
                          (f"the mark auxcheck_pp({shown}) on this fixture value cannot be read; "
                          "expected auxcheck_pp(True) (it crosses pipeline-parallel stages) or "
                          "auxcheck_pp(False) (it never does, so it is not PP-checked)"))
    _unusable(code, group, context)
    return None


def declared_size(code: str, value: Any, context: ItemContext) -> int | None:
    """Returns the ``auxcheck_batch_size`` fixture's value as a plain int (None when absent).

    A value auxcheck cannot use fails the group's first item that reads it, naming the
    fixture and the range, and skips the rest: one failure, no traceback.
    """
    from auxcheck._runtime.judging import declared_batch_size

    group = group_of(context)
    failed = fixture_failed(value)
    try:
        if failed is not None:
            raise InvalidArgument(f"the fixture auxcheck_batch_size raised "
                                  f"{kind_name(failed.error)}; expected it to return the "
                                  "number of requests your outputs are built for")
        return declared_batch_size(value, what="the fixture auxcheck_batch_size returned ")
    except InvalidArgument as exc:
        if group.unusable is None:
            group.unusable = (context.names.get(code, code), str(exc))
    _unusable(code, group, context)
    return None
