"""Tests for auxcheck.properties: the checks on concrete inputs, loading, and running them."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch
from helpers.releases import REAL_CACHE, real_tree

import auxcheck.properties as props
from auxcheck import protocols
from auxcheck._core.errors import ReleaseError
from auxcheck._runtime.scheduler import FakeBatch, FakeReq
from auxcheck.errors import ContractViolation, InvalidArgument
from auxcheck.machine import run_machine
from auxcheck.properties import (
    REFERENCE,
    Implementation,
    check_associativity,
    check_broadcast,
    check_copy_once,
    check_flattening,
    check_frozen,
    check_none_identity,
    check_order,
    load_implementation,
    release_version,
    run_properties,
)
from auxcheck.releases import CACHE_ENV, import_modules
from auxcheck.strategies import Appended, RecordingDeviceOutput

Device = protocols.CompositeDeviceAuxiliaryOutput


def leaves(*labels: str) -> list[RecordingDeviceOutput]:
    """Returns fresh recording leaves with one small tensor each."""
    return [RecordingDeviceOutput(label, [torch.arange(2)]) for label in labels]


def with_append(name: str, append: Any) -> Implementation:
    """Returns the reference composites with a different append."""
    return Implementation(name, append, Device, protocols.CompositeHostAuxiliaryOutput)


def nesting(current: Any, output: Any) -> Any:
    if current is None or output is None:
        return output if current is None else current
    return Device((current, output))


def reversed_order(current: Any, output: Any) -> Any:
    if current is None or output is None:
        return output if current is None else current
    kids = props.children(REFERENCE, current) + props.children(REFERENCE, output)
    return Device(kids[::-1])


def raising(current: Any, output: Any) -> Any:
    raise RuntimeError("boom")


@dataclass
class MutableDevice:
    outputs: tuple[Any, ...]

    def copy_to_host(self, copy_tensor: Any) -> Any:
        return protocols.CompositeHostAuxiliaryOutput(
            tuple(o.copy_to_host(copy_tensor) for o in self.outputs))


def _mutable_append(current: Any, output: Any) -> Any:
    if current is None or output is None:
        return output if current is None else current
    return MutableDevice((current, output))


def test_all_lists_exactly_the_public_names() -> None:
    """__all__ holds every public name of the face, and nothing else; each is defined behind it
    in ``auxcheck._properties``."""
    public = {name for name, value in vars(props).items()
              if not name.startswith(("_", "@")) and not isinstance(value, ModuleType)}
    assert sorted(props.__all__) == sorted(public)
    homes = {name: getattr(getattr(props, name), "__module__", "auxcheck._properties")
             for name in props.__all__}
    assert {n: h for n, h in homes.items() if not h.startswith("auxcheck._properties")} == {}


def _ab_c() -> tuple[Any, ...]:
    a, b, c = leaves("a", "b", "c")
    return (Appended((a, b)), None, c)


def _copy_twice(impl: Implementation, ops: Any) -> None:
    check_copy_once(impl, ops)


@pytest.mark.parametrize(
    ("check", "ops"),
    [
        (check_none_identity, lambda: leaves("a")[0]),
        (check_none_identity, lambda: Device(tuple(leaves("a", "b")))),
        (check_flattening, _ab_c),
        (check_order, _ab_c),
        (check_copy_once, _ab_c),
        (check_frozen, _ab_c),
        (lambda impl, ops: check_associativity(impl, *ops), _ab_c),
        (lambda impl, ops: check_broadcast(impl, ops, FakeBatch([FakeReq("r")]), [None]), _ab_c),
    ],
    ids=["none-leaf", "none-composite", "flattening", "order", "copy-once", "frozen",
         "associativity", "broadcast"],
)
@pytest.mark.parametrize("impl", [REFERENCE], ids=["reference"])
def test_the_reference_passes_every_check(impl: Implementation, check: Any, ops: Any) -> None:
    """Each check returns quietly on the reference implementation."""
    check(impl, ops())


@pytest.mark.parametrize(
    ("impl", "check", "code", "message"),
    [
        (with_append("nesting", nesting), check_flattening, "AUX301", "include a composite"),
        (with_append("nesting", nesting), lambda i, o: check_associativity(i, *o), "AUX301",
         "(a+b)+c holds"),
        (with_append("reversed", reversed_order), check_order, "AUX302",
         "composite children in order [c, a, b]; expected append order [a, b, c]"),
        (with_append("raising", raising), check_flattening, "AUX301",
         "append_auxiliary_output(current, output) raised RuntimeError"),
        (with_append("raising", raising), check_copy_once, "AUX304", "raised RuntimeError"),
        (Implementation("mutable", _mutable_append, MutableDevice,
                        protocols.CompositeHostAuxiliaryOutput), check_frozen, "AUX306",
         "setting MutableDevice.outputs succeeded"),
    ],
    ids=["nesting-flattening", "nesting-associativity", "reversed-order", "raising-append",
         "raising-append-in-copy", "mutable"],
)
def test_a_broken_implementation_fails_with_a_message_starting_with_the_code(
    impl: Implementation, check: Any, code: str, message: str
) -> None:
    """A violation raises ContractViolation; its text starts with the code and says what was seen."""
    with pytest.raises(ContractViolation) as raised:
        check(impl, _ab_c())
    assert str(raised.value).startswith(f"{code} ")
    assert raised.value.report.codes[0] == code
    assert message in str(raised.value)


def test_a_none_mishandling_append_fails_the_none_identity() -> None:
    """append(None, None) returning something else is AUX303."""
    impl = with_append("none", lambda c, o: Device(()) if c is None and o is None
                       else protocols.append_auxiliary_output(c, o))
    with pytest.raises(ContractViolation) as raised:
        check_none_identity(impl, leaves("a")[0])
    assert str(raised.value).startswith("AUX303")
    assert "append(None, None) returned" in str(raised.value)


def test_copying_a_child_twice_is_aux304_naming_the_child() -> None:
    """A composite that copies its first child twice is reported with the child and the count."""
    @dataclass(frozen=True)
    class Twice:
        outputs: tuple[Any, ...]

        def copy_to_host(self, copy_tensor: Any) -> Any:
            self.outputs[0].copy_to_host(copy_tensor)
            return protocols.CompositeHostAuxiliaryOutput(
                tuple(o.copy_to_host(copy_tensor) for o in self.outputs))

    impl = Implementation("twice", lambda c, o: o if c is None else Twice(
        props.children(REFERENCE, c) + (o,)), Twice, protocols.CompositeHostAuxiliaryOutput)
    with pytest.raises(ContractViolation) as raised:
        check_copy_once(impl, leaves("a", "b"))
    assert "copied children a 2x" in str(raised.value)


def test_a_leaf_passing_the_same_bytes_twice_is_aux104() -> None:
    """A child that passes one tensor twice to copy_tensor is reported."""
    tensor = torch.arange(4)
    twice = RecordingDeviceOutput("t", [tensor, tensor[1:]])
    with pytest.raises(ContractViolation) as raised:
        check_copy_once(REFERENCE, [twice, *leaves("b")])
    assert raised.value.report.codes == ["AUX104"]


def test_a_copy_of_the_commits_is_aux305() -> None:
    """A host composite that hands a child a copy of the commits breaks the broadcast."""
    @dataclass(frozen=True)
    class Host:
        outputs: tuple[Any, ...]

        def consume(self, batch: Any, commits: Any) -> None:
            for output in self.outputs:
                output.consume(batch, list(commits))

    @dataclass(frozen=True)
    class Dev:
        outputs: tuple[Any, ...]

        def copy_to_host(self, copy_tensor: Any) -> Host:
            return Host(tuple(o.copy_to_host(copy_tensor) for o in self.outputs))

    impl = Implementation("copies", lambda c, o: o if c is None else Dev(
        props.children(REFERENCE, c) + (o,)), Dev, Host)
    with pytest.raises(ContractViolation) as raised:
        check_broadcast(impl, leaves("a", "b"), FakeBatch(), [])
    assert "child a got batch identical, commits a copy" in str(raised.value)


@pytest.mark.parametrize(
    ("spec", "name"), [("reference", "reference"), ("auxcheck.protocols", "auxcheck.protocols")],
    ids=["reference", "dotted-module"],
)
def test_load_implementation_accepts_reference_and_dotted_modules(spec: str, name: str) -> None:
    """The reference and any module exposing SGLang's names load."""
    impl = load_implementation(spec)
    assert impl.name == name and impl.append is protocols.append_auxiliary_output


