"""Runtime validators: ``check_*`` functions returning a Report of every violation at once.

Objects are judged the way SGLang uses them: methods are called positionally
(``copy_to_host(copy_tensor)``, ``consume(batch, commits)``), so parameter names are
free while arity is not, and no protocol needs to be ``runtime_checkable``.
Behaviour is checked by calling the object with a recording ``copy_tensor`` and real
tensors, then calling ``consume`` with batches and commits built as the scheduler
builds them. Plugin code that raises becomes a finding with a short traceback,
never a crash of the checker. torch is imported only when a check runs.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from auxcheck._scheduler import FakeBatch, FakeReq, build_commits, snapshot_output_starts
from auxcheck._walk import TensorRef, dense_parts, iter_tensors, unique_tensors
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
    "check_host_output",
    "check_sampling_observer",
]

_MISSING: Any = object()
_DEFAULT_BATCH_SIZE = 3
_MAX_BATCH_SIZE = 64


# ---------------------------------------------------------------- plugin-call helpers


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What a guarded call returned, or the exception it raised."""

    value: Any = None
    error: BaseException | None = None

    @property
    def detail(self) -> str | None:
        """Returns the traceback summary of the error, if any."""
        return None if self.error is None else _summarize(self.error)


def _guard(func: Callable[..., Any], *args: Any) -> _Outcome:
    """Calls plugin code; an Exception or SystemExit becomes an outcome.

    ``sys.exit()`` in plugin code is a plugin bug, never the checker's exit status;
    KeyboardInterrupt and the other BaseExceptions propagate.
    """
    try:
        return _Outcome(func(*args))
    except (Exception, SystemExit) as exc:  # noqa: BLE001
        return _Outcome(error=exc)


def _summarize(exc: BaseException, *, frames: int = 3) -> str:
    """Returns the last few frames as ``file:line in func`` plus the exception line."""
    stack = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    stack = stack[-frames:]
    lines = [f"{f.filename}:{f.lineno} in {f.name}" for f in stack]
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001
        text = "<str() of the exception raised>"
    lines.append(f"{type(exc).__name__}: {text}"[:300])
    return "\n".join(lines)


def _lookup(obj: Any, name: str) -> _Outcome:
    """Returns ``getattr(obj, name)`` as an outcome; a missing attribute gives _MISSING."""
    try:
        return _Outcome(getattr(obj, name))
    except AttributeError:
        return _Outcome(_MISSING)
    except Exception as exc:  # noqa: BLE001 - a hostile __getattr__ or property
        return _Outcome(error=exc)


def _arity_problem(func: Any, params: Sequence[str]) -> str | None:
    """Returns why ``func(*params)`` cannot be called positionally, or None when it can.

    Callables without an introspectable signature (some builtins) are given the
    benefit of the doubt.
    """
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*[object() for _ in params])
    except TypeError as exc:
        shown = signature.replace(return_annotation=inspect.Signature.empty)
        return f"its signature {shown} does not take {len(params)} positional argument(s) ({exc})"
    return None


def _method_findings(
    obj: Any, name: str, params: Sequence[str], *, missing: str, arity: str
) -> tuple[Any, list[Finding]]:
    """Returns the bound method ``obj.name`` (or None) and the findings about its shape."""
    call = f"{name}({', '.join(params)})"
    found = _lookup(obj, name)
    if found.error is not None:
        return None, [Finding.of(missing, f"looking up `{name}` raised "
                                 f"{type(found.error).__name__}", f"expected a callable {call}",
                                 obj, detail=found.detail)]
    if found.value is _MISSING or not callable(found.value):
        seen = "no attribute" if found.value is _MISSING else f"a {type(found.value).__name__}"
        return None, [Finding.of(missing, f"`{name}` is {seen}", f"expected a callable {call}",
                                 obj)]
    problem = _arity_problem(found.value, params)
    if problem is not None:
        return None, [Finding.of(arity, f"`{name}` cannot be called as {call}: {problem}",
                                 "SGLang passes the arguments positionally", obj)]
    return found.value, []


