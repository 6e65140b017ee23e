"""Tests for auxcheck.strategies: the generated values, their recording, and the profiles."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

import auxcheck._properties.strategies as home
import auxcheck.strategies as aux
from auxcheck._runtime.byteranges import byte_range, ranges_overlap
from auxcheck._runtime.scheduler import FakeReq, visible_output_len
from auxcheck.errors import InvalidArgument
from auxcheck.protocols import CompositeDeviceAuxiliaryOutput, append_auxiliary_output
from auxcheck.strategies import (
    Appended,
    Growth,
    RecordingDeviceOutput,
    RecordingHostOutput,
    append_sequences,
    auxiliary_outputs,
    batches,
    commit_streams,
    device_outputs,
    tensors,
)

FAST = settings(max_examples=30, deadline=None)


def _find(strategy: st.SearchStrategy[Any], condition: Any) -> Any:
    # Generation only: shrinking the found example would cost seconds for nothing.
    quick = settings(max_examples=300, database=None, phases=[Phase.generate])
    return find(strategy, condition, settings=quick)


def test_all_lists_exactly_the_public_names() -> None:
    """__all__ holds every public name of the module and nothing else."""
    own = (home.__name__, "auxcheck._runtime.recording")
    public = {name for name, value in vars(home).items()
              if not name.startswith(("_", "@")) and not isinstance(value, ModuleType)
              and getattr(value, "__module__", home.__name__) in own}
    public |= {"Operand", "ConsumeRecord", "CopyRecord"}  # the face re-exports them from recording
    assert sorted(aux.__all__) == sorted(public)


@FAST
@given(tensors(dtypes=[torch.float16, torch.int32], max_dims=2, max_side=3))
def test_tensors_respect_their_dtypes_and_shape_bounds(tensor: torch.Tensor) -> None:
    """Drawn tensors use only the given dtypes, dimensions and side lengths."""
    assert tensor.dtype in (torch.float16, torch.int32)
    assert tensor.dim() <= 2 and all(side <= 3 for side in tensor.shape)


@pytest.mark.parametrize(
    "condition",
    [lambda t: t.numel() == 0, lambda t: not t.is_contiguous(), lambda t: 0 in t.stride()],
    ids=["zero-size", "non-contiguous", "zero-stride"],
)
def test_tensors_include_awkward_layouts(condition: Any) -> None:
    """Zero-size, non-contiguous and expanded tensors are all generated."""
    assert condition(_find(tensors(), condition))


@FAST
@given(tensors(), tensors())
def test_two_drawn_tensors_never_share_bytes(first: torch.Tensor, second: torch.Tensor) -> None:
    """Every tensor owns fresh storage."""
    assert not ranges_overlap(byte_range(first), byte_range(second))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: tensors(dtypes=[]), "expected a non-empty list of torch.dtype"),
        (lambda: tensors(max_dims=-1), "tensors(max_dims=...): got min=0, max=-1"),
        (lambda: device_outputs(leaves=[1]), "expected a Hypothesis strategy of device outputs"),
        (lambda: append_sequences(min_leaves=-1), "append_sequences(min_leaves=-1): expected >= 0"),
        (lambda: batches(min_reqs=3, max_reqs=1), "batches(min_reqs=..., max_reqs=...)"),
        (lambda: commit_streams(min_steps=2, max_steps=1), "commit_streams(min_steps=..."),
    ],
    ids=["empty-dtypes", "negative-dims", "leaves-not-strategy", "negative-leaves",
         "reqs-reversed", "steps-reversed"],
)
def test_bad_options_raise_invalid_argument_naming_the_option(make: Any, message: str) -> None:
    """A bad option raises InvalidArgument (a TypeError) that names it."""
    with pytest.raises(InvalidArgument) as raised:
        make()
    assert message in str(raised.value)
    assert isinstance(raised.value, TypeError)


@FAST
@given(device_outputs())
def test_a_device_output_records_each_copy_and_what_it_passed(output: RecordingDeviceOutput) -> None:
    """copy_to_host passes each own tensor once, in order, and keeps the copies on the host."""
    passed: list[torch.Tensor] = []
    host = output.copy_to_host(lambda t: passed.append(t) or t.clone())
    assert output.copy_count == 1
    assert [id(t) for t in passed] == [id(t) for t in output.tensors]
    assert output.copies[0].passed == tuple(passed) and output.copies[0].host is host
    assert all(torch.equal(a, b) for a, b in zip(host.tensors, output.tensors))


def test_a_host_output_records_the_very_objects_it_consumed() -> None:
    """consume keeps the batch and commits objects it received, in call order."""
    host = RecordingDeviceOutput("a").copy_to_host(torch.clone)
    batch, commits = object(), [None]
    host.consume(batch, commits)
    assert host.consumed[0].batch is batch and host.consumed[0].commits is commits


class UserOutput:
    """A plugin's own device output, to mix in through ``leaves=``."""

    def __init__(self) -> None:
        self.tensor = torch.arange(3)
        self.consumed = 0

    def copy_to_host(self, copy_tensor: Any) -> UserOutput:
        copy_tensor(self.tensor)
        return self

    def consume(self, batch: Any, commits: Any) -> None:
        self.consumed += 1


