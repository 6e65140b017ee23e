"""The scheduler state that ``consume`` sees, and the steps SGLang 0.5.23 takes, as a CPU model.

SGLang snapshots each request's visible output length before committing a step's
tokens, then builds one ``CommittedTokens`` per request from the lengths after it
(None where nothing new became visible; ``_build_auxiliary_commits`` in
``managers/scheduler_components/batch_result_processor.py``). A visible length is
``finished_len`` when set, else ``len(output_ids)``; a length that moves backwards is
a scheduler error.

:class:`SchedulerModel` drives requests through the steps a real server takes:
prefill (a chunked one gives no token yet), decode, finish (a stop string may hide
the last token), abort (finished with no ``finished_len``) and retraction; speculative
decode (several tokens a step) only when asked for: stock SGLang runs no sampling
observer under it (``ModelRunner.supports_sampling_observer`` is False under
speculative decoding and dLLM, and the ``sampling_observer`` setter then raises).
Requests have ``array('q')`` outputs as SGLang's ``Req`` has, and their rids are in
no particular order, so a plugin that sorts ``batch.reqs`` in place is seen. Importing this module does not import torch.
"""

from __future__ import annotations

import enum
import random
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from auxcheck.errors import SchedulerError
from auxcheck.protocols import CommittedTokens

__all__ = [
    "Event",
    "FakeBatch",
    "FakeReq",
    "SchedulerModel",
    "build_commits",
    "describe_events",
    "snapshot_output_starts",
    "step_kinds",
    "visible_output_len",
]


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

    def __post_init__(self) -> None:
        if not isinstance(self.output_ids, array):
            self.output_ids = array("q", self.output_ids)
        if self.finished_len is not None and self.finished_reason is None:
            self.finished_reason = "length"

    def finished(self) -> bool:
        """Returns True once a finish reason is set (an aborted request has no finished_len)."""
        return self.finished_reason is not None


@dataclass(eq=False)
class FakeBatch:
    """A schedule batch: only ``reqs`` is part of the contract."""

    reqs: list[FakeReq] = field(default_factory=list)

    def copy(self) -> FakeBatch:
        """Returns the snapshot SGLang queues with a step's result: a new list of the same requests."""
        return FakeBatch(self.reqs[:])


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


# Running requests take these in turn (offset by step and position), so one step of a
# few requests already mixes None commits, several tokens and finished requests.
_PATTERN = (Event.SPECULATIVE, Event.DECODE, Event.FINISH, Event.DECODE, Event.ABORT,
            Event.DECODE, Event.RETRACT)


def step_kinds(*, speculative: bool) -> tuple[Event, ...]:
    """Returns what can happen to a request in one step of the model, in the order steps name them.

    Without ``speculative`` every request gets at most one new token a step, as under
    stock SGLang's sampling observers.
    """
    return tuple(e for e in (Event.CHUNKED, Event.DECODE, Event.SPECULATIVE, Event.FINISH,
                             Event.ABORT, Event.RETRACT)
                 if speculative or e is not Event.SPECULATIVE)


class SchedulerModel:
    """Builds each step's batch and commits its tokens, as SGLang's scheduler does.

    ``batch(size)`` returns the next step's batch: the requests still running, in
    order, with new ones admitted (at random places) up to ``size``. ``commit(batch)``
    applies one step's events to the requests of that batch (a ``batch.copy()``
    taken when the step was queued) and returns the commits built from the visible
    lengths before and after. A request finished at step N may still be in batch N+1
    (the overlap loop forms N+1 before processing N); it then gets a None commit.
    ``speculative`` lets steps commit several tokens to one request (speculative
    decoding, dLLM); without it a request decodes where it would have. Deterministic
    for a given ``seed``.
    """

    def __init__(self, *, seed: int = 0, speculative: bool = False) -> None:
        self._rng = random.Random(seed)
        self.speculative = speculative
        self._running: list[FakeReq] = []
        self._step = 0
        self._admitted = 0
        self.events: list[dict[str, Event]] = []

    def new_request(self, *, history: int = 0) -> FakeReq:
        """Returns a new request with a random rid and ``history`` output tokens already."""
        self._admitted += 1
        rid = f"{self._rng.getrandbits(40):010x}"
        prompt = [self._rng.randrange(1, 32000) for _ in range(self._rng.randint(2, 6))]
        output = array("q", (self._rng.randrange(0, 32000) for _ in range(history)))
        return FakeReq(rid, origin_input_ids=prompt, output_ids=output)

    def batch(self, size: int) -> FakeBatch:
        """Returns the next step's batch of ``size`` requests (running ones first kept in order)."""
        if size < 0:
            raise SchedulerError(f"a batch of {size} requests; expected a size >= 0")
        keep = [r for r in self._running if not r.finished() and not r.is_retracted][:size]
        first = not self._running and not self._admitted
        while len(keep) < size:
            # The first batch mixes requests already decoding with new ones, so even a
            # single step sees commits that start past zero.
            history = self._rng.randint(1, 4) if first and len(keep) % 2 == 0 else 0
            keep.insert(self._rng.randint(0, len(keep)), self.new_request(history=history))
        self._running = _unsorted(keep)
        return FakeBatch(list(self._running))

    def commit(self, batch: FakeBatch) -> list[CommittedTokens | None]:
        """Applies one step's events to ``batch``'s requests; returns the commits SGLang builds."""
        starts = snapshot_output_starts(batch)
        events: dict[str, Event] = {}
        for index, req in enumerate(batch.reqs):
            if req.finished() or req.is_retracted:
                continue
            event = self._event(index, req)
            events[req.rid] = event
            self._apply(req, event)
        self.events.append(events)
        self._step += 1
        return build_commits(batch, starts)

    def _event(self, index: int, req: FakeReq) -> Event:
        if not req.output_ids:
            return Event.CHUNKED if (self._step + index) % 3 == 1 else Event.DECODE
        event = _PATTERN[(3 * self._step + index) % len(_PATTERN)]
        return event if self.speculative or event is not Event.SPECULATIVE else Event.DECODE

    def _apply(self, req: FakeReq, event: Event) -> None:
        token = self._rng.randrange(0, 32000)
        if event is Event.DECODE:
            req.output_ids.append(token)
        elif event is Event.SPECULATIVE:
            req.output_ids.extend([token, self._rng.randrange(0, 32000), 2])
        elif event is Event.FINISH:
            start = visible_output_len(req)
            req.output_ids.extend([token, 2])  # a stop token the stop string hides
            req.finished_reason = "stop"
            req.finished_len = max(start, len(req.output_ids) - 1)
        elif event is Event.ABORT:
            req.finished_reason = "abort"
        elif event is Event.RETRACT:
            req.is_retracted = True


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
