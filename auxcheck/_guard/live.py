"""The live-server guard: auxcheck's checks inside a running SGLang, through its own plugin hooks.

:func:`install` runs in ``register()`` of auxcheck's ``sglang.srt.plugins`` entry point
(see :mod:`auxcheck.sglang_plugin`) when ``AUXCHECK_GUARD`` is ``warn`` or ``raise``. It
reads the running SGLang's source to confirm each hook target exists (the same judgement
``auxcheck check`` makes for a plugin's hooks, AUX701), registers hooks only on those, and
logs which checks are on and which are off, and why. The hooks (SGLang 0.5.23 names):

- ``DecodeCudaGraphRunner.capture`` / ``PrefillCudaGraphRunner.capture`` (AFTER): the
  runner's static input buffers, the process-wide ``GraphSharedOutput`` logits buffers
  and every segment of the graph memory pool are registered (AUX110/AUX111);
- ``GenerationBatchResult.copy_auxiliary_output_to_cpu`` (AROUND): the published output
  is wrapped for the call so that its ``copy_to_host`` receives a copy function that checks
  each tensor against the registry before SGLang's ``_async_d2h`` copies it; the tensors
  the output holds are checked too. ``_async_d2h`` itself is never re-bound;
- ``ModelRunner.sample`` (AFTER, only with ``AUXCHECK_GUARD_VALUES=1``): the output just
  published is snapshot to the host, synchronously, so the copy can be compared (AUX112);
- ``SchedulerBatchResultProcessor._build_auxiliary_commits`` (AFTER): commits are checked
  against ``batch.reqs`` (AUX601);
- ``SchedulerBatchResultProcessor.consume_auxiliary_output`` (AROUND): each host output's
  ``consume`` is fingerprinted before and after (AUX203), and copied values are compared
  with their snapshot, after SGLang waited for the copy.

Composites are judged per child: the guard hands SGLang's own composite a copy of itself
whose children are thin probes, so SGLang's composite code still does the iterating.

The guard observes, it never repairs: a server runs the same with it as without it, but
for the time the checks take. Its own failures never reach the server: a check that
raises is logged once and switched off. ``warn`` logs the first finding of each rule and
output class in full, then counts (a line at 10, 100, 1000... and a summary at exit);
``raise`` raises :class:`~auxcheck.errors.GuardError` once the hooked SGLang call returned.
``AUXCHECK_GUARD_REPORT=PATH`` appends the same events to PATH as JSON lines.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import inspect
import json
import logging
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from auxcheck._core.plugin_calls import type_name
from auxcheck.aliasing import SegmentSource, StaticBufferRegistry
from auxcheck.errors import GuardError
from auxcheck.report import Finding

__all__ = [
    "GUARD_ENV",
    "HOOKS",
    "REPORT_ENV",
    "VALUES_ENV",
    "Guard",
    "GuardSettings",
    "HookPoint",
    "SettingError",
    "active",
    "install",
]

GUARD_ENV = "AUXCHECK_GUARD"
VALUES_ENV = "AUXCHECK_GUARD_VALUES"
REPORT_ENV = "AUXCHECK_GUARD_REPORT"

Mode = Literal["warn", "raise"]
_MODES: tuple[Mode, ...] = ("warn", "raise")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")
_PENDING = 16
"""Outputs kept between publication, copy and consume; SGLang has at most two steps in flight."""

logger = logging.getLogger("auxcheck.guard")
_ACTIVE: Guard | None = None
_EXIT_HOOKED = False


class SettingError(ValueError):
    """An ``AUXCHECK_GUARD*`` variable holds a value the guard cannot use."""


@dataclass(frozen=True, slots=True)
class GuardSettings:
    """The guard's configuration, from the environment."""

    mode: Mode
    values: bool = False
    report: Path | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> GuardSettings | None:
        """Returns the settings ``environ`` asks for, or None when the guard is off.

        Raises SettingError naming the variable, the value and what it accepts.
        """
        raw = environ.get(GUARD_ENV, "")
        mode = raw.strip().lower()
        if not mode:
            return None
        if mode not in _MODES:
            raise SettingError(f"{GUARD_ENV}={raw!r} is not a guard mode; expected warn (log "
                               f"findings) or raise (raise GuardError), or unset it to "
                               f"switch the guard off")
        values_raw = environ.get(VALUES_ENV, "")
        values = values_raw.strip().lower()
        if values not in _TRUE + _FALSE:
            raise SettingError(f"{VALUES_ENV}={values_raw!r} is neither on nor off; expected "
                               f"1 to snapshot published values (one extra synchronous "
                               f"copy per output) or 0")
        report = environ.get(REPORT_ENV, "").strip()
        return cls("raise" if mode == "raise" else "warn", values in _TRUE,
                   Path(report) if report else None)


