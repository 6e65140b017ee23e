"""SGLang releases as files to read: wheels fetched into a cache, read as zips, never installed.

SGLang cannot be installed on a machine without its GPU stack, but every release's
wheel can be downloaded and read. A :class:`Release` gives the text of the release's
``sglang/...`` files from a wheel or an unpacked tree; :func:`find_release` finds one
by version (a ``--wheel`` or ``--source`` given by the user, the cache, or
``pip download --no-deps``). :func:`import_modules` imports a few of its
dependency-light modules (the contract modules need only torch) without running
``sglang/__init__.py`` and without leaving ``sglang`` in ``sys.modules``.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auxcheck.errors import AuxcheckError

__all__ = [
    "CACHE_ENV",
    "Release",
    "ReleaseError",
    "cache_dir",
    "fetch_wheel",
    "find_release",
    "import_modules",
    "local_releases",
    "parse_versions",
    "unpack",
]

CACHE_ENV = "AUXCHECK_CACHE_DIR"
"""The environment variable that overrides the cache folder for downloaded wheels."""

_VERSION = re.compile(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?")
# The same wheel whatever the platform auxcheck runs on: only its Python files are read.
_PIP_TARGET = ("--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp",
               "--platform", "manylinux_2_34_x86_64", "--platform", "manylinux_2_28_x86_64",
               "--platform", "manylinux2014_x86_64", "--platform", "any")


class ReleaseError(AuxcheckError, ValueError):
    """A release cannot be found, downloaded or read; the message says what to do instead."""


def cache_dir() -> Path:
    """Returns the folder that holds downloaded SGLang wheels.

    ``$AUXCHECK_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/auxcheck/sglang``,
    else ``~/.cache/auxcheck/sglang``.
    """
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "auxcheck" / "sglang"


def parse_versions(text: str | Iterable[str]) -> tuple[str, ...]:
    """Returns the release versions of ``0.5.19,0.5.20`` (or a list), in order, without repeats.

    Raises ReleaseError naming the first entry that is not a version such as ``0.5.23``.
    """
    items = text.split(",") if isinstance(text, str) else list(text)
    versions: list[str] = []
    for raw in items:
        value = raw.strip() if isinstance(raw, str) else raw
        if not isinstance(value, str) or not _VERSION.fullmatch(value):
            raise ReleaseError(f"{raw!r} is not an SGLang release version; expected versions "
                               "such as 0.5.19,0.5.20,0.5.23")
        if value not in versions:
            versions.append(value)
    if not versions:
        raise ReleaseError("no SGLang release given; expected versions such as 0.5.20,0.5.23")
    return tuple(versions)


@dataclass(slots=True, eq=False)
class Release:
    """One SGLang release's files: a wheel (read as a zip) or a folder holding ``sglang/``.

    Paths are relative to the folder holding ``sglang/``: ``sglang/srt/utils.py``.
    """

    version: str
    path: Path
    kind: str  # "wheel" or "source"
    _zip: zipfile.ZipFile | None = field(default=None, repr=False)
    _names: frozenset[str] | None = field(default=None, repr=False)
    _fingerprint: str | None = field(default=None, repr=False)
    _folders: frozenset[str] | None = field(default=None, repr=False)

    @classmethod
    def from_wheel(cls, path: Path, *, version: str | None = None) -> Release:
        """Returns the release in wheel ``path``; raises ReleaseError when it is not one."""
        try:
            archive = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise ReleaseError(f"{path} is not a readable wheel ({exc}); download one with "
                               "`pip download --no-deps sglang==VERSION`") from None
        names = frozenset(n for n in archive.namelist() if n.startswith("sglang/"))
        release = cls(version or "", path, "wheel", archive, names)
        return release._verified(version)

    @classmethod
    def from_source(cls, path: Path, *, version: str | None = None) -> Release:
        """Returns the release in folder ``path`` (holding ``sglang/``, or ``sglang/`` itself)."""
        root = path.parent if path.name == "sglang" and not (path / "sglang").is_dir() else path
        if not (root / "sglang").is_dir():
            raise ReleaseError(f"{path} holds no sglang package; pass the folder that contains "
                               "sglang/ (an unpacked wheel or a checkout's python/ folder)")
        return cls(version or "", root, "source")._verified(version)

    def _verified(self, version: str | None) -> Release:
        if not self.exists("sglang/srt"):
            raise ReleaseError(f"{self.path} holds no sglang/srt sources; is it an SGLang "
                               "release?")
        found = self.declared_version()
        if version and found and found != version:
            raise ReleaseError(f"{self.path} is sglang {found}, not {version}; pass the wheel "
                               f"or tree of sglang {version}")
        self.version = version or found or self.path.name
        return self

    def declared_version(self) -> str | None:
        """Returns the ``__version__`` that ``sglang/_version.py`` (or ``version.py``) assigns."""
        for candidate in ("sglang/_version.py", "sglang/version.py"):
            text = self.read(candidate)
            if text is not None:
                found = _assigned_string(text, "__version__")
                if found:
                    return found
        return None

    @property
    def label(self) -> str:
        """Returns ``sglang 0.5.23 (wheel NAME)``, for messages."""
        return f"sglang {self.version} ({self.kind} {self.path.name})"

    def names(self) -> frozenset[str]:
        """Returns every file path of the release under ``sglang/``."""
        if self._names is None:
            self._names = frozenset(
                p.relative_to(self.path).as_posix()
                for p in (self.path / "sglang").rglob("*") if p.is_file()
            )
        return self._names

    def python_files(self) -> list[str]:
        """Returns the paths of every ``.py`` file of the release, sorted."""
        return sorted(n for n in self.names() if n.endswith(".py"))

    def folders(self) -> frozenset[str]:
        """Returns every folder holding a file of the release (``sglang/srt``...), computed once."""
        if self._folders is None:
            self._folders = frozenset(
                "/".join(parts[:end]) for parts in (n.split("/") for n in self.names())
                for end in range(1, len(parts)))
        return self._folders

    def exists(self, path: str) -> bool:
        """Returns True when ``path`` is a file or a folder of the release (a set lookup)."""
        return path in self.names() or path.rstrip("/") in self.folders()

    def read(self, path: str) -> str | None:
        """Returns the text of file ``path`` (UTF-8), or None when the release has no such file."""
        if self.kind == "source":
            target = self.path / path
            return target.read_text(encoding="utf-8-sig") if target.is_file() else None
        if path not in self.names() or self._zip is None:
            return None
        return self._zip.read(path).decode("utf-8-sig")  # a BOM is not part of the source

    def fingerprint(self) -> str:
        """Returns a short digest that changes when the wheel or tree changes (for caches).

        Computed once: a wheel replaced during a run keeps the digest of what was read.
        """
        if self._fingerprint is not None:
            return self._fingerprint
        stat = self.path.stat()
        key = f"{self.path.resolve()}|{self.kind}|{stat.st_size}|{stat.st_mtime_ns}|{self.version}"
        self._fingerprint = hashlib.sha256(key.encode()).hexdigest()[:16]
        return self._fingerprint


def _assigned_string(text: str, name: str) -> str | None:
    try:
        body = ast.parse(text).body
    except SyntaxError:
        return None
    for node in body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)):
            return node.value.value
    return None


def _cached_wheel(version: str, cache: Path) -> Path | None:
    found = sorted(cache.glob(f"sglang-{version}-*.whl")) if cache.is_dir() else []
    return found[0] if found else None


def fetch_wheel(version: str, *, cache: Path | None = None, download: bool = True) -> Path:
    """Returns the cached wheel of sglang ``version``, downloading it first when missing.

    The download is ``pip download --no-deps sglang==VERSION`` into a temporary folder of
    the cache, then moved in, so concurrent runs never see half a wheel. Raises
    ReleaseError naming the release and the offline alternatives when it fails.
    """
    folder = cache or cache_dir()
    found = _cached_wheel(version, folder)
    if found is not None or not download:
        if found is None:
            raise ReleaseError(_offline_hint(version, folder, "it is not in the cache"))
        return found
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".download-", dir=folder) as tmp:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                 "--disable-pip-version-check", *_PIP_TARGET, f"sglang=={version}", "-d", tmp],
                capture_output=True, text=True, check=False)
            wheels = sorted(Path(tmp).glob(f"sglang-{version}-*.whl"))
            if done.returncode != 0 or not wheels:
                why = _last_error(done.stderr) or f"pip exited {done.returncode}"
                raise ReleaseError(_offline_hint(version, folder, f"pip download failed: {why}"))
            return _move_in(wheels[0], folder / wheels[0].name)
    except OSError as exc:
        raise ReleaseError(_offline_hint(version, folder, f"cannot write the cache ({exc})")) \
            from None


def _move_in(wheel: Path, target: Path) -> Path:
    """Returns ``target`` after moving ``wheel`` there, keeping a wheel another run put first.

    Replacing it would change its mtime, hence the release's fingerprint and the folder
    it unpacks to, under a run that already read it.
    """
    try:
        os.link(wheel, target)  # atomic, and fails when the target exists
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links
        if not target.exists():
            os.replace(wheel, target)
    return target


def _last_error(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("ERROR")]
    tail = errors[-1:] or stderr.strip().splitlines()[-1:] or [""]
    return tail[0][:300]


def _offline_hint(version: str, cache: Path, why: str) -> str:
    return (f"cannot get sglang {version}: {why}. When offline, pass --wheel PATH (from "
            f"`pip download --no-deps sglang=={version}` on a connected machine) or --source DIR "
            f"(an unpacked sglang {version}), or put sglang-{version}-*.whl in {cache}")


def find_release(
    version: str,
    *,
    wheels: Sequence[Path] = (),
    sources: Sequence[Path] = (),
    cache: Path | None = None,
    download: bool = True,
) -> Release:
    """Returns release ``version``: from a given wheel or tree of that version, else the cache.

    ``wheels`` and ``sources`` are the user's offline copies; the one whose declared
    version is ``version`` is used. Raises ReleaseError when none is found or can be fetched.
    """
    for release in local_releases(wheels, sources):
        if release.version == version:
            return release
    return Release.from_wheel(fetch_wheel(version, cache=cache, download=download),
                              version=version)


def local_releases(wheels: Sequence[Path], sources: Sequence[Path]) -> Iterator[Release]:
    """Yields the releases of the given wheels and trees, each with its declared version."""
    for path in wheels:
        if not path.is_file():
            raise ReleaseError(f"no wheel at {path}; download one with "
                               "`pip download --no-deps sglang==VERSION`")
        yield Release.from_wheel(path)
    for path in sources:
        yield Release.from_source(path)


def unpack(release: Release, *, cache: Path | None = None) -> Path:
    """Returns a folder holding the release's ``sglang/`` Python files, unpacking a wheel once.

    A source tree is returned as it is. A wheel is unpacked into
    ``CACHE/unpacked/sglang-VERSION-DIGEST`` by a rename, so a half-written copy is never used.
    """
    if release.kind == "source":
        return release.path
    base = (cache or cache_dir()) / "unpacked"
    target = base / f"sglang-{release.version}-{release.fingerprint()}"
    if target.is_dir():
        return target
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=base))
    try:
        for name in release.python_files():
            text = release.read(name)
            if text is not None:
                out = tmp / name
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(text, encoding="utf-8")
        try:
            os.replace(tmp, target)
        except OSError:
            if not target.is_dir():  # another process did not win the race: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def import_modules(root: Path, modules: Sequence[str]) -> Mapping[str, types.ModuleType]:
    """Returns the named ``sglang.*`` modules imported from ``root/sglang``, by name.

    ``sglang/__init__.py`` (which needs SGLang's whole GPU stack) never runs: an empty
    ``sglang`` package pointing at ``root/sglang`` stands in for it. Every ``sglang``
    entry of ``sys.modules`` is restored afterwards, so an installed SGLang, or another
    release loaded the same way, is left alone; the returned modules keep their own
    references. Imports a module makes later, inside a function, are not supported.
    """
    saved = {name: mod for name, mod in sys.modules.items()
             if name == "sglang" or name.startswith("sglang.")}
    for name in saved:
        del sys.modules[name]
    package = types.ModuleType("sglang")
    package.__path__ = [str(root / "sglang")]
    package.__package__ = "sglang"
    sys.modules["sglang"] = package
    try:
        return {name: importlib.import_module(name) for name in modules}
    finally:
        for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
            del sys.modules[name]
        sys.modules.update(saved)
