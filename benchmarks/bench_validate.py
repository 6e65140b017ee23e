"""Cost of check_device_output on the example plugin's output (median and p90 per call).

Run by hand: .venv/bin/python benchmarks/bench_validate.py
Target: under 5 ms per object without static buffers. The baseline, timed in the same run,
is the step the check wraps done bare: a deep copy of the output, its ``copy_to_host`` with
SGLang's kind of copy, and its host output's ``consume`` with one commit per request.
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "capture_plugin"))

from _timing import result_line
from capture_plugin.outputs import make_device_output, make_observer

from auxcheck.protocols import CommittedTokens
from auxcheck.validate import check_device_output

WARMUP = 20
RUNS = 300
TARGET_MS = 5.0


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


def bare_step(output: Any) -> Callable[[], Any]:
    """Returns the step the check wraps, done bare (no watching, no findings)."""
    batch_size = int(output.positions.shape[0])

    def step() -> None:
        kept = copy.deepcopy(output)
        host = kept.copy_to_host(lambda tensor: tensor.to("cpu", copy=True))
        batch = SimpleNamespace(reqs=[SimpleNamespace(customized_info=None)
                                      for _ in range(batch_size)])
        host.consume(batch, [CommittedTokens(0, (1,)) for _ in range(batch_size)])
    return step


def main() -> int:
    """Prints a table of median and p90 per scenario; returns 1 over target."""
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
    medians = {}
    for name, call in {"bare step (baseline)": bare_step(output), **scenarios}.items():
        times = timings(call)
        p90 = statistics.quantiles(times, n=10)[-1]
        medians[name] = statistics.median(times)
        print(f"{name:<26}{medians[name]:>10.3f}{p90:>10.3f}")
    checked = medians["no static buffers"]
    return 0 if result_line(
        "check_device_output, no static buffers, vs the bare step", checked,
        medians["bare step (baseline)"], unit="ms",
        target=f"< {TARGET_MS:g} ms per object", met=checked < TARGET_MS) else 1


if __name__ == "__main__":
    sys.exit(main())
