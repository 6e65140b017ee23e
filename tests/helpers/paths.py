"""Where the checkout's files are, for the tests: one definition of each path."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

__all__ = ["EXAMPLES", "PACKAGE", "PYRIGHT", "REPO", "RUFF", "STUBS", "TESTS", "TORCH_STANDIN",
           "TYPED", "torch_pin"]

REPO = Path(__file__).resolve().parents[2]
"""The root of the checkout."""

PACKAGE = REPO / "auxcheck"
"""The auxcheck package's sources."""

EXAMPLES = REPO / "examples"
"""The example plugin projects (copy one with the ``example`` fixture before writing in it)."""

STUBS = REPO / "stubs" / "sglang-stubs"
"""The shipped sglang stubs."""

TESTS = REPO / "tests"

TYPED = TESTS / "typed"
"""The stub test cases, type-checked and never run."""

TORCH_STANDIN = TYPED / "_torch"
"""A small torch stub for mypy (the real torch costs mypy ~30 s cold)."""

RUFF = Path(sys.executable).with_name("ruff")
"""The ruff installed next to this Python (the project's virtual environment)."""

PYRIGHT = Path(sys.executable).with_name("pyright")
"""The pyright installed next to this Python (the ``test`` extra pins its version)."""


def torch_pin() -> str:
    """Returns the torch requirement the Makefile installs first (``torch==X.Y.Z``)."""
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^TORCH_PIN := (\S+)$", text, flags=re.MULTILINE)
    if match is None:
        pytest.fail("the Makefile has no `TORCH_PIN := torch==X.Y.Z` line")
    return match[1]
