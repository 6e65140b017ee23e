"""SGLang releases as files: wheels fetched into a cache and read as zips, trees, unpacking.

:mod:`auxcheck.releases` re-exports the public names; its docstring is the user's
documentation, and this module the implementation behind it.
"""

from __future__ import annotations

import ast
import errno
import hashlib
import importlib
import os
import shutil
import stat
import sys
import tempfile
import types
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from auxcheck._core.errors import FileTooLarge, ReleaseError, UndecodableFile, UndecodableSource
from auxcheck._core.sources import decode_source, read_regular
from auxcheck._core.versions import VERSION, version_key
from auxcheck._releases.download import pip_download

CACHE_ENV = "AUXCHECK_CACHE_DIR"
"""The environment variable that overrides the cache folder for downloaded wheels."""

# What auxcheck reads of one wheel member, and of all the files it unpacks: SGLang's largest
# source file is under 300 kB and 0.5.23's Python files 68 MB in all, so a member over these
# is not SGLang's source (a zip bomb declares a small file and inflates to gigabytes).
_MEMBER_LIMIT = 16 << 20
_UNPACK_LIMIT = 1 << 30
_CHUNK = 1 << 20
# The same wheel whatever the platform auxcheck runs on: only its Python files are read.
_PIP_TARGET = ("--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp",
               "--platform", "manylinux_2_34_x86_64", "--platform", "manylinux_2_28_x86_64",
               "--platform", "manylinux2014_x86_64", "--platform", "any")


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
        if not isinstance(value, str) or not VERSION.fullmatch(value):
            raise ReleaseError(f"{raw!r} is not an SGLang release version; expected versions "
                               "such as 0.5.19,0.5.20,0.5.23")
        if not any(same_version(value, v) for v in versions):
            versions.append(value)
    if not versions:
        raise ReleaseError("no SGLang release given; expected versions such as 0.5.20,0.5.23")
    return tuple(versions)


def same_version(first: str, second: str) -> bool:
    """Returns True when two release versions are equal as PEP 440 compares them.

    ``9.9.1.0`` is ``9.9.1`` (trailing zeros of the release part do not count) and
    ``0.05.19`` is ``0.5.19``; text that is not a version equals only itself.
    """
    return first == second or (version_key(first) or first) == (version_key(second) or second)


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
        members = [i for i in archive.infolist() if i.filename.startswith("sglang/")]
        for info in members:
            _check_member(path, info)
        names = frozenset(i.filename for i in members if not i.is_dir())
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
        if version and found and not same_version(found, version):
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
        """Returns the text of file ``path``, or None when the release has no such file.

        Decoded as Python decodes source (UTF-8, or the PEP 263 cookie; a BOM is not part
        of the text). Raises UndecodableSource when it cannot be decoded, ReleaseError
        when it cannot be read (a damaged wheel) or is over 16 MiB (no SGLang source is).
        """
        data = self._bytes(path)
        if data is None:
            return None
        try:
            return decode_source(data, path=path).text
        except UndecodableFile as exc:
            raise UndecodableSource(
                f"{self.path}: {path} is not text Python can read ({exc.detail}); Python "
                "cannot import it either, so auxcheck cannot tell what it defines", path) from None

    def _bytes(self, path: str) -> bytes | None:
        if self.kind == "source":
            return self._file_bytes(self.path / path)
        if path not in self.names() or self._zip is None:
            return None
        info = self._zip.getinfo(path)
        with _reading(self.path, info), self._zip.open(info) as member:
            data = member.read(_MEMBER_LIMIT + 1)
        if len(data) > _MEMBER_LIMIT:  # only if zipfile stopped trusting the declared size
            raise ReleaseError(_too_large(self.path, path, len(data)))
        return data

    def _file_bytes(self, target: Path) -> bytes | None:
        if not target.is_file():
            return None
        try:
            return read_regular(str(target), max_size=_MEMBER_LIMIT)[0]
        except FileTooLarge as exc:
            raise ReleaseError(_too_large(self.path, str(target), exc.size)) from None
        except OSError as exc:
            raise ReleaseError(f"cannot read {target} ({exc.strerror or exc}); make it readable, "
                               "or pass another copy of the release") from None

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


