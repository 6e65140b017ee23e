"""Progress on stderr for a command's long waits: downloads, index building, long stages.

Library calls say nothing: a command turns reporting on with :func:`reporting` (a context
variable, so no public function between the command and the wait takes a parameter for
it), and the code that waits opens a :func:`task` and says how far it got. Only the
innermost task shows. A wait that ends within :data:`DELAY` seconds prints nothing. On a
terminal one line is redrawn in place; elsewhere (CI logs, pipes, a ``TERM=dumb`` terminal,
which cannot erase a line) a task prints a line once it is past :data:`DELAY`, then at most
one every :data:`EVERY` seconds, then one when it ends. Lines go to stderr, flushed, never
to stdout: a JSON or SARIF document there stays whole.

Whether a line shows depends on how long a wait takes, so on the machine's speed: the
environment variable :data:`ENVIRONMENT` (``AUXCHECK_PROGRESS=off``) turns progress off
for every command, as ``-q`` does, for logs that must read the same on every run (a
user's CI, auxcheck's own test suite).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import IO, Any, Literal, TypeVar, cast

__all__ = [
    "DELAY",
    "ENVIRONMENT",
    "EVERY",
    "REDRAW",
    "SETTLE",
    "MarkCounter",
    "Reporter",
    "Task",
    "amount_text",
    "clear",
    "reporting",
    "say",
    "task",
    "tick",
    "wanted",
]

DELAY = 2.0
"""Seconds a wait runs before its first line: a shorter one prints nothing."""
EVERY = 5.0
"""Seconds between two plain lines of one task (logs and pipes), so logs stay readable."""
REDRAW = 0.1
"""Seconds between two redraws of the line on a terminal."""
SETTLE = 0.5
"""Seconds a task runs before its first line even when the command has been silent past
:data:`DELAY` (a run of short tasks): one that ends sooner prints nothing."""

ENVIRONMENT = "AUXCHECK_PROGRESS"
"""The environment variable that turns progress off for every command: ``off`` (or ``0``,
``false``, ``no``); ``auto`` (or ``on``, ``1``, ``true``, ``yes``, empty, unset) is the
default, lines past :data:`DELAY`."""

_OFF = frozenset({"off", "0", "false", "no"})
_AUTO = frozenset({"", "auto", "on", "1", "true", "yes"})

Unit = Literal["bytes", "files", "items", "targets"]

_ACTIVE: ContextVar[Reporter | None] = ContextVar("auxcheck_progress", default=None)


def amount_text(done: float | None, total: float | None, unit: Unit) -> str:
    """Returns how far a task got: ``12.4 of 31.0 MB``, ``812 of 3510 files``, ``40 items
    done``, or "" when nothing is counted."""
    if done is None:
        return ""
    if unit == "bytes":
        return (f"{done / 1e6:.1f} of {total / 1e6:.1f} MB" if total
                else f"{done / 1e6:.1f} MB")
    if total:
        return f"{done:.0f} of {total:.0f} {unit}"
    return f"{done:.0f} {unit.removesuffix('s') if done == 1 else unit} done"


class Task:
    """One wait being reported: what it is, how far it got (``done`` of ``total`` ``unit``).

    ``announced``: the caller printed its own start line and prints its own end line (a
    stage of ``auxcheck check``): the task's first plain line comes :data:`EVERY` seconds
    in, and it prints no end line. (A plain class: ``auxcheck migrate`` with nothing to do
    imports no ``dataclasses``.)
    """

    __slots__ = ("announced", "done", "last", "reporter", "shown", "started", "total", "unit",
                 "what")

    def __init__(self, what: str, unit: Unit = "items", total: float | None = None,
                 done: float | None = None, *, announced: bool = False) -> None:
        self.what, self.unit, self.total, self.done = what, unit, total, done
        self.announced = announced
        self.started = self.last = 0.0
        self.shown = False
        self.reporter: Reporter | None = None

    def __repr__(self) -> str:
        return f"Task({self.what!r}, {self.unit!r}, total={self.total}, done={self.done})"

    def update(self, done: float | None = None, *, total: float | None = None) -> None:
        """Records how far the task got (either may be left out), then reports when due."""
        if done is not None:
            self.done = done
        if total is not None:
            self.total = total
        if self.reporter is not None:
            self.reporter.tick()

    def advance(self, by: float = 1) -> None:
        """Adds ``by`` to what is done, then reports when due."""
        self.update((self.done or 0) + by)

    def text(self, now: float) -> str:
        """Returns the task's line without the prefix: ``what: amount (12 s)``."""
        amount = amount_text(self.done, self.total, self.unit)
        elapsed = f"{now - self.started:.0f} s"
        return f"{self.what}: {amount} ({elapsed})" if amount else f"{self.what} ... {elapsed}"


