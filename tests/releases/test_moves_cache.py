"""The moves inferred between two releases are cached: a second run reads them, never stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.releases import write_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.moves_infer import InferredMoves, moves_between, render_json
from auxcheck.migrate.moves import Move

BEFORE = {
    "sglang/version.py": "__version__ = '0.0.1'\n",
    "sglang/srt/old.py": "class Moved: ...\nclass Other: ...\n",
    "sglang/srt/a.py": "class Twice: ...\n",
    "sglang/srt/b.py": "from sglang.srt.a import Twice\n",
}
AFTER = {
    "sglang/version.py": "__version__ = '0.0.2'\n",
    "sglang/srt/old.py": "",
    "sglang/srt/new.py": "class Moved: ...\n",
    "sglang/srt/other1.py": "class Other: ...\n",
    "sglang/srt/other2.py": "class Other: ...\n",
    "sglang/srt/a.py": "class Twice: ...\n",
    "sglang/srt/b.py": "from sglang.srt.a import Twice\n",
}


def _between(tmp_path: Path, after: dict[str, str] | None = None) -> InferredMoves:
    """Returns the moves from BEFORE (a folder) to ``after`` (AFTER by default; a wheel),
    each written once: a release written again is a new release to the cache."""
    before_tree = tmp_path / "a"
    if not before_tree.exists():
        write_release(before_tree, BEFORE)
    name = "b" if after is None else "c"
    if not (tmp_path / name).exists():
        write_release(tmp_path / name, AFTER if after is None else after, wheel=True)
    wheel = next((tmp_path / name).glob("*.whl"))
    return moves_between("0.0.1", "0.0.2", sources=[before_tree], wheels=[wheel],
                         download=False, cache=tmp_path / "cache")


def _cached(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "index").glob("moves-*.json"))


def test_a_second_run_reads_the_moves_from_the_cache(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every field comes back: the moves, the names left out with their candidates (Other:
    two homes, neither preferred), the gone ones, the homes chosen among several."""
    first = _between(tmp_path)
    assert ([m.names for m in first.moves], [x.name for x in first.left_out],
            len(_cached(tmp_path))) == ([("Moved",)], ["Other"], 1)
    monkeypatch.setattr(ReleaseIndex, "load_all", None)  # calling it would raise TypeError
    assert _between(tmp_path) == first


@pytest.mark.parametrize("damage", ["not json {", "[]", '{"from": "0.0.1"}',
                                    '{"from": 1, "to": 2, "moves": [{"old": 3}]}'],
                         ids=["not JSON", "a list", "keys missing", "wrong shapes"])
def test_a_damaged_cache_entry_is_inferred_again(tmp_path: Path, damage: str) -> None:
    first = _between(tmp_path)
    [entry] = _cached(tmp_path)
    entry.write_text(damage)
    assert _between(tmp_path) == first
    assert json.loads(entry.read_text()) == json.loads(render_json(first))


def test_a_changed_release_is_not_answered_from_the_cache(tmp_path: Path) -> None:
    """The entry is keyed by both releases' fingerprints: a wheel built again differently
    gets its own moves."""
    _between(tmp_path)
    changed = {**AFTER, "sglang/srt/new.py": "", "sglang/srt/newer.py": "class Moved: ...\n"}
    found = _between(tmp_path, changed)
    assert found.moves == (Move("sglang.srt.old", "sglang.srt.newer", ("Moved",), "0.0.2"),)
    assert len(_cached(tmp_path)) == 2


WRONG_TYPES = {
    "names-a-string": ("moves", "names", "ab"),
    "since-a-number": ("moves", "since", 5),
    "new-a-list": ("moves", "new", ["sglang.srt.new"]),
    "candidates-a-string": ("left_out", "candidates", "xy"),
    "candidates-of-numbers": ("left_out", "candidates", [1, 2]),
    "gone-name-null": ("gone", "name", None),
    "chosen-definers-a-string": ("chosen", "definers", "ab"),
    "chosen-why-a-number": ("chosen", "why", 3),
}

WELL_SHAPED = {"gone": {"old": "sglang.srt.x", "name": "X"},
               "chosen": {"old": "sglang.srt.x", "name": "X", "new": "sglang.srt.y",
                          "definers": ["sglang.srt.y"], "why": "w"}}
"""An entry of each field the first run leaves empty, as ``render_json`` writes one."""


@pytest.mark.parametrize(("field", "key", "value"), WRONG_TYPES.values(), ids=WRONG_TYPES.keys())
def test_a_cache_entry_with_wrong_value_types_is_inferred_again(
        tmp_path: Path, field: str, key: str, value: object) -> None:
    """An entry of the right keys but the wrong value types (``"names": "ab"`` would read as
    the names ``a`` and ``b``) is no answer: the moves are inferred again and rewritten."""
    first = _between(tmp_path)
    [entry] = _cached(tmp_path)
    document = json.loads(entry.read_text())
    document[field] = document[field] or [WELL_SHAPED[field]]
    document[field][0][key] = value
    entry.write_text(json.dumps(document))
    assert _between(tmp_path) == first
    assert json.loads(entry.read_text()) == json.loads(render_json(first))
