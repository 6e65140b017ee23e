"""SGLang's step loop on CPU: the one place a published output is judged, whoever published it.

One step, as SGLang 0.5.23's overlap loop runs it (``event_loop_overlap`` in
``managers/scheduler.py``; copy in ``GenerationBatchResult.copy_auxiliary_output_to_cpu``,
``managers/utils.py``; consume in ``batch_result_processor.py``):

1. the scheduler forms batch N; forward N replays the decode CUDA graph, rewriting its
   persistent outputs (``next_token_logits``, ``hidden_states``); observers run on
   ``[:n]`` views of them (a prefill step runs eagerly, on fresh tensors);
2. right after forward N, ``device_output.copy_to_host(copy_tensor)``: the copy is
   issued on a copy stream that forward N+1 never waits for;
3. forward N+1 runs (rewriting the graph outputs, running the observers again);
4. step N is processed: the copy reads its bytes (worst case: only now), commits are
   built from the ``batch.copy()`` taken when N was queued, and the host output is
   consumed exactly once.

A published tensor whose bytes changed between publication and the copy is AUX112.
Composites are judged per leaf, as SGLang's composite copies and consumes each child
on its own (the composite's own behaviour is the properties' job). torch is imported
by the functions that need it, never at import time.
"""

from __future__ import annotations

import copy as copy_module
import inspect
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from auxcheck._core.plugin_calls import (
    MISSING,
    announce,
    attempt,
    kind_name,
    lookup,
    passes_through,
    phase_code,
    shape_text,
    summarize,
)
from auxcheck._runtime.consume import ConsumeWitness
from auxcheck._runtime.methods import method_findings
from auxcheck._runtime.scheduler import FakeBatch, SchedulerModel, describe_events
from auxcheck._runtime.walk import TensorRef, dense_parts, iter_tensors, unique_tensors
from auxcheck.protocols import CommittedTokens, append_auxiliary_output
from auxcheck.report import Finding, Report, describe

if TYPE_CHECKING:
    from auxcheck.aliasing import StaticBufferRegistry

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "MAX_INFERRED_BATCH",
    "BatchSize",
    "Forward",
    "GraphOutputs",
    "HookFailed",
    "OutputSource",
    "Producer",
    "broken_checker",
    "check_observers",
    "check_source",
    "consume_findings",
    "covered_bytes",
    "covered_view",
    "forward_producer",
    "has_no_data",
    "host_copy",
    "infer_batch_sizes",
    "run_loop",
    "sample_output",
    "sampling_producer",
    "source_of",
]

SourceKind = Literal["instance", "factory", "batch-factory"]
DEFAULT_BATCH_SIZE = 3
"""The batch size assumed when neither a declaration nor the output's tensors tell."""
_OBSERVER_SIZES = (DEFAULT_BATCH_SIZE, 4, 2, 3)
_MAX_CANDIDATES = 3


# ---------------------------------------------------------------- what observers see


@dataclass(slots=True)
class FakeForwardMode:
    """``ForwardMode``: decode (a CUDA-graph replay) or extend (a prefill)."""

    name: str

    def is_decode(self) -> bool:
        """Returns True for a decode step."""
        return self.name == "DECODE"

    def is_extend(self) -> bool:
        """Returns True for a prefill (extend) step."""
        return self.name == "EXTEND"


@dataclass(slots=True)
class FakeSamplingInfo:
    """The ``SamplingBatchInfo`` fields observers read, one row per request."""

    temperatures: Any
    top_ps: Any
    top_ks: Any
    min_ps: Any
    vocab_size: int
    is_all_greedy: bool = False
    need_min_p_sampling: bool = False
    device: str = "cpu"


@dataclass(slots=True)
class FakeLogitsOutput:
    """``LogitsProcessorOutput``: views of the graph's persistent outputs on decode steps."""

    next_token_logits: Any
    hidden_states: Any
    auxiliary_device_output: Any = None
    customized_info: Any = None


@dataclass(slots=True)
class FakeForwardBatch:
    """``ForwardBatch``: what ``after_forward`` reads besides the logits output."""

    batch_size: int
    forward_mode: FakeForwardMode
    seq_lens: Any
    positions: Any
    req_pool_indices: Any
    sampling_info: FakeSamplingInfo


@dataclass(frozen=True, slots=True)
class Forward:
    """One forward pass: the live batch, and what the model runner hands the observers."""

    step: int
    batch: FakeBatch
    forward_batch: FakeForwardBatch
    logits_output: FakeLogitsOutput
    can_run_graph: bool


