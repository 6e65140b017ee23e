"""`auxcheck check`: its contract stage's pytest follows no symbolic link, even one inside a
folder the walk skips, and says which it skipped (auxcheck/_check/pytest_links.py); the
project is walked once for every stage (auxcheck/_check/base.py)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers.plugin_sources import CLEAN_OUTPUT
from helpers.processes import hang_guard

from auxcheck._core import python_files
from auxcheck.cli.check import main

LINKED_CONFTEST = "import pytest\nimport torch\n\n\n" + CLEAN_OUTPUT + textwrap.dedent("""

    @pytest.fixture
    def auxcheck_device_output():
        return Clean()
""")
"""A conftest whose one device output keeps the contract."""

NARROW = ("--", "-p", "no:randomly", "-k", "AUX104-single-copy or AUX201")
"""Pytest arguments that keep the contract stage to a few items."""
LIMITS = ("--timeout", "240", "--max-memory", "4GB", "--skip", "imports", "--skip", "mypy")


def project(folder: Path, *, pytest_ini: str = "") -> Path:
    """Writes a package ``linked``, the conftest and ``pytest_ini`` (if any) into ``folder``."""
    (folder / "linked").mkdir(parents=True)
    (folder / "linked" / "__init__.py").write_text("VALUE: int = 1\n")
    (folder / "conftest.py").write_text(LINKED_CONFTEST)
    if pytest_ini:
        (folder / "pytest.ini").write_text(pytest_ini)
    return folder


def contract_of(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, dict[str, object]]:
    """Returns the exit status and the contract stage of an in-process ``auxcheck check``."""
    status = main(["--format", "json", "-q", str(path), *LIMITS, *NARROW])
    document = json.loads(capsys.readouterr().out)
    return status, {s["stage"]: s for s in document["stages"]}["contract"]


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "target", "pytest_ini"), [
    pytest.param("env", "..", "", id="up-from-a-folder-the-walk-skips"),
    pytest.param("site-packages", "../..", "", id="out-of-the-project"),
    pytest.param("build", "..", "[pytest]\nnorecursedirs = .git\n",
                 id="the-projects-norecursedirs-lets-pytest-in"),
])
def test_pytest_collects_each_item_once_through_a_link_the_walk_never_met(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], folder: str, target: str,
        pytest_ini: str) -> None:
    """A `..` link inside a folder the walk skips (pytest does not) leaves the contract
    stage's counts those of the same project without it, and a note names the link."""
    plain = project(tmp_path / "plain", pytest_ini=pytest_ini)
    linked = project(tmp_path / "linked", pytest_ini=pytest_ini)
    (linked / folder).mkdir()
    (linked / folder / "up").symlink_to(target)
    with hang_guard("auxcheck check on a project with a link the walk never met"):
        _, expected = contract_of(capsys, plain)
        status, contract = contract_of(capsys, linked)
    assert (status, contract["result"]) == (0, "ok"), contract["summary"]
    assert contract["counts"] == expected["counts"]
    assert contract["data"]["links_not_followed"] == [f"{folder}/up"]  # type: ignore[index]
    assert f"1 symbolic link not followed ({folder}/up)" in str(contract["summary"])


@pytest.mark.slow
def test_every_stage_reads_one_walk_of_the_project(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of every stage that lists files (imports, contract, sglang from a release
    folder) walks the project's folders once."""
    from helpers.releases import write_release

    walked: list[str] = []
    walk = python_files._walk

    def counted(folder: str, *args: object) -> object:
        walked.append(folder)
        return walk(folder, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(python_files, "_walk", counted)
    plugin = project(tmp_path / "plugin")
    release = write_release(tmp_path / "release", {
        "sglang/__init__.py": "", "sglang/_version.py": '__version__ = "0.5.23"\n'})
    status = main(["--format", "json", "-q", str(plugin), "--skip", "mypy", "--source",
                   str(release), "--offline", *NARROW])
    document = json.loads(capsys.readouterr().out)
    ran = {s["stage"]: s["result"] for s in document["stages"]}
    assert ran["imports"] == "ok" and ran["contract"] == "ok", (status, ran)
    assert ran["sglang"] != "skipped"
    assert walked == [str(plugin)]
