"""SGLang's step loop on CPU: the one place a published output is judged, whoever published it.

One step, as SGLang 0.5.23's overlap loop runs it (``event_loop_overlap`` in
``managers/scheduler.py``; copy in ``GenerationBatchResult.copy_auxiliary_output_to_cpu``,
``managers/utils.py``; consume in ``batch_result_processor.py``):

1. the scheduler forms batch N; forward N replays the decode CUDA graph, rewriting its
   persistent outputs (``next_token_logits``, ``hidden_states``); observers run on
   ``[:n]`` views of them (a prefill step runs eagerly, on fresh tensors);
2. right after forward N, ``device_output.copy_to_host(copy_tensor)``: the copy is
   issued on a copy stream that forward N+1 never waits for;
3. forward N+1 runs (rewriting the graph outputs, running the observers again);
4. step N is processed: the copy reads its bytes (worst case: only now), commits are
   built from the ``batch.copy()`` taken when N was queued, and the host output is
   consumed exactly once.

The output published in a step is copied and consumed by :mod:`auxcheck._runtime.published`;
device outputs and observers become producers in :mod:`auxcheck._runtime.output_sources` and
:mod:`auxcheck._runtime.observer_hooks`. torch is imported by the functions that need it,
never at import time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from auxcheck._core.errors import PluginCallFailed
from auxcheck._core.plugin_calls import kind_name, passes_through, phase_code, summarize
from auxcheck._core.report import Finding
from auxcheck._runtime.batches import BatchSize
from auxcheck._runtime.forward import Forward, GraphOutputs
from auxcheck._runtime.published import PublishedLeaf, located, process_step, publish
from auxcheck._runtime.scheduler import FakeBatch, SchedulerModel, describe_events

if TYPE_CHECKING:
    from auxcheck._runtime.static_buffers import StaticBufferRegistry

__all__ = ["DELAYED", "PluginCallFailed", "Producer", "broken_checker", "delays_sampling", "run_loop"]


Producer = Callable[[Forward], Any]
"""Returns the device output published in one forward (None for none); raises PluginCallFailed.

What it finds that does not stop the step goes to ``forward.noted``; the finding of a
PluginCallFailed may be one of them.
"""


def run_loop(produce: Producer, *, size: BatchSize, steps: int,
             static: StaticBufferRegistry | None = None, overlap: bool = True,
             seed: int = 0, speculative: bool = False) -> list[Finding]:
    """Runs ``steps`` steps of SGLang's loop with ``produce`` publishing; returns the findings.

    Each code is reported from the first step that shows it. ``overlap=False`` runs the
    non-overlap loop (the copy completes before the next forward). ``speculative`` lets
    steps commit several tokens to a request, as speculative decoding does; leave it off
    for what stock SGLang's sampling observers publish (it never runs them under it).
    """
    model = SchedulerModel(seed=seed, speculative=speculative, overlap=overlap)
    graph = GraphOutputs(max_rows=max(size.sizes), seed=seed)
    registries = [r for r in (static, graph.registry()) if r is not None]
    queue: deque[tuple[int, FakeBatch, list[PublishedLeaf]]] = deque()
    found: dict[str, list[Finding]] = {}
    first: dict[str, int] = {}

    def keep(findings: Iterable[Finding], step: int) -> None:
        for finding in findings:
            if first.setdefault(finding.code, step) == step:
                found.setdefault(finding.code, []).append(finding)

    def process() -> None:
        step, batch, published = queue.popleft()
        commits = model.commit(batch)
        events = describe_events(model.events[-1].values())
        at = f"at step {step + 1} ({len(batch.reqs)} requests: {events})"
        keep(process_step(published, batch, commits, registries, at), step)

    live = FakeBatch()
    phase_code("")
    try:
        for step in range(steps):
            in_flight = queue[-1][1].reqs if queue else ()
            # the running batch persists; rebound
            live.reqs = model.batch(size.at(step), in_flight=in_flight).reqs
            delayed = delays_sampling(step, overlap=overlap)
            forward = graph.forward(step, live, grammar=delayed)
            live.forward_mode = forward.forward_batch.forward_mode
            at = f"at step {step + 1}"
            if delayed:  # the sampler waits for step N-1's grammar state: processed first
                at += f" ({DELAYED})"
                while queue:
                    process()
            try:
                output = produce(forward)
            except PluginCallFailed as failed:
                keep(forward.noted, step)
                if not any(failed.finding is f for f in forward.noted):
                    keep([located(failed.finding, "", at)], step)
                break
            keep(forward.noted, step)
            published: list[PublishedLeaf] = []
            if output is not None:
                published, copied = publish(output, registries, at)
                keep(copied, step)
            queue.append((step, live.copy(), published))
            if not overlap or len(queue) > 1:
                process()
        graph.replay()  # the forward that follows the last step
        while queue:
            process()
    except BaseException as exc:  # what a plugin left behind broke the checker
        if passes_through(exc):
            raise
        keep([broken_checker(exc, produce)], steps)
    return [f for code in sorted(found) for f in found[code]]


DELAYED = "sampling delayed by a grammar request"
"""How a step whose sampling SGLang delays is named in findings and the suite's header."""
_DELAYED_EVERY = 3


def delays_sampling(step: int, *, overlap: bool) -> bool:
    """Returns True for the steps whose batch holds a grammar request (every third one).

    Under overlap SGLang then delays sampling (``launch_batch_sample_if_needed``,
    ``managers/scheduler.py``): forward N runs, step N-1 is processed (its consume), and
    only then do the observer's hooks for N run and N's output get copied.
    """
    return overlap and step % _DELAYED_EVERY == _DELAYED_EVERY - 1


_PHASE_DEFAULT = "AUX103"


def broken_checker(exc: BaseException, obj: Any, default: str = _PHASE_DEFAULT) -> Finding:
    """Returns the finding for an error the checker met while judging what plugin code left.

    It is reported under the rule of the plugin code that ran last (a hostile value it
    returned, a request it rebound, a tensor subclass whose operations raise), with the
    traceback, so neither the plugin's nor the checker's error is lost.
    """
    code = phase_code(default)
    return Finding.of(code, f"auxcheck could not finish judging the output: checking what "
                      f"plugin code returned raised {kind_name(exc)}",
                      "expected plain values that behave like their types (no hostile "
                      "__eq__, __len__, __iter__, properties or tensor subclasses)", obj,
                      detail=summarize(exc, frames=5))