# ---------------------------------------------------------------- tensors


@dataclass(slots=True, eq=False)
class _Recorder:
    """A ``copy_tensor`` that records every argument and returns a host clone.

    Hashable by identity, like the function SGLang passes (``functools.cache`` works).
    """

    seen: list[Any] = field(default_factory=list)

    def __call__(self, tensor: Any) -> Any:
        import torch

        self.seen.append(tensor)
        if not torch.is_tensor(tensor):
            raise TypeError(f"copy_tensor expects a tensor, got {type(tensor).__name__}")
        return tensor.detach().to("cpu", copy=True)


def _overlapping_pairs(
    left: Sequence[TensorRef], right: Sequence[TensorRef]
) -> Iterable[tuple[TensorRef, TensorRef]]:
    """Yields each (left, right) pair of tensors that share at least one byte, in input order."""
    for i, j in _sharing_indices(left, right):
        yield left[i], right[j]


def _sharing_indices(left: Sequence[TensorRef], right: Sequence[TensorRef]) -> list[tuple[int, int]]:
    """Returns the sorted (left index, right index) pairs of tensors that share bytes.

    A sweep over bounding byte ranges finds the candidates in about n log n; the exact
    byte runs settle them, so interleaved strided views such as ``m[:, 0]`` and
    ``m[:, 1]`` do not count. Sparse and nested tensors count by the dense tensors
    holding their bytes; tensors with no readable bytes share nothing.
    """
    from auxcheck._byteranges import byte_range
    from auxcheck._exact import geometry, runs_of, runs_share

    items = []  # (device, lo, hi, side, index, part)
    for side, refs in ((0, left), (1, right)):
        for index, ref in enumerate(refs):
            for _, part in dense_parts([ref]):
                span = byte_range(part)
                if span is not None:
                    items.append((span.device, span.lo, span.hi, side, index, part))
    items.sort(key=lambda item: (item[0], item[1]))
    runs: dict[int, Any] = {}

    def runs_for(tensor: Any) -> Any:
        if id(tensor) not in runs:
            runs[id(tensor)] = runs_of(geometry(tensor))
        return runs[id(tensor)]

    pairs: set[tuple[int, int]] = set()
    active: list[tuple[Any, int, int, int, Any]] = []  # (device, hi, side, index, part)
    for device, lo, hi, side, index, part in items:
        active = [a for a in active if a[0] == device and a[1] > lo]
        for _, _, other_side, other, other_part in active:
            if other_side == side:
                continue
            pair = (index, other) if side == 0 else (other, index)
            if pair in pairs:
                continue
            a, b = runs_for(part), runs_for(other_part)
            if a is None or b is None or runs_share(a, b):  # too large to expand: bounding
                pairs.add(pair)
        active.append((device, hi, side, index, part))
    return sorted(pairs)


