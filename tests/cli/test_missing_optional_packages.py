"""Tests for commands run where a package is missing (libcst, pytest, mypy).

Each runs the real command in a child interpreter whose import of the named packages fails,
as it does where they are not installed: a meta-path finder refuses them before any
other finder is asked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.missing_packages import auxcheck_without
from helpers.plugin_sources import FIXABLE


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Returns a plugin project with two files to migrate and a conftest naming a suite fixture."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "plugin"\n')
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "__init__.py").write_text("")
    for name in ("a.py", "b.py"):
        (tmp_path / "plugin" / name).write_text(FIXABLE)
    (tmp_path / "conftest.py").write_text("def auxcheck_device_output():\n    return None\n")
    return tmp_path


LIBCST_MISSING = (
    "auxcheck migrate: error: rewriting imports needs libcst, which cannot be imported here "
    "(ModuleNotFoundError: No module named 'libcst'); install it with pip install "
    "'libcst>=1.1' (a requirement of auxcheck: reinstalling auxcheck brings it), or use "
    "--check, which does not need it\n")


@pytest.mark.parametrize("args", [
    pytest.param(["migrate", "plugin"], id="write"),
    pytest.param(["migrate", "--diff", "plugin"], id="diff"),
])
def test_migrate_without_libcst_says_so_once_and_changes_nothing(
        project: Path, args: list[str]) -> None:
    """Rewriting without libcst is one usage error (exit 2) naming the fix, not one per file."""
    status, out, err = auxcheck_without({"libcst"}, args, project)
    assert (status, out, err) == (2, "", LIBCST_MISSING)
    assert (project / "plugin" / "a.py").read_text() == FIXABLE


def test_migrate_check_needs_no_libcst(project: Path) -> None:
    """--check scans with ast alone: it reports both files without libcst."""
    status, out, _ = auxcheck_without({"libcst"}, ["migrate", "--check", "plugin"], project)
    assert status == 1
    assert [line.split(":")[0] for line in out.splitlines()] == ["plugin/a.py", "plugin/b.py"]


def test_check_without_pytest_or_mypy_runs_the_other_stages_and_says_what_to_install(
        project: Path) -> None:
    """The contract and mypy stages are skipped with a note each; the import scan still runs."""
    status, out, err = auxcheck_without({"pytest", "mypy"},
                                        ["check", "-q", "--format", "json", "."], project)
    assert "Traceback" not in err
    stages = {s["stage"]: s for s in json.loads(out)["stages"]}
    assert status == 1  # the import scan's findings
    assert stages["imports"]["result"] == "fail"
    assert (stages["contract"]["result"], stages["contract"]["summary"]) == (
        "skipped", ("pytest is not installed (the contract suite needs it); "
                    "pip install 'auxcheck[contracts]'"))
    assert (stages["mypy"]["result"], stages["mypy"]["summary"]) == (
        "skipped", ("mypy is not installed (this stage needs it); "
                    "pip install 'auxcheck[contracts]'"))
