"""Tests for auxcheck.validate: every rule's passing and failing cases, hostile plugins, reports."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from helpers.doubles import NoneObserver
from hypothesis import given, settings
from hypothesis import strategies as st

from auxcheck import report as report_module
from auxcheck._runtime import validators as validate_module
from auxcheck._runtime.judging import catch_escapes_and_stops
from auxcheck._runtime.scheduler import FakeBatch, FakeReq, build_commits, snapshot_output_starts
from auxcheck.errors import ContractViolation, InvalidArgument
from auxcheck.protocols import CommittedTokens, CompositeDeviceAuxiliaryOutput
from auxcheck.validate import (
    Report,
    check_commits,
    check_device_output,
    check_host_output,
    check_sampling_observer,
)

Copy = Callable[[torch.Tensor], torch.Tensor]
STATIC = torch.zeros(8, 4)


# ---------------------------------------------------------------- host outputs


class GoodHost:
    """Keeps the copied rows and records one row per commit."""

    def __init__(self, rows: torch.Tensor) -> None:
        self.rows = rows

    def consume(self, batch: Any, commits: Any) -> None:
        for req, commit in zip(batch.reqs, commits):
            if commit is not None:
                req.customized_info = {"n": [len(commit.token_ids)]}


class RenamedConsumeHost(GoodHost):
    def consume(self, b: Any, c: Any) -> None:  # type: ignore[override]
        return None


class StaticConsumeHost(GoodHost):
    @staticmethod
    def consume(batch: Any, commits: Any) -> None:  # type: ignore[override]
        return None


class NoConsumeHost:
    def __init__(self, rows: torch.Tensor) -> None:
        self.rows = rows


class ConsumeNotCallableHost(NoConsumeHost):
    consume = 42


class OneArgConsumeHost(NoConsumeHost):
    def consume(self, batch: Any) -> None:
        return None


class NoneUnsafeHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        for commit in commits:
            commit.output_index  # noqa: B018 - the bug: None entries are valid


class EmptyUnsafeHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        batch.reqs[0]  # the bug: empty batches are valid


class RecursingConsumeHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        self.consume(batch, commits)


class AppendingHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        commits.append(None)


class FilteringHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        commits[:] = [c for c in commits if c is not None]


class ReplacingHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        if commits:
            commits[0] = None if commits[0] is not None else CommittedTokens(0, (1,))


class FrozenBypassHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        for commit in commits:
            if commit is not None:
                object.__setattr__(commit, "output_index", commit.output_index + 1)


class PoppingReqsHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        if batch.reqs:
            batch.reqs.pop()


class RebindingReqsHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        batch.reqs = list(batch.reqs)


class ReversingReqsHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        batch.reqs.reverse()


class TruncatingOutputHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        for req in batch.reqs:
            del req.output_ids[:]


class ReturnsZeroHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> Any:  # type: ignore[override]
        return 0


class ReturnsFalseHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> Any:  # type: ignore[override]
        return False


class ReturnsNoneHost(GoodHost):
    def consume(self, batch: Any, commits: Any) -> None:
        return None


# ---------------------------------------------------------------- device outputs


class Rows:
    """A device output whose host output is ``host_class`` over a copy of ``rows``."""

    host_class: type = GoodHost

    def __init__(self) -> None:
        self.rows = torch.arange(12.0).reshape(3, 4)

    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return self.host_class(copy_tensor(self.rows))


class RenamedParamOutput(Rows):
    def copy_to_host(self, fn: Copy) -> Any:
        return GoodHost(fn(self.rows))


class VarArgsOutput(Rows):
    def copy_to_host(self, *args: Any) -> Any:
        return GoodHost(args[0](self.rows))


class StaticmethodOutput:
    @staticmethod
    def copy_to_host(copy_tensor: Copy) -> Any:
        return GoodHost(copy_tensor(torch.ones(2)))


class ClassmethodOutput:
    @classmethod
    def copy_to_host(cls, copy_tensor: Copy) -> Any:
        return GoodHost(copy_tensor(torch.ones(2)))


class CachedCopyOutput(Rows):
    @functools.cache  # noqa: B019 - hashes copy_tensor, as SGLang's is
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return GoodHost(copy_tensor(self.rows))


class NoCopyOutput:
    rows = torch.ones(2)


class CopyNotCallableOutput:
    copy_to_host = "not a method"


class NoArgOutput(Rows):
    def copy_to_host(self) -> Any:  # type: ignore[override]
        return GoodHost(self.rows)


class TwoArgOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy, stream: Any) -> Any:  # type: ignore[override]
        return GoodHost(copy_tensor(self.rows))


class KeywordOnlyOutput(Rows):
    def copy_to_host(self, *, copy_tensor: Copy) -> Any:  # type: ignore[override]
        return GoodHost(copy_tensor(self.rows))


class StaticmethodWithSelfOutput:
    @staticmethod
    def copy_to_host(self: Any, copy_tensor: Copy) -> Any:  # noqa: PLW0211 - the bug under test
        return GoodHost(copy_tensor(torch.ones(2)))


class RaisingCopyOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        raise ValueError("device lost")


class ExitingCopyOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        raise SystemExit(0)  # would make `auxcheck validate` exit 0, "clean"


class NoneCopyOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return None


class NoConsumeCopyOutput(Rows):
    host_class = NoConsumeHost


class TwiceOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        copy_tensor(self.rows)
        return GoodHost(copy_tensor(self.rows))


class SliceTwiceOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        copy_tensor(self.rows[1:])
        return GoodHost(copy_tensor(self.rows))


class TwoDistinctOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return GoodHost((copy_tensor(self.rows), copy_tensor(self.rows.clone())))


class DisjointSlicesOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return GoodHost((copy_tensor(self.rows[:1]), copy_tensor(self.rows[1:])))


class ColumnViewsOutput(Rows):
    """Copies two interleaved column views: strided, but no element is shared."""

    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return GoodHost((copy_tensor(self.rows[:, 0]), copy_tensor(self.rows[:, 1])))


class LazyCopyHost(GoodHost):
    """Keeps copy_tensor and the device tensor in a closure, and copies in consume."""

    def __init__(self, copy_later: Callable[[], Any]) -> None:
        super().__init__(torch.zeros(0))
        self.copy_later = copy_later

    def consume(self, batch: Any, commits: Any) -> None:
        self.copy_later()


class LazyCopyOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        rows = self.rows
        return LazyCopyHost(lambda: copy_tensor(rows))


class SparseOutput:
    """Holds a sparse COO tensor: its bytes live in its indices and values."""

    def __init__(self) -> None:
        self.rows = torch.eye(3).to_sparse()

    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return GoodHost(copy_tensor(self.rows))


class JaggedOutput(SparseOutput):
    def __init__(self) -> None:
        self.rows = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)],
                                               layout=torch.jagged)


class SparseKeptOutput(SparseOutput):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        copy_tensor(self.rows)
        return GoodHost(self.rows)


class EmptyTwiceOutput:
    def __init__(self) -> None:
        self.rows = torch.ones(3, 4)[:0]

    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return GoodHost((copy_tensor(self.rows), copy_tensor(self.rows)))


class KeepsDeviceOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        copy_tensor(self.rows)
        return GoodHost(self.rows)


class KeepsViewInDictOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return GoodHost({"copy": copy_tensor(self.rows), "raw": [self.rows[0]]})


@dataclass(frozen=True, slots=True)
class SlottedHost:
    held: tuple[Any, ...]

    def consume(self, batch: Any, commits: Any) -> None:
        return None


class KeepsInSlotsOutput(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return SlottedHost((copy_tensor(self.rows), (self.rows,)))


class KeepsUncopiedOutput(Rows):
    """Copies nothing and hands the device tensor over: copy bypassed entirely."""

    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return GoodHost(self.rows.view(-1))


class StaticViewOutput(Rows):
    def __init__(self) -> None:
        self.rows = STATIC[2:5]


class StaticItselfOutput(Rows):
    def __init__(self) -> None:
        self.rows = STATIC


class StaticCloneOutput(Rows):
    def __init__(self) -> None:
        self.rows = STATIC[2:5].clone()


class StaticEmptySliceOutput(Rows):
    def __init__(self) -> None:
        self.rows = STATIC[3:3]


class CopiesStaticOutput(Rows):
    """Holds nothing, but copies straight from the static buffer."""

    def __init__(self) -> None:
        pass

    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return GoodHost(copy_tensor(STATIC[:1]))


def host_output(host_class: type) -> type:
    """Returns a device-output class whose host output is ``host_class``."""
    return type(f"{host_class.__name__}Output", (Rows,), {"host_class": host_class})


# ---------------------------------------------------------------- PP outputs and observers


class PPOutput(Rows):
    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {"rows": self.rows}


class PPEmptyOutput(Rows):
    def to_pp_tensors(self) -> Any:
        return {}


class PPBadNameOutput(Rows):
    def to_pp_tensors(self) -> Any:
        return {3: self.rows}


class PPEmptyNameOutput(Rows):
    def to_pp_tensors(self) -> Any:
        return {"": self.rows}


class PPNonTensorOutput(Rows):
    def to_pp_tensors(self) -> Any:
        return {"rows": self.rows.tolist()}


class PPListOutput(Rows):
    def to_pp_tensors(self) -> Any:
        return [self.rows]


class PPRaisingOutput(Rows):
    def to_pp_tensors(self) -> Any:
        raise KeyError("rows")


class PPNotCallableOutput(Rows):
    to_pp_tensors = {"rows": None}  # noqa: RUF012 - the bug under test


class PPOutputObserver:
    """Rebuilds a PPOutput from the received tensors."""

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Any:
        output = PPOutput()
        output.rows = tensors["rows"]
        return output


class RenamedObserver:
    def from_pp_tensors(self, received: Any) -> Any:
        return PPOutputObserver().from_pp_tensors(received)


class RaisingObserver:
    def from_pp_tensors(self, tensors: Any) -> Any:
        return tensors["hidden"]


class ZerosObserver:
    def from_pp_tensors(self, tensors: Any) -> Any:
        output = PPOutput()
        output.rows = torch.zeros_like(tensors["rows"])
        return output


class NoCopyObserver:
    def from_pp_tensors(self, tensors: Any) -> Any:
        return NoCopyOutput()


class NoFromPPObserver:
    pass


class ArityObserver:
    def from_pp_tensors(self) -> Any:
        return PPOutput()


# ---------------------------------------------------------------- hostile objects


class HostileGetattr:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name} for you")


class RaisingProperty:
    @property
    def copy_to_host(self) -> Any:
        raise LookupError("property exploded")


class InfiniteRecursion(Rows):
    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return self.copy_to_host(copy_tensor)


class RaisingRepr(NoCopyOutput):
    def __repr__(self) -> str:
        raise RuntimeError("repr exploded")


class HostileHostRepr(GoodHost):
    def __repr__(self) -> str:
        raise RuntimeError("repr exploded")

    def consume(self, batch: Any, commits: Any) -> Any:  # type: ignore[override]
        return 1


class HostileContainer(Rows):
    """Holds a mapping whose items() raises; the tensor walk must survive it."""

    class Exploding(dict):  # type: ignore[type-arg]
        def items(self) -> Any:
            raise RuntimeError("items exploded")

    def __init__(self) -> None:
        super().__init__()
        self.extra = self.Exploding(a=1)


class Node:
    def __init__(self, child: Any) -> None:
        self.child = child


class DeepAndCyclic(Rows):
    """A 10 000-deep chain and a self-cycle: the walk must stay bounded."""

    def __init__(self) -> None:
        super().__init__()
        chain: Any = self.rows
        for _ in range(10_000):
            chain = Node(chain)
        self.chain = chain
        self.me = self


def codes(report: Report) -> list[str]:
    return [finding.code for finding in report]


# ---------------------------------------------------------------- device output rules


@pytest.mark.parametrize("output", [
    pytest.param(Rows(), id="plain-method"),
    pytest.param(RenamedParamOutput(), id="renamed-parameter"),
    pytest.param(VarArgsOutput(), id="star-args"),
    pytest.param(StaticmethodOutput(), id="staticmethod-taking-copy-tensor"),
    pytest.param(ClassmethodOutput(), id="classmethod"),
    pytest.param(CachedCopyOutput(), id="lru-cached-method"),
    pytest.param(CompositeDeviceAuxiliaryOutput((Rows(), RenamedParamOutput())), id="composite"),
    pytest.param(TwoDistinctOutput(), id="two-distinct-tensors"),
    pytest.param(DisjointSlicesOutput(), id="disjoint-slices"),
    pytest.param(EmptyTwiceOutput(), id="zero-element-tensor-twice"),
    pytest.param(ColumnViewsOutput(), id="interleaved-column-views"),
    pytest.param(SparseOutput(), id="sparse-tensor"),
    pytest.param(JaggedOutput(), id="jagged-nested-tensor"),
    pytest.param(DeepAndCyclic(), id="deep-and-cyclic-attributes"),
])
def test_a_well_behaved_device_output_has_no_findings(output: Any) -> None:
    """Well-behaved device outputs, however their copy_to_host is declared, pass every check."""
    report = check_device_output(output)
    assert report.ok, report.to_text()


@pytest.mark.parametrize(("output", "code"), [
    pytest.param(NoCopyOutput(), "AUX101", id="no-copy-to-host"),
    pytest.param(CopyNotCallableOutput(), "AUX101", id="copy-to-host-not-callable"),
    pytest.param(NoArgOutput(), "AUX102", id="no-copy-tensor-parameter"),
    pytest.param(TwoArgOutput(), "AUX102", id="two-parameters"),
    pytest.param(KeywordOnlyOutput(), "AUX102", id="keyword-only-parameter"),
    pytest.param(StaticmethodWithSelfOutput(), "AUX102", id="staticmethod-expecting-self"),
    pytest.param(RaisingCopyOutput(), "AUX103", id="copy-to-host-raises"),
    pytest.param(NoneCopyOutput(), "AUX103", id="copy-to-host-returns-none"),
    pytest.param(ExitingCopyOutput(), "AUX103", id="copy-to-host-calls-sys-exit"),
    pytest.param(NoConsumeCopyOutput(), "AUX103", id="host-without-consume"),
    pytest.param(TwiceOutput(), "AUX104", id="same-tensor-twice"),
    pytest.param(SliceTwiceOutput(), "AUX104", id="slice-then-whole"),
    pytest.param(KeepsDeviceOutput(), "AUX105", id="host-keeps-device-tensor"),
    pytest.param(KeepsViewInDictOutput(), "AUX105", id="host-keeps-view-in-dict-list"),
    pytest.param(KeepsInSlotsOutput(), "AUX105", id="host-keeps-tensor-in-slots"),
    pytest.param(SparseKeptOutput(), "AUX105", id="host-keeps-sparse-device-tensor"),
    pytest.param(LazyCopyOutput(), "AUX105", id="host-copies-lazily-in-consume"),
])
def test_a_broken_device_output_is_reported_with_its_code(output: Any, code: str) -> None:
    """Each device-output bug is reported under its own code, and only that code."""
    assert codes(check_device_output(output)) == [code]


@pytest.mark.parametrize(("output", "expected"), [
    pytest.param(StaticViewOutput(), ["AUX110"], id="view-of-static-buffer"),
    pytest.param(StaticItselfOutput(), ["AUX110"], id="the-static-buffer-itself"),
    pytest.param(CopiesStaticOutput(), ["AUX110"], id="copies-from-static-buffer"),
    pytest.param(StaticCloneOutput(), [], id="clone-of-static-buffer"),
    pytest.param(StaticEmptySliceOutput(), [], id="zero-element-slice"),
    pytest.param(Rows(), [], id="unrelated-tensor"),
])
def test_device_tensors_overlapping_a_static_buffer_are_aux110(
    output: Any, expected: list[str]
) -> None:
    """AUX110 flags device tensors sharing bytes with a static buffer, and nothing else."""
    assert codes(check_device_output(output, static_buffers=[torch.ones(2), STATIC])) == expected


def test_static_buffers_that_are_not_tensors_are_rejected() -> None:
    """A non-tensor static buffer is a usage error naming its position and type."""
    with pytest.raises(InvalidArgument) as info:
        check_device_output(Rows(), static_buffers=[STATIC, [1, 2]])
    assert str(info.value) == (
        "static_buffers[1] is a list, not a tensor; pass the tensors a CUDA graph owns "
        "(e.g. its static input/output buffers)"
    )


def test_static_buffers_accept_any_iterable() -> None:
    """static_buffers may be a generator, consumed once."""
    report = check_device_output(StaticViewOutput(), static_buffers=(t for t in [STATIC]))
    assert codes(report) == ["AUX110"]


def test_static_buffers_may_be_a_registry_or_a_mapping_of_names() -> None:
    """A registry or a name -> tensor mapping works too, and the finding names the buffer."""
    from auxcheck.aliasing import StaticBufferRegistry

    registry = StaticBufferRegistry()
    registry.register(STATIC[:1], name="logits_out")  # whole storage: the [2:5] view counts
    for buffers in (registry, {"logits_out": STATIC}):
        report = check_device_output(StaticViewOutput(), static_buffers=buffers)
        assert codes(report) == ["AUX110"]
        assert "logits_out" in report.findings[0].message


@pytest.mark.parametrize(("buffers", "expected"), [
    pytest.param(None, [], id="none-means-no-buffers"),
    pytest.param((), [], id="an-empty-tuple"),
    pytest.param(STATIC, ["AUX110"], id="one-tensor-is-one-buffer"),
    pytest.param([STATIC], ["AUX110"], id="a-list-of-one-tensor"),
])
def test_static_buffers_take_every_form_the_annotation_allows(
    buffers: Any, expected: list[str]
) -> None:
    """None is no buffer, and a tensor is one buffer: never one per row, never a TypeError."""
    assert codes(check_device_output(StaticViewOutput(), static_buffers=buffers)) == expected


def test_a_many_row_static_tensor_gives_one_finding_in_validators_and_aliasing_alike() -> None:
    """A 4-row tensor given as static buffers is registered once, by the one registry builder."""
    from auxcheck.aliasing import static_buffer_findings

    buffer = torch.zeros(4, 8)

    class HalfView(Rows):
        def copy_to_host(self, copy_tensor: Copy) -> Any:
            return GoodHost(copy_tensor(buffer[:2]))

    report = check_device_output(HalfView(), static_buffers=buffer)
    assert codes(report) == ["AUX110"]
    assert len(report.findings) == 1
    assert len(static_buffer_findings([buffer[:2]], buffer)) == 1


def test_a_copy_tensor_call_records_every_tensor_given() -> None:
    """copy_tensor returns a clone on the host, so the host output shares nothing."""
    host_rows: list[torch.Tensor] = []

    class Spy(Rows):
        def copy_to_host(self, copy_tensor: Copy) -> Any:
            host_rows.append(copy_tensor(self.rows))
            return GoodHost(host_rows[0])

    output = Spy()
    assert check_device_output(output).ok
    assert torch.equal(host_rows[0], output.rows)
    assert host_rows[0].data_ptr() != output.rows.data_ptr()


# ---------------------------------------------------------------- host output rules


@pytest.mark.parametrize("host", [
    pytest.param(GoodHost(torch.ones(3, 2)), id="plain"),
    pytest.param(RenamedConsumeHost(torch.ones(3)), id="renamed-parameters"),
    pytest.param(StaticConsumeHost(torch.ones(3)), id="staticmethod"),
    pytest.param(ReturnsNoneHost(torch.ones(3)), id="explicit-return-none"),
])
def test_a_well_behaved_host_output_has_no_findings(host: Any) -> None:
    """Host outputs that handle every scheduler step pass."""
    report = check_host_output(host)
    assert report.ok, report.to_text()


@pytest.mark.parametrize(("host_class", "code"), [
    pytest.param(NoConsumeHost, "AUX201", id="no-consume"),
    pytest.param(ConsumeNotCallableHost, "AUX201", id="consume-not-callable"),
    pytest.param(OneArgConsumeHost, "AUX201", id="consume-without-commits"),
    pytest.param(NoneUnsafeHost, "AUX202", id="crashes-on-none-commit"),
    pytest.param(RecursingConsumeHost, "AUX202", id="infinite-recursion"),
    pytest.param(AppendingHost, "AUX203", id="appends-to-commits"),
    pytest.param(FilteringHost, "AUX203", id="filters-commits-in-place"),
    pytest.param(ReplacingHost, "AUX203", id="replaces-a-commit"),
    pytest.param(FrozenBypassHost, "AUX203", id="modifies-a-frozen-commit"),
    pytest.param(PoppingReqsHost, "AUX203", id="pops-batch-reqs"),
    pytest.param(RebindingReqsHost, "AUX203", id="rebinds-batch-reqs"),
    pytest.param(ReversingReqsHost, "AUX203", id="reorders-batch-reqs"),
    pytest.param(TruncatingOutputHost, "AUX203", id="truncates-request-output"),
    pytest.param(ReturnsZeroHost, "AUX204", id="returns-zero"),
    pytest.param(ReturnsFalseHost, "AUX204", id="returns-false"),
])
def test_a_broken_host_output_is_reported_with_its_code(host_class: type, code: str) -> None:
    """Each consume bug is reported under its code, both directly and through copy_to_host."""
    assert codes(check_host_output(host_class(torch.ones(3)))) == [code]
    through_copy = "AUX103" if code == "AUX201" and host_class is not OneArgConsumeHost \
        else code
    assert codes(check_device_output(host_output(host_class)())) == [through_copy]


def test_consume_runs_once_with_the_batch_the_output_was_built_for() -> None:
    """consume is called exactly once: 4 requests, None entries and commits past zero."""
    calls: list[tuple[int, list[Any]]] = []

    class Recording(GoodHost):
        def consume(self, batch: Any, commits: Any) -> None:
            assert isinstance(commits, list)
            assert check_commits(batch, commits).ok
            calls.append((len(batch.reqs), list(commits)))

    assert check_host_output(Recording(torch.ones(4, 2))).ok
    assert [size for size, _ in calls] == [4]
    entries = calls[0][1]
    assert None in entries
    assert any(isinstance(c, CommittedTokens) and c.output_index > 0 for c in entries)


def test_the_batch_size_follows_the_host_tensors_or_the_option() -> None:
    """The batch size is inferred from the rows unless batch_size says otherwise."""
    sizes: set[int] = set()

    class Sizes(GoodHost):
        def consume(self, batch: Any, commits: Any) -> None:
            sizes.add(len(batch.reqs))

    check_host_output(Sizes(torch.ones(5, 2)))
    check_host_output(Sizes(torch.ones(5, 2)), batch_size=2)
    assert sizes == {5, 2}


@pytest.mark.parametrize("output", [
    pytest.param(KeepsUncopiedOutput(), id="host-keeps-the-device-view"),
    pytest.param(host_output(EmptyUnsafeHost)(), id="indexes-its-own-requests"),
])
def test_outputs_sglang_runs_correctly_have_no_finding(output: Any) -> None:
    """Device publication (a note) and a consume that needs its own batch are not failures."""
    assert check_device_output(output).ok


def test_device_publication_is_a_note_naming_the_kept_tensors() -> None:
    """A host output keeping uncopied device tensors gets AUX106, which is not a failure."""
    report = check_device_output(KeepsUncopiedOutput())
    assert report.ok and [n.code for n in report.notes] == ["AUX106"]
    assert "ok (1 note)" in report.to_text() and ".rows" in report.notes[0].message


# ---------------------------------------------------------------- pipeline parallel


@pytest.mark.parametrize(("output", "observer", "expected"), [
    pytest.param(PPOutput(), PPOutputObserver(), [], id="round-trip"),
    pytest.param(PPOutput(), RenamedObserver(), [], id="renamed-observer-parameter"),
    pytest.param(PPOutput(), None, [], id="pp-output-without-observer"),
    pytest.param(Rows(), None, [], id="no-pp-at-all"),
    pytest.param(Rows(), PPOutputObserver(), ["AUX401"], id="pp-requested-no-to-pp-tensors"),
    pytest.param(CompositeDeviceAuxiliaryOutput((PPOutput(),)), PPOutputObserver(), ["AUX401"],
                 id="composite-in-pp-mode"),
    pytest.param(PPNotCallableOutput(), None, ["AUX401"], id="to-pp-tensors-not-callable"),
    pytest.param(PPEmptyOutput(), None, ["AUX402"], id="empty-mapping"),
    pytest.param(PPBadNameOutput(), None, ["AUX402"], id="non-string-name"),
    pytest.param(PPEmptyNameOutput(), None, ["AUX402"], id="empty-name"),
    pytest.param(PPNonTensorOutput(), None, ["AUX402"], id="non-tensor-value"),
    pytest.param(PPListOutput(), None, ["AUX402"], id="not-a-mapping"),
    pytest.param(PPRaisingOutput(), None, ["AUX402"], id="to-pp-tensors-raises"),
    pytest.param(PPOutput(), NoneObserver(), ["AUX403"], id="observer-returns-none"),
    pytest.param(PPOutput(), RaisingObserver(), ["AUX403"], id="observer-raises"),
    pytest.param(PPOutput(), ZerosObserver(), ["AUX403"], id="different-host-values"),
    pytest.param(PPOutput(), NoCopyObserver(), ["AUX403"], id="rebuilt-cannot-copy"),
    pytest.param(PPOutput(), NoFromPPObserver(), ["AUX403"], id="observer-lacks-from-pp"),
    pytest.param(PPOutput(), ArityObserver(), ["AUX403"], id="observer-wrong-arity"),
])
def test_pipeline_parallel_transport_is_checked(
    output: Any, observer: Any, expected: list[str]
) -> None:
    """PP transport is checked when the output has to_pp_tensors or an observer is given."""
    assert codes(check_device_output(output, pp_observer=observer)) == expected


# ---------------------------------------------------------------- commits


def _stepped_batch() -> tuple[FakeBatch, list[CommittedTokens | None]]:
    batch = FakeBatch([FakeReq("a", output_ids=[5]), FakeReq("b"), FakeReq("c")])
    starts = snapshot_output_starts(batch)
    batch.reqs[0].output_ids.extend([6, 7])
    batch.reqs[2].output_ids.extend([8])
    return batch, build_commits(batch, starts)


@pytest.mark.parametrize(("commits", "expected"), [
    pytest.param(None, [], id="scheduler-built"),
    pytest.param([None, None, None], [], id="all-none"),
    pytest.param((CommittedTokens(1, (6, 7)), None, CommittedTokens(0, (8,))), [],
                 id="tuple-of-entries"),
    pytest.param([None, None], ["AUX601"], id="too-few"),
    pytest.param([None] * 4, ["AUX601"], id="too-many"),
    pytest.param([(1, (6, 7)), None, None], ["AUX601"], id="plain-tuple-entry"),
    pytest.param([CommittedTokens(-1, (6, 7)), None, None], ["AUX601"], id="negative-index"),
    pytest.param([CommittedTokens(1, [6, 7]), None, None], ["AUX601"],  # type: ignore[arg-type]
                 id="token-ids-list"),
    pytest.param([None, None, CommittedTokens(1, ())], ["AUX601"], id="empty-token-ids"),
    pytest.param([None, None, CommittedTokens(0, (True,))], ["AUX601"], id="bool-token"),
    pytest.param([CommittedTokens(0, (6, 7)), None, None], ["AUX601"], id="misaligned-index"),
    pytest.param("abc", ["AUX601"], id="a-string"),
    pytest.param(7, ["AUX601"], id="not-a-sequence"),
])
def test_commits_must_align_with_the_batch(commits: Any, expected: list[str]) -> None:
    """check_commits accepts scheduler-built commits and reports AUX601 for anything else."""
    batch, built = _stepped_batch()
    assert codes(check_commits(batch, built if commits is None else commits)) == expected


_COMMIT_SHAPES = st.lists(st.tuples(
    st.integers(0, 6),                                   # output length
    st.one_of(st.none(), st.integers(0, 6)),             # finished_len
    st.sampled_from(["none", "aligned", "early", "late", "empty", "negative"])),
    max_size=6)


@given(shapes=_COMMIT_SHAPES, drop=st.booleans(), as_tuple=st.booleans())
@settings(max_examples=300, deadline=None, database=None)
def test_the_fast_path_passes_exactly_what_the_guarded_check_passes(
        shapes: list[tuple[int, int | None, str]], drop: bool, as_tuple: bool) -> None:
    """Plain requests and commits are judged without the guards; the verdict never differs."""
    reqs, commits = [], []
    for i, (length, finished, kind) in enumerate(shapes):
        req = FakeReq(f"r{i}", output_ids=list(range(length)), finished_len=finished)
        visible = length if finished is None else finished
        start = {"aligned": visible - 1, "early": visible - 2, "late": visible,
                 "negative": -1}.get(kind, visible)
        tokens = () if kind == "empty" else (7,)
        reqs.append(req)
        commits.append(None if kind == "none" else CommittedTokens(start, tokens))
    if drop and commits:
        commits.pop()
    batch = FakeBatch(reqs)
    entries = tuple(commits) if as_tuple else commits
    guarded = catch_escapes_and_stops("AUX601", "commits", entries, lambda: (
        validate_module._commits_report("commits", batch, entries)))
    assert validate_module._plainly_aligned(batch, entries) == guarded.ok
    assert check_commits(batch, entries).ok == guarded.ok


class _PropertyReq(FakeReq):
    @property  # type: ignore[override]
    def finished_len(self) -> int | None:
        return 0

    @finished_len.setter
    def finished_len(self, value: Any) -> None:
        pass


def test_a_request_whose_fields_are_properties_takes_the_guarded_path() -> None:
    """The fast path reads no property: such a request is judged, and worded, by the guarded check."""
    batch = FakeBatch([_PropertyReq("p", output_ids=[1, 2])])
    commits = [CommittedTokens(1, (2,))]
    assert not validate_module._plainly_aligned(batch, commits)
    report = check_commits(batch, commits)
    assert codes(report) == ["AUX601"]
    assert report.findings[0].message.startswith(
        "commits[0] has output_index 1, but request 'p' shows 0 visible tokens")


def test_commits_for_a_batch_without_reqs_are_aux601() -> None:
    """A batch without reqs cannot be aligned with; the finding says so."""
    report = check_commits(object(), [])
    assert codes(report) == ["AUX601"]
    assert report.findings[0].message.startswith("the batch has no readable `reqs`")


# ---------------------------------------------------------------- sampling observer


class GoodObserver:
    def is_active(self, info: Any) -> bool:
        return True

    def before_grammar(self, logits: Any, info: Any) -> Any:
        return None

    def after_sample(self, state: Any, token_ids: Any) -> Any:
        return None

    def from_pp_tensors(self, tensors: Any) -> Any:
        return PPOutputObserver().from_pp_tensors(tensors)


class MissingAfterSample:
    def is_active(self, info: Any) -> bool:
        return True

    def before_grammar(self, logits: Any, info: Any) -> Any:
        return None


class ShortAfterSample(MissingAfterSample):
    def after_sample(self, state: Any) -> Any:
        return None


class InactiveAttr(GoodObserver):
    is_active = True  # type: ignore[assignment]


class BadFromPP(GoodObserver):
    def from_pp_tensors(self) -> Any:  # type: ignore[override]
        return None


@pytest.mark.parametrize(("observer", "expected"), [
    pytest.param(GoodObserver(), [], id="complete"),
    pytest.param(MissingAfterSample(), ["AUX102"], id="missing-after-sample"),
    pytest.param(ShortAfterSample(), ["AUX102"], id="after-sample-wrong-arity"),
    pytest.param(InactiveAttr(), ["AUX102"], id="is-active-not-callable"),
    pytest.param(BadFromPP(), ["AUX403"], id="from-pp-tensors-wrong-arity"),
    pytest.param(object(), ["AUX102"] * 3, id="nothing-at-all"),
])
def test_sampling_observer_hooks_are_checked(observer: Any, expected: list[str]) -> None:
    """Observer hooks must be callable positionally, as SGLang calls them."""
    assert codes(check_sampling_observer(observer)) == expected


def test_observer_hook_findings_carry_an_observer_hint() -> None:
    """Observer findings reuse AUX102 but their hint names the observer hooks."""
    finding = check_sampling_observer(MissingAfterSample()).findings[0]
    assert "after_sample(self, state, token_ids)" in finding.hint
    assert finding.message.startswith("`after_sample` is no attribute")


@pytest.mark.parametrize(("observer", "expected"), [
    pytest.param(GoodObserver(), [], id="round-trip"),
    pytest.param(type("G", (NoneObserver, GoodObserver), {})(), ["AUX403"], id="returns-none"),
])
def test_an_observer_round_trips_a_given_device_output(observer: Any, expected: list[str]) -> None:
    """With device_output given, its PP tensors go through the observer and are compared."""
    assert codes(check_sampling_observer(observer, device_output=PPOutput())) == expected


# ---------------------------------------------------------------- hostile plugins


@pytest.mark.parametrize(("obj", "code", "exception"), [
    pytest.param(HostileGetattr(), "AUX101", "RuntimeError: no copy_to_host for you",
                 id="raising-getattr"),
    pytest.param(RaisingProperty(), "AUX101", "LookupError: property exploded",
                 id="raising-property"),
    pytest.param(RaisingCopyOutput(), "AUX103", "ValueError: device lost",
                 id="raising-copy-to-host"),
    pytest.param(InfiniteRecursion(), "AUX103", "RecursionError: maximum recursion depth",
                 id="infinite-recursion"),
    pytest.param(host_output(RecursingConsumeHost)(), "AUX202", "RecursionError",
                 id="infinite-recursion-in-consume"),
])
def test_hostile_plugin_code_becomes_a_finding_with_a_traceback(
    obj: Any, code: str, exception: str
) -> None:
    """Plugin code that raises is a finding whose detail ends with the exception line."""
    report = check_device_output(obj)
    assert codes(report) == [code]
    detail = report.findings[0].detail
    assert detail is not None
    assert detail.splitlines()[-1].startswith(exception)
    frames = [line for line in detail.splitlines()[:-1] if not line.startswith("inferred")]
    assert all(" in " in line for line in frames)
    assert "auxcheck/validate.py" not in detail


def test_a_raising_repr_does_not_break_the_report() -> None:
    """Objects whose __repr__ raises still get a subject, findings, text and JSON."""
    report = check_device_output(RaisingRepr())
    assert codes(report) == ["AUX101"]
    assert report.subject == f"device output {__name__}.RaisingRepr"
    assert json.loads(report.to_json())["findings"][0]["object"].startswith(f"<{__name__}.RaisingRepr object at 0x")
    host_report = check_host_output(HostileHostRepr(torch.ones(2)))
    assert codes(host_report) == ["AUX204"]


def test_a_hostile_container_does_not_stop_the_tensor_walk() -> None:
    """A mapping whose items() raises is skipped; the rest is still checked."""
    assert check_device_output(HostileContainer()).ok


def test_keyboard_interrupt_is_never_swallowed() -> None:
    """BaseException subclasses raised by plugin code propagate to the caller."""
    class Interrupted(Rows):
        def copy_to_host(self, copy_tensor: Copy) -> Any:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check_device_output(Interrupted())


# ---------------------------------------------------------------- reports


class ManyBugs(Rows):
    """Copies twice, keeps the device tensor, and its consume mutates commits and returns."""

    class Host(GoodHost):
        def consume(self, batch: Any, commits: Any) -> Any:  # type: ignore[override]
            commits.append(None)
            return "done"

    def to_pp_tensors(self) -> Any:
        return {}

    def copy_to_host(self, copy_tensor: Copy) -> Any:
        copy_tensor(self.rows)
        copy_tensor(self.rows)
        return self.Host(self.rows)


def test_every_finding_of_a_multi_bug_object_is_reported_at_once() -> None:
    """One call reports each distinct bug, sorted by code."""
    report = check_device_output(ManyBugs(), static_buffers=[ManyBugs().rows])
    assert codes(report) == ["AUX104", "AUX105", "AUX203", "AUX204", "AUX402"]


def test_the_report_renders_as_text_and_json() -> None:
    """Text has a heading and one indented line per finding; JSON holds the same findings."""
    report = check_device_output(TwiceOutput())
    lines = report.to_text().splitlines()
    assert lines[0] == f"device output {__name__}.TwiceOutput: 1 finding"
    assert lines[1].startswith("  AUX104 copy_tensor argument #2 [3, 4] float32 shares bytes")
    data = json.loads(report.to_json())
    assert data["ok"] is False
    assert [f["code"] for f in data["findings"]] == ["AUX104"]
    assert set(data["findings"][0]) == {"code", "title", "message", "hint", "object",
                                        "location", "detail"}


def test_raise_for_findings_raises_contract_violation_with_the_whole_report() -> None:
    """raise_for_findings raises ContractViolation carrying every finding."""
    report = check_device_output(ManyBugs())
    with pytest.raises(ContractViolation) as info:
        report.raise_for_findings()
    assert info.value.report is report
    assert str(info.value) == report.to_text()
    check_device_output(Rows()).raise_for_findings()


def test_report_and_finding_are_re_exported() -> None:
    """validate re-exports the shared Report and Finding classes."""
    from auxcheck import validate

    assert validate.Report is report_module.Report
    assert validate.Finding is report_module.Finding
