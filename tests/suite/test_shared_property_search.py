"""Tests for the search the properties of one value share: each example drawn once, checked by
every property wanted, and a failing property's own search drawing the same examples."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from auxcheck._properties.invariants import PropertySpec, property_specs
from auxcheck._properties.shared_search import SharedSearch
from auxcheck._suite.session import seeded
from auxcheck.errors import ContractViolation
from auxcheck.properties import Implementation, load_implementation
from auxcheck.protocols import CompositeDeviceAuxiliaryOutput, CompositeHostAuxiliaryOutput

REFERENCE = load_implementation("reference")
FEW = settings(max_examples=15, deadline=None, database=None, derandomize=False)
"""Seeded draws (the CI profile derandomizes: its draws would not come from the seed)."""
NAMES = frozenset(spec.name for spec in property_specs(REFERENCE))


def _children(output: Any) -> tuple[Any, ...]:
    return output.outputs if isinstance(output, CompositeDeviceAuxiliaryOutput) else (output,)


def _reversed_from_three(current: Any, output: Any) -> Any:
    """Appends in order up to two children, and reverses them from three on (AUX302)."""
    if current is None or output is None:
        return output if current is None else current
    children = (*_children(current), *_children(output))
    return CompositeDeviceAuxiliaryOutput(children[::-1] if len(children) >= 3 else children)


SOMETIMES_REVERSED = Implementation("reversed-from-three", _reversed_from_three,
                                    CompositeDeviceAuxiliaryOutput, CompositeHostAuxiliaryOutput)


def recorded(specs: tuple[PropertySpec, ...], seen: dict[str, list[str]]) -> list[PropertySpec]:
    """Returns ``specs`` whose checks first record the shape of what they are given."""
    def recording(spec: PropertySpec) -> PropertySpec:
        def check(**args: Any) -> None:
            seen.setdefault(spec.name, []).append(repr(sorted(args.items())))
            spec.function(**args)

        return dataclasses.replace(spec, function=check)

    return [recording(spec) for spec in specs]


def test_every_property_is_checked_on_every_example_of_one_search() -> None:
    """Each wanted property sees as many examples as the profile runs, plus its explicit one."""
    seen: dict[str, list[str]] = {}
    search = SharedSearch(recorded(property_specs(REFERENCE), seen), FEW, NAMES)
    with seeded(1234):
        for name in sorted(NAMES):
            search.verdict(name)
    explicit = {"check_flattening", "check_order", "check_copy_once", "check_frozen"}
    assert {name: len(calls) for name, calls in seen.items()} == {
        name: 15 + (name in explicit) for name in NAMES}


DRAWS = [pytest.param(FEW, 1234, id="seeded"),
         pytest.param(settings(FEW, derandomize=True), None, id="derandomized")]


@pytest.mark.parametrize(("chosen", "seed"), DRAWS)
@pytest.mark.parametrize("name", ["check_order", "check_copy_once", "check_none_identity"])
def test_a_propertys_own_search_draws_the_examples_the_shared_search_drew(
        name: str, chosen: settings, seed: int | None) -> None:
    """Run alone, a property is given exactly what it was given beside the others, from a
    seed or under a derandomized profile."""
    runs = []
    for wanted in (NAMES, frozenset({name})):
        seen: dict[str, list[str]] = {}
        search = SharedSearch(recorded(property_specs(REFERENCE), seen), chosen, wanted)
        with seeded(seed):
            search.verdict(name)
        runs.append(seen[name])
    assert runs[0] == runs[1] != []


@pytest.mark.slow
def test_only_the_broken_property_fails_and_its_own_search_shows_the_example() -> None:
    """An append that breaks order from three children on fails the properties that judge
    order, each with AUX302 and a shrunk example; the ones that cannot see it pass."""
    search = SharedSearch(property_specs(SOMETIMES_REVERSED), FEW, NAMES)
    failed = {}
    with seeded(1234):
        for name in sorted(NAMES):
            try:
                search.verdict(name)
            except ContractViolation as exc:
                failed[name] = exc
    assert set(failed) == {"check_order", "check_associativity", "check_copy_once",
                           "check_broadcast"}
    for name, exc in failed.items():
        assert exc.report.codes[0] == "AUX302"
        assert any(note.startswith(("Falsifying example", "Failing test case"))
                   and f"{name}(" in note for note in exc.__notes__), exc.__notes__


def test_a_failure_its_own_search_does_not_find_again_is_reported_saying_so() -> None:
    """A check that fails only after another property's check ran still fails its item, and
    the failure says why running it alone passes."""
    ran: list[int] = []
    numbers = st.integers(0, 10)

    def first(number: int) -> None:
        ran.append(number)

    def second(number: int) -> None:
        if ran:
            ran.clear()
            from auxcheck._core.report import Finding, Report
            raise ContractViolation(Report("AUX302 second", [Finding.of(
                "AUX302", "seen after the first check", "expected nothing", None)]))

    specs = [PropertySpec("check_first", ("AUX301",), first, {"number": numbers}),
             PropertySpec("check_second", ("AUX302",), second, {"number": numbers})]
    search = SharedSearch(specs, FEW, {"check_first", "check_second"})
    with seeded(1234):
        search.verdict("check_first")
        with pytest.raises(ContractViolation) as raised:
            search.verdict("check_second")
    assert raised.value.report.codes == ["AUX302"]
    assert raised.value.__notes__[0].startswith(
        "check_second failed in the search shared with this value's other properties, and "
        "passed its own search of the same examples")
