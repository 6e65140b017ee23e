"""Ctrl-C and SIGTERM: raised once as :class:`~auxcheck.errors.Stopped`, held through steps that
must not be cut, and kept out of worker processes, for every command that can be stopped.

A command runs its body inside :func:`stops_raised`: the first SIGTERM or SIGINT raises
:class:`Stopped` in the main thread, and the ``finally`` clauses it passes end the
children and remove temporary folders; a later stop is ignored, so a cleanup is never cut
short. Two kinds of step wait for their end before a stop comes:

- a cleanup (or any step) inside :func:`held`: a stop that comes meanwhile is raised once
  the outermost held step ended;
- a step that writes a file or starts worker processes, inside :func:`held_stops`: the
  signals are blocked in the thread's mask as well, so that a process forked meanwhile
  starts with them blocked and sets its own handlers first (:func:`as_worker`, then
  :func:`release_inherited_stops`): a worker forked but not yet recorded can never be missed
  by the stop, nor run the parent's handlers.

A signal the process was started ignoring (``trap '' INT``, or a background job of a script,
which POSIX shells start with SIGINT ignored) stays ignored: the caller asked for that.
Only the main thread can set signal handlers: elsewhere (a test calling a command in a
thread) signals stay as they are.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from auxcheck._core.errors import Stopped

__all__ = [
    "STOPS",
    "as_worker",
    "held",
    "held_stops",
    "release_inherited_stops",
    "stops_raised",
]

STOPS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a command: Ctrl-C, and SIGTERM, which is handled as Ctrl-C is."""

_CAN_BLOCK = hasattr(signal, "pthread_sigmask")
_PR_SET_PDEATHSIG = 1


# ---------------------------------------------------------------- raised once


class _State:
    """The stop that came (``signum``, 0 for none), whether it was raised, and how many
    :func:`held` blocks run."""

    signum = 0
    raised = False
    holding = 0


def _on_stop(signum: int, frame: FrameType | None) -> None:
    if _State.signum:
        return  # a later stop: the first one's cleanup is under way
    _State.signum = signum
    if not _State.holding:
        _State.raised = True
        raise Stopped(signum)


@contextmanager
def stops_raised() -> Iterator[None]:
    """Raises :class:`Stopped` at the first SIGTERM or SIGINT while the body runs; ignores
    later ones. A signal this process started with ignored stays ignored."""
    previous = {}
    try:
        for sig in STOPS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, _on_stop)
    except ValueError:  # not the main thread: signals stay as they are
        pass
    _State.signum, _State.raised, _State.holding = 0, False, 0
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _State.signum = 0


_COUNT = threading.Lock()
"""Guards :func:`held`'s count and the raised flag: ``auxcheck check`` holds cleanups on
several threads at once (its stages run beside each other). The signal handler only reads
them, so it never waits for this lock."""


@contextmanager
def held() -> Iterator[None]:
    """Runs the body (a cleanup) to its end whatever stop comes meanwhile; a stop that came is
    raised as :class:`Stopped` once the outermost held body ended (on whichever thread ends
    it last). Safe to enter from several threads at once."""
    with _COUNT:
        _State.holding += 1
    try:
        yield
    finally:
        with _COUNT:
            _State.holding -= 1
            raise_now = not _State.holding and bool(_State.signum) and not _State.raised
            if raise_now:
                _State.raised = True
    if raise_now:
        raise Stopped(_State.signum)


# ---------------------------------------------------------------- held through a step


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
    noted: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:  # a worker forked while held, before its own set-up
            if signum == signal.SIGTERM:
                os._exit(128 + signum)
            return
        noted.append(signum)

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
        if noted:
            signal.raise_signal(noted[0])
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


# ---------------------------------------------------------------- worker processes


def as_worker(parent: int) -> None:
    """Makes this process (a worker started inside :func:`held_stops`) one its ``parent``
    alone stops: Ctrl-C, which a terminal sends to the whole process group, is left to the
    parent; SIGTERM ends it at once (held, as in any process, while :func:`held_stops` runs),
    whatever handler it inherited by fork, and comes when the parent dies (Linux); a parent
    already gone ends it now, with exit status 3."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    release_inherited_stops()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the parent's own cleanup remains
            pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(3)
