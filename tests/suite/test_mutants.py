"""The mutation gate: every broken append/composite implementation is killed with its rule code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from auxcheck.errors import ContractViolation
from auxcheck.machine import run_machine
from auxcheck.properties import Implementation, property_tests, run_properties
from auxcheck.protocols import CompositeDeviceAuxiliaryOutput as RefDevice
from auxcheck.protocols import CompositeHostAuxiliaryOutput as RefHost

MAX_EXAMPLES = 40


def _kids(output: Any, composite: type = RefDevice) -> tuple[Any, ...]:
    return tuple(output.outputs) if isinstance(output, composite) else (output,)


def _append_with(join: Callable[[tuple[Any, ...], tuple[Any, ...]], Any]) -> Callable[..., Any]:
    """Returns an append with correct None handling that joins the operands' children with ``join``."""
    def append(current: Any, output: Any) -> Any:
        if output is None:
            return current
        if current is None:
            return output
        return join(_kids(current), _kids(output))

    return append


def _impl(name: str, append: Callable[..., Any], device: type = RefDevice,
          host: type = RefHost) -> Implementation:
    return Implementation(name, append, device, host)


def nesting(current: tuple[Any, ...], output: tuple[Any, ...]) -> Any:
    return RefDevice((RefDevice(current) if len(current) > 1 else current[0],) + output)


def drop_last(current: tuple[Any, ...], output: tuple[Any, ...]) -> Any:
    children = current + output
    return RefDevice(children[:-1] if len(children) > 2 else children)


def dedupe(current: tuple[Any, ...], output: tuple[Any, ...]) -> Any:
    return RefDevice(tuple(dict.fromkeys(current + output)))


def dedupe_by_identity(current: tuple[Any, ...], output: tuple[Any, ...]) -> Any:
    kept: list[Any] = []
    for child in current + output:
        if not any(child is seen for seen in kept):
            kept.append(child)
    return RefDevice(tuple(kept))


def nest_two_leaves(current: tuple[Any, ...], output: tuple[Any, ...]) -> Any:
    if len(current) == len(output) == 1:  # only a leaf appended to a leaf
        return RefDevice((RefDevice(current), *output))
    return RefDevice(current + output)


def flatten_left_only(current: Any, output: Any) -> Any:
    if output is None:
        return current
    if current is None:
        return output
    return RefDevice(_kids(current) + (output,))


def none_left_wraps(current: Any, output: Any) -> Any:
    if output is None:
        return current
    if current is None:
        return RefDevice((output,))
    return RefDevice(_kids(current) + _kids(output))


def none_right_drops(current: Any, output: Any) -> Any:
    if output is None:
        return None
    if current is None:
        return output
    return RefDevice(_kids(current) + _kids(output))


@dataclass(frozen=True)
class TwiceHost:
    outputs: tuple[Any, ...]

    def consume(self, batch: Any, commits: Any) -> None:
        for output in self.outputs:
            output.consume(batch, commits)


@dataclass(frozen=True)
class CopyFirstTwice:
    outputs: tuple[Any, ...]

    def copy_to_host(self, copy_tensor: Callable[[Any], Any]) -> TwiceHost:
        self.outputs[0].copy_to_host(copy_tensor)
        return TwiceHost(tuple(o.copy_to_host(copy_tensor) for o in self.outputs))


@dataclass(frozen=True)
class LazyHost:
    outputs: tuple[Any, ...]
    copy_tensor: Callable[[Any], Any]

    def consume(self, batch: Any, commits: Any) -> None:
        for output in self.outputs:
            output.copy_to_host(self.copy_tensor).consume(batch, commits)


@dataclass(frozen=True)
class LazyDevice:
    outputs: tuple[Any, ...]

    def copy_to_host(self, copy_tensor: Callable[[Any], Any]) -> LazyHost:
        return LazyHost(self.outputs, copy_tensor)


@dataclass(frozen=True)
class CopiedCommitsHost:
    outputs: tuple[Any, ...]

    def consume(self, batch: Any, commits: Sequence[Any]) -> None:
        for index, output in enumerate(self.outputs):
            output.consume(batch, commits if index == 0 else list(commits))


