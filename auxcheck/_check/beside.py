"""Stages of ``auxcheck check`` run beside each other: mypy and the contract suite, which wait on a
child process each, on threads of their own while this thread runs the others.

A stop (Ctrl-C, SIGTERM) is raised in the main thread only, so the waits on the other threads
never see it: :meth:`Beside.end` ends them from here, by ending the process groups this
process started (each bounded run leads a session of its own), until every thread has
returned; each thread's bounded run then reaps its child and removes what it made, as it
would after any death of its child. That needs a list of this process's children, which
Linux's ``/proc`` gives; elsewhere the stages run one after another (:func:`can_end_children`).
"""

from __future__ import annotations

import contextvars
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from auxcheck._core.stops import held
from auxcheck._isolation.processes import KILL_GRACE, kill_group, process_stats

__all__ = ["Beside", "Running", "calls_beside", "can_end_children", "usable_cores"]

T = TypeVar("T")

_JOIN_PAUSE = 0.05
"""Seconds between two looks at the threads (and, while ending them, at this process's
children): short, as a stop waits on it."""


def usable_cores() -> int:
    """Returns the CPU cores this process may run on (its affinity, where the platform says)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def can_end_children() -> bool:
    """Returns True where a stop can end every call's children: where ``/proc`` lists this
    process's children (Linux)."""
    return sys.platform.startswith("linux") and os.path.isdir("/proc/self/task")


def _sessions_led_by_children() -> list[int]:
    """Returns this process's children that lead a session of their own: the bounded runs
    (mypy, pytest), each with its process group, as ``/proc`` lists them."""
    me, found = os.getpid(), []
    for pid, fields in process_stats():
        try:
            parent, session = int(fields[1]), int(fields[3])
        except (ValueError, IndexError):  # not a stat line auxcheck can read
            continue
        if parent == me and session == pid:
            found.append(session)
    return found


class Running(Generic[T]):
    """One call running on a thread of its own: its value, or what it raised, once done."""

    def __init__(self, call: Callable[[], T], name: str) -> None:
        self._call = call
        self._value: tuple[T] | tuple[()] = ()
        self.error: BaseException | None = None
        """What the call raised (None: it returned, or runs still)."""
        context = contextvars.copy_context()  # progress reporting, as this thread has it
        self.thread = threading.Thread(target=context.run, args=(self._run,),
                                       name=f"auxcheck-{name}", daemon=True)

    def _run(self) -> None:
        try:
            self._value = (self._call(),)
        except BaseException as exc:  # noqa: BLE001 - raised again in the thread that waits
            self.error = exc

    @property
    def done(self) -> bool:
        """Returns True once the call returned or raised."""
        return not self.thread.is_alive()

    def result(self) -> T:
        """Returns what the call returned; raises what it raised, or RuntimeError while it runs."""
        if self._value:
            return self._value[0]
        raise self.error or RuntimeError(f"{self.thread.name} has not returned yet")


@contextmanager
def calls_beside() -> Iterator[Beside]:
    """Runs the calls started on what it yields beside the body, on threads of their own.

    Leaving the body normally waits for every call; a call that raised ends the others and
    its exception is raised here. Leaving it by an exception (a stop, raised in the main
    thread) ends every call first (:meth:`Beside.end`).
    """
    pool = Beside()
    try:
        yield pool
    except BaseException:
        pool.end()
        raise
    pool.wait()


class Beside:
    """Calls running on threads of their own, waited for or ended together."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        """Set once the calls are being ended: what they return then is not a result."""
        self._running: list[Running[Any]] = []

    def start(self, name: str, call: Callable[[], T]) -> Running[T]:
        """Starts ``call()`` on a thread of its own; returns its handle."""
        running = Running(call, name)
        self._running.append(running)
        running.thread.start()
        return running

    def wait(self) -> None:
        """Returns once every call is done; raises what one raised, the others ended first."""
        while True:
            failed = next((r.error for r in self._running if r.done and r.error is not None),
                          None)
            if failed is not None:
                self.end()
                raise failed
            waiting = [r for r in self._running if not r.done]
            if not waiting:
                return
            try:
                waiting[0].thread.join(_JOIN_PAUSE)
            except BaseException:  # a stop while waiting: the calls are ended, then it goes on
                self.end()
                raise

    def end(self) -> None:
        """Ends every call: :attr:`stopping` is set, then each process group this process's
        children lead is asked to stop (SIGTERM) and, after :data:`KILL_GRACE` seconds,
        killed, until every call has returned.

        Held: a stop that comes meanwhile waits until no call is left running.
        """
        self.stopping.set()
        deadline = time.monotonic() + KILL_GRACE
        asked: set[int] = set()
        with held():
            while any(not r.done for r in self._running):
                late = time.monotonic() >= deadline
                for leader in _sessions_led_by_children():
                    if late:
                        kill_group(leader, signal.SIGKILL)
                    elif leader not in asked:
                        asked.add(leader)
                        kill_group(leader, signal.SIGTERM)
                for running in self._running:
                    running.thread.join(_JOIN_PAUSE / len(self._running))
