"""Tests for auxcheck/_core/plugin_calls.py, the safe calls into plugin code: whatever a plugin's
objects do, every check reports a finding, never raises."""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import _pytest.outcomes
import numpy as np
import pytest
import torch
from helpers.doubles import ConstantForwardObserver, NoOpHost, NoOpSamplingObserver, raises

from auxcheck._core import plugin_calls
from auxcheck._core.plugin_calls import announce, attempt, set_phase_listener
from auxcheck._runtime.copying import covered_bytes, host_copy
from auxcheck._runtime.scheduler import FakeBatch, FakeReq
from auxcheck.errors import InvalidArgument
from auxcheck.protocols import CommittedTokens
from auxcheck.report import Report
from auxcheck.validate import (
    check_commits,
    check_device_output,
    check_device_outputs,
    check_forward_observer,
    check_sampling_observer,
)

Check = Callable[[], Report]


class Good:
    def __init__(self, rows: Any = None) -> None:
        self.rows = torch.zeros(3, 2) if rows is None else rows

    def copy_to_host(self, copy_tensor: Any) -> Any:
        return NoOpHost(copy_tensor(self.rows))


def output(**members: Any) -> Any:
    """Returns a Good output whose class has ``members`` (methods, properties) replaced."""
    return type("Hostile", (Good,), members)()


def host_output(**members: Any) -> Any:
    """Returns an output whose copy_to_host returns a NoOpHost with ``members`` replaced."""
    kind = type("HostileHost", (NoOpHost,), members)
    return output(copy_to_host=lambda self, copy: kind(copy(self.rows)))


class GoodWithRaisingClass(Good):
    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        raise RuntimeError("no __class__")


class GetattributeRaises:
    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError(name)


class GetattributeExits:
    def __getattribute__(self, name: str) -> Any:
        raise SystemExit(3)


class SignatureRaises:
    @property
    def __signature__(self) -> Any:
        raise RuntimeError("no signature")

    def __call__(self, copy_tensor: Any) -> Any:
        return NoOpHost(copy_tensor(torch.zeros(3)))


def with_attribute(name: str, value: Any) -> Any:
    obj = Good()
    setattr(obj, name, value)
    return obj


class BoolRaises:
    def __bool__(self) -> bool:
        raise RuntimeError("no truth")


