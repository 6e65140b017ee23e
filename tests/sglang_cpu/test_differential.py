"""The differential tier: auxcheck's scheduler model against SGLang 0.5.23's real code, on the same events.

Hypothesis draws scenarios (requests with their ``max_new_tokens``, and what happens to
each in each step: an ordinary token, EOS, a stop token, a stop string, an abort, a
chunked prefill, a grammar that terminates, a retraction), with the overlap loop on or off. Each scenario runs
through SGLang's real ``process_batch_result_prefill/decode``, ``_build_auxiliary_commits``
and ``Req.update_finish_state`` in the CPU SGLang environment (``tests/sglang_cpu/driver.py``)
and through auxcheck's model (``apply_event``, ``stays_running``, ``build_commits``): the
requests in each batch, the commits each ``consume`` is handed, ``finished()`` and
``finished_len`` as ``consume`` sees them, and every request's final state must agree.

Differences the model keeps on purpose are in docs/contract.md ("What is proven against
SGLang's real code").
"""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest
from driver import EOS, ORDINARY, STOP_STR, STOP_TOKEN
from helpers.sglang_cpu import Driver
from hypothesis import given, settings
from hypothesis import strategies as st

from auxcheck._runtime.scheduler import Event as E
from auxcheck._runtime.scheduler import (
    FakeBatch,
    FakeReq,
    FakeSamplingParams,
    SchedulerModel,
    build_commits,
    snapshot_output_starts,
)

pytestmark = pytest.mark.slow

STOP_STR_TOKEN = ord(STOP_STR)
"""The token the driver's tokenizer decodes to the stop string."""

KINDS = ("token", "eos", "stop_token", "stop_str", "abort", "chunked", "grammar_end", "retract")
REASONS = {"FINISH_MATCHED_TOKEN": "stop", "FINISH_MATCHED_STR": "stop",
           "FINISH_LENGTH": "length", "FINISH_ABORT": "abort", None: None}
"""SGLang's finish reasons, by the model's names."""


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """Returns a scenario: 1-4 requests, 1-7 steps of events, overlap on or off."""
    overlap = draw(st.booleans())
    count = draw(st.integers(1, 4))
    requests = [{"rid": f"r{i}", "max_new_tokens": draw(st.integers(1, 6))} for i in range(count)]
    kinds = st.sampled_from(KINDS if overlap else KINDS[:-1])
    ordinary = st.just("token")
    steps = draw(st.lists(st.dictionaries(st.sampled_from([r["rid"] for r in requests]),
                                          st.one_of(ordinary, kinds), max_size=count),
                          min_size=1, max_size=7))
    return {"overlap": overlap, "requests": requests, "steps": steps}


def _event(kind: str, started: bool, step: int) -> tuple[E, list[int]]:
    token = {"eos": EOS, "stop_token": STOP_TOKEN}.get(kind, ORDINARY + step % 40)
    if kind == "stop_str":
        return E.FINISH, [STOP_STR_TOKEN]
    if kind == "abort":
        return E.ABORT, [token]
    if kind == "grammar_end":
        return E.GRAMMAR_END, [token]
    if kind == "chunked" and not started:
        return E.CHUNKED, []
    return E.DECODE, [token]


