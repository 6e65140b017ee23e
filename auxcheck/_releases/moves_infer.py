"""The names SGLang moved between two releases, inferred from the releases' sources.

A name N moved from module M when ``from M import N`` works in the older release
(N is defined there, re-exported or star-imported, and is neither a module nor a
name from outside SGLang such as ``torch``), fails in the newer one, and the newer
release defines N (at run time, not only under ``if TYPE_CHECKING``) in exactly one
module: the move points there. When several modules define N, those in M's own
subsystem (:func:`subsystem`: ``sglang.srt`` for ``sglang.srt.managers.x``) are preferred,
since SGLang's subsystems define unrelated names alike (srt's ``SamplingParams`` is not
multimodal_gen's); among those left, the one SGLang's own code imports it from most
wins; when its imports do not single one out, N is left out and listed with its
candidates. A move chosen among several definers says so (:class:`Choice`), in the TOML
as a comment and in the JSON. One refinement: when M was a package that
re-exported N from one of its own submodules (a facade), the move points at the
nearest package above N's new module that re-exports it, if there is one, so a
plugin keeps importing from a facade. Every move resolves in the newer release.
Output is sorted, so it does not depend on ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from auxcheck._core.progress import tick
from auxcheck._core.text import plural
from auxcheck._releases.wheels import Release, cache_dir, fetch_wheel, find_release
from auxcheck.migrate import moves as moves_module
from auxcheck.migrate.moves import (
    Move,
    MoveTable,
    importable_module,
    store_moves,
    stored_moves,
)

if TYPE_CHECKING:
    from auxcheck._core.shapes import Shape
    from auxcheck._releases.index import Homes, ReleaseIndex

__all__ = [
    "Choice",
    "Gone",
    "Home",
    "InferredMoves",
    "LeftOut",
    "ReleaseMoves",
    "home_near",
    "infer_moves",
    "moves_between",
    "moves_to_apply",
    "render_json",
    "render_toml",
    "subsystem",
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
class Home:
    """Where a release keeps a name that left module ``old``, and how it was chosen."""

    module: str
    definers: tuple[str, ...] = ()
    """Every importable module of the release defining the name, sorted, when there are
    several (the home was chosen among them); () when ``module`` is the only one."""
    why: str = ""
    """How ``module`` was chosen among ``definers`` (empty when it is the only one)."""

    def among(self) -> str:
        """Returns `` (chosen among N modules defining it: <why>)``, or "" for the only one."""
        if not self.definers:
            return ""
        return f" (chosen among {len(self.definers)} modules defining it: {self.why})"


@dataclass(frozen=True, slots=True)
class Choice:
    """A move whose new module was chosen among several definers of the name."""

    old: str
    name: str
    home: Home


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
    choices: tuple[Choice, ...] = ()
    """The moved names whose home was chosen among several modules, sorted."""

    @property
    def moved_names(self) -> int:
        """Returns how many (old module, name) pairs the moves cover."""
        return sum(len(m.names) for m in self.moves)

    def table(self) -> MoveTable:
        """Returns the moves as a MoveTable (what ``auxcheck migrate`` applies)."""
        return MoveTable(self.moves, source=f"moves inferred from sglang {self.source} to "
                         f"{self.target}")

    def summary(self) -> str:
        """Returns one line saying what was found, for stderr."""
        return (f"auxcheck moves: sglang {self.source} -> {self.target}: "
                f"{plural(self.moved_names, 'name')} moved ({plural(len(self.moves), 'move')}"
                f"; {len(self.choices)} chosen among several homes), {len(self.left_out)} left "
                f"out (several homes), {len(self.gone)} gone (no home in {self.target})")


# ---------------------------------------------------------------- inference


def _bound(index: ReleaseIndex, module: str) -> set[str]:
    """Returns every name ``module`` binds at run time: definitions, imports, star imports."""
    from auxcheck._releases.stars import star_names

    summary = index.summary(module)
    if summary is None:
        return set()
    return {*summary.defined, *summary.imported, *star_names(index, module)}


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
    choices: list[Choice] = []
    for module in filter(importable_module, before.modules()):
        tick()  # the progress line of a command that reports it
        for name in _left_names(before, after, module):
            # The subsystem the name came from: a re-export's, where it was defined.
            home = home_near(homes, name, before.provides(module, name).where or module)
            if isinstance(home, Home):
                new = (homes.facade(home.module, name) if _was_facade(before, module, name)
                       else home.module)
                grouped[(module, new)].append(name)
                if home.definers:
                    choices.append(Choice(module, name, Home(new, home.definers, home.why)))
            elif home is not None:
                left_out.append(LeftOut(module, name, home))
            else:
                gone.append(Gone(module, name))
    moves = tuple(Move(old, new, tuple(sorted(names)), after.version)
                  for (old, new), names in sorted(grouped.items()))
    return InferredMoves(before.version, after.version, moves,
                         tuple(sorted(left_out, key=lambda x: (x.old, x.name))),
                         tuple(sorted(gone, key=lambda x: (x.old, x.name))),
                         tuple(sorted(choices, key=lambda x: (x.old, x.name))))


def subsystem(module: str) -> str:
    """Returns the subsystem ``module`` belongs to: ``sglang.srt`` for ``sglang.srt.a.b``.

    SGLang's second-level packages (``srt``, ``multimodal_gen``, ``lang``, ``test``, ...)
    are separate programs sharing a namespace: each defines its own ``SamplingParams``,
    ``logger`` or ``ServerArgs``, and none imports another's internals for them. Inside
    one, names move between packages (0.5.20's contract went from ``srt.sampling`` to
    ``srt.managers``), so no deeper level is a boundary. A top-level module
    (``sglang.bench_one_batch``) is a subsystem of its own.
    """
    return ".".join(module.split(".")[:2])


_PROGRAMS = frozenset({"sglang.srt", "sglang.multimodal_gen"})
"""SGLang's two servers: each runs its own code, so a name never moves from one to the other
(the shared ``sglang.kernels`` and ``sglang.test`` do trade names with them)."""


def _apart(own: str, other: str) -> bool:
    """Returns True when ``own`` and ``other`` are SGLang's two different servers."""
    return own != other and own in _PROGRAMS and other in _PROGRAMS


