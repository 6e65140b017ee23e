"""``auxcheck check PATH``: the import scan, mypy with the stubs, the contract suite, the releases.

Each stage runs on its own and reports a result (ok, fail, skipped, error), counts and
its time; one table (or a JSON document) sums them up and the exit status is 1 when
any stage failed. mypy and the contract suite run as subprocesses in ``PATH`` so the
project's own configuration applies and nothing leaks into this process. With
``--sglang R1,R2`` (or ``[tool.auxcheck] sglang``) the ``sglang`` stage judges the
plugin against each release's own source (imports, hook targets, entry points,
contract signatures) and prints a release x stage table.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DESCRIPTION", "STAGES", "StageResult", "main", "positive_int", "run_stages"]

DESCRIPTION = ("Check a plugin project: the import scan (AUX501/AUX502, and AUX504 for "
               "files that do not parse), mypy against "
               "auxcheck's sglang stubs, the contract suite (pytest --auxcheck), and with "
               "--sglang each SGLang release's imports, hook targets and entry points "
               "(AUX503/AUX701/AUX702).")
STAGES = ("imports", "mypy", "contract", "sglang")


@dataclass(frozen=True, slots=True)
class StageResult:
    """One stage's outcome: ``ok``, ``fail``, ``skipped`` or ``error``, with counts and output."""

    stage: str
    result: str
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    summary: str = ""
    output: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    always_shown: bool = False
    """The output is printed even when the stage passed (the release matrix)."""

    @property
    def failed(self) -> bool:
        """Returns True when the stage failed or could not run."""
        return self.result in ("fail", "error")


@dataclass(frozen=True, slots=True)
class CheckOptions:
    """What ``auxcheck check`` runs, and how."""

    path: Path
    skip: frozenset[str] = frozenset()
    jobs: int | None = None
    impl: str | None = None
    profile: str | None = None
    stream: bool = True
    pytest_args: tuple[str, ...] = ()
    releases: tuple[str, ...] = ()
    wheels: tuple[Path, ...] = ()
    sources: tuple[Path, ...] = ()
    cache: Path | None = None
    offline: bool = False


# ---------------------------------------------------------------- stages


def _timed(stage: str, run: Callable[[], StageResult]) -> StageResult:
    """Returns ``run()`` with its wall time filled in."""
    start = time.perf_counter()
    result = run()
    return StageResult(stage, result.result, result.counts, time.perf_counter() - start,
                       result.summary, result.output, result.data, result.always_shown)


def run_imports(options: CheckOptions) -> StageResult:
    """Returns the import scan's result: fail when any AUX501/AUX502 use remains, or a file
    cannot be read, decoded or parsed (AUX504; every file is parsed, not only those naming
    an old module)."""
    from auxcheck.migrate._files import iter_python_files
    from auxcheck.migrate.scan import scan_paths

    files = sum(1 for _ in iter_python_files([str(options.path)]))
    report = scan_paths([str(options.path)], every_file=True)
    counts = {"files": files, "findings": len(report)}
    for code in ("AUX501", "AUX502", "AUX504"):
        counts[code] = sum(1 for f in report if f.code == code)
    if not counts["AUX504"]:
        del counts["AUX504"]  # the keys stay those of a plugin whose files all parse
    summary = f"{_plural(len(report), 'finding')} in {_plural(files, 'file')}"
    if report:
        broken = f", {counts['AUX504']} AUX504" if "AUX504" in counts else ""
        summary += f" ({counts['AUX501']} AUX501, {counts['AUX502']} AUX502{broken})"
    output = "\n".join(f.to_text() for f in report)
    return StageResult("imports", "fail" if report else "ok", counts, 0.0, summary, output)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def plugin_packages(path: Path) -> list[Path]:
    """Returns the packages mypy checks: ``path`` itself if a package, else its package children."""
    if (path / "__init__.py").is_file():
        return [path]
    return sorted(p for p in path.iterdir() if (p / "__init__.py").is_file()
                  and not p.name.startswith((".", "test")))


