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
from typing import TYPE_CHECKING, Generic, Literal, NamedTuple, NoReturn, TypeVar

from auxcheck._paths import is_dir, is_file

if TYPE_CHECKING:
    from auxcheck.report import Finding

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "PARSE_ERRORS",
    "SKIPPED_DIRS",
    "FileState",
    "FileTooLarge",
    "NotRegularFile",
    "Prefilter",
    "SourceFile",
    "UndecodableFile",
    "WalkNote",
    "WriteRefused",
    "atomic_write",
    "broken_file_finding",
    "deep_call",
    "display_path",
    "iter_python_files",
    "module_name_of",
    "read_regular",
    "read_source",
]

SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", "build", "dist",
    ".tox", ".nox", ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis",
    "node_modules", "site-packages", "__pypackages__",
})
"""Folder names not entered unless given explicitly (virtualenvs, VCS, build, caches), nor
when they are a package (hold ``__init__.py``) that is not a virtualenv."""

_SUFFIXES = (".py", ".pyi")
_BUFFER_SIZE = 1 << 20
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_CLOEXEC", 0))
"""A FIFO opened without O_NONBLOCK waits for a writer; a terminal would become ours."""
_T = TypeVar("_T")

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


class NotRegularFile(UndecodableFile):
    """A path that is not a regular file (a FIFO, a device, a socket, a folder): never read.

    ``kind`` names what it is (``a FIFO``); reading one could wait forever or never end.
    """

    def __init__(self, path: str, kind: str) -> None:
        self.kind = kind
        super().__init__(path, "read", f"it is {kind}, not a regular file; only regular "
                         "files are read (rename it, or leave it out with --exclude)")


DEFAULT_MAX_FILE_SIZE = 2 << 20
"""Files larger than this (2 MB) are left unchanged with a note, by migrate and by the
scans: libcst, and ast with the scan, take about 1,000 times a file's size in memory, and
minutes for a 20 MB file."""


class FileTooLarge(Exception):
    """A file is larger than the size limit; ``size`` and ``limit`` are in bytes."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        self.path = path
        self.size = size
        self.limit = limit
        super().__init__(f"{path}: {size} bytes, over the limit of {limit}")


class WriteRefused(Exception):
    """A rewrite was not written, on purpose; ``reason`` says why and what to do."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class FileState(NamedTuple):
    """What a file was when it was read: a rewrite is only written over that same file."""

    size: int
    mtime_ns: int
    inode: int
    device: int

    @classmethod
    def of(cls, status: os.stat_result) -> FileState:
        """Returns the state ``status`` (from ``os.stat`` or ``os.fstat``) describes."""
        return cls(status.st_size, status.st_mtime_ns, status.st_ino, status.st_dev)


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


class IrregularPath(str):
    """A path :func:`iter_python_files` found that is not a regular file (a FIFO, a device):
    readers refuse it with NotRegularFile without opening it; ``kind`` names what it is."""

    kind = "not a regular file"


def _open_regular(path: str) -> tuple[int, os.stat_result]:
    """Returns a descriptor open on the regular file at ``path`` and its status.

    Raises NotRegularFile for anything else, and OSError when it cannot be opened. An
    :class:`IrregularPath` (the walk saw its kind without a system call) is not even
    opened; any other path is opened without blocking and refused on its descriptor's
    status, so that a FIFO cannot wait and a path swapped after the walk is still seen.
    """
    if type(path) is IrregularPath:
        raise NotRegularFile(path, path.kind)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegularFile(path, _kind(status.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd, status


def read_regular(path: str, *, max_size: int | None = None) -> tuple[bytes, FileState]:
    """Returns the bytes of the regular file at ``path`` and its state when read.

    Raises NotRegularFile for a FIFO, device, socket or folder; FileTooLarge when the
    file holds more than ``max_size`` bytes (checked before reading, and again while
    reading a file that grows); OSError when it cannot be opened or read.
    """
    fd, status = _open_regular(path)
    try:
        if max_size is not None and status.st_size > max_size:
            raise FileTooLarge(path, status.st_size, max_size)
        data = _read_rest(fd, None if max_size is None else max_size + 1)
    finally:
        os.close(fd)
    if max_size is not None and len(data) > max_size:
        raise FileTooLarge(path, len(data), max_size)
    return data, FileState.of(status)


def display_path(path: str) -> str:
    """Returns ``path`` as it can be printed on one line: a newline, a control character or
    a byte that is not UTF-8 is shown escaped (``\\n``, ``\\xff``)."""
    if path.isprintable():
        return path
    raw = os.fsencode(path)
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1]
                   for ch in raw.decode("utf-8", "backslashreplace"))


_DEEP_STACK = 256 << 20
_DEEP_RECURSION = 60_000


class _Call(Generic[_T]):
    """One call run on another thread: its value, or what it raised."""

    def __init__(self, function: Callable[[], _T]) -> None:
        self.function = function
        self.value: _T | None = None
        self.error: BaseException | None = None

    def __call__(self) -> None:
        try:
            self.value = self.function()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there
            self.error = exc


