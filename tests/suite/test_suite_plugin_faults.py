"""Hostile implementations, leaves and fixture values: the properties, the machine and
``pytest --auxcheck`` report findings of the right rule, never a crash or a stray traceback."""

from __future__ import annotations

import itertools
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

# torch cannot be imported twice in one process: import what pytester runs use up front.
import pytest
import torch
from helpers.doubles import ClassRaises, raises
from hypothesis import Phase, settings
from hypothesis import strategies as st

import auxcheck._suite.item_runs
import auxcheck.machine  # noqa: F401
from auxcheck._core import protocols
from auxcheck.errors import ContractViolation, InvalidArgument
from auxcheck.machine import run_machine
from auxcheck.properties import (
    REFERENCE,
    Implementation,
    check_broadcast,
    check_copy_once,
    check_flattening,
    check_frozen,
    check_order,
    load_implementation,
    property_tests,
    run_properties,
)
from auxcheck.strategies import RecordingDeviceOutput

pytest_plugins = ["pytester"]

Dev = protocols.CompositeDeviceAuxiliaryOutput
HostC = protocols.CompositeHostAuxiliaryOutput


def leaves(n: int = 3) -> list[RecordingDeviceOutput]:
    return [RecordingDeviceOutput(label, [torch.arange(2)]) for label in "abc"[:n]]


def joining(make: Callable[[Any, Any], Any], dev: type = Dev, host: type = HostC) -> Implementation:
    """Returns an implementation whose append is ``make(current, output)`` once both are set."""
    def append(current: Any, output: Any) -> Any:
        if current is None or output is None:
            return output if current is None else current
        return make(current, output)
    return Implementation("hostile", append, dev, host)


def flat(current: Any, output: Any) -> tuple[Any, ...]:
    return protocols._children(current) + protocols._children(output)


class CopyExits(Dev):
    def copy_to_host(self, copy_tensor: Any) -> Any:
        raise GeneratorExit


class OutputsExit:
    def __init__(self, outputs: Any = ()) -> None:
        pass

    @property
    def outputs(self) -> Any:
        raise SystemExit(6)


class EndlessOutputs(OutputsExit):
    @property
    def outputs(self) -> Any:
        return itertools.count()


class SetattrExits:
    __slots__ = ("outputs",)

    def __init__(self, outputs: Any) -> None:
        object.__setattr__(self, "outputs", tuple(outputs))

    def __setattr__(self, name: str, value: Any) -> None:
        raise SystemExit(7)

    def copy_to_host(self, copy_tensor: Any) -> Any:
        return HostC(tuple(o.copy_to_host(copy_tensor) for o in self.outputs))


class Unreadable:
    def __getattribute__(self, name: str) -> Any:
        raise SystemExit(name)


class CopyToUnreadable(Dev):
    def copy_to_host(self, copy_tensor: Any) -> Any:
        for output in self.outputs:
            output.copy_to_host(copy_tensor)
        return Unreadable()


def holding_itself(current: Any, output: Any) -> Any:
    composite = Dev(())
    object.__setattr__(composite, "outputs", (composite,))
    return composite