def test_user_leaves_are_mixed_in_wrapped_so_they_are_recorded() -> None:
    """A user's output is wrapped: its copy and consume still run, and both are recorded."""
    output = _find(device_outputs(leaves=st.builds(UserOutput)), lambda o: o.inner is not None)
    host = output.copy_to_host(torch.clone)
    host.consume(object(), [])
    assert output.copies[0].passed == (output.inner.tensor,)
    assert output.inner.consumed == 1 and len(host.consumed) == 1


def test_recording_outputs_compare_equal_by_label_only() -> None:
    """Two distinct outputs with one label are equal, so de-duplicating implementations are caught."""
    assert RecordingDeviceOutput("a", [torch.ones(1)]) == RecordingDeviceOutput("a")
    assert RecordingDeviceOutput("a") != RecordingDeviceOutput("b")


@FAST
@given(append_sequences(min_leaves=2))
def test_append_sequences_hold_at_least_min_leaves(operands: tuple[Any, ...]) -> None:
    """min_leaves is honoured however the operands nest."""
    assert aux.count_leaves(operands) >= 2


@pytest.mark.parametrize(
    "condition",
    [lambda ops: len(ops) >= 2 and isinstance(ops[0], Appended) and ops[1] is not None,
     lambda ops: len(ops) >= 2 and ops[0] is not None and isinstance(ops[-1], Appended),
     lambda ops: len(ops) >= 2 and ops[0] is None,
     lambda ops: len(ops) >= 2 and ops[-1] is None],
    ids=["composite-on-the-left", "composite-on-the-right", "none-on-the-left",
         "none-on-the-right"],
)
def test_append_sequences_put_composites_and_none_on_either_side(condition: Any) -> None:
    """Already-composite operands and None occur first and last."""
    assert condition(_find(append_sequences(), condition))


@pytest.mark.parametrize(
    "condition",
    [lambda o: o is None, lambda o: isinstance(o, RecordingDeviceOutput),
     lambda o: isinstance(o, CompositeDeviceAuxiliaryOutput) and len(o.outputs) >= 3],
    ids=["none", "leaf", "composite"],
)
def test_auxiliary_outputs_include_none_leaves_and_composites(condition: Any) -> None:
    """Every kind of auxiliary output is generated."""
    assert condition(_find(auxiliary_outputs(), condition))


def test_auxiliary_outputs_build_composites_with_the_given_append() -> None:
    """append= builds the composites, so users can generate their own implementation's."""
    calls: list[Any] = []

    def append(current: Any, output: Any) -> Any:
        calls.append(output)
        return append_auxiliary_output(current, output)

    _find(auxiliary_outputs(append=append), lambda o: o is not None)
    assert calls


def test_batches_include_an_empty_batch() -> None:
    """An empty batch is generated."""
    assert _find(batches(), lambda b: not b.reqs).reqs == []


