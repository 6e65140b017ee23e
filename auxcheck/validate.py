"""Runtime validators: ``check_*`` functions returning a Report of every violation at once.

Objects are judged the way SGLang 0.5.23 runs them (see :mod:`auxcheck._runtime.loop`): methods
are called positionally (``copy_to_host(copy_tensor)``, ``consume(batch, commits)``), so
parameter names are free while arity is not; ``copy_to_host`` gets a ``copy_tensor``
that copies as SGLang's asynchronous copy does; each host output is consumed exactly
once, with the batch its device output was built for and commits built as the
scheduler builds them. Composites are judged per child. Plugin code that raises
becomes a finding with a short traceback, never a crash of the checker. torch is
imported only when a check runs.
"""

from __future__ import annotations

import functools
import itertools
import operator
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MemberDescriptorType
from typing import TYPE_CHECKING, Any

from auxcheck._core.interrupts import interrupted_finding
from auxcheck._core.plugin_calls import (
    MISSING,
    Interrupted,
    Outcome,
    announce,
    attempt,
    kind_name,
    lookup,
    passes_through,
    phase_code,
    plain_torch,
    shape_text,
    summarize,
    type_name,
)
from auxcheck._runtime.methods import method_findings
from auxcheck._runtime.walk import TensorRef, iter_tensors
from auxcheck.aliasing import as_registry
from auxcheck.errors import InvalidArgument
from auxcheck.protocols import CommittedTokens
from auxcheck.report import Finding, Report, describe
from auxcheck.rules import get_rule

if TYPE_CHECKING:
    from auxcheck.aliasing import StaticBufferRegistry, StaticBuffers

__all__ = [
    "Finding",
    "Report",
    "check_commits",
    "check_device_output",
    "check_device_outputs",
    "check_forward_observer",
    "check_host_output",
    "check_sampling_observer",
]


@dataclass(slots=True, eq=False)
class _Recorder:
    """A ``copy_tensor`` that returns host clones (for the PP round trip's comparison)."""

    seen: list[Any] = field(default_factory=list)

    def __call__(self, tensor: Any) -> Any:
        from auxcheck._runtime.loop import host_copy

        self.seen.append(tensor)
        if not _is_tensor(tensor):
            raise TypeError(f"copy_tensor expects a tensor, got {kind_name(tensor)}")
        return host_copy(tensor)


def _is_tensor(value: Any) -> bool:
    import torch

    return issubclass(type(value), torch.Tensor)  # never isinstance: it reads __class__


def _check_steps(steps: Any) -> None:
    """Raises InvalidArgument unless ``steps`` is a whole number >= 1: no steps would pass vacuously."""
    if type(steps) is not int or steps < 1:
        raise InvalidArgument(f"steps={describe(steps)}; expected a whole number >= 1 (the steps "
                              "of SGLang's loop to run: with none, nothing would be judged)")


_MAX_BATCH_SIZE = 4096
"""The largest batch accepted (SGLang runs fewer requests in one batch than this)."""


def _batch_size(value: Any, *, what: str = "batch_size=") -> int | None:
    """Returns ``value`` as a plain int from 1 to :data:`_MAX_BATCH_SIZE` (None stays None).

    The one reading of a declared batch size, for the validators and the pytest suite
    (a number as :func:`_plain_int` reads it). Raises InvalidArgument starting with
    ``what`` and the value (by type when it is not a plain number), and naming the range.
    """
    if value is None:
        return None
    number = _plain_int(value)
    if number is not None and 1 <= number <= _MAX_BATCH_SIZE:
        return number
    raise InvalidArgument(f"{what}{describe(value)}; expected a whole number from 1 to "
                          f"{_MAX_BATCH_SIZE} (the number of requests the output was built for)")


def _static_registry(static_buffers: Any, *, strict: bool = True
                    ) -> tuple[StaticBufferRegistry, list[Finding]]:
    """Returns the registry of ``static_buffers``, read under the guard, and AUX110 when unreadable.

    The one reader of a user's static buffers. What reading them raised is an AUX110
    finding (the buffers cannot be matched); a value of the wrong kind is too, unless
    ``strict`` (a caller's argument), where it is the InvalidArgument ``as_registry``
    raised.
    """
    if static_buffers is None or (type(static_buffers) is tuple and not static_buffers):
        return as_registry(None), []
    announce("AUX110", "reading the static buffers {}", static_buffers)
    made = attempt(as_registry, static_buffers)
    if made.error is None:
        return made.value, []
    if strict and type(made.error) is InvalidArgument:
        raise made.error
    seen = (str(made.error) if type(made.error) is InvalidArgument
            else f"reading them raised {kind_name(made.error)}")
    return as_registry(None), [Finding.of(
        "AUX110", f"the static buffers cannot be matched: {seen}", "expected a mapping of "
        "names to tensors, tensors, or None", None,
        detail=None if type(made.error) is InvalidArgument else made.detail)]


