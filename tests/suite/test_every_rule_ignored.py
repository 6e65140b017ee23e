"""``pytest --auxcheck`` when the user's settings ignore every rule a fixture's items check.

The fixture is there, so "no conftest defines it" would send the user looking for a typo:
the error names the fixture and each setting that ignores its rules.
"""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

EVERY_FAMILY = ["AUX1", "AUX2", "AUX3", "AUX4", "AUX5", "AUX6", "AUX7"]

CONFTEST = textwrap.dedent("""
    import pytest

    class Host:
        def consume(self, batch, commits):
            return None

    class Output:
        def copy_to_host(self, copy_tensor):
            return Host()

    class Observer:
        def is_active(self, sampling_info):
            return True

        def before_grammar(self, logits, sampling_info):
            return None

        def after_sample(self, state, token_ids):
            return None

    @pytest.fixture
    def {fixture}():
        return {value}
""")


def _write(pytester: pytest.Pytester, fixture: str, files: dict[str, str]) -> None:
    value = "Output()" if fixture == "auxcheck_device_output" else "Observer()"
    pytester.makeconftest(CONFTEST.format(fixture=fixture, value=value))
    for name, text in files.items():
        pytester.path.joinpath(name).write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.mark.parametrize(("files", "args", "by"), [
    pytest.param({"pyproject.toml": f"[tool.auxcheck]\nignore = {EVERY_FAMILY}\n".replace(
        "'", '"')}, [], "[tool.auxcheck] ignore in {root}/pyproject.toml. Remove from it",
        id="tool-auxcheck-in-pyproject"),
    pytest.param({"pytest.ini": f"[pytest]\nauxcheck_ignore = {' '.join(EVERY_FAMILY)}\n"}, [],
                 "auxcheck_ignore in {root}/pytest.ini. Remove from it", id="pytest-ini"),
    pytest.param({"pyproject.toml": "[tool.pytest.ini_options]\nauxcheck_ignore = "
                                    f"{EVERY_FAMILY}\n".replace("'", '"')}, [],
                 "auxcheck_ignore in [tool.pytest.ini_options] {root}/pyproject.toml. Remove "
                 "from it", id="pytest-ini-options-in-pyproject"),
    pytest.param({"pytest.ini": "[pytest]\nauxcheck_ignore = AUX1 AUX2\n"},
                 ["--auxcheck-ignore=AUX3,AUX4", "--auxcheck-ignore=AUX5,AUX6,AUX7"],
                 "auxcheck_ignore in {root}/pytest.ini and by --auxcheck-ignore on the command "
                 "line. Remove from them", id="ini-and-command-line"),
])
@pytest.mark.parametrize("fixture", ["auxcheck_device_output", "auxcheck_sampling_observer"])
def test_every_rule_ignored_is_a_usage_error_naming_the_settings_that_ignore_them(
        pytester: pytest.Pytester, fixture: str, files: dict[str, str], args: list[str],
        by: str) -> None:
    """Not "no conftest defines ...": the fixture, where it is, and what ignores its rules."""
    _write(pytester, fixture, files)
    result = pytester.runpytest_inprocess("--auxcheck", "-p", "no:randomly", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    line = next(line for line in result.errlines if line.startswith("ERROR: "))
    written = pytester.path.joinpath("conftest.py").read_text().splitlines()
    line_no = written.index("@pytest.fixture") + 1  # where Python says the function starts
    assert line == (
        f"ERROR: --auxcheck found nothing to check: {fixture} at {pytester.path}/conftest.py:"
        f"{line_no} gives no item: every rule its items check is ignored, by "
        f"{by.format(root=pytester.path)} the codes you want checked (`auxcheck rules` lists "
        "every code)")


def test_only_the_static_rules_left_without_buffers_says_what_they_need(
        pytester: pytest.Pytester) -> None:
    """AUX110/AUX111 items need auxcheck_static_buffers: the error says so too."""
    _write(pytester, "auxcheck_device_output", {})
    result = pytester.runpytest_inprocess("--auxcheck", "-p", "no:randomly",
                                          "--auxcheck-ignore=AUX10,AUX112,AUX114,AUX2,AUX3,AUX4,AUX5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([(
        "ERROR: --auxcheck found nothing to check: auxcheck_device_output at *conftest.py:* "
        "gives no item: every rule its items check is ignored but AUX110 and AUX111, whose "
        "items need the fixture auxcheck_static_buffers, by --auxcheck-ignore on the command "
        "line. Remove from it the codes you want checked (`auxcheck rules` lists every code)")])


def test_a_rule_left_unignored_is_checked(pytester: pytest.Pytester) -> None:
    """One family taken out of the list: its items run, and no error."""
    _write(pytester, "auxcheck_device_output", {
        "pytest.ini": f"[pytest]\nauxcheck_ignore = {' '.join(EVERY_FAMILY[1:])}\n"})
    result = pytester.runpytest_inprocess("--auxcheck", "-p", "no:randomly", "--co", "-q",
                                          "-k", "AUX1")
    assert result.ret == pytest.ExitCode.OK
    assert "auxcheck::auxcheck_device_output::AUX101-copy-to-host-callable" in result.outlines