@dataclass(frozen=True)
class CopiedCommitsDevice:
    outputs: tuple[Any, ...]

    def copy_to_host(self, copy_tensor: Callable[[Any], Any]) -> CopiedCommitsHost:
        return CopiedCommitsHost(tuple(o.copy_to_host(copy_tensor) for o in self.outputs))


@dataclass(frozen=True)
class ReversedHost:
    outputs: tuple[Any, ...]

    def consume(self, batch: Any, commits: Any) -> None:
        for output in reversed(self.outputs):
            output.consume(batch, commits)


@dataclass(frozen=True)
class ReversedConsumeDevice:
    outputs: tuple[Any, ...]

    def copy_to_host(self, copy_tensor: Callable[[Any], Any]) -> ReversedHost:
        return ReversedHost(tuple(o.copy_to_host(copy_tensor) for o in self.outputs))


@dataclass
class MutableHost:
    outputs: tuple[Any, ...]

    def consume(self, batch: Any, commits: Any) -> None:
        for output in self.outputs:
            output.consume(batch, commits)


@dataclass
class MutableDevice:
    outputs: tuple[Any, ...]

    def copy_to_host(self, copy_tensor: Callable[[Any], Any]) -> MutableHost:
        return MutableHost(tuple(o.copy_to_host(copy_tensor) for o in self.outputs))


def _with_device(device: type, host: type, name: str) -> Implementation:
    def join(current: tuple[Any, ...], output: tuple[Any, ...]) -> Any:
        return device(current + output)

    def append(current: Any, output: Any) -> Any:
        if output is None:
            return current
        if current is None:
            return output
        return join(_kids(current, device), _kids(output, device))

    return _impl(name, append, device, host)


MUTANTS: list[tuple[Implementation, str]] = [
    (_impl("nesting", _append_with(nesting)), "AUX301"),
    (_impl("reversed-order", _append_with(lambda c, o: RefDevice(o + c))), "AUX302"),
    (_impl("drops-a-child", _append_with(drop_last)), "AUX301"),
    (_with_device(CopyFirstTwice, TwiceHost, "copies-a-child-twice"), "AUX304"),
    (_with_device(LazyDevice, LazyHost, "copies-at-consume"), "AUX304"),
    (_with_device(CopiedCommitsDevice, CopiedCommitsHost, "copies-commits"), "AUX305"),
    (_with_device(MutableDevice, MutableHost, "mutable-composites"), "AUX306"),
    (_impl("none-left-wraps", none_left_wraps), "AUX303"),
    (_impl("none-right-drops", none_right_drops), "AUX303"),
    (_impl("flattens-left-only", flatten_left_only), "AUX301"),
    (_impl("dedupes-equal-children", _append_with(dedupe)), "AUX301"),
    (_with_device(ReversedConsumeDevice, ReversedHost, "consumes-in-reverse"), "AUX302"),
    (_impl("dedupes-by-identity", _append_with(dedupe_by_identity)), "AUX301"),
    (_impl("nests-two-leaves", _append_with(nest_two_leaves)), "AUX301"),
    (_impl("returns-a-string", _append_with(lambda c, o: "composite")), "AUX301"),
    (_impl("returns-a-pair", _append_with(lambda c, o: (c, o))), "AUX301"),
]


def _first_failure(impl: Implementation, code: str) -> ContractViolation | None:
    """Returns the first failure naming ``code`` among the properties that can report it."""
    for test in property_tests(impl, max_examples=MAX_EXAMPLES):
        if code not in test.codes:
            continue
        try:
            test.test()
        except ContractViolation as exc:
            if code in exc.report.codes:
                return exc
    return None


@pytest.mark.parametrize(("impl", "code"), MUTANTS, ids=[impl.name for impl, _ in MUTANTS])
def test_every_mutant_is_killed_by_the_properties_with_its_rule_code(
    impl: Implementation, code: str
) -> None:
    """A property that can report the mutation's rule code fails on the mutant, naming it first."""
    failure = _first_failure(impl, code)
    assert failure is not None, f"no property reporting {code} failed on {impl.name}"
    assert failure.report.codes[0] == code, failure.report.to_text()
    assert str(failure).startswith(code), str(failure)