@dataclass(frozen=True, slots=True)
class HookPoint:
    """One place the guard hooks: the check it serves, the SGLang target and the hook type."""

    check: str
    target: str
    hook_type: Literal["AFTER", "AROUND"]
    handler: str
    values_only: bool = False


_PROCESSOR = ("sglang.srt.managers.scheduler_components.batch_result_processor."
              "SchedulerBatchResultProcessor")
_RUNNERS = "sglang.srt.model_executor.runner"
HOOKS: tuple[HookPoint, ...] = (
    HookPoint("capture", f"{_RUNNERS}.decode_cuda_graph_runner.DecodeCudaGraphRunner.capture",
              "AFTER", "after_capture"),
    HookPoint("capture", f"{_RUNNERS}.prefill_cuda_graph_runner.PrefillCudaGraphRunner.capture",
              "AFTER", "after_capture"),
    HookPoint("copy", "sglang.srt.managers.utils.GenerationBatchResult."
              "copy_auxiliary_output_to_cpu", "AROUND", "around_copy"),
    HookPoint("values", "sglang.srt.model_executor.model_runner.ModelRunner.sample",
              "AFTER", "after_sample", values_only=True),
    HookPoint("commits", f"{_PROCESSOR}._build_auxiliary_commits", "AFTER", "after_commits"),
    HookPoint("consume", f"{_PROCESSOR}.consume_auxiliary_output", "AROUND", "around_consume"),
)
"""Every hook the guard may register, in the order it registers them."""

_GRAPH_SHARED_OUTPUT = "sglang.srt.model_executor.graph_shared_output"
_GRAPH_POOL = "sglang.srt.model_executor.runner_utils.pool"

_CHECKS = {
    "capture": "CUDA-graph buffers and pool registered after capture",
    "copy": "aliasing at copy (AUX110/AUX111)",
    "values": "published values against the copy (AUX112)",
    "commits": "commits (AUX601)",
    "consume": "consume leaves commits and batch.reqs alone (AUX203)",
}


# ---------------------------------------------------------------- reporting


@dataclass(slots=True)
class _Tally:
    count: int = 0


class _Reporter:
    """Logs, counts, writes and (in raise mode) raises the guard's findings; thread-safe."""

    def __init__(self, settings: GuardSettings) -> None:
        self.mode = settings.mode
        self.path = settings.report
        self.tallies: dict[tuple[str, str], _Tally] = {}
        self.lock = threading.Lock()
        self.fd: int | None = None
        if self.path is not None:
            try:
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                logger.error("auxcheck guard: cannot open %s=%s (%s); findings are logged "
                             "only. Point it at a writable file.", REPORT_ENV, self.path,
                             exc.strerror or exc)

    def findings(self, found: Sequence[tuple[Finding, str]]) -> None:
        """Counts each (finding, output class); logs and writes the first and each 10**k-th."""
        for finding, owner in found:
            with self.lock:
                tally = self.tallies.setdefault((finding.code, owner), _Tally())
                tally.count += 1
                count = tally.count
            if count == 1:
                logger.warning("auxcheck guard: %s in %s (first of its kind in pid %d; later "
                               "ones are counted): %s", finding.code, owner, os.getpid(),
                               finding.to_text())
                self.write("finding", code=finding.code, title=finding.title,
                           output_class=owner, count=1, message=finding.message,
                           hint=finding.hint)
            elif _round(count):
                logger.warning("auxcheck guard: %s in %s seen %d times in pid %d",
                               finding.code, owner, count, os.getpid())
                self.write("count", code=finding.code, output_class=owner, count=count)

    def raise_for(self, found: Sequence[tuple[Finding, str]]) -> None:
        """Raises GuardError for ``found`` in raise mode; does nothing in warn mode."""
        if found and self.mode == "raise":
            raise GuardError([f for f, _ in found], [o for _, o in found])

    def counts(self) -> dict[tuple[str, str], int]:
        """Returns how many times each (rule, output class) was seen."""
        with self.lock:
            return {key: tally.count for key, tally in self.tallies.items()}

    def write(self, event: str, **fields: Any) -> None:
        """Appends one JSON line to the report file, when there is one."""
        if self.fd is None:
            return
        record = {"event": event, "pid": os.getpid(), "time": round(time.time(), 3),
                  "mode": self.mode, **fields}
        try:
            os.write(self.fd, (json.dumps(record, default=str) + "\n").encode())
        except OSError as exc:
            logger.error("auxcheck guard: writing %s failed (%s); the report stops here, "
                         "findings are still logged", self.path, exc.strerror or exc)
            self.fd = None

    def summary(self) -> None:
        """Logs and writes how often each (rule, output class) was seen in this process."""
        counts = self.counts()
        if not counts:
            return
        text = "; ".join(f"{code} in {owner}: {n}" for (code, owner), n in sorted(counts.items()))
        logger.warning("auxcheck guard summary for pid %d: %s", os.getpid(), text)
        self.write("summary", counts=[{"code": c, "output_class": o, "count": n}
                                      for (c, o), n in sorted(counts.items())])


