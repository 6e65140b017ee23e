"""The checks that ``pytest --auxcheck`` items run; imported only when the flag is on.

Every check raises :class:`~auxcheck.errors.ContractViolation` carrying the findings
of its own rule code, so the item's failure names the code, what was seen, what was
expected and the fix. A device output fixture value may be an instance, a
zero-argument factory, a factory taking the batch, or a Hypothesis strategy; every
output runs through SGLang's step loop (:mod:`auxcheck._loop`), once per group for
instances and factories (its items share the report), per drawn example for
strategies, which run under the chosen settings profile and carry the shrunk example
in the exception's notes. An item whose prerequisite (the output's own contract)
fails is skipped, naming the failing item.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from auxcheck import strategies as aux
from auxcheck._calls import Outcome, kind_name, type_name
from auxcheck._options import AuxcheckOptions
from auxcheck.errors import ContractViolation, InvalidArgument
from auxcheck.properties import Implementation, PropertyTest, load_implementation, property_tests
from auxcheck.releases import ReleaseError
from auxcheck.report import Finding, Report, describe

__all__ = [
    "describe_impl",
    "failure_text",
    "property_names",
    "run_device_check",
    "run_impl_check",
    "run_import_scan",
    "run_observer_check",
    "validate_options",
]

_PP_CODES = frozenset({"AUX401", "AUX402", "AUX403"})


# ---------------------------------------------------------------- options


def validate_options(options: AuxcheckOptions) -> None:
    """Raises pytest.UsageError naming the option when the profile or implementation is unusable."""
    implementation.cache_clear()  # a dotted module may differ from one session to the next
    _REPORTS.clear()  # group reports belong to one session's fixtures
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


@functools.cache
def implementation(spec: str) -> Implementation:
    """Returns the implementation ``--auxcheck-impl`` names (loaded once per process).

    ``sglang==X`` is read from that release's wheel, fetched into the user's cache once.
    """
    return load_implementation(spec)


def describe_impl(spec: str, *, short: bool = False) -> str:
    """Returns the implementation's name, with ``(auto)`` when it was chosen automatically.

    ``sglang==0.5.23`` reads as itself: the release whose wheel the contract is proved on.
    """
    name = implementation(spec).name
    return name if short or spec != "auto" else f"{name} (auto)"


# ---------------------------------------------------------------- failures


def failure_text(exc: ContractViolation) -> str:
    """Returns a violation as an assertion message: per finding, code, seen, expected, fix."""
    blocks = [_finding_text(finding) for finding in exc.report]
    notes = [str(note) for note in getattr(exc, "__notes__", ())]
    return "\n\n".join(blocks + (["\n".join(notes)] if notes else []))


def _finding_text(finding: Finding) -> str:
    seen, sep, expected = finding.message.partition("; expected")
    lines = [f"{finding.code} {finding.title}"]
    if finding.location:
        lines.append(f"  at:       {finding.location}")
    lines.append(f"  seen:     {seen}")
    if sep:
        lines.append(f"  expected:{expected}")
    lines.append(f"  fix:      {finding.hint}")
    if finding.obj is not None:
        lines.append(f"  object:   {' '.join(describe(finding.obj).split())}")
    if finding.detail:
        lines += ["  " + line for line in finding.detail.splitlines()]
    return "\n".join(lines)


def _raise_if(findings: Iterable[Finding], subject: str, output: Any) -> None:
    """Raises ContractViolation carrying ``findings``, if any, about ``subject`` ``output``.

    The output is described only on failure: a tensor's repr costs milliseconds, and
    passing examples run by the hundred.
    """
    kept = list(findings)
    if kept:
        Report(f"{subject} {describe(output)}", kept).raise_for_findings()


# ---------------------------------------------------------------- fixture values


@dataclass(frozen=True, slots=True)
class Source:
    """A device-output fixture value: an instance, a factory (of none or of the batch), a strategy."""

    kind: str
    value: Any

    def strategy(self, batch_size: int | None = None) -> st.SearchStrategy[Any]:
        """Returns a strategy of fresh outputs (one value for an instance)."""
        if self.kind == "strategy":
            return self.value  # type: ignore[no-any-return]
        if self.kind == "factory":
            return st.builds(self.value)
        if self.kind == "batch-factory":
            from auxcheck._loop import DEFAULT_BATCH_SIZE
            from auxcheck._scheduler import SchedulerModel

            size = batch_size or DEFAULT_BATCH_SIZE
            return st.integers(0, 2**16).map(
                lambda seed: self.value(SchedulerModel(seed=seed).batch(size)))
        value = self.value

        def the_fixture_instance() -> Any:
            return value

        # Never st.just(value): Hypothesis reprs its strategies, running the plugin's __repr__.
        return st.builds(the_fixture_instance)


def as_source(value: Any) -> Source:
    """Returns how a fixture value yields device outputs."""
    from auxcheck._loop import source_of

    if issubclass(type(value), st.SearchStrategy):  # never isinstance: it reads __class__
        return Source("strategy", value)
    found = source_of(value)
    return Source(found.kind, found.value)


# ---------------------------------------------------------------- dependencies

_COPY = ("AUX101", "AUX102", "AUX103")
_OWN = (*_COPY, "AUX104", "AUX105", "AUX201", "AUX202", "AUX203", "AUX204")
DEPENDS: dict[str, tuple[str, ...]] = {
    "AUX102": ("AUX101",), "AUX103": ("AUX101", "AUX102"),
    "AUX104": _COPY, "AUX105": _COPY, "AUX112": _COPY, "AUX201": _COPY,
    "AUX202": (*_COPY, "AUX201"), "AUX203": (*_COPY, "AUX201"), "AUX204": (*_COPY, "AUX201"),
    **{code: _OWN for code in ("AUX301", "AUX302", "AUX303", "AUX304", "AUX305", "AUX306")},
    **{code: _COPY for code in ("AUX401", "AUX402", "AUX403")},
}
"""For each item's code, the codes of the output's own contract it cannot be judged without."""

_OBSERVER_DEPENDS = {code: ("AUX102", *DEPENDS.get(code, ())) for code in
                     ("AUX101", "AUX103", "AUX104", "AUX105", "AUX110", "AUX111", "AUX112",
                      "AUX201", "AUX202", "AUX203", "AUX204")}


@dataclass(frozen=True, slots=True)
class ItemContext:
    """Where an item sits: its group's cache key, and the item name of each code in the group."""

    key: str
    names: dict[str, str]
    notes: list[Any]


