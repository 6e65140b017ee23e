"""Tests for ``auxcheck check`` (auxcheck/cli/check.py, auxcheck/_check/), in-process and as
real subprocesses; mypy and the contract suite always run for real."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.broken_files import BROKEN, PYTHON, Broken, write_broken
from helpers.paths import EXAMPLES, REPO
from helpers.plugin_sources import FIXABLE
from helpers.progress import show_progress, shown_environment, untimed, without_timed_lines

from auxcheck._check.mypy_stage import mypy_config
from auxcheck._check.stages import (
    CHECK_AUX504_HINT,
    CheckOptions,
    StageResult,
    plugin_packages,
    run_stages,
)
from auxcheck._core.errors import UsageError
from auxcheck.cli.check import (
    _parser,
    check_impl,
    check_profile,
    main,
    render_json,
    render_table,
)

QUICK = ["--", "-p", "no:randomly", "-k", "(AUX104-single-copy or AUX402 or imports) and not impl"]
"""Arguments that narrow the contract stage to a few items, to keep these tests fast."""


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    """Returns the exit status and the JSON document of an in-process ``auxcheck check``
    (what it wrote to stderr is left to read)."""
    status = main(["--format", "json", *args])
    out, err = capsys.readouterr()
    sys.stderr.write(err)
    return status, json.loads(out)


def stages(document: dict[str, object]) -> dict[str, dict[str, object]]:
    """Returns the document's stages by name."""
    return {s["stage"]: s for s in document["stages"]}  # type: ignore[attr-defined,index]


@pytest.mark.slow
def test_the_good_plugin_passes_every_stage_it_runs(
        capsys: pytest.CaptureFixture[str], example: Callable[[str], Path]) -> None:
    """capture_plugin: a clean import scan and a passing contract suite give exit 0."""
    status, document = run_json(capsys, str(example("capture_plugin")), "--skip", "mypy",
                                *QUICK)
    by_stage = stages(document)
    assert (status, document["ok"]) == (0, True)
    assert by_stage["imports"]["result"] == "ok"
    assert by_stage["mypy"]["result"] == "skipped"
    assert by_stage["contract"]["result"] == "ok"
    assert by_stage["contract"]["counts"]["passed"] > 0  # type: ignore[index]


