"""Tests for auxcheck.machine: the append → copy → consume state machine."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from auxcheck import protocols
from auxcheck.machine import AppendCopyConsumeMachine, make_machine, run_machine
from auxcheck.properties import REFERENCE, Implementation
from auxcheck.strategies import settings_for

AppendCopyConsumeMachine.TestCase.settings = settings_for("auxcheck-default")
TestAppendCopyConsumeMachine = AppendCopyConsumeMachine.TestCase


def test_the_default_machine_is_bound_to_the_reference() -> None:
    """AppendCopyConsumeMachine drives auxcheck's reference implementation."""
    assert AppendCopyConsumeMachine.impl is REFERENCE
    assert AppendCopyConsumeMachine.__name__ == "AppendCopyConsumeMachine"


def test_make_machine_names_the_class_after_the_implementation() -> None:
    """Each machine class says which implementation it drives, for readable step lists."""
    machine = make_machine(Implementation("my.fork", protocols.append_auxiliary_output,
                                          protocols.CompositeDeviceAuxiliaryOutput,
                                          protocols.CompositeHostAuxiliaryOutput))
    assert machine.__name__ == "AppendCopyConsumeMachine_my_fork"


def test_run_machine_passes_the_reference() -> None:
    """The reference survives the lifecycle under the default profile."""
    report = run_machine(REFERENCE, max_examples=20)
    assert report.ok, report.to_text()


def test_user_leaves_are_consumed_through_the_machine() -> None:
    """leaves= mixes a user's outputs in, and their consume runs with real commits."""
    seen: list[Any] = []

    class Output:
        def copy_to_host(self, copy_tensor: Any) -> Any:
            return self

        def consume(self, batch: Any, commits: Any) -> None:
            assert len(commits) == len(batch.reqs)
            seen.append(commits)

    # Derandomized: about one random run in a hundred draws no user leaf in 20 examples.
    report = run_machine(REFERENCE, leaves=st.builds(Output), profile="auxcheck-ci",
                         max_examples=20)
    assert report.ok, report.to_text()
    assert seen
