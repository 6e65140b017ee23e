"""The append → copy → consume lifecycle as a Hypothesis state machine.

Each step of SGLang's scheduler appends the outputs its observers produce, copies
the result to the host once, and consumes an earlier step's host output with the
commits of that step. :func:`make_machine` builds a ``RuleBasedStateMachine`` that
drives any implementation through that lifecycle, checking the invariants of
:mod:`auxcheck._properties.invariants` after every step; a failure raises ContractViolation
whose message starts with the rule code, and Hypothesis shrinks it to a short list
of steps. Every call into the implementation runs under :func:`auxcheck._core.plugin_calls.attempt`
(through :mod:`auxcheck._properties.implementation_calls`), so whatever it raises is a finding of the step's
rule before Hypothesis sees it.
"""

from auxcheck._properties.machine import (
    AppendCopyConsumeMachine,
    LifecycleMachine,
    make_machine,
    run_machine,
)

__all__ = ["AppendCopyConsumeMachine", "LifecycleMachine", "make_machine", "run_machine"]
