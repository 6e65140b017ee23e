"""The table of moved names: the built-in TOML file plus the user's own moves.

A move says that ``names`` left module ``old`` for module ``new`` in release
``since``. Users add moves in ``[tool.auxcheck.migrate]`` of ``pyproject.toml``
(``move = [{old = ..., new = ..., names = [...]}]``) or in a file passed with
``--moves`` holding ``[[move]]`` tables; a malformed entry raises
:class:`~auxcheck.errors.MovesTableError` naming the file, the entry and the problem.
A run without moves of the user's own parses no TOML (see :data:`_BUILTIN`), and the
value types are a NamedTuple and a slotted class rather than dataclasses: importing
:mod:`dataclasses` (and :mod:`inspect` with it) would cost ``auxcheck migrate --check``
on a tree with no work a tenth of its time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from keyword import iskeyword
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from auxcheck._core.errors import MovesTableError
from auxcheck._core.paths import is_file
from auxcheck._core.versions import release_numbers

if TYPE_CHECKING:
    from auxcheck.migrate.references import UseFilter

__all__ = [
    "BUILTIN_SOURCE",
    "Move",
    "MoveTable",
    "builtin_moves",
    "importable_module",
    "load_moves",
    "parse_moves",
    "read_builtin_file",
    "store_moves",
    "stored_moves",
]

BUILTIN_SOURCE = "auxcheck/migrate/moves.toml"
_KEYS = frozenset({"old", "new", "names", "since"})


class Move(NamedTuple):
    """One move: ``names`` left module ``old`` for module ``new`` in release ``since``."""

    old: str
    new: str
    names: tuple[str, ...]
    since: str = ""



class MoveTable:
    """Every known move, with lookups by old module and by (old module, name).

    A chain (``a -> b`` and ``b -> c`` for one name) is followed to its end, so one run
    finishes the migration; a cycle raises MovesTableError naming it. Immutable, hashed
    and compared by its moves. The lookups are built once: a table
    inferred from two releases holds thousands of moves, and the scanner asks them for
    every file and string.
    """

    __slots__ = ("_above", "_by_old", "_filter", "_hash", "_needles", "_new", "_old",
                 "_packages", "moves")
    moves: tuple[Move, ...]
    _by_old: Mapping[str, Mapping[str, str]]
    _old: frozenset[str]
    _new: frozenset[str]
    _hash: int
    _needles: tuple[bytes, ...]
    _filter: UseFilter | None
    _packages: frozenset[str]
    _above: frozenset[str]

    def __init__(self, moves: tuple[Move, ...], *, source: str = "moves table") -> None:
        self._build(moves, _followed(moves, source, lambda index: _entry(index, moves[index])))

    def _build(self, moves: tuple[Move, ...], by_old: Mapping[str, Mapping[str, str]]) -> None:
        """Sets every field from ``moves`` and their chains followed (``by_old``)."""
        init = object.__setattr__  # this class's own __setattr__ refuses every assignment
        init(self, "moves", moves)
        init(self, "_by_old", by_old)
        init(self, "_old", frozenset(by_old))
        init(self, "_new", frozenset(m.new for m in moves))
        init(self, "_hash", hash(moves))
        init(self, "_needles", tuple(sorted({m.old.rpartition(".")[2].encode() for m in moves})))
        init(self, "_filter", None)
        init(self, "_packages", frozenset(module.partition(".")[0] for m in moves
                                          for module in (m.old, m.new)))
        init(self, "_above", frozenset(old.rsplit(".", depth)[0] for old in by_old
                                       for depth in range(1, old.count(".") + 1)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a MoveTable is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a MoveTable is immutable")

    def __eq__(self, other: object) -> bool:
        return self.moves == other.moves if isinstance(other, MoveTable) else NotImplemented

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"MoveTable(moves={self.moves!r})"

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

    @property
    def packages(self) -> frozenset[str]:
        """Returns the top-level packages of the old and new modules (``sglang``): where a
        file's dotted module name is anchored when its folders have no ``__init__.py``."""
        return self._packages

    def is_above_old(self, module: str) -> bool:
        """Returns True when ``module`` is a package some old module lies under."""
        return module in self._above

    def names_from(self, old: str) -> dict[str, str]:
        """Returns {moved name: new module} for the names that left module ``old`` (the end of
        a chain of moves)."""
        return dict(self._by_old.get(old, {}))

    def predating(self, old: str, releases: Sequence[str]) -> tuple[str, str] | None:
        """Returns the oldest of ``releases`` from before a move out of module ``old``, with
        that move's release (``since``), or None when every release has the move (or the
        moves out of ``old`` name no release)."""
        since = [(n, m.since) for m in self.moves
                 if m.old == old and (n := release_numbers(m.since)) is not None]
        if not since:
            return None
        first, named = min(since)
        older = sorted((n, r) for r in releases
                       if (n := release_numbers(r)) is not None and n < first)
        return (older[0][1], named) if older else None

    def new_module_of(self, old: str, name: str) -> str | None:
        """Returns the module ``name`` moved to from ``old``, or None if it did not move."""
        return self._by_old.get(old, {}).get(name)

    def needles(self) -> tuple[bytes, ...]:
        """Returns the byte strings a file must contain to possibly use an old module.

        The last component of each old module covers absolute, relative
        (``from ..sampling.sampling_observer``) and ``from pkg import module`` forms,
        and dotted string targets.
        """
        return self._needles

    def could_use(self, data: bytes) -> bool:
        """Returns True when ``data`` can hold a use of a moved name's old module.

        It must spell an old module (:meth:`needles`) where what follows can be a moved
        name (``from old import X``, ``old.X``, ``"old.X"``), or spell it otherwise (``import
        old as m``, ``"old"``) and name one of its moved names anywhere, or hold a star or
        dynamic import (AUX502 whatever it imports): :class:`~auxcheck.migrate.references.
        UseFilter`, built once per table. A file that cannot is never parsed: nothing in it
        is left to migrate.
        """
        use_filter = self._filter
        if use_filter is None:
            from auxcheck.migrate.references import UseFilter

            use_filter = UseFilter(self._by_old)
            object.__setattr__(self, "_filter", use_filter)
        return use_filter(data)

    def merged(self, other: Iterable[Move], *, source: str) -> MoveTable:
        """Returns this table with ``other`` appended; conflicting moves raise MovesTableError."""
        return _checked((*self.moves, *other), source, skip=len(self.moves))


