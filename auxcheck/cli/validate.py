"""``auxcheck validate MODULE:ATTR...``: runs the runtime contract checks on plugin objects.

The plugin's code (its import, its factories, every check) runs in worker processes
(:mod:`auxcheck._isolation.child`), never in this one: an ``os._exit``, a signal, a hang or a print
to stdout in plugin code becomes a finding blamed on the plugin call that was running,
and cannot decide the exit status, corrupt ``--format json`` or stop the other targets.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import itertools
import json
import os
import sys
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from auxcheck._core import progress
from auxcheck._core.errors import InvalidArgument, UsageError
from auxcheck._core.escape import printable
from auxcheck._core.imports import is_missing, missing_module_hint, near_modules
from auxcheck._core.plugin_calls import attempt, type_name
from auxcheck._core.report import Finding, Report, describe
from auxcheck._core.text import close_names, did_you_mean, plural
from auxcheck.cli._common import (
    CommandParser,
    add_format,
    add_quiet,
    add_timeout,
    positive_int,
    run_command,
    say,
)

if TYPE_CHECKING:
    from auxcheck._isolation.child import Channel
    from auxcheck._isolation.runner import Unit

__all__ = ["DESCRIPTION", "main", "prepare", "serve"]

DESCRIPTION = (
    "Check objects against the auxiliary-output contract: each MODULE:ATTR given (one or "
    "more) is loaded, called first when it is a class or a zero-argument factory function, "
    "and checked as a device output when it has copy_to_host (or nothing else it could be), "
    "as a host output when it has consume, as a sampling observer when it has is_active, "
    "before_grammar or after_sample (driven through SGLang's step loop), as a forward "
    "observer when it has after_forward. Each target is "
    "loaded and checked in a process of its own: plugin code that ends the process "
    "(os._exit, a signal) or runs past --timeout is a finding under the rule of the call "
    "that was running, and the other targets are still checked. Exit status: 0 "
    "when clean (notes such as AUX106 included), 1 on findings, 2 on usage errors."
)

_OBSERVER_HOOKS = ("is_active", "before_grammar", "after_sample")
PROG = "auxcheck validate"
TIMEOUT = 60.0
"""The default of ``--timeout``: seconds each target's loading and checks may take."""
_LOAD_CODE = "AUX101"
"""The rule blamed when loading a target (its import, its factory) ends the process."""
_OPTIONS_KEY = "options"
"""The phase key of loading --pp-observer and --static-buffers: shared by every target."""
_LOAD_TITLE = "the target could not be loaded: its import, an attribute or its factory failed"
"""The heading of a finding about loading a target, which AUX101's title does not describe."""
_RUNNER_TITLE = "auxcheck could not run the checks: its runner process failed"
_TAIL_LINES = 12
_MAX_BUFFERS = 100_000
"""The most tensors --static-buffers may name (a graph owns far fewer)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``auxcheck validate``; returns 0 when clean, 1 on findings, 2 on usage errors."""
    return run_command(PROG, _main, argv, stoppable=True)


def _main(argv: list[str]) -> int:
    options = _parser().parse_args(argv)
    ignored = _ignored(options.ignore)
    for spec in [*options.targets, options.pp_observer, options.static_buffers]:
        if spec is not None:
            _split(spec)
    results = _run(options, ignored)
    _print(results, options.format, paths=options.path)
    return 0 if all(result.report.ok for result in results) else 1


def _parser() -> CommandParser:
    parser = CommandParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("targets", nargs="+", metavar="MODULE:ATTR",
                        help="the objects to check, one or more: each an object, a class or "
                        "a zero-argument factory function, as module:attribute (e.g. "
                        "mypkg.outputs:make_output)")
    add_format(parser, ("text", "json", "sarif"),
               help="report format (default: text; sarif: a SARIF 2.1.0 log for code scanning)")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODES",
                        help="rule codes or families to ignore, e.g. AUX104,AUX4 (a target "
                        "whose code ended the process or ran past --timeout is reported "
                        "all the same)")
    parser.add_argument("--pp-observer", metavar="MODULE:ATTR",
                        help="observer (or factory) whose from_pp_tensors receives PP tensors; "
                        "checks device outputs in pipeline-parallel mode")
    parser.add_argument("--static-buffers", metavar="MODULE:ATTR",
                        help="tensors, a name -> tensor mapping or a StaticBufferRegistry (or "
                        "a factory of one) a CUDA graph owns (AUX110)")
    parser.add_argument("--batch-size", type=positive_int, default=None, metavar="N",
                        help="the number of requests the outputs are built for (default: "
                        "inferred from their tensors' shapes, and said so in the findings)")
    parser.add_argument("--speculative", action="store_true",
                        help="the outputs are published under speculative decoding or dLLM (a "
                        "model runner that allows observers there): consume then sees steps "
                        "that commit several tokens to a request (default: one at most, as "
                        "stock SGLang runs no observer under them)")
    parser.add_argument("--path", action="append", default=[], metavar="DIR",
                        help="directory to put first on sys.path (repeatable; the current "
                        "directory is always importable)")
    add_timeout(parser, default=TIMEOUT,
                help="seconds each target may take, from its import to its last check; a "
                "target still running then is killed and reported under the rule of the "
                "call that hung")
    add_quiet(parser)
    return parser


