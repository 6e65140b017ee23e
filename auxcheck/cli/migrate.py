"""``auxcheck migrate``: rewrite imports of names SGLang moved, or check that none remain.

With ``--sglang A:B`` the moves SGLang made between releases A and B are inferred
from their wheels (as ``auxcheck moves --from A --to B`` prints them) and applied
with the built-in table and the user's own moves; where an inferred move and one of
those disagree about a name, the user's (or the built-in) move is kept and the
inferred one dropped.

Exit status: 0 when nothing is left to do; 1 when ``--check`` or ``--diff`` finds
work, or some use needs a human (AUX502), or a file cannot be read, decoded or parsed
(AUX504) or written, or was left unchanged on purpose (larger than ``--max-file-size``,
hard-linked, edited during the run, an owner that cannot be kept, a folder that cannot be
listed); 2 on usage errors (bad options, a malformed moves table or ``[tool.auxcheck]``, a
missing path, a release that cannot be had, libcst missing where a file needs rewriting, a
closed stdout); 130 when stopped by Ctrl-C (SIGINT), 143 by SIGTERM, after saying what was
done: every file is then either as it was or fully rewritten.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from auxcheck._core.errors import InvalidArgument, MovesTableError, Stopped, UsageError
from auxcheck._core.escape import github_command, one_line
from auxcheck._core.paths import display_path, split_location
from auxcheck._core.progress import clear, reporting, task
from auxcheck._core.python_files import WalkNote
from auxcheck._core.stops import stops_raised
from auxcheck._core.text import plural
from auxcheck.cli._common import (
    CommandParser,
    add_format,
    add_jobs,
    add_quiet,
    add_release_options,
    byte_size,
    one_version,
    run_command,
    say,
)
from auxcheck.migrate.moves import Move, MoveTable
from auxcheck.migrate.runner import (
    DEFAULT_MAX_FILE_SIZE,
    FileOutcome,
    Mode,
    RunSummary,
    migrate_stdin,
    run,
)

if TYPE_CHECKING:
    from auxcheck._core.report import Finding
    from auxcheck.migrate.results import ResultCache

__all__ = ["DESCRIPTION", "main"]

DESCRIPTION = (
    "Rewrite imports of CommittedTokens, DeviceAuxiliaryOutput and HostAuxiliaryOutput "
    "(moved to sglang.srt.managers.auxiliary_output in SGLang 0.5.20) and any moves "
    "you add, or those SGLang made between two releases (--sglang A:B); `-` reads stdin "
    "and writes stdout."
)
PROG = "auxcheck migrate"


def release_pair(text: str) -> tuple[str, str]:
    """Returns ``0.5.19:0.5.23`` as (older, newer); raises ArgumentTypeError saying what it got."""
    older, sep, newer = text.partition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected two releases as OLDER:NEWER, such as "
                                         f"0.5.19:0.5.23, got {text!r}")
    pair = (one_version(older), one_version(newer))
    if pair[0] == pair[1]:
        raise argparse.ArgumentTypeError(f"{text!r} names one release twice; expected the "
                                         "release you migrate from, then the one you migrate to")
    return pair


def _parser() -> CommandParser:
    parser = CommandParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="files or folders to migrate; `-` for stdin")
    only_one = parser.add_mutually_exclusive_group()
    only_one.add_argument("--check", action="store_true",
                          help="write nothing; report remaining uses (AUX501/AUX502) and files "
                               "that do not parse (AUX504), exit 1 if any")
    only_one.add_argument("--diff", action="store_true",
                          help="write nothing; print a unified diff of the changes")
    parser.add_argument("--compat", action="store_true",
                        help="write `try: new / except ImportError: old` to keep older SGLang")
    add_jobs(parser, help="worker processes (default: the CPU count)")
    parser.add_argument("--moves", type=Path, default=None, metavar="FILE",
                        help="a TOML file of extra [[move]] tables")
    parser.add_argument("--sglang", type=release_pair, default=None, metavar="A:B",
                        help="also apply the moves SGLang made from release A to release B, "
                             "inferred from their wheels (e.g. 0.5.19:0.5.23)")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip files and folders matching GLOB (repeatable)")
    parser.add_argument("--max-file-size", type=byte_size, default=DEFAULT_MAX_FILE_SIZE,
                        metavar="SIZE",
                        help="leave larger files unchanged, with a note (default: 2MB; "
                             "parsing takes about 1,000 times a file's size in memory; "
                             "0: no limit)")
    parser.add_argument("--break-hardlinks", action="store_true",
                        help="rewrite a file that has other hard links anyway (they keep the "
                             "old text); by default such a file is left unchanged, with a note")
    add_quiet(parser, help="no progress on stderr (the files bar, the `Rewriting PATH` line "
                           "of each file; with --sglang, downloads and index building); the "
                           "summary line, findings, notes and errors still print")
    add_format(parser, ("text", "json", "github", "sarif"),
               help="how findings are printed (default: text; sarif: a SARIF 2.1.0 log for "
                    "code scanning)")
    add_release_options(parser, title="SGLang releases (with --sglang)")
    return parser


def _project_tables(args: argparse.Namespace) -> MoveTable:
    """Returns the moves of the projects the paths are in; raises MovesTableError or
    InvalidArgument for a malformed table, UsageError when two projects disagree."""
    from auxcheck.migrate.moves import find_pyproject, project_moves

    starts = [p for p in args.paths if p != "-"] or ["."]
    tables: dict[Path | None, MoveTable] = {}
    for start in starts:
        pyproject = find_pyproject(start)
        if pyproject not in tables:
            tables[pyproject] = project_moves(pyproject, moves_file=args.moves,
                                              cache=lambda: _cache_folder(args))
    if len(set(tables.values())) > 1:
        shown = ", ".join(display_path(str(p or "(none)")) for p in tables)
        raise UsageError(f"the paths belong to projects whose moves differ ({shown}); run "
                         "auxcheck migrate once per project")
    return next(iter(tables.values()))


def _project_releases(args: argparse.Namespace) -> tuple[str, ...]:
    """Returns ``[tool.auxcheck] sglang`` of the project the first path is in: the releases
    it supports (an AUX501 of a move one of them predates points at ``--compat``); raises
    UsageError naming the file when the value is no list of releases."""
    from auxcheck._core.config import project_sglang
    from auxcheck.migrate.moves import find_pyproject

    start = next((p for p in args.paths if p != "-"), ".")
    pyproject = find_pyproject(start)
    try:
        return tuple(project_sglang(pyproject.parent)) if pyproject is not None else ()
    except InvalidArgument as exc:
        raise UsageError(str(exc)) from None


def _new_moves(inferred: Sequence[Move], table: MoveTable) -> tuple[list[Move], int]:
    """Returns the inferred moves ``table`` does not already decide, and how many names it
    decided differently (those keep the table's move: the user's, or the built-in one)."""
    kept: list[Move] = []
    overridden = 0
    for move in inferred:
        decided = {n: table.new_module_of(move.old, n) for n in move.names}
        overridden += sum(1 for new in decided.values() if new not in (None, move.new))
        names = tuple(n for n, new in decided.items() if new is None)
        if names:
            kept.append(Move(move.old, move.new, names, move.since))
    return kept, overridden


def _with_release_moves(table: MoveTable, args: argparse.Namespace) -> MoveTable:
    """Returns ``table`` plus the moves inferred between the ``--sglang`` releases."""
    from auxcheck._releases.moves_infer import moves_to_apply

    older, newer = args.sglang
    found = moves_to_apply(older, newer, wheels=args.wheel, sources=args.source,
                           cache=args.cache, download=not args.offline, jobs=args.jobs)
    kept, overridden = _new_moves(found.moves, table)
    added = sum(len(m.names) for m in kept)
    note = f"; {plural(overridden, 'name')} kept as your moves say" if overridden else ""
    print(f"auxcheck migrate: applying {plural(added, 'name')} SGLang moved from {older} to "
          f"{newer} ({found.left_out} left out: several possible homes){note}",
          file=sys.stderr)
    return table.merged(kept, source=f"moves inferred from sglang {older} to {newer}")


def _load_table(args: argparse.Namespace) -> MoveTable | str:
    """Returns the moves to apply, or the message saying why they cannot be had."""
    try:
        table = _project_tables(args)
    except (MovesTableError, InvalidArgument) as exc:
        return str(exc)
    if args.sglang is None:
        return table
    from auxcheck._core.errors import ReleaseError

    try:
        return _with_release_moves(table, args)
    except (MovesTableError, ReleaseError) as exc:
        return str(exc)


def _github(finding: Finding) -> str:
    path, line, col = split_location(finding.location or "-")
    return github_command("error", f"{finding.code} {finding.message}", file=path,
                          line=line or 1, col=col or 1)


def _print_findings(summary: RunSummary, fmt: str, out: TextIO, status: int) -> None:
    findings = summary.findings
    if fmt == "sarif":
        say(_sarif(summary, status), stream=out)
        return
    if fmt == "json":
        import json

        from auxcheck._core.report import Report

        report = Report("auxcheck migrate", findings).to_dict()
        report["ok"] = status == 0
        report["changed"] = [o.path for o in summary.changed]
        report["errors"] = [{"path": o.path, "reason": o.reason} for o in summary.failed]
        print(json.dumps(report, indent=2), file=out)
        return
    for finding in findings:
        print(_github(finding) if fmt == "github" else finding.to_text(), file=out)
    if fmt == "github":
        for failure in summary.failed:
            if not failure.findings:  # an AUX504 failure was printed with the findings
                print(github_command("error", failure.reason, file=failure.path), file=out)


def _sarif(summary: RunSummary, status: int) -> str:
    """Returns the SARIF log of the run: its findings, and each file that failed without
    one (not written, left unchanged, a folder not listed) as a notification."""
    from auxcheck.cli._sarif import Notice, Place, findings_log

    notices = [Notice(f"{display_path(o.path)}: {o.reason}", place=Place(o.path))
               for o in summary.failed if not o.findings]
    return findings_log(summary.findings, root=Path.cwd(), exit_code=status, notices=notices)


def _summary_line(summary: RunSummary, mode: Mode) -> str:
    verb = {"write": "rewritten", "check": "to migrate", "diff": "would be rewritten"}[mode]
    human = sum(1 for f in summary.findings if f.code == "AUX502")
    parts = [f"{plural(len(summary.changed), 'file')} {verb}"]
    if human:
        parts.append(f"{plural(human, 'use')} needing a human (AUX502)")
    broken, failed = len(summary.broken), len(summary.failed)
    folders = sum(1 for o in summary.failed if o.folder)
    if broken:
        parts.append(f"{plural(broken, 'file')} not read, decoded or parsed (AUX504)")
    if failed > broken + folders:
        parts.append(f"{plural(failed - broken - folders, 'file')} failed (not rewritten or "
                     "not written)")
    if folders:
        parts.append(f"{plural(folders, 'folder')} not listed")
    return f"auxcheck migrate: {', '.join(parts)} ({plural(summary.scanned, 'file')} scanned)"


_PROGRESS: dict[Mode, str] = {"write": "migrating", "check": "checking", "diff": "diffing"}
"""What a run's progress line calls its files' work."""


def _announcer(mode: Mode, out: TextIO, *,
               quiet: bool = False) -> Callable[[FileOutcome], None]:
    """Returns a callback printing each file's news as soon as it is done; ``quiet`` (-q)
    leaves out the ``Rewriting PATH`` line of a file rewritten without a note."""
    def announce(outcome: FileOutcome) -> None:
        clear()  # the files line drawn in place on a terminal, if any
        path = display_path(outcome.path)
        reason = one_line(outcome.reason)  # it may quote the file (a parser's message)
        if outcome.status == "failed":
            kept = "; left unchanged" if outcome.kept else ""
            print(f"{path}: error: {reason}{kept}", file=sys.stderr)
        elif outcome.status == "skipped" and reason.startswith("skipped: "):
            print(f"{path}: note: {reason}", file=sys.stderr)
        elif outcome.status == "changed" and mode == "write" and outcome.path != "-":
            if quiet and not reason:
                return
            note = f" ({reason})" if reason else ""
            print(f"Rewriting {path}{note}", file=sys.stderr, flush=True)
        elif outcome.diff:
            print(outcome.diff, end="", file=out)
    return announce


_NOTES = {
    "default": ("skipped {} by default", "name a folder to migrate it"),
    "link": ("did not follow {}", "name a link to migrate the file it leads to"),
}


def _note_lines(notes: Sequence[WalkNote]) -> list[str]:
    """Returns one line per kind of walk note: what was not entered, and how to have it."""
    lines = []
    for kind, (what, how) in _NOTES.items():
        paths = [display_path(n.path) for n in notes if n.kind == kind]
        if paths:
            noun = plural(len(paths), "folder" if kind == "default" else "symlink")
            shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5
                                           else "")
            lines.append(f"auxcheck migrate: {what.format(noun)}: {shown} ({how})")
    return lines


def _interrupted_line(summary: RunSummary, mode: Mode) -> str:
    name = signal.Signals(summary.interrupted or signal.SIGINT).name
    verb = "rewritten" if mode == "write" else "done"
    parts = [f"{plural(len(summary.changed), 'file')} {verb} (listed above)"]
    if summary.in_progress:
        state = ", each either unchanged or fully rewritten" if mode == "write" else ""
        shown = ", ".join(display_path(p) for p in summary.in_progress[:5])
        more = f" and {len(summary.in_progress) - 5} more" if len(summary.in_progress) > 5 else ""
        parts.append(f"{plural(len(summary.in_progress), 'file')} in progress ({shown}{more})"
                     f"{state}")
    parts.append(f"{plural(summary.unstarted, 'file')} not started")
    return (f"auxcheck migrate: stopped by {name}: {', '.join(parts)}; run the same command "
            "again to finish")


def _status(summary: RunSummary, mode: Mode) -> int:
    """Returns the exit status: 128 + the signal that stopped the run, 1 when work or a
    failure is left, else 0."""
    if summary.interrupted is not None:
        return 128 + summary.interrupted
    work_left = mode != "write" and bool(summary.changed)
    return 1 if work_left or summary.findings or summary.failed else 0


def _report(summary: RunSummary, mode: Mode, fmt: str, out: TextIO) -> int:
    status = _status(summary, mode)
    _print_findings(summary, fmt, out, status)
    for line in _note_lines(summary.notes):
        print(line, file=sys.stderr)
    print(_summary_line(summary, mode), file=sys.stderr)
    if summary.interrupted is not None:
        print(_interrupted_line(summary, mode), file=sys.stderr)
    return status


def _escaping_output() -> None:
    """Prints a path that is not valid UTF-8 escaped rather than failing on it."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _run_stdin(moves: MoveTable, mode: Mode, compat: bool, fmt: str,
               max_size: int | None, releases: Sequence[str] = ()) -> int:
    outcome: FileOutcome = migrate_stdin(sys.stdin.buffer.read(), moves=moves, mode=mode,
                                         compat=compat, max_size=max_size, releases=releases)
    summary = RunSummary(1, [outcome])
    _announcer(mode, sys.stdout)(outcome)
    if mode == "write" and outcome.data is not None:
        sys.stdout.buffer.write(outcome.data)
        sys.stdout.flush()
        return _report(summary, mode, fmt, sys.stderr)
    return _report(summary, mode, fmt, sys.stdout)