def _round(count: int) -> bool:
    while count % 10 == 0 and count > 1:
        count //= 10
    return count == 1


# ---------------------------------------------------------------- probes


@dataclass(slots=True)
class _Copied:
    source: Any
    dest: Any
    owner: str
    number: int


@dataclass(slots=True, eq=False)
class _LeafProbe:
    """Stands in for one leaf output during one SGLang call; ``owner`` is its class's name."""

    guard: Guard
    leaf: Any
    owner: str
    found: list[tuple[Finding, str]] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class _CopyProbe(_LeafProbe):
    """Stands in for one leaf output during ``copy_to_host``: gives it a checking copy function."""

    copies: list[_Copied] = field(default_factory=list)
    calls: int = 0
    checked: dict[int, Any] = field(default_factory=dict)  # kept alive, so no id is reused

    def copy_to_host(self, copy_tensor: Callable[[Any], Any]) -> Any:
        """Calls the leaf's ``copy_to_host`` with a copy function that checks every tensor."""
        self.guard.check_held(self)
        return self.leaf.copy_to_host(self.guard.checking_copy(copy_tensor, self))


@dataclass(slots=True, eq=False)
class _ConsumeProbe(_LeafProbe):
    """Stands in for one host output during ``consume``: fingerprints what it was given."""

    def consume(self, batch: Any, commits: Any) -> Any:
        """Calls the leaf's ``consume`` and reports what it changed of batch and commits."""
        witness = self.guard.quietly("consume", _witness, batch, commits)
        value = self.leaf.consume(batch, commits)
        if witness is not None:
            found = self.guard.quietly("consume", witness.findings, self.leaf) or []
            self.found += [(f, self.owner) for f in found]
        return value


def _witness(batch: Any, commits: Any) -> Any:
    from auxcheck._runtime.consume import ConsumeWitness

    return ConsumeWitness.take(batch, commits, full=False)


_P = TypeVar("_P", bound=_LeafProbe)


def _probed(output: Any, composite: str,
            probe: Callable[[Any], _P]) -> tuple[Any, list[_P]]:
    """Returns what to pass SGLang instead of ``output``, and the probes inside it.

    A leaf becomes its probe; SGLang's composite (a frozen dataclass named ``composite``)
    becomes a copy of itself holding one probe per child, so its own code iterates them.
    """
    children = getattr(output, "outputs", None)
    if (type(output).__name__ == composite and dataclasses.is_dataclass(output)
            and type(children) is tuple):
        probes = [probe(child) for child in children]
        return dataclasses.replace(cast(Any, output), outputs=tuple(probes)), probes
    leaf = probe(output)
    return leaf, [leaf]


@dataclass(slots=True)
class _Snapshot:
    device: tuple[str, int]
    lo: int
    hi: int
    data: Any


@dataclass(slots=True, eq=False)
class _Publication:
    output: Any
    snapshots: list[_Snapshot]


