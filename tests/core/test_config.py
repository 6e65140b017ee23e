"""Tests for the one INI reader: a good file parses, every bad one is an error naming the file."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from auxcheck._core.config import load_ini
from auxcheck._core.errors import IniFileError
from auxcheck._core.paths import CONFIG_LIMIT

READ_FIX = "fix the file's permissions, or remove it"
SYNTAX_FIX = "fix the file's syntax"


def _write(data: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data)


def _folder(path: Path) -> None:
    path.mkdir()


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _too_large(path: Path) -> None:
    with path.open("wb") as file:  # sparse: the size is judged before a byte is read
        file.truncate(CONFIG_LIMIT + 1)


def test_a_good_file_is_parsed_with_raw_values_and_the_last_repeat_winning(
        tmp_path: Path) -> None:
    """Sections and options come back as written (no interpolation); a repeated section or
    option is merged, the last value winning, as isort reads it."""
    path = tmp_path / "setup.cfg"
    path.write_text("[isort]\nline_length = 79\nsrc = %(here)s\n[mypy]\n[isort]\nline_length = 88\n",
                    encoding="utf-8")
    parser = load_ini(path)
    assert parser.sections() == ["isort", "mypy"]
    assert dict(parser.items("isort")) == {"line_length": "88", "src": "%(here)s"}


BAD = {
    "folder": (_folder, "cannot read: it is a folder, not a regular file", READ_FIX),
    "fifo": (_fifo, "cannot read: it is a FIFO (named pipe), not a regular file", READ_FIX),
    "too-large": (_too_large, f"cannot read: larger than {CONFIG_LIMIT:,} bytes", READ_FIX),
    "missing": (lambda path: None, "cannot read: No such file or directory", READ_FIX),
    "no-section-header": (
        _write(b"line_length = 79\n"),
        ("not a valid INI file (File contains no section headers.\nfile: {path!r}, line: 1\n"
         "'line_length = 79\\n')"), SYNTAX_FIX),
    "undecodable": (
        _write(b"[isort]\nprofile = \xff\n"),
        ("not a valid INI file ('utf-8' codec can't decode byte 0xff in position 18: invalid "
         "start byte)"), SYNTAX_FIX),
}


@pytest.mark.parametrize(("make", "problem", "fix"), BAD.values(), ids=BAD.keys())
def test_a_file_that_cannot_be_read_or_parsed_is_an_error_naming_it(
        tmp_path: Path, make: Callable[[Path], None], problem: str, fix: str) -> None:
    """A folder, a FIFO, a file over the limit, a missing file, bad syntax and bytes that are
    not UTF-8 each raise IniFileError naming the file, what was wrong and what to do."""
    if make is _fifo and not hasattr(os, "mkfifo"):
        pytest.skip("needs FIFOs")
    path = tmp_path / "setup.cfg"
    make(path)
    with pytest.raises(IniFileError) as caught:
        load_ini(path)
    expected = problem.format(path=str(path))
    assert (caught.value.path, caught.value.problem, caught.value.fix) == (path, expected, fix)
    assert str(caught.value) == f"{path}: {expected}; {fix}"


def test_strict_reading_refuses_a_section_given_twice(tmp_path: Path) -> None:
    """With ``strict`` (as mypy reads setup.cfg) a repeated section is a syntax error."""
    path = tmp_path / "setup.cfg"
    path.write_text("[mypy]\n[mypy]\n", encoding="utf-8")
    with pytest.raises(IniFileError) as caught:
        load_ini(path, strict=True)
    assert str(caught.value) == (f"{path}: not a valid INI file (While reading from {str(path)!r} "
                                 f"[line  2]: section 'mypy' already exists); {SYNTAX_FIX}")
