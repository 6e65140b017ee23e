"""Behaviour tests of the reference contract in auxcheck.protocols (as SGLang tests its own)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
from helpers.doubles import ClassRaises, NoneObserver

from auxcheck._runtime.scheduler import FakeBatch, FakeReq
from auxcheck.protocols import (
    PP_OUTPUT_PREFIX,
    CommittedTokens,
    CompositeDeviceAuxiliaryOutput,
    CompositeHostAuxiliaryOutput,
    add_auxiliary_output_to_pp_tensors,
    append_auxiliary_output,
    pop_auxiliary_output_from_pp_tensors,
)


class LoggingHost:
    """Records every consume call into a shared log."""

    def __init__(self, name: str, log: list[Any]) -> None:
        self.name, self.log = name, log

    def consume(self, batch: Any, commits: Any) -> None:
        self.log.append((self.name, batch, commits))


class LoggingDevice:
    """Records each copy_to_host call into a shared log."""

    def __init__(self, name: str, log: list[Any]) -> None:
        self.name, self.log = name, log
        self.tensor = torch.full((2,), float(len(name)))

    def copy_to_host(self, copy_tensor: Any) -> LoggingHost:
        self.log.append(self.name)
        copy_tensor(self.tensor)
        return LoggingHost(self.name, self.log)

    def to_pp_tensors(self) -> dict[str, torch.Tensor]:
        return {self.name: self.tensor}


class LoggingDeviceObserver:
    """Rebuilds a LoggingDevice (with a log of its own) from its one PP tensor."""

    def from_pp_tensors(self, tensors: Any) -> LoggingDevice:
        (name, tensor), = tensors.items()
        device = LoggingDevice(name, [])
        device.tensor = tensor
        return device


def devices(*names: str) -> list[LoggingDevice]:
    log: list[Any] = []
    return [LoggingDevice(name, log) for name in names]


def test_repeated_append_flattens_into_one_composite_in_append_order() -> None:
    """Appending one output at a time builds a single flat composite, in order."""
    a, b, c = devices("a", "b", "c")
    current = append_auxiliary_output(append_auxiliary_output(a, b), c)
    assert isinstance(current, CompositeDeviceAuxiliaryOutput)
    assert current.outputs == (a, b, c)


def test_appending_composites_splices_their_children() -> None:
    """A composite on either side contributes its children, never itself."""
    a, b, c, d = devices("a", "b", "c", "d")
    left = append_auxiliary_output(a, b)
    right = append_auxiliary_output(c, d)
    joined = append_auxiliary_output(left, right)
    assert isinstance(joined, CompositeDeviceAuxiliaryOutput)
    assert joined.outputs == (a, b, c, d)


@pytest.mark.parametrize(("current", "output", "expected"), [
    pytest.param(None, "x", "x", id="none-then-output"),
    pytest.param("x", None, "x", id="output-then-none"),
    pytest.param(None, None, None, id="none-and-none"),
])
def test_none_is_the_identity_of_append(current: Any, output: Any, expected: Any) -> None:
    """None on either side returns the other operand itself; None with None is None."""
    (x,) = devices("x")
    pick = {"x": x, None: None}
    assert append_auxiliary_output(pick[current], pick[output]) is pick[expected]


def test_a_composite_copies_each_child_once_in_order() -> None:
    """copy_to_host copies every child exactly once, in append order, eagerly."""
    a, b, c = devices("a", "b", "c")
    copied: list[torch.Tensor] = []
    host = CompositeDeviceAuxiliaryOutput((a, b, c)).copy_to_host(
        lambda t: copied.append(t) or t.clone())
    assert a.log == ["a", "b", "c"]
    assert [t is d.tensor for t, d in zip(copied, (a, b, c))] == [True, True, True]
    assert isinstance(host, CompositeHostAuxiliaryOutput)
    assert [h.name for h in host.outputs] == ["a", "b", "c"]  # type: ignore[attr-defined]


def test_a_composite_passes_the_same_batch_and_commits_to_every_child() -> None:
    """consume broadcasts the very same objects (``is``) to each child, in order."""
    log: list[Any] = []
    host = CompositeHostAuxiliaryOutput((LoggingHost("a", log), LoggingHost("b", log)))
    batch = FakeBatch([FakeReq("r")])
    commits = [CommittedTokens(0, (5,))]
    assert host.consume(batch, commits) is None
    assert [name for name, _, _ in log] == ["a", "b"]
    assert all(seen_batch is batch and seen is commits for _, seen_batch, seen in log)


@pytest.mark.parametrize(("value", "field"), [
    pytest.param(CommittedTokens(0, (1,)), "output_index", id="committed-tokens"),
    pytest.param(CompositeDeviceAuxiliaryOutput(()), "outputs", id="composite-device"),
    pytest.param(CompositeHostAuxiliaryOutput(()), "outputs", id="composite-host"),
])
def test_contract_values_are_frozen(value: Any, field: str) -> None:
    """Assigning a field of a contract value raises FrozenInstanceError."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, None)


