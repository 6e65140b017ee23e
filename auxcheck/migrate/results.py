"""Remembered ``--check`` verdicts: what one file gave under one moves table, keyed by its bytes.

``auxcheck migrate --check`` over a tree it has seen asks this cache before it tests a file's
bytes (:meth:`~auxcheck.migrate.moves.MoveTable.could_use`) or parses it. An entry's key is
the SHA-256 of everything the verdict depends on: the file's bytes, its path as given (the
findings are located by it) and as an absolute path, which folders above it hold an
``__init__.py`` (its module name), the moves table, the releases the project supports,
auxcheck's own code (every module of :mod:`auxcheck.migrate` and :mod:`auxcheck._core`), the
Python and the libcst that parse it. Only three verdicts are kept: the byte test turned the file away,
the file was parsed and holds no use, or it holds these AUX501/AUX502 findings; a file that
failed (unreadable, undecodable, unparsable) is computed afresh each run.

Every table's entries live in one file, its first line the SHA-256 of the rest: a file that
does not match its digest is ignored whole, and an entry of the wrong shape is computed
afresh (and replaced), never trusted. The file is written whole to a temporary name and
renamed, so a reader never sees half of it. Only ``--check`` reads the cache: a rewrite never
trusts one to decide what to write.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from auxcheck.migrate.moves import MoveTable

if TYPE_CHECKING:
    from auxcheck._core.report import Finding

__all__ = ["Keyer", "ResultCache", "Verdict"]

Verdict = Literal["filtered", "unchanged", "changed"]
"""What a file gave: turned away by the byte test, parsed and clean, or findings."""

_MAGIC = b"auxcheck-migrate-results 1 "
_SUFFIX = ".results"
_MOST_ENTRIES = 200_000
"""Past this many entries, a table's file keeps only those this run read or wrote."""
_MOST_TABLES = 16
"""At most this many tables' files are kept; the least recently written go first."""
_FILTERED, _UNCHANGED = 0, 1
_FINDING_FIELDS = 8
"""code, message, hint, location, detail, heading, seen, expected."""


def _code_digest() -> bytes:
    """Returns the SHA-256 of auxcheck's modules a verdict depends on (migrate's and the core's)."""
    import hashlib

    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    for folder in (package / "migrate", package / "_core"):
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(files):
                if name.endswith((".py", ".toml")):
                    path = os.path.join(root, name)
                    digest.update(os.path.relpath(path, package).encode() + b"\0")
                    with open(path, "rb") as source:
                        digest.update(hashlib.sha256(source.read()).digest())
    return digest.digest()


