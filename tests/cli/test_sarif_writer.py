"""Tests for the SARIF writer every ``--format sarif`` shares (auxcheck.cli._sarif)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers.sarif import problems, result_paths, sarif_of

from auxcheck._check.findings import from_finding, release_findings
from auxcheck._check.stages import StageFinding, StageResult
from auxcheck._releases.release_check import ReleaseResult, ReleaseStage
from auxcheck.cli._sarif import Entry, Place, check_log, place_of, sarif_log
from auxcheck.cli.check import render_sarif
from auxcheck.report import Finding
from auxcheck.rules import RULES

ROOT = Path("/project/plugin")


def test_every_rule_of_the_table_is_described_as_the_table_says(tmp_path: Path) -> None:
    """A log using every rule describes each from the rule table, and the Multitool accepts it."""
    entries = [Entry(code, f"seen for {code}; expected otherwise",
                     "note" if rule.severity == "note" else "error", Place("plugin/x.py", 1, 1))
               for code, rule in RULES.items()]
    log = sarif_log(entries, root=ROOT, exit_code=1)
    run = sarif_of(log)
    described = {r["id"]: (r["shortDescription"]["text"], r["help"]["text"],
                           r["defaultConfiguration"]["level"]) for r in run["tool"]["driver"]["rules"]}
    assert described == {r.code: (r.title, r.hint, r.severity) for r in RULES.values()}
    assert [(r["ruleId"], run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"])
            for r in run["results"]] == [(code, code) for code in RULES]
    assert problems(log, tmp_path) == []


@pytest.mark.parametrize(("path", "expected"), [
    pytest.param("plugin/x.py", ("plugin/x.py", "%SRCROOT%"), id="inside"),
    pytest.param("./plugin/../plugin/x.py", ("plugin/x.py", "%SRCROOT%"), id="normalized"),
    pytest.param("a dir/ü.py", ("a%20dir/%C3%BC.py", "%SRCROOT%"), id="percent-encoded"),
    pytest.param("/elsewhere/x.py", ("file:///elsewhere/x.py", None), id="absolute-outside"),
    pytest.param("../sibling/x.py", ("file:///project/sibling/x.py", None), id="relative-outside"),
    pytest.param("/project/plugin/pkg/y.py", ("pkg/y.py", "%SRCROOT%"), id="absolute-inside"),
])
def test_a_path_is_relative_to_the_project_or_an_absolute_file_uri(
        path: str, expected: tuple[str, str | None]) -> None:
    """Inside the project a URI is relative to %SRCROOT% (the project folder); outside, absolute."""
    run = sarif_of(sarif_log([Entry("AUX501", "m", place=Place(path, 3, 5))], root=ROOT,
                             exit_code=1))
    assert result_paths(run) == [expected]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///project/plugin/"}}
    assert run["results"][0]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 3, "startColumn": 5}


@pytest.mark.parametrize(("location", "place"), [
    pytest.param("plugin/x.py:3:7", Place("plugin/x.py", 3, 7), id="line-and-column"),
    pytest.param("plugin/x.py:3", Place("plugin/x.py", 3, None), id="line"),
    pytest.param("plugin/x.py", Place("plugin/x.py"), id="path"),
    pytest.param("odd:name.py:2:1", Place("odd:name.py", 2, 1), id="colon-in-the-path"),
    pytest.param(None, None, id="none"),
])
def test_a_findings_location_is_read_as_path_line_and_column(
        location: str | None, place: Place | None) -> None:
    """``path:line:col`` (or less of it) gives the place; a colon may be part of the path."""
    assert place_of(location) == place


def test_the_log_of_one_run_is_the_same_bytes_every_time() -> None:
    """No time stamp or other run-dependent value: two writes of one run are identical, ASCII."""
    entries = [Entry("AUX504", "cannot parse \u00fc\x1b[2J", place=Place("\u00fc.py", 1, 1))]
    first = sarif_log(entries, root=ROOT, exit_code=1)
    assert first == sarif_log(entries, root=ROOT, exit_code=1)
    assert "Utc" not in first
    assert first.isascii()
    assert sarif_of(first)["results"][0]["message"]["text"] == "cannot parse \u00fc\\x1b[2J"
    assert sarif_of(first)["invocations"] == [{"executionSuccessful": True, "exitCode": 1}]


IMPORT = StageFinding("imports", "AUX501", "CommittedTokens imported from the old module",
                      "plugin/obs.py", 1, 1, hint=RULES["AUX501"].hint)


def _stages() -> list[StageResult]:
    return [
        StageResult("imports", "fail", findings=(IMPORT,)),
        StageResult("mypy", "fail", findings=(
            StageFinding("mypy", "mypy:attr-defined", '"Req" has no attribute "x"',
                         "plugin/obs.py", 7, 5),), referred=(
            StageFinding("mypy", "mypy:import-not-found", "Cannot find module", "plugin/obs.py",
                         1, 1, cause=IMPORT),)),
        StageResult("contract", "fail", referred=(
            StageFinding("contract", "AUX501", "the imports item failed", "plugin/obs.py", 1,
                         cause=IMPORT),)),
        StageResult("sglang", "error", summary="sglang 9.9.9 cannot be had offline"),
    ]


def test_a_cause_other_stages_also_reported_is_one_result_that_names_them(
        tmp_path: Path) -> None:
    """Findings referring to a cause join its result (related locations), not results of their own."""
    log = check_log(_stages(), root=ROOT, exit_code=1)
    run = sarif_of(log)
    assert [(r["ruleId"], r["level"]) for r in run["results"]] == [
        ("AUX501", "error"), ("mypy/attr-defined", "error")]
    cause = run["results"][0]
    assert [(r["message"]["text"], r["physicalLocation"]["region"]["startLine"])
            for r in cause["relatedLocations"]] == [
        ("mypy: Cannot find module", 1), ("contract: the imports item failed", 1)]
    assert "also failed: mypy: Cannot find module; contract: the imports item failed" in \
        cause["message"]["text"]
    assert problems(log, tmp_path) == []


HOOK = Finding("AUX703", "`install` cannot take the call HookRegistry makes for an AFTER hook",
               hint=RULES["AUX703"].hint, location="plugin/hooks.py:4:1")
GONE = Finding("AUX503", "`from the.old_module import CommittedTokens`: the module is gone",
               hint=RULES["AUX503"].hint, location="plugin/obs.py:1:1")
_DOUBLED = re.compile(r"\b([\w.]+): \1\b")
"""A word said twice across a colon, as a stage's name heading a message headed by it
already: ``sglang: sglang 0.5.19: ...``."""


def _release_stages() -> list[StageResult]:
    """Returns the stages of a check whose sglang stage failed on two releases, could not
    read a third, and made an AUX503 the imports stage's finding caused."""
    hooks = (ReleaseStage("hooks", "fail", 1, (HOOK,)),)
    found = [f for release in (ReleaseResult("0.5.19", "cache", hooks),
                               ReleaseResult("0.5.20", "cache", error="its wheel is no zip"),
                               ReleaseResult("0.5.23", "cache", hooks))
             for f in release_findings(release, ROOT)]
    referred = replace(from_finding("sglang", GONE, ROOT, prefix="sglang 0.5.23: "), cause=IMPORT)
    return [*_stages()[:3], StageResult("sglang", "fail", findings=tuple(found),
                                        referred=(referred,))]


