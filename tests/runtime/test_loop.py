"""Tests for the step loop (auxcheck/_runtime/loop.py): plugins judged the way SGLang 0.5.23 runs them.

Two tables of real-plugin-shaped code written for this project: what SGLang runs
correctly must give no finding (notes allowed), what SGLang breaks must give exactly
its code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from auxcheck._runtime.batches import BatchSize, infer_batch_sizes
from auxcheck._runtime.loop import run_loop
from auxcheck._runtime.output_sources import OutputSource, check_source, source_of
from auxcheck.protocols import append_auxiliary_output
from auxcheck.report import Report
from auxcheck.validate import (
    check_device_output,
    check_device_outputs,
    check_forward_observer,
    check_sampling_observer,
)

Copy = Callable[[torch.Tensor], torch.Tensor]


class RowsHost:
    """A correct host output: one row per committed request, read by position."""

    def __init__(self, rows: torch.Tensor) -> None:
        self.rows = rows

    def consume(self, batch: Any, commits: Any) -> None:
        for index, (req, commit) in enumerate(zip(batch.reqs, commits)):
            if commit is not None:
                req.customized_info = {"row": [self.rows[index].tolist()]}


class Rows:
    """A correct device output owning ``[batch, k]`` rows."""

    def __init__(self, rows: torch.Tensor) -> None:
        self.rows = rows

    def copy_to_host(self, copy_tensor: Copy) -> RowsHost:
        return RowsHost(copy_tensor(self.rows))


class FakeEvent:
    """Stands in for a CUDA event on CPU: recorded at publication, waited on at consume."""

    def __init__(self) -> None:
        self.recorded = False

    def record(self) -> None:
        self.recorded = True

    def synchronize(self) -> None:
        assert self.recorded


class EventHost:
    """Device publication (a capture plugin's mode): keeps the device tensors and an event."""

    def __init__(self, hidden: torch.Tensor, event: FakeEvent) -> None:
        self.hidden, self.event = hidden, event

    def consume(self, batch: Any, commits: Any) -> None:
        self.event.synchronize()
        for req, row in zip(batch.reqs, self.hidden.tolist()):
            req.customized_info = {"hidden": [row]}


class EventOutput:
    """Never calls copy_tensor: the host output keeps the tensors and orders the transfer."""

    def __init__(self, hidden: torch.Tensor) -> None:
        self.hidden = hidden
        self.event = FakeEvent()

    def copy_to_host(self, copy_tensor: Copy) -> EventHost:
        self.event.record()
        return EventHost(self.hidden, self.event)


class SelfHost:
    """``copy_to_host`` returns self; consume indexes the requests it was built for."""

    def __init__(self, n: int) -> None:
        self.accepted = torch.arange(n)
        self.n = n

    def copy_to_host(self, copy_tensor: Copy) -> SelfHost:
        self.accepted = copy_tensor(self.accepted)
        return self

    def consume(self, batch: Any, commits: Any) -> None:
        for i in range(self.n):
            req, commit = batch.reqs[i], commits[i]
            if commit is not None:
                req.customized_info = {"accepted": [int(self.accepted[i])]}


class LayersFirst:
    """A ``[layers, batch, hidden]`` capture plus per-request positions, in either field order."""

    def __init__(self, batch: int = 3, layers: int = 5, *, positions_first: bool = False) -> None:
        if positions_first:
            self.positions = torch.arange(batch)
            self.hidden = torch.zeros(layers, batch, 4)
        else:
            self.hidden = torch.zeros(layers, batch, 4)
            self.positions = torch.arange(batch)

    def copy_to_host(self, copy_tensor: Copy) -> LayersHost:
        return LayersHost(copy_tensor(self.hidden), copy_tensor(self.positions))


class LayersHost:
    def __init__(self, hidden: torch.Tensor, positions: torch.Tensor) -> None:
        self.hidden, self.positions = hidden, positions

    def consume(self, batch: Any, commits: Any) -> None:
        for i, req in enumerate(batch.reqs):
            req.customized_info = {"layers": [self.hidden[:, i].shape[0]]}
        assert self.hidden.shape[1] == len(batch.reqs)


class BuiltFor:
    """Built by a factory taking the batch: its consume checks it got that very batch's requests."""

    def __init__(self, batch: Any) -> None:
        self.rids = [req.rid for req in batch.reqs]
        self.rows = torch.zeros(len(batch.reqs), 2)

    def copy_to_host(self, copy_tensor: Copy) -> BuiltForHost:
        return BuiltForHost(self.rids, copy_tensor(self.rows))


class BuiltForHost:
    def __init__(self, rids: list[str], rows: torch.Tensor) -> None:
        self.rids, self.rows = rids, rows

    def consume(self, batch: Any, commits: Any) -> None:
        assert [req.rid for req in batch.reqs] == self.rids
        assert len(commits) == len(self.rows)


SHARED = torch.ones(3, 2)
TWICE = Rows(torch.ones(3, 2))


class SortingHost(RowsHost):
    def consume(self, batch: Any, commits: Any) -> None:
        batch.reqs.sort(key=lambda req: req.rid)


class SortsRows(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> RowsHost:
        return SortingHost(copy_tensor(self.rows))


class KeepsCopied(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> RowsHost:
        copy_tensor(self.rows)
        return RowsHost(self.rows)


BUFFER = torch.zeros(8, 2)


class ReusesModuleBuffer(Rows):
    """Writes every step into one buffer and publishes a view of it."""

    calls = 0

    def __init__(self) -> None:
        ReusesModuleBuffer.calls += 1
        BUFFER.fill_(float(ReusesModuleBuffer.calls))
        super().__init__(BUFFER[:3])


class PublishesReusedBuffer(ReusesModuleBuffer):
    """Device publication of a view of a buffer the next step rewrites."""

    def copy_to_host(self, copy_tensor: Copy) -> Any:
        event = FakeEvent()
        event.record()
        return EventHost(self.rows, event)


@pytest.mark.parametrize("output", [
    pytest.param(EventOutput(torch.ones(3, 4)), id="device-publication-with-an-event"),
    pytest.param(SelfHost(3), id="copy-to-host-returns-self-with-per-batch-indices"),
    pytest.param(append_auxiliary_output(Rows(SHARED), Rows(SHARED)),
                 id="composite-of-two-outputs-sharing-a-tensor"),
    pytest.param(append_auxiliary_output(Rows(SHARED), Rows(SHARED[:, :1])),
                 id="composite-of-an-output-and-a-view-of-its-tensor"),
    pytest.param(append_auxiliary_output(TWICE, TWICE), id="the-same-output-appended-twice"),
    pytest.param(LayersFirst(), id="layers-first-tensors"),
    pytest.param(LayersFirst(positions_first=True), id="layers-first-fields-swapped"),
    pytest.param(LayersFirst(batch=6, layers=2), id="fewer-layers-than-requests"),
])
def test_an_output_sglang_runs_correctly_has_no_finding(output: Any) -> None:
    """Each real-plugin shape that SGLang runs fine passes (a note is not a failure)."""
    report = check_device_output(output)
    assert report.ok, report.to_text()


def test_device_publication_is_reported_as_a_note_only() -> None:
    """An output that never copies and keeps its device tensors gets AUX106, and passes."""
    report = check_device_output(EventOutput(torch.ones(3, 4)))
    assert report.ok and [note.code for note in report.notes] == ["AUX106"]


@pytest.mark.parametrize(("value", "code"), [
    pytest.param(SortsRows(torch.zeros(3, 2)), "AUX203", id="in-place-sort-of-batch-reqs"),
    pytest.param(SortsRows(torch.zeros(2, 2)), "AUX203", id="in-place-sort-of-two-requests"),
    pytest.param(KeepsCopied(torch.zeros(3, 2)), "AUX105", id="keeps-what-it-copied"),
    pytest.param(ReusesModuleBuffer, "AUX112", id="factory-reusing-one-buffer"),
    pytest.param(PublishesReusedBuffer, "AUX112", id="device-publication-of-a-reused-buffer"),
])
def test_an_output_sglang_breaks_is_reported_with_its_code(value: Any, code: str) -> None:
    """Instances are one step, factories several: each bug gives exactly its code."""
    report = (check_device_outputs(value) if isinstance(value, type)
              else check_device_output(value))
    assert report.codes == [code], report.to_text()


# ---------------------------------------------------------------- observers


class CloningObserver:
    """A correct sampling observer: clones what it publishes."""

    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> torch.Tensor:
        return logits.max(dim=-1).values.clone()

    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Rows:
        return Rows(torch.stack([state, token_ids.float()], dim=1))


class ViewObserver(CloningObserver):
    """Publishes a view of the logits it was given: on decode steps, the graph's buffer."""

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> torch.Tensor:
        return logits[:, :2]

    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Rows:
        return Rows(state)


class ReusingObserver(CloningObserver):
    """Writes every step into its own buffer and publishes views of it."""

    def __init__(self) -> None:
        self.buffer = torch.zeros(16, 2)

    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Rows:
        n = token_ids.shape[0]
        self.buffer[:n, 0] = state
        self.buffer[:n, 1] = token_ids.float()
        return Rows(self.buffer[:n])


class SharingObservers:
    """Two observers' outputs holding the same tensor, composed as SGLang composes them."""

    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> torch.Tensor:
        return logits[:, :2].clone()

    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Any:
        return append_auxiliary_output(Rows(state), Rows(state))


class InactiveObserver(CloningObserver):
    def is_active(self, sampling_info: Any) -> bool:
        return False


class CloningForward:
    """A correct forward observer: clones the hidden states it publishes."""

    def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                      can_run_graph: bool) -> Rows:
        return Rows(logits_output.hidden_states.clone())


class ViewForward:
    """Publishes the logits output's hidden states as they are: graph views on decode steps."""

    def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                      can_run_graph: bool) -> Rows:
        return Rows(logits_output.hidden_states)


class ReusingForward:
    def __init__(self) -> None:
        self.buffer = torch.zeros(16, 4)

    def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                      can_run_graph: bool) -> Rows:
        n = forward_batch.batch_size
        self.buffer[:n] = logits_output.hidden_states[:, :4]
        return Rows(self.buffer[:n])