def _type_name(obj: Any) -> str:
    """Returns ``module.QualName`` of ``obj``'s type: cheap, unlike a repr of its tensors."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _shape(tensor: Any) -> str:
    try:
        sizes = ", ".join(str(n) for n in tensor.shape)
    except Exception:  # noqa: BLE001 - a nested tensor has no single shape
        sizes = "nested"
    return f"[{sizes}] {str(tensor.dtype).removeprefix('torch.')}"


def _static_registry(static_buffers: Any) -> StaticBufferRegistry:
    """Returns the static buffers as an aliasing registry; raises InvalidArgument on a non-tensor.

    Accepts a registry as is, a mapping of names to tensors, or an iterable of tensors.
    """
    import torch

    from auxcheck.aliasing import StaticBufferRegistry, as_registry

    if isinstance(static_buffers, StaticBufferRegistry):
        return static_buffers
    named = (dict(static_buffers) if isinstance(static_buffers, Mapping)
             else {f"static_buffers[{i}]": t for i, t in enumerate(static_buffers)})
    for label, buffer in named.items():
        if not torch.is_tensor(buffer):
            raise InvalidArgument(
                f"{label} is a {type(buffer).__name__}, not a tensor; "
                "pass the tensors a CUDA graph owns (e.g. its static input/output buffers)"
            )
    return as_registry(named)


# ---------------------------------------------------------------- device output


def check_device_output(
    obj: Any, *, static_buffers: StaticBuffers = (), pp_observer: Any = None
) -> Report:
    """Returns a report of every contract violation of ``obj`` as a device output.

    ``static_buffers`` (tensors a CUDA graph owns, a name -> tensor mapping, or an
    ``auxcheck.aliasing.StaticBufferRegistry``) are matched whole-storage, so a
    ``[:bs]`` view of a max-size buffer counts. Covers AUX101-105 and AUX110/111, then the host output it copies to (AUX201-204),
    and pipeline-parallel transport (AUX401-403) when ``obj`` has ``to_pp_tensors``
    or a ``pp_observer`` is given.
    """
    registry = _static_registry(static_buffers)
    report = Report(f"device output {_type_name(obj)}")
    device = unique_tensors(list(iter_tensors(obj)))
    copy_to_host, shape = _method_findings(obj, "copy_to_host", ["copy_tensor"],
                                           missing="AUX101", arity="AUX102")
    report.extend(shape)
    recorder, host = _Recorder(), None
    if copy_to_host is not None:
        host = _copy_findings(report, obj, copy_to_host, recorder)
    copied = unique_tensors(device + [("<copy_tensor argument>", t) for t in recorder.seen
                                      if _is_tensor(t)])
    report.extend(_duplicate_copy_findings(recorder.seen))
    if host is not None:
        report.extend(_bypass_findings(host, copied))
    report.extend(registry.findings(dense_parts(copied)))
    report.extend(_pp_findings(obj, host, pp_observer))
    if host is not None:
        copies = len(recorder.seen)
        report.extend(check_host_output(host, batch_size=_batch_size(device)))
        report.extend(_late_copy_findings(host, recorder.seen[copies:]))
    report.findings.sort(key=lambda f: f.code)
    return report


def _is_tensor(value: Any) -> bool:
    import torch

    return bool(torch.is_tensor(value))


def _copy_findings(report: Report, obj: Any, copy_to_host: Any, recorder: _Recorder) -> Any:
    """Calls ``copy_to_host(recorder)``; returns a usable host output or None (AUX103)."""
    outcome = _guard(copy_to_host, recorder)
    if outcome.error is not None:
        report.add(Finding.of("AUX103", f"copy_to_host raised {type(outcome.error).__name__}",
                              "expected a host output", obj, detail=outcome.detail))
        return None
    host = outcome.value
    consume = _lookup(host, "consume")
    if host is None or consume.error is not None or not callable(consume.value):
        seen = "None" if host is None else f"{describe(host)} with no callable `consume`"
        report.add(Finding.of("AUX103", f"copy_to_host returned {seen}",
                              "expected a host output with consume(batch, commits)", obj,
                              detail=consume.detail))
        return None
    return host


def _duplicate_copy_findings(seen: Sequence[Any]) -> list[Finding]:
    """Returns AUX104 for each later argument of copy_tensor sharing bytes with an earlier one."""
    refs = [(f"argument #{i + 1}", t) for i, t in enumerate(seen) if _is_tensor(t)]
    earliest: dict[int, int] = {}
    for later, earlier in _sharing_indices(refs, refs):
        if earlier < later:
            earliest.setdefault(later, earlier)
    return [
        Finding.of("AUX104", f"copy_tensor {refs[i][0]} {_shape(refs[i][1])} shares bytes "
                   f"with {refs[j][0]}", "expected each distinct tensor to be copied once",
                   refs[i][1])
        for i, j in sorted(earliest.items())
    ]


def _bypass_findings(host: Any, device: Sequence[TensorRef]) -> list[Finding]:
    """Returns AUX105 for each host-side tensor sharing bytes with a device tensor."""
    kept = unique_tensors(list(iter_tensors(host)))
    return [
        Finding.of("AUX105", f"host output {path} {_shape(t)} shares bytes with device "
                   f"tensor {where}", "expected only tensors that copy_tensor returned", host)
        for (path, t), (where, _) in _first_overlaps(kept, device)
    ]


def _late_copy_findings(host: Any, late: Sequence[Any]) -> list[Finding]:
    """Returns AUX105 when the host output called copy_tensor after copy_to_host returned."""
    if not late:
        return []
    return [Finding.of("AUX105", f"the host output called copy_tensor {len(late)} time(s) after "
                       "copy_to_host returned (from consume), so it kept device tensors to copy "
                       "later", "expected every copy made inside copy_to_host", host)]


def _first_overlaps(
    left: Sequence[TensorRef], right: Sequence[TensorRef]
) -> list[tuple[TensorRef, TensorRef]]:
    """Returns, for each left tensor that overlaps any right tensor, its first such pair."""
    pairs: dict[int, tuple[TensorRef, TensorRef]] = {}
    for a, b in _overlapping_pairs(left, right):
        pairs.setdefault(id(a[1]), (a, b))
    return list(pairs.values())


def _batch_size(tensors: Sequence[TensorRef]) -> int:
    """Returns the leading dimension of the first non-scalar tensor, as the batch size."""
    for _, tensor in tensors:
        try:
            rows = int(tensor.shape[0]) if tensor.dim() >= 1 else 0
        except Exception:  # noqa: BLE001, S112 - a nested tensor has no single shape
            continue
        if 0 < rows <= _MAX_BATCH_SIZE:
            return rows
    return _DEFAULT_BATCH_SIZE


# ---------------------------------------------------------------- pipeline parallel


def _pp_findings(obj: Any, host: Any, pp_observer: Any) -> list[Finding]:
    """Returns AUX401-403 findings for PP transport of ``obj`` (none when PP is not in play)."""
    to_pp = _lookup(obj, "to_pp_tensors")
    absent = to_pp.error is not None or to_pp.value is _MISSING
    if absent and pp_observer is None:
        return []
    if absent or not callable(to_pp.value):
        return [Finding.of("AUX401", "pipeline-parallel transport needs `to_pp_tensors`, "
                           f"but it is {_absence(to_pp)}",
                           "expected to_pp_tensors() -> Mapping[str, Tensor]", obj,
                           detail=to_pp.detail)]
    outcome = _guard(to_pp.value)
    if outcome.error is not None:
        return [Finding.of("AUX402", f"to_pp_tensors raised {type(outcome.error).__name__}",
                           "expected a mapping of names to tensors", obj, detail=outcome.detail)]
    findings = _pp_mapping_findings(obj, outcome.value)
    if findings or pp_observer is None:
        return findings
    return _round_trip_findings(obj, host, outcome.value, pp_observer)


def _absence(found: _Outcome) -> str:
    if found.error is not None:
        return f"unreadable ({type(found.error).__name__})"
    return "missing" if found.value is _MISSING else f"a {type(found.value).__name__}"


def _pp_mapping_findings(obj: Any, tensors: Any) -> list[Finding]:
    """Returns AUX402 findings for an empty mapping, a bad name or a non-tensor value."""
    expected = "expected a non-empty mapping of non-empty string names to tensors"
    if not isinstance(tensors, Mapping):
        return [Finding.of("AUX402", f"to_pp_tensors returned a {type(tensors).__name__}",
                           expected, obj)]
    if not tensors:
        return [Finding.of("AUX402", "to_pp_tensors returned an empty mapping", expected, obj)]
    findings = []
    for name, value in tensors.items():
        if not isinstance(name, str) or not name:
            findings.append(Finding.of("AUX402", f"to_pp_tensors name {describe(name)} is "
                                       "not a non-empty string", expected, obj))
        if not _is_tensor(value):
            findings.append(Finding.of("AUX402", f"to_pp_tensors value {describe(name)} is a "
                                       f"{type(value).__name__}", expected, obj))
    return findings


def _round_trip_findings(obj: Any, host: Any, tensors: Mapping[str, Any],
                         observer: Any) -> list[Finding]:
    """Returns AUX403 findings for ``observer.from_pp_tensors`` of ``obj``'s PP tensors."""
    from_pp, findings = _method_findings(observer, "from_pp_tensors", ["tensors"],
                                         missing="AUX403", arity="AUX403")
    if from_pp is None:
        return findings
    # The receiving stage gets fresh tensors, never the sender's storage.
    outcome = _guard(from_pp, {name: t.detach().clone() for name, t in tensors.items()})
    if outcome.error is not None or outcome.value is None:
        seen = "returned None" if outcome.error is None else \
            f"raised {type(outcome.error).__name__}"
        return [Finding.of("AUX403", f"from_pp_tensors {seen}",
                           "expected an equivalent device output", observer,
                           detail=outcome.detail)]
    return _host_value_findings(obj, host, outcome.value)