def _fail(source: str, index: int, raw: object, problem: str) -> MovesTableError:
    old = raw.get("old") if isinstance(raw, Mapping) else None
    entry = f"#{index + 1}" + (f" (old = {old!r})" if isinstance(old, str) else "")
    return MovesTableError(source, entry, problem)


def importable_module(name: str) -> bool:
    """Returns True for a module name an import statement can spell: dotted identifiers, none
    of them a keyword (``sglang.srt.kw.class`` is a file, but no ``import`` can name it)."""
    return all(part.isidentifier() and not iskeyword(part) for part in name.split("."))


def _is_dotted(value: object) -> bool:
    return isinstance(value, str) and importable_module(value)


def _keyword_in(value: object) -> str:
    """Returns ``; 'class' is a Python keyword, ...`` for a path with a keyword part, else ""."""
    parts = value.split(".") if isinstance(value, str) else []
    word = next((p for p in parts if iskeyword(p)), None)
    if word is None:
        return ""
    return (f"; {word!r} is a Python keyword, so no import statement can name the module "
            "(rename it, or leave this entry out)")


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
                        f"'pkg.module', got {raw.get(key)!r}{_keyword_in(raw.get(key))}")
    names = raw.get("names")
    if not isinstance(names, list) or not names or not all(
        isinstance(n, str) and _is_dotted(n) and "." not in n for n in names
    ):
        word = next((n for n in names if isinstance(n, str) and iskeyword(n)), None) if (
            isinstance(names, list)) else None
        why = (f"; {word!r} is a Python keyword, which no import can name" if word else "")
        raise _fail(source, index, raw, "'names' must be a non-empty list of identifiers, "
                    f"got {names!r}{why}")
    if raw["old"] == raw["new"]:
        raise _fail(source, index, raw, "'old' and 'new' are the same module")
    since = raw.get("since", "")
    if not isinstance(since, str):
        raise _fail(source, index, raw, f"'since' must be a string, got {since!r}")
    return Move(raw["old"], raw["new"], tuple(names), since)


def _entry(index: int, move: Move) -> str:
    return f"#{index + 1} (old = {move.old!r})"


def _checked(moves: Sequence[Move], source: str, *, skip: int = 0) -> MoveTable:
    """Returns the table of ``moves``; raises MovesTableError naming the entry (counted from
    ``skip``: the moves before it are an earlier table's) that conflicts, cycles or cannot
    be imported."""
    def entry(index: int) -> str:
        move = moves[index]
        if index < skip:
            return f"(old = {move.old!r}, of the table these moves join)"
        return _entry(index - skip, move)

    seen: dict[tuple[str, str], str] = {}
    for index, move in enumerate(moves):
        for name in move.names:
            earlier = seen.setdefault((move.old, name), move.new)
            if earlier != move.new:
                raise MovesTableError(
                    source, entry(index),
                    f"{name!r} is already moved to {earlier!r}; a name can move to one module",
                )
    by_old = _followed(moves, source, entry)  # names the entry as the user wrote it
    table = MoveTable.__new__(MoveTable)
    table._build(tuple(dict.fromkeys(moves)), by_old)  # a repeated move changes no chain
    return table


