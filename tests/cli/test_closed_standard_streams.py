"""Tests that every command works with stderr closed (``2>&-``) and refuses a closed stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.plugin_sources import FIXABLE, MIGRATED
from helpers.processes import finish


def _project(root: Path) -> Path:
    (root / "pyproject.toml").write_text('[project]\nname = "plugin"\n')
    (root / "plugin").mkdir()
    (root / "plugin" / "__init__.py").write_text("")
    (root / "plugin" / "obs.py").write_text(FIXABLE)
    return root


def _closed(args: list[str], cwd: Path, redirect: str) -> tuple[int, str]:
    """Returns the exit status and stdout of ``python -m auxcheck ARGS`` run by a shell with
    ``redirect`` (``2>&-``: the descriptor closed, not pointed at /dev/null), progress on."""
    env = {k: v for k, v in os.environ.items() if k != "AUXCHECK_PROGRESS"}
    command = ["sh", "-c", f'exec "$@" {redirect}', "sh", sys.executable, "-m", "auxcheck",
               *args]
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    out, _ = finish(process, f"auxcheck {' '.join(args)} {redirect}")
    return process.returncode, out


def test_migrate_rewrites_files_with_stderr_closed(tmp_path: Path) -> None:
    """`auxcheck migrate DIR 2>&-` rewrites the file as with stderr open; stdout stays empty."""
    project = _project(tmp_path)
    status, out = _closed(["migrate", "plugin"], project, "2>&-")
    assert (status, out) == (0, "")
    assert (project / "plugin" / "obs.py").read_text() == MIGRATED


@pytest.mark.parametrize(("args", "status"), [
    pytest.param(["migrate", "--check", "--format", "json", "plugin"], 1, id="migrate-check"),
    pytest.param(["check", "--format", "json", "--skip", "mypy", "--skip", "contract",
                  "--skip", "sglang", "."], 1, id="check"),
])
def test_json_output_is_whole_with_stderr_closed(tmp_path: Path, args: list[str],
                                                 status: int) -> None:
    """A JSON document still reaches stdout whole; the exit status still says what was found."""
    got, out = _closed(args, _project(tmp_path), "2>&-")
    assert got == status
    assert json.loads(out)["ok"] is False


@pytest.mark.parametrize("args", [
    pytest.param(["migrate", "plugin"], id="migrate"),
    pytest.param(["check", "--skip", "mypy", "."], id="check"),
    pytest.param(["rules"], id="rules"),
])
def test_a_closed_stdout_is_a_usage_error_and_nothing_is_done(tmp_path: Path,
                                                             args: list[str]) -> None:
    """With stdout closed (`>&-`) a command says so on stderr and exits 2 before doing anything."""
    project = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "AUXCHECK_PROGRESS"}
    process = subprocess.Popen(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m",
                                "auxcheck", *args], cwd=project, env=env,
                               stderr=subprocess.PIPE, text=True)
    _, err = finish(process, f"auxcheck {' '.join(args)} >&-")
    assert process.returncode == 2
    assert err.endswith(": error: stdout is closed; the command prints its results there: "
                        "redirect it to a file, or to /dev/null to keep only the exit status\n")
    assert (project / "plugin" / "obs.py").read_text() == FIXABLE