def _observe(observer: Any) -> Report:
    if hasattr(observer, "after_forward"):
        return check_forward_observer(observer)
    return check_sampling_observer(observer)


@pytest.mark.parametrize(("observer", "codes"), [
    pytest.param(CloningObserver(), [], id="sampling-observer-that-clones"),
    pytest.param(SharingObservers(), [], id="composite-of-observers-sharing-a-tensor"),
    pytest.param(InactiveObserver(), [], id="inactive-observer-publishes-nothing"),
    pytest.param(ViewObserver(), ["AUX110"], id="uncloned-view-of-the-graph-logits"),
    pytest.param(ReusingObserver(), ["AUX112"], id="sampling-observer-reusing-its-buffer"),
    pytest.param(CloningForward(), [], id="forward-observer-that-clones"),
    pytest.param(ViewForward(), ["AUX110"], id="forward-observer-publishing-graph-views"),
    pytest.param(ReusingForward(), ["AUX112"], id="forward-observer-reusing-its-buffer"),
])
def test_observers_are_judged_over_several_overlapped_steps(observer: Any,
                                                            codes: list[str]) -> None:
    """Observers run over graph views; what SGLang would overwrite is reported, nothing else."""
    assert _observe(observer).codes == codes


def test_a_forward_observer_comes_first_in_the_composite() -> None:
    """With a sampling observer too, the forward output is the first child (SGLang main)."""
    order: list[str] = []

    class Named(Rows):
        def __init__(self, name: str) -> None:
            super().__init__(torch.zeros(16, 1))
            self.name = name

        def copy_to_host(self, copy_tensor: Copy) -> RowsHost:
            order.append(self.name)
            return super().copy_to_host(copy_tensor)

    class Forward:
        def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                          can_run_graph: bool) -> Named:
            return Named("forward")

    class Sampling(CloningObserver):
        def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Named:
            return Named("sampling")

    assert check_forward_observer(Forward(), sampling_observer=Sampling(), steps=1).ok
    assert order == ["forward", "sampling"]


