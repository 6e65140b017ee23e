"""A cached release index that cannot be used (wrong shape, wrong types, nested past Python's
stack) is treated as absent: rebuilt from the release, never trusted, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.releases import write_release

from auxcheck._releases.index import INDEX_FORMAT, ReleaseIndex
from auxcheck.releases import Release

FILES = {
    "sglang/version.py": "__version__ = '0.0.1'\n",
    "sglang/srt/a.py": "from sglang.srt.b import Moved\nclass A: ...\n",
    "sglang/srt/b.py": "class Moved: ...\n",
}

GOOD = {"name": "sglang.srt.a", "package": False, "defined": {"A": "class"},
        "imported": {"Moved": ["sglang.srt.b", "Moved"]}, "stars": [], "exports": None,
        "type_checking": [], "dynamic": False, "uses": [["sglang.srt.b", "Moved"]]}
"""A well-formed entry, altered one field at a time below."""


def entry(**changes: object) -> str:
    """Returns a cache document of one entry: GOOD with ``changes`` (None-valued keys dropped)."""
    data = {**GOOD, **changes}
    return json.dumps([{k: v for k, v in data.items() if v != "<drop>"}])


HOSTILE = {
    "a dict, not a list": "{}",
    "a list of numbers": "[1, 2]",
    "an entry missing keys": json.dumps([{"name": "sglang.srt.a"}]),
    "a name that is a number": entry(name=1),
    "a package flag that is a string": entry(package="no"),
    "defined as a list": entry(defined=["A"]),
    "a defined kind that is not one": entry(defined={"A": 5}),
    "a defined kind that is a list": entry(defined={"A": []}),
    "an import origin of three parts": entry(imported={"Moved": ["a", "b", "c"]}),
    "an import origin that is a string": entry(imported={"Moved": "sglang.srt.b"}),
    "stars as a string": entry(stars="sglang.srt.b"),
    "exports of numbers": entry(exports=[1]),
    "type_checking as a dict": entry(type_checking={}),
    "dynamic as a number": entry(dynamic=1),
    "uses of single names": entry(uses=[["x"]]),
    "an extra key": json.dumps([{**GOOD, "surprise": 1}]),
    "a missing key": entry(dynamic="<drop>"),
    "100,000 nested lists": "[" * 100_000 + "]" * 100_000,
    "100,000 nested objects": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "not JSON": "[{",
    "not UTF-8": "\udcff",
}


def cache_file(release: Release, cache: Path) -> Path:
    """Returns the cache file of ``release``'s index, written once by a first load."""
    ReleaseIndex(release, cache=cache).load_all(jobs=1)
    found = list((cache / "index").glob(f"*-f{INDEX_FORMAT}.json"))
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_an_unusable_index_cache_is_rebuilt_never_trusted(tmp_path: Path, text: str) -> None:
    """The index reads the release again, answers as from a fresh parse, and caches it anew."""
    release = Release.from_source(write_release(tmp_path / "release", FILES))
    stored = cache_file(release, tmp_path / "cache")
    fresh = stored.read_text(encoding="utf-8")
    stored.write_bytes(text.encode("utf-8", "surrogateescape"))
    index = ReleaseIndex(release, cache=tmp_path / "cache")
    index.load_all(jobs=1)
    assert index.provides("sglang.srt.a", "A").where == "sglang.srt.a.A"
    assert index.provides("sglang.srt.a", "Moved").where == "sglang.srt.b.Moved"
    assert sorted(s.name for s in index.summaries()) == ["sglang.srt.a", "sglang.srt.b",
                                                         "sglang.version"]
    assert json.loads(stored.read_text(encoding="utf-8")) == json.loads(fresh)


def test_a_well_formed_cache_is_still_read_instead_of_the_release(tmp_path: Path) -> None:
    """A cache of the right shape is trusted: what it says is what the index answers."""
    release = Release.from_source(write_release(tmp_path / "release", FILES))
    stored = cache_file(release, tmp_path / "cache")
    stored.write_text(entry(defined={"A": "class", "Only": "function"}), encoding="utf-8")
    index = ReleaseIndex(release, cache=tmp_path / "cache")
    index.load_all(jobs=1)
    assert index.provides("sglang.srt.a", "Only").kind == "function"
