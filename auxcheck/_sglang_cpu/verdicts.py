"""From what a real server did to findings: one per cause, at the plugin's file and line where the cause is there.

The inputs are the probe's events (:mod:`auxcheck._sglang_cpu.probe`), the guard's report,
and how each server start and scenario went (:mod:`auxcheck._sglang_cpu.live`). A frame is
the plugin's when its file is one of the plugin's installed files (mapped back to the
project's by :class:`~auxcheck._sglang_cpu.install.Installed`); the innermost such frame
locates a finding. A hook that does not fit its call raises TypeError in SGLang's wrapper,
before any frame of the hook: the probe saw that error leave the hook, so the finding is at
the hook's definition.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auxcheck._core.report import Finding
from auxcheck._core.rules import RULES
from auxcheck._sglang_cpu.install import Installed

__all__ = ["Death", "Evidence", "Failure", "explained", "read_events", "verdicts"]


@dataclass(frozen=True, slots=True)
class Death:
    """A server that died or never came up: in which mode, during what, and its log."""

    mode: str
    during: str
    log: Path
    tail: str
    cause: str = ""
    events: tuple[dict[str, Any], ...] = ()
    """The probe's events of that server's processes."""


@dataclass(frozen=True, slots=True)
class Failure:
    """A scenario that failed (or hung) while the server stayed up."""

    mode: str
    scenario: str
    message: str
    log: Path
    hung: bool = False


@dataclass(slots=True)
class Evidence:
    """Everything one release's run left: the events of every process, the guard's
    findings, the deaths and failures, the modes whose scenarios all ran."""

    installed: Installed
    events: list[dict[str, Any]] = field(default_factory=list)
    guard: list[dict[str, Any]] = field(default_factory=list)
    deaths: list[Death] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    served: list[str] = field(default_factory=list)
    own: frozenset[str] = frozenset()
    """The plugin's entry point names (SGLang's messages name the plugin that failed)."""


def read_events(path: Path) -> list[dict[str, Any]]:
    """Returns the JSON objects of a JSON-lines file, skipping lines that are not one."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def _plugin_frame(installed: Installed, frames: Iterable[Sequence[Any]]) -> str | None:
    """Returns ``path:line`` of the innermost frame in the plugin's files, or None."""
    for frame in reversed(list(frames)):
        if len(frame) >= 2:
            source = installed.source_of(str(frame[0]))
            if source is not None:
                return f"{source}:{frame[1]}"
    return None


def _hook_place(installed: Installed, hook: Mapping[str, Any]) -> str | None:
    source = installed.source_of(str(hook.get("file") or ""))
    return None if source is None else f"{source}:{hook.get('line')}"


def _is_plugins(installed: Installed, hooks: Iterable[Mapping[str, Any]]) -> bool:
    return any(_hook_place(installed, hook) for hook in hooks)


STAND_INS = ("sgl_kernel", "triton")
"""Packages the CPU environment stands in for (no compiled kernels, SGLang's triton mock):
what reaches into them is not judged on CPU."""
_STAND_IN_TEXT = "is not available in auxcheck's CPU SGLang environment"
_PROBE = "auxcheck/_sglang_cpu/probe.py"


_CUDA_TEXTS = ("not compiled with CUDA", "No CUDA GPUs are available", "CUDA driver",
               "NVIDIA driver", "CUDA is not available", "cuda runtime")
"""What torch and SGLang say when code takes a path that needs a GPU."""


def _stand_in(frames: Iterable[Sequence[Any]], error: str) -> str | None:
    """Returns what a CPU lacks that an error came from, as words for a note ("sgl_kernel,
    which the CPU environment stands in for", "a path that needs CUDA"), or None."""
    listed = [str(f[0]).replace("\\", "/") for f in frames if len(f) >= 1]
    if _STAND_IN_TEXT in error:
        return "sgl_kernel, which the CPU environment stands in for"
    if any(text.lower() in error.lower() for text in _CUDA_TEXTS) or any(
            "/site-packages/torch/cuda/" in path for path in listed[-6:]):
        return "a path that needs CUDA, which a CPU server cannot take"
    if listed:
        for package in STAND_INS:
            if f"/site-packages/{package}/" in listed[-1] or listed[-1].endswith(
                    "/_platform_stubs.py"):
                return f"{package}, which the CPU environment stands in for"
    return None


def _unmet(installed: Installed, error: str) -> bool:
    """Returns True when ``error`` is an import error and a requirement could not be installed."""
    return bool(installed.unmet) and error.startswith(("ModuleNotFoundError", "ImportError"))


