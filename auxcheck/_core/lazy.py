"""PEP 562 lazy re-exports for the package ``__init__`` modules."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(
    package: str, namespace: dict[str, Any], home_of: Mapping[str, str], public: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Returns ``(__getattr__, __dir__)`` for ``package``: names load from ``home_of`` on first use.

    A loaded name is stored in ``namespace`` so later lookups skip ``__getattr__``.
    """

    def getattr_(name: str) -> Any:
        module = home_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(public))

    return getattr_, dir_