class TorchFunctionRaises(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise RuntimeError("no torch function")


class ItemsRaise(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("getitem")

    def __len__(self) -> int:
        raise RuntimeError("len")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("iter")


class PPOutput(Good):
    def __init__(self, rows: Any) -> None:
        self.rows = rows

    def to_pp_tensors(self) -> Any:
        return {"rows": self.rows}


class PPObserver:
    def from_pp_tensors(self, tensors: Any) -> Any:
        return PPOutput(tensors["rows"])


def observer(**members: Any) -> Any:
    return type("HostileObserver", (NoOpSamplingObserver,), members)()


class RaisingList(list[Any]):
    def __len__(self) -> int:
        raise RuntimeError("len")

    def __iter__(self) -> Iterator[Any]:
        raise RuntimeError("iter")


class RaisingLen(list[Any]):
    def __len__(self) -> int:
        raise RuntimeError("len")


class ComparisonRaises(int):
    def __lt__(self, other: object) -> bool:
        raise RuntimeError("lt")

    def __ne__(self, other: object) -> bool:
        raise RuntimeError("ne")

    __hash__ = int.__hash__


class LengthRaises(tuple[int, ...]):
    def __len__(self) -> int:
        raise RuntimeError("len")


class RidRaises(FakeReq):
    def __getattribute__(self, name: str) -> Any:
        if name == "rid":
            raise RuntimeError("rid")
        return super().__getattribute__(name)


class FieldsRaise:
    """Named like SGLang's CommittedTokens, with fields that raise."""

    output_index = property(raises(RuntimeError("output_index")))
    token_ids = (1,)


FieldsRaise.__name__ = "CommittedTokens"


def batch(*reqs: FakeReq) -> FakeBatch:
    return FakeBatch(list(reqs) or [FakeReq("r0", output_ids=[1, 2])])


def commits_with_reqs(reqs: Any, commits: Any) -> Report:
    hostile = FakeBatch()
    hostile.reqs = reqs
    return check_commits(hostile, commits)


def composite_in_itself() -> Any:
    class CompositeDeviceAuxiliaryOutput:
        outputs: tuple[Any, ...] = ()
    composite = CompositeDeviceAuxiliaryOutput()
    composite.outputs = (composite,)
    return composite


def deepcopy_exits() -> Any:
    return output(__deepcopy__=raises(SystemExit(2)))


BASE_EXCEPTIONS = [SystemExit(4), GeneratorExit(), BaseException("bare")]


class NamelessMeta(type):
    @property
    def __name__(cls) -> str:  # type: ignore[override]
        raise SystemExit("no name")


class NamelessError(Exception, metaclass=NamelessMeta):
    """An exception whose class name cannot be read the ordinary way."""

CASES: list[Any] = [
    pytest.param(lambda: check_device_output(GoodWithRaisingClass()), [],
                 id="class-property-raises"),
    pytest.param(lambda: check_device_output(host_output(
        __class__=property(raises(RuntimeError("no class"))))), [],
        id="host-class-property-raises"),
    pytest.param(lambda: check_device_output(GetattributeRaises()), ["AUX101"],
                 id="getattribute-raises"),
    pytest.param(lambda: check_device_output(GetattributeExits()), ["AUX101"],
                 id="getattribute-system-exit"),
    pytest.param(lambda: check_device_output(with_attribute("copy_to_host", SignatureRaises())),
                 [], id="signature-property-raises"),
    *[pytest.param(functools.partial(lambda e: check_device_output(output(
        copy_to_host=property(raises(e)))), exc), ["AUX101"],
        id=f"copy-to-host-property-{type(exc).__name__}") for exc in BASE_EXCEPTIONS],
    pytest.param(lambda: check_device_output(output(copy_to_host=raises(GeneratorExit()))),
                 ["AUX103"], id="copy-to-host-raises-GeneratorExit"),
    pytest.param(lambda: check_device_output(host_output(consume=raises(GeneratorExit()))),
                 ["AUX202"], id="consume-raises-GeneratorExit"),
    pytest.param(lambda: check_device_output(output(__repr__=raises(SystemExit(1)),
                                                    copy_to_host=lambda self, c: self)),
                 ["AUX103"], id="repr-exits-copy-returns-itself"),
    pytest.param(lambda: check_device_output(host_output(
        consume=lambda self, b, c: [setattr(r, "output_ids", RaisingList()) for r in b.reqs] and None)),
        ["AUX203"], id="consume-sets-output-ids-to-a-hostile-list"),
    pytest.param(lambda: check_device_output(output(to_pp_tensors=lambda self: ItemsRaise())),
                 ["AUX402"], id="to-pp-tensors-mapping-items-raises"),
    pytest.param(lambda: check_device_output(PPOutput(torch.nested.nested_tensor(
        [torch.zeros(2), torch.zeros(3)])), pp_observer=PPObserver()), [],
        id="nested-tensor-pp-round-trip"),
    pytest.param(lambda: check_device_output(PPOutput(torch.eye(3).to_sparse()),
                                             pp_observer=PPObserver()), [],
                 id="sparse-tensor-pp-round-trip"),
    pytest.param(lambda: check_device_output(composite_in_itself()), ["AUX101"],
                 id="composite-inside-itself"),
    pytest.param(lambda: check_device_output(deepcopy_exits()), [], id="deepcopy-exits"),
    pytest.param(lambda: check_device_outputs(lambda: GetattributeRaises()), ["AUX101"],
                 id="factory-returns-a-hostile-object"),
    pytest.param(lambda: check_sampling_observer(observer(
        is_active=lambda self, info: BoolRaises())), ["AUX102"],
        id="is-active-returns-a-value-whose-truth-raises"),
    pytest.param(lambda: check_sampling_observer(observer(
        before_grammar=lambda self, logits, info: setattr(info, "temperatures", None) or 1)),
        ["AUX102"], id="before-grammar-breaks-the-sampling-info"),
    pytest.param(lambda: check_forward_observer(ConstantForwardObserver(GetattributeRaises())),
                 ["AUX101"], id="after-forward-returns-a-hostile-object"),
    pytest.param(lambda: commits_with_reqs(RaisingList(), [None]), ["AUX601"],
                 id="commits-reqs-iteration-raises"),
    pytest.param(lambda: check_commits(batch(), RaisingLen([None])), ["AUX601"],
                 id="commits-len-raises"),
    pytest.param(lambda: check_commits(batch(), [CommittedTokens(ComparisonRaises(1), (2,))]),
                 ["AUX601"], id="output-index-comparison-raises"),
    pytest.param(lambda: check_commits(batch(), [CommittedTokens(0, LengthRaises((1,)))]),
                 ["AUX601"], id="token-ids-length-raises"),
    pytest.param(lambda: check_commits(batch(RidRaises("x", output_ids=[1, 2])),
                                       [CommittedTokens(0, (2,))]), ["AUX601"],
                 id="request-rid-lookup-raises"),

]


@pytest.mark.parametrize(("check", "codes"), CASES)
def test_a_hostile_plugin_gets_findings_never_a_crash(check: Check, codes: list[str]) -> None:
    """Each hostile object ends as the findings of its rule, with a message naming the fix."""
    report = check()
    assert report.codes == codes
    assert all("; " in f.message and f.hint for f in report.findings)
    assert torch.get_default_device() == torch.device("cpu")


@pytest.mark.parametrize(("hostile", "message"), [
    pytest.param(lambda: output(copy_to_host=raises(NamelessError())),
                 "AUX103 copy_to_host raised NamelessError at step 1", id="in-copy-to-host"),
    pytest.param(lambda: host_output(consume=raises(NamelessError())),
                 "AUX202 consume raised NamelessError", id="in-consume"),
])
def test_an_exception_whose_class_name_raises_is_named_past_its_metaclass(
        hostile: Callable[[], Any], message: str) -> None:
    """The finding names the exception's class as its own rule does, not as a checker failure."""
    report = check_device_output(hostile())
    assert report.to_text().splitlines()[1].strip().startswith(message)


def test_a_default_device_set_by_the_plugin_is_put_back() -> None:
    """torch.set_default_device inside copy_to_host neither breaks the check nor leaks out."""
    def copy_to_host(self: Any, copy_tensor: Any) -> Any:
        torch.set_default_device("meta")
        return NoOpHost(copy_tensor(self.rows))

    report = check_device_output(output(copy_to_host=copy_to_host))
    assert (report.codes, torch.get_default_device()) == ([], torch.device("cpu"))


def test_the_guard_lets_a_keyboard_interrupt_through() -> None:
    """Ctrl-C inside plugin code ends the run, as it would anywhere."""
    with pytest.raises(KeyboardInterrupt):
        check_device_output(output(copy_to_host=raises(KeyboardInterrupt())))


@pytest.mark.parametrize("exc", [
    pytest.param(_pytest.outcomes.Skipped("no triton"), id="pytest-skip"),
    pytest.param(_pytest.outcomes.XFailed("flaky"), id="pytest-xfail"),
    pytest.param(_pytest.outcomes.Exit("done", returncode=0), id="pytest-exit-0"),
])
def test_a_skip_an_xfail_or_pytest_exit_in_plugin_code_is_a_finding(exc: BaseException) -> None:
    """pytest.importorskip, pytest.xfail or pytest.exit inside copy_to_host is the plugin's
    error (AUX103), never a skipped item or a run that ends with status 0."""
    report = check_device_output(output(copy_to_host=raises(exc)), batch_size=3)
    assert report.codes == ["AUX103"]
    assert report.findings[0].message.startswith(
        f"copy_to_host raised {type(exc).__name__} at step 1")


def test_pytest_stopping_plugin_code_is_one_finding_of_the_running_call() -> None:
    """pytest-timeout's Failed raised inside copy_to_host ends the whole check: one AUX103,
    and no later step calls the plugin again (it would hang where no alarm is left)."""
    exc = _pytest.outcomes.Failed("Timeout (>3.0s) from pytest-timeout.")
    calls: list[str] = []

    class Stopped(Good):
        def copy_to_host(self, copy_tensor: Any) -> Any:
            calls.append("copy")
            raise exc

    report = check_device_outputs(Stopped, batch_size=3, steps=3)
    assert (report.codes, calls) == (["AUX103"], ["copy"])
    assert report.findings[0].message.startswith(
        f"`copy_to_host` of {__name__}.{Stopped.__qualname__} did not finish: pytest stopped it "
        f"({str(exc).splitlines()[0]})")


def test_an_interrupted_call_passes_every_guard_around_it() -> None:
    """Nested guards (a check inside a check) all let the Interrupted through unchanged."""
    def inner() -> Any:
        announce("AUX202", "`consume` of {}", NoOpHost())
        return attempt(raises(_pytest.outcomes.Failed("Timeout")))

    with pytest.raises(plugin_calls.Interrupted) as info:
        attempt(attempt, inner)
    assert (info.value.code, info.value.what) == (
        "AUX202", f"`consume` of {NoOpHost.__module__}.NoOpHost")


def test_the_guard_turns_every_other_base_exception_into_an_outcome() -> None:
    """SystemExit, GeneratorExit and MemoryError from plugin code are outcomes."""
    errors = [attempt(raises(e)).error for e in BASE_EXCEPTIONS]
    assert [type(e) for e in errors] == [type(e) for e in BASE_EXCEPTIONS]


def test_each_plugin_call_is_announced_under_its_rule() -> None:
    """The phase listener hears the rule and the plugin code, in order, before each call."""
    heard: list[tuple[str, str]] = []
    previous = set_phase_listener(lambda code, what: heard.append((code, what)))
    try:
        check_device_output(Good(), batch_size=3)
    finally:
        set_phase_listener(previous)
    codes = list(dict.fromkeys(code for code, _ in heard))
    assert codes == ["AUX101", "AUX103", "AUX201", "AUX202", "AUX203"]
    assert ("AUX103", f"`copy_to_host` of {__name__}.Good") in heard


def test_announce_formats_nothing_without_a_listener() -> None:
    """Without a listener announce never renders its subjects (it stays a store)."""
    assert plugin_calls._listener is None
    announce("AUX103", "`copy_to_host` of {}", GoodWithRaisingClass())
    assert plugin_calls.phase_code("") == "AUX103"


def test_an_expanded_view_is_copied_as_the_bytes_under_it() -> None:
    """A 4-byte tensor expanded to 2**28 elements costs the checker 4 bytes, not a gigabyte."""
    view = torch.arange(1, dtype=torch.float32).expand(2**28)
    copied, snapshot = host_copy(view), covered_bytes(view)
    assert copied.untyped_storage().nbytes() == 4 and snapshot.untyped_storage().nbytes() == 4
    assert (copied.shape, copied.stride()) == (view.shape, view.stride())
    assert check_device_output(Good(view), batch_size=1).codes == []


def test_a_meta_tensor_copies_to_meta_without_a_false_aux103() -> None:
    """copy_tensor of a meta tensor gives a meta tensor: no bytes, no values to compare."""
    assert check_device_output(Good(torch.zeros(3, 2, device="meta"))).codes == []


def test_a_fake_tensor_shares_no_bytes_with_its_copy() -> None:
    """FakeTensors all have data pointer 0: a host view of the copy is not a false AUX105."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        rows = torch.zeros(3, 2)
    hostile = output(copy_to_host=lambda self, copy: NoOpHost(copy(self.rows)[:2]))
    hostile.rows = rows
    assert check_device_output(hostile).codes == []


def enters(mode: Callable[[], Any]) -> Callable[[], None]:
    """Returns plugin code that enters a torch mode and never leaves it."""
    def leak() -> None:
        mode().__enter__()
    return leak


def fake_mode() -> Any:
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode()


class Logging(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        raise SystemExit("a leaked mode")


@pytest.mark.parametrize("leak", [
    pytest.param(enters(lambda: torch.device("meta")), id="with-torch-device-never-left"),
    pytest.param(lambda: torch.set_default_device("meta"), id="set-default-device"),
    pytest.param(enters(Logging), id="torch-function-mode"),
    pytest.param(enters(fake_mode), id="fake-tensor-mode"),
    pytest.param(lambda: torch.set_default_dtype(torch.float16), id="default-dtype"),
])
def test_torch_state_plugin_code_leaves_behind_is_put_back(leak: Callable[[], None]) -> None:
    """A mode entered and never left, or a default changed, in plugin code ends with the call."""
    attempt(leak)
    made = torch.ones(2)
    assert (made.device, made.dtype, type(made)) == (torch.device("cpu"), torch.float32,
                                                      torch.Tensor)
    assert torch._C._len_torch_function_stack() == torch._C._len_torch_dispatch_stack() == 0


def test_a_default_device_set_outside_any_check_does_not_reach_the_checkers_tensors() -> None:
    """A conftest that sets the default device to meta: auxcheck's own batches stay on the CPU."""
    shared = torch.zeros(3, 2)

    class Reuses(Good):
        def __init__(self) -> None:
            shared.add_(1)
            self.rows = shared

    torch.set_default_device("meta")
    try:
        report = check_device_outputs(Reuses, batch_size=3)
    finally:
        torch.set_default_device(None)
    assert report.codes == ["AUX112"]


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8, torch.qint32])
def test_a_quantized_tensor_is_copied_and_compared_by_its_integers(dtype: Any) -> None:
    """Viewing a quantized tensor as bytes crashes torch: its integer values are compared."""
    rows = torch.quantize_per_tensor(torch.zeros(3, 2), 0.1, 0, dtype)
    assert check_device_outputs(lambda: Good(rows.clone()), batch_size=3).codes == []
    assert check_device_outputs(lambda: Good(rows), batch_size=3).codes == []


