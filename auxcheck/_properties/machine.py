"""The append → copy → consume state machine's kernel, and the runner that reports its findings.

:mod:`auxcheck.machine` re-exports the public names; its docstring is the user's
documentation, and this module the implementation behind it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from auxcheck._core.errors import ContractViolation
from auxcheck._core.report import Finding, Report
from auxcheck._properties import strategies as aux
from auxcheck._properties.contract_tests import contract_test
from auxcheck._properties.implementation_calls import (
    call_implementation,
    checked_result,
    findings_of,
    is_a,
)
from auxcheck._properties.implementations import REFERENCE, Implementation
from auxcheck._properties.invariants import (
    consumed_findings,
    copy_findings,
    copy_logged,
    frozen_findings,
    none_findings,
    occurrence_records,
    structure_findings,
)
from auxcheck._runtime.recording import (
    Appended,
    RecordingDeviceOutput,
    build_operand,
    operand_leaves,
)
from auxcheck._runtime.scheduler import FakeBatch


class LifecycleMachine(RuleBasedStateMachine):
    """The lifecycle's state and checks; :func:`make_machine` adds the rules for one implementation.

    ``current`` is the output appended so far this step and ``expected`` the leaves
    it must hold, in order; ``pending`` holds copied host outputs awaiting consume.
    """

    impl: Implementation = REFERENCE

    def __init__(self) -> None:
        super().__init__()
        self.current: Any = None
        self.expected: list[RecordingDeviceOutput] = []
        self.pending: deque[tuple[Any, Any, list[RecordingDeviceOutput], list[Any]]] = deque()
        self.batch = FakeBatch()

    def _fail(self, step: str, findings: list[Finding]) -> None:
        if findings:
            subject = f"{findings[0].code} {type(self).__name__}[{self.impl.name}].{step}"
            raise ContractViolation(Report(subject, findings))

    def _checked(self, step: str, body: Callable[[], list[Finding]]) -> None:
        """Runs ``body``; fails ``step`` with its findings, or with the one a guarded call raised.

        The failure is raised outside the ``except``, so it carries no chained plugin
        exception whose ``__str__`` a reporter would run.
        """
        self._fail(step, findings_of(body))

    def _append(self, operand: Any, leaves: tuple[RecordingDeviceOutput, ...]) -> None:
        def body() -> list[Finding]:
            before = self.current
            result = call_implementation("AUX303", "append(current, output)", self.impl.append,
                                         before, operand)
            self.current = checked_result(self.impl, result, before, operand)
            self.expected.extend(leaves)
            if before is None and operand is not None:
                findings = none_findings(self.impl, operand)
                if findings:
                    return findings
            return structure_findings(self.impl, self.current, self.expected)

        self._checked("append", body)

    def _build(self, operands: tuple[RecordingDeviceOutput, ...]) -> Any:
        """Returns ``operands`` appended one by one to None: one observer's composite output."""
        built: list[Any] = []

        def append(current: Any, output: Any) -> Any:
            result = call_implementation("AUX303", "building a composite by appends",
                                         self.impl.append, current, output)
            return checked_result(self.impl, result, current, output)

        def body() -> list[Finding]:
            built.append(build_operand(append, Appended(operands)))
            return []

        self._checked("append", body)
        return built[0]

    def _copy(self) -> None:
        output, leaves = self.current, self.expected
        self.current, self.expected = None, []
        marks = [leaf.copy_count for leaf in leaves]
        copied: list[Any] = []

        def body() -> list[Finding]:
            host, log = copy_logged(output, "AUX304")
            copied.append(host)
            return copy_findings(leaves, marks, log)

        self._checked("copy_to_host", body)
        hosts = [record.host for record in occurrence_records(leaves, marks)]
        self.pending.append((output, copied[0], list(leaves), hosts))

    def _consume(self, step: tuple[aux.Growth, ...]) -> None:
        output, host, leaves, hosts = self.pending.popleft()
        commit = aux.advance(self.batch, step)
        self._checked("consume", lambda: consumed_findings(host, leaves, hosts, commit.batch,
                                                           commit.commits, output))