def _never_raising(default: str, subject: str, obj: Any, check: Callable[[], Report]) -> Report:
    """Returns :func:`_judged` of ``check``; plugin code pytest stopped is a finding too."""
    try:
        return _judged(default, subject, obj, check)
    except Interrupted as stop:
        report = Report(subject)
        report.add(interrupted_finding(stop))
        return report


def _judged(default: str, subject: str, obj: Any, check: Callable[[], Report]) -> Report:
    """Returns ``check()``; an error it lets through becomes a finding under the last plugin phase.

    Each step already turns what plugin code raises into its own finding; this is the
    net for a value the plugin returned that breaks the checker later (a hostile
    ``__eq__``, ``__len__`` or tensor subclass), so a check never raises for it.
    Interrupted passes (the pytest suite stops the whole group with it).
    """
    phase_code("")
    try:
        with plain_torch():
            return check()
    except BaseException as exc:  # what a plugin's value did to the checker
        if passes_through(exc) or type(exc) is InvalidArgument:
            raise
        report = Report(subject)
        report.add(Finding.of(phase_code(default), "auxcheck could not finish judging it: "
                              f"checking what plugin code returned raised {kind_name(exc)}",
                              "expected plain values that behave like their types (no "
                              "hostile __eq__, __len__, __iter__, properties or tensor "
                              "subclasses)", obj, detail=summarize(exc, frames=5)))
        return report


# ---------------------------------------------------------------- device output


def check_device_output(
    obj: Any, *, batch_size: int | None = None, static_buffers: StaticBuffers = (),
    pp_observer: Any = None,
) -> Report:
    """Returns a report of every contract violation of ``obj`` as a device output.

    ``obj`` is copied once with SGLang's kind of ``copy_tensor`` and its host output
    consumed once, with a batch of ``batch_size`` requests (the batch it was built for;
    when not given it is inferred from the tensors' shapes, and the findings it affects
    say so). ``static_buffers`` (tensors a CUDA graph owns, a name -> tensor mapping, or
    an ``auxcheck.aliasing.StaticBufferRegistry``) are matched whole-storage, so a
    ``[:bs]`` view of a max-size buffer counts. Covers AUX101-106, AUX110/111 and
    AUX201-204, and pipeline-parallel transport (AUX401-403) when ``obj`` has
    ``to_pp_tensors`` or a ``pp_observer`` is given.
    """
    from auxcheck._runtime.loop import OutputSource, check_source

    batch_size = _batch_size(batch_size)
    registry, unreadable = _static_registry(static_buffers)
    subject = f"device output {type_name(obj)}"

    def check() -> Report:
        report = Report(subject, list(unreadable))
        report.extend(check_source(OutputSource("instance", obj), batch_size=batch_size,
                                   static=registry, steps=1))
        report.extend(_pp_findings(obj, pp_observer))
        report.findings.sort(key=lambda f: f.code)
        return report

    return _never_raising("AUX103", subject, obj, check)


def check_device_outputs(
    factory: Callable[..., Any], *, batch_size: int | None = None,
    static_buffers: StaticBuffers = (), pp_observer: Any = None, steps: int = 3,
) -> Report:
    """Returns a report of the device outputs ``factory`` makes, one per step of SGLang's loop.

    ``factory`` takes no argument, or the step's batch (then every step's batch is built
    for it). Each step's output is copied right after its forward and consumed after
    the next one, so an output whose tensors the next call overwrites is AUX112; every
    rule of :func:`check_device_output` applies to each output.
    """
    from auxcheck._runtime.loop import OutputSource, check_source, sample_output, source_of

    batch_size = _batch_size(batch_size)
    _check_steps(steps)
    registry, unreadable = _static_registry(static_buffers)
    subject = f"device outputs of {describe(factory)}"

    def check() -> Report:
        source = source_of(factory)
        kind = "factory" if source.kind == "instance" else source.kind
        report = Report(subject, list(unreadable))
        report.extend(check_source(OutputSource(kind, factory), batch_size=batch_size,
                                   static=registry, steps=steps))
        sample = sample_output(OutputSource(kind, factory), batch_size)
        if sample is not None:
            report.extend(_pp_findings(sample, pp_observer))
        report.findings.sort(key=lambda f: f.code)
        return report

    return _never_raising("AUX103", subject, factory, check)


