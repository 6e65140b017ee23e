"""The invariants of append and the composites (DESIGN.md §1), as reusable properties.

Each ``check_*`` function takes the :class:`Implementation` under test and concrete
inputs, and raises :class:`~auxcheck.errors.ContractViolation` when the implementation
breaks the invariant; the message starts with the rule code and the carried report
holds one finding per problem seen. :func:`property_tests` wraps each one in a
Hypothesis test and :func:`run_properties` runs them all, returning a report whose
findings carry the shrunk falsifying example in ``detail``.

The implementation under test is plugin code too: every call into it, and every
attribute of what it returns, goes through :func:`auxcheck._core.plugin_calls.attempt`, and its
values are type-tested by their type's MRO (never ``isinstance``, which reads a
``__class__`` property or runs a metaclass's ``__instancecheck__``). Whatever it
raises (``SystemExit``, ``GeneratorExit``, a bare ``BaseException``) becomes a finding
inside the Hypothesis test body, before Hypothesis sees it.
"""

from __future__ import annotations

import importlib
import itertools
import unittest
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from types import ModuleType
from typing import Any

from auxcheck import protocols
from auxcheck._core.plugin_calls import MISSING as _MISSING
from auxcheck._core.plugin_calls import announce, attempt, lookup, summarize, type_name
from auxcheck._runtime.recording import (
    Appended,
    LeafRaised,
    Operand,
    RecordingDeviceOutput,
    RecordingHostOutput,
    build_operand,
    operand_leaves,
)
from auxcheck.errors import ContractViolation, InvalidArgument
from auxcheck.report import Finding, Report, describe

__all__ = [
    "REFERENCE",
    "SGLANG_MODULE",
    "Implementation",
    "PropertyTest",
    "broadcast_findings",
    "check_associativity",
    "check_broadcast",
    "check_copy_once",
    "check_flattening",
    "check_frozen",
    "check_none_identity",
    "check_order",
    "checked_result",
    "children",
    "consume_findings",
    "consumed_findings",
    "copy_count_findings",
    "copy_findings",
    "copy_logged",
    "flattening_findings",
    "frozen_findings",
    "load_implementation",
    "none_findings",
    "occurrence_records",
    "order_findings",
    "property_tests",
    "release_implementation",
    "release_version",
    "run_properties",
    "structure_findings",
]

SGLANG_MODULE = "sglang.srt.managers.auxiliary_output"
"""The module that holds SGLang's own append and composites."""

_NAMES = ("append_auxiliary_output", "CompositeDeviceAuxiliaryOutput",
          "CompositeHostAuxiliaryOutput")
_RELEASE_PREFIX = "sglang=="
_SGLANG_MODULE_FILE = "sglang/srt/managers/auxiliary_output.py"
_MAX_CHILDREN = 10_000
"""The most children read from a composite whose ``outputs`` is not a tuple (it may never end)."""


def _is_a(obj: Any, cls: Any) -> bool:
    """Returns True when ``cls`` is in the MRO of ``obj``'s type; no plugin code runs.

    ``isinstance`` would read a ``__class__`` property and run a metaclass's
    ``__instancecheck__``, either of which may raise; SGLang's composites are plain
    classes, so the nominal test is the one that matters.
    """
    mro = type.__dict__["__mro__"].__get__(type(obj))
    return any(kind is cls for kind in mro)


def _kind(obj: Any) -> str:
    """Returns the short name of ``obj``'s type, read without running its code."""
    return type_name(obj).rpartition(".")[2]


def _class_name(cls: Any) -> str:
    """Returns a class's own short name, read from its slot (a metaclass property may raise)."""
    if not issubclass(type(cls), type):
        return _kind(cls)
    got = attempt(type.__dict__["__name__"].__get__, cls)
    return got.value if type(got.value) is str else "<a class whose name cannot be read>"


def _text(exc: BaseException) -> str:
    """Returns ``str(exc)`` cut short, or a placeholder when it raises."""
    got = attempt(str, exc)
    return got.value[:200] if type(got.value) is str else "<str() of the exception raised>"


def _method(code: str, obj: Any, name: str, made_by: str) -> Any:
    """Returns the bound method ``obj.name``; raises _Raised (``code``) when it is not callable.

    ``made_by`` says what produced ``obj``, for the message.
    """
    found = lookup(obj, name)
    if found.error is None and found.value is not _MISSING and callable(found.value):
        return found.value
    subject = f"{describe(obj)} ({made_by})"
    seen = (f"looking up `{name}` on {subject} raised {_kind(found.error)}"
            if found.error is not None else f"{subject} has no `{name}`"
            if found.value is _MISSING else f"`{name}` of {subject} is a {_kind(found.value)}")
    raise _Raised(Finding.of(code, seen, f"expected a callable {name}", obj,
                             detail=found.detail))


