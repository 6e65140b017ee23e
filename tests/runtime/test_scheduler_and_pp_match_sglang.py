"""Real SGLang as the oracle: auxcheck's PP helpers and scheduler model against the releases' code.

The PP helpers are imported from each release's ``sampling/sampling_observer_pp.py``.
The commit-building methods of ``SchedulerBatchResultProcessor`` live in a module that
pulls in SGLang's whole runtime, so they are cut out of the release's source with
``ast`` and compiled on their own, with the release's real ``CommittedTokens``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from helpers.releases import real_tree
from helpers.sglang_process import (
    COMMIT_METHODS,
    CONTRACT_MODULE,
    PROCESSOR_CLASS,
    PROCESSOR_FILE,
    cut_class,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from auxcheck import protocols
from auxcheck._runtime.scheduler import (
    FakeBatch,
    SchedulerModel,
    build_commits,
    snapshot_output_starts,
)
from auxcheck.errors import SchedulerError
from auxcheck.releases import import_modules
from auxcheck.strategies import CommitStream, commit_streams
from auxcheck.validate import check_device_output

PP_MODULE = "sglang.srt.sampling.sampling_observer_pp"
RELEASES = [pytest.param(v, id=f"sglang-{v}") for v in ("0.5.20", "0.5.23")]
PREFIX = protocols.PP_OUTPUT_PREFIX
ORACLE = settings(max_examples=40, deadline=None, database=None)

_MODULES: dict[str, Mapping[str, ModuleType]] = {}


def real_modules(version: str) -> Mapping[str, ModuleType]:
    """Returns release ``version``'s contract and PP modules, imported once from its files."""
    if version not in _MODULES:
        _MODULES[version] = import_modules(real_tree(version), [CONTRACT_MODULE, PP_MODULE])
    return _MODULES[version]


def real_processor(version: str) -> Any:
    """Returns release ``version``'s commit-building methods, with its real CommittedTokens."""
    path = real_tree(version) / PROCESSOR_FILE
    contract = real_modules(version)[CONTRACT_MODULE]
    return cut_class(path, PROCESSOR_CLASS, COMMIT_METHODS,
                     {"CommittedTokens": contract.CommittedTokens})


def test_cut_class_refuses_a_method_that_uses_an_unknown_global(tmp_path: Path) -> None:
    """A cut-out method reading a name with no stand-in fails loudly instead of at call time."""
    source = tmp_path / "m.py"
    source.write_text("class C:\n    def f(self, x: Req) -> int:\n        y = helper(x)\n"
                      "        return len(y)\n")
    with pytest.raises(LookupError) as raised:
        cut_class(source, "C", ["f"], {})
    assert str(raised.value) == "C methods use helper: give stand-ins for them"
    assert cut_class(source, "C", ["f"], {"helper": list})().f("ab") == 2


@pytest.mark.parametrize("version", RELEASES)
def test_the_cut_methods_are_the_releases_own_code(version: str) -> None:
    """The oracle runs the release's source lines and builds the release's CommittedTokens."""
    processor = real_processor(version)
    code = processor._build_auxiliary_commits.__func__.__code__
    assert code.co_filename == str(real_tree(version) / PROCESSOR_FILE)
    batch = SchedulerModel(seed=1).batch(3)
    starts = processor.snapshot_auxiliary_output_starts(batch, _WithHostOutput())
    batch.reqs[0].output_ids.append(7)
    commit = processor._build_auxiliary_commits(batch, starts)[0]
    assert type(commit) is real_modules(version)[CONTRACT_MODULE].CommittedTokens


# ---------------------------------------------------------------- commits


class _WithHostOutput:
    """A GenerationBatchResult stand-in: the starts are snapshot only when it has an output."""

    auxiliary_host_output = object()


@dataclass
class _Recorder:
    """A host output that records what consume was given."""

    seen: list[tuple[Any, Any]]

    def consume(self, batch: Any, commits: Any) -> None:
        self.seen.append((batch, commits))


def as_pairs(commits: Sequence[Any]) -> list[tuple[int, tuple[int, ...]] | None]:
    """Returns commits as (output_index, token_ids) pairs, whichever CommittedTokens class built them."""
    return [None if c is None else (c.output_index, c.token_ids) for c in commits]


def _commit_both(processor: Any, model: SchedulerModel, batch: FakeBatch) -> None:
    """Commits one queued batch through auxcheck's model and checks SGLang builds the same."""
    starts = processor.snapshot_auxiliary_output_starts(batch, _WithHostOutput())
    assert snapshot_output_starts(batch) == starts
    ours = model.commit(batch)
    recorder = _Recorder([])
    processor.consume_auxiliary_output(batch, recorder, starts)
    [(consumed_batch, theirs)] = recorder.seen
    assert consumed_batch is batch
    assert as_pairs(ours) == as_pairs(theirs)
    assert as_pairs(build_commits(batch, starts)) == as_pairs(theirs)


