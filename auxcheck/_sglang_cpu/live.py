"""``auxcheck live``: a plugin run inside SGLang's real server on CPU, per release, and what SGLang made of it.

For each release: the CPU environment is built once into auxcheck's cache (or one given is
used), the plugin is installed beside it (:mod:`~auxcheck._sglang_cpu.install`), and a real
``sglang.launch_server`` serves a tiny random model with only this plugin and auxcheck's
live guard loaded (``SGLANG_PLUGINS``), once with overlap scheduling and once without. The
scenarios (:mod:`~auxcheck._sglang_cpu.scenarios`) run against each; the probe, the guard's
report and the server's fate become findings (:mod:`~auxcheck._sglang_cpu.verdicts`).

A failure that no frame of the plugin's explains is replayed on a server without the plugin:
when SGLang fails it there too, it is SGLang's (a note), never the plugin's.
Everything started is ended on success, failure, time-out and Ctrl-C (the server's process
group); the plugin's install lives in a temporary folder that is removed; the logs are kept
in the run's folder.
"""

from __future__ import annotations

import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auxcheck._core.errors import CpuEnvironmentError, PluginInstallError, ServerFailed
from auxcheck._core.report import Finding
from auxcheck._sglang_cpu.environment import Environment, build
from auxcheck._sglang_cpu.install import GROUP, Installed, install_plugin
from auxcheck._sglang_cpu.scenarios import CHUNK, SCENARIOS, Outcome, Scenario, run_scenario
from auxcheck._sglang_cpu.server import Server, log_tail, stop_all
from auxcheck._sglang_cpu.verdicts import (
    Death,
    Evidence,
    Failure,
    explained,
    read_events,
    verdicts,
)

__all__ = ["LiveOptions", "ModeRun", "ReleaseRun", "run_live"]

GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class LiveOptions:
    """How to run: the releases, the model (None: the environment's tiny Llama), the overlap
    modes, the time limits (per scenario request, per server start, in all), the memory limit
    of a server's processes, the folder of the environments and the run's folder for logs.
    ``environments_given``: environments already built (``make sglang-cpu``), each used for
    the release it was built for."""

    releases: tuple[str, ...]
    runs: Path
    environments: Path
    model: Path | None = None
    overlap: tuple[bool, ...] = (True, False)
    scenario_timeout: float = 60.0
    start_timeout: float = 300.0
    timeout: float = 1800.0
    memory_limit: int | None = 8 * GIB
    environments_given: tuple[Path, ...] = ()
    variables: Mapping[str, str] = field(default_factory=dict)
    """Environment variables for the server's processes (``--env``)."""
    scenarios: tuple[Scenario, ...] = SCENARIOS


@dataclass(slots=True)
class ModeRun:
    """One server: its mode, log, seconds to start, and each scenario's outcome."""

    mode: str
    log: Path
    started: float | None = None
    outcomes: list[Outcome] = field(default_factory=list)


@dataclass(slots=True)
class ReleaseRun:
    """One release: what ran, what was found, and what could not be judged (notes).
    ``skipped``: why the release could not run here (None when it ran)."""

    release: str
    skipped: str | None = None
    cut: str | None = None
    """Why the run ended before every scenario ran (the time limit), None when it did not."""
    served: list[str] = field(default_factory=list)
    """The modes whose server ran every scenario to its end."""
    modes: list[ModeRun] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _mode(overlap: bool) -> str:
    return "overlap on" if overlap else "overlap off"


def unsupported_platform() -> str | None:
    """Returns why SGLang's CPU server cannot run on this machine, or None where it can."""
    machine = platform.machine().lower()
    if not sys.platform.startswith("linux") or machine not in ("x86_64", "amd64"):
        return (f"SGLang's CPU server is run on Linux x86-64 only (this is {sys.platform} "
                f"{machine}); `auxcheck check` (imports, mypy, the contract suite, the release "
                "matrix) still runs here, offline once the wheels are cached")
    return None


def run_live(project: Path, options: LiveOptions,
             say: Callable[[str], None] = lambda text: None) -> list[ReleaseRun]:
    """Runs ``project`` in a real server for each release of ``options``; returns each run."""
    deadline = time.monotonic() + (options.timeout or float("inf"))
    runs = []
    try:
        for release in options.releases:
            start = time.monotonic()
            run = ReleaseRun(release)
            try:
                _run_release(project, options, run, deadline, say)
            finally:
                run.seconds = time.monotonic() - start
            runs.append(run)
    finally:
        stop_all()  # those a stop interrupted before their own cleanup could start
    return runs


def _environment(release: str, options: LiveOptions, say: Callable[[str], None]) -> Environment:
    """Returns the environment given for ``release`` when one was, else the cache's (built
    there first, once); raises CpuEnvironmentError saying why it cannot be had."""
    for given in options.environments_given:
        env = Environment(given.resolve())
        if env.release == release:
            if env.ready(release):
                return env
            say(f"{given} is no complete environment of this recipe: building it there anew")
            return build(given, release=release, say=say)
    wheels = sorted(options.environments.glob(f"sglang-{release}-*.whl"))
    return build(options.environments / "cpu" / release, release=release,
                 wheel=wheels[0] if wheels else None, say=say)


