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

import functools
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from fnmatch import fnmatch
from operator import attrgetter
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Generic, Literal, NamedTuple, NoReturn, TypeVar

from auxcheck._core.paths import (
    OPEN_FLAGS,
    NotARegularFile,
    is_dir,
    is_file,
    kind_of,
    open_regular,
)
from auxcheck.migrate.signals import held_stops

if TYPE_CHECKING:
    import ast

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
    "compile_as_python",
    "deep_call",
    "display_path",
    "drop_temporary_files",
    "iter_python_files",
    "module_name_of",
    "parse_as_python",
    "read_regular",
    "read_source",
    "temporary_prefix",
]

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
_BUFFER_SIZE = 1 << 20
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

    def __init__(self, path: str, reason: str, *, kept: bool = True) -> None:
        self.path = path
        self.reason = reason
        self.kept = kept
        """The file is exactly as it was (False: it was deleted meanwhile)."""
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
    try:
        return open_regular(path)
    except NotARegularFile as exc:
        raise NotRegularFile(path, exc.kind) from None


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


_PYTHON_RECURSION_LIMIT = 1000
"""CPython's own recursion limit, which bounds how deep a module it compiles may nest."""


def compile_as_python(text: str, path: str) -> None:
    """Compiles ``text`` as Python compiles a module it runs; raises one of PARSE_ERRORS
    where Python would reject the module (a syntax error, nesting too deep, too many nested
    blocks, ``return`` outside a function), whatever the depth of this call or the
    recursion limit in force. Warnings are not shown.

    Python's compiler allows a nesting depth in proportion to the recursion limit left
    above the calling frame, so the compile runs on a fresh thread at the limit Python
    itself starts with: a file is accepted exactly when ``python file.py`` accepts it.
    """
    _on_thread(functools.partial(_compile_at_the_top, text, path, False))


def parse_as_python(text: str, path: str) -> ast.Module:
    """Returns the syntax tree of ``text``, a module Python accepts (as
    :func:`compile_as_python` decides); raises one of PARSE_ERRORS otherwise."""
    tree = _on_thread(functools.partial(_compile_at_the_top, text, path, True))
    if tree is None:  # pragma: no cover - asked for, so returned
        raise ValueError("no syntax tree")
    return tree


def _compile_at_the_top(text: str, path: str, tree: bool) -> ast.Module | None:
    import ast
    import warnings

    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:  # this thread's own frames: it was just started
        depth, frame = depth + 1, frame.f_back
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(_PYTHON_RECURSION_LIMIT + depth)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", dont_inherit=True)
            return ast.parse(text, filename=path) if tree else None
    finally:
        sys.setrecursionlimit(limit)


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
    return _on_thread(function, stack=_DEEP_STACK, recursion=_DEEP_RECURSION)


