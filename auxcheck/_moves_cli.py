"""``auxcheck moves --from A --to B``: the names SGLang moved between two releases, as a moves file.

Prints the ``[[move]]`` TOML that ``auxcheck migrate --moves`` reads (or JSON), with
the names it had to leave out as comments, and a one-line summary on stderr. Exit
status: 0 when done; 2 on usage errors (a bad version, a release that cannot be had,
an output file that cannot be written). ``auxcheck migrate`` shares the release options
and version type, so this module imports nothing heavy until a command runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["DESCRIPTION", "add_release_options", "main", "one_version"]

DESCRIPTION = ("Print the names SGLang moved between two releases as [[move]] tables for "
               "`auxcheck migrate --moves`, inferred from the releases' wheels (never installed).")


def one_version(text: str) -> str:
    """Returns ``text`` as one release version; raises ArgumentTypeError saying what it got."""
    from auxcheck.releases import ReleaseError, parse_versions

    try:
        versions = parse_versions(text)
    except ReleaseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if len(versions) != 1:
        raise argparse.ArgumentTypeError(f"expected one release version such as 0.5.23, "
                                         f"got {text!r}")
    return versions[0]


def add_release_options(parser: argparse.ArgumentParser, *, title: str) -> None:
    """Adds ``--wheel``, ``--source``, ``--cache`` and ``--offline``, spelt as ``check`` spells them."""
    group = parser.add_argument_group(title)
    group.add_argument("--wheel", action="append", type=Path, default=[], metavar="WHEEL",
                       help="a downloaded sglang wheel to use instead of the cache, matched by "
                            "its declared version (repeatable)")
    group.add_argument("--source", action="append", type=Path, default=[], metavar="DIR",
                       help="an unpacked sglang tree (the folder holding sglang/), matched by "
                            "its declared version (repeatable)")
    group.add_argument("--cache", type=Path, default=None, metavar="DIR",
                       help="the wheel and index cache (default: $AUXCHECK_CACHE_DIR or "
                            "~/.cache/auxcheck/sglang)")
    group.add_argument("--offline", action="store_true",
                       help="never download: use --wheel, --source and the cache only")


def _parser() -> argparse.ArgumentParser:
    from auxcheck._check_cli import positive_int

    parser = argparse.ArgumentParser(prog="auxcheck moves", description=DESCRIPTION)
    parser.add_argument("--from", dest="older", required=True, type=one_version, metavar="A",
                        help="the older release, e.g. 0.5.19")
    parser.add_argument("--to", dest="newer", required=True, type=one_version, metavar="B",
                        help="the newer release, e.g. 0.5.23")
    parser.add_argument("--output", "-o", type=Path, default=None, metavar="FILE",
                        help="write the moves to FILE instead of stdout")
    parser.add_argument("--jobs", "-j", type=positive_int, default=None, metavar="N",
                        help="processes reading a release the first time (default: the CPU "
                             "count, at most 8)")
    parser.add_argument("--format", choices=("toml", "json"), default="toml",
                        help="toml: [[move]] tables for --moves (default); json: moves, "
                             "left-out and gone names for tools")
    add_release_options(parser, title="SGLang releases")
    return parser


def _fail(message: str) -> int:
    print(f"auxcheck moves: error: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``auxcheck moves``; returns 0 when the moves were printed, 2 on usage errors."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if args.older == args.newer:
        return _fail(f"--from and --to are the same release ({args.older}); pass the older "
                     "release to --from and the newer one to --to")
    from auxcheck._moves_infer import moves_between, render_json, render_toml
    from auxcheck.releases import ReleaseError

    try:
        found = moves_between(args.older, args.newer, wheels=args.wheel, sources=args.source,
                              cache=args.cache, download=not args.offline, jobs=args.jobs)
    except ReleaseError as exc:
        return _fail(str(exc))
    text = render_json(found) + "\n" if args.format == "json" else render_toml(found)
    if args.output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            return _fail(f"cannot write {args.output}: {exc.strerror}; pass -o a writable file")
    print(found.summary(), file=sys.stderr)
    return 0
