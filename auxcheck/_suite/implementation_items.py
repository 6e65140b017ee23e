"""The implementation items: the append/composite properties and the state machine, by name."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable
from typing import Any

import pytest

from auxcheck._core.errors import ContractViolation, InvalidArgument
from auxcheck._core.report import Finding, Report
from auxcheck._properties.implementations import Implementation
from auxcheck._properties.invariants import PropertyTest, property_specs, property_tests
from auxcheck._properties.shared_search import SharedSearch
from auxcheck._suite.groups import ItemContext, failing_item, group_of, run_item
from auxcheck._suite.options import AuxcheckOptions
from auxcheck._suite.session import (
    impl_fraction,
    implementation,
    share_of_examples,
    suite_settings,
)

__all__ = [
    "property_label",
    "property_names",
    "property_search",
    "run_impl_check",
    "run_properties",
    "wanted_properties",
]


# ---------------------------------------------------------------- properties


@functools.cache
def property_names() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Returns (name, rule codes) of every append/composite property, in order."""
    return tuple((p.name, p.codes) for p in property_tests(implementation("reference")))


def _properties(impl: Implementation, *, leaves: Any, options: AuxcheckOptions,
                fraction: int = 1, batch_size: int | None = None) -> list[PropertyTest]:
    """Returns the property tests under the run's settings with 1/``fraction`` of its examples."""
    chosen = suite_settings(options, your_outputs=leaves is not None)
    examples = share_of_examples(chosen, fraction)
    return list(property_tests(impl, leaves=leaves, profile=chosen, max_examples=examples,
                               batch_size=batch_size, speculative=options.speculative))


def property_search(impl: Implementation, *, leaves: Any, options: AuxcheckOptions,
                    wanted: Collection[str], fraction: int = 1,
                    batch_size: int | None = None) -> SharedSearch | None:
    """Returns one search for the properties ``wanted`` under the run's settings, with
    1/``fraction`` of its examples; None when the settings generate no example (then each
    property runs its explicit examples alone, or is skipped saying so)."""
    from hypothesis import Phase, settings

    chosen = suite_settings(options, your_outputs=leaves is not None)
    if Phase.generate not in chosen.phases:
        return None
    chosen = settings(chosen, max_examples=share_of_examples(chosen, fraction))
    specs = property_specs(impl, leaves=leaves, batch_size=batch_size,
                           speculative=options.speculative)
    return SharedSearch(specs, chosen, frozenset(wanted))


def run_properties(name: str, impl: Implementation, *, leaves: Any,
                   options: AuxcheckOptions, fraction: int = 1,
                   batch_size: int | None = None, search: SharedSearch | None = None) -> None:
    """Runs the property ``name`` (its verdict from ``search`` when given, the value's
    shared search); re-raises its violation without ignored codes."""
    if search is not None:
        test: Callable[[], None] = functools.partial(search.verdict, name)
        code = dict(property_names()).get(name, (name,))[0]
    else:
        chosen = [p for p in _properties(impl, leaves=leaves, options=options,
                                         fraction=fraction, batch_size=batch_size)
                  if p.name == name]
        if not chosen:
            raise InvalidArgument(f"no append/composite property named {name!r}")
        test, code = chosen[0].test, chosen[0].codes[0]
    try:
        _unless_no_examples(code, test, options)
    except ContractViolation as exc:
        kept = exc.report.without(options.ignore)
        if kept:
            violation = ContractViolation(kept)
            violation.__notes__ = list(getattr(exc, "__notes__", ()))  # type: ignore[attr-defined]
            raise violation from None


def wanted_properties(context: ItemContext, label: Callable[[str, tuple[str, ...]], str]
                      ) -> frozenset[str]:
    """Returns the properties whose items (``label``: an item's name, without its ``[...]``,
    from a property's name and codes) this run selected in the group; every property when
    the run says nothing."""
    everything = property_names()
    if context.selected is None:
        return frozenset(name for name, _ in everything)
    selected = {item.partition("[")[0] for item in context.selected}
    return frozenset(name for name, codes in everything if label(name, codes) in selected)


def property_label(name: str, codes: tuple[str, ...]) -> str:
    """Returns the name of an implementation item, without its ``[impl]``: ``AUX302-order``."""
    return f"{codes[0]}-{name.removeprefix('check_').replace('_', '-')}"


def _unless_no_examples(code: str, test: Callable[[], None], options: AuxcheckOptions) -> None:
    """Runs ``test``; skips the item of ``code`` when the profile runs none of its examples."""
    import unittest

    try:
        test()
    except unittest.SkipTest:
        pytest.skip(f"{code}: not judged, profile {options.profile!r} runs no generated "
                    "examples and this check has no explicit one")


def _foreign(exc: ContractViolation, codes: Iterable[str]) -> Finding | None:
    """Returns the first finding of a violation when none of its findings has one of ``codes``."""
    findings = list(exc.report)
    own = set(codes)
    return findings[0] if findings and not any(f.code in own for f in findings) else None


# ---------------------------------------------------------------- implementation items


def run_impl_check(name: str, *, options: AuxcheckOptions,
                   context: ItemContext | None = None) -> None:
    """Runs one implementation item: a property by name, or ``machine``.

    A property whose findings are all of another property's rule (an append that
    returns a non-output breaks every property's build) is skipped naming that item
    (``context.names``: the item of each rule): one finding per cause.
    """
    impl = implementation(options.impl)
    context = context or ItemContext("impl", {}, [])
    if name == "machine":
        run_item("machine", context, lambda: _run_machine(impl, options))
        return
    codes = dict(property_names()).get(name, ())
    group = group_of(context)

    def run() -> None:
        if group.properties is None:
            group.properties = property_search(
                impl, leaves=None, options=options, fraction=impl_fraction(options),
                wanted=wanted_properties(context, property_label))
        try:
            run_properties(name, impl, leaves=None, options=options,
                           fraction=impl_fraction(options), search=group.properties)
        except ContractViolation as exc:
            other = _foreign(exc, codes)
            if other is None or other.code not in context.names:
                raise
            pytest.skip(f"{codes[0]}: not judged, "
                        f"{failing_item(context, other.code, other, first=True)}")

    run_item(codes[0] if codes else name, context, run)


def _run_machine(impl: Implementation, options: AuxcheckOptions) -> None:
    """Runs the append -> copy -> consume state machine against ``impl``."""
    from auxcheck._properties.machine import run_machine

    chosen = suite_settings(options)
    examples = share_of_examples(chosen, impl_fraction(options))
    found: list[Report] = []
    _unless_no_examples("machine", lambda: found.append(run_machine(impl, profile=chosen,
                                                         max_examples=examples)), options)
    found[0].without(options.ignore).raise_for_findings()
