"""A command (``auxcheck check``'s pytest and mypy) run in a session of its own, bounded in time,
memory and the output kept.

:func:`run_bounded` kills the command's whole process group when the time is up or its
processes hold more memory than allowed, and whatever the command left running in it when
it ends (or when the caller is stopped: a KeyboardInterrupt on the way out kills the group
too). Of its output only a bounded tail is kept.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from auxcheck._core.stops import held
from auxcheck._isolation.processes import (
    KILL_GRACE,
    group_memory,
    read_some,
    signal_name,
    stop_group,
)
from auxcheck._isolation.tail import Tail

__all__ = ["MEMORY_POLL", "OUTPUT_KEPT", "Bounded", "memory_text", "run_bounded"]

OUTPUT_KEPT = 1 << 20
"""Bytes of a command's captured output kept (the last ones): the rest is counted, not kept."""
MEMORY_POLL = 0.25
"""Seconds between two looks at the memory a command's processes hold."""


def memory_text(size: int) -> str:
    """Returns ``size`` bytes as people write it: ``512 MB``, ``1.5 GB`` (powers of 1024)."""
    if size >= 1 << 30:
        return f"{size / (1 << 30):.3g} GB"
    return f"{size / (1 << 20):.3g} MB"


@dataclass(frozen=True, slots=True)
class Bounded:
    """How a bounded command ended: its exit status (negative: a signal), the tail of its
    captured output, and whether it was killed for its time or its memory."""

    returncode: int
    output: str = ""
    timed_out: bool = False
    memory_limit: int = 0
    """The limit in bytes that the command's processes went over, for which they were
    killed (0: they were not)."""

    def text(self) -> str:
        """Returns how the command ended, e.g. ``was killed by SIGABRT``."""
        if self.timed_out:
            return "did not finish within its --timeout and was killed"
        if self.memory_limit:
            return (f"held more than {memory_text(self.memory_limit)} of memory "
                    "(--max-memory) and was killed")
        if self.returncode < 0:
            return f"was killed by {signal_name(-self.returncode)}"
        return f"exited {self.returncode}"


def run_bounded(command: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
                env: Mapping[str, str] | None = None, timeout: float = 0, memory: int = 0,
                stream: IO[str] | None = None, progress: str | None = None,
                count: Callable[[bytes], float] | None = None) -> Bounded:
    """Runs ``command`` in a session of its own; returns how it ended and its output.

    ``timeout`` seconds (0: none) bound the run, and ``memory`` bytes (0: none) the private
    memory its processes hold together (looked at every :data:`MEMORY_POLL` seconds); past
    either the whole process group (pytest-xdist workers included) is killed, as is whatever
    the command left running in it when it ends, or when this call is left by an exception
    (Ctrl-C, SIGTERM). With ``stream`` the output is relayed there as it comes (and not
    kept), else its last :data:`OUTPUT_KEPT` bytes are kept. The output comes through a pipe
    that is closed once the command ended: a process it leaves running in a session of its
    own cannot keep the caller's stderr open, nor hang whoever reads it. With ``progress``
    (and no ``stream``: relayed output is progress enough) the run is a progress task of that
    name (:mod:`auxcheck._core.progress`), reported while it waits; ``count(output)``, fed
    the output as it comes, returns the items done so far.
    """
    if progress is None or stream is not None:
        return _run(command, cwd, env, timeout, memory, stream, None)
    from auxcheck._core.progress import task

    with task(progress, unit="items", announced=True) as job:
        return _run(command, cwd, env, timeout, memory, stream,
                    lambda data: job.update(None if count is None else count(data)))


def _run(command: Sequence[str], cwd: str | os.PathLike[str] | None,
         env: Mapping[str, str] | None, timeout: float, memory: int, stream: IO[str] | None,
         seen: Callable[[bytes], object] | None) -> Bounded:
    proc = subprocess.Popen(list(command), cwd=cwd, env=None if env is None else dict(env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    relay = _Relay(proc.stdout.fileno(), stream, seen)  # type: ignore[union-attr]
    watch = _Watch(proc.pid, memory, relay)
    try:
        exited = _wait_for(proc.pid, timeout or None, meanwhile=watch.pump,
                           stop=lambda: watch.over)
    finally:
        with held():  # a stop that comes now waits for the group to be gone
            stop_group(proc.pid, grace=0 if proc.poll() is not None else KILL_GRACE)
            returncode = proc.wait()
            relay.drain(time.monotonic() + _DRAIN_LIMIT)
            proc.stdout.close()  # type: ignore[union-attr]
            relay.write(b"", final=True)
    return Bounded(returncode, relay.text(), timed_out=not exited and not watch.over,
                   memory_limit=memory if watch.over else 0)


_DRAIN_LIMIT = 1.0
"""Seconds the relay keeps reading after the command ended (what it wrote last, in flight)."""


class _Watch:
    """Spends the waits of a bounded run: relays its output, and every :data:`MEMORY_POLL`
    seconds adds up the memory its process group holds (``over`` once past ``memory``)."""

    def __init__(self, pgid: int, memory: int, relay: _Relay) -> None:
        self.pgid = pgid
        self.memory = memory
        self.relay = relay
        self.over = False
        self._next_look = time.monotonic()

    def pump(self, wait: float) -> None:
        """Relays what arrives within ``wait`` seconds, then looks at the memory when due."""
        self.relay.pump(wait)
        if self.relay.seen is not None:
            self.relay.seen(b"")  # a heartbeat: the task's line comes even in a silent stretch
        if self.memory and time.monotonic() >= self._next_look:
            self._next_look = time.monotonic() + MEMORY_POLL
            self.over = group_memory(self.pgid) > self.memory


class _Relay:
    """Copies what a command writes to its pipe onto a text stream, decoded as UTF-8; without
    a stream, keeps its tail instead."""

    def __init__(self, fd: int, stream: IO[str] | None,
                 seen: Callable[[bytes], object] | None = None) -> None:
        import codecs

        self.fd = fd
        self.stream = stream
        self.seen = seen
        """Called with each piece of output as it comes (``b""``: nothing came)."""
        self.tail = Tail(OUTPUT_KEPT)
        self.ended = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def text(self) -> str:
        """Returns the tail kept ("" when the output was relayed)."""
        return self.tail.text()

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
        """Relays ``data`` to the stream (``final``: the last of it), or keeps it in the tail."""
        if self.seen is not None and data:
            self.seen(data)
        if self.stream is None:
            self.tail.add(data)
            return
        text = self._decoder.decode(data, final)
        try:
            if text:
                self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the caller's stream went away: the command still runs out
            pass


def _wait_for(pid: int, timeout: float | None, *,
              meanwhile: Callable[[float], object] = time.sleep,
              stop: Callable[[], bool] = bool) -> bool:
    """Returns True when child ``pid`` exited within ``timeout`` seconds, False when it did
    not or ``stop()`` turned true first; it is left unreaped, so its process group can still
    be killed. Between looks, ``meanwhile(seconds)`` spends the pause (relaying the child's
    output as it comes, and watching its memory)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 0.01
    while True:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
            return True
        left = None if deadline is None else deadline - time.monotonic()
        if (left is not None and left <= 0) or stop():
            return False
        meanwhile(pause if left is None else min(pause, left))
        pause = min(pause * 2, 0.2)
