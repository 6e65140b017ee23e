"""Hook targets outside ``sglang``, read from this environment without running anything.

``HookRegistry`` resolves a target with ``pkgutil.resolve_name``, so a plugin may hook
any importable module (``sgl_kernel.flash_mla_with_kvcache``). auxcheck finds the
module's file the way the import system would (``PathFinder`` on the project, then
``sys.path``: no package's ``__init__`` runs) and reads it with ``ast``. The copy
installed here need not be the one a given SGLang release runs with, so a name that is
missing here is a note, never a failure.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Literal

from auxcheck._releases.summaries import ModuleSummary, class_summaries, summarize

__all__ = ["ExternalClass", "ExternalTarget", "external_class", "find_external"]


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


# ---------------------------------------------------------------- classes outside sglang

_PLAIN = frozenset({"object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol",
                    "typing.Protocol"})
_DEPTH = 12


@dataclass(frozen=True, slots=True)
class ExternalClass:
    """A class outside sglang as installed here: every member its class body and bases
    bind, and the file it was read from."""

    dotted: str
    members: frozenset[str]
    origin: str


@functools.lru_cache(maxsize=256)
def external_class(dotted: str) -> ExternalClass | None:
    """Returns the installed class ``dotted`` (``torch.nn.Module``) with its members, bases
    included, read with ``ast``; None when any part of it cannot be read (an extension
    module, ``__getattr__``, a base auxcheck cannot follow): then nobody can tell."""
    return _class(dotted, 0)


def _class(dotted: str, depth: int) -> ExternalClass | None:
    if depth > _DEPTH or dotted in _PLAIN or dotted.startswith("sglang."):
        return None
    module, _, name = dotted.rpartition(".")
    found = _module(module) if module else None
    if found is None:
        return None
    summary, tree, path = found
    if name in summary.imported:
        origin = summary.imported[name]
        return None if origin.name is None else _class(str(origin), depth + 1)
    if name not in summary.defined:
        for star in summary.stars:
            inner = _module(star)
            if inner is not None and name in inner[0].public():
                return _class(f"{star}.{name}", depth + 1)
        return None
    cls = class_summaries(module, tree).get(name)
    if cls is None:
        return None
    members = set(cls.members)
    for base in cls.bases:
        if base in _PLAIN:
            continue
        head, dot, rest = base.partition(".")
        if head in summary.defined and not rest:
            target = f"{module}.{head}"
        elif head in summary.imported:
            target = f"{summary.imported[head]}{dot}{rest}"
        else:
            return None
        inherited = _class(target, depth + 1)
        if inherited is None:
            return None
        members |= inherited.members
    return ExternalClass(dotted, frozenset(members), path)


@functools.lru_cache(maxsize=256)
def _module(module: str) -> tuple[ModuleSummary, ast.Module, str] | None:
    parts = module.split(".")
    search: list[str] = [p for p in sys.path if p]
    spec = None
    for at in range(1, len(parts) + 1):
        try:
            spec = PathFinder.find_spec(".".join(parts[:at]), search)
        except (ImportError, ValueError, OSError):
            return None
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
    origin = spec.origin if spec is not None else None
    if not origin or not origin.endswith(".py"):
        return None
    try:
        text = Path(origin).read_text(encoding="utf-8-sig")
        tree = ast.parse(text)
        summary = summarize(module, spec.submodule_search_locations is not None if spec else False,
                            text, whole=True)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if summary.dynamic:
        return None
    return summary, tree, origin