def run_mypy(options: CheckOptions) -> StageResult:
    """Returns mypy's result on the plugin's packages (skipped when mypy is not installed)."""
    if importlib.util.find_spec("mypy") is None:
        return StageResult("mypy", "skipped", summary="mypy is not installed")
    packages = plugin_packages(options.path)
    if not packages:
        return StageResult("mypy", "skipped", summary="no package (folder with __init__.py)")
    cwd = options.path.parent if packages == [options.path] else options.path
    command = [sys.executable, "-m", "mypy", "--show-error-codes", "--no-color-output",
               "--no-pretty", *(p.name for p in packages)]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    errors = len(re.findall(r": error: ", done.stdout))
    files = _mypy_files(done.stdout)
    counts = {"packages": len(packages), "errors": errors}
    summary = f"{_plural(errors, 'error')} in {', '.join(p.name for p in packages)}"
    if done.returncode not in (0, 1):
        return StageResult("mypy", "error", counts, 0.0, f"mypy exited {done.returncode}",
                           done.stdout + done.stderr)
    counts["files"] = files
    return StageResult("mypy", "fail" if errors else "ok", counts, 0.0, summary,
                       done.stdout.strip())


def _mypy_files(stdout: str) -> int:
    match = re.search(r"checked (\d+) source files?", stdout)
    return int(match.group(1)) if match else 0


def contract_command(options: CheckOptions, results: Path) -> list[str]:
    """Returns the pytest command line of the contract stage."""
    command = [sys.executable, "-m", "pytest", "--auxcheck", "-m", "auxcheck", "-q",
               "-p", "no:cacheprovider", f"--rootdir={options.path}", f"--auxcheck-results={results}",
               "-o", "console_output_style=classic"]
    if options.impl:
        command.append(f"--auxcheck-impl={options.impl}")
    if options.profile:
        command.append(f"--auxcheck-profile={options.profile}")
    if options.jobs and importlib.util.find_spec("xdist") is not None:
        command += ["-n", str(options.jobs)]
    return [*command, *options.pytest_args, "."]


def run_contract(options: CheckOptions) -> StageResult:
    """Returns the contract suite's result: ``pytest --auxcheck -m auxcheck`` in ``PATH``."""
    with tempfile.TemporaryDirectory(prefix="auxcheck-") as tmp:
        results = Path(tmp) / "results.json"
        done = _run_streamed(contract_command(options, results), options)
        counts, failed = _outcome_counts(results)
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n or k == "passed")
    if done.returncode not in (0, 1) or not suite_ran(counts, done.returncode):
        return StageResult("contract", "error", counts, 0.0,
                           f"pytest exited {done.returncode}", done.output)
    return StageResult("contract", "fail" if done.returncode else "ok", counts, 0.0, summary,
                       "\n".join(failed) or done.output)


def suite_ran(counts: dict[str, int], returncode: int) -> bool:
    """Returns True when pytest ran the suite (its items counted, or a clean exit)."""
    return sum(counts.values()) > 0 or returncode == 0


@dataclass(frozen=True, slots=True)
class _Done:
    returncode: int
    output: str