@dataclass(frozen=True, slots=True)
class Implementation:
    """An implementation of append and the composites: auxcheck's reference, SGLang's, or yours."""

    name: str
    append: Callable[[Any, Any], Any]
    device_composite: type
    host_composite: type

    def __post_init__(self) -> None:
        for attr in ("device_composite", "host_composite"):
            value = getattr(self, attr)
            if not issubclass(type(value), type):
                raise InvalidArgument(
                    f"implementation {self.name!r}: its {attr} is a value of type {_kind(value)}, not a "
                    "class; expected the composite classes (SGLang's are frozen dataclasses)"
                )

    @classmethod
    def from_module(cls, module: Any, *, name: str | None = None) -> Implementation:
        """Returns the implementation a module (or any object) exposes under SGLang's names.

        Raises InvalidArgument naming what is missing, what raised when looked up, and
        a composite that is not a class.
        """
        label = name or _module_name(module)
        found = {attr: lookup(module, attr) for attr in _NAMES}
        for attr, got in found.items():
            if got.error is not None:
                raise InvalidArgument(
                    f"{label}: looking up {attr} raised {_kind(got.error)} "
                    f"({_text(got.error)}); an implementation module must expose "
                    f"{', '.join(_NAMES)} as plain attributes"
                )
        missing = [attr for attr, got in found.items() if got.value is _MISSING]
        if missing:
            raise InvalidArgument(
                f"{label} does not define {', '.join(missing)}; an implementation module "
                f"must expose {', '.join(_NAMES)}"
            )
        return cls(label, *(found[attr].value for attr in _NAMES))


def _module_name(module: Any) -> str:
    found = lookup(module, "__name__")
    return found.value if type(found.value) is str and found.value else type_name(module)


REFERENCE = Implementation.from_module(protocols, name="reference")
"""auxcheck's reference implementation (``auxcheck.protocols``)."""


def load_implementation(spec: str) -> Implementation:
    """Returns the implementation named by ``spec``: reference, sglang, sglang==X, auto, or a module.

    ``auto`` is SGLang's when it can be imported, else the reference. ``sglang==0.5.23``
    is that release's own code, read from its wheel (see :func:`release_implementation`).
    Raises InvalidArgument when the module cannot be imported or lacks a required name,
    and ReleaseError when the release cannot be downloaded or read.
    """
    if spec == "reference":
        return REFERENCE
    if spec == "auto":
        imported = attempt(importlib.import_module, SGLANG_MODULE)
        if issubclass(type(imported.error), ImportError):
            return REFERENCE
        if imported.error is not None:
            raise InvalidArgument(
                f"implementation 'auto': importing {SGLANG_MODULE} raised "
                f"{_kind(imported.error)} ({_text(imported.error)}); repair the SGLang "
                "install, or choose 'reference' explicitly"
            )
        return Implementation.from_module(imported.value, name="sglang")
    version = _release_of(spec)
    if version is not None:
        return release_implementation(version)
    module_name = SGLANG_MODULE if spec == "sglang" else spec
    return Implementation.from_module(_import(spec, module_name), name=spec)


def _release_of(spec: str) -> str | None:
    try:
        return release_version(spec)
    except InvalidArgument as exc:
        raise InvalidArgument(f"implementation {spec!r}: {exc}") from None


def release_version(spec: str) -> str | None:
    """Returns ``X`` of an ``sglang==X`` spec, or None for any other spec.

    Raises InvalidArgument, saying what ``X`` should be, when it is not one release
    version such as ``0.5.23``.
    """
    if not spec.startswith(_RELEASE_PREFIX):
        return None
    from auxcheck.releases import ReleaseError, parse_versions

    version = spec.removeprefix(_RELEASE_PREFIX)
    try:
        parsed = parse_versions(version)  # one version: a list such as 0.5.20,0.5.23 is refused
    except ReleaseError:
        parsed = ()
    if parsed != (version,):
        raise InvalidArgument(f"{version!r} is not an SGLang release version; expected "
                              "sglang==X.Y.Z such as sglang==0.5.23")
    return version


def release_implementation(version: str) -> Implementation:
    """Returns the append and composites of SGLang release ``version``, named ``sglang==X``.

    The release's wheel comes from the user's cache (downloaded there when missing) and
    its ``auxiliary_output`` module is imported from the unpacked files; SGLang is never
    installed. Raises ReleaseError when the wheel cannot be fetched, InvalidArgument
    when the release predates the composites (0.5.20).
    """
    from auxcheck.releases import find_release, import_modules, unpack

    release = find_release(version)
    name = f"{_RELEASE_PREFIX}{version}"
    if release.read(_SGLANG_MODULE_FILE) is None:
        raise InvalidArgument(
            f"implementation {name!r}: sglang {version} has no {SGLANG_MODULE}; append and the "
            "composites arrived in sglang 0.5.20, so prove 0.5.20 or later"
        )
    module = import_modules(unpack(release), [SGLANG_MODULE])[SGLANG_MODULE]
    return Implementation.from_module(module, name=name)


