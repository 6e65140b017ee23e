"""Hook targets outside ``sglang``, read from this environment without running anything.

``HookRegistry`` resolves a target with ``pkgutil.resolve_name``, so a plugin may hook
any importable module (``sgl_kernel.flash_mla_with_kvcache``). auxcheck finds the
module's file the way the import system would (``PathFinder`` on the project, then
``sys.path``: no package's ``__init__`` runs) and reads it with ``ast``. The copy
installed here need not be the one a given SGLang release runs with, so a name that is
missing here is a note, never a failure.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Literal

from auxcheck._releases.summaries import summarize

__all__ = ["ExternalTarget", "find_external"]


@dataclass(frozen=True, slots=True)
class ExternalTarget:
    """Where an outside target was looked for, and what was found.

    ``state``: ``found``; ``missing`` (the module is here and does not bind the name);
    ``unreadable`` (an extension module, a star import, ``__getattr__``); ``absent``
    (no such module here).
    """

    state: Literal["found", "missing", "unreadable", "absent"]
    module: str
    origin: str = ""


def find_external(target: str, roots: Sequence[Path] = ()) -> ExternalTarget:
    """Returns what ``pkgutil.resolve_name`` would meet for ``target`` in this environment."""
    parts = target.split(".")
    search: list[str] = [str(r) for r in roots] + [p for p in sys.path if p]
    spec = None
    at = 0
    for at in range(1, len(parts)):
        module = ".".join(parts[:at])
        try:
            found = PathFinder.find_spec(module, search)
        except (ImportError, ValueError, OSError):
            found = None
        if found is None:
            at -= 1
            break
        spec = found
        if not found.submodule_search_locations:
            break
        search = list(found.submodule_search_locations)
    if spec is None:
        return ExternalTarget("absent", parts[0])
    module, rest = spec.name, parts[len(spec.name.split(".")):]
    origin = spec.origin or ""
    if not rest:
        return ExternalTarget("found", module, origin)
    if not origin.endswith(".py"):
        return ExternalTarget("unreadable", module, origin or "a namespace package")
    return _in_file(module, Path(origin), rest[0], spec.submodule_search_locations is not None)


def _in_file(module: str, path: Path, name: str, package: bool) -> ExternalTarget:
    try:
        summary = summarize(module, package, path.read_text(encoding="utf-8-sig"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
        return ExternalTarget("unreadable", module, str(path))
    if summary.binds(name):
        return ExternalTarget("found", module, str(path))
    if summary.stars or summary.dynamic:
        return ExternalTarget("unreadable", module, str(path))
    return ExternalTarget("missing", module, str(path))
