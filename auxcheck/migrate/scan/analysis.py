"""What the scanner reports of a file (Use, Analysis); questions both scan and rewrite ask."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from auxcheck.migrate.moves import MoveTable

if TYPE_CHECKING:
    from auxcheck._core.report import Finding

__all__ = [
    "Analysis",
    "Use",
    "is_defining_module",
    "is_new_then_old_fallback",
    "listed",
    "moved_from",
    "moved_names",
    "package_of",
    "resolve_relative",
]


class Use(NamedTuple):
    """One remaining use of an old module: its rule code, 1-based position and message."""

    code: str
    line: int
    col: int
    seen: str
    expected: str
    old: str = ""
    """The old module of an AUX501 import or use (its move's release decides the fix)."""

    def finding(self, path: str, moves: MoveTable | None = None,
                releases: Sequence[str] = ()) -> Finding:
        """Returns this use as a Finding located at ``path:line:col``; an AUX501 of a move
        that came after one of ``releases`` (the project's) gets ``--compat``'s fix."""
        from dataclasses import replace

        from auxcheck._core.report import Finding

        found = Finding.of(self.code, self.seen, self.expected,
                           location=f"{path}:{self.line}:{self.col}")
        if self.code != "AUX501" or not self.old or moves is None:
            return found
        older = moves.predating(self.old, releases)
        if older is None:
            return found
        release, since = older
        return replace(found, hint=(
            f"run `auxcheck migrate --compat PATH`: the releases you support include sglang "
            f"{release}, from before the move (sglang {since}), which a plain `auxcheck "
            "migrate` would break"))


class Analysis:
    """What one file does with old modules: the uses found and what a rewrite needs.

    A plain slotted class (no dataclass): ``--check`` on a file that names an old module
    imports this module, and :mod:`dataclasses` costs more than the scan of one file.
    """

    __slots__ = ("alias_other_uses", "aliases", "all_names", "binding_moved", "binding_other",
                 "binding_scopes", "deep", "dotted", "explicit_aliases", "guarded_aliases",
                 "module_imports", "new_bound", "other_bound", "owner_moved", "star_modules",
                 "type_checking", "type_imports", "used_names", "uses")

    def __init__(self) -> None:
        self.uses: list[Use] = []
        self.aliases: dict[str, str] = {}
        """Names bound to an old module (``import old as m``, ``from pkg import old``) -> old."""
        self.dotted: set[str] = set()
        """Old modules imported by their dotted name (``import old``)."""
        self.owner_moved: dict[str, set[str]] = {}
        """Alias or dotted old module -> the moved names used through it (``m.X``, ``"m.X"``)."""
        self.alias_other_uses: set[str] = set()
        """Aliases and dotted old modules used for something other than a moved name."""
        self.binding_scopes: dict[str, set[int]] = {}
        """Alias or dotted old module -> the bodies whose imports bind it: 0 for the module,
        else the number of the def or class (counted in source order, a def or class before
        those it holds, from 1)."""
        self.binding_moved: dict[tuple[str, int], set[str]] = {}
        """(alias or dotted old module, body binding it) -> the moved names used through
        that body's binding: what the imports there must bind in its place."""
        self.binding_other: set[tuple[str, int]] = set()
        """(alias or dotted old module, body binding it) for a binding also used for
        something other than a moved name: the imports there keep it."""
        self.explicit_aliases: set[str] = set()
        """Aliases the user chose with ``as`` (``import old as m``): a rewrite may keep them."""
        self.type_checking: str | None = None
        """How the module names ``typing.TYPE_CHECKING`` at top level, if it imports it."""
        self.star_modules: set[str] = set()
        self.used_names: set[str] = set()
        self.new_bound: set[tuple[str, str]] = set()
        """(new module, name) pairs the file already imports."""
        self.all_names: set[str] = set()
        self.other_bound: set[str] = set()
        """Names bound by anything but an old-module alias or a plain import of a new module."""
        self.deep = False
        """True when work lies beyond top-level import statements (attributes, strings, nesting)."""
        self.guarded_aliases: set[str] = set()
        """Aliases bound in the body of a ``try`` that catches ImportError: each needs a new
        name of its own, which its handlers bind to what they bind the alias to."""
        self.module_imports: set[str] = set()
        """Modules imported at module level by their dotted name (``import a.b``, no ``as``)."""
        self.type_imports: set[str] = set()
        """New modules a rewritten type-expression string names (``"new.X"``) that no
        module-level import binds: the rewrite imports them."""

    @property
    def alias_moved_uses(self) -> set[str]:
        """Returns the aliases and dotted old modules some moved name is used through."""
        return set(self.owner_moved)

    @property
    def fixable(self) -> bool:
        """Returns True when some use is AUX501, so a rewrite has work to do."""
        return any(use.code == "AUX501" for use in self.uses)


def package_of(module: str | None, *, is_package: bool) -> str | None:
    """Returns the package relative imports resolve against in ``module``."""
    if module is None:
        return None
    return module if is_package else module.rpartition(".")[0] or None


def resolve_relative(level: int, module: str | None, package: str | None) -> str | None:
    """Returns the absolute module ``from <level dots><module>`` names, or None if unknown."""
    if level == 0:
        return module
    if package is None:
        return None
    parts = package.split(".")
    if level - 1 >= len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, *([module] if module else [])])


def is_defining_module(module: str | None, moves: MoveTable) -> bool:
    """Returns True for a module that defines moved names (old or new); never rewritten."""
    return module is not None and (module in moves.old_modules or module in moves.new_modules)


@lru_cache(maxsize=16)
def moved_names(moves: MoveTable) -> dict[str, dict[str, str]]:
    """Returns {old module: {moved name: new module}}, built once per table (do not modify)."""
    return {old: moves.names_from(old) for old in moves.old_modules}


def moved_from(moves: MoveTable, old: str) -> str:
    """Returns what moved out of module ``old`` and where, for a finding that needs a human:
    ``CommittedTokens and HostAuxiliaryOutput from sglang.srt.managers.auxiliary_output``."""
    by_new: dict[str, list[str]] = {}
    for name, new in sorted(moved_names(moves).get(old, {}).items()):
        by_new.setdefault(new, []).append(name)
    return "; ".join(f"{listed(names)} from {new}" for new, names in by_new.items())


def listed(names: Sequence[str]) -> str:
    """Returns ``names`` as English lists them: ``A``, ``A and B``, ``A, B and C``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def is_new_then_old_fallback(catches_import_error: bool, imported: Iterable[str],
                             moves: MoveTable) -> bool:
    """Returns True for a ``try`` the user wrote to import from new modules and fall back
    to old ones: it catches ImportError and a statement of its body imports from a new
    module. ``imported`` holds each module the body's import statements name and, for
    ``from m import n``, each ``m.n``. The scan and the rewrite both ask this: its
    handlers are left as written, and the rest of the ``try`` is migrated."""
    return catches_import_error and any(name in moves.new_modules for name in imported)
