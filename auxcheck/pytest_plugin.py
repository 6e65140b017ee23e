"""``pytest --auxcheck``: the contract suite as pytest items (does nothing without the flag)."""

from __future__ import annotations

from typing import Any


def pytest_addoption(parser: Any) -> None:
    """Adds the ``--auxcheck`` option group."""
    group = parser.getgroup("auxcheck", "auxiliary-output contract checks")
    group.addoption("--auxcheck", action="store_true", default=False,
                    help="collect auxcheck's contract suite")