def test_a_hook_that_raises_or_takes_the_wrong_arguments_is_aux102() -> None:
    """An after_forward without the can_run_graph keyword, or a raising hook, is AUX102."""
    class NoKeyword:
        def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any) -> None:
            return None

    class Raises(CloningObserver):
        def after_sample(self, state: Any, token_ids: Any) -> Any:
            raise RuntimeError("no")

    assert check_forward_observer(NoKeyword()).codes == ["AUX102"]
    assert check_sampling_observer(Raises()).codes == ["AUX102"]


# ---------------------------------------------------------------- the loop itself


def test_the_overlap_order_is_what_makes_a_reused_buffer_fail() -> None:
    """Without overlap the copy completes before the next forward: no AUX112."""
    produce = (lambda forward: ReusesModuleBuffer())
    overlapped = run_loop(produce, size=BatchSize((3,)), steps=3)
    synchronous = run_loop(produce, size=BatchSize((3,)), steps=3, overlap=False)
    assert [f.code for f in overlapped] == ["AUX112"]
    assert synchronous == []


def test_a_factory_taking_the_batch_gets_each_step_s_batch_and_consumes_it() -> None:
    """The host output is consumed with a snapshot of the very batch its output was built for."""
    assert source_of(BuiltFor).kind == "batch-factory"
    assert check_source(source_of(BuiltFor), steps=4).ok