@pytest.mark.slow
@pytest.mark.parametrize(("impl", "code"), MUTANTS, ids=[impl.name for impl, _ in MUTANTS])
def test_every_mutant_is_killed_by_the_search_the_properties_share_with_its_rule_code(
    impl: Implementation, code: str
) -> None:
    """One search for every property, as ``pytest --auxcheck`` runs them, fails a property
    that can report the mutation's rule code, naming it first."""
    from hypothesis import settings

    from auxcheck._properties.invariants import property_specs
    from auxcheck._properties.shared_search import SharedSearch

    specs = property_specs(impl)
    search = SharedSearch(specs, settings(max_examples=MAX_EXAMPLES, deadline=None,
                                          database=None), {spec.name for spec in specs})
    failures = []
    for spec in specs:
        try:
            search.verdict(spec.name)
        except ContractViolation as exc:
            failures.append(exc)
    assert any(exc.report.codes[0] == code and str(exc).startswith(code)
               for exc in failures), [exc.report.to_text() for exc in failures]


MACHINE_KILLS = [(impl, code) for impl, code in MUTANTS
                 if impl.name in {"nesting", "copies-at-consume", "copies-commits",
                                  "mutable-composites", "none-left-wraps", "consumes-in-reverse",
                                  "dedupes-by-identity", "returns-a-string"}]


@pytest.mark.slow
@pytest.mark.parametrize(("impl", "code"), MACHINE_KILLS,
                         ids=[impl.name for impl, _ in MACHINE_KILLS])
def test_the_machine_kills_lifecycle_mutants_with_a_short_step_list(
    impl: Implementation, code: str
) -> None:
    """The state machine alone kills the mutant, names the code, and shows the steps."""
    report = run_machine(impl, max_examples=MAX_EXAMPLES)
    assert report.codes[:1] == [code], report.to_text()
    assert "state." in (report.findings[0].detail or "")


def test_a_lazy_copy_fails_at_copy_to_host_with_a_short_step_list() -> None:
    """Copying at consume time is AUX304, shrunk to a few steps ending in copy_to_host."""
    lazy = next(impl for impl, _ in MUTANTS if impl.name == "copies-at-consume")
    report = run_machine(lazy, max_examples=30)
    assert report.codes == ["AUX304"]
    detail = report.findings[0].detail or ""
    steps = [line for line in detail.splitlines() if line.startswith("state.")]
    assert "state.copy_to_host()" in steps and len(steps) <= 8, detail
    assert report.findings[0].message.startswith("one composite copy_to_host copied children")


@pytest.mark.parametrize("name", ["returns-a-string", "returns-a-pair"])
def test_an_append_returning_a_non_output_is_a_finding_not_a_crash(name: str) -> None:
    """run_properties and run_machine report AUX301 where the composite would have been copied."""
    impl = next(impl for impl, _ in MUTANTS if impl.name == name)
    report = run_properties(impl, max_examples=10)
    assert "AUX301" in report.codes
    assert any("not a device output" in f.message for f in report)
    assert run_machine(impl, max_examples=10).codes == ["AUX301"]


def test_a_child_appended_twice_is_copied_and_consumed_twice_on_the_reference() -> None:
    """append(a, a) holds a twice; its copy copies a twice and consumes both hosts once each."""
    from auxcheck._runtime.recording import RecordingDeviceOutput
    from auxcheck.properties import REFERENCE, broadcast_findings
    from auxcheck.strategies import FakeBatch

    leaf = RecordingDeviceOutput("a")
    both = REFERENCE.append(leaf, leaf)
    assert tuple(both.outputs) == (leaf, leaf)
    assert broadcast_findings(REFERENCE, both, [leaf, leaf], FakeBatch(), []) == []
    assert leaf.copy_count == 2
    assert [len(record.host.consumed) for record in leaf.copies] == [1, 1]


def test_the_gate_covers_at_least_ten_mutants_and_every_append_rule() -> None:
    """The table holds ten or more mutants and covers AUX301 through AUX306."""
    assert len(MUTANTS) >= 10
    assert {code for _, code in MUTANTS} >= {f"AUX30{n}" for n in range(1, 7)}