@dataclass(slots=True, eq=False)
class _InFlight:
    publication: _Publication | None
    copies: list[_Copied]


# ---------------------------------------------------------------- the guard


class Guard:
    """The guard of one process: its registry of graph memory, its hooks and its reporter.

    ``segments`` replaces ``torch.cuda.memory_snapshot`` when the graph pool is registered.
    """

    def __init__(self, settings: GuardSettings, *,
                 segments: SegmentSource | None = None) -> None:
        self.settings = settings
        self.registry = StaticBufferRegistry()
        self.reporter = _Reporter(settings)
        self.segments = segments
        self.checks: dict[str, str | None] = {}
        self.broken: set[str] = set()
        self._published: OrderedDict[int, _Publication] = OrderedDict()
        self._in_flight: OrderedDict[int, _InFlight] = OrderedDict()
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
            self.quietly("values", self._snapshot, output)

    def _snapshot(self, output: Any) -> None:
        from auxcheck._runtime.walk import iter_tensors, unique_tensors

        snaps = []
        for _path, tensor in unique_tensors(list(iter_tensors(output))):
            snap = _snapshot_of(tensor)
            if snap is not None:
                snaps.append(snap)
        with self._tables:
            _keep(self._published, id(output), _Publication(output, snaps))

    def around_copy(self, original: Callable[..., Any], result: Any, *args: Any,
                    **kwargs: Any) -> Any:
        """Runs ``copy_auxiliary_output_to_cpu`` with the published output wrapped in probes."""
        logits: Any = getattr(result, "logits_output", None)
        output = getattr(logits, "auxiliary_device_output", None)
        if output is None or getattr(result, "auxiliary_host_output", None) is not None:
            return original(result, *args, **kwargs)
        wrapped = self.quietly("copy", self._copy_probes, output)
        if wrapped is None:
            return original(result, *args, **kwargs)
        stand_in, probes = wrapped
        logits.auxiliary_device_output = stand_in
        try:
            value = original(result, *args, **kwargs)
        finally:
            if getattr(logits, "auxiliary_device_output", None) is stand_in:
                logits.auxiliary_device_output = output
        found = [item for probe in probes for item in probe.found]
        if self.on("values"):
            self.quietly("values", self._in_flight_after, output, result, probes)
        self.report(found)
        return value

    def _copy_probes(self, output: Any) -> tuple[Any, list[_CopyProbe]]:
        return _probed(output, "CompositeDeviceAuxiliaryOutput",
                       lambda leaf: _CopyProbe(self, leaf, type_name(leaf)))

    def checking_copy(self, copy_tensor: Callable[[Any], Any],
                      probe: _CopyProbe) -> Callable[[Any], Any]:
        """Returns ``copy_tensor`` checking each tensor against the registry before copying it."""
        values = self.on("values")

        def copy(tensor: Any) -> Any:
            probe.calls += 1
            self.quietly("copy", self._check_tensor, tensor,
                         f"copy_tensor argument #{probe.calls}", probe)
            dest = copy_tensor(tensor)
            if values:
                probe.copies.append(_Copied(tensor, dest, probe.owner, probe.calls))
            return dest

        return copy

    def check_held(self, probe: _CopyProbe) -> None:
        """Checks the tensors the leaf output holds itself, before its ``copy_to_host`` runs."""
        self.quietly("copy", self._check_held, probe)

    def _check_held(self, probe: _CopyProbe) -> None:
        from auxcheck._runtime.walk import iter_tensors

        for path, tensor in iter_tensors(probe.leaf, max_depth=4):
            self._check_tensor(tensor, path, probe)

    def _check_tensor(self, tensor: Any, path: str, probe: _CopyProbe) -> None:
        torch = sys.modules.get("torch")
        if torch is None or not isinstance(tensor, torch.Tensor) or id(tensor) in probe.checked:
            return  # a tensor the output holds and copies is looked up once
        probe.checked[id(tensor)] = tensor
        finding = self.registry.finding(tensor, path=path)
        if finding is not None:
            probe.found.append((finding, probe.owner))

    def _in_flight_after(self, output: Any, result: Any, probes: list[_CopyProbe]) -> None:
        host = getattr(result, "auxiliary_host_output", None)
        if host is None:
            return
        copies = [c for probe in probes for c in probe.copies]
        with self._tables:
            publication = self._published.pop(id(output), None)
            if publication is None and self._published:  # re-composed since: the newest
                publication = self._published.popitem(last=True)[1]
            _keep(self._in_flight, id(host), _InFlight(publication, copies))

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

    def _consume_probes(self, output: Any) -> tuple[Any, list[_ConsumeProbe]]:
        return _probed(output, "CompositeHostAuxiliaryOutput",
                       lambda leaf: _ConsumeProbe(self, leaf, type_name(leaf)))

    def _value_findings(self, host: Any) -> list[tuple[Finding, str]]:
        with self._tables:
            flight = self._in_flight.pop(id(host), None)
        if flight is None or flight.publication is None:
            return []
        found = []
        for copied in flight.copies:
            finding = _changed(copied, flight.publication.snapshots)
            if finding is not None:
                found.append((finding, copied.owner))
        return found


