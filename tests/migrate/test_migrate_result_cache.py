"""The verdicts ``auxcheck migrate --check`` remembers between runs (auxcheck.migrate.results).

A remembered verdict stands in for reading, testing and parsing a file, so it must give
exactly what working the file afresh gives: the same findings, the same exit status, the same
bytes on stdout; a file edited since, or a cache file damaged, is worked on afresh; a rewrite
never reads the cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.releases import REAL_CACHE, real_tree

from auxcheck.cli import main
from auxcheck.migrate.moves import Move, MoveTable, builtin_moves
from auxcheck.migrate.results import Keyer, ResultCache
from auxcheck.migrate.runner import RunSummary, run

OLD = "sglang.srt.sampling.sampling_observer"
USE = f"from {OLD} import CommittedTokens\n"
MANY = MoveTable(tuple(
    Move(f"sglang.srt.old{i}", f"sglang.srt.new{i}", (f"Name{i}",)) for i in range(12)
) + builtin_moves().moves)
"""A table of more old modules than the cheap byte test looks for one by one: checking with
it, the workers run the finer test."""


def _cache(folder: Path, table: MoveTable = MANY) -> ResultCache:
    return ResultCache(lambda: folder, Keyer(table))


def _tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "uses.py").write_text(USE)
    (root / "pkg" / "mentions.py").write_text("# sampling_observer, nothing imported\n")
    for i in range(20):
        (root / "pkg" / f"clean{i}.py").write_text(f"x = {i}\n")
    return root


def _seen(summary: RunSummary) -> list[tuple[str, str, list[str]]]:
    return [(o.path, o.status, [f.to_text() for f in o.findings]) for o in summary.outcomes]


def _check(tree: Path, results: ResultCache | None, *, jobs: int = 2,
           table: MoveTable = MANY) -> RunSummary:
    return run([str(tree)], moves=table, mode="check", jobs=jobs, results=results)


def _cache_file(folder: Path) -> Path:
    (found,) = (folder / "migrate").glob("*.results")
    return found


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_remembered_run_gives_the_outcomes_of_an_uncached_one(tmp_path: Path,
                                                                jobs: int) -> None:
    """Cold (filling the cache), warm (reading it) and uncached runs agree outcome by outcome."""
    tree = _tree(tmp_path / "tree")
    uncached = _seen(_check(tree, None, jobs=jobs))
    cold = _seen(_check(tree, _cache(tmp_path / "cache"), jobs=jobs))
    warm = _seen(_check(tree, _cache(tmp_path / "cache"), jobs=jobs))
    assert uncached == cold == warm
    assert [p for p, status, _ in uncached if status == "changed"] == [
        str(tree / "pkg" / "uses.py")]


def test_files_the_workers_turn_away_leave_no_outcome(tmp_path: Path) -> None:
    """The workers' byte test keeps the summary as the parent's did: only files it let
    through have an outcome."""
    tree = _tree(tmp_path / "tree")
    summary = _check(tree, None)
    let_through = [p.name for p in sorted((tree / "pkg").iterdir())
                   if MANY.could_use(p.read_bytes())]
    assert summary.scanned == 22
    assert [Path(o.path).name for o in summary.outcomes] == let_through == ["uses.py"]


def test_a_warm_run_parses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every verdict of a second run over the same bytes comes from the cache."""
    tree = _tree(tmp_path / "tree")
    _check(tree, _cache(tmp_path / "cache"), jobs=1)

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("a remembered file was worked on again")

    monkeypatch.setattr("auxcheck.migrate.runner.migrate_file", fail)
    warm = _check(tree, _cache(tmp_path / "cache"), jobs=1)
    assert [Path(o.path).name for o in warm.changed] == ["uses.py"]


def test_a_file_edited_since_is_checked_afresh(tmp_path: Path) -> None:
    """The key is the file's bytes: an edit that adds a use is found on the next run."""
    tree = _tree(tmp_path / "tree")
    assert len(_check(tree, _cache(tmp_path / "cache")).changed) == 1
    (tree / "pkg" / "clean3.py").write_text(USE)
    assert len(_check(tree, _cache(tmp_path / "cache")).changed) == 2


def test_a_new_package_marker_changes_a_file_s_key(tmp_path: Path) -> None:
    """A file's module name comes from the ``__init__.py`` files above it: adding one makes
    the same bytes a new entry."""
    (tmp_path / "a").mkdir()
    keyer = Keyer(MANY)
    before = keyer(str(tmp_path / "a" / "m.py"), b"x")
    (tmp_path / "a" / "__init__.py").write_text("")
    assert Keyer(MANY)(str(tmp_path / "a" / "m.py"), b"x") != before


