"""The stages of ``auxcheck check PATH``: the import scan, mypy, the contract suite, the releases.

Each stage runs on its own and reports a result (ok, fail, skipped, error), counts and
its time (the command line, :mod:`auxcheck.cli.check`, renders them). mypy and the
contract suite run as subprocesses in the project so its own configuration applies and
nothing leaks into this process; packages under ``src/`` (a src layout) are found,
type-checked and importable without installing the project first. With releases
(``--sglang R1,R2`` or ``[tool.auxcheck] sglang``) the ``sglang`` stage judges the
plugin against each release's own source (imports, hook targets, entry points,
contract signatures).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from auxcheck._check.base import (
    CheckOptions,
    StageResult,
    ended,
    list_project,
    not_installed,
    plugin_packages,
    prepended,
    project_listing,
    source_root,
    stage_links,
)
from auxcheck._check.beside import calls_beside, can_end_children, usable_cores
from auxcheck._check.findings import (
    Causes,
    StageFinding,
    caused_lines,
    contract_findings,
    from_finding,
    refer_release,
    release_findings,
)
from auxcheck._check.mypy_stage import mypy_stage
from auxcheck._core.sources import SCAN_MAX_FILE_SIZE
from auxcheck._core.text import plural

if TYPE_CHECKING:
    from auxcheck._core.report import Finding
    from auxcheck._isolation.bounded import Bounded
    from auxcheck.migrate.moves import MoveTable

__all__ = [
    "BESIDE",
    "CHECK_AUX504_HINT",
    "STAGES",
    "CheckOptions",
    "StageFinding",
    "StageResult",
    "contract_command",
    "for_check",
    "has_xdist",
    "list_project",
    "plugin_packages",
    "run_stages",
    "source_root",
    "stages_at_once",
]

STAGES = ("imports", "mypy", "contract", "sglang")

CHECK_AUX504_HINT = ("make it valid Python for the Python version in use (readable, in the "
                     "encoding its coding cookie declares, without null bytes); `auxcheck "
                     "check` reads every Python file under PATH, and parses files of up to "
                     f"{SCAN_MAX_FILE_SIZE >> 20} MB: split or shrink a larger (generated) one")
"""The fix of an AUX504 finding in ``auxcheck check``, which has no option to leave a file out."""


def for_check(finding: Finding) -> Finding:
    """Returns ``finding`` with a fix that names only what ``auxcheck check`` offers."""
    return replace(finding, hint=CHECK_AUX504_HINT) if finding.code == "AUX504" else finding


# ---------------------------------------------------------------- stages


def run_imports(options: CheckOptions) -> StageResult:
    """Returns the import scan's result: fail when any AUX501/AUX502 use remains, or a file
    cannot be read, decoded or parsed (AUX504; every file is parsed, not only those naming
    an old module)."""
    from auxcheck.migrate.scan import scan_paths

    if options.moves_error is not None:
        return StageResult("imports", "error", summary=options.moves_error,
                           output=options.moves_error)
    listed = project_listing(options).files
    files = len(listed)
    report = [_in_project(for_check(f), options.path)
              for f in scan_paths(listed, moves=options.moves, every_file=True,
                                  max_size=SCAN_MAX_FILE_SIZE, releases=options.releases)]
    counts = {"files": files, "findings": len(report)}
    for code in ("AUX501", "AUX502", "AUX504"):
        counts[code] = sum(1 for f in report if f.code == code)
    if not counts["AUX504"]:
        del counts["AUX504"]  # the keys stay those of a plugin whose files all parse
    summary = f"{plural(len(report), 'finding')} in {plural(files, 'file')}"
    if report:
        broken = f", {counts['AUX504']} AUX504" if "AUX504" in counts else ""
        summary += f" ({counts['AUX501']} AUX501, {counts['AUX502']} AUX502{broken})"
    output = "\n".join(f.to_text() for f in report)
    return StageResult("imports", "fail" if report else "ok", counts, 0.0, summary, output,
                       findings=tuple(from_finding("imports", f, options.path) for f in report))


def _in_project(finding: Finding, root: Path) -> Finding:
    """Returns ``finding`` located relative to the project folder ``root``."""
    where = from_finding("imports", finding, root).location
    return replace(finding, location=where) if where else finding


def has_xdist() -> bool:
    """Returns True when pytest-xdist can be imported, so ``--jobs`` can spread the suite."""
    try:
        return importlib.util.find_spec("xdist") is not None
    except (ImportError, ValueError):  # a broken or blocked install: it cannot run either
        return False


def contract_command(options: CheckOptions, results: Path) -> list[str]:
    """Returns the pytest command line of the contract stage.

    ``--runxfail``: an xfail mark a conftest puts on contract items (or ``pytest.xfail``
    in plugin code) must not turn a violation into a pass; rules are left out with
    ``--auxcheck-ignore`` instead.
    """
    command = [sys.executable, "-m", "pytest", "--auxcheck", "-m", "auxcheck", "-q",
               "-p", "no:cacheprovider", f"--rootdir={options.path}", f"--auxcheck-results={results}",
               "-o", "console_output_style=classic", "--runxfail"]
    if options.impl:
        command.append(f"--auxcheck-impl={options.impl}")
    if options.profile:
        command.append(f"--auxcheck-profile={options.profile}")
    if options.jobs and has_xdist():
        command += ["-n", str(options.jobs)]
    # pytest would follow a link to a folder above it at every level (the conftest, and
    # every contract item, once per level), even one inside a folder the walk skips
    # (`env/`): this plugin keeps it out of every link, and records each one it skipped.
    command += ["-p", "auxcheck._check.pytest_links"]
    return [*command, *options.pytest_args, "."]


_FIXTURE_WORD = re.compile(rb"\bauxcheck_\w+")
"""A name of the suite's fixtures, or one that looks like it (a misspelt fixture gets
pytest's own error, with the closest names)."""