def _check_member(wheel: Path, info: zipfile.ZipInfo) -> None:
    """Raises ReleaseError when a member's name or kind could put a file outside the folder
    it is unpacked to, or when it declares more bytes than a source file holds."""
    name = info.filename
    parts = name[:-1].split("/") if info.is_dir() else name.split("/")
    why = ("is a symbolic link" if stat.S_ISLNK(info.external_attr >> 16)
           else "holds a backslash" if "\\" in name
           else "has a '..' part" if ".." in parts
           else "has a drive or stream colon" if any(":" in part for part in parts)
           else "has an empty or '.' part" if any(part in ("", ".") for part in parts)
           else None)
    if why is not None:
        raise ReleaseError(
            f"{wheel}: member {name!r} {why}, so unpacking it could write outside its folder; "
            "auxcheck reads no such wheel (pip and PyPI wheels have none). Delete it and "
            "download the release again, or pass --wheel or --source with a trusted copy")
    if not info.is_dir() and name.endswith(".py") and info.file_size > _MEMBER_LIMIT:
        raise ReleaseError(_too_large(wheel, name, info.file_size))


def _too_large(where: Path, name: str, size: int) -> str:
    return (f"{where}: {name} holds {size} bytes, more than the {_MEMBER_LIMIT >> 20} MiB auxcheck "
            "reads of one source file (SGLang's largest is under 300 kB); this is not an SGLang "
            "release as published: delete it and download the release again")


@contextmanager
def _reading(wheel: Path, info: zipfile.ZipInfo) -> Iterator[None]:
    """Turns a damaged member (bad CRC, bad deflate data, cut short) into a ReleaseError."""
    try:
        yield
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError,
            OSError) as exc:
        detail = f"bad compressed data: {exc}" if isinstance(exc, zlib.error) else str(exc)
        raise ReleaseError(
            f"{wheel}: cannot read {info.filename} ({detail}); the wheel is damaged: delete it "
            "and download the release again") from None


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
    found = _wheels_of(version, cache) if cache.is_dir() else []
    return found[0] if found else None


def _wheels_of(version: str, folder: Path) -> list[Path]:
    """Returns the wheels of sglang ``version`` in ``folder``, by PEP 440 equality (pip
    names the wheel of ``sglang==9.9.1.0`` sglang-9.9.1-...), sorted."""
    return sorted(p for p in folder.glob("sglang-*-*.whl")
                  if same_version(p.name.split("-")[1], version))


def fetch_wheel(version: str, *, cache: Path | None = None, download: bool = True) -> Path:
    """Returns the cached wheel of sglang ``version``, downloading it first when missing.

    The download is ``pip download --no-deps sglang==VERSION`` into a temporary folder of
    the cache, then moved in, so concurrent runs never see half a wheel; while a command
    reports progress (:func:`auxcheck._core.progress.reporting`) its bytes are reported. Raises
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
            # Through pip, so its index configuration applies; its progress is reported.
            done = pip_download(["--no-deps", "--disable-pip-version-check", *_PIP_TARGET,
                                 f"sglang=={version}", "-d", tmp],
                                what=f"fetching sglang {version}")
            if _out_of_space(done.stderr):  # pip's own traceback says only "ERROR: Exception:"
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            wheels = _wheels_of(version, Path(tmp))
            if done.returncode != 0 or not wheels:
                why = _last_error(done.stderr) or (
                    f"pip exited {done.returncode} leaving no sglang {version} wheel (it left: "
                    f"{', '.join(sorted(p.name for p in Path(tmp).iterdir())) or 'nothing'})")
                raise ReleaseError(_offline_hint(version, folder, f"pip download failed: {why}"))
            return _move_in(wheels[0], folder / wheels[0].name)
    except OSError as exc:  # the temporary folder, with any part of a wheel, is gone by now
        raise ReleaseError(f"cannot get sglang {version}: {_cache_problem(folder, exc)}") \
            from None


def _out_of_space(stderr: str) -> bool:
    return f"[Errno {errno.ENOSPC}]" in stderr or os.strerror(errno.ENOSPC) in stderr


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
        if same_version(release.version, version):
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
    ``CACHE/unpacked/sglang-VERSION-DIGEST`` by a rename, so a half-written copy is never used;
    each member is streamed to disk, confined to that folder and bounded in size, and the
    folders get the modes the user's umask gives (readable by whoever shares the cache).
    Raises ReleaseError when the cache cannot be written (read-only, full) or holds a copy
    this user cannot read, naming the folder and ``$AUXCHECK_CACHE_DIR``.
    """
    if release.kind == "source":
        return release.path
    folder = cache or cache_dir()
    target = folder / "unpacked" / f"sglang-{release.version}-{release.fingerprint()}"
    need = None
    try:
        if not target.is_dir():
            infos = _python_members(release)
            need = sum(info.file_size for info in infos)
            if need > _UNPACK_LIMIT:
                raise ReleaseError(
                    f"{release.path}: its Python files hold {need} bytes, more than the "
                    f"{_UNPACK_LIMIT >> 30} GiB auxcheck unpacks (SGLang's are under 100 MB); "
                    "this is not an SGLang release as published: delete it and download the "
                    "release again")
            _unpack_into(release, infos, target)
        if target.stat().st_uid != os.getuid():  # another user's copy: readable to us?
            _check_readable(target)
        if not (target / "sglang").is_dir():
            raise ReleaseError(f"{target} holds no sglang/ folder; delete it so that auxcheck "
                               f"unpacks {release.label} again")
    except OSError as exc:
        raise ReleaseError(f"cannot unpack {release.label}: "
                           f"{_cache_problem(folder, exc, need=need)}") from None
    return target