def _import(spec: str, module_name: str) -> ModuleType:
    if not module_name or not all(part.isidentifier() for part in module_name.split(".")):
        raise InvalidArgument(
            f"implementation {spec!r} is not 'reference', 'sglang', 'sglang==X.Y.Z', 'auto' or "
            "a dotted module path"
        )
    imported = attempt(importlib.import_module, module_name)
    error = imported.error
    if error is not None and issubclass(type(error), ImportError):
        raise InvalidArgument(
            f"implementation {spec!r}: cannot import {module_name} ({_text(error)}); install "
            "it, or use 'reference' or a dotted path to your own module"
        ) from None
    if error is not None:
        raise InvalidArgument(
            f"implementation {spec!r}: importing {module_name} raised {_kind(error)} "
            f"({_text(error)}); fix the module so that it imports, or use 'reference'"
        ) from None
    return imported.value  # type: ignore[no-any-return]


def children(impl: Implementation, output: Any, *, code: str = "AUX301") -> tuple[Any, ...]:
    """Returns the children of ``output`` when it is ``impl``'s composite, else ``(output,)``.

    Raises _Raised with a finding for ``code`` when reading ``outputs`` raises, or when
    it is not a finite iterable (at most 10,000 children are read).
    """
    if not _is_a(output, impl.device_composite):
        return (output,)
    name = _kind(output)
    found = lookup(output, "outputs")
    if type(found.value) is tuple:
        return found.value
    if found.value is _MISSING:
        raise _Raised(Finding.of(code, f"the composite {name} has no attribute `outputs`",
                                 "expected its children as a tuple in `outputs`", output))
    listed = found if found.error is not None else attempt(
        lambda: tuple(itertools.islice(iter(found.value), _MAX_CHILDREN + 1)))
    if listed.error is not None:
        raise _Raised(Finding.of(code, f"reading the children (`outputs`) of the composite "
                                 f"{name} raised {_kind(listed.error)}",
                                 "expected its children as a tuple in `outputs`", output,
                                 detail=listed.detail))
    if len(listed.value) > _MAX_CHILDREN:
        raise _Raised(Finding.of(code, f"the composite {name}'s `outputs` yields more than "
                                 f"{_MAX_CHILDREN} children", "expected a tuple holding one "
                                 "child per output appended", output))
    return listed.value  # type: ignore[no-any-return]


def _labels(outputs: Sequence[Any]) -> str:
    names = (o.label if type(o) is RecordingDeviceOutput else describe(o, limit=30)
             for o in outputs)
    return "[" + ", ".join(names) + "]"


def _raise(prop: str, impl: Implementation, findings: Sequence[Finding]) -> None:
    if findings:
        subject = f"{findings[0].code} {prop}[{impl.name}]"
        raise ContractViolation(Report(subject, list(findings)))


class _Raised(Exception):
    """The implementation raised; carries the finding that says so."""

    def __init__(self, finding: Finding) -> None:
        self.finding = finding
        super().__init__(finding.message)


def _call(code: str, what: str, function: Callable[..., Any], *args: Any) -> Any:
    """Returns ``function(*args)``; raises _Raised with a finding for ``code`` if it raised.

    The call runs under the one guard: ``SystemExit``, ``GeneratorExit`` and bare
    ``BaseException`` from the implementation become findings too. Only the error's
    type and a short summary are read, never its repr.
    """
    announce(code, what)
    outcome = attempt(function, *args)
    error = outcome.error
    if error is None:
        return outcome.value
    if type(error) is _Raised:  # already a finding, from a check nested inside ``function``
        raise error
    if type(error) is LeafRaised:  # the user's own output broke the contract, not the composite
        broke = (f"has no callable {error.method}" if error.code in ("AUX101", "AUX201")
                 else f"'s {error.method} raised {_kind(error.error)}")
        raise _Raised(Finding.of(
            error.code, f"{what}: your output{broke}",
            f"expected {_kind(error.leaf)}.{error.method} to honour the contract on its "
            "own (see its own items)", error.leaf, detail=summarize(error.error))) from None
    raise _Raised(Finding.of(code, f"{what} raised {_kind(error)}",
                             "expected it to succeed on valid outputs", function,
                             detail=summarize(error))) from None


def _build(impl: Implementation, code: str, operands: Sequence[Operand]) -> Any:
    def append(current: Any, output: Any) -> Any:
        result = _call(code, "append_auxiliary_output(current, output)", impl.append,
                       current, output)
        return checked_result(impl, result, current, output)

    return build_operand(append, Appended(tuple(operands)))


def checked_result(impl: Implementation, result: Any, current: Any, output: Any) -> Any:
    """Returns what ``append(current, output)`` returned; raises _Raised for a wrong result.

    With None on either side the result must be the other operand itself (AUX303),
    wherever the append happens: a broken None case would otherwise show up later as
    a miscounted composite. Otherwise an append returns a device output (a leaf with a
    callable ``copy_to_host``) or the implementation's composite; anything else would
    only crash later, where the composite is copied (AUX301).
    """
    if current is None or output is None:
        if result is not (output if current is None else current):
            raise _Raised(Finding.of(
                "AUX303", f"append_auxiliary_output({describe(current, limit=40)}, "
                f"{describe(output, limit=40)}) returned {describe(result, limit=40)}",
                "expected the other operand itself (None when both are None)", impl.append))
        return result
    if _is_a(result, impl.device_composite):
        return result
    found = lookup(result, "copy_to_host")
    if found.error is None and found.value is not _MISSING and callable(found.value):
        return result
    seen = "" if found.error is None else f" (looking up its copy_to_host raised {_kind(found.error)})"
    raise _Raised(Finding.of(
        "AUX301", f"append_auxiliary_output({describe(current, limit=40)}, "
        f"{describe(output, limit=40)}) returned a {_kind(result)}, not a device output{seen}",
        f"expected None, one of the operands, or a {_class_name(impl.device_composite)}",
        impl.append, detail=found.detail))


