"""``auxcheck stubcheck``: compares the sglang stubs with SGLang's source (auxcheck/_releases/stubcheck.py).

Exit status: 0 when the stubs match, 1 on mismatches, 2 on usage errors (a wheel or
tree that is not there or is not an SGLang release, stubs that cannot be read).
"""

from __future__ import annotations

import argparse
import zipfile
from collections.abc import Sequence
from pathlib import Path

from auxcheck._releases.stubcheck import (
    PINNED_SGLANG_VERSION,
    Mismatch,
    StubCheckResult,
    check_against_reference,
    check_against_source,
    find_stubs_dir,
    stubs_sglang_version,
)
from auxcheck.cli._common import CommandParser, UsageError, run_command
from auxcheck.releases import Release

__all__ = ["DESCRIPTION", "main"]

DESCRIPTION = ("Compare the sglang stubs with SGLang's source (a wheel or an unpacked tree) or "
               "with auxcheck's reference contract (auxcheck/protocols.py). Exit status: 0 when "
               "they match, 1 on mismatches, 2 on usage errors.")
PROG = "auxcheck stubcheck"


def _parser() -> CommandParser:
    parser = CommandParser(prog=PROG, description=DESCRIPTION)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--wheel", type=Path, metavar="WHEEL",
                        help=f"an SGLang wheel (e.g. sglang-{PINNED_SGLANG_VERSION}-*.whl); "
                             "read as a zip, never installed")
    target.add_argument("--source", type=Path, metavar="DIR",
                        help="a directory holding the sglang package (or the package itself)")
    target.add_argument("--reference", action="store_true",
                        help="compare with auxcheck/protocols.py, mapped to the stub modules")
    parser.add_argument("--stubs", type=Path, metavar="DIR",
                        help="the sglang-stubs directory (default: the installed one)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print mismatches only")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``auxcheck stubcheck``; returns 0 when the stubs match, 1 on mismatches, 2 on errors."""
    return run_command(PROG, _main, argv)


def _main(argv: list[str]) -> int:
    options = _parser().parse_args(argv)
    if options.stubs is not None and not (options.stubs / "__init__.pyi").is_file():
        raise UsageError(f"--stubs: {options.stubs} holds no sglang stubs (no __init__.pyi); "
                         "pass the sglang-stubs directory")
    try:
        stubs_dir = options.stubs or find_stubs_dir()
        result, against, version = _run(options, stubs_dir)
        described = stubs_sglang_version(stubs_dir)
    except (OSError, ValueError, zipfile.BadZipFile, SyntaxError) as error:
        raise UsageError(str(error)) from None
    mismatches = list(result.mismatches)
    if version is not None and version != described:
        mismatches.append(Mismatch("sglang", f"the stubs describe sglang {described}, "
                                             f"the source is sglang {version}"))
    _print_result(mismatches, result.notes, quiet=options.quiet)
    print(f"stubs for sglang {described} vs {against}: {result.modules} modules compared, "
          f"{len(mismatches)} mismatch{'es' if len(mismatches) != 1 else ''}")
    return 1 if mismatches else 0


def _run(options: argparse.Namespace,
         stubs_dir: Path) -> tuple[StubCheckResult, str, str | None]:
    if options.reference:
        return check_against_reference(stubs_dir), "the reference contract", None
    if options.wheel is not None:
        if not options.wheel.is_file():
            raise UsageError(f"--wheel: no wheel at {options.wheel}; download it with "
                             f"`pip download --no-deps sglang=={PINNED_SGLANG_VERSION}`")
        release = Release.from_wheel(options.wheel)
        return _compare_with(stubs_dir, release, f"wheel {options.wheel.name}")
    root = options.source
    if not (root / "sglang").is_dir() and root.name == "sglang":
        root = root.parent
    if not (root / "sglang").is_dir():
        raise UsageError(f"--source: {options.source} holds no sglang package; pass the "
                         "directory that contains sglang/ (e.g. an unpacked wheel)")
    return _compare_with(stubs_dir, Release.from_source(root), f"source {root}")


def _compare_with(stubs_dir: Path, release: Release,
                  label: str) -> tuple[StubCheckResult, str, str | None]:
    if release.read("sglang/srt/managers/schedule_batch.py") is None:
        raise UsageError(f"{label} holds no sglang/srt sources; is it an SGLang release?")
    version = release.declared_version()
    return check_against_source(stubs_dir, release), f"{label} (sglang {version})", version


def _print_result(mismatches: Sequence[Mismatch], notes: Sequence[str], *, quiet: bool) -> None:
    for mismatch in mismatches:
        print(mismatch)
    if not quiet:
        for note in notes:
            print(note)