def _blocked(code: str, report: Report, context: ItemContext,
             depends: dict[str, tuple[str, ...]]) -> str | None:
    """Returns why the item of ``code`` is skipped: the failing item it depends on, or None."""
    for needed in depends.get(code, ()):
        failing = [f for f in report if f.code == needed]
        if failing:
            name = context.names.get(needed, needed)
            seen = failing[0].message.partition("; ")[0]
            return (f"{code}: not judged, it depends on the output's own contract: item {name} "
                    f"fails ({needed} {seen})")
    return None


_REPORTS: dict[str, Report] = {}


def _cached(key: str, build: Callable[[], Report]) -> Report:
    """Returns the group's report, built once per process: every item of a group reads it."""
    if key not in _REPORTS:
        _REPORTS[key] = build()
    return _REPORTS[key]


def _own(code: str, report: Report, context: ItemContext, subject: str, obj: Any,
         depends: dict[str, tuple[str, ...]]) -> None:
    """Skips when a prerequisite failed, else raises ContractViolation with ``code``'s findings."""
    reason = _blocked(code, report, context, depends)
    if reason is not None:
        pytest.skip(reason)
    if code == "AUX105":
        context.notes.extend(("auxcheck note", f.to_text()) for f in report.notes)
    _raise_if([f for f in report if f.code == code], f"{code} on {subject}", obj)


# ---------------------------------------------------------------- device checks


