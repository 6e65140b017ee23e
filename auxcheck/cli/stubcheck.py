"""``auxcheck stubcheck``: compares the sglang stubs with SGLang's source (auxcheck/_releases/stubcheck.py).

Exit status: 0 when the stubs match, 1 on mismatches, 2 on usage errors (a wheel or
tree that is not there or is not an SGLang release, stubs that cannot be read).
"""

from __future__ import annotations

import argparse
import zipfile
from collections.abc import Sequence
from pathlib import Path

from auxcheck._core.errors import UsageError
from auxcheck._releases.stubcheck import (
    PINNED_SGLANG_VERSION,
    Mismatch,
    StubCheckResult,
    check_against_reference,
    check_against_source,
    find_stubs_dir,
    stubs_sglang_version,
)
from auxcheck.cli._common import CommandParser, add_release_options, run_command
from auxcheck.releases import Release

__all__ = ["DESCRIPTION", "main"]

DESCRIPTION = ("Compare the sglang stubs with SGLang releases' source (--sglang R1,R2, fetched "
               "into the cache as `auxcheck check --sglang` does; or a --wheel or --source), or "
               "with auxcheck's reference contract (auxcheck.protocols). Exit status: 0 when "
               "they match, 1 on mismatches, 2 on usage errors.")
PROG = "auxcheck stubcheck"


def _parser() -> CommandParser:
    parser = CommandParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("--sglang", action="append", default=[], metavar="VERSIONS",
                        help="SGLang releases to compare with, comma-separated (e.g. "
                             f"{PINNED_SGLANG_VERSION},0.5.23; repeatable): each wheel is read "
                             "from --wheel, --source or the cache, downloaded when missing")
    parser.add_argument("--reference", action="store_true",
                        help="compare with auxcheck.protocols, mapped to the stub modules")
    parser.add_argument("--stubs", type=Path, metavar="DIR",
                        help="the sglang-stubs directory (default: the installed one)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print mismatches only (and the summary line of each release)")
    add_release_options(parser, title="SGLang releases", checked=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``auxcheck stubcheck``; returns 0 when the stubs match, 1 on mismatches, 2 on errors."""
    return run_command(PROG, _main, argv)


def _main(argv: list[str]) -> int:
    options = _parser().parse_args(argv)
    targets = _targets(options)
    if options.stubs is not None and not (options.stubs / "__init__.pyi").is_file():
        raise UsageError(f"--stubs: {options.stubs} holds no sglang stubs (no __init__.pyi); "
                         "pass the sglang-stubs directory")
    try:
        stubs_dir = options.stubs or find_stubs_dir()
        described = stubs_sglang_version(stubs_dir)
        if options.reference:
            return _report(check_against_reference(stubs_dir), "the reference contract",
                           described, quiet=options.quiet)
        failed = False
        for release, label in targets:
            result = check_against_source(stubs_dir, _sglang(release, label))
            failed |= _report(result, f"{label} (sglang {release.version})", described,
                              version=release.version, quiet=options.quiet) != 0
    except (OSError, ValueError, zipfile.BadZipFile, SyntaxError) as error:
        raise UsageError(str(error)) from None
    return 1 if failed else 0


def _targets(options: argparse.Namespace) -> list[tuple[Release, str]]:
    """Returns the releases to compare with, each with how the report names it; raises
    UsageError naming the option when a target is missing or cannot be had."""
    from auxcheck._core.errors import ReleaseError
    from auxcheck.releases import find_release, local_releases, parse_versions, same_version

    asked = bool(options.sglang or options.wheel or options.source)
    if options.reference:
        if asked:
            raise UsageError("--reference compares with auxcheck's own contract: pass it alone, "
                             "or pass --sglang/--wheel/--source without it")
        return []
    if not asked:
        raise UsageError("pass --sglang R1,R2 (releases, fetched into the cache when missing), "
                         "--wheel WHEEL, --source DIR or --reference")
    for wheel in options.wheel:
        if not wheel.is_file():
            raise UsageError(f"--wheel: no wheel at {wheel}; download it with "
                             f"`pip download --no-deps sglang=={PINNED_SGLANG_VERSION}`")
    sources = [_sglang_root(path) for path in options.source]
    try:
        versions = parse_versions(",".join(options.sglang)) if options.sglang else ()
        targets = [(r, _label(r)) for r in local_releases(options.wheel, sources)]
        for version in versions:  # one given as --wheel/--source is compared once, as that file
            if not any(same_version(r.version, version) for r, _ in targets):
                release = find_release(version, cache=options.cache, download=not options.offline)
                targets.append((release, _label(release)))
    except ReleaseError as exc:
        raise UsageError(str(exc)) from None
    return targets


def _label(release: Release) -> str:
    return (f"wheel {release.path.name}" if release.path.is_file() else f"source {release.path}")


def _sglang_root(path: Path) -> Path:
    """Returns the folder holding ``sglang/`` for ``--source PATH`` (the package itself, or its parent)."""
    root = path.parent if not (path / "sglang").is_dir() and path.name == "sglang" else path
    if not (root / "sglang").is_dir():
        raise UsageError(f"--source: {path} holds no sglang package; pass the "
                         "directory that contains sglang/ (e.g. an unpacked wheel)")
    return root


def _sglang(release: Release, label: str) -> Release:
    if release.read("sglang/srt/managers/schedule_batch.py") is None:
        raise UsageError(f"{label} holds no sglang/srt sources; is it an SGLang release?")
    return release


def _report(result: StubCheckResult, against: str, described: str, *,
            version: str | None = None, quiet: bool) -> int:
    """Prints one comparison and its summary line; returns 1 on mismatches, else 0.

    The stubs name the release they were written from: another release whose source
    matches them is a note, not a mismatch (they describe it as well).
    """
    notes = list(result.notes)
    if version is not None and version != described:
        notes.append(f"note: the stubs were written from sglang {described}; compared here "
                     f"with sglang {version}")
    _print_result(result.mismatches, notes, quiet=quiet)
    count = len(result.mismatches)
    print(f"stubs for sglang {described} vs {against}: {result.modules} modules compared, "
          f"{count} mismatch{'es' if count != 1 else ''}")
    return 1 if count else 0


def _print_result(mismatches: Sequence[Mismatch], notes: Sequence[str], *, quiet: bool) -> None:
    for mismatch in mismatches:
        print(mismatch)
    if not quiet:
        for note in notes:
            print(note)