IMPLEMENTATIONS = [
    pytest.param(joining(raises(SystemExit(3))), check_flattening, "AUX301",
                 "append_auxiliary_output(current, output) raised SystemExit",
                 id="append-raises-SystemExit"),
    pytest.param(joining(raises(BaseException("bare"))), check_copy_once, "AUX304",
                 "raised BaseException", id="append-raises-BaseException"),
    pytest.param(joining(lambda c, o: ClassRaises()), check_flattening, "AUX301",
                 "returned a ClassRaises, not a device output",
                 id="append-returns-a-raising-__class__"),
    pytest.param(joining(lambda c, o: CopyExits(flat(c, o)), dev=CopyExits), check_copy_once,
                 "AUX304", "copy_to_host(copy_tensor) raised GeneratorExit",
                 id="composite-copy-raises-GeneratorExit"),
    pytest.param(joining(lambda c, o: OutputsExit(), dev=OutputsExit), check_flattening,
                 "AUX301", "reading the children (`outputs`) of the composite OutputsExit "
                 "raised SystemExit", id="children-property-raises-SystemExit"),
    pytest.param(joining(lambda c, o: EndlessOutputs(), dev=EndlessOutputs), check_flattening,
                 "AUX301", "`outputs` yields more than 10000 children",
                 id="children-never-end"),
    pytest.param(joining(lambda c, o: SetattrExits(flat(c, o)), dev=SetattrExits),
                 check_frozen, "AUX306", "setting SetattrExits.outputs raised SystemExit",
                 id="frozen-check-setattr-raises-SystemExit"),
    pytest.param(joining(lambda c, o: CopyToUnreadable(flat(c, o)), dev=CopyToUnreadable),
                 lambda impl, ops: check_broadcast(impl, ops, object(), []), "AUX305",
                 "looking up `consume` on", id="host-composite-lookup-raises-SystemExit"),
    pytest.param(joining(holding_itself), check_order, "AUX301",
                 "holds itself among its descendants", id="composite-inside-itself"),
]


@pytest.mark.parametrize(("impl", "check", "code", "seen"), IMPLEMENTATIONS)
def test_a_hostile_implementation_gets_a_finding_of_the_broken_rule(
    impl: Implementation, check: Callable[..., None], code: str, seen: str
) -> None:
    """Whatever the implementation raises or returns, the check raises ContractViolation."""
    with pytest.raises(ContractViolation) as info:
        check(impl, leaves())
    finding = info.value.report.findings[0]
    assert (finding.code, seen in finding.message) == (code, True), finding.message


@pytest.mark.parametrize("exc", [
    pytest.param(SystemExit(3), id="SystemExit"),
    pytest.param(GeneratorExit(), id="GeneratorExit"),
    pytest.param(BaseException("bare"), id="bare-BaseException"),
])
def test_a_base_exception_in_the_hypothesis_body_is_a_finding_before_hypothesis_sees_it(
    exc: BaseException
) -> None:
    """Hypothesis re-raises SystemExit as itself and stops at BaseException: it never sees one."""
    impl = joining(raises(exc))
    tests = {t.name: t for t in property_tests(impl, max_examples=3)}
    with pytest.raises(ContractViolation) as info:
        tests["check_flattening"].test()
    assert info.value.report.codes == ["AUX301"]
    assert run_machine(impl, max_examples=3).codes == ["AUX303"]


class Leaf:
    def __init__(self) -> None:
        self.rows = torch.zeros(3, 2)

    def copy_to_host(self, copy_tensor: Any) -> Any:
        copy_tensor(self.rows)
        return self

    def consume(self, batch: Any, commits: Any) -> None:
        return None


def leaf(**members: Any) -> type:
    return type("HostileLeaf", (Leaf,), members)


@pytest.mark.parametrize(("strategy", "code"), [
    pytest.param(st.builds(leaf(__init__=raises(SystemExit(2)))), "AUX103",
                 id="constructor-raises-SystemExit"),
    pytest.param(st.just(1).map(raises(BaseException("map"))), "AUX103",
                 id="map-raises-BaseException"),
    pytest.param(st.builds(leaf(__getattribute__=raises(SystemExit(3)))), "AUX101",
                 id="every-attribute-raises-SystemExit"),
    pytest.param(st.builds(leaf(consume=None)), "AUX201", id="consume-is-not-callable"),
])
def test_a_hostile_user_leaf_is_blamed_with_its_own_code(strategy: Any, code: str) -> None:
    """A user's leaves that cannot be drawn or copied give their own code, in every property."""
    fixed = settings(max_examples=10, derandomize=True, database=None, deadline=None,
                     phases=[Phase.explicit, Phase.generate])
    assert set(run_properties(REFERENCE, leaves=strategy, profile=fixed).codes) == {code}


