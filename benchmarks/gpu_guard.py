"""The live-server guard on a real CUDA graph: its findings and its cost per step (run by hand).

    .venv/bin/python benchmarks/gpu_guard.py

No SGLang is needed: the script plays the scheduler's part with the guard's own hook
functions, as SGLang 0.5.23 would call them through ``HookRegistry``. A graph computes
``relu(x @ w)`` into its private pool from a static input buffer ``x``; after capture the
guard registers the runner's buffers and the pool (as its ``capture`` hook does). Each
step replays the graph, an observer publishes an output, the copy runs on a side stream
like SGLang's ``_copy_result_to_cpu`` (pinned host tensor, ``non_blocking``,
``record_stream``), the next step's replay is launched, then the copy is waited for and
the host output consumed. Two observers: one publishes a ``[:4]`` view of the graph
output (the bug: AUX111 every step), one a clone (the fix: no finding). The time per
step is measured bare (the copy function called directly) and through the guard, in
interleaved rounds. Exits 1 when the findings are not those; prints ``no CUDA device:
skipped`` and exits 0 on a machine without CUDA.
"""

from __future__ import annotations

import statistics
import sys
import time
from array import array
from dataclasses import dataclass
from typing import Any

STEPS = 200
ROUNDS = 5
ROWS = 8


@dataclass
class InputBuffers:
    x: Any


class Runner:
    """What the guard reads of a graph runner after capture: its static input buffers."""

    def __init__(self, buffers: InputBuffers) -> None:
        self.buffers = buffers


class Host:
    def __init__(self, values: Any) -> None:
        self.values = values

    def consume(self, batch: Any, commits: Any) -> None:
        self.total = float(self.values.sum())


class Output:
    def __init__(self, values: Any) -> None:
        self.values = values

    def copy_to_host(self, copy_tensor: Any) -> Host:
        return Host(copy_tensor(self.values))


class Req:
    def __init__(self, rid: int) -> None:
        self.rid, self.output_ids, self.finished_len = rid, array("q", [1]), None
        self.finished_reason, self.is_retracted = None, False


class Batch:
    def __init__(self) -> None:
        self.reqs = [Req(i) for i in range(4)]


def _async_d2h(tensor: Any) -> Any:
    """SGLang 0.5.23's ``_async_d2h`` (``utils/common.py``), restated."""
    import torch

    host = torch.empty(tensor.shape, dtype=tensor.dtype, device="cpu", pin_memory=True)
    host.copy_(tensor, non_blocking=True)
    tensor.record_stream(torch.cuda.current_stream())
    return host


def consume_auxiliary_output(cls: Any, batch: Any, output: Any, starts: Any) -> None:
    """SGLang 0.5.23's ``consume_auxiliary_output`` with the commits of a step left empty."""
    output.consume(batch, [None] * len(batch.reqs))


def main() -> int:
    """Runs the scenario; returns the process exit code."""
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: skipped")
        return 0
    from _sglang_step import Result, copy_step

    from auxcheck._guard.guard import Guard
    from auxcheck._guard.settings import GuardSettings

    copy_auxiliary_output_to_cpu = copy_step(_async_d2h)
    guard = Guard(GuardSettings("warn"))
    guard.checks = dict.fromkeys(("capture", "copy", "commits", "consume"))
    x = torch.randn(ROWS, 256, device="cuda")
    w = torch.randn(256, 256, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            torch.relu(x @ w)
    torch.cuda.current_stream().wait_stream(side)
    graph, pool = torch.cuda.CUDAGraph(), torch.cuda.graph_pool_handle()
    with torch.cuda.graph(graph, pool=pool):
        out = torch.relu(x @ w)
    guard.register_runner(Runner(InputBuffers(x)))
    segments = guard.registry.register_pool(pool, name="graph pool")
    copy_stream = torch.cuda.Stream()
    batch = Batch()

    def run(publish: Any, guarded: bool) -> float:
        torch.cuda.synchronize()
        start = time.perf_counter()
        in_flight = None
        for step in range(STEPS + 1):
            current = None
            if step < STEPS:
                x.normal_()
                graph.replay()
                result = Result(publish(out))
                copy_stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(copy_stream):
                    if guarded:
                        guard.around_copy(copy_auxiliary_output_to_cpu, result)
                    else:
                        copy_auxiliary_output_to_cpu(result)
                    done = torch.cuda.Event()
                    done.record()
                current = (result, done)
            if in_flight is not None:
                result, done = in_flight
                done.synchronize()
                host = result.auxiliary_host_output
                if guarded:
                    guard.around_consume(consume_auxiliary_output, None, batch, host, None)
                else:
                    consume_auxiliary_output(None, batch, host, None)
            in_flight = current
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / STEPS * 1e6

    observers = {"view out[:4]": lambda o: Output(o[:4]),
                 "clone": lambda o: Output(o[:4].clone())}
    counts = {}
    for name, publish in observers.items():
        before = dict(guard.counts())
        run(publish, True)
        counts[name] = {k: v - before.get(k, 0) for k, v in guard.counts().items()
                        if v != before.get(k, 0)}
    timings: dict[str, list[float]] = {"bare": [], "guard": []}
    for _ in range(ROUNDS):
        timings["bare"].append(run(observers["clone"], False))
        timings["guard"].append(run(observers["clone"], True))
    bare, guarded = (statistics.median(timings[k]) for k in ("bare", "guard"))
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}; graph pool {pool}, "
          f"{segments} segment(s); {len(guard.registry)} registrations; {STEPS} steps")
    for name, found in counts.items():
        text = ", ".join(f"{code} x{n} ({owner})" for (code, owner), n in sorted(found.items()))
        print(f"{name:<14} findings: {text or '-'}")
    print(f"per step (clone observer, medians of {ROUNDS}): bare {bare:.1f} us, guard "
          f"{guarded:.1f} us, guard adds {guarded - bare:.1f} us (one tensor copied per step)")
    view_codes = {code for code, _ in counts["view out[:4]"]}
    ok = view_codes == {"AUX111"} and counts["clone"] == {}
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
