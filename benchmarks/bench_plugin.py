"""Benchmark ``pytest --auxcheck``: the example suite's wall time, and the cost of the plugin when off.

Run by hand: ``.venv/bin/python benchmarks/bench_plugin.py [--repeat N] [--quick]``.
Prints one table, then a ``RESULT`` line per target (``from _timing import result_line``):
``pytest --auxcheck examples/capture_plugin`` (default profile, observer checks included) at
most 1.5x a bare ``pytest`` run of one test that imports torch, the two measured interleaved
in one run; an installed-but-off plugin under 50 ms on a plain pytest run (judged on what it
imports, ``import auxcheck`` and the plugin module; the plain run with it and without it are
shown too). Then where the suite's time goes, summed per item group from ``--durations``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import result_line

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "examples" / "capture_plugin"
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]


def wall(command: list[str], *, cwd: Path) -> float:
    """Returns the seconds ``command`` took; raises when it fails."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}")
    return seconds


def median_wall(command: list[str], *, cwd: Path, repeat: int) -> float:
    """Returns the median wall time of ``repeat`` runs."""
    return statistics.median(wall(command, cwd=cwd) for _ in range(repeat))


def _env(cache: str) -> dict[str, str]:
    """Returns the environment with bytecode caching on (under ``cache``), as installs have it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": cache}


TARGET = 1.5
"""The most ``pytest --auxcheck examples/capture_plugin`` may take, as a multiple of the bare run."""
OFF_BUDGET = 0.050
"""The most seconds an installed plugin that is off may add to a plain pytest run."""

TORCH_TEST = "import torch\n\n\ndef test_one():\n    assert torch.zeros(1).sum() == 0\n"


def against_torch_baseline(suite: list[str], repeat: int) -> tuple[float, float]:
    """Returns median wall times of the suite and of a bare one-test torch run, interleaved."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "test_torch.py").write_text(TORCH_TEST)
        bare = [*PYTEST, "-p", "no:xdist", "test_torch.py"]
        wall(bare, cwd=folder)  # warm the file cache for both
        wall(suite, cwd=CAPTURE)
        pairs = [(wall(suite, cwd=CAPTURE), wall(bare, cwd=folder)) for _ in range(repeat)]
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def where_time_goes(suite: list[str]) -> list[tuple[str, float, int]]:
    """Returns (group, seconds, items) of one suite run, from pytest's --durations report."""
    done = subprocess.run([*suite, "--durations=0", "--durations-min=0"], cwd=CAPTURE,
                          capture_output=True, text=True, check=False)
    groups: dict[str, list[float]] = {}
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) != 3 or not parts[0].endswith("s") or "auxcheck" not in parts[2]:
            continue
        nodeid = parts[2]
        names = nodeid.split("::")
        group = names[1] if len(names) > 2 else names[-1]
        param = nodeid.rpartition("[")[2].rstrip("]") if "[" in nodeid else ""
        key = f"{group}[{param}]" if param and group != "impl" else group
        groups.setdefault(key, []).append(float(parts[0][:-1]))
    return sorted(((k, sum(v), len(v)) for k, v in groups.items()), key=lambda r: -r[1])


def import_cost(repeat: int) -> tuple[float, float]:
    """Returns median seconds to import the ``auxcheck`` package, then the plugin, after pytest."""
    code = ("import time, pytest; t = time.perf_counter(); import auxcheck; "
            "u = time.perf_counter(); import auxcheck.pytest_plugin; "
            "print(u - t, time.perf_counter() - u)")
    with tempfile.TemporaryDirectory() as cache:
        runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               check=True, env=_env(cache)).stdout.split()
                for _ in range(repeat + 1)][1:]  # the first run writes the bytecode
    return (statistics.median(float(r[0]) for r in runs),
            statistics.median(float(r[1]) for r in runs))


def off_overhead(repeat: int) -> tuple[float, float]:
    """Returns median wall times of a one-test run with auxcheck off-but-installed, and absent."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "test_one.py").write_text("def test_one():\n    pass\n")
        on = [*PYTEST, "-p", "no:xdist"]
        off = [*on, "-p", "no:auxcheck"]
        wall(on, cwd=folder)  # warm the file cache
        pairs = [(wall(on, cwd=folder), wall(off, cwd=folder)) for _ in range(repeat)]
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def main() -> int:
    """Runs every measurement, prints the table and the RESULT lines; returns 1 over a target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs per suite measurement")
    parser.add_argument("--quick", action="store_true", help="skip the -n 2 measurement")
    args = parser.parse_args()
    suite = [*PYTEST, "-p", "no:xdist", "--auxcheck", "."]
    rows = [("measurement", "seconds", "command")]
    serial, bare = against_torch_baseline(suite, max(7, args.repeat))
    rows.append(("suite, 1 process", f"{serial:.2f}", "pytest --auxcheck examples/capture_plugin"))
    rows.append(("baseline: one test importing torch", f"{bare:.2f}", "pytest test_torch.py"))
    rows.append(("suite / baseline", f"{serial / bare:.2f}x", f"target: at most {TARGET:g}x"))
    if not args.quick:
        # xdist stays on here: the serial command turns it off, and -n needs it
        parallel = median_wall([*PYTEST, "--auxcheck", ".", "-n", "2"], cwd=CAPTURE,
                               repeat=args.repeat)
        rows.append(("suite, -n 2", f"{parallel:.2f}",
                     "pytest --auxcheck -n 2 examples/capture_plugin"))
    on, off = off_overhead(max(5, args.repeat * 5))
    rows.append(("plain run, plugin installed", f"{on:.3f}", "pytest (one test)"))
    rows.append(("plain run, -p no:auxcheck", f"{off:.3f}", "pytest -p no:auxcheck (one test)"))
    rows.append(("overhead when off", f"{on - off:+.3f}", "difference of the medians"))
    package, plugin = import_cost(7)
    rows.append(("import auxcheck (package)", f"{package:.4f}", "after pytest, bytecode cached"))
    rows.append(("import the plugin module", f"{plugin:.4f}", "after import auxcheck"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    print(f"cpus: {os.cpu_count()}")
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    print("\nwhere the suite's time goes (seconds of setup + call + teardown, per group):")
    for group, seconds, items in where_time_goes(suite):
        print(f"  {group:<40} {seconds:6.2f}  ({items} phases)")
    ok = result_line("pytest --auxcheck examples/capture_plugin vs one torch test", serial, bare,
                     at_most=TARGET)
    # What the off plugin adds is what it imports; the difference of the two medians is
    # mostly run-to-run noise at this size, so the verdict is on the import cost.
    print(f"the off plugin imports auxcheck and its plugin module: "
          f"{(package + plugin) * 1000:.1f} ms")
    ok &= result_line("plain one-test pytest, auxcheck installed but off vs -p no:auxcheck",
                      on, off, target=f"off plugin adds < {OFF_BUDGET * 1000:g} ms",
                      met=package + plugin < OFF_BUDGET)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
