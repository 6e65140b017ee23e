"""Finding Python files, decoding them faithfully and writing them back atomically.

Decoding keeps what a rewrite must give back: the PEP 263 encoding, the UTF-8 BOM
and the line endings (text is decoded without newline translation, so CRLF stays
CRLF). Writing goes through a temporary file in the same folder and ``os.replace``,
so an interrupted run leaves each file either fully old or fully new. A file that
cannot be read, decoded or parsed is one AUX504 finding, built by
:func:`broken_file_finding` wherever it is met. :class:`SourceFile` is a NamedTuple, not a
dataclass, to keep :mod:`dataclasses` out of a ``--check`` run that finds no work.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from fnmatch import fnmatch
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from auxcheck.report import Finding

__all__ = [
    "PARSE_ERRORS",
    "SKIPPED_DIRS",
    "Prefilter",
    "SourceFile",
    "UndecodableFile",
    "atomic_write",
    "broken_file_finding",
    "iter_python_files",
    "module_name_of",
    "read_source",
]

SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", "build", "dist",
    ".tox", ".nox", ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis",
    "node_modules", "site-packages", "__pypackages__",
})
"""Folder names never entered unless given explicitly (virtualenvs, VCS, build, caches)."""

_SUFFIXES = (".py", ".pyi")
_BUFFER_SIZE = 1 << 20

PARSE_ERRORS = (SyntaxError, ValueError, RecursionError)
"""What :func:`ast.parse` raises on a file it cannot parse (ValueError: a null byte, on
Python 3.11; RecursionError: nesting too deep for the parser)."""


class UndecodableFile(Exception):
    """A file could not be read or decoded; ``reason`` says why, ``line`` and ``col`` where.

    ``stage`` is ``read`` or ``decode`` and ``detail`` the system's or codec's message;
    ``reason`` reads ``cannot <stage>: <detail>``.
    """

    def __init__(self, path: str, stage: Literal["read", "decode"], detail: str, *,
                 line: int = 1, col: int = 1) -> None:
        self.path = path
        self.stage = stage
        self.detail = detail
        self.reason = f"cannot {stage}: {detail}"
        self.line = line
        self.col = col
        super().__init__(f"{path}: {self.reason}")


def broken_file_finding(path: str, error: BaseException, *, text: str | None = None) -> Finding:
    """Returns the AUX504 finding for the file at ``path`` that ``error`` kept from being used.

    ``error`` is what reading raised (OSError), decoding (UndecodableFile) or
    :func:`ast.parse` (one of :data:`PARSE_ERRORS`); ``text``, the decoded source, places
    a null byte. The finding is located at ``path:line:col`` and names the parser's message
    and the Python version, since a file can parse on a newer Python only.
    """
    from auxcheck.report import Finding  # only a broken file pays for the report module

    python = f"Python {sys.version_info[0]}.{sys.version_info[1]}"
    line, col = 1, 1
    if isinstance(error, OSError) or (isinstance(error, UndecodableFile)
                                      and error.stage == "read"):
        detail = error.detail if isinstance(error, UndecodableFile) else (error.strerror or error)
        seen, expected = f"cannot be read: {detail}", "expected a readable file"
    elif isinstance(error, UndecodableFile):
        line, col = error.line, error.col
        seen, expected = f"cannot be decoded: {error.detail}", (
            "expected text in the encoding its coding cookie or BOM declares (UTF-8 when "
            "none does)")
    else:
        if isinstance(error, SyntaxError) and error.lineno:
            line, col = error.lineno, error.offset or 1
        elif text is not None and "\0" in text:
            line, col = _position(text, text.index("\0"))
        message = error.msg if isinstance(error, SyntaxError) else (
            str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}")
        seen, expected = f"does not parse on {python}: {message}", (
            f"expected source that {python} can parse")
    return Finding.of("AUX504", seen, expected, location=f"{path}:{line}:{max(col, 1)}")


def _position(text: str | bytes, offset: int) -> tuple[int, int]:
    """Returns the 1-based (line, column) of ``offset`` in ``text`` (columns count bytes in bytes)."""
    if isinstance(text, bytes):
        return text.count(b"\n", 0, offset) + 1, offset - text.rfind(b"\n", 0, offset)
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


class SourceFile(NamedTuple):
    """A decoded source file: its original bytes, its text and the encoding to write back."""

    path: str
    data: bytes
    text: str
    encoding: str

    def encode(self, text: str) -> bytes:
        """Returns ``text`` encoded the way this file was (cookie encoding, BOM kept)."""
        return text.encode(self.encoding)


def decode_source(data: bytes, *, path: str = "-") -> SourceFile:
    """Returns ``data`` decoded by its PEP 263 cookie or BOM; raises UndecodableFile."""
    head = data.split(b"\n", 2)[:2]
    if data.startswith(b"\xef\xbb\xbf") or any(b"coding" in line for line in head):
        import io
        import tokenize  # a cookie or a BOM: read them as Python does

        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:  # an unknown or conflicting coding cookie
            raise UndecodableFile(path, "decode", str(exc), line=_cookie_line(data)) from None
    else:
        encoding = "utf-8"  # what tokenize says of a file with neither
    try:
        text = data.decode(encoding)
    except (LookupError, UnicodeDecodeError) as exc:
        line, col = _position(data, exc.start) if isinstance(exc, UnicodeDecodeError) else (1, 1)
        raise UndecodableFile(path, "decode", str(exc), line=line, col=col) from None
    return SourceFile(path, data, text, encoding)


def _cookie_line(data: bytes) -> int:
    """Returns the line (1 or 2) of a PEP 263 coding cookie, else 1."""
    first, _, rest = data.partition(b"\n")
    return 2 if b"coding" not in first and b"coding" in rest.partition(b"\n")[0] else 1


class Prefilter:
    """Tells whether a file holds one of some byte strings, reading it in one system call.

    Each file is read into a buffer kept from file to file (no object per file, no
    ``fstat``); only a file larger than the buffer is read on to its end. A short read is
    taken as the end of the file, as it is for regular files. One instance serves one
    thread.
    """

    def __init__(self, needles: Sequence[bytes],
                 confirm: Callable[[bytes], bool] | None = None) -> None:
        self.needles = tuple(needles)
        self.confirm = confirm
        """Asked about the whole file when it holds a needle (a second, finer test)."""
        self._buffer = bytearray(_BUFFER_SIZE)
        self._views = [self._buffer]
        self._only = self.needles[0] if len(self.needles) == 1 else None

    def __call__(self, path: str) -> bool:
        """Returns True when the file at ``path`` holds a needle (and passes ``confirm``);
        raises OSError."""
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.readv(fd, self._views)
            if size == _BUFFER_SIZE:
                data = bytes(self._buffer) + _read_rest(fd)
                return any(needle in data for needle in self.needles) and (
                    self.confirm is None or self.confirm(data))
        finally:
            os.close(fd)
        if self._only is not None:  # the usual case: one old module
            found = self._buffer.find(self._only, 0, size) >= 0
        else:
            find = self._buffer.find
            found = any(find(needle, 0, size) >= 0 for needle in self.needles)
        return found and (self.confirm is None or self.confirm(bytes(self._buffer[:size])))


def _read_rest(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, _BUFFER_SIZE):
        chunks.append(chunk)
    return b"".join(chunks)


def read_source(path: str) -> SourceFile:
    """Returns the decoded file at ``path``; raises UndecodableFile when unreadable."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise UndecodableFile(path, "read", str(exc.strerror or exc)) from None
    return decode_source(data, path=path)


