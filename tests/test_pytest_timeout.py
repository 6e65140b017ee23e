"""``pytest --auxcheck`` leaves pytest-timeout in charge of a plugin that hangs.

pytest-timeout's signal method raises its ``Failed`` from inside the plugin's code; the
guard that turns everything else a plugin raises into a finding must let it through, or a
hanging ``copy_to_host`` would be reported as an AUX103 "raised Failed" (or, with the
thread method, never end).
"""

from __future__ import annotations

import textwrap

import pytest
import torch  # noqa: F401  (in-process pytester runs cannot import torch a second time)

import auxcheck._suite  # noqa: F401

pytest_plugins = ["pytester"]

HANGING = textwrap.dedent("""
    import time

    import pytest
    import torch
    from hypothesis import settings

    settings.register_profile("tiny", max_examples=3, deadline=None, database=None)

    class Host:
        def consume(self, batch, commits):
            return None

    class Hangs:
        def __init__(self):
            self.rows = torch.zeros(2, 2)

        def copy_to_host(self, copy_tensor):
            while True:
                time.sleep(0.01)

    @pytest.fixture
    def auxcheck_device_output():
        return Hangs()
""")


def test_a_hanging_copy_to_host_is_ended_by_pytest_timeout_not_reported_as_a_finding(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest(HANGING)
    result = pytester.runpytest_inprocess(
        "--auxcheck", "--auxcheck-profile=tiny", "-p", "no:randomly", "-p", "timeout",
        "--timeout=1", "--timeout-method=signal", "-k", "AUX104-single-copy")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Timeout (>1.0s) from pytest-timeout*"])
    assert "raised Failed" not in result.stdout.str()
