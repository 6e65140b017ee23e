"""Patch targets built by f-strings from the file's own module-level string constants
(``OLD = "old.module"``, then ``patch(f"{OLD}.X")``) are found; a name bound more than once
is never guessed at."""

from __future__ import annotations

from pathlib import Path

import pytest

from auxcheck.migrate import scan_paths, scan_source

HEAD = ('from unittest import mock\n'
        'OLD = "sglang.srt.sampling.sampling_observer"\n'
        'PKG = "sglang.srt.sampling"\n'
        'MOD = "sampling_observer"\n'
        'NAME = "CommittedTokens"\n'
        'TYPED: str = "sglang.srt.sampling.sampling_observer"\n')
"""Constants each assigned once; the use under test is on line 7."""

FOUND = {
    "the old module as a constant": 'mock.patch(f"{OLD}.CommittedTokens")\n',
    "a hook-registry colon target": 'mock.patch(f"{OLD}:CommittedTokens")\n',
    "a package constant and a literal tail": 'mock.patch(f"{PKG}.sampling_observer.CommittedTokens")\n',
    "three constants": 'mock.patch(f"{PKG}.{MOD}.{NAME}")\n',
    "the moved name as a constant": 'mock.patch(f"sglang.srt.sampling.sampling_observer.{NAME}")\n',
    "an annotated constant": 'mock.patch(f"{TYPED}.CommittedTokens")\n',
    "monkeypatch.setattr": 'def t(monkeypatch):\n    monkeypatch.setattr(f"{OLD}.CommittedTokens", 1)\n',
    "a conversion to str": 'mock.patch(f"{OLD!s}.CommittedTokens")\n',
}


@pytest.mark.parametrize("use", FOUND.values(), ids=FOUND.keys())
def test_an_fstring_of_module_constants_naming_a_moved_target_is_reported(use: str) -> None:
    """The f-string's value is known from constants assigned once: one AUX502 on its line."""
    found = scan_source(HEAD + use, path="p.py")
    assert [f.code for f in found] == ["AUX502"]
    assert found[0].location.startswith(f"p.py:{HEAD.count(chr(10)) + use.count(chr(10))}:")
    assert "sglang.srt.managers.auxiliary_output" in found[0].expected


UNKNOWN = {
    "a constant assigned twice": 'OLD = "sglang.srt.other"\nmock.patch(f"{OLD}.CommittedTokens")\n',
    "a constant rebound by a loop": 'for OLD in ("a",): pass\nmock.patch(f"{OLD}.CommittedTokens")\n',
    "a constant rebound in a function": ('def f():\n    global OLD\n    OLD = "x"\n'
                                         'mock.patch(f"{OLD}.CommittedTokens")\n'),
    "a local shadowing the constant": ('def f(OLD):\n    mock.patch(f"{OLD}.CommittedTokens")\n'),
    "a name that is not moved": 'mock.patch(f"{OLD}.NotMoved")\n',
}


@pytest.mark.parametrize("use", UNKNOWN.values(), ids=UNKNOWN.keys())
def test_an_fstring_whose_value_cannot_be_known_is_not_guessed(use: str) -> None:
    """A name bound more than once, a local, or a name not moved: nothing is reported."""
    assert scan_source(HEAD + use, path="p.py") == []


@pytest.mark.parametrize("use", FOUND.values(), ids=FOUND.keys())
def test_the_byte_prefilter_lets_every_such_file_through_to_the_scan(
        tmp_path: Path, use: str) -> None:
    """scan_paths (which parses only files the byte test passes) finds the same use."""
    (tmp_path / "plugin.py").write_text(HEAD + use, encoding="utf-8")
    assert [f.code for f in scan_paths([str(tmp_path)])] == ["AUX502"]


def test_a_whole_string_naming_an_old_module_s_last_part_alone_is_found_through_the_filter(
        tmp_path: Path) -> None:
    """A constant holding only the old module's last part (``MOD = "sampling_observer"``)
    used in ``f"{PKG}.{MOD}.X"`` is read, not turned away by the byte test."""
    source = ('from unittest import mock\nPKG = "sglang.srt.sampling"\n'
              'MOD = "sampling_observer"\nmock.patch(f"{PKG}.{MOD}.CommittedTokens")\n')
    (tmp_path / "plugin.py").write_text(source, encoding="utf-8")
    assert [f.location for f in scan_paths([str(tmp_path)])] == [f"{tmp_path}/plugin.py:4:12"]
