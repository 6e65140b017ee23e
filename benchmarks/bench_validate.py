"""Cost of check_device_output on the example plugin's output (median and p90 per call).

Run by hand: .venv/bin/python benchmarks/bench_validate.py
Target: under 5 ms per object without static buffers.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "capture_plugin"))

from capture_plugin.outputs import make_device_output, make_observer

from auxcheck.validate import check_device_output

WARMUP = 20
RUNS = 300


def timings(call: Callable[[], Any]) -> list[float]:
    """Returns the wall time of each of RUNS calls, in ms, after WARMUP untimed calls."""
    for _ in range(WARMUP):
        call()
    out = []
    for _ in range(RUNS):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    """Prints a table of median and p90 per scenario."""
    output = make_device_output()
    buffers = [torch.empty(64, 1024) for _ in range(8)]
    scenarios: dict[str, Callable[[], Any]] = {
        "no static buffers": lambda: check_device_output(output),
        "8 static buffers": lambda: check_device_output(output, static_buffers=buffers),
        "8 buffers + PP observer": lambda: check_device_output(
            output, static_buffers=buffers, pp_observer=make_observer()),
    }
    assert check_device_output(output, static_buffers=buffers, pp_observer=make_observer()).ok
    print(f"check_device_output(capture_plugin output), {RUNS} runs after {WARMUP} warm-up")
    print(f"{'scenario':<26}{'median ms':>10}{'p90 ms':>10}")
    for name, call in scenarios.items():
        times = timings(call)
        p90 = statistics.quantiles(times, n=10)[-1]
        print(f"{name:<26}{statistics.median(times):>10.3f}{p90:>10.3f}")


if __name__ == "__main__":
    main()