def _run_streamed(command: list[str], options: CheckOptions) -> _Done:
    """Runs ``command`` in ``PATH``; its output goes to stderr as it comes when streaming."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if options.stream:
        done = subprocess.run(command, cwd=options.path, stdout=sys.stderr, stderr=sys.stderr,
                              env=env, check=False)
        return _Done(done.returncode, "")
    captured = subprocess.run(command, cwd=options.path, capture_output=True, text=True,
                              env=env, check=False)
    return _Done(captured.returncode, captured.stdout + captured.stderr)


def _outcome_counts(results: Path) -> tuple[dict[str, int], list[str]]:
    """Returns (passed/failed/error/skipped counts, ``id: first line`` of each failure)."""
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    failed: list[str] = []
    if not results.is_file():
        return counts, failed
    for item in json.loads(results.read_text())["items"]:
        counts[item["outcome"]] = counts.get(item["outcome"], 0) + 1
        if item["outcome"] in ("failed", "error"):
            failed.append(f"{item['nodeid']}: {item['message']}")
    return counts, failed


def run_sglang(options: CheckOptions) -> StageResult:
    """Returns the release matrix's result: each release's imports, hooks, entry points, contract."""
    from auxcheck._index import ReleaseIndex
    from auxcheck._plugin_scan import scan_project
    from auxcheck._release_check import ReleaseResult, check_release, render_matrix
    from auxcheck.releases import ReleaseError, find_release, local_releases

    if not options.releases and not options.wheels and not options.sources:
        return StageResult("sglang", "skipped", summary="no --sglang, no [tool.auxcheck] sglang")
    scan = scan_project(options.path)
    moves = _project_moves(options.path)
    results: list[ReleaseResult] = []
    versions = list(options.releases)
    try:
        versions += [r.version for r in local_releases(options.wheels, options.sources)
                     if r.version not in versions]
    except ReleaseError as exc:
        return StageResult("sglang", "error", summary=str(exc), output=str(exc))
    for version in versions:
        try:
            release = find_release(version, wheels=options.wheels, sources=options.sources,
                                   cache=options.cache, download=not options.offline)
        except ReleaseError as exc:
            results.append(ReleaseResult(version, version, error=str(exc)))
            continue
        results.append(check_release(scan, ReleaseIndex(release, cache=options.cache),
                                     moves=moves))
    failed = [r.version for r in results if r.failed]
    counts = {"releases": len(results), "failed": len(failed),
              "findings": sum(len(s.findings) for r in results for s in r.stages)}
    summary = ", ".join(f"{r.version} {'FAIL' if r.failed else 'ok'}" for r in results)
    output = render_matrix(results)
    if scan.broken:
        # No release can vouch for a file that was never read: the stage fails on it.
        counts["AUX504"] = len(scan.broken)
        summary += f"; {_plural(len(scan.broken), 'file')} not scanned (AUX504)"
        output = "\n".join([*(f.to_text() for f in scan.broken), "", output])
    data = {"releases": [r.to_dict() for r in results],
            "broken": [f.to_dict() for f in scan.broken]}
    return StageResult("sglang", "fail" if failed or scan.broken else "ok", counts, 0.0,
                       summary, output, data, always_shown=True)


def _project_moves(path: Path) -> Any:
    """Returns the moves table for fix hints: built-in plus the project's own (built-in if bad)."""
    from auxcheck.errors import MovesTableError
    from auxcheck.migrate._moves import builtin_moves, load_moves

    try:
        return load_moves(pyproject=path / "pyproject.toml")
    except MovesTableError:
        return builtin_moves()


_RUNNERS: dict[str, Callable[[CheckOptions], StageResult]] = {
    "imports": run_imports,
    "mypy": run_mypy,
    "contract": run_contract,
    "sglang": run_sglang,
}


def run_stages(options: CheckOptions) -> list[StageResult]:
    """Returns every stage's result, in order; skipped stages say so."""
    results = []
    for stage in STAGES:
        if stage in options.skip:
            results.append(StageResult(stage, "skipped", summary="--skip"))
            continue
        results.append(_timed(stage, functools.partial(_RUNNERS[stage], options)))
    return results


# ---------------------------------------------------------------- output


def render_table(path: Path, results: Sequence[StageResult]) -> str:
    """Returns the summary table: stage, result, counts, time; then the verdict."""
    rows = [("stage", "result", "counts", "time")]
    rows += [(r.stage, r.result.upper() if r.failed else r.result, r.summary,
              f"{r.seconds:.1f}s") for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}" for a, b, c, d in rows]
    failed = [r.stage for r in results if r.failed]
    verdict = (f"auxcheck check {path}: failed ({', '.join(failed)})" if failed
               else f"auxcheck check {path}: ok")
    return "\n".join(lines + ["", verdict])


def render_details(results: Sequence[StageResult]) -> str:
    """Returns the output of every failed stage, and the release matrix, under a heading each."""
    blocks = [f"== {r.stage}: {r.summary}\n{r.output}" for r in results
              if (r.failed or r.always_shown) and r.output]
    return "\n\n".join(blocks)


def render_json(path: Path, results: Sequence[StageResult]) -> str:
    """Returns the results as a JSON document: path, ok, and one object per stage."""
    stages: list[dict[str, Any]] = []
    for r in results:
        data = asdict(r)
        data["seconds"] = round(r.seconds, 3)
        stages.append(data)
    ok = not any(r.failed for r in results)
    return json.dumps({"path": str(path), "ok": ok, "stages": stages}, indent=2)


