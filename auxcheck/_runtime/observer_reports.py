"""The observers' reports as SGLang runs them: hook shapes, the step loop, the PP round trip."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from auxcheck._core.plugin_calls import MISSING, lookup, type_name
from auxcheck._core.report import Finding, Report
from auxcheck._core.rules import get_rule
from auxcheck._runtime.methods import method_findings
from auxcheck._runtime.pipeline import pp_findings

if TYPE_CHECKING:
    from auxcheck._runtime.static_buffers import StaticBufferRegistry

__all__ = ["forward_report", "sampling_report"]


_OBSERVER_HOOKS = {
    "is_active": ["sampling_info"],
    "before_grammar": ["logits", "sampling_info"],
    "after_sample": ["state", "token_ids"],
}
_OBSERVER_HINT = ("define is_active(self, sampling_info), before_grammar(self, logits, "
                  "sampling_info) and after_sample(self, state, token_ids); SGLang calls "
                  "them positionally")
_FORWARD_HINT = ("define after_forward(self, batch, forward_batch, logits_output, *, "
                 "can_run_graph) returning a device output or None")


def _hook_findings(obj: Any) -> list[Finding]:
    findings = []
    for name, params in _OBSERVER_HOOKS.items():
        _, shape = method_findings(obj, name, params, missing="AUX102", arity="AUX102")
        findings += [_with_hint(f, _OBSERVER_HINT) for f in shape]
    return findings


def sampling_report(obj: Any, *, device_output: Any = None, batch_size: int | None,
                    static: StaticBufferRegistry, steps: int = 4,
                    found: Sequence[Finding] = (), published: list[int] | None = None,
                    speculative: bool = False) -> Report:
    """Returns :func:`auxcheck._runtime.validators.check_sampling_observer`'s report, ``found`` first;
    ``published`` gets the steps at which the observer published an output; ``speculative``
    gives steps that commit several tokens to a request."""
    from auxcheck._runtime.observer_hooks import check_observers, sampling_producer

    report = Report(f"sampling observer {type_name(obj)}", list(found))
    report.extend(_hook_findings(obj))
    if not report:
        report.extend(check_observers(sampling_producer(obj), subject=report.subject,
                                      batch_size=batch_size, static=static, steps=steps,
                                      published=published, speculative=speculative))
    has_from_pp = lookup(obj, "from_pp_tensors")
    if has_from_pp.value is not MISSING or has_from_pp.error is not None:
        report.extend(method_findings(obj, "from_pp_tensors", ["tensors"],
                                      missing="AUX403", arity="AUX403")[1])
    if device_output is not None:
        report.extend(f for f in pp_findings(device_output, obj)
                      if get_rule(f.code).family == "AUX4")
    return report


def forward_report(obj: Any, *, sampling_observer: Any = None, batch_size: int | None,
                   static: StaticBufferRegistry, steps: int = 4,
                   found: Sequence[Finding] = (), published: list[int] | None = None,
                   speculative: bool = False) -> Report:
    """Returns :func:`auxcheck._runtime.validators.check_forward_observer`'s report (``found``,
    ``published`` and ``speculative`` as in :func:`sampling_report`)."""
    from auxcheck._runtime.observer_hooks import check_observers, forward_producer

    report = Report(f"forward observer {type_name(obj)}", list(found))
    _, shape = method_findings(obj, "after_forward", ["batch", "forward_batch", "logits_output"],
                               missing="AUX102", arity="AUX102", keywords=["can_run_graph"])
    report.extend(_with_hint(f, _FORWARD_HINT) for f in shape)
    if sampling_observer is not None:
        report.extend(_hook_findings(sampling_observer))
    if not report:
        report.extend(check_observers(forward_producer(obj, sampling_observer),
                                      subject=report.subject, batch_size=batch_size,
                                      static=static, steps=steps, published=published,
                                      speculative=speculative))
    return report


def _with_hint(finding: Finding, hint: str) -> Finding:
    return replace(finding, hint=hint)
