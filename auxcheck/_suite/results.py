"""``--auxcheck-results``: every item's outcome, written as JSON for ``auxcheck check``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["FINDINGS_PROPERTY", "ResultWriter", "record_findings", "results_path"]

FINDINGS_PROPERTY = "auxcheck findings"
"""The user property of a report holding its item's findings: ``[code, location, message]``
each (a user property crosses from pytest-xdist's workers to the controller)."""


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


def record_findings(report: pytest.TestReport, raised: BaseException) -> None:
    """Adds the findings of a ContractViolation an item raised to its report's user
    properties, so the results file can say where each is (``auxcheck check`` refers an
    imports-item finding to the imports stage's finding at the same place)."""
    from auxcheck.errors import ContractViolation

    if isinstance(raised, ContractViolation):
        report.user_properties.append(
            (FINDINGS_PROPERTY, [[f.code, f.location, f.message] for f in raised.report.findings]))


class ResultWriter:
    """Records each item's outcome and writes them as JSON when the session ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.outcomes: dict[str, dict[str, object]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keeps the item's worst outcome so far: a failed setup is an error."""
        known = self.outcomes.get(report.nodeid)
        if known is not None and known["outcome"] != "passed":
            return
        outcome = report.outcome if report.when == "call" else {
            "failed": "error", "skipped": "skipped"}.get(report.outcome)
        if outcome is None:
            return
        text = report.longreprtext if report.outcome != "passed" else ""
        # pytest-xdist puts a "[gw0] linux -- Python ..." line above the failure text.
        lines = [line for line in text.splitlines() if line.strip() and not line.startswith("[gw")]
        row: dict[str, object] = {"nodeid": report.nodeid, "outcome": outcome,
                                  "message": lines[0] if lines else ""}
        for key, value in report.user_properties:
            if key == FINDINGS_PROPERTY and report.outcome == "failed":
                row["findings"] = value
        self.outcomes[report.nodeid] = row

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Writes ``{"items": [...]}`` to the results file (a write that fails is an error)."""
        import json

        try:
            self.path.write_text(json.dumps({"items": list(self.outcomes.values())}, indent=1))
        except OSError as exc:
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"ERROR: --auxcheck-results: cannot write {self.path}: "
                                    f"{exc.strerror or exc}", red=True)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
