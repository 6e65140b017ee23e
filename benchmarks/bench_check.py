"""Benchmark ``auxcheck check``: the default stages beside each other vs one after another, and a cold mypy.

Run by hand: ``.venv/bin/python benchmarks/bench_check.py [--rounds N]`` (about two minutes
with the defaults; set ``AUXCHECK_CACHE_DIR`` to where the SGLang wheels are, as ``make
test`` does). Each run is a real ``auxcheck check examples/capture_plugin`` subprocess with
the default stages (imports, mypy, the contract suite, and the example's three releases),
warm: one run first fills mypy's cache and the releases' indexes. Rounds alternate the run
with the stages beside each other (the default) and with ``--sequential`` (the baseline,
one after another), medians compared. Target: beside each other at most 1.0x the time one
after another takes.

Then, for information (no target), on a copy of the example: the default check with mypy's
cache emptied before each run (the first run in a project), beside each other vs one after
another; and the mypy stage alone, its cache emptied before each run (cold) vs kept (warm):
wall time and the peak resident memory of the run's processes (``getrusage(RUSAGE_CHILDREN)`` read in a wrapper process per run, so
each figure is that run's own).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _timing import result_line

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "examples" / "capture_plugin"
WORK = ROOT / "benchmarks" / ".work" / "bench_check"
CHECK = [sys.executable, "-m", "auxcheck", "check", "-q"]
TARGET = 1.0
"""The largest ratio of the run beside each other to the run one after another."""

_MEASURED = """\
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"seconds": seconds, "peak_kib": peak, "status": done.returncode,
                  "stderr": done.stderr.decode(errors="replace")[-2000:]}))
"""
"""A wrapper that runs one command and says its wall time and its processes' peak memory."""


def measured(command: list[str]) -> tuple[float, int]:
    """Returns the wall seconds and the peak resident KiB of ``command``'s processes (the
    largest one's); raises when it fails."""
    done = subprocess.run([sys.executable, "-c", _MEASURED, *command], capture_output=True,
                          text=True, check=True)
    figures = json.loads(done.stdout)
    if figures["status"] != 0:
        raise SystemExit(f"{' '.join(command)} failed ({figures['status']}):\n{figures['stderr']}")
    return figures["seconds"], figures["peak_kib"]


def wall(command: list[str]) -> float:
    """Returns the wall seconds of ``command``; raises when it fails."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}"
                         f"\n{done.stderr[-2000:]}")
    return seconds


def beside_vs_sequential(rounds: int) -> tuple[float, float]:
    """Returns the median wall seconds of the default check with the stages beside each
    other and one after another, alternated round by round."""
    beside, sequential = [*CHECK, str(CAPTURE)], [*CHECK, "--sequential", str(CAPTURE)]
    wall(beside)  # warm: mypy's cache, the releases' indexes, the file cache
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        times[0].append(wall(beside))
        times[1].append(wall(sequential))
    print(f"check examples/capture_plugin, default stages: beside each other "
          f"{', '.join(f'{t:.2f}' for t in times[0])} s; one after another "
          f"{', '.join(f'{t:.2f}' for t in times[1])} s")
    return statistics.median(times[0]), statistics.median(times[1])


def fresh_copy() -> Path:
    """Returns a copy of the example without mypy's cache (nor Hypothesis's database)."""
    copy = WORK / "capture_plugin"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(CAPTURE, copy, ignore=shutil.ignore_patterns(".mypy_cache", ".hypothesis"))
    return copy


def cold_check(rounds: int) -> None:
    """Prints the default check's wall time with mypy's cache emptied before each run, the
    stages beside each other vs one after another (information, no target)."""
    copy = fresh_copy()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for spent, extra in zip(times, ([], ["--sequential"])):
            shutil.rmtree(copy / ".mypy_cache", ignore_errors=True)
            spent.append(wall([*CHECK, *extra, str(copy)]))
    result_line("check . default stages, mypy's cache empty, beside each other vs one after "
                "another (information, no target)",
                statistics.median(times[0]), statistics.median(times[1]))


def cold_mypy(rounds: int) -> None:
    """Prints the mypy stage's wall time and peak memory with an empty cache and a warm one."""
    copy = fresh_copy()
    command = [*CHECK, "--skip", "imports", "--skip", "contract", "--skip", "sglang", str(copy)]
    cold: list[tuple[float, int]] = []
    warm: list[tuple[float, int]] = []
    for _ in range(rounds):
        shutil.rmtree(copy / ".mypy_cache", ignore_errors=True)
        cold.append(measured(command))
        warm.append(measured(command))
    for name, runs in (("cold (empty cache)", cold), ("warm", warm)):
        seconds = statistics.median(r[0] for r in runs)
        peak = statistics.median(r[1] for r in runs) / 1024
        print(f"mypy stage alone, {name}: {seconds:.2f} s, peak {peak:.0f} MiB "
              f"(medians of {rounds})")
    result_line("check . mypy stage alone, cold cache vs warm (information, no target)",
                statistics.median(r[0] for r in cold), statistics.median(r[0] for r in warm))


def main() -> int:
    """Prints the figures and the RESULT lines; exits 1 over target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the default check, each both ways (median reported)")
    parser.add_argument("--cold-rounds", type=int, default=1,
                        help="rounds of the default check with mypy's cache empty, each both ways")
    parser.add_argument("--mypy-rounds", type=int, default=1,
                        help="rounds of the mypy stage alone, cold then warm")
    options = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"cores this process may use: {cores}")
    beside, sequential = beside_vs_sequential(options.rounds)
    ok = result_line("check . default stages, beside each other vs one after another",
                     beside, sequential, at_most=TARGET)
    cold_check(options.cold_rounds)
    cold_mypy(options.mypy_rounds)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