def make_machine(
    impl: Implementation,
    *,
    leaves: st.SearchStrategy[Any] | None = None,
) -> type[LifecycleMachine]:
    """Returns a state machine class that drives ``impl`` through append → copy → consume.

    ``leaves`` (a strategy of your own device outputs) is mixed into the outputs the
    observers produce. Run it with :func:`run_machine`, or expose ``Machine.TestCase``
    to pytest / unittest.
    """
    # One tensor per leaf at most: the machine checks the lifecycle, the copy_tensor
    # details are check_copy_once's job, and fewer draws mean more steps per second.
    outputs = aux.device_outputs(leaves=leaves, max_tensors=1)
    groups = st.lists(outputs, min_size=2, max_size=3).map(tuple)
    growth_lists = st.lists(aux.growths(), max_size=4).map(tuple)

    class Machine(LifecycleMachine):
        @initialize(batch=aux.batches())
        def start_batch(self, batch: FakeBatch) -> None:
            self.batch = batch

        @rule(output=st.none() | outputs)
        def append_output(self, output: RecordingDeviceOutput | None) -> None:
            self._append(output, () if output is None else (output,))

        @rule(operands=groups)
        def append_composite(self, operands: tuple[RecordingDeviceOutput, ...]) -> None:
            self._append(self._build(operands), operand_leaves(Appended(operands)))

        @precondition(lambda self: bool(self.expected))
        @rule(pick=st.integers(0, 2**16))
        def append_again(self, pick: int) -> None:
            # An observer may publish one output object twice: SGLang keeps both children.
            own = [leaf for leaf in self.expected if leaf.inner is None]
            if own:
                leaf = own[pick % len(own)]
                self._append(leaf, (leaf,))

        @precondition(lambda self: self.current is not None)
        @rule()
        def copy_to_host(self) -> None:
            self._copy()

        @precondition(lambda self: bool(self.pending))
        @rule(step=growth_lists)
        def consume(self, step: tuple[aux.Growth, ...]) -> None:
            self._consume(step)

        @invariant()
        def composites_are_frozen(self) -> None:
            if is_a(self.current, self.impl.device_composite):
                self._checked("invariant", lambda: frozen_findings(self.current))

    Machine.impl = impl
    Machine.__name__ = Machine.__qualname__ = f"AppendCopyConsumeMachine_{_ident(impl.name)}"
    return Machine


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def run_machine(
    impl: Implementation,
    *,
    leaves: st.SearchStrategy[Any] | None = None,
    profile: Any = "auxcheck-default",
    max_examples: int | None = None,
) -> Report:
    """Returns a report of the machine's failure on ``impl``, if any; the detail holds the steps.

    ``profile`` is an auxcheck profile name, one registered with Hypothesis, or a
    ``hypothesis.settings`` object; all of its settings apply.
    """
    from hypothesis import settings

    chosen = aux.resolve_profile(profile)
    if max_examples is not None:
        chosen = settings(chosen, max_examples=max_examples)
    report = Report(f"append/copy/consume machine on {impl.name}")
    try:
        machine = make_machine(impl, leaves=leaves)
        contract_test("machine", "AUX301",
                      lambda: run_state_machine_as_test(machine, settings=chosen))()
    except ContractViolation as exc:
        steps = "\n".join(getattr(exc, "__notes__", ()))
        report.extend(replace(f, detail="\n".join(filter(None, [f.detail, steps])))
                      for f in exc.report)
    return report


AppendCopyConsumeMachine = make_machine(REFERENCE)
"""The machine bound to auxcheck's reference implementation."""
AppendCopyConsumeMachine.__name__ = AppendCopyConsumeMachine.__qualname__ = (
    "AppendCopyConsumeMachine"
)
