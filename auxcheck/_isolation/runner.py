"""The parent side of isolation: one runner process per entry, each unit in a fresh worker.

:class:`Runner` runs ``auxcheck validate``'s plugin code: one child process (the
*runner*, :mod:`auxcheck._isolation.child`) starts once per run, imports auxcheck and
torch, and then forks one worker per unit of work (a target). The parent signals no
process but the runner and the workers the runner forked. However a worker ends
(``os._exit``, a signal, a hang past the timeout, a thread that never stops), the runner
survives it and reports how it ended, so a crash costs a fork, not a new interpreter and
a torch import. The runner itself runs no plugin code; should plugin code kill it
anyway, the next unit starts a fresh one.

Importing this module imports nothing heavy.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from auxcheck._core.progress import tick
from auxcheck._isolation.child import LOST_PIPE, POLL
from auxcheck._isolation.processes import parent_of, read_some, signal_name, stop_group
from auxcheck._isolation.tail import Tail

__all__ = [
    "Ending",
    "Phase",
    "Runner",
    "Unit",
    "borrow",
]

_REAP_LIMIT = 5.0
"""Seconds the parent waits for the runner to report a killed worker's end."""
_BOOT_LIMIT = 10.0
"""Seconds the runner may take to start Python and import auxcheck (the larger of this and
--timeout): no plugin code runs there, a slow machine only."""
_STARTUP_LIMIT = 120.0
"""Seconds the runner may take to import torch, once per run (the larger of this and --timeout)."""
_OUTPUT_KEPT = 64 * 1024
"""Bytes of a unit's stdout and stderr kept (the last ones)."""


# ---------------------------------------------------------------- what the parent learns


@dataclass(frozen=True, slots=True)
class Phase:
    """The plugin call a worker announced last: the rule a crash there breaks, and what runs."""

    code: str
    what: str
    key: str | None = None
    """What other units share this phase, so they would end the same way (e.g. an import)."""
    title: str | None = None
    """The heading of a finding about this phase, when the rule's title does not fit it."""


@dataclass(frozen=True, slots=True)
class Ending:
    """How a unit ended without finishing: an exit, a signal, the time limit, a lost runner."""

    kind: Literal["exit", "signal", "timeout", "runner"]
    status: float = 0
    """The exit status, the signal number or the time limit in seconds (0 for ``runner``)."""
    note: str = ""

    def text(self) -> str:
        """Returns how the process ended, e.g. ``was killed by SIGABRT``."""
        if self.kind == "exit":
            how = (f"exited with status {int(self.status)} via os._exit (or a C-level exit) "
                   "without reporting a result")
        elif self.kind == "signal":
            how = f"was killed by {signal_name(int(self.status))}"
        elif self.kind == "timeout":
            how = f"did not return within {self.status:g} s (--timeout) and was killed"
        else:
            how = "took auxcheck's runner process down with it"
        return f"{how} ({self.note})" if self.note else how


@dataclass(slots=True)
class Unit:
    """What one unit sent (its results and messages, in order), its last phase, how it ended."""

    index: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    phase: Phase | None = None
    ending: Ending | None = None
    """None when the unit's body returned (the messages hold its results)."""
    output: str = ""
    """The tail of what the unit wrote to stdout and stderr."""


# ---------------------------------------------------------------- the parent side


_IDLE: dict[str, Runner] = {}
"""Runners between two runs of the same process (in-process callers run many), by entry."""


@contextmanager
def borrow(entry: str, *, timeout: float) -> Iterator[Runner]:
    """Yields a runner of ``entry`` (an idle one when alive, else a new one) whose units
    ``timeout`` bounds; afterwards it is kept for the next run when clean, else killed."""
    runner = _IDLE.pop(entry, None) or Runner(entry)
    runner.timeout = timeout
    try:
        yield runner
    finally:
        if runner.idle:  # a usage error, say, comes after the unit ended
            _IDLE[entry] = runner
        else:
            runner.close()


@atexit.register
def _close_idle() -> None:
    while _IDLE:
        _IDLE.popitem()[1].close()


