"""Tests that values plugin code hands auxcheck (requests, commits, PP tensors, composites)
end as findings or clean results, in bounded time and memory: never a pass by default, a
false finding, an exponential expansion or a read that fills the memory."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from helpers.doubles import ConstantForwardObserver, NoOpHost, NoOpSamplingObserver
from helpers.processes import hang_guard

from auxcheck._runtime.scheduler import FakeBatch, FakeReq
from auxcheck.errors import InvalidArgument
from auxcheck.protocols import CommittedTokens
from auxcheck.validate import (
    check_commits,
    check_device_output,
    check_device_outputs,
    check_forward_observer,
    check_sampling_observer,
)

# ---------------------------------------------------------------- commits


class FinishedLenExits(FakeReq):
    """A request whose finished_len raises SystemExit once armed."""

    armed = False

    @property
    def finished_len(self) -> int | None:
        if self.armed:
            raise SystemExit(1)
        return None

    @finished_len.setter
    def finished_len(self, value: int | None) -> None:
        pass

    def __repr__(self) -> str:  # the dataclass repr would read finished_len
        return "FinishedLenExits()"


class LyingLength(list[int]):
    def __len__(self) -> int:
        return -1  # noqa: PLE0303 - the lie under test


class Count(int):
    """An int subclass, as numpy-like or enum-like counters are."""


def exiting_request() -> FakeReq:
    req = FinishedLenExits("a", output_ids=[7])
    req.armed = True
    return req


def lying_request() -> FakeReq:
    req = FakeReq("b", output_ids=[7])
    req.output_ids = LyingLength([7])
    return req


UNREADABLE_REQUESTS = {
    "finished-len-raises-system-exit": (exiting_request,
                                        ("reading its visible output length (finished_len, else "
                                        "len(output_ids)) raised SystemExit")),
    "len-of-output-ids-is-negative": (lying_request, "raised ValueError"),
    "finished-len-is-a-string": (lambda: FakeReq("c", output_ids=[7], finished_len="1"),  # type: ignore[arg-type]
                                 "is '1', not a whole number >= 0"),
}


@pytest.mark.parametrize(("make", "seen"), [
    pytest.param(*case, id=name) for name, case in UNREADABLE_REQUESTS.items()])
def test_a_commit_for_a_request_that_cannot_be_read_is_a_finding(make: Any, seen: str) -> None:
    """A request whose visible length cannot be read is AUX601, never "not judged" (a pass)."""
    report = check_commits(FakeBatch([make()]), [CommittedTokens(5, (7,))])
    assert report.codes == ["AUX601"]
    assert report.findings[0].message.startswith("commits[0] cannot be matched with request")
    assert seen in report.findings[0].message


@pytest.mark.parametrize("length", [pytest.param(Count(1), id="int-subclass"),
                                    pytest.param(1, id="plain-int")])
def test_an_int_subclass_finished_len_is_judged_as_the_int_it_is(length: int) -> None:
    """finished_len=Count(1) is 1: a commit at output_index 5 is misaligned, at 0 aligned."""
    def judged(index: int) -> list[str]:
        req = FakeReq("d", output_ids=[7], finished_len=length)
        return check_commits(FakeBatch([req]), [CommittedTokens(index, (7,))]).codes

    assert (judged(5), judged(0)) == (["AUX601"], [])


class EndlessCommits(list[Any]):
    """A list whose iteration never ends (its len says 1); counts the entries read."""

    read = 0

    def __iter__(self) -> Iterator[Any]:
        while True:
            self.read += 1
            yield None


def test_endless_commits_are_a_finding_not_a_read_that_fills_the_memory() -> None:
    """An iterator that never ends is read for a bounded number of entries, then AUX601."""
    commits = EndlessCommits([None])
    with hang_guard("check_commits of commits that never end"):
        report = check_commits(FakeBatch([FakeReq("e")]), commits)
    assert report.codes == ["AUX601"]
    assert "commits gives more than 65536 entries" in report.findings[0].message
    assert commits.read == 65537  # one past the limit, no more


# ---------------------------------------------------------------- PP round trip


@dataclass
class SparseHost:
    rows: torch.Tensor

    def consume(self, batch: Any, commits: Any) -> None:
        return None


@dataclass
class SparseOutput:
    rows: torch.Tensor

    def copy_to_host(self, copy_tensor: Any) -> SparseHost:
        return SparseHost(copy_tensor(self.rows))

    def to_pp_tensors(self) -> dict[str, torch.Tensor]:
        return {"rows": self.rows}


class Rebuilds:
    """Rebuilds the output from its PP tensors, changing each value by ``delta``."""

    def __init__(self, delta: float = 0.0) -> None:
        self.delta = delta

    def from_pp_tensors(self, tensors: Any) -> SparseOutput:
        rows = tensors["rows"]
        if self.delta:
            rows = torch.sparse_coo_tensor(rows._indices(), rows._values() + self.delta,
                                           rows.shape, check_invariants=True)
        return SparseOutput(rows)


def one_entry(size: int, *, layout: str = "coo") -> torch.Tensor:
    """Returns a [size, size] sparse tensor holding one nonzero."""
    rows = torch.sparse_coo_tensor(torch.tensor([[0], [1]]), torch.tensor([2.0]), (size, size),
                                   check_invariants=True)
    return rows.to_sparse_csr() if layout == "csr" else rows


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
@pytest.mark.parametrize(("size", "layout", "delta", "codes"), [
    pytest.param(2**30, "coo", 0.0, [], id="huge-coo-round-trips-clean"),
    pytest.param(2**15, "csr", 0.0, [], id="csr-round-trips-clean"),
    pytest.param(2**30, "coo", 1.0, ["AUX403"], id="huge-coo-with-another-value"),
])
def test_sparse_pp_tensors_compare_by_their_entries_never_densified(
    size: int, layout: str, delta: float, codes: list[str]
) -> None:
    """A one-entry [2**30, 2**30] tensor compares as one entry: no gigabytes, no false AUX403."""
    with hang_guard("check_device_output of a huge sparse PP tensor"):
        report = check_device_output(SparseOutput(one_entry(size, layout=layout)),
                                     batch_size=2, pp_observer=Rebuilds(delta))
    assert [f.code for f in report if f.code.startswith("AUX4")] == codes, report.to_text()


class EndlessMapping(dict[str, Any]):
    """A mapping whose items() never ends."""

    def items(self) -> Any:
        return ((f"t{i}", torch.zeros(1)) for i in itertools.count())


class EndlessPP(SparseOutput):
    def to_pp_tensors(self) -> Any:
        return EndlessMapping(rows=self.rows)


def test_endless_pp_tensors_are_a_finding_not_a_read_that_fills_the_memory() -> None:
    """A to_pp_tensors mapping whose items never end is read a bounded way, then AUX402."""
    report = check_device_output(EndlessPP(torch.ones(2, 3)), batch_size=2,
                                 pp_observer=Rebuilds())
    assert [f.code for f in report if f.code.startswith("AUX4")] == ["AUX402"]
    assert "more than 4096 entries" in report.findings[-1].message


# ---------------------------------------------------------------- composites


class CompositeDeviceAuxiliaryOutput:
    """A user-built composite (only the name and ``outputs`` of SGLang's)."""

    def __init__(self, outputs: tuple[Any, ...]) -> None:
        self.outputs = outputs


class Leaf:
    def __init__(self) -> None:
        self.rows = torch.ones(2, 3)

    def copy_to_host(self, copy_tensor: Any) -> NoOpHost:
        copy_tensor(self.rows)
        return NoOpHost()


class CountedLeaf(Leaf):
    """A leaf that counts how many times it is copied."""

    def __init__(self) -> None:
        super().__init__()
        self.copies = 0

    def copy_to_host(self, copy_tensor: Any) -> NoOpHost:
        self.copies += 1
        return super().copy_to_host(copy_tensor)


def test_a_composite_that_fans_out_exponentially_is_one_finding_in_bounded_time() -> None:
    """Seventeen objects, each holding the one below three times: 3**16 leaves are not
    expanded; the first ones are checked and the rest is one AUX301 finding."""
    leaf = CountedLeaf()
    output: Any = leaf
    for _ in range(16):
        output = CompositeDeviceAuxiliaryOutput((output, output, output))
    with hang_guard("check_device_output of a composite of 3**16 leaves"):
        report = check_device_output(output, batch_size=2)
    assert report.codes == ["AUX301"]
    assert report.findings[0].message.startswith(
        "the composite expands to more than 1024 leaf outputs at step 1")
    assert leaf.copies <= 1024


# ---------------------------------------------------------------- arguments


@pytest.mark.parametrize("steps", [0, -1, True, 2.0])
@pytest.mark.parametrize("check", [
    pytest.param(lambda steps: check_device_outputs(Leaf, steps=steps), id="device-outputs"),
    pytest.param(lambda steps: check_sampling_observer(NoOpSamplingObserver(), steps=steps),
                 id="sampling-observer"),
    pytest.param(lambda steps: check_forward_observer(ConstantForwardObserver(), steps=steps),
                 id="forward-observer"),
])
def test_no_steps_to_run_is_an_invalid_argument_not_a_vacuous_pass(check: Any, steps: Any) -> None:
    """steps=0 would judge nothing: it, a negative number, a bool or a float are rejected."""
    with pytest.raises(InvalidArgument) as info:
        check(steps)
    assert str(info.value) == (f"steps={steps!r}; expected a whole number >= 1 (the steps of "
                               "SGLang's loop to run: with none, nothing would be judged)")
