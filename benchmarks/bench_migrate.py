"""Benchmark `auxcheck migrate` against grep, libcst's RenameCommand and a bare libcst parse.

Builds, from the installed torch package's own sources (copied), a tree of about
3,500 real Python files, a known share of which get an old import appended, then
prints one table:

* `auxcheck migrate --check` on the tree with no work vs `grep -rl`, the median of
  ``--runs`` runs of each, taken in turn (target: within 2.5x);
* auxcheck vs libcst's RenameCommand, once per moved name, on a 300-file sample
  (target: at least 50x faster);
* per-file transform cost on files that all need work vs a bare libcst parse + codegen
  of the same files (target: within 1.5x);
* the whole clean tree through `auxcheck migrate`: files changed and errors (must be 0).

Run by hand: ``.venv/bin/python benchmarks/bench_migrate.py [--files N] [--share F]``;
``--tree PATH`` times only the first row, on an existing tree such as SGLang's own sources.
``--tree PATH --sglang OLDER:NEWER`` times instead `auxcheck migrate --check --sglang
OLDER:NEWER PATH` (the moves inferred between two releases, thousands of them) against
`auxcheck migrate --check PATH` (the built-in table), the median of ``--runs`` runs of each
taken in turn (target: within 5x), and says whether every run printed the same findings.

The timed `auxcheck` runs see the bytecode cache an installed package has (pip compiles
it): ``PYTHONDONTWRITEBYTECODE`` is dropped for them and ``PYTHONPYCACHEPREFIX`` points at
a temporary folder that a warm-up run fills, so the source tree gets no ``__pycache__``.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import best_of, medians

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


@functools.lru_cache(maxsize=1)
def installed_env() -> dict[str, str]:
    """Returns this environment with bytecode cached, as for an installed package.

    The cache lives in a temporary folder removed at exit, not in the source tree.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="auxcheck-bench-pyc-")
    atexit.register(shutil.rmtree, env["PYTHONPYCACHEPREFIX"], True)
    return env


def auxcheck_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Runs the installed `auxcheck migrate` with ``args``, its bytecode cached as installed."""
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


def bench_inferred(tree: Path, releases: str, *, runs: int) -> tuple[float, float, str]:
    """Returns the medians of (--check with the moves inferred between ``releases``, --check
    with the built-in table) seconds on ``tree``, and what the inferred runs reported."""
    warm = auxcheck_cli("--check", "--sglang", releases, str(tree))  # also caches the moves
    if warm.returncode not in (0, 1):
        raise SystemExit(f"`auxcheck migrate --check --sglang {releases} {tree}` exited "
                         f"{warm.returncode}:\n{warm.stderr[-2000:]}")
    auxcheck_cli("--check", str(tree))
    outputs = set()

    def inferred() -> None:
        outputs.add(auxcheck_cli("--check", "--sglang", releases, str(tree)).stdout)

    ours, builtin = medians(runs, inferred, lambda: auxcheck_cli("--check", str(tree)))
    summary = warm.stderr.strip().splitlines()[-1]
    same = "the same findings in every run" if outputs == {warm.stdout} else (
        f"{len(outputs | {warm.stdout})} different outputs")
    return ours, builtin, f"{summary}; {same}"


def bench_rename(sample: Path, *, timed: int) -> tuple[float, float]:
    """Returns (auxcheck, RenameCommand x3) seconds over the files of ``sample``, one core.

    RenameCommand takes seconds per file and name on large real files, so it is timed
    on the first ``timed`` files and scaled linearly to the whole sample.
    """
    from libcst.codemod import CodemodContext, transform_module
    from libcst.codemod.commands.rename import RenameCommand

    from auxcheck.migrate.moves import builtin_moves
    from auxcheck.migrate.runner import run

    moves = builtin_moves()
    ours = best_of(1, lambda: run([str(sample)], moves=moves, mode="diff", jobs=1))
    paths = sorted(sample.rglob("*.py"))
    texts = [p.read_text(encoding="utf-8", errors="surrogateescape") for p in paths[:timed]]

    def rename_all() -> None:
        for name in MOVED:
            for text in texts:
                command = RenameCommand(CodemodContext(), f"{OLD}.{name}", f"{NEW}.{name}")
                transform_module(command, text)

    return ours, best_of(1, rename_all) * len(paths) / len(texts)


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


def main() -> None:
    """Builds the trees, runs every measurement and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3500)
    parser.add_argument("--share", type=float, default=0.05)
    parser.add_argument("--sample", type=int, default=300,
                        help="files in the RenameCommand comparison")
    parser.add_argument("--rename-timed", type=int, default=20,
                        help="sample files RenameCommand is really run on (scaled to --sample)")
    parser.add_argument("--runs", type=int, default=21,
                        help="runs of --check and of grep whose medians are compared")
    parser.add_argument("--tree", type=Path, default=None, metavar="PATH",
                        help="time only --check vs grep -rl, on this existing tree")
    parser.add_argument("--sglang", default=None, metavar="OLDER:NEWER",
                        help="with --tree: time --check with the moves inferred between "
                             "these releases against the built-in table")
    args = parser.parse_args()
    if args.tree is not None and args.sglang is not None:
        files = sum(1 for _ in args.tree.rglob("*.py"))
        print(f"tree: {args.tree}, {files} .py files, {os.cpu_count()} CPUs")
        ours, builtin, said = bench_inferred(args.tree, args.sglang, runs=args.runs)
        print(f"inferred runs: {said}")
        row(f"--check --sglang {args.sglang} vs built-in (median of {args.runs})",
            f"{ours:.3f} s", f"{builtin:.3f} s", f"{ours / builtin:.2f}x slower", "within 5x")
        return
    if args.tree is not None:
        files = sum(1 for _ in args.tree.rglob("*.py"))
        print(f"tree: {args.tree}, {files} .py files, {os.cpu_count()} CPUs")
        check, grep = bench_prefilter(args.tree, runs=args.runs)
        row(f"--check vs grep -rl (median of {args.runs})", f"{check:.3f} s", f"{grep:.3f} s",
            f"{check / grep:.2f}x slower", "within 2.5x")
        return
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
        per_file, bare = bench_per_file(all_work)
        row("per file needing work vs parse+codegen", f"{per_file * 1e3:.1f} ms",
            f"{bare * 1e3:.1f} ms", f"{per_file / bare:.2f}x", "within 1.5x")
        for label, tree, work in (("clean tree", root / "clean", []),
                                  ("tree with work", root / "work", injected)):
            rewritten, errors, status, seconds = whole_tree(tree, work)
            print(f"whole {label}: {rewritten} files rewritten, {errors} errors, "
                  f"--check afterwards exits {status}, {seconds:.2f} s", flush=True)
        ours, rename = bench_rename(root / "sample", timed=args.rename_timed)
        print(f"(RenameCommand run on {args.rename_timed} of the {args.sample} files, "
              "scaled linearly)")
        row(f"{args.sample}-file sample vs RenameCommand x3", f"{ours:.3f} s",
            f"{rename:.1f} s", f"{rename / ours:.0f}x faster", "at least 50x faster")


if __name__ == "__main__":
    main()
