"""SARIF 2.1.0 logs of auxcheck's findings, for code scanning: ``--format sarif``.

One writer serves ``auxcheck check``, ``auxcheck migrate`` and ``auxcheck validate``: each
command turns its findings into :class:`Entry` values and :func:`sarif_log` writes the log.
Rule metadata comes from the rule table (:data:`auxcheck.rules.RULES`), listed for the
rules the results use; mypy's findings in ``check`` are rules of their own
(``mypy/<error-code>``). Paths inside the project are URIs relative to ``%SRCROOT%``, which
``originalUriBaseIds`` resolves to the project folder; a path outside it is an absolute
``file://`` URI. The log holds no time stamp, so one run gives the same bytes as the next,
and is ASCII (non-ASCII text escaped as JSON allows), so any stdout encoding can carry it.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from auxcheck._core.paths import split_location
from auxcheck._core.report import printable
from auxcheck._core.rules import RULES
from auxcheck._core.version import __version__

if TYPE_CHECKING:
    from auxcheck._check.stages import StageFinding, StageResult
    from auxcheck._core.report import Finding, Report

__all__ = [
    "SARIF_SCHEMA",
    "SOURCE_ROOT",
    "Entry",
    "Notice",
    "Place",
    "Related",
    "check_log",
    "entry_of",
    "findings_log",
    "place_of",
    "reports_log",
    "rule_descriptor",
    "rule_id",
    "sarif_log",
    "target_place",
]

Level = Literal["error", "warning", "note"]

SARIF_SCHEMA = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
                "sarif-schema-2.1.0.json")
"""The OASIS schema of SARIF 2.1.0 (errata 01), named by every log's ``$schema``."""
SOURCE_ROOT = "%SRCROOT%"
"""The base id of every URI inside the project; ``originalUriBaseIds`` gives its folder."""
_MYPY = "mypy"


@dataclass(frozen=True, slots=True)
class Place:
    """Where a finding is: a path (relative to the project folder, or absolute), a line and a
    column (1-based, None when not known)."""

    path: str
    line: int | None = None
    column: int | None = None


@dataclass(frozen=True, slots=True)
class Related:
    """Another report of the same cause (another stage's), shown with the result it joins."""

    message: str
    place: Place | None = None


@dataclass(frozen=True, slots=True)
class Entry:
    """One SARIF result: a rule code (``AUX501``, ``mypy:attr-defined``), the message, its level,
    where it is, the object it is about (``module:attr``) and the reports that share its cause."""

    code: str
    message: str
    level: Level = "error"
    place: Place | None = None
    target: str | None = None
    related: tuple[Related, ...] = ()


@dataclass(frozen=True, slots=True)
class Notice:
    """A condition of the run that is no finding (a stage that could not run, a file left
    unwritten): a tool execution notification, at ``level``."""

    message: str
    level: Level = "error"
    place: Place | None = None


# ---------------------------------------------------------------- the log


def sarif_log(entries: Sequence[Entry], *, root: Path, exit_code: int,
              notices: Sequence[Notice] = (), successful: bool | None = None) -> str:
    """Returns the SARIF 2.1.0 log of one run: ``entries`` as results, ``notices`` as tool
    execution notifications, paths relative to ``root`` (an absolute folder).

    ``successful``: whether the tool ran to its end (default: no notice is an error).
    """
    rules = _rules(entry.code for entry in entries)
    index = {rule["id"]: at for at, rule in enumerate(rules)}
    invocation: dict[str, Any] = {
        "executionSuccessful": (all(n.level != "error" for n in notices) if successful is None
                                else successful),
        "exitCode": exit_code,
    }
    if notices:
        invocation["toolExecutionNotifications"] = [_notification(n, root) for n in notices]
    driver: dict[str, Any] = {"name": "auxcheck", "version": __version__,
                              "semanticVersion": __version__, "rules": rules}
    run = {
        "tool": {"driver": driver},
        "invocations": [invocation],
        "originalUriBaseIds": {SOURCE_ROOT: {"uri": _folder_uri(root)}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(e, index[rule_id(e.code)], root) for e in entries],
    }
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2)  # ASCII: valid JSON whatever stdout's encoding


def rule_id(code: str) -> str:
    """Returns the SARIF rule id of a finding's code: ``mypy:attr-defined`` -> ``mypy/attr-defined``."""
    kind, sep, detail = code.partition(":")
    return f"{kind}/{detail}" if sep and kind == _MYPY else code


