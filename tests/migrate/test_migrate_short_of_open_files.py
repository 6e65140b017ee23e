"""Tests for `auxcheck migrate` in a process that may open only a few files: one clear line
naming the limit to raise, never a traceback, never a hang."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.plugin_sources import FIXABLE
from helpers.processes import finish

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="limits open files with ulimit")


@pytest.mark.parametrize("files", [10, 12, 14], ids=lambda n: f"ulimit-n-{n}")
@pytest.mark.parametrize("mode", [[], ["--check"]], ids=["write", "check"])
def test_a_pool_that_cannot_open_its_pipes_fails_in_one_line(
        tmp_path: Path, files: int, mode: list[str]) -> None:
    """Under `ulimit -n 12` the worker pool's pipes cannot be made: exit status 2, one error
    line saying what failed and to raise the open-file limit, no traceback (there was one),
    every file as it was."""
    for i in range(40):
        (tmp_path / f"m{i:02}.py").write_text(FIXABLE)

    process = subprocess.Popen(["/bin/sh", "-c", 'ulimit -n "$0" && exec "$@"', str(files),
                                sys.executable, "-m", "auxcheck", "migrate", *mode, "-j", "2",
                                "."], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    _, err = finish(process, f"migrate under ulimit -n {files}", limit=60)
    assert (process.returncode, "Traceback" in err) == (2, False), err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("auxcheck migrate: error: "), err
    assert "raise the open-file limit (ulimit -n)" in lines[0]
    assert {p.read_text() for p in tmp_path.iterdir()} == {FIXABLE}
