"""Tests for ``auxcheck check`` (auxcheck/_check_cli.py), in-process and once as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_migrate_scan import BROKEN, PYTHON, Broken, write_broken

from auxcheck._check_cli import StageResult, main, render_json, render_table

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
QUICK = ["--", "-p", "no:randomly", "-k", "(AUX104-single-copy or AUX402 or imports) and not impl"]
"""Arguments that narrow the contract stage to a few items, to keep these tests fast."""


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    """Returns the exit status and the JSON document of an in-process ``auxcheck check``."""
    status = main(["--format", "json", *args])
    return status, json.loads(capsys.readouterr().out)


def stages(document: dict[str, object]) -> dict[str, dict[str, object]]:
    """Returns the document's stages by name."""
    return {s["stage"]: s for s in document["stages"]}  # type: ignore[attr-defined,index]


def test_the_good_plugin_passes_every_stage_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """capture_plugin: a clean import scan and a passing contract suite give exit 0."""
    status, document = run_json(capsys, str(EXAMPLES / "capture_plugin"), "--skip", "mypy",
                                *QUICK)
    by_stage = stages(document)
    assert (status, document["ok"]) == (0, True)
    assert by_stage["imports"]["result"] == "ok"
    assert by_stage["mypy"]["result"] == "skipped"
    assert by_stage["contract"]["result"] == "ok"
    assert by_stage["contract"]["counts"]["passed"] > 0  # type: ignore[index]


def test_the_broken_plugin_fails_with_its_planted_codes(
        capsys: pytest.CaptureFixture[str]) -> None:
    """broken_plugin: the contract stage fails and names each failing item's code."""
    status, document = run_json(capsys, str(EXAMPLES / "broken_plugin"), "--skip", "mypy",
                                *QUICK)
    contract = stages(document)["contract"]
    assert (status, contract["result"]) == (1, "fail")
    assert contract["counts"]["failed"] == 2  # type: ignore[index]
    output = str(contract["output"])
    assert "::AUX104-single-copy[DoubleCopyOutput-AUX104]: AUX104 one copy passed" in output
    assert "::AUX402-pp-tensors[EmptyPPOutput-AUX402]: AUX402 `to_pp_tensors` returned" in output


def test_the_legacy_plugin_fails_the_import_scan(capsys: pytest.CaptureFixture[str]) -> None:
    """legacy_plugin: every old import is an AUX501 or AUX502 finding with its location."""
    status, document = run_json(capsys, str(EXAMPLES / "legacy_plugin"), "--skip", "mypy",
                                "--skip", "contract")
    imports = stages(document)["imports"]
    assert status == 1
    assert imports["counts"] == {"files": 3, "findings": 10, "AUX501": 8, "AUX502": 2}
    assert "legacy_plugin/observer.py:5:1: AUX502 star import" in str(imports["output"])


def test_text_output_ends_with_the_summary_table(capsys: pytest.CaptureFixture[str]) -> None:
    """The text format prints the failed stage's findings, then the table and the verdict."""
    status = main([str(EXAMPLES / "legacy_plugin"), "--skip", "mypy", "--skip", "contract"])
    out = capsys.readouterr().out
    assert status == 1
    assert out.splitlines()[-7:] == [
        "stage     result   counts                                       time",
        "imports   FAIL     10 findings in 3 files (8 AUX501, 2 AUX502)  0.0s",
        "mypy      skipped  --skip                                       0.0s",
        "contract  skipped  --skip                                       0.0s",
        "sglang    skipped  no --sglang, no [tool.auxcheck] sglang       0.0s",
        "",
        f"auxcheck check {EXAMPLES / 'legacy_plugin'}: failed (imports)",
    ]
    assert out.startswith("\n== imports: 10 findings in 3 files (8 AUX501, 2 AUX502)\n")


def test_mypy_runs_against_the_shipped_stubs(tmp_path: Path, pytestconfig: pytest.Config,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """mypy checks the plugin's package with the sglang stubs: an old import is an error."""
    if pytestconfig.cache is not None:  # a warm cache turns ~40 s of torch stubs into ~2 s
        monkeypatch.setenv("MYPY_CACHE_DIR", str(pytestconfig.cache.mkdir("auxcheck-mypy")))
    package = tmp_path / "plugin"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from sglang.srt.managers.auxiliary_output import CommittedTokens\n"
        "from sglang.srt.sampling.sampling_observer import HostAuxiliaryOutput\n"
        "COMMIT = CommittedTokens(0, (1,))\n")
    status, document = run_json(capsys, str(tmp_path), "--skip", "imports", "--skip", "contract")
    mypy = stages(document)["mypy"]
    assert (status, mypy["result"], mypy["counts"]) == (
        1, "fail", {"packages": 1, "errors": 1, "files": 1})
    assert 'has no attribute "HostAuxiliaryOutput"' in str(mypy["output"])


def test_a_path_that_is_not_a_folder_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """PATH must be a folder; the error names it and exits 2."""
    with pytest.raises(SystemExit) as exited:
        main([str(ROOT / "no-such-folder")])
    assert exited.value.code == 2
    assert "PATH" in capsys.readouterr().err


