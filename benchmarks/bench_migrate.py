"""Benchmark `auxcheck migrate` against grep, libcst's RenameCommand and a bare libcst parse.

Builds, from the installed torch package's own sources (copied), a tree of about
3,500 real Python files, a known share of which get an old import appended, then
prints one table:

* `auxcheck migrate --check` on the tree with no work vs `grep -rl`, the median of
  ``--runs`` runs of each, taken in turn (target: within 2.5x);
* auxcheck vs libcst's RenameCommand, once per moved name, on a 300-file sample
  (target: at least 50x faster; RenameCommand takes seconds per file and name, so it is
  run on ``--rename-timed`` files spread over the sample, 5 by default, and scaled to the
  sample by bytes);
* per-file transform cost on files that all need work vs a bare libcst parse + codegen
  of the same files (target: within 1.5x);
* the whole clean tree through `auxcheck migrate`: files changed and errors (must be 0).

Run by hand: ``.venv/bin/python benchmarks/bench_migrate.py [--files N] [--share F]``;
``--tree PATH`` times only the first row, on an existing tree such as SGLang's own sources.
``--tree PATH --sglang OLDER:NEWER`` times instead, side by side in turn (the median of
``--runs`` rounds), `auxcheck migrate --check --sglang OLDER:NEWER PATH` (the moves
inferred between two releases, thousands of them) and `auxcheck migrate --check --moves
FILE PATH` (the same moves as a file) against `auxcheck migrate --check PATH` (the built-in
table): warm, as a second run over a tree finds its caches (target: within 2x), then cold,
the verdicts remembered by earlier runs removed before each run (information); and says
whether every run printed the same findings. Every row ends in a ``RESULT`` line
(``_timing.result_line``); the exit status is 1 when a target is missed.

The timed `auxcheck` runs get this process's environment, its bytecode setting included:
``make bench`` runs the benchmark under both (``benchmarks/run_all.py``).
"""

from __future__ import annotations

import argparse
import atexit
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _timing import best_of, medians, result_line

OLD = "sglang.srt.sampling.sampling_observer"
NEW = "sglang.srt.managers.auxiliary_output"
MOVED = ("CommittedTokens", "DeviceAuxiliaryOutput", "HostAuxiliaryOutput")
INJECTED = f"\nfrom {OLD} import CommittedTokens, SamplingObserver\n"


def torch_sources() -> list[Path]:
    """Returns the .py files of the installed torch package (the real corpus)."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not installed; this benchmark copies its sources")
    return sorted(Path(spec.origin).parent.rglob("*.py"))


def build_tree(root: Path, sources: list[Path], *, files: int, share: float,
               seed: int = 0) -> list[Path]:
    """Copies ``files`` real files under ``root`` and appends an old import to ``share`` of them.

    Returns the paths that got the old import.
    """
    rng = random.Random(seed)
    injected = []
    for i in range(files):
        src = sources[i % len(sources)]
        dst = root / f"part{i // 500}" / f"{i}_{src.name}"
        dst.parent.mkdir(parents=True, exist_ok=True)
        data = src.read_bytes()
        if share and rng.random() < share:
            data += INJECTED.encode()
            injected.append(dst)
        dst.write_bytes(data)
    return injected


def installed_env() -> dict[str, str]:
    """Returns the environment the timed runs get: this one, bytecode setting included.

    ``make bench`` runs this benchmark with ``PYTHONDONTWRITEBYTECODE`` unset (bytecode
    written once, then read, as for an installed package) and set with none of the project's
    own bytecode (compiled anew by every run, as an editable install under that setting):
    each row says which (``benchmarks/run_all.py``).
    """
    return dict(os.environ)


def auxcheck_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Runs the installed `auxcheck migrate` with ``args`` (in this process's environment)."""
    exe = shutil.which("auxcheck", path=os.path.dirname(sys.executable)) or "auxcheck"
    return subprocess.run([exe, "migrate", *args], capture_output=True, check=False, text=True,
                          env=installed_env())


def bench_prefilter(tree: Path, *, runs: int) -> tuple[float, float]:
    """Returns the medians of (auxcheck --check, grep -rl) seconds on a tree with no work."""
    warm = auxcheck_cli("--check", str(tree))  # fills the bytecode cache, warms the page cache
    if warm.returncode != 0:
        raise SystemExit(f"`auxcheck migrate --check {tree}` exited {warm.returncode}; "
                         f"expected a tree with no work:\n{warm.stdout[-2000:]}{warm.stderr}")
    grep = ["grep", "-rl", "--include=*.py", "sampling_observer", str(tree)]
    ours, base = medians(runs, lambda: auxcheck_cli("--check", str(tree)),
                         lambda: subprocess.run(grep, capture_output=True, check=False))
    return ours, base


