"""`make bench`: every benchmark reports its targets in the one form run_all collects, and the
table in docs/benchmarks.md is the one its last recorded run wrote."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"


@pytest.fixture(scope="module", autouse=True)
def benchmarks_on_path() -> Iterator[None]:
    """The benchmarks are scripts that import their helpers from their own folder."""
    sys.path.insert(0, str(BENCHMARKS))
    yield
    sys.path.remove(str(BENCHMARKS))


@pytest.mark.parametrize(("kwargs", "ratio", "target", "verdict"), [
    ({"at_most": 2.0}, "1.50x", "<= 2x", "met"),
    ({"at_most": 1.2}, "1.50x", "<= 1.2x", "missed"),
    ({"at_least": 1.0}, "0.7x faster", ">= 1x faster", "missed"),
    ({"target": "< 5 ms per object", "met": True}, "1.50x", "< 5 ms per object", "met"),
    ({}, "1.50x", "-", "-"),
], ids=["ratio-met", "ratio-missed", "speed-up-missed", "own-target", "no-target"])
def test_a_result_line_reads_back_as_the_row_run_all_collects(
        capsys: pytest.CaptureFixture[str], kwargs: dict[str, object], ratio: str, target: str,
        verdict: str) -> None:
    """What a benchmark prints with result_line is what run_all's table shows, verdict included."""
    from _timing import result_line
    from run_all import parse_result

    held = result_line("thing vs its baseline", 3.0, 2.0, **kwargs)  # type: ignore[arg-type]
    [line] = capsys.readouterr().out.splitlines()
    result = parse_result("demo", line)
    assert result is not None
    assert (result.what, result.measured, result.baseline, result.ratio, result.target,
            result.verdict) == ("thing vs its baseline", "3 s", "2 s", ratio, target, verdict)
    assert result.setting in ("written", "not written")
    assert held is (verdict != "missed")


def test_a_line_that_is_no_result_is_not_collected() -> None:
    """Tables and prose a benchmark prints around its results are shown, never parsed."""
    from run_all import parse_result

    assert parse_result("demo", "| run | seconds |") is None
    assert parse_result("demo", "RESULT | too | few | fields") is None


@pytest.mark.parametrize(("setting", "value"), [("written", None), ("not written", "1")])
def test_each_bytecode_setting_runs_its_benchmarks_with_or_without_writing_bytecode(
        monkeypatch: pytest.MonkeyPatch, setting: str, value: str | None) -> None:
    """The two settings a user meets: PYTHONDONTWRITEBYTECODE unset, and set (as here)."""
    from run_all import environment

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    assert environment(setting).get("PYTHONDONTWRITEBYTECODE") == value
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE")
    assert environment(setting).get("PYTHONDONTWRITEBYTECODE") == value


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("bench_*.py")), ids=lambda p: p.stem)
def test_every_benchmark_reports_its_figures_as_results(path: Path) -> None:
    """`make bench` collects RESULT lines: a benchmark without one would run unreported."""
    calls = {node.func.id for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert "result_line" in calls


def recorded_block(text: str) -> str:
    """Returns what lies between the make-bench markers of a page."""
    from run_all import BEGIN, END

    found = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), text, re.DOTALL)
    assert found is not None, f"no {BEGIN} ... {END} block"
    return found[1]


def test_the_table_in_the_docs_is_the_one_the_last_make_bench_recorded() -> None:
    """docs/benchmarks.md quotes the last recorded run word for word, commit and date
    included, and that run ran every benchmark under both bytecode settings."""
    from run_all import SETTINGS

    docs = recorded_block((REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8"))
    record = (BENCHMARKS / "last-run.md").read_text(encoding="utf-8")
    assert docs in record
    rows = [line.split("|") for line in docs.splitlines() if line.startswith("| ")][1:]
    ran = {(cells[1].strip(), cells[3].strip()) for cells in rows}
    benches = {path.stem.removeprefix("bench_") for path in BENCHMARKS.glob("bench_*.py")}
    assert ran == {(bench, setting) for bench in benches for setting in SETTINGS}


def test_a_record_is_refused_for_every_uncommitted_change_but_the_two_it_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make bench` records figures only for a commit: a change listed first by `git status`
    (whose line starts with a space) counts like any other; the two files it writes do not."""
    import subprocess

    import run_all

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args],
                       cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "docs").mkdir()
    (tmp_path / "benchmarks").mkdir()
    for name in ("a.py", "docs/benchmarks.md", "benchmarks/last-run.md", "old name.py"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "start")
    monkeypatch.setattr(run_all, "ROOT", tmp_path)
    assert run_all.uncommitted() == []
    (tmp_path / "docs" / "benchmarks.md").write_text("recorded\n", encoding="utf-8")
    (tmp_path / "benchmarks" / "last-run.md").write_text("recorded\n", encoding="utf-8")
    assert run_all.uncommitted() == []
    (tmp_path / "a.py").write_text("changed\n", encoding="utf-8")
    (tmp_path / "new.py").write_text("new\n", encoding="utf-8")
    git("mv", "old name.py", "new name.py")
    assert sorted(run_all.uncommitted()) == ["a.py", "new name.py", "new.py"]