# Either form the next step's batch of that many requests, or process the oldest queued one:
# forming N+1 before processing N is the overlap loop, so finished requests reappear.
_ACTIONS = st.lists(st.one_of(st.integers(0, 5), st.none()), min_size=1, max_size=12)


@pytest.mark.parametrize("version", RELEASES)
def test_the_scheduler_model_commits_what_sglang_builds(version: str) -> None:
    """Through any order of forming and processing batches, auxcheck's commits are SGLang's."""
    processor = real_processor(version)

    @ORACLE
    @given(seed=st.integers(0, 2**16), actions=_ACTIONS, speculative=st.booleans())
    def check(seed: int, actions: list[int | None], speculative: bool) -> None:
        model = SchedulerModel(seed=seed, speculative=speculative)
        queued: list[FakeBatch] = []
        for action in actions:
            if action is None and queued:
                _commit_both(processor, model, queued.pop(0))
            elif action is not None:
                queued.append(model.batch(action).copy())
        for batch in queued:
            _commit_both(processor, model, batch)

    check()


@pytest.mark.parametrize("version", RELEASES)
def test_build_commits_matches_sglang_on_any_growth_of_any_batch(version: str) -> None:
    """Tokens added, stop strings hiding tokens, aborts and retractions: the same commits."""
    processor = real_processor(version)

    @ORACLE
    @given(stream=commit_streams(max_steps=5))
    def check(stream: CommitStream) -> None:
        batch = copy.deepcopy(stream.batch)
        for step in stream.steps:
            starts = processor.snapshot_auxiliary_output_starts(batch, _WithHostOutput())
            for req, growth in zip(batch.reqs, step):
                growth.apply(req)
            ours = build_commits(batch, starts)
            assert as_pairs(ours) == as_pairs(processor._build_auxiliary_commits(batch, starts))

    check()


@pytest.mark.parametrize("version", RELEASES)
def test_both_refuse_a_visible_length_that_moved_backwards(version: str) -> None:
    """A finished_len below the step's start is an error in both, a RuntimeError in both."""
    processor = real_processor(version)
    batch = SchedulerModel(seed=3).batch(2)
    batch.reqs[0].output_ids.extend([5, 6])
    starts = snapshot_output_starts(batch)
    batch.reqs[0].finished_len = 1
    with pytest.raises(RuntimeError, match="committed output length moved backwards"):
        processor._build_auxiliary_commits(batch, starts)
    with pytest.raises(RuntimeError, match="committed output length moved backwards"):
        build_commits(batch, starts)


@pytest.mark.parametrize("version", RELEASES)
def test_both_refuse_starts_taken_from_another_batch(version: str) -> None:
    """Starts of the wrong length: SGLang's zip(strict=True) ValueError, auxcheck's SchedulerError."""
    processor = real_processor(version)
    batch = SchedulerModel(seed=4).batch(3)
    with pytest.raises(ValueError, match="zip"):
        processor._build_auxiliary_commits(batch, [0, 0])
    with pytest.raises(SchedulerError) as raised:
        build_commits(batch, [0, 0])
    assert str(raised.value) == ("2 output starts for 3 requests; snapshot the starts of this "
                                 "very batch")


@pytest.mark.parametrize("version", RELEASES)
def test_starts_are_not_snapshot_for_a_step_without_auxiliary_output(version: str) -> None:
    """SGLang skips the snapshot (None) when the step carries no host output."""
    processor = real_processor(version)
    result = type("Result", (), {"auxiliary_host_output": None})()
    assert processor.snapshot_auxiliary_output_starts(SchedulerModel().batch(2), result) is None


# ---------------------------------------------------------------- pipeline parallel


