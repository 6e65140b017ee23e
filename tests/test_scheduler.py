"""Tests for the fake scheduler: commits built as SGLang's scheduler builds them."""

from __future__ import annotations

import pytest

from auxcheck._scheduler import (
    FakeBatch,
    FakeReq,
    build_commits,
    snapshot_output_starts,
    visible_output_len,
)
from auxcheck.errors import SchedulerError
from auxcheck.protocols import CommittedTokens


@pytest.mark.parametrize(("req", "expected"), [
    pytest.param(FakeReq("a"), 0, id="no-output"),
    pytest.param(FakeReq("a", output_ids=[1, 2, 3]), 3, id="output-length"),
    pytest.param(FakeReq("a", output_ids=[1, 2, 3], finished_len=2), 2, id="finished-len"),
    pytest.param(FakeReq("a", output_ids=[1, 2], finished_len=0), 0, id="finished-len-zero"),
])
def test_visible_output_len_prefers_finished_len(req: FakeReq, expected: int) -> None:
    """The visible length is finished_len when set, else the number of output ids."""
    assert visible_output_len(req) == expected


def test_commits_hold_the_new_tokens_and_none_when_nothing_is_new() -> None:
    """Each commit starts at the old visible length; requests with nothing new get None."""
    batch = FakeBatch([FakeReq("a", output_ids=[7]), FakeReq("b"), FakeReq("c")])
    starts = snapshot_output_starts(batch)
    batch.reqs[0].output_ids.extend([8, 9])
    batch.reqs[2].output_ids.extend([4])
    assert starts == [1, 0, 0]
    assert build_commits(batch, starts) == [CommittedTokens(1, (8, 9)), None,
                                            CommittedTokens(0, (4,))]


def test_finished_len_cuts_the_committed_tokens() -> None:
    """Tokens past finished_len (e.g. a stop string) are not committed."""
    batch = FakeBatch([FakeReq("a", output_ids=[1])])
    starts = snapshot_output_starts(batch)
    batch.reqs[0].output_ids.extend([2, 3, 4])
    batch.reqs[0].finished_len = 3
    batch.reqs[0].finished_reason = "stop"
    assert build_commits(batch, starts) == [CommittedTokens(1, (2, 3))]
    assert batch.reqs[0].finished()


def test_an_empty_batch_has_no_commits() -> None:
    """An empty batch snapshots and commits nothing."""
    batch = FakeBatch()
    assert build_commits(batch, snapshot_output_starts(batch)) == []


def test_a_length_moving_backwards_is_a_scheduler_error() -> None:
    """A visible length below its snapshot raises SchedulerError naming the request."""
    batch = FakeBatch([FakeReq("r1", output_ids=[1, 2])])
    starts = snapshot_output_starts(batch)
    batch.reqs[0].finished_len = 1
    with pytest.raises(SchedulerError) as info:
        build_commits(batch, starts)
    assert str(info.value) == "request 'r1': committed output length moved backwards from 2 to 1"


def test_starts_of_another_batch_are_a_scheduler_error() -> None:
    """Starts whose length differs from the batch's raise SchedulerError."""
    with pytest.raises(SchedulerError) as info:
        build_commits(FakeBatch([FakeReq("a")]), [0, 0])
    assert str(info.value) == "2 output starts for 1 requests; snapshot the starts of this very batch"