def _main(argv: list[str]) -> int:
    from auxcheck._core.errors import LibcstUnavailable

    _escaping_output()
    with stops_raised():  # SIGTERM as Ctrl-C, raised once as Stopped
        try:
            return _run(_parser().parse_args(argv))
        except LibcstUnavailable as exc:  # before any file was written
            raise UsageError(str(exc)) from None
        except KeyboardInterrupt as exc:  # before or after the run: nothing was written then
            signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
            print(f"auxcheck migrate: stopped by {signal.Signals(signum).name}; no file was "
                  "being written", file=sys.stderr)
            return 128 + signum


def _unusable(path: str) -> str:
    """Returns why ``path`` cannot be migrated (it does not exist, cannot be searched, loops),
    or "" when it can be looked at."""
    try:
        os.stat(path)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError) and not os.path.lexists(path):
            return f"no such file or folder: {display_path(path)}"
        return f"cannot use {display_path(path)}: {exc.strerror or exc}"
    return ""


def _results(args: argparse.Namespace, moves: MoveTable, releases: Sequence[str],
             mode: Mode) -> ResultCache | None:
    """Returns the verdicts ``--check`` remembers between runs, kept under the cache folder
    (``--cache``, else auxcheck's), which is looked up only when a file needs a verdict."""
    if mode != "check":
        return None
    from auxcheck.migrate.results import Keyer, ResultCache

    return ResultCache(lambda: _cache_folder(args), Keyer(moves, releases))