def check_host_output(obj: Any, *, batch_size: int | None = None) -> Report:
    """Returns a report of every contract violation of ``obj`` as a host output (AUX201-204).

    ``consume`` is called exactly once, as SGLang calls it: with a batch of
    ``batch_size`` requests (default: inferred from the tensors ``obj`` holds) in the
    middle of generation, where requests decode, finish, abort or get no token, and
    commits built as the scheduler builds them.
    """
    from auxcheck._runtime.loop import BatchSize, _HostOnly, infer_batch_sizes, run_loop

    batch_size = _batch_size(batch_size)
    subject = f"host output {type_name(obj)}"

    def check() -> Report:
        report = Report(subject)
        size = BatchSize((batch_size,)) if batch_size else infer_batch_sizes(obj)[0]
        for finding in run_loop(lambda forward: _HostOnly(obj), size=size, steps=1):
            if size.how and finding.code in ("AUX202", "AUX203", "AUX204"):
                finding = Finding(finding.code, finding.message, finding.obj, finding.hint,
                                  finding.location, "\n".join(filter(None, [size.how,
                                                                           finding.detail])))
            report.add(finding)
        return report

    return _never_raising("AUX202", subject, obj, check)


# ---------------------------------------------------------------- pipeline parallel


def _pp_findings(obj: Any, pp_observer: Any) -> list[Finding]:
    """Returns AUX401-403 findings for PP transport of ``obj`` (none when PP is not in play)."""
    to_pp = lookup(obj, "to_pp_tensors")
    absent = to_pp.error is not None or to_pp.value is MISSING
    if absent and pp_observer is None:
        return []
    if absent or not callable(to_pp.value):
        return [Finding.of("AUX401", "pipeline-parallel transport needs `to_pp_tensors`, "
                           f"but it is {_absence(to_pp)}",
                           "expected to_pp_tensors() -> Mapping[str, Tensor]", obj,
                           detail=to_pp.detail)]
    announce("AUX402", "`to_pp_tensors` of {}", obj)
    outcome = attempt(to_pp.value)
    if outcome.error is not None:
        return [Finding.of("AUX402", f"to_pp_tensors raised {kind_name(outcome.error)}",
                           "expected a mapping of names to tensors", obj, detail=outcome.detail)]
    tensors, findings = _pp_mapping_findings(obj, outcome.value)
    if findings or pp_observer is None:
        return findings
    return _round_trip_findings(obj, _plain_host(obj), tensors, pp_observer)


def _plain_host(obj: Any) -> Any:
    """Returns ``obj``'s host output copied with plain clones, or None when it cannot be had."""
    copy = lookup(obj, "copy_to_host")
    if not callable(copy.value):
        return None
    announce("AUX403", "`copy_to_host` of {} (the values before transport)", obj)
    return attempt(copy.value, _Recorder()).value


def _absence(found: Outcome) -> str:
    if found.error is not None:
        return f"unreadable ({kind_name(found.error)})"
    return "missing" if found.value is MISSING else f"a {kind_name(found.value)}"


_MAX_PP_TENSORS = 4096
"""The most entries a ``to_pp_tensors`` mapping is read for (SGLang sends a few)."""