@FAST
@given(commit_streams())
def test_commit_streams_build_aligned_commits_from_the_growing_requests(stream: Any) -> None:
    """Each step's commits align with batch.reqs and hold exactly the newly visible tokens."""
    before = [visible_output_len(req) for req in stream.batch.reqs]
    for step in stream.play():
        assert len(step.commits) == len(step.batch.reqs)
        for req, start, commit in zip(step.batch.reqs, before, step.commits):
            end = visible_output_len(req)
            assert end >= start
            if commit is None:
                assert end == start
            else:
                assert (commit.output_index, commit.token_ids) == (start, tuple(req.output_ids[start:end]))
        before = [visible_output_len(req) for req in step.batch.reqs]


@FAST
@given(commit_streams())
def test_a_stream_replays_identically(stream: Any) -> None:
    """play() starts from a fresh copy of the batch each time."""
    assert [s.commits for s in stream.play()] == [s.commits for s in stream.play()]


@pytest.mark.parametrize(
    ("req", "growth", "after"),
    [
        (FakeReq("r", output_ids=[1]), Growth((2, 3)), ([1, 2, 3], None, False)),
        (FakeReq("r", output_ids=[1]), Growth((2, 3), finish_cut=1), ([1, 2, 3], 2, False)),
        (FakeReq("r", output_ids=[1]), Growth((2,), finish_cut=2), ([1, 2], 1, False)),
        (FakeReq("r", output_ids=[1]), Growth((2,), retract=True), ([1], None, True)),
        (FakeReq("r", output_ids=[1], finished_len=1), Growth((2,)), ([1], 1, False)),
        (FakeReq("r", output_ids=[1], is_retracted=True), Growth((2,)), ([1], None, True)),
        (FakeReq("r", output_ids=[1]), Growth((2,), abort=True), ([1, 2], None, False)),
    ],
    ids=["grows", "finishes-short", "never-below-the-previous-length", "retracts",
         "finished-stays", "retracted-stays", "aborts-with-its-token-committed"],
)
def test_growth_applies_to_a_request_as_the_scheduler_would(
    req: FakeReq, growth: Growth, after: tuple[Any, ...]
) -> None:
    """A growth adds tokens, finishes, aborts or retracts; finished and retracted requests stay."""
    growth.apply(req)
    assert (list(req.output_ids), req.finished_len, req.is_retracted) == after
    assert req.finished() is (growth.finish_cut is not None or growth.abort
                              or after[1] is not None)


def test_streams_include_finished_and_retracted_requests_with_none_commits() -> None:
    """Some step commits None for a request that finished or was retracted earlier."""
    def condition(stream: Any) -> bool:
        steps = list(stream.play())
        return any(c is None and (r.finished() or r.is_retracted)
                   for s in steps[1:] for r, c in zip(s.batch.reqs, s.commits))

    assert condition(_find(commit_streams(min_steps=2), condition))


def test_host_outputs_come_from_a_copy() -> None:
    """host_outputs() generates recording host outputs whose source was copied once."""
    host = _find(aux.host_outputs(), lambda h: True)
    assert isinstance(host, RecordingHostOutput) and host.source is not None
    assert host.source.copy_count == 1


@pytest.mark.parametrize("name", sorted(aux.PROFILES))
def test_every_profile_has_settings_without_a_deadline(name: str) -> None:
    """settings_for returns the registered profile's settings."""
    chosen = aux.settings_for(name)
    assert chosen.deadline is None
    assert chosen.max_examples == aux.PROFILES[name]["max_examples"]


def test_the_ci_profile_is_derandomised_without_a_database() -> None:
    """auxcheck-ci is reproducible: derandomize on, no example database."""
    chosen = aux.settings_for("auxcheck-ci")
    assert chosen.derandomize and chosen.database is None


def test_an_unknown_profile_raises_naming_the_accepted_ones() -> None:
    """A bad profile name raises InvalidArgument listing every accepted name."""
    with pytest.raises(InvalidArgument) as raised:
        aux.settings_for("ci")
    assert str(raised.value) == (
        "unknown auxcheck settings profile 'ci'; expected one of auxcheck-default, auxcheck-ci"
    )


def test_load_profile_makes_the_profile_current() -> None:
    """load_profile switches Hypothesis's current settings to the profile."""
    previous = settings._current_profile
    try:
        aux.load_profile("auxcheck-ci")
        assert settings.default is not None and settings.default.derandomize
    finally:
        settings.load_profile(previous or "default")
