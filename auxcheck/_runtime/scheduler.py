"""The scheduler state that ``consume`` sees, and the steps SGLang 0.5.23 takes, as a CPU model.

SGLang snapshots each request's visible output length before committing a step's
tokens, then builds one ``CommittedTokens`` per request from the lengths after it
(None where nothing new became visible; ``_build_auxiliary_commits`` in
``managers/scheduler_components/batch_result_processor.py``). A visible length is
``finished_len`` when set, else ``len(output_ids)``; a length that moves backwards is
a scheduler error.

:class:`SchedulerModel` drives requests through the steps a real server takes, each as
``Req.update_finish_state`` (``managers/schedule_batch.py``) leaves the request:
prefill (a chunked one gives no token yet), decode, finish by a stop (EOS, a stop token
or a stop string: the token is appended and ``finished_len`` is the whole output), by
length (``max_new_tokens``), abort while running (the token of that pass is still
appended and committed, the request is finished and ``finished_len`` stays None) and
retraction; speculative decode (several tokens a step, a stop inside them hiding the rest)
only when asked for: stock SGLang runs no sampling observer under it
(``ModelRunner.supports_sampling_observer`` is False under speculative decoding and dLLM,
and the ``sampling_observer`` setter then raises). The overlap loop forms batch N+1 before
processing N, so a request finishing in N is still in N+1 (a None commit), unless it
finishes by length, which the scheduler foresees (``_reqs_finishing_inflight``).
Requests have ``array('q')`` outputs as SGLang's ``Req`` has, and their rids are in
no particular order, so a plugin that sorts ``batch.reqs`` in place is seen. These rules
are proven against SGLang's real code (``tests/sglang_cpu``). Importing this module does
not import torch.
"""

from __future__ import annotations

import enum
import random
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auxcheck._core.errors import SchedulerError
from auxcheck._core.protocols import CommittedTokens

EOS_TOKEN = 2
"""The EOS token of the model's requests."""

__all__ = [
    "EOS_TOKEN",
    "Event",
    "FakeBatch",
    "FakeForwardMode",
    "FakeReq",
    "FakeSamplingParams",
    "SchedulerModel",
    "apply_event",
    "build_commits",
    "describe_events",
    "snapshot_output_starts",
    "stays_running",
    "step_kinds",
    "visible_output_len",
]


DEFAULT_MAX_NEW_TOKENS = 128
"""SGLang's default ``max_new_tokens`` (``SamplingParams``): the model's requests finish by
length only where a test sets a smaller one."""


@dataclass(eq=False)
class FakeSamplingParams:
    """A request's ``SamplingParams`` as the tokenizer manager leaves them (normalized)."""

    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    min_p: float = 0.0
    stop_strs: list[str] = field(default_factory=list)
    stop_token_ids: set[int] | None = None
    ignore_eos: bool = False
    custom_params: dict[str, Any] | None = None


@dataclass(eq=False)
class FakeReq:
    """The request fields that plugins read in ``consume``, as on SGLang's ``Req``.

    ``output_ids`` is an ``array('q')`` (a list given here is converted);
    ``finished()`` means a finish reason is set; a ``finished_len`` given without a
    reason finishes the request with reason ``"length"``.
    """

    rid: str
    origin_input_ids: list[int] = field(default_factory=lambda: [1, 2, 3])
    output_ids: Any = field(default_factory=lambda: array("q"))
    finished_len: int | None = None
    is_retracted: bool = False
    customized_info: dict[str, list[Any]] | None = None
    finished_reason: str | None = None
    sampling_params: FakeSamplingParams = field(default_factory=FakeSamplingParams)
    eos_token_ids: set[int] = field(default_factory=lambda: {EOS_TOKEN})
    to_finish: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.output_ids, array):
            self.output_ids = array("q", self.output_ids)
        if self.finished_len is not None and self.finished_reason is None:
            self.finished_reason = "length"

    def finished(self) -> bool:
        """Returns True once a finish reason is set (an aborted request has no finished_len)."""
        return self.finished_reason is not None

    def next_output_finishes_by_length(self) -> bool:
        """Returns True when committing one more token reaches ``max_new_tokens``."""
        return len(self.output_ids) + 1 >= self.sampling_params.max_new_tokens


