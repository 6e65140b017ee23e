"""Tests for auxcheck._core.stops.held_stops: a stop held through a step is never lost,
and the hold always ends with every handler and the mask as they were."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from auxcheck._core.stops import STOPS, held_stops

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"),
                                reason="needs per-thread signal masks")


class Terminated(Exception):
    """What the test's SIGTERM handler raises."""


def _on_term(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


@pytest.fixture
def handlers() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt and SIGTERM Terminated while the test runs."""
    before = {s: signal.signal(s, h) for s, h in (
        (signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, _on_term))}
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)


def _late_ctrl_c(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Makes a Ctrl-C come, taken by another thread, just after the hold has put Ctrl-C's
    own handler back and before it puts back SIGTERM's: the timing that once left the hold
    half undone. Returns the record of what the handler put-backs saw."""
    real = signal.signal
    seen: list[str] = []
    taker = threading.Event()
    thread = threading.Thread(target=taker.wait, daemon=True)  # started unmasked, waits
    thread.start()

    def put(signum: Any, handler: Any) -> Any:
        previous = real(signum, handler)
        if signum == signal.SIGINT and handler is signal.default_int_handler and not seen:
            seen.append("ctrl-c handler back")
            os.kill(os.getpid(), signal.SIGINT)  # the main thread may block it: the taker takes it
            for _ in range(1000):  # Python runs the handler in this thread as it loops
                os.sched_yield()
        return previous

    monkeypatch.setattr(signal, "signal", put)
    return seen


def test_a_stop_run_as_the_hold_ends_still_leaves_every_handler_and_the_mask_as_they_were(
        handlers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C another thread takes while the hold is putting handlers back raises
    KeyboardInterrupt once, after SIGTERM's handler and the mask are back (before, SIGTERM
    stayed on the hold's noting handler and the mask kept blocking both: a later SIGTERM
    was noted and never acted on)."""
    seen = _late_ctrl_c(monkeypatch)
    with pytest.raises(KeyboardInterrupt), held_stops():
        pass
    monkeypatch.undo()
    assert seen == ["ctrl-c handler back"]
    assert signal.getsignal(signal.SIGTERM) is _on_term
    assert not set(STOPS) & signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with pytest.raises(Terminated):
        signal.raise_signal(signal.SIGTERM)


def test_a_stop_during_the_hold_is_delivered_once_as_it_ends(handlers: None) -> None:
    """SIGTERM inside the hold waits for its end, then reaches the handler put back."""
    done: list[str] = []
    with pytest.raises(Terminated), held_stops():
        os.kill(os.getpid(), signal.SIGTERM)
        done.append("body finished")
    assert done == ["body finished"]
    assert signal.getsignal(signal.SIGTERM) is _on_term
