"""Looking at paths, printing them and reading files without a crash, a hang or an unbounded read.

``Path.is_file()`` and ``Path.is_dir()`` raise PermissionError when a folder above the
path cannot be searched (a process whose working folder sits under a folder it may not
enter, as after ``sudo -u``). Looking for configuration files upwards meets such folders
as a matter of course; to the search they hold nothing.

Only regular files are read: a FIFO would wait for a writer forever, a device never end.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from auxcheck._core.errors import NotARegularFile

__all__ = ["CONFIG_LIMIT", "OPEN_FLAGS", "IrregularPath", "NotARegularFile", "display_path",
           "is_dir", "is_file", "kind_of", "open_regular", "read_regular_file", "split_location"]

OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
              | getattr(os, "O_CLOEXEC", 0))
"""A FIFO opened without O_NONBLOCK waits for a writer; a terminal would become ours."""
CONFIG_LIMIT = 16 << 20
"""Bytes a configuration file may hold: more is no configuration, and reading on costs."""

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def kind_of(mode: int) -> str:
    """Returns what a file of ``st_mode`` ``mode`` is, in words (``a FIFO (named pipe)``)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


class IrregularPath(str):
    """A path a walk found that is not a regular file (a FIFO, a device): readers refuse it
    with NotARegularFile without opening it; ``kind`` names what it is."""

    kind = "not a regular file"


def open_regular(path: str | Path) -> tuple[int, os.stat_result]:
    """Returns a descriptor open on the regular file at ``path`` and its status.

    An :class:`IrregularPath` (the walk saw its kind without a system call) is not even
    opened; any other path is opened without blocking and judged on its descriptor's
    status, so that a FIFO cannot wait and a path swapped meanwhile is still seen. Raises
    NotARegularFile for anything else, OSError when it cannot be opened.
    """
    if type(path) is IrregularPath:
        raise NotARegularFile(path, path.kind)
    fd = os.open(path, OPEN_FLAGS)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotARegularFile(str(path), kind_of(status.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd, status


def read_regular_file(path: str | Path, *, limit: int) -> bytes:
    """Returns the bytes of the regular file at ``path``, a configuration file or the like.

    Raises NotARegularFile, or OSError when it cannot be read or holds more than
    ``limit`` bytes (a file that grows while read included).
    """
    fd, status = open_regular(path)
    try:
        if status.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
    finally:
        os.close(fd)
    return b"".join(chunks)


def is_file(path: Path) -> bool:
    """Returns True when ``path`` is a regular file (or a link to one) this process can see."""
    try:
        return path.is_file()
    except OSError:
        return False


def is_dir(path: Path | os.DirEntry[str]) -> bool:
    """Returns True when ``path`` is a folder (or a link to one) this process can see."""
    try:
        return path.is_dir()
    except OSError:
        return False


def display_path(path: str) -> str:
    """Returns ``path`` as it can be printed on one line: a newline, a control character or
    a byte that is not UTF-8 is shown escaped (``\\n``, ``\\xff``)."""
    if path.isprintable():
        return path
    raw = os.fsencode(path)
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1]
                   for ch in raw.decode("utf-8", "backslashreplace"))


_LOCATION = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+))?(?::(?P<col>\d+))?$", re.DOTALL)


def split_location(location: str) -> tuple[str, int | None, int | None]:
    """Returns a finding's ``path:line:col`` (or ``path:line``, or ``path``) split into its
    path, line and column (None where absent); a colon may be part of the path."""
    match = _LOCATION.match(location)
    if match is None:  # an empty location
        return location, None, None
    line, col = match.group("line"), match.group("col")
    return match.group("path"), int(line) if line else None, int(col) if col else None