@dataclass(slots=True)
class FakeForwardMode:
    """``ForwardMode``: decode (a CUDA-graph replay) or extend (a prefill)."""

    name: str

    def is_decode(self) -> bool:
        """Returns True for a decode step."""
        return self.name == "DECODE"

    def is_extend(self) -> bool:
        """Returns True for a prefill (extend) step."""
        return self.name == "EXTEND"


@dataclass(eq=False)
class FakeBatch:
    """A schedule batch: ``reqs`` is the contract; ``forward_mode`` and ``return_logprob`` as SGLang's."""

    reqs: list[FakeReq] = field(default_factory=list)
    forward_mode: FakeForwardMode = field(default_factory=lambda: FakeForwardMode("DECODE"))
    return_logprob: bool = False

    def copy(self) -> FakeBatch:
        """Returns the snapshot SGLang queues with a step's result: a new list of the same requests."""
        return FakeBatch(self.reqs[:], self.forward_mode, self.return_logprob)


def visible_output_len(req: Any) -> int:
    """Returns the number of output tokens of ``req`` visible to clients."""
    finished_len: int | None = getattr(req, "finished_len", None)
    return finished_len if finished_len is not None else len(req.output_ids)


def snapshot_output_starts(batch: Any) -> list[int]:
    """Returns each request's visible output length, taken before a step commits."""
    return [visible_output_len(req) for req in batch.reqs]


def build_commits(batch: Any, output_starts: Sequence[int]) -> list[CommittedTokens | None]:
    """Returns the commits aligned with ``batch.reqs`` for a step that began at ``output_starts``.

    Raises SchedulerError when the lengths do not line up or a length moved backwards.
    """
    reqs = list(batch.reqs)
    if len(reqs) != len(output_starts):
        raise SchedulerError(
            f"{len(output_starts)} output starts for {len(reqs)} requests; "
            "snapshot the starts of this very batch"
        )
    commits: list[CommittedTokens | None] = []
    for req, start in zip(reqs, output_starts):
        end = visible_output_len(req)
        if end < start:
            raise SchedulerError(
                f"request {getattr(req, 'rid', '?')!r}: committed output length moved "
                f"backwards from {start} to {end}"
            )
        commits.append(
            None if end == start else CommittedTokens(start, tuple(req.output_ids[start:end]))
        )
    return commits


class Event(enum.Enum):
    """What happens to one request in one step."""

    DECODE = "decode"
    SPECULATIVE = "speculative decode"
    CHUNKED = "chunked prefill"
    FINISH = "finish"
    ABORT = "abort"
    RETRACT = "retract"
    GRAMMAR_END = "grammar end"
    """The request's grammar terminated: finished after this token, ``finished_len`` None (as
    an abort). Not among the steps the loop draws: the abort already shows that shape."""


# Requests with output take these in turn, one after the other across steps, so the first
# few steps already mix None commits, several tokens, finished and aborted requests.
_PATTERN = (Event.ABORT, Event.SPECULATIVE, Event.FINISH, Event.RETRACT, Event.DECODE,
            Event.DECODE)
_LENGTH_EVERY = 4
"""Every fourth request the model admits has a small ``max_new_tokens``: it finishes by length."""


def step_kinds(*, speculative: bool) -> tuple[Event, ...]:
    """Returns what can happen to a request in one step of the model, in the order steps name them.

    Without ``speculative`` every request gets at most one new token a step, as under
    stock SGLang's sampling observers.
    """
    return tuple(e for e in (Event.CHUNKED, Event.DECODE, Event.SPECULATIVE, Event.FINISH,
                             Event.ABORT, Event.RETRACT)
                 if speculative or e is not Event.SPECULATIVE)