def _checked(prop: str, impl: Implementation,
             body: Callable[[], Sequence[Finding]]) -> None:
    try:
        findings = body()
    except _Raised as raised:
        findings = [raised.finding]
    _raise(prop, impl, findings)


# --- AUX303 -------------------------------------------------------------------


def none_findings(impl: Implementation, output: Any) -> list[Finding]:
    """Returns the AUX303 findings of appending None on either side of ``output``."""
    findings = []
    both = _call("AUX303", "append(None, None)", impl.append, None, None)
    if both is not None:
        findings.append(Finding.of("AUX303", f"append(None, None) returned {describe(both)}",
                                   "expected None", impl.append))
    for call, args in (("append(output, None)", (output, None)),
                       ("append(None, output)", (None, output))):
        result = _call("AUX303", call, impl.append, *args)
        if result is not output:
            findings.append(Finding.of(
                "AUX303", f"{call} returned {describe(result)} for output {describe(output)}",
                "expected output itself, unchanged", impl.append))
    return findings


def check_none_identity(impl: Implementation, output: Any) -> None:
    """Raises ContractViolation (AUX303) unless None is the identity of append on both sides.

    ``append(None, None) is None`` and ``append(x, None) is x is append(None, x)``
    for ``output`` (a leaf or a composite).
    """
    _checked("check_none_identity", impl, lambda: none_findings(impl, output))


# --- AUX301 / AUX302 ----------------------------------------------------------


def structure_findings(impl: Implementation, result: Any,
                       expected: Sequence[Any]) -> list[Finding]:
    """Returns the AUX301 / AUX302 findings of ``result``, the append of ``expected`` leaves."""
    findings = flattening_findings(impl, result, expected)
    return findings or order_findings(impl, result, expected)


def flattening_findings(impl: Implementation, result: Any,
                        expected: Sequence[Any]) -> list[Finding]:
    """Returns the AUX301 findings: nested composites, or a child count unequal to the leaves."""
    if len(expected) < 2:
        return []
    if not _is_a(result, impl.device_composite):
        return [Finding.of("AUX301", f"appending {len(expected)} outputs returned "
                           f"{describe(result)}",
                           f"expected a {_class_name(impl.device_composite)}", result)]
    kids = children(impl, result)
    findings = []
    if any(_is_a(kid, impl.device_composite) for kid in kids):
        findings.append(Finding.of("AUX301", f"composite children {_labels(kids)} include a "
                                   "composite", "expected only leaf outputs", result))
    if len(kids) != len(expected):
        findings.append(Finding.of(
            "AUX301", f"composite holds {len(kids)} children {_labels(kids)}",
            f"expected {len(expected)}, one per non-None output appended: {_labels(expected)}",
            result))
    return findings


def order_findings(impl: Implementation, result: Any, expected: Sequence[Any]) -> list[Finding]:
    """Returns the AUX302 finding when ``result`` holds exactly the leaves, out of order."""
    kids = _deep_children(impl, result)
    if len(expected) < 2 or len(kids) != len(expected):
        return []
    same_leaves = sorted(map(id, kids)) == sorted(map(id, expected))
    if same_leaves and any(a is not b for a, b in zip(kids, expected)):
        return [Finding.of("AUX302", f"composite children in order {_labels(kids)}",
                           f"expected append order {_labels(expected)}", result)]
    return []


def _deep_children(impl: Implementation, output: Any, within: frozenset[int] = frozenset()
                   ) -> list[Any]:
    """Returns the leaves under ``output``; raises _Raised (AUX301) for a composite inside itself."""
    if not _is_a(output, impl.device_composite):
        return [output]
    if id(output) in within:
        raise _Raised(Finding.of("AUX301", f"the composite {_kind(output)} holds itself among "
                                 "its descendants", "expected only leaf outputs as children",
                                 output))
    inner = within | {id(output)}
    return [leaf for kid in children(impl, output) for leaf in _deep_children(impl, kid, inner)]


def check_flattening(impl: Implementation, operands: Sequence[Operand]) -> None:
    """Raises ContractViolation (AUX301) if appending ``operands`` nests or miscounts children.

    The result of appending two or more leaves is one composite, holding no composite,
    with one child per non-None leaf.
    """
    def body() -> list[Finding]:
        result = _build(impl, "AUX301", operands)
        return flattening_findings(impl, result, operand_leaves(Appended(tuple(operands))))

    _checked("check_flattening", impl, body)


def check_order(impl: Implementation, operands: Sequence[Operand]) -> None:
    """Raises ContractViolation (AUX302) if appending ``operands`` breaks append order."""
    def body() -> list[Finding]:
        result = _build(impl, "AUX302", operands)
        return order_findings(impl, result, operand_leaves(Appended(tuple(operands))))

    _checked("check_order", impl, body)