def _run_release(project: Path, options: LiveOptions, run: ReleaseRun, deadline: float,
                 say: Callable[[str], None]) -> None:
    why = unsupported_platform()
    if why is None:
        try:
            env = _environment(run.release, options, lambda text: say(f"sglang {run.release}: "
                                                                       f"{text}"))
        except CpuEnvironmentError as error:
            why = str(error)
    if why is not None:
        run.skipped = why if "auxcheck check" in why else (
            f"{why}\n`auxcheck check` (imports, mypy, the contract suite, the release matrix) "
            "still runs here, offline once the wheels are cached")
        return
    model = (options.model or env.model).resolve()
    folder = options.runs / f"sglang-{run.release}"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="auxcheck-live-") as temporary:
        say(f"sglang {run.release}: installing {project} beside the environment")
        try:
            installed = install_plugin(env, project, Path(temporary) / "site")
        except PluginInstallError as error:
            run.findings.append(Finding.of("AUX801", f"sglang {run.release}: {error}",
                                           "SGLang can load only an installed plugin"))
            return
        if not installed.entry_points:
            run.findings.append(Finding.of(
                "AUX801", f"sglang {run.release}: {project} declares no `{GROUP}` entry point, "
                "so SGLang's load_plugins() never loads it",
                f'declare one in pyproject.toml: [project.entry-points."{GROUP}"] '
                'name = "package.module:register"', location=_pyproject(project)))
            return
        run.notes += installed.notes
        evidence = Evidence(installed, own=frozenset(installed.entry_points))
        for number, overlap in enumerate(options.overlap, 1):
            mode = ModeRun(_mode(overlap), folder / f"server-{_mode(overlap).replace(' ', '-')}.log")
            run.modes.append(mode)
            if not _serve(env, model, installed, options, mode, evidence, deadline, say,
                          run, overlap):
                if number < len(options.overlap) and run.cut is None:
                    run.notes.append(f"the server did not start with {mode.mode}: the other "
                                     "mode was not tried")
                break
            if run.cut:
                break
        _replay_unexplained(env, model, options, folder, evidence, deadline, say, run)
        run.served = list(evidence.served)
        found, notes = verdicts(run.release, evidence)
        run.findings += found
        run.notes += notes


def _pyproject(project: Path) -> str | None:
    path = project / "pyproject.toml"
    return f"{path}:1" if path.is_file() else None


def _variables(folder: Path, mode: str, entry_points: Sequence[str]) -> dict[str, str]:
    stem = mode.replace(" ", "-")
    return {
        "AUXCHECK_LIVE_EVENTS": str(folder / f"events-{stem}.jsonl"),
        "AUXCHECK_GUARD": "warn",
        "AUXCHECK_GUARD_VALUES": "1",
        "AUXCHECK_GUARD_REPORT": str(folder / f"guard-{stem}.jsonl"),
        "SGLANG_PLUGINS": ",".join([*entry_points, "auxcheck"]),
    }


def _args(overlap: bool) -> list[str]:
    return ["--chunked-prefill-size", str(CHUNK), *([] if overlap else
                                                     ["--disable-overlap-schedule"])]


def _serve(env: Environment, model: Path, installed: Installed, options: LiveOptions,
           mode: ModeRun, evidence: Evidence, deadline: float, say: Callable[[str], None],
           run: ReleaseRun, overlap: bool) -> bool:
    """Runs the scenarios on one server; returns False when it did not start."""
    folder = mode.log.parent
    scratch = str(installed.site.parent / "home-cache")  # SGLang's and HF's caches, not ~
    variables = {"XDG_CACHE_HOME": scratch, "HF_HOME": scratch, **options.variables,
                 **_variables(folder, mode.mode, list(installed.entry_points))}
    for name in ("AUXCHECK_LIVE_EVENTS", "AUXCHECK_GUARD_REPORT"):
        Path(variables[name]).unlink(missing_ok=True)
    events_path = Path(variables["AUXCHECK_LIVE_EVENTS"])
    say(f"sglang {run.release}: starting the server ({mode.mode}); log: {mode.log}")
    start = time.monotonic()
    try:
        server = Server(env, model, mode.log, path=[installed.site], variables=variables,
                        args=_args(overlap), memory_limit=options.memory_limit,
                        start_timeout=min(options.start_timeout, _left(deadline)))
    except ServerFailed as failed:
        events = _tagged(read_events(events_path), mode.mode)
        evidence.events += events
        if not failed.exited and _left(deadline) <= 0:
            run.cut = f"the time limit ended the run while the server started ({mode.mode})"
            return False
        evidence.deaths.append(Death(mode.mode, "while starting", mode.log, log_tail(mode.log, 25),
                                     str(failed), tuple(events)))
        return False
    mode.started = time.monotonic() - start
    say(f"sglang {run.release}: up in {mode.started:.0f} s")
    died = None
    try:
        for scenario in options.scenarios:
            if _left(deadline) <= 0:
                run.cut = (f"the time limit ended the run before the {scenario.name} scenario "
                           f"({mode.mode})")
                break
            outcome = run_scenario(server, scenario,
                                   min(options.scenario_timeout, max(_left(deadline), 1.0)))
            mode.outcomes.append(outcome)
            say(f"sglang {run.release}: {scenario.name}: "
                f"{'ok' if outcome.ok else 'FAILED'} ({outcome.seconds:.1f} s)")
            if not server.alive(timeout=15, settle=0.0 if outcome.ok else 10.0):
                died = f"during the {scenario.name} scenario"
                break
            if not outcome.ok:
                evidence.failures.append(Failure(mode.mode, scenario.name, outcome.message,
                                                 mode.log, outcome.hung))
            if outcome.hung:  # the next requests would wait out their limits the same way
                left = [s.name for s in options.scenarios][len(mode.outcomes):]
                if left:
                    run.notes.append(f"{', '.join(left)} did not run ({mode.mode}): the server "
                                     f"left a request of {scenario.name} hanging")
                break
        else:
            evidence.served.append(mode.mode)
    finally:
        memory = server.memory_text()
        server.stop()
    events = _tagged(read_events(events_path), mode.mode)
    evidence.events += events
    evidence.guard += _tagged(read_events(Path(variables["AUXCHECK_GUARD_REPORT"])), mode.mode)
    if died or memory:
        evidence.deaths.append(Death(mode.mode, died or "", mode.log, log_tail(mode.log, 25),
                                     memory, tuple(events)))
    return True


