"""Tests for the ``auxcheck`` command and the layer its subcommands share (auxcheck/cli/):
dispatch, usage errors (exit 2, naming the option), -j/--jobs and --format, closed pipes."""

from __future__ import annotations

import importlib
import inspect
import io
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from helpers.paths import EXAMPLES, REPO
from helpers.plugin_sources import FIXABLE
from helpers.progress import show_progress, untimed
from helpers.releases import write_release

from auxcheck.cli import SUBCOMMANDS, main
from auxcheck.cli._common import say


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    """`auxcheck --help` names each subcommand with its summary and exits 0."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, (_, summary) in SUBCOMMANDS.items():
        assert f"  {name:<11}{summary}" in out


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param([], "usage: auxcheck [--version] COMMAND [ARGS...]", id="no-command"),
    pytest.param([], "auxcheck: error: expected a command", id="no-command-says-so"),
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
        (tmp_path / f"plugin_{i:03}.py").write_text(FIXABLE + "x = CommittedTokens\n" * 40)
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


def _bad(name: str, command: str, args: list[str], message: str) -> object:
    return pytest.param([command, *args], f"auxcheck {command}: error: {message}",
                        id=f"{command}-{name}")


WHOLE = "expected a whole number >= 1"
CAPTURE = str(EXAMPLES / "capture_plugin")

USAGE_ERRORS = [
    _bad("jobs", "migrate", ["-j", "0", "."], f"argument --jobs/-j: invalid value '0'; {WHOLE}"),
    _bad("format", "migrate", ["--format", "xml", "."],
         "argument --format: invalid choice: 'xml'"),
    _bad("batch-size", "validate", ["--batch-size", "0", "m:x"],
         f"argument --batch-size: invalid value '0'; {WHOLE}"),
    _bad("ignore", "validate", ["--ignore", "AUX9", "m:x"], "--ignore: unknown rule code "
         "'AUX9'; expected a code such as AUX104 or a family prefix such as AUX1 (see "
         "`auxcheck rules`)"),
    _bad("jobs", "check", ["-j", "0", CAPTURE], f"argument --jobs/-j: invalid value '0'; {WHOLE}"),
    _bad("impl", "check", ["--impl", "nonsense", CAPTURE], "--impl: implementation 'nonsense': "
         "cannot import nonsense (No module named 'nonsense'); install it, or use 'reference' "
         "or a dotted path to your own module"),
    _bad("unknown-option", "rules", ["--markdwn"], "unrecognized arguments: --markdwn"),
    _bad("wheel", "stubcheck", ["--wheel", "missing.whl"], "--wheel: no wheel at missing.whl; "
         "download it with `pip download --no-deps sglang==0.5.20`"),
    _bad("jobs", "moves", ["--from", "0.0.1", "--to", "0.0.2", "-j", "0"],
         f"argument --jobs/-j: invalid value '0'; {WHOLE}"),
    _bad("overlap", "live", ["--overlap", "sometimes", CAPTURE],
         "argument --overlap: invalid choice: 'sometimes'"),
    _bad("same-release", "moves", ["--from", "0.0.2", "--to", "0.0.2"], "--from and --to are "
         "the same release (0.0.2); pass the older release to --from and the newer one to --to"),
]


@pytest.mark.parametrize(("argv", "message"), USAGE_ERRORS)
def test_every_subcommands_usage_error_exits_2_naming_the_option(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each subcommand returns 2 (never raises SystemExit) and ends stderr with
    `auxcheck COMMAND: error: ...` naming what was wrong; stdout stays empty."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[-1].startswith(message)  # argparse may list the choices after


def test_the_usage_error_table_covers_every_subcommand() -> None:
    """No subcommand is left out of the usage-error table."""
    assert {p.values[0][0] for p in USAGE_ERRORS} == set(SUBCOMMANDS)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("argv", "message"), USAGE_ERRORS)
def test_usage_errors_exit_2_from_the_installed_entry_point(argv: list[str],
                                                            message: str) -> None:
    """`python -m auxcheck COMMAND ...` exits 2 with the same message, from a real process."""
    done = subprocess.run([sys.executable, "-m", "auxcheck", *argv], capture_output=True,
                          text=True, check=False, cwd=REPO)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1].startswith(message)


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_every_subcommand_has_the_shared_main_signature(name: str) -> None:
    """Each module has DESCRIPTION and `main(argv: Sequence[str] | None = None) -> int`."""
    module = importlib.import_module(SUBCOMMANDS[name][0])
    signature = inspect.signature(module.main, eval_str=True)
    assert isinstance(module.DESCRIPTION, str) and module.DESCRIPTION
    assert [(p.name, p.annotation, p.default) for p in signature.parameters.values()] == [
        ("argv", Sequence[str] | None, None)]
    assert signature.return_annotation is int


SHARED_OPTIONS = {
    "migrate": ("--jobs N, -j N", "--format {text,json,github,sarif}"),
    "check": ("--jobs N, -j N", "--format {text,json,sarif}"),
    "moves": ("--jobs N, -j N", "--format {toml,json}"),
    "validate": ("--format {text,json,sarif}",),
}


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_help_returns_0_and_spells_shared_options_alike(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`auxcheck COMMAND --help` returns 0 in-process and shows -j/--jobs and --format alike."""
    assert main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: auxcheck {name} ")
    for option in SHARED_OPTIONS.get(name, ()):
        assert option in out