def rule_descriptor(code: str) -> dict[str, Any]:
    """Returns the SARIF reporting descriptor of a rule id: from the rule table for an AUX
    code, described as mypy's for ``mypy`` and ``mypy/<error-code>``."""
    rule = RULES.get(code)
    if rule is not None:
        kind = ("a note: reported, never a failure" if rule.severity == "note"
                else "an error: it fails the check")
        full = f"{_sentence(rule.title)} {_sentence(f'{code} is {kind}')} " \
               f"{_sentence(f'Fix: {rule.hint}')}"
        return _descriptor(code, rule.title, full, rule.hint, rule.severity)
    if code == _MYPY or code.startswith(_MYPY + "/"):
        error_code = code.partition("/")[2]
        about = f"with error code [{error_code}]" if error_code else "without an error code"
        return _descriptor(
            code, f"mypy reported an error {about}",
            f"mypy, run by `auxcheck check` on the project with auxcheck's sglang stubs, "
            f"reported an error {about}; the message is mypy's own.",
            "fix what mypy's message names; mypy's documentation of error codes says what each "
            "checks", "error")
    return _descriptor(code, f"finding {code} of auxcheck", f"auxcheck reported {code}.",
                       "see the message", "error")


def _descriptor(code: str, title: str, full: str, hint: str, level: str) -> dict[str, Any]:
    return {"id": code, "name": _pascal(code if code.startswith(_MYPY) else title),
            "shortDescription": {"text": title},
            "fullDescription": {"text": full},
            "help": {"text": hint},
            "defaultConfiguration": {"level": level}}


def _rules(codes: Iterable[str]) -> list[dict[str, Any]]:
    """Returns the descriptors of the rules ``codes`` use: AUX rules in table order, then the
    others (mypy's) by id."""
    order = {code: at for at, code in enumerate(RULES)}
    ids = sorted({rule_id(c) for c in codes}, key=lambda i: (order.get(i, len(order)), i))
    return [rule_descriptor(i) for i in ids]


_ARTICLES = frozenset({"a", "an", "the"})


def _pascal(text: str) -> str:
    """Returns ``text`` as one PascalCase word, without articles, possessives and what is in
    parentheses: ``a composite is mutable`` -> ``CompositeIsMutable``, ``mypy/attr-defined`` ->
    ``MypyAttrDefined``."""
    words = re.findall(r"[A-Za-z0-9]+", re.sub(r"\([^)]*\)|'s\b", "", text))
    return "".join(w.capitalize() for w in words if w.lower() not in _ARTICLES) or "Finding"


def _sentence(text: str) -> str:
    """Returns ``text`` starting upper-case and ending with a full stop (SARIF's guidance)."""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


def _result(entry: Entry, rule_index: int, root: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"ruleId": rule_id(entry.code), "ruleIndex": rule_index,
                              "level": entry.level, "message": {"text": _text(entry.message)}}
    location = _location(entry.place, root)
    if entry.target is not None:
        location["logicalLocations"] = [{"fullyQualifiedName": _text(entry.target)}]
    if location:
        result["locations"] = [location]
    related = [{"id": at, **_location(r.place, root), "message": {"text": _text(r.message)}}
               for at, r in enumerate(entry.related, start=1) if r.place is not None]
    if related:
        result["relatedLocations"] = related
    return result


def _notification(notice: Notice, root: Path) -> dict[str, Any]:
    data: dict[str, Any] = {"level": notice.level, "message": {"text": _text(notice.message)}}
    location = _location(notice.place, root)
    if location:
        data["locations"] = [location]
    return data


def _location(place: Place | None, root: Path) -> dict[str, Any]:
    if place is None or place.path == "-":  # stdin is no artifact
        return {}
    physical: dict[str, Any] = {"artifactLocation": _artifact(place.path, root)}
    if place.line is not None and place.line >= 1:
        region = {"startLine": place.line}
        if place.column is not None and place.column >= 1:
            region["startColumn"] = place.column
        physical["region"] = region
    return {"physicalLocation": physical}


def _artifact(path: str, root: Path) -> dict[str, str]:
    """Returns the artifact location of ``path``: relative to ``%SRCROOT%`` inside ``root``,
    else an absolute ``file://`` URI (percent-encoded: a URI is no file name)."""
    absolute = Path(os.path.abspath(os.path.join(root, path)))
    try:
        inside = absolute.relative_to(root)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(os.fsencode(inside.as_posix())), "uriBaseId": SOURCE_ROOT}


def _folder_uri(root: Path) -> str:
    uri = root.as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _text(text: str) -> str:
    """Returns ``text`` with what a terminal would act on, or an encoder refuse, escaped."""
    return printable(text)


# ---------------------------------------------------------------- migrate and validate


def place_of(location: str | None) -> Place | None:
    """Returns the place a finding's ``path:line:col`` (or ``path:line``, or ``path``) names."""
    return Place(*split_location(location)) if location else None


def entry_of(finding: Finding, *, place: Place | None = None,
             target: str | None = None) -> Entry:
    """Returns the result of one auxcheck finding: its own location first, else ``place``."""
    rule = RULES.get(finding.code)
    text = finding.message
    if finding.hint and (rule is None or finding.hint != rule.hint):
        text += f"; fix: {finding.hint}"
    if finding.detail:
        text += "\n" + finding.detail
    level: Level = "note" if rule is not None and rule.severity == "note" else "error"
    return Entry(finding.code, text, level, place_of(finding.location) or place, target)


def findings_log(findings: Iterable[Finding], *, root: Path, exit_code: int,
                 notices: Sequence[Notice] = ()) -> str:
    """Returns the SARIF log of findings located by ``path:line:col`` (``auxcheck migrate``)."""
    return sarif_log([entry_of(f) for f in findings], root=root, exit_code=exit_code,
                     notices=notices)


