"""Tests that a hostile file name or message cannot forge a line or a GitHub workflow command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.plugin_sources import FIXABLE

from auxcheck._core.escape import github_command, one_line
from auxcheck.cli.check import main as check_main
from auxcheck.cli.migrate import main as migrate_main
from auxcheck.report import Finding, Report

FORGED = "x.py\nplugin.py:1:1: AUX703 forged\n::error file=a.py,line=1::forged\r\x1b[2Jy.py"
"""A file name that, printed as it is, starts a fake finding line and a fake annotation."""


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Returns a project folder (the working directory) whose one old import sits in a file
    with a hostile name."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "plugin"\n')
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "__init__.py").write_text("")
    (tmp_path / "plugin" / FORGED).write_text(FIXABLE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _forged_lines(out: str) -> list[str]:
    return [line for line in out.splitlines()
            if line.startswith(("plugin.py", "::error file=a.py")) or "\x1b" in line]


def test_migrate_github_format_escapes_a_file_name_into_one_annotation(
        hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--format github writes one ::error line per finding, its name %-escaped for GitHub."""
    assert migrate_main(["--check", "--format", "github", "plugin"]) == 1
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 1
    assert out.startswith("::error file=plugin/x.py%0Aplugin.py%3A1%3A1%3A AUX703 forged%0A"
                          "%3A%3Aerror file=a.py%2Cline=1%3A%3Aforged%0D\\x1b[2Jy.py,line=1,col=1"
                          "::AUX501 ")


def test_migrate_text_format_shows_a_hostile_file_name_on_its_finding_line(
        hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Plain text shows the name escaped (``\\n``), so no line of it reads like a finding."""
    assert migrate_main(["--check", "plugin"]) == 1
    out = capsys.readouterr().out
    assert _forged_lines(out) == []
    assert out.startswith("plugin/x.py\\nplugin.py:1:1: AUX703 forged\\n::error")


def test_check_text_output_shows_a_hostile_file_name_on_its_finding_line(
        hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """auxcheck check's details show the import finding of a hostile name on one line."""
    assert check_main(["-q", "--skip", "mypy", "--skip", "contract", "--skip", "sglang", "."]) == 1
    out = capsys.readouterr().out
    assert _forged_lines(out) == []
    assert re.search(r"^plugin/x\.py\\nplugin\.py:1:1: AUX703 forged\\n.* AUX501 ", out,
                     re.MULTILINE)


@pytest.mark.parametrize("field", ["location", "message", "hint"])
def test_a_newline_in_any_field_of_a_finding_stays_on_its_line(field: str) -> None:
    """Finding.to_text escapes a newline wherever it comes from; the detail keeps its lines."""
    values = {"code": "AUX501", "message": "m", "hint": "h", "location": "a.py:1:1",
              "detail": "one\ntwo\x1b[2J"}
    values[field] = "x\nAUX703 forged"
    text = Finding(**values).to_text()
    assert text.splitlines()[0].count("AUX703 forged") == 1
    assert text.splitlines()[1:] == ["    one", "    two\\x1b[2J"]


def test_a_report_subject_with_a_newline_stays_on_its_heading_line() -> None:
    """Report.to_text shows a subject with a newline escaped."""
    assert Report("mod:obj\nAUX703 forged").to_text() == "mod:obj\\nAUX703 forged: ok"


@pytest.mark.parametrize(("message", "properties", "expected"), [
    pytest.param("plain", {}, "::error::plain", id="no-properties"),
    pytest.param("50% done\r\nnext", {}, "::error::50%25 done%0D%0Anext", id="message-escapes"),
    pytest.param("m", {"file": "a:b,c%d\ne", "line": 3},
                 "::error file=a%3Ab%2Cc%25d%0Ae,line=3::m", id="property-escapes"),
    pytest.param("m", {"file": "a.py", "col": None}, "::error file=a.py::m", id="none-left-out"),
    pytest.param("::warning::x", {"title": "t"}, "::error title=t::::warning::x",
                 id="a-command-inside-the-message-is-data"),
])
def test_github_commands_escape_as_the_actions_runner_reads_them(
        message: str, properties: dict[str, object], expected: str) -> None:
    """github_command %-escapes the message and, with : and , too, the property values."""
    assert github_command("error", message, **properties) == expected


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("a\nb", "a\\nb", id="newline"),
    pytest.param("a\tb", "a\tb", id="tab-stays"),
    pytest.param("a\u2028b\x85c", "a\\u2028b\\x85c", id="unicode-line-breaks"),
    pytest.param("\x1b[31mred", "\\x1b[31mred", id="escape-sequence"),
    pytest.param("\u202eevil", "\\u202eevil", id="bidi-override"),
])
def test_one_line_escapes_everything_that_could_start_or_redraw_a_line(
        text: str, expected: str) -> None:
    """one_line leaves only printable text and tabs."""
    assert one_line(text) == expected


def test_check_table_and_details_keep_plugin_text_on_its_lines() -> None:
    """A summary naming a hostile file stays one table row; a stage's output loses escapes."""
    from auxcheck._check.stages import StageResult
    from auxcheck.cli.check import render_details, render_table

    summary = "nothing to check, though the plugin uses the contract (x.py\nplugin.py:1:1"
    results = [StageResult("contract", "fail", {}, 1.0, summary, "out\x1b[2J\nline two")]
    table = render_table(Path("p\nq"), results).splitlines()
    assert len(table) == 4
    assert table[1].startswith("contract  FAIL    nothing to check, though the plugin uses the "
                               "contract (x.py\\nplugin.py:1:1")
    assert table[3] == "auxcheck check p\\nq: failed (contract)"
    assert render_details(results).splitlines() == [
        ("== contract: nothing to check, though the plugin uses the contract (x.py\\n"
         "plugin.py:1:1"), "out\\x1b[2J", "line two"]


def test_live_text_keeps_a_note_quoting_plugin_text_on_its_line(tmp_path: Path) -> None:
    """auxcheck live's text shows a note's newline and escapes as text."""
    from auxcheck._sglang_cpu.live import ReleaseRun
    from auxcheck.cli.live import to_text

    run = ReleaseRun("0.5.23", served=["overlap off"],
                     notes=["entry point 'x\nsglang 0.5.23: ok' \x1b[2J not loaded"])
    assert to_text(tmp_path, tmp_path, [run]).splitlines()[1:3] == [
        "  note: entry point 'x\\nsglang 0.5.23: ok' \\x1b[2J not loaded", f"logs: {tmp_path}"]


@pytest.mark.slow  # a worker process imports torch
def test_validate_relays_what_plugin_code_printed_without_its_escape_sequences(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """What a plugin prints reaches stderr with escapes and carriage returns shown as text."""
    from auxcheck.cli import main

    (tmp_path / "tmp_printing_escapes.py").write_text(
        'import sys\nprint("\\x1b[2Jcleared\\rover")\nsys.stderr.write("\\x1b]0;t\\x07 e\\n")\n'
        "X = 1\n")
    monkeypatch.setenv("AUXCHECK_PROGRESS", "off")
    main(["validate", "--path", str(tmp_path), "tmp_printing_escapes:X"])
    err = capsys.readouterr().err
    assert "\\x1b[2Jcleared\\rover\n" in err
    assert "\\x1b]0;t\\x07 e\n" in err
    assert "\x1b" not in err and "\r" not in err
