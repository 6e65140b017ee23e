"""SARIF logs in the tests: Microsoft's SARIF Multitool judges them, and readers pick them apart.

``make sarif-validator`` (a prerequisite of ``make test`` and ``make test-fast``) fetches the
Multitool into ``.cache/sarif-multitool``; ``$AUXCHECK_SARIF_MULTITOOL`` names another copy.
Outside make a missing Multitool skips the test saying how to get it; under CI it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers.paths import REPO

__all__ = ["HONOURED_NOTES", "IGNORED_WARNINGS", "MULTITOOL_ENV", "multitool", "problems",
           "result_paths", "sarif_of"]

MULTITOOL_ENV = "AUXCHECK_SARIF_MULTITOOL"
"""Names a SARIF Multitool program other than the one ``make sarif-validator`` fetches."""

_CACHED = REPO / ".cache" / "sarif-multitool" / "package" / "Sarif.Multitool"

IGNORED_WARNINGS = frozenset({("SARIF2005", "Warning_ProvideToolnformationUri")})
"""Warnings the suite accepts: auxcheck has no public web page for ``informationUri``."""

HONOURED_NOTES = frozenset({
    ("SARIF2012", "Note_FriendlyNameNotAPascalIdentifier"),
    ("SARIF2012", "Note_ProvideFriendlyName"),
    ("SARIF2012", "Note_ProvideRuleMetadata"),
})
"""Notes the suite treats as problems: every rule a result uses is described, with a name.

The other notes ask for what auxcheck leaves out on purpose: message ids (SARIF2002; each
message is written whole), version control details (SARIF2003), URLs reachable from here
(SARIF2006), code snippets and context (SARIF2010, SARIF2011: the log would copy the
source), and rule help URIs (SARIF2012: no public page)."""

_CANARY = ("SARIF2005", "Warning_ProvideToolnformationUri")
"""Reported for every log the Multitool could read (auxcheck sets no ``informationUri``): a
log it cannot deserialize, such as one with a ``level`` outside the schema's enumeration,
gets no result at all, which must not pass for a clean one."""


def multitool() -> Path:
    """Returns the SARIF Multitool program; skips (fails under CI) when it is not there."""
    named = os.environ.get(MULTITOOL_ENV)
    program = Path(named) if named else _CACHED
    if os.access(program, os.X_OK):
        return program
    why = (f"the SARIF Multitool is not at {program}: run `make sarif-validator` (or set "
           f"{MULTITOOL_ENV})")
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def problems(log: str, folder: Path) -> list[str]:
    """Returns what the Multitool finds wrong with the SARIF text ``log`` (schema errors, SARIF
    rule errors and warnings, :data:`HONOURED_NOTES`), one line each; [] when valid."""
    sarif, verdict = folder / "under-test.sarif", folder / "multitool.sarif"
    sarif.write_text(log, encoding="utf-8")
    env = dict(os.environ, DOTNET_SYSTEM_GLOBALIZATION_INVARIANT="1", DOTNET_NOLOGO="1",
               DOTNET_CLI_TELEMETRY_OPTOUT="1")
    done = subprocess.run([str(multitool()), "validate", str(sarif), "-o", str(verdict),
                           "--log", "ForceOverwrite", "--level", "Error;Warning;Note"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    if not verdict.exists():
        said = done.stdout + done.stderr
        return [f"the Multitool wrote no verdict (exit {done.returncode}): {said}"]
    found = json.loads(verdict.read_text(encoding="utf-8-sig"))["runs"][0]["results"]
    kinds = [(r["ruleId"], r["message"].get("id", ""), r.get("level", "warning")) for r in found]
    lines = [f"{rule} {level} {message}: {r['message'].get('arguments')}"
             for (rule, message, level), r in zip(kinds, found, strict=True)
             if level == "error" or (level == "warning" and (rule, message) not in
                                     IGNORED_WARNINGS) or (rule, message) in HONOURED_NOTES]
    if not any((rule, message) == _CANARY for rule, message, _ in kinds):
        lines.append("the Multitool did not analyse the log: it could not read it as SARIF")
    return lines


def sarif_of(text: str) -> dict[str, Any]:
    """Returns the one run of a SARIF log, checked to be SARIF 2.1.0 with exactly one run."""
    log = json.loads(text)
    assert (log["version"], len(log["runs"])) == ("2.1.0", 1)
    run: dict[str, Any] = log["runs"][0]
    return run


def result_paths(run: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Returns each location's (uri, uriBaseId), results' and related locations' alike."""
    places = [loc for r in run["results"]
              for loc in [*r.get("locations", ()), *r.get("relatedLocations", ())]]
    return [(p["physicalLocation"]["artifactLocation"]["uri"],
             p["physicalLocation"]["artifactLocation"].get("uriBaseId"))
            for p in places if "physicalLocation" in p]