def atomic_write(path: str, data: bytes) -> None:
    """Replaces the file at ``path`` by ``data`` atomically, keeping its mode bits.

    A symlink named explicitly is written through (its target is replaced, the link
    stays a link); a read-only file is refused with PermissionError, as an ordinary
    write would be, rather than replaced behind its mode bits.
    """
    import errno
    import tempfile

    path = os.path.realpath(path)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, "file is read-only", path)
    folder = os.path.dirname(os.path.abspath(path))
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed by the `with` below
        dir=folder, prefix=".auxcheck-", suffix=".tmp", delete=False
    )
    try:
        with handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(handle.name, mode)
        os.replace(handle.name, path)
    except BaseException:
        # Ctrl-C or a failed replace: the original is untouched, drop the half-made copy.
        if os.path.exists(handle.name):
            os.unlink(handle.name)
        raise


def _excluded(path: str, name: str, exclude: Sequence[str]) -> bool:
    return any(fnmatch(name, pattern) or fnmatch(path, pattern) for pattern in exclude)


_BY_NAME = attrgetter("name")


def _listing(folder: str) -> Iterator[os.DirEntry[str]]:
    """Returns the entries of ``folder`` by name (none when it cannot be listed)."""
    try:
        with os.scandir(folder) as entries:
            return iter(sorted(entries, key=_BY_NAME))
    except OSError:
        return iter(())


def _walk(folder: str, exclude: Sequence[str]) -> Iterator[str]:
    # A stack of listings rather than nested generators: every path yielded would
    # otherwise climb back through one generator per folder level.
    stack = [_listing(folder)]
    while stack:
        for entry in stack[-1]:
            name = entry.name
            if entry.is_symlink() or (exclude and _excluded(entry.path, name, exclude)):
                continue  # a link may lead out of the roots, and its target is walked anyway
            if entry.is_dir():
                if name not in SKIPPED_DIRS and not name.endswith(".egg-info") and (
                    not os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))
                ):
                    stack.append(_listing(entry.path))
                    break  # walk the subfolder now; this listing resumes after it
            elif name.endswith(_SUFFIXES):
                yield entry.path
        else:
            stack.pop()


def iter_python_files(roots: Iterable[str], *, exclude: Sequence[str] = ()) -> Iterator[str]:
    """Yields the Python files under ``roots`` in a stable order, each once.

    A root that is a file is yielded whatever its name; folders are walked without
    following symlinks and without entering :data:`SKIPPED_DIRS`, virtualenvs or
    paths matching an ``exclude`` glob (matched against the name and the whole path).
    """
    roots = list(roots)
    seen: set[str] = set()
    for root in roots:
        if not os.path.isdir(root):
            found: Iterable[str] = [root]
        else:
            found = _walk(root, exclude)
        if len(roots) == 1:
            yield from found  # one root: walking without links cannot meet a file twice
            continue
        real = os.path.realpath(root)
        for path in found:
            key = os.path.realpath(path) if path == root else real + path[len(root):]
            if key not in seen:
                seen.add(key)
                yield path


def module_name_of(path: str, *, anchors: Iterable[str] = ()) -> str | None:
    """Returns the dotted module name of the file at ``path``, or None if unknown.

    Walks up the folders holding ``__init__.py``; for namespace packages (SGLang's
    ``srt`` has no ``__init__.py``) the nearest folder named like one of ``anchors``
    (top-level package names) is taken as the package root instead.
    """
    file = Path(os.path.abspath(path))
    stem = file.name.rsplit(".", 1)[0]
    parts = [] if stem == "__init__" else [stem]
    folder = file.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    anchor_set = set(anchors)
    if not parts or parts[0] not in anchor_set:
        names = file.parent.parts
        hits = [i for i, name in enumerate(names) if name in anchor_set]
        if hits:
            parts = [*names[hits[-1]:], *([] if stem == "__init__" else [stem])]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None
