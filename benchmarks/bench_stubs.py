"""mypy --strict on the example plugin with the sglang stubs: cold and warm cache.

Run by hand: ``.venv/bin/python benchmarks/bench_stubs.py [--cold-runs N] [--warm-runs N]``.
Targets examples/capture_plugin (package ``capture_plugin``) when present, else the
typed pass cases in tests/typed. Each run is a real ``python -m mypy`` subprocess, as a
plugin's CI runs it, against the real torch (which is most of the cold time). Prints
wall and CPU seconds (median over runs; CPU is steadier on a busy machine) and what
mypy said.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from _timing import result_line

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_DIR = ROOT / "examples" / "capture_plugin"
TYPED = ROOT / "tests" / "typed"


@dataclass(frozen=True, slots=True)
class Timing:
    """One mypy run: wall and CPU seconds, and mypy's last output line."""

    wall: float
    cpu: float
    verdict: str


def target() -> tuple[Path, list[str], str]:
    """Returns the directory to run mypy in, its arguments, and a label for the table."""
    if (PLUGIN_DIR / "capture_plugin").is_dir():
        return PLUGIN_DIR, ["capture_plugin"], "examples/capture_plugin"
    cases = sorted(path.name for path in TYPED.glob("pass_*.py"))
    return TYPED, cases, "tests/typed/pass_*.py (no example plugin found)"


def run_mypy(cwd: Path, args: Sequence[str], cache_dir: Path) -> Timing:
    """Returns the timing of one ``mypy --strict`` run over ``args`` with ``cache_dir``."""
    env = {key: value for key, value in os.environ.items() if key != "MYPYPATH"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache_dir), *args],
        cwd=cwd, env=env, capture_output=True, text=True, check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = (completed.stdout + completed.stderr).strip().splitlines()
    return Timing(wall, cpu, lines[-1] if lines else f"exit {completed.returncode}")


def measure(
    cwd: Path, args: Sequence[str], *, cold_runs: int, warm_runs: int
) -> tuple[list[Timing], list[Timing]]:
    """Returns cold runs (each with a fresh cache) and warm runs (reusing the last cache)."""
    cold: list[Timing] = []
    with tempfile.TemporaryDirectory() as scratch:
        for index in range(cold_runs):
            cold.append(run_mypy(cwd, args, Path(scratch) / f"cache{index}"))
        warm_cache = Path(scratch) / f"cache{cold_runs - 1}"
        warm = [run_mypy(cwd, args, warm_cache) for _ in range(warm_runs)]
    return cold, warm


def row(label: str, timings: Sequence[Timing]) -> str:
    """Returns one table row: median wall and CPU seconds over ``timings`` and the verdict."""
    if not timings:
        return f"| {label} | 0 | - | - | - |"
    wall = statistics.median(t.wall for t in timings)
    cpu = statistics.median(t.cpu for t in timings)
    return f"| {label} | {len(timings)} | {wall:.2f} | {cpu:.2f} | {timings[-1].verdict} |"


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark and prints a Markdown table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold-runs", type=int, default=2)
    parser.add_argument("--warm-runs", type=int, default=3)
    options = parser.parse_args(argv)
    cwd, args, label = target()
    cold, warm = measure(cwd, args, cold_runs=max(options.cold_runs, 1),
                         warm_runs=options.warm_runs)
    load = os.getloadavg()[0]
    print(f"mypy --strict on {label}, sglang stubs from {ROOT / 'stubs'}, "
          f"{os.cpu_count()} CPUs, load average {load:.1f}")
    print("| run | n | wall s (median) | CPU s (median) | mypy says |")
    print("|---|---|---|---|---|")
    print(row("cold cache, real torch", cold))
    print(row("warm cache, real torch", warm))
    if warm:
        result_line(f"mypy --strict on {label}, warm cache vs cold",
                    statistics.median(t.wall for t in warm),
                    statistics.median(t.wall for t in cold))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
