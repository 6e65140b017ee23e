"""Tests for auxcheck.report: findings, reports and their renderings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from auxcheck.errors import ContractViolation
from auxcheck.report import Finding, Report, describe, printable
from auxcheck.rules import RULES


class RaisingRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr is broken")


class ExitingRepr:
    def __repr__(self) -> str:
        raise SystemExit(3)


class HangingRepr:
    def __repr__(self) -> str:
        while True:
            pass


class HugeRepr:
    def __repr__(self) -> str:
        return "x" * (1 << 28)


class HostileMeta(type):
    def __getattribute__(cls, name: str) -> Any:
        if name in ("__qualname__", "__name__", "__module__"):
            raise RuntimeError("no name")
        return super().__getattribute__(name)


class HostileClass(metaclass=HostileMeta):
    pass


class HostileDunderClass:
    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        raise RuntimeError("no class")


def test_finding_of_takes_the_hint_and_title_from_the_rule_table() -> None:
    """Finding.of joins seen and expected, and the hint and title come from the rule."""
    finding = Finding.of("AUX204", "consume returned 1", "expected None", obj=1)
    assert finding.message == "consume returned 1; expected None"
    assert finding.hint == RULES["AUX204"].hint
    assert finding.title == RULES["AUX204"].title


def test_a_finding_keeps_what_was_seen_and_expected_apart_from_its_message() -> None:
    """Finding.of keeps both halves as given, even when the seen half holds "; expected";
    a finding built from a message alone has none, and equality reads the message only."""
    made = Finding.of("AUX202", "a; expected b", "expected c")
    assert (made.message, made.seen, made.expected, made.summary) == (
        "a; expected b; expected c", "a; expected b", "expected c", "a; expected b")
    plain = Finding("AUX202", "a; expected b; expected c", hint=made.hint)
    assert (plain.seen, plain.expected, plain.summary) == (None, None, plain.message)
    assert plain == made


@pytest.mark.parametrize(("location", "detail", "expected"), [
    pytest.param(None, None, "AUX204 seen; expected; fix: {hint}", id="plain"),
    pytest.param("a.py:3:1", None, "a.py:3:1: AUX204 seen; expected; fix: {hint}",
                 id="with-location"),
    pytest.param(None, "a.py:3 in f\nValueError: x",
                 "AUX204 seen; expected; fix: {hint}\n    a.py:3 in f\n    ValueError: x",
                 id="with-detail"),
])
def test_a_finding_renders_as_one_line_plus_its_detail(
    location: str | None, detail: str | None, expected: str
) -> None:
    """A finding's text is location, code, message and fix, then the indented detail."""
    finding = Finding.of("AUX204", "seen", "expected", location=location, detail=detail)
    assert finding.to_text() == expected.format(hint=RULES["AUX204"].hint)


def test_a_finding_as_json_data_describes_its_object() -> None:
    """to_dict holds every field, with the object as a short repr."""
    data = Finding.of("AUX104", "seen", "expected", obj=[1, 2]).to_dict()
    assert data == {"code": "AUX104", "title": RULES["AUX104"].title,
                    "message": "seen; expected", "hint": RULES["AUX104"].hint,
                    "object": "[1, 2]", "location": None, "detail": None}


@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param([1, 2], "[1, 2]", id="short"),
    pytest.param((7,), "(7,)", id="one-tuple"),
    pytest.param("x" * 100, "'" + "x" * 76 + "...", id="truncated"),
    pytest.param("x" * (1 << 26), "'" + "x" * 76 + "...", id="huge-text-sliced-first"),
    pytest.param(10**5000, "<a very large int>", id="int-too-large-for-repr"),
    pytest.param(list(range(100)), "[0, 1, 2, 3, 4, 5, ...]", id="long-list"),
    pytest.param(describe, "<function auxcheck._core.report.describe>", id="function"),
])
def test_describe_shows_plain_values_and_stays_short(obj: Any, expected: str) -> None:
    """describe shows builtin values by repr, functions by name, at most 80 characters."""
    assert describe(obj) == expected


@pytest.mark.parametrize("obj", [
    pytest.param(RaisingRepr(), id="raising-repr"),
    pytest.param(ExitingRepr(), id="system-exit-repr"),
    pytest.param(HangingRepr(), id="hanging-repr"),
    pytest.param(HugeRepr(), id="quarter-gigabyte-repr"),
    pytest.param(HostileDunderClass(), id="class-property-raises"),
])
def test_describe_never_runs_a_plugins_repr(obj: Any) -> None:
    """A plugin object shows as its type and identity: its __repr__ may hang, raise or be huge."""
    assert describe(obj) == f"<{__name__}.{type(obj).__qualname__} object at {id(obj):#x}>"


