"""Tests for the AUX501/AUX502 scanner that `--check` and `pytest --auxcheck` share."""

from __future__ import annotations

from pathlib import Path

import pytest

from auxcheck.migrate import scan_paths, scan_source
from auxcheck.report import Report

OLD = "sglang.srt.sampling.sampling_observer"
NEW = "sglang.srt.managers.auxiliary_output"

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
    (tmp_path / "broken.py").write_text(f"from {OLD} import (\n")
    report = scan_paths([str(tmp_path)])
    assert isinstance(report, Report)
    assert [(f.code, f.location) for f in report] == [
        ("AUX502", f"{tmp_path}/broken.py:1:1"), ("AUX501", f"{tmp_path}/plugin.py:1:1")]
