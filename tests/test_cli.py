"""Tests for the top-level ``auxcheck`` command: dispatch, usage errors, closed pipes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from auxcheck.cli import SUBCOMMANDS, main

OLD_IMPORT = "from sglang.srt.sampling.sampling_observer import CommittedTokens\n"


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    """`auxcheck --help` names each subcommand with its summary and exits 0."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, (_, summary) in SUBCOMMANDS.items():
        assert f"  {name:<10}{summary}" in out


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param([], "usage: auxcheck [--version] COMMAND [ARGS...]", id="no-command"),
    pytest.param(["frobnicate"], "auxcheck: error: unknown command 'frobnicate'; expected one "
                 "of migrate, validate, check, rules, stubcheck, moves", id="unknown-command"),
])
def test_usage_errors_exit_2_naming_the_problem(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """A missing or unknown command is a usage error (exit 2) that says what is accepted."""
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_reader_closing_the_pipe_ends_the_run_quietly(tmp_path: Path) -> None:
    """`auxcheck migrate --diff tree | head -1` stops without a BrokenPipeError traceback."""
    for i in range(150):
        (tmp_path / f"plugin_{i:03}.py").write_text(OLD_IMPORT + "x = CommittedTokens\n" * 40)
    process = subprocess.Popen(
        [sys.executable, "-m", "auxcheck", "migrate", "--diff", "--jobs", "1", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith(b"--- ")
    process.stdout.close()  # the reader goes away while auxcheck is still writing
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert "BrokenPipeError" not in stderr and "Traceback" not in stderr