_CONTRACT_WORD = re.compile(rb"\b(DeviceAuxiliaryOutput|HostAuxiliaryOutput|SamplingObserver"
                            rb"|ForwardObserver|append_auxiliary_output)\b")
"""A name of the auxiliary-output contract, which a plugin with outputs uses."""


@dataclass(frozen=True, slots=True)
class ContractSubjects:
    """What the project's Python files say about the contract stage's work."""

    fixtures: bool
    """Some file names an ``auxcheck_*`` fixture (or a name like one)."""
    uses: tuple[str, ...] = ()
    """``path:line`` of the first files that use the contract's names."""


def contract_subjects(path: Path, files: Sequence[str]) -> ContractSubjects:
    """Returns whether any of the Python ``files`` of the project at ``path`` names a fixture
    of the suite, and where the contract is used (at most three places), reading each
    file's bytes once."""
    uses: list[str] = []
    for name in files:
        try:
            with open(name, "rb") as handle:
                data = handle.read(SCAN_MAX_FILE_SIZE)
        except OSError:
            continue  # the import scan reports a file it cannot read (AUX504)
        if _FIXTURE_WORD.search(data):
            return ContractSubjects(True)
        found = _CONTRACT_WORD.search(data)
        if found is not None and len(uses) < 3:
            line = data.count(b"\n", 0, found.start()) + 1
            uses.append(f"{Path(name).relative_to(path).as_posix()}:{line}")
    return ContractSubjects(False, tuple(uses))


def _nothing_named(subjects: ContractSubjects) -> str:
    """Returns why the contract stage is skipped: no file names the suite's fixtures."""
    from auxcheck._suite.names import SUBJECT_FIXTURES

    text = (f"nothing to check: no conftest.py names an auxiliary output or observer "
            f"({', '.join(SUBJECT_FIXTURES)})")
    if subjects.uses:
        text += (f", though the plugin uses the contract ({', '.join(subjects.uses)}): name "
                 "its outputs and observers in a conftest.py to have them checked "
                 "(docs/pytest-plugin.md)")
    return text


