"""Tests for `auxcheck migrate`: main(argv) in-process, one real subprocess, a real tree."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.broken_files import BROKEN, Broken, write_broken
from helpers.plugin_sources import FIXABLE, NEW, OLD

from auxcheck.cli.migrate import DESCRIPTION, main
from auxcheck.migrate.moves import builtin_moves, read_builtin_file
from auxcheck.migrate.runner import run

HUMAN = f"from {OLD} import *\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Returns a plugin project folder (the working directory) with one fixable file."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "plugin"\n')
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "obs.py").write_text(FIXABLE)
    (tmp_path / "plugin" / "clean.py").write_text("import os\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_rewrite_prints_each_file_and_a_summary_and_exits_0(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A plain run rewrites, says `Rewriting path` and a summary, and exits 0."""
    assert main(["plugin"]) == 0
    err = capsys.readouterr().err
    assert err == ("Rewriting plugin/obs.py\n"
                   "auxcheck migrate: 1 file rewritten (2 files scanned)\n")
    assert (project / "plugin" / "obs.py").read_text() == f"from {NEW} import CommittedTokens\n"


def test_quiet_rewrite_prints_only_the_summary(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-q leaves out the `Rewriting path` line, as its help says; the summary stays."""
    assert main(["-q", "plugin"]) == 0
    assert capsys.readouterr().err == "auxcheck migrate: 1 file rewritten (2 files scanned)\n"
    assert (project / "plugin" / "obs.py").read_text() == f"from {NEW} import CommittedTokens\n"


@pytest.mark.parametrize(("supported", "compat"), [
    pytest.param('["0.5.19", "0.5.23"]', True, id="a-release-before-the-move"),
    pytest.param('["0.5.20", "0.5.23"]', False, id="every-release-after-the-move"),
    pytest.param(None, False, id="no-releases-named"),
])
def test_aux501_points_at_compat_when_the_project_supports_a_release_before_the_move(
        project: Path, capsys: pytest.CaptureFixture[str], supported: str | None,
        compat: bool) -> None:
    """A plain migrate would break a release before the move: with one among the project's
    `[tool.auxcheck] sglang` releases, AUX501's fix names `--compat` and that release."""
    if supported is not None:
        (project / "pyproject.toml").write_text(
            f'[project]\nname = "plugin"\n\n[tool.auxcheck]\nsglang = {supported}\n')
    assert main(["--check", "plugin"]) == 1
    out = capsys.readouterr().out
    assert ("fix: run `auxcheck migrate --compat PATH`: the releases you support include "
            "sglang 0.5.19, from before the move (sglang 0.5.20)" in out) == compat
    assert ("fix: run `auxcheck migrate PATH`" in out) == (not compat)


def test_check_reports_aux501_with_location_and_exits_1(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--check writes nothing, prints one AUX501 line per use, and exits 1."""
    assert main(["--check", "plugin"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("plugin/obs.py:1:1: AUX501 CommittedTokens imported from "
                          f"{OLD}; import it from {NEW}, where it moved; fix: run")
    assert (project / "plugin" / "obs.py").read_text() == FIXABLE


def test_check_exits_0_when_nothing_is_left(project: Path) -> None:
    """--check on a migrated tree exits 0."""
    main(["plugin"])
    assert main(["--check", "plugin"]) == 0


def test_diff_prints_a_unified_diff_without_writing(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--diff shows the change, leaves the file alone, and exits 1."""
    assert main(["--diff", "plugin"]) == 1
    assert capsys.readouterr().out == (
        "--- plugin/obs.py\n+++ plugin/obs.py\n@@ -1 +1 @@\n"
        f"-from {OLD} import CommittedTokens\n+from {NEW} import CommittedTokens\n")
    assert (project / "plugin" / "obs.py").read_text() == FIXABLE


def test_star_import_needs_a_human_and_exits_1(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A star import is reported as AUX502 after the rewrite, and the run exits 1."""
    (project / "plugin" / "star.py").write_text(HUMAN)
    assert main(["plugin"]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("plugin/star.py:1:1: AUX502 star import from")
    assert "1 use needing a human (AUX502)" in captured.err


@pytest.mark.parametrize(("fmt", "expected"), [
    ("github", (f"::error file=plugin/obs.py,line=1,col=1::AUX501 CommittedTokens imported from "
               f"{OLD}; import it from {NEW}, where it moved\n")),
], ids=["github"])
def test_github_format_prints_workflow_commands(project: Path, fmt: str, expected: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """--format github prints one ::error command per finding."""
    assert main(["--check", "--format", fmt, "plugin"]) == 1
    assert capsys.readouterr().out == expected


def test_json_format_lists_findings_changes_and_errors(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--format json prints one document with findings, changed files and errors."""
    (project / "plugin" / "bad.py").write_text(f"import {OLD} as (  # CommittedTokens\n")
    assert main(["--check", "--format", "json", "plugin"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(f["code"], f["location"]) for f in doc["findings"]] == [
        ("AUX504", "plugin/bad.py:1:49"), ("AUX501", "plugin/obs.py:1:1")]
    assert doc["changed"] == ["plugin/obs.py"]
    assert doc["errors"] == [{"path": "plugin/bad.py",
                              "reason": "does not parse: invalid syntax (line 1)"}]


# ---------------------------------------------------------------- AUX504: broken files


@pytest.mark.parametrize("case", BROKEN)
def test_check_reports_a_broken_file_as_aux504_and_exits_1(
        project: Path, case: Broken, capsys: pytest.CaptureFixture[str]) -> None:
    """--check prints a broken file's AUX504 finding where the parser stopped, and says so."""
    write_broken(project / "plugin", case)
    assert main(["--check", "plugin"]) == 1
    captured = capsys.readouterr()
    assert f"plugin/broken.py:{case.where}: AUX504 {case.seen}; expected " in captured.out
    assert captured.err.endswith("auxcheck migrate: 1 file to migrate, 1 file not read, decoded "
                                 "or parsed (AUX504) (3 files scanned)\n")


@pytest.mark.parametrize("case", BROKEN)
def test_write_mode_leaves_a_broken_file_byte_identical_and_rewrites_the_rest(
        project: Path, case: Broken, capsys: pytest.CaptureFixture[str]) -> None:
    """A plain run rewrites the good files, reports the broken one, keeps its bytes, exits 1."""
    path = write_broken(project / "plugin", case)
    assert main(["plugin"]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith(f"plugin/broken.py:{case.where}: AUX504 {case.seen}; ")
    assert "plugin/broken.py: error: " in captured.err and "Rewriting plugin/obs.py" in captured.err
    path.chmod(0o644)
    assert path.read_bytes() == case.data
    assert (project / "plugin" / "obs.py").read_text() == f"from {NEW} import CommittedTokens\n"


@pytest.mark.parametrize(("fmt", "expected"), [
    pytest.param("github", ("::error file=plugin/bad.py,line=1,col=51::AUX504 does not parse on "
                            "Python {v}: '(' was never closed; expected source that Python {v} "
                            "can parse\n"), id="github"),
    pytest.param("text", "plugin/bad.py:1:51: AUX504 does not parse on Python {v}: '(' was never "
                         "closed; expected source that Python {v} can parse; fix: make it valid ",
                 id="text"),
])
def test_a_broken_file_is_one_located_line_in_each_format(
        project: Path, fmt: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    """An AUX504 finding carries path, line and column, once, in text and github formats."""
    (project / "plugin" / "obs.py").write_text("import os\n")
    (project / "plugin" / "bad.py").write_text(f"from {OLD} import (CommittedTokens\n")
    assert main(["--check", "--format", fmt, "plugin"]) == 1
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert capsys.readouterr().out.startswith(expected.format(v=python))


def test_stdin_that_does_not_parse_is_aux504_at_dash(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`-` that does not parse is reported as AUX504 located in `-`, and echoed unchanged."""
    source = f"from {OLD} import (CommittedTokens\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.encode())))
    assert main(["--check", "-"]) == 1
    assert capsys.readouterr().out.startswith("-:1:51: AUX504 does not parse on Python ")


def test_a_path_that_cannot_be_opened_fails_as_aux504(tmp_path: Path) -> None:
    """The runner reports a file it cannot open as AUX504 `cannot be read` (root included)."""
    missing = str(tmp_path / "gone.py")
    summary = run([missing], moves=builtin_moves(), mode="check")
    assert [(o.path, o.status, [(f.code, f.location, f.message.partition(";")[0])
             for f in o.findings]) for o in summary.outcomes] == [
        (missing, "failed", [("AUX504", f"{missing}:1:1",
                              "cannot be read: No such file or directory")])]


# ---------------------------------------------------------------- the run that finds no work


def test_the_builtin_table_equals_moves_toml() -> None:
    """The table a run loads without parsing TOML is the one moves.toml holds."""
    assert builtin_moves().moves == read_builtin_file()


def test_a_run_with_no_candidate_imports_no_parser_no_report_and_no_dataclasses(
        tmp_path: Path) -> None:
    """`--check` where no file names an old module imports neither ast, libcst, torch,
    dataclasses nor the report module, and no TOML parser unless a pyproject.toml is found."""
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.py").write_text("import os\n")
    heavy = ["ast", "auxcheck.migrate.scan", "auxcheck.report", "dataclasses", "inspect",
             "libcst", "torch"]
    if not any((folder / "pyproject.toml").is_file() for folder in tmp_path.parents):
        heavy.append("tomllib")
    probe = ("import sys; from auxcheck.cli import main; code = main(['migrate', '--check', "
             f"'tree']); print(code, sorted(m for m in {heavy!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=False,
                          text=True, cwd=tmp_path)
    assert done.stdout == "0 []\n", done.stderr


BUFFER = 1 << 20
"""The bytes the prefilter reads in one call."""


@pytest.mark.parametrize("needle_at", [100, BUFFER - 8, BUFFER + 3], ids=[
    "within-the-first-read", "across-its-end", "past-it"])
def test_a_file_larger_than_one_read_is_searched_to_its_end(
        tmp_path: Path, needle_at: int, capsys: pytest.CaptureFixture[str]) -> None:
    """The old module's name is found wherever it lies in a file larger than one read (and
    under the size parsed: comments pad it)."""
    line_at = needle_at - FIXABLE.index("sampling_observer")
    data = b"#" * (line_at - 1) + b"\n" + FIXABLE.encode()
    data += b"#" * max(BUFFER + 100 - len(data), 100) + b"\n"
    assert data.index(b"sampling_observer") == needle_at and len(data) > BUFFER + 100
    (tmp_path / "big.py").write_bytes(data)
    assert main(["--check", str(tmp_path)]) == 1
    assert capsys.readouterr().out.startswith(f"{tmp_path / 'big.py'}:2:1: AUX501 ")


def test_stdin_is_read_and_the_result_written_to_stdout(
        monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """`-` migrates stdin to stdout, bytes for bytes (CRLF kept)."""
    data = FIXABLE.replace("\n", "\r\n").encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["-"]) == 0
    assert capsysbinary.readouterr().out == data.replace(OLD.encode(), NEW.encode())


def test_stdin_check_reports_without_echoing_the_source(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`--check -` reports findings located in `-` and exits 1."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FIXABLE.encode())))
    assert main(["--check", "-"]) == 1
    assert capsys.readouterr().out.startswith("-:1:1: AUX501 ")


USAGE = {
    "no path": ([], "the following arguments are required: PATH"),
    "bad jobs": (["--jobs", "0", "."],
                 "argument --jobs/-j: invalid value '0'; expected a whole number >= 1"),
    "bad format": (["--format", "xml", "."], "argument --format: invalid choice: 'xml'"),
    "missing path": (["nope/"], "auxcheck migrate: error: no such file or folder: nope/"),
    "stdin mixed with paths": (["-", "."], "`-` (stdin) cannot be combined with other paths"),
    "diffs in a json document": (["--diff", "--format", "json", "."],
                                 "--diff prints diffs on stdout, where --format json writes"),
    "diffs in a sarif log": (["--diff", "--format", "sarif", "."],
                             "use --check with --format sarif for the findings"),
}


@pytest.mark.parametrize(("argv", "message"), USAGE.values(), ids=USAGE.keys())
def test_usage_errors_exit_2_with_a_precise_message(
        project: Path, argv: list[str], message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Bad options and paths exit 2 and say what was wrong."""
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_malformed_moves_file_exits_2_naming_file_and_entry(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed --moves table is a usage error naming the file, the entry and the problem."""
    (project / "moves.toml").write_text('[[move]]\nold = "a.b"\nnew = "a.c"\nnames = "X"\n')
    assert main(["--moves", "moves.toml", "plugin"]) == 2
    assert capsys.readouterr().err == (
        "auxcheck migrate: error: moves.toml: moves entry #1 (old = 'a.b'): 'names' must be a "
        "non-empty list of identifiers, got 'X'\n")


def test_moves_from_pyproject_are_applied(project: Path) -> None:
    """A user move in [tool.auxcheck.migrate] is migrated like the built-in one."""
    (project / "pyproject.toml").write_text(
        '[tool.auxcheck.migrate]\nmove = [{old = "mylib.legacy", new = "mylib.core", '
        'names = ["Thing"]}]\n')
    (project / "plugin" / "user.py").write_text("from mylib.legacy import Thing, Other\n")
    assert main(["plugin"]) == 0
    assert (project / "plugin" / "user.py").read_text() == (
        "from mylib.core import Thing\nfrom mylib.legacy import Other\n")


def test_parallel_jobs_give_the_same_result_as_one(tmp_path: Path) -> None:
    """-j 2 over many files rewrites exactly what --jobs 1 does (-j and --jobs are one option)."""
    for flag, jobs in (("--jobs", "1"), ("-j", "2")):
        root = tmp_path / jobs
        root.mkdir()
        for i in range(40):
            (root / f"m{i}.py").write_text(FIXABLE if i % 2 else "import os\n")
        assert main([flag, jobs, str(root)]) == 0
    assert [p.read_text() for p in sorted((tmp_path / "1").iterdir())] == [
        p.read_text() for p in sorted((tmp_path / "2").iterdir())]


def test_description_names_the_moved_names() -> None:
    """The subcommand's DESCRIPTION says what it migrates."""
    assert "CommittedTokens" in DESCRIPTION and NEW in DESCRIPTION


def test_installed_command_runs_without_importing_libcst_when_clean(project: Path) -> None:
    """The real `auxcheck` command exits 0 on a clean tree, prints no progress when piped,
    and never imports libcst or torch when no file can need work."""
    exe = shutil.which("auxcheck", path=os.path.dirname(sys.executable))
    assert exe is not None, "the auxcheck console script is not installed"
    (project / "plugin" / "obs.py").write_text(f"from {NEW} import CommittedTokens\n")
    proc = subprocess.run([exe, "migrate", "--check", "plugin"], capture_output=True, check=False,
                          text=True, cwd=project)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == "auxcheck migrate: 0 files to migrate (2 files scanned)\n"
    probe = ("import sys; from auxcheck.cli.migrate import main; main(['--check', 'plugin']); "
             "print(sorted(m for m in ('libcst', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=False, text=True,
                         cwd=project).stdout
    assert out == "[]\n"


def test_a_sample_of_a_real_tree_is_left_byte_identical(tmp_path: Path) -> None:
    """300 real files (torch's own sources, copied) come back unchanged, with no error."""
    torch_spec = __import__("importlib.util").util.find_spec("torch")
    if torch_spec is None or torch_spec.origin is None:
        pytest.skip("torch is not installed, so there is no real tree to copy")
    source = Path(torch_spec.origin).parent
    files = sorted(source.rglob("*.py"))[::7][:300]
    for i, path in enumerate(files):
        shutil.copyfile(path, tmp_path / f"f{i}_{path.name}")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert main(["--jobs", "1", str(tmp_path)]) == 0
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


# ---------------------------------------------------------------- --sglang A:B

RELEASE_A = {
    "sglang/version.py": "__version__ = '0.0.1'\n",
    "sglang/srt/old.py": "class Moved:\n    def method(self): ...\nclass Other: ...\n",
}
RELEASE_B = {
    "sglang/version.py": "__version__ = '0.0.2'\n",
    "sglang/srt/old.py": "",
    "sglang/srt/new_home.py": "class Moved:\n    def method(self): ...\n",
    "sglang/srt/elsewhere.py": "class Other: ...\n",
}
PLUGIN = (
    "from unittest import mock\n"
    "\n"
    "from sglang.srt.old import Moved, Other\n"
    "\n"
    'HookRegistry.register("sglang.srt.old.Moved.method", hook, HookType.AFTER)\n'
    'patched = mock.patch("sglang.srt.old.Other")\n'
)


@pytest.fixture
def releases(tmp_path: Path) -> list[str]:
    """Returns the options naming two small releases, 0.0.1 and 0.0.2, offline."""
    options = ["--offline", "--cache", str(tmp_path / "cache")]
    for name, files in (("a", RELEASE_A), ("b", RELEASE_B)):
        for path, text in files.items():
            (tmp_path / name / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name / path).write_text(text)
        options += ["--source", str(tmp_path / name)]
    return options


def test_sglang_pair_rewrites_imports_hook_targets_and_mock_patch_strings(
        project: Path, releases: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """--sglang A:B applies the inferred moves to imports and to dotted string targets."""
    (project / "plugin" / "hooks.py").write_text(PLUGIN)
    assert main(["--sglang", "0.0.1:0.0.2", *releases, "plugin"]) == 0
    assert (project / "plugin" / "hooks.py").read_text() == (
        "from unittest import mock\n"
        "\n"
        "from sglang.srt.elsewhere import Other\n"
        "from sglang.srt.new_home import Moved\n"
        "\n"
        'HookRegistry.register("sglang.srt.new_home.Moved.method", hook, HookType.AFTER)\n'
        'patched = mock.patch("sglang.srt.elsewhere.Other")\n'
    )
    assert ("auxcheck migrate: applying 2 names SGLang moved from 0.0.1 to 0.0.2 (0 left out: "
            "several possible homes)\n") in capsys.readouterr().err


def test_the_users_moves_win_over_inferred_ones(
        project: Path, releases: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A pyproject move of an inferred name keeps the user's target, and the run says so."""
    (project / "pyproject.toml").write_text(
        '[tool.auxcheck.migrate]\nmove = [{old = "sglang.srt.old", new = "mine.compat", '
        'names = ["Other"]}]\n')
    (project / "plugin" / "hooks.py").write_text("from sglang.srt.old import Moved, Other\n")
    assert main(["--sglang", "0.0.1:0.0.2", *releases, "plugin"]) == 0
    assert (project / "plugin" / "hooks.py").read_text() == (
        "from mine.compat import Other\nfrom sglang.srt.new_home import Moved\n")
    assert ("applying 1 name SGLang moved from 0.0.1 to 0.0.2 (0 left out: several possible "
            "homes); 1 name kept as your moves say\n") in capsys.readouterr().err


SGLANG_USAGE = {
    "one release": (["--sglang", "0.5.19", "."], ("argument --sglang: expected two releases as "
                    "OLDER:NEWER, such as 0.5.19:0.5.23, got '0.5.19'")),
    "same release twice": (["--sglang", "0.5.23:0.5.23", "."], ("argument --sglang: "
                           "'0.5.23:0.5.23' names one release twice")),
    "not a version": (["--sglang", "0.5.19:latest", "."], ("argument --sglang: 'latest' is not "
                      "an SGLang release version")),
}


@pytest.mark.parametrize(("argv", "message"), SGLANG_USAGE.values(), ids=SGLANG_USAGE.keys())
def test_bad_release_pairs_exit_2_with_a_precise_message(
        project: Path, argv: list[str], message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """--sglang takes OLDER:NEWER, two different versions."""
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_release_that_cannot_be_had_offline_exits_2_naming_it(
        project: Path, releases: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A release neither given nor cached is a usage error saying what to pass."""
    assert main(["--sglang", "0.0.1:0.0.7", *releases, "plugin"]) == 2
    assert capsys.readouterr().err.startswith(
        "auxcheck migrate: error: cannot get sglang 0.0.7: it is not in the cache. When offline, "
        "pass --wheel PATH")


def test_sglang_pair_runs_without_importing_torch(project: Path, releases: list[str]) -> None:
    """Inferring moves from releases reads their files only: torch is never imported."""
    (project / "plugin" / "hooks.py").write_text(PLUGIN)
    probe = (f"import sys; from auxcheck.cli.migrate import main; "
             f"code = main(['--sglang', '0.0.1:0.0.2', *{releases!r}, 'plugin']); "
             "print(code, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=False, text=True,
                         cwd=project).stdout
    assert out == "0 False\n"


def test_the_projects_ruff_line_length_decides_the_wrapping(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rewrite reads the nearest ruff configuration: at line length 120 nothing wraps."""
    monkeypatch.chdir(tmp_path)
    names = "CommittedTokens, DeviceAuxiliaryOutput, HostAuxiliaryOutput"
    for folder, config in (("wide", "line-length = 120\n"), ("default", "")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "ruff.toml").write_text(config)
        (tmp_path / folder / "obs.py").write_text(f"from {OLD} import {names}\n")
    assert main(["wide", "default"]) == 0
    assert (tmp_path / "wide" / "obs.py").read_text() == f"from {NEW} import {names}\n"
    assert (tmp_path / "default" / "obs.py").read_text() == f"from {NEW} import (\n" + "".join(
        f"    {name},\n" for name in names.split(", ")) + ")\n"


def test_a_malformed_import_style_fails_the_file_naming_the_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A ruff line length that is not a number leaves the file as it was, saying why."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ruff.toml").write_text('line-length = "wide"\n')
    source = f"from {OLD} import CommittedTokens\n"
    (tmp_path / "obs.py").write_text(source)
    assert main(["obs.py"]) == 1
    err = capsys.readouterr().err
    assert "cannot read the import style" in err and "line-length" in err, err
    assert (tmp_path / "obs.py").read_text() == source
