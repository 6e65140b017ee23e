"""SGLang's call sites of a target, cached on disk beside the release's index.

A warm run reads them from the cache instead of parsing SGLang's modules; an entry is read
only for the release and the auxcheck code that wrote it, and one that is damaged or not
what auxcheck writes is recomputed, never trusted.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.releases import write_release

from auxcheck._core.signatures import CallShape
from auxcheck._releases.call_sites import call_sites
from auxcheck._releases.definitions import callee
from auxcheck._releases.derived_cache import save_cached
from auxcheck._releases.index import ReleaseIndex
from auxcheck.releases import Release

TARGET = "sglang.srt.pool.Pool.put"
FILES = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/pool.py": textwrap.dedent("""
        class Pool:
            def put(self, a, b=None):
                return a
        """),
    "sglang/srt/user.py": textwrap.dedent("""
        from sglang.srt.pool import Pool


        def use(pool: Pool):
            return pool.put(1, b=2)
        """),
}


def _release(root: Path, version: str = "0.5.23", calls: str = "pool.put(1, b=2)") -> Release:
    files = {**FILES, "sglang/srt/user.py": FILES["sglang/srt/user.py"].replace(
        "pool.put(1, b=2)", calls)}
    return Release.from_wheel(write_release(root, files, wheel=True), version=version)


def _sites(release: Release, cache: Path, parsed: list[str] | None = None) -> list[CallShape]:
    """Returns the typed call sites of Pool.put read by a fresh index, then saves them;
    ``parsed`` gathers the modules that index parsed."""
    index = ReleaseIndex(release, cache=cache)
    if parsed is not None:
        tree = index.tree

        def counted(module: str) -> object:
            parsed.append(module)
            return tree(module)

        index.tree = counted  # type: ignore[assignment, method-assign]
    target = callee(index, TARGET)
    if target is None:
        raise AssertionError(f"{TARGET} does not resolve")
    found = call_sites(index, target, typed=True)
    save_cached(index)
    return found


def _cached(cache: Path) -> Path:
    (found,) = (cache / "index").glob("*-derived-*.json")
    return found


def test_a_warm_index_reads_call_sites_from_the_cache_without_parsing_sglang(
    tmp_path: Path,
) -> None:
    """The second index of a release gets the same call sites, and never parses the module
    that makes the call."""
    release, cache = _release(tmp_path / "r"), tmp_path / "cache"
    cold: list[str] = []
    first = _sites(release, cache, cold)
    warm: list[str] = []
    second = _sites(release, cache, warm)
    assert [(s.positional, s.keywords, s.where) for s in first] == [
        (2, ("b",), "sglang/srt/user.py:6")]
    assert second == first
    assert "sglang.srt.user" in cold
    assert "sglang.srt.user" not in warm


def _sites_of(data: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = data["sections"]["call_sites"]
    return found


def _forged(data: dict[str, Any]) -> None:
    sites = _sites_of(data)
    for key in sites:
        sites[key] = [[9, ["forged"], None, "forged.py:1"]]


def _set(field: int, value: object) -> Callable[[dict[str, Any]], None]:
    def tamper(data: dict[str, Any]) -> None:
        for entries in _sites_of(data).values():
            entries[0][field] = value
    return tamper


def _three_fields(data: dict[str, Any]) -> None:
    for entries in _sites_of(data).values():
        entries[0].pop()


def _code(data: dict[str, Any]) -> None:
    _forged(data)
    data["code"] = "0123456789abcdef"  # another auxcheck wrote it


def _format(data: dict[str, Any]) -> None:
    _forged(data)
    data["format"] = 999


TAMPERED: dict[str, Callable[[dict[str, Any]], None]] = {
    "written by other auxcheck code": _code,
    "another cache format": _format,
    "positional count a string": _set(0, "2"),
    "positional count a bool": _set(0, True),
    "negative positional count": _set(0, -1),
    "keywords not a list": _set(1, "b"),
    "a keyword not a string": _set(1, [2]),
    "an unknown way through": _set(2, "sideways"),
    "a location not a string": _set(3, None),
    "sections not a mapping": lambda data: data.update(sections=[1, 2]),
    "call sites not a mapping": lambda data: data["sections"].update(call_sites=[1, 2]),
    "an entry not a list": lambda data: _sites_of(data).update(
        {key: {"positional": 2} for key in _sites_of(data)}),
    "an entry of three fields": _three_fields,
}


@pytest.mark.parametrize("tamper", TAMPERED.values(), ids=TAMPERED.keys())
def test_a_cache_entry_that_is_not_what_auxcheck_wrote_is_recomputed(
    tmp_path: Path, tamper: Callable[[dict[str, Any]], None],
) -> None:
    """A damaged, foreign or stale entry is never trusted: the call sites are read from the
    release again, and the cache is written back whole."""
    release, cache = _release(tmp_path / "r"), tmp_path / "cache"
    true = _sites(release, cache)
    stored = _cached(cache)
    data = json.loads(stored.read_text(encoding="utf-8"))
    tamper(data)
    stored.write_text(json.dumps(data), encoding="utf-8")
    parsed: list[str] = []
    assert _sites(release, cache, parsed) == true
    assert "sglang.srt.user" in parsed
    again: list[str] = []
    assert _sites(release, cache, again) == true
    assert "sglang.srt.user" not in again


@pytest.mark.parametrize("text", ["", "{", "[]", "null", "\x00\x01"],
                         ids=["empty", "half", "a list", "null", "binary"])
def test_an_unreadable_cache_file_is_recomputed(tmp_path: Path, text: str) -> None:
    """A cache file that is not JSON, or not the object auxcheck writes, is read past."""
    release, cache = _release(tmp_path / "r"), tmp_path / "cache"
    true = _sites(release, cache)
    _cached(cache).write_text(text, encoding="utf-8")
    assert _sites(release, cache) == true


def test_another_release_never_reads_the_call_sites_of_one_cached_before(
    tmp_path: Path,
) -> None:
    """Two releases sharing one cache folder each get their own call sites."""
    cache = tmp_path / "cache"
    old = _sites(_release(tmp_path / "old", "0.5.19", "pool.put(1)"), cache)
    new = _sites(_release(tmp_path / "new", "0.5.23", "pool.put(1, b=2)"), cache)
    assert [(s.positional, s.keywords) for s in old] == [(2, ())]
    assert [(s.positional, s.keywords) for s in new] == [(2, ("b",))]
    assert len(list((cache / "index").glob("*-derived-*.json"))) == 2


BAD_CALLEES: dict[str, object] = {
    "an unknown kind": [TARGET, "lambda", [["self", "POSITIONAL_OR_KEYWORD", None]],
                        "sglang/srt/pool.py:3", "sglang.srt.pool.Pool", []],
    "a parameter of an unknown kind": [TARGET, "method", [["self", "SIDEWAYS", None]],
                                       "sglang/srt/pool.py:3", "sglang.srt.pool.Pool", []],
    "parameters not a list": [TARGET, "method", "self", "sglang/srt/pool.py:3", None, []],
    "five fields": [TARGET, "method", [], "sglang/srt/pool.py:3", None],
    "a number": 7,
}


@pytest.mark.parametrize("entry", BAD_CALLEES.values(), ids=BAD_CALLEES.keys())
def test_a_cached_callee_that_is_not_what_auxcheck_wrote_is_read_again(
    tmp_path: Path, entry: object,
) -> None:
    """A callee's cached parameters are taken only in the shape auxcheck writes them."""
    release, cache = _release(tmp_path / "r"), tmp_path / "cache"
    _sites(release, cache)
    stored = _cached(cache)
    data = json.loads(stored.read_text(encoding="utf-8"))
    data["sections"]["callee"][TARGET] = entry
    stored.write_text(json.dumps(data), encoding="utf-8")
    found = callee(ReleaseIndex(release, cache=cache), TARGET)
    assert found is not None
    assert (found.kind, [p.name for p in found.params], found.owner) == (
        "method", ["self", "a", "b"], "sglang.srt.pool.Pool")


def test_a_source_tree_edited_below_its_folder_is_read_afresh(tmp_path: Path) -> None:
    """A source tree's call sites are never cached on disk: an edit deep in the tree (which
    its folder's fingerprint does not see) shows on the next run."""
    root, cache = write_release(tmp_path / "tree", FILES), tmp_path / "cache"
    release = Release.from_source(root, version="0.5.23")
    assert [(s.positional, s.keywords) for s in _sites(release, cache)] == [(2, ("b",))]
    user = root / "sglang" / "srt" / "user.py"
    user.write_text(FILES["sglang/srt/user.py"].replace("pool.put(1, b=2)", "pool.put(1)"),
                    encoding="utf-8")
    again = Release.from_source(root, version="0.5.23")
    assert [(s.positional, s.keywords) for s in _sites(again, cache)] == [(2, ())]
    assert list((cache / "index").glob("*-derived-*.json")) == []