def check_associativity(impl: Implementation, first: Operand, second: Operand,
                        third: Operand) -> None:
    """Raises ContractViolation (AUX301, or AUX302) unless append is associative.

    ``(first + second) + third`` and ``first + (second + third)`` must hold the
    same children, by identity, in the same order.
    """
    def body() -> list[Finding]:
        left = _build(impl, "AUX301", [Appended((first, second)), third])
        right = _build(impl, "AUX301", [first, Appended((second, third))])
        lkids, rkids = children(impl, left), children(impl, right)
        if len(lkids) == len(rkids) and all(a is b for a, b in zip(lkids, rkids)):
            return []
        nested = any(_is_a(k, impl.device_composite) for k in lkids + rkids)
        code = "AUX301" if nested or len(lkids) != len(rkids) else "AUX302"
        return [Finding.of(code, f"(a+b)+c holds {_labels(lkids)} but a+(b+c) holds "
                           f"{_labels(rkids)}", "expected the same flat children in order",
                           impl.append)]

    _checked("check_associativity", impl, body)


# --- AUX304 / AUX104 ----------------------------------------------------------


def occurrence_records(leaves: Sequence[RecordingDeviceOutput],
                       marks: Sequence[int]) -> list[Any]:
    """Returns each position's copy record: a leaf appended k times owns its next k copies.

    ``marks`` are the leaves' copy counts before the copy. Call it only once the copy
    counts are right (:func:`copy_count_findings` returns no finding).
    """
    seen: dict[int, int] = {}
    records = []
    for leaf, mark in zip(leaves, marks):
        k = seen.get(id(leaf), 0)
        seen[id(leaf)] = k + 1
        records.append(leaf.copies[mark + k])
    return records


def copy_count_findings(leaves: Sequence[RecordingDeviceOutput], marks: Sequence[int],
                        what: str = "one composite copy_to_host") -> list[Finding]:
    """Returns AUX304 when a leaf was copied other than once per time it was appended.

    SGLang's append never de-duplicates: a leaf appended twice is two children, copied
    twice. ``marks`` are the leaves' copy counts before ``what`` ran.
    """
    appended: dict[int, list[Any]] = {}  # id -> [leaf, its mark, times appended], first first
    for leaf, mark in zip(leaves, marks):
        appended.setdefault(id(leaf), [leaf, mark, 0])[2] += 1
    wrong = [(leaf, leaf.copy_count - mark, want) for leaf, mark, want in appended.values()
             if leaf.copy_count - mark != want]
    if not wrong:
        return []
    seen = ", ".join(f"{leaf.label} {n}x" + (f" (appended {want}x)" if want > 1 else "")
                     for leaf, n, want in wrong)
    return [Finding.of("AUX304", f"{what} copied children {seen}",
                       "expected every child copied exactly once per append, before "
                       "copy_to_host returns", wrong[0][0])]


def copy_findings(leaves: Sequence[RecordingDeviceOutput],
                  marks: Sequence[int], log: Sequence[Any]) -> list[Finding]:
    """Returns the AUX304 / AUX302 / AUX104 findings of one copy of a composite of ``leaves``.

    ``marks`` are the leaves' copy counts before the copy; ``log`` every tensor the
    composite passed to ``copy_tensor``, in order.
    """
    counted = copy_count_findings(leaves, marks)
    if counted:
        return counted
    records = occurrence_records(leaves, marks)
    ticks = [record.tick for record in records]
    if ticks != sorted(ticks):
        order = [leaf for _, leaf in sorted(zip(ticks, leaves), key=lambda pair: pair[0])]
        return [Finding.of("AUX302", f"children copied in order {_labels(order)}",
                           f"expected append order {_labels(leaves)}", leaves[0])]
    return _tensor_findings(leaves, [record.passed for record in records], log)


def _any_share_bytes(tensors: Sequence[Any]) -> bool:
    """Returns True when two of ``tensors`` share a byte: the validators' AUX104 rule.

    Interleaved views do not; sparse and nested tensors count by the dense tensors
    holding their bytes (:func:`auxcheck._runtime.sharing.sharing_indices`).
    """
    from auxcheck._runtime.sharing import sharing_indices

    refs = [(f"[{i}]", t) for i, t in enumerate(tensors)]
    return any(later != earlier for later, earlier in sharing_indices(refs, refs))


def _tensor_findings(leaves: Sequence[RecordingDeviceOutput],
                     passed: Sequence[tuple[Any, ...]], log: Sequence[Any]) -> list[Finding]:
    findings = []
    for leaf, tensors in zip(leaves, passed):
        if _any_share_bytes(tensors):
            findings.append(Finding.of("AUX104", f"{leaf.label} passed overlapping tensor bytes "
                                       "to copy_tensor", "expected each distinct tensor once",
                                       leaf))
    expected = [tensor for tensors in passed for tensor in tensors]
    if len(expected) != len(log) or any(a is not b for a, b in zip(expected, log)):
        findings.append(Finding.of(
            "AUX104", f"copy_tensor received {len(log)} tensors",
            f"expected the {len(expected)} tensors the children passed, once each, in leaf order",
            leaves[0]))
    return findings


