"""One step's published output: each leaf copied as SGLang copies it, then consumed once.

Composites are judged per leaf, as SGLang's composite copies and consumes each child
on its own (the composite's own behaviour is the properties' job). A published tensor
whose bytes changed between publication and the copy is AUX112.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from auxcheck._core.plugin_calls import announce, attempt, kind_name, lookup, shape_text
from auxcheck._core.protocols import CommittedTokens
from auxcheck._core.report import Finding, describe
from auxcheck._runtime.consume import ConsumeWitness
from auxcheck._runtime.copying import DeferredCopy, covered_bytes, still_holds
from auxcheck._runtime.methods import method_findings
from auxcheck._runtime.reads import watch_reads
from auxcheck._runtime.scheduler import FakeBatch
from auxcheck._runtime.sglang_fields import unsimulated_note
from auxcheck._runtime.walk import TensorRef, dense_parts, iter_tensors, unique_tensors

if TYPE_CHECKING:
    from auxcheck._runtime.static_buffers import StaticBufferRegistry

__all__ = [
    "HostOnly",
    "PublishedLeaf",
    "consume_call_findings",
    "consume_raised",
    "leaves",
    "located",
    "process_step",
    "publish",
]


# ---------------------------------------------------------------- one published output


@dataclass(slots=True)
class PublishedLeaf:
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


class HostOnly:
    """Publishes a host output as it is: lets a lone host output run through the loop."""

    def __init__(self, host: Any) -> None:
        self.host = host

    def copy_to_host(self, copy_tensor: Any) -> Any:
        return self.host


def publish(output: Any, registries: Sequence[StaticBufferRegistry],
            at: str) -> tuple[list[PublishedLeaf], list[Finding]]:
    """Copies every leaf of ``output`` as SGLang does; returns them and the copy-time findings."""
    published: list[PublishedLeaf] = []
    findings: list[Finding] = []
    for where, leaf in leaves(output):
        if type(leaf) is _TooManyLeaves:
            findings.append(leaf.finding(at))
            continue
        item = PublishedLeaf(where, leaf, unique_tensors(list(iter_tensors(leaf))),
                             DeferredCopy())
        findings += _copy_leaf(item, at)
        passed = [(f"copy_tensor argument #{c.number}", c.source) for c in item.copier.copies]
        findings += _duplicate_findings(leaf, passed, at)
        findings += _kept_findings(item, passed, at)
        refs = dense_parts(unique_tensors(item.device + passed))
        for registry in registries:
            findings += [located(f, where, at) for f in registry.findings(refs)]
        published.append(item)
    return published, findings


def _copy_leaf(item: PublishedLeaf, at: str) -> list[Finding]:
    """Calls ``copy_to_host``; sets ``item.host`` when it returned a usable host output."""
    leaf = item.leaf
    copy_to_host, shape = method_findings(leaf, "copy_to_host", ["copy_tensor"],
                                          missing="AUX101", arity="AUX102")
    if copy_to_host is None:
        return [located(f, item.where, at) for f in shape]
    announce("AUX103", "`copy_to_host` of {}", leaf)
    with watch_reads(lambda: item.copier.returned) as reads:
        outcome = attempt(copy_to_host, item.copier)
    item.copier.closed = True
    early = [] if not reads.seen else [Finding.of(
        "AUX114", f"copy_to_host{_where(item.where)} read the values of what copy_tensor "
        f"returned ({', '.join(reads.seen[:3])}) {at}, before SGLang synchronizes the copy",
        "expected the copies kept as tensors and read in consume", leaf)]
    if outcome.error is not None:
        return [*early, Finding.of("AUX103", f"copy_to_host{_where(item.where)} raised "
                                   f"{kind_name(outcome.error)} {at}", "expected a host output",
                                   leaf, detail=outcome.detail)]
    host = outcome.value
    announce("AUX103", "looking up `consume` on the host output of {}", leaf)
    consume = lookup(host, "consume")
    usable = host is not None and consume.error is None and callable(consume.value)
    if usable or (type(leaf) is HostOnly and host is not None):
        item.host = host
        return early
    seen = "None" if host is None else f"{describe(host)} with no callable `consume`"
    return [*early, Finding.of("AUX103", f"copy_to_host{_where(item.where)} returned {seen} {at}",
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


def _kept_findings(item: PublishedLeaf, passed: list[TensorRef], at: str) -> list[Finding]:
    """Returns AUX105 for host tensors it also passed to copy_tensor, AUX106 for device publication."""
    from auxcheck._runtime.sharing import sharing_indices

    if item.host is None or type(item.leaf) is HostOnly:
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
        item.held.append((path, tensor, covered_bytes(tensor)))
    if published:
        paths = ", ".join(kept[i][0] for i in published[:3])
        findings.append(Finding.of(
            "AUX106", f"the host output keeps device tensors ({paths}) without copying them "
            f"{at}", "expected the plugin to order their transfer itself (device publication)",
            item.host))
    return findings


def _where(where: str) -> str:
    return f" of child {where}" if where else ""


def located(finding: Finding, where: str, at: str) -> Finding:
    if not where and not at:
        return finding
    seen = f"{finding.summary}{_where(where)} {at}".rstrip()
    if finding.expected is None:
        return replace(finding, message=seen)
    return replace(finding, message=f"{seen}; {finding.expected}", seen=seen)



# ---------------------------------------------------------------- processing a step


def _registered(tensor: Any, registries: Sequence[StaticBufferRegistry]) -> bool:
    for registry in registries:
        try:
            if registry.find_overlaps(tensor):
                return True
        except Exception:  # noqa: BLE001, S112 - a tensor without bytes to compare
            continue
    return False


def _changed_findings(item: PublishedLeaf, registries: Sequence[StaticBufferRegistry],
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
        if not still_holds(tensor, snapshot) and not _registered(tensor, registries):
            findings.append(Finding.of(
                "AUX112", f"device tensor {path} kept by the host output{_where(item.where)} "
                f"{shape_text(tensor)} changed after its publication {at}",
                "expected published tensors to keep their values until consumed", item.leaf))
    return findings


def consume_call_findings(host: Any, batch: Any, commits: list[CommittedTokens | None],
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
        findings.append(consume_raised(host, witness, outcome.error, outcome.detail, at))
    findings += witness.findings(host, at)
    witness.restore()
    if outcome.error is None and outcome.value is not None:
        findings.append(Finding.of("AUX204", f"consume returned {describe(outcome.value)} {at}",
                                   "expected None", host))
    return findings


_ABORT_HINT = (
    "a request aborted while it ran (`/abort_request`, a timeout) or finished by its grammar "
    "is committed its last token with `req.finished()` True and `req.finished_len` None: its "
    "visible output is then `len(req.output_ids)`; read `finished_len` only when it is not "
    "None, handle None commits, and index commits by position in `batch.reqs`")


def consume_raised(host: Any, witness: ConsumeWitness, error: BaseException,
                    detail: str | None, at: str) -> Finding:
    """Returns the AUX202 finding for a ``consume`` that raised ``error``.

    Where the step committed a token to a finished request without ``finished_len`` (an
    abort while it ran: SGLang appends and commits that pass's token all the same), the
    finding names the request, and an error about None gets the fix for that cause.
    """
    note = unsimulated_note(error, "consume", at, host)
    if note is not None:
        return note
    finding = Finding.of("AUX202", f"consume raised {kind_name(error)} {at}",
                         "expected it to handle the commits SGLang passes", host, detail=detail)
    unset = witness.finished_without_length()
    if not unset:
        return finding
    rid = describe(attempt(getattr, unset[0], "rid", unset[0]).value)
    seen = (f"{finding.summary}, where request {rid} was aborted while it ran: SGLang commits "
            "its last token with finished() True and finished_len None")
    finding = replace(finding, message=f"{seen}; {finding.expected}", seen=seen)
    if "NoneType" in str(error):
        finding = replace(finding, hint=_ABORT_HINT)
    return finding


def process_step(published: list[PublishedLeaf], batch: FakeBatch,
                 commits: list[CommittedTokens | None],
                 registries: Sequence[StaticBufferRegistry], at: str) -> list[Finding]:
    """Completes each leaf's copy, then consumes its host output once (in leaf order)."""
    findings: list[Finding] = []
    for item in published:
        findings += _changed_findings(item, registries, at)
    for item in published:
        if item.host is None:
            continue
        found = consume_call_findings(item.host, batch, commits, at)
        findings += [located(f, item.where, "") for f in found]
        if item.copier.late:
            findings.append(Finding.of(
                "AUX105", f"the host output{_where(item.where)} called copy_tensor "
                f"{len(item.copier.late)} time(s) after copy_to_host returned {at}, so it kept "
                "device tensors to copy later", "expected every copy made inside copy_to_host",
                item.host))
    return findings
