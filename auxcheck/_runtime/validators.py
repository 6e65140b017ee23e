"""The ``check_*`` validators: each collects one subject's findings into a Report.

:mod:`auxcheck.validate` re-exports the public names; its docstring is the user's
documentation, and this module the implementation behind it.
"""

from __future__ import annotations

import functools
import itertools
from array import array
from collections.abc import Callable, Sequence
from types import MemberDescriptorType
from typing import TYPE_CHECKING, Any

from auxcheck._core.errors import InvalidArgument
from auxcheck._core.plugin_calls import (
    MISSING,
    Outcome,
    announce,
    attempt,
    kind_name,
    lookup,
    type_name,
)
from auxcheck._core.protocols import CommittedTokens
from auxcheck._core.report import Finding, Report, describe
from auxcheck._runtime.judging import (
    catch_escapes_and_stops,
    declared_batch_size,
    plain_int,
    static_registry,
)
from auxcheck._runtime.observer_reports import forward_report, sampling_report
from auxcheck._runtime.pipeline import pp_findings

if TYPE_CHECKING:
    from auxcheck._runtime.static_buffers import StaticBuffers


def _check_steps(steps: Any) -> None:
    """Raises InvalidArgument unless ``steps`` is a whole number >= 1: no steps would pass vacuously."""
    if type(steps) is not int or steps < 1:
        raise InvalidArgument(f"steps={describe(steps)}; expected a whole number >= 1 (the steps "
                              "of SGLang's loop to run: with none, nothing would be judged)")


# ---------------------------------------------------------------- device output


def check_device_output(
    obj: Any, *, batch_size: int | None = None, static_buffers: StaticBuffers = (),
    pp_observer: Any = None, speculative: bool = False,
) -> Report:
    """Returns a report of every contract violation of ``obj`` as a device output.

    ``obj`` is copied once with SGLang's kind of ``copy_tensor`` and its host output
    consumed once, with a batch of ``batch_size`` requests (the batch it was built for;
    when not given it is inferred from the tensors' shapes, and the findings it affects
    say so). ``static_buffers`` (tensors a CUDA graph owns, a name -> tensor mapping, or
    an ``auxcheck.aliasing.StaticBufferRegistry``) are matched whole-storage, so a
    ``[:bs]`` view of a max-size buffer counts. Covers AUX101-106, AUX110/111 and
    AUX201-204, and pipeline-parallel transport (AUX401-403) when ``obj`` has
    ``to_pp_tensors`` or a ``pp_observer`` is given. ``consume`` sees the steps stock
    SGLang's sampling observers see (at most one new token per request); pass
    ``speculative=True`` when the output is published under speculative decoding.
    """
    from auxcheck._runtime.output_sources import OutputSource, check_source

    batch_size = declared_batch_size(batch_size)
    registry, unreadable = static_registry(static_buffers)
    subject = f"device output {type_name(obj)}"

    def check() -> Report:
        report = Report(subject, list(unreadable))
        report.extend(check_source(OutputSource("instance", obj), batch_size=batch_size,
                                   static=registry, steps=1, speculative=speculative))
        report.extend(pp_findings(obj, pp_observer))
        report.findings.sort(key=lambda f: f.code)
        return report

    return catch_escapes_and_stops("AUX103", subject, obj, check)


def check_device_outputs(
    factory: Callable[..., Any], *, batch_size: int | None = None,
    static_buffers: StaticBuffers = (), pp_observer: Any = None, steps: int = 3,
    speculative: bool = False,
) -> Report:
    """Returns a report of the device outputs ``factory`` makes, one per step of SGLang's loop.

    ``factory`` takes no argument, or the step's batch (then every step's batch is built
    for it). Each step's output is copied right after its forward and consumed after
    the next one, so an output whose tensors the next call overwrites is AUX112; every
    rule of :func:`check_device_output` applies to each output (``speculative`` as there).
    """
    from auxcheck._runtime.output_sources import (
        OutputSource,
        check_source,
        sample_output,
        source_of,
    )

    batch_size = declared_batch_size(batch_size)
    _check_steps(steps)
    registry, unreadable = static_registry(static_buffers)
    subject = f"device outputs of {describe(factory)}"

    def check() -> Report:
        source = source_of(factory)
        kind = "factory" if source.kind == "instance" else source.kind
        report = Report(subject, list(unreadable))
        report.extend(check_source(OutputSource(kind, factory), batch_size=batch_size,
                                   static=registry, steps=steps, speculative=speculative))
        sample = sample_output(OutputSource(kind, factory), batch_size)
        if sample is not None:
            report.extend(pp_findings(sample, pp_observer))
        report.findings.sort(key=lambda f: f.code)
        return report

    return catch_escapes_and_stops("AUX103", subject, factory, check)


