"""The scanner run over one source text (scan_source) or over files (scan_paths)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from auxcheck._core.errors import FileTooLarge, NotARegularFile, UndecodableFile
from auxcheck._core.python_files import iter_python_files, module_name_of
from auxcheck._core.sources import (
    DEFAULT_MAX_FILE_SIZE,
    PARSE_ERRORS,
    broken_file_finding,
    deep_call,
    parse_as_python,
    read_source,
)
from auxcheck.migrate.files import Prefilter
from auxcheck.migrate.moves import MoveTable, builtin_moves
from auxcheck.migrate.scan.analysis import is_defining_module, package_of
from auxcheck.migrate.scan.passes import analyze

if TYPE_CHECKING:
    from auxcheck._core.report import Finding, Report

__all__ = ["scan_paths", "scan_source"]


def scan_source(text: str, *, moves: MoveTable | None = None, module: str | None = None,
                is_package: bool = False, path: str = "<string>",
                releases: Sequence[str] = ()) -> list[Finding]:
    """Returns the AUX501/AUX502 findings of one source text; ``releases``: the SGLang
    releases the project supports (an AUX501 of a move one of them predates points at
    ``auxcheck migrate --compat``).

    Raises what :func:`ast.parse` raises on text it cannot parse: SyntaxError, or
    ValueError for a null byte on Python 3.11.
    """
    table = moves or builtin_moves()
    if is_defining_module(module, table):
        return []
    tree = parse_as_python(text, path)  # Python's own verdict, whoever asks
    # what Python parsed, the analysis walks, however deep (a long flat expression nests)
    analysis = deep_call(lambda: analyze(tree, table, source=text,
                                         package=package_of(module, is_package=is_package)))
    return [use.finding(path, table, releases) for use in analysis.uses]


def _scan_file(path: str, table: MoveTable, report: Report, max_size: int | None,
               releases: Sequence[str] = ()) -> None:
    """Adds the findings of the file at ``path``: its uses, or AUX504 when it is broken (or
    holds more than ``max_size`` bytes)."""
    try:
        source = read_source(path, max_size=max_size)
    except (NotARegularFile, UndecodableFile, FileTooLarge) as exc:
        report.add(broken_file_finding(path, exc))
        return
    module = module_name_of(path, anchors=table.packages)
    try:
        report.extend(scan_source(source.text, moves=table, module=module, path=path,
                                  is_package=path.endswith("__init__.py"), releases=releases))
    except PARSE_ERRORS as exc:
        report.add(broken_file_finding(path, exc, text=source.text))


def scan_paths(paths: Sequence[str] | Iterable[str], *, moves: MoveTable | None = None,
               exclude: Sequence[str] = (), every_file: bool = False,
               max_size: int | None = DEFAULT_MAX_FILE_SIZE,
               releases: Sequence[str] = ()) -> Report:
    """Returns a Report of every remaining old-module use under ``paths``.

    Each finding is AUX501 (``auxcheck migrate`` can fix it), AUX502 (needs a
    human: star or dynamic imports) or AUX504 (a file that cannot be read, decoded or
    parsed), located at ``path:line:col``. Files that cannot hold a use
    (:meth:`MoveTable.could_use`) are never parsed, unless ``every_file`` (``auxcheck check`` sets it, so that every
    broken file of a plugin is reported); libcst is never imported. A file over ``max_size``
    bytes is AUX504 (migrate's limit by default; ``auxcheck check`` reads larger ones).
    ``pytest --auxcheck`` calls this. ``releases``: the SGLang releases the project
    supports, as :func:`scan_source` takes them.
    """
    from auxcheck._core.report import Report

    table = moves or builtin_moves()
    report = Report("auxcheck migrate --check")
    could_use = Prefilter(table.needles(), table.could_use, max_size=max_size)
    for path in iter_python_files(paths, exclude=exclude):
        try:
            if every_file or could_use(path):
                _scan_file(path, table, report, max_size, releases)
        except (OSError, UndecodableFile) as exc:  # a FIFO named *.py among them
            report.add(broken_file_finding(path, exc))
    return report