def _libcst_version() -> str:
    """Returns the installed libcst's version, read from its metadata (libcst not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("libcst")
    except PackageNotFoundError:
        return "no libcst"


class Keyer:
    """Computes an entry's key for a file's bytes in any process (it is sent to the workers).

    The table's part of the key is computed once, on first use; which folders hold an
    ``__init__.py`` is asked once per folder.
    """

    __slots__ = ("_folders", "_namespace", "moves", "releases")

    def __init__(self, moves: MoveTable, releases: Sequence[str] = ()) -> None:
        self.moves = moves
        self.releases = tuple(releases)
        self._namespace: bytes | None = None
        self._folders: dict[str, bytes] = {}

    def __getstate__(self) -> tuple[MoveTable, tuple[str, ...], bytes | None]:
        return self.moves, self.releases, self.namespace

    def __setstate__(self, state: tuple[MoveTable, tuple[str, ...], bytes | None]) -> None:
        self.moves, self.releases, self._namespace = state
        self._folders = {}

    @property
    def namespace(self) -> bytes:
        """Returns the digest of what every key shares: the table, releases, code, Python."""
        if self._namespace is None:
            import hashlib

            digest = hashlib.sha256(repr((self.moves.moves, self.releases)).encode())
            digest.update(_code_digest())
            digest.update(f"{sys.implementation.cache_tag}|{sys.version}".encode())
            digest.update(_libcst_version().encode())  # its parser decides what parses
            self._namespace = digest.digest()
        return self._namespace

    def __call__(self, path: str, data: bytes) -> str:
        """Returns the key of the file at ``path`` holding ``data``."""
        import hashlib  # here, not at the top: a run with no candidate never needs it

        absolute = os.path.abspath(path)
        digest = hashlib.sha256(self.namespace)
        for part in (path, absolute):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(self._packages(os.path.dirname(absolute)))
        digest.update(data)
        return digest.hexdigest()

    def _packages(self, folder: str) -> bytes:
        """Returns, for ``folder`` and each folder above it, whether it holds ``__init__.py``
        (what a file's module name is read from, with its path)."""
        found = self._folders.get(folder)
        if found is None:
            parent = os.path.dirname(folder)
            above = self._packages(parent) if parent != folder else b"\0"
            found = (b"1" if os.path.isfile(os.path.join(folder, "__init__.py")) else b"0") + above
            self._folders[folder] = found
        return found


class ResultCache:
    """The remembered verdicts of one table: :meth:`get` before a file is worked on,
    :meth:`put` after, :meth:`save` at the end of the run."""

    def __init__(self, folder: Callable[[], Path], keyer: Keyer) -> None:
        self.keyer = keyer
        self._folder = folder
        self._path: Path | None = None
        self._entries: dict[str, object] | None = None
        self._used: set[str] = set()
        self._added: dict[str, object] = {}

    def _file(self) -> Path:
        if self._path is None:
            self._path = self._folder() / "migrate" / (self.keyer.namespace.hex()[:32] + _SUFFIX)
        return self._path

    def _loaded(self) -> dict[str, object]:
        if self._entries is None:
            self._entries = _read(self._file())
        return self._entries

    def get(self, path: str, data: bytes) -> tuple[Verdict, tuple[Finding, ...]] | None:
        """Returns the verdict remembered for ``path`` holding ``data``, or None (none kept, or
        one of the wrong shape: it is then computed afresh)."""
        key = self.keyer(path, data)
        value = self._loaded().get(key)
        if value is None:
            return None
        self._used.add(key)
        if value == _FILTERED and type(value) is int:
            return "filtered", ()
        if value == _UNCHANGED and type(value) is int:
            return "unchanged", ()
        findings = _findings(value)
        return None if findings is None else ("changed", findings)

    def put(self, key: str, verdict: Verdict, findings: Sequence[Finding] = ()) -> None:
        """Remembers ``verdict`` (with its findings) for the file whose key is ``key``; findings
        that cannot be written back exactly are not remembered."""
        if verdict == "changed":
            value: object = _stored(findings)
            if value is None:
                return
        else:
            value = _FILTERED if verdict == "filtered" else _UNCHANGED
        if self._loaded().get(key) != value:
            self._added[key] = value
        self._used.add(key)

    def save(self) -> None:
        """Writes the entries this run added, with those kept before; a cache that cannot be
        written costs time on the next run, nothing else."""
        if not self._added:
            return
        import hashlib
        import json

        entries = {**self._loaded(), **self._added}
        if len(entries) > _MOST_ENTRIES:
            entries = {k: v for k, v in entries.items() if k in self._used}
        body = json.dumps(entries, separators=(",", ":")).encode()
        target = self._file()
        tmp = target.with_name(f".{target.name}.{os.getpid()}")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(_MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
            os.replace(tmp, target)
            _prune(target.parent)
        except OSError:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass


def _read(path: Path) -> dict[str, object]:
    """Returns the entries of the file at ``path``: none when it is missing, unreadable, or
    does not match its digest."""
    import hashlib
    import json

    try:
        data = path.read_bytes()
    except OSError:
        return {}
    head, _, body = data.partition(b"\n")
    if head != _MAGIC + hashlib.sha256(body).hexdigest().encode():
        return {}
    try:
        entries = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    return entries if isinstance(entries, dict) else {}


def _stored(findings: Sequence[Finding]) -> list[list[str | None]] | None:
    """Returns ``findings`` as JSON-ready lists, or None when one carries an object (which
    JSON cannot bring back)."""
    if any(f.obj is not None for f in findings):
        return None
    return [[f.code, f.message, f.hint, f.location, f.detail, f.heading, f.seen, f.expected]
            for f in findings]


def _findings(value: object) -> tuple[Finding, ...] | None:
    """Returns the findings :func:`_stored` wrote, or None for a value of any other shape."""
    if not isinstance(value, list) or not value:
        return None
    rows = []
    for row in value:
        if not (isinstance(row, list) and len(row) == _FINDING_FIELDS
                and all(isinstance(x, str) for x in row[:3])
                and all(x is None or isinstance(x, str) for x in row[3:])):
            return None
        rows.append(row)
    from auxcheck._core.report import Finding

    return tuple(Finding(code, message, None, hint, location, detail, heading, seen, expected)
                 for code, message, hint, location, detail, heading, seen, expected in rows)


def _prune(folder: Path) -> None:
    """Removes the files of all but the :data:`_MOST_TABLES` most recently written tables."""
    try:
        found = [(entry.stat().st_mtime_ns, entry.path) for entry in os.scandir(folder)
                 if entry.name.endswith(_SUFFIX) and not entry.name.startswith(".")]
    except OSError:
        return
    for _, path in sorted(found, reverse=True)[_MOST_TABLES:]:
        try:
            os.unlink(path)
        except OSError:
            pass