class GraphOutputs:
    """The persistent outputs a decode CUDA graph replays into, rewritten on every replay."""

    def __init__(self, *, max_rows: int, vocab: int = 32, hidden: int = 16, seed: int = 0) -> None:
        import torch

        self._generator = torch.Generator().manual_seed(seed)
        self.logits = torch.empty(max(max_rows, 1), vocab)
        self.hidden = torch.empty(max(max_rows, 1), hidden)
        self.replay()

    def replay(self) -> None:
        """Rewrites every persistent output, as the next replay of the graph does."""
        self.logits.normal_(generator=self._generator)
        self.hidden.normal_(generator=self._generator)

    def registry(self) -> StaticBufferRegistry:
        """Returns a registry holding the graph's outputs (AUX110 when a device output keeps them)."""
        from auxcheck.aliasing import StaticBufferRegistry

        registry = StaticBufferRegistry()
        registry.register(self.logits, name="CUDA-graph output next_token_logits")
        registry.register(self.hidden, name="CUDA-graph output hidden_states")
        return registry

    def forward(self, step: int, batch: FakeBatch) -> Forward:
        """Returns forward ``step`` of ``batch``: a replay (views) after the first, eager prefill."""
        import torch

        n = len(batch.reqs)
        decode = step > 0
        if decode:
            self.replay()
            logits, hidden = self.logits[:n], self.hidden[:n]
        else:
            logits = torch.randn(n, self.logits.shape[1], generator=self._generator)
            hidden = torch.randn(n, self.hidden.shape[1], generator=self._generator)
        info = FakeSamplingInfo(torch.full((n, 1), 0.7), torch.full((n,), 0.9),
                                torch.full((n,), 20, dtype=torch.int32), torch.zeros(n),
                                int(logits.shape[1]))
        lens = torch.tensor([len(r.origin_input_ids) + len(r.output_ids) for r in batch.reqs],
                            dtype=torch.int64)
        forward_batch = FakeForwardBatch(n, FakeForwardMode("DECODE" if decode else "EXTEND"),
                                         lens, lens - 1, torch.arange(n), info)
        return Forward(step, batch, forward_batch, FakeLogitsOutput(logits, hidden), decode)


# ---------------------------------------------------------------- copying


@dataclass(slots=True)
class _Copy:
    number: int
    source: Any
    dest: Any
    snapshot: Any


@dataclass(slots=True, eq=False)
class DeferredCopy:
    """The ``copy_tensor`` SGLang passes (``_async_d2h``), on a copy stream nobody waits for.

    Each call returns a fresh host tensor holding the value at the call, and remembers
    it; :meth:`complete` then reads the device bytes again, as a copy that only ran
    after the next forward would. Hashable by identity, like the function SGLang passes.
    The checker's own memory is the bytes the tensor covers, twice (the host copy and a
    snapshot), whatever its logical size: an expanded view is copied as the bytes under
    it, never materialised. A meta or fake tensor copies to a tensor like it (no data).
    """

    copies: list[_Copy] = field(default_factory=list)
    late: list[Any] = field(default_factory=list)
    closed: bool = False

    def __call__(self, tensor: Any) -> Any:
        import torch

        if not issubclass(type(tensor), torch.Tensor):
            raise TypeError(f"copy_tensor expects a tensor, got {kind_name(tensor)}")
        if self.closed:
            self.late.append(tensor)
        dest = host_copy(tensor)
        self.copies.append(_Copy(len(self.copies) + 1, tensor, dest, covered_bytes(tensor)))
        return dest

    def complete(self) -> list[_Copy]:
        """Reads every source again; returns the copies whose bytes changed (their host tensor updated)."""
        changed = []
        for item in self.copies:
            if _same_as(item.source, item.snapshot):
                continue
            changed.append(item)
            attempt(_update, item.dest, item.source)  # what a copy that ran only now delivers
        return changed


def _update(dest: Any, source: Any) -> None:
    if _overlapping(source):
        covered_view(dest).copy_(covered_view(source))
    else:
        dest.copy_(source)


def _span(tensor: Any) -> int | None:
    """Returns how many storage elements ``tensor`` covers, first to last; None without strides."""
    try:
        if tensor.layout != _strided_layout() or tensor.is_nested:
            return None
        if tensor.numel() == 0:
            return 0
        return 1 + sum((int(n) - 1) * int(s) for n, s in zip(tensor.shape, tensor.stride()))
    except BaseException as exc:  # a tensor subclass that will not tell
        if passes_through(exc):
            raise
        return None


def _strided_layout() -> Any:
    import torch

    return torch.strided


def _overlapping(tensor: Any) -> bool:
    """Returns True when elements of ``tensor`` share memory (an expanded view)."""
    span = _span(tensor)
    return span is not None and 0 < span < tensor.numel()


def covered_view(tensor: Any) -> Any:
    """Returns the elements ``tensor`` covers, flat: a view of its storage when that is cheaper.

    An expanded view's storage is smaller than its logical size, so the storage is
    what the checker copies and compares; a dense tensor is its elements.
    """
    detached = tensor.detach()
    span = _span(tensor)
    if span is not None and 0 < span < tensor.numel():
        return detached.as_strided((span,), (1,), tensor.storage_offset())
    return detached.reshape(-1)


def covered_bytes(tensor: Any) -> Any:
    """Returns a host copy of what :func:`covered_view` shows, or None for a tensor without data."""
    if has_no_data(tensor):
        return None
    try:
        return covered_view(tensor).to("cpu", copy=True)
    except BaseException as exc:  # a tensor with no readable bytes: nothing to compare
        if passes_through(exc):
            raise
        return None


