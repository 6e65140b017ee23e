"""Finding the Python files under folders (links not followed) and naming their modules."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from fnmatch import fnmatch
from operator import attrgetter
from pathlib import Path
from typing import Literal, NamedTuple

from auxcheck._core.paths import IrregularPath, is_dir, is_file, kind_of

__all__ = ["SKIPPED_DIRS", "NoteSink", "WalkNote", "iter_python_files", "module_name_of"]

SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", "build", "dist",
    ".tox", ".nox", ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis",
    "node_modules", "site-packages", "__pypackages__",
})
"""Folder names not entered unless given explicitly (virtualenvs, VCS, build, caches), nor
when they are a package (hold ``__init__.py``) that is not a virtualenv."""

_NEVER_PACKAGES = frozenset({"__pycache__", "__pypackages__", "node_modules"})
"""Skipped folder names that are identifiers, yet no one's package."""
_SUFFIXES = (".py", ".pyi")


def _excluded(path: str, name: str, exclude: Sequence[str]) -> bool:
    return any(fnmatch(name, pattern) or fnmatch(path, pattern) for pattern in exclude)


_BY_NAME = attrgetter("name")


class WalkNote(NamedTuple):
    """Something the walk did not enter or read, and why: a folder skipped by default
    (``default``), a symlink not followed (``link``), a folder that cannot be listed
    (``unlistable``)."""

    path: str
    kind: Literal["default", "link", "unlistable"]
    detail: str = ""


NoteSink = Callable[[WalkNote], None]


def _listing(folder: str, note: NoteSink | None) -> Iterator[os.DirEntry[str]]:
    """Returns the entries of ``folder`` by name (none, with a note, when it cannot be listed)."""
    try:
        with os.scandir(folder) as entries:
            return iter(sorted(entries, key=_BY_NAME))
    except OSError as exc:
        if note is not None:
            note(WalkNote(folder, "unlistable", str(exc.strerror or exc)))
        return iter(())


def _skipped_by_default(entry: os.DirEntry[str]) -> bool:
    """True for a virtualenv, and for a folder named in SKIPPED_DIRS (or ``*.egg-info``)
    that is not a package: a package named ``build`` or ``env`` is the user's code, while
    ``.git``, ``site-packages`` or ``__pycache__`` can never be imported as one."""
    path, name = entry.path, entry.name
    if os.path.exists(os.path.join(path, "pyvenv.cfg")):
        return True
    if name not in SKIPPED_DIRS and not name.endswith(".egg-info"):
        return False
    if not name.isidentifier() or name in _NEVER_PACKAGES:
        return True
    return not os.path.isfile(os.path.join(path, "__init__.py"))


def _walk(folder: str, exclude: Sequence[str], note: NoteSink | None) -> Iterator[str]:
    # A stack of listings rather than nested generators: every path yielded would
    # otherwise climb back through one generator per folder level.
    stack = [_listing(folder, note)]
    while stack:
        for entry in stack[-1]:
            name = entry.name
            if exclude and _excluded(entry.path, name, exclude):
                continue
            try:
                link, folder_entry = entry.is_symlink(), entry.is_dir(follow_symlinks=False)
            except OSError as exc:
                if note is not None:
                    note(WalkNote(entry.path, "unlistable", str(exc.strerror or exc)))
                continue
            if link:  # a link may lead out of the roots, and its target is walked anyway
                if note is not None and (name.endswith(_SUFFIXES) or is_dir(entry)):
                    note(WalkNote(entry.path, "link"))
                continue
            if folder_entry:
                if not _skipped_by_default(entry):
                    stack.append(_listing(entry.path, note))
                    break  # walk the subfolder now; this listing resumes after it
                if note is not None:
                    note(WalkNote(entry.path, "default"))
            elif name.endswith(_SUFFIXES):
                # the kind the listing gave (no system call on Linux): a FIFO or a device
                # named *.py is handed on marked, to be skipped with a note, never opened
                yield entry.path if entry.is_file(follow_symlinks=False) else _marked(entry.path)
        else:
            stack.pop()


def _marked(path: str) -> str:
    """Returns ``path``, marked as an :class:`IrregularPath` when it is not a regular file
    (a FIFO or device given by name, or one the listing saw) so that it is never opened."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return path  # gone, or unreadable: the reader says why
    if stat.S_ISREG(mode):
        return path
    marked = IrregularPath(path)
    marked.kind = kind_of(mode)
    return marked


def _once_per_place(note: NoteSink) -> NoteSink:
    """Returns ``note`` told of each place once, however many roots reach it (``d d/``)."""
    told: set[tuple[str, str]] = set()

    def once(walk_note: WalkNote) -> None:
        folder, name = os.path.split(walk_note.path)
        key = (os.path.join(os.path.realpath(folder), name), walk_note.kind)
        if key not in told:
            told.add(key)
            note(walk_note)

    return once


def iter_python_files(roots: Iterable[str], *, exclude: Sequence[str] = (),
                      note: NoteSink | None = None) -> Iterator[str]:
    """Yields the Python files under ``roots`` in a stable order, each once.

    A root that is a file is yielded whatever its name (and whatever it is: the reader
    refuses what is not a regular file); folders are walked without following symlinks
    and without entering :data:`SKIPPED_DIRS` that are not packages, virtualenvs or paths
    matching an ``exclude`` glob (matched against the name and the whole path). A file
    reached through several roots (``d d/``, ``d d/sub``, a link to ``d``) is yielded once,
    under the first spelling. ``note`` is told of each folder skipped by default, each
    symlink not followed and each folder that cannot be listed.
    """
    roots = list(roots)
    seen: set[str] = set()
    if note is not None and len(roots) > 1:
        note = _once_per_place(note)
    for root in roots:
        if not os.path.isdir(root):
            found: Iterable[str] = [_marked(root)]
        else:
            found = _walk(root, exclude, note)
        if len(roots) == 1:
            yield from found  # one root: walking without links cannot meet a file twice
            continue
        real = os.path.realpath(root)
        for path in found:
            key = os.path.realpath(path) if path == root else os.path.join(
                real, path[len(root):].lstrip(os.sep))
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
    while is_file(folder / "__init__.py") and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    anchor_set = set(anchors)
    if not parts or parts[0] not in anchor_set:
        names = file.parent.parts
        # An anchor is a package (its __init__.py), or the file sits in namespace folders
        # only: a plugin checked out under a folder named `sglang/` keeps its own packages.
        in_package = len(parts) > (0 if stem == "__init__" else 1)
        hits = [i for i, name in enumerate(names) if name in anchor_set and (
            not in_package or is_file(Path(*names[:i + 1]) / "__init__.py"))]
        if hits:
            parts = [*names[hits[-1]:], *([] if stem == "__init__" else [stem])]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None