def _pp_mapping_findings(obj: Any, tensors: Any) -> tuple[dict[str, Any], list[Finding]]:
    """Returns the PP tensors as a plain dict, and AUX402 for an empty mapping, a bad name or value.

    The mapping is read once, through guarded calls (its ``items()``, ``len`` and truth
    are plugin code); names become plain ``str`` so later dict work runs no plugin code.
    """
    expected = "expected a non-empty mapping of non-empty string names to tensors"
    if not attempt(issubclass, type(tensors), Mapping).value:
        return {}, [Finding.of("AUX402", f"to_pp_tensors returned a {type(tensors).__name__}",
                               expected, obj)]
    announce("AUX402", "reading the mapping `to_pp_tensors` of {} returned", obj)
    items = attempt(lambda: list(itertools.islice(tensors.items(), _MAX_PP_TENSORS + 1)))
    if items.error is not None:
        return {}, [Finding.of("AUX402", "items() of the mapping to_pp_tensors returned raised "
                               f"{type(items.error).__name__}", expected, obj,
                               detail=items.detail)]
    if len(items.value) > _MAX_PP_TENSORS:
        return {}, [Finding.of("AUX402", "items() of the mapping to_pp_tensors returned gave "
                               f"more than {_MAX_PP_TENSORS} entries (an endless iterator?)",
                               expected, obj)]
    if not all(type(i) is tuple and len(i) == 2 for i in items.value):
        return {}, [Finding.of("AUX402", "items() of the mapping to_pp_tensors returned gave "
                               "something other than (name, tensor) pairs", expected, obj)]
    if not items.value:
        return {}, [Finding.of("AUX402", "to_pp_tensors returned an empty mapping", expected,
                               obj)]
    findings, plain = [], {}
    for name, value in items.value:
        if not issubclass(type(name), str) or not str.__len__(name):
            findings.append(Finding.of("AUX402", f"to_pp_tensors name {describe(name)} is "
                                       "not a non-empty string", expected, obj))
        if not _is_tensor(value):
            findings.append(Finding.of("AUX402", f"to_pp_tensors value {describe(name)} is a "
                                       f"{type(value).__name__}", expected, obj))
        if not findings:
            plain[str.__str__(name)] = value
    return plain, findings


def _round_trip_findings(obj: Any, host: Any, tensors: Mapping[str, Any],
                         observer: Any) -> list[Finding]:
    """Returns AUX403 findings for ``observer.from_pp_tensors`` of ``obj``'s PP tensors."""
    from_pp, findings = method_findings(observer, "from_pp_tensors", ["tensors"],
                                         missing="AUX403", arity="AUX403")
    if from_pp is None:
        return findings
    # The receiving stage gets fresh tensors, never the sender's storage.
    fresh = attempt(lambda: {name: _fresh(t) for name, t in tensors.items()})
    if fresh.error is not None:
        return [Finding.of("AUX402", f"a to_pp_tensors tensor cannot be copied: "
                           f"{type(fresh.error).__name__}", "expected plain tensors SGLang "
                           "can send to the next stage", obj, detail=fresh.detail)]
    announce("AUX403", "`from_pp_tensors` of {}", observer)
    outcome = attempt(from_pp, fresh.value)
    if outcome.error is not None or outcome.value is None:
        seen = "returned None" if outcome.error is None else \
            f"raised {kind_name(outcome.error)}"
        return [Finding.of("AUX403", f"from_pp_tensors {seen}",
                           "expected an equivalent device output", observer,
                           detail=outcome.detail)]
    return _host_value_findings(obj, host, outcome.value)


def _host_value_findings(obj: Any, host: Any, rebuilt: Any) -> list[Finding]:
    """Returns AUX403 when the rebuilt output copies to host values unlike the original's."""
    expected = "expected the rebuilt output to copy to the same host values"
    announce("AUX403", "`copy_to_host` of {} (rebuilt by from_pp_tensors)", rebuilt)
    copy = lookup(rebuilt, "copy_to_host")
    outcome = attempt(copy.value, _Recorder()) if callable(copy.value) else \
        Outcome(error=copy.error or TypeError("the rebuilt output has no copy_to_host"))
    if outcome.error is not None:
        return [Finding.of("AUX403", f"copying the rebuilt output raised "
                           f"{kind_name(outcome.error)}", expected, rebuilt,
                           detail=outcome.detail)]
    if host is None:
        return []
    mismatch = _tensor_mismatch(list(iter_tensors(host)), list(iter_tensors(outcome.value)))
    if mismatch is None:
        return []
    return [Finding.of("AUX403", f"the rebuilt output's host values differ: {mismatch}",
                       expected, rebuilt)]


def _fresh(tensor: Any) -> Any:
    """Returns a copy of a PP tensor on its device, as the next stage receives it."""
    from auxcheck._runtime.loop import covered_view

    if tensor.layout != _strided() or tensor.is_nested:
        return tensor.detach().clone()
    view = covered_view(tensor)  # an expanded view is sent as the bytes under it
    if view.numel() == tensor.numel():
        return tensor.detach().clone()
    return view.clone().as_strided(tuple(tensor.shape), tuple(tensor.stride()), 0)


def _strided() -> Any:
    import torch

    return torch.strided