def reports_log(reports: Sequence[Report], *, root: Path, exit_code: int,
                search: Sequence[str] = ()) -> str:
    """Returns the SARIF log of ``auxcheck validate``: one result per finding and note, at the
    definition of the target it is about where that can be found without running it."""
    entries = []
    for report in reports:
        place = target_place(report.subject, search)
        entries += [entry_of(f, place=place, target=report.subject)
                    for f in [*report.findings, *report.notes]]
    return sarif_log(entries, root=root, exit_code=exit_code)


def target_place(spec: str, search: Sequence[str] = ()) -> Place | None:
    """Returns where ``MODULE:ATTR`` is defined: the module's file, found as the import system
    would (``search`` first) without running any of it, and the line binding the attribute
    (a class's member for ``Class.member``); None when the module is not a Python file."""
    from auxcheck._core.sources import parse_file
    from auxcheck._releases.external import find_external

    module, _, attr = spec.partition(":")
    head = attr.split(".")
    found = find_external(f"{module}.{head[0]}", [Path(p) for p in search])
    if found.state not in ("found", "missing") or not found.origin.endswith(".py") \
            or found.module != module:
        return None
    tree = parse_file(found.origin)
    node = _binding(tree.body, head) if isinstance(tree, ast.Module) else None
    if node is None:
        return Place(found.origin)
    return Place(found.origin, node.lineno, node.col_offset + 1)


def _binding(body: Sequence[ast.stmt], names: Sequence[str]) -> ast.stmt | None:
    """Returns the last statement of ``body`` binding ``names[0]`` (descending into a class
    for the rest), or None."""
    from auxcheck._core.pyast import bound_names

    bound = [node for node in body if names[0] in bound_names(node)]
    if not bound:
        return None
    node = bound[-1]
    if len(names) > 1 and isinstance(node, ast.ClassDef):
        return _binding(node.body, names[1:]) or node
    return node


# ---------------------------------------------------------------- check


def check_log(results: Sequence[StageResult], *, root: Path, exit_code: int) -> str:
    """Returns the SARIF log of ``auxcheck check``: one result per cause (a stage's own
    finding), the findings other stages made of the same cause joined to it; a stage that
    could not run, or failed without a finding it could place, is a notification."""
    causes = [f for r in results for f in r.findings]
    joined: dict[int, list[StageFinding]] = {}
    alone: list[StageFinding] = []
    for referred in (f for r in results for f in r.referred):
        at = _cause_of(referred, causes)
        (joined.setdefault(at, []) if at is not None else alone).append(referred)
    entries = [_stage_entry(f, joined.get(at, ())) for at, f in enumerate(causes)]
    entries += [_stage_entry(f, ()) for f in alone]
    return sarif_log(entries, root=root, exit_code=exit_code, notices=_stage_notices(results),
                     successful=not any(r.result == "error" for r in results))


def _cause_of(referred: StageFinding, causes: Sequence[StageFinding]) -> int | None:
    """Returns the index of ``referred``'s cause among ``causes``, or None when it is not there."""
    return next((at for at, cause in enumerate(causes) if cause == referred.cause), None)


def _stage_entry(finding: StageFinding, referred: Sequence[StageFinding]) -> Entry:
    text = _headed(finding)
    rule = RULES.get(finding.code)
    if finding.hint and (rule is None or finding.hint != rule.hint):
        text += f"; fix: {finding.hint}"
    if finding.see is not None:
        text += f" (see {finding.see})"
    if referred:
        also = "; ".join(_headed(r) for r in referred)
        text += f". The same cause also failed: {also}"
    related = tuple(Related(_headed(r), _stage_place(r)) for r in referred)
    return Entry(finding.code, text, finding.level, _stage_place(finding), related=related)


def _headed(finding: StageFinding) -> str:
    """Returns ``finding``'s message headed by the stage that found it (``mypy: ...``), or as
    it is when it opens with the stage's name already: the sglang stage's messages open with
    their release (``sglang 0.5.23: ...``), which names the stage too."""
    if finding.message.startswith((f"{finding.stage}:", f"{finding.stage} ")):
        return finding.message
    return f"{finding.stage}: {finding.message}"


def _stage_place(finding: StageFinding) -> Place | None:
    return None if finding.path is None else Place(finding.path, finding.line, finding.column)


def _stage_notices(results: Sequence[StageResult]) -> list[Notice]:
    notices = []
    for r in results:
        if r.result == "error":
            notices.append(Notice(f"the {r.stage} stage could not run: {r.summary}"))
        elif r.result == "fail" and not (r.findings or r.referred):
            notices.append(Notice(f"the {r.stage} stage failed ({r.summary}) with no finding "
                                  "auxcheck could place in a file; the text format shows its "
                                  "output"))
        elif r.result == "skipped":
            notices.append(Notice(f"the {r.stage} stage was skipped: {r.summary}", "note"))
    return notices