def home_near(homes: Homes, name: str, old: str) -> Home | tuple[str, ...] | None:
    """Returns the home of ``name``, which left ``old`` (a module, or the dotted place the
    name was defined): the one importable module defining it (never one of the other
    server, ``srt`` or ``multimodal_gen``, than ``old``'s: that is another program's name); else, among those in
    ``old``'s subsystem (or all, when none is), the one SGLang imports it from most. A tuple
    of the candidates when that leaves a tie; None when no importable module defines it."""
    definers = sorted(set(homes.definers.get(name, ())))  # importable modules only
    own = subsystem(old)
    if len(definers) == 1 and _apart(own, subsystem(definers[0])):
        return None  # another program's same-named class: hooking it never reaches old's code
    if len(definers) <= 1:
        return Home(definers[0]) if definers else None
    near = [m for m in definers if subsystem(m) == own]
    if len(near) == 1:
        return Home(near[0], tuple(definers), f"the only one in {own}")
    candidates = near or definers
    used = homes.imports.get(name, Counter())
    ranked = sorted(candidates, key=lambda module: (-used[module], module))
    if used[ranked[0]] <= used[ranked[1]]:
        return tuple(candidates)
    where = f"of those in {own}, " if near else ""
    return Home(ranked[0], tuple(definers),
                f"{where}the one SGLang imports it from most, {plural(used[ranked[0]], 'import')}")


def moves_between(source: str, target: str, *, wheels: Sequence[Path] = (),
                  sources: Sequence[Path] = (), cache: Path | None = None,
                  download: bool = True, jobs: int | None = None) -> InferredMoves:
    """Returns the moves from release ``source`` to release ``target``, found as ``find_release``
    finds them (given wheels and trees, the cache, a download).

    Raises ReleaseError when a release cannot be had.
    """
    from auxcheck._core.progress import task
    from auxcheck._releases.index import ReleaseIndex, read_cached, write_cached

    releases = [find_release(version, wheels=wheels, sources=sources, cache=cache,
                             download=download) for version in (source, target)]
    stored = _cache_path(releases, cache)
    found = None if stored is None else _from_document(read_cached(stored))
    if stored is not None and found is not None:
        _write_table(stored, found)
        return found
    indexes = []
    for release in releases:
        index = ReleaseIndex(release, cache=cache)
        index.load_all(jobs=jobs, cache=cache)
        indexes.append(index)
    with task(f"inferring the moves from sglang {source} to {target}"):
        found = infer_moves(indexes[0], indexes[1])
    if stored is not None:
        write_cached(stored, json.loads(render_json(found)))
        _write_table(stored, found)
    return found


class ReleaseMoves(NamedTuple):
    """What ``auxcheck migrate --sglang A:B`` applies: the moves, and how many names were left
    out (several possible homes)."""

    moves: tuple[Move, ...]
    left_out: int


def moves_to_apply(source: str, target: str, *, wheels: Sequence[Path] = (),
                   sources: Sequence[Path] = (), cache: Path | None = None,
                   download: bool = True, jobs: int | None = None) -> ReleaseMoves:
    """Returns the moves from release ``source`` to ``target`` as :func:`moves_between` finds
    them, with the number of names left out.

    Releases taken from the cache (no ``wheels`` or ``sources``) are looked up in the compact
    table :func:`moves_between` caches beside its document, keyed by the same fingerprints:
    neither wheel is opened, and the table is read whole after its digest is checked, not
    validated name by name. A table missing or damaged is inferred (or read) afresh.
    """
    if not wheels and not sources:
        # A cached wheel's fingerprint needs only its file's status, not its contents:
        # the table was written after this very file was read and found to be `version`.
        releases = [Release(version, fetch_wheel(version, cache=cache, download=download),
                            "wheel") for version in (source, target)]
        stored = _cache_path(releases, cache)
        found = None if stored is None else stored_moves(_table_path(stored))
        if found is not None:
            return ReleaseMoves(*found)
    full = moves_between(source, target, wheels=wheels, sources=sources, cache=cache,
                         download=download, jobs=jobs)
    return ReleaseMoves(full.moves, len(full.left_out))