@pytest.mark.parametrize(("check", "seen"), [
    pytest.param(lambda: check_device_output(None), "the device output is None", id="instance"),
    pytest.param(lambda: check_device_outputs(lambda: None), "returned None", id="factory"),
    pytest.param(lambda: check_device_outputs(lambda batch: None),
                 "returned None on a batch of", id="batch-factory"),
])
def test_a_fixture_value_that_is_none_is_aux101(check: Check, seen: str) -> None:
    """None where a device output is asked for has no copy_to_host: AUX101, never a pass."""
    report = check()
    assert report.codes == ["AUX101"] and seen in report.findings[0].message


class Small(int):
    def __lt__(self, other: object) -> bool:
        raise SystemExit("lt")

    __le__ = __gt__ = __ge__ = __eq__ = __lt__  # type: ignore[assignment]
    __hash__ = int.__hash__


class Size(enum.IntEnum):
    FOUR = 4


@pytest.mark.parametrize("size", [
    pytest.param(np.int64(3), id="numpy-int"),
    pytest.param(Size.FOUR, id="int-enum"),
    pytest.param(Small(3), id="int-subclass-whose-comparisons-exit"),
    pytest.param(4096, id="the-largest"),
])
def test_a_declared_batch_size_is_any_whole_number_from_1_to_4096(size: Any) -> None:
    """What operator.index accepts is a batch size, read as a plain int."""
    assert check_device_output(Good(torch.zeros(int(size), 2)), batch_size=size).codes == []


