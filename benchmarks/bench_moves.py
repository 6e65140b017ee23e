"""Benchmark `auxcheck moves` for one release pair against a plain `ast.parse` of both trees.

Reads the two releases' wheels (about 3,500 and 4,700 Python files for 0.5.19 and
0.5.23) and prints one table, each row measured in the same run:

* `auxcheck moves --from A --to B -j 2`, warm (the summaries of both releases are in the
  index cache), a real subprocess: target under 10 s on 2 cores;
* the same run cold (index cache emptied first; the wheels stay cached);
* the baseline: reading every `.py` file of both wheels and `ast.parse`-ing it, one process;
* the warm run's phases, in-process: loading each release's summaries and the inference.

The two runs end in ``RESULT`` lines (``_timing.result_line``) against the parse baseline;
the exit status is 1 when the warm run is not under 10 s.

Run by hand: ``.venv/bin/python benchmarks/bench_moves.py [--from 0.5.19] [--to 0.5.23]
[--runs N]``. The wheels come from ``$AUXCHECK_CACHE_DIR`` (downloaded there when missing).
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _timing import best_of, result_line

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.moves_infer import infer_moves
from auxcheck.releases import Release, cache_dir, find_release


def moves_cli(older: str, newer: str, cache: Path) -> subprocess.CompletedProcess[str]:
    """Runs the real `auxcheck moves` on two processes; raises when it fails."""
    done = subprocess.run(
        [sys.executable, "-m", "auxcheck", "moves", "--from", older, "--to", newer, "-j", "2",
         "--cache", str(cache), "--offline", "-o", os.devnull],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"auxcheck moves failed: {done.stderr}")
    return done


def cold_cache(wheels: list[Path], root: Path) -> Path:
    """Returns a fresh cache folder holding links to the wheels and no index."""
    folder = Path(tempfile.mkdtemp(dir=root))
    for wheel in wheels:
        (folder / wheel.name).symlink_to(wheel.resolve())
    return folder


def parse_all(releases: list[Release]) -> int:
    """Returns how many files of ``releases`` were read and parsed with ``ast.parse``."""
    count = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for release in releases:
            for path in release.python_files():
                try:
                    ast.parse(release.read(path) or "")
                except SyntaxError:
                    pass
                count += 1
    return count


def phases(releases: list[Release], cache: Path) -> list[tuple[str, float]]:
    """Returns the in-process seconds of each warm phase: both loads, then the inference."""
    indexes = [ReleaseIndex(r, cache=cache) for r in releases]
    timings = []
    for index in indexes:
        start = time.perf_counter()
        index.load_all(jobs=2, cache=cache)
        timings.append((f"  load {index.version} summaries (cached)", time.perf_counter() - start))
    start = time.perf_counter()
    infer_moves(*indexes)
    timings.append(("  infer the moves", time.perf_counter() - start))
    return timings


def row(name: str, ours: str, base: str, ratio: str, target: str) -> None:
    """Prints one table row as soon as it is measured."""
    print(f"{name:<44} {ours:>9} {base:>9} {ratio:>12}  {target}", flush=True)


def main() -> int:
    """Measures every row and prints the table; returns 1 when the warm run misses its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="older", default="0.5.19")
    parser.add_argument("--to", dest="newer", default="0.5.23")
    parser.add_argument("--runs", type=int, default=3, help="runs per row (best is kept)")
    args = parser.parse_args()
    releases = [find_release(v) for v in (args.older, args.newer)]
    files = sum(len(r.python_files()) for r in releases)
    print(f"sglang {args.older} -> {args.newer}: {files} Python files in both wheels, "
          f"{os.cpu_count()} CPUs")
    print(f"{'measurement':<44} {'auxcheck':>9} {'baseline':>9} {'ratio':>12}  target")
    base = best_of(args.runs, lambda: parse_all(releases))
    moves_cli(args.older, args.newer, cache_dir())  # fill the index cache
    warm = best_of(args.runs, lambda: moves_cli(args.older, args.newer, cache_dir()))
    row("moves, warm caches (index, moves), -j 2", f"{warm:.2f} s", f"{base:.2f} s",
        f"{base / warm:.1f}x faster", "under 10 s on 2 cores")
    ok = result_line(f"moves --from {args.older} --to {args.newer} -j 2, warm, vs ast.parse of "
                     "both wheels", warm, base, target="under 10 s", met=warm < 10)
    scratch = Path(tempfile.mkdtemp(prefix="bench-moves-"))
    try:
        wheels = [r.path for r in releases]
        cold = best_of(args.runs, lambda: moves_cli(args.older, args.newer,
                                                    cold_cache(wheels, scratch)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    row("moves, cold index cache, -j 2", f"{cold:.2f} s", f"{base:.2f} s",
        f"{base / cold:.1f}x faster", "(baseline: ast.parse of both, 1 process)")
    result_line(f"moves --from {args.older} --to {args.newer} -j 2, cold index cache, vs "
                "ast.parse of both wheels (information, no target)", cold, base)
    for name, seconds in phases(releases, cache_dir()):
        row(name, f"{seconds:.2f} s", "", "", "")
    print(moves_cli(args.older, args.newer, cache_dir()).stderr.strip())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
