"""The invariants of append and the composites as checks, and the Hypothesis tests built on them.

:mod:`auxcheck.properties` re-exports the public names; its docstring is the user's
documentation, and this module the implementation behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from auxcheck._core.errors import ContractViolation, PluginCallFailed
from auxcheck._core.plugin_calls import MISSING as _MISSING
from auxcheck._core.plugin_calls import attempt, kind_name, lookup
from auxcheck._core.report import Finding, Report, describe
from auxcheck._properties.contract_tests import contract_test, guarded_body
from auxcheck._properties.implementation_calls import (
    bound_method,
    build_appended,
    call_implementation,
    checked_result,
    children,
    class_name,
    findings_of,
    is_a,
)
from auxcheck._properties.implementations import (
    Implementation,
    load_implementation,
    release_implementation,
    release_version,
)
from auxcheck._runtime.recording import (
    Appended,
    Operand,
    RecordingDeviceOutput,
    RecordingHostOutput,
    operand_leaves,
)

# What auxcheck.properties re-exports from the modules beside this one is named as this module's
# (reprs, docs, pickles), as it was when the face held the code; its annotations resolve here.
Implementation.__module__ = checked_result.__module__ = children.__module__ = __name__
load_implementation.__module__ = release_implementation.__module__ = __name__
release_version.__module__ = __name__


def _labels(outputs: Sequence[Any]) -> str:
    names = (o.label if type(o) is RecordingDeviceOutput else describe(o, limit=30)
             for o in outputs)
    return "[" + ", ".join(names) + "]"


def _raise(prop: str, impl: Implementation, findings: Sequence[Finding]) -> None:
    if findings:
        subject = f"{findings[0].code} {prop}[{impl.name}]"
        raise ContractViolation(Report(subject, list(findings)))


def _checked(prop: str, impl: Implementation,
             body: Callable[[], Sequence[Finding]]) -> None:
    _raise(prop, impl, findings_of(body))


# --- AUX303 -------------------------------------------------------------------


def none_findings(impl: Implementation, output: Any) -> list[Finding]:
    """Returns the AUX303 findings of appending None on either side of ``output``."""
    findings = []
    both = call_implementation("AUX303", "append(None, None)", impl.append, None, None)
    if both is not None:
        findings.append(Finding.of("AUX303", f"append(None, None) returned {describe(both)}",
                                   "expected None", impl.append))
    for call, args in (("append(output, None)", (output, None)),
                       ("append(None, output)", (None, output))):
        result = call_implementation("AUX303", call, impl.append, *args)
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
    if not is_a(result, impl.device_composite):
        return [Finding.of("AUX301", f"appending {len(expected)} outputs returned "
                           f"{describe(result)}",
                           f"expected a {class_name(impl.device_composite)}", result)]
    kids = children(impl, result)
    findings = []
    if any(is_a(kid, impl.device_composite) for kid in kids):
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
    """Returns the leaves under ``output``; raises PluginCallFailed (AUX301) for a composite
    inside itself."""
    if not is_a(output, impl.device_composite):
        return [output]
    if id(output) in within:
        raise PluginCallFailed(Finding.of(
            "AUX301", f"the composite {kind_name(output)} holds itself among its descendants",
            "expected only leaf outputs as children", output))
    inner = within | {id(output)}
    return [leaf for kid in children(impl, output) for leaf in _deep_children(impl, kid, inner)]


def check_flattening(impl: Implementation, operands: Sequence[Operand]) -> None:
    """Raises ContractViolation (AUX301) if appending ``operands`` nests or miscounts children.

    The result of appending two or more leaves is one composite, holding no composite,
    with one child per non-None leaf.
    """
    def body() -> list[Finding]:
        result = build_appended(impl, "AUX301", operands)
        return flattening_findings(impl, result, operand_leaves(Appended(tuple(operands))))

    _checked("check_flattening", impl, body)


def check_order(impl: Implementation, operands: Sequence[Operand]) -> None:
    """Raises ContractViolation (AUX302) if appending ``operands`` breaks append order."""
    def body() -> list[Finding]:
        result = build_appended(impl, "AUX302", operands)
        return order_findings(impl, result, operand_leaves(Appended(tuple(operands))))

    _checked("check_order", impl, body)


def check_associativity(impl: Implementation, first: Operand, second: Operand,
                        third: Operand) -> None:
    """Raises ContractViolation (AUX301, or AUX302) unless append is associative.

    ``(first + second) + third`` and ``first + (second + third)`` must hold the
    same children, by identity, in the same order.
    """
    def body() -> list[Finding]:
        left = build_appended(impl, "AUX301", [Appended((first, second)), third])
        right = build_appended(impl, "AUX301", [first, Appended((second, third))])
        lkids, rkids = children(impl, left), children(impl, right)
        if len(lkids) == len(rkids) and all(a is b for a, b in zip(lkids, rkids)):
            return []
        nested = any(is_a(k, impl.device_composite) for k in lkids + rkids)
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
        # Your own outputs' AUX104 is the step loop's to judge, per published leaf
        # (children of a composite you return may share a tensor): never judged here twice.
        if leaf.inner is None and _any_share_bytes(tensors):
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

    Raises PluginCallFailed with a finding for ``code`` when the copy raises.
    """
    log: list[Any] = []

    def copy_tensor(tensor: Any) -> Any:
        from auxcheck._runtime.copying import host_copy

        log.append(tensor)
        return host_copy(tensor)  # the loop's copy: an expanded view is never materialised

    method = bound_method(code, output, "copy_to_host", "what append returned")
    return call_implementation(code, "copy_to_host(copy_tensor)", method, copy_tensor), log