def copy_logged(output: Any, code: str) -> tuple[Any, list[Any]]:
    """Returns ``output.copy_to_host`` with a cloning ``copy_tensor``, and every tensor it got.

    Raises _Raised with a finding for ``code`` when the copy raises.
    """
    log: list[Any] = []

    def copy_tensor(tensor: Any) -> Any:
        from auxcheck._runtime.loop import host_copy

        log.append(tensor)
        return host_copy(tensor)  # the loop's copy: an expanded view is never materialised

    method = _method(code, output, "copy_to_host", "what append returned")
    return _call(code, "copy_to_host(copy_tensor)", method, copy_tensor), log


def check_copy_once(impl: Implementation, operands: Sequence[Operand]) -> None:
    """Raises ContractViolation (AUX304, AUX302 or AUX104) unless one copy copies each child once.

    Copying the appended ``operands`` must call every leaf's ``copy_to_host`` exactly
    once, in append order, before returning, and pass ``copy_tensor`` exactly the
    tensors the leaves passed, in leaf order.
    """
    def body() -> list[Finding]:
        leaves = operand_leaves(Appended(tuple(operands)))
        result = _build(impl, "AUX304", operands)
        if result is None:
            return []
        marks = [leaf.copy_count for leaf in leaves]
        _host, log = copy_logged(result, "AUX304")
        return copy_findings(leaves, marks, log)

    _checked("check_copy_once", impl, body)


# --- AUX305 -------------------------------------------------------------------


def consume_findings(leaves: Sequence[RecordingDeviceOutput], hosts: Sequence[RecordingHostOutput],
                     batch: Any, commits: Any) -> list[Finding]:
    """Returns the AUX305 / AUX302 findings of one consume by the hosts of ``leaves``."""
    for leaf, host in zip(leaves, hosts):
        records = host.consumed
        if len(records) != 1 or records[0].batch is not batch or records[0].commits is not commits:
            seen = (f"{len(records)} consume calls" if len(records) != 1 else
                    f"batch {'identical' if records[0].batch is batch else 'a different object'}"
                    f", commits {'identical' if records[0].commits is commits else 'a copy'}")
            return [Finding.of("AUX305", f"child {leaf.label} got {seen}",
                               "expected one consume with the very same batch and commits "
                               "objects", leaf)]
    ticks = [host.consumed[0].tick for host in hosts]
    if ticks != sorted(ticks):
        order = [leaf for _, leaf in sorted(zip(ticks, leaves), key=lambda pair: pair[0])]
        return [Finding.of("AUX302", f"children consumed in order {_labels(order)}",
                           f"expected append order {_labels(leaves)}", leaves[0])]
    return []


def broadcast_findings(impl: Implementation, output: Any,
                       leaves: Sequence[RecordingDeviceOutput], batch: Any,
                       commits: Any) -> list[Finding]:
    """Returns the findings of copying ``output`` (its leaves given) and consuming it once."""
    marks = [leaf.copy_count for leaf in leaves]
    host, log = copy_logged(output, "AUX304")
    copied = copy_findings(leaves, marks, log)
    if copied:
        return copied
    hosts = [record.host for record in occurrence_records(leaves, marks)]
    return consumed_findings(host, leaves, hosts, batch, commits, output)


def consumed_findings(host: Any, leaves: Sequence[RecordingDeviceOutput],
                      hosts: Sequence[RecordingHostOutput], batch: Any, commits: Any,
                      output: Any) -> list[Finding]:
    """Returns the findings of consuming the composite ``host`` once: no copy, broadcast, order."""
    marks = [leaf.copy_count for leaf in leaves]
    consume = _method("AUX305", host, "consume", "what the composite's copy_to_host returned")
    _call("AUX305", "consume(batch, commits)", consume, batch, commits)
    if any(leaf.copy_count != mark for leaf, mark in zip(leaves, marks)):
        return [Finding.of("AUX304", "children were copied again inside consume",
                           "expected copies only inside copy_to_host", output)]
    return consume_findings(leaves, hosts, batch, commits)


def check_broadcast(impl: Implementation, operands: Sequence[Operand], batch: Any,
                    commits: Any) -> None:
    """Raises ContractViolation (AUX305, or AUX302 / AUX304) unless consume broadcasts.

    Consuming the host of the appended ``operands`` must pass the very same
    ``batch`` and ``commits`` objects to every child, once each, in append order.
    """
    def body() -> list[Finding]:
        leaves = operand_leaves(Appended(tuple(operands)))
        result = _build(impl, "AUX305", operands)
        if result is None:
            return []
        return broadcast_findings(impl, result, leaves, batch, commits)

    _checked("check_broadcast", impl, body)


# --- AUX306 -------------------------------------------------------------------


