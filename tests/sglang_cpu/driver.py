"""SGLang 0.5.23's real result processing, driven by request events: the oracle of the differential tier.

Runs inside auxcheck's CPU SGLang environment (``make sglang-cpu``), never in the suite's own
interpreter. It reads one scenario a line on stdin (JSON) and writes one result a line on
stdout. A scenario names requests (``rid``, ``max_new_tokens``) and, for each step, what
happens to each request if it is in that step's batch:

- ``token``: an ordinary token is sampled; ``eos``: the model's EOS token; ``stop_token``: a
  token of the request's ``stop_token_ids``; ``stop_str``: a token that completes the
  request's stop string;
- ``abort``: ``/abort_request`` reaches the request while its step runs (``to_finish =
  FINISH_ABORT()``, as the scheduler's "abort method 3" leaves it) and a token is sampled;
- ``retract``: the scheduler retracted the request while forming the next batch, with this
  step in flight (overlap only: without overlap a step is processed before the next forms);
- ``chunked``: its prefill is chunked: this pass ends no prefill (``inflight_middle_chunks``);
- ``grammar_end``: the request's grammar has terminated when this pass's token is committed
  (every request has a grammar that accepts any token until then).

A line ``{"sample": {"logits": [[...]], "temperatures": [...]}}`` instead runs SGLang's real
``ModelRunner.sample`` once with an observer that keeps the logits ``before_grammar`` gets,
and returns them as they were then and as ``after_sample`` finds them.

A scenario may name a plugin's host output class (``"host": "path/file.py:Class"``): a new one
is consumed each step, as SGLang consumes it; what it raises ends the scenario as it ends the
scheduler, and the result is then ``{"plugin_raised": "TypeError: ..."}``.

What is real: ``Req`` (its ``__init__``, ``finished()``, ``update_finish_state``,
``next_output_finishes_by_length``), ``SamplingParams.normalize``, ``ScheduleBatch``'s methods,
``SchedulerBatchResultProcessor.process_batch_result_prefill`` / ``process_batch_result_decode``
(commits built by ``_build_auxiliary_commits``, consumed by ``consume_auxiliary_output``),
``Scheduler._reqs_finishing_inflight`` and the keep rule of ``ScheduleBatch.filter_batch``.
Faked: the processor's collaborators (KV allocator, tree cache, metrics, output streamer:
``MagicMock``), the batch's tensors (none are read on this path), a tokenizer that decodes
token ``i`` to ``chr(i)``.

A step's batch is the running requests (overlap: formed before the previous step is
processed, so a request that finished there is still in it, unless it finishes by length in
flight, which ``_reqs_finishing_inflight`` drops); a step with a request still in prefill is
a mixed extend batch, processed by ``process_batch_result_prefill``.
"""

from __future__ import annotations

import json
import sys
from array import array
from collections import deque
from typing import Any
from unittest import mock

from real_sglang import publish_cpu_context
from real_sglang import sample as sample_with

EOS = 2
STOP_TOKEN = 3
STOP_STR = "Z"
ORDINARY = 40


class Tokenizer:
    """Decodes token ``i`` to ``chr(i)``: enough for SGLang's stop-string check."""

    eos_token_id = EOS
    additional_stop_token_ids = None

    def decode(self, ids: Any, *args: Any, **kwargs: Any) -> str:
        return "".join(chr(i) for i in ids)

    def encode(self, text: str, *args: Any, **kwargs: Any) -> list[int]:
        return [ord(c) for c in text]


class Grammar:
    """A request's grammar: accepts every token; terminated once a scenario says so."""

    def __init__(self) -> None:
        self.terminated = False
        self.finished = False

    def accept_token(self, token: int) -> None:
        return None

    def is_terminated(self) -> bool:
        return self.terminated


class PluginRaised(Exception):
    """A plugin's ``consume`` raised inside SGLang's result processing (the scheduler dies)."""


