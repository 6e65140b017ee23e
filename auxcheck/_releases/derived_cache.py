"""Answers read from one release, cached on disk beside its index, for the next run.

What ``auxcheck check`` reads per hook target and per call target is SGLang's alone: the
calls its code makes to the target, whether anything still refers to it, a callee's
parameters. A warm run gets them here instead of parsing and searching SGLang's modules,
so its cost follows the plugin, not the release. Only a wheel's answers are kept (a
source tree may be edited below the folder its fingerprint reads). The file is named by
the release's fingerprint (another release, or the same version rebuilt, never reads it) and holds the
digest of auxcheck's code that wrote it (another version of auxcheck never reads it); an
entry that is not what its section writes is recomputed, never trusted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Generic, TypeVar, cast

from auxcheck._releases.index import ReleaseIndex, read_cached, write_cached

__all__ = ["BAD", "Section", "cached", "save_cached"]

_T = TypeVar("_T")

DERIVED_FORMAT = 1
"""Bumped whenever the file's layout changes (a section's entries have the code digest)."""

BAD = object()
"""What a section's ``decode`` returns for an entry it does not accept."""


@lru_cache(maxsize=1)
def code_key() -> str:
    """Returns a digest of the code that computes the cached answers (every module of the
    release and core packages): an entry another version of auxcheck wrote is never read."""
    digest = hashlib.sha256(f"derived-{DERIVED_FORMAT}".encode())
    here = Path(__file__).resolve().parent
    for folder in (here, here.parent / "_core"):
        for path in sorted(folder.glob("*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


class Section(Generic[_T]):
    """How one kind of answer is written to the file and read back: ``decode`` returns
    :data:`BAD` for an entry that is not what ``encode`` writes."""

    def __init__(self, name: str, encode: Callable[[_T], object],
                 decode: Callable[[object], _T | object]) -> None:
        self.name = name
        self.encode = encode
        self.decode = decode


class _Store:
    """The cached answers of one release: read once per run, written back when it read new
    ones."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.sections: dict[str, dict[str, object]] = {}
        self.new = False
        data = read_cached(path) if path is not None else None
        if isinstance(data, dict) and data.get("format") == DERIVED_FORMAT and (
                data.get("code") == code_key()) and isinstance(data.get("sections"), dict):
            self.sections = {name: entries for name, entries in data["sections"].items()
                             if isinstance(name, str) and isinstance(entries, dict)}

    def get(self, section: Section[_T], key: str, compute: Callable[[], _T]) -> _T:
        entries = self.sections.setdefault(section.name, {})
        if key in entries:
            found = section.decode(entries[key])
            if found is not BAD:
                return cast(_T, found)
        value = compute()
        entries[key] = section.encode(value)
        self.new = True
        return value

    def save(self) -> None:
        if self.new and self.path is not None:
            write_cached(self.path, {"format": DERIVED_FORMAT, "code": code_key(),
                                     "sections": self.sections})
            self.new = False


def _store(index: ReleaseIndex) -> _Store:
    # A wheel only: a source tree's fingerprint (its folder's) misses an edit of a file
    # deeper down, and a checkout being edited is what a source tree usually is.
    return index.derive("derived_cache", "", lambda: _Store(
        index.cache_file(f"derived-{DERIVED_FORMAT}") if index.release.kind == "wheel"
        else None))


def cached(index: ReleaseIndex, section: Section[_T], key: str, compute: Callable[[], _T]) -> _T:
    """Returns ``compute()`` for ``key``: from ``index``'s release cache when an earlier run
    of this code cached it, else computed (and cached by :func:`save_cached`)."""
    return _store(index).get(section, key, compute)


def save_cached(index: ReleaseIndex) -> None:
    """Writes the answers this run computed from ``index``'s release to its on-disk cache."""
    _store(index).save()