def run_device_check(key: str, value: Any, *, options: AuxcheckOptions, context: ItemContext,
                     static_buffers: Any = (), pp_observer: Any = None,
                     batch_size: int | None = None) -> None:
    """Runs one device-output item: raises ContractViolation with the findings of its code.

    Items whose prerequisite (the output's own ``copy_to_host`` / ``consume``) fails are
    skipped with a reason naming the failing item: one finding per cause.
    """
    source = as_source(value)
    if key.startswith("AUX3"):
        _run_device_properties(key, source, options, context, batch_size, static_buffers)
        return
    if source.kind == "strategy":
        _run_strategy_check(key, source, options, context, static_buffers, pp_observer,
                            batch_size)
        return
    if key in _PP_CODES and pp_observer is None and not _has_pp(source, batch_size):
        pytest.skip(f"{key}: not a pipeline-parallel output (no to_pp_tensors, and no "
                    "auxcheck_pp_observer fixture)")
    report = _cached(context.key, lambda: _source_report(source, static_buffers, pp_observer,
                                                        batch_size))
    _own(key, report, context, "device output", value, DEPENDS)


def _one_output(source: Source, batch_size: int | None) -> Any:
    """Returns one output of a non-strategy source (None when its factory raises)."""
    from auxcheck._loop import OutputSource, sample_output

    return sample_output(OutputSource(source.kind, source.value),  # type: ignore[arg-type]
                         batch_size)


def _has_pp(source: Source, batch_size: int | None) -> bool:
    from auxcheck._calls import MISSING, lookup

    return lookup(_one_output(source, batch_size), "to_pp_tensors").value is not MISSING


def _source_report(source: Source, static_buffers: Any, pp_observer: Any,
                   batch_size: int | None) -> Report:
    """Returns every finding of a non-strategy source: the step loop, then PP transport."""
    from auxcheck._calls import guard
    from auxcheck._loop import OutputSource, check_source
    from auxcheck.aliasing import as_registry
    from auxcheck.validate import _never_raising, _pp_findings

    made = guard(as_registry, static_buffers)
    static = made.value if made.error is None else as_registry(None)

    def check() -> Report:
        report = check_source(OutputSource(source.kind, source.value),  # type: ignore[arg-type]
                              batch_size=batch_size, static=static)
        if made.error is not None:
            report.add(Finding.of("AUX110", "reading the auxcheck_static_buffers fixture value "
                                  f"raised {_short(made.error)}", "expected a mapping of "
                                  "names to tensors, tensors, or None", static_buffers,
                                  detail=made.detail))
        output = _one_output(source, batch_size)
        if output is not None:
            report.extend(_pp_findings(output, pp_observer))
        return report

    return _never_raising("AUX103", f"device output {describe(source.value)}", source.value,
                          check)


def _run_strategy_check(key: str, source: Source, options: AuxcheckOptions,
                        context: ItemContext, static_buffers: Any, pp_observer: Any,
                        batch_size: int | None) -> None:
    """Runs ``key`` under Hypothesis: each drawn output is one published step."""
    from hypothesis import assume
    from hypothesis.errors import Unsatisfiable

    skipped: list[str] = []

    def judge(report: Report) -> None:  # a draw that raised: runs after Hypothesis stopped
        reason = _blocked(key, report, context, DEPENDS)
        if reason is not None:
            pytest.skip(reason)
        _raise_if([f for f in report if f.code == key], f"{key} on device output", None)

    def check(output: Any, data: Any) -> None:
        if key in _PP_CODES and pp_observer is None and not _has_pp(Source("instance", output),
                                                                    batch_size):
            skipped.append(f"{key}: not a pipeline-parallel output (no to_pp_tensors, and no "
                           "auxcheck_pp_observer fixture)")
            assume(False)
        report = _source_report(Source("instance", output), static_buffers, pp_observer,
                                batch_size)
        reason = _blocked(key, report, context, DEPENDS)
        if reason is not None:
            skipped.append(reason)
            assume(False)
        _raise_if([f for f in report if f.code == key], f"{key} on device output", output)

    try:
        _for_each_output(source, check, light(aux.resolve_profile(options.profile)), judge)
    except Unsatisfiable:
        pass
    if skipped:
        pytest.skip(skipped[0])


def _short(obj: Any) -> str:
    """Returns the short name of ``obj``'s type, read without running its code."""
    return type_name(obj).rpartition(".")[2]


def _draw_report(error: BaseException) -> Report:
    """Returns the AUX103 finding of a strategy whose drawing raised (the factory rule of the loop)."""
    report = Report("device output strategy")
    report.add(Finding.of("AUX103", f"drawing a device output from the fixture's strategy "
                          f"raised {_short(error)}", "expected the strategy to build device "
                          "outputs (its constructors and map functions must not raise)", None,
                          detail=Outcome(error=error).detail))
    return report


