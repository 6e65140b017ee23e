"""Processes at the OS level: signalling a process group, reading a pipe, naming a signal."""

from __future__ import annotations

import os
import signal
import time

__all__ = [
    "KILL_GRACE",
    "group_memory",
    "group_running",
    "kill_group",
    "parent_of",
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
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        return int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


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


def group_memory(pgid: int) -> int:
    """Returns the bytes of private memory in use by the processes of group ``pgid``: each
    one's resident anonymous memory (``RssAnon``, what it allocated and touched, not the
    libraries it shares with others), summed. 0 when none can be read (not Linux)."""
    total = 0
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                if int(stat.read().rpartition(b")")[2].split()[2]) != pgid:
                    continue
            with open(f"/proc/{pid}/status", "rb") as status:
                total += _anonymous_kib(status.read()) * 1024
        except (OSError, ValueError, IndexError):  # gone meanwhile, or not ours to read
            continue
    return total


def group_running(pgid: int) -> list[int]:
    """Returns the processes of group ``pgid`` that still run (a zombie waiting for its reaper
    has ended); [] when none can be read (not Linux)."""
    running = []
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
            running.append(int(pid))
    return running


def _anonymous_kib(status: bytes) -> int:
    """Returns ``RssAnon`` from a /proc/PID/status text, in KiB (``VmRSS`` on kernels without it)."""
    fields = dict(line.split(b":", 1) for line in status.splitlines() if b":" in line)
    value = fields.get(b"RssAnon", fields.get(b"VmRSS", b"0 kB"))
    return int(value.split()[0])
