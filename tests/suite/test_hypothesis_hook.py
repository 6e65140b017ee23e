"""Tests for the Hypothesis entry point: lazy type strategies for the contract types."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from auxcheck.protocols import CommittedTokens, DeviceAuxiliaryOutput, HostAuxiliaryOutput
from auxcheck.strategies import RecordingDeviceOutput, RecordingHostOutput

QUICK = settings(max_examples=50, database=None, phases=[Phase.generate])


@pytest.mark.parametrize(
    ("type_", "expected"),
    [(DeviceAuxiliaryOutput, RecordingDeviceOutput), (HostAuxiliaryOutput, RecordingHostOutput),
     (CommittedTokens, CommittedTokens)],
    ids=["device", "host", "commits"],
)
def test_from_type_generates_the_contract_types(type_: Any, expected: type) -> None:
    """st.from_type works for every registered contract type."""
    assert isinstance(find(st.from_type(type_), lambda _: True, settings=QUICK), expected)


@settings(max_examples=30)
@given(st.from_type(CommittedTokens))
def test_from_type_commits_are_well_formed(commit: CommittedTokens) -> None:
    """Registered CommittedTokens never have a negative index or empty tokens."""
    assert commit.output_index >= 0 and commit.token_ids
    assert all(isinstance(token, int) and token >= 0 for token in commit.token_ids)


SCRIPT = textwrap.dedent("""
    import json, sys
    import hypothesis
    from hypothesis import strategies as st
    from auxcheck.protocols import DeviceAuxiliaryOutput
    light = "torch" not in sys.modules and "auxcheck.strategies" not in sys.modules
    strategy = st.from_type(DeviceAuxiliaryOutput)
    still_light = "torch" not in sys.modules
    value = hypothesis.find(strategy, lambda _: True)
    print(json.dumps([light, still_light, type(value).__name__]))
""")


@pytest.mark.slow
def test_a_fresh_interpreter_registers_lazily_and_draws_on_demand(tmp_path: Path) -> None:
    """Importing Hypothesis loads no torch; from_type resolves through the entry point when drawn."""
    # In tmp_path: find() saves what it found in the example database of the working folder.
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                            timeout=120, check=True, cwd=tmp_path)
    light, still_light, name = json.loads(result.stdout.strip().splitlines()[-1])
    assert (light, still_light, name) == (True, True, "RecordingDeviceOutput")
