"""What every stage of ``auxcheck check`` shares: the options, a stage's result, where the
plugin's packages are, and how a bounded run ended."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from auxcheck._check.findings import StageFinding
from auxcheck._core.paths import is_dir, is_file

if TYPE_CHECKING:
    from auxcheck._isolation.bounded import Bounded
    from auxcheck.migrate.moves import MoveTable

__all__ = ["CheckOptions", "ProjectFiles", "Result", "StageResult", "ended", "list_project",
           "not_installed", "plugin_packages", "prepended", "project_listing", "source_root", "stage_links"]

Result = Literal["ok", "fail", "skipped", "error"]


@dataclass(frozen=True, slots=True)
class StageResult:
    """One stage's outcome: ``ok``, ``fail``, ``skipped`` or ``error``, with counts and output."""

    stage: str
    result: Result
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    summary: str = ""
    output: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    always_shown: bool = False
    """The output is printed even when the stage passed (the release matrix)."""
    findings: tuple[StageFinding, ...] = ()
    """The stage's own findings (the causes)."""
    referred: tuple[StageFinding, ...] = ()
    """Findings whose cause is another stage's finding (each has ``see``); not counted."""
    not_run: str | None = None
    """Why a skipped stage could not run (``pytest is not installed``): nothing it checks
    was checked, which the verdict says; None for a stage that ran, or was left out by
    choice (``--skip``) or for want of anything to check."""

    @property
    def failed(self) -> bool:
        """Returns True when the stage failed or could not run."""
        return self.result in ("fail", "error")


@dataclass(frozen=True, slots=True)
class CheckOptions:
    """What ``auxcheck check`` runs, and how."""

    path: Path
    skip: frozenset[str] = frozenset()
    jobs: int | None = None
    impl: str | None = None
    profile: str | None = None
    stream: bool = True
    pytest_args: tuple[str, ...] = ()
    releases: tuple[str, ...] = ()
    wheels: tuple[Path, ...] = ()
    sources: tuple[Path, ...] = ()
    cache: Path | None = None
    offline: bool = False
    timeout: float = 900.0
    """Seconds the mypy run and the contract suite may each take (0: no limit)."""
    memory: int = 0
    """Bytes of memory the processes of the mypy run, and of the contract suite, may hold
    together (0: no limit)."""
    listing: ProjectFiles | None = None
    """The project's Python files and the links no stage follows, listed once for every
    stage (None: listed when the stages run, by :func:`run_stages`)."""
    causes: tuple[StageFinding, ...] = ()
    """The imports stage's findings: a later stage's finding about the same old import is
    referred to them (set by :func:`run_stages`)."""
    moves: MoveTable | None = None
    """The project's moves table (:func:`auxcheck.migrate.moves.project_moves`), built once
    by :func:`run_stages` for every stage; None: built-in only."""
    moves_error: str | None = None
    """Why the project's own moves table could not be read (the imports stage reports it)."""
    at_once: bool | None = None
    """Whether mypy and the contract suite run beside the other stages, each waiting on its
    child process on a thread of its own: None where this process may use two cores or more
    and ``--jobs`` is not 1; True wherever a stop can end them (Linux); False: one after
    another (``--sequential``)."""


@dataclass(frozen=True, slots=True)
class ProjectFiles:
    """One walk of the project: its Python files, and the symbolic links to a folder or a
    Python file under it, which no stage follows (a link to a folder above it would make
    mypy and pytest walk the project again at every level, without end)."""

    files: tuple[str, ...]
    links: tuple[Path, ...] = ()


def list_project(path: Path) -> ProjectFiles:
    """Returns the project at ``path`` walked once: every stage reads this listing."""
    from auxcheck._core.python_files import WalkNote, iter_python_files

    links: list[Path] = []

    def note(walk_note: WalkNote) -> None:
        if walk_note.kind == "link":
            links.append(Path(walk_note.path))

    files = tuple(iter_python_files([str(path)], note=note))
    return ProjectFiles(files, tuple(links))


def project_listing(options: CheckOptions) -> ProjectFiles:
    """Returns the listing of ``options`` (the project walked now when it has none)."""
    return list_project(options.path) if options.listing is None else options.listing


def plugin_packages(path: Path) -> list[Path]:
    """Returns the packages mypy checks: ``path`` itself if a package, else its package
    children and those of its ``src`` folder (a src layout)."""
    if is_file(path / "__init__.py"):
        return [path]
    return [child for base in (path, path / "src") if is_dir(base)
            for child in sorted(base.iterdir()) if _is_plugin_package(child)]


def _is_plugin_package(path: Path) -> bool:
    # Not through a link: the import scan does not follow it, so no stage does.
    return (not path.is_symlink() and is_file(path / "__init__.py")
            and not path.name.startswith((".", "test")))


def source_root(path: Path) -> Path | None:
    """Returns ``path/src`` when the project keeps its packages there (a src layout), else None."""
    src = path / "src"
    return src if is_dir(src) and any(_is_plugin_package(p) for p in src.iterdir()) else None


def not_installed(missing: Sequence[str]) -> str:
    """Returns ``pytest and hypothesis are not installed``: why a stage could not run."""
    names = " and ".join(missing) if len(missing) < 3 else (
        f"{', '.join(missing[:-1])} and {missing[-1]}")
    return f"{names} {'is' if len(missing) == 1 else 'are'} not installed"


def ended(done: Bounded, timeout: float) -> str:
    """Returns how a bounded run that did not finish cleanly ended, naming --timeout, or
    --max-memory and how to raise it."""
    if done.timed_out:
        return f"did not finish within {timeout:g} s (--timeout) and was killed"
    if done.memory_limit:
        return f"{done.text()}; pass a larger --max-memory (or 0: no limit) if it needs more"
    return done.text()


def stage_links(options: CheckOptions) -> tuple[Path, ...]:
    """Returns the links under the project that no stage follows."""
    return project_listing(options).links


def prepended(entry: str, path: str | None) -> str:
    return entry if not path else os.pathsep.join([entry, path])
