"""Tests for auxcheck.rules: the rule table, code parsing and rendering."""

from __future__ import annotations

import re

import pytest

from auxcheck.errors import InvalidArgument
from auxcheck.rules import RULES, get_rule, parse_codes, render_table


def test_codes_are_unique_well_formed_and_sorted() -> None:
    """Every code is AUX plus three digits, keys match the rules, and the table is in order."""
    codes = list(RULES)
    assert codes == sorted(set(codes))
    assert all(re.fullmatch(r"AUX\d{3}", code) for code in codes)
    assert all(rule.code == code for code, rule in RULES.items())


def test_every_rule_has_a_title_and_a_hint() -> None:
    """Titles and hints are non-empty single lines (they are rendered in tables)."""
    for rule in RULES.values():
        assert rule.title and rule.hint
        assert "\n" not in rule.title + rule.hint
        assert "|" not in rule.title + rule.hint


DESIGN_CODES = [
    "AUX101", "AUX102", "AUX103", "AUX104", "AUX105", "AUX110", "AUX111", "AUX112", "AUX113",
    "AUX114", "AUX115", "AUX106",
    "AUX201", "AUX202", "AUX203", "AUX204", "AUX205", "AUX301", "AUX302", "AUX303", "AUX304", "AUX305",
    "AUX306", "AUX401", "AUX402", "AUX403", "AUX501", "AUX502", "AUX503", "AUX504", "AUX601",
    "AUX701", "AUX702", "AUX703", "AUX704", "AUX705", "AUX706",
    "AUX801", "AUX802", "AUX803", "AUX804", "AUX805",
]
"""The codes of the product design's rule table (docs/rules.md renders auxcheck's), in its order,
and the AUX8 codes of the kinds the real-server issue added (the design leaves their numbers to
the issues).

Recorded here so the check runs in any checkout: the design document lives outside
this repository. A change to the design's table comes with a change to this list.
"""

PENDING: dict[str, str] = {}
"""Codes the design lists whose checks land with a later issue; each leaves this table then."""


def test_every_code_of_the_design_is_in_the_table() -> None:
    """The rule table holds exactly the codes the design lists, less those still pending."""
    assert len(DESIGN_CODES) == len(set(DESIGN_CODES))
    assert set(RULES) == set(DESIGN_CODES) - set(PENDING)


def test_a_pending_code_is_not_in_the_table_yet() -> None:
    """A pending code that gets a rule must leave PENDING, so the table stays exact."""
    assert not set(PENDING) & set(RULES)


def test_a_rule_family_drops_the_last_two_digits() -> None:
    """A rule's family is its code without the last two digits."""
    assert get_rule("AUX104").family == "AUX1"
    assert get_rule("AUX601").family == "AUX6"


def test_get_rule_of_an_unknown_code_names_the_known_ones() -> None:
    """An unknown code raises InvalidArgument listing every known code."""
    with pytest.raises(InvalidArgument) as info:
        get_rule("AUX999")
    assert str(info.value) == f"unknown rule code 'AUX999'; expected one of {', '.join(RULES)}"
    assert isinstance(info.value, TypeError)


@pytest.mark.parametrize(("values", "expected"), [
    pytest.param(["AUX104"], {"AUX104"}, id="one-code"),
    pytest.param(["aux104"], {"AUX104"}, id="lower-case"),
    pytest.param(["AUX104,AUX203"], {"AUX104", "AUX203"}, id="comma-separated"),
    pytest.param(["AUX104 AUX203", "AUX601"], {"AUX104", "AUX203", "AUX601"},
                 id="space-separated-and-several-items"),
    pytest.param(["AUX4"], {"AUX401", "AUX402", "AUX403"}, id="family"),
    pytest.param(["AUX11"], {"AUX110", "AUX111", "AUX112", "AUX113", "AUX114", "AUX115"},
                 id="sub-family"),
    pytest.param([], set(), id="nothing"),
    pytest.param([" , "], set(), id="only-separators"),
])
def test_parse_codes_accepts_codes_and_families(values: list[str], expected: set[str]) -> None:
    """Codes, families, and comma/space lists are expanded to exact codes."""
    assert parse_codes(values) == expected


@pytest.mark.parametrize("item", [
    pytest.param("AUX999", id="unknown-code"),
    pytest.param("AUX9", id="unknown-family"),
    pytest.param("E501", id="another-tool"),
    pytest.param("104", id="digits-only"),
    pytest.param("A", id="too-short"),
])
def test_parse_codes_rejects_unknown_codes(item: str) -> None:
    """An unknown item raises InvalidArgument naming it and the accepted forms."""
    with pytest.raises(InvalidArgument) as info:
        parse_codes(["AUX104", item])
    assert str(info.value) == (
        f"unknown rule code {item!r}; expected a code such as AUX104 or a family prefix "
        "such as AUX1 (see `auxcheck rules`)"
    )


def test_render_table_as_markdown_has_a_row_per_rule() -> None:
    """The Markdown table has a header, a rule line, and one row per rule in order."""
    rows = render_table(markdown=True).splitlines()
    assert rows[:2] == ["| code | finding | fix |", "|---|---|---|"]
    assert [row.split(" | ")[0] for row in rows[2:]] == [f"| {code}" for code in RULES]


def test_render_table_as_text_pairs_each_title_with_its_fix() -> None:
    """Text output puts the fix under each code's title."""
    lines = render_table().splitlines()
    assert len(lines) == 2 * len(RULES)
    assert lines[0] == f"AUX101  {RULES['AUX101'].title}"
    assert lines[1] == f"        fix: {RULES['AUX101'].hint}"
