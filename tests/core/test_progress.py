"""Tests for auxcheck._core.progress: what a command's long waits print on stderr, and when.

The clock is a stand-in the test moves by hand, so no test depends on how fast it runs.
"""

from __future__ import annotations

import io

import pytest
from helpers.progress import without_timed_lines

from auxcheck._core import progress
from auxcheck._core.progress import MarkCounter, Reporter, amount_text, reporting, task
from auxcheck.errors import InvalidArgument


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def plain(clock: Clock, *, tty: bool = False,
          prefix: str = "auxcheck x") -> tuple[Reporter, io.StringIO]:
    """Returns a reporter on a fresh stream with the default delay (2 s) and rate (5 s)."""
    stream = io.StringIO()
    return Reporter(stream, prefix=prefix, tty=tty, clock=clock, delay=2.0,
                    every=5.0), stream


@pytest.mark.parametrize(("done", "total", "unit", "text"), [
    pytest.param(12_400_000, 31_000_000, "bytes", "12.4 of 31.0 MB", id="bytes-of-total"),
    pytest.param(12_400_000, None, "bytes", "12.4 MB", id="bytes-without-total"),
    pytest.param(812, 3510, "files", "812 of 3510 files", id="files-of-total"),
    pytest.param(40, None, "items", "40 items done", id="items-without-total"),
    pytest.param(1, None, "items", "1 item done", id="one-item"),
    pytest.param(None, 10, "files", "", id="nothing-counted"),
])
def test_amounts_read_as_people_write_them(done: float | None, total: float | None,
                                           unit: progress.Unit, text: str) -> None:
    """Bytes in MB of the total, counts of the total, or what is done so far."""
    assert amount_text(done, total, unit) == text


def test_a_wait_that_ends_within_the_delay_prints_nothing() -> None:
    """Under 2 s: no line at all, neither a start nor an end."""
    clock = Clock()
    reporter, stream = plain(clock)
    with reporting("auxcheck x", reporter=reporter), task("indexing", unit="files",
                                                          total=10) as job:
        for done in range(1, 11):
            clock.now += 0.1
            job.update(done)
    assert stream.getvalue() == ""


def test_a_run_of_short_tasks_is_one_long_wait_and_speaks_past_the_delay() -> None:
    """Four tasks of 1.5 s each (unpack, index, unpack, index): none is past 2 s alone, but
    the command is silent past 2 s, so the task then running gets a line (once it has run
    half a second) and its end line; the ones ended within a silence, none."""
    clock = Clock()
    reporter, stream = plain(clock)
    with reporting("auxcheck x", reporter=reporter):
        for what in ("unpacking a", "indexing a", "unpacking b", "indexing b"):
            with task(what, unit="files", total=3) as job:
                for done in range(1, 4):
                    clock.now += 0.5
                    job.update(done)
    assert stream.getvalue().splitlines() == [
        "auxcheck x: indexing a: 1 of 3 files (0 s)",
        "auxcheck x: indexing a: done, 3 of 3 files in 1.5 s",
        "auxcheck x: indexing b: 1 of 3 files (0 s)",
        "auxcheck x: indexing b: done, 3 of 3 files in 1.5 s",
    ]


def test_plain_lines_come_past_the_delay_then_at_most_every_few_seconds_then_at_the_end() -> None:
    """Logs get a first line at 2 s, then one per 5 s however often it is updated, and one
    saying it is done."""
    clock = Clock()
    reporter, stream = plain(clock)
    with reporting("auxcheck x", reporter=reporter), task("fetching sglang 9.9.1",
                                                          unit="bytes") as job:
        for done in range(1, 65):  # 8 s of updates, 8 a second (exact in binary)
            clock.now += 0.125
            job.update(done * 1_000_000, total=64_000_000)
    assert stream.getvalue().splitlines() == [
        "auxcheck x: fetching sglang 9.9.1: 16.0 of 64.0 MB (2 s)",
        "auxcheck x: fetching sglang 9.9.1: 56.0 of 64.0 MB (7 s)",
        "auxcheck x: fetching sglang 9.9.1: done, 64.0 of 64.0 MB in 8.0 s",
    ]