@pytest.mark.parametrize(("source", "message"), [
    pytest.param("raise SystemExit(4)\n", "importing hostile_mod raised SystemExit (4); fix the "
                 "module", id="import-raises-SystemExit"),
    pytest.param("def __getattr__(name):\n    raise SystemExit(5)\n",
                 "looking up append_auxiliary_output raised SystemExit", id="getattr-exits"),
    pytest.param("from auxcheck.protocols import *\nCompositeDeviceAuxiliaryOutput = len\n",
                 "its device_composite is a value of type builtin_function_or_method, not a "
                 "class", id="composite-is-not-a-class"),
])
def test_an_implementation_module_that_cannot_be_used_is_an_invalid_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, message: str
) -> None:
    """--auxcheck-impl=module: a module that exits, or a composite that is no class, is a usage error."""
    (tmp_path / "hostile_mod.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hostile_mod", raising=False)
    with pytest.raises(InvalidArgument) as info:
        load_implementation("hostile_mod")
    assert message in str(info.value)


# ---------------------------------------------------------------- pytest --auxcheck

HOSTILE = textwrap.dedent("""
    import torch
    from hypothesis import strategies as st

    def raises(exc):
        def hostile(*args, **kwargs):
            raise exc
        return hostile

    class Host:
        def consume(self, batch, commits):
            return None

    class Good:
        def __init__(self, *args):
            self.rows = torch.zeros(3, 2)
        def copy_to_host(self, copy_tensor):
            copy_tensor(self.rows)
            return Host()

    def output(**members):
        return type("Hostile", (Good,), members)

    class Unreadable:
        __getattribute__ = raises(SystemExit(5))

    class ExitingHost:
        consume = raises(GeneratorExit())

    class Observer:
        is_active = raises(SystemExit(7))

    class Forward:
        def after_forward(self, batch, forward_batch, logits, *, can_run_graph):
            return Unreadable()

    class PPObserver:
        from_pp_tensors = raises(SystemExit(8))

    class PP(Good):
        def to_pp_tensors(self):
            return {"rows": self.rows}

    class Buffers(list):
        __iter__ = raises(SystemExit(9))

    DEVICE = {
        "copy-exits": output(copy_to_host=raises(SystemExit(3))),
        "copy-bare": output(copy_to_host=raises(BaseException("bare"))),
        "consume-generator-exit": output(copy_to_host=lambda self, copy: ExitingHost()),
        "class-raises": output(__class__=property(raises(SystemExit(4)))),
        "repr-exits": output(__repr__=raises(SystemExit(6))),
        "unreadable": Unreadable,
    }
    STRATEGIES = {
        "builds-exits": st.builds(output(__init__=raises(SystemExit(2)))),
        "map-bare": st.just(1).map(raises(BaseException("map"))),
    }
""")

CONFTESTS = {
    "device": """
        @pytest.fixture(params=sorted(hostile.DEVICE) + ["factory-bare"])
        def auxcheck_device_output(request):
            if request.param == "factory-bare":
                return hostile.raises(BaseException("factory"))
            return hostile.DEVICE[request.param]()
    """,
    "strategy": """
        @pytest.fixture(params=sorted(hostile.STRATEGIES))
        def auxcheck_device_output(request):
            return hostile.STRATEGIES[request.param]
    """,
    "sampling": """
        @pytest.fixture
        def auxcheck_sampling_observer():
            return hostile.Observer()
    """,
    "forward": """
        @pytest.fixture
        def auxcheck_forward_observer():
            return hostile.Forward()
    """,
    "pp": """
        @pytest.fixture
        def auxcheck_device_output():
            return hostile.PP()
        @pytest.fixture
        def auxcheck_pp_observer():
            return hostile.PPObserver()
    """,
    "static": """
        @pytest.fixture
        def auxcheck_device_output():
            return hostile.Good()
        @pytest.fixture
        def auxcheck_static_buffers():
            return hostile.Buffers([1])
    """,
}