def frozen_findings(composite: Any) -> list[Finding]:
    """Returns the AUX306 findings of ``composite``: settable attributes, non-tuple outputs.

    Setting an attribute must raise AttributeError or TypeError (a frozen dataclass
    raises FrozenInstanceError); anything else it raises is a finding too.
    """
    name = _kind(composite)
    found = lookup(composite, "outputs")
    if found.error is not None or not issubclass(type(found.value), tuple):
        seen = (f"reading {name}.outputs raised {_kind(found.error)}" if found.error is not None
                else f"{name}.outputs is {'missing' if found.value is _MISSING else 'a ' + _kind(found.value)}")
        return [Finding.of("AUX306", seen, "expected a tuple", composite, detail=found.detail)]
    for attr in ("outputs", "_auxcheck_probe"):
        done = attempt(setattr, composite, attr, found.value)
        if issubclass(type(done.error), (AttributeError, TypeError)):
            continue
        seen = ("succeeded" if done.error is None else f"raised {_kind(done.error)}")
        return [Finding.of("AUX306", f"setting {name}.{attr} {seen}",
                           "expected the composite to be frozen, refusing with AttributeError "
                           "(FrozenInstanceError) as a frozen dataclass does", composite,
                           detail=done.detail)]
    return []


def check_frozen(impl: Implementation, operands: Sequence[Operand]) -> None:
    """Raises ContractViolation (AUX306) unless the device and host composites are frozen.

    Checks the composite appending ``operands`` builds (when it builds one), one
    built directly from their leaves, and the host composites they copy to.
    """
    def body() -> list[Finding]:
        leaves = operand_leaves(Appended(tuple(operands)))
        made = [_call("AUX306", "the device composite's constructor",
                      impl.device_composite, tuple(leaves)),
                _build(impl, "AUX306", operands)]
        made += [copy_logged(output, "AUX306")[0] for output in list(made)
                 if _is_a(output, impl.device_composite)]
        composites = [c for c in made if _is_a(c, impl.device_composite)
                      or _is_a(c, impl.host_composite)]
        return [f for composite in composites for f in frozen_findings(composite)][:1]

    _checked("check_frozen", impl, body)


# --- running them under Hypothesis --------------------------------------------


@dataclass(frozen=True, slots=True)
class PropertyTest:
    """One property as a ready Hypothesis test: call ``test()``; it raises on a violation.

    ``codes`` are the rule codes it can report. A failure raises ContractViolation
    whose ``__notes__`` hold the shrunk falsifying example.
    """

    name: str
    codes: tuple[str, ...]
    test: Callable[[], None]


def property_tests(
    impl: Implementation,
    *,
    leaves: Any = None,
    profile: Any = "auxcheck-default",
    max_examples: int | None = None,
    batch_size: int | None = None,
) -> tuple[PropertyTest, ...]:
    """Returns every property bound to ``impl`` as a Hypothesis test under ``profile``.

    ``profile`` is an auxcheck profile name, a profile registered with Hypothesis, or a
    ``hypothesis.settings`` object; all of its settings apply. ``leaves`` (a strategy
    of your own device outputs) is mixed into the leaves; ``max_examples`` caps the
    profile's example count. Appending two leaves is always among the examples. Composites holding your outputs
    are consumed once, with a batch of ``batch_size`` requests (default: inferred from
    your first output's tensors), as SGLang consumes them.
    """
    from hypothesis import example, given, settings

    from auxcheck import strategies as aux

    chosen = aux.resolve_profile(profile)
    if max_examples is not None:
        chosen = settings(chosen, max_examples=max_examples)
    many = aux.append_sequences(leaves=leaves, min_leaves=2)
    one = aux.append_sequences(leaves=leaves, max_size=2).map(lambda ops: Appended(ops))

    def none_identity(operands: tuple[Operand, ...]) -> None:
        check_none_identity(impl, _built(impl, "check_none_identity", "AUX303", operands))

    def broadcast(operands: tuple[Operand, ...], stream: Any) -> None:
        users = [leaf.inner for leaf in operand_leaves(Appended(operands))
                 if leaf.inner is not None]
        if users:  # consume the user's outputs with a batch they could have been built for
            batch, commits = _user_step(users[0], batch_size)
            check_broadcast(impl, operands, batch, commits)
            return
        for step in stream.play():
            check_broadcast(impl, operands, step.batch, step.commits)

    table: list[tuple[str, tuple[str, ...], Callable[..., None], dict[str, Any]]] = [
        ("check_none_identity", ("AUX303",), none_identity,
         {"operands": aux.append_sequences(leaves=leaves)}),
        ("check_flattening", ("AUX301",), partial(check_flattening, impl), {"operands": many}),
        ("check_order", ("AUX302",), partial(check_order, impl), {"operands": many}),
        ("check_associativity", ("AUX301", "AUX302"), partial(check_associativity, impl),
         {"first": one, "second": one, "third": one}),
        ("check_copy_once", ("AUX304", "AUX302", "AUX104"), partial(check_copy_once, impl),
         {"operands": many}),
        ("check_broadcast", ("AUX305", "AUX302", "AUX304"), broadcast,
         {"operands": many, "stream": aux.commit_streams(max_steps=2)}),
        ("check_frozen", ("AUX306",), partial(check_frozen, impl), {"operands": many}),
    ]
    two_leaves = {"operands": (RecordingDeviceOutput("first"), RecordingDeviceOutput("second"))}
    explicit = {"check_flattening": two_leaves, "check_order": two_leaves}
    tests = []
    for name, codes, function, strats in table:
        test = given(**strats)(_named(name, codes[0], function))
        if name in explicit:
            test = example(**explicit[name])(test)
        tests.append(PropertyTest(name, codes, _judged(name, codes[0], chosen(test))))
    return tuple(tests)