def test_each_host_output_is_consumed_exactly_once() -> None:
    """Over four steps of a factory, every host output sees one consume."""
    counts: list[int] = []

    class Counting(RowsHost):
        def __init__(self, rows: torch.Tensor) -> None:
            super().__init__(rows)
            counts.append(0)
            self.index = len(counts) - 1

        def consume(self, batch: Any, commits: Any) -> None:
            counts[self.index] += 1

    class Output(Rows):
        def __init__(self) -> None:
            super().__init__(torch.zeros(3, 2))

        def copy_to_host(self, copy_tensor: Copy) -> RowsHost:
            return Counting(copy_tensor(self.rows))

    assert check_device_outputs(Output, steps=4).ok
    assert counts == [1, 1, 1, 1]


@pytest.mark.parametrize(("output", "expected"), [
    pytest.param(Rows(torch.zeros(4, 16)), 4, id="rows"),
    pytest.param(LayersFirst(batch=3, layers=5), 3, id="layers-first"),
    pytest.param(LayersFirst(batch=3, layers=5, positions_first=True), 3, id="fields-swapped"),
    pytest.param(RowsHost(torch.zeros(())), 3, id="no-dimension-to-tell"),
])
def test_the_batch_size_is_inferred_from_the_dimension_all_tensors_share(
    output: Any, expected: int
) -> None:
    """The size shared by most tensors wins, whatever the field order; the guess says so."""
    best = infer_batch_sizes(output)[0]
    assert best.sizes == (expected,)
    assert "auxcheck_batch_size" in best.how


def test_an_inferred_batch_is_named_in_the_failures_it_affects() -> None:
    """An AUX202 found with an inferred batch says what was inferred and how to declare it."""
    class Crashes(RowsHost):
        def consume(self, batch: Any, commits: Any) -> None:
            raise IndexError("always")

    class Output(Rows):
        def copy_to_host(self, copy_tensor: Copy) -> RowsHost:
            return Crashes(copy_tensor(self.rows))

    inferred = check_device_output(Output(torch.zeros(3, 2)))
    declared = check_device_output(Output(torch.zeros(3, 2)), batch_size=3)
    assert inferred.codes == declared.codes == ["AUX202"]
    assert "inferred a batch of 3 requests from .rows" in (inferred.findings[0].detail or "")
    assert "inferred" not in (declared.findings[0].detail or "")


def test_a_single_layers_first_tensor_passes_by_trying_the_likely_sizes() -> None:
    """With one [layers, batch, h] tensor the leading size is tried first, then the others."""
    class Lone:
        def __init__(self) -> None:
            self.hidden = torch.zeros(2, 5, 4)

        def copy_to_host(self, copy_tensor: Copy) -> Any:
            return LayersHost(copy_tensor(self.hidden), torch.zeros(0))

    assert check_device_output(Lone()).ok
    assert check_device_output(Lone(), batch_size=2).codes == ["AUX202"]


def test_sources_are_told_apart_by_what_they_can_be_called_with() -> None:
    """Instances, zero-argument factories and factories taking the batch."""
    assert source_of(Rows(torch.zeros(1))).kind == "instance"
    assert source_of(ReusesModuleBuffer).kind == "factory"
    assert source_of(lambda: Rows(torch.zeros(1))).kind == "factory"
    assert source_of(lambda batch: Rows(torch.zeros(1))).kind == "batch-factory"
    assert isinstance(source_of(BuiltFor), OutputSource)