def _shown(path: str) -> str:
    _, marker, inside = path.replace("\\", "/").partition("/site-packages/")
    return inside if marker else path


def _trace(frames: Iterable[Sequence[Any]], error: str, installed: Installed) -> str:
    """Returns the frames as ``file:line in name`` lines (the plugin's with its project path,
    an installed package's from its package folder; the probe's left out), the last 8, then
    the error."""
    lines = []
    kept = [f for f in frames if len(f) >= 3 and not str(f[0]).endswith(_PROBE)]
    for frame in kept[-8:]:
        source = installed.source_of(str(frame[0]))
        lines.append(f"{source or _shown(str(frame[0]))}:{frame[1]} in {frame[2]}")
    return "\n".join([*lines, error] if error else lines)


def _blame(evidence: Evidence, mode: str,
           events: Iterable[Mapping[str, Any]] | None = None) -> tuple[str | None, str]:
    """Returns where the plugin is to blame for what went wrong in ``mode`` (its innermost
    frame in an error SGLang logged, or a hook an error left), and that error; (None, "")
    when no event of that mode points at the plugin."""
    installed = evidence.installed
    chosen = list(events) if events is not None else [
        e for e in evidence.events if e.get("server") == mode]
    for event in chosen:
        if event.get("event") in ("process-error", "hook-raised"):
            place = _plugin_frame(installed, event.get("frames") or [])
            if place is None and event.get("event") == "hook-raised":
                place = _hook_place(installed, event.get("hook") or {})
            if place is not None:
                return place, str(event.get("error") or "")
    return None, ""


def explained(evidence: Evidence, mode: str,
              events: Iterable[Mapping[str, Any]] | None = None) -> bool:
    """Returns True when an error of ``mode``'s processes points at the plugin."""
    return _blame(evidence, mode, events)[0] is not None


def _where_modes(modes: Iterable[str]) -> str:
    names = sorted(set(modes))
    if names == ["overlap off", "overlap on"]:
        return "overlap on and off"
    return " and ".join(names)


def verdicts(release: str, evidence: Evidence) -> tuple[list[Finding], list[str]]:
    """Returns the findings of one release's run and its notes (what could not be judged)."""
    installed = evidence.installed
    findings: dict[tuple[str, str, str], Finding] = {}
    notes: list[str] = []

    def add(code: str, seen: str, expected: str, location: str | None,
            detail: str | None = None) -> None:
        key = (code, location or "", seen)
        if key not in findings:
            findings[key] = Finding.of(code, f"sglang {release}: {seen}", expected,
                                       location=location, detail=detail)

    failed_targets = set()
    for event in evidence.events:
        kind = event.get("event")
        if kind == "hook-failed":
            failed_targets.add(event.get("target"))
            hooks = event.get("hooks") or []
            package = str(event.get("target")).split(".")[0]
            if package in STAND_INS and _is_plugins(installed, hooks):
                notes.append(f"the hook on {event.get('target')} was not judged: the CPU "
                             f"environment stands in for {package} (no compiled kernels), so "
                             f"its names do not resolve as they do beside a GPU "
                             f"({event.get('error')})")
                continue
            if not _is_plugins(installed, hooks):
                notes.append(f"auxcheck's guard could not hook {event.get('target')} "
                             f"({event.get('error')}): its checks there are off")
                continue
            registered = _registration(installed, str(event.get("target")))
            for hook in hooks:
                add("AUX802", f"apply_hooks() could not apply the {hook.get('type')} hook "
                    f"{hook.get('name')} to {event.get('target')}: {event.get('error')}",
                    "SGLang serves without it", registered or _hook_place(installed, hook),
                    _trace(event.get("frames") or [], "", installed) or None)
        elif kind == "plugin-error":
            message = str(event.get("message") or "")
            if message.startswith("Failed to apply hooks"):
                continue  # the hook-failed event of the same target says more
            if not any(f" {name} " in f"{message} " or message.endswith(name)
                       for name in evidence.own):
                notes.append(f"{message} ({event.get('error')}): not the plugin's")
                continue
            frames = event.get("frames") or []
            if _unmet(installed, str(event.get("error") or "")):
                notes.append(f"{message} was not judged: {event.get('error')}, and the plugin "
                             f"requires {', '.join(installed.unmet)}, which could not be "
                             "installed beside SGLang")
                continue
            stand_in = _stand_in(frames, str(event.get("error") or ""))
            if stand_in is not None:
                notes.append(f"{message} was not judged: it failed in {stand_in} "
                             f"({event.get('error')})")
                continue
            add("AUX801", f"{message}: {event.get('error')}",
                "SGLang serves without the plugin", _plugin_frame(installed, frames),
                _trace(frames, str(event.get("error") or ""), installed))

    folded = _deaths(evidence, add, notes)
    failed: dict[tuple[str, str | None, str, str], list[Failure]] = {}
    for failure in evidence.failures:
        place, error = _blame(evidence, failure.mode)
        lacking = _stand_in([], f"{failure.message} {error}")
        if lacking is not None:
            notes.append(f"the {failure.scenario} scenario failed ({failure.mode}) in {lacking}: "
                         f"not judged ({failure.message})")
            continue
        failed.setdefault((failure.scenario, place, error, failure.message), []).append(failure)
    for (scenario, place, error, message), same in failed.items():
        what = "hung" if any(f.hung for f in same) else "failed"
        because = f" (the plugin raised {error})" if place else ""
        logs = ", ".join(str(f.log) for f in same)
        add("AUX805", f"the {scenario} scenario {what} ({_where_modes(f.mode for f in same)}): "
            f"{message}{because}",
            ("the plugin's code is on its path" if place else "SGLang serves it without the "
             "plugin") + f"; log{'s' * (len(same) > 1)}: {logs}", place)
    if evidence.served:
        _uncalled(evidence, failed_targets, add)
    # each process of a server applies the hooks: one note per cause, not per process
    return _folded([*findings.values()], _guard(release, evidence, folded)), list(
        dict.fromkeys(notes))