def test_help_of_every_command_imports_nothing_heavy() -> None:
    """`auxcheck --help` and each `auxcheck COMMAND --help` load neither torch nor hypothesis."""
    probe = ("import contextlib, io, json, sys\n"
             "from auxcheck.cli import SUBCOMMANDS, main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    codes = [main(['--help'])] + [main([n, '--help']) for n in SUBCOMMANDS]\n"
             "print(json.dumps([codes, sorted(m for m in ('torch', 'hypothesis', 'libcst') "
             "if m in sys.modules)]))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == [[0] * (len(SUBCOMMANDS) + 1), []]


@pytest.mark.parametrize(("encoding", "written"), [
    pytest.param("ascii", b"caf\\xe9 \\ud800\n", id="ascii-stdout"),
    pytest.param("utf-8", b"caf\xc3\xa9 \\ud800\n", id="utf-8-stdout"),
])
def test_say_writes_any_text_whatever_the_streams_encoding(encoding: str, written: bytes) -> None:
    """What the stream cannot encode (a lone surrogate, any non-ASCII under LANG=C) is written
    as a backslash escape, never a UnicodeEncodeError."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, newline="\n")
    say("caf\u00e9 \ud800", stream=stream)
    stream.flush()
    assert raw.getvalue() == written


def _progress_runs(tmp_path: Path) -> dict[str, list[str]]:
    """Returns, for each command that reports progress, a run of it with waits to report."""
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "plugin.py").write_text(FIXABLE)
    (tmp_path / "targets.py").write_text("T = 1\n")
    old = write_release(tmp_path / "old", {"sglang/version.py": "__version__ = '0.0.1'\n",
                                           "sglang/srt/a.py": "class Moved: ...\n"})
    new = write_release(tmp_path / "new", {"sglang/version.py": "__version__ = '0.0.2'\n",
                                           "sglang/srt/b.py": "class Moved: ...\n"})
    return {
        "check": ["check", "--skip", "mypy", "--skip", "contract", str(EXAMPLES / "legacy_plugin")],
        "migrate": ["migrate", "--check", str(tmp_path / "tree")],
        "moves": ["moves", "--from", "0.0.1", "--to", "0.0.2", "--source", str(old),
                  "--source", str(new), "--offline", "--cache", str(tmp_path / "cache")],
        "validate": ["validate", "--path", str(tmp_path), "targets:T"],
    }


@pytest.mark.parametrize("command", ["check", "migrate", "moves", "validate"])
def test_auxcheck_progress_off_silences_a_command_exactly_as_q_does(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """With every wait reporting at once the command prints progress; with
    AUXCHECK_PROGRESS=off it prints what -q gives, on stdout and stderr alike."""
    argv = _progress_runs(tmp_path)[command]
    show_progress(monkeypatch, delay=0.0)
    runs = []
    for setting, quiet in (("auto", []), ("auto", ["-q"]), ("off", [])):
        monkeypatch.setenv("AUXCHECK_PROGRESS", setting)
        status = main([argv[0], *quiet, *argv[1:]])
        runs.append((status, *capsys.readouterr()))
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)  # moves indexes afresh
    sys.modules.pop("targets", None)
    shown, quiet_run, off = runs
    assert shown[2] != quiet_run[2], "no progress to silence"
    # check's table prints each stage's time: the clock may differ between runs, nothing else
    assert untimed_run(off) == untimed_run(quiet_run)


def untimed_run(run: tuple[int, str, str]) -> tuple[int, list[str], list[str]]:
    """Returns a command's exit status, stdout and stderr with every elapsed time as ``T``."""
    status, out, err = run
    return status, untimed(out), untimed(err)


@pytest.mark.parametrize("argv", [["rules"], ["migrate", "--check", "."]], ids=["rules", "migrate"])
def test_a_progress_setting_no_command_knows_is_a_usage_error_before_anything_runs(
        argv: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """AUXCHECK_PROGRESS=verbose: exit 2, naming the variable and the values it takes."""
    monkeypatch.setenv("AUXCHECK_PROGRESS", "verbose")
    assert main(argv) == 2
    assert capsys.readouterr() == ("", (
        "auxcheck: error: AUXCHECK_PROGRESS='verbose' is not a progress setting; set it to "
        "off (no progress lines) or auto (lines for waits past 2 s, the default)\n"))