def test_auto_picks_sglang_when_importable_else_the_reference() -> None:
    """'auto' falls back to the reference when SGLang cannot be imported."""
    try:
        importlib.import_module(props.SGLANG_MODULE)
    except ImportError:
        expected = "reference"
    else:
        expected = "sglang"
    assert load_implementation("auto").name == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("auxcheck.rules", ("auxcheck.rules does not define append_auxiliary_output, "
                            "CompositeDeviceAuxiliaryOutput, CompositeHostAuxiliaryOutput")),
        ("no_such_module_xyz", ("implementation 'no_such_module_xyz': cannot import "
                                "no_such_module_xyz")),
        ("not a module", ("implementation 'not a module' is not 'reference', 'sglang', "
                          "'sglang==X.Y.Z', 'auto' or a dotted module path")),
    ],
    ids=["missing-names", "unimportable", "not-a-path"],
)
def test_load_implementation_rejects_what_it_cannot_use(spec: str, message: str) -> None:
    """A bad spec raises InvalidArgument saying what was wrong."""
    with pytest.raises(InvalidArgument) as raised:
        load_implementation(spec)
    assert str(raised.value).startswith(message)


def test_from_module_accepts_any_object_with_the_three_names() -> None:
    """A namespace exposing the names is an implementation (how forks are tested in-process)."""
    fork = SimpleNamespace(append_auxiliary_output=nesting, CompositeDeviceAuxiliaryOutput=Device,
                           CompositeHostAuxiliaryOutput=protocols.CompositeHostAuxiliaryOutput)
    assert Implementation.from_module(fork, name="fork").append is nesting