def _host_value_findings(obj: Any, host: Any, rebuilt: Any) -> list[Finding]:
    """Returns AUX403 when the rebuilt output copies to host values unlike the original's."""
    expected = "expected the rebuilt output to copy to the same host values"
    copy = _lookup(rebuilt, "copy_to_host")
    outcome = _guard(copy.value, _Recorder()) if callable(copy.value) else \
        _Outcome(error=copy.error or TypeError("the rebuilt output has no copy_to_host"))
    if outcome.error is not None:
        return [Finding.of("AUX403", f"copying the rebuilt output raised "
                           f"{type(outcome.error).__name__}", expected, rebuilt,
                           detail=outcome.detail)]
    if host is None:
        return []
    mismatch = _tensor_mismatch(list(iter_tensors(host)), list(iter_tensors(outcome.value)))
    if mismatch is None:
        return []
    return [Finding.of("AUX403", f"the rebuilt output's host values differ: {mismatch}",
                       expected, rebuilt)]


def _tensor_mismatch(left: Sequence[TensorRef], right: Sequence[TensorRef]) -> str | None:
    """Returns how two host outputs' tensors differ, or None when all are torch.equal."""
    import torch

    if len(left) != len(right):
        return f"{len(left)} tensors before transport, {len(right)} after"
    for (path, a), (_, b) in zip(left, right):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{path} {_shape(a)} became {_shape(b)} after transport"
        if not torch.equal(a, b.to(a.device)):
            return f"{path} {_shape(a)} holds different values after transport"
    return None


