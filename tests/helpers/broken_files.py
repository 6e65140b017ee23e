"""Python files that cannot be read, decoded or parsed, each with the AUX504 finding it must give."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from helpers.plugin_sources import FIXABLE, OLD

PYTHON = f"Python {sys.version_info[0]}.{sys.version_info[1]}"
IMPORT = FIXABLE.encode()

NEWER_SYNTAX = {
    (3, 10): (b"type X = int\n", "2:6", "invalid syntax"),  # PEP 695 type alias: 3.12
    (3, 11): (b"type X = int\n", "2:6", "invalid syntax"),
    (3, 12): (b"def f[T = int](): ...\n", "2:6", "expected '('"),  # PEP 696 default: 3.13
    (3, 13): (b"try:\n    pass\nexcept ValueError, TypeError:\n    pass\n", "4:8",
              "multiple exception types must be parenthesized"),  # PEP 758: 3.14
}
"""Per running Python: a statement only a newer Python parses (after a line of imports),
where this one's parser stops on it, and what it says."""


class Broken(NamedTuple):
    """A file that cannot be read, decoded or parsed, and the AUX504 finding it must give."""

    data: bytes
    where: str
    """``line:col`` of the finding."""
    seen: str
    """How the finding's message starts."""
    mode: int = 0o644


def _newer_syntax() -> object:
    syntax, where, message = NEWER_SYNTAX.get(sys.version_info[:2], (b"", "", ""))
    case = Broken(IMPORT + syntax, where, f"does not parse on {PYTHON}: {message}")
    return pytest.param(case, id="valid-on-a-newer-python-only", marks=pytest.mark.skipif(
        not syntax, reason=f"this test knows no syntax newer than {PYTHON}"))


BROKEN = [
    pytest.param(Broken(f"from {OLD} import (CommittedTokens\n".encode(), "1:51",
                        f"does not parse on {PYTHON}: '(' was never closed"), id="syntax-error"),
    pytest.param(Broken(IMPORT + b"s = '\xff'\n", "2:6", "cannot be decoded: 'utf-8' codec "
                        f"can't decode byte 0xff in position {len(IMPORT) + 5}: invalid start "
                        "byte"), id="undecodable-bytes"),
    pytest.param(Broken(b"# coding: no-such-codec\n" + IMPORT, "1:1",
                        "cannot be decoded: unknown encoding: no-such-codec"), id="bad-coding-cookie"),
    pytest.param(Broken(IMPORT + b"x = 1\x00\n", "2:6", f"does not parse on {PYTHON}: source "
                        "code string cannot contain null bytes"), id="null-byte"),
    pytest.param(Broken(IMPORT, "1:1", "cannot be read: Permission denied", mode=0o000),
                 id="unreadable", marks=pytest.mark.mode_bits),
    _newer_syntax(),
]
"""Each way a file that names an old module can be broken (a file that names none is never
read past its bytes, so it cannot be)."""


def write_broken(folder: Path, case: Broken, name: str = "broken.py") -> Path:
    """Writes ``case`` as ``folder/name`` with its mode bits; returns the path."""
    path = folder / name
    path.write_bytes(case.data)
    path.chmod(case.mode)
    return path
