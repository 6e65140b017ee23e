"""Running plugin code in child processes that cannot crash, hang or silence the checker.

Two runners live here. :class:`Runner` runs ``auxcheck validate``'s plugin code: one
child process (the *runner*) starts once per run, imports auxcheck and torch, and then
forks one *worker* per unit of work (a target), each in a process group of its own. A
worker streams JSON messages back over a private pipe (never stdout, which plugin code
may write to): the phase it is in (see :func:`auxcheck._core.plugin_calls.announce`) and its
results, each carrying the unit's random token, so lines plugin code writes to that
pipe are not taken for the worker's. Which worker runs and how it ended only the
runner says, on a pipe of its own that the worker closes before any plugin code runs;
the parent signals no process but the runner and the workers the runner forked. However
a worker ends (``os._exit``, a signal, a hang past the timeout, a thread that never
stops), the runner survives it and reports how it ended, so a crash costs a fork, not a
new interpreter and a torch import. The runner itself runs no plugin code; should
plugin code kill it anyway, the next unit starts a fresh one.

:func:`run_bounded` runs a command (``auxcheck check``'s pytest and mypy) in a session
of its own with a time limit, killing its whole process group when the time is up.

Importing this module imports nothing heavy.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, Literal, NamedTuple

from auxcheck._core import plugin_calls

__all__ = [
    "Bounded",
    "Channel",
    "Ending",
    "Phase",
    "Runner",
    "Unit",
    "borrow",
    "main",
    "run_bounded",
]

_KILL_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL when a process group is stopped."""
_REAP_LIMIT = 5.0
"""Seconds the parent waits for the runner to report a killed worker's end."""
_BOOT_LIMIT = 10.0
"""Seconds the runner may take to start Python and import auxcheck (the larger of this and
--timeout): no plugin code runs there, a slow machine only."""
_STARTUP_LIMIT = 120.0
"""Seconds the runner may take to import torch, once per run (the larger of this and --timeout)."""
_OUTPUT_KEPT = 64 * 1024
"""Bytes of a unit's stdout and stderr kept (the last ones)."""
_LOST_PIPE = 86
"""The exit status of a worker that could no longer write to its result pipe."""
_POLL = 0.25
"""Seconds between checks that the runner is still alive while a unit runs."""

Entry = Callable[[Mapping[str, Any], int, "Channel"], None]
"""A unit's body, run in a worker: ``entry(request, index, channel)``."""

_exit = os._exit
"""Bound when the runner imports this module, before any plugin code runs: a plugin may
replace ``os._exit`` (with a wrapper that returns, say), and a worker must still end."""


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


def signal_name(number: int) -> str:
    """Returns ``SIGABRT`` for 6; ``signal 77`` for a number without a name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# ---------------------------------------------------------------- the child side


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
                self._exit(_LOST_PIPE)

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
            chunk = _read_some(0)
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
        if commands.line(_POLL) is None:  # the parent is gone: so is the worker
            _kill_group(pid, signal.SIGKILL)
            _exit(0)
    _kill_group(pid, signal.SIGKILL)  # what plugin code left behind in the worker's group
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
        output = _Tail()
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

    def _follow(self, unit: Unit, output: _Tail) -> None:
        deadline: float | None = None
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self._time_out(unit, output)
                return
            for message in self._read(min(_POLL, left) if left is not None else _POLL, output):
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
        return pid if _parent_of(pid) in (proc.pid, None) else None

    def _time_out(self, unit: Unit, output: _Tail) -> None:
        if self._worker is not None:
            _stop_group(self._worker)
        unit.ending = Ending("timeout", self.timeout)
        limit = time.monotonic() + _REAP_LIMIT
        while time.monotonic() < limit:
            for message in self._read(_POLL, output):
                if message.get("t") == "ended" and message.get("i") == unit.index:
                    self._worker = None
                    return
            if self._dead():
                break
        self.close()  # the runner did not see the worker go: start afresh

    @staticmethod
    def _lost_pipe(message: Mapping[str, Any]) -> str:
        return ("plugin code closed or replaced the pipe auxcheck reports through"
                if message.get("status") == _LOST_PIPE else "")

    # -------------------------------------------------------- the runner process

    def _start(self, output: _Tail) -> Ending | None:
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

    def _await(self, step: str, limit: float | None, output: _Tail) -> Ending | None:
        """Waits up to ``limit`` seconds for the runner to say ``step``; returns how that failed."""
        deadline = None if limit is None else time.monotonic() + limit
        while deadline is None or time.monotonic() < deadline:
            if any(m.get("t") == step for m in self._read(_POLL, output)):
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

    def _read(self, wait: float, output: _Tail) -> list[dict[str, Any]]:
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
        messages: list[dict[str, Any]] = []
        for fd in ready:
            if fd == self._output:
                data = _read_some(fd)
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
            _stop_group(self._worker, grace=0)
            self._worker = None
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop_group(proc.pid, grace=0)
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
        data = _read_some(self.fd)
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


class _Tail:
    """The last bytes a process wrote, and how many came before them."""

    def __init__(self) -> None:
        self.data = b""
        self.dropped = 0

    def add(self, data: bytes) -> None:
        self.data += data
        if len(self.data) > _OUTPUT_KEPT:
            self.dropped += len(self.data) - _OUTPUT_KEPT
            self.data = self.data[-_OUTPUT_KEPT:]

    def take(self) -> str:
        text = self.text()
        self.data, self.dropped = b"", 0
        return text

    def text(self) -> str:
        text = self.data.decode(errors="replace")
        if self.dropped:
            text = f"[auxcheck: {self.dropped} earlier bytes of output not kept]\n{text}"
        return text


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


def _read_some(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


def _package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _parent_of(pid: int) -> int | None:
    """Returns the parent of process ``pid`` as /proc tells it; None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        return int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


def _kill_group(pgid: int, sig: int) -> bool:
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


def _stop_group(pgid: int, *, grace: float = _KILL_GRACE) -> None:
    """Asks process group ``pgid`` to stop (SIGTERM), then kills it (SIGKILL) after ``grace``."""
    if grace and _kill_group(pgid, signal.SIGTERM):
        time.sleep(grace)
    _kill_group(pgid, signal.SIGKILL)


# ---------------------------------------------------------------- a bounded command


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
            _stop_group(proc.pid, grace=0 if proc.poll() is not None else _KILL_GRACE)
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
        _stop_group(proc.pid, grace=0 if proc.poll() is not None else _KILL_GRACE)
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
        data = _read_some(self.fd)
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

