"""A fake of the scheduler state that ``consume`` sees, and commits built as SGLang builds them.

SGLang snapshots each request's visible output length before committing a step's
tokens, then builds one ``CommittedTokens`` per request from the lengths after it
(None where nothing new became visible). A visible length is ``finished_len`` when
set, else ``len(output_ids)``; a length that moves backwards is a scheduler error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from auxcheck.errors import SchedulerError
from auxcheck.protocols import CommittedTokens

__all__ = [
    "FakeBatch",
    "FakeReq",
    "build_commits",
    "snapshot_output_starts",
    "visible_output_len",
]


@dataclass(eq=False)
class FakeReq:
    """The request fields that plugins read in ``consume``, as on SGLang's ``Req``."""

    rid: str
    origin_input_ids: list[int] = field(default_factory=lambda: [1, 2, 3])
    output_ids: list[int] = field(default_factory=list)
    finished_len: int | None = None
    is_retracted: bool = False
    customized_info: dict[str, list[Any]] | None = None

    def finished(self) -> bool:
        """Returns True once the request has finished (its visible length is fixed)."""
        return self.finished_len is not None


@dataclass(eq=False)
class FakeBatch:
    """A schedule batch: only ``reqs`` is part of the contract."""

    reqs: list[FakeReq] = field(default_factory=list)


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