def _tensor_mismatch(left: Sequence[TensorRef], right: Sequence[TensorRef]) -> str | None:
    """Returns how two host outputs' tensors differ, or None when all hold the same values.

    Sparse tensors compare by their nonzero entries (never densified: a [2**30, 2**30]
    tensor with one entry is compared as one entry), nested ones component by component;
    tensors without data (meta, fake) by shape and dtype only.
    """
    if len(left) != len(right):
        return f"{len(left)} tensors before transport, {len(right)} after"
    for (path, a), (_, b) in zip(left, right):
        same = attempt(_same_values, a, b)
        if same.error is not None or same.value is False:
            how = "" if same.error is None else f" (comparing raised {type(same.error).__name__})"
            return f"{path} {shape_text(a)} became {shape_text(b)} after transport{how}"
    return None


def _same_values(a: Any, b: Any) -> bool:
    import torch

    if a.is_nested or b.is_nested:
        parts_a, parts_b = a.unbind(), b.unbind()
        return len(parts_a) == len(parts_b) and all(
            _same_values(x, y) for x, y in zip(parts_a, parts_b))
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
        return False
    from auxcheck._runtime.loop import has_no_data

    if has_no_data(a) or has_no_data(b):
        return True  # meta and fake tensors hold no values to compare
    if a.layout != torch.strided and b.layout != torch.strided:
        return all(bool(torch.equal(x, y.to(x.device)))
                   for x, y in zip(_nonzero_entries(a), _nonzero_entries(b)))
    # One side is dense: its memory is already spent, densifying the other costs as much.
    dense = [t.to_dense() if t.layout != torch.strided else t for t in (a, b)]
    return bool(torch.equal(dense[0], dense[1].to(dense[0].device)))


def _nonzero_entries(tensor: Any) -> tuple[Any, Any]:
    """Returns a sparse tensor's indices and values, coalesced, explicit zeros left out
    (so two layouts of the same values compare equal), in memory of the order of its entries."""
    coo = (tensor if tensor.layout == _sparse_coo() else tensor.to_sparse()).coalesce()
    indices, values = coo.indices(), coo.values()
    nonzero = values.ne(0)
    keep = nonzero.flatten(1).any(dim=1) if nonzero.dim() > 1 else nonzero
    return indices[:, keep], values[keep]


def _sparse_coo() -> Any:
    import torch

    return torch.sparse_coo


# ---------------------------------------------------------------- commits


def check_commits(batch: Any, commits: Any) -> Report:
    """Returns AUX601 findings: commits not aligned with ``batch.reqs``, or malformed entries.

    ``batch``, its requests and ``commits`` are read through guarded calls: a ``len`` or
    an iteration that raises, a field whose comparison raises, is a finding too.
    """
    subject = f"commits for {type_name(batch)}"
    if _plainly_aligned(batch, commits):  # the live guard's every step: no finding to look for
        return Report(subject)
    return _never_raising("AUX601", subject, commits, lambda: _commits_report(subject, batch,
                                                                             commits))


def _plainly_aligned(batch: Any, commits: Any) -> bool:
    """Returns True when plain data shows well-formed commits aligned with ``batch.reqs``.

    A fast path that runs no plugin code: only lists, tuples and plain instance
    attributes (a ``__dict__`` entry or a slot, never a property) are read. Anything
    else, or any disagreement, returns False, and the guarded check judges it and words
    its findings.
    """
    try:
        reqs = _plain_attribute(batch, "reqs")
        if type(reqs) is not list or type(commits) not in (list, tuple) or len(reqs) != len(
                commits) or len(reqs) > _MAX_REQUESTS:
            return False
        return all(commit is None or _plain_commit_matches(req, commit)
                   for req, commit in zip(reqs, commits))
    except Exception:  # noqa: BLE001 - anything unusual goes to the guarded check
        return False


def _plain_commit_matches(req: Any, commit: Any) -> bool:
    if type(commit).__name__ != "CommittedTokens":
        return False
    index, tokens = _plain_attribute(commit, "output_index"), _plain_attribute(commit, "token_ids")
    if type(index) is not int or index < 0 or type(tokens) is not tuple or not tokens or any(
            type(t) is not int for t in tokens):
        return False
    finished, outputs = _plain_attribute(req, "finished_len"), _plain_attribute(req, "output_ids")
    if finished is not None and type(finished) is not int or type(outputs) not in (array, list):
        return False
    visible = len(outputs) if finished is None else finished
    return index == visible - len(tokens)


