"""Progress in tests: off for the whole suite, on only where a test says how it may show.

A progress line appears once a wait passes a delay, so whether it shows depends on the
machine's speed. ``tests/conftest.py`` sets ``AUXCHECK_PROGRESS=off`` for the suite and
every process it starts; a test that reads progress turns it on for itself in one of two
ways that read the same on an idle and on a busy machine:

- in-process, with the delays set to 0 (every wait speaks at its first report) or to
  infinity (no wait ever speaks; a command's own lines, such as ``check``'s stage lines,
  still do): :func:`show_progress`;
- in a real subprocess, where no delay can be set, with the timed lines taken out by their
  shape: :func:`without_timed_lines` (and :func:`shown_environment` for the child).
"""

from __future__ import annotations

import os
import re

import pytest

from auxcheck._core import progress

_TIMED = re.compile(
    r"^[^:]+: .+(?:: .+ \(\d+ s\)| \.\.\. \d+ s|: done(?:, .+)? in \d+\.\d s"
    r"|: stopped after \d+\.\d s)$")
"""The shapes of a task's timed lines (:meth:`auxcheck._core.progress.Task.text` and the end
line :meth:`auxcheck._core.progress.Reporter.close` writes)."""


def show_progress(monkeypatch: pytest.MonkeyPatch, *, delay: float) -> None:
    """Turns progress on for this test, in this process, with ``delay`` and the rate both
    set to ``delay``: 0 reports at every update, ``float("inf")`` never reports a wait."""
    monkeypatch.setenv(progress.ENVIRONMENT, "auto")
    monkeypatch.setattr(progress, "DELAY", delay)
    monkeypatch.setattr(progress, "EVERY", delay)


def shown_environment() -> dict[str, str]:
    """Returns the test's environment as it is now, with progress on: for a subprocess whose
    progress a test reads (the suite's own is off)."""
    return {**os.environ, progress.ENVIRONMENT: "auto"}


def without_timed_lines(text: str) -> list[str]:
    """Returns the lines of ``text`` less the lines a task prints once a wait passes the
    delay (``what: 3 of 9 files (5 s)``, ``what ... 5 s``, ``what: done, ... in 5.1 s``): what
    is left reads the same however fast the machine ran."""
    return [line for line in text.splitlines() if not _TIMED.match(line)]


_ELAPSED = re.compile(r"\d+\.\ds\b")
"""An elapsed time as ``check``'s table and the progress lines print it (``3.1s``)."""


def untimed(text: str) -> list[str]:
    """Returns the lines of ``text`` with every elapsed time replaced by ``T``: no wall clock."""
    return [_ELAPSED.sub("T", line).rstrip() for line in text.splitlines()]