def host_copy(tensor: Any) -> Any:
    """Returns a host tensor equal to ``tensor``, as SGLang's copy gives, costing its covered bytes.

    An expanded view comes back as the same view of a host copy of its bytes; a meta
    or fake tensor as a tensor like it, with no data to compare.
    """
    if has_no_data(tensor):
        return tensor.detach().clone()
    if not _overlapping(tensor):
        return tensor.detach().to("cpu", copy=True)
    flat = covered_view(tensor).to("cpu", copy=True)
    return flat.as_strided(tuple(tensor.shape), tuple(tensor.stride()), 0)


def has_no_data(tensor: Any) -> bool:
    """Returns True for a meta or fake tensor: shapes and dtypes, no bytes to copy or compare."""
    import sys

    if tensor.device.type == "meta":
        return True
    fake = sys.modules.get("torch._subclasses.fake_tensor")
    return fake is not None and issubclass(type(tensor), fake.FakeTensor)


def _clone(tensor: Any) -> Any:
    return covered_bytes(tensor)


def _same_as(tensor: Any, snapshot: Any) -> bool:
    """Returns True when ``tensor`` still holds what :func:`covered_bytes` took of it."""
    if snapshot is None:
        return True
    view = attempt(covered_view, tensor)
    return view.error is not None or same_bytes(view.value, snapshot)


def same_bytes(a: Any, b: Any) -> bool:
    """Returns True when two tensors hold the same bytes (NaN included); unreadable ones count as same."""
    import torch

    if b is None:
        return True
    try:
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        left, right = _raw_bytes(a), _raw_bytes(b)
        return bool(torch.equal(left.to(right.device), right))
    except BaseException as exc:  # sparse, nested or meta tensors: not compared
        if passes_through(exc):
            raise
        return True


def _raw_bytes(tensor: Any) -> Any:
    """Returns ``tensor``'s elements as flat bytes; a quantized one as its integer values.

    Viewing a quantized tensor as bytes crashes the process (torch 2.13): its stored
    integers are what a copy must keep.
    """
    import torch

    plain = tensor.int_repr() if tensor.is_quantized else tensor
    return plain.detach().contiguous().reshape(-1).view(torch.uint8)


# ---------------------------------------------------------------- one published output


@dataclass(slots=True)
class _Leaf:
    """One leaf output in flight: its host output and what its copy has to deliver."""

    where: str
    leaf: Any
    device: list[TensorRef]
    copier: DeferredCopy
    host: Any = None
    held: list[tuple[str, Any, Any]] = field(default_factory=list)


def leaves(output: Any, where: str = "") -> list[tuple[str, Any]]:
    """Returns the leaf outputs of ``output`` in order: a composite's children, flattened.

    A composite is auxcheck's, SGLang's or any class named ``CompositeDeviceAuxiliaryOutput``
    whose ``outputs`` is a tuple; the same child appended twice appears twice. A composite
    inside itself, or nested deeper than SGLang ever nests, counts as a leaf. Past
    :data:`_MAX_LEAVES` leaves (composites that hold the same composites again and again
    expand exponentially) the rest is one :class:`_TooManyLeaves`, an AUX301 finding.
    """
    found: list[tuple[str, Any]] = []
    if not _leaves(output, where, (), found):
        found[_MAX_LEAVES:] = [(where, _TooManyLeaves(output))]
    return found


_MAX_NESTING = 16
_MAX_LEAVES = 1024
"""The most leaves a composite is expanded into (SGLang composes a few outputs per step)."""


def _leaves(output: Any, where: str, inside: tuple[int, ...],
            found: list[tuple[str, Any]]) -> bool:
    """Appends the leaves of ``output`` to ``found``; returns False once there are too many."""
    if (kind_name(output) == "CompositeDeviceAuxiliaryOutput" and id(output) not in inside
            and len(inside) < _MAX_NESTING):
        children = lookup(output, "outputs").value
        if issubclass(type(children), tuple):
            return all(_leaves(child, f"{where}.outputs[{i}]", (*inside, id(output)), found)
                       for i, child in enumerate(tuple.__iter__(children)))
    found.append((where, output))
    return len(found) <= _MAX_LEAVES


@dataclass(frozen=True, slots=True)
class _TooManyLeaves:
    """Stands for the leaves of ``output`` past the first :data:`_MAX_LEAVES`: not checked."""

    output: Any

    def finding(self, at: str) -> Finding:
        """Returns the AUX301 finding: the composite expands to too many leaves to check."""
        return Finding.of(
            "AUX301", f"the composite expands to more than {_MAX_LEAVES} leaf outputs {at} "
            "(composites nested in composites, the same ones held again and again, expand "
            f"exponentially); auxcheck checked the first {_MAX_LEAVES} only",
            "expected a flat composite of the outputs of one step, as append_auxiliary_output "
            "builds it (SGLang never nests composites)", self.output)


