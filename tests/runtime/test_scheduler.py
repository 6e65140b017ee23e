"""Tests for the fake scheduler: commits built as SGLang's scheduler builds them."""

from __future__ import annotations

from array import array

import pytest

from auxcheck._runtime.scheduler import (
    Event,
    FakeBatch,
    FakeReq,
    SchedulerModel,
    build_commits,
    snapshot_output_starts,
    step_kinds,
    visible_output_len,
)
from auxcheck.errors import SchedulerError
from auxcheck.protocols import CommittedTokens
from auxcheck.validate import check_commits


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


# ---------------------------------------------------------------- the scheduler model


def test_requests_have_array_outputs_and_finish_by_reason() -> None:
    """output_ids is an array('q') as on SGLang's Req; finished() means a reason is set."""
    req = FakeReq("a", output_ids=[1, 2])
    assert isinstance(req.output_ids, array) and req.output_ids.typecode == "q"
    assert not req.finished()
    req.finished_reason = "abort"
    assert req.finished() and req.finished_len is None


@pytest.mark.parametrize("size", [2, 3, 4, 7])
def test_batches_are_never_in_rid_order(size: int) -> None:
    """A plugin sorting batch.reqs by rid in place always changes the order it was given."""
    model = SchedulerModel(seed=size)
    for _ in range(4):
        batch = model.batch(size)
        rids = [req.rid for req in batch.reqs]
        assert rids != sorted(rids)
        model.commit(batch.copy())


@pytest.mark.parametrize("speculative", [False, True])
def test_steps_cover_every_kind_asked_for_and_commits_follow_visible_lengths(
        speculative: bool) -> None:
    """Over a few steps requests decode, chunk, finish, abort, retract (and speculate if asked)."""
    model = SchedulerModel(seed=1, speculative=speculative)
    seen: set[Event] = set()
    commits_seen = []
    for _ in range(6):
        batch = model.batch(4).copy()
        commits = model.commit(batch)
        assert check_commits(batch, commits).ok
        commits_seen += commits
        seen |= set(model.events[-1].values())
    assert seen == set(step_kinds(speculative=speculative))
    assert (Event.SPECULATIVE in seen) is speculative
    longest = max(len(c.token_ids) for c in commits_seen if c is not None)
    assert (longest > 1) is speculative


@pytest.mark.parametrize("seed", range(6))
def test_without_speculative_steps_no_request_gets_more_than_one_token_a_step(seed: int) -> None:
    """Stock SGLang runs no sampling observer under speculative decoding: one token at most."""
    model = SchedulerModel(seed=seed)
    longest = 0
    for size in (3, 4, 2, 3, 4, 4):
        commits = model.commit(model.batch(size).copy())
        longest = max([longest, *(len(c.token_ids) for c in commits if c is not None)])
    assert longest == 1


def test_a_request_finished_at_one_step_gets_none_in_the_next_batch() -> None:
    """The overlap loop forms batch N+1 before processing N: a finished request gets None."""
    model = SchedulerModel(seed=0)
    first = model.batch(3)
    second = model.batch(3)  # formed before step 1 is processed
    model.commit(first.copy())
    finished = [i for i, req in enumerate(second.reqs) if req.finished()]
    commits = model.commit(second.copy())
    assert finished and all(commits[i] is None for i in finished)


def test_a_batch_copy_is_a_new_list_of_the_same_requests() -> None:
    """ScheduleBatch.copy slices reqs: rebinding the live list leaves the snapshot alone."""
    batch = FakeBatch([FakeReq("a"), FakeReq("b")])
    snapshot = batch.copy()
    batch.reqs = batch.reqs[:1]
    assert [r.rid for r in snapshot.reqs] == ["a", "b"]
    assert snapshot.reqs[0] is batch.reqs[0]