def _for_each_output(source: Source, check: Callable[[Any, Any], None],
                     chosen: settings, drawn_check: Callable[[Report], None]) -> None:
    """Runs ``check(output, data)`` under Hypothesis for every drawn output.

    The user's strategy runs inside Hypothesis's draw, where a SystemExit is shrunk and
    re-raised as itself and a bare BaseException stops it: what the run lets out (the
    checks never raise for a plugin) goes to ``drawn_check`` as the AUX103 report of
    the draw, with Hypothesis's notes on the falsifying example.
    """
    from auxcheck._calls import guard
    from auxcheck.strategies import _hypothesis_control

    @settings(chosen, suppress_health_check=list(HealthCheck),
              phases=[p for p in chosen.phases if p is not Phase.explain])
    @given(output=source.strategy(), data=st.data())
    def auxcheck_example(output: Any, data: Any) -> None:
        check(output, data)

    ran = guard(auxcheck_example)
    error = ran.error
    if error is None:
        return
    if issubclass(type(error), ContractViolation) or _hypothesis_control(error) \
            or _short(error).startswith("Flaky"):
        raise error
    report = _draw_report(error)
    notes = guard(lambda: [str(note) for note in getattr(error, "__notes__", ())][:20]).value
    if notes:  # Hypothesis's falsifying example, when it shrank the draw
        report.findings[0] = replace(report.findings[0], detail="\n".join(
            filter(None, [report.findings[0].detail, *notes])))
    drawn_check(report)


