"""Tests that keep the README true: its rule table and its set-up commands."""

from __future__ import annotations

from pathlib import Path

from auxcheck.rules import render_table

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_rule_table_is_the_rule_table_rendered() -> None:
    """The README's rule table is exactly `auxcheck rules --markdown`, so docs cannot drift."""
    assert render_table(markdown=True) in README


def test_readme_shows_the_two_set_up_commands() -> None:
    """The set-up is `make demo` and `make test`, and both Makefile targets exist."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test"):
        assert f"make {target}" in README
        assert f"\n{target}:" in makefile


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """`.ci/run` runs `make test` and nothing else."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in lines if line.strip() and not line.lstrip().startswith("#")
                and not line.startswith(("set ", "cd "))]
    assert commands == ["make test"]
