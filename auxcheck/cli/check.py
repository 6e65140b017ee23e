"""``auxcheck check PATH``: the import scan, mypy with the stubs, the contract suite, the releases.

The stages themselves are in :mod:`auxcheck._check.stages`; this module reads the command
line, rejects options the contract suite could not use before any stage runs
(``--impl``, ``--profile``), says on stderr when each stage starts and ends, and sums
the results up in one table (or a JSON document on stdout). Exit status: 0 when no
stage failed, 1 when one did, 2 on usage errors.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

from auxcheck._check.stages import (
    STAGES,
    CheckOptions,
    StageResult,
    has_xdist,
    list_project,
    run_stages,
    source_root,
)
from auxcheck._core import progress
from auxcheck._core.errors import UsageError
from auxcheck._core.escape import one_line, printable
from auxcheck.cli._common import (
    CommandParser,
    add_format,
    add_jobs,
    add_quiet,
    add_release_options,
    add_timeout,
    byte_size,
    releases_of,
    run_command,
    say,
)

__all__ = [
    "DESCRIPTION",
    "check_impl",
    "check_profile",
    "default_memory",
    "impl_problem",
    "jobs_warnings",
    "link_warnings",
    "main",
    "progress_finished",
    "progress_started",
    "render_details",
    "render_json",
    "render_sarif",
    "render_table",
]

DESCRIPTION = ("Check a plugin project: the import scan (AUX501/AUX502, and AUX504 for "
               "files that do not parse), mypy against "
               "auxcheck's sglang stubs, the contract suite (pytest --auxcheck), and with "
               "releases (--sglang, or [tool.auxcheck] sglang) each SGLang release's imports and attributes (AUX503), hook targets "
               "and hook signatures (AUX701/AUX703), calls into SGLang (AUX704) and entry "
               "points (AUX702).")
PROG = "auxcheck check"

_PROFILE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
"""What a Hypothesis profile name passed through to a conftest's own profiles looks like."""
_AUXCHECK_PROFILE_PREFIX = "auxcheck-"
"""auxcheck's own profiles' prefix: such a name that is not one of them is a typo."""


# ---------------------------------------------------------------- output


def render_table(path: Path, results: Sequence[StageResult]) -> str:
    """Returns the summary table: stage, result, counts, time; then the verdict."""
    rows = [("stage", "result", "counts", "time")]
    rows += [(r.stage, r.result.upper() if r.failed else r.result, one_line(r.summary),
              f"{r.seconds:.1f}s") for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}" for a, b, c, d in rows]
    failed = [r.stage for r in results if r.failed]
    shown = one_line(str(path))
    # A stage that could not run (its tool missing) fails nothing, but is no pass either.
    why = [f"{r.stage} not run: {r.not_run}" for r in results if r.not_run]
    said = "; ".join([", ".join(failed)] * bool(failed) + why)
    verdict = f"failed ({said})" if failed else f"ok ({said})" if said else "ok"
    return "\n".join([*lines, "", f"auxcheck check {shown}: {verdict}"])


def render_details(results: Sequence[StageResult]) -> str:
    """Returns the output of every failed stage, of a stage with findings another stage's
    finding caused (it says so, once), and the release matrix, under a heading each."""
    # A stage's output is the tool's own lines (pytest's, mypy's): they stay lines, but
    # nothing in them (plugin text) may act on the terminal.
    blocks = [f"== {r.stage}: {one_line(r.summary)}\n{printable(r.output)}" for r in results
              if (r.failed or r.always_shown or r.referred) and r.output]
    return "\n\n".join(blocks)


def render_json(path: Path, results: Sequence[StageResult], *,
                warnings: Sequence[str] = ()) -> str:
    """Returns the results as a JSON document: path, ok, the stages that could not run
    (``not_run``: each stage and why), warnings, and one object per stage,
    its ``findings`` (paths relative to the project) and the ``referred`` findings another
    stage's finding caused (each with ``see``, not counted)."""
    stages: list[dict[str, Any]] = []
    for r in results:
        data = asdict(r)
        data["seconds"] = round(r.seconds, 3)
        data["findings"] = [f.to_dict() for f in r.findings]
        data["referred"] = [f.to_dict() for f in r.referred]
        stages.append(data)
    ok = not any(r.failed for r in results)
    not_run = [{"stage": r.stage, "why": r.not_run} for r in results if r.not_run]
    return json.dumps({"path": str(path), "ok": ok, "not_run": not_run,
                       "warnings": list(warnings), "stages": stages}, indent=2)