def _followed(moves: Sequence[Move], source: str,
              entry: Callable[[int], str]) -> dict[str, dict[str, str]]:
    """Returns {old: {name: new}} with each chain of moves followed to its end; raises
    MovesTableError naming a cycle (``a -> b`` and ``b -> a``: each run would undo the last)."""
    direct: dict[tuple[str, str], tuple[str, int]] = {}
    for index, move in enumerate(moves):
        for module in (move.old, move.new):
            if not importable_module(module):
                raise MovesTableError(source, entry(index), (
                    f"{module!r} is not a module name an import can spell{_keyword_in(module)}"))
        for name in move.names:
            direct.setdefault((move.old, name), (move.new, index))
    by_old: dict[str, dict[str, str]] = {}
    for (old, name), (new, index) in direct.items():
        path = [old, new]
        while (path[-1], name) in direct:
            new, index = direct[(path[-1], name)]
            if new in path:
                cycle = " -> ".join([*path[path.index(new):], new])
                raise MovesTableError(source, entry(index), (
                    f"{name!r} moves in a cycle: {cycle}; each run would undo the last; "
                    "remove the move that points back"))
            path.append(new)
        by_old.setdefault(old, {})[name] = path[-1]
    return by_old


def parse_moves(entries: object, *, source: str) -> tuple[Move, ...]:
    """Returns the moves of a list of raw tables; raises MovesTableError when malformed."""
    if not isinstance(entries, list):
        raise MovesTableError(source, "move", f"expected a list of tables, got "
                              f"{type(entries).__name__}")
    moves = tuple(_parse_entry(raw, i, source) for i, raw in enumerate(entries))
    _checked(moves, source)
    return moves


def _read_toml(path: Path) -> dict[str, Any]:
    from auxcheck._core.config import load_toml
    from auxcheck._core.errors import TomlFileError

    try:
        return load_toml(path)
    except TomlFileError as exc:
        raise MovesTableError(str(path), "(file)", exc.problem) from None


_BUILTIN = (
    Move("sglang.srt.sampling.sampling_observer", "sglang.srt.managers.auxiliary_output",
         ("CommittedTokens", "DeviceAuxiliaryOutput", "HostAuxiliaryOutput"), "0.5.20"),
)
"""``moves.toml`` as Python, so that no run pays for a TOML parser just to learn it.

``moves.toml`` stays the table people read and edit; ``tests/test_migrate_cli.py`` keeps the
two equal (:func:`read_builtin_file` parses the file).
"""


@lru_cache(maxsize=1)
def builtin_moves() -> MoveTable:
    """Returns the built-in table of ``auxcheck/migrate/moves.toml``."""
    return _checked(_BUILTIN, BUILTIN_SOURCE)


def read_builtin_file() -> tuple[Move, ...]:
    """Returns the moves of ``auxcheck/migrate/moves.toml`` itself, parsed from its TOML."""
    data = _read_toml(Path(__file__).parent / "moves.toml")
    return parse_moves(data.get("move", []), source=BUILTIN_SOURCE)


def _pyproject_moves(pyproject: Path) -> tuple[Move, ...]:
    from auxcheck._core.config import auxcheck_table
    from auxcheck._core.errors import InvalidArgument

    try:  # the one reader of [tool.auxcheck]: `tool = 5` is an error naming the key
        section = auxcheck_table(pyproject, "migrate")
    except InvalidArgument as exc:
        problem = str(exc).removeprefix(f"{pyproject}: ")
        raise MovesTableError(str(pyproject), "[tool.auxcheck.migrate]", problem) from None
    if "move" not in section:
        return ()
    return parse_moves(section["move"], source=f"{pyproject} [tool.auxcheck.migrate]")