@pytest.mark.parametrize("damage", ["truncated", "a byte flipped", "not ours"])
def test_a_damaged_cache_file_is_ignored_and_written_again(tmp_path: Path, damage: str) -> None:
    """A cache file that does not match its digest is ignored whole; the run's outcomes are
    the uncached ones, and the file is written afresh."""
    tree = _tree(tmp_path / "tree")
    expected = _seen(_check(tree, _cache(tmp_path / "cache")))
    stored = _cache_file(tmp_path / "cache")
    data = stored.read_bytes()
    stored.write_bytes({"truncated": data[:-7], "a byte flipped": data[:-3] + b"X" + data[-2:],
                        "not ours": b"\x00garbage"}[damage])
    assert _seen(_check(tree, _cache(tmp_path / "cache"))) == expected
    assert _entries(stored) == _entries_of(data)


def _entries_of(data: bytes) -> object:
    return json.loads(data.partition(b"\n")[2])


def _entries(stored: Path) -> object:
    return _entries_of(stored.read_bytes())


def _forge(stored: Path, change: dict[str, object]) -> None:
    """Rewrites the cache file with ``change`` applied to every entry, its digest made to
    match (as a bug, not a damaged disk, would leave it)."""
    import hashlib

    head, _, body = stored.read_bytes().partition(b"\n")
    entries = {key: change.get(json.dumps(value), value)
               for key, value in json.loads(body).items()}
    body = json.dumps(entries).encode()
    stored.write_bytes(head.rsplit(b" ", 1)[0] + b" " + hashlib.sha256(body).hexdigest().encode()
                       + b"\n" + body)


def test_an_entry_of_the_wrong_shape_is_computed_afresh(tmp_path: Path) -> None:
    """An entry that is no verdict (a string, a finding missing a field) is not trusted: the
    file is worked on again and the entry replaced."""
    tree = _tree(tmp_path / "tree")
    expected = _seen(_check(tree, _cache(tmp_path / "cache"), jobs=1))
    stored = _cache_file(tmp_path / "cache")
    entries = _entries(stored)
    assert isinstance(entries, dict)
    (findings,) = [v for v in entries.values() if isinstance(v, list)]
    _forge(stored, {"0": "filtered", json.dumps(findings): [findings[0][:5]]})
    assert _seen(_check(tree, _cache(tmp_path / "cache"), jobs=1)) == expected
    assert _entries(stored) == entries


def test_a_rewrite_never_reads_the_cache(tmp_path: Path) -> None:
    """Even a cache saying a file needing work is clean does not stop its rewrite."""
    tree = _tree(tmp_path / "tree")
    _check(tree, _cache(tmp_path / "cache"), jobs=1)
    _forge(_cache_file(tmp_path / "cache"), {})  # same entries; then lie about uses.py:
    stored = _cache_file(tmp_path / "cache")
    head, _, body = stored.read_bytes().partition(b"\n")
    lie = {k: (0 if isinstance(v, list) else v) for k, v in json.loads(body).items()}
    stored.write_bytes(head + b"\n" + json.dumps(lie).encode())
    _forge(stored, {})
    done = run([str(tree)], moves=MANY, mode="write", jobs=1,
               results=_cache(tmp_path / "cache"))
    assert [Path(o.path).name for o in done.changed] == ["uses.py"]
    assert "auxiliary_output" in (tree / "pkg" / "uses.py").read_text()


@pytest.mark.slow
def test_on_sglang_s_own_tree_a_warm_check_prints_what_a_cold_one_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SGLang 0.5.19's own 3,500 files with the 2,400 names moved by 0.5.23 (as a ``--moves``
    file): the run that fills the cache and the run that reads it print the same bytes and
    exit alike, and both find what an uncached run finds."""
    from auxcheck._releases.moves_infer import moves_between, render_toml

    found = moves_between("0.5.19", "0.5.23", cache=REAL_CACHE, download=False)
    moves = tmp_path / "moves.toml"
    moves.write_text(render_toml(found))
    tree = real_tree("0.5.19")
    argv = ["migrate", "--check", "-q", "--moves", str(moves), "--cache", str(tmp_path / "c"),
            str(tree)]
    printed = []
    for _ in range(2):
        status = main(argv)
        printed.append((status, capsys.readouterr().out))
    assert printed[0] == printed[1] and printed[0][0] == 1
    uncached = run([str(tree)], moves=builtin_moves().merged(found.moves, source="x"),
                   mode="check")
    assert printed[0][1] == "".join(f.to_text() + "\n" for f in uncached.findings)
