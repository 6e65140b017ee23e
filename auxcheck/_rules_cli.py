"""``auxcheck rules``: prints the rule table."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from auxcheck.rules import render_table

DESCRIPTION = "Print every rule code with what it finds and how to fix it."


def main(argv: Sequence[str]) -> int:
    """Prints the rule table as text or Markdown; returns 0."""
    parser = argparse.ArgumentParser(prog="auxcheck rules", description=DESCRIPTION)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    options = parser.parse_args(list(argv))
    print(render_table(markdown=options.markdown))
    return 0