# ---------------------------------------------------------------- host output


def check_host_output(obj: Any, *, batch_size: int | None = None) -> Report:
    """Returns a report of every contract violation of ``obj`` as a host output (AUX201-204).

    ``consume`` is called on an empty batch and on batches of ``batch_size`` requests
    (default: the leading dimension of the first tensor ``obj`` holds, else 3) over
    several steps, with commits built as the scheduler builds them.
    """
    report = Report(f"host output {_type_name(obj)}")
    consume, shape = _method_findings(obj, "consume", ["batch", "commits"],
                                      missing="AUX201", arity="AUX201")
    report.extend(shape)
    if consume is None:
        return report
    size = batch_size if batch_size is not None else _batch_size(list(iter_tensors(obj)))
    seen: set[str] = set()
    for scenario, batch, commits in _scenarios(size):
        for finding in _consume_findings(obj, consume, scenario, batch, commits):
            if finding.code not in seen:  # one finding per rule: later steps repeat it
                seen.add(finding.code)
                report.add(finding)
    return report


def _scenarios(size: int) -> Iterable[tuple[str, FakeBatch, list[CommittedTokens | None]]]:
    """Yields (name, batch, commits) steps: empty batch, None entries, several steps."""
    yield "an empty batch", FakeBatch([]), []
    batch = FakeBatch([FakeReq(f"req-{i}") for i in range(size)])
    for step in range(3):
        starts = snapshot_output_starts(batch)
        for i, req in enumerate(batch.reqs):
            if (i + step) % 2 == 0:  # every other request gets no visible token
                req.output_ids.extend([100 + step] * (1 + step % 2))
        if step == 2 and batch.reqs:
            batch.reqs[0].finished_len = len(batch.reqs[0].output_ids)
        yield f"step {step + 1} of {size} requests", batch, build_commits(batch, starts)
    yield f"{size} requests with no new token", batch, [None] * size