FAILS = {
    "device::auxcheck::auxcheck_device_output::AUX101-copy-to-host-callable[unreadable]",
    "device::auxcheck::auxcheck_device_output::AUX103-copy-to-host-result[copy-bare]",
    "device::auxcheck::auxcheck_device_output::AUX103-copy-to-host-result[copy-exits]",
    "device::auxcheck::auxcheck_device_output::AUX103-copy-to-host-result[factory-bare]",
    ("device::auxcheck::auxcheck_device_output::AUX202-consume-valid-commits"
     "[consume-generator-exit]"),
    "forward::auxcheck::auxcheck_forward_observer::AUX101-published-output",
    "sampling::auxcheck::auxcheck_sampling_observer::AUX102-observer-hooks",
    "pp::auxcheck::auxcheck_device_output::AUX403-pp-round-trip",
    "static::auxcheck::auxcheck_device_output::AUX110-static-buffer-alias",
    "strategy::auxcheck::auxcheck_device_output::AUX103-copy-to-host-result[builds-exits]",
    "strategy::auxcheck::auxcheck_device_output::AUX103-copy-to-host-result[map-bare]",
}
"""Every item that fails: one per hostile value, the item of the rule it breaks."""

PROFILE = textwrap.dedent("""
    from hypothesis import Phase, settings
    settings.register_profile("tiny", max_examples=3, deadline=None, database=None,
                              phases=[Phase.explicit, Phase.generate])
""")


def failed_ids(result: pytest.RunResult) -> set[str]:
    return {line.split()[1] for line in result.outlines if line.startswith("FAILED ")}


@pytest.mark.slow
def test_hostile_fixture_values_fail_only_the_item_of_their_rule(
    pytester: pytest.Pytester
) -> None:
    """Each hostile value fails its rule's item with the finding; no INTERNALERROR, no crash."""
    pytester.makepyfile(hostile=HOSTILE)
    pytester.syspathinsert()
    pytester.makeconftest(PROFILE)
    for folder, body in CONFTESTS.items():
        pytester.mkpydir(folder)
        text = "import pytest\nimport hostile\n" + textwrap.dedent(body)
        (pytester.path / folder / "conftest.py").write_text(text)
    result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-profile=tiny",
                                          "-p", "no:randomly", "-rf", "--tb=short",
                                          "-k", "not impl and not imports")
    assert failed_ids(result) == FAILS
    text = result.stdout.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text
    for item in FAILS:
        code = item.rpartition("::")[2][:6]
        assert f"{code} " in result.stdout.str().split(item.rpartition("::")[2])[1][:400]


HOSTILE_IMPL = textwrap.dedent("""
    from dataclasses import dataclass
    from auxcheck.protocols import CompositeHostAuxiliaryOutput

    @dataclass
    class CompositeDeviceAuxiliaryOutput:
        outputs: tuple
        def copy_to_host(self, copy_tensor):
            raise SystemExit(5)
        def __setattr__(self, name, value):
            raise GeneratorExit()
        @property
        def __class__(self):
            raise BaseException("class")

    def append_auxiliary_output(current, output):
        if current is None and output is None:
            raise SystemExit(3)
        if current is None or output is None:
            return output if current is None else current
        return CompositeDeviceAuxiliaryOutput((current, output))
""")


def test_a_hostile_impl_module_fails_every_impl_item_with_a_finding(
    pytester: pytest.Pytester
) -> None:
    """--auxcheck-impl=module whose every part raises BaseExceptions: eight failing items."""
    pytester.makepyfile(hostile_impl=HOSTILE_IMPL)
    pytester.syspathinsert()
    pytester.makeconftest(PROFILE)
    result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-profile=tiny",
                                          "-p", "no:randomly", "--tb=short",
                                          "--auxcheck-impl=hostile_impl", "-k", "impl")
    result.assert_outcomes(failed=8)
    text = result.stdout.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text
    result.stdout.fnmatch_lines(["AUX303 append mishandled None",
                                 ("  seen:     append_auxiliary_output(current, output) raised "
                                  "SystemExit*")])


