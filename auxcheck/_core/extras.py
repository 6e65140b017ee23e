"""Which optional packages are missing, and the note that says how to install them.

``auxcheck check`` runs where auxcheck was installed without its ``contracts`` extra (the
import scan and the release check need neither pytest nor mypy): a stage whose tools are
missing is skipped with a note saying which and how to install them, never failed and
never passed. Modules are looked up, not imported (core never imports pytest).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable, Sequence

__all__ = ["CONTRACT_SUITE_NEEDS", "install_note", "missing_modules"]

CONTRACT_SUITE_NEEDS = ("pytest", "hypothesis")
"""What the contract suite (``pytest --auxcheck``) imports before it can check anything."""


def missing_modules(modules: Iterable[str]) -> list[str]:
    """Returns those of ``modules`` (top-level names) that cannot be found here, in order."""
    return [name for name in modules if not _findable(name)]


def _findable(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a blocked or broken install: it cannot run either
        return False


def install_note(missing: Sequence[str], *, needed_by: str, extra: str = "contracts") -> str:
    """Returns ``pytest is not installed (the contract stage needs it); pip install
    'auxcheck[contracts]'``: what is missing, who needs it and how to have it."""
    names = " and ".join(missing) if len(missing) < 3 else (
        f"{', '.join(missing[:-1])} and {missing[-1]}")
    verb = "is" if len(missing) == 1 else "are"
    pronoun = "it" if len(missing) == 1 else "them"
    return (f"{names} {verb} not installed ({needed_by} needs {pronoun}); "
            f"pip install 'auxcheck[{extra}]'")
