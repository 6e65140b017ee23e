"""``auxcheck moves --from A --to B``: the names SGLang moved between two releases, as a moves file.

Prints the ``[[move]]`` TOML that ``auxcheck migrate --moves`` reads (or JSON), with
the names it had to leave out as comments, and a one-line summary on stderr; downloads and
index building report their progress there unless ``-q``. Exit
status: 0 when done; 2 on usage errors (a bad version, a release that cannot be had,
an output file that cannot be written). This module imports nothing heavy until the
command runs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from auxcheck._core.errors import UsageError
from auxcheck.cli._common import (
    CommandParser,
    add_format,
    add_jobs,
    add_quiet,
    add_release_options,
    one_version,
    run_command,
)

__all__ = ["DESCRIPTION", "main"]

DESCRIPTION = ("Print the names SGLang moved between two releases, inferred from their wheels "
               "or source trees (never installed): [[move]] tables for `auxcheck migrate "
               "--moves`, or JSON with --format json; on stdout, or to --output FILE.")
PROG = "auxcheck moves"


def _parser() -> CommandParser:
    parser = CommandParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("--from", dest="older", required=True, type=one_version, metavar="A",
                        help="the older release, e.g. 0.5.19")
    parser.add_argument("--to", dest="newer", required=True, type=one_version, metavar="B",
                        help="the newer release, e.g. 0.5.23")
    parser.add_argument("--output", "-o", type=Path, default=None, metavar="FILE",
                        help="write the moves to FILE instead of stdout")
    add_jobs(parser, help="processes reading a release the first time (default: the CPU "
                          "count, at most 8)")
    add_format(parser, ("toml", "json"), help="toml: [[move]] tables for --moves (default); "
                                              "json: moves, left-out and gone names for tools")
    add_quiet(parser, help="no progress on stderr (downloads, index building); the summary "
                           "line, warnings and errors still print")
    add_release_options(parser, title="SGLang releases")
    return parser


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.older == args.newer:
        raise UsageError(f"--from and --to are the same release ({args.older}); pass the older "
                         "release to --from and the newer one to --to")
    from auxcheck._core.errors import ReleaseError
    from auxcheck._core.progress import reporting
    from auxcheck._releases.moves_infer import moves_between, render_json, render_toml

    try:
        with reporting(PROG, enabled=not args.quiet):
            found = moves_between(args.older, args.newer, wheels=args.wheel,
                                  sources=args.source, cache=args.cache,
                                  download=not args.offline, jobs=args.jobs)
    except ReleaseError as exc:
        raise UsageError(str(exc)) from None
    text = render_json(found) + "\n" if args.format == "json" else render_toml(found)
    if args.output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        _write(args.output, text)
    print(found.summary(), file=sys.stderr)
    return 0


def _write(target: Path, text: str) -> None:
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"-o/--output: cannot write {target}: {exc.strerror}; pass a writable "
                         "file") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``auxcheck moves``; returns 0 when the moves were printed, 2 on usage errors,
    128 + the signal when stopped (its index workers ended)."""
    return run_command(PROG, _run, argv, stoppable=True)