def test_run_properties_passes_the_reference_under_the_default_profile() -> None:
    """The reference contract passes every property."""
    report = run_properties(REFERENCE, max_examples=25)
    assert report.ok, report.to_text()


def test_property_tests_name_every_property_and_its_codes() -> None:
    """One test per property, each declaring the codes it can report."""
    tests = props.property_tests(REFERENCE)
    assert [t.name for t in tests] == [
        "check_none_identity", "check_flattening", "check_order", "check_associativity",
        "check_copy_once", "check_broadcast", "check_frozen"]
    assert {code for t in tests for code in t.codes} == {
        "AUX104", "AUX301", "AUX302", "AUX303", "AUX304", "AUX305", "AUX306"}


def test_run_properties_reports_the_shrunk_example_in_the_detail() -> None:
    """A failing property's finding carries Hypothesis's falsifying example."""
    report = run_properties(with_append("reversed", reversed_order), max_examples=25)
    assert "AUX302" in report.codes
    finding = next(f for f in report if f.code == "AUX302")
    starts = ("Falsifying example", "Failing test case", "Failing explicit example")
    assert any(f"check_order: {start}" in (finding.detail or "") for start in starts)


def test_user_leaves_pass_through_the_properties() -> None:
    """leaves= mixes a user's outputs in; the reference still passes with them."""
    from hypothesis import strategies as st

    class Output:
        def copy_to_host(self, copy_tensor: Any) -> Any:
            return self

        def consume(self, batch: Any, commits: Any) -> None:
            pass

    assert run_properties(REFERENCE, leaves=st.builds(Output), max_examples=15).ok


class _RaisingCopy:
    def copy_to_host(self, copy_tensor: Any) -> Any:
        raise TypeError("copy_to_host() missing 1 required positional argument")


class _RaisingConsume:
    def copy_to_host(self, copy_tensor: Any) -> Any:
        return self

    def consume(self, batch: Any, commits: Any) -> None:
        raise AttributeError("'NoneType' object has no attribute 'token_ids'")


@pytest.mark.parametrize(("leaf", "prop", "expected"), [
    pytest.param(_RaisingCopy, "check_copy_once", "AUX103", id="copy-to-host-raises"),
    pytest.param(_RaisingCopy, "check_frozen", "AUX103", id="copy-raises-under-frozen"),
    pytest.param(_RaisingConsume, "check_broadcast", "AUX202", id="consume-raises"),
])
def test_a_user_leaf_that_raises_is_blamed_not_the_composite(
    leaf: type, prop: str, expected: str
) -> None:
    """A mixed-in output that raises on its own gets its own code, never a composite rule's."""
    from hypothesis import strategies as st

    tests = {t.name: t for t in props.property_tests(REFERENCE, leaves=st.builds(leaf),
                                                     max_examples=20)}
    with pytest.raises(ContractViolation) as info:
        tests[prop].test()
    assert info.value.report.codes == [expected]
    assert f"{leaf.__name__}." in info.value.report.findings[0].message


class _HostOf:
    def __init__(self, *tensors: Any) -> None:
        self.tensors = tensors

    def consume(self, batch: Any, commits: Any) -> None:
        pass


class _InterleavedColumns:
    def __init__(self) -> None:
        self.m = torch.arange(12.0).reshape(3, 4)

    def copy_to_host(self, copy_tensor: Any) -> Any:
        return _HostOf(copy_tensor(self.m[:, 0]), copy_tensor(self.m[:, 1]))


class _SparseRows:
    def __init__(self) -> None:
        self.rows = torch.eye(3).to_sparse()

    def copy_to_host(self, copy_tensor: Any) -> Any:
        return _HostOf(copy_tensor(self.rows))


@pytest.mark.parametrize("leaf", [
    pytest.param(_InterleavedColumns, id="interleaved-column-views"),
    pytest.param(_SparseRows, id="sparse-tensor"),
])
def test_correct_user_leaves_with_unusual_tensors_pass_every_property(leaf: type) -> None:
    """Views sharing no byte are not AUX104, and sparse tensors do not crash the properties."""
    from hypothesis import strategies as st

    report = run_properties(REFERENCE, leaves=st.builds(leaf), max_examples=10)
    assert report.ok, report.to_text()


