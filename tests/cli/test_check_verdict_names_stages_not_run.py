"""Tests that ``auxcheck check``'s verdict says which stage could not run, never a bare ok.

A stage whose tool is missing (pytest, hypothesis, mypy) is skipped and fails nothing (exit 0
where every other stage passed), but what was not checked is not a pass: the last line names
each stage not run and why, and the JSON says it in ``not_run``. Each case runs the real
command in a child interpreter whose import of the named packages fails, as it does where
they are not installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.missing_packages import auxcheck_without


def _check_without(blocked: set[str], args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Returns the status, stdout and stderr of ``auxcheck check ARGS`` without ``blocked``."""
    return auxcheck_without(blocked, ["check", *args], cwd)


@pytest.fixture
def clean_project(tmp_path: Path) -> Path:
    """Returns a plugin project with nothing to migrate and a conftest naming a suite fixture."""
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "__init__.py").write_text("")
    (tmp_path / "conftest.py").write_text("def auxcheck_device_output():\n    return None\n")
    return tmp_path


@pytest.mark.parametrize(("blocked", "skip", "verdict"), [
    pytest.param({"pytest"}, ["--skip", "mypy"],
                 "auxcheck check .: ok (contract not run: pytest is not installed)",
                 id="pytest-missing"),
    pytest.param({"hypothesis"}, ["--skip", "mypy"],
                 "auxcheck check .: ok (contract not run: hypothesis is not installed)",
                 id="hypothesis-missing"),
    pytest.param({"mypy"}, ["--skip", "contract"],
                 "auxcheck check .: ok (mypy not run: mypy is not installed)",
                 id="mypy-missing"),
    pytest.param({"pytest", "mypy", "hypothesis"}, [],
                 "auxcheck check .: ok (mypy not run: mypy is not installed; contract not run: "
                 "pytest and hypothesis are not installed)",
                 id="all-missing"),
])
def test_a_stage_whose_tool_is_missing_is_named_in_the_verdict_not_passed(
        clean_project: Path, blocked: set[str], skip: list[str], verdict: str) -> None:
    """The verdict names each stage not run and why; the exit status stays 0."""
    status, out, err = _check_without(blocked, ["-q", *skip, "."], clean_project)
    assert "Traceback" not in err
    assert (status, out.splitlines()[-1]) == (0, verdict)


def test_a_stage_left_out_by_skip_is_not_named_in_the_verdict(clean_project: Path) -> None:
    """``--skip`` is the user's choice, not a stage that could not run: the verdict is ok."""
    status, out, _ = _check_without(set(), ["-q", "--skip", "mypy", "--skip", "contract", "."],
                                    clean_project)
    assert (status, out.splitlines()[-1]) == (0, "auxcheck check .: ok")


def test_the_json_says_which_stages_were_not_run_and_why(clean_project: Path) -> None:
    """``not_run`` lists each stage whose tool is missing, in stage order, with the reason."""
    status, out, _ = _check_without({"pytest", "mypy"}, ["-q", "--format", "json", "."],
                                    clean_project)
    document = json.loads(out)
    assert (status, document["ok"]) == (0, True)
    assert document["not_run"] == [
        {"stage": "mypy", "why": "mypy is not installed"},
        {"stage": "contract", "why": "pytest is not installed"},
    ]
    stages = {s["stage"]: s for s in document["stages"]}
    assert stages["contract"]["not_run"] == "pytest is not installed"
    assert stages["imports"]["not_run"] is None


def test_a_failed_check_names_the_failed_stages_then_those_not_run() -> None:
    """One pair of parentheses: the failed stages first, then each stage not run and why."""
    from auxcheck._check.base import StageResult
    from auxcheck.cli.check import render_table

    results = [StageResult("imports", "fail"),
               StageResult("mypy", "skipped", not_run="mypy is not installed"),
               StageResult("contract", "skipped", summary="--skip")]
    assert render_table(Path("."), results).splitlines()[-1] == (
        "auxcheck check .: failed (imports; mypy not run: mypy is not installed)")
