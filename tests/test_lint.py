"""The project's own code passes its own ruff configuration (pyproject's [tool.ruff])."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from helpers.paths import REPO


def test_the_project_passes_ruff_with_its_own_configuration() -> None:
    """`ruff check` over the package, tests, benchmarks, examples and the build hook
    reports nothing."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or "ruff"
    done = subprocess.run([ruff, "check", "--no-cache", "auxcheck", "tests", "benchmarks",
                           "examples", "hatch_build.py"], cwd=REPO, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