class _HostOnly:
    """Publishes a host output as it is: lets a lone host output run through the loop."""

    def __init__(self, host: Any) -> None:
        self.host = host

    def copy_to_host(self, copy_tensor: Any) -> Any:
        return self.host


def _publish(output: Any, registries: Sequence[StaticBufferRegistry],
             at: str) -> tuple[list[_Leaf], list[Finding]]:
    """Copies every leaf of ``output`` as SGLang does; returns them and the copy-time findings."""
    published: list[_Leaf] = []
    findings: list[Finding] = []
    for where, leaf in leaves(output):
        if type(leaf) is _TooManyLeaves:
            findings.append(leaf.finding(at))
            continue
        item = _Leaf(where, leaf, unique_tensors(list(iter_tensors(leaf))), DeferredCopy())
        findings += _copy_leaf(item, at)
        passed = [(f"copy_tensor argument #{c.number}", c.source) for c in item.copier.copies]
        findings += _duplicate_findings(leaf, passed, at)
        findings += _kept_findings(item, passed, at)
        refs = dense_parts(unique_tensors(item.device + passed))
        for registry in registries:
            findings += [_located(f, where, at) for f in registry.findings(refs)]
        published.append(item)
    return published, findings


def _copy_leaf(item: _Leaf, at: str) -> list[Finding]:
    """Calls ``copy_to_host``; sets ``item.host`` when it returned a usable host output."""
    leaf = item.leaf
    copy_to_host, shape = method_findings(leaf, "copy_to_host", ["copy_tensor"],
                                          missing="AUX101", arity="AUX102")
    if copy_to_host is None:
        return [_located(f, item.where, at) for f in shape]
    announce("AUX103", "`copy_to_host` of {}", leaf)
    outcome = attempt(copy_to_host, item.copier)
    item.copier.closed = True
    if outcome.error is not None:
        return [Finding.of("AUX103", f"copy_to_host{_where(item.where)} raised "
                           f"{kind_name(outcome.error)} {at}", "expected a host output",
                           leaf, detail=outcome.detail)]
    host = outcome.value
    announce("AUX103", "looking up `consume` on the host output of {}", leaf)
    consume = lookup(host, "consume")
    usable = host is not None and consume.error is None and callable(consume.value)
    if usable or (type(leaf) is _HostOnly and host is not None):
        item.host = host
        return []
    seen = "None" if host is None else f"{describe(host)} with no callable `consume`"
    return [Finding.of("AUX103", f"copy_to_host{_where(item.where)} returned {seen} {at}",
                       "expected a host output with consume(batch, commits)", leaf,
                       detail=consume.detail)]


def _duplicate_findings(leaf: Any, passed: list[TensorRef], at: str) -> list[Finding]:
    """Returns AUX104 for each later argument of one copy sharing bytes with an earlier one."""
    from auxcheck._runtime.sharing import sharing_indices

    earliest: dict[int, int] = {}
    for later, earlier in sharing_indices(passed, passed):
        if earlier < later:
            earliest.setdefault(later, earlier)
    return [
        Finding.of("AUX104", f"{passed[i][0]} {shape_text(passed[i][1])} shares bytes with "
                   f"{passed[j][0]} {at}", "expected each distinct tensor to be copied once",
                   leaf)
        for i, j in sorted(earliest.items())
    ]


def _kept_findings(item: _Leaf, passed: list[TensorRef], at: str) -> list[Finding]:
    """Returns AUX105 for host tensors it also passed to copy_tensor, AUX106 for device publication."""
    from auxcheck._runtime.sharing import sharing_indices

    if item.host is None or type(item.leaf) is _HostOnly:
        return []
    fresh = {id(c.dest) for c in item.copier.copies}
    cut: list[str] = []
    kept = [ref for ref in unique_tensors(list(iter_tensors(item.host, cut=cut)))
            if id(ref[1]) not in fresh]
    findings: list[Finding] = []
    if cut:
        findings.append(Finding.of(
            "AUX105", f"auxcheck could not walk the whole host output {at}: {cut[0]}, so a "
            "device tensor kept past that point would go unseen", "expected a host output "
            "auxcheck can walk: keep tensors within a few levels and a few thousand objects",
            item.host))
    bypassed = {i for i, _ in sharing_indices(kept, passed)}
    for i in sorted(bypassed):
        path, tensor = kept[i]
        findings.append(Finding.of(
            "AUX105", f"host output {path} {shape_text(tensor)} shares bytes with a tensor it "
            f"passed to copy_tensor {at}", "expected only tensors that copy_tensor returned",
            item.host))
    published = sorted({i for i, _ in sharing_indices(kept, item.device)} - bypassed)
    for i in published:
        path, tensor = kept[i]
        item.held.append((path, tensor, _clone(tensor)))
    if published:
        paths = ", ".join(kept[i][0] for i in published[:3])
        findings.append(Finding.of(
            "AUX106", f"the host output keeps device tensors ({paths}) without copying them "
            f"{at}", "expected the plugin to order their transfer itself (device publication)",
            item.host))
    return findings


