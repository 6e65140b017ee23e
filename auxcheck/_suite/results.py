"""``--auxcheck-results``: every item's outcome, written as JSON for ``auxcheck check``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from auxcheck._suite.result_file import ItemKind, ItemResult, ResultFinding, ResultsFile

__all__ = ["ITEM_PROPERTY", "ResultWriter", "item_record", "record_item", "results_path"]

ITEM_PROPERTY = "auxcheck item"
"""The user property of a report holding its item's record (:func:`item_record`): what it
judges, its rule codes, and the findings it raised (a user property crosses from
pytest-xdist's workers to the controller)."""


def results_path(text: str) -> Path:
    """Returns the ``--auxcheck-results`` file; raises UsageError when it cannot be written."""
    path = Path(text)
    folder = path.parent
    problem = ("does not exist" if not folder.is_dir() else "is not writable"
               if not os.access(folder, os.W_OK) else "is a folder" if path.is_dir() else None)
    if problem is None:
        return path
    what = path if problem == "is a folder" else f"the folder {folder}"
    raise pytest.UsageError(f"--auxcheck-results: cannot write {path}: {what} {problem}")


def _kind(item: pytest.Item) -> ItemKind:
    from auxcheck._suite.nodes import DeviceGroup, ImplGroup, ImportScanItem

    if isinstance(item, ImportScanItem):
        return "imports"
    parent = item.parent
    if isinstance(parent, DeviceGroup):
        return "observer" if parent.subject.is_observer else "output"
    return "impl" if isinstance(parent, ImplGroup) else "other"


def _codes(item: pytest.Item) -> tuple[str, ...]:
    """Returns the rule codes an item checks: the keywords its group gave it that are rules."""
    from auxcheck._core.rules import RULES
    from auxcheck._suite.names import IMPORT_CODES
    from auxcheck._suite.nodes import ImportScanItem

    if isinstance(item, ImportScanItem):
        return tuple(IMPORT_CODES)
    return tuple(sorted(k for k in item.extra_keyword_matches if k in RULES))


def item_record(item: pytest.Item, raised: BaseException | None) -> dict[str, object]:
    """Returns what the results file keeps of ``item`` beyond its report: its kind, its rule
    codes, and the findings of a ContractViolation it ``raised`` (``findings`` is None for
    any other failure, a fixture that raised, say)."""
    from auxcheck._core.errors import ContractViolation

    findings = None
    if isinstance(raised, ContractViolation):
        findings = [ResultFinding.of(f).to_dict() for f in raised.report.findings]
    return {"kind": _kind(item), "codes": list(_codes(item)), "findings": findings}


def record_item(report: pytest.TestReport, item: pytest.Item,
                raised: BaseException | None) -> None:
    """Adds :func:`item_record` to the report's user properties, for the results file."""
    report.user_properties.append((ITEM_PROPERTY, item_record(item, raised)))


class ResultWriter:
    """Records each item's outcome and writes them as JSON when the session ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.outcomes: dict[str, ItemResult] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keeps the item's worst outcome so far: a failed setup is an error."""
        known = self.outcomes.get(report.nodeid)
        if known is not None and known.outcome != "passed":
            return
        outcome = report.outcome if report.when == "call" else {
            "failed": "error", "skipped": "skipped"}.get(report.outcome)
        if outcome is None:
            return
        text = report.longreprtext if report.outcome != "passed" else ""
        # pytest-xdist puts a "[gw0] linux -- Python ..." line above the failure text.
        lines = [line for line in text.splitlines() if line.strip() and not line.startswith("[gw")]
        record: dict[str, object] = {}
        for key, value in report.user_properties:
            if key == ITEM_PROPERTY and isinstance(value, dict):
                record = value
        where = report.location[0] if report.location else ""
        findings = record.get("findings") if report.outcome == "failed" else None
        self.outcomes[report.nodeid] = ItemResult.from_dict({
            "nodeid": report.nodeid, "outcome": outcome, "message": lines[0] if lines else "",
            "kind": record.get("kind", "other"), "codes": record.get("codes", []),
            "path": where if where.endswith((".py", ".pyi")) else None,
            "findings": findings})

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Writes the results file (:class:`ResultsFile`; a write that fails is an error)."""
        try:
            self.path.write_text(ResultsFile(tuple(self.outcomes.values())).to_json())
        except OSError as exc:
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"ERROR: --auxcheck-results: cannot write {self.path}: "
                                    f"{exc.strerror or exc}", red=True)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