CONTRACT_RELEASES = [pytest.param(v, id=f"sglang-{v}") for v in ("0.5.20", "0.5.23")]
"""The real releases that ship append and the composites (0.5.20 added them)."""


def real_implementation(version: str) -> Implementation:
    """Returns SGLang ``version``'s own append and composites, imported from its wheel's files."""
    module = import_modules(real_tree(version), [props.SGLANG_MODULE])[props.SGLANG_MODULE]
    return Implementation.from_module(module, name=f"sglang {version}")


@pytest.mark.parametrize("version", CONTRACT_RELEASES)
def test_the_real_implementation_is_sglangs_own_code(version: str) -> None:
    """The classes proved come from the release's auxiliary_output.py, not from auxcheck."""
    impl = real_implementation(version)
    source = real_tree(version) / "sglang/srt/managers/auxiliary_output.py"
    assert impl.append.__code__.co_filename == str(source)
    assert impl.device_composite.__module__ == props.SGLANG_MODULE
    assert impl.device_composite is not protocols.CompositeDeviceAuxiliaryOutput


@pytest.mark.slow
@pytest.mark.parametrize("version", CONTRACT_RELEASES)
def test_the_properties_pass_on_real_sglang_releases(version: str) -> None:
    """SGLang's own append and composites pass every property, release by release."""
    report = run_properties(real_implementation(version), max_examples=25)
    assert report.ok, report.to_text()


@pytest.mark.parametrize("version", CONTRACT_RELEASES)
def test_the_state_machine_passes_on_real_sglang_releases(version: str) -> None:
    """SGLang's own composites survive append, copy and consume in any order of steps."""
    report = run_machine(real_implementation(version), max_examples=20)
    assert report.ok, report.to_text()


@pytest.mark.parametrize("version", CONTRACT_RELEASES)
def test_load_implementation_proves_a_release_straight_from_its_wheel(
    monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    """'sglang==X' loads that release's append and composites from the wheel cache."""
    monkeypatch.setenv(CACHE_ENV, str(REAL_CACHE))
    impl = load_implementation(f"sglang=={version}")
    assert impl.name == f"sglang=={version}"
    assert Path(impl.append.__code__.co_filename).is_relative_to(REAL_CACHE / "unpacked")
    assert run_properties(impl, max_examples=5).ok


def test_load_implementation_refuses_a_release_without_composites(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.5.19 has no auxiliary_output module: the error says composites arrived in 0.5.20."""
    monkeypatch.setenv(CACHE_ENV, str(REAL_CACHE))
    with pytest.raises(InvalidArgument) as raised:
        load_implementation("sglang==0.5.19")
    assert str(raised.value) == (
        "implementation 'sglang==0.5.19': sglang 0.5.19 has no "
        "sglang.srt.managers.auxiliary_output; append and the composites arrived in sglang "
        "0.5.20, so prove 0.5.20 or later")


@pytest.mark.parametrize("version", [
    pytest.param("banana", id="a-word"),
    pytest.param("0.5.20,0.5.23", id="a-list"),
    pytest.param("", id="nothing"),
    pytest.param(" 0.5.23", id="a-space"),
])
def test_load_implementation_refuses_a_release_spec_without_one_version(version: str) -> None:
    """'sglang==' must be followed by exactly one version; the error shows the form."""
    with pytest.raises(InvalidArgument) as raised:
        load_implementation(f"sglang=={version}")
    assert str(raised.value) == (
        f"implementation 'sglang=={version}': {version!r} is not an SGLang release version; "
        "expected sglang==X.Y.Z such as sglang==0.5.23")


def test_a_release_that_cannot_be_downloaded_raises_release_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, offline_pip: None
) -> None:
    """A release that cannot be fetched raises ReleaseError naming it and the offline ways."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    with pytest.raises(ReleaseError) as raised:
        load_implementation("sglang==0.5.23")
    assert str(raised.value).startswith(
        "cannot get sglang 0.5.23: pip download failed: ERROR: No matching distribution found "
        "for sglang==0.5.23. When offline, pass --wheel PATH")


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param("sglang==0.5.23", "0.5.23", id="release"),
    pytest.param("sglang==0.6.0rc1", "0.6.0rc1", id="release-candidate"),
    pytest.param("sglang", None, id="installed-sglang"),
    pytest.param("my_plugin.aux_impl", None, id="dotted-module"),
])
def test_release_version_reads_the_version_of_a_release_spec(spec: str,
                                                             expected: str | None) -> None:
    """Only 'sglang==X' names a release; every other spec gives None."""
    assert release_version(spec) == expected