def _judged(name: str, code: str, test: Callable[[], None]) -> Callable[[], None]:
    """Returns ``test`` raising only ContractViolation, Hypothesis's own usage errors, or the
    ``unittest.SkipTest`` of a profile that runs none of its examples.

    What Hypothesis itself lets out becomes a ContractViolation (``code``): a
    FlakyFailure (the implementation judged the same example differently on a re-run)
    and whatever plugin code raised inside Hypothesis's own machinery, such as a class
    whose ``__name__`` raises when the example is printed.
    """
    from auxcheck.strategies import _hypothesis_own

    def judged() -> None:
        outcome = attempt(test)
        error = outcome.error
        if error is None or _is_a(error, ContractViolation):
            if error is not None:
                raise error
            return
        inner = [e for e in _flattened(error) if _is_a(e, ContractViolation)]
        if inner:
            raise inner[0]
        if _hypothesis_own(error) and not _kind(error).startswith("Flaky"):
            raise error  # a settings or health-check problem: Hypothesis's message says how
        if _is_a(error, unittest.SkipTest):
            raise error  # a profile that runs no example of this test: nothing was judged
        finding = Finding.of(code, f"{name} stopped with {_kind(error)} raised outside the "
                             "checks", "expected the implementation and your outputs to "
                             "behave the same on every run of an example, raising nothing "
                             "that escapes their calls", None, detail=summarize(error))
        raise ContractViolation(Report(f"{code} {name}", [finding])) from None

    judged.__name__ = judged.__qualname__ = name
    return judged


def _flattened(error: BaseException) -> list[BaseException]:
    """Returns ``error``'s leaf exceptions when it is an exception group, else ``[error]``."""
    inner = lookup(error, "exceptions").value
    if type(inner) is not tuple:
        return [error]
    return [leaf for each in inner if _is_a(each, BaseException) for leaf in _flattened(each)]


def _user_step(output: Any, batch_size: int | None) -> tuple[Any, Any]:
    """Returns one step's batch snapshot and commits for a batch ``output`` was built for."""
    from auxcheck._runtime.loop import infer_batch_sizes
    from auxcheck._runtime.scheduler import SchedulerModel

    size = batch_size or infer_batch_sizes(output)[0].sizes[0]
    model = SchedulerModel(seed=size)
    batch = model.batch(size).copy()
    return batch, model.commit(batch)


def _named(name: str, code: str, function: Callable[..., None]) -> Callable[..., None]:
    """Returns ``function`` named ``name`` (Hypothesis names the example after it), guarded.

    Hypothesis re-raises ``SystemExit`` and ``GeneratorExit`` as themselves and stops at
    any other ``BaseException``: whatever escapes the checks' own guarded calls is made
    a ContractViolation (``code``) here, inside the body, so Hypothesis shrinks it as a
    failure. ContractViolation and Hypothesis's own exceptions pass unchanged.
    """
    from auxcheck.strategies import _hypothesis_control

    def run(**kwargs: Any) -> None:
        outcome = attempt(function, **kwargs)
        error = outcome.error
        if error is None:
            return
        if _is_a(error, ContractViolation) or _hypothesis_control(error):
            raise error
        raise ContractViolation(Report(f"{code} {name}", [Finding.of(
            code, f"{name} raised {_kind(error)} outside the guarded calls into the "
            "implementation", "expected only findings; if the detail shows only auxcheck's "
            "frames, report it as an auxcheck bug", None, detail=summarize(error))])) from None

    run.__name__ = run.__qualname__ = name
    return run



def _built(impl: Implementation, prop: str, code: str, operands: Sequence[Operand]) -> Any:
    """Returns the appended ``operands``; raises ContractViolation if append raised."""
    try:
        return _build(impl, code, operands)
    except _Raised as raised:
        _raise(prop, impl, [raised.finding])
        raise AssertionError("unreachable") from None


def run_properties(
    impl: Implementation,
    *,
    leaves: Any = None,
    profile: Any = "auxcheck-default",
    max_examples: int | None = None,
    batch_size: int | None = None,
) -> Report:
    """Returns a report of every property ``impl`` fails; each finding's detail is the example."""
    report = Report(f"append/composite properties of {impl.name}")
    for prop in property_tests(impl, leaves=leaves, profile=profile, max_examples=max_examples,
                               batch_size=batch_size):
        try:
            prop.test()
        except ContractViolation as exc:
            report.extend(_with_example(prop.name, exc))
    return report


def _with_example(name: str, exc: ContractViolation) -> list[Finding]:
    notes = "\n".join(getattr(exc, "__notes__", ()))
    return [replace(f, detail="\n".join(filter(None, [f.detail, f"{name}: {notes}"])))
            for f in exc.report]