def _where(where: str) -> str:
    return f" of child {where}" if where else ""


def _located(finding: Finding, where: str, at: str) -> Finding:
    if not where and not at:
        return finding
    seen, sep, expected = finding.message.partition("; ")
    message = f"{seen}{_where(where)} {at}".rstrip() + (f"{sep}{expected}" if sep else "")
    return Finding(finding.code, message, finding.obj, finding.hint, finding.location,
                   finding.detail)


# ---------------------------------------------------------------- processing a step


def _registered(tensor: Any, registries: Sequence[StaticBufferRegistry]) -> bool:
    for registry in registries:
        try:
            if registry.find_overlaps(tensor):
                return True
        except Exception:  # noqa: BLE001, S112 - a tensor without bytes to compare
            continue
    return False


def _changed_findings(item: _Leaf, registries: Sequence[StaticBufferRegistry],
                      at: str) -> list[Finding]:
    """Returns AUX112 for each published tensor whose bytes changed before the copy read them.

    Tensors in registered graph memory are AUX110/AUX111's: one finding per cause.
    """
    findings = []
    names = {id(t): path for path, t in item.device}
    for changed in item.copier.complete():
        if _registered(changed.source, registries):
            continue
        name = names.get(id(changed.source), f"copy_tensor argument #{changed.number}")
        findings.append(Finding.of(
            "AUX112", f"{name}{_where(item.where)} {shape_text(changed.source)} changed between "
            f"its publication {at} and the copy, which ran after the next step's forward",
            "expected published tensors to keep their values until copied", item.leaf))
    for path, tensor, snapshot in item.held:
        if not _same_as(tensor, snapshot) and not _registered(tensor, registries):
            findings.append(Finding.of(
                "AUX112", f"device tensor {path} kept by the host output{_where(item.where)} "
                f"{shape_text(tensor)} changed after its publication {at}",
                "expected published tensors to keep their values until consumed", item.leaf))
    return findings


def consume_findings(host: Any, batch: Any, commits: list[CommittedTokens | None],
                     at: str) -> list[Finding]:
    """Calls ``host.consume(batch, commits)`` once, as SGLang does; returns AUX201-204 findings.

    Whatever ``consume`` changed in ``commits``, ``batch.reqs`` or the requests' committed
    outputs is reported (AUX203) and put back, so siblings see what SGLang would pass.
    """
    consume, shape = method_findings(host, "consume", ["batch", "commits"],
                                     missing="AUX201", arity="AUX201")
    if consume is None:
        return shape
    witness = ConsumeWitness.take(batch, commits)
    announce("AUX202", "`consume` of {}", host)
    outcome = attempt(consume, batch, commits)
    announce("AUX203", "comparing what `consume` of {} left in the batch", host)
    findings = []
    if outcome.error is not None:
        findings.append(Finding.of("AUX202", f"consume raised {kind_name(outcome.error)} "
                                   f"{at}", "expected it to handle the commits SGLang passes",
                                   host, detail=outcome.detail))
    findings += witness.findings(host, at)
    witness.restore()
    if outcome.error is None and outcome.value is not None:
        findings.append(Finding.of("AUX204", f"consume returned {describe(outcome.value)} {at}",
                                   "expected None", host))
    return findings


def _process(published: list[_Leaf], batch: FakeBatch, commits: list[CommittedTokens | None],
             registries: Sequence[StaticBufferRegistry], at: str) -> list[Finding]:
    """Completes each leaf's copy, then consumes its host output once (in leaf order)."""
    findings: list[Finding] = []
    for item in published:
        findings += _changed_findings(item, registries, at)
    for item in published:
        if item.host is None:
            continue
        found = consume_findings(item.host, batch, commits, at)
        findings += [_located(f, item.where, "") for f in found]
        if item.copier.late:
            findings.append(Finding.of(
                "AUX105", f"the host output{_where(item.where)} called copy_tensor "
                f"{len(item.copier.late)} time(s) after copy_to_host returned {at}, so it kept "
                "device tensors to copy later", "expected every copy made inside copy_to_host",
                item.host))
    return findings


# ---------------------------------------------------------------- the loop


class HookFailed(Exception):
    """A producer (an observer hook, a factory) failed; carries the finding that says so."""

    def __init__(self, finding: Finding) -> None:
        self.finding = finding
        super().__init__(finding.message)


Producer = Callable[[Forward], Any]
"""Returns the device output published in one forward (None for none); raises HookFailed."""


@dataclass(frozen=True, slots=True)
class BatchSize:
    """The batch size each step uses, and how it was known (named in the findings it affects)."""

    sizes: tuple[int, ...]
    how: str = ""

    def at(self, step: int) -> int:
        """Returns the batch size of ``step``."""
        return self.sizes[step % len(self.sizes)]


