"""``auxcheck live``'s command line where no server is needed: usage errors, releases that cannot run here.

The real-server runs are in ``tests/sglang_cpu/test_live_command.py``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from auxcheck._sglang_cpu import live
from auxcheck.cli import main
from auxcheck.cli.live import NOTHING_RAN


@pytest.mark.parametrize(("args", "expected"), [
    (["nowhere"], "PATH 'nowhere' is not a folder"),
    (["{empty}"], "has no pyproject.toml, setup.py or setup.cfg"),
    (["{plugin}", "--model", "{empty}"], "--model: {empty} holds no config.json"),
    (["{plugin}", "--sglang", "0.5.x"], "--sglang: '0.5.x' is not an SGLang release version"),
    (["{plugin}", "--overlap", "sometimes"], "argument --overlap: invalid choice"),
])
def test_a_command_line_that_cannot_be_used_is_exit_2_naming_what_to_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
        expected: str) -> None:
    empty, plugin = tmp_path / "empty", tmp_path / "plugin"
    empty.mkdir()
    plugin.mkdir()
    (plugin / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '0'\n")
    words = [a.format(empty=empty, plugin=plugin) for a in args]
    assert main(["live", *words]) == 2
    assert expected.format(empty=empty) in capsys.readouterr().err


def test_a_release_without_a_cpu_recipe_is_a_note_and_nothing_ran_is_exit_3(
        example: Callable[[str], Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["live", str(example("capture_plugin")), "--sglang", "0.5.2", "-q",
                   "--cache", str(tmp_path), "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert status == NOTHING_RAN == document["exit"]
    [release] = document["releases"]
    assert (release["release"], release["ran"], release["findings"]) == ("0.5.2", False, [])
    assert "no recipe for SGLang 0.5.2's CPU server" in release["skipped"]
    assert not (tmp_path / "live").exists() or not any((tmp_path / "live").iterdir())


def test_another_platform_is_told_in_one_sentence_what_still_works(
        example: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live.platform, "machine", lambda: "arm64")
    monkeypatch.setattr(sys, "platform", "darwin")
    status = main(["live", str(example("capture_plugin")), "--sglang", "0.5.23", "-q",
                   "--cache", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == NOTHING_RAN
    assert out.strip() == (
        "sglang 0.5.23: not run: cannot run release 0.5.23 here: SGLang's CPU server is run "
        "on Linux x86-64 only (this is darwin arm64); `auxcheck check` (imports, mypy, the "
        "contract suite, the release matrix) still runs here, offline once the wheels are "
        "cached")


def test_a_release_that_cannot_run_is_a_sarif_notification_not_a_result(
        example: Callable[[str], Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["live", str(example("capture_plugin")), "--sglang", "0.5.2", "-q",
                   "--cache", str(tmp_path), "--format", "sarif"])
    log = json.loads(capsys.readouterr().out)
    [run] = log["runs"]
    assert status == NOTHING_RAN and run["results"] == []
    [notice] = run["invocations"][0]["toolExecutionNotifications"]
    assert notice["level"] == "note" and "cannot run release 0.5.2 here" in (
        notice["message"]["text"])


def test_the_exit_status_claims_green_only_where_a_server_served_everything() -> None:
    from auxcheck._sglang_cpu.live import ReleaseRun
    from auxcheck.cli.live import exit_status
    from auxcheck.report import Finding

    served = ReleaseRun("0.5.23", served=["overlap on", "overlap off"])
    error = ReleaseRun("0.5.20", findings=[Finding.of("AUX804", "died", "serve")])
    note = ReleaseRun("0.5.20", findings=[Finding.of("AUX803", "never called", "called")],
                      served=["overlap on"])
    unjudged = ReleaseRun("0.5.20", notes=["a path that needs CUDA"])
    skipped = ReleaseRun("0.5.2", skipped="no recipe")
    cut = ReleaseRun("0.5.20", cut="the time limit", served=["overlap on"])
    table = [([served], 0), ([served, skipped], 0), ([note], 0), ([error, served], 1),
             ([unjudged], NOTHING_RAN), ([served, unjudged], NOTHING_RAN), ([skipped], NOTHING_RAN),
             ([cut], NOTHING_RAN), ([error, cut], 1)]
    assert [exit_status(runs) for runs, _ in table] == [status for _, status in table]