def _folded(found: list[Finding], guard: list[Finding]) -> list[Finding]:
    """Returns the findings with each death (AUX804) or failed request (AUX805) that no line of
    the plugin's explains folded into the live guard's first finding, when the guard has one:
    the guard's finding says what the plugin did, and those say what followed in SGLang."""
    unlocated = [f for f in found if f.code in ("AUX804", "AUX805") and f.location is None]
    if not guard or not unlocated:
        return [*found, *guard]
    followed = "\n".join(f"then in SGLang's real server: {f.code} {f.message}" for f in unlocated)
    first = dataclasses.replace(guard[0], detail="\n".join(filter(None, [guard[0].detail,
                                                                        followed])))
    return [f for f in found if f not in unlocated] + [first, *guard[1:]]


@dataclass(slots=True)
class _Died:
    """One cause of death, gathered over the servers (modes) it killed."""

    error: str
    location: str | None
    hook_text: str
    detail: str | None
    when: dict[str, list[str]] = field(default_factory=dict)
    """When it killed a server (``while starting``, ``during the abort scenario``) -> the modes."""
    logs: list[Path] = field(default_factory=list)

    def when_text(self) -> str:
        """Returns ``during the abort scenario (overlap on and off)``, one part per moment."""
        return ", ".join(f"{when} ({_where_modes(modes)})" for when, modes in self.when.items())


def _deaths(evidence: Evidence, add: Any, notes: list[str]) -> set[str]:
    """Reports each cause of death once (AUX804), naming every mode it killed; returns the
    exception types of the deaths a plugin frame or hook explains (the live guard's AUX202
    for the same exception is folded into that finding)."""
    installed = evidence.installed
    causes: dict[tuple[str | None, str], _Died] = {}
    for death in evidence.deaths:
        errors = [e for e in death.events if e.get("event") == "process-error"]
        raised = [e for e in death.events if e.get("event") == "hook-raised"]
        cause = next((e for e in errors if "hit an exception" in str(e.get("message"))),
                     None) or next((e for e in errors if e.get("frames")), None)
        frames = (cause or {}).get("frames") or []
        error = str((cause or {}).get("error") or death.cause)
        location = _plugin_frame(installed, frames)
        if _unmet(installed, error):
            notes.append(f"the server died {death.during} ({death.mode}) with {error}, and the "
                         f"plugin requires {', '.join(installed.unmet)}, which could not be "
                         f"installed beside SGLang: not judged (log: {death.log})")
            continue
        package = _stand_in(frames, error)
        if package is not None:
            notes.append(f"the server died {death.during} ({death.mode}) in {package}: not "
                         f"judged ({error}; log: {death.log})")
            continue
        hook_text = ""
        if location is None:
            hook = next((e for e in raised if str(e.get("error")) == error
                         and _hook_place(installed, e.get("hook") or {})), None)
            if hook is not None:
                spec = hook["hook"]
                location = _hook_place(installed, spec)
                hook_text = (f"SGLang called the {spec.get('type')} hook {spec.get('name')} on "
                             f"{hook.get('target')} and it raised: ")
        detail = (_trace(frames, error, installed) if frames else death.tail) or None
        died = causes.setdefault((location, error), _Died(error, location, hook_text, detail))
        died.when.setdefault(death.during or "while serving", []).append(death.mode)
        died.logs.append(death.log)
    explained = set()
    for died in causes.values():
        kind = _exception_name(died.error)
        guard = [e for e in evidence.guard if e.get("event") == "finding"
                 and e.get("code") == "AUX202" and e.get("raised") == kind]
        detail = died.detail
        if died.location is not None and guard:
            explained.add(kind)
            detail = "\n".join(filter(None, [detail, "the live guard: AUX202 " + str(
                guard[0].get("message"))]))
        logs = ", ".join(str(log) for log in dict.fromkeys(died.logs))
        add("AUX804", f"the server died {died.when_text()}: "
            f"{died.hook_text}{died.error or 'no error was logged'}",
            ("it must serve with the plugin loaded" if died.location else "SGLang serves "
             "without the plugin and no line of the plugin's is in its traceback: what the "
             "plugin hooks or sets is on the path") + f"; log{'s' * (len(died.logs) > 1)}: {logs}",
            died.location, detail)
    return explained


