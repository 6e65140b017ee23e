"""``--format sarif`` of check, migrate --check and validate: valid SARIF 2.1.0, located in the project.

Every log is judged by Microsoft's SARIF Multitool (the schema and the SARIF rules), and read
back: URIs relative to the project, rule metadata from the rule table, one result per finding.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import EXAMPLES
from helpers.plugin_sources import CLEAN_OUTPUT, FIXABLE, MIGRATED, OLD
from helpers.releases import REAL_CACHE, real_release
from helpers.sarif import problems, result_paths, sarif_of

from auxcheck.cli import main
from auxcheck.rules import RULES


def run_sarif(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, dict[str, Any]]:
    """Returns the exit status, the log on stdout and its one run."""
    status = main([argv[0], "--format", "sarif", *argv[1:]])
    out = capsys.readouterr().out
    return status, out, sarif_of(out)


def assert_described_by_the_rule_table(run: dict[str, Any]) -> None:
    """Each AUX rule the log lists carries the table's title, hint and severity."""
    for rule in run["tool"]["driver"]["rules"]:
        if rule["id"] in RULES:
            table = RULES[rule["id"]]
            assert (rule["shortDescription"]["text"], rule["help"]["text"],
                    rule["defaultConfiguration"]["level"]) == (table.title, table.hint,
                                                               table.severity)
    assert [r["ruleId"] for r in run["results"]] == [
        run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] for r in run["results"]]


@pytest.mark.parametrize("command", ["check", "migrate", "validate"])
def test_the_format_option_offers_sarif(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each command's --help lists sarif among its formats."""
    assert main([command, "--help"]) == 0
    assert "sarif" in capsys.readouterr().out.partition("--format {")[2].partition("}")[0]


# ---------------------------------------------------------------- migrate --check


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Returns a plugin project folder, the working directory."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "plugin"\n')
    (tmp_path / "plugin").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("source", "status", "codes"), [
    pytest.param(MIGRATED, 0, [], id="clean"),
    pytest.param(FIXABLE + f"from {OLD} import *\n", 1, ["AUX501", "AUX502"], id="failing"),
])
def test_migrate_check_writes_a_valid_log_of_its_findings(
        project: Path, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory,
        source: str, status: int, codes: list[str]) -> None:
    """migrate --check: one result per finding (as --format json counts them), relative URIs."""
    (project / "plugin" / "obs.py").write_text(source)
    assert main(["migrate", "--check", "--format", "json", "plugin"]) == status
    findings = json.loads(capsys.readouterr().out)["findings"]
    got, log, run = run_sarif(capsys, "migrate", "--check", "plugin")
    assert got == status
    assert [r["ruleId"] for r in run["results"]] == [f["code"] for f in findings] == codes
    assert result_paths(run) == [("plugin/obs.py", "%SRCROOT%")] * len(codes)
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    assert run["invocations"] == [{"executionSuccessful": True, "exitCode": status}]
    assert_described_by_the_rule_table(run)
    assert problems(log, tmp_path_factory.mktemp("multitool")) == []


# ---------------------------------------------------------------- validate

OUTPUTS = "import torch\n\n" + CLEAN_OUTPUT + """

class Twice(Clean):
    def copy_to_host(self, copy_tensor):
        copy_tensor(self.rows)
        copy_tensor(self.rows)
        return Host()


TWICE = Twice()
"""
"""A module with a clean device output (``Clean``) and one that copies a tensor twice."""


@pytest.mark.slow
@pytest.mark.parametrize(("target", "status", "results"), [
    pytest.param("sarif_outputs:Clean", 0, [], id="clean"),
    pytest.param("sarif_outputs:TWICE", 1, [("AUX104", OUTPUTS.splitlines().index(
        "TWICE = Twice()") + 1)], id="failing"),
])
def test_validate_writes_a_valid_log_located_at_the_target(
        project: Path, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory,
        target: str, status: int, results: list[tuple[str, int]]) -> None:
    """validate: each finding is a result at the line that defines its target, relative URI."""
    (project / "plugin" / "sarif_outputs.py").write_text(OUTPUTS)
    got, log, run = run_sarif(capsys, "validate", "--path", "plugin", target)
    assert got == status
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
            for r in run["results"]] == results
    assert result_paths(run) == [("plugin/sarif_outputs.py", "%SRCROOT%")] * len(results)
    assert [r["locations"][0]["logicalLocations"] for r in run["results"]] == [
        [{"fullyQualifiedName": target}]] * len(results)
    assert_described_by_the_rule_table(run)
    assert problems(log, tmp_path_factory.mktemp("multitool")) == []


# ---------------------------------------------------------------- check


def test_check_of_a_clean_plugin_writes_a_valid_log_without_results(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """check on the capture example: no result, the skipped stages as notes, exit 0."""
    status, log, run = run_sarif(capsys, "check", str(EXAMPLES / "capture_plugin"),
                                 "--skip", "mypy", "--skip", "contract")
    assert (status, run["results"]) == (0, [])
    assert run["invocations"][0]["executionSuccessful"] is True
    assert [n["level"] for n in run["invocations"][0]["toolExecutionNotifications"]] == [
        "note", "note"]
    assert problems(log, tmp_path) == []


@pytest.mark.slow
def test_check_of_an_old_import_writes_one_result_for_its_one_cause(
        project: Path, capsys: pytest.CaptureFixture[str],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """check: the old import the scan and mypy both report is one result, mypy's as related."""
    (project / "plugin" / "__init__.py").write_text("")
    (project / "plugin" / "obs.py").write_text(FIXABLE)
    status, log, run = run_sarif(capsys, "check", ".", "--skip", "contract", "--skip", "sglang")
    assert status == 1
    assert [r["ruleId"] for r in run["results"]] == ["AUX501"]
    assert result_paths(run) == [("plugin/obs.py", "%SRCROOT%")] * (
        1 + len(run["results"][0].get("relatedLocations", ())))
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    assert_described_by_the_rule_table(run)
    assert problems(log, tmp_path_factory.mktemp("multitool")) == []


_RELEASE_HEAD = re.compile(r"sglang (0\.5\.19|0\.5\.23): (?!sglang\b)")
"""A release finding's heading, said once: not ``sglang: sglang 0.5.19: ...``."""


@pytest.mark.slow
def test_check_names_each_release_findings_release_once_at_its_head(
        example: Callable[[str], Path], capsys: pytest.CaptureFixture[str],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """check --sglang on the hook example (issue 45): each release's findings read
    ``sglang 0.5.19: <finding>``, the release once at the head, the stage not said again."""
    for version in ("0.5.19", "0.5.23"):
        real_release(version)
    status, log, run = run_sarif(capsys, "check", str(example("hook_plugin")), "--sglang",
                                 "0.5.19,0.5.23", "--skip", "mypy", "--skip", "contract",
                                 "--cache", str(REAL_CACHE), "--offline")
    texts = [r["message"]["text"] for r in run["results"]]
    heads = [_RELEASE_HEAD.match(text) for text in texts]
    assert status == 1
    assert [text for text, head in zip(texts, heads, strict=True) if head is None] == []
    assert sorted({head.group(1) for head in heads if head is not None}) == ["0.5.19", "0.5.23"]
    assert_described_by_the_rule_table(run)
    assert problems(log, tmp_path_factory.mktemp("multitool")) == []