def test_an_impl_module_that_exits_on_import_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """A module raising SystemExit at import is named in a usage error, never a silent exit."""
    pytester.makepyfile(exits_on_import="raise SystemExit(0)\n")
    pytester.syspathinsert()
    result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-impl=exits_on_import")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*importing exits_on_import raised SystemExit (0); fix*"])


# ---------------------------------------------------------------- issue 15, held-out values

VALUES = textwrap.dedent("""
    import os

    import torch
    from hypothesis import assume
    from hypothesis import strategies as st

    MARK = os.path.join(os.path.dirname(__file__), "repr-ran")

    class Host:
        def __init__(self, *copies):
            self.copies = copies
        def consume(self, batch, commits):
            return None

    class Good:
        def __init__(self, *args):
            self.rows = torch.zeros(3, 2)
        def copy_to_host(self, copy_tensor):
            return Host(copy_tensor(self.rows))

    class DoubleCopy(Good):
        def copy_to_host(self, copy_tensor):
            copy_tensor(self.rows)
            return Host(copy_tensor(self.rows))

    class LoudDoubleCopy(DoubleCopy):
        def __repr__(self):
            open(MARK, "w").close()
            raise SystemExit("repr")
        __str__ = __repr__

    class Leaker(Good):
        def copy_to_host(self, copy_tensor):
            torch.device("meta").__enter__()  # a `with torch.device(...)` never left
            return Host(copy_tensor(self.rows))

    class Silent:
        def is_active(self, info):
            return False
        def before_grammar(self, logits, info):
            return None
        def after_sample(self, state, token_ids):
            return Good()

    class Observer(Silent):
        def is_active(self, info):
            return True
        def before_grammar(self, logits, info):
            return logits.shape[0]

    class Key:
        def __str__(self):
            raise SystemExit("str")
        __repr__ = __str__

    SHARED = torch.zeros(3, 2)

    class Reuses(Good):
        def __init__(self):
            SHARED.add_(1)  # one buffer, rewritten by every step: AUX112
            self.rows = SHARED

    def raises(exc):
        def hostile(*args, **kwargs):
            raise exc
        return hostile
""")

HELD_OUT = {
    "batchsize": """
        @pytest.fixture
        def auxcheck_device_output():
            return values.LoudDoubleCopy()
        @pytest.fixture
        def auxcheck_batch_size():
            return 0
    """,
    "ids": """
        @pytest.fixture(params=[values.Good, values.DoubleCopy], ids=["v", "v"])
        def auxcheck_device_output(request):
            return request.param()
    """,
    "nothing": """
        @pytest.fixture(params=["nothing", "filtered", "assumed", "invalid"])
        def auxcheck_device_output(request):
            return {"nothing": st.nothing(),
                    "filtered": st.builds(values.DoubleCopy).filter(lambda o: False),
                    "assumed": st.builds(values.DoubleCopy).map(lambda o: assume(False) or o),
                    "invalid": st.integers(5, 1).map(values.DoubleCopy)}[request.param]
    """,
    "none": """
        @pytest.fixture(params=["instance", "factory", "batch", "strategy"])
        def auxcheck_device_output(request):
            return {"instance": None, "factory": lambda: None, "batch": lambda batch: None,
                    "strategy": st.none()}[request.param]
    """,
    "repr": """
        @pytest.fixture(params=["just", "builds"])
        def auxcheck_device_output(request):
            if request.param == "just":
                return st.just(values.LoudDoubleCopy())
            return st.builds(values.LoudDoubleCopy)
    """,
    "buffers": """
        @pytest.fixture
        def auxcheck_sampling_observer():
            return values.Observer()
        @pytest.fixture
        def auxcheck_static_buffers():
            return {values.Key(): torch.zeros(2)}
    """,
    "fixtures": """
        @pytest.fixture
        def auxcheck_device_output():
            return values.Good()
        @pytest.fixture
        def auxcheck_pp_observer():
            raise SystemExit("pp fixture")
    """,
    "silent": """
        @pytest.fixture
        def auxcheck_sampling_observer():
            return values.Silent()
    """,
    "leak": """
        @pytest.fixture(params=["a-leaker", "b-victim"])
        def auxcheck_device_output(request):
            return values.Leaker() if request.param == "a-leaker" else values.DoubleCopy()
    """,
    "meta": """
        @pytest.fixture
        def auxcheck_device_output():
            torch.set_default_device("meta")  # the plugin's test set-up does this globally
            yield values.Reuses
            torch.set_default_device(None)
    """,
}