def render_sarif(root: Path, results: Sequence[StageResult]) -> str:
    """Returns the results as a SARIF 2.1.0 log: one result per cause, paths relative to
    ``root`` (the project folder, absolute); a stage that could not run is a notification."""
    from auxcheck.cli._sarif import check_log

    return check_log(results, root=root, exit_code=1 if any(r.failed for r in results) else 0)


def progress_started(index: int, stage: str) -> str:
    """Returns the progress line of a stage that starts: ``[2/4] mypy ...``."""
    return f"{PROG}: [{index}/{len(STAGES)}] {stage} ..."


def progress_finished(index: int, result: StageResult, *, left_out: bool = False) -> str:
    """Returns the progress line of a stage that ended (``mypy ok (3.1s)``), or, ``left_out``
    by ``--skip``, never started (``[2/4] mypy skipped (--skip)``)."""
    if left_out:
        return f"{PROG}: [{index}/{len(STAGES)}] {result.stage} skipped (--skip)"
    shown = result.result.upper() if result.failed else result.result
    why = f": {result.summary}" if result.result in ("skipped", "error") else ""
    return f"{PROG}: {result.stage} {shown} ({result.seconds:.1f}s){why}"


def _say(line: str) -> None:
    # Flushed: the contract stage's pytest writes to the same stderr in between. Warnings
    # print under -q too; the stage lines go through the progress reporter, which -q turns off.
    print(line, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- command line


def _parser() -> CommandParser:
    parser = CommandParser(
        prog=PROG, description=DESCRIPTION,
        usage="auxcheck check [-h] [--format {text,json,sarif}] [-q | -v] [--skip STAGE] [-j N]\n"
              "                      [--sequential] [--impl IMPL] [--profile NAME] [--timeout SECONDS]\n"
              "                      [--max-memory SIZE] [--sglang VERSIONS] [--wheel WHEEL]\n"
              "                      [--source DIR] [--offline] [--cache DIR]\n"
              "                      PATH [-- PYTEST_ARGS...]",
        epilog="Arguments after `--` go to the contract stage's pytest, e.g. -- -k AUX104. "
               "Each stage's start and end, and progress inside long stages (downloads, "
               "index building, items done), is said on stderr unless -q.")
    parser.add_argument("path", metavar="PATH", help="the plugin project's folder")
    add_format(parser, ("text", "json", "sarif"),
               help="text: a table (pytest's own output streams to stderr with -v); json: a "
                    "document on stdout for tools; sarif: a SARIF 2.1.0 log on stdout for code "
                    "scanning")
    talk = parser.add_mutually_exclusive_group()
    add_quiet(talk, help="no progress on stderr: no stage lines, no download, index or item "
                         "counts (warnings, errors and the results still print)")
    talk.add_argument("-v", "--verbose", action="store_true",
                      help="also stream the contract stage's pytest output to stderr as it "
                           "runs (a failed stage's output is printed before the table "
                           "either way)")
    parser.add_argument("--skip", action="append", choices=STAGES, default=[],
                        help="leave a stage out (repeatable)")
    add_jobs(parser, hidden=("-n",),
             help="run the contract suite on N processes (needs pytest-xdist; without it a "
                  "warning says so and the suite runs on one); -j 1 also runs the stages "
                  "one after another")
    parser.add_argument("--sequential", action="store_true",
                        help="run the stages one after another (by default, where this process "
                             "may use two cores or more, mypy and the contract suite run "
                             "beside the other stages; the results are the same)")
    parser.add_argument("--impl", default=None,
                        help="the implementation the contract suite proves (auto, reference, "
                             "sglang, sglang==X.Y.Z or a dotted module; default auto)")
    parser.add_argument("--profile", default=None, metavar="NAME",
                        help="the Hypothesis profile of the contract suite: auxcheck-default, "
                             "auxcheck-ci, or one the project's conftest registers")
    add_timeout(parser, default=900.0,
                help="seconds the mypy stage and the contract stage may each run (they run "
                     "the project's code: its mypy plugins, its conftest and fixtures); a "
                     "stage still running then is killed, with its process group, and fails")
    parser.add_argument("--max-memory", type=byte_size, default=default_memory(),
                        metavar="SIZE",
                        help="memory the processes of the mypy stage, and of the contract "
                             "stage, may hold together, e.g. 8GB; past it the stage is killed "
                             "with its process group and fails (default: half this machine's "
                             "memory; 0: no limit)")
    group = add_release_options(parser, title="SGLang releases (the sglang stage)", checked=True)
    group.add_argument("--sglang", action="append", default=[], metavar="VERSIONS",
                       help="releases to check against, comma-separated (repeatable), e.g. "
                            "0.5.19,0.5.20,0.5.23; default: [tool.auxcheck] sglang")
    return parser


def default_memory() -> int:
    """Returns the default of ``--max-memory``: half this machine's memory (0 when it cannot
    be told: no limit)."""
    import os

    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError):
        return 0


