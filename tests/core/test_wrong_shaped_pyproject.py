"""Tests that a wrong-shaped pyproject.toml is a clear error or a note, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from auxcheck._releases.plugin_scan import read_entry_points
from auxcheck.cli.migrate import main as migrate_main
from auxcheck.errors import InvalidArgument

GROUP = '"sglang.srt.plugins"'


POETRY = f"[tool.poetry.plugins.{GROUP}]\nmine = 'plugin:register'\n"
"""A Poetry entry point, read beside a wrong-shaped [project]."""


@pytest.mark.parametrize(("text", "problems", "found"), [
    pytest.param('project = "x"\n' + POETRY,
                 ["project must be a table (such as `[project]`), got 'x'"], ["mine"],
                 id="project-a-string"),
    pytest.param("[project]\nentry-points = 3\n" + POETRY,
                 [("project.entry-points must be a table (such as `[project.entry-points]`), "
                   "got 3")], ["mine"], id="entry-points-a-number"),
    pytest.param("[tool]\npoetry = 3\n",
                 ["tool.poetry must be a table (such as `[tool.poetry]`), got 3"], [],
                 id="poetry-a-number"),
    pytest.param("tool = [1]\n", ["tool must be a table (such as `[tool]`), got [1]"], [],
                 id="tool-a-list"),
])
def test_the_entry_point_reader_names_a_wrong_shaped_table_in_a_note(
        tmp_path: Path, text: str, problems: list[str], found: list[str]) -> None:
    """read_entry_points reports the key and what it must be, and reads the other table."""
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    points, got = read_entry_points(tmp_path)
    assert got == [f"{path}: {p}; fix the file" for p in problems]
    assert [p.name for p in points] == found


def test_a_key_with_dots_is_quoted_where_the_error_names_it(tmp_path: Path) -> None:
    """table_at names a key holding dots as TOML spells it."""
    from auxcheck._core.config import table_at

    data = {"project": {"entry-points": {"sglang.srt.plugins": 3}}}
    with pytest.raises(InvalidArgument) as caught:
        table_at(data, tmp_path / "pyproject.toml", "project", "entry-points",
                 "sglang.srt.plugins")
    assert str(caught.value) == (f"{tmp_path / 'pyproject.toml'}: project.entry-points."
                                 f"{GROUP} must be a table (such as `[project.entry-points."
                                 f"{GROUP}]`), got 3; fix the file")


@pytest.mark.parametrize("args", [["--check", "."], ["."]], ids=["check", "write"])
def test_migrate_says_which_key_is_wrong_instead_of_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        args: list[str]) -> None:
    """A [tool.auxcheck] sglang that is no list is a usage error naming the file and key."""
    (tmp_path / "pyproject.toml").write_text("[tool.auxcheck]\nsglang = 3\n")
    monkeypatch.chdir(tmp_path)
    assert migrate_main(args) == 2
    assert capsys.readouterr().err == (
        f"auxcheck migrate: error: {tmp_path / 'pyproject.toml'}: [tool.auxcheck] sglang must "
        'be a list of SGLang releases such as ["0.5.20", "0.5.23"], got 3\n')