def check_copy_once(impl: Implementation, operands: Sequence[Operand]) -> None:
    """Raises ContractViolation (AUX304, AUX302 or AUX104) unless one copy copies each child once.

    Copying the appended ``operands`` must call every leaf's ``copy_to_host`` exactly
    once, in append order, before returning, and pass ``copy_tensor`` exactly the
    tensors the leaves passed, in leaf order.
    """
    def body() -> list[Finding]:
        leaves = operand_leaves(Appended(tuple(operands)))
        result = build_appended(impl, "AUX304", operands)
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
    consume = bound_method("AUX305", host, "consume",
                           "what the composite's copy_to_host returned")
    call_implementation("AUX305", "consume(batch, commits)", consume, batch, commits)
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
        result = build_appended(impl, "AUX305", operands)
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
    name = kind_name(composite)
    found = lookup(composite, "outputs")
    if found.error is not None or not issubclass(type(found.value), tuple):
        what = "missing" if found.value is _MISSING else f"a {kind_name(found.value)}"
        seen = (f"reading {name}.outputs raised {kind_name(found.error)}"
                if found.error is not None else f"{name}.outputs is {what}")
        return [Finding.of("AUX306", seen, "expected a tuple", composite, detail=found.detail)]
    for attr in ("outputs", "_auxcheck_probe"):
        done = attempt(setattr, composite, attr, found.value)
        if issubclass(type(done.error), (AttributeError, TypeError)):
            continue
        seen = ("succeeded" if done.error is None else f"raised {kind_name(done.error)}")
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
        made = [call_implementation("AUX306", "the device composite's constructor",
                                    impl.device_composite, tuple(leaves)),
                build_appended(impl, "AUX306", operands)]
        made += [copy_logged(output, "AUX306")[0] for output in list(made)
                 if is_a(output, impl.device_composite)]
        composites = [c for c in made if is_a(c, impl.device_composite)
                      or is_a(c, impl.host_composite)]
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


@dataclass(frozen=True, slots=True)
class PropertySpec:
    """One property before Hypothesis runs it: its check, the strategy of each argument, and
    the explicit example it always runs (None: none). Specs of one :func:`property_specs`
    call share a strategy object where their arguments are drawn alike."""

    name: str
    codes: tuple[str, ...]
    function: Callable[..., None]
    strategies: dict[str, Any]
    explicit: dict[str, Any] | None = None


def property_specs(impl: Implementation, *, leaves: Any = None, batch_size: int | None = None,
                   speculative: bool = False) -> tuple[PropertySpec, ...]:
    """Returns every property bound to ``impl``, unrun (the arguments are
    :func:`property_tests`'s)."""
    from auxcheck._properties import strategies as aux

    many = aux.append_sequences(leaves=leaves, min_leaves=2)
    one = aux.append_sequences(leaves=leaves, max_size=2).map(lambda ops: Appended(ops))

    def none_identity(operands: tuple[Operand, ...]) -> None:
        check_none_identity(impl, _built(impl, "check_none_identity", "AUX303", operands))

    def broadcast(operands: tuple[Operand, ...], stream: Any) -> None:
        users = [leaf.inner for leaf in operand_leaves(Appended(operands))
                 if leaf.inner is not None]
        if users:  # consume the user's outputs with a batch they could have been built for
            batch, commits = _user_step(users[0], batch_size, speculative)
            check_broadcast(impl, operands, batch, commits)
            return
        for step in stream.play():
            check_broadcast(impl, operands, step.batch, step.commits)

    two_leaves = {"operands": (RecordingDeviceOutput("first"), RecordingDeviceOutput("second"))}
    return (
        PropertySpec("check_none_identity", ("AUX303",), none_identity,
                     {"operands": aux.append_sequences(leaves=leaves)}),
        PropertySpec("check_flattening", ("AUX301",), partial(check_flattening, impl),
                     {"operands": many}, two_leaves),
        PropertySpec("check_order", ("AUX302",), partial(check_order, impl),
                     {"operands": many}, two_leaves),
        PropertySpec("check_associativity", ("AUX301", "AUX302"),
                     partial(check_associativity, impl),
                     {"first": one, "second": one, "third": one}),
        PropertySpec("check_copy_once", ("AUX304", "AUX302", "AUX104"),
                     partial(check_copy_once, impl), {"operands": many}),
        PropertySpec("check_broadcast", ("AUX305", "AUX302", "AUX304"), broadcast,
                     {"operands": many, "stream": aux.commit_streams(max_steps=2)}),
        PropertySpec("check_frozen", ("AUX306",), partial(check_frozen, impl),
                     {"operands": many}),
    )


