"""The checks that ``pytest --auxcheck`` items run; imported only when the flag is on.

Every check raises :class:`~auxcheck.errors.ContractViolation` carrying the findings
of its own rule code, so the item's failure names the code, what was seen, what was
expected and the fix. A device output fixture value may be an instance, a
zero-argument factory or a Hypothesis strategy; strategies (and the commit streams
that ``consume`` is driven with) run under the chosen settings profile, and a
Hypothesis failure carries the shrunk example in the exception's notes.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument as HypothesisInvalidArgument

from auxcheck import strategies as aux
from auxcheck._walk import dense_parts, iter_tensors, unique_tensors
from auxcheck.errors import ContractViolation, InvalidArgument
from auxcheck.properties import Implementation, PropertyTest, load_implementation, property_tests
from auxcheck.report import Finding, Report, describe
from auxcheck.validate import check_device_output

if TYPE_CHECKING:
    from auxcheck.pytest_plugin import AuxcheckOptions

__all__ = [
    "describe_impl",
    "failure_text",
    "property_names",
    "run_device_check",
    "run_impl_check",
    "run_import_scan",
    "validate_options",
]

_PP_CODES = frozenset({"AUX401", "AUX402", "AUX403"})
_STATIC_CODES = frozenset({"AUX110", "AUX111"})


# ---------------------------------------------------------------- options


def validate_options(options: AuxcheckOptions) -> None:
    """Raises pytest.UsageError naming the option when the profile or implementation is unusable."""
    implementation.cache_clear()  # a dotted module may differ from one session to the next
    try:
        resolve_settings(options.profile)
    except (InvalidArgument, HypothesisInvalidArgument):
        raise pytest.UsageError(
            f"--auxcheck-profile: unknown Hypothesis settings profile {options.profile!r}; "
            f"expected one of {', '.join(aux.PROFILES)} or a profile your conftest registers "
            "with hypothesis.settings.register_profile"
        ) from None
    try:
        implementation(options.impl)
    except InvalidArgument as exc:
        raise pytest.UsageError(f"--auxcheck-impl: {exc}") from None


def resolve_settings(profile: str) -> settings:
    """Returns the settings of ``profile``: an auxcheck profile or one registered with Hypothesis."""
    if profile in aux.PROFILES:
        return aux.settings_for(profile)
    return settings.get_profile(profile)


@functools.cache
def implementation(spec: str) -> Implementation:
    """Returns the implementation ``--auxcheck-impl`` names (loaded once per process)."""
    return load_implementation(spec)


def describe_impl(spec: str, *, short: bool = False) -> str:
    """Returns the implementation's name, with ``(auto)`` when it was chosen automatically."""
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
    """A device-output fixture value: an instance, a zero-argument factory, or a strategy."""

    kind: str
    value: Any

    def strategy(self) -> st.SearchStrategy[Any]:
        """Returns a strategy of fresh outputs (one value for an instance)."""
        if self.kind == "strategy":
            return self.value  # type: ignore[no-any-return]
        if self.kind == "factory":
            return st.builds(self.value)
        return st.just(self.value)


def as_source(value: Any) -> Source:
    """Returns how a fixture value yields device outputs."""
    if isinstance(value, st.SearchStrategy):
        return Source("strategy", value)
    if isinstance(value, type) or (callable(value) and not hasattr(value, "copy_to_host")):
        return Source("factory", value)
    return Source("instance", value)


def _for_each_output(source: Source, check: Callable[[Any, Any], None],
                     chosen: settings, *, needs_data: bool) -> None:
    """Runs ``check(output, data)`` once, or under Hypothesis for strategies or ``needs_data``."""
    if source.kind != "strategy" and not needs_data:
        check(source.value() if source.kind == "factory" else source.value, None)
        return

    @settings(chosen, suppress_health_check=list(HealthCheck),
              phases=[p for p in chosen.phases if p is not Phase.explain])
    @given(output=source.strategy(), data=st.data())
    def auxcheck_example(output: Any, data: Any) -> None:
        check(output, data)

    auxcheck_example()


# ---------------------------------------------------------------- device checks


def run_device_check(key: str, value: Any, *, options: AuxcheckOptions,
                     static_buffers: Any = (), pp_observer: Any = None) -> None:
    """Runs one device-output item: raises ContractViolation with the findings of its code.

    ``key`` is a rule code, or ``streams`` for ``consume`` over commit streams (AUX202-204).
    """
    source = as_source(value)
    chosen = resolve_settings(options.profile)
    if key.startswith("AUX3"):
        _run_device_properties(key, source, options)
        return
    if key == "streams":
        _for_each_output(source, functools.partial(_check_streams, options.ignore),
                         light(chosen, fraction=2), needs_data=True)
        return

    def check(output: Any, data: Any) -> None:
        _skip_unless_pp(key, output, pp_observer)
        _raise_if(_device_findings(key, output, static_buffers, pp_observer),
                  f"{key} on device output", output)

    _for_each_output(source, check, light(chosen), needs_data=False)


