"""Tests for the AUX501/AUX502/AUX504 scanner that `--check` and `pytest --auxcheck` share."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.broken_files import BROKEN, IMPORT, Broken, write_broken
from helpers.plugin_sources import NEW, OLD

from auxcheck.migrate import builtin_moves, scan_paths, scan_source
from auxcheck.migrate.scan import rewrite_string, target_spans
from auxcheck.report import Report
from auxcheck.rules import RULES

FOUND = {
    "from-import": (f"from {OLD} import CommittedTokens\n", [("AUX501", "1:1")]),
    "two names, one statement": ((f"x = 1\nfrom {OLD} import CommittedTokens, "
                                 "HostAuxiliaryOutput\n"), [("AUX501", "2:1")] * 2),
    "module attribute": (f"import {OLD} as so\n\ny = so.DeviceAuxiliaryOutput\n",
                         [("AUX501", "3:5")]),
    "dotted string": (f'patch("{OLD}.CommittedTokens")\n', [("AUX501", "1:7")]),
    "star import": (f"from {OLD} import *\n", [("AUX502", "1:1")]),
    "dynamic import": (f'import importlib\nm = importlib.import_module("{OLD}")\n',
                       [("AUX502", "2:5")]),
    "nothing moved": (f"from {OLD} import SamplingObserver\n", []),
    "compat fallback": ((f"try:\n    from {NEW} import CommittedTokens\nexcept ImportError:\n"
                        f"    from {OLD} import CommittedTokens\n"), []),
}


@pytest.mark.parametrize("source", [
    pytest.param(f"from {OLD} import *\n", id="star-import"),
    pytest.param(f'import importlib\nm = importlib.import_module("{OLD}")\n', id="dynamic-import"),
])
def test_aux502_names_what_moved_and_where_without_repeating_its_fix(source: str) -> None:
    """A use that needs a human says which names moved and to which module (as `auxcheck
    moves` would), so the message is more than its rule's fix said twice."""
    [finding] = scan_source(source, path="p.py")
    assert finding.expected == ("the names that moved imported from their new home "
                                "(CommittedTokens, DeviceAuxiliaryOutput and "
                                f"HostAuxiliaryOutput from {NEW})"
                                + (" and the star import dropped" if "*" in source else ""))
    assert finding.hint not in finding.message


@pytest.mark.parametrize(("source", "expected"), FOUND.values(), ids=FOUND.keys())
def test_each_remaining_use_is_one_located_finding(source: str,
                                                  expected: list[tuple[str, str]]) -> None:
    """Every old use is reported once with its code and line:col; clean code yields nothing."""
    found = scan_source(source, path="p.py")
    assert [(f.code, f.location) for f in found] == [
        (code, f"p.py:{where}") for code, where in expected]


def test_scan_paths_returns_a_report_and_skips_defining_modules(tmp_path: Path) -> None:
    """scan_paths reports plugin files and never the modules that define the moved names."""
    sampling = tmp_path / "sglang" / "srt" / "sampling"
    sampling.mkdir(parents=True)
    (sampling / "sampling_observer.py").write_text(f"from {OLD} import CommittedTokens\n")
    (tmp_path / "plugin.py").write_text(f"from {OLD} import CommittedTokens\n")
    (tmp_path / "broken.py").write_text(f"from {OLD} import (CommittedTokens\n")
    report = scan_paths([str(tmp_path)])
    assert isinstance(report, Report)
    assert [(f.code, f.location) for f in report] == [
        ("AUX504", f"{tmp_path}/broken.py:1:51"), ("AUX501", f"{tmp_path}/plugin.py:1:1")]


# ---------------------------------------------------------------- AUX504: broken files

@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_file_is_one_aux504_finding_at_the_parsers_position(
        tmp_path: Path, case: Broken) -> None:
    """scan_paths reports a file it cannot read, decode or parse as AUX504, where it broke."""
    path = write_broken(tmp_path, case)
    (tmp_path / "plugin.py").write_bytes(IMPORT)
    report = scan_paths([str(tmp_path)])
    assert [(f.code, f.location) for f in report] == [
        ("AUX504", f"{path}:{case.where}"), ("AUX501", f"{tmp_path}/plugin.py:1:1")]
    broken = report.findings[0]
    assert broken.message.startswith(case.seen + "; expected ")
    assert broken.hint == RULES["AUX504"].hint


def test_a_broken_file_naming_no_old_module_is_not_reported_by_default(tmp_path: Path) -> None:
    """Without an old module's name a file is never parsed, unless every_file is set."""
    (tmp_path / "other.py").write_text("def f(:\n")
    assert scan_paths([str(tmp_path)]).findings == []
    assert [(f.code, f.location) for f in scan_paths([str(tmp_path)], every_file=True)] == [
        ("AUX504", f"{tmp_path}/other.py:1:7")]


TARGETS = {
    "a mock.patch target": (f"{OLD}.CommittedTokens", f"{NEW}.CommittedTokens"),
    "a hook target with a colon": (f"{OLD}:HostAuxiliaryOutput", f"{NEW}:HostAuxiliaryOutput"),
    "a method of a moved class keeps its tail": (
        f"{OLD}.CommittedTokens.__init__", f"{NEW}.CommittedTokens.__init__"),
    "two targets in one string": (
        f"{OLD}.CommittedTokens or {OLD}.HostAuxiliaryOutput",
        f"{NEW}.CommittedTokens or {NEW}.HostAuxiliaryOutput"),
    "a name that stayed": (f"{OLD}.SamplingObserver", None),
    "a longer name that only starts like a moved one": (f"{OLD}.CommittedTokensX", None),
    "the old module inside a longer dotted name": (f"x.{OLD}.CommittedTokens", None),
    "no package named at all": ("CommittedTokens", None),
}


@pytest.mark.parametrize(("text", "expected"), TARGETS.values(), ids=TARGETS.keys())
def test_dotted_targets_of_moved_names_point_at_the_new_module(
        text: str, expected: str | None) -> None:
    """A string naming old.X or old:X for a moved X is rewritten there, and nothing else is."""
    moves = builtin_moves()
    assert rewrite_string(text, moves) == expected
    assert bool(target_spans(text, moves)) is (expected is not None)


CANDIDATES = {
    "an import of a moved name": (f"from {OLD} import CommittedTokens\n", True),
    "an import of a name that stayed only": (f"from {OLD} import SamplingObserver\n", False),
    "a star import": (f"from {OLD} import *\n", True),
    "a star import without a space": (f"from {OLD} import*\n", True),
    "a dynamic import": (f"importlib.import_module('{OLD}')\n", True),
    "a moved name without the old module": ("CommittedTokens = 1\n", False),
    "a module alias used for a moved name": (
        "from sglang.srt.sampling import sampling_observer as so\nso.HostAuxiliaryOutput\n",
        True),
}


@pytest.mark.parametrize(("text", "expected"), CANDIDATES.values(), ids=CANDIDATES.keys())
def test_only_files_that_can_hold_a_use_are_parsed(text: str, expected: bool) -> None:
    """The byte prefilter passes a file naming an old module and a moved name (or a star or
    dynamic import), and nothing else; what it passes over has no finding to give."""
    moves = builtin_moves()
    assert moves.could_use(text.encode()) is expected
    if not expected:
        assert scan_source(text, moves=moves) == []