def _plain_attribute(obj: Any, name: str) -> Any:
    """Returns ``obj.name`` when it is a plain instance attribute, else MISSING; runs no user code."""
    owner: Any = type(obj)
    kind = _attribute_kind(owner, name)
    if kind == "slot":
        return object.__getattribute__(obj, name)
    if kind == "code":
        return MISSING
    state = object.__getattribute__(obj, "__dict__")
    return state.get(name, MISSING) if type(state) is dict else MISSING


@functools.lru_cache(maxsize=256)
def _attribute_kind(kind: Any, name: str) -> str:
    """Returns how instances of ``kind`` hold ``name``: ``slot``, ``dict``, or ``code`` (a property)."""
    found = next((k.__dict__[name] for k in kind.__mro__ if name in k.__dict__), MISSING)
    if type(found) is MemberDescriptorType:
        return "slot"
    if found is not MISSING and any("__set__" in k.__dict__ for k in type(found).__mro__):
        return "code"  # a property or another data descriptor: reading it runs code
    return "dict"


def _commits_report(subject: str, batch: Any, commits: Any) -> Report:
    report = Report(subject)
    announce("AUX601", "reading `reqs` of {}", batch)
    reqs = lookup(batch, "reqs")
    if reqs.error is not None or reqs.value is MISSING:
        report.add(Finding.of("AUX601", "the batch has no readable `reqs`",
                              "expected a batch whose reqs the commits align with", batch,
                              detail=reqs.detail))
        return report
    kind = type(commits)
    if not issubclass(kind, Sequence) or issubclass(kind, (str, bytes, bytearray)):
        report.add(Finding.of("AUX601", f"commits is a {kind.__name__}",
                              "expected a sequence with one entry per request", commits))
        return report
    requests, entries = _bounded_list(reqs.value), _bounded_list(commits)
    for what, read, obj in (("batch.reqs", requests, batch), ("commits", entries, commits)):
        if read.error is not None:
            report.add(Finding.of("AUX601", f"iterating {what} raised "
                                  f"{type(read.error).__name__}", "expected a sequence with "
                                  "one entry per request", obj, detail=read.detail))
        elif len(read.value) > _MAX_REQUESTS:
            report.add(Finding.of("AUX601", f"{what} gives more than {_MAX_REQUESTS} entries "
                                  "(an endless iterator?)", "expected a sequence with one "
                                  "entry per request of one batch", obj))
    if report:
        return report
    length = attempt(len, commits)
    if length.value != len(entries.value):
        seen = f"raised {type(length.error).__name__}" if length.error is not None else \
            f"is {describe(length.value)}"
        report.add(Finding.of("AUX601", f"len(commits) {seen} but iterating it gives "
                              f"{len(entries.value)} entries", "expected a sequence whose "
                              "length is its number of entries", commits, detail=length.detail))
    if len(entries.value) != len(requests.value):
        report.add(Finding.of("AUX601", f"{len(entries.value)} commits for "
                              f"{len(requests.value)} requests",
                              "expected one entry per request in batch.reqs", commits))
    for i, (req, commit) in enumerate(zip(requests.value, entries.value)):
        found = attempt(_commit_findings, i, req, commit)
        report.extend(found.value if found.error is None else [Finding.of(
            "AUX601", f"commits[{i}] could not be judged: reading it raised "
            f"{kind_name(found.error)}", "expected None or a CommittedTokens of plain "
            "ints", commit, detail=found.detail)])
    return report


_MAX_REQUESTS = 1 << 16
"""The most entries ``batch.reqs`` and commits are read for (a batch holds far fewer)."""


def _bounded_list(items: Any) -> Outcome:
    """Returns the first ``_MAX_REQUESTS + 1`` entries of ``items`` as a list, read under the
    guard: an endless iterator is cut, not read until the memory runs out."""
    return attempt(lambda: list(itertools.islice(items, _MAX_REQUESTS + 1)))


def _commit_findings(index: int, req: Any, commit: Any) -> list[Finding]:
    """Returns AUX601 findings for one commit entry (None is always well formed)."""
    if commit is None:
        return []
    where = f"commits[{index}]"
    if not _looks_committed(commit):
        return [Finding.of("AUX601", f"{where} is a {type(commit).__name__}",
                           "expected None or CommittedTokens", commit)]
    malformed = _malformed(commit)
    problem, detail = (malformed, None) if malformed else _misaligned(req, commit)
    if problem is None:
        return []
    return [Finding.of("AUX601", f"{where} {problem}", "expected a well-formed entry that "
                       "matches the request's visible output", commit, detail=detail)]


