"""Observers' hooks run as SGLang's model runner calls them: producers for the step loop.

Every tensor SGLang hands a hook is held right before the call and compared right after
it (:mod:`auxcheck._runtime.handed`): a hook that wrote to one is AUX113, and the loop
goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from auxcheck._core.errors import PluginCallFailed
from auxcheck._core.plugin_calls import MISSING, announce, attempt, kind_name, lookup
from auxcheck._core.protocols import append_auxiliary_output
from auxcheck._core.report import Finding, Report, describe
from auxcheck._runtime.batches import OBSERVER_SIZES, BatchSize
from auxcheck._runtime.forward import FakeSamplingInfo, Forward
from auxcheck._runtime.handed import hold, sampler_failed, written
from auxcheck._runtime.loop import Producer, run_loop
from auxcheck._runtime.reads import storage_key, watch_reads
from auxcheck._runtime.sglang_fields import unsimulated_note

if TYPE_CHECKING:
    from auxcheck._runtime.static_buffers import StaticBufferRegistry

__all__ = ["check_observers", "forward_producer", "sampling_producer"]


def _hook(observer: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    announce("AUX102", "`" + name + "` of {}", observer)
    found = lookup(observer, name)
    outcome = found if found.error is not None or not callable(found.value) else \
        attempt(found.value, *args, **kwargs)
    if outcome.error is not None and (note := unsimulated_note(outcome.error, name, "",
                                                               observer)) is not None:
        raise PluginCallFailed(note)
    if outcome.error is not None or outcome.value is MISSING:
        seen = "is no longer there" if outcome.error is None else \
            f"raised {kind_name(outcome.error)}"
        raise PluginCallFailed(Finding.of("AUX102", f"{name} {seen}",
                                    "expected the observer's hooks to run as SGLang calls them",
                                    observer, detail=outcome.detail))
    return outcome.value


def _truth(observer: Any, name: str, value: Any) -> bool:
    """Returns ``bool(value)`` of what hook ``name`` returned; a raising ``__bool__`` is AUX102."""
    announce("AUX102", "the truth value of what `" + name + "` of {} returned", observer)
    outcome = attempt(bool, value)
    if outcome.error is not None:
        raise PluginCallFailed(Finding.of("AUX102", f"{name} returned {describe(value)}, whose truth "
                                    f"value raised {kind_name(outcome.error)}",
                                    "expected a bool", observer, detail=outcome.detail))
    return bool(outcome.value)


_SAMPLING_PASSES_ON = "grammar mask, sampler"
_FORWARD_PASSES_ON = "sampling, the scheduler"


def _watched(observer: Any, name: str, handed: Sequence[tuple[str, Any]],
             passes_on: str, step: int, *args: Any, **kwargs: Any
             ) -> tuple[Any, list[Finding]]:
    """Returns what hook ``name`` returned, and AUX113 for what it wrote of ``handed``."""
    held = hold(handed)
    value = _hook(observer, name, *args, **kwargs)
    return value, written(held, f"{name} at step {step + 1}", passes_on, observer)


def sampling_producer(observer: Any) -> Producer:
    """Returns a producer running ``observer``'s hooks as ``ModelRunner.sample`` does.

    ``is_active`` gates it; ``before_grammar`` gets the logits (a view of the graph's
    output on decode steps), which the sampler then edits in place (:func:`_sample`);
    ``after_sample`` gets the sampled ids unless the state was None. What a hook wrote
    to what it was handed (AUX113), and an ``after_sample`` that read the edited logits
    (AUX115), are noted on the forward.
    """
    return lambda forward: _sample_step(observer, forward)


def _sample_step(observer: Any, forward: Forward) -> Any:
    info, step = forward.forward_batch.sampling_info, forward.step
    active, wrote = _watched(observer, "is_active", [("sampling_info", info)],
                             _SAMPLING_PASSES_ON, step, info)
    forward.noted.extend(wrote)
    if not _truth(observer, "is_active", active):
        return None
    logits = forward.logits_output.next_token_logits
    state, wrote = _watched(observer, "before_grammar",
                            [("logits", logits), ("sampling_info", info)],
                            _SAMPLING_PASSES_ON, step, logits, info)
    sampled = attempt(_sample, logits, info)
    if sampled.error is not None and wrote:  # the hook's write is why SGLang would fail
        wrote[0] = sampler_failed(wrote[0], kind_name(sampled.error), sampled.detail)
    forward.noted.extend(wrote)
    if sampled.error is not None:
        raise PluginCallFailed(wrote[0] if wrote else Finding.of(
            "AUX102", f"the sampler could not run after before_grammar: "
            f"{kind_name(sampled.error)}", "expected the hooks to leave the logits and "
            "sampling info as SGLang passed them", observer, detail=sampled.detail))
    if state is None:
        return None
    edited = {key} if (key := storage_key(logits)) is not None else set()
    with watch_reads(lambda: edited) as reads:
        output, wrote = _watched(observer, "after_sample", [("token_ids", sampled.value)],
                                 "the ids it commits to the requests", step, state,
                                 sampled.value)
    forward.noted.extend(wrote)
    if reads.seen:
        forward.noted.append(Finding.of(
            "AUX115", f"after_sample read the logits handed to before_grammar "
            f"({', '.join(reads.seen[:3])}) at step {step + 1}, after the sampler edited them in "
            "place (grammar mask, temperature, softmax): it saw probabilities, not the logits",
            "expected what after_sample needs computed or cloned in before_grammar", observer))
    return output


def _sample(logits: Any, info: FakeSamplingInfo) -> Any:
    """Samples as SGLang's sampler does, editing ``logits`` in place as it does.

    ``SamplingBatchInfo.apply_logits_bias_with_observer`` applies the grammar mask after
    ``before_grammar`` (here: a grammar allows the lower half of the vocabulary); then
    ``Sampler.forward`` divides by the temperatures and writes the softmax over the logits
    (``logits[:] = softmax(logits)``). The model's pick is the most likely token.
    """
    for row, grammar in enumerate(info.grammars or ()):
        if grammar is not None:
            logits[row, logits.shape[-1] // 2:] = float("-inf")
    logits.div_(info.temperatures)
    logits[:] = logits.softmax(dim=-1)
    return logits.argmax(dim=-1)


def forward_producer(observer: Any, sampling: Any = None) -> Producer:
    """Returns a producer running ``after_forward`` right after the forward, then sampling.

    The forward output comes first in the composite, as SGLang main composes them.
    """
    def produce(forward: Forward) -> Any:
        output, wrote = _watched(
            observer, "after_forward", [("forward_batch", forward.forward_batch),
                                        ("logits_output", forward.logits_output)],
            _FORWARD_PASSES_ON, forward.step, forward.batch, forward.forward_batch,
            forward.logits_output, can_run_graph=forward.can_run_graph)
        forward.noted.extend(wrote)
        if sampling is not None:
            sampled = _sample_step(sampling, forward)
            composed = attempt(append_auxiliary_output, output, sampled)
            if composed.error is not None:
                raise PluginCallFailed(Finding.of(
                    "AUX102", f"composing the forward and sampling outputs raised "
                    f"{kind_name(composed.error)}", "expected device outputs that behave "
                    "like plain objects", observer, detail=composed.detail))
            output = composed.value
        return output

    return produce


def check_observers(produce: Producer, *, subject: str, batch_size: int | None = None,
                    static: StaticBufferRegistry | None = None, steps: int = 4,
                    overlap: bool = True, seed: int = 0,
                    published: list[int] | None = None, speculative: bool = False) -> Report:
    """Returns the findings of the outputs ``produce`` publishes over ``steps`` steps.

    ``published``, when given, gets the number of each step that published an output;
    ``speculative`` gives steps that commit several tokens to a request (stock SGLang
    runs no observer under speculative decoding or dLLM).
    """
    def counted(forward: Forward) -> Any:
        output = produce(forward)
        if output is not None and published is not None:
            published.append(forward.step)
        return output

    sizes = BatchSize((batch_size,) if batch_size else OBSERVER_SIZES)
    found = run_loop(counted, size=sizes, steps=steps, static=static, overlap=overlap,
                     seed=seed, speculative=speculative)
    report = Report(subject)
    report.extend(sorted(found, key=lambda f: f.code))
    return report