class Labels:
    """Makes small tensors that remember a label, to compare outcomes across implementations."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def __call__(self, label: str) -> torch.Tensor:
        tensor = torch.full((2,), float(len(self.names)))
        self.names[id(tensor)] = label
        return tensor

    def of(self, value: Any) -> str:
        """Returns the label of a made tensor, else the value's type or the object's label."""
        return self.names.get(id(value)) or getattr(value, "label", None) or repr(value)


class TensorsOutput:
    """A device output that crosses PP stages as the named tensors it is given."""

    label = "output"

    def __init__(self, tensors: Any) -> None:
        self.tensors = tensors

    def to_pp_tensors(self) -> Any:
        if isinstance(self.tensors, Exception):
            raise self.tensors
        return self.tensors

    def copy_to_host(self, copy_tensor: Callable[[Any], Any]) -> Any:
        return _Host([copy_tensor(t) for t in self.tensors.values() if torch.is_tensor(t)])


class _Host:
    def __init__(self, tensors: list[Any]) -> None:
        self.tensors = tensors

    def consume(self, batch: Any, commits: Any) -> None:
        pass


class HostOnly:
    """A device output with no PP transport at all."""

    label = "host-only"

    def copy_to_host(self, copy_tensor: Callable[[Any], Any]) -> Any:
        return _Host([])


class Attribute(HostOnly):
    """A device output whose ``to_pp_tensors`` is a plain attribute, not a method."""

    label = "attribute"

    def __init__(self, value: Any) -> None:
        self.to_pp_tensors = value


class RebuildingObserver:
    """A PP observer that rebuilds an output from the tensors (or returns ``result``)."""

    label = "observer"

    def __init__(self, result: Any = "rebuilt") -> None:
        self.result = result
        self.received: list[dict[str, Any]] = []

    def from_pp_tensors(self, tensors: Mapping[str, Any]) -> Any:
        self.received.append(dict(tensors))
        if isinstance(self.result, Exception):
            raise self.result
        return TensorsOutput(dict(tensors)) if self.result == "rebuilt" else self.result


class SamplingOnly:
    """An observer that samples but cannot rebuild a PP output."""

    label = "sampling-only"

    def before_grammar(self, logits: Any, sampling_info: Any) -> Any:
        return None


@dataclass(frozen=True)
class Outcome:
    """What one PP helper call did, by labels: result or error, the dict after, what was sent."""

    returned: str
    error: str | None
    tensors: tuple[tuple[str, str], ...]
    received: tuple[tuple[tuple[str, str], ...], ...]


Case = Callable[[Labels], tuple[dict[Any, Any], Any]]

ADD_CASES = [
    pytest.param(lambda t: ({"hidden": t("h")}, None), id="no-output"),
    pytest.param(lambda t: ({"hidden": t("h")}, TensorsOutput({"a": t("a"), "b": t("b")})),
                 id="two-tensors-added-after-the-stage-tensors"),
    pytest.param(lambda t: ({}, HostOnly()), id="no-to-pp-tensors"),
    pytest.param(lambda t: ({}, Attribute(None)), id="to-pp-tensors-is-none"),
    pytest.param(lambda t: ({}, Attribute(5)), id="to-pp-tensors-not-callable"),
    pytest.param(lambda t: ({}, TensorsOutput({})), id="empty-mapping"),
    pytest.param(lambda t: ({}, TensorsOutput({1: t("a")})), id="non-string-name"),
    pytest.param(lambda t: ({}, TensorsOutput({"a": t("a"), "": t("b")})),
                 id="empty-name-after-one"),
    pytest.param(lambda t: ({}, TensorsOutput({"a": [1, 2]})), id="not-a-tensor"),
    pytest.param(lambda t: ({PREFIX + "a": t("old")}, TensorsOutput({"a": t("a")})),
                 id="duplicate-name"),
    pytest.param(lambda t: ({}, TensorsOutput(ValueError("boom"))), id="to-pp-tensors-raises"),
    pytest.param(lambda t: ({}, TensorsOutput({PREFIX: t("p")})), id="name-is-the-prefix"),
]

POP_CASES = [
    pytest.param(lambda t: ({"hidden": t("h")}, None), id="absent-without-observer"),
    pytest.param(lambda t: ({"hidden": t("h")}, RebuildingObserver()), id="absent-with-observer"),
    pytest.param(lambda t: ({PREFIX + "a": t("a")}, None), id="present-without-observer"),
    pytest.param(lambda t: ({PREFIX + "a": t("a")}, SamplingOnly()),
                 id="observer-without-from-pp-tensors"),
    pytest.param(lambda t: ({PREFIX + "a": 3}, RebuildingObserver()), id="not-a-tensor"),
    pytest.param(lambda t: ({PREFIX + "a": t("a")}, RebuildingObserver(None)), id="rebuilds-none"),
    pytest.param(lambda t: ({PREFIX + "a": t("a")}, RebuildingObserver(KeyError("k"))),
                 id="from-pp-tensors-raises"),
    pytest.param(lambda t: ({"hidden": t("h"), PREFIX + "a": t("a"), PREFIX + "b": t("b")},
                            RebuildingObserver()), id="rebuilt-and-removed"),
    pytest.param(lambda t: ({PREFIX: t("p"), PREFIX + PREFIX + "x": t("x")}, RebuildingObserver()),
                 id="odd-names"),
]


def _outcome(call: Callable[[dict[Any, Any], Any], Any], case: Case) -> Outcome:
    """Returns what ``call`` did on a fresh instance of ``case``."""
    labels = Labels()
    tensors, other = case(labels)
    try:
        returned, error = call(tensors, other), None
    except Exception as exc:  # noqa: BLE001 - the outcome compared is the error itself
        returned, error = None, f"{type(exc).__name__}: {exc}"
    received = getattr(other, "received", [])
    return Outcome(
        returned=labels.of(returned) if not isinstance(returned, TensorsOutput) else
        "output of " + ",".join(f"{k}={labels.of(v)}" for k, v in returned.tensors.items()),
        error=error,
        tensors=tuple((str(k), labels.of(v)) for k, v in tensors.items()),
        received=tuple(tuple((k, labels.of(v)) for k, v in r.items()) for r in received))


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("case", ADD_CASES)
def test_adding_pp_tensors_does_what_sglang_does(version: str, case: Case) -> None:
    """add_auxiliary_output_to_pp_tensors: the same keys, values, order and errors as SGLang."""
    real = real_modules(version)[PP_MODULE]
    assert _outcome(protocols.add_auxiliary_output_to_pp_tensors, case) == _outcome(
        real.add_auxiliary_output_to_pp_tensors, case)


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("case", POP_CASES)
def test_popping_pp_tensors_does_what_sglang_does(version: str, case: Case) -> None:
    """pop_auxiliary_output_from_pp_tensors: the same output, leftovers and errors as SGLang."""
    real = real_modules(version)[PP_MODULE]
    assert _outcome(protocols.pop_auxiliary_output_from_pp_tensors, case) == _outcome(
        real.pop_auxiliary_output_from_pp_tensors, case)


@pytest.mark.parametrize("version", RELEASES)
def test_the_pp_prefix_and_protocols_recognise_the_same_objects(version: str) -> None:
    """The key prefix is SGLang's, and both runtime protocols accept exactly the same objects."""
    real = real_modules(version)[PP_MODULE]
    assert real._OUTPUT_PREFIX == PREFIX
    objects = [TensorsOutput({}), HostOnly(), Attribute(None), Attribute(5), RebuildingObserver(),
               SamplingOnly(), None]
    for ours, theirs in ((protocols.PipelineParallelAuxiliaryOutput,
                          real.PipelineParallelAuxiliaryOutput),
                         (protocols.PipelineParallelSamplingObserver,
                          real.PipelineParallelSamplingObserver)):
        assert [isinstance(o, ours) for o in objects] == [isinstance(o, theirs) for o in objects]