def _texts(run: dict[str, Any]) -> list[str]:
    """Returns the text of every result's message and related location's, in order."""
    return [text for r in run["results"] for text in (
        r["message"]["text"], *(related["message"]["text"]
                                for related in r.get("relatedLocations", ())))]


def test_each_stages_message_is_headed_by_its_stage_or_release_once(tmp_path: Path) -> None:
    """A result says which stage found it (``mypy: ...``), a release finding which release
    (``sglang 0.5.19: ...``, which names the sglang stage too), each once, never
    ``sglang: sglang 0.5.19: ...``; the same for the findings joined to a cause."""
    log = check_log(_release_stages(), root=ROOT, exit_code=1)
    run = sarif_of(log)
    assert [(r["ruleId"], r["message"]["text"]) for r in run["results"]] == [
        ("AUX501", ("imports: CommittedTokens imported from the old module. The same cause "
                    "also failed: mypy: Cannot find module; contract: the imports item failed; "
                    f"sglang 0.5.23: {GONE.message}")),
        ("mypy/attr-defined", 'mypy: "Req" has no attribute "x"'),
        ("AUX703", f"sglang 0.5.19: {HOOK.message}"),
        ("sglang", "sglang 0.5.20: its wheel is no zip"),
        ("AUX703", f"sglang 0.5.23: {HOOK.message}"),
    ]
    assert [r["message"]["text"] for r in run["results"][0]["relatedLocations"]] == [
        "mypy: Cannot find module", "contract: the imports item failed",
        f"sglang 0.5.23: {GONE.message}"]
    assert problems(log, tmp_path) == []