# ---------------------------------------------------------------- the parent


class _Result(NamedTuple):
    """One target's report, and its JSON data (objects described by the worker)."""

    report: Report
    data: dict[str, Any]


def _run(options: argparse.Namespace, ignored: frozenset[str]) -> list[_Result]:
    """Returns one result per target, each loaded and checked in a worker process."""
    from auxcheck._isolation.runner import borrow

    targets: list[str] = options.targets
    request = {"targets": targets, "ignore": sorted(ignored), "pp_observer": options.pp_observer,
               "static_buffers": options.static_buffers, "batch_size": options.batch_size,
               "speculative": options.speculative,
               "sys_path": _sys_path(options.path),
               "cwd": os.getcwd(), "environ": dict(os.environ)}
    results: dict[int, _Result] = {}
    with (progress.reporting(PROG, enabled=not options.quiet),
          borrow("auxcheck.cli.validate:serve", timeout=options.timeout) as runner,
          progress.task("checking", unit="targets", total=len(targets)) as job):
        job.update(0)
        for index, spec in enumerate(targets):
            if index in results:
                continue
            unit = runner.run(index, request)
            progress.clear()  # plugin output goes below, not into, a line drawn in place
            _echo(runner.startup_output + unit.output)
            runner.startup_output = ""
            results[index] = _result(spec, unit)
            for other in _shared(targets, unit, set(results)):
                results[other] = _result(targets[other], unit, shared_with=spec)
            # Counted once checked (and the targets ending as it did with it), so the end
            # line counts the last one too.
            job.update(len(results))
    return [results[index] for index in range(len(targets))]


def _shared(targets: Sequence[str], unit: Unit, done: set[int]) -> list[int]:
    """Returns the targets not yet run that would end as ``unit`` did: those importing the
    same module, every one when an option's loading or the runner's start failed."""
    if unit.ending is None:
        return []
    if unit.phase is None:  # the runner could not start: it would not for the next target
        return [i for i in range(len(targets)) if i not in done]
    return _sharing(targets, unit.phase.key, done) if unit.phase.key else []


def _sys_path(dirs: Sequence[str]) -> list[str]:
    """Returns the workers' module search path: ``dirs``, the current directory, then ours."""
    return [os.path.abspath(d) for d in dirs] + [os.getcwd()] + sys.path


def _sharing(targets: Sequence[str], key: str, done: set[int]) -> list[int]:
    """Returns the targets not yet run that would reach the phase ``key`` the same way."""
    return [i for i, spec in enumerate(targets) if i not in done
            and (key == _OPTIONS_KEY or key == _import_key(spec.partition(":")[0]))]


def _import_key(module: str) -> str:
    return f"import {module}"


def _echo(output: str) -> None:
    """Passes what plugin code wrote to stdout or stderr on to our stderr (never stdout),
    with what a terminal would act on (escape sequences, carriage returns) escaped."""
    if output:
        output = printable(output)
        sys.stderr.write(output if output.endswith("\n") else output + "\n")


def _result(spec: str, unit: Unit, *, shared_with: str | None = None) -> _Result:
    """Returns the result of ``spec`` from what its unit sent and how it ended."""
    for message in unit.messages:
        if message.get("t") == "usage" and shared_with is None:
            raise UsageError(str(message.get("message")))
    sent = None if shared_with else _last_report(unit.messages)
    report, data = sent if sent is not None else _empty(spec)
    extra = _ended(spec, unit, shared_with) if unit.ending is not None else _failed(spec, unit)
    if extra is not None:
        report.add(extra)
        data["findings"].append(extra.to_dict())
        data["ok"] = False
    return _Result(report, data)


