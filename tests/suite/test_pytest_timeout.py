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

import auxcheck._suite.item_runs  # noqa: F401

pytest_plugins = ["pytester"]

TIMEOUT = 4
"""pytest-timeout's limit per item, in seconds: each hang costs it once, and every item that
does not hang finishes far inside it even on a busy machine (1 s once timed out a healthy
item there)."""

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


@pytest.mark.slow
def test_a_hanging_copy_to_host_is_ended_by_pytest_timeout_not_reported_as_a_finding(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest(HANGING)
    result = pytester.runpytest_inprocess(
        "--auxcheck", "--auxcheck-profile=tiny", "-p", "no:randomly", "-p", "timeout",
        "--timeout", str(TIMEOUT), "--timeout-method=signal", "-k", "AUX104-single-copy")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*Timeout (>{TIMEOUT:.1f}s) from pytest-timeout*"])
    assert "raised Failed" not in result.stdout.str()


HANGS = textwrap.dedent("""
    import time

    import torch
    from hypothesis import strategies as st

    def hang(*args, **kwargs):
        while True:
            time.sleep(0.01)

    class Host:
        def consume(self, batch, commits):
            return None

    class Good:
        def __init__(self, *args):
            self.rows = torch.zeros(3, 2)
        def copy_to_host(self, copy_tensor):
            return Host()

    class HangsCopying(Good):
        copy_to_host = hang

    class HangingHost(Host):
        consume = hang

    class HangsConsuming(Good):
        def copy_to_host(self, copy_tensor):
            return HangingHost()

    class Observer:
        def is_active(self, info):
            return True
        def before_grammar(self, logits, info):
            return 1
        after_sample = hang
""")

HANGING_FIXTURES = {
    "copying": "@pytest.fixture\ndef auxcheck_device_output():\n    return hangs.HangsCopying()\n",
    "consuming": ("@pytest.fixture\ndef auxcheck_device_output():\n"
                "    return hangs.HangsConsuming\n"),
    "observer": ("@pytest.fixture\ndef auxcheck_sampling_observer():\n"
                 "    return hangs.Observer()\n"),
    "draw": ("@pytest.fixture\ndef auxcheck_device_output():\n"
             "    return st.builds(hangs.hang)\n"),
    "value": ("@pytest.fixture\ndef auxcheck_device_output():\n"
              "    return st.builds(hangs.HangsCopying)\n"),
}

STOPPED = {
    "copying::auxcheck::auxcheck_device_output::AUX103-copy-to-host-result",
    "consuming::auxcheck::auxcheck_device_output::AUX202-consume-valid-commits",
    "observer::auxcheck::auxcheck_sampling_observer::AUX102-observer-hooks",
    "draw::auxcheck::auxcheck_device_output::AUX103-copy-to-host-result",
    "value::auxcheck::auxcheck_device_output::AUX103-copy-to-host-result",
}
"""One failing item per hanging call: the item of the rule of the call that hung."""


@pytest.mark.slow
def test_each_hang_fails_one_item_once_and_the_rest_of_its_group_is_skipped(
        pytester: pytest.Pytester) -> None:
    """A hang in copy_to_host, consume, an observer hook, a strategy's draw or a drawn value's
    copy costs one timeout: the item of that call's rule fails with pytest-timeout's message,
    every other item of the group is skipped naming it (never hung again), and Hypothesis
    never shrinks (replays) the hanging example."""
    pytester.makepyfile(hangs=HANGS)
    pytester.syspathinsert()
    pytester.makeconftest(textwrap.dedent("""
        from hypothesis import Phase, settings
        settings.register_profile("tiny", max_examples=3, deadline=None, database=None,
                                  phases=[Phase.explicit, Phase.generate, Phase.shrink])
    """))
    for folder, body in HANGING_FIXTURES.items():
        pytester.mkpydir(folder)
        (pytester.path / folder / "conftest.py").write_text(
            "import pytest\nfrom hypothesis import strategies as st\nimport hangs\n" + body)
    result = pytester.runpytest_inprocess(
        "--auxcheck", "--auxcheck-profile=tiny", "-p", "no:randomly", "-p", "timeout",
        "--timeout", str(TIMEOUT), "--timeout-method=signal", "-rfs",
        "-k", "not impl and not imports")
    failed = {line.split()[1] for line in result.outlines if line.startswith("FAILED ")}
    assert failed == STOPPED
    result.stdout.fnmatch_lines_random([
        ("  seen:     `copy_to_host` of hangs.HangsCopying did not finish: pytest stopped it "
        f"(Timeout (>{TIMEOUT:.1f}s) from pytest-timeout.)"),
        "  seen:     `consume` of hangs.HangingHost did not finish: pytest stopped it (Timeout*",
        "  seen:     `after_sample` of hangs.Observer did not finish: pytest stopped it (Timeout*",
        "  seen:     drawing a device output from the fixture's strategy did not finish: *",
        ("*AUX104: not judged, item AUX103-copy-to-host-result fails (AUX103 `copy_to_host` of "
        f"hangs.HangsCopying did not finish: pytest stopped it (Timeout (>{TIMEOUT:.1f}s)*"),
    ])
    assert "Traceback" not in result.stdout.str() and "raised Failed" not in result.stdout.str()