def test_committed_tokens_are_hashable_and_equal_by_value() -> None:
    """Equal fields make equal, equally hashed CommittedTokens; different fields do not."""
    assert CommittedTokens(3, (1, 2)) == CommittedTokens(3, (1, 2))
    assert len({CommittedTokens(3, (1, 2)), CommittedTokens(3, (1, 2))}) == 1
    assert CommittedTokens(3, (1, 2)) != CommittedTokens(4, (1, 2))
    assert CommittedTokens(3, (1, 2)) != CommittedTokens(3, (1,))


def test_pp_tensors_round_trip_through_add_and_pop() -> None:
    """add puts prefixed tensors into the dict; pop removes them and rebuilds the output."""
    (a,) = devices("a")
    tensors: dict[str, Any] = {"hidden": torch.zeros(1)}
    add_auxiliary_output_to_pp_tensors(tensors, a)
    assert set(tensors) == {"hidden", f"{PP_OUTPUT_PREFIX}a"}
    rebuilt = pop_auxiliary_output_from_pp_tensors(
        tensors, LoggingDeviceObserver())  # type: ignore[arg-type]
    assert isinstance(rebuilt, LoggingDevice) and rebuilt.tensor is a.tensor
    assert set(tensors) == {"hidden"}


def test_pp_add_and_pop_of_nothing_do_nothing() -> None:
    """Adding None leaves the dict alone; popping without prefixed keys returns None."""
    tensors: dict[str, Any] = {"hidden": torch.zeros(1)}
    add_auxiliary_output_to_pp_tensors(tensors, None)
    assert pop_auxiliary_output_from_pp_tensors(tensors, None) is None
    assert list(tensors) == ["hidden"]


class Mapping:
    def __init__(self, tensors: Any) -> None:
        self.tensors = tensors

    def copy_to_host(self, copy_tensor: Any) -> Any:
        return None

    def to_pp_tensors(self) -> Any:
        return self.tensors


@pytest.mark.parametrize(("output", "tensors", "message"), [
    pytest.param(CompositeDeviceAuxiliaryOutput(()), {}, "auxiliary output does not support "
                 "pipeline-parallel transport", id="composite"),
    pytest.param(Mapping({}), {}, "auxiliary PP output must contain at least one tensor",
                 id="empty"),
    pytest.param(Mapping({"": torch.ones(1)}), {},
                 "auxiliary PP tensor names must be non-empty strings", id="empty-name"),
    pytest.param(Mapping({"x": [1.0]}), {}, "auxiliary PP output 'x' is not a tensor",
                 id="non-tensor"),
    pytest.param(Mapping({"x": torch.ones(1)}), {f"{PP_OUTPUT_PREFIX}x": torch.ones(1)},
                 "duplicate auxiliary PP tensor 'x'", id="duplicate"),
])
def test_pp_add_raises_runtime_error_on_bad_outputs(
    output: Any, tensors: dict[str, Any], message: str
) -> None:
    """add_auxiliary_output_to_pp_tensors raises RuntimeError with SGLang's messages."""
    with pytest.raises(RuntimeError) as info:
        add_auxiliary_output_to_pp_tensors(tensors, output)
    assert str(info.value) == message


@pytest.mark.parametrize(("value", "observer", "message"), [
    pytest.param(torch.ones(1), None, "received auxiliary PP output without a sampling observer",
                 id="no-observer"),
    pytest.param(torch.ones(1), object(), "sampling observer does not support "
                 "pipeline-parallel transport", id="observer-without-from-pp"),
    pytest.param([1.0], LoggingDeviceObserver(), "received a non-tensor auxiliary PP output",
                 id="non-tensor"),
    pytest.param(torch.ones(1), NoneObserver(), "sampling observer did not reconstruct its PP "
                 "output", id="observer-returns-none"),
])
def test_pp_pop_raises_runtime_error_on_bad_transport(
    value: Any, observer: Any, message: str
) -> None:
    """pop_auxiliary_output_from_pp_tensors raises RuntimeError and leaves the dict intact."""
    tensors = {f"{PP_OUTPUT_PREFIX}x": value}
    with pytest.raises(RuntimeError) as info:
        pop_auxiliary_output_from_pp_tensors(tensors, observer)
    assert str(info.value) == message
    assert list(tensors) == [f"{PP_OUTPUT_PREFIX}x"]


def test_append_never_reads_a_plugin_outputs_class_attribute() -> None:
    """The reference append type-tests by type(), so a raising __class__ property is just a leaf."""
    first, second = ClassRaises(), ClassRaises()
    composite = append_auxiliary_output(first, second)
    assert type(composite) is CompositeDeviceAuxiliaryOutput
    assert composite.outputs == (first, second)