def _exception_name(error: str) -> str:
    """Returns the bare type name of the exception Python's own text ``error`` shows
    (``pkg.errors.Boom: bad`` -> ``Boom``), as the guard's ``raised`` field names it."""
    return error.partition(":")[0].strip().rpartition(".")[2]


def _guard(release: str, evidence: Evidence, folded: set[str]) -> list[Finding]:
    """Returns one finding per rule and output class the live guard reported, naming the
    modes it was seen in, at the class's definition when the class is the plugin's; an AUX202
    of an exception a death already reports (``folded``) is part of that finding."""
    seen: dict[tuple[str, str], tuple[dict[str, Any], set[str]]] = {}
    for event in evidence.guard:
        if event.get("code") == "AUX202" and event.get("raised") in folded:
            continue
        if event.get("event") == "finding" and event.get("code") in RULES:
            key = (str(event["code"]), str(event.get("output_class") or ""))
            seen.setdefault(key, (event, set()))[1].add(str(event.get("server") or ""))
    found = []
    for (code, owner), (event, modes) in seen.items():
        found.append(Finding(
            code, f"sglang {release}: the live guard saw this in {owner} "
            f"({_where_modes(m for m in modes if m)}): {event.get('message')}",
            hint=str(event.get("hint") or RULES[code].hint),
            location=_class_place(evidence.installed, owner)))
    return found


def _registration(installed: Installed, target: str) -> str | None:
    """Returns ``path:line`` of the one call in the plugin's files whose first argument is the
    string ``target`` (its ``HookRegistry.register``), or None when there is not exactly one
    (a target built from names: the hook's definition locates the finding then)."""
    found = []
    for source in sorted(set(installed.sources.values())):
        try:
            tree = ast.parse(source.read_bytes())
        except (OSError, SyntaxError, ValueError):
            continue
        found += [f"{source}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and node.args
                  and isinstance(node.args[0], ast.Constant) and node.args[0].value == target]
    return found[0] if len(found) == 1 else None


def _class_place(installed: Installed, qualified: str) -> str | None:
    """Returns where class ``module.Name`` is defined in the project, when it is the plugin's."""
    module, _, name = qualified.rpartition(".")
    tail = module.replace(".", "/")
    for source in sorted(set(installed.sources.values())):
        path = source.as_posix()
        if not (path.endswith((f"/{tail}.py", f"/{tail}/__init__.py"))):
            continue
        try:
            tree = ast.parse(source.read_bytes())
        except (OSError, SyntaxError, ValueError):
            return f"{source}:1"
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return f"{source}:{node.lineno}"
        return f"{source}:1"
    return None


def _uncalled(evidence: Evidence, failed: set[Any], add: Any) -> None:
    installed = evidence.installed
    called = {e.get("target") for e in evidence.events if e.get("event") == "hook-called"}
    seen: set[tuple[str, str]] = set()
    for event in evidence.events:
        target = event.get("target")
        if event.get("event") != "hook-applied" or target in called or target in failed:
            continue
        for hook in event.get("hooks") or []:
            place = _hook_place(installed, hook)
            if place is None or hook.get("kind") == "class" or (str(target), place) in seen:
                continue
            seen.add((str(target), place))
            add("AUX803", f"the {hook.get('type')} hook {hook.get('name')} on {target} was "
                f"applied and never called while the scenarios ran "
                f"({_where_modes(evidence.served)})",
                "the scenarios may not take the path that calls it", place)
