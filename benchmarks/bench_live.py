"""``auxcheck live`` on the example plugin, next to SGLang's bare CPU server doing the same work.

Run by hand: ``.venv/bin/python benchmarks/bench_live.py [--runs N] [--environment DIR]``.
Needs SGLang 0.5.23's CPU environment (``make sglang-cpu`` builds it into
``.cache/sglang-cpu``; ``--environment`` names another); without one it says so and exits 0
having measured nothing.

Timed in turn, ``--runs`` rounds (medians):

- ``auxcheck live examples/capture_plugin --sglang 0.5.23 --overlap on --environment ENV``
  as a real subprocess, warm (the environment built, the plugin installed once before): it
  installs the plugin into a fresh overlay, starts a server with it and auxcheck's guard,
  runs the six scenarios and judges what they logged;
- the baseline: SGLang's own server from the same environment, the same tiny model and
  command line, without the plugin or auxcheck, started until it answers and then sent the
  same six scenarios' requests (auxcheck's scenario code, as a client), then stopped.

Target: the warm live run within 2x the bare server's (what auxcheck adds, installing the
plugin, its guard and the judging, costs less than the server itself).
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

from auxcheck._sglang_cpu.environment import Environment
from auxcheck._sglang_cpu.live import _args
from auxcheck._sglang_cpu.scenarios import SCENARIOS, run_scenario
from auxcheck._sglang_cpu.server import Server

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "capture_plugin"
RELEASE = "0.5.23"
TARGET = 2.0


def live(environment: Path) -> float:
    """Returns the wall seconds of one warm ``auxcheck live`` subprocess (it must pass)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "auxcheck", "live", str(PLUGIN), "--sglang", RELEASE,
         "--overlap", "on", "--environment", str(environment)],
        capture_output=True, text=True, check=False, env={**os.environ,
                                                           "AUXCHECK_PROGRESS": "off"})
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"auxcheck live failed (exit {done.returncode}):\n{done.stdout}\n"
                         f"{done.stderr[-3000:]}")
    return seconds


def bare(env: Environment, scratch: Path) -> float:
    """Returns the wall seconds of SGLang's server alone: started, sent the six scenarios'
    requests, stopped."""
    start = time.perf_counter()
    server = Server(env, env.model, scratch / "bare.log", args=_args(True),
                    variables={"XDG_CACHE_HOME": str(scratch), "HF_HOME": str(scratch)})
    try:
        for scenario in SCENARIOS:
            outcome = run_scenario(server, scenario, 60.0)
            if not outcome.ok:
                raise SystemExit(f"the bare server failed {scenario.name}: {outcome.message}")
    finally:
        server.stop()
    return time.perf_counter() - start


def main() -> int:
    """Prints both medians and the RESULT line; exits 1 over target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="rounds (median reported)")
    parser.add_argument("--environment", type=Path, default=Path(os.environ.get(
        "AUXCHECK_SGLANG_CPU", ROOT / ".cache" / "sglang-cpu")))
    options = parser.parse_args()
    env = Environment(options.environment.resolve())
    if not env.ready(RELEASE):
        print(f"no SGLang {RELEASE} CPU environment at {options.environment} (make sglang-cpu "
              "builds it): nothing measured")
        return 0
    live(env.path)  # warm: the plugin's overlay and its wheel cache
    times: tuple[list[float], list[float]] = ([], [])
    with tempfile.TemporaryDirectory(prefix="auxcheck-bench-live-") as tmp:
        for _ in range(options.runs):
            times[0].append(live(env.path))
            times[1].append(bare(env, Path(tmp)))
    measured, baseline = (statistics.median(seen) for seen in times)
    print(f"auxcheck live --overlap on, warm: {measured:.1f} s; SGLang's bare server, the same "
          f"scenarios: {baseline:.1f} s (medians of {options.runs})")
    ok = result_line(f"auxcheck live capture_plugin --sglang {RELEASE} --overlap on, warm, vs "
                     "SGLang's bare server with the same requests", measured, baseline,
                     at_most=TARGET)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
