"""What rewriting needs that ``--check`` does not: libcst, asked for once per run."""

from __future__ import annotations

import importlib

from auxcheck._core.errors import LibcstUnavailable

__all__ = ["need_libcst"]


def need_libcst() -> None:
    """Raises LibcstUnavailable when libcst cannot be imported: called once, before the
    first file is rewritten (a run with nothing to rewrite never imports libcst), so a
    missing libcst is one message instead of one failure per file."""
    try:
        importlib.import_module("libcst")
    except Exception as exc:  # noqa: BLE001 - a broken install fails in any way
        raise LibcstUnavailable(f"{type(exc).__name__}: {exc}") from None