@pytest.mark.parametrize(("size", "shown"), [
    pytest.param(0, "0", id="zero"),
    pytest.param(-3, "-3", id="negative"),
    pytest.param(True, "True", id="bool"),
    pytest.param(4.0, "4.0", id="float"),
    pytest.param("4", "'4'", id="text"),
    pytest.param(10**9, "1000000000", id="too-large"),
])
def test_a_declared_batch_size_outside_the_range_is_refused(size: Any, shown: str) -> None:
    """A bad batch size is an InvalidArgument naming the value and the range, never a crash."""
    with pytest.raises(InvalidArgument) as info:
        check_device_output(Good(), batch_size=size)
    assert str(info.value) == (f"batch_size={shown}; expected a whole number from 1 to 4096 "
                               "(the number of requests the output was built for)")


class Box:
    def __init__(self, inner: Any) -> None:
        self.inner = inner


def deep(tensor: Any, levels: int) -> Any:
    for _ in range(levels):
        tensor = Box(tensor)
    return tensor


class Keeps:
    """A device output whose host output keeps its device tensor, out of sight."""

    def __init__(self, hide: Callable[[Any], Any]) -> None:
        self.rows = torch.zeros(3, 2)
        self.hide = hide

    def copy_to_host(self, copy_tensor: Any) -> Any:
        copy_tensor(self.rows)
        return NoOpHost(self.hide(self.rows))


