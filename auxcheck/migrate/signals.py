"""Holding Ctrl-C and SIGTERM while a step of a migration must not be cut in half.

Python runs a signal's handler (Ctrl-C raises KeyboardInterrupt) between any two bytecodes
of the main thread. Two steps must not be cut there: writing a file (cut after the
temporary file is made, or after it is swapped with the original, a ``.auxcheck-*.tmp``
file is left behind holding the new or the old text), and starting the worker pool (a
worker forked but not yet recorded by the pool can never be stopped, and the run then
waits for it at exit, forever). :func:`held_stops` holds both signals while such a step
runs and delivers the first one as the step ends, to whatever handles it then: a stop
comes one step late, and is never lost.

A signal the process was started ignoring (``trap '' INT``, or a background job of a
script, which POSIX shells start with SIGINT ignored) stays ignored: the caller asked
for that.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["STOPS", "held_stops", "release_inherited_stops"]

STOPS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a run: Ctrl-C, and SIGTERM, which is handled as Ctrl-C is."""

_CAN_BLOCK = hasattr(signal, "pthread_sigmask")


@contextmanager
def held_stops() -> Iterator[None]:
    """Holds SIGINT and SIGTERM while the body runs, then delivers the first that came.

    The signals are blocked in this thread's mask, so that a process started meanwhile
    starts with them blocked too (it releases them once it has set its own handlers:
    :func:`release_inherited_stops`), and caught by a handler that only notes them, for one
    that reaches another thread. A process forked meanwhile inherits that handler, which
    in it stands for a worker's handlers until it sets its own: SIGTERM ends it at once,
    Ctrl-C (sent to the whole process group by a terminal) is left to the parent.
    Outside the main thread, which alone runs Python's signal handlers, it holds nothing.

    A stop another thread takes (this thread's mask does not cover it) runs its Python
    handler in this thread whenever this thread next looks, which may be as the hold ends:
    the mask is put back first, while the noting handlers are still in place, and a stop run
    by a handler already put back (it raises) does not keep the others from being put back.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:  # a worker forked while held, before its own set-up
            if signum == signal.SIGTERM:
                os._exit(128 + signum)
            return
        held.append(signum)

    previous = {}
    for signum in STOPS:
        handler = signal.getsignal(signum)
        if handler is signal.SIG_IGN or handler is None:  # ignored by request, or not Python's
            continue
        previous[signum] = signal.signal(signum, hold)
    blocked = _CAN_BLOCK and bool(previous)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, previous) if blocked else set()
    try:
        yield
    finally:
        if blocked:
            # A signal pending in the mask is delivered here, to `hold`, which notes it.
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        late = _put_back(previous)
        if held:
            signal.raise_signal(held[0])
        if late is not None:
            raise late


def _put_back(previous: dict[signal.Signals, Any]) -> BaseException | None:
    """Puts every handler of ``previous`` back; returns what a late stop raised meanwhile.

    ``signal.signal`` first runs the handlers of signals that came (from another thread)
    since Python last looked: one already put back raises there, before its next handler is
    set. That call is made again, and the stop is raised once all are back.
    """
    late: BaseException | None = None
    pending = list(previous.items())
    while pending:
        try:
            signal.signal(*pending[0])
            del pending[0]
        except BaseException as exc:  # noqa: BLE001 - raised by the caller, once all are back
            late = late or exc
    return late


def release_inherited_stops() -> None:
    """Unblocks SIGINT and SIGTERM in a process started inside :func:`held_stops`, once it
    has set its own handlers for them (a signal that came meanwhile is delivered now)."""
    if _CAN_BLOCK:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