def deep_call(function: Callable[[], _T]) -> _T:
    """Returns ``function()``, run on a thread with a 256 MB stack and a raised recursion limit.

    libcst and :mod:`ast` visitors recurse once per nesting level: a valid file with a long
    flat expression (``1+1+...``, nested one level per term) exceeds the default limit of
    1,000. The calling thread waits (a signal still interrupts it). Where such a thread
    cannot be started the call runs on the calling thread, with the usual limits.
    """
    import threading

    call = _Call(function)
    limit = sys.getrecursionlimit()
    try:
        previous = threading.stack_size(_DEEP_STACK)
    except (ValueError, RuntimeError):
        return function()
    try:
        sys.setrecursionlimit(max(limit, _DEEP_RECURSION))
        thread = threading.Thread(target=call, name="auxcheck-deep", daemon=True)
        thread.start()
    except (RuntimeError, MemoryError):  # no memory for such a stack: run it here
        sys.setrecursionlimit(limit)
        return function()
    finally:
        threading.stack_size(previous)
    try:
        thread.join()
    finally:
        sys.setrecursionlimit(limit)
    if call.error is not None:
        raise call.error
    return call.value  # type: ignore[return-value]  # set: the call returned


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
    if isinstance(error, FileTooLarge):
        seen, expected = (f"was not parsed: {error.size:,} bytes, over the {error.limit:,} "
                          "bytes auxcheck parses (parsing costs about 1,000 times a file's "
                          "size in memory)"), "expected a file under that size (a generated file?)"
    elif isinstance(error, OSError) or (isinstance(error, UndecodableFile)
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

    Each file is read into a buffer kept from file to file (no object per file); only a
    file larger than the buffer is read on to its end, and one larger than ``max_size`` is
    searched piece by piece without being kept (the worker then refuses it as too large).
    Only regular files are read (NotRegularFile otherwise: a FIFO would wait forever, a
    device never end). One instance serves one thread.
    """

    def __init__(self, needles: Sequence[bytes],
                 confirm: Callable[[bytes], bool] | None = None, *,
                 max_size: int | None = None) -> None:
        self.needles = tuple(needles)
        self.confirm = confirm
        """Asked about the whole file when it holds a needle (a second, finer test)."""
        self.max_size = max_size
        self.size = 0
        """The size of the last file asked about, in bytes."""
        self._buffer = bytearray(_BUFFER_SIZE)
        self._views = [self._buffer]
        self._only = self.needles[0] if len(self.needles) == 1 else None

    def __call__(self, path: str) -> bool:
        """Returns True when the file at ``path`` holds a needle (and passes ``confirm``);
        raises OSError or NotRegularFile."""
        if type(path) is IrregularPath:
            raise NotRegularFile(path, path.kind)
        # The walk saw a regular file: no status is asked for unless the buffer fills (a
        # large file, or a device swapped in since), as most files fit in one read. A FIFO
        # swapped in is opened without blocking, and reads as empty or fails.
        fd = os.open(path, _OPEN_FLAGS)
        try:
            size = os.readv(fd, self._views)
            if size == _BUFFER_SIZE:
                return self._holds_large(path, fd)
        finally:
            os.close(fd)
        self.size = size
        if self._only is not None:  # the usual case: one old module
            found = self._buffer.find(self._only, 0, size) >= 0
        else:
            find = self._buffer.find
            found = any(find(needle, 0, size) >= 0 for needle in self.needles)
        return found and (self.confirm is None or self.confirm(bytes(self._buffer[:size])))

    def _holds_large(self, path: str, fd: int) -> bool:
        """Answers for a file that filled the buffer: read on to its end when it is regular
        and within ``max_size``, else searched piece by piece without being kept."""
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegularFile(path, _kind(status.st_mode))
        self.size = status.st_size
        if self.max_size is not None and status.st_size > self.max_size:
            return _stream_holds(fd, self.needles, head=bytes(self._buffer))
        data = bytes(self._buffer) + _read_rest(fd, None)
        self.size = len(data)
        return any(needle in data for needle in self.needles) and (
            self.confirm is None or self.confirm(data))


def _stream_holds(fd: int, needles: Sequence[bytes], *, head: bytes = b"") -> bool:
    """Returns True when ``head`` and the rest of the file open at ``fd`` hold a needle,
    read one piece at a time."""
    overlap = max(map(len, needles), default=1) - 1
    if any(needle in head for needle in needles):
        return True
    tail = head[-overlap:] if overlap else b""
    while chunk := os.read(fd, _BUFFER_SIZE):
        window = tail + chunk
        if any(needle in window for needle in needles):
            return True
        tail = window[-overlap:] if overlap else b""
    return False


def _read_rest(fd: int, limit: int | None) -> bytes:
    """Returns what is left to read at ``fd``, stopping after ``limit`` bytes if given."""
    chunks = []
    total = 0
    while chunk := os.read(fd, _BUFFER_SIZE):
        chunks.append(chunk)
        total += len(chunk)
        if limit is not None and total >= limit:
            break
    return b"".join(chunks)


def read_source(path: str, *, max_size: int | None = None) -> SourceFile:
    """Returns the decoded file at ``path``; raises UndecodableFile when it cannot be read
    (NotRegularFile, a subclass, when it is not a regular file) or decoded, FileTooLarge
    when it holds more than ``max_size`` bytes."""
    return read_source_state(path, max_size=max_size)[0]


def read_source_state(path: str, *, max_size: int | None = None) -> tuple[SourceFile, FileState]:
    """Returns the decoded file at ``path`` and its state when read; raises as
    :func:`read_source` does."""
    try:
        data, state = read_regular(path, max_size=max_size)
    except OSError as exc:
        raise UndecodableFile(path, "read", str(exc.strerror or exc)) from None
    return decode_source(data, path=path), state


def atomic_write(path: str, data: bytes, *, read: tuple[FileState, bytes] | None = None,
                 break_links: bool = False) -> int:
    """Replaces the file at ``path`` by ``data`` atomically, keeping its owner, group and mode;
    returns how many hard links the file had (more than 1 only with ``break_links``).

    A symlink named explicitly is written through (its target is replaced, the link
    stays a link); a read-only file is refused with PermissionError, as an ordinary
    write would be, rather than replaced behind its mode bits. Raises WriteRefused, the
    file left as it is, when its owner or group cannot be kept, when it has other hard
    links (unless ``break_links``: they would keep the old text), or when it is no longer
    the file that was ``read`` (its state and bytes then): its user edited it meanwhile.
    """
    import errno

    if os.path.islink(path):  # a relative path stays relative: the folders above the
        path = os.path.realpath(path)  # working one may not be searchable by this user
    status = os.stat(path)
    mode = stat.S_IMODE(status.st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, "file is read-only", path)
    if status.st_nlink > 1 and not break_links:
        raise WriteRefused(path, f"it has {status.st_nlink} hard links; a rewrite is a new "
                           "file, so the other links would keep the old text; migrate it "
                           "through one link with --break-hardlinks (then replace the other "
                           "links by it), or make it a single file")
    folder = os.path.dirname(path) or os.curdir
    try:
        temporary, fd = _temporary_file(folder)
    except OSError as exc:
        raise WriteRefused(path, f"cannot create a temporary file in {display_path(folder)} "
                           f"({exc.strerror or exc}); make that folder writable") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(fd)
            _keep_owner(fd, status, path)
        os.chmod(temporary, mode)  # after chown, which clears setuid and setgid bits
        if read is not None:
            _check_unchanged(path, *read)
        os.replace(temporary, path)
    except BaseException:
        # Ctrl-C or a failed replace: the original is untouched, drop the half-made copy.
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise
    return status.st_nlink


def _temporary_file(folder: str) -> tuple[str, int]:
    """Creates a new private file in ``folder``; returns its path and an open descriptor.

    The path is relative when ``folder`` is (tempfile's would be absolute, and a folder
    above the working one may not be searchable by this user).
    """
    import secrets

    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        name = os.path.join(folder, f".auxcheck-{secrets.token_hex(6)}.tmp")
        try:
            return name, os.open(name, flags, 0o600)
        except FileExistsError:
            continue


def _keep_owner(fd: int, status: os.stat_result, path: str) -> None:
    """Gives the new file at ``fd`` the owner and group of the old one; raises WriteRefused."""
    made = os.fstat(fd)
    if (made.st_uid, made.st_gid) == (status.st_uid, status.st_gid):
        return
    try:
        os.fchown(fd, status.st_uid, status.st_gid)
    except OSError as exc:
        raise WriteRefused(path, f"its owner and group ({status.st_uid}:{status.st_gid}) "
                           f"cannot be given to the rewritten file by user "
                           f"{os.geteuid()} ({exc.strerror}); run auxcheck as the file's "
                           "owner (or as root)") from None


def _check_unchanged(path: str, state: FileState, data: bytes) -> None:
    """Raises WriteRefused unless the file at ``path`` is still as it was read."""
    try:
        current, now = read_regular(path)
    except (OSError, NotRegularFile):
        _refuse_changed(path)
    if now != state or current != data:
        _refuse_changed(path)


def _refuse_changed(path: str) -> NoReturn:
    raise WriteRefused(path, "changed while auxcheck ran (left as it is now, with your "
                       "edit); run auxcheck again to migrate it")


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
    that is not a package: a package named ``build`` or ``env`` is the user's code."""
    path, name = entry.path, entry.name
    if os.path.exists(os.path.join(path, "pyvenv.cfg")):
        return True
    if name not in SKIPPED_DIRS and not name.endswith(".egg-info"):
        return False
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
    marked.kind = _kind(mode)
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
        hits = [i for i, name in enumerate(names) if name in anchor_set]
        if hits:
            parts = [*names[hits[-1]:], *([] if stem == "__init__" else [stem])]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None