def _python_members(release: Release) -> list[zipfile.ZipInfo]:
    archive = release._zip
    if archive is None:
        return []
    infos = [archive.getinfo(name) for name in release.python_files()]
    for info in infos:  # the rule from_wheel applied, again for a Release built another way
        _check_member(release.path, info)
    return infos


def _unpack_into(release: Release, infos: Sequence[zipfile.ZipInfo], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
    try:
        (tmp / "sglang").mkdir()
        for info in infos:
            _extract(release, info, tmp)
        # mkdtemp makes its folder 0700: give it the mode the umask gave the one made in it.
        os.chmod(tmp, stat.S_IMODE((tmp / "sglang").stat().st_mode))
        try:
            os.replace(tmp, target)
        except OSError:
            if not target.is_dir():  # another process did not win the race: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _extract(release: Release, info: zipfile.ZipInfo, root: Path) -> None:
    """Streams one checked member to ``root / name``, in chunks, at most its declared size."""
    out = root.joinpath(*info.filename.split("/"))
    out.parent.mkdir(parents=True, exist_ok=True)
    archive = release._zip
    if archive is None:
        return
    with _reading(release.path, info):
        member = archive.open(info)
    with member, out.open("xb") as sink:
        written = 0
        while True:
            with _reading(release.path, info):
                chunk = member.read(_CHUNK)
            if not chunk:
                break
            written += len(chunk)
            if written > _MEMBER_LIMIT:
                raise ReleaseError(_too_large(release.path, info.filename, written))
            sink.write(chunk)


def _check_readable(target: Path) -> None:
    """Raises ReleaseError naming the first folder or file of an unpacked copy this user
    cannot read (another user's copy, unpacked with a private umask)."""

    def refuse(error: OSError) -> None:
        if isinstance(error, PermissionError):
            _unreadable(target, Path(error.filename or target), error)
        raise error

    for folder, _, files in os.walk(target, onerror=refuse):
        for name in files:
            path = os.path.join(folder, name)
            try:
                os.close(os.open(path, os.O_RDONLY))
            except PermissionError as exc:
                _unreadable(target, Path(path), exc)


def _unreadable(target: Path, path: Path, error: OSError) -> None:
    try:
        owner_id = path.stat().st_uid
    except OSError:
        owner_id = -1
    owner = _user_name(owner_id)
    raise ReleaseError(
        f"{path} in the cache cannot be read ({error.strerror}); it belongs to {owner}. Ask its "
        f"owner to make it readable (`chmod -R a+rX {target}`), delete it, or set "
        f"{CACHE_ENV} to a folder of your own") from None


def _user_name(uid: int) -> str:
    if uid < 0:
        return "another user"
    try:
        import pwd

        return f"user {pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _cache_problem(folder: Path, error: OSError, *, need: int | None = None) -> str:
    """Returns why the cache cannot be written and how to fix it, for messages."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        wanted = (f"{_megabytes(need)} needed" if need is not None
                  else "an SGLang wheel takes about 40 MB")
        return (f"no space left on the device holding the cache {folder} "
                f"({_megabytes(_free_space(folder))} free, {wanted}); free some space there, or "
                f"set {CACHE_ENV} to a folder on a disk with room")
    return (f"cannot write the cache {folder} ({error.strerror or error}); make it writable, "
            f"or set {CACHE_ENV} to a writable folder of your own")


def _free_space(folder: Path) -> int | None:
    for candidate in (folder, *folder.parents):
        try:
            return shutil.disk_usage(candidate).free
        except OSError:
            continue
    return None


def _megabytes(size: int | None) -> str:
    return "unknown space" if size is None else f"{size / 1e6:.1f} MB"


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