class Runner:
    """The parent's handle on one runner process and the worker of the unit that runs.

    ``Runner(entry).run(i, request)`` runs unit ``i`` of ``request`` in a fresh worker
    and returns what it sent and how it ended; ``timeout`` (seconds, 0 for none) bounds
    each unit. :func:`borrow` hands one out; :meth:`close` kills whatever still runs.
    """

    def __init__(self, entry: str, *, timeout: float = 0) -> None:
        self.entry = entry
        self.timeout = timeout
        self.startup_output = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._results = _Lines()
        self._control = _Lines()
        self._output = -1
        self._worker: int | None = None
        self._token = ""

    @property
    def idle(self) -> bool:
        """Returns True when the runner is alive and no worker runs: it can take the next unit."""
        return self._worker is None and not self._dead()

    # -------------------------------------------------------- one unit

    def run(self, index: int, request: Mapping[str, Any]) -> Unit:
        """Returns what unit ``index`` of ``request`` sent and how it ended; starts a runner
        when none is alive."""
        unit = Unit(index)
        output = Tail(_OUTPUT_KEPT)
        try:
            failure = self._start(output)
            if failure is not None:
                unit.ending = failure
                return unit
            proc = self._require()
            self._token = secrets.token_hex(16)
            try:
                line = json.dumps({"i": index, "k": self._token, "request": request}) + "\n"
                proc.stdin.write(line.encode())  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
            except OSError:
                unit.ending = self._lost("it stopped before the unit could start")
                return unit
            self._follow(unit, output)
            return unit
        finally:
            unit.output = output.text()

    def _follow(self, unit: Unit, output: Tail) -> None:
        deadline: float | None = None
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self._time_out(unit, output)
                return
            for message in self._read(min(POLL, left) if left is not None else POLL, output):
                kind = message.get("t")
                if kind == "start" and message.get("i") == unit.index:
                    self._worker = self._child_pid(message.get("pid"))
                    deadline = time.monotonic() + self.timeout if self.timeout else None
                elif kind == "ended" and message.get("i") == unit.index:
                    self._worker = None
                    if not any(m.get("t") == "finished" for m in unit.messages):
                        unit.ending = _ending(message, self._lost_pipe(message))
                    return
                elif kind in _CONTROL or message.get("k") != self._token:
                    continue  # another unit's, or a line plugin code wrote
                elif kind == "phase":
                    unit.phase = Phase(str(message.get("code")), str(message.get("what")),
                                       message.get("key"), message.get("title"))
                else:
                    unit.messages.append(message)
            if self._dead():
                unit.ending = self._lost("it ended while the unit ran")
                return

    def _child_pid(self, pid: Any) -> int | None:
        """Returns ``pid`` when it is a process the runner forked, else None (never signalled)."""
        proc = self._proc
        if type(pid) is not int or pid <= 1 or proc is None:
            return None
        return pid if parent_of(pid) in (proc.pid, None) else None

    def _time_out(self, unit: Unit, output: Tail) -> None:
        if self._worker is not None:
            stop_group(self._worker)
        unit.ending = Ending("timeout", self.timeout)
        limit = time.monotonic() + _REAP_LIMIT
        while time.monotonic() < limit:
            for message in self._read(POLL, output):
                if message.get("t") == "ended" and message.get("i") == unit.index:
                    self._worker = None
                    return
            if self._dead():
                break
        self.close()  # the runner did not see the worker go: start afresh

    @staticmethod
    def _lost_pipe(message: Mapping[str, Any]) -> str:
        return ("plugin code closed or replaced the pipe auxcheck reports through"
                if message.get("status") == LOST_PIPE else "")

    # -------------------------------------------------------- the runner process

    def _start(self, output: Tail) -> Ending | None:
        """Starts a runner when none is alive; returns how that failed, or None."""
        if self._proc is not None and self._proc.poll() is None:
            return None
        self.close()
        results, results_end = os.pipe()
        control, control_end = os.pipe()
        output_read, output_write = os.pipe()
        # `python -c` puts the current folder first on sys.path: a plugin project's
        # select.py or signal.py must not replace the runner's own imports (the
        # workers put it back for the plugin's imports).
        boot = ("import sys; sys.path[:] = [p for p in sys.path if p]; "
                f"sys.path.insert(0, {_package_root()!r}); import auxcheck._isolation.child as c; c.main()")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", boot, str(results_end), str(control_end), self.entry],
                stdin=subprocess.PIPE, stdout=output_write, stderr=output_write,
                pass_fds=(results_end, control_end), start_new_session=True)
        finally:
            for fd in (results_end, control_end, output_write):
                os.close(fd)
        self._results, self._control, self._output = _Lines(results), _Lines(control), output_read
        for step, floor in (("booted", _BOOT_LIMIT), ("ready", _STARTUP_LIMIT)):
            failure = self._await(step, max(self.timeout, floor) if self.timeout else None,
                                  output)
            if failure is not None:
                return failure
        self.startup_output += output.take()
        return None

    def _await(self, step: str, limit: float | None, output: Tail) -> Ending | None:
        """Waits up to ``limit`` seconds for the runner to say ``step``; returns how that failed."""
        deadline = None if limit is None else time.monotonic() + limit
        while deadline is None or time.monotonic() < deadline:
            if any(m.get("t") == step for m in self._read(POLL, output)):
                return None
            if self._dead():
                self.startup_output += output.take()
                return self._lost("it could not start")
        self.startup_output += output.take()
        self.close()
        what = "start Python" if step == "booted" else "import torch"
        return Ending("runner", note=f"it did not {what} within {limit:g} s")

    def _require(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            raise RuntimeError("the runner is not running")  # _start made sure it is
        return self._proc

    def _dead(self) -> bool:
        return self._proc is None or self._proc.poll() is not None

    def _lost(self, why: str) -> Ending:
        proc = self._proc
        status = None if proc is None else proc.poll()
        self.close()
        how = "" if status is None else (f", killed by {signal_name(-status)}" if status < 0
                                         else f", exit status {status}")
        return Ending("runner", note=f"{why}{how}")

    def _read(self, wait: float, output: Tail) -> list[dict[str, Any]]:
        """Returns the messages that arrive within ``wait`` seconds; keeps output in ``output``.

        Which worker runs and how it ended (``start``, ``ended``, ``booted``, ``ready``) is
        read from the runner's control pipe only; the results pipe, which plugin code can
        write to, gives everything else.
        """
        pipes = {p.fd: p for p in (self._results, self._control) if p.fd >= 0}
        fds = [*pipes, *([self._output] if self._output >= 0 else [])]
        if not fds:
            time.sleep(wait)
            return []
        ready, _, _ = select.select(fds, [], [], max(wait, 0.0))
        tick()  # the heartbeat of a command waiting on a target (silent unless one reports)
        messages: list[dict[str, Any]] = []
        for fd in ready:
            if fd == self._output:
                data = read_some(fd)
                if data:
                    output.add(data)
                else:
                    os.close(fd)
                    self._output = -1
                continue
            pipe = pipes[fd]
            found = pipe.read()
            messages += [m for m in found if (pipe is self._control) == (m.get("t") in _CONTROL)]
        return messages

    def close(self) -> None:
        """Kills the worker and the runner (each with its process group) and closes the pipes."""
        if self._worker is not None:
            stop_group(self._worker, grace=0)
            self._worker = None
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_group(proc.pid, grace=0)
            if proc.stdin is not None:
                try:
                    proc.stdin.close()
                except OSError:
                    pass
            proc.wait()
        self._results.close()
        self._control.close()
        if self._output >= 0:
            os.close(self._output)
        self._output = -1


_CONTROL = frozenset({"booted", "ready", "start", "ended"})
"""The messages only the runner sends, on its control pipe."""


class _Lines:
    """The parent's end of one pipe of JSON lines (-1 once closed)."""

    def __init__(self, fd: int = -1) -> None:
        self.fd = fd
        self.buffer = b""

    def read(self) -> list[dict[str, Any]]:
        """Returns the whole messages that came (the pipe is ready); closes it at its end."""
        data = read_some(self.fd)
        if not data:
            self.close()
            return []
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        return [m for m in map(_parse, lines) if m is not None]

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd, self.buffer = -1, b""


def _ending(message: Mapping[str, Any], note: str) -> Ending:
    if "signal" in message:
        return Ending("signal", int(message["signal"]), note)
    return Ending("exit", int(message.get("status", 0)), note)


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _package_root() -> str:
    """Returns the folder holding the ``auxcheck`` package (three levels above this file)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