def run_contract(options: CheckOptions) -> StageResult:
    """Returns the contract suite's result: ``pytest --auxcheck -m auxcheck`` in ``PATH``;
    skipped, saying why, when no Python file of the project names the suite's fixtures
    (a plugin without auxiliary outputs has nothing to check), or when pytest or
    hypothesis is not installed (auxcheck without its ``contracts`` extra)."""
    subjects = contract_subjects(options.path, project_listing(options).files)
    if not subjects.fixtures:
        return StageResult("contract", "skipped", summary=_nothing_named(subjects),
                           data={"uses": list(subjects.uses)})
    from auxcheck._core.extras import CONTRACT_SUITE_NEEDS, install_note, missing_modules

    missing = missing_modules(CONTRACT_SUITE_NEEDS)
    if missing:
        return StageResult("contract", "skipped", summary=install_note(
            missing, needed_by="the contract suite"), data={"missing": missing},
            not_run=not_installed(missing))
    from auxcheck._check.pytest_links import read_skipped

    with tempfile.TemporaryDirectory(prefix="auxcheck-") as tmp:
        results, links = Path(tmp) / "results.json", Path(tmp) / "links.txt"
        command = contract_command(options, results)
        done = _run_streamed(command, options, links)
        outcomes = _outcomes(results, options.path)
        skipped = read_skipped(links, options.path)
    return _noting_links(_contract_result(options, command, done, outcomes), skipped, options)


_LINKS_NAMED = 3
"""Links the contract stage's note names; the rest are counted."""


def _noting_links(result: StageResult, skipped: Sequence[str],
                  options: CheckOptions) -> StageResult:
    """Returns ``result`` with a note naming the symbolic links pytest was kept out of that
    the walk never met (one inside a folder it skips, ``env/``), if any: the warning
    before the stages names those it met."""
    warned = {link.relative_to(options.path).as_posix() for link in stage_links(options)
              if link.is_relative_to(options.path)}
    unseen = [name for name in skipped if name not in warned]
    if not unseen:
        return result
    shown = ", ".join(unseen[:_LINKS_NAMED]) + (
        f" and {len(unseen) - _LINKS_NAMED} more" if len(unseen) > _LINKS_NAMED else "")
    note = (f"note: pytest did not follow {plural(len(unseen), 'symbolic link')} ({shown}): "
            "a link may lead out of the project or back into it; check the folder it points "
            "to on its own")
    summary = f"{result.summary}; {plural(len(unseen), 'symbolic link')} not followed ({shown})"
    return replace(result, summary=summary, output="\n".join(filter(None, [result.output, note])),
                   data={**result.data, "links_not_followed": unseen})


def _contract_result(options: CheckOptions, command: list[str], done: Bounded,
                     outcomes: _Outcomes) -> StageResult:
    """Returns the contract stage's result from how its pytest ended and its results file."""
    counts = outcomes.counts
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n or k == "passed")
    data = {"command": command[1:]}  # from `-m pytest`: the interpreter is this one
    if (done.timed_out or done.memory_limit or done.returncode not in (0, 1)
            or not outcomes.written):
        # Exit 0 without the results file: a fixture or plugin ended pytest (os._exit(0)).
        early = ("" if outcomes.written or done.timed_out or done.memory_limit
                 else " before writing its results")
        return StageResult("contract", "error", counts, 0.0,
                           f"pytest {ended(done, options.timeout)}{early}", done.output, data)
    if not suite_ran(counts, done.returncode):
        return StageResult("contract", "error", counts, 0.0,
                           f"pytest exited {done.returncode}", done.output, data)
    if not outcomes.judged:
        return StageResult("contract", "error", counts, 0.0, _nothing_judged(outcomes, summary),
                           done.output, data, findings=outcomes.findings)
    own, referred, items = _refer_contract(outcomes, options)
    if not referred:
        return StageResult("contract", "fail" if done.returncode else "ok", counts, 0.0,
                           summary, "\n".join(outcomes.failed) or done.output, data,
                           findings=outcomes.findings)
    # The imports item repeats the imports stage's scan: what it found there again is not
    # counted again, and an item that found nothing else does not fail the stage.
    counts = {**counts, "failed": counts["failed"] - items, "referred": items}
    summary = ", ".join(f"{n} {k}" for k, n in counts.items()
                        if (n or k == "passed") and k != "referred")
    summary += f"; {plural(len(referred), 'finding')} not counted (see imports)"
    kept = [line for line, found in zip(outcomes.failed, outcomes.failures)
            if any(f in own for f in found)]
    output = kept + caused_lines(referred, "finding")
    return StageResult("contract", "fail" if own else "ok", counts, 0.0, summary,
                       "\n".join(output), data, findings=tuple(own), referred=tuple(referred))


