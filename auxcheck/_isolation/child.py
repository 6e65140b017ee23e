"""The child side of isolation: the runner process and the workers it forks, which run plugin code.

:class:`~auxcheck._isolation.runner.Runner` starts the runner with ``python -c`` importing
this module and calling :func:`main`: it imports the unit's entry once, then forks one
*worker* per unit, each in a process group of its own. A worker streams JSON messages
back over a private pipe (never stdout, which plugin code may write to): the phase it is
in (see :func:`auxcheck._core.plugin_calls.announce`) and its results, each carrying the
unit's random token, so lines plugin code writes to that pipe are not taken for the
worker's. Which worker runs and how it ended only the runner says, on a pipe of its own
that the worker closes before any plugin code runs.

Importing this module imports nothing heavy.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from auxcheck._core import plugin_calls
from auxcheck._isolation.processes import kill_group, read_some

__all__ = [
    "LOST_PIPE",
    "POLL",
    "Channel",
    "Entry",
    "main",
]

LOST_PIPE = 86
"""The exit status of a worker that could no longer write to its result pipe."""
POLL = 0.25
"""Seconds between checks that the runner is still alive while a unit runs."""

Entry = Callable[[Mapping[str, Any], int, "Channel"], None]
"""A unit's body, run in a worker: ``entry(request, index, channel)``."""

_exit = os._exit
"""Bound when the runner imports this module, before any plugin code runs: a plugin may
replace ``os._exit`` (with a wrapper that returns, say), and a worker must still end."""


class Channel:
    """One end of a pipe to the parent: JSON lines, written only by the process it was made in.

    A process the plugin forks inherits the pipe; it must not speak for the worker, so
    it ends (``os._exit(0)``) the first time it tries to. Each line carries ``token``
    (the unit's, in a worker), which the parent checks.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pid = os.getpid()
        self.token = ""
        self.last: tuple[str, str] | None = None
        self._lock = threading.Lock()
        # Bound now: plugin code may patch json or os later.
        self._dumps, self._write, self._exit, self._getpid = (json.dumps, os.write, _exit,
                                                               os.getpid)

    def send(self, message: Mapping[str, Any]) -> None:
        """Writes ``message`` as one JSON line; a process forked by plugin code exits instead."""
        if self._getpid() != self.pid:
            self._exit(0)
        data = (self._dumps({**message, "k": self.token}) + "\n").encode()
        with self._lock:
            try:
                while data:
                    data = data[self._write(self.fd, data):]
            except OSError:  # plugin code closed or replaced the pipe: nothing can be reported
                self._exit(LOST_PIPE)

    def phase(self, code: str, what: str, *, key: str | None = None,
              title: str | None = None) -> None:
        """Tells the parent that plugin code ``what`` runs next under rule ``code`` (only changes).

        ``key`` names what other units share this phase (the same import, say); ``title``
        heads a finding about it when the rule's title would not fit.
        """
        if (code, what) == self.last and key is None and title is None:
            return
        self.last = (code, what)
        message = {"t": "phase", "code": code, "what": what}
        for name, value in (("key", key), ("title", title)):
            if value is not None:
                message[name] = value
        self.send(message)


def main(argv: Sequence[str] | None = None) -> None:
    """Runs the runner process: ``argv`` is ``[result fd, control fd, entry]``; never returns.

    Each line on stdin is a unit, ``{"i": index, "k": token, "request": {...}}``; the
    runner forks a worker for it, waits for it and reports on the control pipe when it
    started and how it ended. It exits when stdin closes (the parent is gone), killing a
    worker that still runs.
    """
    results_text, control_text, entry_name = list(sys.argv[1:] if argv is None else argv)
    channel, control = Channel(int(results_text)), Channel(int(control_text))
    control.send({"t": "booted"})
    module_name, _, func_name = entry_name.partition(":")
    module = __import__(module_name, fromlist=[func_name])
    prepare = getattr(module, "prepare", None)
    if prepare is not None:
        prepare()  # heavy imports, once, before the clock of any unit starts
    control.send({"t": "ready"})
    commands = _Commands()
    while True:
        line = commands.line(None)
        if line is None:
            _exit(0)
        unit = json.loads(line)
        channel.token = str(unit["k"])
        _run_unit(getattr(module, func_name), unit["request"], int(unit["i"]),
                  _Pipes(channel, control), commands)


class _Commands:
    """The runner's stdin, read line by line without Python's buffering (workers fork off it)."""

    def __init__(self) -> None:
        self.data = b""

    def line(self, wait: float | None) -> bytes | None:
        """Returns the next line (b"" when none came within ``wait``), None at end of input."""
        while b"\n" not in self.data:
            ready, _, _ = select.select([0], [], [], wait)
            if not ready:
                return b""
            chunk = read_some(0)
            if not chunk:
                return None
            self.data += chunk
        line, _, self.data = self.data.partition(b"\n")
        return line


class _Pipes(NamedTuple):
    """The runner's two pipes to the parent: the workers' results, and its own control pipe."""

    results: Channel
    control: Channel


def _run_unit(entry: Entry, request: Mapping[str, Any], index: int, pipes: _Pipes,
              commands: _Commands) -> None:
    pid = os.fork()
    if pid == 0:
        try:
            _work(entry, request, index, pipes)
        finally:  # _work never returns; should it ever, the worker must not run the runner's loop
            _exit(0)
    try:
        os.setpgid(pid, pid)
    except OSError:  # the worker did it first, or has already ended
        pass
    pipes.control.send({"t": "start", "i": index, "pid": pid})
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
        if commands.line(POLL) is None:  # the parent is gone: so is the worker
            kill_group(pid, signal.SIGKILL)
            _exit(0)
    kill_group(pid, signal.SIGKILL)  # what plugin code left behind in the worker's group
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        pipes.control.send({"t": "ended", "i": index, "signal": os.WTERMSIG(status)})
    else:
        pipes.control.send({"t": "ended", "i": index,
                            "status": os.waitstatus_to_exitcode(status)})


def _work(entry: Entry, request: Mapping[str, Any], index: int, pipes: _Pipes) -> None:
    """The worker: runs ``entry`` and exits through ``os._exit`` (bound before plugin code ran),
    so no plugin thread, atexit handler or patched ``os._exit`` can keep it alive or choose
    its exit status. The control pipe is closed first: only the runner speaks there."""
    channel = pipes.results
    try:
        os.close(pipes.control.fd)
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        channel.pid = os.getpid()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        plugin_calls.set_phase_listener(channel.phase)
        entry(request, index, channel)
        channel.send({"t": "finished"})
    except BaseException as exc:  # noqa: BLE001 - the entry failed: say so, never a traceback
        try:
            channel.send({"t": "error", "error": f"{plugin_calls.kind_name(exc)}: {exc}"[:500]})
        except BaseException:  # noqa: BLE001, S110 - nothing more can be said
            pass
    finally:
        _exit(0)
