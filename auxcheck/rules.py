"""The rule table: every finding's code, title and fix hint, in one place.

Messages, docs/rules.md's rule table and ``auxcheck rules`` are all rendered from
:data:`RULES`, so a code's wording cannot drift between them.
"""

from auxcheck._core.rules import (
    RULES,
    Rule,
    Severity,
    get_rule,
    parse_codes,
    render_table,
)

__all__ = [
    "RULES",
    "Rule",
    "Severity",
    "get_rule",
    "parse_codes",
    "render_table",
]