def _refer_contract(outcomes: _Outcomes, options: CheckOptions
                    ) -> tuple[list[StageFinding], list[StageFinding], int]:
    """Returns the failed items' findings split into those of their own and those the
    imports stage found at the same place under the same rule (the ``imports`` item scans
    again), and how many failed items found nothing else."""
    causes: dict[tuple[str, str | None, int | None], StageFinding] = {
        (f.code, f.path, f.line): f for f in options.causes
        if f.path is not None and f.line is not None}
    own: list[StageFinding] = []
    referred: list[StageFinding] = []
    items = 0
    for found in outcomes.failures:
        theirs = [replace(f, cause=causes[f.code, f.path, f.line]) for f in found
                  if (f.code, f.path, f.line) in causes]
        own += [f for f in found if (f.code, f.path, f.line) not in causes]
        referred += theirs
        items += bool(theirs) and len(theirs) == len(found)
    return own, referred, items


def suite_ran(counts: dict[str, int], returncode: int) -> bool:
    """Returns True when pytest ran the suite (its items counted, or a clean exit)."""
    return sum(counts.values()) > 0 or returncode == 0


def _nothing_judged(outcomes: _Outcomes, summary: str) -> str:
    """Returns the summary of a contract run that judged none of the plugin's objects."""
    if outcomes.subjects:
        return (f"every contract item of the plugin's objects was skipped or xfailed: nothing "
                f"was judged ({summary}); a skip or xfail (a conftest's, or plugin code's) "
                "must not cover the contract items")
    return (f"no contract item of the plugin's objects ran: nothing was judged ({summary}); "
            "expected the items of auxcheck_device_output and the observers to run")


def _run_streamed(command: list[str], options: CheckOptions, links: Path) -> Bounded:
    """Runs ``command`` in ``PATH`` within ``--timeout`` (its process group killed after it);
    its output goes to stderr as it comes when streaming; the symbolic links it skips are
    recorded in ``links``."""
    from auxcheck._check.pytest_links import SKIPPED_LINKS_ENV
    from auxcheck._isolation.bounded import run_bounded

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", SKIPPED_LINKS_ENV: str(links)}
    src = source_root(options.path)
    if src is not None:  # a src layout imports without being installed first
        env["PYTHONPATH"] = prepended(str(src), env.get("PYTHONPATH"))
    from auxcheck._core.progress import MarkCounter

    # Not streamed, pytest's -q marks (one per item) are counted into the progress line.
    return run_bounded(command, cwd=options.path, env=env, timeout=options.timeout,
                       memory=options.memory, stream=sys.stderr if options.stream else None,
                       progress="contract", count=MarkCounter().feed)


@dataclass(frozen=True, slots=True)
class _Outcomes:
    """What the contract run's results file says: counts per outcome, each failure as ``id:
    first line`` and as its findings (located where the item said where), whether it was
    written whole, and how many items judge the plugin's objects (its fixtures' values),
    and of those how many reached a verdict."""

    counts: dict[str, int]
    failed: list[str] = field(default_factory=list)
    failures: tuple[tuple[StageFinding, ...], ...] = ()
    """The findings of each failed item, in the order of ``failed``."""
    written: bool = False
    subjects: int = 0
    judged: int = 0

    @property
    def findings(self) -> tuple[StageFinding, ...]:
        """Returns every failed item's findings."""
        return tuple(f for found in self.failures for f in found)


_VERDICTS = ("passed", "failed", "error")
"""The outcomes of an item that judged something: skips and xfails (``skipped``) do not."""