def check_host_output(obj: Any, *, batch_size: int | None = None,
                      speculative: bool = False) -> Report:
    """Returns a report of every contract violation of ``obj`` as a host output (AUX201-204).

    ``consume`` is called exactly once, as SGLang calls it: with a batch of
    ``batch_size`` requests (default: inferred from the tensors ``obj`` holds) in the
    middle of generation, where requests decode, finish, abort or get no token, and
    commits built as the scheduler builds them; with ``speculative``, some requests get
    several tokens in the step, as under speculative decoding.
    """
    from auxcheck._runtime.batches import BatchSize, batch_noted, infer_batch_sizes
    from auxcheck._runtime.loop import run_loop
    from auxcheck._runtime.published import HostOnly

    batch_size = declared_batch_size(batch_size)
    subject = f"host output {type_name(obj)}"

    def check() -> Report:
        report = Report(subject)
        size = BatchSize((batch_size,)) if batch_size else infer_batch_sizes(obj)[0]
        for finding in run_loop(lambda forward: HostOnly(obj), size=size, steps=1,
                                speculative=speculative):
            report.add(batch_noted(finding, size.how))
        return report

    return catch_escapes_and_stops("AUX202", subject, obj, check)


# ---------------------------------------------------------------- commits


def check_commits(batch: Any, commits: Any) -> Report:
    """Returns AUX601 findings: commits not aligned with ``batch.reqs``, or malformed entries.

    ``batch``, its requests and ``commits`` are read through guarded calls: a ``len`` or
    an iteration that raises, a field whose comparison raises, is a finding too.
    """
    subject = f"commits for {type_name(batch)}"
    if _plainly_aligned(batch, commits):  # the live guard's every step: no finding to look for
        return Report(subject)
    return catch_escapes_and_stops("AUX601", subject, commits, lambda: _commits_report(subject, batch,
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
    """Returns ``value`` as a plain int >= 0 (see :func:`plain_int`), else None."""
    number = plain_int(value)
    return number if number is not None and number >= 0 else None


# ---------------------------------------------------------------- observers


def check_sampling_observer(
    obj: Any, *, device_output: Any = None, batch_size: int | None = None,
    static_buffers: StaticBuffers = (), steps: int = 4, speculative: bool = False,
) -> Report:
    """Returns a report of ``obj`` as a SamplingObserver, run through SGLang's step loop.

    A missing, non-callable, ill-shaped or raising hook is AUX102 with an
    observer-specific hint. With well-shaped hooks the observer runs ``steps`` steps of
    the overlap loop (logits are views of CUDA-graph outputs on decode steps, rewritten
    by every replay), and each output it publishes is judged as SGLang runs it
    (AUX101-106, AUX110-112, AUX201-204). A ``from_pp_tensors`` of the wrong shape is
    AUX403; with ``device_output`` given, its PP tensors are sent through
    ``obj.from_pp_tensors`` and compared (AUX401-403). Steps give each request one token
    at most, as stock SGLang runs no sampling observer under speculative decoding or
    dLLM; ``speculative=True`` for a model runner that does.
    """
    return _observer_check("sampling", obj, batch_size, static_buffers, steps, functools.partial(
        sampling_report, obj, device_output=device_output, speculative=speculative))


def check_forward_observer(
    obj: Any, *, sampling_observer: Any = None, batch_size: int | None = None,
    static_buffers: StaticBuffers = (), steps: int = 4, speculative: bool = False,
) -> Report:
    """Returns a report of ``obj`` as a ForwardObserver (SGLang main), run through the step loop.

    ``after_forward(batch, forward_batch, logits_output, can_run_graph=...)`` runs right
    after each forward; on decode steps ``logits_output`` holds views of the CUDA graph's
    persistent outputs. With ``sampling_observer`` its output is composed after the
    forward output, as SGLang composes them. An ill-shaped or raising hook is AUX102.
    ``speculative`` as in :func:`check_sampling_observer` (SGLang main refuses forward
    observers under speculative decoding and dLLM too).
    """
    return _observer_check("forward", obj, batch_size, static_buffers, steps, functools.partial(
        forward_report, obj, sampling_observer=sampling_observer, speculative=speculative))


def _observer_check(kind: str, obj: Any, batch_size: int | None,
                    static_buffers: StaticBuffers, steps: int,
                    report: Callable[..., Report]) -> Report:
    """Returns ``report(batch_size=, static=, steps=, found=)`` for the ``kind`` observer
    ``obj``, after checking the arguments; whatever escapes it is an AUX102 finding."""
    size = declared_batch_size(batch_size)
    _check_steps(steps)
    registry, unreadable = static_registry(static_buffers)
    return catch_escapes_and_stops("AUX102", f"{kind} observer {type_name(obj)}", obj,
                                   lambda: report(batch_size=size, static=registry, steps=steps,
                                                  found=unreadable))