def apply_event(req: FakeReq, event: Event, tokens: Sequence[int]) -> None:
    """Applies ``event`` to ``req`` as SGLang's result processing does; ``tokens`` are sampled.

    A finished or retracted request is left alone (the overlap loop skips it). Decode,
    finish and abort append one token (``tokens[0]``), then settle the finish state as
    ``Req.update_finish_state`` does: an abort finishes the request with ``finished_len``
    None (its token is committed all the same); a stop (EOS, stop token, stop string) sets
    ``finished_len`` to the whole output; reaching ``max_new_tokens`` finishes by length.
    A speculative step appends all ``tokens``; an EOS among them finishes the request there
    and hides the tokens after it. A chunked prefill appends nothing.
    """
    if req.finished() or req.is_retracted or event is Event.CHUNKED:
        return
    if event is Event.RETRACT:
        req.is_retracted = True
        return
    accepted = list(tokens) if event is Event.SPECULATIVE else list(tokens[:1])
    if event is Event.ABORT:
        req.to_finish = "abort"
    req.output_ids.extend(accepted)
    _update_finish_state(req, accepted, stop=event is Event.FINISH,
                         grammar_done=event is Event.GRAMMAR_END)


def _update_finish_state(req: FakeReq, accepted: list[int], *, stop: bool,
                         grammar_done: bool = False) -> None:
    """Settles ``req``'s finish state after ``accepted`` tokens, as ``Req.update_finish_state``.

    In its order: a pending abort, a stop (string, then token), the length, then a grammar
    that terminated (finished with no ``finished_len``).
    """
    if req.to_finish is not None:
        req.finished_reason, req.to_finish = req.to_finish, None
        return
    limit = req.sampling_params.max_new_tokens
    stops = req.eos_token_ids | (req.sampling_params.stop_token_ids or set())
    at = next((i for i, token in enumerate(accepted) if token in stops), None)
    if stop or at is not None:
        req.finished_reason = "stop"
        end = len(req.output_ids) if at is None else len(req.output_ids) - len(accepted) + at + 1
        req.finished_len = min(end, limit)
    elif len(req.output_ids) >= limit:
        req.finished_reason = "length"
        req.finished_len = limit
    elif grammar_done:
        req.finished_reason = "stop"


def stays_running(req: Any, *, in_flight: bool, overlap: bool) -> bool:
    """Returns True when ``req`` is in the next batch the scheduler forms.

    Finished and retracted requests leave (``ScheduleBatch.filter_batch``); under overlap,
    a request of the step still in flight whose next token reaches ``max_new_tokens``
    leaves too (``Scheduler._reqs_finishing_inflight``), while one that finishes there by
    a stop or an abort is still in the next batch, with a None commit.
    """
    if req.finished() or req.is_retracted:
        return False
    return not (overlap and in_flight and req.next_output_finishes_by_length())


