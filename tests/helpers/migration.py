"""Migrating source text in-process with the built-in moves: the rewrite and the scan's codes."""

from __future__ import annotations

from auxcheck.migrate.moves import builtin_moves
from auxcheck.migrate.scan import scan_source
from auxcheck.migrate.transform import migrate_source

__all__ = ["MOVES", "codes", "migrate"]

MOVES = builtin_moves()
"""The built-in moves table (``auxcheck/migrate/moves.toml``)."""


def migrate(text: str, *, compat: bool = False) -> str:
    """Returns ``text`` migrated (it must not fail)."""
    result = migrate_source(text, moves=MOVES, compat=compat)
    assert result.status in ("changed", "unchanged"), result.reason
    return result.text


def codes(text: str) -> list[str]:
    """Returns the rule codes the scan reports for ``text``, in order."""
    return [finding.code for finding in scan_source(text, moves=MOVES)]
