"""What the guard says when it cannot import SGLang's plugin hook registry: the registry is not in
this SGLang, or it is there and its import failed (a missing dependency, an error), and which.

Each case is an SGLang package written to a folder put first on ``sys.path`` and imported for
real (its ``__init__.py`` runs), built from the real 0.5.23 registry sources where it has one.
"""

from __future__ import annotations

import importlib.abc
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest
from helpers.releases import real_tree, write_release

from auxcheck._guard import live, settings
from auxcheck.sglang_plugin import register

RELEASE = "0.5.23"
PLUGINS = ("sglang/srt/plugins/__init__.py", "sglang/srt/plugins/hook_registry.py",
           "sglang/srt/environ.py")
"""The real files importing the registry runs (``sglang/srt`` is a namespace package)."""


class Absent(importlib.abc.MetaPathFinder):
    """Makes top-level modules absent, as when they are not installed (whatever this machine
    has): the import system's own error, with the same message and ``name``."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: object = None) -> ModuleSpec | None:
        """Raises the import system's error for the absent names; finds nothing else."""
        if fullname in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def real_files(**edits: str) -> dict[str, str]:
    """Returns the release's registry files, each edit's text put first in its file."""
    root = real_tree(RELEASE)
    files = {"sglang/__init__.py": "", **{p: (root / p).read_text(encoding="utf-8")
                                          for p in PLUGINS}}
    for path, text in edits.items():
        files[path] = text + files.get(path, "")
    return files


@pytest.fixture
def sglang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Yields a folder first on ``sys.path`` for an SGLang to be written to; no ``sglang``
    module is imported meanwhile, and ``orjson`` is absent. Restores ``sys.modules`` after."""
    saved = {n: m for n, m in sys.modules.items() if n.partition(".")[0] in ("sglang", "orjson")}
    for name in saved:
        del sys.modules[name]
    for name in (settings.GUARD_ENV, settings.VALUES_ENV, settings.REPORT_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(live, "_ACTIVE", None)
    monkeypatch.syspath_prepend(str(tmp_path))
    finder = Absent(("orjson",))
    sys.meta_path.insert(0, finder)
    try:
        yield tmp_path
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n.partition(".")[0] in ("sglang", "orjson")]:
            del sys.modules[name]
        sys.modules.update(saved)


def guard_says(root: Path, files: Mapping[str, str], monkeypatch: pytest.MonkeyPatch,
               caplog: pytest.LogCaptureFixture) -> list[str]:
    """Writes ``files`` under ``root``, starts the guard as SGLang's plugin loader does (with
    ``AUXCHECK_GUARD=warn``); returns its log lines, after checking it stayed off."""
    write_release(root, files)
    monkeypatch.setenv(settings.GUARD_ENV, "warn")
    with caplog.at_level(logging.INFO, logger="auxcheck.guard"):
        register()
    assert live.active() is None
    return [r.getMessage() for r in caplog.records if r.name == "auxcheck.guard"]


ORJSON = "ModuleNotFoundError: No module named 'orjson'"
PIP = ("a dependency of SGLang is missing: install the package that provides the module orjson "
       "(usually `pip install orjson`)")
FAILED = "auxcheck guard is off: importing sglang.srt.plugins.hook_registry failed: "
NO_REGISTRY = ("auxcheck guard is off: this SGLang has no plugin hook registry "
               "(sglang.srt.plugins.hook_registry: No module named 'sglang.srt.plugins'); it "
               "needs an SGLang with sglang.srt.plugins (0.5.19 or later)")

CASES = {
    "dependency-of-the-registrys-package": (
        True, {"sglang/srt/environ.py": "import orjson\n"},
        (f"{FAILED}{ORJSON} (import chain: sglang.srt.plugins -> sglang.srt.environ -> orjson); "
         f"{PIP}")),
    "dependency-of-sglang-itself": (
        True, {"sglang/__init__.py": "import sglang.utils\n",
               "sglang/utils.py": "import json\nimport orjson\n"},
        f"{FAILED}{ORJSON} (import chain: sglang -> sglang.utils -> orjson); {PIP}"),
    "error-in-the-registry": (
        True, {"sglang/srt/plugins/hook_registry.py": "raise RuntimeError('no CUDA driver')\n"},
        (f"{FAILED}RuntimeError: no CUDA driver (import chain: sglang.srt.plugins -> "
         "sglang.srt.plugins.hook_registry)")),
    "a-module-of-sglang-missing": (
        True, {"sglang/srt/plugins/hook_registry.py": "import sglang.srt.environs\n"},
        (f"{FAILED}ModuleNotFoundError: No module named 'sglang.srt.environs' (import chain: "
         "sglang.srt.plugins -> sglang.srt.plugins.hook_registry -> sglang.srt.environs); "
         "sglang is there but has no module sglang.srt.environs; did you mean "
         "sglang.srt.environ?")),
    "a-registry-without-hook-type": (
        False, {"sglang/__init__.py": "", "sglang/srt/plugins/__init__.py": "",
                "sglang/srt/plugins/hook_registry.py": "class HookRegistry: ...\n"},
        ("auxcheck guard is off: this SGLang's plugin hook registry is not the one the guard "
         "knows (cannot import name 'HookType' from 'sglang.srt.plugins.hook_registry' "
         "(PATH)); it needs HookRegistry and HookType, as in sglang.srt.plugins 0.5.19 or "
         "later")),
    "no-registry": (False, {"sglang/__init__.py": "", "sglang/srt/utils.py": ""}, NO_REGISTRY),
}
"""Case -> (built on the release's registry files?, files written or put first, the line)."""


@pytest.mark.parametrize(("real", "files", "line"), [
    pytest.param(*case, id=name) for name, case in CASES.items()])
def test_the_guard_tells_a_registry_that_failed_to_import_from_one_that_is_not_there(
        sglang: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        real: bool, files: dict[str, str], line: str) -> None:
    """A registry whose import raised names the error, the chain of imports that led to it and
    the fix; only an SGLang without one is told it needs an SGLang with sglang.srt.plugins."""
    written = real_files(**files) if real else files
    path = str(sglang / "sglang/srt/plugins/hook_registry.py")
    assert guard_says(sglang, written, monkeypatch, caplog) == [line.replace("PATH", path)]


def test_without_sglang_the_guard_says_sglang_cannot_be_imported(
        sglang: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """No SGLang at all is not "an SGLang without a registry"."""
    sys.meta_path.insert(0, Absent(("sglang",)))
    try:
        lines = guard_says(sglang, {}, monkeypatch, caplog)
    finally:
        del sys.meta_path[0]
    assert lines == [("auxcheck guard is off: SGLang cannot be imported here (No module named "
                      "'sglang')")]
