"""Tests that ``auxcheck live``'s verdicts read the guard's and the probe's events by field.

The live guard writes each finding as a JSON event; the verdicts fold the guard's AUX202 (a
``consume`` that raised) into the AUX804 of the server it killed when both are about the same
exception. Which exception is a field the guard writes (``raised``), never words found in
the finding's message, which quotes plugin and request text. These run on recorded events,
with no server.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from auxcheck._core.report import Finding
from auxcheck._guard.reporter import Reporter
from auxcheck._guard.settings import GuardSettings
from auxcheck._sglang_cpu.install import Installed
from auxcheck._sglang_cpu.verdicts import Death, Evidence, read_events, verdicts


def _evidence(tmp_path: Path, death_error: str, guard: list[dict[str, Any]],
              events: list[dict[str, Any]] | None = None) -> Evidence:
    """Returns the evidence of one server killed by ``death_error`` in the plugin's consume."""
    source = tmp_path / "plug" / "host.py"
    source.parent.mkdir(exist_ok=True)
    source.write_text("class Host:\n    def consume(self, batch, commits):\n        raise\n")
    installed = Installed(tmp_path, {"plug": "plug:register"},
                          {os.path.realpath(source): source})
    died = {"event": "process-error", "message": "Scheduler hit an exception",
            "frames": [[str(source), 3, "consume"]], "error": death_error}
    return Evidence(installed, events=events or [], guard=guard, deaths=[Death(
        "overlap on", "during the abort scenario", tmp_path / "server.log", "", "",
        (died,))])


def _guard_event(message: str, raised: str) -> dict[str, Any]:
    return {"event": "finding", "code": "AUX202", "output_class": "plug.host.Host",
            "server": "overlap on", "message": message, "raised": raised, "hint": "h"}


FOOLING = ("consume raised ValueError in the running server, where request raised KeyError "
           "x was aborted while it ran; expected it to handle the commits SGLang passes")


@pytest.mark.parametrize(("death_error", "guard", "folded"), [
    pytest.param("KeyError: 'x'", _guard_event(FOOLING, "ValueError"), False,
                 id="another-exception-whose-message-names-the-death's"),
    pytest.param("KeyError: 'x'", _guard_event(
        "consume raised KeyError in the running server; expected ...", "KeyError"), True,
        id="the-same-exception"),
    pytest.param("plug.errors.Boom: bad", _guard_event(
        "consume raised Boom in the running server; expected ...", "Boom"), True,
        id="the-same-exception-of-the-plugin's-module"),
])
def test_the_guard_s_aux202_is_folded_into_a_death_only_for_the_exception_it_names_as_data(
        tmp_path: Path, death_error: str, guard: dict[str, Any], folded: bool) -> None:
    """The guard's AUX202 joins the AUX804 when its ``raised`` field is the death's exception."""
    found, _ = verdicts("0.5.23", _evidence(tmp_path, death_error, [guard]))
    codes = sorted(f.code for f in found)
    assert codes == (["AUX804"] if folded else ["AUX202", "AUX804"])
    death = next(f for f in found if f.code == "AUX804")
    assert ("the live guard: AUX202" in (death.detail or "")) is folded


def test_hook_errors_differing_after_a_semicolon_are_two_findings(tmp_path: Path) -> None:
    """Two different errors of one hook are two causes, even when they agree up to a ';'."""
    hooks = [{"type": "AFTER", "name": "plug.hook", "file": str(tmp_path / "plug" / "host.py"),
              "line": 2}]
    events = [{"event": "hook-failed", "target": "sglang.srt.x.f", "hooks": hooks,
               "error": f"TypeError: cannot apply; {why}"} for why in ("first", "second")]
    evidence = _evidence(tmp_path, "KeyError: 'x'", [], events)
    evidence.deaths.clear()
    evidence.own = frozenset({"plug"})
    found, _ = verdicts("0.5.23", evidence)
    assert [f.message.count("first") + 2 * f.message.count("second")
            for f in found if f.code == "AUX802"] == [1, 2]


def test_the_guard_writes_the_exception_a_consume_raised_as_a_field(tmp_path: Path) -> None:
    """The reporter's AUX202 event carries ``raised``: the exception's type name."""
    report = tmp_path / "guard.jsonl"
    reporter = Reporter(GuardSettings(mode="warn", report=report))
    finding = Finding.of("AUX202", "consume raised KeyError in the running server", "e")
    reporter.findings([(finding, "plug.host.Host")], raised="KeyError")
    [event] = read_events(report)
    assert (event["code"], event["raised"]) == ("AUX202", "KeyError")