def _consume_findings(obj: Any, consume: Any, scenario: str, batch: FakeBatch,
                      commits: list[CommittedTokens | None]) -> list[Finding]:
    """Calls ``consume(batch, commits)`` once; returns AUX202-204 findings."""
    reqs, before = batch.reqs, tuple(batch.reqs)
    outputs = [(list(req.output_ids), req.finished_len) for req in reqs]
    entries = tuple(commits)
    values = [None if c is None else (c.output_index, c.token_ids) for c in commits]
    outcome = _guard(consume, batch, commits)
    findings = []
    if outcome.error is not None:
        findings.append(Finding.of("AUX202", f"consume raised {type(outcome.error).__name__} "
                                   f"on {scenario}", "expected it to handle valid commits",
                                   obj, detail=outcome.detail))
    changed = _commits_changed(commits, entries, values)
    if changed:
        findings.append(Finding.of("AUX203", f"consume mutated commits on {scenario}: {changed}",
                                   "expected commits left as passed", obj))
    if batch.reqs is not reqs or tuple(reqs) != before:
        findings.append(Finding.of("AUX203", f"consume mutated batch.reqs on {scenario}",
                                   "expected batch.reqs left as passed", obj))
    batch.reqs = reqs
    reqs[:] = before
    for req, (output_ids, finished_len) in zip(reqs, outputs):
        if (req.output_ids, req.finished_len) != (output_ids, finished_len):
            findings.append(Finding.of("AUX203", f"consume changed the committed output of "
                                       f"request {req.rid!r} on {scenario}",
                                       "expected requests' output_ids left as committed", obj))
            req.output_ids, req.finished_len = output_ids, finished_len
    if outcome.error is None and outcome.value is not None:
        findings.append(Finding.of("AUX204", f"consume returned {describe(outcome.value)} on "
                                   f"{scenario}", "expected None", obj))
    return findings


def _commits_changed(commits: list[CommittedTokens | None], entries: tuple[Any, ...],
                     values: list[Any]) -> str | None:
    """Returns how ``commits`` changed since it was passed, or None when unchanged."""
    if len(commits) != len(entries):
        return f"length {len(entries)} became {len(commits)}"
    for i, (now, was) in enumerate(zip(commits, entries)):
        if now is not was:
            return f"entry {i} was replaced"
        if was is not None and (was.output_index, was.token_ids) != values[i]:
            return f"entry {i} was modified in place"
    return None


# ---------------------------------------------------------------- commits


def check_commits(batch: Any, commits: Any) -> Report:
    """Returns AUX601 findings: commits not aligned with ``batch.reqs``, or malformed entries."""
    report = Report(f"commits for {_type_name(batch)}")
    reqs = _lookup(batch, "reqs")
    if reqs.error is not None or reqs.value is _MISSING:
        report.add(Finding.of("AUX601", "the batch has no readable `reqs`",
                              "expected a batch whose reqs the commits align with", batch,
                              detail=reqs.detail))
        return report
    if not isinstance(commits, Sequence) or isinstance(commits, (str, bytes)):
        report.add(Finding.of("AUX601", f"commits is a {type(commits).__name__}",
                              "expected a sequence with one entry per request", commits))
        return report
    requests = list(reqs.value)
    if len(commits) != len(requests):
        report.add(Finding.of("AUX601", f"{len(commits)} commits for {len(requests)} requests",
                              "expected one entry per request in batch.reqs", commits))
    for i, (req, commit) in enumerate(zip(requests, commits)):
        report.extend(_commit_findings(i, req, commit))
    return report


