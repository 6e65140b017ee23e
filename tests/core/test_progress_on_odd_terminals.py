"""Tests for progress on a terminal that cannot redraw (``TERM=dumb``) and a missing stream."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO

import pytest

from auxcheck._core.progress import Reporter, Task


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def terminal() -> Iterator[tuple[IO[str], int]]:
    """Returns a real terminal (a pseudo-terminal's far end, as a text stream) and the
    descriptor its output is read from."""
    near, far = os.openpty()
    stream = open(far, "w", closefd=True)  # noqa: SIM115 - closed below
    try:
        yield stream, near
    finally:
        stream.close()
        os.close(near)


def _run_a_long_task(stream: IO[str] | None) -> Reporter:
    clock = Clock()
    reporter = Reporter(stream, prefix="auxcheck x", clock=clock)  # type: ignore[arg-type]
    job = Task("downloading")
    reporter.open(job)
    for _ in range(5):
        clock.now += 3.0
        job.update(1)
    reporter.close(job)
    return reporter


@pytest.mark.parametrize(("term", "redraws"), [
    pytest.param("dumb", False, id="dumb"),
    pytest.param("xterm-256color", True, id="xterm"),
])
def test_a_terminal_that_says_term_dumb_gets_plain_lines_without_escapes(
        terminal: tuple[IO[str], int], monkeypatch: pytest.MonkeyPatch, term: str,
        redraws: bool) -> None:
    """On a real terminal with TERM=dumb no line is redrawn: no carriage return, no ESC[K."""
    monkeypatch.setenv("TERM", term)
    stream, near = terminal
    reporter = _run_a_long_task(stream)
    written = os.read(near, 65536).decode().replace("\r\n", "\n")  # the tty's own CRs
    assert reporter.tty is redraws
    assert ("\x1b[K" in written) is redraws
    if not redraws:
        assert "\r" not in written
        assert "auxcheck x: downloading: 1 item done" in written


def test_a_missing_stream_is_no_terminal_and_takes_no_lines() -> None:
    """A reporter on None (Python started with stderr closed) neither redraws nor raises."""
    assert _run_a_long_task(None).tty is False