@pytest.mark.parametrize("args", [
    pytest.param(["--jobs", "0"], id="jobs-zero"),
    pytest.param(["--skip", "lint"], id="unknown-stage"),
    pytest.param(["--format", "xml"], id="unknown-format"),
])
def test_bad_arguments_are_usage_errors(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Bad option values exit 2 with argparse's message naming the option."""
    with pytest.raises(SystemExit) as exited:
        main([str(EXAMPLES / "capture_plugin"), *args])
    assert exited.value.code == 2
    assert f"argument {args[0]}" in capsys.readouterr().err


def test_table_and_json_render_every_stage() -> None:
    """The table has one row per stage and the JSON document says ok only when none failed."""
    results = [StageResult("imports", "ok", {"findings": 0}, 0.04, "0 findings in 1 file"),
               StageResult("mypy", "skipped", summary="mypy is not installed"),
               StageResult("contract", "fail", {"failed": 1}, 2.5, "1 failed")]
    table = render_table(Path("p"), results)
    assert table.splitlines() == [
        "stage     result   counts                 time",
        "imports   ok       0 findings in 1 file   0.0s",
        "mypy      skipped  mypy is not installed  0.0s",
        "contract  FAIL     1 failed               2.5s",
        "",
        "auxcheck check p: failed (contract)",
    ]
    document = json.loads(render_json(Path("p"), results))
    assert document["ok"] is False
    assert [s["stage"] for s in document["stages"]] == ["imports", "mypy", "contract"]


def test_check_runs_as_a_subprocess() -> None:
    """`python -m auxcheck check` runs end to end and exits 1 on the legacy plugin."""
    done = subprocess.run(
        [sys.executable, "-m", "auxcheck", "check", "--format", "json", "--skip", "mypy",
         str(EXAMPLES / "legacy_plugin"), "--", "-p", "no:randomly", "-k", "imports"],
        capture_output=True, text=True, check=False, cwd=ROOT)
    document = json.loads(done.stdout)
    assert done.returncode == 1
    stages = {s["stage"]: s for s in document["stages"]}
    assert {name: s["result"] for name, s in stages.items()} == {
        "imports": "fail", "mypy": "skipped", "contract": "error", "sglang": "skipped"}
    # The legacy plugin defines no output or observer fixture: never a vacuous pass.
    assert "found nothing to check" in stages["contract"]["output"]


# ---------------------------------------------------------------- AUX504: broken files

RELEASE = {"sglang/__init__.py": "", "sglang/version.py": "__version__ = '0.0.1'\n",
           "sglang/srt/__init__.py": ""}
"""The smallest release the sglang stage can judge a plugin against."""


@pytest.fixture
def broken_project(tmp_path: Path) -> tuple[Path, list[str]]:
    """Returns a plugin folder with one clean module, and the options of a tiny release."""
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "__init__.py").write_text("import os\n")
    for name, text in RELEASE.items():
        (tmp_path / "release" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "release" / name).write_text(text)
    return plugin, ["--source", str(tmp_path / "release"), "--offline", "--cache",
                    str(tmp_path / "cache"), "--skip", "mypy", "--skip", "contract"]


@pytest.mark.parametrize("case", [*BROKEN, pytest.param(
    Broken(b"def f(:\n", "1:7", f"does not parse on {PYTHON}: invalid syntax"),
    id="naming-no-old-module")])
def test_a_broken_plugin_file_fails_the_import_and_release_stages_as_aux504(
        broken_project: tuple[Path, list[str]], case: Broken,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Every plugin file that cannot be read, decoded or parsed is an AUX504 finding of the
    import scan and of the release stage, which cannot vouch for a file it never read."""
    plugin, options = broken_project
    write_broken(plugin / "plug", case)
    status, document = run_json(capsys, str(plugin), *options)
    by_stage = stages(document)
    imports, releases = by_stage["imports"], by_stage["sglang"]
    assert (status, imports["result"], releases["result"]) == (1, "fail", "fail")
    assert imports["counts"] == {"files": 2, "findings": 1, "AUX501": 0, "AUX502": 0, "AUX504": 1}
    assert str(imports["output"]).startswith(
        f"{plugin}/plug/broken.py:{case.where}: AUX504 {case.seen}; expected ")
    assert releases["counts"]["AUX504"] == 1  # type: ignore[index]
    assert str(releases["output"]).startswith(f"plug/broken.py:{case.where}: AUX504 {case.seen}")
    assert releases["summary"] == "0.0.1 ok; 1 file not scanned (AUX504)"


def test_a_plugin_whose_files_all_parse_passes_both_stages(
        broken_project: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    """Without a broken file the import and release stages pass and count no AUX504."""
    plugin, options = broken_project
    status, document = run_json(capsys, str(plugin), *options)
    by_stage = stages(document)
    assert (status, by_stage["imports"]["result"], by_stage["sglang"]["result"]) == (0, "ok", "ok")
    assert "AUX504" not in by_stage["imports"]["counts"]  # type: ignore[operator]