class Recorder:
    """A host output that records what ``consume`` was handed, in SGLang's real call.

    ``plugin``, when given, is a plugin's host output: its ``consume`` runs next, as SGLang
    runs it (what it raises ends the scenario, as it would end the scheduler).
    """

    def __init__(self, plugin: Any = None) -> None:
        self.calls: list[Any] = []
        self.plugin = plugin

    def consume(self, batch: Any, commits: Any) -> None:
        self.record(batch, commits)
        if self.plugin is not None:
            try:
                self.plugin.consume(batch, commits)
            except Exception as exc:
                raise PluginRaised(f"{type(exc).__name__}: {exc}") from exc

    def record(self, batch: Any, commits: Any) -> None:
        self.calls.append({
            "rids": [r.rid for r in batch.reqs],
            "commits": [None if c is None else [c.output_index, list(c.token_ids)]
                        for c in commits],
            "finished": [r.finished() for r in batch.reqs],
            "finished_len": [r.finished_len for r in batch.reqs],
        })


def processor(overlap: bool) -> Any:
    from sglang.srt.managers.scheduler_components.batch_result_processor import (
        SchedulerBatchResultProcessor,
    )

    proc = object.__new__(SchedulerBatchResultProcessor)
    for name in ("output_streamer", "metrics_reporter", "metrics_collector",
                 "token_to_kv_pool_allocator", "tree_cache", "beam_coordinator",
                 "hisparse_coordinator", "req_to_token_pool", "decode_offload_manager",
                 "logprob_result_processor", "model_worker", "draft_worker", "model_config"):
        object.__setattr__(proc, name, mock.MagicMock(name=name))
    proc.beam_coordinator.commit_decode.return_value = set()
    proc.model_config.self_opened_think_start_ids = None
    proc.model_config.think_end_ids = None
    object.__setattr__(proc, "enable_overlap", overlap)
    object.__setattr__(proc, "enable_overlap_mlx", False)
    object.__setattr__(proc, "is_generation", True)
    return proc


def batch_of(reqs: list[Any], prefill: bool) -> Any:
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    batch = object.__new__(ScheduleBatch)
    batch.reqs = list(reqs)
    batch.spec_algorithm = SpeculativeAlgorithm.NONE
    batch.return_logprob = False
    batch.return_hidden_states = False
    batch.forward_mode = ForwardMode.EXTEND if prefill else ForwardMode.DECODE
    batch.is_prefill_only = False
    batch.decoding_reqs = None
    batch.forward_iter = 0
    return batch


def result_of(tokens: list[int], host: Recorder) -> Any:
    import torch
    from sglang.srt.layers.logits_processor import LogitsProcessorOutput
    from sglang.srt.managers.utils import GenerationBatchResult

    result = GenerationBatchResult(
        logits_output=LogitsProcessorOutput(next_token_logits=torch.zeros(len(tokens), 4)),
        next_token_ids=torch.tensor(tokens, dtype=torch.int64), can_run_cuda_graph=False)
    result.auxiliary_host_output = host
    result.extend_input_len_per_req = [1] * len(tokens)
    result.extend_logprob_start_len_per_req = [0] * len(tokens)
    return result


def new_req(rid: str, max_new_tokens: int) -> Any:
    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.sampling.sampling_params import SamplingParams

    params = SamplingParams(max_new_tokens=max_new_tokens, stop=[STOP_STR],
                            stop_token_ids=[STOP_TOKEN])
    tokenizer = Tokenizer()
    params.normalize(tokenizer)  # as the tokenizer manager does
    req = Req(rid, "x", array("q", [5, 6, 7]), params, eos_token_ids={EOS}, vocab_size=128)
    req.tokenizer = tokenizer
    req.grammar = Grammar()
    return req


def plugin_host(spec: str | None) -> Any:
    """Returns a new host output of the plugin class ``spec`` ("path/to/file.py:Class"), or None."""
    if spec is None:
        return None
    import importlib.util

    path, name = spec.rsplit(":", 1)
    module_spec = importlib.util.spec_from_file_location("driver_plugin", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)()


def token_for(event: str, step: int) -> int:
    return {"eos": EOS, "stop_token": STOP_TOKEN, "stop_str": ord(STOP_STR)}.get(
        event, ORDINARY + step % 40)