def property_tests(
    impl: Implementation,
    *,
    leaves: Any = None,
    profile: Any = "auxcheck-default",
    max_examples: int | None = None,
    batch_size: int | None = None,
    speculative: bool = False,
) -> tuple[PropertyTest, ...]:
    """Returns every property bound to ``impl`` as a Hypothesis test under ``profile``.

    ``profile`` is an auxcheck profile name, a profile registered with Hypothesis, or a
    ``hypothesis.settings`` object; all of its settings apply. ``leaves`` (a strategy
    of your own device outputs) is mixed into the leaves; ``max_examples`` caps the
    profile's example count. Appending two leaves is always among the examples. Composites holding your outputs
    are consumed once, with a batch of ``batch_size`` requests (default: inferred from
    your first output's tensors), as SGLang consumes them; in a step that gives each
    request at most one token unless ``speculative`` (speculative decoding, dLLM).
    """
    from hypothesis import example, given

    chosen = profile_settings(profile, max_examples)
    tests = []
    for spec in property_specs(impl, leaves=leaves, batch_size=batch_size,
                               speculative=speculative):
        test = given(**spec.strategies)(guarded_body(spec.name, spec.codes[0], spec.function))
        if spec.explicit is not None:
            test = example(**spec.explicit)(test)
        tests.append(PropertyTest(spec.name, spec.codes,
                                  contract_test(spec.name, spec.codes[0], chosen(test))))
    return tuple(tests)


def profile_settings(profile: Any, max_examples: int | None) -> Any:
    """Returns the ``hypothesis.settings`` of ``profile``, capped at ``max_examples``."""
    from hypothesis import settings

    from auxcheck._properties import strategies as aux

    chosen = aux.resolve_profile(profile)
    return chosen if max_examples is None else settings(chosen, max_examples=max_examples)


def _user_step(output: Any, batch_size: int | None,
               speculative: bool) -> tuple[Any, Any]:
    """Returns one step's batch snapshot and commits for a batch ``output`` was built for."""
    from auxcheck._runtime.batches import infer_batch_sizes
    from auxcheck._runtime.scheduler import SchedulerModel

    size = batch_size or infer_batch_sizes(output)[0].sizes[0]
    model = SchedulerModel(seed=size, speculative=speculative)
    batch = model.batch(size).copy()
    return batch, model.commit(batch)


def _built(impl: Implementation, prop: str, code: str, operands: Sequence[Operand]) -> Any:
    """Returns the appended ``operands``; raises ContractViolation if append raised."""
    try:
        return build_appended(impl, code, operands)
    except PluginCallFailed as raised:
        _raise(prop, impl, [raised.finding])
        raise AssertionError("unreachable") from None


def run_properties(
    impl: Implementation,
    *,
    leaves: Any = None,
    profile: Any = "auxcheck-default",
    max_examples: int | None = None,
    batch_size: int | None = None,
    speculative: bool = False,
) -> Report:
    """Returns a report of every property ``impl`` fails; each finding's detail is the example.

    The arguments are :func:`property_tests`'s.
    """
    report = Report(f"append/composite properties of {impl.name}")
    for prop in property_tests(impl, leaves=leaves, profile=profile, max_examples=max_examples,
                               batch_size=batch_size, speculative=speculative):
        try:
            prop.test()
        except ContractViolation as exc:
            report.extend(_with_example(prop.name, exc))
    return report


def _with_example(name: str, exc: ContractViolation) -> list[Finding]:
    notes = "\n".join(getattr(exc, "__notes__", ()))
    return [replace(f, detail="\n".join(filter(None, [f.detail, f"{name}: {notes}"])))
            for f in exc.report]
