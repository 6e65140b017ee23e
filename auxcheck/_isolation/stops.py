"""SIGTERM and Ctrl-C while a command runs children: raised once, so every cleanup on the way out runs.

A command that starts child processes (``auxcheck check``'s mypy and pytest, ``auxcheck
validate``'s runner) runs its body inside :func:`stops_raised`: the first SIGTERM or SIGINT
raises :class:`Stopped` in the main thread, and the ``finally`` clauses it passes kill the
children's process groups and remove temporary folders. A stop that comes while such a
cleanup runs inside :func:`held` waits for its end, and any later stop is ignored, so the
cleanup is never cut short. Only the main thread can set signal handlers: elsewhere (a test
calling the command in a thread) signals stay as they are.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["STOPS", "Stopped", "held", "stops_raised"]

STOPS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a command: Ctrl-C, and SIGTERM, which is handled as Ctrl-C is."""


class Stopped(KeyboardInterrupt):
    """The command was asked to stop by signal ``signum``; a KeyboardInterrupt, so that code
    which lets Ctrl-C through lets it through too."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


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
    later ones. A signal this process started with ignored (SIGINT in a background job of a
    script) stays ignored."""
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


@contextmanager
def held() -> Iterator[None]:
    """Runs the body (a cleanup) to its end whatever stop comes meanwhile; a stop that came is
    raised as :class:`Stopped` once the outermost held body ended."""
    _State.holding += 1
    try:
        yield
    finally:
        _State.holding -= 1
    if not _State.holding and _State.signum and not _State.raised:
        _State.raised = True
        raise Stopped(_State.signum)
