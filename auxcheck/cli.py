"""The ``auxcheck`` command: dispatches to one module per subcommand, imported lazily.

Each subcommand module exposes ``DESCRIPTION`` and ``main(argv) -> int``, so the
top-level command loads only what the chosen subcommand needs (``migrate`` never
imports torch).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

from auxcheck import __version__

__all__ = ["SUBCOMMANDS", "main"]

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "migrate": ("auxcheck.migrate.cli", "rewrite imports of names SGLang moved (0.5.20, or A:B)"),
    "validate": ("auxcheck._validate_cli", "check one object against the contract"),
    "check": ("auxcheck._check_cli", "import scan, mypy, contract suite, SGLang releases"),
    "rules": ("auxcheck._rules_cli", "print the rule table"),
    "stubcheck": ("auxcheck._stubcheck", "compare the sglang stubs with SGLang's source"),
    "moves": ("auxcheck._moves_cli", "infer the names SGLang moved between two releases"),
}
"""Subcommand name -> (module holding its ``main``, one-line summary)."""


def _usage() -> str:
    lines = [
        "usage: auxcheck [--version] COMMAND [ARGS...]",
        "",
        "Prove SGLang plugins honour the auxiliary-output contract.",
        "",
        "commands:",
    ]
    lines += [f"  {name:<10}{summary}" for name, (_, summary) in SUBCOMMANDS.items()]
    lines += ["", "Run `auxcheck COMMAND --help` for a command's options."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``auxcheck`` command line; returns its exit status (2 on usage errors)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage(), file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    if args[0] == "--version":
        print(f"auxcheck {__version__}")
        return 0
    entry = SUBCOMMANDS.get(args[0])
    if entry is None:
        print(_usage(), file=sys.stderr)
        print(f"\nauxcheck: error: unknown command {args[0]!r}; "
              f"expected one of {', '.join(SUBCOMMANDS)}", file=sys.stderr)
        return 2
    module = importlib.import_module(entry[0])
    try:
        status: int = module.main(args[1:])
    except BrokenPipeError:
        # The reader went away (`auxcheck ... | head`): stop quietly, as grep and ruff do,
        # and keep Python from reporting the pipe again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return status


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
