"""The ``auxcheck`` command: dispatches to one module per subcommand, imported lazily.

Each subcommand module of this package exposes ``DESCRIPTION`` and
``main(argv: Sequence[str] | None = None) -> int`` built on :mod:`auxcheck.cli._common`
(one usage error, exit status 2; ``-j/--jobs``; ``--format``; closed pipes), so the
top-level command loads only what the chosen subcommand needs (``migrate`` never
imports torch).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from auxcheck import __version__
from auxcheck._core.errors import UsageError
from auxcheck.cli._common import run_command

__all__ = ["SUBCOMMANDS", "main"]

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "migrate": ("auxcheck.cli.migrate",
                "rewrite imports of names SGLang moved (--check: only report them)"),
    "validate": ("auxcheck.cli.validate",
                 "check objects (MODULE:ATTR, one or more) against the contract"),
    "check": ("auxcheck.cli.check",
              "check a plugin project: imports, mypy, contract suite, releases"),
    "rules": ("auxcheck.cli.rules", "print the rule table"),
    "stubcheck": ("auxcheck.cli.stubcheck",
                  "compare the sglang stubs with SGLang's source (or the reference)"),
    "moves": ("auxcheck.cli.moves", "print the names SGLang moved between two releases"),
    "live": ("auxcheck.cli.live",
             "run a plugin inside SGLang's real server on CPU, per release"),
}
"""Subcommand name -> (module holding its ``main``, one-line summary).

Each summary opens with the verb its module's ``DESCRIPTION`` opens with (the suite checks
it), and says no more than the command does: ``auxcheck --help`` imports no subcommand."""


def _usage() -> str:
    lines = [
        "usage: auxcheck [--version] COMMAND [ARGS...]",
        "",
        "Prove SGLang plugins honour the auxiliary-output contract.",
        "",
        "commands:",
    ]
    width = max(map(len, SUBCOMMANDS)) + 2
    lines += [f"  {name:<{width}}{summary}" for name, (_, summary) in SUBCOMMANDS.items()]
    lines += ["", "Run `auxcheck COMMAND --help` for a command's options."]
    return "\n".join(lines) + "\n"


def _dispatch(args: list[str]) -> int:
    if not args:
        raise UsageError("expected a command", usage=_usage() + "\n")
    if args[0] in ("-h", "--help"):
        print(_usage(), end="")
        return 0
    if args[0] == "--version":
        print(f"auxcheck {__version__}")
        return 0
    entry = SUBCOMMANDS.get(args[0])
    if entry is None:
        raise UsageError(f"unknown command {args[0]!r}; expected one of {', '.join(SUBCOMMANDS)}",
                         usage=_usage() + "\n")
    status: int = importlib.import_module(entry[0]).main(args[1:])
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``auxcheck`` command line; returns its exit status (2 on usage errors)."""
    return run_command("auxcheck", _dispatch, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