_NAMES = st.one_of(st.sampled_from(["a", "b", "hidden", "", PREFIX, PREFIX + "a"]),
                   st.integers(0, 1))
_VALUES = st.one_of(st.integers(1, 3).map(lambda n: torch.arange(float(n))), st.integers(),
                    st.none())
_PP_OUTPUTS = st.one_of(
    st.dictionaries(_NAMES, _VALUES, max_size=3).map(TensorsOutput),
    st.sampled_from([None, 5]).map(Attribute))


@pytest.mark.parametrize("version", RELEASES)
def test_a_round_trip_through_real_sglang_gives_the_output_back(version: str) -> None:
    """Sent by SGLang's add and received by its pop, the same tensors as auxcheck's helpers."""
    real = real_modules(version)[PP_MODULE]

    @ORACLE
    @given(output=_PP_OUTPUTS)
    def check(output: Any) -> None:
        results = []
        for add, pop in ((protocols.add_auxiliary_output_to_pp_tensors,
                          protocols.pop_auxiliary_output_from_pp_tensors),
                         (real.add_auxiliary_output_to_pp_tensors,
                          real.pop_auxiliary_output_from_pp_tensors)):
            results.append(_round_trip(add, pop, output))
        assert results[0] == results[1]

    check()


def _round_trip(add: Callable[..., Any], pop: Callable[..., Any], output: Any) -> Any:
    """Returns the tensors rebuilt after sending ``output`` (by identity), or the error."""
    stage = {"hidden": torch.zeros(1)}
    try:
        add(stage, output)
    except Exception as exc:  # noqa: BLE001 - compared across implementations
        return f"add {type(exc).__name__}: {exc}"
    rebuilt = pop(stage, RebuildingObserver())
    assert list(stage) == ["hidden"]
    return [(k, id(v)) for k, v in rebuilt.tensors.items()]


@pytest.mark.parametrize("version", RELEASES)
def test_validate_accepts_exactly_the_outputs_sglang_can_send(version: str) -> None:
    """check_device_output finds no AUX401/AUX402 just when SGLang's add takes the output."""
    real = real_modules(version)[PP_MODULE]

    @settings(ORACLE, max_examples=25)
    @given(output=_PP_OUTPUTS)
    def check(output: Any) -> None:
        try:
            real.add_auxiliary_output_to_pp_tensors({}, output)
        except Exception:  # noqa: BLE001 - any refusal by SGLang must be a finding
            sent = False
        else:
            sent = True
        codes = {f.code for f in check_device_output(output, batch_size=2)}
        assert sent == (not codes & {"AUX401", "AUX402"}), codes

    check()
