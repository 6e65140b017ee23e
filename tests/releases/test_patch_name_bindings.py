"""Patches read as Python binds the names they use: a parameter or local shadowing an SGLang
import is not the import, and a module name built from strings is read only where it cannot
be in doubt (the one reader of string constants, :mod:`auxcheck._core.constants`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from auxcheck._releases.plugin_scan import scan_project

HEADER = "import importlib\nfrom sglang.srt.managers.scheduler import Scheduler\n"

NOT_PATCHES = {
    "a-parameter-named-like-the-import": "def f(Scheduler):\n    Scheduler.x = 1",
    "a-parameter-named-like-the-import-through-setattr":
        "def f(Scheduler):\n    setattr(Scheduler, 'x', 1)",
    "a-lambda-parameter": "f = lambda Scheduler: setattr(Scheduler, 'x', 1)",
    "a-comprehension-variable": "def f(items):\n    [setattr(Scheduler, 'x', 1) for Scheduler in items]",
    "a-local-assigned-before-the-patch": "def f():\n    Scheduler = object()\n    Scheduler.x = 1",
    "a-module-name-from-a-parameter-shadowing-a-constant":
        "NAME = 'sglang.srt.a'\ndef f(NAME):\n    m = importlib.import_module(NAME)\n    m.x = 1",
    "a-module-name-from-a-constant-reassigned-under-an-if":
        "NAME = 'sglang.srt.a'\nif len(__name__) > 3:\n    NAME = 'sglang.srt.b'\n"
        "m = importlib.import_module(NAME)\nm.x = 1",
    "a-module-name-from-a-constant-a-function-rebinds-as-global":
        "NAME = 'sglang.srt.a'\ndef g():\n    global NAME\n    NAME = 'sglang.srt.b'\n"
        "def f():\n    m = importlib.import_module(NAME)\n    m.x = 1",
}

PATCHES = {
    "the-import-itself-in-a-function": (
        "def f():\n    Scheduler.x = 1", "sglang.srt.managers.scheduler.Scheduler.x"),
    "a-module-name-bound-once-at-module-level": (
        "NAME = 'sglang.srt.a'\nm = importlib.import_module(NAME)\nm.x = 1", "sglang.srt.a.x"),
    "a-module-name-bound-once-in-the-function": (
        "def f():\n    name = 'sglang.srt.a'\n    m = importlib.import_module(name)\n    m.x = 1",
        "sglang.srt.a.x"),
    "a-module-name-built-by-an-f-string-of-a-constant": (
        "BASE = 'sglang.srt'\nm = importlib.import_module(f'{BASE}.a')\nsetattr(m, 'x', 1)",
        "sglang.srt.a.x"),
}


def _patches(tmp_path: Path, body: str) -> list[str]:
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "__init__.py").write_text(HEADER + textwrap.dedent(body) + "\n")
    return [p.dotted for p in scan_project(tmp_path).patches]


@pytest.mark.parametrize("body", NOT_PATCHES.values(), ids=NOT_PATCHES.keys())
def test_a_name_that_may_not_hold_the_import_makes_no_patch(tmp_path: Path, body: str) -> None:
    """A parameter, lambda argument, comprehension variable or local shadowing an SGLang import,
    or a module name whose string is in doubt, is never judged a patch on SGLang."""
    assert _patches(tmp_path, body) == []


@pytest.mark.parametrize(("body", "dotted"), PATCHES.values(), ids=PATCHES.keys())
def test_a_name_that_always_holds_the_import_makes_the_patch(tmp_path: Path, body: str,
                                                              dotted: str) -> None:
    """The import itself, or a module name bound once to a string, is the patch's owner."""
    assert _patches(tmp_path, body) == [dotted]