class SchedulerModel:
    """Builds each step's batch and commits its tokens, as SGLang's scheduler does.

    ``batch(size)`` returns the next step's batch: the requests still running, in
    order, with new ones admitted (at random places) up to ``size``. ``commit(batch)``
    applies one step's events to the requests of that batch (a ``batch.copy()``
    taken when the step was queued) and returns the commits built from the visible
    lengths before and after. Under ``overlap`` the batch is formed while the previous
    step is in flight (``in_flight``): a request finished there is still in it and gets
    a None commit. ``speculative`` lets steps commit several tokens to one request
    (speculative decoding, dLLM); without it a request decodes where it would have.
    Deterministic for a given ``seed``.
    """

    def __init__(self, *, seed: int = 0, speculative: bool = False,
                 overlap: bool = True) -> None:
        self._rng = random.Random(seed)
        self.speculative = speculative
        self.overlap = overlap
        self._running: list[FakeReq] = []
        self._step = 0
        self._turn = 0
        self._admitted = 0
        self.events: list[dict[str, Event]] = []

    def new_request(self, *, history: int = 0) -> FakeReq:
        """Returns a new request with a random rid and ``history`` output tokens already.

        Every fourth one has a ``max_new_tokens`` a few tokens past its history, so it
        finishes by length within a few steps.
        """
        self._admitted += 1
        rid = f"{self._rng.getrandbits(40):010x}"
        prompt = [self._rng.randrange(1, 32000) for _ in range(self._rng.randint(2, 6))]
        output = array("q", (self._rng.randrange(3, 32000) for _ in range(history)))
        params = FakeSamplingParams()
        if self._admitted % _LENGTH_EVERY == 0:
            params.max_new_tokens = history + self._rng.randint(1, 3)
        return FakeReq(rid, origin_input_ids=prompt, output_ids=output, sampling_params=params)

    def batch(self, size: int | None, *, in_flight: Sequence[Any] = ()) -> FakeBatch:
        """Returns the next step's batch of ``size`` requests (running ones first kept in order).

        ``in_flight`` is the batch of the step still in flight (overlap), whose requests
        the scheduler may already drop. ``size`` None keeps the running requests and
        admits none.
        """
        if size is None:
            flying = {id(r) for r in in_flight}
            self._running = [r for r in self._running if stays_running(
                r, in_flight=id(r) in flying, overlap=self.overlap)]
            return FakeBatch(list(self._running))
        if size < 0:
            raise SchedulerError(f"a batch of {size} requests; expected a size >= 0")
        flying = {id(r) for r in in_flight}
        keep = [r for r in self._running
                if stays_running(r, in_flight=id(r) in flying, overlap=self.overlap)][:size]
        first = not self._running and not self._admitted
        while len(keep) < size:
            # The first batch mixes requests already decoding with new ones, so even a
            # single step sees commits that start past zero.
            history = self._rng.randint(1, 4) if first and len(keep) % 2 == 0 else 0
            keep.insert(self._rng.randint(0, len(keep)), self.new_request(history=history))
        self._running = _unsorted(keep)
        return FakeBatch(list(self._running))

    def admit(self, reqs: Iterable[FakeReq]) -> None:
        """Adds ``reqs`` to the running requests, as they are (the next batch holds them)."""
        admitted = list(reqs)
        self._running.extend(admitted)
        self._admitted += len(admitted)

    def commit(self, batch: FakeBatch, chosen: Mapping[str, tuple[Event, Sequence[int]]]
               | None = None) -> list[CommittedTokens | None]:
        """Applies one step's events to ``batch``'s requests; returns the commits SGLang builds.

        ``chosen`` gives some requests (by rid) their event and sampled tokens; the others
        take the model's own.
        """
        starts = snapshot_output_starts(batch)
        events: dict[str, Event] = {}
        for index, req in enumerate(batch.reqs):
            if req.finished() or req.is_retracted:
                continue
            given = (chosen or {}).get(req.rid)
            if given is None:
                event = self._event(index, req)
                given = event, self._tokens(event)
            event, tokens = given
            events[req.rid] = event
            apply_event(req, event, tokens)
        self.events.append(events)
        self._step += 1
        return build_commits(batch, starts)

    def _event(self, index: int, req: FakeReq) -> Event:
        if not req.output_ids:
            return Event.CHUNKED if (self._step + index) % 3 == 1 else Event.DECODE
        event = _PATTERN[self._turn % len(_PATTERN)]
        self._turn += 1
        return event if self.speculative or event is not Event.SPECULATIVE else Event.DECODE

    def _tokens(self, event: Event) -> list[int]:
        """Returns the tokens sampled for ``event`` (none of them a stop but a speculative EOS)."""
        tokens = [self._rng.randrange(3, 32000) for _ in range(3)]
        if event is Event.SPECULATIVE and self._rng.random() < 0.5:
            tokens[1] = EOS_TOKEN  # a stop among accepted tokens hides those after it
        return tokens


def _unsorted(reqs: list[FakeReq]) -> list[FakeReq]:
    """Returns ``reqs`` in an order sorted neither by rid ascending nor (from 3 on) descending."""
    rids = [r.rid for r in reqs]
    if len(reqs) < 2:
        return reqs
    ascending = rids == sorted(rids)
    descending = rids == sorted(rids, reverse=True)
    if len(reqs) == 2:
        return reqs[::-1] if ascending else reqs
    if ascending or descending:
        ordered = sorted(reqs, key=lambda r: r.rid)
        return [ordered[1], ordered[0], *ordered[2:]]
    return reqs


def describe_events(events: Iterable[Event]) -> str:
    """Returns the distinct events of a step as text, in pattern order."""
    seen = list(dict.fromkeys(events))
    return ", ".join(e.value for e in seen) or "no new token"