def _looks_committed(commit: Any) -> bool:
    """Returns True for auxcheck's or SGLang's CommittedTokens (matched by name and fields)."""
    if issubclass(type(commit), CommittedTokens):
        return True
    fields = (lookup(commit, "output_index"), lookup(commit, "token_ids"))
    return type(commit).__name__ == "CommittedTokens" and all(
        f.error is None and f.value is not MISSING for f in fields)


def _malformed(commit: Any) -> str | None:
    """Returns what is wrong with a CommittedTokens' fields, or None.

    Fields must be of the exact builtin types (an int subclass can override its
    comparisons, a tuple subclass its length), as SGLang builds them.
    """
    index, tokens = commit.output_index, commit.token_ids
    if type(index) is not int or index < 0:
        return f"has output_index {describe(index)}, not an int >= 0"
    if type(tokens) is not tuple:
        return f"has token_ids of type {type(tokens).__name__}, not a tuple"
    if not tokens:
        return "has an empty token_ids tuple"
    if any(type(t) is not int for t in tokens):
        return "has a token id that is not an int"
    return None


def _misaligned(req: Any, commit: Any) -> tuple[str | None, str | None]:
    """Returns how ``commit`` disagrees with ``req``'s visible output (None when it agrees),
    and a traceback summary when reading the request raised.

    A request whose visible length cannot be read (a raising ``finished_len``, a ``len``
    that raises or lies) is a finding too: an entry it cannot be matched against is not
    a pass. An int subclass or numpy integer counts as the int it is.
    """
    from auxcheck._runtime.scheduler import visible_output_len

    announce("AUX601", "reading the visible output of request {}", req)
    seen = attempt(visible_output_len, req)
    rid = attempt(getattr, req, "rid", req)
    name = describe(rid.value if rid.error is None else req)
    if seen.error is not None:
        return ((f"cannot be matched with request {name}: reading its visible output length "
                 f"(finished_len, else len(output_ids)) raised {kind_name(seen.error)}"),
                seen.detail)
    visible = _length(seen.value)
    if visible is None:
        return ((f"cannot be matched with request {name}: its visible output length "
                 f"(finished_len, else len(output_ids)) is {describe(seen.value)}, not a whole "
                 "number >= 0"), None)
    expected = visible - len(commit.token_ids)
    if commit.output_index != expected:
        return ((f"has output_index {commit.output_index}, but request {name} shows {visible} "
                 f"visible tokens, so {len(commit.token_ids)} new ones start at {expected}"), None)
    return None, None


def _length(value: Any) -> int | None:
    """Returns ``value`` as a plain int >= 0 (see :func:`_plain_int`), else None."""
    number = _plain_int(value)
    return number if number is not None and number >= 0 else None


def _plain_int(value: Any) -> int | None:
    """Returns ``value`` as a plain int, else None: the one reading of a number plugin code
    gives. Anything ``operator.index`` accepts (numpy integers, an IntEnum) but a bool,
    read under the guard; an int subclass's own methods never run."""
    index = attempt(operator.index, value)
    if index.error is not None or not issubclass(type(index.value), int) or \
            issubclass(type(value), bool):
        return None
    return int.__index__(index.value)


# ---------------------------------------------------------------- observers


_OBSERVER_HOOKS = {
    "is_active": ["sampling_info"],
    "before_grammar": ["logits", "sampling_info"],
    "after_sample": ["state", "token_ids"],
}
_OBSERVER_HINT = ("define is_active(self, sampling_info), before_grammar(self, logits, "
                  "sampling_info) and after_sample(self, state, token_ids); SGLang calls "
                  "them positionally")
_FORWARD_HINT = ("define after_forward(self, batch, forward_batch, logits_output, *, "
                 "can_run_graph) returning a device output or None")


def _hook_findings(obj: Any) -> list[Finding]:
    findings = []
    for name, params in _OBSERVER_HOOKS.items():
        _, shape = method_findings(obj, name, params, missing="AUX102", arity="AUX102")
        findings += [_with_hint(f, _OBSERVER_HINT) for f in shape]
    return findings