def bench_inferred(tree: Path, releases: str, *, runs: int) -> tuple[list[float], str]:
    """Returns the medians of (built-in table, --sglang ``releases``, --moves FILE) --check
    seconds on ``tree``, warm, taken in turn, and what the inferred runs reported."""
    older, newer = releases.split(":")
    moves = Path(tempfile.mkdtemp(prefix="auxcheck-bench-moves-")) / "moves.toml"
    atexit.register(shutil.rmtree, moves.parent, True)
    made = subprocess.run([sys.executable, "-m", "auxcheck", "moves", "--from", older, "--to",
                           newer, "-q", "-o", str(moves)], capture_output=True, text=True,
                          check=False)
    if made.returncode != 0:
        raise SystemExit(f"`auxcheck moves --from {older} --to {newer}` failed:\n{made.stderr}")
    commands = (("--check", str(tree)), ("--check", "--sglang", releases, str(tree)),
                ("--check", "--moves", str(moves), str(tree)))
    warm = [auxcheck_cli(*c) for c in commands]  # fills every cache, and the bytecode's
    if any(w.returncode not in (0, 1) for w in warm):
        raise SystemExit(f"a warm-up run failed:\n{[w.stderr[-2000:] for w in warm]}")
    outputs = {warm[1].stdout, warm[2].stdout}

    def timed(args: tuple[str, ...], *, kept: bool) -> Callable[[], None]:
        def action() -> None:
            done = auxcheck_cli(*args)
            if kept:
                outputs.add(done.stdout)
        return action

    seconds = medians(runs, timed(commands[0], kept=False), timed(commands[1], kept=True),
                      timed(commands[2], kept=True))
    summary = warm[1].stderr.strip().splitlines()[-1]
    same = ("the same findings in every --sglang and --moves run" if len(outputs) == 1
            else f"{len(outputs)} different outputs")
    return seconds, f"{summary}; {same}"


def bench_inferred_cold(tree: Path, releases: str, *, runs: int) -> list[float]:
    """Returns the medians of (built-in, --sglang ``releases``) --check seconds on ``tree``
    with no verdict remembered (the result cache emptied before each run), taken in turn."""
    from auxcheck.releases import cache_dir

    def cold(*args: str) -> Callable[[], None]:
        def action() -> None:
            shutil.rmtree(cache_dir() / "migrate", ignore_errors=True)
            auxcheck_cli(*args)
        return action

    return medians(runs, cold("--check", str(tree)),
                   cold("--check", "--sglang", releases, str(tree)))


