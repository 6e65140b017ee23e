"""`auxcheck check`: one finding per cause across its stages, located relative to the project."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.paths import EXAMPLES
from helpers.releases import REAL_CACHE, real_release

from auxcheck._check.findings import (
    Causes,
    StageFinding,
    mypy_subjects,
    parse_mypy,
)
from auxcheck.cli.check import main

OLD_IMPORT = "from sglang.srt.sampling.sampling_observer import CommittedTokens"
"""An import of a name SGLang moved, from the module it left (AUX501)."""
HOOKS_IMPORT = "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n"
"""The line of capture_plugin's hooks.py the old import is put after (it becomes line 15)."""
CAUSE = "imports: AUX501 at capture_plugin/hooks.py:15"
"""How a finding of a later stage names the imports stage's finding of that old import."""
QUICK = ["--", "-p", "no:randomly", "-k", "(AUX104-single-copy or imports) and not impl"]
"""Arguments that narrow the contract stage to a few items, to keep these tests fast."""


def with_old_import(example: Callable[[str], Path], extra: str = "") -> Path:
    """Returns a copy of capture_plugin whose hooks.py imports CommittedTokens from its old
    module on line 15 (then ``extra`` at its end)."""
    project = example("capture_plugin")
    hooks = project / "capture_plugin" / "hooks.py"
    text = hooks.read_text()
    assert HOOKS_IMPORT in text
    hooks.write_text(text.replace(HOOKS_IMPORT, HOOKS_IMPORT + OLD_IMPORT + "\n") + extra)
    assert hooks.read_text().splitlines()[14] == OLD_IMPORT
    return project


def check(capsys: pytest.CaptureFixture[str], *args: str,
          fmt: str = "json") -> tuple[int, dict[str, dict[str, object]] | str]:
    """Returns the exit status and, by stage, the JSON document of an in-process run (or
    its text output)."""
    status = main(["--format", fmt, "-q", *args])
    out = capsys.readouterr().out
    if fmt == "text":
        return status, out
    return status, {s["stage"]: s for s in json.loads(out)["stages"]}


