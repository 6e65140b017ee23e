"""Processes at the OS level: signalling a process group, reading a pipe, naming a signal."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

__all__ = [
    "KILL_GRACE",
    "group_memory",
    "group_running",
    "kill_group",
    "parent_of",
    "process_stats",
    "read_some",
    "signal_name",
    "stop_group",
]

KILL_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL when a process group is stopped."""


def signal_name(number: int) -> str:
    """Returns ``SIGABRT`` for 6; ``signal 77`` for a number without a name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def read_some(fd: int) -> bytes:
    """Returns up to 64 KiB from ``fd`` (b"" at its end, or when it cannot be read)."""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


def parent_of(pid: int) -> int | None:
    """Returns the parent of process ``pid`` as /proc tells it; None when it cannot be read."""
    try:
        return int(_stat_fields(pid)[1])
    except (OSError, ValueError, IndexError):
        return None


def _stat_fields(pid: int | str) -> list[bytes]:
    """Returns the fields of ``/proc/PID/stat`` after the command's name (state, parent, group,
    session, ...); raises OSError where it cannot be read. The one reader of that file here."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        # After the command's name, which may hold anything but ends at the last ')'.
        return stat.read().rpartition(b")")[2].split()


def kill_group(pgid: int, sig: int) -> bool:
    """Sends ``sig`` to process group ``pgid``; returns False when no such group is left.

    Never our own group, nor 0, 1 or a negative number (which name our group or every
    process we may signal): only groups of processes auxcheck started are signalled.
    """
    if pgid <= 1 or pgid in (os.getpid(), os.getpgrp()):
        return False
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # not ours (any more): leave it
        return False
    return True


def stop_group(pgid: int, *, grace: float = KILL_GRACE) -> None:
    """Asks process group ``pgid`` to stop (SIGTERM), then kills it (SIGKILL) after ``grace``."""
    if grace and kill_group(pgid, signal.SIGTERM):
        time.sleep(grace)
    kill_group(pgid, signal.SIGKILL)


def process_stats() -> Iterator[tuple[int, list[bytes]]]:
    """Yields each process's pid and the fields of its ``/proc/PID/stat`` after the command's
    name (state, parent, group, session, ...), for every process that can be read; nothing
    where there is no ``/proc`` (not Linux)."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return
    for pid in pids:
        try:
            fields = _stat_fields(pid)
        except OSError:  # gone meanwhile, or not ours to read
            continue
        yield int(pid), fields


def group_memory(pgid: int) -> int:
    """Returns the bytes of private memory in use by the processes of group ``pgid``: each
    one's resident anonymous memory (``RssAnon``, what it allocated and touched, not the
    libraries it shares with others), summed. 0 when none can be read (not Linux)."""
    total = 0
    for pid, fields in process_stats():
        try:
            if int(fields[2]) != pgid:
                continue
            with open(f"/proc/{pid}/status", "rb") as status:
                total += _anonymous_kib(status.read()) * 1024
        except (OSError, ValueError, IndexError):  # gone meanwhile, or not ours to read
            continue
    return total


def group_running(pgid: int) -> list[int]:
    """Returns the processes of group ``pgid`` that still run (a zombie waiting for its reaper
    has ended); [] when none can be read (not Linux)."""
    return [pid for pid, fields in process_stats()
            if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] != b"Z"]


def _anonymous_kib(status: bytes) -> int:
    """Returns ``RssAnon`` from a /proc/PID/status text, in KiB (``VmRSS`` on kernels without it)."""
    fields = dict(line.split(b":", 1) for line in status.splitlines() if b":" in line)
    value = fields.get(b"RssAnon", fields.get(b"VmRSS", b"0 kB"))
    return int(value.split()[0])