def bench_rename(sample: Path, *, timed: int) -> tuple[float, float]:
    """Returns (auxcheck, RenameCommand x3) seconds over the files of ``sample``, one core.

    RenameCommand takes seconds per file and name on large real files, so it is timed
    on ``timed`` files spread over the sample and scaled to the whole sample by bytes.
    """
    from libcst.codemod import CodemodContext, transform_module
    from libcst.codemod.commands.rename import RenameCommand

    from auxcheck.migrate.moves import builtin_moves
    from auxcheck.migrate.runner import run

    moves = builtin_moves()
    ours = best_of(1, lambda: run([str(sample)], moves=moves, mode="diff", jobs=1))
    paths = sorted(sample.rglob("*.py"))
    chosen = paths[::max(1, len(paths) // timed)][:timed]
    texts = [p.read_text(encoding="utf-8", errors="surrogateescape") for p in chosen]
    scale = sum(p.stat().st_size for p in paths) / sum(p.stat().st_size for p in chosen)

    def rename_all() -> None:
        for name in MOVED:
            for text in texts:
                command = RenameCommand(CodemodContext(), f"{OLD}.{name}", f"{NEW}.{name}")
                transform_module(command, text)

    return ours, best_of(1, rename_all) * scale


def bench_per_file(files: list[Path]) -> tuple[float, float]:
    """Returns (auxcheck transform, bare libcst parse + codegen) seconds per file."""
    import libcst

    from auxcheck.migrate.moves import builtin_moves
    from auxcheck.migrate.transform import migrate_source

    moves = builtin_moves()
    texts = [p.read_text(encoding="utf-8") for p in files]
    for text in texts[:3]:
        migrate_source(text, moves=moves)  # warm caches and imports before timing
    ours = best_of(2, lambda: [migrate_source(t, moves=moves) for t in texts])
    bare = best_of(2, lambda: [libcst.parse_module(t).code for t in texts])
    return ours / len(texts), bare / len(texts)


def whole_tree(tree: Path, injected: list[Path]) -> tuple[int, int, int, float]:
    """Returns (files rewritten, error lines, --check status afterwards, seconds) for a run."""
    start = time.perf_counter()
    proc = auxcheck_cli(str(tree))
    seconds = time.perf_counter() - start
    rewritten = proc.stderr.count("Rewriting ")
    errors = proc.stderr.count(": error: ")
    check = auxcheck_cli("--check", str(tree)).returncode
    assert rewritten == len(injected), (rewritten, len(injected), proc.stderr[-2000:])
    return rewritten, errors, check, seconds


def row(name: str, ours: str, base: str, ratio: str, target: str) -> None:
    """Prints one table row as soon as it is measured."""
    print(f"{name:<40} {ours:>10} {base:>10} {ratio:>16}  {target}", flush=True)


def main() -> int:
    """Builds the trees, runs every measurement and prints the table; returns 1 when a
    target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3500)
    parser.add_argument("--share", type=float, default=0.05)
    parser.add_argument("--sample", type=int, default=300,
                        help="files in the RenameCommand comparison")
    parser.add_argument("--rename-timed", type=int, default=5,
                        help="sample files RenameCommand is really run on (scaled to --sample)")
    parser.add_argument("--runs", type=int, default=21,
                        help="runs of --check and of grep whose medians are compared")
    parser.add_argument("--tree", type=Path, default=None, metavar="PATH",
                        help="time only --check vs grep -rl, on this existing tree")
    parser.add_argument("--sglang", default=None, metavar="OLDER:NEWER",
                        help="with --tree: time --check with the moves inferred between "
                             "these releases (and as a --moves file) against the built-in table")
    parser.add_argument("--no-sglang-trees", action="store_true",
                        help="skip the rows on SGLang's own trees (their wheels unpacked)")
    args = parser.parse_args()
    if args.tree is None:
        ok = torch_rows(args) == 0
        return 0 if (args.no_sglang_trees or sglang_rows() == 0) and ok else 1
    if args.tree is not None and args.sglang is not None:
        return inferred_rows(args.tree, args.sglang, runs=args.runs)
    if args.tree is not None:
        files = sum(1 for _ in args.tree.rglob("*.py"))
        print(f"tree: {args.tree}, {files} .py files, {os.cpu_count()} CPUs")
        check, grep = bench_prefilter(args.tree, runs=args.runs)
        row(f"--check vs grep -rl (median of {args.runs})", f"{check:.3f} s", f"{grep:.3f} s",
            f"{check / grep:.2f}x slower", "within 2.5x")
        ok = result_line(f"migrate --check on {args.tree.name} ({files} files) vs grep -rl",
                         check, grep, at_most=2.5)
        return 0 if ok else 1
    return torch_rows(args)


SGLANG_TREE_RUNS = 7


def sglang_rows() -> int:
    """The rows on SGLang's own sources, the cached wheels unpacked into a temporary folder:
    ``--check`` with no work on 0.5.23's tree vs ``grep -rl`` (within 2.5x), and the moves
    inferred from 0.5.19 to 0.5.23 (and as a file) on 0.5.19's tree vs the built-in table
    (within 2x); returns 1 when a target is missed."""
    import zipfile

    from auxcheck.releases import cache_dir, fetch_wheel

    ok = True
    with tempfile.TemporaryDirectory(prefix="auxcheck-bench-sglang-") as tmp:
        trees = {}
        for version in ("0.5.19", "0.5.23"):
            trees[version] = Path(tmp) / f"sglang-{version}"
            with zipfile.ZipFile(fetch_wheel(version, cache=cache_dir())) as wheel:
                wheel.extractall(trees[version])
        tree = trees["0.5.23"]
        files = sum(1 for _ in tree.rglob("*.py"))
        print(f"tree: SGLang 0.5.23's wheel unpacked, {files} .py files", flush=True)
        check, grep = bench_prefilter(tree, runs=SGLANG_TREE_RUNS)
        row(f"--check vs grep -rl (median of {SGLANG_TREE_RUNS})", f"{check:.3f} s",
            f"{grep:.3f} s", f"{check / grep:.2f}x slower", "within 2.5x")
        ok = result_line(f"migrate --check on SGLang 0.5.23's tree ({files} files), no work, "
                         "vs grep -rl", check, grep, at_most=2.5)
        ok = inferred_rows(trees["0.5.19"], "0.5.19:0.5.23", runs=SGLANG_TREE_RUNS) == 0 and ok
    return 0 if ok else 1


def inferred_rows(tree: Path, releases: str, *, runs: int) -> int:
    """Prints the rows of an inferred table and of the same moves as a file against the
    built-in table, warm, then cold; returns 1 when a target is missed."""
    files = sum(1 for _ in tree.rglob("*.py"))
    print(f"tree: {tree}, {files} .py files, {os.cpu_count()} CPUs")
    (builtin, inferred, moves_file), said = bench_inferred(tree, releases, runs=runs)
    print(f"inferred runs: {said}")
    row(f"--check --sglang {releases} vs built-in (median of {runs})", f"{inferred:.3f} s",
        f"{builtin:.3f} s", f"{inferred / builtin:.2f}x slower", "within 2x")
    row(f"--check --moves FILE vs built-in (median of {runs})", f"{moves_file:.3f} s",
        f"{builtin:.3f} s", f"{moves_file / builtin:.2f}x slower", "within 2x")
    ok = result_line(f"migrate --check --sglang {releases} on {files} files, warm, vs the "
                     "built-in table", inferred, builtin, at_most=2)
    ok &= result_line(f"migrate --check --moves FILE ({releases}) on {files} files, warm, vs "
                      "the built-in table", moves_file, builtin, at_most=2)
    cold_builtin, cold_inferred = bench_inferred_cold(tree, releases, runs=runs)
    row(f"  the same, no verdict remembered (median of {runs})", f"{cold_inferred:.3f} s",
        f"{cold_builtin:.3f} s", f"{cold_inferred / cold_builtin:.2f}x slower", "(information)")
    result_line(f"migrate --check --sglang {releases} on {files} files, no verdict "
                "remembered, vs the built-in table (information, no target)", cold_inferred,
                cold_builtin)
    return 0 if ok else 1


def torch_rows(args: argparse.Namespace) -> int:
    """Prints the rows measured on trees copied from torch's sources; returns 1 when a
    target is missed."""
    sources = torch_sources()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_tree(root / "clean", sources, files=args.files, share=0)
        injected = build_tree(root / "work", sources, files=args.files, share=args.share)
        build_tree(root / "sample", sources, files=args.sample, share=args.share, seed=1)
        all_work = build_tree(root / "allwork", sources[::20], files=100, share=1.0, seed=2)
        print(f"corpus: {args.files} copies of torch's {len(sources)} source files, "
              f"{len(injected)} with an old import ({args.share:.0%}), {os.cpu_count()} CPUs")
        print(f"{'measurement':<40} {'auxcheck':>10} {'baseline':>10} {'ratio':>16}  target")
        check, grep = bench_prefilter(root / "clean", runs=args.runs)
        row(f"--check, no work vs grep -rl (median of {args.runs})", f"{check:.3f} s",
            f"{grep:.3f} s", f"{check / grep:.2f}x slower", "within 2.5x")
        ok = result_line(f"migrate --check, {args.files} files with no work, vs grep -rl",
                         check, grep, at_most=2.5)
        per_file, bare = bench_per_file(all_work)
        row("per file needing work vs parse+codegen", f"{per_file * 1e3:.1f} ms",
            f"{bare * 1e3:.1f} ms", f"{per_file / bare:.2f}x", "within 1.5x")
        ok &= result_line("migrate per file needing work vs a bare libcst parse + codegen",
                          per_file * 1e3, bare * 1e3, at_most=1.5, unit="ms")
        for label, tree, work in (("clean tree", root / "clean", []),
                                  ("tree with work", root / "work", injected)):
            rewritten, errors, status, seconds = whole_tree(tree, work)
            print(f"whole {label}: {rewritten} files rewritten, {errors} errors, "
                  f"--check afterwards exits {status}, {seconds:.2f} s", flush=True)
            ok &= (rewritten, errors, status) == (len(work), 0, 0)
        ours, rename = bench_rename(root / "sample", timed=args.rename_timed)
        print(f"(RenameCommand run on {args.rename_timed} of the {args.sample} files, "
              "scaled by bytes)")
        row(f"{args.sample}-file sample vs RenameCommand x3", f"{ours:.3f} s",
            f"{rename:.1f} s", f"{rename / ours:.0f}x faster", "at least 50x faster")
        ok &= result_line(f"migrate --diff on {args.sample} files vs libcst RenameCommand x3 "
                          f"(run on {args.rename_timed}, scaled)", ours, rename, at_least=50)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
