"""``auxcheck live`` on the project's own examples, in SGLang 0.5.23's real server on CPU.

Each test is one run of the command (one or two real servers, 20-60 s each on a 2-core
machine), in this process, on a copy of the example, with the environment ``make
sglang-cpu`` built. What each finding names is read from the example's source, not written
down here.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.processes import HANG_GUARD
from helpers.sglang_cpu import environment

from auxcheck._isolation.processes import group_running
from auxcheck.cli import main
from auxcheck.cli.live import NOTHING_RAN

pytestmark = pytest.mark.slow


def live(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
         *args: str) -> tuple[int, dict[str, Any]]:
    """Returns the exit status and JSON report of ``auxcheck live`` on ``project``."""
    status = main(["live", str(project), "--sglang", "0.5.23", "-q", "--format", "json",
                   "--environment", str(environment().path), "--cache", str(tmp_path / "cache"),
                   *args])
    return status, json.loads(capsys.readouterr().out)


def defined(path: Path, name: str) -> str:
    """Returns ``path:line`` of the function or class ``name`` defined in ``path``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return f"{path.resolve()}:{node.lineno}"
    raise AssertionError(f"{name} is not defined in {path}")


def test_the_capture_plugin_serves_every_scenario_green_with_overlap_on_and_off(
        example: Callable[[str], Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    project = example("capture_plugin")
    status, report = live(project, tmp_path, capsys)
    [release] = report["releases"]
    assert (status, release["findings"], release["notes"]) == (0, [], [])
    assert [s["mode"] for s in release["servers"]] == ["overlap on", "overlap off"]
    for server in release["servers"]:
        assert [(s["name"], s["ok"]) for s in server["scenarios"]] == [
            (name, True) for name in
            ("concurrent", "stop-token", "stop-string", "long-prompt", "grammar", "abort")]
        assert Path(server["log"]).is_file()
    # nothing was written into the project (pip built from a copy of it)
    assert not list(project.glob("*.egg-info")) and not (project / "build").exists()


def test_a_hook_that_does_not_fit_kills_the_server_at_start_and_is_reported_at_its_line(
        example: Callable[[str], Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    project = example("hook_plugin")
    status, report = live(project, tmp_path, capsys)
    [release] = report["releases"]
    assert status == 1
    [server] = release["servers"]
    assert (server["mode"], server["started"]) == ("overlap on", None)
    [died] = release["findings"]
    hooks = project / "hook_plugin" / "hooks.py"
    assert (died["code"], died["location"]) == ("AUX804", defined(hooks, "_install_observer"))
    assert "TypeError: _install_observer() takes 1 positional argument but 2 were given" in (
        died["message"])
    # its AROUND hook on sgl_kernel cannot resolve in the stand-in sgl_kernel: not judged
    assert any("stands in for sgl_kernel" in note for note in release["notes"])
    assert any("the other mode was not tried" in note for note in release["notes"])


def test_a_reused_buffer_is_the_live_guards_aux112_at_the_output_class(
        example: Callable[[str], Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    project = example("broken_plugin")
    status, report = live(project, tmp_path, capsys, "--overlap", "on")
    [release] = report["releases"]
    assert status == 1
    assert [(f["code"], f["location"]) for f in release["findings"]] == [
        ("AUX112", defined(project / "broken_plugin" / "outputs.py", "TokenOutput"))]
    assert all(s["ok"] for s in release["servers"][0]["scenarios"])


def test_a_project_without_an_entry_point_is_aux801_naming_what_to_declare(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "quiet"
    (project / "quiet").mkdir(parents=True)
    (project / "quiet" / "__init__.py").write_text("")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "quiet"\nversion = "0"\n[tool.setuptools]\npackages = ["quiet"]\n')
    status, report = live(project, tmp_path, capsys)
    [release] = report["releases"]
    [finding] = release["findings"]
    assert (status, finding["code"], release["servers"]) == (1, "AUX801", [])
    assert 'declare one in pyproject.toml: [project.entry-points."sglang.srt.plugins"]' in (
        finding["message"])


def test_a_run_the_time_limit_cuts_short_is_incomplete_never_green(
        example: Callable[[str], Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    status, report = live(example("capture_plugin"), tmp_path, capsys, "--timeout", "0.01")
    [release] = report["releases"]
    assert (status, release["findings"]) == (NOTHING_RAN, [])
    assert release["cut"].startswith("the time limit ended the run")


def server_groups(port: str) -> set[int]:
    """Returns the process groups of the processes whose command line names ``--port port``."""
    groups = set()
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            if b"--port" in words and words[words.index(b"--port") + 1] == port.encode():
                groups.add(os.getpgid(int(entry.name)))
        except (OSError, ValueError, IndexError):
            continue
    return groups


def group_alive(pgid: int) -> bool:
    """Returns True while a process of group ``pgid`` runs (a zombie waiting for its reaper
    has ended)."""
    return bool(group_running(pgid))


def test_ctrl_c_ends_every_process_the_run_started(
        example: Callable[[str], Path], tmp_path: Path) -> None:
    """Stopped while its server serves: the command ends the server's whole process group,
    removes its temporary folder, and exits 128 + SIGINT (SIGTERM takes the same way:
    ``auxcheck._core.stops``)."""
    stop = signal.SIGINT
    command = subprocess.Popen(
        [sys.executable, "-m", "auxcheck", "live", str(example("capture_plugin")), "--sglang",
         "0.5.23", "--environment", str(environment().path), "--cache", str(tmp_path),
         "--overlap", "on"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "AUXCHECK_PROGRESS": "on", "TMPDIR": str(tmp_path)})
    assert command.stderr is not None
    log = None
    for line in command.stderr:  # progress: "... starting the server (overlap on); log: PATH"
        if "; log: " in line:
            log = Path(line.rsplit("; log: ", 1)[1].strip())
        if log is not None and " up in " in line:
            break
    assert log is not None, "the server never came up"
    port = log.read_text().split("--port ", 1)[1].split()[0]
    groups = server_groups(port)
    assert groups
    command.send_signal(stop)
    assert command.wait(timeout=HANG_GUARD) == 128 + stop
    assert not [g for g in groups if group_alive(g)]
    assert not list(tmp_path.glob("auxcheck-live-*"))
