"""Finding Python files, decoding them faithfully and writing them back atomically.

Decoding keeps what a rewrite must give back: the PEP 263 encoding, the UTF-8 BOM
and the line endings (text is decoded without newline translation, so CRLF stays
CRLF). Writing goes through a temporary file in the same folder and ``os.replace``,
so an interrupted run leaves each file either fully old or fully new.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

__all__ = [
    "SKIPPED_DIRS",
    "SourceFile",
    "UndecodableFile",
    "atomic_write",
    "iter_python_files",
    "module_name_of",
    "read_bytes",
    "read_source",
]

SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", "build", "dist",
    ".tox", ".nox", ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis",
    "node_modules", "site-packages", "__pypackages__",
})
"""Folder names never entered unless given explicitly (virtualenvs, VCS, build, caches)."""

_SUFFIXES = (".py", ".pyi")


class UndecodableFile(Exception):
    """A file could not be read or decoded; ``reason`` says why."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@dataclass(frozen=True, slots=True)
class SourceFile:
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
    import io
    import tokenize  # only files that can need work are decoded

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise UndecodableFile(path, f"cannot decode: {exc}") from None
    return SourceFile(path, data, text, encoding)


def read_bytes(path: str) -> bytes:
    """Returns the file's bytes with two system calls (cheaper than a buffered file object)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        chunks = [os.read(fd, size + 1)]
        if len(chunks[0]) <= size:
            return chunks[0]
        while chunks[-1]:  # the file grew since fstat, or it is not a regular file
            chunks.append(os.read(fd, 1 << 20))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_source(path: str) -> SourceFile:
    """Returns the decoded file at ``path``; raises UndecodableFile when unreadable."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise UndecodableFile(path, f"cannot read: {exc.strerror}") from None
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


def _walk(folder: str, exclude: Sequence[str]) -> Iterator[str]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink() or _excluded(entry.path, entry.name, exclude):
            continue  # a link may lead out of the roots, and its target is walked anyway
        if entry.is_dir():
            if entry.name not in SKIPPED_DIRS and not entry.name.endswith(".egg-info") and (
                not os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))
            ):
                yield from _walk(entry.path, exclude)
        elif entry.name.endswith(_SUFFIXES):
            yield entry.path


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
