"""Running the migration over many files: prefilter, parallel workers, safe writes.

Only files whose bytes contain an old module's name reach a worker; ``check`` mode
scans them with :mod:`ast`, so a run that rewrites nothing never imports libcst, and a
run where no file holds such a name imports neither :mod:`ast` nor the report module.
A file that cannot be read, decoded or parsed fails with its AUX504 finding. The
value types are a NamedTuple and a slotted class, not dataclasses, for the same reason
as in :mod:`auxcheck.migrate._moves`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple, TextIO

from auxcheck.migrate._files import (
    PARSE_ERRORS,
    Prefilter,
    SourceFile,
    UndecodableFile,
    atomic_write,
    broken_file_finding,
    decode_source,
    iter_python_files,
    module_name_of,
    read_source,
)
from auxcheck.migrate._moves import MoveTable

if TYPE_CHECKING:
    from auxcheck.report import Finding

__all__ = ["FileOutcome", "Mode", "RunSummary", "migrate_file", "process_source", "run"]

Mode = Literal["write", "check", "diff"]
Status = Literal["changed", "unchanged", "skipped", "failed"]
_POOL_THRESHOLD = 16


class FileOutcome(NamedTuple):
    """What happened to one file: its status, remaining findings, failure reason, diff.

    A file that cannot be read, decoded or parsed is ``failed`` with one AUX504 finding;
    one that cannot be written, or that libcst cannot rewrite, is ``failed`` with none.
    """

    path: str
    status: Status
    findings: tuple[Finding, ...] = ()
    reason: str = ""
    diff: str = ""
    data: bytes | None = None


class RunSummary:
    """Every outcome of a run, in path order, with the counts the CLI prints."""

    __slots__ = ("outcomes", "scanned")

    def __init__(self, scanned: int = 0, outcomes: list[FileOutcome] | None = None) -> None:
        self.scanned = scanned
        self.outcomes: list[FileOutcome] = [] if outcomes is None else outcomes

    def __repr__(self) -> str:
        return f"RunSummary(scanned={self.scanned!r}, outcomes={self.outcomes!r})"

    @property
    def changed(self) -> list[FileOutcome]:
        """Returns the outcomes of files that were (or would be) rewritten."""
        return [o for o in self.outcomes if o.status == "changed"]

    @property
    def failed(self) -> list[FileOutcome]:
        """Returns the outcomes of files that could not be read, parsed, rewritten or written."""
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def broken(self) -> list[FileOutcome]:
        """Returns the failed outcomes of files that could not be read, decoded or parsed."""
        return [o for o in self.failed if any(f.code == "AUX504" for f in o.findings)]

    @property
    def findings(self) -> list[Finding]:
        """Returns every remaining finding, file by file."""
        return [f for o in self.outcomes for f in o.findings]


def _diff(path: str, before: str, after: str) -> str:
    import difflib

    lines = difflib.unified_diff(before.splitlines(keepends=True),
                                 after.splitlines(keepends=True), path, path)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def process_source(source: SourceFile, *, moves: MoveTable, mode: Mode, compat: bool = False,
                   module: str | None = None) -> FileOutcome:
    """Returns the outcome of migrating (or, in check mode, scanning) one decoded file."""
    path, is_package = source.path, source.path.endswith("__init__.py")
    if mode == "check":
        from auxcheck.migrate.scan import scan_source  # ast: only for candidate files

        try:
            found = scan_source(source.text, moves=moves, module=module, path=path,
                                is_package=is_package)
        except PARSE_ERRORS as exc:
            return _unparsable(source, exc)
        return FileOutcome(path, "changed" if found else "unchanged", tuple(found))
    return _migrate(source, moves=moves, mode=mode, compat=compat, module=module)


def _unparsable(source: SourceFile, exc: BaseException) -> FileOutcome:
    return FileOutcome(source.path, "failed", (broken_file_finding(
        source.path, exc, text=source.text),), reason=f"does not parse: {_reason(exc)}")


def _parse_error(source: SourceFile) -> BaseException | None:
    """Returns what :func:`ast.parse` raises on ``source``, or None when it parses."""
    import ast

    try:
        ast.parse(source.text, filename=source.path)
    except PARSE_ERRORS as exc:
        return exc
    return None


def _migrate(source: SourceFile, *, moves: MoveTable, mode: Mode, compat: bool,
             module: str | None) -> FileOutcome:
    path, is_package = source.path, source.path.endswith("__init__.py")
    from auxcheck.migrate._style import StyleConfigError, find_style
    from auxcheck.migrate.transform import migrate_source  # libcst only when work is likely

    try:  # the import style of the project the file is in (stdin: the current folder's)
        style = find_style(None if path == "-" else os.path.dirname(os.path.abspath(path)))
    except StyleConfigError as exc:
        return FileOutcome(path, "failed", reason=f"cannot read the import style: {exc}")
    try:
        result = migrate_source(source.text, moves=moves, module=module,
                                is_package=is_package, compat=compat, path=path, style=style)
    except RecursionError as exc:  # nesting too deep for ast's parser, or for libcst's
        error = _parse_error(source)
        return _unparsable(source, error) if error is not None else FileOutcome(
            path, "failed", reason=f"too deeply nested to rewrite: {exc}")
    found = tuple(u.finding(path) for u in result.analysis.uses) if result.analysis else ()
    if result.status == "failed":
        # The transform says why in words; parsing again, only here, gives the parser's
        # own error and place for AUX504, and tells a file that does not parse from one
        # that libcst could not rewrite.
        error = _parse_error(source)
        if error is not None:
            return _unparsable(source, error)
    if result.status in ("failed", "skipped"):
        return FileOutcome(path, result.status, reason=result.reason)
    if result.status == "unchanged":
        return FileOutcome(path, "unchanged", found)
    diff = _diff(path, source.text, result.text) if mode == "diff" else ""
    return FileOutcome(path, "changed", found, diff=diff, data=source.encode(result.text))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (line {exc.lineno})" if exc.lineno else exc.msg
    return str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"


def migrate_file(path: str, *, moves: MoveTable, mode: Mode,
                 compat: bool = False) -> FileOutcome:
    """Returns the outcome for the file at ``path``, rewriting it atomically in write mode."""
    try:
        source = read_source(path)
    except UndecodableFile as exc:
        return FileOutcome(path, "failed", (broken_file_finding(path, exc),), exc.reason)
    if not moves.could_use(source.data):
        return FileOutcome(path, "unchanged")
    module = module_name_of(path, anchors=moves.packages)
    outcome = process_source(source, moves=moves, mode=mode, compat=compat, module=module)
    if mode == "write" and outcome.status == "changed" and outcome.data is not None:
        try:
            atomic_write(path, outcome.data)
        except OSError as exc:
            return FileOutcome(path, "failed", reason=f"cannot write: {exc.strerror}")
    return FileOutcome(outcome.path, outcome.status, outcome.findings, outcome.reason,
                       outcome.diff)


def migrate_stdin(data: bytes, *, moves: MoveTable, mode: Mode,
                  compat: bool = False) -> FileOutcome:
    """Returns the outcome for source bytes read from stdin (``data`` holds the output)."""
    try:
        source = decode_source(data, path="-")
    except UndecodableFile as exc:
        return FileOutcome("-", "failed", (broken_file_finding("-", exc),), exc.reason,
                           data=data)
    outcome = process_source(source, moves=moves, mode=mode, compat=compat)
    return outcome if outcome.data is not None else FileOutcome(
        "-", outcome.status, outcome.findings, outcome.reason, outcome.diff, data)


class _Worker:
    """A picklable per-file job for the process pool."""

    def __init__(self, moves: MoveTable, mode: Mode, compat: bool) -> None:
        self.moves, self.mode, self.compat = moves, mode, compat

    def __call__(self, path: str) -> FileOutcome:
        return migrate_file(path, moves=self.moves, mode=self.mode, compat=self.compat)


def _candidates(paths: Iterable[str], moves: MoveTable,
                summary: RunSummary) -> list[str]:
    holds_needle = Prefilter(moves.needles(), moves.could_use)
    found = []
    for path in paths:
        summary.scanned += 1
        try:
            if holds_needle(path):
                found.append(path)
        except OSError as exc:
            summary.outcomes.append(FileOutcome(path, "failed", (broken_file_finding(path, exc),),
                                                reason=f"cannot read: {exc.strerror}"))
    return found


def run(roots: Sequence[str], *, moves: MoveTable, mode: Mode, compat: bool = False,
        jobs: int | None = None, exclude: Sequence[str] = (),
        progress: Callable[[int, int], None] | None = None,
        on_outcome: Callable[[FileOutcome], None] | None = None) -> RunSummary:
    """Returns the summary of migrating (or checking) every Python file under ``roots``.

    Files are prefiltered by bytes in this process; candidates go to ``jobs``
    worker processes (default: the CPU count) when there are enough of them.
    ``on_outcome`` sees each outcome as soon as its file is done (read failures first).
    """
    summary = RunSummary()
    candidates = _candidates(iter_python_files(roots, exclude=exclude), moves, summary)
    if on_outcome is not None:
        for failure in summary.outcomes:
            on_outcome(failure)
    worker = _Worker(moves, mode, compat)
    workers = min(jobs or os.cpu_count() or 1, len(candidates))
    if workers > 1 and len(candidates) >= _POOL_THRESHOLD:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            chunk = max(1, len(candidates) // (workers * 8))
            results: Iterable[FileOutcome] = pool.map(worker, candidates, chunksize=chunk)
            _collect(summary, results, len(candidates), progress, on_outcome)
    else:
        _collect(summary, map(worker, candidates), len(candidates), progress, on_outcome)
    summary.outcomes.sort(key=lambda o: o.path)
    return summary


def _collect(summary: RunSummary, results: Iterable[FileOutcome], total: int,
             progress: Callable[[int, int], None] | None,
             on_outcome: Callable[[FileOutcome], None] | None) -> None:
    for done, outcome in enumerate(results, 1):
        summary.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
        if progress is not None:
            progress(done, total)


def progress_bar(stream: TextIO | None = None) -> Callable[[int, int], None] | None:
    """Returns a progress callback drawing on stderr, or None when stderr is not a terminal."""
    out = sys.stderr if stream is None else stream
    if not out.isatty():
        return None

    def draw(done: int, total: int) -> None:
        if total < 50:
            return
        filled = 30 * done // total
        end = "\n" if done == total else ""
        print(f"\r[{'#' * filled}{' ' * (30 - filled)}] {done}/{total}", end=end,
              file=out, flush=True)

    return draw
