"""The device-output items: a fixture value's outputs through SGLang's step loop, per rule.

A value may be an instance, a zero-argument factory, a factory taking the batch, or a
Hypothesis strategy. Instances and factories run once per group (its items share the
report); strategies per drawn example, under the chosen settings profile, the shrunk
example in the exception's notes (a strategy itself is drawn once per group first: one
that yields nothing, or that Hypothesis refuses, is its group's one failure).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from auxcheck._core.errors import ContractViolation
from auxcheck._core.plugin_calls import Outcome, attempt, kind_name
from auxcheck._core.report import Finding, Report, describe
from auxcheck._suite.groups import (
    DEPENDS,
    Extras,
    ItemContext,
    built,
    declared_pp,
    declared_size,
    dependency,
    failing_item,
    failing_prerequisite,
    group_of,
    raise_if,
    raise_own,
    read_extras,
    run_item,
    skip_if_blocked,
)
from auxcheck._suite.implementation_items import (
    property_names,
    property_search,
    run_properties,
    wanted_properties,
)
from auxcheck._suite.options import AuxcheckOptions
from auxcheck._suite.session import implementation, light, suite_settings

__all__ = [
    "Source",
    "as_source",
    "run_device_check",
]


# ---------------------------------------------------------------- fixture values


_PP_CODES = frozenset({"AUX401", "AUX402", "AUX403"})


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
            from auxcheck._runtime.batches import DEFAULT_BATCH_SIZE
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
    from auxcheck._runtime.output_sources import source_of

    if issubclass(type(value), st.SearchStrategy):  # never isinstance: it reads __class__
        return Source("strategy", value)
    found = source_of(value)
    return Source(found.kind, found.value)


# ---------------------------------------------------------------- device checks


def run_device_check(key: str, value: Any, *, options: AuxcheckOptions, context: ItemContext,
                     static_buffers: Any = (), pp_observer: Any = None,
                     batch_size: Any = None,
                     pp_mark: tuple[tuple[Any, ...], dict[str, Any]] | None = None) -> None:
    """Runs one device-output item: raises ContractViolation with the findings of its code.

    Items whose prerequisite (the output's own ``copy_to_host`` / ``consume``) fails are
    skipped with a reason naming the failing item: one finding per cause. ``pp_mark`` is
    the (args, kwargs) of the value's ``auxcheck_pp`` mark: whether it crosses PP stages.
    ``value``, ``static_buffers``, ``pp_observer`` and ``batch_size`` are the user's fixture
    values as the fixtures returned them (hence ``Any``): they are judged here.
    """
    size = declared_size(key, batch_size, context)
    crosses = declared_pp(key, pp_mark, context)
    if crosses is False and key in _PP_CODES:
        pytest.skip(f"{key}: not judged, the value is marked auxcheck_pp(False): it never "
                    "crosses pipeline-parallel stages")
    run_item(key, context, lambda: _device_item(
        key, as_source(value), options, context, static_buffers,
        None if crosses is False else pp_observer, size, crosses is True))


def _device_item(key: str, source: Source, options: AuxcheckOptions, context: ItemContext,
                 static_buffers: Any, pp_observer: Any, batch_size: int | None,
                 crosses: bool) -> None:
    group = group_of(context)
    if group.extras is None:
        group.extras = read_extras(static_buffers, pp_observer)
    extras = group.extras
    if source.kind == "strategy":
        report = built(group, lambda: _strategy_report(source, options, extras, batch_size))
    elif key in _PP_CODES and extras.pp_observer is None and not extras.findings \
            and not crosses and not _has_pp(source, batch_size):
        pytest.skip(_not_pp(key))
    else:
        report = built(group, lambda: _source_report(source, extras, batch_size,
                                                      options.speculative, crosses))
    if key.startswith("AUX3"):
        _run_device_properties(key, source, options, context, report, batch_size)
    elif source.kind == "strategy":
        _unless_drawable(key, report, context, extras)
        _run_strategy_check(key, source, options, context, report, extras, batch_size, crosses)
    else:
        raise_own(key, report, context, "device output", source.value, DEPENDS)


def _one_output(source: Source, batch_size: int | None) -> Any:
    """Returns one output of a non-strategy source (None when its factory raises)."""
    from auxcheck._runtime.output_sources import OutputSource, sample_output

    return sample_output(OutputSource(source.kind, source.value),  # type: ignore[arg-type]
                         batch_size)


def _not_pp(code: str) -> str:
    """Returns why the PP item of ``code`` judges nothing: no sign the output crosses PP stages."""
    return (f"{code}: not a pipeline-parallel output (no to_pp_tensors, no "
            "auxcheck_pp_observer fixture, and no auxcheck_pp(True) mark)")


def _has_pp(source: Source, batch_size: int | None) -> bool:
    from auxcheck._core.plugin_calls import MISSING, lookup

    return lookup(_one_output(source, batch_size), "to_pp_tensors").value is not MISSING


def _output_report(source: Source, extras: Extras, batch_size: int | None,
                   speculative: bool, crosses: bool) -> Report:
    """Returns every finding of a non-strategy source: the step loop, then PP transport."""
    from auxcheck._runtime.judging import catch_escapes
    from auxcheck._runtime.output_sources import OutputSource, check_source
    from auxcheck._runtime.pipeline import pp_findings

    def check() -> Report:
        report = check_source(OutputSource(source.kind, source.value),  # type: ignore[arg-type]
                              batch_size=batch_size, static=extras.static,
                              speculative=speculative)
        output = _one_output(source, batch_size)
        if output is not None:
            report.extend(pp_findings(output, extras.pp_observer, crosses=crosses))
        return report

    return catch_escapes("AUX103", f"device output {describe(source.value)}", source.value, check)


def _source_report(source: Source, extras: Extras, batch_size: int | None,
                   speculative: bool, crosses: bool) -> Report:
    """Returns the group's report: what is wrong with its optional fixtures, then its output's."""
    report = Report(f"device output {describe(source.value)}", list(extras.findings))
    report.extend(_output_report(source, extras, batch_size, speculative, crosses))
    return report


# ---------------------------------------------------------------- strategies


_PROBE_EXAMPLES = 10
"""How many values the strategy itself is drawn for, before any rule is judged on them."""


def _strategy_report(source: Source, options: AuxcheckOptions, extras: Extras,
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

    Outputs come through :func:`auxcheck._properties.drawing.user_outputs`: Hypothesis never
    shows the user's strategy or values by their repr. Health checks about the user's
    strategy apply (a value too large to draw, a filter rejecting nearly everything);
    only ``too_slow`` is set aside, as the step loop itself takes its time.
    """
    from auxcheck._properties.drawing import user_outputs

    @settings(chosen, suppress_health_check=[HealthCheck.too_slow],
              phases=[p for p in chosen.phases if p is not Phase.explain])
    @given(output=user_outputs(source.strategy(batch_size)))
    def auxcheck_example(output: Any) -> None:
        check(output.value)

    return attempt(auxcheck_example).error


def _strategy_findings(error: BaseException | None, reached: bool) -> list[Finding]:
    """Returns what a Hypothesis run's outcome says about the strategy itself.

    None for a run that drew values and raised nothing, or whose error is a finding
    of a rule judged on a value (the caller's).
    """
    from auxcheck._core.errors import DrawFailed

    if error is None:
        return [] if reached else [_no_value("every draw was rejected")]
    if issubclass(type(error), DrawFailed):
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


def _unless_drawable(code: str, report: Report, context: ItemContext, extras: Extras) -> None:
    """Fails or skips the item of ``code`` when the strategy itself is broken.

    No rule can be judged on a strategy that yields nothing, or whose drawing raises:
    the item of that finding's rule fails with it, every other item is skipped.
    """
    problems = [f for f in report if not any(f is e for e in extras.findings)]
    if not problems:
        return
    owner = problems[0].code
    if owner == code:
        raise_if([f for f in problems if f.code == code], f"{code} on device output strategy",
                 None)
    pytest.skip(f"{code}: not judged, {failing_item(context, owner, problems[0])}")


def _no_value(why: str) -> Finding:
    return Finding.of("AUX101", f"the fixture's strategy yielded no device output ({why})",
                      "expected a strategy that draws device outputs (a filter or assume "
                      "that never passes, or st.nothing(), yields none)", None)


def _run_strategy_check(key: str, source: Source, options: AuxcheckOptions,
                        context: ItemContext, report: Report, extras: Extras,
                        batch_size: int | None, crosses: bool) -> None:
    """Runs ``key`` under Hypothesis: each drawn output is one published step.

    What the run says about the strategy itself joins the group's report, so the
    item of its rule fails and the others are skipped, naming it.
    """
    from hypothesis import assume

    group = group_of(context)
    if group.passing is None:
        group.passing = _passing_rules(source, options, context, extras, batch_size, crosses)
    if key in group.passing:  # its own search would draw the same examples, and pass
        _unless_drawable(key, report, context, extras)
        skip_if_blocked(key, report, context, DEPENDS)
        return
    skipped: list[str] = []
    reached: list[int] = []

    def check(output: Any) -> None:
        reached.append(1)
        if key in _PP_CODES and extras.pp_observer is None and not crosses and not _has_pp(
                Source("instance", output), batch_size):
            skipped.append(_not_pp(key))
            assume(False)
        found = _output_report(Source("instance", output), extras, batch_size,
                               options.speculative, crosses)
        blocked = failing_prerequisite(key, found, context, DEPENDS)
        if blocked is not None:
            skipped.append(dependency(key, *blocked, context))
            assume(False)
        raise_if([f for f in found if f.code == key], f"{key} on device output", output)

    chosen = light(suite_settings(options, your_outputs=True))
    error = _run_examples(source, check, batch_size, chosen)
    if issubclass(type(error), ContractViolation) and not _strategy_findings(error, True):
        raise error  # type: ignore[misc]
    if not skipped:
        report.extend(_strategy_findings(error, bool(reached)))
    _unless_drawable(key, report, context, extras)
    skip_if_blocked(key, report, context, DEPENDS)
    if skipped:
        pytest.skip(skipped[0])


def _passing_rules(source: Source, options: AuxcheckOptions, context: ItemContext,
                   extras: Extras, batch_size: int | None, crosses: bool) -> frozenset[str]:
    """Returns the rules, among the value's selected per-rule items, that pass: one search
    shared by the items, drawing each output once and running it through the loop once.

    Each item's own search draws from the same test function, settings and seed, and judges
    the same report of each output; where it would neither fail nor reject an example
    (an unmet prerequisite, no PP transport), it draws exactly these examples and passes.
    Every other rule's item runs its own search (and shrinks, or skips saying why); so do
    all of them when this search could not draw (the strategy's own failures).
    """
    wanted = [code for code, name in context.names.items() if not code.startswith("AUX3")
              and (context.selected is None or name in context.selected)]
    if len(wanted) < 2:
        return frozenset()
    pp_asked = any(code in _PP_CODES for code in wanted) and extras.pp_observer is None \
        and not crosses
    undecided: set[str] = set()
    reached: list[int] = []

    def check(output: Any) -> None:
        reached.append(1)
        has_pp = _has_pp(Source("instance", output), batch_size) if pp_asked else True
        found = _output_report(Source("instance", output), extras, batch_size,
                               options.speculative, crosses)
        undecided.update(code for code in wanted if (code in _PP_CODES and not has_pp)
                         or failing_prerequisite(code, found, context, DEPENDS) is not None
                         or any(f.code == code for f in found))

    chosen = light(suite_settings(options, your_outputs=True))
    if _run_examples(source, check, batch_size, chosen) is not None or not reached:
        return frozenset()
    return frozenset(wanted) - undecided


# ---------------------------------------------------------------- properties on your outputs


def _run_device_properties(code: str, source: Source, options: AuxcheckOptions,
                           context: ItemContext, report: Report,
                           batch_size: int | None) -> None:
    """Runs the properties whose first code is ``code``, the user's outputs among the leaves.

    They are skipped when the user's output breaks its own contract (its own items say
    so); a user leaf raising inside a composite skips the item with the leaf's code.
    """
    skip_if_blocked(code, report, context, DEPENDS)
    impl = implementation(options.impl)
    group = group_of(context)
    if group.properties is None:  # one search for the value's property items
        group.properties = property_search(
            impl, leaves=source.strategy(batch_size), options=options, fraction=5,
            batch_size=batch_size, wanted=wanted_properties(
                context, lambda _, codes: context.names.get(codes[0], "").partition("[")[0]))
    for name, codes in property_names():
        if codes[0] != code:
            continue
        try:
            run_properties(name, impl, leaves=source.strategy(batch_size), options=options,
                           fraction=5, batch_size=batch_size, search=group.properties)
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

    The reason names the item of that rule only where that item fails. An instance whose
    own items pass was still copied again here (the properties copy the one instance
    once per example, SGLang copies an output once): saying so points to a factory,
    which gives each composite a fresh output. A factory or strategy may have made an
    output here that its own item never judged: the reason says so, naming no item.
    """
    failing = [f for f in report if f.code == finding.code]
    if failing:
        return (f"{code}: not judged, your output broke its own contract inside the "
                f"composite: {failing_item(context, finding.code, failing[0])}")
    if source.kind == "instance":
        return (f"{code}: not judged, your instance failed when copied again inside a "
                f"composite ({finding.code} {finding.summary}); it passes "
                "its own items: SGLang copies an output once, the properties copy the one "
                "instance once per example. Return a factory from the fixture to have "
                "composites judged on fresh outputs")
    return (f"{code}: not judged, an output your fixture made for a composite broke its own "
            f"contract there ({finding.code} {finding.summary}), one item "
            f"{context.names.get(finding.code, finding.code)} did not judge")
