"""Checks per second of the aliasing registry against a naive linear scan (run by hand).

    .venv/bin/python benchmarks/bench_aliasing.py

For 1, 100 and 10,000 registered buffers it times ``find_overlaps`` on tensors that
alias nothing (the common case in a debug run) and on views of a registered buffer,
next to a linear scan of every registered range, then times what ``guard_copy``
adds per tensor. Targets: at 10,000 buffers at least 100x the naive scan and at
least half the 1-buffer throughput; guard_copy under 20 us per tensor.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from auxcheck._byteranges import byte_range, ranges_overlap
from auxcheck.aliasing import StaticBufferRegistry, guard_copy

SIZES = (1, 100, 10_000)
QUERIES = 256


def rate(check: Callable[[Any], Any], tensors: list[Any], *, seconds: float = 0.2,
         repeat: int = 5) -> float:
    """Returns the best of ``repeat`` runs of checks per second, each about ``seconds`` long.

    The best run is the one least disturbed by other load on the machine.
    """
    best = 0.0
    for _ in range(repeat):
        done, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            for tensor in tensors:
                check(tensor)
            done += len(tensors)
        best = max(best, done / elapsed)
    return best


def naive_scan(buffers: list[Any]) -> Callable[[Any], list[Any]]:
    """Returns a check that compares a tensor with every registered range in turn."""
    spans = [b for b in (byte_range(t) for t in buffers) if b is not None]

    def check(tensor: Any) -> list[Any]:
        span = byte_range(tensor)
        return [s for s in spans if ranges_overlap(span, s)]

    return check


def guard_overhead_us(registry: StaticBufferRegistry, tensors: list[Any]) -> float:
    """Returns the microseconds guard_copy adds per tensor over the bare copy function."""
    def copy(tensor: Any) -> Any:
        return tensor

    guarded = guard_copy(copy, registry)
    return (1 / rate(guarded, tensors) - 1 / rate(copy, tensors)) * 1e6


def main() -> int:
    """Runs the benchmark, prints the table; returns 1 when a target is missed."""
    queries = [torch.empty(16) for _ in range(QUERIES)]
    rows: dict[int, tuple[float, float, float]] = {}
    overhead = 0.0
    for count in SIZES:
        buffers = [torch.empty(16) for _ in range(count)]
        registry = StaticBufferRegistry()
        for i, buffer in enumerate(buffers):
            registry.register(buffer, name=f"buffer {i}")
        hits = [buffers[i % count][2:6] for i in range(QUERIES)]
        naive = naive_scan(buffers)
        rows[count] = (rate(registry.find_overlaps, queries), rate(registry.find_overlaps, hits),
                       rate(naive, queries[: max(8, QUERIES // count)]))
        if count == SIZES[-1]:
            overhead = guard_overhead_us(registry, queries)
    base = rows[SIZES[0]][0]
    print(f"torch {torch.__version__}, CPU tensors, {QUERIES} query tensors")
    print(f"{'buffers':>8} {'registry miss/s':>16} {'registry hit/s':>15} {'naive scan/s':>13} "
          f"{'speed-up':>9} {'vs 1 buffer':>12}")
    for count, (miss, hit, naive_rate) in rows.items():
        print(f"{count:>8,} {miss:>16,.0f} {hit:>15,.0f} {naive_rate:>13,.0f} "
              f"{miss / naive_rate:>8,.0f}x {miss / base:>11.0%}")
    print(f"guard_copy overhead at {SIZES[-1]:,} buffers: {overhead:.2f} us per tensor")
    big_miss, _, big_naive = rows[SIZES[-1]]
    ok = big_miss >= 100 * big_naive and big_miss >= base / 2 and overhead < 20
    print("targets (>=100x naive, >=50% of 1-buffer rate, guard < 20 us):",
          "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
