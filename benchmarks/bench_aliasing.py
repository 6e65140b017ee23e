"""Checks per second of the aliasing registry against a naive linear scan (run by hand).

    .venv/bin/python benchmarks/bench_aliasing.py

For 1, 100 and 10,000 registered buffers it times ``find_overlaps`` on tensors that
alias nothing (the common case in a debug run) and on views of a registered buffer,
next to a plain scan of every buffer's precomputed ``(lo, hi)`` span, all measured in
the same rounds, then times what ``guard_copy`` adds per tensor. Targets: at 10,000 buffers at least 100x the naive scan and at
least half the 1-buffer throughput; guard_copy under 20 us per tensor.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
from _timing import result_line

from auxcheck._runtime.byteranges import byte_range
from auxcheck.aliasing import StaticBufferRegistry, guard_copy

SIZES = (1, 100, 10_000)
QUERIES = 256
ROUNDS = 9


def per_second(check: Callable[[Any], Any], tensors: list[Any], calls: int) -> Callable[[], float]:
    """Returns a measurement: one timed pass of ``calls`` checks, as checks per second."""
    batch = (tensors * (calls // len(tensors) + 1))[:calls]

    def measure() -> float:
        start = time.perf_counter()
        for tensor in batch:
            check(tensor)
        return calls / (time.perf_counter() - start)

    return measure


def plain_scan(buffers: list[Any]) -> Callable[[Any], list[tuple[int, int]]]:
    """Returns the baseline: the query's bytes against every buffer's precomputed ``(lo, hi)``.

    The spans are computed once, up front, and kept per device as plain int pairs, so
    the baseline pays only the comparisons a registry without an index would make.
    """
    spans: dict[Any, list[tuple[int, int]]] = {}
    for span in (byte_range(t) for t in buffers):
        if span is not None:
            spans.setdefault(span.device, []).append((span.lo, span.hi))

    def check(tensor: Any) -> list[tuple[int, int]]:
        span = byte_range(tensor)
        if span is None:
            return []
        return [(lo, hi) for lo, hi in spans.get(span.device, ()) if lo < span.hi and span.lo < hi]

    return check


def guard_overhead_us(registry: StaticBufferRegistry, tensors: list[Any]) -> float:
    """Returns the microseconds guard_copy adds per tensor over the bare copy function (median)."""
    def copy(tensor: Any) -> Any:
        return tensor

    guarded = per_second(guard_copy(copy, registry), tensors, 4 * QUERIES)
    bare = per_second(copy, tensors, 4 * QUERIES)
    pairs = [(guarded(), bare()) for _ in range(ROUNDS)]
    return statistics.median(1 / g - 1 / b for g, b in pairs) * 1e6


def bare_rate(tensors: list[Any]) -> float:
    """Returns the bare copy function's calls per second (the guard's baseline)."""
    def copy(tensor: Any) -> Any:
        return tensor

    return statistics.median(per_second(copy, tensors, 4 * QUERIES)() for _ in range(ROUNDS))


def main() -> int:
    """Runs the benchmark, prints the table; returns 1 when a target is missed.

    Every measurement of every size is taken in each of ``ROUNDS`` rounds, in turn, and
    the table shows medians, so a slow spell of the machine weighs on all alike.
    """
    queries = [torch.empty(16) for _ in range(QUERIES)]
    measures: dict[int, tuple[Callable[[], float], ...]] = {}
    registries: dict[int, StaticBufferRegistry] = {}
    kept = []
    for count in SIZES:
        buffers = [torch.empty(16) for _ in range(count)]
        kept.append(buffers)  # registrations expire with their buffers
        registry = registries[count] = StaticBufferRegistry()
        for i, buffer in enumerate(buffers):
            registry.register(buffer, name=f"buffer {i}")
        hits = [buffers[i % count][2:6] for i in range(QUERIES)]
        plain_calls = max(16, 4 * QUERIES // count)
        measures[count] = (per_second(registry.find_overlaps, queries, 4 * QUERIES),
                           per_second(registry.find_overlaps, hits, 4 * QUERIES),
                           per_second(plain_scan(buffers), queries, plain_calls))
    samples: dict[int, list[list[float]]] = {count: [[], [], []] for count in SIZES}
    for _ in range(ROUNDS):
        for count in SIZES:
            for measure, seen in zip(measures[count], samples[count]):
                seen.append(measure())
    rows = {count: tuple(statistics.median(seen) for seen in samples[count]) for count in SIZES}
    overhead = guard_overhead_us(registries[SIZES[-1]], queries)
    base = rows[SIZES[0]][0]
    print(f"torch {torch.__version__}, CPU tensors, {QUERIES} query tensors, "
          f"medians of {ROUNDS} interleaved rounds")
    print(f"{'buffers':>8} {'registry miss/s':>16} {'registry hit/s':>15} {'plain scan/s':>13} "
          f"{'speed-up':>9} {'vs 1 buffer':>12}")
    for count, (miss, hit, plain) in rows.items():
        print(f"{count:>8,} {miss:>16,.0f} {hit:>15,.0f} {plain:>13,.0f} "
              f"{miss / plain:>8,.0f}x {miss / base:>11.0%}")
    print(f"guard_copy overhead at {SIZES[-1]:,} buffers: {overhead:.2f} us per tensor")
    big_miss, _, big_plain = rows[SIZES[-1]]
    per_query = [1e6 / big_miss, 1e6 / big_plain, 1e6 / base]
    ok = result_line(f"registry lookup at {SIZES[-1]:,} buffers vs a plain scan", per_query[0],
                     per_query[1], at_least=100, unit="µs")
    ok &= result_line(f"registry lookup at {SIZES[-1]:,} buffers vs at 1 buffer", per_query[0],
                      per_query[2], at_most=2, unit="µs")
    ok &= result_line(f"guard_copy added per tensor at {SIZES[-1]:,} buffers vs the bare copy",
                      overhead, 1e6 / bare_rate(queries), unit="µs", target="< 20 µs",
                      met=overhead < 20)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