def _on_thread(function: Callable[[], _T], *, stack: int = 0, recursion: int = 0) -> _T:
    """Returns ``function()`` run on a new thread with a ``stack`` of that many bytes (0: the
    system's default) and a recursion limit of at least ``recursion``, while this one waits;
    on this thread where no such thread can be started."""
    import threading

    call = _Call(function)
    limit = sys.getrecursionlimit()
    try:
        previous = threading.stack_size(stack)
    except (ValueError, RuntimeError):
        return function()
    try:
        sys.setrecursionlimit(max(limit, recursion))
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
    # The first two lines, ended as Python ends them: by \n, \r\n or a lone \r.
    head = data[:4096].splitlines(keepends=True)[:2]
    if data.startswith(b"\xef\xbb\xbf") or any(b"coding" in line for line in head):
        import tokenize  # a cookie or a BOM: read them as Python does

        try:
            encoding, _ = tokenize.detect_encoding(iter([*head, b""]).__next__)
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
        fd = os.open(path, OPEN_FLAGS)
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
            raise NotRegularFile(path, kind_of(status.st_mode))
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
    """Replaces the file at ``path`` by ``data`` atomically, keeping its owner, group, mode
    and extended attributes (ACLs included); returns how many hard links the file had (more
    than 1 only with ``break_links``).

    A symlink named explicitly is written through (its target is replaced, the link
    stays a link); a read-only file is refused with PermissionError, as an ordinary
    write would be, rather than replaced behind its mode bits. Raises WriteRefused, the
    file left as it is, when its owner, group or attributes cannot be kept, when it has
    other hard links (unless ``break_links``: they would keep the old text), when it is no
    longer the file that was ``read`` (its state and bytes then): its user edited it
    meanwhile, or when another process swapped the temporary file.
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
    attributes = _attributes(path)
    with held_stops():  # from the temporary file's birth to its end: Ctrl-C comes after
        _write_replacing(path, data, status, attributes, read)
    return status.st_nlink


def _write_replacing(path: str, data: bytes, status: os.stat_result,
                     attributes: list[tuple[str, bytes]],
                     read: tuple[FileState, bytes] | None) -> None:
    """Writes ``data`` to a temporary file beside ``path`` and puts it in its place, or
    removes it and raises (the original left as it is)."""
    folder = os.path.dirname(path) or os.curdir
    try:
        temporary, fd = _temporary_file(folder)
    except OSError as exc:
        raise WriteRefused(path, f"cannot create a temporary file in {display_path(folder)} "
                           f"({exc.strerror or exc}); {_write_fix(exc, 'make that folder writable')}"
                           ) from None
    made: os.stat_result | None = None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            # Everything is set through the descriptor, never by name: another user who
            # may write in the folder could have swapped the name for a symlink meanwhile.
            _keep_owner(fd, status, path)
            _keep_attributes(fd, attributes, path)
            os.fchmod(fd, stat.S_IMODE(status.st_mode))  # after chown, which clears setuid
            os.fsync(fd)
            made = os.fstat(fd)
        _replace(temporary, path, made, read)
    except BaseException:
        # A failed write or replace: the original is untouched, drop the half-made copy.
        if made is None or _is_same(temporary, made):
            _unlink_quietly(temporary)
        raise


def _write_fix(exc: OSError, fix: str) -> str:
    """Returns the fix for a failed write: ``fix``, unless the device is full."""
    import errno

    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free some space on that device (or raise the quota) and run auxcheck again"
    return fix


def _temporary_file(folder: str) -> tuple[str, int]:
    """Creates a new private file in ``folder``; returns its path and an open descriptor.

    The path is relative when ``folder`` is (tempfile's would be absolute, and a folder
    above the working one may not be searchable by this user).
    """
    import secrets

    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_NOFOLLOW", 0))
    while True:
        name = os.path.join(folder, f"{temporary_prefix(os.getpid())}{secrets.token_hex(6)}.tmp")
        try:
            return name, os.open(name, flags, 0o600)
        except FileExistsError:
            continue


def temporary_prefix(pid: int) -> str:
    """Returns how the names of the temporary files process ``pid`` writes begin."""
    return f".auxcheck-{pid}-"


def drop_temporary_files(pid: int, paths: Iterable[str]) -> None:
    """Removes the temporary files the killed process ``pid`` left beside ``paths``."""
    prefix = temporary_prefix(pid)
    for folder in {os.path.dirname(os.path.realpath(p)) for p in paths}:
        try:
            names = [n for n in os.listdir(folder) if n.startswith(prefix)]
        except OSError:
            continue
        for name in names:
            _unlink_quietly(os.path.join(folder, name))


def _is_same(path: str, made: os.stat_result) -> bool:
    """Returns True when ``path`` names the very file ``made`` describes (not a swapped link)."""
    try:
        now = os.lstat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (made.st_dev, made.st_ino)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _replace(temporary: str, path: str, made: os.stat_result,
             read: tuple[FileState, bytes] | None) -> None:
    """Puts the file ``temporary`` (described by ``made``) at ``path``, only over the file
    that was ``read``; raises WriteRefused, ``path`` as it is, otherwise.

    Where the system can swap two names atomically (Linux ``renameat2``), the old file is
    checked after the swap, under the name of the temporary one: an editor that opens
    ``path`` from then on gets the new file, and an edit made before the check is seen,
    and the swap undone. Elsewhere the check comes just before the replace.
    """
    if not _is_same(temporary, made):
        raise WriteRefused(path, "its temporary file was replaced by another process while "
                           "auxcheck wrote it; make sure no one else can write in its "
                           "folder, and run auxcheck again")
    if read is None:
        os.replace(temporary, path)
        return
    state, data = read
    swapped = _exchange(temporary, path)
    if swapped is None:  # no atomic swap here: check, then replace
        _check_unchanged(path, state, data)
        os.replace(temporary, path)
        return
    if not swapped:
        _refuse_changed(path, deleted=True)
    if _is_same(path, made) and _unchanged(temporary, state, data):
        _unlink_quietly(temporary)  # the old file, now under the temporary name
        return
    _exchange(temporary, path)  # put back what the user has there now
    raise WriteRefused(path, _CHANGED)


def _exchange(first: str, second: str) -> bool | None:
    """Swaps the files at two names atomically; returns True when done, False when one of
    them does not exist, None when this system or file system cannot swap names."""
    import errno

    swap = _renameat2()
    if swap is None:
        return None
    if swap(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second),
            _RENAME_EXCHANGE) == 0:
        return True
    import ctypes

    error = ctypes.get_errno()
    if error == errno.ENOENT:
        return False
    if error in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return None
    raise OSError(error, os.strerror(error), second)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@functools.lru_cache(maxsize=1)
def _renameat2() -> Callable[..., int] | None:
    """Returns libc's ``renameat2`` (Linux, glibc 2.28 and later), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    return function


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