@pytest.mark.slow
def test_an_old_import_is_one_finding_that_the_other_stages_refer_to(
        example: Callable[[str], Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: one old import fails only the imports stage; mypy's error, the
    contract's imports item and the release's AUX503 refer to its finding, uncounted."""
    project = with_old_import(example)
    real_release("0.5.23")
    status, by_stage = check(capsys, str(project), "--sglang", "0.5.23", "--cache",
                             str(REAL_CACHE), *QUICK)
    assert isinstance(by_stage, dict)
    imports, mypy, contract, releases = (by_stage[s] for s in
                                         ("imports", "mypy", "contract", "sglang"))
    assert status == 1
    assert [(f["code"], f["path"], f["line"]) for f in imports["findings"]] == [  # type: ignore[attr-defined]
        ("AUX501", "capture_plugin/hooks.py", 15)]
    assert (mypy["result"], mypy["counts"]["errors"], mypy["counts"]["referred"]) == (  # type: ignore[index]
        "ok", 0, 1)
    assert (contract["result"], contract["counts"]["failed"], contract["counts"]["referred"]) == (  # type: ignore[index]
        "ok", 0, 1)
    assert (releases["result"], releases["counts"]["findings"], releases["counts"]["referred"]) == (  # type: ignore[index]
        "ok", 0, 1)
    for stage in (mypy, contract, releases):
        assert stage["findings"] == []
        assert [f["see"] for f in stage["referred"]] == [CAUSE]  # type: ignore[attr-defined]
    assert [f["code"] for f in mypy["referred"]] == ["mypy:attr-defined"]  # type: ignore[attr-defined]
    assert [f["code"] for f in releases["referred"]] == ["AUX503"]  # type: ignore[attr-defined]
    assert "sglang 0.5.23: " in releases["referred"][0]["message"]  # type: ignore[index]


@pytest.mark.slow
def test_the_text_output_says_the_cause_once_and_the_verdict_fails_on_imports(
        example: Callable[[str], Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The text names the old import once (the imports stage), each later stage says what
    it did not count, and the verdict fails on the imports stage alone."""
    project = with_old_import(example)
    status, out = check(capsys, str(project), "--skip", "sglang", *QUICK, fmt="text")
    assert isinstance(out, str)
    assert status == 1
    assert out.count("CommittedTokens") == 1
    assert ("1 error caused by the imports stage's AUX501 at capture_plugin/hooks.py:15 "
            "(not counted)") in out
    assert ("1 finding caused by the imports stage's AUX501 at capture_plugin/hooks.py:15 "
            "(not counted)") in out
    assert out.rstrip().endswith(f"auxcheck check {project}: failed (imports)")


@pytest.mark.slow
def test_the_imports_items_finding_outside_the_project_stays_its_own(
        example: Callable[[str], Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The contract's imports item scans what its ini says, here a folder beside PATH too:
    its finding of the old import in PATH is referred, the one beside it fails the stage."""
    project = with_old_import(example)
    beside = project.parent / "beside"
    beside.mkdir()
    (beside / "old.py").write_text(OLD_IMPORT + "\n")
    ini = project / "pytest.ini"
    ini.write_text(ini.read_text().replace("auxcheck_paths = capture_plugin",
                                           "auxcheck_paths = capture_plugin ../beside"))
    status, by_stage = check(capsys, str(project), "--skip", "mypy", "--skip", "sglang", *QUICK)
    assert isinstance(by_stage, dict)
    contract = by_stage["contract"]
    assert (status, contract["result"], contract["counts"]["failed"]) == (1, "fail", 1)  # type: ignore[index]
    assert [(f["code"], f["path"], f["line"]) for f in contract["findings"]] == [  # type: ignore[attr-defined]
        ("AUX501", str(beside / "old.py"), 1)]
    assert [(f["path"], f["line"], f["see"]) for f in contract["referred"]] == [  # type: ignore[attr-defined]
        ("capture_plugin/hooks.py", 15, CAUSE)]


@pytest.mark.slow
def test_an_independent_mypy_error_is_still_counted(
        example: Callable[[str], Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A mypy error on another line, or about a name that never moved on the old import's
    own line, is the mypy stage's own finding: counted, failing the stage."""
    # An error in the plugin's use of SGLang (a stubbed type), which mypy's defaults count.
    project = with_old_import(example, extra=(
        "\nfrom sglang.srt.managers.auxiliary_output import CommittedTokens as Fresh"
        "\n\nWRONG: int = Fresh(0, (1,))\n"))
    hooks = project / "capture_plugin" / "hooks.py"
    hooks.write_text(hooks.read_text().replace(OLD_IMPORT, OLD_IMPORT + ", NeverThere"))
    status, by_stage = check(capsys, str(project), "--skip", "contract", "--skip", "sglang")
    assert isinstance(by_stage, dict)
    mypy = by_stage["mypy"]
    assert (status, mypy["result"], mypy["counts"]["errors"], mypy["counts"]["referred"]) == (  # type: ignore[index]
        1, "fail", 2, 1)
    last = len(hooks.read_text().splitlines())
    assert sorted((f["code"], f["line"]) for f in mypy["findings"]) == [  # type: ignore[attr-defined]
        ("mypy:assignment", last), ("mypy:attr-defined", 15)]
    assert 'has no attribute "NeverThere"' in str(mypy["output"])
    assert [f["message"] for f in mypy["referred"]] == [  # type: ignore[attr-defined]
        'Module "sglang.srt.sampling.sampling_observer" has no attribute "CommittedTokens"']


@pytest.mark.slow
def test_a_package_path_gives_paths_relative_to_it_in_every_stage(
        example: Callable[[str], Path], capsys: pytest.CaptureFixture[str]) -> None:
    """PATH a package: mypy runs from its parent, yet its paths, like the imports stage's,
    are relative to PATH, and its error still refers to the import's finding."""
    package = with_old_import(example) / "capture_plugin"
    status, by_stage = check(capsys, str(package), "--skip", "contract", "--skip", "sglang")
    assert isinstance(by_stage, dict)
    imports, mypy = by_stage["imports"], by_stage["mypy"]
    assert status == 1
    assert str(imports["output"]).startswith("hooks.py:15:1: AUX501 ")
    assert [(f["path"], f["line"], f["see"]) for f in mypy["referred"]] == [  # type: ignore[attr-defined]
        ("hooks.py", 15, "imports: AUX501 at hooks.py:15")]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_imports_stage_locates_its_findings_relative_to_the_project(
        capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    """The import scan's findings are located relative to PATH, in text and JSON alike."""
    project = EXAMPLES / "legacy_plugin"
    _, result = check(capsys, str(project), "--skip", "mypy", "--skip", "contract", fmt=fmt)
    text = result if isinstance(result, str) else str(result["imports"]["output"])
    assert "\nlegacy_plugin/observer.py:5:1: AUX502 star import" in "\n" + text
    shown = [line for line in text.splitlines() if not line.startswith("auxcheck check ")]
    assert shown and str(project) not in "\n".join(shown)  # only the verdict names PATH
    if isinstance(result, dict):
        paths = {f["path"] for f in result["imports"]["findings"]}  # type: ignore[attr-defined]
        assert paths and all(p.startswith("legacy_plugin/") for p in paths)


# ---------------------------------------------------------------- what is the same cause

CAUSES = Causes([StageFinding("imports", "AUX501", "CommittedTokens imported from ...",
                              "plug/x.py", 3, 1)])
"""The imports stage's one finding: an old import of CommittedTokens at plug/x.py:3."""

MYPY_ERRORS = [
    pytest.param(3, 'Module "sglang.srt.sampling.sampling_observer" has no attribute '
                 '"CommittedTokens"', True, id="the-moved-name-on-its-line"),
    pytest.param(3, 'Module "sglang.srt.sampling.sampling_observer" has no attribute '
                 '"CommittedTokens"; maybe "Other"?', True, id="with-a-suggestion"),
    pytest.param(3, 'Cannot find implementation or library stub for module named '
                 '"sglang.srt.sampling.sampling_observer"', True, id="the-old-module-missing"),
    pytest.param(3, 'Module "sglang.srt.sampling.sampling_observer" has no attribute "Nope"',
                 False, id="a-name-that-never-moved"),
    pytest.param(4, 'Module "sglang.srt.sampling.sampling_observer" has no attribute '
                 '"CommittedTokens"', False, id="another-line"),
    pytest.param(3, 'Incompatible types in assignment (expression has type "str", variable '
                 'has type "int")', False, id="another-kind-of-error"),
    pytest.param(3, 'Cannot find implementation or library stub for module named "nothere"',
                 False, id="another-module-missing"),
]


@pytest.mark.parametrize(("line", "message", "referred"), MYPY_ERRORS)
def test_only_a_mypy_error_about_the_old_import_on_its_line_is_referred(
        line: int, message: str, referred: bool) -> None:
    """A mypy error is referred to the import's finding only when it is at the same line and
    says the old module, or the name that moved out of it, does not resolve."""
    error = StageFinding("mypy", "mypy:attr-defined", message, "plug/x.py", line)
    own, gone = CAUSES.refer([error], mypy_subjects)
    assert [f.see for f in gone] == (["imports: AUX501 at plug/x.py:3"] if referred else [])
    assert len(own) == (0 if referred else 1)


MYPY_OUTPUT = """\
plug/x.py:3: error: Module "sglang.srt.sampling.sampling_observer" has no attribute "CommittedTokens"  [attr-defined]
plug/x.py:3: note: See https://mypy.readthedocs.io
plug/x.py:9:5: error: Incompatible return value type (got "str", expected "int")  [return-value]
Found 2 errors in 1 file (checked 2 source files)
"""


@pytest.mark.parametrize("absolute", [False, True], ids=["relative-to-cwd", "absolute"])
def test_mypy_output_run_from_the_parent_is_located_in_the_package(
        tmp_path: Path, absolute: bool) -> None:
    """mypy run from PATH's parent (PATH a package), or showing absolute paths, gives
    findings and output located relative to PATH; a referred error leaves the output with
    its notes, mypy's count replaced by a line naming the cause."""
    output = MYPY_OUTPUT.replace("plug/", f"{tmp_path}/plug/" if absolute else "plug/")
    parsed = parse_mypy(output, tmp_path / "plug", tmp_path)
    assert [(f.code, f.path, f.line, f.column) for f in parsed.errors] == [
        ("mypy:attr-defined", "x.py", 3, None), ("mypy:return-value", "x.py", 9, 5)]
    causes = Causes([StageFinding("imports", "AUX501", "...", "x.py", 3, 1)])
    _, referred = causes.refer(parsed.errors, mypy_subjects)
    assert parsed.text(referred).splitlines() == [
        ('x.py:9:5: error: Incompatible return value type (got "str", expected "int")  '
         "[return-value]"),
        "1 error caused by the imports stage's AUX501 at x.py:3 (not counted)"]