def _last_report(messages: Sequence[Mapping[str, Any]]) -> tuple[Report, dict[str, Any]] | None:
    """Returns the last report the worker sent (with its data), or None when none was sent."""
    for message in reversed(messages):
        if message.get("t") != "report":
            continue
        data = message.get("data")
        try:
            return _report_of(data), data
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
    return None


def _report_of(data: Mapping[str, Any]) -> Report:
    from auxcheck._core.rules import get_rule

    def findings(key: str) -> list[Finding]:  # the keys of Finding.to_dict
        return [Finding(str(f["code"]), str(f["message"]), None, str(f["hint"]),
                        f["location"], f["detail"],
                        None if f["title"] == get_rule(str(f["code"])).title else str(f["title"]))
                for f in data[key]]

    return Report(str(data["subject"]), findings("findings"), findings("notes"))


def _empty(spec: str) -> tuple[Report, dict[str, Any]]:
    report = Report(spec)
    return report, report.to_dict()


def _failed(spec: str, unit: Unit) -> Finding | None:
    """Returns a finding when the worker finished without a report (auxcheck's own failure)."""
    if any(m.get("t") == "report" for m in unit.messages):
        return None
    errors = [str(m.get("error")) for m in unit.messages if m.get("t") == "error"]
    why = errors[0] if errors else "it sent no report"
    return Finding(_LOAD_CODE, f"checking {spec} failed inside auxcheck ({why}); expected a "
                   "report", None, "this is a bug in auxcheck: please report it with the target",
                   None, _tail(unit.output), "auxcheck failed while checking the target")


def _ended(spec: str, unit: Unit, shared_with: str | None) -> Finding:
    """Returns the finding of a unit that ended the process or ran past the time limit."""
    from auxcheck._core.rules import RULES
    from auxcheck._isolation.runner import Phase

    ending = unit.ending
    if ending is not None and ending.kind == "runner" and unit.phase is None:
        return _not_started(spec, ending.note, shared_with)
    phase = unit.phase or Phase(_LOAD_CODE, f"loading {spec}", title=_LOAD_TITLE)
    code = phase.code if phase.code in RULES else _LOAD_CODE
    if ending is not None and ending.kind == "timeout":
        seen = f"{phase.what} {ending.text()}"
        hint = ("make it return or raise in time; when it is only slow, give it longer with "
                "--timeout SECONDS (0: no limit)")
    else:
        seen = f"the process checking {spec} {'?' if ending is None else ending.text()} " \
               f"during {phase.what}"
        hint = ("plugin code must return or raise, never end or signal the process "
                "(os._exit, os.abort, os.kill, a crash in native code): raise an exception")
    also = (f" (not tried again: {shared_with} reached it first)" if shared_with else "")
    expected = f"expected it to return or raise; the rest of {spec} was not checked{also}"
    return Finding(code, f"{seen}; {expected}", None, hint, None,
                   None if shared_with else _tail(unit.output), phase.title)


def _not_started(spec: str, why: str, shared_with: str | None) -> Finding:
    """Returns the finding of a target whose worker never started: the runner process failed."""
    also = f" (not tried again: it failed for {shared_with} first)" if shared_with else ""
    return Finding(_LOAD_CODE, f"auxcheck's runner process could not run {spec}: {why}"
                   f"{also}; expected it to start and run the checks; no plugin code had run",
                   None, "no plugin code ran yet: check the Python environment auxcheck runs "
                   "in (sitecustomize, .pth files, PYTHONPATH, a torch import that hangs); on "
                   "a slow machine give it longer with --timeout SECONDS", None, None,
                   _RUNNER_TITLE)


def _tail(output: str) -> str | None:
    lines = output.strip("\n").splitlines()[-_TAIL_LINES:]
    return ("its last output:\n" + "\n".join(line[:200] for line in lines)) if lines else None


def _ignored(values: Sequence[str]) -> frozenset[str]:
    from auxcheck._core.rules import parse_codes

    try:
        return parse_codes(values)
    except InvalidArgument as exc:
        raise UsageError(f"--ignore: {exc}") from None


def _split(spec: str) -> tuple[str, str]:
    """Returns ``spec``'s module and attribute path; UsageError when it is not MODULE:ATTR."""
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise UsageError(f"expected MODULE:ATTR, got {spec!r} (e.g. mypkg.outputs:make_output)")
    return module_name, attr_path


