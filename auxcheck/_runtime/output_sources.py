"""Device outputs as the step loop's publishers: an instance, a factory, or one taking the batch.

When the batch an output was built for is neither declared nor given to its factory,
the likely sizes are tried in turn (:func:`auxcheck._runtime.batches.infer_batch_sizes`).
"""

from __future__ import annotations

import copy as copy_module
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from auxcheck._core.errors import PluginCallFailed
from auxcheck._core.plugin_calls import MISSING, announce, attempt, kind_name, lookup
from auxcheck._core.report import Finding, Report, describe
from auxcheck._runtime.batches import (
    DEFAULT_BATCH_SIZE,
    OBSERVER_SIZES,
    BatchSize,
    batch_noted,
    infer_batch_sizes,
)
from auxcheck._runtime.forward import Forward
from auxcheck._runtime.loop import Producer, run_loop
from auxcheck._runtime.scheduler import SchedulerModel

if TYPE_CHECKING:
    from auxcheck._runtime.static_buffers import StaticBufferRegistry

__all__ = ["OutputSource", "SourceKind", "check_source", "made_by", "sample_output", "source_of"]

SourceKind = Literal["instance", "factory", "batch-factory"]
_BATCH_CODES = frozenset({"AUX202", "AUX203"})
"""The findings that say SGLang could not have built the output for the batch tried."""


@dataclass(frozen=True, slots=True)
class OutputSource:
    """A device-output value: an instance, a zero-argument factory, or a factory taking the batch."""

    kind: SourceKind
    value: Any


def sample_output(source: OutputSource, batch_size: int | None = None) -> Any:
    """Returns one output of ``source``: the instance, or what its factory returns (None if it raises).

    A factory taking the batch gets a scheduler batch of ``batch_size`` requests
    (default :data:`DEFAULT_BATCH_SIZE`).
    """
    if source.kind == "instance":
        return source.value
    args = () if source.kind == "factory" else (
        SchedulerModel().batch(batch_size or DEFAULT_BATCH_SIZE),)
    return attempt(source.value, *args).value


def source_of(value: Any) -> OutputSource:
    """Returns how ``value`` yields device outputs.

    A class, or a callable without ``copy_to_host``, is a factory: called with no
    argument when it can be, else given each step's batch when it takes exactly one
    argument. Anything else is an instance.
    """
    is_class = issubclass(type(value), type)
    if not is_class and (lookup(value, "copy_to_host").value is not MISSING
                         or not callable(value)):
        return OutputSource("instance", value)
    found = attempt(inspect.signature, value)
    if found.error is not None or not isinstance(found.value, inspect.Signature):
        return OutputSource("factory", value)
    signature = found.value
    for kind, args in (("factory", ()), ("batch-factory", (object(),))):
        if attempt(signature.bind, *args).error is not None:
            continue
        return OutputSource(kind, value)  # type: ignore[arg-type]
    return OutputSource("instance", value)