def _tagged(events: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    for event in events:
        event["server"] = mode
    return events


def _left(deadline: float) -> float:
    return deadline - time.monotonic()


def _replay_unexplained(env: Environment, model: Path, options: LiveOptions, folder: Path,
                        evidence: Evidence, deadline: float, say: Callable[[str], None],
                        run: ReleaseRun) -> None:
    """Replays each failure no plugin frame explains on a server without the plugin.

    A failure SGLang shows without the plugin too is SGLang's: it becomes a note and is
    dropped from the evidence. Where the replay cannot run, the failure stays unjudged: a
    note, never a finding.
    """
    pending = [f for f in evidence.failures if not explained(evidence, f.mode)]
    pending_deaths = [d for d in evidence.deaths if not explained(evidence, d.mode, d.events)]
    if not pending and not pending_deaths:
        return
    wanted = {f.scenario for f in pending} | {_scenario_of(d) for d in pending_deaths}
    scenarios = [s for s in options.scenarios if s.name in wanted]
    say(f"sglang {run.release}: replaying {', '.join(s.name for s in scenarios) or 'the start'} "
        "without the plugin, to tell SGLang's failures from the plugin's")
    log = folder / "server-without-plugin.log"
    try:
        scratch = str(evidence.installed.site.parent / "home-cache")
        server = Server(env, model, log, variables={"XDG_CACHE_HOME": scratch,
                                                   "HF_HOME": scratch, **options.variables,
                                                   "SGLANG_PLUGINS": "auxcheck-none"},
                        args=_args(True), memory_limit=options.memory_limit,
                        start_timeout=min(options.start_timeout, max(_left(deadline), 1.0)))
    except ServerFailed as failed:
        _unjudged(evidence, run, pending, pending_deaths,
                  f"SGLang does not start here without the plugin either ({failed}; log: {log})")
        return
    sglang_fails = set()
    try:
        for scenario in scenarios:
            outcome = run_scenario(server, scenario, options.scenario_timeout)
            up = server.alive(timeout=15, settle=0.0 if outcome.ok else 10.0)
            if not outcome.ok or not up:
                sglang_fails.add(scenario.name)
            if not up:
                break
    finally:
        server.stop()
    for failure in pending:
        if failure.scenario in sglang_fails:
            evidence.failures.remove(failure)
            run.notes.append(f"the {failure.scenario} scenario fails without the plugin too "
                             f"({failure.message}): SGLang's, not judged (log: {log})")
    for death in pending_deaths:
        if _scenario_of(death) in sglang_fails:
            evidence.deaths.remove(death)
            run.notes.append(f"the server dies {death.during} without the plugin too: "
                             f"SGLang's, not judged (log: {log})")


def _scenario_of(death: Death) -> str:
    return death.during.removeprefix("during the ").removesuffix(" scenario")


def _unjudged(evidence: Evidence, run: ReleaseRun, failures: list[Failure],
              deaths: list[Death], why: str) -> None:
    for failure in failures:
        evidence.failures.remove(failure)
        run.notes.append(f"the {failure.scenario} scenario failed ({failure.message}) and could "
                         f"not be judged: {why}")
    for death in deaths:
        evidence.deaths.remove(death)
        run.notes.append(f"the server died {death.during} and it could not be judged: {why}")


def remove_old_runs(root: Path, keep: int = 10) -> None:
    """Removes all but the ``keep`` newest run folders under ``root``."""
    try:
        folders = sorted((p for p in root.iterdir() if p.is_dir()),
                         key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for old in folders[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