HELD_OUT_FAILS = {
    "batchsize::auxcheck::auxcheck_device_output::AUX101-copy-to-host-callable",
    "buffers::auxcheck::auxcheck_sampling_observer::AUX110-static-buffer-alias",
    "fixtures::auxcheck::auxcheck_device_output::AUX403-pp-round-trip",
    "ids::auxcheck::auxcheck_device_output::AUX104-single-copy[v1]",
    "leak::auxcheck::auxcheck_device_output::AUX104-single-copy[b-victim]",
    "meta::auxcheck::auxcheck_device_output::AUX112-values-at-copy",
    "none::auxcheck::auxcheck_device_output::AUX101-copy-to-host-callable[batch]",
    "none::auxcheck::auxcheck_device_output::AUX101-copy-to-host-callable[factory]",
    "none::auxcheck::auxcheck_device_output::AUX101-copy-to-host-callable[instance]",
    "none::auxcheck::auxcheck_device_output::AUX101-copy-to-host-callable[strategy]",
    "nothing::auxcheck::auxcheck_device_output::AUX101-copy-to-host-callable[assumed]",
    "nothing::auxcheck::auxcheck_device_output::AUX101-copy-to-host-callable[filtered]",
    "nothing::auxcheck::auxcheck_device_output::AUX101-copy-to-host-callable[nothing]",
    "nothing::auxcheck::auxcheck_device_output::AUX103-copy-to-host-result[invalid]",
    "repr::auxcheck::auxcheck_device_output::AUX104-single-copy[builds]",
    "repr::auxcheck::auxcheck_device_output::AUX104-single-copy[just]",
}
"""The one failing item of each held-out value: the item of the rule it breaks."""


HELD_OUT_SKIPS = [
    ("*AUX102: not judged, item AUX101-copy-to-host-callable fails: the fixture "
     "auxcheck_batch_size returned 0; expected a whole number from 1 to 4096*"),
    ("*AUX104: not judged, item AUX101-copy-to-host-callable[[]nothing[]] fails (AUX101 the "
    "fixture's strategy yielded no device output*"),
    ("*AUX104: not judged, item AUX103-copy-to-host-result[[]invalid[]] fails (AUX103 drawing a "
    "device output from the strategy raised InvalidArgument)*"),
    "*AUX103: not judged, the observer published no device output in any of the steps*",
]


@pytest.mark.slow
def test_held_out_hostile_values_end_as_one_finding_each(pytester: pytest.Pytester) -> None:
    """Each value the red team held out fails only its rule's item, readably, and the rest skip.

    A bad batch size, equal ids, a strategy that draws nothing or None or cannot be drawn,
    a repr that exits, unreadable static buffers, an optional fixture that raises, an
    observer that never publishes, a torch mode leaked into the next value, a default
    device set by a fixture: no traceback, no INTERNALERROR, no repr run, no vacuous pass.
    """
    pytester.makepyfile(values=VALUES)
    pytester.syspathinsert()
    pytester.makeconftest(PROFILE)
    for folder, body in HELD_OUT.items():
        pytester.mkpydir(folder)
        text = "import pytest\nimport torch\nfrom hypothesis import assume, strategies as st\n"
        (pytester.path / folder / "conftest.py").write_text(
            text + "import values\n" + textwrap.dedent(body))
    result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-profile=tiny",
                                          "-p", "no:randomly", "-rfs",
                                          "-k", "not impl and not imports")
    assert failed_ids(result) == HELD_OUT_FAILS
    text = result.stdout.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text
    assert not (pytester.path / "repr-ran").exists()
    result.stdout.fnmatch_lines_random(HELD_OUT_SKIPS)
    assert torch.get_default_device() == torch.device("cpu")


