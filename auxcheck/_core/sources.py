"""Reading a Python source file: a regular file's bytes, decoded faithfully, parsed as Python does.

Decoding keeps what a rewrite must give back: the PEP 263 encoding, the UTF-8 BOM and the
line endings (text is decoded without newline translation, so CRLF stays CRLF). A file that
cannot be read, decoded or parsed is one AUX504 finding, built by :func:`broken_file_finding`
wherever it is met. :class:`SourceFile` is a NamedTuple, not a dataclass, to keep
:mod:`dataclasses` out of a ``migrate --check`` run that finds no work. The one reader of
Python source for every capability: migrate, the plugin scan and the release check.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from auxcheck._core.errors import FileTooLarge, NotARegularFile, UndecodableFile
from auxcheck._core.paths import open_regular

if TYPE_CHECKING:
    import ast

    from auxcheck._core.report import Finding

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "PARSE_ERRORS",
    "READ_SIZE",
    "SCAN_MAX_FILE_SIZE",
    "FileState",
    "FileTooLarge",
    "SourceFile",
    "UndecodableFile",
    "broken_file_finding",
    "compile_as_python",
    "decode_source",
    "deep_call",
    "parse_as_python",
    "parse_file",
    "read_regular",
    "read_rest",
    "read_source",
    "read_source_state",
    "why_not_read",
]

READ_SIZE = 1 << 20
"""Bytes asked for in one read of a source file (the prefilter's buffer is this size)."""
_T = TypeVar("_T")

PARSE_ERRORS = (SyntaxError, ValueError, RecursionError)
"""What :func:`ast.parse` raises on a file it cannot parse (ValueError: a null byte, on
Python 3.11; RecursionError: nesting too deep for the parser)."""


DEFAULT_MAX_FILE_SIZE = 2 << 20
"""Files larger than this (2 MB) are left unchanged with a note by migrate (``--max-file-size``
raises it) and not parsed by its scan: libcst takes about 1,000 times a file's size in
memory, and minutes for a 20 MB file."""
SCAN_MAX_FILE_SIZE = 16 << 20
"""Files larger than this (16 MB) are not parsed by the read-only checks (``auxcheck check``'s
import scan and release stage), which use :mod:`ast` only: about 200 times a file's size in
memory for ordinary code, up to 700 times for a long literal of small numbers (measured on
CPython 3.11). A valid module of a few MB, generated say, is read and checked."""


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


def read_regular(path: str, *, max_size: int | None = None) -> tuple[bytes, FileState]:
    """Returns the bytes of the regular file at ``path`` and its state when read.

    Raises NotARegularFile for a FIFO, device, socket or folder; FileTooLarge when the
    file holds more than ``max_size`` bytes (checked before reading, and again while
    reading a file that grows); OSError when it cannot be opened or read.
    """
    fd, status = open_regular(path)
    try:
        if max_size is not None and status.st_size > max_size:
            raise FileTooLarge(path, status.st_size, max_size)
        data = read_rest(fd, None if max_size is None else max_size + 1)
    finally:
        os.close(fd)
    if max_size is not None and len(data) > max_size:
        raise FileTooLarge(path, len(data), max_size)
    return data, FileState.of(status)


def read_rest(fd: int, limit: int | None) -> bytes:
    """Returns what is left to read at ``fd``, stopping after ``limit`` bytes if given."""
    chunks = []
    total = 0
    while chunk := os.read(fd, READ_SIZE):
        chunks.append(chunk)
        total += len(chunk)
        if limit is not None and total >= limit:
            break
    return b"".join(chunks)


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
    from auxcheck._core.report import Finding  # only a broken file pays for the report module

    python = f"Python {sys.version_info[0]}.{sys.version_info[1]}"
    line, col = 1, 1
    if isinstance(error, FileTooLarge):
        seen, expected = (f"was not parsed: {error.size:,} bytes, over the {error.limit:,} "
                          "bytes auxcheck parses here (parsing costs hundreds of times a "
                          "file's size in memory)"), "expected a file under that size (a generated file?)"
    elif isinstance(error, OSError) or (isinstance(error, UndecodableFile)
                                      and error.stage == "read"):
        detail = error.detail if isinstance(error, UndecodableFile) else why_not_read(error)
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


def read_source(path: str, *, max_size: int | None = None) -> SourceFile:
    """Returns the decoded file at ``path``; raises NotARegularFile (an OSError) when it is
    not a regular file, UndecodableFile when it cannot be read or decoded, FileTooLarge
    when it holds more than ``max_size`` bytes."""
    return read_source_state(path, max_size=max_size)[0]


def read_source_state(path: str, *, max_size: int | None = None) -> tuple[SourceFile, FileState]:
    """Returns the decoded file at ``path`` and its state when read; raises as
    :func:`read_source` does."""
    try:
        data, state = read_regular(path, max_size=max_size)
    except NotARegularFile:
        raise
    except OSError as exc:
        raise UndecodableFile(path, "read", why_not_read(exc)) from None
    return decode_source(data, path=path), state


def why_not_read(error: OSError) -> str:
    """Returns why ``error`` kept a source file from being read: the system's message, and
    for one that is not a regular file what to do about it."""
    if isinstance(error, NotARegularFile):
        return (f"{error.strerror}; only regular files are read (rename it, or leave it out "
                "with --exclude)")
    return str(error.strerror or error)


def parse_file(path: str, *, shown: str | None = None) -> ast.Module | Finding:
    """Returns the syntax tree of the Python file at ``path``, or its AUX504 finding (located
    at ``shown``, ``path`` by default) when it cannot be read, decoded or parsed, or holds
    more than :data:`SCAN_MAX_FILE_SIZE` bytes (the callers only read the tree)."""
    where = path if shown is None else shown
    try:
        source = read_source(path, max_size=SCAN_MAX_FILE_SIZE)
    except (OSError, UndecodableFile, FileTooLarge) as exc:
        return broken_file_finding(where, exc)
    try:
        return parse_as_python(source.text, where)
    except PARSE_ERRORS as exc:
        return broken_file_finding(where, exc, text=source.text)
