"""``auxcheck validate MODULE:ATTR...``: runs the runtime contract checks on plugin objects."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from auxcheck._text import plural
from auxcheck.cli._common import (
    CommandParser,
    UsageError,
    add_format,
    positive_int,
    run_command,
)
from auxcheck.errors import InvalidArgument
from auxcheck.report import Report

__all__ = ["DESCRIPTION", "main"]

DESCRIPTION = (
    "Load each MODULE:ATTR (calling it first when it is a class or a zero-argument "
    "factory function) and check it against the auxiliary-output contract: as a device "
    "output when it has copy_to_host (or nothing else it could be), as a host output when "
    "it has consume, as a sampling observer when it has after_sample (driven through "
    "SGLang's step loop), as a forward observer when it has after_forward. Exit status: 0 "
    "when clean (notes such as AUX106 included), 1 on findings, 2 on usage errors."
)

_OBSERVER_HOOKS = ("is_active", "before_grammar", "after_sample")
PROG = "auxcheck validate"


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``auxcheck validate``; returns 0 when clean, 1 on findings, 2 on usage errors."""
    return run_command(PROG, _main, argv)


def _main(argv: list[str]) -> int:
    options = _parser().parse_args(argv)
    with _import_path(options.path):
        reports = _run(options)
    _print(reports, options.format)
    return 0 if all(report.ok for report in reports) else 1


def _parser() -> CommandParser:
    parser = CommandParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("targets", nargs="+", metavar="MODULE:ATTR",
                        help="object or zero-argument factory to check")
    add_format(parser, ("text", "json"), help="report format (default: text)")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODES",
                        help="rule codes or families to ignore, e.g. AUX104,AUX4")
    parser.add_argument("--pp-observer", metavar="MODULE:ATTR",
                        help="observer (or factory) whose from_pp_tensors receives PP tensors; "
                        "checks device outputs in pipeline-parallel mode")
    parser.add_argument("--static-buffers", metavar="MODULE:ATTR",
                        help="tensors, a name -> tensor mapping or a StaticBufferRegistry (or "
                        "a factory of one) a CUDA graph owns (AUX110)")
    parser.add_argument("--batch-size", type=positive_int, default=None, metavar="N",
                        help="the number of requests the outputs are built for (default: "
                        "inferred from their tensors' shapes, and said so in the findings)")
    parser.add_argument("--path", action="append", default=[], metavar="DIR",
                        help="directory to put first on sys.path (repeatable; the current "
                        "directory is always importable)")
    return parser


@contextmanager
def _import_path(dirs: Sequence[str]) -> Iterator[None]:
    """Puts ``dirs`` and the current directory first on sys.path, restoring it afterwards."""
    saved = list(sys.path)
    sys.path[:0] = [os.path.abspath(d) for d in dirs] + [os.getcwd()]
    try:
        yield
    finally:
        sys.path[:] = saved


def _run(options: argparse.Namespace) -> list[Report]:
    ignored = _ignored(options.ignore)
    observer = None if options.pp_observer is None else _materialize(options.pp_observer)
    buffers = [] if options.static_buffers is None else _buffers(options.static_buffers)
    targets = [(spec, _load(spec)) for spec in options.targets]
    return [_check(spec, _materialize(spec, loaded), _factory(loaded), buffers, observer,
                   options.batch_size).without(ignored) for spec, loaded in targets]


def _factory(loaded: Any) -> Any:
    """Returns ``loaded`` when it is a factory (a class or a function), else None."""
    return loaded if isinstance(loaded, type) or inspect.isroutine(loaded) else None


def _ignored(values: Sequence[str]) -> frozenset[str]:
    from auxcheck.rules import parse_codes

    try:
        return parse_codes(values)
    except InvalidArgument as exc:
        raise UsageError(f"--ignore: {exc}") from None


def _check(spec: str, obj: Any, factory: Any, buffers: Any, observer: Any,
           size: int | None) -> Report:
    """Returns one report holding every check that applies to ``obj``."""
    from auxcheck import validate

    kinds = [name for name in ("copy_to_host", "consume") if _has(obj, name)]
    forward = _has(obj, "after_forward")
    report = Report(spec)
    try:
        if factory is not None and "copy_to_host" in kinds:  # several steps, a fresh output each
            report.extend(validate.check_device_outputs(
                factory, batch_size=size, static_buffers=buffers, pp_observer=observer))
        elif "copy_to_host" in kinds or not (kinds or _is_observer(obj) or forward):
            report.extend(validate.check_device_output(
                obj, batch_size=size, static_buffers=buffers, pp_observer=observer))
        if "consume" in kinds:
            report.extend(validate.check_host_output(obj, batch_size=size))
        if _is_observer(obj):
            report.extend(validate.check_sampling_observer(obj, batch_size=size,
                                                           static_buffers=buffers))
        if forward:
            report.extend(validate.check_forward_observer(obj, batch_size=size,
                                                          static_buffers=buffers))
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


def _buffers(spec: str) -> Any:
    """Returns the static buffers ``spec`` names: one tensor, an iterable of them, a mapping of
    names to tensors, or an ``auxcheck.aliasing.StaticBufferRegistry`` (kept as they are)."""
    value = _materialize(spec)
    if type(value).__name__ in ("Tensor", "Parameter"):
        return [value]
    if isinstance(value, Mapping) or type(value).__name__ == "StaticBufferRegistry":
        return value
    try:
        return list(value)
    except TypeError:
        raise UsageError(f"--static-buffers {spec!r} is a {type(value).__name__}; "
                         "expected a tensor or an iterable of tensors") from None


def _materialize(spec: str, obj: Any = None) -> Any:
    """Returns the object ``spec`` names, called first when it is a zero-argument factory."""
    obj = _load(spec) if obj is None else obj
    if not (isinstance(obj, type) or inspect.isroutine(obj)):
        return obj
    try:
        inspect.signature(obj).bind()
    except TypeError as exc:
        raise UsageError(f"{spec!r} is a factory that needs arguments ({exc}); "
                         "point at an instance or a zero-argument factory") from None
    except ValueError:  # no signature to judge by: just try the call
        pass
    try:
        return obj()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - plugin code: report it, never crash
        raise UsageError(f"factory {spec!r} raised {type(exc).__name__}: {exc}") from None


def _load(spec: str) -> Any:
    """Returns the attribute ``spec`` (``module:attr.path``) names; UsageError says why not."""
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise UsageError(f"expected MODULE:ATTR, got {spec!r} (e.g. mypkg.outputs:make_output)")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import module {module_name!r}: {exc}") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the plugin module raised on import
        raise UsageError(f"importing module {module_name!r} raised "
                         f"{type(exc).__name__}: {exc}") from None
    owner, path = f"module {module_name!r}", module_name + ":"
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"{owner} has no attribute {part!r}") from None
        except Exception as exc:  # noqa: BLE001 - a hostile __getattr__ or property
            raise UsageError(f"reading {part!r} of {owner} raised "
                             f"{type(exc).__name__}: {exc}") from None
        path += part
        owner, path = repr(path), path + "."
    return obj


def _print(reports: list[Report], fmt: str) -> None:
    if fmt == "json":
        print(json.dumps([report.to_dict() for report in reports], indent=2))
        return
    print("\n".join(report.to_text() for report in reports))
    total = sum(len(report) for report in reports)
    notes = sum(len(report.notes) for report in reports)
    also = f" ({plural(notes, 'note')})" if notes else ""
    print(f"\n{plural(total, 'finding')}{also} in {plural(len(reports), 'object')}")
