"""The guard's report path: never followed through a link, never waited on, only a regular file.

SGLang calls ``register()`` in every process it starts; a report path that blocks the open
(a named pipe with no reader) would hang every one of them at plugin load. Each case runs
``register()`` the way SGLang does, in a fresh process over 0.5.23's own plugin modules,
under a timeout, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.releases import real_tree

from auxcheck._guard import reporter

HANG_GUARD_S = 120
"""A bound for a process that would otherwise hang; far above what register() takes."""

_REGISTER = textwrap.dedent("""
    import sys, types
    sglang = types.ModuleType("sglang")
    sglang.__path__ = [sys.argv[1]]
    sys.modules["sglang"] = sglang
    from auxcheck.sglang_plugin import current_guard, register
    register()
    guard = current_guard()
    print("guard on" if guard is not None else "guard off")
    if guard is not None:
        guard.reporter.write("probe")
""")


def register_in_sglang(report: Path) -> tuple[str, list[str]]:
    """Runs register() with AUXCHECK_GUARD=warn and ``report`` in a fresh process; returns
    its stdout and the guard's log lines."""
    env = {**os.environ, "AUXCHECK_GUARD": "warn", "AUXCHECK_GUARD_REPORT": str(report)}
    env.pop("AUXCHECK_GUARD_VALUES", None)
    try:
        done = subprocess.run([sys.executable, "-c", _REGISTER, str(real_tree("0.5.23") / "sglang")],
                              capture_output=True, text=True, env=env, timeout=HANG_GUARD_S,
                              check=True)
    except subprocess.TimeoutExpired:
        pytest.fail(f"register() hung on AUXCHECK_GUARD_REPORT={report}")
    return done.stdout.strip(), [line for line in done.stderr.splitlines()
                                 if line.startswith("auxcheck guard: cannot")]


def _refusal(path: Path, what: str) -> str:
    return (f"auxcheck guard: cannot open AUXCHECK_GUARD_REPORT={path} (it is {what}, not a "
            f"regular file); findings are logged only. Point it at a writable regular file (it "
            f"is created when missing).")


def _fifo(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "guard.jsonl"
    os.mkfifo(path)
    return path, "a named pipe (FIFO)"


def _link_to_a_file(tmp_path: Path) -> tuple[Path, str]:
    target = tmp_path / "victim.txt"
    target.write_text("keep me\n")
    path = tmp_path / "guard.jsonl"
    path.symlink_to(target)
    return path, f"a symbolic link to {target}"


def _dangling_link(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "guard.jsonl"
    path.symlink_to(tmp_path / "created-elsewhere.txt")
    return path, f"a symbolic link to {tmp_path / 'created-elsewhere.txt'}"


def _directory(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "guard.jsonl"
    path.mkdir()
    return path, "a directory"


@pytest.mark.parametrize("make", [
    pytest.param(_fifo, id="named-pipe-without-reader"),
    pytest.param(_link_to_a_file, id="link-to-a-file"),
    pytest.param(_dangling_link, id="dangling-link"),
    pytest.param(_directory, id="directory"),
])
def test_a_report_path_that_is_not_a_regular_file_is_refused_in_one_line_and_the_guard_runs(
        tmp_path: Path, make: Callable[[Path], tuple[Path, str]]) -> None:
    """register() returns at once with the guard on; the log names the path and what it is."""
    path, what = make(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    out, refusals = register_in_sglang(path)
    assert out == "guard on"
    assert refusals == [_refusal(path, what)]
    # Nothing was written through the link, nothing created at its target.
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


def test_a_report_in_a_linked_folder_is_written_there(tmp_path: Path) -> None:
    """Only the last component is not followed: the folder is the operator's choice of place."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "current").symlink_to(tmp_path / "logs")
    out, refusals = register_in_sglang(tmp_path / "current" / "guard.jsonl")
    assert (out, refusals) == ("guard on", [])
    events = [json.loads(line) for line in (tmp_path / "logs" / "guard.jsonl").read_text()
              .splitlines()]
    assert [e["event"] for e in events] == ["start", "probe"]


def test_a_named_pipe_that_has_a_reader_is_refused_too(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """With a reader the open succeeds; the type is then checked on the open descriptor."""
    path = tmp_path / "guard.jsonl"
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        caplog.set_level(logging.ERROR, logger="auxcheck.guard")
        assert reporter.open_report(path) is None
    finally:
        os.close(reader)
    assert [r.getMessage() for r in caplog.records] == [_refusal(path, "a named pipe (FIFO)")]


def test_a_regular_report_file_is_appended_to_and_left_blocking(tmp_path: Path) -> None:
    """The descriptor of a regular file is an ordinary blocking, appending one."""
    path = tmp_path / "guard.jsonl"
    path.write_text("earlier\n")
    fd = reporter.open_report(path)
    assert fd is not None
    try:
        assert os.get_blocking(fd)
        os.write(fd, b"later\n")
    finally:
        os.close(fd)
    assert path.read_text() == "earlier\nlater\n"