def check_sampling_observer(
    obj: Any, *, device_output: Any = None, batch_size: int | None = None,
    static_buffers: StaticBuffers = (), steps: int = 4,
) -> Report:
    """Returns a report of ``obj`` as a SamplingObserver, run through SGLang's step loop.

    A missing, non-callable, ill-shaped or raising hook is AUX102 with an
    observer-specific hint. With well-shaped hooks the observer runs ``steps`` steps of
    the overlap loop (logits are views of CUDA-graph outputs on decode steps, rewritten
    by every replay), and each output it publishes is judged as SGLang runs it
    (AUX101-106, AUX110-112, AUX201-204). A ``from_pp_tensors`` of the wrong shape is
    AUX403; with ``device_output`` given, its PP tensors are sent through
    ``obj.from_pp_tensors`` and compared (AUX401-403).
    """
    return _observer_check("sampling", obj, batch_size, static_buffers, steps, functools.partial(
        _sampling_report, obj, device_output=device_output))


def _sampling_report(obj: Any, *, device_output: Any = None, batch_size: int | None,
                     static: StaticBufferRegistry, steps: int = 4,
                     found: Sequence[Finding] = (), published: list[int] | None = None
                     ) -> Report:
    """Returns :func:`check_sampling_observer`'s report, ``found`` first; ``published`` gets
    the steps at which the observer published an output."""
    from auxcheck._runtime.loop import check_observers, sampling_producer

    report = Report(f"sampling observer {type_name(obj)}", list(found))
    report.extend(_hook_findings(obj))
    if not report:
        report.extend(check_observers(sampling_producer(obj), subject=report.subject,
                                      batch_size=batch_size, static=static, steps=steps,
                                      published=published))
    has_from_pp = lookup(obj, "from_pp_tensors")
    if has_from_pp.value is not MISSING or has_from_pp.error is not None:
        report.extend(method_findings(obj, "from_pp_tensors", ["tensors"],
                                       missing="AUX403", arity="AUX403")[1])
    if device_output is not None:
        report.extend(f for f in _pp_findings(device_output, obj)
                      if get_rule(f.code).family == "AUX4")
    return report


def check_forward_observer(
    obj: Any, *, sampling_observer: Any = None, batch_size: int | None = None,
    static_buffers: StaticBuffers = (), steps: int = 4,
) -> Report:
    """Returns a report of ``obj`` as a ForwardObserver (SGLang main), run through the step loop.

    ``after_forward(batch, forward_batch, logits_output, can_run_graph=...)`` runs right
    after each forward; on decode steps ``logits_output`` holds views of the CUDA graph's
    persistent outputs. With ``sampling_observer`` its output is composed after the
    forward output, as SGLang composes them. An ill-shaped or raising hook is AUX102.
    """
    return _observer_check("forward", obj, batch_size, static_buffers, steps, functools.partial(
        _forward_report, obj, sampling_observer=sampling_observer))


def _observer_check(kind: str, obj: Any, batch_size: int | None,
                    static_buffers: StaticBuffers, steps: int,
                    report: Callable[..., Report]) -> Report:
    """Returns ``report(batch_size=, static=, steps=, found=)`` for the ``kind`` observer
    ``obj``, after checking the arguments; whatever escapes it is an AUX102 finding."""
    size = _batch_size(batch_size)
    _check_steps(steps)
    registry, unreadable = _static_registry(static_buffers)
    return _never_raising("AUX102", f"{kind} observer {type_name(obj)}", obj, lambda: report(
        batch_size=size, static=registry, steps=steps, found=unreadable))


def _forward_report(obj: Any, *, sampling_observer: Any = None, batch_size: int | None,
                    static: StaticBufferRegistry, steps: int = 4,
                    found: Sequence[Finding] = (), published: list[int] | None = None
                    ) -> Report:
    """Returns :func:`check_forward_observer`'s report (``found`` and ``published`` as in
    :func:`_sampling_report`)."""
    from auxcheck._runtime.loop import check_observers, forward_producer

    report = Report(f"forward observer {type_name(obj)}", list(found))
    _, shape = method_findings(obj, "after_forward", ["batch", "forward_batch", "logits_output"],
                                missing="AUX102", arity="AUX102", keywords=["can_run_graph"])
    report.extend(_with_hint(f, _FORWARD_HINT) for f in shape)
    if sampling_observer is not None:
        report.extend(_hook_findings(sampling_observer))
    if not report:
        report.extend(check_observers(forward_producer(obj, sampling_observer),
                                      subject=report.subject, batch_size=batch_size,
                                      static=static, steps=steps, published=published))
    return report


def _with_hint(finding: Finding, hint: str) -> Finding:
    return Finding(finding.code, finding.message, finding.obj, hint, finding.location,
                   finding.detail)