@contextmanager
def _importable(path: Path) -> Iterator[None]:
    """Puts ``path`` (and its ``src``) first on sys.path, as the contract suite has them."""
    saved = list(sys.path)
    src = source_root(path)
    sys.path[:0] = [str(path)] + ([str(src)] if src is not None else [])
    try:
        yield
    finally:
        sys.path[:] = saved


_IMPL_PROBE = """\
import json, os, sys
from auxcheck.cli.check import impl_problem
problem = impl_problem(sys.argv[1])
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, json.dumps({"problem": problem}).encode())
os.close(fd)
os._exit(0)
"""
"""The ``--impl`` probe: it writes its answer to a file once the import returned, so nothing
the module prints (its output shares the child's) can stand for the answer."""


def impl_problem(spec: str) -> str | None:
    """Returns why the implementation ``spec`` cannot be loaded, or None when it loads.

    Run by :func:`check_impl` in a child process for a module spec, so that the module's
    own code (an ``os._exit``, an abort, a hang) cannot end or stall ``auxcheck check``.
    """
    from auxcheck._core.errors import InvalidArgument, ReleaseError
    from auxcheck.properties import load_implementation

    try:
        load_implementation(spec)
    except (InvalidArgument, ReleaseError) as exc:
        return str(exc)
    except BaseException as exc:  # the user's module raised (SystemExit included) on import
        if isinstance(exc, KeyboardInterrupt):
            raise
        return f"importing {spec!r} raised {type(exc).__name__}: {exc}"
    return None


def check_impl(spec: str, path: Path, *, timeout: float = 0, memory: int = 0) -> None:
    """Raises UsageError naming ``--impl`` when the contract suite in ``path`` could not load
    ``spec``: loaded as the suite loads it (``auto`` and ``reference`` always load).

    A release (``sglang==X``) is read from its wheel here; a module is the user's code and
    is imported in a child process bounded by ``timeout`` seconds and ``memory`` bytes (0:
    none), the way the contract stage imports it, so its exits and hangs are reported, not
    suffered.
    """
    if spec in ("auto", "reference"):
        return
    from auxcheck._core.errors import InvalidArgument
    from auxcheck.properties import release_version

    try:
        release = release_version(spec)
    except InvalidArgument as exc:
        raise UsageError(f"--impl: {exc}") from None
    if release is not None:
        with _importable(path):
            problem = impl_problem(spec)
    else:
        problem = _probe_impl(spec, path, timeout, memory)
    if problem is not None:
        raise UsageError(f"--impl: {problem}")


class _Answer(NamedTuple):
    """What the ``--impl`` probe wrote: why the module cannot be loaded (None: it loads)."""

    problem: str | None


def _answer(path: Path) -> _Answer | None:
    """Returns the probe's answer in ``path``, or None when it wrote none (it ended first)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    problem = data.get("problem") if isinstance(data, dict) else 0
    return _Answer(problem) if problem is None or isinstance(problem, str) else None


def _probe_impl(spec: str, path: Path, timeout: float, memory: int) -> str | None:
    import os

    from auxcheck._isolation.bounded import run_bounded

    src = source_root(path)
    entries = [str(path)] + ([str(src)] if src is not None else [])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(entries + [p for p in sys.path if p])
    with tempfile.TemporaryDirectory(prefix="auxcheck-impl-") as folder:
        answer = Path(folder) / "answer.json"
        done = run_bounded([sys.executable, "-c", _IMPL_PROBE, spec, str(answer)],
                           cwd=path, env=env, timeout=timeout, memory=memory)
        found = _answer(answer) if done.returncode == 0 else None
    if found is not None:
        return found.problem
    tail = "; ".join(done.output.strip().splitlines()[-3:])
    return (f"importing {spec!r} {done.text()} before it could be checked"
            + (f" (its last output: {tail})" if tail else "")
            + "; make the module importable without side effects")


def check_profile(name: str) -> None:
    """Raises UsageError naming ``--profile`` when ``name`` cannot be a Hypothesis profile.

    auxcheck's own profiles are known; any other name is left to the suite, where the
    project's conftest may register it, but it must look like a name (a letter or ``_``,
    then letters, digits, ``_``, ``-``, ``.``) and not misspell an ``auxcheck-`` profile.
    """
    looks_like_a_name = _PROFILE_NAME.fullmatch(name) is not None
    if looks_like_a_name and not name.startswith(_AUXCHECK_PROFILE_PREFIX):
        return
    from auxcheck.strategies import PROFILES  # imports torch: only for auxcheck- or odd names

    if name in PROFILES:
        return
    expected = (f"expected one of {', '.join(PROFILES)}, or the name of a profile the "
                "project's conftest registers with hypothesis.settings.register_profile")
    problem = ("is not an auxcheck profile" if looks_like_a_name else
               "is not a profile name (a letter or _, then letters, digits, _, - or .)")
    raise UsageError(f"--profile: {name!r} {problem}; {expected}")


_LINKS_SHOWN = 5
"""Links named in the warning; the rest are counted."""


def link_warnings(options: CheckOptions) -> list[str]:
    """Returns the one warning that symbolic links under PATH are followed by no stage, if any."""
    links = options.listing.links if options.listing is not None else ()
    if not links:
        return []
    names = [str(link.relative_to(options.path)) for link in links]
    shown = ", ".join(names[:_LINKS_SHOWN]) + (
        f" and {len(names) - _LINKS_SHOWN} more" if len(names) > _LINKS_SHOWN else "")
    return [(f"{len(links)} symbolic {'link' if len(links) == 1 else 'links'} not followed: "
             f"{shown}; no stage enters them (the import scan skips them, mypy and pytest are "
             "told to leave them out): check the folder they point to on its own")]


def jobs_warnings(options: CheckOptions) -> list[str]:
    """Returns the warning that ``--jobs`` is ignored when pytest-xdist is missing, if it is."""
    if not options.jobs or "contract" in options.skip or has_xdist():
        return []
    return [(f"--jobs {options.jobs} ignored: pytest-xdist is not installed; the contract "
             "suite runs on one process; pip install pytest-xdist")]


class _Request(NamedTuple):
    """What the command line asks for: the stages' options, the format, PATH as given."""

    options: CheckOptions
    format: str
    path: Path
    quiet: bool = False
    """``-q``: no progress on stderr."""


