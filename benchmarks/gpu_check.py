"""Captures a real CUDA graph and shows the aliasing detector on its output (run by hand).

    .venv/bin/python benchmarks/gpu_check.py

A graph computes ``relu(x @ w)`` into its private pool. Publishing a ``[:4]`` view of
that output is the bug: the detector must report AUX110 (the registered output
buffer) and AUX111 (the graph pool), and a replay must visibly overwrite the view.
Publishing a clone is the fix: no finding, and the replay leaves it alone. Exits 1
when the detector disagrees, 0 otherwise; prints ``no CUDA device: skipped`` and
exits 0 on a machine without CUDA.
"""

from __future__ import annotations

import sys
import time
from typing import Any


def _warm_up(torch: Any, fn: Any) -> None:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)


def _guard_us(guarded: Any, tensor: Any, repeat: int = 20_000) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        guarded(tensor)
    return (time.perf_counter() - start) / repeat * 1e6


def main() -> int:
    """Runs the check; returns the process exit code."""
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: skipped")
        return 0
    from auxcheck.aliasing import StaticBufferRegistry, capture, guard_copy, static_buffer_findings
    from auxcheck.errors import CudaGraphAliasError

    x = torch.randn(8, 256, device="cuda")
    w = torch.randn(256, 256, device="cuda")
    _warm_up(torch, lambda: torch.relu(x @ w))
    registry = StaticBufferRegistry()
    with capture(registry, name="decode bs=8") as handle:
        out = torch.relu(x @ w)
        handle.register(out, name="static_out")
    graph_pool = handle.pool_id
    handle.graph.replay()
    torch.cuda.synchronize()

    view, clone = out[:4], out[:4].clone()
    before_view, before_clone = view.cpu(), clone.cpu()
    x.copy_(torch.randn_like(x))
    handle.graph.replay()  # the next step's replay
    torch.cuda.synchronize()
    view_changed = not torch.equal(view.cpu(), before_view)
    clone_changed = not torch.equal(clone.cpu(), before_clone)

    codes = {}
    for label, tensor in (("view out[:4]", view), ("clone", clone)):
        codes[label] = sorted({f.code for f in static_buffer_findings([tensor], registry)})
    guarded = guard_copy(lambda t: t.to("cpu", non_blocking=True), registry)
    try:
        guarded(view)
        guard_caught = False
    except CudaGraphAliasError:
        guard_caught = True
    guarded(clone)
    torch.cuda.synchronize()
    check_us = _guard_us(registry.find_overlaps, clone)

    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}; graph pool {graph_pool};"
          f" {len(registry)} registrations")
    print(f"{'published':<14} {'findings':<18} {'overwritten by replay':<22}")
    print(f"{'view out[:4]':<14} {','.join(codes['view out[:4]']) or '-':<18} {view_changed!s:<22}")
    print(f"{'clone':<14} {','.join(codes['clone']) or '-':<18} {clone_changed!s:<22}")
    print(f"guard_copy caught the view: {guard_caught}; find_overlaps on a clean CUDA tensor: "
          f"{check_us:.2f} us")
    ok = (codes["view out[:4]"] == ["AUX110", "AUX111"] and codes["clone"] == []
          and guard_caught and not clone_changed)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