_M = TypeVar("_M", bound=Callable[..., Any])


def _locked(method: _M) -> _M:
    """Runs ``method`` holding its reporter's lock (a reporter's writes never interleave)."""
    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)
    return cast(_M, run)


class Reporter:
    """Writes the innermost task's progress to ``stream``, each line headed by ``prefix``.

    ``tty`` (default: whether the stream is a terminal that can redraw a line, which
    ``TERM=dumb`` says it cannot) chooses a line redrawn in place over plain lines.
    ``clock``, ``delay``, ``every`` and ``redraw`` are there for tests.
    """

    def __init__(self, stream: IO[str], *, prefix: str, tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, delay: float | None = None,
                 every: float | None = None, redraw: float = REDRAW) -> None:
        self.stream = stream
        self.prefix = prefix
        self.tty = _redraws(stream) if tty is None else tty
        self.clock = clock
        self.delay = DELAY if delay is None else delay
        self.every = EVERY if every is None else every
        self.redraw = redraw
        self.tasks: list[Task] = []
        self._drawn = False
        self._drawn_at = -float("inf")
        self._lock = threading.RLock()
        """One writer at a time: ``auxcheck check`` reports its stages from several threads."""
        self._spoke = clock()
        """When a line was last written (or drawn): past the delay of silence, the running
        task speaks even if it began just now (a run of short tasks is one long wait)."""

    @_locked
    def open(self, task: Task) -> None:
        """Starts reporting ``task``, now (it becomes the innermost)."""
        task.reporter = self
        task.started = task.last = self.clock()
        self.tasks.append(task)

    @_locked
    def close(self, task: Task, *, failed: bool = False) -> None:
        """Ends ``task``: its end line when a line of it was shown (``failed``: it stopped)."""
        now = self.clock()
        if task in self.tasks:
            self.tasks.remove(task)
        if task.shown and not task.announced:
            took = f"{now - task.started:.1f} s"
            amount = amount_text(task.done, task.total, task.unit)
            end = (f"stopped after {took}" if failed
                   else f"done, {amount} in {took}" if amount else f"done in {took}")
            self.line(f"{self.prefix}: {task.what}: {end}")
        elif self._drawn:
            self._clear()
        for outer in self.tasks:  # an outer task's next line is EVERY from now
            outer.last = now

    @_locked
    def line(self, text: str) -> None:
        """Writes ``text`` as a line of its own, above a line drawn in place."""
        if self._drawn:
            self._clear()
        self._write(f"{text}\n")
        self._spoke = self.clock()

    @_locked
    def tick(self) -> None:
        """Reports the innermost task when due: its first line once it, or the silence
        before it, is past the delay, then redraws (terminal) or a line every ``every``
        seconds (elsewhere)."""
        if not self.tasks:
            return
        task, now = self.tasks[-1], self.clock()
        # A stage's own start line was just said: in logs its first line waits longer.
        first = self.every if task.announced and not self.tty else self.delay
        ran = now - task.started
        due_first = ran >= first or (now - self._spoke >= first and ran >= SETTLE)
        if self.tty:
            if (task.shown or due_first) and now - self._drawn_at >= self.redraw:
                self._draw(f"{self.prefix}: {task.text(now)}", now)
                task.shown = True
            return
        if now - task.last >= self.every if task.shown else due_first:
            task.shown, task.last = True, now
            self._write(f"{self.prefix}: {task.text(now)}\n")
            self._spoke = now

    @property
    def drawn(self) -> bool:
        """Returns True while a line is drawn in place (a terminal), not ended."""
        return self._drawn

    @_locked
    def line_clear(self) -> None:
        """Clears the line drawn in place, if any."""
        if self._drawn:
            self._clear()

    def _draw(self, text: str, now: float) -> None:
        width = _width(self.stream)
        self._write(f"\r{text[:width - 1]}\x1b[K")
        self._drawn, self._drawn_at, self._spoke = True, now, now

    def _clear(self) -> None:
        self._write("\r\x1b[K")
        self._drawn = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError, AttributeError):
            pass  # stderr went away, or is None (closed at start): the command still runs out