def _outcomes(results: Path, root: Path) -> _Outcomes:
    """Returns what the results file says, read through its schema (each finding's code,
    location and message are fields); ``written`` False when it is missing, garbled or of
    another version."""
    from auxcheck._core.errors import ResultsFileError
    from auxcheck._suite.result_file import read_results

    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    try:
        items = read_results(results.read_text(encoding="utf-8")).items
    except (OSError, ValueError, ResultsFileError):  # missing, undecodable or garbled
        return _Outcomes(counts)
    failed, failures, subjects, judged = [], [], 0, 0
    for item in items:
        counts[item.outcome] = counts.get(item.outcome, 0) + 1
        if item.outcome in ("failed", "error"):
            failed.append(f"{item.nodeid}: {item.message}")
            failures.append(contract_findings(item, root))
        if item.kind in ("output", "observer"):  # a fixture value's item, not impl or imports
            subjects += 1
            judged += item.outcome in _VERDICTS
    return _Outcomes(counts, failed, tuple(failures), True, subjects, judged)


def run_sglang(options: CheckOptions) -> StageResult:
    """Returns the release matrix's result: each release's imports, hooks, entry points, contract."""
    from auxcheck._core.errors import ReleaseError
    from auxcheck._releases.index import ReleaseIndex
    from auxcheck._releases.plugin_scan import scan_project
    from auxcheck._releases.release_check import ReleaseResult, check_release, render_matrix
    from auxcheck._releases.wheels import find_release, local_releases

    if not options.releases and not options.wheels and not options.sources:
        return StageResult("sglang", "skipped", summary="no --sglang, no [tool.auxcheck] sglang")
    scan = scan_project(options.path, files=project_listing(options).files)
    moves = options.moves
    results: list[ReleaseResult] = []
    versions = list(options.releases)
    try:
        versions += [r.version for r in local_releases(options.wheels, options.sources)
                     if r.version not in versions]
    except ReleaseError as exc:
        return StageResult("sglang", "error", summary=str(exc), output=str(exc))
    # Every release found first: each is checked with the others as peers (a hook target
    # they call and it no longer does, AUX706).
    found: list[tuple[str, ReleaseIndex | ReleaseResult]] = []
    for version in versions:
        try:
            release = find_release(version, wheels=options.wheels, sources=options.sources,
                                   cache=options.cache, download=not options.offline)
        except ReleaseError as exc:
            found.append((version, ReleaseResult(version, version, error=str(exc))))
            continue
        found.append((version, ReleaseIndex(release, cache=options.cache)))
    indexes = [item for _, item in found if isinstance(item, ReleaseIndex)]
    for version, item in found:
        if isinstance(item, ReleaseResult):
            results.append(item)
            continue
        try:
            results.append(check_release(scan, item, moves=moves,
                                         peers=[i for i in indexes if i is not item]))
        except ReleaseError as exc:  # a damaged wheel: that release's row says so
            results.append(ReleaseResult(version, version, error=str(exc)))
    referred: list[StageFinding] = []
    results = [refer_release(r, Causes(options.causes, table=options.moves), options.path,
                             referred)
               for r in results]
    failed = [r.version for r in results if r.failed]
    counts = {"releases": len(results), "failed": len(failed),
              "findings": sum(len(s.findings) for r in results for s in r.stages)}
    summary = ", ".join(f"{r.version} {'FAIL' if r.failed else 'ok'}" for r in results)
    output = "\n\n".join([render_matrix(results), *caused_lines(referred, "finding")])
    if referred:
        counts["referred"] = len(referred)
        summary += f"; {plural(len(referred), 'finding')} not counted (see imports)"
    if scan.broken:
        # No release can vouch for a file that was never read: the stage fails on it.
        counts["AUX504"] = len(scan.broken)
        summary += f"; {plural(len(scan.broken), 'file')} not scanned (AUX504)"
        output = "\n".join([*(for_check(f).to_text() for f in scan.broken), "", output])
    data = {"releases": [r.to_dict() for r in results],
            "broken": [for_check(f).to_dict() for f in scan.broken]}
    findings = [from_finding("sglang", for_check(f), options.path) for f in scan.broken]
    for result in results:
        findings += release_findings(result, options.path)
    return StageResult("sglang", "fail" if failed or scan.broken else "ok", counts, 0.0,
                       summary, output, data, always_shown=True, findings=tuple(findings),
                       referred=tuple(referred))


