"""``auxcheck check --sglang`` with three releases on the example plugin, next to a plain read.

Run by hand: ``.venv/bin/python benchmarks/bench_release_check.py [--repeat N]``
(the wheels come from the cache, ``$AUXCHECK_CACHE_DIR`` or ``~/.cache/auxcheck/sglang``;
``make wheels`` fetches them into ``.cache/sglang``). Each run is a real subprocess of
``auxcheck check examples/capture_plugin --sglang 0.5.19,0.5.20,0.5.23`` with the other
stages skipped, once with the index cache cleared (cold) and then warm. The baseline,
timed in the same run, is the least any release check must do: open the three wheels
and read every ``.py`` file once. Target: the warm check under 5 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from _timing import result_line

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "capture_plugin"
RELEASES = ("0.5.19", "0.5.20", "0.5.23")


def wheels(cache: Path) -> list[Path]:
    """Returns the cached wheels of the three releases (downloading any that is missing)."""
    from auxcheck.releases import fetch_wheel

    return [fetch_wheel(version, cache=cache) for version in RELEASES]


def check(cache: Path) -> float:
    """Returns the wall seconds of one ``auxcheck check --sglang`` subprocess (must pass)."""
    env = {**os.environ, "AUXCHECK_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "auxcheck", "check", str(PLUGIN), "--skip", "imports",
         "--skip", "mypy", "--skip", "contract", "--offline", "--sglang", ",".join(RELEASES)],
        env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"auxcheck check failed (exit {done.returncode}):\n{done.stdout}")
    return seconds


def read_all(paths: list[Path]) -> float:
    """Returns the seconds to open every wheel and read each of its .py files once."""
    start = time.perf_counter()
    for path in paths:
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if name.endswith(".py"):
                    archive.read(name)
    return time.perf_counter() - start


def main() -> int:
    """Prints the cold and warm check times next to the baseline; exits 1 over target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="warm runs (median reported)")
    args = parser.parse_args()
    from auxcheck.releases import cache_dir

    source = cache_dir()
    with tempfile.TemporaryDirectory(prefix="auxcheck-bench-") as tmp:
        cache = Path(tmp)
        for wheel in wheels(source):
            shutil.copy2(wheel, cache / wheel.name)  # a private cache: cold means cold
        baseline = statistics.median(read_all(wheels(cache)) for _ in range(args.repeat))
        cold = check(cache)
        warm = statistics.median(check(cache) for _ in range(args.repeat))
    print(f"{'run':<44}{'seconds':>8}")
    print(f"{'baseline: read every .py of 3 wheels':<44}{baseline:>8.2f}")
    print(f"{'check --sglang (3 releases), cold':<44}{cold:>8.2f}")
    print(f"{'check --sglang (3 releases), warm (median)':<44}{warm:>8.2f}")
    result_line("check --sglang x3 on capture_plugin, cold index cache, vs reading the wheels",
                cold, baseline)
    ok = result_line("check --sglang x3 on capture_plugin, warm, vs reading the wheels", warm,
                     baseline, target="warm < 5 s", met=warm < 5)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
