"""``auxcheck rules``: prints the rule table."""

from __future__ import annotations

from collections.abc import Sequence

from auxcheck.cli._common import CommandParser, run_command

__all__ = ["DESCRIPTION", "main"]

DESCRIPTION = "Print every rule code with what it finds and how to fix it."
PROG = "auxcheck rules"


def _parser() -> CommandParser:
    parser = CommandParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    return parser


def _run(argv: list[str]) -> int:
    from auxcheck._core.rules import render_table

    options = _parser().parse_args(argv)
    print(render_table(markdown=options.markdown))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the rule table as text or Markdown; returns 0, or 2 on a usage error."""
    return run_command(PROG, _run, argv)