def _commit_findings(index: int, req: Any, commit: Any) -> list[Finding]:
    """Returns AUX601 findings for one commit entry (None is always well formed)."""
    if commit is None:
        return []
    where = f"commits[{index}]"
    if not _looks_committed(commit):
        return [Finding.of("AUX601", f"{where} is a {type(commit).__name__}",
                           "expected None or CommittedTokens", commit)]
    problem = _malformed(commit) or _misaligned(req, commit)
    if problem is None:
        return []
    return [Finding.of("AUX601", f"{where} {problem}", "expected a well-formed entry that "
                       "matches the request's visible output", commit)]


def _looks_committed(commit: Any) -> bool:
    """Returns True for auxcheck's or SGLang's CommittedTokens (matched by name and fields)."""
    if isinstance(commit, CommittedTokens):
        return True
    fields = (_lookup(commit, "output_index"), _lookup(commit, "token_ids"))
    return type(commit).__name__ == "CommittedTokens" and all(
        f.error is None and f.value is not _MISSING for f in fields)


def _malformed(commit: Any) -> str | None:
    """Returns what is wrong with a CommittedTokens' fields, or None."""
    index, tokens = commit.output_index, commit.token_ids
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        return f"has output_index {describe(index)}, not an int >= 0"
    if not isinstance(tokens, tuple):
        return f"has token_ids of type {type(tokens).__name__}, not a tuple"
    if not tokens:
        return "has an empty token_ids tuple"
    if any(not isinstance(t, int) or isinstance(t, bool) for t in tokens):
        return "has a token id that is not an int"
    return None


def _misaligned(req: Any, commit: Any) -> str | None:
    """Returns how ``commit`` disagrees with ``req``'s visible output, or None."""
    from auxcheck._scheduler import visible_output_len

    try:
        visible = visible_output_len(req)
    except Exception:  # noqa: BLE001 - not a request we can judge
        return None
    expected = visible - len(commit.token_ids)
    if commit.output_index != expected:
        return (f"has output_index {commit.output_index}, but request "
                f"{describe(getattr(req, 'rid', req))} shows {visible} visible tokens, "
                f"so {len(commit.token_ids)} new ones start at {expected}")
    return None


# ---------------------------------------------------------------- sampling observer


_OBSERVER_HOOKS = {
    "is_active": ["sampling_info"],
    "before_grammar": ["logits", "sampling_info"],
    "after_sample": ["state", "token_ids"],
}
_OBSERVER_HINT = ("define is_active(self, sampling_info), before_grammar(self, logits, "
                  "sampling_info) and after_sample(self, state, token_ids); SGLang calls "
                  "them positionally")


def check_sampling_observer(obj: Any, *, device_output: Any = None) -> Report:
    """Returns a report of the hooks of ``obj`` as a SamplingObserver, plus its PP round trip.

    There is no rule for observers yet: a missing, non-callable or ill-shaped hook is
    reported under AUX102 (callable as SGLang calls it) with an observer-specific hint.
    A ``from_pp_tensors`` of the wrong shape is AUX403; with ``device_output`` given, its
    PP tensors are sent through ``obj.from_pp_tensors`` and compared (AUX401-403).
    """
    report = Report(f"sampling observer {_type_name(obj)}")
    for name, params in _OBSERVER_HOOKS.items():
        _, shape = _method_findings(obj, name, params, missing="AUX102", arity="AUX102")
        report.extend(_with_hint(f, _OBSERVER_HINT) for f in shape)
    has_from_pp = _lookup(obj, "from_pp_tensors")
    if has_from_pp.value is not _MISSING or has_from_pp.error is not None:
        report.extend(_method_findings(obj, "from_pp_tensors", ["tensors"],
                                       missing="AUX403", arity="AUX403")[1])
    if device_output is not None:
        report.extend(f for f in check_device_output(device_output, pp_observer=obj)
                      if get_rule(f.code).family == "AUX4")
    return report


def _with_hint(finding: Finding, hint: str) -> Finding:
    return Finding(finding.code, finding.message, finding.obj, hint, finding.location,
                   finding.detail)