def _print(results: list[_Result], fmt: str, *, paths: Sequence[str] = ()) -> None:
    if fmt == "sarif":  # located where each target is defined: --path first, as the workers
        from pathlib import Path

        from auxcheck.cli._sarif import reports_log

        ok = all(result.report.ok for result in results)
        say(reports_log([r.report for r in results], root=Path.cwd(), exit_code=0 if ok else 1,
                        search=[os.path.abspath(d) for d in paths] + [os.getcwd()]))
        return
    if fmt == "json":
        print(json.dumps([result.data for result in results], indent=2))
        return
    reports = [result.report for result in results]
    total = sum(len(report) for report in reports)
    notes = sum(len(report.notes) for report in reports)
    also = f" ({plural(notes, 'note')})" if notes else ""
    say("\n".join(report.to_text() for report in reports)
        + f"\n\n{plural(total, 'finding')}{also} in {plural(len(reports), 'object')}")


# ---------------------------------------------------------------- the worker


def prepare() -> None:
    """Readies the runner process before any plugin code runs: imports the checks and torch."""
    import auxcheck.validate  # noqa: F401 - imported once, before the workers fork

    try:
        import torch  # noqa: F401
    except ImportError:  # the checks say so when they need it
        pass


def serve(request: Mapping[str, Any], index: int, channel: Channel) -> None:
    """Loads and checks target ``index`` of ``request`` in a worker; sends its report.

    The worker takes the caller's search path (``--path`` first), folder and environment
    first: the runner that forked it may have started for an earlier run.
    """
    sys.path[:] = list(request["sys_path"])
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["environ"])
    sys.unraisablehook = _ignored_by_python
    spec = request["targets"][index]
    try:
        report = _checked(request, spec, channel).without(request["ignore"])
    except UsageError as exc:
        channel.send({"t": "usage", "message": exc.message})
        return
    except _NotLoaded as failed:  # reported under --ignore too: nothing of it was checked
        report = Report(spec, [failed.finding])
    except BaseException as exc:  # noqa: BLE001 - plugin code got past every guard
        report = Report(spec)
        report.add(_escaped(spec, exc, channel.last))
    channel.send({"t": "report", "data": report.to_dict()})  # describe() runs no plugin code


_UNRAISABLE: set[tuple[str, str]] = set()
"""What :func:`_ignored_by_python` has said already: (exception type, where), once each."""


def _ignored_by_python(unraisable: Any) -> None:
    """Says in one line, once per kind, what Python ignored: an exception plugin code raised in
    a ``__del__`` or a gc callback (SGLang's process would ignore it too), never as a
    traceback that reads like auxcheck's own."""
    try:
        error, where = describe(unraisable.exc_value), describe(unraisable.object)
        said = (type_name(unraisable.exc_value), where)  # the type itself, not its description
        if said in _UNRAISABLE:
            return
        _UNRAISABLE.add(said)
        text = f"auxcheck: plugin code raised {error} in {where}, where Python ignores it\n"
        os.write(2, text.encode("utf-8", "backslashreplace"))
    except BaseException:  # noqa: BLE001, S110 - a report about an ignored error must not fail
        pass


def _checked(request: Mapping[str, Any], spec: str, channel: Channel) -> Report:
    """Returns the report of ``spec``, loaded with the options ``request`` holds."""
    observer = buffers = None
    if request["pp_observer"] is not None:
        observer = _materialize(request["pp_observer"], channel, code="AUX403",
                                key=_OPTIONS_KEY, role="--pp-observer ")
    buffers = [] if request["static_buffers"] is None else _buffers(request["static_buffers"],
                                                                    channel)
    loaded = _load(spec, channel, code=_LOAD_CODE, key=None, role="")
    obj = _materialize(spec, channel, loaded, code=_LOAD_CODE, role="")
    return _check(spec, obj, _factory(loaded), buffers, observer, request["batch_size"],
                  bool(request.get("speculative")))


class _NotLoaded(Exception):
    """Plugin code raised while a target (or an option's object) was loaded: a finding.

    A module that does not exist or lacks the attribute is the command line's mistake
    (a usage error); a module that exists but raises on import, an attribute whose
    reading raises, a factory that raises, are the plugin's.
    """

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def _not_loaded(code: str, what: str, exc: BaseException, spec: str, *,
                hint: str | None = None) -> _NotLoaded:
    """Returns the error of loading ``spec``, where ``what`` raised ``exc``; ``hint`` is the
    fix when one is known (a missing dependency to install)."""
    from auxcheck._core.plugin_calls import summarize

    return _NotLoaded(Finding(
        code, f"{what} raised {describe(exc)}; expected it to return, so that {spec} can be "
        "checked; nothing of it was", None, hint or "make the module's import, the attributes "
        "read and the factory return without raising (SystemExit included); code that needs a "
        "GPU or a service belongs in the methods the checks call", None, summarize(exc),
        _LOAD_TITLE))