def returns_current(current: Any, output: Any) -> Any:
    """An append that keeps what it had: append(None, x) is None, x is lost."""
    return current


@pytest.mark.slow
def test_an_append_losing_the_output_appended_to_none_is_aux303_everywhere() -> None:
    """append(None, x) returning None breaks None's identity: AUX303, in the properties and the
    machine alike (never a miscounted composite, AUX301, found later)."""
    impl = Implementation("keeps-current", returns_current, Dev, HostC)
    fixed = settings(max_examples=10, derandomize=True, database=None, deadline=None)
    tests = {t.name: t for t in property_tests(impl, profile=fixed)}
    with pytest.raises(ContractViolation) as info:
        tests["check_none_identity"].test()
    assert info.value.report.codes == ["AUX303"]
    assert "append_auxiliary_output(None, " in info.value.report.findings[0].message
    assert run_machine(impl, profile=fixed).codes == ["AUX303"]


def test_a_property_failing_only_on_another_rule_is_skipped_naming_that_item(
        pytester: pytest.Pytester) -> None:
    """An append returning 42 breaks every property's build with AUX301: the AUX301 item fails,
    the properties of other rules are skipped naming it (one finding per cause)."""
    pytester.makepyfile(answer_impl="""
        from auxcheck.protocols import (CompositeDeviceAuxiliaryOutput,
                                        CompositeHostAuxiliaryOutput)
        def append_auxiliary_output(current, output):
            if current is None or output is None:
                return output if current is None else current
            return 42
    """)
    pytester.syspathinsert()
    pytester.makeconftest(PROFILE)
    result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-profile=tiny", "-p",
                                          "no:randomly", "--auxcheck-impl=answer_impl", "-rfs",
                                          "-k", "impl and not machine")
    assert failed_ids(result) == {"auxcheck::impl::AUX301-flattening[answer_impl]",
                                  "auxcheck::impl::AUX301-associativity[answer_impl]"}
    result.stdout.fnmatch_lines([("*AUX302: not judged, item AUX301-flattening[[]answer_impl[]] "
                                 "fails first (AUX301 append_auxiliary_output(*) returned a int, "
                                 "not a device output)*")])


def test_an_instance_that_frees_its_buffer_once_copied_is_not_blamed_for_the_recopy(
        pytester: pytest.Pytester) -> None:
    """SGLang copies an output once: an instance failing its second copy passes its own items,
    and the composite items say the instance was copied again, pointing to a factory."""
    pytester.makepyfile(values=VALUES)
    pytester.syspathinsert()
    pytester.makeconftest(PROFILE + textwrap.dedent("""
        import pytest
        import values

        class SingleUse(values.Good):
            def copy_to_host(self, copy_tensor):
                rows, self.rows = self.rows, None
                return values.Host(copy_tensor(rows))

        @pytest.fixture
        def auxcheck_device_output():
            return SingleUse()
    """))
    result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-profile=tiny", "-p",
                                          "no:randomly", "-rs", "-k", "AUX1 or AUX2 or AUX304")
    result.assert_outcomes(passed=13, skipped=1)
    result.stdout.fnmatch_lines([("*AUX304: not judged, your instance failed when copied again "
                                 "inside a composite (AUX103 *); it passes its own items*Return "
                                 "a factory from the fixture*")])