@pytest.mark.slow
def test_the_broken_plugin_fails_with_its_planted_codes(
        capsys: pytest.CaptureFixture[str], example: Callable[[str], Path]) -> None:
    """broken_plugin: the contract stage fails and names each failing item's code."""
    status, document = run_json(capsys, str(example("broken_plugin")), "--skip", "mypy",
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
    assert untimed(out)[-7:] == [
        "stage     result   counts                                       time",
        "imports   FAIL     10 findings in 3 files (8 AUX501, 2 AUX502)  T",
        "mypy      skipped  --skip                                       T",
        "contract  skipped  --skip                                       T",
        "sglang    skipped  no --sglang, no [tool.auxcheck] sglang       T",
        "",
        f"auxcheck check {EXAMPLES / 'legacy_plugin'}: failed (imports)",
    ]
    assert out.startswith("\n== imports: 10 findings in 3 files (8 AUX501, 2 AUX502)\n")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_each_stage_says_on_stderr_when_it_starts_and_ends(
        fmt: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """One line as a stage starts and one as it ends (a left-out stage: one line), in both
    formats; stdout holds only the table or the JSON document (no wait reports here)."""
    show_progress(monkeypatch, delay=float("inf"))
    status = main(["--format", fmt, str(EXAMPLES / "legacy_plugin"), "--skip", "mypy",
                   "--skip", "contract"])
    out, err = capsys.readouterr()
    assert status == 1
    assert untimed(err) == [
        "auxcheck check: [1/4] imports ...",
        "auxcheck check: imports FAIL (T)",
        "auxcheck check: [2/4] mypy skipped (--skip)",
        "auxcheck check: [3/4] contract skipped (--skip)",
        "auxcheck check: [4/4] sglang ...",
        "auxcheck check: sglang skipped (T): no --sglang, no [tool.auxcheck] sglang",
    ]
    if fmt == "json":
        assert json.loads(out)["ok"] is False


def test_stage_times_come_from_the_clock_given() -> None:
    """run_stages times each stage with the clock it is given, so times are testable."""
    ticks = iter([10.0, 12.5, 20.0, 20.25])
    options = CheckOptions(EXAMPLES / "legacy_plugin", skip=frozenset({"mypy", "contract"}))
    results = run_stages(options, clock=lambda: next(ticks))
    assert [(r.stage, r.seconds) for r in results] == [
        ("imports", 2.5), ("mypy", 0.0), ("contract", 0.0), ("sglang", 0.25)]
    assert render_table(Path("p"), results).splitlines()[1].endswith("  2.5s")


@pytest.mark.slow
def test_mypy_runs_against_the_shipped_stubs(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """mypy checks the plugin's package with the sglang stubs: an old import is an error."""
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


# ------------------------------------------- mypy: its defaults, or the project's own config

UNANNOTATED = "def double(x):\n    return x * 2\n"
"""Fine for mypy's defaults, an error under --strict (a function without annotations)."""

SGLANG_MISUSE = ("from sglang.srt.managers.schedule_batch import Req\n\n\n"
                 "def rid_number(req: Req) -> int:\n    return req.rid\n")
"""An error in the plugin's use of SGLang (``rid`` is a str), under any configuration."""

OWN_CODE_ERROR = "def half(x: int) -> str:\n    return x // 2\n"
"""An error in the plugin's own code, which mypy's defaults find with or without SGLang's stubs."""

CONFIGS = {
    "mypy.ini": "[mypy]\nwarn_unused_configs = True\n",
    ".mypy.ini": "[mypy]\n",
    "pyproject.toml": "[project]\nname = 'p'\n\n[tool.mypy]\nwarn_unused_configs = true\n",
    "setup.cfg": "[metadata]\nname = p\n\n[mypy]\n",
}
"""A configuration of each kind mypy reads, none of them strict."""


def write_project(root: Path, files: dict[str, str]) -> Path:
    """Returns ``root`` holding ``files`` (relative path -> text)."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


MYPY_RUNS = [
    pytest.param({}, "ok", None, id="no-config-mypys-defaults-pass-an-unannotated-def"),
    pytest.param({"mypy.ini": CONFIGS["mypy.ini"]}, "ok", "mypy.ini", id="mypy-ini"),
    pytest.param({"pyproject.toml": CONFIGS["pyproject.toml"]}, "ok", "pyproject.toml",
                 id="pyproject-tool-mypy"),
    pytest.param({"setup.cfg": CONFIGS["setup.cfg"]}, "ok", "setup.cfg", id="setup-cfg-mypy"),
    pytest.param({"pyproject.toml": "[tool.mypy]\nstrict = true\n"}, "fail", "pyproject.toml",
                 id="a-strict-config-fails-it-too"),
    pytest.param({"pyproject.toml": "[project]\nname = 'p'\n"}, "ok", None,
                 id="pyproject-without-tool-mypy-is-no-config"),
    pytest.param({"../mypy.ini": "[mypy]\nplugins = no_such_mypy_plugin\n"}, "ok", None,
                 id="a-parent-folders-config-is-not-read"),
]


@pytest.mark.parametrize(("files", "result", "config"), MYPY_RUNS)
def test_mypy_uses_the_projects_config_else_its_defaults(
        tmp_path: Path, files: dict[str, str], result: str, config: str | None,
        capsys: pytest.CaptureFixture[str]) -> None:
    """With its own mypy configuration the project is checked by it, nothing added; without,
    by mypy's defaults and no configuration file at all: no strictness the user did not ask
    for."""
    project = write_project(tmp_path / "project", {"plug/__init__.py": UNANNOTATED, **files})
    _, document = run_json(capsys, str(project), "--skip", "imports", "--skip", "contract")
    mypy = stages(document)["mypy"]
    label = f"config: {config}" if config else "mypy's defaults"
    options = ["--config-file", config] if config else ["--config-file="]
    assert (mypy["result"], mypy["data"]) == (result, {"config": config, "options": options})
    assert mypy["summary"] == f"{1 if result == 'fail' else 0} error" \
        f"{'' if result == 'fail' else 's'} in plug ({label})"
    if result == "fail":
        assert "plug/__init__.py:1: error: Function is missing a type annotation" in str(
            mypy["output"])


@pytest.mark.parametrize(("files", "errors", "own_code"), [
    pytest.param({"plug/__init__.py": SGLANG_MISUSE}, 1, 0, id="a-misuse-of-sglang-counts"),
    pytest.param({"plug/__init__.py": OWN_CODE_ERROR}, 0, 1, id="own-code-is-a-note"),
    pytest.param({"plug/__init__.py": SGLANG_MISUSE + "\n\n" + OWN_CODE_ERROR}, 1, 1,
                 id="both"),
    pytest.param({"plug/__init__.py": SGLANG_MISUSE + "\n\n" + OWN_CODE_ERROR,
                  "mypy.ini": "[mypy]\n"}, 2, 0, id="with-a-config-every-error-counts"),
])
def test_without_a_config_mypy_judges_the_plugins_use_of_sglang(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], errors: int,
        own_code: int) -> None:
    """Without a mypy configuration, an error mypy's defaults also give with SGLang's stubs
    left out is the plugin's own code's: a note, not counted; with one, every error counts."""
    project = write_project(tmp_path / "p", files)
    status, document = run_json(capsys, str(project), "--skip", "imports", "--skip", "contract")
    mypy = stages(document)["mypy"]
    assert (mypy["result"], mypy["counts"]["errors"],  # type: ignore[index]
            mypy["counts"].get("plugin_code", 0)) == ("fail" if errors else "ok", errors,  # type: ignore[attr-defined]
                                                     own_code)
    assert [f["line"] for f in mypy["findings"]] == [5, 9][:errors]  # type: ignore[attr-defined]
    output = str(mypy["output"])
    assert ("of the plugin's own code" in mypy["summary"]) == bool(own_code)  # type: ignore[operator]
    assert ("error of mypy's defaults is in the plugin's own code" in output) == bool(own_code)
    assert ("plug/__init__.py:9: error" in output) == (errors == 2)
    assert status == (1 if errors else 0)


@pytest.mark.parametrize(("source", "note"), [
    pytest.param("import sglang.srt.entrypoints.engine\n",
                 "SGLang modules auxcheck's stubs do not cover (sglang.srt.entrypoints, "
                 "sglang.srt.entrypoints.engine;", id="sglang-module-without-stubs"),
    pytest.param("import no_such_dependency_here\n",
                 "modules not installed (or untyped) where auxcheck runs "
                 "(no_such_dependency_here;", id="dependency-not-installed"),
])
def test_an_import_mypy_cannot_resolve_here_is_a_note_not_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, note: str) -> None:
    """An SGLang module the stubs do not cover, or a dependency not installed where auxcheck
    runs, is no error of the plugin: the stage passes and a note names the modules."""
    project = write_project(tmp_path / "p", {"plug/__init__.py": source})
    status, document = run_json(capsys, str(project), "--skip", "imports", "--skip", "contract")
    mypy = stages(document)["mypy"]
    assert (status, mypy["result"], mypy["counts"]["errors"]) == (0, "ok", 0)  # type: ignore[index]
    assert mypy["counts"]["unresolved"] >= 1  # type: ignore[index]
    assert "took " in str(mypy["output"]) and note in str(mypy["output"])


def test_an_import_of_the_projects_own_missing_module_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A module of the project itself that does not exist is the plugin's error, counted."""
    project = write_project(tmp_path / "p", {"plug/__init__.py": "from plug import missing\n",
                                             "mypy.ini": "[mypy]\n"})
    _, document = run_json(capsys, str(project), "--skip", "imports", "--skip", "contract")
    assert stages(document)["mypy"]["result"] == "fail"


@pytest.mark.parametrize(("present", "found"), [
    pytest.param([], None, id="none"),
    pytest.param(["setup.cfg", "pyproject.toml", ".mypy.ini", "mypy.ini"], "mypy.ini",
                 id="mypy-ini-first"),
    pytest.param(["setup.cfg", "pyproject.toml", ".mypy.ini"], ".mypy.ini", id="dot-mypy-ini"),
    pytest.param(["setup.cfg", "pyproject.toml"], "pyproject.toml", id="pyproject-before-setup"),
    pytest.param(["setup.cfg"], "setup.cfg", id="setup-cfg-last"),
])
def test_the_config_is_found_in_mypys_own_order(tmp_path: Path, present: list[str],
                                                found: str | None) -> None:
    """mypy.ini, .mypy.ini, pyproject.toml ([tool.mypy]), setup.cfg ([mypy]): the first wins."""
    write_project(tmp_path, {name: CONFIGS[name] for name in present})
    config = mypy_config(tmp_path)
    assert (config.name if config else None) == found


@pytest.mark.parametrize(("name", "text"), [
    pytest.param("pyproject.toml", "[tool.ruff]\nline-length = 99\n", id="pyproject-no-mypy"),
    pytest.param("pyproject.toml", "[tool.mypy\n", id="pyproject-not-toml"),
    pytest.param("setup.cfg", "[flake8]\nmax-line-length = 99\n", id="setup-cfg-no-mypy"),
    pytest.param("setup.cfg", "no section header\n", id="setup-cfg-not-ini"),
])
def test_shared_files_without_a_mypy_section_are_no_config(tmp_path: Path, name: str,
                                                           text: str) -> None:
    """pyproject.toml and setup.cfg count only with a mypy section (and when they parse)."""
    write_project(tmp_path, {name: text})
    assert mypy_config(tmp_path) is None


# ---------------------------------------------------------------- src layout

SRC_OUTPUTS = '''\
"""A device output kept torch-free for mypy: tensors are handed in by whoever builds it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from srcplug.host import Host


class Output:
    def __init__(self, rows: Any) -> None:
        self.rows = rows

    def copy_to_host(self, copy_tensor: Callable[[Any], Any]) -> Host:
        return Host(copy_tensor(self.rows))


def pair(outputs: Sequence[Output]) -> int:
    return len(outputs)
'''

SRC_HOST = '''\
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Host:
    def __init__(self, rows: Any) -> None:
        self.rows = rows

    def consume(self, batch: Any, commits: Sequence[object | None]) -> None:
        self.seen = [commit is not None for commit in commits]
'''

SRC_CONFTEST = '''\
import pytest
import torch

from srcplug.outputs import Output


@pytest.fixture
def auxcheck_device_output():
    return Output(torch.zeros(2, 3))
'''


@pytest.mark.slow
def test_a_src_layout_is_type_checked_and_tested_without_installing_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """src/srcplug is found by mypy (imports resolving), and the contract suite imports it
    from the conftest without the project being installed."""
    project = write_project(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'srcplug'\nversion = '0.1'\n",
        "src/srcplug/__init__.py": "from srcplug.outputs import Output\n\n__all__ = ['Output']\n",
        "src/srcplug/outputs.py": SRC_OUTPUTS,
        "src/srcplug/host.py": SRC_HOST,
        "conftest.py": SRC_CONFTEST,
        "pytest.ini": "[pytest]\n",
    })
    status, document = run_json(capsys, str(project), "--skip", "sglang", "--", "-p",
                                "no:randomly", "-k", "AUX104-single-copy and not impl")
    by_stage = stages(document)
    assert {name: s["result"] for name, s in by_stage.items()} == {
        "imports": "ok", "mypy": "ok", "contract": "ok", "sglang": "skipped"}, document
    assert by_stage["mypy"]["counts"] == {"packages": 1, "errors": 0, "files": 3}
    assert by_stage["mypy"]["summary"] == "0 errors in srcplug (mypy's defaults)"
    assert by_stage["contract"]["counts"]["passed"] > 0  # type: ignore[index]
    assert status == 0


def test_packages_are_found_beside_and_under_src(tmp_path: Path) -> None:
    """plugin_packages lists packages of the folder and of its src/, never tests or dot-folders."""
    write_project(tmp_path, {"top/__init__.py": "", "src/inner/__init__.py": "",
                             "tests/__init__.py": "", ".hidden/__init__.py": "",
                             "src/notapackage/x.py": ""})
    assert [p.relative_to(tmp_path).as_posix() for p in plugin_packages(tmp_path)] == [
        "top", "src/inner"]


# ---------------------------------------------------------------- usage errors

IMPL_MISSING = ("implementation 'nonsense': cannot import nonsense (No module named "
                "'nonsense'); install it, or use 'reference' or a dotted path to your own module")

PROFILE_EXPECTED = ("expected one of auxcheck-default, auxcheck-ci, or the name of a profile "
                    "the project's conftest registers with hypothesis.settings.register_profile")
NOT_A_NAME = "is not a profile name (a letter or _, then letters, digits, _, - or .)"
NAMES = ("append_auxiliary_output, CompositeDeviceAuxiliaryOutput, "
         "CompositeHostAuxiliaryOutput")

USAGE = [
    pytest.param([str(REPO / "no-such-folder")], f"PATH {str(REPO / 'no-such-folder')!r} is "
                 "not a folder; expected a plugin project's folder", id="path-not-a-folder"),
    pytest.param(["--jobs", "0"], "argument --jobs/-j: invalid value '0'; expected a whole "
                 "number >= 1", id="jobs-zero"),
    pytest.param(["-j", "two"], "argument --jobs/-j: invalid value 'two'; expected a whole "
                 "number >= 1", id="j-not-a-number"),
    pytest.param(["-n", "0"], "argument -n: invalid value '0'; expected a whole number >= 1",
                 id="old-n-zero"),
    pytest.param(["--skip", "lint"], "argument --skip: invalid choice: 'lint'",
                 id="unknown-stage"),
    pytest.param(["--format", "xml"], "argument --format: invalid choice: 'xml'",
                 id="unknown-format"),
    pytest.param(["--impl", "nonsense"], f"--impl: {IMPL_MISSING}", id="impl-nonsense"),
    pytest.param(["--impl", "no way"], "--impl: implementation 'no way' is not 'reference', "
                 "'sglang', 'sglang==X.Y.Z', 'auto' or a dotted module path",
                 id="impl-not-a-module-path"),
    pytest.param(["--impl", "json"], f"--impl: json does not define {NAMES}; an "
                 f"implementation module must expose {NAMES}",
                 id="impl-module-without-the-names"),
    pytest.param(["--profile", ""], f"--profile: '' {NOT_A_NAME}; {PROFILE_EXPECTED}",
                 id="profile-empty"),
    pytest.param(["--profile", "my ci"], f"--profile: 'my ci' {NOT_A_NAME}; {PROFILE_EXPECTED}",
                 id="profile-two-words"),
    pytest.param(["--profile", "auxcheck-defualt"], "--profile: 'auxcheck-defualt' is not an "
                 f"auxcheck profile; {PROFILE_EXPECTED}", id="profile-misspelt"),
]


@pytest.mark.parametrize(("args", "message"), USAGE)
def test_bad_arguments_exit_2_naming_the_option_before_any_stage(
        args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad option or PATH exits 2 with `auxcheck check: error:` naming it; no stage runs."""
    path = [] if args[0].startswith(str(REPO)) else [str(EXAMPLES / "capture_plugin")]
    assert main([*path, *args]) == 2
    err = capsys.readouterr().err
    # The whole message; argparse may list the choices after an invalid one.
    assert err.splitlines()[-1].startswith(f"auxcheck check: error: {message}")
    assert "[1/4]" not in err


@pytest.mark.parametrize("spec", ["auto", "reference", "project_impl", "sglang==0.5.20"])
def test_implementations_the_suite_can_load_are_accepted(tmp_path: Path, spec: str) -> None:
    """auto, reference, a release and a module importable from the project pass --impl."""
    (tmp_path / "project_impl.py").write_text(
        "from auxcheck.protocols import (CompositeDeviceAuxiliaryOutput, "
        "CompositeHostAuxiliaryOutput, append_auxiliary_output)\n")
    check_impl(spec, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(("body", "message"), [
    pytest.param("import os\nos._exit(0)\n",
                 "--impl: importing 'hostile_impl' exited 0 before it could be checked",
                 id="os-exit-0-at-import"),
    pytest.param("import os\nos.abort()\n",
                 "--impl: importing 'hostile_impl' was killed by SIGABRT before it could be checked",
                 id="abort-at-import"),
    pytest.param("import time\nwhile True:\n    time.sleep(0.05)\n",
                 "--impl: importing 'hostile_impl' did not finish within its --timeout and was "
                 "killed before it could be checked", id="hang-at-import"),
    pytest.param("raise SystemExit(5)\n",
                 "--impl: implementation 'hostile_impl': importing hostile_impl raised "
                 "SystemExit (5); fix the module so that it imports", id="system-exit-at-import"),
])
def test_an_impl_module_that_ends_or_hangs_its_import_is_a_usage_error_not_our_exit(
        tmp_path: Path, body: str, message: str) -> None:
    """The --impl module is the user's code: it is imported in a bounded child process."""
    (tmp_path / "hostile_impl.py").write_text("print('hello from the module')\n" + body)
    # Only the hang meets the limit: the others must end on their own however busy the
    # machine is (a child that had not imported the module within 3 s read as a hang).
    with pytest.raises(UsageError) as caught:
        check_impl("hostile_impl", tmp_path, timeout=3 if "while True" in body else 300)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("name", ["auxcheck-default", "auxcheck-ci", "ci", "my_profile.v2"])
def test_profile_names_are_accepted_or_passed_to_the_suite(name: str) -> None:
    """auxcheck's profiles pass; another name is left to the project's conftest to register."""
    check_profile(name)


def test_an_impl_usage_error_exits_2_from_a_real_process() -> None:
    """`python -m auxcheck check --impl nonsense` exits 2 naming --impl, not --auxcheck-impl."""
    done = subprocess.run([sys.executable, "-m", "auxcheck", "check", "--impl", "nonsense",
                           str(EXAMPLES / "capture_plugin")],
                          capture_output=True, text=True, check=False, cwd=REPO)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"auxcheck check: error: --impl: {IMPL_MISSING}\n"


# ---------------------------------------------------------------- --jobs

NO_XDIST = ("import sys; sys.modules['xdist'] = None  # what an absent package looks like\n"
            "from auxcheck.cli import main\n"
            "raise SystemExit(main(sys.argv[1:]))\n")
"""A Python program running `auxcheck` in a process where pytest-xdist cannot be imported."""

ONLY_CONTRACT = ["--skip", "imports", "--skip", "mypy", "--skip", "sglang"]
ONE_ITEM = "AUX104-single-copy and instance"
"""Selects one contract item of an output: a contract run must judge the plugin to pass."""


def contract_command(document: dict[str, object]) -> list[str]:
    """Returns the pytest command line the contract stage ran."""
    return list(stages(document)["contract"]["data"]["command"])  # type: ignore[index]


@pytest.mark.slow
def test_jobs_without_xdist_warns_and_runs_the_suite_on_one_process(
        example: Callable[[str], Path]) -> None:
    """--jobs with no pytest-xdist is said on stderr and in the JSON document, never silent."""
    done = subprocess.run(
        [sys.executable, "-c", NO_XDIST, "check", "--format", "json", "--jobs", "2",
         *ONLY_CONTRACT, str(example("capture_plugin")), "--", "-p", "no:randomly",
         "-k", ONE_ITEM], capture_output=True, text=True, check=False, cwd=REPO)
    warning = ("--jobs 2 ignored: pytest-xdist is not installed; the contract suite runs on one "
               "process; pip install pytest-xdist")
    document = json.loads(done.stdout)
    assert (done.returncode, document["warnings"]) == (0, [warning]), done.stderr
    assert done.stderr.splitlines()[0] == f"auxcheck check: warning: {warning}"
    assert "-n" not in contract_command(document)


@pytest.mark.slow
def test_jobs_spreads_the_contract_suite_over_xdist_workers(
        capsys: pytest.CaptureFixture[str], example: Callable[[str], Path]) -> None:
    """-j N runs the contract suite on N xdist workers, and the plugin passes there."""
    status, document = run_json(capsys, "-j", "2", *ONLY_CONTRACT,
                                str(example("capture_plugin")), "--", "-p", "no:randomly",
                                "-k", ONE_ITEM)
    command = contract_command(document)
    assert (status, document["warnings"]) == (0, [])
    assert command[command.index("-n") + 1] == "2"


@pytest.mark.parametrize("words", [["-j", "2"], ["--jobs", "2"], ["--jobs=2"], ["-n", "2"]],
                         ids=["-j", "--jobs", "--jobs=", "old-n"])
def test_every_spelling_of_jobs_means_the_same(words: list[str]) -> None:
    """--jobs N, -j N and check's old -n N all ask for N workers (run once, above, by -j)."""
    assert _parser().parse_args([*words, "p"]).jobs == 2


def test_help_shows_j_and_jobs_but_not_the_old_n(capsys: pytest.CaptureFixture[str]) -> None:
    """`-j N, --jobs N` is the documented spelling; `-n` still parses but is not advertised."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--jobs N, -j N" in out
    assert not re.search(r"(^|[ ,\[])-n\b", out)


# ---------------------------------------------------------------- rendering and a real process


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
    document = json.loads(render_json(Path("p"), results, warnings=["w"]))
    assert (document["ok"], document["warnings"]) == (False, ["w"])
    assert [s["stage"] for s in document["stages"]] == ["imports", "mypy", "contract"]


@pytest.mark.slow
def test_check_runs_as_a_subprocess(example: Callable[[str], Path]) -> None:
    """`python -m auxcheck check` runs end to end and exits 1 on the legacy plugin."""
    done = subprocess.run(
        [sys.executable, "-m", "auxcheck", "check", "--format", "json", "--skip", "mypy",
         str(example("legacy_plugin")), "--", "-p", "no:randomly", "-k", "imports"],
        capture_output=True, text=True, check=False, cwd=REPO)
    document = json.loads(done.stdout)
    assert done.returncode == 1
    stages = {s["stage"]: s for s in document["stages"]}
    assert {name: s["result"] for name, s in stages.items()} == {
        "imports": "fail", "mypy": "skipped", "contract": "skipped", "sglang": "skipped"}
    # The legacy plugin names no output or observer fixture, though it uses the contract:
    # the stage says so, and where.
    assert stages["contract"]["summary"].startswith(
        "nothing to check: no conftest.py names an auxiliary output or observer")
    assert "though the plugin uses the contract (legacy_plugin/" in stages["contract"]["summary"]


@pytest.mark.slow
@pytest.mark.parametrize("flags", [[], ["-v"], ["-q"]], ids=["default", "verbose", "quiet"])
def test_stderr_holds_the_stage_lines_pytests_output_only_with_v_and_nothing_with_q(
        flags: list[str], example: Callable[[str], Path]) -> None:
    """By default stderr shows the stage lines (and progress inside a long stage), not
    pytest's own output; -v streams that too; -q leaves stderr empty."""
    plugin = example("capture_plugin")
    done = subprocess.run(
        [sys.executable, "-m", "auxcheck", "check", *flags, *ONLY_CONTRACT, str(plugin), "--",
         "-p", "no:randomly", "-k", ONE_ITEM], capture_output=True, text=True, check=False,
        cwd=REPO, env=shown_environment())
    stage_lines = [
        "auxcheck check: [1/4] imports skipped (--skip)",
        "auxcheck check: [2/4] mypy skipped (--skip)",
        "auxcheck check: [3/4] contract ...",
        "auxcheck check: contract ok (T)",
        "auxcheck check: [4/4] sglang skipped (--skip)",
    ]
    # A heartbeat (`contract: 1 item done (5 s)`) comes only on a slow machine: not counted.
    lines = untimed("\n".join(without_timed_lines(done.stderr)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"auxcheck check {plugin}: ok"
    if flags == ["-q"]:
        assert done.stderr == ""
    elif flags == ["-v"]:
        assert [line for line in lines if line.startswith("auxcheck check: ")] == stage_lines
        assert any(re.search(r"\b1 passed\b", line) for line in lines), done.stderr
    else:
        assert lines == stage_lines


@pytest.mark.slow
def test_progress_inside_stages_goes_to_stderr_and_leaves_the_json_whole(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        example: Callable[[str], Path]) -> None:
    """mypy's heartbeat and the contract items done are said on stderr (here with no delay),
    never on stdout, whose JSON document parses (-q's silence: the stage lines test). One
    after another: beside each other only the innermost wait, the contract's, shows."""
    show_progress(monkeypatch, delay=0.0)
    status, document = run_json(capsys, "--sequential", "--skip", "imports", "--skip", "sglang",
                                str(example("capture_plugin")), "--",
                                "-p", "no:randomly", "-k", ONE_ITEM)
    err = capsys.readouterr().err
    assert (status, document["ok"]) == (0, True)
    lines = err.splitlines()
    assert any(re.fullmatch(r"auxcheck check: mypy \.\.\. \d+ s", line) for line in lines), err
    assert any(re.fullmatch(r"auxcheck check: contract: 1 item done \(\d+ s\)", line)
               for line in lines), err


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
        f"plug/broken.py:{case.where}: AUX504 {case.seen}; expected ")
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


GENERATED = "".join(f"def f{i}(x: int) -> int:\n    return x + {i}\n\n\n" for i in range(44_000))
"""A valid generated module of about 2.2 MB: over migrate's 2 MB limit, under check's."""


@pytest.mark.slow
def test_a_valid_module_over_2mb_is_read_by_the_import_and_release_stages(
        broken_project: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    """A 2.2 MB module is parsed by the import scan (the old import on its last line is found)
    and by the release stage, which does not call it unscanned."""
    plugin, options = broken_project
    (plugin / "plug" / "generated.py").write_text(GENERATED + FIXABLE)
    _, document = run_json(capsys, str(plugin), *options)
    imports, releases = stages(document)["imports"], stages(document)["sglang"]
    assert (imports["result"], imports["counts"]) == (
        "fail", {"files": 2, "findings": 1, "AUX501": 1, "AUX502": 0})
    assert str(imports["output"]).startswith(
        f"plug/generated.py:{GENERATED.count(chr(10)) + 1}:1: AUX501 ")
    assert "AUX504" not in str(releases["output"]) and "not scanned" not in str(
        releases["summary"]), releases["summary"]


def test_a_module_over_what_check_parses_is_aux504_with_a_fix_check_offers(
        broken_project: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    """A 17 MB module is AUX504 in both stages, and the fix names no option check lacks."""
    plugin, options = broken_project
    (plugin / "plug" / "huge.py").write_bytes(b"#" * (17 << 20))
    status, document = run_json(capsys, str(plugin), *options)
    imports, releases = stages(document)["imports"], stages(document)["sglang"]
    assert (status, imports["counts"]["AUX504"], releases["counts"]["AUX504"]) == (  # type: ignore[index]
        1, 1, 1)
    for output in (str(imports["output"]), str(releases["output"])):
        assert ("huge.py:1:1: AUX504 was not parsed: 17,825,792 bytes, over the 16,777,216 bytes "
                "auxcheck parses here") in output
        assert output.endswith(f"; fix: {CHECK_AUX504_HINT}") or (
            f"; fix: {CHECK_AUX504_HINT}\n" in output), output
        assert "--exclude" not in output and "auxcheck_paths" not in output


# ---------------------------------------------------- contract: nothing to check is no failure

HOOK_ONLY = ("from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
             "def register() -> None:\n    pass\n")
"""A plugin without auxiliary outputs (most real plugins: hooks, cache backends)."""


@pytest.mark.parametrize(("files", "summary_tail"), [
    pytest.param({"plug/__init__.py": HOOK_ONLY}, ")", id="a-hook-plugin"),
    pytest.param({"plug/__init__.py": HOOK_ONLY, "plug/out.py": "\n\nDeviceAuxiliaryOutput = 1\n"},
                 "), though the plugin uses the contract (plug/out.py:3): name its outputs and "
                 "observers in a conftest.py to have them checked (docs/pytest-plugin.md)",
                 id="a-plugin-using-the-contract-without-a-conftest"),
])
def test_a_project_naming_no_fixture_of_the_suite_skips_the_contract_stage_saying_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str],
        summary_tail: str) -> None:
    """With no `auxcheck_*` name in any of its files there is nothing to check: the stage is
    skipped (pytest is not even started), says why, and fails nothing."""
    project = write_project(tmp_path / "p", files)
    status, document = run_json(capsys, str(project), "--skip", "mypy", "--skip", "sglang")
    contract = stages(document)["contract"]
    assert (status, contract["result"]) == (0, "skipped")
    assert contract["summary"] == (
        "nothing to check: no conftest.py names an auxiliary output or observer "
        "(auxcheck_device_output, auxcheck_sampling_observer, auxcheck_forward_observer"
        + summary_tail)


def test_a_misspelt_fixture_still_runs_the_suite_and_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A conftest whose fixture name is close to the suite's is a mistake, never a skip:
    pytest runs and its error names the closest fixture seen."""
    project = write_project(tmp_path / "p", {
        "plug/__init__.py": HOOK_ONLY,
        "conftest.py": ("import pytest\n\n\n@pytest.fixture\ndef auxcheck_device_outputs():\n"
                        "    return None\n"),
    })
    status, document = run_json(capsys, str(project), "--skip", "mypy", "--skip", "sglang")
    contract = stages(document)["contract"]
    assert (status, contract["result"]) == (1, "error")
    assert "closest fixture names seen: auxcheck_device_outputs" in str(contract["output"])


# ---------------------------------------------------- one moves table for every command

OWN_MOVES = ("[project]\nname = 'p'\n\n[tool.auxcheck.migrate]\n"
             "move = [{ old = \"mylib.legacy\", new = \"mylib.core\", names = [\"Thing\"], "
             "since = \"2.0\" }]\n")


def test_the_projects_own_moves_table_is_honoured_by_checks_imports_stage_as_by_migrate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A move of the project's `[tool.auxcheck.migrate]` makes an old import AUX501 in
    `check`'s imports stage exactly as in `migrate --check` (one table, built in one place)."""
    from auxcheck.cli import main as auxcheck_main

    project = write_project(tmp_path / "p", {"pyproject.toml": OWN_MOVES,
                                             "plug/__init__.py": "from mylib.legacy import Thing\n"})
    status, document = run_json(capsys, str(project), "--skip", "mypy", "--skip", "contract")
    imports = stages(document)["imports"]
    assert (status, imports["result"]) == (1, "fail")
    assert [(f["code"], f["path"], f["line"]) for f in imports["findings"]] == [  # type: ignore[attr-defined]
        ("AUX501", "plug/__init__.py", 1)]
    assert auxcheck_main(["migrate", "--check", "-q", str(project)]) == 1
    capsys.readouterr()


def test_a_malformed_moves_table_is_an_error_of_the_imports_stage_naming_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A `[tool.auxcheck.migrate]` check cannot read is an error naming the file, never
    a silent fall back to the built-in table."""
    project = write_project(tmp_path / "p", {
        "pyproject.toml": "[tool.auxcheck.migrate]\nmove = 3\n", "plug/__init__.py": ""})
    status, document = run_json(capsys, str(project), "--skip", "mypy", "--skip", "contract")
    imports = stages(document)["imports"]
    assert (status, imports["result"]) == (1, "error")
    assert str(imports["summary"]).startswith("the project's moves table cannot be read: ")
    assert "pyproject.toml" in str(imports["summary"])