def check_source(source: OutputSource, *, batch_size: int | None = None,
                 static: StaticBufferRegistry | None = None, steps: int = 3,
                 overlap: bool = True, seed: int = 0, speculative: bool = False) -> Report:
    """Returns the findings of the outputs ``source`` yields, run through SGLang's loop.

    An instance is one step; factories run ``steps`` steps, a fresh output each. The
    batch is known for a factory taking it, declared by ``batch_size``, or inferred:
    then up to three likely sizes are tried, the first one SGLang could have built the
    output for (no AUX202/203) wins, and the findings it affects name the inference.
    ``speculative`` gives consume multi-token steps (see :func:`run_loop`).
    """
    report = Report(f"device output {describe(source.value)}")
    if source.kind == "batch-factory":
        sizes = BatchSize((batch_size,) if batch_size else OBSERVER_SIZES)
        report.extend(run_loop(_batch_factory(source.value), size=sizes, steps=steps,
                               static=static, overlap=overlap, seed=seed,
                               speculative=speculative))
        return report
    runs = 1 if source.kind == "instance" else steps
    try:
        pristine, first = _first_output(source, keep_copy=batch_size is None)
    except PluginCallFailed as failed:
        report.add(failed.finding)
        return report
    candidates = ([BatchSize((batch_size,))] if batch_size else infer_batch_sizes(first))
    results = []
    for index, size in enumerate(candidates):
        output = first if index == 0 else _fresh(source, pristine)
        if output is None:
            break
        findings = run_loop(_outputs(source, output), size=size, steps=runs, static=static,
                            overlap=overlap, seed=seed, speculative=speculative)
        results.append((size, findings))
        if not any(f.code in _BATCH_CODES for f in findings):
            break
    size, findings = next(((s, f) for s, f in results
                           if not any(x.code in _BATCH_CODES for x in f)), results[0])
    tried = ", ".join(str(s.sizes[0]) for s, _ in results)
    how = size.how if len(results) == 1 or not size.how else f"{size.how} (sizes tried: {tried})"
    for finding in findings:
        report.add(batch_noted(finding, how))
    return report


def _first_output(source: OutputSource, *, keep_copy: bool) -> tuple[Any, Any]:
    """Returns (a pristine deep copy or None, the first output); raises PluginCallFailed when none.

    The copy of an instance is kept only when other batch sizes may be tried with it,
    and only when it is of the instance's own type (a ``__deepcopy__`` returning
    another object would judge that object instead).
    """
    if source.kind == "instance" and source.value is None:
        raise PluginCallFailed(Finding.of("AUX101", "the device output is None",
                                    "expected a device output with a callable copy_to_host",
                                    None))
    if source.kind == "instance" and not keep_copy:
        return None, source.value
    if source.kind == "instance":
        announce("AUX103", "copy.deepcopy of {} (to try another batch size)", source.value)
        copied = attempt(copy_module.deepcopy, source.value)
        same = copied.error is None and type(copied.value) is type(source.value)
        return copied.value if same else None, source.value
    return None, made_by(source.value)


def _fresh(source: OutputSource, pristine: Any) -> Any:
    """Returns another output to try a batch size with, or None when there is none."""
    if source.kind == "instance":
        if pristine is None:
            return None
        announce("AUX103", "copy.deepcopy of {} (to try another batch size)", pristine)
        copied = attempt(copy_module.deepcopy, pristine).value
        return copied if type(copied) is type(pristine) else None
    try:
        return made_by(source.value)
    except PluginCallFailed:
        return None


def made_by(factory: Any, *args: Any) -> Any:
    """Returns what a factory of device outputs returned for ``args`` (none, or the batch).

    Raises PluginCallFailed with AUX103 when it raised, AUX101 when it returned None: a
    fixture's factory is asked for a device output, unlike an observer, for which
    None means it publishes nothing this step.
    """
    announce("AUX103", "the factory {}", factory)
    outcome = attempt(factory, *args)
    batch = f" on a batch of {len(args[0].reqs)} requests" if args else ""
    expected = "expected it to return the device output built for that batch" if args else \
        "expected it to return a device output"
    if outcome.error is not None:
        raise PluginCallFailed(Finding.of("AUX103", f"the factory {describe(factory)} raised "
                                    f"{kind_name(outcome.error)}{batch}", expected, factory,
                                    detail=outcome.detail))
    if outcome.value is None:
        raise PluginCallFailed(Finding.of("AUX101", f"the factory {describe(factory)} returned "
                                    f"None{batch}", expected, factory))
    return outcome.value


def _outputs(source: OutputSource, first: Any) -> Producer:
    """Returns a producer publishing ``first``, then (factories) a fresh output per step."""
    def produce(forward: Forward) -> Any:
        return first if forward.step == 0 else made_by(source.value)

    return produce


def _batch_factory(factory: Any) -> Producer:
    def produce(forward: Forward) -> Any:
        return made_by(factory, forward.batch)

    return produce
