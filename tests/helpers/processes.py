"""Waiting on processes and signals in tests: hang guards, never speed claims.

CI machines are shared and at times slow, so no test compares an elapsed time with what
a step should take. A test that waits for something gives it :data:`HANG_GUARD` seconds,
far more than it ever needs, and then fails with a message that starts with ``hung:``:
the bound only keeps a hang from holding the suite until CI's own limit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import pytest

HANG_GUARD = 300.0
"""Seconds after which a wait is taken for a hang (what is waited for takes at most a few)."""


def finish(process: subprocess.Popen[str], what: str, *,
           limit: float = HANG_GUARD) -> tuple[str, str]:
    """Returns what ``process`` writes to its pipes until it ends; kills it (its group too,
    when it leads one) and fails the test with ``hung: what`` after ``limit`` seconds."""
    try:
        out, err = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill(process.pid)
        out, err = process.communicate()
        pytest.fail(f"hung: {what}: still running after {limit:g} s\n{err[-4000:]}")
    return out or "", err or ""


def _kill(pid: int) -> None:
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def wait_until(condition: Callable[[], object], what: str, *,
               limit: float = HANG_GUARD) -> None:
    """Returns once ``condition()`` is true, checking every 20 ms; fails the test with
    ``hung: what`` when it is still false after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"hung: {what}: still not so after {limit:g} s")
        time.sleep(0.02)



@contextmanager
def hang_guard(what: str, *, limit: float = HANG_GUARD) -> Iterator[None]:
    """Fails the test with ``hung: what`` when the body (run in the main thread) has not
    finished after ``limit`` seconds, by raising pytest's failure from a SIGALRM handler."""
    def hung(signum: int, frame: FrameType | None) -> None:
        pytest.fail(f"hung: {what}: still running after {limit:g} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def ctrl_c_as_at_a_terminal() -> Iterator[None]:
    """Makes Ctrl-C (SIGINT) raise KeyboardInterrupt in this process while the body runs,
    and start at its default in every process started meanwhile, as at a terminal.

    A suite started as a background job of a script (``make test &`` in a CI step) runs
    with SIGINT ignored, and an ignored signal stays ignored in every process started
    from it: a test of what Ctrl-C does would then see nothing happen. A handled signal,
    by contrast, starts at its default in a new program.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def children(pid: int) -> list[int]:
    """Returns the pids of the live child processes of ``pid`` (Linux: read from /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:  # the thread ended meanwhile
            continue
    return [child for child in found if alive(child)]


def _stat(pid: int) -> list[str]:
    """Returns the fields of /proc/PID/stat after the command name ([] once it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def alive(pid: int) -> bool:
    """Returns True while process ``pid`` runs (a zombie, dead but not reaped, is not)."""
    fields = _stat(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


def cpu_seconds(pid: int) -> float:
    """Returns the processor time process ``pid`` has used so far (0 once it is gone): how
    far into its work it is, whatever the machine's load."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if fields else 0.0
