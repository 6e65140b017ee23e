"""Wall-clock helpers shared by the benchmarks (run as scripts: ``benchmarks/`` is on sys.path)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def best_of(runs: int, action: Callable[[], object]) -> float:
    """Returns the best wall time, in seconds, of ``runs`` calls of ``action``."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def medians(runs: int, *actions: Callable[[], object]) -> list[float]:
    """Returns the median wall time, in seconds, of each action over ``runs`` rounds.

    Each round runs every action once, in turn, so that a slow spell of the machine
    weighs on all of them alike.
    """
    times: list[list[float]] = [[] for _ in actions]
    for _ in range(runs):
        for action, spent in zip(actions, times):
            start = time.perf_counter()
            action()
            spent.append(time.perf_counter() - start)
    return [statistics.median(spent) for spent in times]