def run_loop(produce: Producer, *, size: BatchSize, steps: int,
             static: StaticBufferRegistry | None = None, overlap: bool = True,
             seed: int = 0) -> list[Finding]:
    """Runs ``steps`` steps of SGLang's loop with ``produce`` publishing; returns the findings.

    Each code is reported from the first step that shows it. ``overlap=False`` runs the
    non-overlap loop (the copy completes before the next forward).
    """
    model = SchedulerModel(seed=seed)
    graph = GraphOutputs(max_rows=max(size.sizes), seed=seed)
    registries = [r for r in (static, graph.registry()) if r is not None]
    queue: deque[tuple[int, FakeBatch, list[_Leaf]]] = deque()
    found: dict[str, list[Finding]] = {}
    first: dict[str, int] = {}

    def keep(findings: Iterable[Finding], step: int) -> None:
        for finding in findings:
            if first.setdefault(finding.code, step) == step:
                found.setdefault(finding.code, []).append(finding)

    def process() -> None:
        step, batch, published = queue.popleft()
        commits = model.commit(batch)
        events = describe_events(model.events[-1].values())
        at = f"at step {step + 1} ({len(batch.reqs)} requests: {events})"
        keep(_process(published, batch, commits, registries, at), step)

    live = FakeBatch()
    phase_code("")
    try:
        for step in range(steps):
            live.reqs = model.batch(size.at(step)).reqs  # the running batch persists; rebound
            forward = graph.forward(step, live)
            at = f"at step {step + 1}"
            try:
                output = produce(forward)
            except HookFailed as failed:
                keep([_located(failed.finding, "", at)], step)
                break
            published: list[_Leaf] = []
            if output is not None:
                published, copied = _publish(output, registries, at)
                keep(copied, step)
            queue.append((step, FakeBatch(list(live.reqs)), published))
            if not overlap or len(queue) > 1:
                process()
        graph.replay()  # the forward that follows the last step
        while queue:
            process()
    except BaseException as exc:  # what a plugin left behind broke the checker
        if passes_through(exc):
            raise
        keep([broken_checker(exc, produce)], steps)
    return [f for code in sorted(found) for f in found[code]]


_PHASE_DEFAULT = "AUX103"


def broken_checker(exc: BaseException, obj: Any, default: str = _PHASE_DEFAULT) -> Finding:
    """Returns the finding for an error the checker met while judging what plugin code left.

    It is reported under the rule of the plugin code that ran last (a hostile value it
    returned, a request it rebound, a tensor subclass whose operations raise), with the
    traceback, so neither the plugin's nor the checker's error is lost.
    """
    code = phase_code(default)
    return Finding.of(code, f"auxcheck could not finish judging the output: checking what "
                      f"plugin code returned raised {kind_name(exc)}",
                      "expected plain values that behave like their types (no hostile "
                      "__eq__, __len__, __iter__, properties or tensor subclasses)", obj,
                      detail=summarize(exc, frames=5))


# ---------------------------------------------------------------- device outputs


@dataclass(frozen=True, slots=True)
class OutputSource:
    """A device-output value: an instance, a zero-argument factory, or a factory taking the batch."""

    kind: SourceKind
    value: Any


def sample_output(source: OutputSource, batch_size: int | None = None) -> Any:
    """Returns one output of ``source``: the instance, or what its factory returns (None if it raises).

    A factory taking the batch gets a scheduler batch of ``batch_size`` requests
    (default :data:`DEFAULT_BATCH_SIZE`).
    """
    from auxcheck._runtime.scheduler import SchedulerModel

    if source.kind == "instance":
        return source.value
    args = () if source.kind == "factory" else (
        SchedulerModel().batch(batch_size or DEFAULT_BATCH_SIZE),)
    return attempt(source.value, *args).value


def source_of(value: Any) -> OutputSource:
    """Returns how ``value`` yields device outputs.

    A class, or a callable without ``copy_to_host``, is a factory: called with no
    argument when it can be, else given each step's batch when it takes exactly one
    argument. Anything else is an instance.
    """
    is_class = issubclass(type(value), type)
    if not is_class and (lookup(value, "copy_to_host").value is not MISSING
                         or not callable(value)):
        return OutputSource("instance", value)
    found = attempt(inspect.signature, value)
    if found.error is not None or not isinstance(found.value, inspect.Signature):
        return OutputSource("factory", value)
    signature = found.value
    for kind, args in (("factory", ()), ("batch-factory", (object(),))):
        if attempt(signature.bind, *args).error is not None:
            continue
        return OutputSource(kind, value)  # type: ignore[arg-type]
    return OutputSource("instance", value)


