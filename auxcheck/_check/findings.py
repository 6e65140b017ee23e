"""The findings of ``auxcheck check``'s stages, located in the project, one per cause.

Each stage reports its findings as :class:`StageFinding` values, their paths relative to the
project folder (PATH) whatever the tool printed (mypy runs from PATH's parent when PATH is
itself a package). An old import fails several stages at once: the imports stage (AUX501),
mypy on the same line (the stubs lack the name there), the contract suite's ``imports`` item
(the same scan), and a release's AUX503 where the old module is gone. The imports stage's
finding is the cause; a later stage's finding that is provably about the same old import
(same file and line, naming the old module or moved name) is *referred* to it: kept, with
``cause`` holding the cause (``see`` names it), but not counted, and not failing its stage on
its own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Literal

from auxcheck._core.paths import split_location
from auxcheck._core.text import plural

if TYPE_CHECKING:
    from auxcheck._core.report import Finding
    from auxcheck._releases.release_check import ReleaseResult
    from auxcheck._suite.result_file import ItemResult
    from auxcheck.migrate.moves import MoveTable

__all__ = [
    "Causes",
    "MypyOutput",
    "StageFinding",
    "caused_lines",
    "contract_findings",
    "from_finding",
    "import_subjects",
    "mypy_subjects",
    "parse_mypy",
    "project_path",
    "refer_release",
    "release_findings",
    "unresolved_module",
    "unresolved_note",
]

Subject = tuple[str, "str | None"]
"""What a finding is about: a module, and the name imported from it (None: the module)."""


@dataclass(frozen=True, slots=True)
class StageFinding:
    """One finding of a stage of ``auxcheck check``, located in the project."""

    stage: str
    """The stage that found it: ``imports``, ``mypy``, ``contract`` or ``sglang``."""
    code: str
    """An AUX rule code (``AUX501``), or ``mypy`` / ``mypy:<error-code>`` for mypy."""
    message: str
    """One line: what was seen and what was expected."""
    path: str | None = None
    """POSIX, relative to the project folder (PATH); None when not in a file."""
    line: int | None = None
    """1-based."""
    column: int | None = None
    """1-based."""
    level: Literal["error", "warning", "note"] = "error"
    hint: str = ""
    """How to fix it (the rule table's hint for AUX codes)."""
    cause: StageFinding | None = None
    """Set on a finding caused by another stage's finding: that finding itself; such a
    finding is not counted."""
    subject: str | None = None
    """The offending object, described (a contract finding's plugin object), if any."""

    @property
    def location(self) -> str:
        """Returns ``path:line:col`` (as much of it as is known), or "" when not in a file."""
        if self.path is None:
            return ""
        return ":".join([self.path, *(str(n) for n in (self.line, self.column) if n is not None)])

    @property
    def named(self) -> str:
        """Returns the finding's rule and place, as a finding it causes names it:
        ``AUX501 at plugin/x.py:3``."""
        where = f" at {self.path}:{self.line}" if self.path and self.line else ""
        return f"{self.code}{where}"

    @property
    def reference(self) -> str:
        """Returns how a finding it causes names it: ``imports: AUX501 at plugin/x.py:3``."""
        return f"{self.stage}: {self.named}"

    @property
    def see(self) -> str | None:
        """Returns the reference of the finding's cause (None: a finding of its own)."""
        return None if self.cause is None else self.cause.reference

    def to_dict(self) -> dict[str, Any]:
        """Returns the finding as JSON-ready data (``see`` only on a referred finding,
        ``subject`` only on one about an object)."""
        data: dict[str, Any] = {"stage": self.stage, "code": self.code, "message": self.message,
                                "path": self.path, "line": self.line, "column": self.column,
                                "level": self.level, "hint": self.hint}
        if self.see is not None:
            data["see"] = self.see
        if self.subject is not None:
            data["subject"] = self.subject
        return data


# ---------------------------------------------------------------- paths


def project_path(path: str, root: Path, *, base: Path | None = None) -> str:
    """Returns ``path`` (absolute, or relative to ``base``, PATH by default) relative to the
    project folder ``root``, POSIX; a path outside ``root`` stays whole (absolute)."""
    full = Path(path) if os.path.isabs(path) else (base or root) / path
    full = Path(os.path.normpath(full))
    for candidate in (full, _resolved(full)):
        for top in (root, _resolved(root)):
            if candidate.is_relative_to(top):
                return PurePath(candidate.relative_to(top)).as_posix()
    return full.as_posix()


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a link loop: the path as it is
        return path


def from_finding(stage: str, finding: Finding, root: Path, *, prefix: str = "") -> StageFinding:
    """Returns ``finding`` (auxcheck's own) as a finding of ``stage``, located relative to
    the project folder ``root``; ``prefix`` starts its message (``sglang 0.5.23: ``)."""
    path, line, col = (split_location(finding.location) if finding.location
                       else (None, None, None))
    return StageFinding(stage, finding.code, prefix + finding.message,
                        None if path is None else project_path(path, root), line, col,
                        "note" if finding.is_note else "error", finding.hint)


# ---------------------------------------------------------------- one finding per cause


class Causes:
    """The imports stage's findings, the causes later stages' findings are referred to.

    A later finding is referred to an AUX501/AUX502 finding at the same path and line when
    one of its subjects is an old import the moves table knows: the old module itself (a
    module not found), a name that moved out of it, or a module that moved.
    """

    __slots__ = ("_at", "_codes", "_table", "findings")

    def __init__(self, findings: Sequence[StageFinding] = (), *,
                 table: MoveTable | None = None) -> None:
        self.findings = tuple(findings)
        self._table = table
        self._at: dict[tuple[str, int], StageFinding] = {}
        for finding in self.findings:
            if (finding.code in ("AUX501", "AUX502") and finding.path is not None
                    and finding.line is not None):
                self._at.setdefault((finding.path, finding.line), finding)

    def at(self, path: str | None, line: int | None,
           subjects: Iterable[Subject]) -> StageFinding | None:
        """Returns the old-import finding at ``path:line`` when one of ``subjects`` is an old
        import, else None."""
        if path is None or line is None:
            return None
        cause = self._at.get((path, line))
        if cause is None or not any(self._is_old(module, name) for module, name in subjects):
            return None
        return cause

    def _is_old(self, module: str, name: str | None) -> bool:
        table = self._table
        if table is None:
            from auxcheck.migrate.moves import builtin_moves

            table = self._table = builtin_moves()
        if name is None:
            return module in table.old_modules
        return (table.new_module_of(module, name) is not None
                or f"{module}.{name}" in table.old_modules)

    def refer(self, findings: Iterable[StageFinding],
              subjects: Callable[[StageFinding], Iterable[Subject]]
              ) -> tuple[list[StageFinding], list[StageFinding]]:
        """Returns ``findings`` split into those of their own and those referred to a cause
        (``see`` set); ``subjects(finding)`` says what each is about."""
        own: list[StageFinding] = []
        referred: list[StageFinding] = []
        for finding in findings:
            cause = self.at(finding.path, finding.line, subjects(finding))
            if cause is None:
                own.append(finding)
            else:
                referred.append(replace(finding, cause=cause))
        return own, referred


def caused_lines(referred: Sequence[StageFinding], noun: str) -> list[str]:
    """Returns one line per cause: ``1 error caused by the imports stage's AUX501 at
    plugin/x.py:3 (not counted)``."""
    by_cause: dict[StageFinding, int] = {}
    for finding in referred:
        if finding.cause is not None:
            by_cause[finding.cause] = by_cause.get(finding.cause, 0) + 1
    return [f"{plural(count, noun)} caused by the {cause.stage} stage's {cause.named} "
            "(not counted)" for cause, count in by_cause.items()]


# ---------------------------------------------------------------- mypy

_MYPY_LINE = re.compile(
    r"^(?P<path>[^\s:][^:]*?|[A-Za-z]:[^:]+?):(?P<line>\d+)(?::(?P<col>\d+))?(?::\d+:\d+)?: "
    r"(?P<level>error|warning|note): (?P<message>.*?)(?:  \[(?P<code>[a-z][a-z0-9-]*)\])?$")
_MYPY_CONTEXT = re.compile(r"^(?P<path>[^\s:][^:]*?\.pyi?): (?P<rest>.*)$")
_MYPY_SUMMARY = re.compile(r"^(Found \d+ errors? in \d+ files?|Success: no issues found)")

_MYPY_SUBJECTS = (
    re.compile(r'^Module "(?P<module>[\w.]+)" has no attribute "(?P<name>\w+)"'),
    re.compile(r'^Module "(?P<module>[\w.]+)" does not explicitly export attribute '
               r'"(?P<name>\w+)"'),
    re.compile(r'^Cannot find implementation or library stub for module named '
               r'"(?P<module>[\w.]+)"'),
    re.compile(r'^Library stubs not installed for "(?P<module>[\w.]+)"'),
    re.compile(r'^Skipping analyzing "(?P<module>[\w.]+)"'),
)
"""The messages mypy gives on an import that does not resolve: what they are about."""


def mypy_subjects(finding: StageFinding) -> list[Subject]:
    """Returns what a mypy error is about when it says an import does not resolve (a module
    not found, a name the module lacks), else nothing."""
    for pattern in _MYPY_SUBJECTS:
        match = pattern.match(finding.message)
        if match is not None:
            found = match.groupdict()
            return [(found["module"], found.get("name"))]
    return []


_UNRESOLVED_CODES = frozenset({"mypy:import-not-found", "mypy:import-untyped"})


def unresolved_module(finding: StageFinding) -> str | None:
    """Returns the module of a mypy error saying an import does not resolve here (not
    found, or installed without types), else None."""
    if finding.code not in _UNRESOLVED_CODES:
        return None
    return next((module for module, name in mypy_subjects(finding) if name is None), None)


def unresolved_note(unresolved: Sequence[StageFinding]) -> list[str]:
    """Returns the note naming the imports mypy could not resolve where auxcheck runs: mypy
    took them as ``Any``; SGLang's are read from each release by ``--sglang``."""
    modules = sorted({m for f in unresolved if (m := unresolved_module(f)) is not None})
    if not modules:
        return []
    sglang = [m for m in modules if m == "sglang" or m.startswith("sglang.")]
    other = [m for m in modules if m not in sglang]
    parts = []
    if sglang:
        parts.append(f"SGLang modules auxcheck's stubs do not cover ({', '.join(sglang)}; "
                     "`--sglang R1,R2` checks their names and calls against each release)")
    if other:
        parts.append(f"modules not installed (or untyped) where auxcheck runs "
                     f"({', '.join(other)}; install the plugin's dependencies beside auxcheck "
                     "to have them checked)")
    them = "it" if len(unresolved) == 1 else "them"
    note = (f"note: mypy cannot resolve {plural(len(unresolved), 'import')} where auxcheck "
            f"runs and took {them} as Any (not counted): {'; '.join(parts)}")
    return [note]


@dataclass(frozen=True, slots=True)
class _MypyLine:
    text: str
    finding: StageFinding | None = None
    """The error this line reports, or the one it belongs to (a note, a source line)."""
    summary: bool = False


@dataclass(frozen=True, slots=True)
class MypyOutput:
    """mypy's output read back: its errors as findings, its lines with project paths."""

    errors: tuple[StageFinding, ...]
    lines: tuple[_MypyLine, ...]

    def text(self, referred: Sequence[StageFinding] = (),
             unresolved: Sequence[StageFinding] = (), hidden: Sequence[StageFinding] = (),
             notes: Sequence[str] = ()) -> str:
        """Returns the output with project-relative paths, without the lines of the
        ``referred`` errors, of the ``unresolved`` imports and of the ``hidden`` errors
        (nor mypy's closing count, which counts them), then a line per cause, a note
        naming the imports, and the ``notes``."""
        if not referred and not unresolved and not hidden:
            return "\n".join([*(line.text for line in self.lines), *notes]).strip()
        gone = {_key(f) for f in (*referred, *unresolved, *hidden)}
        kept = [line.text for line in self.lines if not line.summary
                and (line.finding is None or _key(line.finding) not in gone)]
        return "\n".join([*kept, *caused_lines(referred, "error"),
                          *unresolved_note(unresolved), *notes]).strip()


def _key(finding: StageFinding) -> tuple[str | None, int | None, str]:
    return finding.path, finding.line, finding.message


def parse_mypy(output: str, root: Path, cwd: Path) -> MypyOutput:
    """Returns mypy's ``output`` (run in ``cwd``) read back: each ``path:line[:col]: error:
    message  [code]`` line a finding located relative to the project folder ``root``."""
    errors: list[StageFinding] = []
    lines: list[_MypyLine] = []
    current: StageFinding | None = None
    for text in output.splitlines():
        match = _MYPY_LINE.match(text)
        if match is not None:
            path = project_path(match.group("path"), root, base=cwd)
            line = int(match.group("line"))
            text = path + text[len(match.group("path")):]
            if match.group("level") == "error":
                code = match.group("code")
                col = match.group("col")
                current = StageFinding("mypy", f"mypy:{code}" if code else "mypy",
                                       match.group("message"), path, line,
                                       int(col) if col else None)
                errors.append(current)
            elif current is None or (current.path, current.line) != (path, line):
                current = None  # a note of its own, not one on the error above
            lines.append(_MypyLine(text, current))
            continue
        context = _MYPY_CONTEXT.match(text)
        if context is not None:  # "file.py: note: In function ...": the errors below
            current = None
            text = f"{project_path(context.group('path'), root, base=cwd)}: {context.group('rest')}"
        summary = _MYPY_SUMMARY.match(text) is not None
        lines.append(_MypyLine(text, None if summary else current, summary))
    return MypyOutput(tuple(errors), tuple(lines))


# ---------------------------------------------------------------- contract and releases

def contract_findings(item: ItemResult, root: Path) -> tuple[StageFinding, ...]:
    """Returns a failed contract item's findings: one per finding the item recorded (its
    code, location and message as fields, located relative to the project folder ``root``),
    else one for the item under its own rule, at the file it points at (a conftest)."""
    if item.findings:
        found = []
        for finding in item.findings:
            location = finding.location
            path, line, col = split_location(location) if location else (None, None, None)
            found.append(StageFinding(
                "contract", finding.code, f"{item.nodeid}: {finding.code} {finding.message}",
                None if path is None else project_path(path, root), line, col,
                subject=finding.subject))
        return tuple(found)
    text = f"{item.nodeid}: {item.message}" if item.message else f"{item.nodeid}: {item.outcome}"
    code = item.codes[0] if item.codes else "contract"
    return (StageFinding("contract", code, text, item.path),)


def import_subjects(finding: Finding) -> list[Subject]:
    """Returns what a release's AUX503 is about: the import it judged, which the release
    check keeps as the finding's object (``(module, name)``, name None for ``import m``);
    nothing for other findings, or one without that object."""
    subject = finding.obj
    if finding.code != "AUX503" or type(subject) is not tuple or len(subject) != 2:
        return []
    module, name = subject
    if not isinstance(module, str) or not isinstance(name, (str, type(None))):
        return []
    if name is not None:
        return [(module, name)]
    parent, _, last = module.rpartition(".")
    return [(module, None), *([(parent, last)] if parent else [])]


def release_findings(result: ReleaseResult, root: Path) -> list[StageFinding]:
    """Returns one release's findings (or the error that kept it from being read), each
    message naming the release."""
    prefix = f"sglang {result.version}: "
    if result.error is not None:
        return [StageFinding("sglang", "sglang", prefix + result.error)]
    return [from_finding("sglang", f, root, prefix=prefix)
            for stage in result.stages for f in stage.findings]


def refer_release(result: ReleaseResult, causes: Causes, root: Path,
                  referred: list[StageFinding]) -> ReleaseResult:
    """Returns ``result`` without its AUX503 findings about an old import the imports stage
    found on the same line, which are added to ``referred``; a stage left without findings
    passes."""
    stages = []
    for stage in result.stages:
        kept = []
        for finding in stage.findings:
            ours = from_finding("sglang", finding, root, prefix=f"sglang {result.version}: ")
            cause = causes.at(ours.path, ours.line, import_subjects(finding))
            if cause is None:
                kept.append(finding)
            else:
                referred.append(replace(ours, cause=cause))
        if len(kept) < len(stage.findings):
            stage = replace(stage, findings=tuple(kept), result="fail" if kept else "ok")
        stages.append(stage)
    return replace(result, stages=tuple(stages))