def _argument(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, name: str) -> Any:
    """Returns argument ``name`` of a hooked call, passed at ``index`` or by keyword."""
    return args[index] if len(args) > index else kwargs.get(name)


def _replaced(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str,
              value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if len(args) > index:
        return (*args[:index], value, *args[index + 1:]), kwargs
    return args, {**kwargs, name: value}


def _commit_findings(batch: Any, commits: Any) -> list[Finding]:
    from auxcheck.validate import check_commits

    return list(check_commits(batch, commits))


def _keep(table: OrderedDict[int, Any], key: int, value: Any) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > _PENDING:
        table.popitem(last=False)


def _snapshot_of(tensor: Any) -> _Snapshot | None:
    """Returns the bytes ``tensor`` covers, copied to the host now (synchronously)."""
    import torch

    from auxcheck._runtime.byteranges import byte_range

    span = byte_range(tensor)
    if span is None:
        return None
    storage = tensor.untyped_storage()
    raw = torch.empty(0, dtype=torch.uint8, device=tensor.device)
    raw.set_(storage, span.lo - storage.data_ptr(), (span.hi - span.lo,), (1,))
    return _Snapshot(span.device, span.lo, span.hi, raw.to("cpu", copy=True))


def _changed(copied: _Copied, snapshots: Iterable[_Snapshot]) -> Finding | None:
    """Returns AUX112 when the host copy differs from the source's bytes at publication."""
    import torch

    from auxcheck._core.plugin_calls import shape_text
    from auxcheck._runtime.byteranges import byte_range
    from auxcheck._runtime.loop import same_bytes

    source = copied.source
    span = byte_range(source)
    if span is None:
        return None
    snap = next((s for s in snapshots if s.device == span.device and s.lo <= span.lo
                 and span.hi <= s.hi), None)
    if snap is None:
        return None
    raw = snap.data[span.lo - snap.lo:span.hi - snap.lo].clone()
    expected = torch.empty(0, dtype=source.dtype)
    expected.set_(raw.untyped_storage(), 0, tuple(source.shape), tuple(source.stride()))
    if same_bytes(copied.dest, expected):
        return None
    return Finding.of(
        "AUX112", f"copy_tensor argument #{copied.number} {shape_text(source)} changed between "
        "its publication (ModelRunner.sample) and the copy SGLang made of it",
        "expected published tensors to keep their values until copied", source)


# ---------------------------------------------------------------- installing


def active() -> Guard | None:
    """Returns the guard installed in this process, or None."""
    return _ACTIVE


def install(environ: Mapping[str, str] | None = None) -> Guard | None:
    """Reads the settings, verifies the hook targets and registers the hooks; returns the guard.

    Returns None, after logging why, when the guard is off or cannot run here (a bad
    setting, no SGLang, no HookRegistry). Never raises.
    """
    global _ACTIVE
    try:
        settings = GuardSettings.from_env(os.environ if environ is None else environ)
    except SettingError as exc:
        logger.error("auxcheck guard is off: %s", exc)
        return None
    if settings is None:
        return None
    try:
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType
    except ImportError as exc:
        logger.error("auxcheck guard is off: this SGLang has no plugin hook registry "
                     "(sglang.srt.plugins.hook_registry: %s); it needs an SGLang with "
                     "sglang.srt.plugins (0.5.19 or later)",
                     exc)
        return None
    guard = Guard(settings)
    problems = _target_problems(settings)
    for point in HOOKS:
        if point.values_only and not settings.values:
            continue
        problem = problems.get(point.target)
        if problem is not None:
            guard.checks.setdefault(point.check, problem)
            continue
        guard.checks[point.check] = None  # one hooked target is enough (either graph runner)
        HookRegistry.register(point.target, getattr(guard, point.handler),
                              HookType[point.hook_type])
    _settle_values(guard, settings)
    _ACTIVE = guard
    _log_start(guard, problems)
    _exit_summary()
    return guard


def _settle_values(guard: Guard, settings: GuardSettings) -> None:
    if not settings.values:
        guard.checks["values"] = f"{VALUES_ENV} is not set to 1"
        return
    for needed in ("copy", "consume"):
        if guard.checks.get(needed) is not None and guard.checks.get("values") is None:
            guard.checks["values"] = f"it needs the {needed} check, which is off"


def _target_problems(settings: GuardSettings) -> dict[str, str]:
    """Returns, per hook target the running SGLang lacks, why (empty when all resolve)."""
    from auxcheck._releases.index import ReleaseIndex
    from auxcheck._releases.signature_check import hook_target_problem
    from auxcheck.releases import Release, ReleaseError

    root = _sglang_root()
    if root is None:
        return {p.target: "sglang is not importable here" for p in HOOKS}
    try:
        index = ReleaseIndex(Release.from_source(root))
    except (ReleaseError, OSError) as exc:
        return {p.target: f"the running sglang's source cannot be read ({exc})" for p in HOOKS}
    problems = {}
    for point in HOOKS:
        if point.values_only and not settings.values:
            continue
        problem = hook_target_problem(point.target, point.hook_type, index)
        if problem is not None:
            problems[point.target] = f"hook target {point.target} not found: {problem}"
            continue
        problem = _signature_problem(point, index)
        if problem is not None:
            problems[point.target] = (f"hook on {point.target} cannot take the calls "
                                      f"HookRegistry makes: {problem}")
    return problems


def _signature_problem(point: HookPoint, index: Any) -> str | None:
    """Returns why the guard's own handler cannot take the calls made on ``point``'s target.

    The rule ``auxcheck check`` applies to a plugin's hooks (AUX703), on the running
    SGLang's source; a target whose signature cannot be read is not judged.
    """
    from auxcheck._releases.definitions import callee
    from auxcheck._releases.signature_check import hook_signature_problem, target_signature

    found = index.resolve(point.target)
    target = callee(index, found.where) if found.ok and found.certain else None
    signature = target_signature(target, point.hook_type) if target is not None else None
    if signature is None or isinstance(signature, str):
        return None
    handler = inspect.signature(getattr(Guard, point.handler))
    bound = handler.replace(parameters=list(handler.parameters.values())[1:])  # drop self
    return hook_signature_problem(signature, bound, point.hook_type)


def _sglang_root() -> Path | None:
    """Returns the folder holding the running ``sglang`` package, without importing it."""
    module = sys.modules.get("sglang")
    paths = list(getattr(module, "__path__", None) or [])
    if not paths:
        try:
            spec = importlib.util.find_spec("sglang")
        except (ImportError, ValueError):
            spec = None
        paths = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(paths[0]).parent if paths else None


def _log_start(guard: Guard, problems: Mapping[str, str]) -> None:
    on = [_CHECKS[c] for c, why in guard.checks.items() if why is None]
    off = [f"{_CHECKS[c]}: {why}" for c, why in guard.checks.items() if why is not None]
    missing = [why for why in problems.values() if why not in guard.checks.values()]
    logger.warning("auxcheck guard on (%s) in pid %d: checks on: %s%s%s", guard.settings.mode,
                   os.getpid(), "; ".join(on) or "none",
                   "".join(f"; OFF {text}" for text in off),
                   "".join(f"; not hooked: {text}" for text in missing))
    guard.reporter.write("start", checks={c: why or "on" for c, why in guard.checks.items()},
                         values=guard.settings.values)


def _exit_summary() -> None:
    global _EXIT_HOOKED
    if not _EXIT_HOOKED:
        atexit.register(_summary_at_exit)
        _EXIT_HOOKED = True


def _summary_at_exit() -> None:
    guard = _ACTIVE
    if guard is not None:
        guard.reporter.summary()