def test_no_message_says_a_word_twice_across_its_heading() -> None:
    """No message (a result's or a related location's) opens with a repeated heading, and
    each release finding names its release exactly once."""
    texts = _texts(sarif_of(check_log(_release_stages(), root=ROOT, exit_code=1)))
    assert [t for t in texts if _DOUBLED.search(t)] == []
    releases = {v: [t for t in texts if f"sglang {v}" in t] for v in ("0.5.19", "0.5.20", "0.5.23")}
    assert {v: [t.count(f"sglang {v}") for t in found] for v, found in releases.items()} == {
        "0.5.19": [1], "0.5.20": [1], "0.5.23": [1, 1, 1]}


def test_a_stage_that_could_not_run_is_a_notification_not_a_result() -> None:
    """An errored stage is a tool execution notification, and the run did not succeed."""
    invocation = sarif_of(check_log(_stages(), root=ROOT, exit_code=1))["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert invocation["exitCode"] == 1
    assert invocation["toolExecutionNotifications"] == [{
        "level": "error",
        "message": {"text": "the sglang stage could not run: sglang 9.9.9 cannot be had offline"}}]


def test_mypy_codes_are_rules_of_their_own_described_as_mypys(tmp_path: Path) -> None:
    """``mypy:<code>`` is the rule ``mypy/<code>``, said to be mypy's, with no invented link."""
    rules = sarif_of(check_log(_stages(), root=ROOT, exit_code=1))["tool"]["driver"]["rules"]
    mypy = rules[1]
    assert (mypy["id"], mypy["name"], mypy["shortDescription"]["text"]) == (
        "mypy/attr-defined", "MypyAttrDefined",
        "mypy reported an error with error code [attr-defined]")
    assert all("helpUri" not in rule for rule in rules)


def test_render_sarif_writes_the_check_log_with_the_exit_status() -> None:
    """``auxcheck check --format sarif`` exits 1 when a stage failed, and the log says so."""
    clean = [StageResult("imports", "ok"), StageResult("mypy", "skipped", summary="--skip")]
    run = sarif_of(render_sarif(ROOT, clean))
    assert run["results"] == []
    assert run["invocations"] == [{"executionSuccessful": True, "exitCode": 0,
                                   "toolExecutionNotifications": [{
                                       "level": "note",
                                       "message": {"text": "the mypy stage was skipped: --skip"}}]}]
    assert json.loads(render_sarif(ROOT, _stages()))["runs"][0]["invocations"][0][
        "exitCode"] == 1


def test_the_validator_rejects_a_log_it_cannot_read(tmp_path: Path) -> None:
    """A level outside the schema makes the Multitool read nothing: that is reported, not passed."""
    log = sarif_log([Entry("AUX501", "m", place=Place("x.py", 1, 1))], root=ROOT, exit_code=1)
    broken = log.replace('"level": "error"', '"level": "fatal"')
    assert problems(broken, tmp_path) == [
        "the Multitool did not analyse the log: it could not read it as SARIF"]
