"""The table of moved names: the built-in TOML file plus the user's own moves.

A move says that ``names`` left module ``old`` for module ``new`` in release
``since``. Users add moves in ``[tool.auxcheck.migrate]`` of ``pyproject.toml``
(``move = [{old = ..., new = ..., names = [...]}]``) or in a file passed with
``--moves`` holding ``[[move]]`` tables; a malformed entry raises
:class:`~auxcheck.errors.MovesTableError` naming the file, the entry and the problem.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auxcheck.errors import MovesTableError

# tomllib is stdlib from 3.11; 3.10 uses the tomli backport (a conditional dependency).
tomllib: Any = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")

__all__ = ["BUILTIN_SOURCE", "Move", "MoveTable", "builtin_moves", "load_moves", "parse_moves"]

BUILTIN_SOURCE = "auxcheck/migrate/moves.toml"
_KEYS = frozenset({"old", "new", "names", "since"})


@dataclass(frozen=True, slots=True)
class Move:
    """One move: ``names`` left module ``old`` for module ``new`` in release ``since``."""

    old: str
    new: str
    names: tuple[str, ...]
    since: str = ""


@dataclass(frozen=True, slots=True)
class MoveTable:
    """Every known move, with lookups by old module and by (old module, name).

    The lookups are built once: a table inferred from two releases holds thousands of
    moves, and the scanner asks them for every file and string.
    """

    moves: tuple[Move, ...]
    _by_old: Mapping[str, Mapping[str, str]] = field(init=False, repr=False, compare=False)
    _old: frozenset[str] = field(init=False, repr=False, compare=False)
    _new: frozenset[str] = field(init=False, repr=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_old: dict[str, dict[str, str]] = {}
        for move in self.moves:
            for name in move.names:
                by_old.setdefault(move.old, {})[name] = move.new
        object.__setattr__(self, "_by_old", by_old)
        object.__setattr__(self, "_old", frozenset(by_old))
        object.__setattr__(self, "_new", frozenset(m.new for m in self.moves))
        object.__setattr__(self, "_hash", hash(self.moves))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[MoveTable], tuple[tuple[Move, ...]]]:
        # Rebuilt from the moves in the receiving process, whose string hashes differ.
        return (MoveTable, (self.moves,))

    @property
    def old_modules(self) -> frozenset[str]:
        """Returns the modules names moved out of."""
        return self._old

    @property
    def new_modules(self) -> frozenset[str]:
        """Returns the modules names moved into."""
        return self._new

    def names_from(self, old: str) -> dict[str, str]:
        """Returns {moved name: new module} for the names that left module ``old``."""
        return dict(self._by_old.get(old, {}))

    def new_module_of(self, old: str, name: str) -> str | None:
        """Returns the module ``name`` moved to from ``old``, or None if it did not move."""
        return self._by_old.get(old, {}).get(name)

    def needles(self) -> tuple[bytes, ...]:
        """Returns the byte strings a file must contain to possibly use an old module.

        The last component of each old module covers absolute, relative
        (``from ..sampling.sampling_observer``) and ``from pkg import module`` forms,
        and dotted string targets.
        """
        return tuple(sorted({m.old.rpartition(".")[2].encode() for m in self.moves}))

    def merged(self, other: Iterable[Move], *, source: str) -> MoveTable:
        """Returns this table with ``other`` appended; conflicting moves raise MovesTableError."""
        return _checked((*self.moves, *other), source)


def _fail(source: str, index: int, raw: object, problem: str) -> MovesTableError:
    old = raw.get("old") if isinstance(raw, Mapping) else None
    entry = f"#{index + 1}" + (f" (old = {old!r})" if isinstance(old, str) else "")
    return MovesTableError(source, entry, problem)


def _is_dotted(value: object) -> bool:
    return isinstance(value, str) and all(p.isidentifier() for p in value.split("."))


def _parse_entry(raw: object, index: int, source: str) -> Move:
    if not isinstance(raw, Mapping):
        raise _fail(source, index, raw, f"expected a table, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise _fail(source, index, raw, f"unknown key(s) {', '.join(unknown)}; "
                    "expected old, new, names and optionally since")
    for key in ("old", "new"):
        if not _is_dotted(raw.get(key)):
            raise _fail(source, index, raw, f"{key!r} must be a dotted module path such as "
                        f"'pkg.module', got {raw.get(key)!r}")
    names = raw.get("names")
    if not isinstance(names, list) or not names or not all(
        isinstance(n, str) and n.isidentifier() for n in names
    ):
        raise _fail(source, index, raw, "'names' must be a non-empty list of identifiers, "
                    f"got {names!r}")
    if raw["old"] == raw["new"]:
        raise _fail(source, index, raw, "'old' and 'new' are the same module")
    since = raw.get("since", "")
    if not isinstance(since, str):
        raise _fail(source, index, raw, f"'since' must be a string, got {since!r}")
    return Move(raw["old"], raw["new"], tuple(names), since)


def _checked(moves: Sequence[Move], source: str) -> MoveTable:
    seen: dict[tuple[str, str], str] = {}
    for index, move in enumerate(moves):
        for name in move.names:
            earlier = seen.setdefault((move.old, name), move.new)
            if earlier != move.new:
                raise MovesTableError(
                    source, f"#{index + 1} (old = {move.old!r})",
                    f"{name!r} is already moved to {earlier!r}; a name can move to one module",
                )
    return MoveTable(tuple(dict.fromkeys(moves)))


def parse_moves(entries: object, *, source: str) -> tuple[Move, ...]:
    """Returns the moves of a list of raw tables; raises MovesTableError when malformed."""
    if not isinstance(entries, list):
        raise MovesTableError(source, "move", f"expected a list of tables, got "
                              f"{type(entries).__name__}")
    moves = tuple(_parse_entry(raw, i, source) for i, raw in enumerate(entries))
    _checked(moves, source)
    return moves


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data: dict[str, Any] = tomllib.load(handle)
            return data
    except OSError as exc:
        raise MovesTableError(str(path), "(file)", f"cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise MovesTableError(str(path), "(file)", f"not valid TOML: {exc}") from None


def builtin_moves() -> MoveTable:
    """Returns the built-in table shipped in ``auxcheck/migrate/moves.toml``."""
    text = (Path(__file__).parent / "moves.toml").read_text("utf-8")
    data = tomllib.loads(text)
    return _checked(parse_moves(data.get("move", []), source=BUILTIN_SOURCE), BUILTIN_SOURCE)


def _pyproject_moves(pyproject: Path) -> tuple[Move, ...]:
    section = _read_toml(pyproject).get("tool", {}).get("auxcheck", {}).get("migrate", {})
    if "move" not in section:
        return ()
    return parse_moves(section["move"], source=f"{pyproject} [tool.auxcheck.migrate]")


def load_moves(*, moves_file: Path | None = None, pyproject: Path | None = None) -> MoveTable:
    """Returns the built-in moves plus those of ``pyproject`` and ``moves_file``, if given.

    ``moves_file`` holds ``[[move]]`` tables; ``pyproject`` is read for
    ``[tool.auxcheck.migrate]`` ``move`` entries. Raises MovesTableError when malformed.
    """
    table = builtin_moves()
    if pyproject is not None and pyproject.is_file():
        table = table.merged(_pyproject_moves(pyproject), source=str(pyproject))
    if moves_file is not None:
        data = _read_toml(moves_file)
        extra = parse_moves(data.get("move", []), source=str(moves_file))
        table = table.merged(extra, source=str(moves_file))
    return table
