"""`auxcheck validate`'s worker says once per kind what Python ignored, the kind read from the
exception's type, never from its description's text (auxcheck/cli/validate.py)."""

from __future__ import annotations

import types

import pytest

from auxcheck.cli import validate

LONG = "A" * 90
"""Longer than a description keeps: two such names differ only past the cut."""

First = type(f"{LONG}First", (Exception,), {})
Second = type(f"{LONG}Second", (Exception,), {})


def _where_it_was_ignored() -> None:
    """Stands for the ``__del__`` Python ignored the exceptions in."""


@pytest.mark.parametrize("exceptions", [
    pytest.param((First("x"), Second("x")), id="two-kinds-described-alike"),
])
def test_each_kind_of_ignored_exception_is_said_once_even_when_described_alike(
        capfd: pytest.CaptureFixture[str], exceptions: tuple[BaseException, ...]) -> None:
    """Two exception types whose descriptions agree (cut short) are two lines, and a repeat none."""
    for error in (*exceptions, *exceptions):
        validate._ignored_by_python(types.SimpleNamespace(exc_value=error,
                                                          object=_where_it_was_ignored))
    lines = capfd.readouterr().err.splitlines()
    assert len(lines) == len(exceptions)
    assert all(line.startswith("auxcheck: plugin code raised ") for line in lines)
