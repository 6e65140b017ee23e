"""Wall-clock helpers shared by the benchmarks (run as scripts: ``benchmarks/`` is on sys.path)."""

from __future__ import annotations

import statistics
import sys
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


def bytecode_setting() -> str:
    """Returns how this process (and the subprocesses it starts, which inherit the
    environment) treats bytecode: ``written`` or ``not written`` (``PYTHONDONTWRITEBYTECODE``)."""
    return "not written" if sys.flags.dont_write_bytecode else "written"


def result_line(what: str, measured: float, baseline: float, *, at_most: float | None = None,
                at_least: float | None = None, target: str | None = None,
                met: bool | None = None, unit: str = "s") -> bool:
    """Prints one ``RESULT`` line, the form ``benchmarks/run_all.py`` (``make bench``) collects,
    and returns whether its target holds (``True`` where it has none).

    ``measured`` and ``baseline`` were taken side by side in this run. The ratio is
    ``measured / baseline``; ``at_most`` is the largest ratio the target allows, ``at_least``
    the smallest ``baseline / measured`` (a speed-up). A target of another form (an absolute
    limit, a cost per item) comes as its wording in ``target`` and its verdict in ``met``.
    The line names the bytecode setting the run had.
    """
    ratio = measured / baseline if baseline else float("inf")
    shown = f"{ratio:.2f}x"
    if at_most is not None:
        met, target = ratio <= at_most, f"<= {at_most:g}x"
    elif at_least is not None:
        speedup = baseline / measured if measured else float("inf")
        met, target, shown = speedup >= at_least, f">= {at_least:g}x faster", f"{speedup:.1f}x faster"
    verdict = "-" if target is None else ("met" if met else "missed")
    print(f"RESULT | {what} | {measured:.4g} {unit} | {baseline:.4g} {unit} | {shown} | "
          f"{target or '-'} | {verdict} | bytecode {bytecode_setting()}", flush=True)
    return met is not False
