"""Tests for where the mypy stage of `auxcheck check` keeps mypy's cache: it persists between
runs (only the first run in a project is cold), and the second run, without SGLang's stubs,
keeps one of its own so that neither run invalidates the other's (MYPY_CACHE_DIR included)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers.processes import hang_guard

from auxcheck.cli.check import main

VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"

OWN_ERROR = "x: int = 'one'\n"
"""A module with an error of the plugin's own code: without a mypy configuration, the stage
runs mypy a second time, without SGLang's stubs, to tell it apart."""


def _holds_cache(folder: Path) -> bool:
    """Returns True when ``folder`` holds a mypy cache for this Python (files or a database,
    whichever this mypy writes)."""
    return (folder / VERSION).is_dir() and any((folder / VERSION).iterdir())


def _plugin(folder: Path) -> Path:
    (folder / "plug").mkdir(parents=True)
    (folder / "plug" / "__init__.py").write_text(OWN_ERROR)
    return folder


def _mypy_only(capsys: pytest.CaptureFixture[str], folder: Path) -> dict[str, object]:
    with hang_guard("check's mypy stage"):
        status = main(["--format", "json", "--skip", "imports", "--skip", "contract",
                       "--skip", "sglang", str(folder)])
    [mypy] = [s for s in json.loads(capsys.readouterr().out)["stages"] if s["stage"] == "mypy"]
    assert (status, mypy["result"], mypy["counts"]["plugin_code"]) == (0, "ok", 1), mypy
    return mypy  # type: ignore[no-any-return]


@pytest.mark.slow
def test_mypy_leaves_its_caches_in_the_project_for_the_next_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Both of the stage's mypy runs leave their cache under the project's .mypy_cache, the
    one without SGLang's stubs in a folder of its own."""
    monkeypatch.delenv("MYPY_CACHE_DIR", raising=False)
    folder = _plugin(tmp_path / "plugin")
    _mypy_only(capsys, folder)
    cache = folder / ".mypy_cache"
    assert (_holds_cache(cache), _holds_cache(cache / "auxcheck-without-sglang")) == (True, True)


@pytest.mark.slow
def test_with_mypy_cache_dir_set_the_two_runs_still_keep_caches_apart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """MYPY_CACHE_DIR moves the first run's cache; the run without SGLang's stubs names its
    own on the command line, which wins: the two never share, and invalidate, one cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("MYPY_CACHE_DIR", str(cache))
    folder = _plugin(tmp_path / "plugin")
    _mypy_only(capsys, folder)
    assert (_holds_cache(cache), _holds_cache(folder / ".mypy_cache" / "auxcheck-without-sglang"),
            (folder / ".mypy_cache" / VERSION).exists()) == (True, True, False)
