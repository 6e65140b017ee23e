"""Tests for `auxcheck check --sglang` (and `auxcheck moves`) stopped, or short of a worker,
while it indexes a release: it ends, says what happened in one line, leaves no process running
and no index taken for whole.

Each run reads the real 0.5.23 wheel through a cache folder of its own that holds the wheel
but not its index, so the run indexes the release on a pool of worker processes: the test
acts once those workers exist (real signals, a real kill), never after a guessed delay.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import EXAMPLES
from helpers.processes import alive, children, ctrl_c_as_at_a_terminal, finish, wait_until
from helpers.releases import real_release

from auxcheck.releases import CACHE_ENV

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="reads process groups from /proc"),
              pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="indexes on one process")]

GUARD = 60.0
"""Seconds after which a run is taken for hung (each ends within a few once acted on)."""


def _cache(tmp_path: Path) -> Path:
    """Returns a cache folder holding the real 0.5.23 wheel and no index of it."""
    wheel = real_release("0.5.23").path
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / wheel.name).symlink_to(wheel)
    return cache


def _start(cache: Path, *, files: int | None = None) -> subprocess.Popen[str]:
    """Starts `auxcheck check` on the hook example, only its sglang stage, in a process group
    of its own (as a terminal's job), Ctrl-C at its default; ``files``: its open-file limit."""
    limit = [] if files is None else ["/bin/sh", "-c", 'ulimit -n "$0" && exec "$@"', str(files)]
    env = dict(os.environ, **{CACHE_ENV: str(cache)})
    with ctrl_c_as_at_a_terminal():
        return subprocess.Popen(
            [*limit, sys.executable, "-m", "auxcheck", "check", str(EXAMPLES / "hook_plugin"),
             "--sglang", "0.5.23", "--offline", "--skip", "mypy", "--skip", "contract"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)


def _group(pgid: int) -> list[int]:
    """Returns the running processes of group ``pgid`` (read from /proc)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and alive(int(name)):
            try:
                if os.getpgid(int(name)) == pgid:
                    found.append(int(name))
            except ProcessLookupError:
                continue
    return found


def _indexing(process: subprocess.Popen[str]) -> list[int]:
    """Returns the workers of ``process`` once it is indexing on them."""
    wait_until(lambda: children(process.pid) or process.poll() is not None,
               "check starting its index workers", limit=GUARD)
    workers = children(process.pid)
    assert workers, "the run ended before it indexed on workers"
    return workers


def _index_files(cache: Path) -> list[str]:
    return sorted(p.name for p in (cache / "index").iterdir()) if (
        cache / "index").is_dir() else []


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
                         ids=["ctrl-c", "sigterm"])
def test_a_check_stopped_while_it_indexes_ends_its_workers_and_says_so(
        tmp_path: Path, sig: int, status: int) -> None:
    """Ctrl-C or SIGTERM to the whole group while the release is indexed: the run ends with
    128 + the signal, no traceback, the one line saying it was stopped, every process of its
    group gone when that line is read (it once hung, or said so while a worker ran on), and
    no index cached from half the release."""
    cache = _cache(tmp_path)
    process = _start(cache)
    workers = _indexing(process)
    os.killpg(process.pid, sig)
    _, err = finish(process, f"check after {signal.Signals(sig).name}", limit=GUARD)
    left = _group(process.pid)
    assert (process.returncode, "Traceback" in err, left) == (status, False, []), err
    assert f"stopped by {signal.Signals(sig).name}" in err
    assert not any(map(alive, workers))
    assert not [n for n in _index_files(cache) if n.endswith(".json")]


def test_a_worker_killed_while_the_release_is_indexed_costs_time_not_the_verdict(
        tmp_path: Path) -> None:
    """SIGKILL to one index worker: the run still ends (it once hung), with the verdict and the
    table a run that lost no worker prints, and no process left behind."""
    cache = _cache(tmp_path)
    process = _start(cache)
    workers = _indexing(process)
    os.kill(workers[0], signal.SIGKILL)
    out, err = finish(process, "check after a worker was killed", limit=GUARD)
    assert (_group(process.pid), "Traceback" in err) == ([], False), err
    again = _start(cache)  # the index cached by the first run: no worker this time
    out_again, _ = finish(again, "check on the cached index", limit=GUARD)
    assert (process.returncode, _table(out)) == (again.returncode, _table(out_again))
    assert process.returncode == 1 and "sglang    FAIL" in out


def _table(out: str) -> list[str]:
    """Returns the result table and the findings, without the times."""
    return [line.rsplit("  ", 1)[0] if line.startswith(("imports", "sglang")) else line
            for line in out.splitlines()]


def test_a_check_short_of_open_files_for_its_index_workers_fails_in_one_line(
        tmp_path: Path) -> None:
    """Under `ulimit -n 11` the index's workers cannot be started: the run ends with one error
    line naming what failed and the limit to raise, exit status 2, no traceback, no process
    left (it once hung at exit, on the one worker it had started)."""
    process = _start(_cache(tmp_path), files=11)
    _, err = finish(process, "check under ulimit -n 11", limit=GUARD)
    assert (process.returncode, "Traceback" in err, _group(process.pid)) == (2, False, []), err
    workers = min(os.cpu_count() or 1, 8)
    assert err.splitlines() == [(
        f"auxcheck check: error: cannot start {workers} worker processes to index a release: "
        "Too many open files (the open-file limit of 11 is too low); raise the open-file "
        "limit (ulimit -n), e.g. to 1024, and run again")]

def test_a_check_with_a_low_open_file_limit_still_indexes_and_judges(tmp_path: Path) -> None:
    """Under `ulimit -n 16` the index's workers start (one pipe each) and the run gives the
    verdict (it once hung with a traceback), with no process left."""
    process = _start(_cache(tmp_path), files=16)
    out, err = finish(process, "check under ulimit -n 16", limit=GUARD)
    assert (process.returncode, "Traceback" in err, _group(process.pid)) == (1, False, []), err
    assert "sglang    FAIL" in out


def test_moves_stopped_while_it_indexes_ends_its_workers_without_a_traceback(
        tmp_path: Path) -> None:
    """`auxcheck moves` indexes two releases on the same workers: Ctrl-C there ends it as it
    ends `check` (exit 130, one line, no traceback, no process left)."""
    cache = _cache(tmp_path)
    wheel = real_release("0.5.19").path
    (cache / wheel.name).symlink_to(wheel)
    env = dict(os.environ, **{CACHE_ENV: str(cache)})
    with ctrl_c_as_at_a_terminal():
        process = subprocess.Popen(
            [sys.executable, "-m", "auxcheck", "moves", "--from", "0.5.19", "--to", "0.5.23",
             "--offline"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
    workers = _indexing(process)
    os.killpg(process.pid, signal.SIGINT)
    _, err = finish(process, "moves after Ctrl-C", limit=GUARD)
    assert (process.returncode, "Traceback" in err, _group(process.pid)) == (130, False, []), err
    assert "stopped by SIGINT" in err and not any(map(alive, workers))