def _redraws(stream: IO[str]) -> bool:
    """Returns True when ``stream`` is a terminal that can move back and erase a line: not
    ``TERM=dumb`` (Emacs' shell, some CI consoles), where ``\r`` and ``ESC[K`` show as
    text; not a missing stream (None when Python started with the descriptor closed)."""
    if os.environ.get("TERM", "") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (OSError, ValueError, AttributeError):
        return False


def _width(stream: IO[str]) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 80


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Returns False when :data:`ENVIRONMENT` in ``environ`` (default: ``os.environ``) turns
    progress off, True when it is unset or ``auto``; raises InvalidArgument naming the
    variable, its value and the values it takes otherwise."""
    value = (os.environ if environ is None else environ).get(ENVIRONMENT, "")
    setting = value.strip().lower()
    if setting in _OFF:
        return False
    if setting in _AUTO:
        return True
    from auxcheck._core.errors import InvalidArgument

    raise InvalidArgument(f"{ENVIRONMENT}={value!r} is not a progress setting; set it to off "
                          "(no progress lines) or auto (lines for waits past 2 s, the default)")


@contextmanager
def reporting(prefix: str, *, enabled: bool = True, stream: IO[str] | None = None,
              reporter: Reporter | None = None) -> Iterator[Reporter | None]:
    """Turns progress reporting on for the body (a command's run), on stderr unless
    ``stream`` or ``reporter`` says otherwise; ``enabled=False`` (``-q``) turns it off, and
    so does ``AUXCHECK_PROGRESS=off`` (:func:`wanted`) unless ``reporter`` is given."""
    active = None
    if enabled and reporter is not None:
        active = reporter
    elif enabled and wanted():
        active = Reporter(sys.stderr if stream is None else stream, prefix=prefix)
    token = _ACTIVE.set(active)
    try:
        yield active
    finally:
        _ACTIVE.reset(token)


@contextmanager
def task(what: str, *, unit: Unit = "items", total: float | None = None,
         announced: bool = False) -> Iterator[Task]:
    """Reports the wait in the body as ``what`` while reporting is on; a silent task when off.

    The body says how far it got with :meth:`Task.update`; its line says it stopped when
    the body raises.
    """
    job = Task(what, unit, total, announced=announced)
    active = _ACTIVE.get()
    if active is None:
        yield job
        return
    active.open(job)
    failed = True
    try:
        yield job
        failed = False
    finally:
        active.close(job, failed=failed)


def tick() -> None:
    """Reports the innermost task when due: called by loops that wait (a heartbeat)."""
    active = _ACTIVE.get()
    if active is not None:
        active.tick()


def clear() -> None:
    """Clears the line drawn in place on a terminal, before other text goes to stderr (the
    next report draws it again)."""
    active = _ACTIVE.get()
    if active is not None and active.drawn:
        active.line_clear()


def say(text: str) -> None:
    """Writes ``text`` as a progress line while reporting is on (above a line drawn in
    place); nothing when off."""
    active = _ACTIVE.get()
    if active is not None:
        active.line(text)


class MarkCounter:
    """Counts the marks a test runner prints for each item on lines of their own (pytest
    ``-q``: ``..F.s``), fed its output as it comes; other lines count for nothing."""

    PREFIXES = ("bringing up nodes...",)
    """Text a line of marks may start with: pytest-xdist writes its marks after this."""

    def __init__(self, marks: str = ".FEsxX") -> None:
        self.marks = frozenset(marks)
        self.count = 0
        self._head = ""
        self._line: str | None = ""
        """The marks of the line being read; None when it holds something else."""

    def feed(self, data: bytes) -> int:
        """Counts the marks in ``data`` (the output after what was fed before); returns the
        marks counted so far."""
        for char in data.decode("utf-8", "replace"):
            if char == "\n":
                self._line, self._head = "", ""
            elif self._line == "" and self._taking_prefix(char):
                continue
            elif self._line is not None and char in self.marks:
                self._line += char
                self.count += 1
            else:  # not a line of marks: what it held was not items
                if self._line:
                    self.count -= len(self._line)
                self._line = None
        return self.count

    def _taking_prefix(self, char: str) -> bool:
        """Returns True while the line so far (with ``char``) is the start of a prefix; a
        line that started like one and turned out otherwise is no line of marks."""
        head = self._head + char
        if any(p.startswith(head) for p in self.PREFIXES):
            self._head = head
            return True
        if self._head and self._head not in self.PREFIXES:
            self._line = None
        return False