def load_moves(*, moves_file: Path | None = None, pyproject: Path | None = None,
               cache: Callable[[], Path] | None = None) -> MoveTable:
    """Returns the built-in moves plus those of ``pyproject`` and ``moves_file``, if given.

    ``moves_file`` holds ``[[move]]`` tables; ``pyproject`` is read for
    ``[tool.auxcheck.migrate]`` ``move`` entries. Raises MovesTableError when malformed.
    ``cache``: the folder where the moves of a file read before are kept (:func:`store_moves`),
    keyed by its bytes, so that its TOML (thousands of tables, for moves inferred between
    releases) is not parsed again.
    """
    table = builtin_moves()
    if pyproject is not None and is_file(pyproject):
        table = table.merged(_pyproject_moves(pyproject), source=str(pyproject))
    if moves_file is not None:
        table = table.merged(_file_moves(moves_file, cache), source=str(moves_file))
    return table


def _file_moves(path: Path, cache: Callable[[], Path] | None) -> tuple[Move, ...]:
    """Returns the moves of the ``[[move]]`` file at ``path``, from ``cache`` when it holds
    the moves of the same bytes; raises MovesTableError when malformed."""
    key = None if cache is None else _bytes_key(path)
    stored = None if cache is None or key is None else cache() / "migrate" / f"moves-{key}.table"
    if stored is not None:
        found = stored_moves(stored)
        if found is not None:
            return found[0]
    moves = parse_moves(_read_toml(path).get("move", []), source=str(path))
    if stored is not None and _bytes_key(path) == key:  # the bytes parsed are the key's
        store_moves(stored, moves)
    return moves


def _bytes_key(path: Path) -> str | None:
    """Returns the key the moves of the file at ``path`` are kept under: its bytes' and this
    module's code's digest; None when it cannot be read (its reader then says why)."""
    import hashlib

    from auxcheck._core.paths import CONFIG_LIMIT, read_regular_file

    try:
        data = read_regular_file(path, limit=CONFIG_LIMIT)
        code = Path(__file__).read_bytes()
    except OSError:
        return None
    return hashlib.sha256(hashlib.sha256(code).digest() + data).hexdigest()[:32]


_STORED_MAGIC = b"auxcheck-moves-table 1 "
"""The first line of a stored table starts so, then the SHA-256 of the rest of the file."""


def store_moves(path: Path, moves: Sequence[Move], *, left_out: int = 0) -> None:
    """Writes ``moves`` (and a count of names left out) compactly to ``path``, for
    :func:`stored_moves`: to a temporary name, then renamed. A cache that cannot be written
    costs time on the next run, nothing else."""
    import hashlib
    import json
    import os

    body = json.dumps({"left_out": left_out,
                       "moves": [[m.old, m.new, m.since, *m.names] for m in moves]},
                      separators=(",", ":")).encode()
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(_STORED_MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def stored_moves(path: Path) -> tuple[tuple[Move, ...], int] | None:
    """Returns the moves and the count :func:`store_moves` wrote at ``path``, read whole once
    its digest matches (they were checked before they were stored), or None when there is
    no such file or it does not match its digest or shape."""
    import hashlib
    import json

    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, _, body = data.partition(b"\n")
    if head != _STORED_MAGIC + hashlib.sha256(body).hexdigest().encode():
        return None
    try:
        document = json.loads(body)
        moves = tuple(Move(old, new, tuple(names), since)
                      for old, new, since, *names in document["moves"])
        left_out = document["left_out"]
    except (ValueError, TypeError, KeyError, RecursionError):
        return None
    return (moves, left_out) if type(left_out) is int else None


def find_pyproject(start: str | Path) -> Path | None:
    """Returns the nearest ``pyproject.toml`` at or above ``start`` (a file or folder): the
    project whose ``[tool.auxcheck.migrate]`` moves apply there."""
    import os

    folder = Path(os.path.abspath(start))
    for candidate in [folder, *folder.parents]:
        if is_file(candidate / "pyproject.toml"):
            return candidate / "pyproject.toml"
    return None


def project_moves(pyproject: Path | None, *, moves_file: Path | None = None,
                  cache: Callable[[], Path] | None = None) -> MoveTable:
    """Returns the moves that apply in the project of ``pyproject`` (found by
    :func:`find_pyproject`; None: no project): the built-in ones, the project's own
    (``[tool.auxcheck.migrate]``) and ``moves_file``'s (``cache``: see :func:`load_moves`).

    The one place every command (``migrate``, ``check``, ``pytest --auxcheck``'s imports
    item) builds its table, so they agree on what is old. Raises MovesTableError, or
    InvalidArgument for a ``[tool]`` table that is not one, naming the file.
    """
    from auxcheck._core.config import auxcheck_table

    if pyproject is not None:  # `tool = 5` is an error naming the key, not a crash
        auxcheck_table(pyproject, "migrate")
    return load_moves(moves_file=moves_file, pyproject=pyproject, cache=cache)
