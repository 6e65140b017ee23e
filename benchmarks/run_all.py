"""Runs every benchmark under both bytecode settings and prints their targets side by side.

Run by hand: ``make bench`` (or ``.venv/bin/python benchmarks/run_all.py [--only NAME ...]
[--setting written|not-written|both] [--record]``). Each ``benchmarks/bench_*.py`` runs as
its own process, its output shown as it comes; every ``RESULT`` line it prints (see
``_timing.result_line``: what was measured, its baseline from the same run, the ratio, the
target and whether it holds) is collected into one table at the end.

The two bytecode settings are the two a user meets:

- ``written``: ``PYTHONDONTWRITEBYTECODE`` unset, so auxcheck's modules are compiled once
  and their bytecode reused (as after ``pip install``, or any second run);
- ``not written``: ``PYTHONDONTWRITEBYTECODE=1`` (this machine sets it) and no bytecode of
  the project's own sources (``auxcheck/``, ``benchmarks/``, ``examples/``; run first, after
  removing their ``__pycache__`` folders), so every process compiles them anew, as an
  editable install under that setting does. Installed packages (torch, libcst, pytest) keep
  the bytecode pip wrote for them in both.

``--record`` writes the table, with the date, the commit it ran on, the machine's CPUs and
its load, into ``benchmarks/last-run.md`` and into docs/benchmarks.md between its
``make bench`` markers (``tests/test_docs.py`` checks that the two agree); on a checkout with
uncommitted changes outside those two files it runs but records nothing, and says so first,
so recorded figures always belong to a commit. Exit status: 1 when a benchmark failed or missed a target, else 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "benchmarks"
RECORD = HERE / "last-run.md"
DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- make bench: results begin -->"
END = "<!-- make bench: results end -->"
RECORDED = {"benchmarks/last-run.md", "docs/benchmarks.md"}
"""The files ``--record`` writes: the only changes a recorded run may have on top of its commit."""
SETTINGS = ("not written", "written")
PROJECT_SOURCES = ("auxcheck", "benchmarks", "examples")
"""The folders whose bytecode ``not written`` removes (the project's own, editable, sources)."""


@dataclass(frozen=True)
class Result:
    """One ``RESULT`` line of one benchmark."""

    bench: str
    what: str
    measured: str
    baseline: str
    ratio: str
    target: str
    verdict: str
    setting: str
    position: int = 0
    """Its place among its benchmark's results: the two settings' rows pair by it."""

    def row(self) -> str:
        """Returns the line as a Markdown table row."""
        return (f"| {self.bench} | {self.what} | {self.setting} | {self.measured} | "
                f"{self.baseline} | {self.ratio} | {self.target} | {self.verdict} |")


def parse_result(bench: str, line: str) -> Result | None:
    """Returns the result a ``RESULT | ...`` line holds, or None for any other line."""
    if not line.startswith("RESULT |"):
        return None
    parts = [part.strip() for part in line.split("|")[1:]]
    if len(parts) != 7:
        return None
    what, measured, baseline, ratio, target, verdict, setting = parts
    return Result(bench, what, measured, baseline, ratio, target, verdict,
                  setting.removeprefix("bytecode "))


def environment(setting: str) -> dict[str, str]:
    """Returns the environment a benchmark runs in under ``setting``."""
    env = dict(os.environ)
    env.setdefault("AUXCHECK_CACHE_DIR", str(ROOT / ".cache" / "sglang"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if setting == "not written":
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def drop_project_bytecode() -> int:
    """Removes the ``__pycache__`` folders of the project's own sources; returns how many."""
    removed = 0
    for folder in PROJECT_SOURCES:
        for cache in sorted((ROOT / folder).rglob("__pycache__")):
            shutil.rmtree(cache, ignore_errors=True)
            removed += 1
    return removed


def run_bench(path: Path, setting: str,
              output: list[str]) -> tuple[int, list[Result]]:
    """Runs one benchmark, echoing its output and adding it to ``output``; returns its exit
    status and its results."""
    results: list[Result] = []
    with subprocess.Popen([sys.executable, str(path)], cwd=ROOT, text=True,
                          env=environment(setting), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT) as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(line, end="", flush=True)
            output.append(line)
            found = parse_result(path.stem.removeprefix("bench_"), line.strip())
            if found is not None:
                results.append(dataclasses.replace(found, position=len(results)))
    return process.returncode, results


def git(*args: str) -> str:
    """Returns git's output for ``args`` in the checkout ("" where git cannot say)."""
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def uncommitted() -> list[str]:
    """Returns the changed or untracked paths outside the files ``--record`` writes."""
    done = subprocess.run(["git", "status", "--porcelain", "-z"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return ["(git status failed: is this a git checkout?)"]
    # Each entry is "XY PATH" (a rename adds its old path as the next entry); -z keeps the
    # leading status columns and the paths exactly as they are.
    entries = done.stdout.split("\0")
    paths, at = [], 0
    while at < len(entries):
        entry = entries[at]
        at += 1
        if len(entry) < 4:
            continue
        paths.append(entry[3:])
        if entry[0] in "RC":
            at += 1
    return [path for path in paths if path not in RECORDED]


def table(results: Sequence[Result]) -> str:
    """Returns the results as a Markdown table."""
    head = ("| benchmark | what (measured vs baseline, side by side in one run) | bytecode | "
            "measured | baseline | ratio | target | verdict |\n"
            "|---|---|---|---:|---:|---:|---|---|")
    return "\n".join([head, *(result.row() for result in results)])


def caption(commit: str, load: float, seconds: float) -> str:
    """Returns the paragraph above the recorded table: when, where and how it ran."""
    return (f"Every target, from the last `make bench` (measured on {date.today().isoformat()} "
            f"at {commit}, on {os.cpu_count()} CPUs, load average {load:.1f} at the start; "
            f"the whole run took {seconds / 60:.1f} minutes). Each row's measured value and "
            "baseline were taken side by side in the same process or the same interleaved "
            "rounds; the full output of the run is in `benchmarks/last-run.md`.")


def record(block: str, log: str) -> None:
    """Writes ``block`` into benchmarks/last-run.md (with the run's output) and docs."""
    RECORD.write_text(f"# The last `make bench`\n\n{block}\n\n## Its output\n\n```text\n{log}```\n",
                      encoding="utf-8")
    text = DOCS.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{DOCS}: no {BEGIN} ... {END} block to write the results into")
    DOCS.write_text(pattern.sub(lambda _: f"{BEGIN}\n{block}\n{END}", text), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmarks; prints the table; returns 1 when one failed or missed a target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only bench_NAME.py (repeatable)")
    parser.add_argument("--setting", choices=("written", "not-written", "both"), default="both",
                        help="the bytecode setting(s) to run under (default: both)")
    parser.add_argument("--record", action="store_true",
                        help="write the table into benchmarks/last-run.md and docs/benchmarks.md")
    options = parser.parse_args(argv)
    benches = sorted(HERE.glob("bench_*.py"))
    if options.only:
        wanted = {name.removeprefix("bench_").removesuffix(".py") for name in options.only}
        unknown = wanted - {path.stem.removeprefix("bench_") for path in benches}
        if unknown:
            parser.error(f"no benchmark named {', '.join(sorted(unknown))} in {HERE}")
        benches = [path for path in benches if path.stem.removeprefix("bench_") in wanted]
    dirty = uncommitted() if options.record else []
    partial = bool(options.only) or options.setting != "both"
    if options.record and partial:
        print("run_all: --record: not recording this run: it is partial (--only or one "
              "--setting), and the record is of every benchmark under both settings",
              file=sys.stderr, flush=True)
    elif dirty:
        print(f"run_all: --record: not recording this run: the figures must belong to a "
              f"commit, and {', '.join(dirty[:5])} {'is' if len(dirty) == 1 else 'are'} not "
              "committed", file=sys.stderr, flush=True)
    settings = SETTINGS if options.setting == "both" else (options.setting.replace("-", " "),)
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    load = os.getloadavg()[0]
    start = time.perf_counter()
    results: list[Result] = []
    failed: list[str] = []
    log: list[str] = []
    for setting in settings:
        if setting == "not written":
            print(f"== bytecode not written: removed {drop_project_bytecode()} __pycache__ "
                  "folders of the project's sources", flush=True)
        for path in benches:
            header = f"== {path.relative_to(ROOT)} (bytecode {setting})\n"
            print(header, end="", flush=True)
            log.append(header)
            status, found = run_bench(path, setting, log)
            results.extend(found)
            # A benchmark exits 1 when it missed a target (a row says so); anything else is
            # a failure of the benchmark itself.
            if status != 0 and not (status == 1 and any(r.verdict == "missed" for r in found)):
                failed.append(f"{path.name} (bytecode {setting}): exit {status}")
    seconds = time.perf_counter() - start
    results.sort(key=lambda r: (r.bench, r.position, SETTINGS.index(r.setting)
                                if r.setting in SETTINGS else len(SETTINGS)))
    block = f"{caption(commit, load, seconds)}\n\n{table(results)}"
    print(f"\n{block}\n")
    missed = [r for r in results if r.verdict == "missed"]
    for line in failed:
        print(f"FAILED: {line}")
    print(f"{len(results)} results, {len(missed)} targets missed, {len(failed)} benchmarks "
          f"exited non-zero, in {seconds:.0f} s")
    if options.record and partial:
        print("not recorded: a partial run")
    elif options.record and not dirty:
        record(block, "".join(log))
        print(f"recorded in {RECORD.relative_to(ROOT)} and {DOCS.relative_to(ROOT)}")
    elif options.record:
        print(f"not recorded: uncommitted changes in {', '.join(dirty[:5])}")
    return 1 if missed or failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