def test_a_terminal_gets_one_line_redrawn_in_place_and_ended_once() -> None:
    """On a terminal each report redraws the line (carriage return, erase to the end); the
    end line replaces it and ends with a newline."""
    clock = Clock()
    reporter, stream = plain(clock, tty=True)
    with reporting("auxcheck x", reporter=reporter), task("indexing", unit="files",
                                                          total=4) as job:
        for done in range(1, 5):
            clock.now += 1.0
            job.update(done)
    assert stream.getvalue() == (
        "\rauxcheck x: indexing: 2 of 4 files (2 s)\x1b[K"
        "\rauxcheck x: indexing: 3 of 4 files (3 s)\x1b[K"
        "\rauxcheck x: indexing: 4 of 4 files (4 s)\x1b[K"
        "\r\x1b[Kauxcheck x: indexing: done, 4 of 4 files in 4.0 s\n")
    assert "\n" not in stream.getvalue()[:-1]


def test_an_announced_task_has_no_end_line_and_its_heartbeat_starts_later() -> None:
    """A stage of `auxcheck check` prints its own start and end lines: its heartbeat's first
    plain line comes 5 s in (not 2), and it adds no end line."""
    clock = Clock()
    reporter, stream = plain(clock, prefix="auxcheck check")
    with reporting("auxcheck check", reporter=reporter), task("mypy", announced=True):
        for _ in range(12):
            clock.now += 1.0
            progress.tick()
    assert stream.getvalue().splitlines() == ["auxcheck check: mypy ... 5 s",
                                              "auxcheck check: mypy ... 10 s"]


def test_only_the_innermost_task_reports_and_a_stopped_one_says_so() -> None:
    """A download inside a stage shows the download; a body that raises ends its task's
    lines with "stopped after"."""
    clock = Clock()
    reporter, stream = plain(clock, prefix="auxcheck check")
    with (reporting("auxcheck check", reporter=reporter), task("sglang", announced=True),
          pytest.raises(OSError), task("fetching sglang 9.9.1", unit="bytes") as job):
        clock.now += 3.0
        job.update(1_000_000, total=2_000_000)
        raise OSError("disk full")
    assert stream.getvalue().splitlines() == [
        "auxcheck check: fetching sglang 9.9.1: 1.0 of 2.0 MB (3 s)",
        "auxcheck check: fetching sglang 9.9.1: stopped after 3.0 s",
    ]


def test_a_progress_line_said_on_a_terminal_clears_the_line_drawn_first() -> None:
    """`say` (a stage's start or end) never lands in the middle of a line drawn in place."""
    clock = Clock()
    reporter, stream = plain(clock, tty=True, prefix="auxcheck check")
    with reporting("auxcheck check", reporter=reporter), task("mypy", announced=True):
        clock.now += 3.0
        progress.tick()
        progress.say("auxcheck check: mypy ok (3.0s)")
    assert stream.getvalue() == ("\rauxcheck check: mypy ... 3 s\x1b[K"
                                 "\r\x1b[Kauxcheck check: mypy ok (3.0s)\n")


