"""The checks that ``pytest --auxcheck`` items run; imported only when the flag is on.

Every check raises :class:`~auxcheck.errors.ContractViolation` carrying the findings
of its own rule code, so the item's failure names the code, what was seen, what was
expected and the fix. A device output fixture value may be an instance, a
zero-argument factory, a factory taking the batch, or a Hypothesis strategy; every
output runs through SGLang's step loop (:mod:`auxcheck._runtime.loop`), once per group for
instances and factories (its items share the report), per drawn example for
strategies, which run under the chosen settings profile and carry the shrunk example
in the exception's notes (a strategy itself is drawn once per group first: one that
yields nothing, or that Hypothesis refuses, is its group's one failure). An item whose
prerequisite (the output's own contract) fails is skipped, naming the failing item;
plugin code pytest stopped (a timeout) fails one item of the group and skips the rest,
never running again; a fixture value auxcheck cannot use fails one item, naming it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from auxcheck import strategies as aux
from auxcheck._core.interrupts import interrupted_finding
from auxcheck._core.plugin_calls import Interrupted, Outcome, attempt, kind_name, plain_torch
from auxcheck._suite.options import AuxcheckOptions
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
    _GROUPS.clear()  # group reports belong to one session's fixtures
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


def suite_settings(options: AuxcheckOptions, *, your_outputs: bool = False) -> settings:
    """Returns the run's Hypothesis settings: the profile's, with no deadline.

    Each example runs plugin code and SGLang's step loop: how long that takes is no
    test's to judge (a hang is pytest-timeout's). Runs that draw ``your_outputs`` (a
    strategy fixture value, your outputs among the properties' leaves) always
    generate: a profile without the generate phase would judge none of them. The
    header says what was set aside (:func:`profile_text`).
    """
    chosen = settings(aux.resolve_profile(options.profile), deadline=None)
    if your_outputs and Phase.generate not in chosen.phases:
        chosen = settings(chosen, phases=(*chosen.phases, Phase.generate))
    return chosen


def profile_text(options: AuxcheckOptions) -> str:
    """Returns the profile's name for the header, and what of it the suite sets aside."""
    profile = aux.resolve_profile(options.profile)
    changes = ["deadline ignored" if profile.deadline is not None else "",
               "generate phase added for your outputs" if Phase.generate not in profile.phases
               else ""]
    said = ", ".join(c for c in changes if c)
    return f"{options.profile} ({said})" if said else options.profile


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
            from auxcheck._runtime.loop import DEFAULT_BATCH_SIZE
            from auxcheck._runtime.scheduler import SchedulerModel

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
    from auxcheck._runtime.loop import source_of

    if issubclass(type(value), st.SearchStrategy):  # never isinstance: it reads __class__
        return Source("strategy", value)
    found = source_of(value)
    return Source(found.kind, found.value)


def _fixture_failed(value: Any) -> Any:
    """Returns the pytest plugin's record of an optional fixture that raised, or None."""
    from auxcheck.pytest_plugin import FixtureFailed

    return value if type(value) is FixtureFailed else None


def _fixture_finding(code: str, failed: Any, expected: str) -> Finding:
    return Finding.of(code, f"the fixture {failed.name} raised {kind_name(failed.error)}",
                      expected, None, detail=Outcome(error=failed.error).detail)


@dataclass(frozen=True, slots=True)
class _Extras:
    """A group's optional fixture values as the checks use them, and what is wrong with them."""

    static: Any
    pp_observer: Any
    findings: tuple[Finding, ...]


def _extras(static_buffers: Any, pp_observer: Any = None) -> _Extras:
    """Returns the static-buffer registry and PP observer; AUX110 / AUX403 for unusable ones."""
    from auxcheck.aliasing import as_registry
    from auxcheck.validate import _static_registry

    findings: list[Finding] = []
    failed = _fixture_failed(static_buffers)
    if failed is not None:
        static = as_registry(None)
        findings.append(_fixture_finding("AUX110", failed, "expected a mapping of names to "
                                         "tensors, tensors, or None"))
    else:
        static, unreadable = _static_registry(static_buffers, strict=False)
        findings += unreadable
    failed = _fixture_failed(pp_observer)
    if failed is not None:
        findings.append(_fixture_finding("AUX403", failed, "expected the observer that "
                                         "receives PP tensors (from_pp_tensors)"))
        pp_observer = None
    return _Extras(static, pp_observer, tuple(findings))


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
    """Where an item sits: its group's cache key, the item name of each code in the group,
    and the names of the group's items selected in this run (None: all of them)."""

    key: str
    names: dict[str, str]
    notes: list[Any]
    selected: frozenset[str] | None = None


@dataclass(slots=True)
class _Group:
    """What the items of one fixture value share: built once per process, read by every item.

    ``report`` holds the findings (for a strategy, those of the strategy itself);
    ``stopped`` the finding of plugin code pytest stopped (every other item is then
    skipped, naming it); ``unusable`` the item that failed, and why, for a fixture
    value auxcheck cannot use; ``silent`` why the outputs were never judged.
    """

    report: Report | None = None
    extras: _Extras | None = None
    stopped: Finding | None = None
    unusable: tuple[str, str] | None = None
    silent: str | None = None
    done: set[str] = field(default_factory=set)
    reporter: str = ""


_GROUPS: dict[str, _Group] = {}


def _group(context: ItemContext) -> _Group:
    return _GROUPS.setdefault(context.key, _Group())


def _built(group: _Group, build: Callable[[], Report]) -> Report:
    """Returns the group's report, built on first use (an Interrupted passes to _judging)."""
    if group.report is None:
        group.report = build()
    return group.report


def _blocked(code: str, report: Report, context: ItemContext,
             depends: dict[str, tuple[str, ...]]) -> tuple[str, list[Finding]] | None:
    """Returns the failing prerequisite of ``code``'s item: its rule, and its findings; or None."""
    for needed in depends.get(code, ()):
        failing = [f for f in report if f.code == needed]
        if failing:
            return needed, failing
    return None


def _failing_item(context: ItemContext, owner: str, finding: Finding, *,
                  first: bool = False) -> str:
    """Returns how a skip names the item it waits on: ``item NAME fails (CODE what was
    seen)``, NAME the item of rule ``owner`` in the group."""
    return (f"item {context.names.get(owner, owner)} fails{' first' if first else ''} "
            f"({finding.code} {finding.message.partition('; ')[0]})")


def _dependency(code: str, needed: str, failing: list[Finding], context: ItemContext) -> str:
    """Returns the skip reason of an item whose prerequisite ``needed`` fails."""
    return (f"{code}: not judged, it depends on the output's own contract: "
            f"{_failing_item(context, needed, failing[0])}")


def _skip_if_blocked(code: str, report: Report, context: ItemContext,
                     depends: dict[str, tuple[str, ...]]) -> None:
    blocked = _blocked(code, report, context, depends)
    if blocked is not None:
        needed, failing = blocked
        pytest.skip(_dependency(code, needed, failing, context))


def _own(code: str, report: Report, context: ItemContext, subject: str, obj: Any,
         depends: dict[str, tuple[str, ...]]) -> None:
    """Skips when a prerequisite failed, else raises ContractViolation with ``code``'s findings."""
    _skip_if_blocked(code, report, context, depends)
    if code == "AUX105":
        context.notes.extend(("auxcheck note", f.to_text()) for f in report.notes)
    _raise_if([f for f in report if f.code == code], f"{code} on {subject}", obj)


def _judging(code: str, context: ItemContext, work: Callable[[], None]) -> None:
    """Runs the item of ``code``; when pytest stopped plugin code, in this item or an earlier one
    of the group, the item of that call's rule fails with it and the others are skipped.

    A hang ends once (pytest-timeout's one alarm): the group's other items never call
    the hanging code again, so they cannot hang where no alarm is left.
    """
    group = _group(context)
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
    pytest.skip(f"{code}: not judged, {_failing_item(context, owner, stopped)}")


def _unusable(code: str, group: _Group, context: ItemContext) -> None:
    """Fails the item that found the group's fixture value unusable; skips the others."""
    if group.unusable is None:
        return
    item, message = group.unusable
    if item == context.names.get(code, code):
        pytest.fail(message, pytrace=False)
    pytest.skip(f"{code}: not judged, item {item} fails: {message}")


def _declared_size(code: str, value: Any, context: ItemContext) -> int | None:
    """Returns the ``auxcheck_batch_size`` fixture's value as a plain int (None when absent).

    A value auxcheck cannot use fails the group's first item that reads it, naming the
    fixture and the range, and skips the rest: one failure, no traceback.
    """
    from auxcheck.validate import _batch_size

    group = _group(context)
    failed = _fixture_failed(value)
    try:
        if failed is not None:
            raise InvalidArgument(f"the fixture auxcheck_batch_size raised "
                                  f"{kind_name(failed.error)}; expected it to return the "
                                  "number of requests your outputs are built for")
        return _batch_size(value, what="the fixture auxcheck_batch_size returned ")
    except InvalidArgument as exc:
        if group.unusable is None:
            group.unusable = (context.names.get(code, code), str(exc))
    _unusable(code, group, context)
    return None


# ---------------------------------------------------------------- device checks


def run_device_check(key: str, value: Any, *, options: AuxcheckOptions, context: ItemContext,
                     static_buffers: Any = (), pp_observer: Any = None,
                     batch_size: Any = None) -> None:
    """Runs one device-output item: raises ContractViolation with the findings of its code.

    Items whose prerequisite (the output's own ``copy_to_host`` / ``consume``) fails are
    skipped with a reason naming the failing item: one finding per cause.
    """
    size = _declared_size(key, batch_size, context)
    _judging(key, context, lambda: _device_item(key, as_source(value), options, context,
                                                static_buffers, pp_observer, size))


def _device_item(key: str, source: Source, options: AuxcheckOptions, context: ItemContext,
                 static_buffers: Any, pp_observer: Any, batch_size: int | None) -> None:
    group = _group(context)
    if group.extras is None:
        group.extras = _extras(static_buffers, pp_observer)
    extras = group.extras
    if source.kind == "strategy":
        report = _built(group, lambda: _strategy_report(source, options, extras, batch_size))
    elif key in _PP_CODES and extras.pp_observer is None and not extras.findings \
            and not _has_pp(source, batch_size):
        pytest.skip(f"{key}: not a pipeline-parallel output (no to_pp_tensors, and no "
                    "auxcheck_pp_observer fixture)")
    else:
        report = _built(group, lambda: _source_report(source, extras, batch_size))
    if key.startswith("AUX3"):
        _run_device_properties(key, source, options, context, report, batch_size)
    elif source.kind == "strategy":
        _unless_drawable(key, report, context, extras)
        _run_strategy_check(key, source, options, context, report, extras, batch_size)
    else:
        _own(key, report, context, "device output", source.value, DEPENDS)


def _one_output(source: Source, batch_size: int | None) -> Any:
    """Returns one output of a non-strategy source (None when its factory raises)."""
    from auxcheck._runtime.loop import OutputSource, sample_output

    return sample_output(OutputSource(source.kind, source.value),  # type: ignore[arg-type]
                         batch_size)


def _has_pp(source: Source, batch_size: int | None) -> bool:
    from auxcheck._core.plugin_calls import MISSING, lookup

    return lookup(_one_output(source, batch_size), "to_pp_tensors").value is not MISSING


def _output_report(source: Source, extras: _Extras, batch_size: int | None) -> Report:
    """Returns every finding of a non-strategy source: the step loop, then PP transport."""
    from auxcheck._runtime.loop import OutputSource, check_source
    from auxcheck.validate import _judged, _pp_findings

    def check() -> Report:
        report = check_source(OutputSource(source.kind, source.value),  # type: ignore[arg-type]
                              batch_size=batch_size, static=extras.static)
        output = _one_output(source, batch_size)
        if output is not None:
            report.extend(_pp_findings(output, extras.pp_observer))
        return report

    return _judged("AUX103", f"device output {describe(source.value)}", source.value, check)


def _source_report(source: Source, extras: _Extras, batch_size: int | None) -> Report:
    """Returns the group's report: what is wrong with its optional fixtures, then its output's."""
    report = Report(f"device output {describe(source.value)}", list(extras.findings))
    report.extend(_output_report(source, extras, batch_size))
    return report


# ---------------------------------------------------------------- strategies

_PROBE_EXAMPLES = 10
"""How many values the strategy itself is drawn for, before any rule is judged on them."""


def _strategy_report(source: Source, options: AuxcheckOptions, extras: _Extras,
                     batch_size: int | None) -> Report:
    """Returns the findings of a strategy itself, whatever rule is judged on its values.

    It yields no value at all (AUX101: a filter or ``assume`` that never passes,
    ``st.nothing()``), drawing from it raises or Hypothesis refuses it (AUX103: a health
    check, an invalid argument), or an optional fixture is unusable.
    """
    reached: list[int] = []
    chosen = suite_settings(options, your_outputs=True)
    error = _run_examples(source, lambda output: reached.append(1), batch_size,
                          settings(chosen, max_examples=min(chosen.max_examples,
                                                            _PROBE_EXAMPLES)))
    report = Report("device output strategy", list(extras.findings))
    report.extend(_strategy_findings(error, bool(reached)))
    return report


def _run_examples(source: Source, check: Callable[[Any], None], batch_size: int | None,
                  chosen: settings) -> BaseException | None:
    """Runs ``check(output)`` under Hypothesis on outputs drawn from ``source``; returns its error.

    Outputs come through :func:`auxcheck.strategies._user_outputs`: Hypothesis never
    shows the user's strategy or values by their repr. Health checks about the user's
    strategy apply (a value too large to draw, a filter rejecting nearly everything);
    only ``too_slow`` is set aside, as the step loop itself takes its time.
    """
    from auxcheck.strategies import _user_outputs

    @settings(chosen, suppress_health_check=[HealthCheck.too_slow],
              phases=[p for p in chosen.phases if p is not Phase.explain])
    @given(output=_user_outputs(source.strategy(batch_size)))
    def auxcheck_example(output: Any) -> None:
        check(output.value)

    return attempt(auxcheck_example).error


def _strategy_findings(error: BaseException | None, reached: bool) -> list[Finding]:
    """Returns what a Hypothesis run's outcome says about the strategy itself.

    None for a run that drew values and raised nothing, or whose error is a finding
    of a rule judged on a value (the caller's).
    """
    from auxcheck.strategies import _DrawFailed

    if error is None:
        return [] if reached else [_no_value("every draw was rejected")]
    if issubclass(type(error), _DrawFailed):
        notes = attempt(lambda: [str(n) for n in getattr(error, "__notes__", ())][:20]).value
        return [replace(f, detail="\n".join(filter(None, [f.detail, *(notes or ())])))
                for f in error.report]  # type: ignore[attr-defined]
    if issubclass(type(error), ContractViolation):
        return []
    if kind_name(error) == "Unsatisfiable":
        return [_no_value("Hypothesis found no value that passes its filters and assumptions")]
    text = attempt(str, error).value
    first = text.strip().splitlines()[0][:300] if type(text) is str and text.strip() else ""
    return [Finding.of("AUX103", f"Hypothesis could not draw device outputs from the "
                       f"fixture's strategy: {kind_name(error)}: {first}".rstrip(": "),
                       "expected a strategy Hypothesis can draw from (see its message)", None,
                       detail=Outcome(error=error).detail)]


def _unless_drawable(code: str, report: Report, context: ItemContext, extras: _Extras) -> None:
    """Fails or skips the item of ``code`` when the strategy itself is broken.

    No rule can be judged on a strategy that yields nothing, or whose drawing raises:
    the item of that finding's rule fails with it, every other item is skipped.
    """
    problems = [f for f in report if not any(f is e for e in extras.findings)]
    if not problems:
        return
    owner = problems[0].code
    if owner == code:
        _raise_if([f for f in problems if f.code == code], f"{code} on device output strategy",
                  None)
    pytest.skip(f"{code}: not judged, {_failing_item(context, owner, problems[0])}")


def _no_value(why: str) -> Finding:
    return Finding.of("AUX101", f"the fixture's strategy yielded no device output ({why})",
                      "expected a strategy that draws device outputs (a filter or assume "
                      "that never passes, or st.nothing(), yields none)", None)


def _run_strategy_check(key: str, source: Source, options: AuxcheckOptions,
                        context: ItemContext, report: Report, extras: _Extras,
                        batch_size: int | None) -> None:
    """Runs ``key`` under Hypothesis: each drawn output is one published step.

    What the run says about the strategy itself joins the group's report, so the
    item of its rule fails and the others are skipped, naming it.
    """
    from hypothesis import assume

    skipped: list[str] = []
    reached: list[int] = []

    def check(output: Any) -> None:
        reached.append(1)
        if key in _PP_CODES and extras.pp_observer is None and not _has_pp(
                Source("instance", output), batch_size):
            skipped.append(f"{key}: not a pipeline-parallel output (no to_pp_tensors, and "
                           "no auxcheck_pp_observer fixture)")
            assume(False)
        found = _output_report(Source("instance", output), extras, batch_size)
        blocked = _blocked(key, found, context, DEPENDS)
        if blocked is not None:
            skipped.append(_dependency(key, *blocked, context))
            assume(False)
        _raise_if([f for f in found if f.code == key], f"{key} on device output", output)

    chosen = light(suite_settings(options, your_outputs=True))
    error = _run_examples(source, check, batch_size, chosen)
    if issubclass(type(error), ContractViolation) and not _strategy_findings(error, True):
        raise error  # type: ignore[misc]
    if not skipped:
        report.extend(_strategy_findings(error, bool(reached)))
    _unless_drawable(key, report, context, extras)
    _skip_if_blocked(key, report, context, DEPENDS)
    if skipped:
        pytest.skip(skipped[0])


def light(chosen: settings, *, fraction: int = 5) -> settings:
    """Returns ``chosen`` with 1/``fraction`` of its examples (at least 5).

    Per-rule items on strategy values and the mixed-leaf properties take a fifth: the
    impl group runs every property with all of them.
    """
    return settings(chosen, max_examples=max(5, chosen.max_examples // fraction))


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
    failed = _fixture_failed(value)
    if failed is not None:
        return Report(subject, [_fixture_finding("AUX102", failed, "expected the fixture to "
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


_QUIET_CODES = frozenset({"AUX102"})
"""The observer item judged even when the observer published nothing: its hooks."""


def run_observer_check(key: str, kind: str, value: Any, *, context: ItemContext,
                       static_buffers: Any = (), batch_size: Any = None) -> None:
    """Runs one observer item: the observer through SGLang's step loop, findings of ``key``.

    When the observer published nothing in all the steps, the items judging its
    outputs are skipped saying so: nothing was judged, so nothing passed.
    """
    size = _declared_size(key, batch_size, context)
    _judging(key, context, lambda: _observer_item(key, kind, value, context, static_buffers,
                                                  size))


def _observer_item(key: str, kind: str, value: Any, context: ItemContext, static_buffers: Any,
                   batch_size: int | None) -> None:
    from auxcheck import validate

    group = _group(context)
    if group.extras is None:
        group.extras = _extras(static_buffers)
    extras = group.extras
    published: list[int] = []

    def run(observer: Any) -> Report:
        subject = f"{kind} observer {describe(observer)}"
        report = validate._judged("AUX102", subject, observer, lambda: (
            validate._forward_report if kind == "forward" else validate._sampling_report)(
                observer, batch_size=batch_size, static=extras.static,
                found=extras.findings, published=published))
        if not report and not published:
            group.silent = (f"not judged, the observer published no device output in any of "
                            f"the steps it ran ({', '.join(_HOOKS[kind])} as SGLang calls them)")
        return report

    report = _built(group, lambda: _observer_report(kind, value, _HOOKS[kind], run))
    if group.silent is not None and key not in _QUIET_CODES:
        pytest.skip(f"{key}: {group.silent}")
    _own(key, report, context, f"{kind} observer", value, _OBSERVER_DEPENDS)


_HOOKS = {"forward": ("after_forward",),
          "sampling": ("is_active", "before_grammar", "after_sample")}


# ---------------------------------------------------------------- properties


@functools.cache
def property_names() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Returns (name, rule codes) of every append/composite property, in order."""
    return tuple((p.name, p.codes) for p in property_tests(implementation("reference")))


def _properties(impl: Implementation, *, leaves: Any, options: AuxcheckOptions,
                fraction: int = 1, batch_size: int | None = None) -> list[PropertyTest]:
    """Returns the property tests under the run's settings with 1/``fraction`` of its examples."""
    chosen = suite_settings(options, your_outputs=leaves is not None)
    examples = max(5, chosen.max_examples // fraction)
    return list(property_tests(impl, leaves=leaves, profile=chosen, max_examples=examples,
                               batch_size=batch_size))


def _run_properties(name: str, impl: Implementation, *, leaves: Any,
                    options: AuxcheckOptions, fraction: int = 1,
                    batch_size: int | None = None) -> None:
    """Runs the property ``name``; re-raises its violation without ignored codes."""
    chosen = [p for p in _properties(impl, leaves=leaves, options=options,
                                     fraction=fraction, batch_size=batch_size)
              if p.name == name]
    if not chosen:
        raise InvalidArgument(f"no append/composite property named {name!r}")
    try:
        _unless_no_examples(chosen[0].codes[0], chosen[0].test, options)
    except ContractViolation as exc:
        kept = exc.report.without(options.ignore)
        if kept:
            violation = ContractViolation(kept)
            violation.__notes__ = list(getattr(exc, "__notes__", ()))  # type: ignore[attr-defined]
            raise violation from None


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


def _run_device_properties(code: str, source: Source, options: AuxcheckOptions,
                           context: ItemContext, report: Report,
                           batch_size: int | None) -> None:
    """Runs the properties whose first code is ``code``, the user's outputs among the leaves.

    They are skipped when the user's output breaks its own contract (its own items say
    so); a user leaf raising inside a composite skips the item with the leaf's code.
    """
    _skip_if_blocked(code, report, context, DEPENDS)
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
                pytest.skip(_leaf_broke(code, foreign[0], source, context, report))
            raise


def _leaf_broke(code: str, finding: Finding, source: Source, context: ItemContext,
                report: Report) -> str:
    """Returns why an AUX3 item is skipped: the user's output broke its own contract inside it.

    An instance whose own items pass was still copied again here (the properties copy
    the one instance once per example, SGLang copies an output once): saying so points
    to a factory, which gives each composite a fresh output.
    """
    item = context.names.get(finding.code, finding.code)
    reason = (f"{code}: not judged, your output broke its own contract inside the composite "
              f"({finding.code}; see item {item})")
    if source.kind == "instance" and not any(f.code == finding.code for f in report):
        reason = (f"{code}: not judged, your instance failed when copied again inside a "
                  f"composite ({finding.code} {finding.message.partition('; ')[0]}); it passes "
                  "its own items: SGLang copies an output once, the properties copy the one "
                  "instance once per example. Return a factory from the fixture to have "
                  "composites judged on fresh outputs")
    return reason


FALLBACK_FRACTION = 5
"""When ``auto`` falls back to auxcheck's own reference, whose full proof is auxcheck's own
test suite, the impl items run this fraction of the profile's examples."""


def impl_fraction(options: AuxcheckOptions) -> int:
    """Returns the share of examples the impl items run: all, or a fifth for the fallback."""
    fallback = options.impl == "auto" and implementation("auto").name == "reference"
    return FALLBACK_FRACTION if fallback else 1


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
        _judging("machine", context, lambda: _run_machine(impl, options))
        return
    codes = dict(property_names()).get(name, ())

    def run() -> None:
        try:
            _run_properties(name, impl, leaves=None, options=options,
                            fraction=impl_fraction(options))
        except ContractViolation as exc:
            other = _foreign(exc, codes)
            if other is None or other.code not in context.names:
                raise
            pytest.skip(f"{codes[0]}: not judged, "
                        f"{_failing_item(context, other.code, other, first=True)}")

    _judging(codes[0] if codes else name, context, run)


def _run_machine(impl: Implementation, options: AuxcheckOptions) -> None:
    """Runs the append -> copy -> consume state machine against ``impl``."""
    from auxcheck.machine import run_machine

    chosen = suite_settings(options)
    examples = max(5, chosen.max_examples // impl_fraction(options))
    found: list[Report] = []
    _unless_no_examples("machine", lambda: found.append(run_machine(impl, profile=chosen,
                                                         max_examples=examples)), options)
    found[0].without(options.ignore).raise_for_findings()


# ---------------------------------------------------------------- import scan


def run_import_scan(options: AuxcheckOptions) -> None:
    """Raises ContractViolation listing every AUX501/AUX502/AUX504 finding under the scan paths."""
    from auxcheck.migrate.scan import scan_paths

    report = scan_paths([str(p) for p in options.paths]).without(options.ignore)
    report.raise_for_findings()

