"""Tests for auxcheck._releases.index_pool.map_in_workers: the index's worker processes give
every result once, whatever a worker suffers, and none outlives the call."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from helpers.processes import children
from helpers.releases import real_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.index_pool import map_in_workers
from auxcheck.errors import Stopped

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads child processes from /proc")

_PARENT = os.getpid()


def _square_or_die(n: int) -> int:
    """n * n; item 3 kills the worker doing it (never the test's own process)."""
    if n == 3 and os.getpid() != _PARENT:
        os.kill(os.getpid(), signal.SIGKILL)
    return n * n


def _square_or_raise(n: int) -> int:
    """n * n; item 5 raises, in a worker and here alike."""
    if n == 5:
        raise ValueError(f"item {n} is bad")
    return n * n


def test_a_worker_killed_midway_costs_no_result() -> None:
    """A worker killed by SIGKILL: what it had not sent is done here, every result comes
    once and in order, and no worker is left."""
    before = set(children(os.getpid()))
    assert map_in_workers(_square_or_die, list(range(12)), 2) == [n * n for n in range(12)]
    assert set(children(os.getpid())) <= before


def test_an_item_that_raises_in_a_worker_raises_here() -> None:
    """An exception in a worker is not lost, nor printed there: the item is done again here,
    where it raises as it would have without workers."""
    with pytest.raises(ValueError, match="item 5 is bad"):
        map_in_workers(_square_or_raise, list(range(8)), 2)


def test_a_stop_while_results_come_leaves_no_worker() -> None:
    """A Stopped raised while results come (a SIGTERM's handler) goes through, and every
    worker is gone once it does."""
    before = set(children(os.getpid()))

    def stop(index: int) -> None:
        raise Stopped(signal.SIGTERM)

    with pytest.raises(Stopped):
        map_in_workers(_square_or_raise, list(range(100)), 2, each=stop)
    assert set(children(os.getpid())) <= before


@pytest.mark.slow
def test_an_index_built_on_workers_is_the_one_built_in_process(tmp_path: Path) -> None:
    """The whole release indexed on two workers gives the summaries one process gives."""
    release = real_release("0.5.19")
    pooled = ReleaseIndex(release)
    pooled.load_all(jobs=2, cache=tmp_path / "pooled")
    alone = ReleaseIndex(release)
    alone.load_all(jobs=1, cache=tmp_path / "alone")
    assert [s.to_json() for s in pooled.summaries()] == [s.to_json() for s in alone.summaries()]
