"""The names SGLang moved between two releases, inferred from the releases' sources.

A name N moved from module M when ``from M import N`` works in the older release
(N is defined there, re-exported or star-imported, and is neither a module nor a
name from outside SGLang such as ``torch``), fails in the newer one, and the newer
release defines N (at run time, not only under ``if TYPE_CHECKING``) in exactly one
module: the move points there. When several modules define N, the one SGLang's own
code imports it from most wins; when its imports do not single one out, N is left
out and listed with its candidates. One refinement: when M was a package that
re-exported N from one of its own submodules (a facade), the move points at the
nearest package above N's new module that re-exports it, if there is one, so a
plugin keeps importing from a facade. Every move resolves in the newer release.
Output is sorted, so it does not depend on ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from auxcheck._core.text import plural
from auxcheck._releases.index import ReleaseIndex, importable
from auxcheck.migrate.moves import Move, MoveTable
from auxcheck.releases import find_release

__all__ = [
    "Gone",
    "InferredMoves",
    "LeftOut",
    "infer_moves",
    "moves_between",
    "render_json",
    "render_toml",
]

_NOT_NAMES = frozenset({"module", "external", "unknown"})
"""Lookup kinds that are not a name SGLang defines (a submodule, a third-party name)."""
_SHOWN_CANDIDATES = 6
"""How many candidate modules a left-out name's comment lists before "and N more"."""


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A name that left ``old`` but has several possible homes, none preferred by SGLang."""

    old: str
    name: str
    candidates: tuple[str, ...]
    """The modules of the newer release that define ``name``, sorted."""


@dataclass(frozen=True, slots=True)
class Gone:
    """A name that left ``old`` and that the newer release defines nowhere."""

    old: str
    name: str


@dataclass(frozen=True, slots=True)
class InferredMoves:
    """The moves found between releases ``source`` and ``target``, and what was left out."""

    source: str
    target: str
    moves: tuple[Move, ...]
    """One Move per (old, new) pair, sorted by both; names sorted; ``since`` is ``target``."""
    left_out: tuple[LeftOut, ...] = ()
    gone: tuple[Gone, ...] = ()

    @property
    def moved_names(self) -> int:
        """Returns how many (old module, name) pairs the moves cover."""
        return sum(len(m.names) for m in self.moves)

    def table(self) -> MoveTable:
        """Returns the moves as a MoveTable (what ``auxcheck migrate`` applies)."""
        return MoveTable(self.moves)

    def summary(self) -> str:
        """Returns one line saying what was found, for stderr."""
        return (f"auxcheck moves: sglang {self.source} -> {self.target}: "
                f"{plural(self.moved_names, 'name')} moved ({plural(len(self.moves), 'move')}"
                f"), {len(self.left_out)} left out (several homes), {len(self.gone)} gone "
                f"(no home in {self.target})")


# ---------------------------------------------------------------- inference


def _bound(index: ReleaseIndex, module: str, seen: frozenset[str] = frozenset()) -> set[str]:
    """Returns every name ``module`` binds at run time: definitions, imports, star imports."""
    summary = index.summary(module)
    if summary is None or module in seen:
        return set()
    names = {*summary.defined, *summary.imported}
    for star in summary.stars:
        source = index.summary(star)
        if source is None:
            continue
        if source.exports is not None:
            names.update(source.exports)
        else:
            names.update(n for n in _bound(index, star, seen | {module}) if not n.startswith("_"))
    return names


def _left_names(before: ReleaseIndex, after: ReleaseIndex, module: str) -> Iterator[str]:
    """Yields, sorted, the public SGLang names ``module`` gives in ``before`` but not ``after``."""
    for name in sorted(_bound(before, module)):
        if name.startswith("_"):
            continue
        was = before.provides(module, name)
        if not was.ok or not was.certain or was.kind in _NOT_NAMES:
            continue
        if not was.where.startswith("sglang"):
            continue
        if not after.provides(module, name).ok:
            yield name


def _was_facade(index: ReleaseIndex, module: str, name: str) -> bool:
    """Returns True when package ``module`` re-exports ``name`` from one of its own submodules."""
    summary = index.summary(module)
    where = index.provides(module, name).where
    return (summary is not None and summary.package and where.startswith(f"{module}.")
            and where != f"{module}.{name}")


def infer_moves(before: ReleaseIndex, after: ReleaseIndex) -> InferredMoves:
    """Returns the names that moved from ``before``'s modules to a home in ``after``.

    Call ``load_all`` on both indexes first for whole releases (this reads whatever
    summaries they hold, parsing missing ones on demand).
    """
    homes = after.homes()
    grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
    left_out: list[LeftOut] = []
    gone: list[Gone] = []
    for module in filter(importable, before.modules()):
        for name in _left_names(before, after, module):
            home = homes.home(name)
            if isinstance(home, str):
                new = homes.facade(home, name) if _was_facade(before, module, name) else home
                grouped[(module, new)].append(name)
            elif home is not None:
                left_out.append(LeftOut(module, name, home))
            else:
                gone.append(Gone(module, name))
    moves = tuple(Move(old, new, tuple(sorted(names)), after.version)
                  for (old, new), names in sorted(grouped.items()))
    return InferredMoves(before.version, after.version, moves,
                         tuple(sorted(left_out, key=lambda x: (x.old, x.name))),
                         tuple(sorted(gone, key=lambda x: (x.old, x.name))))


def moves_between(source: str, target: str, *, wheels: Sequence[Path] = (),
                  sources: Sequence[Path] = (), cache: Path | None = None,
                  download: bool = True, jobs: int | None = None) -> InferredMoves:
    """Returns the moves from release ``source`` to release ``target``, found as ``find_release``
    finds them (given wheels and trees, the cache, a download).

    Raises ReleaseError when a release cannot be had.
    """
    indexes = []
    for version in (source, target):
        release = find_release(version, wheels=wheels, sources=sources, cache=cache,
                               download=download)
        index = ReleaseIndex(release, cache=cache)
        index.load_all(jobs=jobs, cache=cache)
        indexes.append(index)
    return infer_moves(indexes[0], indexes[1])


# ---------------------------------------------------------------- output


def _toml_list(names: Sequence[str]) -> str:
    one = "names = [" + ", ".join(json.dumps(n) for n in names) + "]"
    if len(one) <= 88:
        return one
    return "names = [\n" + "".join(f"    {json.dumps(n)},\n" for n in names) + "]"


def _left_out_comment(item: LeftOut) -> str:
    shown = ", ".join(item.candidates[:_SHOWN_CANDIDATES])
    more = len(item.candidates) - _SHOWN_CANDIDATES
    tail = f", and {more} more" if more > 0 else ""
    return f"# {item.old}:{item.name}: {shown}{tail}"


def _header(found: InferredMoves) -> list[str]:
    command = f"auxcheck moves --from {found.source} --to {found.target}"
    return [(f"# Names SGLang moved between {found.source} and {found.target}, inferred by "
            f"`{command}`."),
            f"# {found.summary().removeprefix('auxcheck moves: ')}."]


def _left_out_block(found: InferredMoves) -> list[str]:
    if not found.left_out:
        return []
    return ["", (f"# Left out: each name below is defined in several modules of sglang "
                f"{found.target}, and SGLang's own imports do not single one out."),
            "# Add a [[move]] naming the one you mean. old:name: candidates",
            *(_left_out_comment(item) for item in found.left_out)]


def render_toml(found: InferredMoves) -> str:
    """Returns the moves as the ``[[move]]`` TOML that ``auxcheck migrate --moves`` reads.

    Left-out names follow as ``#`` comments, each with its candidate modules.
    """
    lines = _header(found)
    for move in found.moves:
        lines += ["", "[[move]]", f"old = {json.dumps(move.old)}", f"new = {json.dumps(move.new)}",
                  _toml_list(move.names), f"since = {json.dumps(move.since)}"]
    return "\n".join([*lines, *_left_out_block(found)]) + "\n"


def render_json(found: InferredMoves) -> str:
    """Returns the moves, left-out and gone names as a JSON document."""
    return json.dumps({
        "from": found.source, "to": found.target,
        "moves": [{"old": m.old, "new": m.new, "names": list(m.names), "since": m.since}
                  for m in found.moves],
        "left_out": [{"old": x.old, "name": x.name, "candidates": list(x.candidates)}
                     for x in found.left_out],
        "gone": [{"old": x.old, "name": x.name} for x in found.gone],
    }, indent=2)