def _escaped(spec: str, exc: BaseException, last: tuple[str, str] | None) -> Finding:
    """Returns the finding of an exception that escaped the checks of ``spec``."""
    from auxcheck._core.plugin_calls import summarize

    code, what = last or (_LOAD_CODE, f"loading {spec}")
    return Finding(code, f"{what} raised {describe(exc)} that no check caught; expected plugin "
                   "code to raise an Exception, never to leave the check", None,
                   "raise an Exception subclass (not SystemExit, KeyboardInterrupt or "
                   "another BaseException) from plugin code", None, summarize(exc))


_FACTORY_TYPES = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def _factory(loaded: Any) -> Any:
    """Returns ``loaded`` when it is a factory (a class or a function), else None.

    Judged by its type alone: ``isinstance`` would read a ``__class__`` property.
    """
    return loaded if issubclass(type(loaded), _FACTORY_TYPES) else None


def _check(spec: str, obj: Any, factory: Any, buffers: Any, observer: Any,
           size: int | None, speculative: bool = False) -> Report:
    """Returns one report holding every check that applies to ``obj``."""
    from auxcheck import validate
    from auxcheck._core.plugin_calls import announce

    announce(_LOAD_CODE, f"looking up the methods of {spec}")
    kinds = [name for name in ("copy_to_host", "consume") if _has(obj, name)]
    forward = _has(obj, "after_forward")
    observes = _is_observer(obj)
    report = Report(spec)
    try:
        if factory is not None and "copy_to_host" in kinds:  # several steps, a fresh output each
            announce("AUX103", f"the device-output checks of {spec}")
            report.extend(validate.check_device_outputs(
                factory, batch_size=size, static_buffers=buffers, pp_observer=observer,
                speculative=speculative))
        elif "copy_to_host" in kinds or not (kinds or observes or forward):
            announce("AUX103", f"the device-output checks of {spec}")
            report.extend(validate.check_device_output(
                obj, batch_size=size, static_buffers=buffers, pp_observer=observer,
                speculative=speculative))
        if "consume" in kinds:
            announce("AUX202", f"the host-output checks of {spec}")
            report.extend(validate.check_host_output(obj, batch_size=size,
                                                     speculative=speculative))
        if observes:
            announce("AUX102", f"the sampling-observer checks of {spec}")
            report.extend(validate.check_sampling_observer(obj, batch_size=size,
                                                           static_buffers=buffers,
                                                           speculative=speculative))
        if forward:
            announce("AUX102", f"the forward-observer checks of {spec}")
            report.extend(validate.check_forward_observer(obj, batch_size=size,
                                                          static_buffers=buffers,
                                                          speculative=speculative))
    except InvalidArgument as exc:
        raise UsageError(f"--static-buffers: {exc}") from None
    return report


def _has(obj: Any, name: str) -> bool:
    try:
        return hasattr(obj, name)
    except Exception:  # noqa: BLE001 - a hostile __getattr__: let the checks report it
        return False


def _is_observer(obj: Any) -> bool:
    return any(_has(obj, hook) for hook in _OBSERVER_HOOKS)


def _buffers(spec: str, channel: Channel) -> Any:
    """Returns the static buffers ``spec`` names: one tensor, an iterable of them, a mapping of
    names to tensors, or an ``auxcheck.aliasing.StaticBufferRegistry`` (kept as they are)."""
    value = _materialize(spec, channel, code="AUX110", key=_OPTIONS_KEY, role="--static-buffers ")
    kind = type(value)
    if kind.__name__ in ("Tensor", "Parameter"):
        return [value]
    if issubclass(kind, Mapping) or kind.__name__ == "StaticBufferRegistry":
        return value
    iterator = attempt(iter, value)
    if type(iterator.error) is TypeError:
        raise UsageError(f"--static-buffers {spec!r} is a {kind.__name__}; "
                         "expected a tensor or an iterable of tensors")
    # At most one more than any graph owns: an endless iterator must not fill the memory.
    items = iterator if iterator.error is not None else attempt(
        lambda: list(itertools.islice(iterator.value, _MAX_BUFFERS + 1)))
    if items.error is not None:
        raise _not_loaded("AUX110", f"iterating --static-buffers {spec}", items.error, spec)
    if len(items.value) > _MAX_BUFFERS:
        raise _NotLoaded(Finding.of(
            "AUX110", f"--static-buffers {spec} gives more than {_MAX_BUFFERS} tensors (an "
            "endless iterator?)", "expected the tensors a CUDA graph owns: a finite "
            "collection", heading=_LOAD_TITLE))
    return items.value