def _attributes(path: str) -> list[tuple[str, bytes]]:
    """Returns the extended attributes of the file at ``path`` (its ACL among them)."""
    import errno

    if not hasattr(os, "listxattr"):
        return []
    try:
        return [(name, os.getxattr(path, name)) for name in os.listxattr(path)]
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
            return []
        raise


def _keep_attributes(fd: int, attributes: list[tuple[str, bytes]], path: str) -> None:
    """Gives the new file at ``fd`` the old one's ``attributes``; raises WriteRefused when
    one that guards access cannot be copied.

    ``security.*`` labels are the kernel's to give a new file, and may not be settable by
    this user: they are copied where possible and otherwise left as the kernel set them.
    """
    for name, value in attributes:
        try:
            os.setxattr(fd, name, value)
        except OSError as exc:
            if name.startswith("security."):
                continue
            raise WriteRefused(path, f"its extended attribute {name} cannot be copied to the "
                               f"rewritten file ({exc.strerror}); run auxcheck as the file's "
                               "owner (or as root)") from None


_CHANGED = ("changed while auxcheck ran (left as it is now, with the change); run auxcheck "
            "again to migrate it")


def _unchanged(path: str, state: FileState, data: bytes) -> bool:
    """Returns True when the file at ``path`` is still as it was read."""
    try:
        current, now = read_regular(path)
    except (OSError, NotRegularFile):
        return False
    return now == state and current == data


def _check_unchanged(path: str, state: FileState, data: bytes) -> None:
    """Raises WriteRefused unless the file at ``path`` is still as it was read."""
    if not os.path.lexists(path):
        _refuse_changed(path, deleted=True)
    if not _unchanged(path, state, data):
        _refuse_changed(path)


def _refuse_changed(path: str, *, deleted: bool = False) -> NoReturn:
    if deleted:
        raise WriteRefused(path, "deleted while auxcheck ran (not written again)", kept=False)
    raise WriteRefused(path, _CHANGED)


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