def _table_path(stored: Path) -> Path:
    return stored.with_name(stored.name.removesuffix(".json") + ".table")


def _write_table(stored: Path, found: InferredMoves) -> None:
    """Caches ``found``'s moves compactly beside ``stored``, for :func:`moves_to_apply`."""
    target = _table_path(stored)
    if not target.exists():
        store_moves(target, found.moves, left_out=len(found.left_out))


def _cache_path(releases: Sequence[Release], cache: Path | None) -> Path | None:
    """Returns where the moves between ``releases`` are cached: keyed by both releases'
    fingerprints and by the code that infers them (any change to it infers afresh)."""
    try:
        keys = [f"{r.version}-{r.fingerprint()}" for r in releases]
        code = hashlib.sha256()
        for module in sorted([*Path(__file__).parent.glob("*.py"), Path(str(moves_module.__file__))]):
            code.update(module.read_bytes())
    except OSError:
        return None
    return ((cache or cache_dir()) / "index"
            / f"moves-{'-'.join(keys)}-{code.hexdigest()[:16]}.json")


_DOCUMENT: Shape = {
    "from": str, "to": str,
    "moves": [{"old": str, "new": str, "names": [str], "since": str}],
    "left_out": [{"old": str, "name": str, "candidates": [str]}],
    "gone": [{"old": str, "name": str}],
    "chosen": [{"old": str, "name": str, "new": str, "definers": [str], "why": str}],
}
"""The document :func:`render_json` writes."""


def _from_document(document: object) -> InferredMoves | None:
    """Returns the moves :func:`render_json` wrote, or None for anything else (a value of
    the wrong type included: the cache entry is then absent, and rebuilt)."""
    from auxcheck._core.shapes import shaped

    if not (isinstance(document, dict) and shaped(document, _DOCUMENT)):
        return None
    return InferredMoves(
        source=document["from"], target=document["to"],
        moves=tuple(Move(m["old"], m["new"], tuple(m["names"]), m["since"])
                    for m in document["moves"]),
        left_out=tuple(LeftOut(x["old"], x["name"], tuple(x["candidates"]))
                       for x in document["left_out"]),
        gone=tuple(Gone(x["old"], x["name"]) for x in document["gone"]),
        choices=tuple(Choice(x["old"], x["name"], Home(x["new"], tuple(x["definers"]), x["why"]))
                      for x in document["chosen"]))


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


def _choice_comment(choice: Choice) -> str:
    others = [m for m in choice.home.definers if m != choice.home.module]
    shown = ", ".join(others[:_SHOWN_CANDIDATES])
    more = len(others) - _SHOWN_CANDIDATES
    tail = f", and {more} more" if more > 0 else ""
    return (f"# {choice.name}: chosen among {len(choice.home.definers)} modules defining it "
            f"({choice.home.why}); also in {shown}{tail}")


def render_toml(found: InferredMoves) -> str:
    """Returns the moves as the ``[[move]]`` TOML that ``auxcheck migrate --moves`` reads.

    A move whose home was chosen among several modules has a ``#`` comment per such name
    saying how; left-out names follow as ``#`` comments, each with its candidate modules.
    """
    lines = _header(found)
    chosen: dict[tuple[str, str], list[Choice]] = defaultdict(list)
    for choice in found.choices:
        chosen[(choice.old, choice.home.module)].append(choice)
    for move in found.moves:
        lines += ["", *map(_choice_comment, chosen[(move.old, move.new)]), "[[move]]", f"old = {json.dumps(move.old)}", f"new = {json.dumps(move.new)}",
                  _toml_list(move.names), f"since = {json.dumps(move.since)}"]
    return "\n".join([*lines, *_left_out_block(found)]) + "\n"


def render_json(found: InferredMoves) -> str:
    """Returns the moves, left-out and gone names, and the homes chosen among several
    (``chosen``) as a JSON document."""
    return json.dumps({
        "from": found.source, "to": found.target,
        "moves": [{"old": m.old, "new": m.new, "names": list(m.names), "since": m.since}
                  for m in found.moves],
        "left_out": [{"old": x.old, "name": x.name, "candidates": list(x.candidates)}
                     for x in found.left_out],
        "gone": [{"old": x.old, "name": x.name} for x in found.gone],
        "chosen": [{"old": x.old, "name": x.name, "new": x.home.module,
                    "definers": list(x.home.definers), "why": x.home.why}
                   for x in found.choices],
    }, indent=2)
