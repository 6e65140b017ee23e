"""A command (``auxcheck check``'s pytest and mypy) run in a session of its own with a time limit.

:func:`run_bounded` kills the command's whole process group when the time is up, and
whatever the command left running in it when it ends.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from auxcheck._isolation.processes import KILL_GRACE, read_some, signal_name, stop_group

__all__ = ["Bounded", "run_bounded"]


@dataclass(frozen=True, slots=True)
class Bounded:
    """How a bounded command ended: its exit status (negative: a signal) and captured output."""

    returncode: int
    output: str = ""
    timed_out: bool = False

    def text(self) -> str:
        """Returns how the command ended, e.g. ``was killed by SIGABRT``."""
        if self.timed_out:
            return "did not finish within its --timeout and was killed"
        if self.returncode < 0:
            return f"was killed by {signal_name(-self.returncode)}"
        return f"exited {self.returncode}"


def run_bounded(command: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
                env: Mapping[str, str] | None = None, timeout: float = 0,
                stream: IO[str] | None = None) -> Bounded:
    """Runs ``command`` in a session of its own; returns how it ended and its output.

    ``timeout`` seconds (0: none) bound the run, after which the whole process group
    (pytest-xdist workers included) is killed; so is whatever the command left running
    in it when it ends. With ``stream`` the output is relayed there as it comes (and not
    captured), else it is captured through a temporary file. Either way the command
    never holds the caller's own descriptors: a process it leaves running in a session
    of its own cannot keep the caller's stderr open, nor hang whoever reads it.
    """
    if stream is not None:
        return _run_relayed(command, cwd=cwd, env=env, timeout=timeout, stream=stream)
    import tempfile

    with tempfile.TemporaryFile() as sink:
        proc = subprocess.Popen(list(command), cwd=cwd, env=None if env is None else dict(env),
                                stdin=subprocess.DEVNULL, stdout=sink, stderr=sink,
                                start_new_session=True)
        try:
            timed_out = not _wait_for(proc.pid, None if not timeout else timeout)
        finally:
            stop_group(proc.pid, grace=0 if proc.poll() is not None else KILL_GRACE)
            returncode = proc.wait()
        sink.seek(0)
        output = sink.read().decode(errors="replace")
    return Bounded(returncode, output, timed_out)


_DRAIN_LIMIT = 1.0
"""Seconds the relay keeps reading after the command ended (what it wrote last, in flight)."""


def _run_relayed(command: Sequence[str], *, cwd: str | os.PathLike[str] | None,
                 env: Mapping[str, str] | None, timeout: float, stream: IO[str]) -> Bounded:
    """Runs ``command`` as :func:`run_bounded` does, relaying its output to ``stream`` through
    a pipe that is closed once the command ended (whoever else still holds it)."""
    proc = subprocess.Popen(list(command), cwd=cwd, env=None if env is None else dict(env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    relay = _Relay(proc.stdout.fileno(), stream)  # type: ignore[union-attr]
    try:
        timed_out = not _wait_for(proc.pid, timeout or None, meanwhile=relay.pump)
    finally:
        stop_group(proc.pid, grace=0 if proc.poll() is not None else KILL_GRACE)
        returncode = proc.wait()
        relay.drain(time.monotonic() + _DRAIN_LIMIT)
        proc.stdout.close()  # type: ignore[union-attr]
        relay.write(b"", final=True)
    return Bounded(returncode, "", timed_out)


class _Relay:
    """Copies what a command writes to its pipe onto a text stream, decoded as UTF-8."""

    def __init__(self, fd: int, stream: IO[str]) -> None:
        import codecs

        self.fd = fd
        self.stream = stream
        self.ended = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def drain(self, deadline: float) -> None:
        """Relays what is still in the pipe, until it is empty for a moment or ``deadline``."""
        while not self.ended and time.monotonic() < deadline and self.pump(0.05):
            pass

    def pump(self, wait: float) -> bool:
        """Relays what arrives within ``wait`` seconds; returns True when something did."""
        if self.ended:
            time.sleep(wait)
            return False
        ready, _, _ = select.select([self.fd], [], [], wait)
        if not ready:
            return False
        data = read_some(self.fd)
        self.ended = not data
        self.write(data)
        return bool(data)

    def write(self, data: bytes, *, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        try:
            if text:
                self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the caller's stream went away: the command still runs out
            pass


def _wait_for(pid: int, timeout: float | None, *,
              meanwhile: Callable[[float], object] = time.sleep) -> bool:
    """Returns True when child ``pid`` exited within ``timeout`` seconds; it is left unreaped,
    so its process group can still be killed. Between looks, ``meanwhile(seconds)`` spends
    the pause (a sleep, or relaying the child's output as it comes)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 0.01
    while True:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
            return True
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        meanwhile(pause if left is None else min(pause, left))
        pause = min(pause * 2, 0.2)