def light(chosen: settings, *, fraction: int = 5) -> settings:
    """Returns ``chosen`` with 1/``fraction`` of its examples (at least 5).

    Per-rule items on strategy values and the mixed-leaf properties take a fifth, the
    commit streams half: the impl group runs every property with all of them.
    """
    return settings(chosen, max_examples=max(5, chosen.max_examples // fraction))


def _check_streams(ignore: frozenset[str], output: Any, data: Any) -> None:
    findings = [f for f in _stream_findings(output, data) if f.code not in ignore]
    _raise_if(findings, "consume over commit streams of", output)


def _skip_unless_pp(code: str, output: Any, pp_observer: Any) -> None:
    if code in _PP_CODES and pp_observer is None and not hasattr(output, "to_pp_tensors"):
        pytest.skip(f"{code}: not a pipeline-parallel output (no to_pp_tensors, and no "
                    "auxcheck_pp_observer fixture)")


def _device_findings(code: str, output: Any, static_buffers: Any,
                     pp_observer: Any) -> list[Finding]:
    """Returns the validator's findings of ``code`` for one output."""
    if code in _STATIC_CODES:
        return _static_findings(code, output, static_buffers)
    report = check_device_output(output, pp_observer=pp_observer)
    return [f for f in report if f.code == code]


def _static_findings(code: str, output: Any, static_buffers: Any) -> list[Finding]:
    """Returns AUX110/AUX111 findings: output tensors (and those it copies) in graph memory."""
    from auxcheck.aliasing import static_buffer_findings

    copied: list[Any] = []

    def copy_tensor(tensor: Any) -> Any:
        copied.append(tensor)
        return tensor.detach().clone()

    with contextlib.suppress(Exception, SystemExit):  # AUX101-103 report it; tensors seen count
        output.copy_to_host(copy_tensor)
    refs = dense_parts(unique_tensors([*iter_tensors(output), *(("<copied>", t) for t in copied)]))
    return [f for f in static_buffer_findings([t for _, t in refs], static_buffers)
            if f.code == code]


def _stream_findings(output: Any, data: Any) -> list[Finding]:
    """Returns the AUX202-204 findings of ``consume`` over a drawn commit stream."""
    import torch

    try:
        host = output.copy_to_host(torch.clone)
    except (Exception, SystemExit):  # noqa: BLE001 - reported by AUX101-103
        return []
    if not callable(getattr(host, "consume", None)):
        return []
    size = _rows(output)
    batches = aux.batches(min_reqs=size, max_reqs=size)
    stream = data.draw(aux.commit_streams(batches=batches, max_steps=3), label="commit stream")
    for step in stream.play():
        found = _consume_step_findings(host, step.batch, step.commits)
        if found:
            return found
    return []


def _rows(output: Any) -> int:
    """Returns the batch size an output was built for: its first tensor's leading dimension."""
    for _, tensor in iter_tensors(output):
        try:
            if tensor.dim() > 0:
                return min(int(tensor.shape[0]), 8)
        except Exception:  # noqa: BLE001, S112 - a nested tensor has no single shape
            continue
    return 3


def _consume_step_findings(host: Any, batch: Any, commits: list[Any]) -> list[Finding]:
    """Returns AUX202-204 findings of one ``consume(batch, commits)`` call."""
    reqs, before, entries = batch.reqs, tuple(batch.reqs), tuple(commits)
    findings = []
    try:
        returned = host.consume(batch, commits)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - plugin code raising is a finding
        findings.append(Finding.of(
            "AUX202", f"consume raised {type(exc).__name__}: {exc} on a commit stream step",
            "expected it to handle any valid aligned commits", host))
        returned = None
    if tuple(commits) != entries or batch.reqs is not reqs or tuple(reqs) != before:
        findings.append(Finding.of("AUX203", "consume changed commits or batch.reqs",
                                   "expected both left as passed", host))
    if returned is not None:
        findings.append(Finding.of("AUX204", f"consume returned {describe(returned)}",
                                   "expected None", host))
    return findings


# ---------------------------------------------------------------- properties


@functools.cache
def property_names() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Returns (name, rule codes) of every append/composite property, in order."""
    return tuple((p.name, p.codes) for p in property_tests(implementation("reference")))


def _properties(impl: Implementation, *, leaves: Any, profile: str,
                fraction: int = 1) -> list[PropertyTest]:
    """Returns the property tests under ``profile`` with 1/``fraction`` of its examples."""
    examples = max(5, resolve_settings(profile).max_examples // fraction)
    name = profile if profile in aux.PROFILES else "auxcheck-default"
    return list(property_tests(impl, leaves=leaves, profile=name, max_examples=examples))


def _run_properties(name: str, impl: Implementation, *, leaves: Any,
                    options: AuxcheckOptions, fraction: int = 1) -> None:
    """Runs the property ``name``; re-raises its violation without ignored codes."""
    chosen = [p for p in _properties(impl, leaves=leaves, profile=options.profile,
                                     fraction=fraction) if p.name == name]
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


def _run_device_properties(code: str, source: Source, options: AuxcheckOptions) -> None:
    """Runs the properties whose first code is ``code``, the user's outputs among the leaves."""
    impl = implementation(options.impl)
    for name, codes in property_names():
        if codes[0] == code:
            _run_properties(name, impl, leaves=source.strategy(), options=options, fraction=5)


def run_impl_check(name: str, *, options: AuxcheckOptions) -> None:
    """Runs one implementation item: a property by name, or ``machine``."""
    impl = implementation(options.impl)
    if name == "machine":
        _run_machine(impl, options)
        return
    _run_properties(name, impl, leaves=None, options=options)


def _run_machine(impl: Implementation, options: AuxcheckOptions) -> None:
    """Runs the append -> copy -> consume state machine against ``impl``."""
    from auxcheck.machine import run_machine

    examples = resolve_settings(options.profile).max_examples
    name = options.profile if options.profile in aux.PROFILES else "auxcheck-default"
    report = run_machine(impl, profile=name, max_examples=examples)
    report.without(options.ignore).raise_for_findings()


# ---------------------------------------------------------------- import scan


def run_import_scan(options: AuxcheckOptions) -> None:
    """Raises ContractViolation listing every AUX501/AUX502 finding under the scan paths."""
    from auxcheck.migrate.scan import scan_paths

    report = scan_paths([str(p) for p in options.paths]).without(options.ignore)
    report.raise_for_findings()

