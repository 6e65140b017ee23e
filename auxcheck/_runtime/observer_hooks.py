"""Observers' hooks run as SGLang's model runner calls them: producers for the step loop."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from auxcheck._core.plugin_calls import MISSING, announce, attempt, kind_name, lookup
from auxcheck._runtime.batches import OBSERVER_SIZES, BatchSize
from auxcheck._runtime.forward import FakeSamplingInfo, Forward
from auxcheck._runtime.loop import HookFailed, Producer, run_loop
from auxcheck.protocols import append_auxiliary_output
from auxcheck.report import Finding, Report, describe

if TYPE_CHECKING:
    from auxcheck.aliasing import StaticBufferRegistry

__all__ = ["check_observers", "forward_producer", "sampling_producer"]


def _hook(observer: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    announce("AUX102", "`" + name + "` of {}", observer)
    found = lookup(observer, name)
    outcome = found if found.error is not None or not callable(found.value) else \
        attempt(found.value, *args, **kwargs)
    if outcome.error is not None or outcome.value is MISSING:
        seen = "is no longer there" if outcome.error is None else \
            f"raised {kind_name(outcome.error)}"
        raise HookFailed(Finding.of("AUX102", f"{name} {seen}",
                                    "expected the observer's hooks to run as SGLang calls them",
                                    observer, detail=outcome.detail))
    return outcome.value


def _truth(observer: Any, name: str, value: Any) -> bool:
    """Returns ``bool(value)`` of what hook ``name`` returned; a raising ``__bool__`` is AUX102."""
    announce("AUX102", "the truth value of what `" + name + "` of {} returned", observer)
    outcome = attempt(bool, value)
    if outcome.error is not None:
        raise HookFailed(Finding.of("AUX102", f"{name} returned {describe(value)}, whose truth "
                                    f"value raised {kind_name(outcome.error)}",
                                    "expected a bool", observer, detail=outcome.detail))
    return bool(outcome.value)


def sampling_producer(observer: Any) -> Producer:
    """Returns a producer running ``observer``'s hooks as ``ModelRunner.sample`` does.

    ``is_active`` gates it; ``before_grammar`` gets the logits (a view of the graph's
    output on decode steps), which the sampler then scales in place by the temperatures;
    ``after_sample`` gets the sampled ids unless the state was None.
    """
    def produce(forward: Forward) -> Any:
        info = forward.forward_batch.sampling_info
        if not _truth(observer, "is_active", _hook(observer, "is_active", info)):
            return None
        logits = forward.logits_output.next_token_logits
        state = _hook(observer, "before_grammar", logits, info)
        sampled = attempt(_sample, logits, info)
        if sampled.error is not None:
            raise HookFailed(Finding.of(
                "AUX102", f"the sampler could not run after before_grammar: "
                f"{kind_name(sampled.error)}", "expected the hooks to leave the logits and "
                "sampling info as SGLang passed them", observer, detail=sampled.detail))
        if state is None:
            return None
        return _hook(observer, "after_sample", state, sampled.value)

    return produce


def _sample(logits: Any, info: FakeSamplingInfo) -> Any:
    logits.div_(info.temperatures)  # what the sampler does to the logits, in place
    return logits.argmax(dim=-1)


def forward_producer(observer: Any, sampling: Any = None) -> Producer:
    """Returns a producer running ``after_forward`` right after the forward, then sampling.

    The forward output comes first in the composite, as SGLang main composes them.
    """
    then = None if sampling is None else sampling_producer(sampling)

    def produce(forward: Forward) -> Any:
        output = _hook(observer, "after_forward", forward.batch, forward.forward_batch,
                       forward.logits_output, can_run_graph=forward.can_run_graph)
        if then is not None:
            sampled = then(forward)
            composed = attempt(append_auxiliary_output, output, sampled)
            if composed.error is not None:
                raise HookFailed(Finding.of(
                    "AUX102", f"composing the forward and sampling outputs raised "
                    f"{kind_name(composed.error)}", "expected device outputs that behave "
                    "like plain objects", observer, detail=composed.detail))
            output = composed.value
        return output

    return produce


def check_observers(produce: Producer, *, subject: str, batch_size: int | None = None,
                    static: StaticBufferRegistry | None = None, steps: int = 4,
                    overlap: bool = True, seed: int = 0,
                    published: list[int] | None = None) -> Report:
    """Returns the findings of the outputs ``produce`` publishes over ``steps`` steps.

    ``published``, when given, gets the number of each step that published an output.
    """
    def counted(forward: Forward) -> Any:
        output = produce(forward)
        if output is not None and published is not None:
            published.append(forward.step)
        return output

    sizes = BatchSize((batch_size,) if batch_size else OBSERVER_SIZES)
    report = Report(subject)
    report.extend(run_loop(counted, size=sizes, steps=steps, static=static, overlap=overlap,
                           seed=seed))
    return report
