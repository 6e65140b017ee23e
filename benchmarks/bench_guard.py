"""What the live-server guard adds to SGLang's copy and consume, per tensor and per step (by hand).

    .venv/bin/python benchmarks/bench_guard.py

The guard's registry holds 10,000 registered static buffers (SGLang registers a few
dozen; 10,000 is the worst case the target names). Each step publishes one output of
``TENSORS`` fresh tensors, copied with ``copy_tensor`` as the contract asks; the batch
has ``REQUESTS`` requests, each committing one token. Timed side by side, in
interleaved rounds, medians shown:

- the copy: SGLang 0.5.23's ``copy_auxiliary_output_to_cpu`` body (its five lines,
  restated below) bare, and through the guard's AROUND hook;
- the commits and consume: 0.5.23's ``_build_auxiliary_commits`` + ``consume`` bare, and
  with the guard's commit check (AFTER) and consume fingerprint (AROUND);
- the copy with ``AUXCHECK_GUARD_VALUES=1`` (a synchronous snapshot at publication and a
  comparison at consume), for the record.

Target: the copy hook under 20 µs per copied tensor with 10,000 buffers, values off.
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
from array import array
from collections.abc import Callable
from typing import Any

import torch
from _sglang_step import Logits, Result, copy_step
from _timing import result_line

from auxcheck._guard.guard import Guard
from auxcheck._guard.settings import GuardSettings
from auxcheck.protocols import CommittedTokens

BUFFERS = 10_000
TENSORS = 8
REQUESTS = 64
STEPS = 200
ROUNDS = 9


class Host:
    def __init__(self, tensors: list[Any]) -> None:
        self.tensors = tensors

    def consume(self, batch: Any, commits: Any) -> None:
        self.last = len(commits)


class Output:
    def __init__(self) -> None:
        self.tensors = [torch.randn(REQUESTS, 4) for _ in range(TENSORS)]

    def copy_to_host(self, copy_tensor: Callable[[Any], Any]) -> Host:
        return Host([copy_tensor(t) for t in self.tensors])


def _async_d2h(tensor: Any) -> Any:
    return tensor  # SGLang's own: a CPU tensor is returned as it is


copy_auxiliary_output_to_cpu = copy_step(_async_d2h)


class Req:
    def __init__(self, rid: int) -> None:
        self.rid = rid
        self.output_ids = array("q", range(20))
        self.finished_len = None
        self.finished_reason = None
        self.is_retracted = False


class Batch:
    def __init__(self) -> None:
        self.reqs = [Req(i) for i in range(REQUESTS)]


def build_commits(cls: Any, batch: Batch, starts: list[int]) -> list[Any]:
    """SGLang 0.5.23's ``_build_auxiliary_commits``, restated."""
    commits: list[Any] = []
    for req, start in zip(batch.reqs, starts, strict=True):
        end = req.finished_len if req.finished_len is not None else len(req.output_ids)
        commits.append(None if end == start else CommittedTokens(
            start, tuple(req.output_ids[start:end])))
    return commits


def consume_auxiliary_output(cls: Any, batch: Batch, output: Any, starts: list[int],
                             build: Callable[..., Any] = build_commits) -> None:
    """SGLang 0.5.23's ``consume_auxiliary_output``, restated (``build`` may be hooked)."""
    output.consume(batch, build(cls, batch, starts))


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> int:
    """Runs the benchmark, prints the table; returns 1 when the target is missed."""
    logging.disable(logging.WARNING)
    guard = Guard(GuardSettings("warn"))
    kept = [torch.empty(16) for _ in range(BUFFERS)]
    for i, buffer in enumerate(kept):
        guard.registry.register(buffer, name=f"buffer {i}")
    values = Guard(GuardSettings("warn", values=True))
    for g in (guard, values):
        g.checks = dict.fromkeys(("capture", "copy", "commits", "consume"))
    values.checks["values"] = None
    outputs = [Output() for _ in range(4)]
    batch = Batch()
    starts = [19] * REQUESTS

    def copy_bare() -> None:
        for i in range(STEPS):
            copy_auxiliary_output_to_cpu(Result(outputs[i % 4]))

    def copy_guarded() -> None:
        for i in range(STEPS):
            guard.around_copy(copy_auxiliary_output_to_cpu, Result(outputs[i % 4]))

    def copy_values() -> None:
        for i in range(STEPS):
            output = outputs[i % 4]
            logits = Logits()
            logits.auxiliary_device_output = output
            values.after_sample(None, None, logits)
            result = Result(output)
            values.around_copy(copy_auxiliary_output_to_cpu, result)
            host = result.auxiliary_host_output
            values.around_consume(lambda *a: None, None, batch, host, starts)

    host = Host([])

    def consume_bare() -> None:
        for _ in range(STEPS):
            consume_auxiliary_output(None, batch, host, starts)

    def checked_build(cls: Any, batch: Batch, starts: list[int]) -> list[Any]:
        commits = build_commits(cls, batch, starts)
        guard.after_commits(commits, cls, batch, starts)
        return commits

    def consume_guarded() -> None:
        for _ in range(STEPS):
            guard.around_consume(lambda *a: consume_auxiliary_output(*a, build=checked_build),
                                 None, batch, host, starts)

    actions = {"copy, bare": copy_bare, "copy, guard": copy_guarded,
               "copy, guard + values": copy_values, "commits + consume, bare": consume_bare,
               "commits + consume, guard": consume_guarded}
    samples: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(ROUNDS):
        for name, action in actions.items():
            samples[name].append(timed(action) / STEPS * 1e6)
    us = {name: statistics.median(seen) for name, seen in samples.items()}
    print(f"torch {torch.__version__}, CPU, {BUFFERS:,} registered buffers, {TENSORS} tensors "
          f"per output, {REQUESTS} requests, medians of {ROUNDS} interleaved rounds of "
          f"{STEPS} steps")
    print(f"{'per step':<28} {'µs':>9}")
    for name, value in us.items():
        print(f"{name:<28} {value:>9.1f}")
    per_tensor = (us["copy, guard"] - us["copy, bare"]) / TENSORS
    per_values = (us["copy, guard + values"] - us["copy, bare"]) / TENSORS
    per_consume = us["commits + consume, guard"] - us["commits + consume, bare"]
    print(f"guard adds {per_tensor:.2f} µs per copied tensor (values off), "
          f"{per_values:.2f} µs with values on, {per_consume:.1f} µs per consume of "
          f"{REQUESTS} requests")
    ok = result_line(f"guard copy hook per step vs the bare copy ({TENSORS} tensors, "
                     f"{BUFFERS:,} buffers, values off)", us["copy, guard"], us["copy, bare"],
                     unit="µs", target="< 20 µs added per tensor", met=per_tensor < 20)
    result_line("guard commits + consume per step vs bare", us["commits + consume, guard"],
                us["commits + consume, bare"], unit="µs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