def _request(argv: list[str]) -> _Request:
    """Returns what the command line asks for; raises UsageError on what cannot be used."""
    words, extra = argv, []
    if "--" in argv:
        at = argv.index("--")
        words, extra = argv[:at], argv[at + 1:]
    args = _parser().parse_args(words)
    path = Path(args.path)
    if not path.is_dir():
        raise UsageError(f"PATH {args.path!r} is not a folder; expected a plugin project's folder")
    releases = releases_of(args.sglang, path)
    if args.profile is not None:
        check_profile(args.profile)
    if args.impl is not None:  # sglang==X may download its wheel first: progress says so
        with progress.reporting(PROG, enabled=not args.quiet):
            check_impl(args.impl, path.resolve(), timeout=args.timeout,
                       memory=args.max_memory or 0)
    root = path.resolve()
    options = CheckOptions(root, frozenset(args.skip), args.jobs, args.impl,
                           args.profile, stream=args.verbose,
                           pytest_args=tuple(extra), releases=releases,
                           wheels=tuple(args.wheel), sources=tuple(args.source),
                           cache=args.cache, offline=args.offline, timeout=args.timeout,
                           memory=args.max_memory or 0, listing=list_project(root),
                           at_once=False if args.sequential else None)
    return _Request(options, args.format, path, args.quiet)


def _main(argv: list[str]) -> int:
    options, fmt, path, quiet = _request(argv)
    warnings = link_warnings(options) + jobs_warnings(options)
    for warning in warnings:
        _say(f"{PROG}: warning: {warning}")
    # One task per stage: stages that run beside each other start and end on threads of
    # their own, in any order.
    tasks: dict[str, ExitStack] = {}
    with progress.reporting(PROG, enabled=not quiet), ExitStack() as running:

        def started(index: int, name: str) -> None:
            progress.say(progress_started(index, name))
            # The stage's heartbeat; downloads, index building, mypy and pytest report inside.
            tasks[name] = stage = running.enter_context(ExitStack())
            stage.enter_context(progress.task(name, announced=True))

        def finished(index: int, result: StageResult) -> None:
            if result.stage in tasks:
                tasks.pop(result.stage).close()
            progress.say(progress_finished(index, result, left_out=result.stage in options.skip))

        results = run_stages(options, started=started, finished=finished)
    if fmt == "sarif":
        say(render_sarif(options.path, results))
    elif fmt == "json":
        print(render_json(path, results, warnings=warnings))
    else:
        details = render_details(results)
        # A failed stage's output holds plugin text (its exceptions' messages): any of it
        # must reach stdout, whatever its encoding.
        say(("\n" + details + "\n" if details else "") + "\n" + render_table(path, results))
    return 1 if any(r.failed for r in results) else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``auxcheck check``; returns 0 when every stage passed, 1 when one failed, 2 on usage."""
    return run_command(PROG, _main, argv, stoppable=True)