def model_run(scenario: dict[str, Any]) -> dict[str, Any]:
    """Returns what auxcheck's model makes of ``scenario``, in the driver's shape.

    The loop is the driver's (batch N formed before N-1 is processed under overlap; a
    retraction marked while N+1 forms); every rule inside it is the model's.
    """
    overlap = scenario["overlap"]
    reqs = [FakeReq(r["rid"], origin_input_ids=[5, 6, 7], eos_token_ids={EOS},
                    sampling_params=FakeSamplingParams(max_new_tokens=r["max_new_tokens"],
                                                       stop_token_ids={STOP_TOKEN}))
            for r in scenario["requests"]]
    model = SchedulerModel(overlap=overlap)
    model.admit(reqs)
    queued: deque[tuple[int, FakeBatch, dict[str, str]]] = deque()
    steps_out: list[dict[str, Any]] = []

    def process() -> None:
        step, batch, events = queued.popleft()
        starts = snapshot_output_starts(batch)
        model.commit(batch, {r.rid: _event(events.get(r.rid, "token"), bool(r.output_ids), step)
                             for r in batch.reqs})
        commits = build_commits(FakeBatch(batch.reqs), starts)
        steps_out[step]["consume"] = [{
            "rids": [r.rid for r in batch.reqs],
            "commits": [None if c is None else [c.output_index, list(c.token_ids)]
                        for c in commits],
            "finished": [r.finished() for r in batch.reqs],
            "finished_len": [r.finished_len for r in batch.reqs]}]

    for step, events in enumerate(scenario["steps"]):
        in_flight = queued[-1][1].reqs if queued else ()
        batch = model.batch(None, in_flight=in_flight)
        if not batch.reqs:
            break
        steps_out.append({"rids": [r.rid for r in batch.reqs]})
        queued.append((step, batch.copy(), events))
        if not overlap or len(queued) > 1:
            process()
        for req in batch.reqs:
            if events.get(req.rid) == "retract":
                req.is_retracted = True
    while queued:
        process()
    final = {r.rid: {"output_ids": list(r.output_ids), "finished_len": r.finished_len,
                     "finished": r.finished(), "reason": r.finished_reason} for r in reqs}
    return {"steps": steps_out, "requests": final}


def comparable(real: dict[str, Any]) -> dict[str, Any]:
    """Returns SGLang's result with its finish reasons named as the model names them."""
    steps = [{k: v for k, v in step.items() if k != "prefill"} for step in real["steps"]]
    requests = {rid: {**state, "reason": REASONS[state["reason"]]}
                for rid, state in real["requests"].items()}
    return {"steps": steps, "requests": requests}


CASES = {
    "an aborted running request commits its last token, finished with no finished_len": {
        "overlap": True, "requests": [{"rid": "a", "max_new_tokens": 8}],
        "steps": [{}, {"a": "abort"}, {}]},
    "a stop token, EOS and stop string each finish with the whole output visible": {
        "overlap": False, "requests": [{"rid": "a", "max_new_tokens": 8},
                                       {"rid": "b", "max_new_tokens": 8},
                                       {"rid": "c", "max_new_tokens": 8}],
        "steps": [{}, {"a": "eos", "b": "stop_token", "c": "stop_str"}]},
    "a request finishing by length in flight leaves the next batch; a stopped one lingers": {
        "overlap": True, "requests": [{"rid": "a", "max_new_tokens": 2},
                                      {"rid": "b", "max_new_tokens": 8}],
        "steps": [{}, {"b": "eos"}, {}, {}]},
    "a grammar that terminates finishes its request with no finished_len, its token committed": {
        "overlap": False, "requests": [{"rid": "a", "max_new_tokens": 8}],
        "steps": [{}, {"a": "grammar_end"}]},
    "a chunked prefill commits nothing, then its first token": {
        "overlap": True, "requests": [{"rid": "a", "max_new_tokens": 4},
                                      {"rid": "b", "max_new_tokens": 4}],
        "steps": [{"a": "chunked"}, {}, {}]},
    "a request retracted with its step in flight gets a None commit and leaves": {
        "overlap": True, "requests": [{"rid": "a", "max_new_tokens": 8},
                                      {"rid": "b", "max_new_tokens": 8}],
        "steps": [{}, {"a": "retract"}, {}, {}]},
}


@pytest.mark.parametrize("scenario", list(CASES.values()), ids=list(CASES))
def test_the_model_agrees_with_sglang_on(sglang: Driver, scenario: dict[str, Any]) -> None:
    assert model_run(scenario) == comparable(sglang.run(scenario))


def test_an_aborted_request_is_committed_with_finished_len_none_in_sglang(sglang: Driver) -> None:
    """The case the model once missed: what a consume doing arithmetic on finished_len meets."""
    real = sglang.run(CASES["an aborted running request commits its last token, finished "
                            "with no finished_len"])
    aborted = real["steps"][1]["consume"][0]
    assert aborted["commits"] == [[1, [ORDINARY + 1]]]
    assert aborted["finished"] == [True]
    assert aborted["finished_len"] == [None]


@settings(max_examples=300, deadline=None, database=None)
@given(scenario=scenarios())
def test_the_model_agrees_with_sglang_on_drawn_scenarios(sglang: Driver,
                                                         scenario: dict[str, Any]) -> None:
    assert model_run(scenario) == comparable(sglang.run(scenario))
