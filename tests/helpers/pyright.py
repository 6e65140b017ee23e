"""pyright for the tests: one subprocess over many files, its diagnostics read from ``--outputjson``.

pyright runs in standard mode (``typeCheckingMode: standard``, what a new project gets) for
Python 3.10, with the interpreter running the tests, so the installed ``sglang-stubs`` and
``auxcheck`` resolve as in a user's project. ``reportMissingModuleSource`` (stubs found, SGLang
itself absent: a warning) is off, since the suite runs without SGLang on purpose. Its
configuration is written to a folder of the test's own, never to the checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers.paths import PYRIGHT

__all__ = ["SETTINGS", "PyrightDiagnostic", "PyrightRun", "require_pyright", "run_pyright"]

SETTINGS: Mapping[str, object] = {
    "typeCheckingMode": "standard",
    "pythonVersion": "3.10",
    "reportMissingModuleSource": "none",
}
"""The configuration every run starts from."""


@dataclass(frozen=True, slots=True)
class PyrightDiagnostic:
    """One error or warning pyright reported."""

    path: Path
    line: int
    """1-based."""
    severity: str
    rule: str
    """The rule that reported it (``reportPossiblyUnbound``); empty for a syntax error."""
    message: str

    def __str__(self) -> str:
        return f"{self.path.name}:{self.line}: {self.severity}: {self.message} ({self.rule})"


@dataclass(frozen=True, slots=True)
class PyrightRun:
    """The outcome of one pyright run."""

    status: int
    diagnostics: tuple[PyrightDiagnostic, ...]
    files: int
    """How many source files pyright analysed."""

    def in_file(self, path: Path) -> list[PyrightDiagnostic]:
        """Returns the diagnostics reported in ``path``."""
        return [found for found in self.diagnostics if found.path == path.resolve()]


def require_pyright() -> Path:
    """Returns the pyright executable; skips the test when it is not installed (``pip install
    -e '.[test]'`` installs it, as CI does)."""
    if not PYRIGHT.exists():
        pytest.skip("pyright is not installed next to the interpreter (pip install -e '.[test]')")
    return PYRIGHT


def run_pyright(files: Sequence[Path], *, root: Path,
                settings: Mapping[str, object] | None = None,
                site_dir: Path | None = None) -> PyrightRun:
    """Returns pyright's verdict on ``files`` under :data:`SETTINGS` updated by ``settings``,
    the configuration written to ``root``; ``site_dir`` importable as if installed.

    ``site_dir`` goes on PYTHONPATH, which pyright reads through the interpreter's
    ``sys.path``: there, as for mypy, a stub package still outranks the package it stubs.
    """
    executable = require_pyright()
    root.mkdir(parents=True, exist_ok=True)
    config = root / "pyrightconfig.json"
    config.write_text(json.dumps({**SETTINGS, **(settings or {})}, indent=2))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYRIGHT_PYTHON_IGNORE_WARNINGS"] = "1"  # no "a newer pyright exists" line
    if site_dir is not None:
        env["PYTHONPATH"] = str(site_dir)
    completed = subprocess.run(
        [str(executable), "--outputjson", "--project", str(config), "--pythonpath",
         sys.executable, *map(str, files)],
        cwd=root, env=env, capture_output=True, text=True, check=False, timeout=300)
    if completed.returncode not in (0, 1):  # 2: a fatal error, 3: a bad configuration
        raise AssertionError(f"pyright failed ({completed.returncode}):\n"
                             f"{completed.stdout}{completed.stderr}")
    report = json.loads(completed.stdout)
    found = tuple(
        PyrightDiagnostic(Path(item["file"]).resolve(), item["range"]["start"]["line"] + 1,
                          item["severity"], item.get("rule", ""), item["message"])
        for item in report["generalDiagnostics"] if item["severity"] in ("error", "warning"))
    return PyrightRun(completed.returncode, found, report["summary"]["filesAnalyzed"])