def test_describe_reads_a_class_name_past_a_metaclass_property() -> None:
    """A class whose metaclass hides __qualname__ behind a raising property is still named."""
    assert describe(HostileClass) == f"<class {__name__}.HostileClass>"


def report_of(*codes: str) -> Report:
    return Report("subject", [Finding.of(code, f"seen {code}", "expected") for code in codes])


@pytest.mark.parametrize(("codes", "heading"), [
    pytest.param((), "subject: ok", id="clean"),
    pytest.param(("AUX104",), "subject: 1 finding", id="one"),
    pytest.param(("AUX104", "AUX203"), "subject: 2 findings", id="two"),
])
def test_a_report_heading_counts_its_findings(codes: tuple[str, ...], heading: str) -> None:
    """The text's first line is the subject with ok or the finding count; then one per finding."""
    lines = report_of(*codes).to_text().splitlines()
    assert lines[0] == heading
    assert [line.split()[0] for line in lines[1:]] == list(codes)


def test_a_report_is_falsy_and_ok_only_when_clean() -> None:
    """bool, len, ok and codes follow the findings; codes drop repeats, keep order."""
    assert not report_of() and report_of().ok and len(report_of()) == 0
    report = report_of("AUX203", "AUX104", "AUX203")
    assert report and not report.ok and len(report) == 3
    assert report.codes == ["AUX203", "AUX104"]


def test_without_drops_the_given_codes_and_keeps_the_original() -> None:
    """without returns a new report; the original is unchanged."""
    report = report_of("AUX104", "AUX203")
    assert report.without({"AUX104"}).codes == ["AUX203"]
    assert report.codes == ["AUX104", "AUX203"]


def test_extend_accepts_another_report() -> None:
    """extend appends every finding of a report, in order."""
    report = report_of("AUX104")
    report.extend(report_of("AUX203", "AUX601"))
    assert report.codes == ["AUX104", "AUX203", "AUX601"]


def test_a_report_renders_as_json() -> None:
    """to_json is the subject, ok and each finding's data."""
    data = json.loads(report_of("AUX104").to_json())
    assert data["subject"] == "subject" and data["ok"] is False
    assert data["findings"] == [report_of("AUX104").findings[0].to_dict()]
    assert "\n" not in report_of().to_json(indent=None)


def test_raise_for_findings_raises_with_the_whole_report() -> None:
    """ContractViolation carries the report; its message is the report text."""
    report_of().raise_for_findings()
    report = report_of("AUX104", "AUX203")
    with pytest.raises(ContractViolation) as info:
        report.raise_for_findings()
    assert info.value.report is report
    assert str(info.value) == report.to_text()
    assert isinstance(info.value, AssertionError)


@pytest.mark.parametrize(("text", "shown"), [
    pytest.param("clear \x1b[2J screen", "clear \\x1b[2J screen", id="escape-sequence"),
    pytest.param("over\rwrite", "over\\rwrite", id="carriage-return"),
    pytest.param("bad \ud800 text", "bad \\ud800 text", id="lone-surrogate"),
    pytest.param("abc\u202edef", "abc\\u202edef", id="bidi-override"),
    pytest.param("two\nlines\tand a tab, caf\u00e9", "two\nlines\tand a tab, caf\u00e9",
                 id="newline-tab-and-accents-stay"),
])
def test_printable_escapes_what_a_terminal_would_act_on(text: str, shown: str) -> None:
    """Control characters, bidi overrides and lone surrogates show as Python escapes."""
    assert printable(text) == shown


def test_a_report_as_text_shows_plugin_text_escaped_and_always_encodes() -> None:
    """Text a plugin chose cannot clear the screen, forge a line or break the encoder."""
    report = Report("t\x1b[2J", [Finding("AUX103", "raised \ud800", None, "fix",
                                          None, "RuntimeError: \x1b[2J\r\n0 findings")])
    text = report.to_text()
    assert text == ("t\\x1b[2J: 1 finding\n  AUX103 raised \\ud800; fix: fix\n"
                    "      RuntimeError: \\x1b[2J\\r\n      0 findings")
    assert text.encode("ascii")


def test_a_heading_replaces_the_rule_title_where_it_would_not_fit() -> None:
    """A finding with a heading shows it as its title, in JSON data too."""
    finding = Finding.of("AUX101", "importing m raised SystemExit(0)", "expected it to return",
                         heading="the target could not be loaded")
    assert (finding.title, finding.to_dict()["title"]) == ("the target could not be loaded",) * 2
    assert Finding.of("AUX101", "seen", "expected").title == RULES["AUX101"].title