def test_without_reporting_turned_on_library_calls_print_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Library use (no command turned reporting on), or -q (enabled=False): silence."""
    for context in (reporting("auxcheck x", enabled=False), None):
        with context if context is not None else task("outer"):
            with task("fetching", unit="bytes") as job:
                job.update(5, total=10)
            progress.tick()
            progress.say("a stage line")
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(("chunks", "count"), [
    pytest.param([b"..F", b".s\n", b"xX.\n"], 8, id="marks-over-chunks"),
    pytest.param([b"bringing up nodes...\n", b"....\n"], 4, id="a-text-line-counts-nothing"),
    pytest.param([b"..", b"E\nFAILED test_a.py::t - assert 1\n"], 3, id="summary-after-marks"),
    pytest.param([b"..\n", b"== 2 passed in 0.1s ==\n"], 2, id="closing-line"),
    pytest.param([b"bringing up nodes...", b"..F.\n", b"..\n"], 6, id="xdist-marks"),
    pytest.param([b"bad line..\n", b"b.\n"], 0, id="not-the-xdist-line"),
])
def test_the_mark_counter_counts_pytests_quiet_marks_only(chunks: list[bytes],
                                                           count: int) -> None:
    """One mark per item on lines of their own; any other line counts for nothing."""
    counter = MarkCounter()
    for chunk in chunks:
        counter.feed(chunk)
    assert counter.feed(b"") == count


@pytest.mark.parametrize(("value", "shown"), [
    pytest.param(None, True, id="unset"),
    pytest.param("", True, id="empty"),
    pytest.param("auto", True, id="auto"),
    pytest.param("On", True, id="on-any-case"),
    pytest.param("1", True, id="one"),
    pytest.param("off", False, id="off"),
    pytest.param(" OFF\n", False, id="off-padded"),
    pytest.param("0", False, id="zero"),
    pytest.param("false", False, id="false"),
    pytest.param("no", False, id="no"),
])
def test_the_environment_switch_reads_the_spellings_people_write(value: str | None,
                                                                 shown: bool) -> None:
    """AUXCHECK_PROGRESS=off (0, false, no) turns progress off; unset, empty or auto keep it."""
    environ = {} if value is None else {progress.ENVIRONMENT: value}
    assert progress.wanted(environ) is shown


def test_a_setting_the_switch_does_not_know_is_refused_naming_what_it_takes() -> None:
    """A typo is an error saying the variable, its value and both values it takes."""
    with pytest.raises(InvalidArgument) as caught:
        progress.wanted({progress.ENVIRONMENT: "quiet"})
    assert str(caught.value) == (
        "AUXCHECK_PROGRESS='quiet' is not a progress setting; set it to off (no progress "
        "lines) or auto (lines for waits past 2 s, the default)")


def test_the_switch_off_silences_a_command_s_reporting_but_not_a_reporter_the_caller_gives(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """With AUXCHECK_PROGRESS=off the reporter a command makes on stderr is never made; one
    handed in (a test's, a tool's) still reports."""
    clock = Clock()
    reporter, stream = plain(clock)
    monkeypatch.setenv(progress.ENVIRONMENT, "off")
    monkeypatch.setattr(progress, "DELAY", 0.0)
    with reporting("auxcheck x") as made:
        progress.say("a stage line")
    with reporting("auxcheck x", reporter=reporter) as given:
        progress.say("a stage line")
    assert (made, given is reporter) == (None, True)
    assert (capsys.readouterr().err, stream.getvalue()) == ("", "a stage line\n")


def test_the_suites_filter_takes_out_every_timed_line_a_reporter_writes_and_nothing_else() -> None:
    """Every line a task writes as time passes (its amount, its heartbeat, its end, a stop)
    is taken out by the suite's filter for subprocess output; said lines stay."""
    clock = Clock()
    reporter, stream = plain(clock)
    with reporting("auxcheck x", reporter=reporter):
        progress.say("auxcheck x: [1/2] contract ...")
        with task("contract", unit="items") as items:
            clock.now += 3
            items.advance()
        with task("mypy"):
            clock.now += 3
            progress.tick()
        with pytest.raises(KeyError), task("indexing sglang 0.5.23", unit="files",
                                           total=9) as files:
            clock.now += 3
            files.advance()
            raise KeyError
        progress.say("auxcheck x: contract ok (9.0s)")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 8, lines  # each task's line and its end, and the two said
    assert without_timed_lines(stream.getvalue()) == [
        "auxcheck x: [1/2] contract ...", "auxcheck x: contract ok (9.0s)"]