def _materialize(spec: str, channel: Channel, obj: Any = None, *, code: str,
                 key: str | None = None, role: str) -> Any:
    """Returns the object ``spec`` names, called first when it is a zero-argument factory."""
    obj = _load(spec, channel, code=code, key=key, role=role) if obj is None else obj
    if _factory(obj) is None:
        return obj
    channel.phase(code, f"the {role}factory {spec}", key=key, title=_LOAD_TITLE)
    needs = _needed_arguments(obj)
    if needs is not None:
        raise UsageError(f"{spec!r} is a factory that needs arguments ({needs}); "
                         "point at an instance or a zero-argument factory")
    made = attempt(obj)
    if made.error is not None:
        raise _not_loaded(code, f"the {role}factory {spec}", made.error, spec)
    return made.value


def _needed_arguments(factory: Any) -> str | None:
    """Returns why ``factory`` cannot be called without arguments, or None when it can (or
    its signature cannot be read: a hostile ``__signature__`` only means it is tried)."""
    signature = attempt(inspect.signature, factory)
    if signature.error is not None or type(signature.value) is not inspect.Signature:
        return None
    bound = attempt(signature.value.bind)
    return str(bound.error) if type(bound.error) is TypeError else None


def _load(spec: str, channel: Channel, *, code: str, key: str | None, role: str) -> Any:
    """Returns the attribute ``spec`` (``module:attr.path``) names.

    UsageError when the module or an attribute does not exist; _NotLoaded when plugin
    code raised (the module's import, a module ``__getattr__``, a property).
    """
    module_name, attr_path = _split(spec)
    what = f"importing module {module_name!r} ({role}{spec})"
    channel.phase(code, what, key=key or _import_key(module_name), title=_LOAD_TITLE)
    try:
        obj: Any = importlib.import_module(module_name)
    except BaseException as exc:  # noqa: BLE001 - the plugin module raised on import
        if is_missing(exc, module_name):
            raise UsageError(f"cannot import module {module_name!r}: {exc.msg}"
                             f"{_near_modules(exc, spec)}") from None
        hint = (missing_module_hint(exc, needed_by=module_name)
                if type(exc) is ModuleNotFoundError else None)
        raise _not_loaded(code, what, exc, spec, hint=hint) from None
    channel.phase(code, f"reading {role}{spec}", key=key, title=_LOAD_TITLE)
    owner, path = f"module {module_name!r}", module_name + ":"
    for part in attr_path.split("."):
        read = attempt(getattr, obj, part)  # a module __getattr__ or a property may raise
        if issubclass(type(read.error), AttributeError):
            raise UsageError(f"{owner} has no attribute {part!r}"
                             f"{_near_attributes(obj, part, path, spec)}")
        if read.error is not None:
            raise _not_loaded(code, f"reading {part!r} of {owner}", read.error, spec)
        obj = read.value
        path += part
        owner, path = repr(path), path + "."
    return obj


def _near_modules(exc: ModuleNotFoundError, spec: str) -> str:
    """Returns ``"; did you mean pkg.outputs:make_output?"``: ``spec`` with the module that
    does not exist (``exc.name``, the target's module or a package above it) replaced by each
    close name the import system can find, or ``""`` when none is close."""
    missing = str(exc.name)
    rest = spec[len(missing):]
    return did_you_mean([near + rest for near in near_modules(missing)])


def _near_attributes(owner: Any, name: str, path: str, spec: str) -> str:
    """Returns ``"; did you mean pkg.outputs:make_output?"``: ``spec`` with the attribute
    ``name`` of ``owner`` (reached by ``path``) replaced by each close public name, or ``""``.

    The names are ``dir(owner)``'s; a ``__dir__`` that raises gives no suggestion.
    """
    names = attempt(dir, owner)
    if names.error is not None or not isinstance(names.value, list):
        return ""
    public = [n for n in names.value if type(n) is str and (name.startswith("_")
                                                            or not n.startswith("_"))]
    rest = spec[len(path) + len(name):]
    return did_you_mean([path + near + rest for near in close_names(name, public)])
