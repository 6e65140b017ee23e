"""The guard of one process: its registry of graph memory, and the hook handlers of each step.

Each handler runs inside the SGLang call it hooks; what it finds goes to the reporter
once the call returned, and a check that raises is switched off, never the server.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from auxcheck._core.plugin_calls import type_name
from auxcheck._core.report import Finding
from auxcheck._guard.probes import (
    FORWARDED,
    SAMPLED,
    ConsumeProbe,
    Copied,
    CopyProbe,
    InFlight,
    Publication,
    Snapshot,
    changed,
    probed,
    snapshot_of,
)
from auxcheck._guard.reporter import Reporter
from auxcheck._guard.settings import GuardSettings
from auxcheck._runtime.static_buffers import SegmentSource, StaticBufferRegistry
from auxcheck._runtime.walk import is_tensor

__all__ = ["Guard"]

_PENDING = 16
"""Outputs kept between publication, copy and consume; SGLang has at most two steps in flight."""

_GRAPH_SHARED_OUTPUT = "sglang.srt.model_executor.graph_shared_output"
_GRAPH_POOL = "sglang.srt.model_executor.runner_utils.pool"

logger = logging.getLogger("auxcheck.guard")


class _Slot(NamedTuple):
    """Where a published device output waits for its copy: ``holder.attr``."""

    holder: Any
    attr: str
    output: Any
    published_at: str


class Guard:
    """The guard of one process: its registry of graph memory, its hooks and its reporter.

    ``segments`` replaces ``torch.cuda.memory_snapshot`` when the graph pool is registered.
    """

    def __init__(self, settings: GuardSettings, *,
                 segments: SegmentSource | None = None) -> None:
        self.settings = settings
        self.registry = StaticBufferRegistry()
        self.reporter = Reporter(settings)
        self.segments = segments
        self.checks: dict[str, str | None] = {}
        self.broken: set[str] = set()
        self._published: OrderedDict[int, Publication] = OrderedDict()
        self._in_flight: OrderedDict[int, InFlight] = OrderedDict()
        # Confidential-computing mode copies on a worker thread while the scheduler samples.
        self._tables = threading.Lock()

    def on(self, check: str) -> bool:
        """Returns True when ``check`` is on: its hooks registered and it never broke."""
        return check in self.checks and self.checks[check] is None and check not in self.broken

    def counts(self) -> dict[tuple[str, str], int]:
        """Returns how many findings of each (rule, output class) this process saw."""
        return self.reporter.counts()

    def quietly(self, check: str, func: Callable[..., Any], *args: Any) -> Any:
        """Runs the guard's own ``func``; if it raises, logs it once, switches ``check`` off."""
        if check in self.broken:
            return None
        try:
            return func(*args)
        except Exception:  # the guard's own failure must never reach the server
            self.broken.add(check)
            logger.exception("auxcheck guard: the %s check failed inside auxcheck and is off "
                             "from now on in pid %d; please report this", check, os.getpid())
            return None

    def report(self, found: Sequence[tuple[Finding, str]]) -> None:
        """Logs/counts ``found``, then raises GuardError in raise mode."""
        if found:
            self.reporter.findings(found)
            self.reporter.raise_for(found)

    # -- capture

    def after_capture(self, result: Any, runner: Any, *args: Any, **kwargs: Any) -> None:
        """Registers what a graph runner's capture made static (AFTER hook of ``capture``)."""
        self.quietly("capture", self.register_runner, runner)

    def register_runner(self, runner: Any) -> None:
        """Registers ``runner.buffers``, the shared logits output and the graph pool's segments."""
        name = type(runner).__name__
        self.registry.unregister(runner)
        buffers = getattr(runner, "buffers", None)
        count = 0
        if buffers is not None:
            count = self.registry.register_buffers(buffers, name=f"{name}.buffers", owner=runner)
        shared = self._shared_output()
        if shared is not None:
            self.registry.unregister("GraphSharedOutput")
            self.registry.register_buffers(shared, name="GraphSharedOutput",
                                           owner="GraphSharedOutput")
        segments = self._register_pool()
        logger.info("auxcheck guard: %s captured; registered %d input buffer(s), %s, and %s",
                    name, count, "the shared logits output" if shared is not None else
                    "no shared logits output", f"{segments} graph pool segment(s)"
                    if segments is not None else "no graph pool (none found)")

    def _shared_output(self) -> Any:
        module = sys.modules.get(_GRAPH_SHARED_OUTPUT)
        holder = getattr(module, "GraphSharedOutput", None)
        shared = getattr(holder, "_process_shared", None)
        return None if shared is None else getattr(shared, "_logits_buffers", None)

    def _register_pool(self) -> int | None:
        module = sys.modules.get(_GRAPH_POOL)
        read = getattr(module, "get_global_graph_memory_pool", None)
        pool = read() if callable(read) else None
        if pool is None:
            return None
        pool = getattr(pool, "id", pool)  # a torch.cuda.MemPool, or a graph_pool_handle()
        return self.registry.register_pool(pool, snapshot=self.segments, owner="graph pool",
                                           name="SGLang graph pool")

    # -- publication and copy

    def after_sample(self, result: Any, *args: Any, **kwargs: Any) -> None:
        """Snapshots the output ``ModelRunner.sample`` just published (AFTER hook, values only).

        Called as ``(next_token_ids, model_runner, logits_output, forward_batch)``.
        """
        logits_output = _argument(args, kwargs, 1, "logits_output")
        output = getattr(logits_output, "auxiliary_device_output", None)
        if output is not None:
            self.quietly("values", self._snapshot, output, SAMPLED)

    def after_forward_batch(self, result: Any, *args: Any, **kwargs: Any) -> None:
        """Snapshots the forward observer's output the forward just took (AFTER hook, values only).

        Called as ``(batch_result, worker, batch, ...)`` on SGLang main after 0.5.23, whose
        ``TpModelWorker.forward_batch_generation`` sets ``forward_auxiliary_output`` from
        ``ForwardObserver.after_forward`` (and samples, unless sampling is delayed).
        """
        output = getattr(result, "forward_auxiliary_output", None)
        if output is not None:
            self.quietly("values", self._snapshot, output, FORWARDED)

    def _snapshot(self, output: Any, published_at: str) -> None:
        from auxcheck._runtime.walk import iter_tensors, unique_tensors

        snaps = []
        for _path, tensor in unique_tensors(list(iter_tensors(output))):
            snap = snapshot_of(tensor)
            if snap is not None:
                snaps.append(snap)
        with self._tables:
            _keep(self._published, id(output), Publication(output, snaps, published_at))

    def around_copy(self, original: Callable[..., Any], result: Any, *args: Any,
                    **kwargs: Any) -> Any:
        """Runs ``copy_auxiliary_output_to_cpu`` with every published output wrapped in probes.

        The sampling observer's (``logits_output.auxiliary_device_output``) and, on an SGLang
        with a forward observer, the forward observer's (``forward_auxiliary_output``): SGLang
        main copies the two composed, forward first.
        """
        slots = _published(result)
        if not slots or getattr(result, "auxiliary_host_output", None) is not None:
            return original(result, *args, **kwargs)
        wrapped = self.quietly("copy", self._copy_probes, slots)
        if wrapped is None:
            return original(result, *args, **kwargs)
        stand_ins, probes = wrapped
        try:
            for slot, stand_in in zip(slots, stand_ins):
                setattr(slot.holder, slot.attr, stand_in)
            value = original(result, *args, **kwargs)
        finally:
            for slot, stand_in in zip(slots, stand_ins):
                if getattr(slot.holder, slot.attr, None) is stand_in:
                    setattr(slot.holder, slot.attr, slot.output)
        found = [item for probe in probes for item in probe.found]
        if self.on("values"):
            self.quietly("values", self._in_flight_after, slots, result, probes)
        self.report(found)
        return value

    def _copy_probes(self, slots: list[_Slot]) -> tuple[list[Any], list[CopyProbe]]:
        stand_ins: list[Any] = []
        probes: list[CopyProbe] = []
        for slot in slots:
            probe = functools.partial(self._copy_probe, published_at=slot.published_at)
            stand_in, leaves = probed(slot.output, "CompositeDeviceAuxiliaryOutput", probe)
            stand_ins.append(stand_in)
            probes += leaves
        return stand_ins, probes

    def _copy_probe(self, leaf: Any, *, published_at: str) -> CopyProbe:
        return CopyProbe(self, leaf, type_name(leaf), published_at=published_at)

    def checking_copy(self, copy_tensor: Callable[[Any], Any],
                      probe: CopyProbe) -> Callable[[Any], Any]:
        """Returns ``copy_tensor`` checking each tensor against the registry before copying it."""
        values = self.on("values")

        def copy(tensor: Any) -> Any:
            probe.calls += 1
            self.quietly("copy", self._check_tensor, tensor,
                         f"copy_tensor argument #{probe.calls}", probe)
            dest = copy_tensor(tensor)
            if values:
                probe.copies.append(Copied(tensor, dest, probe.owner, probe.calls,
                                           probe.published_at))
            return dest

        return copy

    def check_held(self, probe: CopyProbe) -> None:
        """Checks the tensors the leaf output holds itself, before its ``copy_to_host`` runs."""
        self.quietly("copy", self._check_held, probe)

    def _check_held(self, probe: CopyProbe) -> None:
        from auxcheck._runtime.walk import iter_tensors

        for path, tensor in iter_tensors(probe.leaf, max_depth=4):
            self._check_tensor(tensor, path, probe)

    def _check_tensor(self, tensor: Any, path: str, probe: CopyProbe) -> None:
        if not is_tensor(tensor) or id(tensor) in probe.checked:
            return  # a tensor the output holds and copies is looked up once
        probe.checked[id(tensor)] = tensor
        finding = self.registry.finding(tensor, path=path)
        if finding is not None:
            probe.found.append((finding, probe.owner))

    def _in_flight_after(self, slots: list[_Slot], result: Any,
                         probes: list[CopyProbe]) -> None:
        host = getattr(result, "auxiliary_host_output", None)
        if host is None:
            return
        copies = [c for probe in probes for c in probe.copies]
        snapshots: list[Snapshot] = []
        with self._tables:
            for slot in slots:
                publication = self._published.pop(id(slot.output), None)
                if publication is None:  # re-composed since: the newest from the same place
                    publication = _newest(self._published, slot.published_at)
                if publication is not None:
                    snapshots += publication.snapshots
            _keep(self._in_flight, id(host), InFlight(snapshots, copies))

    # -- commits and consume

    def after_commits(self, commits: Any, *args: Any, **kwargs: Any) -> None:
        """Checks the commits SGLang built against ``batch.reqs`` (AFTER hook, AUX601).

        Called as ``(commits, cls, batch, output_starts)``.
        """
        batch = _argument(args, kwargs, 1, "batch")
        found = self.quietly("commits", _commit_findings, batch, commits)
        if found:
            self.report([(f, "SchedulerBatchResultProcessor._build_auxiliary_commits")
                         for f in found])

    def around_consume(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Runs ``consume_auxiliary_output`` with each host output fingerprinted (AUX203).

        Called as ``(original, cls, batch, output, output_starts)``; the output is
        replaced by its probes for the call, wherever it was passed.
        """
        output = _argument(args, kwargs, 2, "output")
        found: list[tuple[Finding, str]] = []
        if output is not None and self.on("values"):
            found += self.quietly("values", self._value_findings, output) or []
        wrapped = None if output is None else self.quietly("consume", self._consume_probes,
                                                           output)
        if wrapped is None:
            value = original(*args, **kwargs)
            self.report(found)
            return value
        stand_in, probes = wrapped
        args, kwargs = _replaced(args, kwargs, 2, "output", stand_in)
        value = original(*args, **kwargs)
        found += [item for probe in probes for item in probe.found]
        self.report(found)
        return value

    def _consume_probes(self, output: Any) -> tuple[Any, list[ConsumeProbe]]:
        return probed(output, "CompositeHostAuxiliaryOutput",
                      lambda leaf: ConsumeProbe(self, leaf, type_name(leaf)))

    def _value_findings(self, host: Any) -> list[tuple[Finding, str]]:
        with self._tables:
            flight = self._in_flight.pop(id(host), None)
        if flight is None or not flight.snapshots:
            return []
        found = []
        for copied in flight.copies:
            finding = changed(copied, flight.snapshots)
            if finding is not None:
                found.append((finding, copied.owner))
        return found


def _published(result: Any) -> list[_Slot]:
    """Returns the device outputs ``result`` holds for SGLang to copy, in the order it copies them.

    SGLang main composes the forward observer's output first, then the sampling observer's;
    0.5.19-0.5.23 have only the latter (their results have no ``forward_auxiliary_output``).
    """
    logits = getattr(result, "logits_output", None)
    slots = [_Slot(result, "forward_auxiliary_output",
                   getattr(result, "forward_auxiliary_output", None), FORWARDED),
             _Slot(logits, "auxiliary_device_output",
                   getattr(logits, "auxiliary_device_output", None), SAMPLED)]
    return [slot for slot in slots if slot.output is not None]


def _newest(published: OrderedDict[int, Publication], published_at: str) -> Publication | None:
    """Pops and returns the newest publication made at ``published_at``, if any."""
    for key in reversed(published):
        if published[key].published_at == published_at:
            return published.pop(key)
    return None


def _argument(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, name: str) -> Any:
    """Returns argument ``name`` of a hooked call, passed at ``index`` or by keyword."""
    return args[index] if len(args) > index else kwargs.get(name)


def _replaced(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str,
              value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if len(args) > index:
        return (*args[:index], value, *args[index + 1:]), kwargs
    return args, {**kwargs, name: value}


def _commit_findings(batch: Any, commits: Any) -> list[Finding]:
    from auxcheck._runtime.validators import check_commits

    return list(check_commits(batch, commits))


def _keep(table: OrderedDict[int, Any], key: int, value: Any) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > _PENDING:
        table.popitem(last=False)