def infer_batch_sizes(output: Any) -> list[BatchSize]:
    """Returns the likely batch sizes of ``output``, best first, each saying what it came from.

    A size counts for every tensor having it as a dimension (the batch dimension is
    usually shared by all of them), then for tensors leading with it; smaller sizes
    win ties. An output without tensors is assumed to be built for 3 requests.
    """
    score: dict[int, list[Any]] = {}
    for path, tensor in unique_tensors(list(iter_tensors(output))):
        shape = attempt(lambda t=tensor: [int(n) for n in t.shape])
        if shape.error is not None:  # a nested tensor has no single shape
            continue
        dims: list[int] = shape.value
        for n in set(dims):
            if n < 1 or n > MAX_INFERRED_BATCH:
                continue
            entry = score.setdefault(n, [0, 0, f"{path} {shape_text(tensor)}"])
            entry[0] += 1
            entry[1] += dims[0] == n
    ranked = sorted(score.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
    if not ranked:
        return [BatchSize((DEFAULT_BATCH_SIZE,), f"assumed a batch of {DEFAULT_BATCH_SIZE} requests (the output holds no tensor to "
                                "tell); declare auxcheck_batch_size (or --batch-size) to set it")]
    return [BatchSize((n, ), f"inferred a batch of {n} requests from {info[2]}; declare "
                             "auxcheck_batch_size (or --batch-size) to set it")
            for n, info in ranked[:_MAX_CANDIDATES]]


_BATCH_CODES = frozenset({"AUX202", "AUX203"})
MAX_INFERRED_BATCH = 4096
"""The largest batch size inferred from a tensor's shape (SGLang runs fewer requests than this)."""


def check_source(source: OutputSource, *, batch_size: int | None = None,
                 static: StaticBufferRegistry | None = None, steps: int = 3,
                 overlap: bool = True, seed: int = 0) -> Report:
    """Returns the findings of the outputs ``source`` yields, run through SGLang's loop.

    An instance is one step; factories run ``steps`` steps, a fresh output each. The
    batch is known for a factory taking it, declared by ``batch_size``, or inferred:
    then up to three likely sizes are tried, the first one SGLang could have built the
    output for (no AUX202/203) wins, and the findings it affects name the inference.
    """
    report = Report(f"device output {describe(source.value)}")
    if source.kind == "batch-factory":
        sizes = BatchSize((batch_size,) if batch_size else _OBSERVER_SIZES)
        report.extend(run_loop(_batch_factory(source.value), size=sizes, steps=steps,
                               static=static, overlap=overlap, seed=seed))
        return report
    runs = 1 if source.kind == "instance" else steps
    try:
        pristine, first = _first_output(source, keep_copy=batch_size is None)
    except HookFailed as failed:
        report.add(failed.finding)
        return report
    candidates = ([BatchSize((batch_size,))] if batch_size else infer_batch_sizes(first))
    results = []
    for index, size in enumerate(candidates):
        output = first if index == 0 else _fresh(source, pristine)
        if output is None:
            break
        findings = run_loop(_outputs(source, output), size=size, steps=runs, static=static,
                            overlap=overlap, seed=seed)
        results.append((size, findings))
        if not any(f.code in _BATCH_CODES for f in findings):
            break
    size, findings = next(((s, f) for s, f in results
                           if not any(x.code in _BATCH_CODES for x in f)), results[0])
    tried = ", ".join(str(s.sizes[0]) for s, _ in results)
    for finding in findings:
        if finding.code in _BATCH_CODES | {"AUX204"} and size.how:
            how = size.how if len(results) == 1 else f"{size.how} (sizes tried: {tried})"
            finding = Finding(finding.code, finding.message, finding.obj, finding.hint,
                              finding.location, "\n".join(filter(None, [how, finding.detail])))
        report.add(finding)
    return report


def _first_output(source: OutputSource, *, keep_copy: bool) -> tuple[Any, Any]:
    """Returns (a pristine deep copy or None, the first output); raises HookFailed when none.

    The copy of an instance is kept only when other batch sizes may be tried with it,
    and only when it is of the instance's own type (a ``__deepcopy__`` returning
    another object would judge that object instead).
    """
    if source.kind == "instance" and source.value is None:
        raise HookFailed(Finding.of("AUX101", "the device output is None",
                                    "expected a device output with a callable copy_to_host",
                                    None))
    if source.kind == "instance" and not keep_copy:
        return None, source.value
    if source.kind == "instance":
        announce("AUX103", "copy.deepcopy of {} (to try another batch size)", source.value)
        copied = attempt(copy_module.deepcopy, source.value)
        same = copied.error is None and type(copied.value) is type(source.value)
        return copied.value if same else None, source.value
    return None, made_by(source.value)


def _fresh(source: OutputSource, pristine: Any) -> Any:
    """Returns another output to try a batch size with, or None when there is none."""
    if source.kind == "instance":
        if pristine is None:
            return None
        announce("AUX103", "copy.deepcopy of {} (to try another batch size)", pristine)
        copied = attempt(copy_module.deepcopy, pristine).value
        return copied if type(copied) is type(pristine) else None
    try:
        return made_by(source.value)
    except HookFailed:
        return None


def made_by(factory: Any, *args: Any) -> Any:
    """Returns what a factory of device outputs returned for ``args`` (none, or the batch).

    Raises HookFailed with AUX103 when it raised, AUX101 when it returned None: a
    fixture's factory is asked for a device output, unlike an observer, for which
    None means it publishes nothing this step.
    """
    announce("AUX103", "the factory {}", factory)
    outcome = attempt(factory, *args)
    batch = f" on a batch of {len(args[0].reqs)} requests" if args else ""
    expected = "expected it to return the device output built for that batch" if args else \
        "expected it to return a device output"
    if outcome.error is not None:
        raise HookFailed(Finding.of("AUX103", f"the factory {describe(factory)} raised "
                                    f"{kind_name(outcome.error)}{batch}", expected, factory,
                                    detail=outcome.detail))
    if outcome.value is None:
        raise HookFailed(Finding.of("AUX101", f"the factory {describe(factory)} returned "
                                    f"None{batch}", expected, factory))
    return outcome.value


def _outputs(source: OutputSource, first: Any) -> Producer:
    """Returns a producer publishing ``first``, then (factories) a fresh output per step."""
    def produce(forward: Forward) -> Any:
        return first if forward.step == 0 else made_by(source.value)

    return produce


def _batch_factory(factory: Any) -> Producer:
    def produce(forward: Forward) -> Any:
        return made_by(factory, forward.batch)

    return produce


# ---------------------------------------------------------------- observers


def _hook(observer: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    announce("AUX102", "`" + name + "` of {}", observer)
    found = lookup(observer, name)
    outcome = found if found.error is not None or not callable(found.value) else \
        attempt(found.value, *args, **kwargs)
    if outcome.error is not None or outcome.value is MISSING:
        seen = "is no longer there" if outcome.error is None else \
            f"raised {kind_name(outcome.error)}"
        raise HookFailed(Finding.of("AUX102", f"{name} {seen}",
                                    "expected the observer's hooks to run as SGLang calls them",
                                    observer, detail=outcome.detail))
    return outcome.value


def _truth(observer: Any, name: str, value: Any) -> bool:
    """Returns ``bool(value)`` of what hook ``name`` returned; a raising ``__bool__`` is AUX102."""
    announce("AUX102", "the truth value of what `" + name + "` of {} returned", observer)
    outcome = attempt(bool, value)
    if outcome.error is not None:
        raise HookFailed(Finding.of("AUX102", f"{name} returned {describe(value)}, whose truth "
                                    f"value raised {kind_name(outcome.error)}",
                                    "expected a bool", observer, detail=outcome.detail))
    return bool(outcome.value)


def sampling_producer(observer: Any) -> Producer:
    """Returns a producer running ``observer``'s hooks as ``ModelRunner.sample`` does.

    ``is_active`` gates it; ``before_grammar`` gets the logits (a view of the graph's
    output on decode steps), which the sampler then scales in place by the temperatures;
    ``after_sample`` gets the sampled ids unless the state was None.
    """
    def produce(forward: Forward) -> Any:
        info = forward.forward_batch.sampling_info
        if not _truth(observer, "is_active", _hook(observer, "is_active", info)):
            return None
        logits = forward.logits_output.next_token_logits
        state = _hook(observer, "before_grammar", logits, info)
        sampled = attempt(_sample, logits, info)
        if sampled.error is not None:
            raise HookFailed(Finding.of(
                "AUX102", f"the sampler could not run after before_grammar: "
                f"{kind_name(sampled.error)}", "expected the hooks to leave the logits and "
                "sampling info as SGLang passed them", observer, detail=sampled.detail))
        if state is None:
            return None
        return _hook(observer, "after_sample", state, sampled.value)

    return produce


def _sample(logits: Any, info: FakeSamplingInfo) -> Any:
    logits.div_(info.temperatures)  # what the sampler does to the logits, in place
    return logits.argmax(dim=-1)


def forward_producer(observer: Any, sampling: Any = None) -> Producer:
    """Returns a producer running ``after_forward`` right after the forward, then sampling.

    The forward output comes first in the composite, as SGLang main composes them.
    """
    then = None if sampling is None else sampling_producer(sampling)

    def produce(forward: Forward) -> Any:
        output = _hook(observer, "after_forward", forward.batch, forward.forward_batch,
                       forward.logits_output, can_run_graph=forward.can_run_graph)
        if then is not None:
            sampled = then(forward)
            composed = attempt(append_auxiliary_output, output, sampled)
            if composed.error is not None:
                raise HookFailed(Finding.of(
                    "AUX102", f"composing the forward and sampling outputs raised "
                    f"{kind_name(composed.error)}", "expected device outputs that behave "
                    "like plain objects", observer, detail=composed.detail))
            output = composed.value
        return output

    return produce


def check_observers(produce: Producer, *, subject: str, batch_size: int | None = None,
                    static: StaticBufferRegistry | None = None, steps: int = 4,
                    overlap: bool = True, seed: int = 0,
                    published: list[int] | None = None) -> Report:
    """Returns the findings of the outputs ``produce`` publishes over ``steps`` steps.

    ``published``, when given, gets the number of each step that published an output.
    """
    def counted(forward: Forward) -> Any:
        output = produce(forward)
        if output is not None and published is not None:
            published.append(forward.step)
        return output

    sizes = BatchSize((batch_size,) if batch_size else _OBSERVER_SIZES)
    report = Report(subject)
    report.extend(run_loop(counted, size=sizes, steps=steps, static=static, overlap=overlap,
                           seed=seed))
    return report