def light(chosen: settings, *, fraction: int = 5) -> settings:
    """Returns ``chosen`` with 1/``fraction`` of its examples (at least 5).

    Per-rule items on strategy values and the mixed-leaf properties take a fifth: the
    impl group runs every property with all of them.
    """
    return settings(chosen, max_examples=max(5, chosen.max_examples // fraction))


# ---------------------------------------------------------------- observers


def observer_of(value: Any, hooks: Iterable[str]) -> Any:
    """Returns the observer a fixture value gives: itself, or what a factory of it returns."""
    from auxcheck._calls import MISSING, lookup

    if any(lookup(value, hook).value is not MISSING for hook in hooks) \
            and not issubclass(type(value), type):
        return value
    return value() if callable(value) else value


def _observer_report(kind: str, value: Any, hooks: tuple[str, ...],
                     check: Callable[[Any], Report]) -> Report:
    """Returns ``check(observer)``, or AUX102 when making the observer from a factory raised."""
    from auxcheck._calls import announce, guard

    announce("AUX102", "making the observer from the fixture value {}", value)
    made = guard(observer_of, value, hooks)
    if made.error is None:
        return check(made.value)
    report = Report(f"{kind} observer {describe(value)}")
    report.add(Finding.of("AUX102", f"making the observer from the fixture value raised "
                          f"{kind_name(made.error)}", "expected an observer, or a factory "
                          "returning one when called with no argument", value,
                          detail=made.detail))
    return report


def run_observer_check(key: str, kind: str, value: Any, *, context: ItemContext,
                       static_buffers: Any = (), batch_size: int | None = None) -> None:
    """Runs one observer item: the observer through SGLang's step loop, findings of ``key``."""
    from auxcheck import validate

    def build() -> Report:
        if kind == "forward":
            return _observer_report(kind, value, ("after_forward",), lambda observer:
                                    validate.check_forward_observer(
                                        observer, batch_size=batch_size,
                                        static_buffers=static_buffers))
        return _observer_report(kind, value, ("is_active", "before_grammar", "after_sample"),
                                lambda observer: validate.check_sampling_observer(
                                    observer, batch_size=batch_size,
                                    static_buffers=static_buffers))

    report = _cached(context.key, build)
    _own(key, report, context, f"{kind} observer", value, _OBSERVER_DEPENDS)


# ---------------------------------------------------------------- properties


@functools.cache
def property_names() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Returns (name, rule codes) of every append/composite property, in order."""
    return tuple((p.name, p.codes) for p in property_tests(implementation("reference")))


def _properties(impl: Implementation, *, leaves: Any, profile: str, fraction: int = 1,
                batch_size: int | None = None) -> list[PropertyTest]:
    """Returns the property tests under ``profile`` with 1/``fraction`` of its examples."""
    chosen = aux.resolve_profile(profile)
    examples = max(5, chosen.max_examples // fraction)
    return list(property_tests(impl, leaves=leaves, profile=chosen, max_examples=examples,
                               batch_size=batch_size))


def _run_properties(name: str, impl: Implementation, *, leaves: Any,
                    options: AuxcheckOptions, fraction: int = 1,
                    batch_size: int | None = None) -> None:
    """Runs the property ``name``; re-raises its violation without ignored codes."""
    chosen = [p for p in _properties(impl, leaves=leaves, profile=options.profile,
                                     fraction=fraction, batch_size=batch_size)
              if p.name == name]
    if not chosen:
        raise InvalidArgument(f"no append/composite property named {name!r}")
    try:
        chosen[0].test()
    except ContractViolation as exc:
        kept = exc.report.without(options.ignore)
        if kept:
            violation = ContractViolation(kept)
            violation.__notes__ = list(getattr(exc, "__notes__", ()))  # type: ignore[attr-defined]
            raise violation from None


def _run_device_properties(code: str, source: Source, options: AuxcheckOptions,
                           context: ItemContext, batch_size: int | None,
                           static_buffers: Any) -> None:
    """Runs the properties whose first code is ``code``, the user's outputs among the leaves.

    They are skipped when the user's output breaks its own contract (its own items say
    so); a user leaf raising inside a composite skips the item with the leaf's code.
    """
    if source.kind != "strategy":
        report = _cached(context.key, lambda: _source_report(source, static_buffers, None,
                                                            batch_size))
        reason = _blocked(code, report, context, DEPENDS)
        if reason is not None:
            pytest.skip(reason)
    impl = implementation(options.impl)
    for name, codes in property_names():
        if codes[0] != code:
            continue
        try:
            _run_properties(name, impl, leaves=source.strategy(batch_size), options=options,
                            fraction=5, batch_size=batch_size)
        except ContractViolation as exc:
            # The user's output raising inside a composite is reported by its own code
            # (AUX1xx/AUX2xx); an AUX3xx finding is the implementation's.
            foreign = [f for f in exc.report if not f.code.startswith("AUX3")]
            if foreign and len(foreign) == len(exc.report.findings):
                item = context.names.get(foreign[0].code, foreign[0].code)
                pytest.skip(f"{code}: not judged, your output broke its own contract inside "
                            f"the composite ({foreign[0].code}; see item {item})")
            raise


FALLBACK_FRACTION = 5
"""When ``auto`` falls back to auxcheck's own reference, whose full proof is auxcheck's own
test suite, the impl items run this fraction of the profile's examples."""


def impl_fraction(options: AuxcheckOptions) -> int:
    """Returns the share of examples the impl items run: all, or a fifth for the fallback."""
    fallback = options.impl == "auto" and implementation("auto").name == "reference"
    return FALLBACK_FRACTION if fallback else 1


def run_impl_check(name: str, *, options: AuxcheckOptions) -> None:
    """Runs one implementation item: a property by name, or ``machine``."""
    impl = implementation(options.impl)
    if name == "machine":
        _run_machine(impl, options)
        return
    _run_properties(name, impl, leaves=None, options=options, fraction=impl_fraction(options))


def _run_machine(impl: Implementation, options: AuxcheckOptions) -> None:
    """Runs the append -> copy -> consume state machine against ``impl``."""
    from auxcheck.machine import run_machine

    chosen = aux.resolve_profile(options.profile)
    examples = max(5, chosen.max_examples // impl_fraction(options))
    report = run_machine(impl, profile=chosen, max_examples=examples)
    report.without(options.ignore).raise_for_findings()


# ---------------------------------------------------------------- import scan


def run_import_scan(options: AuxcheckOptions) -> None:
    """Raises ContractViolation listing every AUX501/AUX502/AUX504 finding under the scan paths."""
    from auxcheck.migrate.scan import scan_paths

    report = scan_paths([str(p) for p in options.paths]).without(options.ignore)
    report.raise_for_findings()