def project_table(path: Path) -> tuple[MoveTable, str | None]:
    """Returns the moves table of the project at ``path`` (built-in, plus its
    ``[tool.auxcheck.migrate]``), and why the project's own could not be read (then the
    built-in table stands in for the other stages)."""
    from auxcheck._core.errors import InvalidArgument, MovesTableError
    from auxcheck.migrate.moves import builtin_moves, find_pyproject, project_moves

    try:
        return project_moves(find_pyproject(path)), None
    except (MovesTableError, InvalidArgument) as exc:
        return builtin_moves(), f"the project's moves table cannot be read: {exc}"


_RUNNERS: dict[str, Callable[[CheckOptions], StageResult]] = {
    "imports": run_imports,
    "mypy": mypy_stage,
    "contract": run_contract,
    "sglang": run_sglang,
}


BESIDE = ("mypy", "contract")
"""The stages that wait on a child process (mypy, pytest): with the cores for it they run
beside the others, each on a thread of its own, mypy started first (a cold mypy is the
longest of them after the contract suite)."""


def stages_at_once(options: CheckOptions) -> list[str]:
    """Returns the stages of :data:`BESIDE` that run beside the others with ``options``: none
    when they run one after another (``at_once`` False, ``--jobs 1``, one core, not Linux) or
    when fewer than two stages have work to overlap."""
    if options.at_once is False or not can_end_children():
        return []
    if options.at_once is None and (options.jobs == 1 or usable_cores() < 2):
        return []
    beside = [stage for stage in BESIDE if stage not in options.skip]
    releases = bool(options.releases or options.wheels or options.sources)
    busy = len(beside) + ("sglang" not in options.skip and releases)
    return beside if busy >= 2 else []


def run_stages(options: CheckOptions, *, clock: Callable[[], float] = time.perf_counter,
               started: Callable[[int, str], None] | None = None,
               finished: Callable[[int, StageResult], None] | None = None) -> list[StageResult]:
    """Returns every stage's result, in order, each timed by ``clock``; skipped stages say so.

    ``started(index, stage)`` is called before a stage runs and ``finished(index, result)``
    after it ran or was left out (``--skip``), ``index`` counting from 1; for a stage run
    beside the others (:func:`stages_at_once`) both are called on its own thread, and no
    ``finished`` comes for one ended by a stop. The imports stage runs first, alone: a later
    stage's finding about an old import it found is referred to that finding. The results,
    their order and their findings are the same whichever way the stages ran.
    """
    if options.listing is None:  # one walk: every stage reads the same files, skips the same links
        options = replace(options, listing=list_project(options.path))
    if options.moves is None:  # one table: every stage knows the same moves
        table, problem = project_table(options.path)
        options = replace(options, moves=table, moves_error=problem)
    number = {stage: index for index, stage in enumerate(STAGES, start=1)}

    def run(stage: str, options: CheckOptions, ended: Callable[[], bool] = bool) -> StageResult:
        if stage in options.skip:
            result = StageResult(stage, "skipped", summary="--skip")
        else:
            if started is not None:
                started(number[stage], stage)
            result = _timed(functools.partial(_RUNNERS[stage], options), clock)
        if finished is not None and not ended():
            finished(number[stage], result)
        return result

    results = {"imports": run("imports", options)}
    # The causes a later stage's findings are referred to.
    options = replace(options, causes=results["imports"].findings)
    beside = stages_at_once(options)
    if not beside:
        results.update((stage, run(stage, options)) for stage in STAGES[1:])
        return [results[stage] for stage in STAGES]
    with calls_beside() as pool:
        running = {stage: pool.start(stage, functools.partial(run, stage, options,
                                                              pool.stopping.is_set))
                   for stage in beside}
        results.update((stage, run(stage, options)) for stage in STAGES[1:]
                       if stage not in running)
    results.update((stage, call.result()) for stage, call in running.items())
    return [results[stage] for stage in STAGES]


def _timed(run: Callable[[], StageResult], clock: Callable[[], float]) -> StageResult:
    """Returns ``run()`` with the time ``clock`` says it took filled in."""
    start = clock()
    result = run()
    return replace(result, seconds=clock() - start)