def _cache_folder(args: argparse.Namespace) -> Path:
    """Returns the folder of auxcheck's caches: ``--cache``, else ``$AUXCHECK_CACHE_DIR`` or
    its default (imported only when a cache is first used)."""
    from auxcheck._releases.wheels import cache_dir

    cache: Path | None = args.cache
    return cache or cache_dir()


def _run(args: argparse.Namespace) -> int:
    mode: Mode = "check" if args.check else "diff" if args.diff else "write"
    if mode == "diff" and args.format in ("json", "sarif"):
        raise UsageError(f"--diff prints diffs on stdout, where --format {args.format} writes "
                         f"its document: use --check with --format {args.format} for the "
                         "findings, or --diff alone for the diffs")
    unusable = [_unusable(p) for p in args.paths if p != "-"]
    if any(unusable):
        raise UsageError("; ".join(u for u in unusable if u))
    if "-" in args.paths and len(args.paths) > 1:
        raise UsageError("`-` (stdin) cannot be combined with other paths")
    with reporting(PROG, enabled=not args.quiet):  # --sglang: downloads, index building
        moves = _load_table(args)
    if isinstance(moves, str):
        raise UsageError(moves)
    releases = _project_releases(args)
    if args.paths == ["-"]:
        return _run_stdin(moves, mode, args.compat, args.format, args.max_file_size, releases)
    with reporting(PROG, enabled=not args.quiet), task(_PROGRESS[mode], unit="files") as job:
        summary = run(args.paths, moves=moves, mode=mode, compat=args.compat, jobs=args.jobs,
                      releases=releases, results=_results(args, moves, releases, mode),
                      exclude=args.exclude,
                      progress=lambda done, total: job.update(done, total=total),
                      on_outcome=_announcer(mode, sys.stdout, quiet=args.quiet),
                      max_size=args.max_file_size,
                      break_links=args.break_hardlinks)
    return _report(summary, mode, args.format, sys.stdout)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``auxcheck migrate``; returns 0 (nothing left), 1 (work or errors), 2 (usage),
    or 128 + the signal that stopped it."""
    status = run_command(PROG, _main, argv)
    if status > 128 and "libcst" in sys.modules:
        # After Ctrl-C or SIGTERM, a process that used libcst's native parser aborts
        # (SIGABRT) as the interpreter exits (seen with libcst 1.x on Linux, a thread
        # interrupted or not). Everything is said and every file is old or new: end here.
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(status)
    return status
