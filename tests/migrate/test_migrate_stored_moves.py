"""Moves tables kept compactly between runs: a ``--moves`` file's, and the one inferred between
two releases (``store_moves`` / ``stored_moves``, ``moves_to_apply``).

A stored table stands in for parsing thousands of TOML tables or for the release index, so
reading it back must give exactly the moves the slow way gives; a damaged one is not used.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.releases import REAL_CACHE

from auxcheck.migrate.moves import Move, load_moves, store_moves, stored_moves

MOVES = (
    Move("mylib.legacy", "mylib.core", ("Thing", "Other"), "2.0"),
    Move("mylib.old", "mylib.new", ("Gadget",)),
)
FILE = """\
[[move]]
old = "mylib.legacy"
new = "mylib.core"
names = ["Thing", "Other"]
since = "2.0"

[[move]]
old = "mylib.old"
new = "mylib.new"
names = ["Gadget"]
"""


def test_stored_moves_read_back_equal(tmp_path: Path) -> None:
    """What store_moves writes, stored_moves returns, with the count of names left out."""
    store_moves(tmp_path / "t.table", MOVES, left_out=3)
    assert stored_moves(tmp_path / "t.table") == (MOVES, 3)


@pytest.mark.parametrize("damage", ["truncated", "a byte flipped", "empty"])
def test_a_damaged_stored_table_is_not_used(tmp_path: Path, damage: str) -> None:
    """A stored table that does not match its digest reads as absent."""
    store_moves(tmp_path / "t.table", MOVES)
    data = (tmp_path / "t.table").read_bytes()
    (tmp_path / "t.table").write_bytes({"truncated": data[:-4], "empty": b"",
                                        "a byte flipped": data[:-2] + b"#" + data[-1:]}[damage])
    assert stored_moves(tmp_path / "t.table") is None


def test_a_moves_file_read_through_the_cache_gives_the_same_table(tmp_path: Path) -> None:
    """The first load parses the TOML and stores its moves; the second reads them back; both
    tables equal the one read without a cache."""
    moves = tmp_path / "moves.toml"
    moves.write_text(FILE)
    plain = load_moves(moves_file=moves)
    first = load_moves(moves_file=moves, cache=lambda: tmp_path / "cache")
    (stored,) = (tmp_path / "cache" / "migrate").glob("moves-*.table")
    second = load_moves(moves_file=moves, cache=lambda: tmp_path / "cache")
    assert plain == first == second
    assert stored_moves(stored) == (MOVES, 0)


def test_an_edited_moves_file_is_read_afresh(tmp_path: Path) -> None:
    """The stored moves are keyed by the file's bytes: an edit is seen at once."""
    moves = tmp_path / "moves.toml"
    moves.write_text(FILE)
    load_moves(moves_file=moves, cache=lambda: tmp_path / "cache")
    moves.write_text(FILE.replace('"Gadget"', '"Gizmo"'))
    table = load_moves(moves_file=moves, cache=lambda: tmp_path / "cache")
    assert table.new_module_of("mylib.old", "Gizmo") == "mylib.new"
    assert table.new_module_of("mylib.old", "Gadget") is None


def test_a_malformed_moves_file_is_an_error_with_a_cache_too(tmp_path: Path) -> None:
    """Nothing is stored for a file that does not parse, and the error is the usual one."""
    from auxcheck.errors import MovesTableError

    moves = tmp_path / "moves.toml"
    moves.write_text(FILE.replace('"mylib.core"', '"mylib.legacy"'))
    with pytest.raises(MovesTableError, match="'old' and 'new' are the same module"):
        load_moves(moves_file=moves, cache=lambda: tmp_path / "cache")
    assert not (tmp_path / "cache" / "migrate").exists()


def test_the_release_pair_s_stored_table_holds_what_inference_finds() -> None:
    """For SGLang 0.5.19 -> 0.5.23, the table read without opening either wheel holds the
    moves, and the count of names left out, that the full document gives."""
    from auxcheck._releases.moves_infer import moves_between, moves_to_apply

    full = moves_between("0.5.19", "0.5.23", cache=REAL_CACHE, download=False)
    quick = moves_to_apply("0.5.19", "0.5.23", cache=REAL_CACHE, download=False)
    assert quick == (full.moves, len(full.left_out))
