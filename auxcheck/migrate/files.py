"""Writing rewritten Python files back atomically; the prefilter that picks the files to read.

Writing goes through a temporary file in the same folder and ``os.replace``, so an
interrupted run leaves each file either fully old or fully new, with its owner, group, mode
and extended attributes; a file edited meanwhile is never written over. Reading and
decoding are :mod:`auxcheck._core.sources`'s.
"""

from __future__ import annotations

import functools
import os
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import NoReturn

from auxcheck._core.errors import NotARegularFile, WriteRefused
from auxcheck._core.paths import OPEN_FLAGS, IrregularPath, display_path, kind_of
from auxcheck._core.sources import READ_SIZE, FileState, read_regular, read_rest
from auxcheck._core.stops import held_stops

__all__ = [
    "Prefilter",
    "WriteRefused",
    "atomic_write",
    "drop_temporary_files",
    "finer_test_only",
    "temporary_prefix",
]


_FEW_NEEDLES = 8
"""Up to this many needles, each is looked for before the finer test is asked."""


def finer_test_only(needles: Sequence[bytes]) -> bool:
    """Returns True when a :class:`Prefilter` with a finer test asks it about every file:
    with many needles (a table inferred between releases) one search per needle costs more
    than the finer test, which finds an old module's name itself."""
    return len(needles) > _FEW_NEEDLES


class Prefilter:
    """Tells whether a file holds one of some byte strings, reading it in one system call.

    Each file is read into a buffer kept from file to file (no object per file); only a
    file larger than the buffer is read on to its end, and one larger than ``max_size`` is
    searched piece by piece without being kept (the worker then refuses it as too large).
    Only regular files are read (NotARegularFile otherwise: a FIFO would wait forever, a
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
        self._buffer = bytearray(READ_SIZE)
        self._views = [self._buffer]
        self._only = self.needles[0] if len(self.needles) == 1 else None
        self._gate = confirm is None or not finer_test_only(self.needles)
        """Whether to look for a needle before ``confirm`` (:func:`finer_test_only`)."""

    def __call__(self, path: str) -> bool:
        """Returns True when the file at ``path`` holds a needle (and passes ``confirm``);
        raises OSError (NotARegularFile for a FIFO, a device, a folder)."""
        if type(path) is IrregularPath:
            raise NotARegularFile(path, path.kind)
        # The walk saw a regular file: no status is asked for unless the buffer fills (a
        # large file, or a device swapped in since), as most files fit in one read. A FIFO
        # swapped in is opened without blocking, and reads as empty or fails.
        fd = os.open(path, OPEN_FLAGS)
        try:
            size = os.readv(fd, self._views)
            if size == READ_SIZE:
                return self._holds_large(path, fd)
        finally:
            os.close(fd)
        self.size = size
        if not self._gate:
            found = True
        elif self._only is not None:  # the usual case: one old module
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
            raise NotARegularFile(path, kind_of(status.st_mode))
        self.size = status.st_size
        if self.max_size is not None and status.st_size > self.max_size:
            return _stream_holds(fd, self.needles, head=bytes(self._buffer))
        data = bytes(self._buffer) + read_rest(fd, None)
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
    while chunk := os.read(fd, READ_SIZE):
        window = tail + chunk
        if any(needle in window for needle in needles):
            return True
        tail = window[-overlap:] if overlap else b""
    return False


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
    except OSError:
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
