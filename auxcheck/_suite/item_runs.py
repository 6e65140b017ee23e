"""What the ``pytest --auxcheck`` items run; imported only when the flag is on.

Every check raises :class:`~auxcheck.errors.ContractViolation` carrying the findings
of its own rule code, so the item's failure names the code, what was seen, what was
expected and the fix. Device outputs run through SGLang's step loop
(:mod:`auxcheck._suite.device_items`), observers here, the implementation's properties
and state machine in :mod:`auxcheck._suite.implementation_items`. An item whose prerequisite (the
output's own contract) fails is skipped, naming the failing item; plugin code pytest
stopped (a timeout) fails one item of the group and skips the rest, never running again;
a fixture value auxcheck cannot use fails one item, naming it
(:mod:`auxcheck._suite.groups`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from auxcheck._core.errors import InvalidArgument, ReleaseError
from auxcheck._core.plugin_calls import attempt, kind_name
from auxcheck._core.report import Finding, Report, describe
from auxcheck._properties import strategies as aux
from auxcheck._suite.device_items import run_device_check
from auxcheck._suite.fixture_values import fixture_failed
from auxcheck._suite.groups import (
    OBSERVER_DEPENDS,
    ItemContext,
    built,
    clear_groups,
    declared_size,
    fixture_finding,
    group_of,
    raise_own,
    read_extras,
    run_item,
)
from auxcheck._suite.implementation_items import (
    property_label,
    property_names,
    run_impl_check,
)
from auxcheck._suite.options import AuxcheckOptions
from auxcheck._suite.session import describe_impl, impl_fraction, implementation, profile_text

__all__ = [
    "ItemContext",
    "describe_impl",
    "impl_fraction",
    "profile_text",
    "property_label",
    "property_names",
    "run_device_check",
    "run_impl_check",
    "run_import_scan",
    "run_observer_check",
    "validate_options",
]


# ---------------------------------------------------------------- options


def validate_options(options: AuxcheckOptions) -> None:
    """Raises pytest.UsageError naming the option when the profile or implementation is unusable."""
    implementation.cache_clear()  # a dotted module may differ from one session to the next
    clear_groups()  # group reports belong to one session's fixtures
    try:
        aux.resolve_profile(options.profile)
    except InvalidArgument:
        raise pytest.UsageError(
            f"--auxcheck-profile: unknown Hypothesis settings profile {options.profile!r}; "
            f"expected one of {', '.join(aux.PROFILES)} or a profile your conftest registers "
            "with hypothesis.settings.register_profile"
        ) from None
    try:
        implementation(options.impl)
    except (InvalidArgument, ReleaseError) as exc:  # a bad module, or a release not fetched
        raise pytest.UsageError(f"--auxcheck-impl: {exc}") from None


# ---------------------------------------------------------------- observers


def observer_of(value: Any, hooks: Iterable[str]) -> Any:
    """Returns the observer a fixture value gives: itself, or what a factory of it returns."""
    from auxcheck._core.plugin_calls import MISSING, lookup

    if any(lookup(value, hook).value is not MISSING for hook in hooks) \
            and not issubclass(type(value), type):
        return value
    return value() if callable(value) else value


def _observer_report(kind: str, value: Any, hooks: tuple[str, ...],
                     check: Callable[[Any], Report]) -> Report:
    """Returns ``check(observer)``, or AUX102 when the fixture or its factory raised."""
    from auxcheck._core.plugin_calls import announce

    subject = f"{kind} observer {describe(value)}"
    failed = fixture_failed(value)
    if failed is not None:
        return Report(subject, [fixture_finding("AUX102", failed, "expected the fixture to "
                                                "return an observer")])
    announce("AUX102", "making the observer from the fixture value {}", value)
    made = attempt(observer_of, value, hooks)
    if made.error is None:
        return check(made.value)
    report = Report(subject)
    report.add(Finding.of("AUX102", f"making the observer from the fixture value raised "
                          f"{kind_name(made.error)}", "expected an observer, or a factory "
                          "returning one when called with no argument", value,
                          detail=made.detail))
    return report


_QUIET_CODES = frozenset({"AUX102", "AUX113", "AUX115"})
"""The observer items judged even when the observer published nothing: its hooks."""


def run_observer_check(key: str, kind: str, value: Any, *, context: ItemContext,
                       static_buffers: Any = (), batch_size: Any = None,
                       speculative: bool = False) -> None:
    """Runs one observer item: the observer through SGLang's step loop, findings of ``key``.

    When the observer published nothing in all the steps, the items judging its
    outputs are skipped saying so: nothing was judged, so nothing passed.
    ``speculative`` gives steps that commit several tokens to a request. ``value``,
    ``static_buffers`` and ``batch_size`` are the user's fixture values as the fixtures
    returned them (hence ``Any``): they are judged here.
    """
    size = declared_size(key, batch_size, context)
    run_item(key, context, lambda: _observer_item(key, kind, value, context, static_buffers,
                                                  size, speculative))


def _observer_item(key: str, kind: str, value: Any, context: ItemContext, static_buffers: Any,
                   batch_size: int | None, speculative: bool) -> None:
    from auxcheck._runtime.judging import catch_escapes
    from auxcheck._runtime.observer_reports import forward_report, sampling_report

    group = group_of(context)
    if group.extras is None:
        group.extras = read_extras(static_buffers)
    extras = group.extras
    published: list[int] = []

    def run(observer: Any) -> Report:
        subject = f"{kind} observer {describe(observer)}"
        report = catch_escapes("AUX102", subject, observer, lambda: (
            forward_report if kind == "forward" else sampling_report)(
                observer, batch_size=batch_size, static=extras.static,
                found=extras.findings, published=published, speculative=speculative))
        if not report and not published:
            group.silent = (f"not judged, the observer published no device output in any of "
                            f"the steps it ran ({', '.join(_HOOKS[kind])} as SGLang calls them)")
        return report

    report = built(group, lambda: _observer_report(kind, value, _HOOKS[kind], run))
    if group.silent is not None and key not in _QUIET_CODES:
        pytest.skip(f"{key}: {group.silent}")
    raise_own(key, report, context, f"{kind} observer", value, OBSERVER_DEPENDS)


_HOOKS = {"forward": ("after_forward",),
          "sampling": ("is_active", "before_grammar", "after_sample")}


# ---------------------------------------------------------------- import scan


def run_import_scan(options: AuxcheckOptions) -> None:
    """Raises ContractViolation listing every AUX501/AUX502/AUX504 finding under the scan paths."""
    from auxcheck._core.config import project_sglang
    from auxcheck.migrate.moves import find_pyproject, project_moves
    from auxcheck.migrate.scan import scan_paths

    # The moves of the project the scan starts in, and the releases it supports, as
    # `auxcheck migrate --check` reads them.
    start = options.paths[0] if options.paths else "."
    pyproject = find_pyproject(start)
    releases = project_sglang(pyproject.parent) if pyproject is not None else []
    report = scan_paths([str(p) for p in options.paths], moves=project_moves(pyproject),
                        releases=releases).without(options.ignore)
    report.raise_for_findings()