def run(scenario: dict[str, Any]) -> dict[str, Any]:
    from sglang.srt.managers.schedule_batch import FINISH_ABORT
    from sglang.srt.managers.scheduler import Scheduler

    overlap = bool(scenario["overlap"])
    reqs = [new_req(r["rid"], r["max_new_tokens"]) for r in scenario["requests"]]
    started = set()  # requests whose prefill has ended (they decode from then on)
    proc = processor(overlap)
    scheduler = object.__new__(Scheduler)
    scheduler.enable_skip_finishing_decode = overlap
    scheduler.result_queue = deque()
    running = list(reqs)
    queued: deque[tuple[int, Any, Any, Recorder, bool, dict[str, str]]] = deque()
    steps_out: list[dict[str, Any]] = []

    def process() -> None:
        step, batch, result, host, prefill, events = queued.popleft()
        scheduler.result_queue.popleft()
        for req in batch.reqs:
            event = events.get(req.rid)
            if event == "abort":  # the abort reached the scheduler while this step ran
                req.to_finish = FINISH_ABORT()
            elif event == "chunked" and req.rid not in started:  # its prefill goes on
                req.inflight_middle_chunks = 1
            elif event == "grammar_end":
                req.grammar.terminated = True
        if prefill:
            proc.process_batch_result_prefill(batch, result)
        else:
            proc.process_batch_result_decode(batch, result)
        for req in batch.reqs:
            if req.output_ids:
                started.add(req.rid)
        steps_out[step]["consume"] = host.calls

    for step, events in enumerate(scenario["steps"]):
        # the keep rule of ScheduleBatch.filter_batch, with the in-flight length drop
        scheduler_batch = batch_of(running, prefill=False)
        finishing = set(map(id, scheduler._reqs_finishing_inflight(scheduler_batch)))
        running = [r for r in running if not r.finished() and not r.is_retracted
                   and id(r) not in finishing]
        if not running:
            break
        prefill = any(r.rid not in started for r in running)
        batch = batch_of(running, prefill)
        tokens = []
        for req in running:
            event = events.get(req.rid, "token")
            tokens.append(token_for(event, step))
        host = Recorder(plugin_host(scenario.get("host")))
        steps_out.append({"rids": [r.rid for r in running], "prefill": prefill})
        queued.append((step, batch, result_of(tokens, host), host, prefill, events))
        scheduler.result_queue.append((batch_of(running, prefill), None))
        if not overlap or len(queued) > 1:
            process()
        for req in running:  # retracted while forming the next batch (this step in flight)
            if events.get(req.rid) == "retract":
                req.is_retracted = True
    while queued:
        process()
    return finish(reqs, steps_out)


def finish(reqs: list[Any], steps_out: list[dict[str, Any]]) -> dict[str, Any]:
    final = {r.rid: {"output_ids": list(r.output_ids), "finished_len": r.finished_len,
                     "finished": r.finished(), "reason": type(r.finished_reason).__name__
                     if r.finished_reason is not None else None} for r in reqs}
    return {"steps": steps_out, "requests": final}


def sample(request: dict[str, Any]) -> dict[str, Any]:
    """Runs SGLang's real ``ModelRunner.sample`` once with an observer that keeps the logits.

    Returns the logits as ``before_grammar`` got them and as ``after_sample`` finds the very
    tensor it kept (the sampler edits it in place in between).
    """
    import torch

    seen: dict[str, Any] = {}

    class Keeping:
        def is_active(self, sampling_info: Any) -> bool:
            return True

        def before_grammar(self, logits: Any, sampling_info: Any) -> Any:
            seen["before_grammar"] = logits.tolist()
            return logits

        def after_sample(self, state: Any, token_ids: Any) -> None:
            seen["after_sample"] = state.tolist()

    sample_with(torch.tensor(request["logits"], dtype=torch.float32), request["temperatures"],
                Keeping())
    return seen


def main() -> None:
    publish_cpu_context(sys.argv[1])
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            out = sample(request["sample"]) if "sample" in request else run(request)
        except PluginRaised as raised:
            out = {"plugin_raised": raised.args[0]}
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails with it
            import traceback

            out = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