@pytest.mark.parametrize(("hide", "seen"), [
    pytest.param(lambda rows: ([(i, i + 1) for i in range(12_000)], rows),
                 "shares bytes with a tensor it passed", id="behind-12000-tuples"),
    pytest.param(lambda rows: deep(rows, 10), "shares bytes with a tensor it passed",
                 id="ten-levels-deep"),
    pytest.param(lambda rows: deep(rows, 40), "could not walk the whole host output",
                 id="deeper-than-the-walk-goes"),
    pytest.param(lambda rows: [[i] for i in range(100_001)] + [rows],
                 "could not walk the whole host output", id="more-objects-than-the-walk-reads"),
])
def test_a_device_tensor_kept_out_of_sight_is_aux105_or_said_to_be_unseen(
        hide: Callable[[Any], Any], seen: str) -> None:
    """The walk finds a kept tensor past long lists and deep nesting, and says where it stops."""
    report = check_device_output(Keeps(hide), batch_size=3)
    assert report.codes == ["AUX105"] and seen in report.findings[0].message


def test_a_deepcopy_that_returns_another_object_does_not_judge_that_object() -> None:
    """The batch-size retry copies the output: a __deepcopy__ swapping it cannot hide AUX202."""
    class Crashes(NoOpHost):
        def consume(self, batch: Any, commits: Any) -> None:
            raise RuntimeError("consume")

    class Swaps(Good):
        def copy_to_host(self, copy_tensor: Any) -> Any:
            return Crashes(copy_tensor(self.rows))

        def __deepcopy__(self, memo: Any) -> Any:
            return Good(torch.zeros(3, 2))

    assert check_device_output(Swaps(torch.zeros(5, 2))).codes == ["AUX202"]


class IterExits(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise SystemExit("buffers")


@pytest.mark.parametrize("check", [
    pytest.param(lambda b: check_sampling_observer(SamplingOK(), static_buffers=b),
                 id="sampling-observer"),
    pytest.param(lambda b: check_forward_observer(ForwardOK(), static_buffers=b),
                 id="forward-observer"),
    pytest.param(lambda b: check_device_output(Good(), static_buffers=b), id="device-output"),
])
def test_static_buffers_that_cannot_be_read_are_aux110_on_every_path(
        check: Callable[[Any], Report]) -> None:
    """Static buffers whose iteration exits are one AUX110 finding, observers included."""
    report = check(IterExits([torch.zeros(2)]))
    assert "AUX110" in report.codes
    assert "reading them raised SystemExit" in report.findings[0].message


class SamplingOK:
    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: Any, sampling_info: Any) -> Any:
        return int(logits.shape[0])

    def after_sample(self, state: Any, token_ids: Any) -> Any:
        return Good(torch.zeros(state, 2))


class ForwardOK:
    def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                      can_run_graph: bool) -> Any:
        return Good(torch.zeros(len(batch.reqs), 2))