# ---------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="auxcheck check", description=DESCRIPTION,
        usage="auxcheck check [-h] [--format {text,json}] [--skip STAGE] [--jobs N] "
              "[--impl IMPL] [--profile NAME] [--sglang VERSIONS] [--wheel WHEEL] "
              "[--source DIR] [--offline] [--cache DIR] PATH [-- PYTEST_ARGS...]",
        epilog="Arguments after `--` go to the contract stage's pytest, e.g. -- -k AUX104.")
    parser.add_argument("path", metavar="PATH", help="the plugin project's folder")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: a table (pytest's output streams to stderr); json: a "
                             "document on stdout for tools")
    parser.add_argument("--skip", action="append", choices=STAGES, default=[],
                        help="leave a stage out (repeatable)")
    parser.add_argument("--jobs", "-n", type=positive_int, default=None, metavar="N",
                        help="run the contract suite on N processes (needs pytest-xdist)")
    parser.add_argument("--impl", default=None, help="passed as --auxcheck-impl")
    parser.add_argument("--profile", default=None, help="passed as --auxcheck-profile")
    releases = parser.add_argument_group("SGLang releases (the sglang stage)")
    releases.add_argument("--sglang", action="append", default=[], metavar="VERSIONS",
                          help="releases to check against, comma-separated (repeatable), e.g. "
                               "0.5.19,0.5.20,0.5.23; default: [tool.auxcheck] sglang")
    releases.add_argument("--wheel", action="append", type=Path, default=[], metavar="WHEEL",
                          help="a downloaded sglang wheel to use instead of the cache "
                               "(repeatable; its release is checked too)")
    releases.add_argument("--source", action="append", type=Path, default=[], metavar="DIR",
                          help="an unpacked sglang tree (the folder holding sglang/), repeatable")
    releases.add_argument("--offline", action="store_true",
                          help="never download: use --wheel, --source and the cache only")
    releases.add_argument("--cache", type=Path, default=None, metavar="DIR",
                          help="the wheel cache (default: $AUXCHECK_CACHE_DIR or "
                               "~/.cache/auxcheck/sglang)")
    return parser


def positive_int(text: str) -> int:
    """Returns ``text`` as a whole number >= 1; raises ArgumentTypeError saying what it got."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; expected a whole number >= 1")
    return value


def _releases(parser: argparse.ArgumentParser, args: argparse.Namespace,
              path: Path) -> tuple[str, ...]:
    """Returns the releases to check: ``--sglang`` values, else ``[tool.auxcheck] sglang``."""
    from auxcheck._config import project_sglang
    from auxcheck.errors import InvalidArgument
    from auxcheck.releases import ReleaseError, parse_versions

    try:
        if args.sglang:
            return parse_versions(",".join(args.sglang))
        configured = project_sglang(path)
        return parse_versions(configured) if configured else ()
    except (ReleaseError, InvalidArgument) as exc:
        parser.error(f"--sglang: {exc}" if args.sglang else str(exc))


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``auxcheck check``; returns 0 when every stage passed, 1 when one failed, 2 on usage."""
    parser = _parser()
    words = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in words:
        at = words.index("--")
        words, extra = words[:at], words[at + 1:]
    args = parser.parse_args(words)
    path = Path(args.path)
    if not path.is_dir():
        parser.error(f"PATH {args.path!r} is not a folder; expected a plugin project's folder")
    releases = _releases(parser, args, path)
    options = CheckOptions(path.resolve(), frozenset(args.skip), args.jobs, args.impl,
                           args.profile, stream=args.format == "text", pytest_args=tuple(extra),
                           releases=releases, wheels=tuple(args.wheel),
                           sources=tuple(args.source), cache=args.cache, offline=args.offline)
    results = run_stages(options)
    if args.format == "json":
        print(render_json(path, results))
    else:
        details = render_details(results)
        print(("\n" + details + "\n" if details else "") + "\n" + render_table(path, results))
    return 1 if any(r.failed for r in results) else 0
