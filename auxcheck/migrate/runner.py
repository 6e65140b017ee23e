"""Running the migration over many files: prefilter, parallel workers, safe writes.

Only files whose bytes can use an old module are worked on (checking with many old
modules, a worker tests the bytes itself); ``check`` mode scans them with :mod:`ast` and
remembers verdicts (:mod:`auxcheck.migrate.results`), so a run that rewrites nothing never
imports libcst, and a run where no file holds such a name imports neither :mod:`ast` nor
the report module. A file that cannot be read, decoded or parsed fails with its AUX504
finding. Value types are a NamedTuple and a slotted class, not dataclasses (see moves.py).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple

from auxcheck._core.errors import (
    FileTooLarge,
    NotARegularFile,
    OutOfFiles,
    Stopped,
    UndecodableFile,
    WriteRefused,
)
from auxcheck._core.limits import is_out_of_files
from auxcheck._core.python_files import WalkNote, iter_python_files, module_name_of
from auxcheck._core.sources import (
    DEFAULT_MAX_FILE_SIZE,
    PARSE_ERRORS,
    SourceFile,
    broken_file_finding,
    compile_as_python,
    decode_source,
    deep_call,
    read_source_state,
    why_not_read,
)
from auxcheck._core.stops import as_worker, held_stops
from auxcheck.migrate.files import Prefilter, atomic_write, drop_temporary_files, finer_test_only
from auxcheck.migrate.moves import MoveTable
from auxcheck.migrate.needs import need_libcst

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from auxcheck._core.report import Finding
    from auxcheck.migrate.results import Keyer, ResultCache

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "FileOutcome",
    "Mode",
    "RunSummary",
    "migrate_file",
    "process_source",
    "run",
]

Mode = Literal["write", "check", "diff"]
Status = Literal["changed", "unchanged", "skipped", "failed"]
_POOL_THRESHOLD = 16
_INLINE_BYTES = 256 << 10
"""Larger files are migrated in a worker process whatever ``jobs`` says: parsing one holds
the interpreter for long stretches that no signal handler can cut short, and a worker
can be killed at once on Ctrl-C."""
_STOP_GRACE = 0.4
"""Seconds a stopped worker gets to end (or to finish the write it is in) before it is killed."""
_MEMORY_PER_BYTE = 1000
"""Bytes of memory one byte of source costs while it is parsed and rewritten (measured)."""
_BATCH_BYTES = 256 << 10
"""At most this many bytes of source per batch a worker is handed (one IPC round trip each,
which costs about as much as scanning a small file)."""
_GONE = 3
"""The exit status of a worker whose parent went away."""


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
    kept: bool = True
    """A failed file is exactly as it was (False where that is not known, or not a file)."""
    folder: bool = False
    """The path is a folder whose files were not migrated, not a file."""
    key: str = ""
    """In check mode with a result cache: the key of the bytes the outcome was found from."""
    filtered: bool = False  # the byte test turned it away unparsed (MoveTable.could_use)


class RunSummary:
    """Every outcome of a run, in path order, with the counts the CLI prints."""

    __slots__ = ("in_progress", "interrupted", "notes", "outcomes", "scanned", "unstarted")

    def __init__(self, scanned: int = 0, outcomes: list[FileOutcome] | None = None) -> None:
        self.scanned = scanned
        self.outcomes: list[FileOutcome] = [] if outcomes is None else outcomes
        self.notes: list[WalkNote] = []
        """Folders skipped by default and symlinks not followed, as the walk met them."""
        self.interrupted: int | None = None
        """The signal that stopped the run early, if one did."""
        self.in_progress: list[str] = []
        """Files being migrated when the run was stopped: each is old or new, not half."""
        self.unstarted = 0
        """Files that would have been migrated, had the run not been stopped."""

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
    def skipped(self) -> list[FileOutcome]:
        """Returns the outcomes of files left alone with a reason (not regular files)."""
        return [o for o in self.outcomes if o.status == "skipped" and o.reason]

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
                   module: str | None = None, releases: Sequence[str] = ()) -> FileOutcome:
    """Returns the outcome of migrating (or, in check mode, scanning) one decoded file;
    ``releases``: the SGLang releases the project supports (for AUX501's fix).

    A file Python itself cannot parse (at its usual limits) fails with AUX504; the
    others are scanned or rewritten on a thread with a deep stack (:func:`deep_call`), so
    that a long flat expression is migrated rather than failed.
    """
    path = source.path
    if mode == "check":
        from auxcheck.migrate.scan import scan_source  # ast: only for candidate files

        try:  # parses once at Python's limits, then walks the tree on a deep stack
            found = scan_source(source.text, moves=moves, module=module, path=path,
                                is_package=path.endswith("__init__.py"), releases=releases)
        except PARSE_ERRORS as exc:
            return _unparsable(source, exc)
        return FileOutcome(path, "changed" if found else "unchanged", tuple(found))
    error = _parse_error(source)
    if error is not None:
        return _unparsable(source, error)
    return deep_call(lambda: _migrate(source, moves=moves, mode=mode, compat=compat,
                                      module=module, releases=releases))


def _unparsable(source: SourceFile, exc: BaseException) -> FileOutcome:
    return FileOutcome(source.path, "failed", (broken_file_finding(
        source.path, exc, text=source.text),), reason=f"does not parse: {_reason(exc)}")


def _parse_error(source: SourceFile) -> BaseException | None:
    """Returns what compiling ``source`` raises where Python would refuse it, or None."""
    try:
        compile_as_python(source.text, source.path)
    except PARSE_ERRORS as exc:
        return exc
    return None


def _migrate(source: SourceFile, *, moves: MoveTable, mode: Mode, compat: bool,
             module: str | None, releases: Sequence[str] = ()) -> FileOutcome:
    path, is_package = source.path, source.path.endswith("__init__.py")
    from auxcheck._core.errors import StyleConfigError
    from auxcheck.migrate.style import find_style
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
    found = (tuple(u.finding(path, moves, releases) for u in result.analysis.uses)
             if result.analysis else ())
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
    text = _with_final_newline(source.text, result.text)
    diff = _diff(path, source.text, text) if mode == "diff" else ""
    return FileOutcome(path, "changed", found, diff=diff, data=source.encode(text))


def _with_final_newline(before: str, after: str) -> str:
    """Returns ``after`` ending in the newline ``before`` ends in: libcst (1.x) drops a
    final lone ``\r`` of a file whose lines end in ``\r``."""
    if after.endswith(("\n", "\r")):
        return after
    return after + next((n for n in ("\r\n", "\r", "\n") if before.endswith(n)), "")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (line {exc.lineno})" if exc.lineno else exc.msg
    return str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"


def migrate_file(path: str, *, moves: MoveTable, mode: Mode, compat: bool = False,
                 max_size: int | None = DEFAULT_MAX_FILE_SIZE,
                 break_links: bool = False, prefiltered: bool = False,
                 releases: Sequence[str] = (), keyer: Keyer | None = None) -> FileOutcome:
    """Returns the outcome for the file at ``path``, rewriting it atomically in write mode.

    ``prefiltered``: the caller has already found that the file's bytes can hold a use
    (:meth:`MoveTable.could_use`), as :func:`run` does before handing files to workers (else
    one that cannot is ``filtered``); ``keyer``: see :attr:`FileOutcome.key`.

    Only a regular file of at most ``max_size`` bytes is read (None: any size); a
    rewrite is written only over the file as it was read (an edit made meanwhile is
    kept, the file failed), keeping its owner, group and mode; a file with other hard
    links is refused unless ``break_links``.
    """
    try:
        source, state = read_source_state(path, max_size=max_size)
    except NotARegularFile as exc:
        return FileOutcome(path, "skipped", reason=f"skipped: {why_not_read(exc)}")
    except UndecodableFile as exc:
        return FileOutcome(path, "failed", (broken_file_finding(path, exc),), exc.reason)
    except FileTooLarge as exc:
        return FileOutcome(path, "failed", (broken_file_finding(path, exc),),
                           too_large(exc.size, exc.limit))
    key = "" if keyer is None or mode != "check" else keyer(path, source.data)
    if not prefiltered and not moves.could_use(source.data):
        return FileOutcome(path, "unchanged", key=key, filtered=True)
    module = module_name_of(path, anchors=moves.packages)
    outcome = process_source(source, moves=moves, mode=mode, compat=compat, module=module,
                             releases=releases)
    note = outcome.reason
    if mode == "write" and outcome.status == "changed" and outcome.data is not None:
        try:
            links = atomic_write(path, outcome.data, read=(state, source.data),
                                 break_links=break_links)
        except WriteRefused as exc:
            return FileOutcome(path, "failed", outcome.findings, exc.reason, kept=exc.kept)
        except OSError as exc:
            return FileOutcome(path, "failed", outcome.findings,
                               f"cannot write: {exc.strerror or exc}")
        note = _write_note(path, links)
    return FileOutcome(outcome.path, outcome.status, outcome.findings, note, outcome.diff,
                       key=key)


def _write_note(path: str, links: int) -> str:
    """Says what a reader of "Rewriting PATH" would not guess: a symlink written through,
    hard links left with the old text."""
    notes = []
    if os.path.islink(path):
        notes.append(f"through the symlink, to {os.path.realpath(path)}")
    if links > 1:
        others = "the other link keeps" if links == 2 else f"the other {links - 1} links keep"
        notes.append(f"it had {links} hard links: {others} the old text")
    return "; ".join(notes)


def too_large(size: int, limit: int) -> str:
    """Returns the reason a file of ``size`` bytes over ``limit`` is left unchanged."""
    need = -(-size // (1 << 20)) + 1
    return (f"{size:,} bytes, over --max-file-size {limit:,} (parsing takes about "
            f"{_MEMORY_PER_BYTE:,} times a file's size in memory); pass --max-file-size "
            f"{need}MB to migrate it")


def migrate_stdin(data: bytes, *, moves: MoveTable, mode: Mode, compat: bool = False,
                  max_size: int | None = DEFAULT_MAX_FILE_SIZE,
                  releases: Sequence[str] = ()) -> FileOutcome:
    """Returns the outcome for source bytes read from stdin (``data`` holds the output: the
    input itself when it is not rewritten, over ``max_size`` bytes included)."""
    if max_size is not None and len(data) > max_size:
        large = FileTooLarge("-", len(data), max_size)
        return FileOutcome("-", "failed", (broken_file_finding("-", large),),
                           too_large(len(data), max_size), data=data)
    try:
        source = decode_source(data, path="-")
    except UndecodableFile as exc:
        return FileOutcome("-", "failed", (broken_file_finding("-", exc),), exc.reason,
                           data=data)
    if mode != "check":
        need_libcst()
    outcome = process_source(source, moves=moves, mode=mode, compat=compat, releases=releases)
    return outcome if outcome.data is not None else FileOutcome(
        "-", outcome.status, outcome.findings, outcome.reason, outcome.diff, data)


_parent: int | None = None
"""In a pool worker: the pid of the process that started it."""
_job: _Worker | None = None
"""In a pool worker: what it does with each batch of files."""


def _init_worker(parent: int, job: _Worker) -> None:
    """Makes a pool worker one its parent alone stops (:func:`as_worker`: Ctrl-C left to the
    parent, SIGTERM at once, held while a file is put in place, and sent when the parent
    dies), with a check before each file. ``job`` is kept for :func:`_run_batch`: the moves
    table is sent once per worker, not once per batch (an inferred table of thousands of
    moves costs a tenth of a second to rebuild)."""
    global _parent, _job
    _parent, _job = parent, job
    as_worker(parent)  # it was started inside held_stops (see _run_pool)


class _Worker:
    """A picklable job for the process pool: migrates a batch of files, one by one."""

    def __init__(self, moves: MoveTable, mode: Mode, compat: bool, max_size: int | None,
                 break_links: bool, releases: Sequence[str] = (), *, prefiltered: bool = True,
                 keyer: Keyer | None = None) -> None:
        self.moves, self.mode, self.compat = moves, mode, compat
        self.max_size, self.break_links = max_size, break_links
        self.releases = tuple(releases)
        self.prefiltered = prefiltered
        """Whether the parent tested each file's bytes (else the worker does)."""
        self.keyer = keyer

    def one(self, path: str) -> FileOutcome:
        """Returns the outcome for one file; a bug of auxcheck fails that file, not the run."""
        try:
            return migrate_file(path, moves=self.moves, mode=self.mode, compat=self.compat,
                                max_size=self.max_size, break_links=self.break_links,
                                prefiltered=self.prefiltered, releases=self.releases,
                                keyer=self.keyer)
        except Exception as exc:  # noqa: BLE001 - one file's failure is reported, not raised
            return FileOutcome(path, "failed", reason=(
                f"auxcheck failed on this file ({type(exc).__name__}: {exc}); please report "
                "it with the file"))

    def __call__(self, paths: Sequence[str]) -> list[FileOutcome]:
        done = []
        for path in paths:
            if _parent is not None and os.getppid() != _parent:
                os._exit(_GONE)  # the parent is gone: nobody would hear of this file
            done.append(self.one(path))
        return done


def _run_batch(paths: Sequence[str]) -> list[FileOutcome]:
    """Runs this worker's job (:func:`_init_worker`) on ``paths``."""
    assert _job is not None, "a pool worker is started by _init_worker"
    return _job(paths)


class _Candidate(NamedTuple):
    path: str
    size: int


class _Reporter:
    """Adds each outcome to the summary and tells the callbacks.

    ``on_outcome`` hears of the candidates' outcomes in the candidates' order, whatever
    order the workers finish them in (so ``-j 2`` prints the same lines in the same order
    every run): each as soon as it and every candidate before it are done. A stopped run
    calls :meth:`flush`, so that every file done is still told (and, rewritten, listed).
    """

    def __init__(self, summary: RunSummary, progress: Callable[[int, int], None] | None,
                 on_outcome: Callable[[FileOutcome], None] | None,
                 results: ResultCache | None = None) -> None:
        self.summary, self.progress, self.on_outcome = summary, progress, on_outcome
        self.results = results
        self.passed: set[str] = set()
        """The files a worker's byte test turned away: done, with no outcome to keep."""
        self.done = 0
        self.total = 0
        self._order: dict[str, list[int]] = {}
        self._waiting: dict[int, FileOutcome] = {}
        self._next = 0

    def expect(self, paths: Sequence[str]) -> None:
        """Sets the order in which the outcomes of ``paths`` are told."""
        self.total = len(paths)
        for index, path in enumerate(paths):
            self._order.setdefault(path, []).append(index)

    def __call__(self, outcome: FileOutcome, *, counted: bool = True) -> None:
        status = outcome.status
        if self.results is not None and outcome.key and status in ("changed", "unchanged"):
            self.results.put(outcome.key, "filtered" if outcome.filtered else status,
                             outcome.findings)
        if outcome.filtered:  # as if never a candidate: no outcome, nothing told
            self.passed.add(outcome.path)
        else:
            self.summary.outcomes.append(outcome)
        places = self._order.get(outcome.path) if counted else None
        if not places:
            self._tell(outcome)
        else:
            self._waiting[places.pop(0)] = outcome
            while self._next in self._waiting:
                outcome = self._waiting.pop(self._next)
                self._next += 1
                self._tell(outcome)
        if counted:
            self.done += 1
            if self.progress is not None:
                self.progress(self.done, self.total)

    @property
    def held(self) -> int:
        """Returns how many outcomes wait for an earlier file's before being told."""
        return len(self._waiting)

    def _tell(self, outcome: FileOutcome) -> None:
        if self.on_outcome is not None and not outcome.filtered:
            self.on_outcome(outcome)

    def flush(self) -> None:
        """Tells every outcome still waiting for an earlier one, in order."""
        while self._waiting:
            self._tell(self._waiting.pop(min(self._waiting)))


class _Sieve:
    """The parent's test of one file's bytes, given to :class:`Prefilter` as its finer test:
    a verdict the result cache remembers is reported at once (the file is no candidate);
    otherwise the table's byte test decides, here, or (``defer``) in the worker."""

    def __init__(self, moves: MoveTable, report: _Reporter, results: ResultCache | None,
                 max_size: int | None, *, defer: bool) -> None:
        self.moves, self.report, self.results = moves, report, results
        self.max_size, self.defer = max_size, defer
        self.path = ""  # the file being tested

    def __call__(self, data: bytes) -> bool:
        if self.results is not None and (self.max_size is None or len(data) <= self.max_size):
            known = self.results.get(self.path, data)
            if known is not None:
                verdict, findings = known
                if verdict != "filtered":
                    self.report(FileOutcome(self.path, verdict, findings), counted=False)
                return False
        return self.defer or self.moves.could_use(data)


def _candidates(paths: Iterable[str], sieve: _Sieve, summary: RunSummary,
                max_size: int | None, report: _Reporter) -> list[_Candidate]:
    holds_needle = Prefilter(sieve.moves.needles(), sieve, max_size=max_size)
    found = []
    for path in paths:
        summary.scanned += 1
        sieve.path = path
        try:
            if holds_needle(path):
                found.append(_Candidate(path, holds_needle.size))
        except NotARegularFile as exc:
            report(FileOutcome(path, "skipped", reason=f"skipped: {why_not_read(exc)}"),
                   counted=False)
        except OSError as exc:
            report(FileOutcome(path, "failed", (broken_file_finding(path, exc),),
                               reason=f"cannot read: {exc.strerror or exc}"), counted=False)
    return found


def _note_sink(summary: RunSummary, report: _Reporter) -> Callable[[WalkNote], None]:
    def note(found: WalkNote) -> None:
        if found.kind == "unlistable":  # its files are not migrated: a failure, said now
            report(FileOutcome(found.path, "failed", reason=(
                f"cannot list this folder ({found.detail}); its files were not migrated; make "
                "it readable, or leave it out with --exclude"), kept=False, folder=True),
                counted=False)
        else:
            summary.notes.append(found)
    return note


def run(roots: Sequence[str], *, moves: MoveTable, mode: Mode, compat: bool = False,
        jobs: int | None = None, exclude: Sequence[str] = (),
        progress: Callable[[int, int], None] | None = None,
        on_outcome: Callable[[FileOutcome], None] | None = None,
        max_size: int | None = DEFAULT_MAX_FILE_SIZE, break_links: bool = False,
        releases: Sequence[str] = (), results: ResultCache | None = None) -> RunSummary:
    """Returns the summary of migrating (or checking) every Python file under ``roots``;
    ``releases``: the SGLang releases the project supports (an AUX501 of a move one of
    them predates points at ``--compat``); ``results``: verdicts of earlier runs, used and
    added to in check mode only (a file whose verdict it holds is not worked on again).

    Files are prefiltered by bytes in this process (checking with a table of many old
    modules, such as an inferred one, the workers run the finer test); candidates go to
    ``jobs`` worker processes (default: the CPU count) when there are enough of them, no
    more large files at once than the available memory allows. ``on_outcome`` sees read
    failures first, then each file's outcome in the files' order, as soon as it and every
    file before it are done (the same order whatever ``jobs``; a stopped run tells every
    file done, including those after one still in progress). Ctrl-C (or an
    :class:`~auxcheck.errors.Stopped` that a SIGTERM handler raises) stops the run promptly: the
    workers are stopped, and the summary says what was done (``interrupted``,
    ``in_progress``, ``unstarted``). Raises LibcstUnavailable, before any file is written,
    when a file may need rewriting and libcst cannot be imported.
    """
    if mode != "check":
        results = None  # a rewrite never trusts a cache to decide what to write
    summary = RunSummary()
    report = _Reporter(summary, progress, on_outcome, results)
    defer = mode == "check" and finer_test_only(moves.needles())
    sieve = _Sieve(moves, report, results, max_size, defer=defer)
    worker = _Worker(moves, mode, compat, max_size, break_links, releases, prefiltered=not defer,
                     keyer=None if results is None else results.keyer)
    candidates: list[_Candidate] = []
    try:
        files = iter_python_files(roots, exclude=exclude, note=_note_sink(summary, report))
        candidates = _candidates(files, sieve, summary, max_size, report)
        if candidates and mode != "check":
            need_libcst()  # one error for the run, not one failure per file
        report.expect([c.path for c in candidates])
        workers = min(jobs or os.cpu_count() or 1, len(candidates))
        if (workers > 1 and len(candidates) >= _POOL_THRESHOLD
                or any(c.size > _INLINE_BYTES for c in candidates)):
            _run_pool_or_say_why(worker, candidates, workers, report)
        else:
            for candidate in candidates:
                summary.in_progress = [candidate.path]
                report(worker.one(candidate.path))
            summary.in_progress = []
    except KeyboardInterrupt as exc:
        summary.interrupted = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
        known = {o.path for o in summary.outcomes} | set(summary.in_progress) | report.passed
        summary.unstarted = sum(1 for c in candidates if c.path not in known)
    report.flush()  # a stopped run: the files done after one still in progress
    if results is not None:
        results.save()
    summary.outcomes.sort(key=lambda o: o.path)
    return summary


def _memory_budget() -> int:
    """Returns half the memory available now, in bytes (a large number when unknown)."""
    try:
        with open("/proc/meminfo", "rb") as meminfo:
            for line in meminfo:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024 // 2
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _batches(candidates: Sequence[_Candidate], workers: int) -> list[list[_Candidate]]:
    """Returns the candidates in batches of small files (one IPC round trip each)."""
    most = max(1, min(32, len(candidates) // (workers * 8)))
    batches: list[list[_Candidate]] = []
    for candidate in candidates:
        last = batches[-1] if batches else None
        if last is None or len(last) >= most or sum(c.size for c in last) + candidate.size > (
                _BATCH_BYTES):
            batches.append([candidate])
        else:
            last.append(candidate)
    return batches


def _run_pool_or_say_why(worker: _Worker, candidates: Sequence[_Candidate], workers: int,
                         report: _Reporter) -> None:
    """Runs :func:`_run_pool`; raises OutOfFiles, naming the pool, when its pipes or processes
    could not be made for the open-file limit (``ulimit -n``)."""
    try:
        _run_pool(worker, candidates, workers, report)
    except OSError as exc:
        if not is_out_of_files(exc):
            raise
        raise OutOfFiles(f"cannot start {workers} worker processes", exc) from exc


def _run_pool(worker: _Worker, candidates: Sequence[_Candidate], workers: int,
              report: _Reporter) -> None:
    """Migrates ``candidates`` on a pool of ``workers`` processes, as many batches in flight
    as keep the workers busy and the memory they need under half of what is available."""
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    pending = _batches(candidates, workers)[::-1]
    budget = _memory_budget()
    running: dict[Future[list[FileOutcome]], list[_Candidate]] = {}
    pool = ProcessPoolExecutor(workers, initializer=_init_worker,
                               initargs=(os.getpid(), worker))
    try:
        while pending or running:
            used = sum(c.size for batch in running.values() for c in batch) * _MEMORY_PER_BYTE
            # Outcomes held for an earlier file still in flight are not told yet: no more
            # is handed out past a few batches of them, so a slow first file does not let
            # the run race ahead of what it has said (nor hold every diff in memory).
            while (pending and len(running) < 2 * workers
                   and (not running or report.held < 2 * workers * len(pending[-1]))):
                cost = sum(c.size for c in pending[-1]) * _MEMORY_PER_BYTE
                if running and used + cost > budget:
                    break
                batch = pending.pop()
                # A submit may fork workers: one forked but not yet recorded by the pool
                # could never be stopped, so a stop waits until the pool knows them all.
                with held_stops():
                    running[pool.submit(_run_batch, [c.path for c in batch])] = batch
                used += cost
            report.summary.in_progress = [c.path for b in running.values() for c in b]
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            broken = False
            for future in finished:
                batch = running.pop(future)
                try:
                    outcomes = future.result()
                except BrokenProcessPool:
                    broken = True
                    outcomes = [_died(c.path) for c in batch]
                for outcome in outcomes:
                    report(outcome)
            if broken:  # every batch still in flight died with the pool: say so, go on
                for batch in running.values():
                    for candidate in batch:
                        report(_died(candidate.path))
                running.clear()
                _stop_pool(pool, ())
                pool = ProcessPoolExecutor(workers, initializer=_init_worker,
                                           initargs=(os.getpid(), worker))
        report.summary.in_progress = []
        pool.shutdown()
    except BaseException:
        # In flight: what was handed to the workers and is not reported yet.
        done = {o.path for o in report.summary.outcomes} | report.passed
        flight = [*report.summary.in_progress, *(c.path for b in running.values() for c in b)]
        report.summary.in_progress = [p for p in dict.fromkeys(flight) if p not in done]
        _stop_pool(pool, report.summary.in_progress)
        raise


def _died(path: str) -> FileOutcome:
    return FileOutcome(path, "failed", reason=(
        "a worker process died while this file was in progress (killed, out of memory, or "
        "crashed); the file is unchanged or fully rewritten; run again, with -j 1 to see "
        "which file it was"), kept=False)


def _stop_pool(pool: ProcessPoolExecutor, in_progress: Sequence[str]) -> None:
    """Stops the pool's workers now: SIGTERM (each ends at once, or as soon as the file it
    is writing is in place), then, after a short grace, SIGKILL for a worker still busy
    inside a parser, whose temporary files beside the ``in_progress`` files are then
    removed here. A second Ctrl-C waits until every worker is stopped."""
    import time

    with held_stops():
        # ProcessPoolExecutor has no public way to stop its workers before Python 3.14
        # (terminate_workers); its private `_processes` map is the same on 3.10 to 3.13.
        found = getattr(pool, "_processes", None) or {}
        processes = list(found.values())
        for process in processes:
            process.terminate()
        deadline = time.monotonic() + _STOP_GRACE
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join(1)
                if process.pid is not None:
                    drop_temporary_files(process.pid, in_progress)
        pool.shutdown(wait=True, cancel_futures=True)
