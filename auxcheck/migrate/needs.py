"""What rewriting needs that ``--check`` does not: libcst, asked for once per run."""

from __future__ import annotations

import importlib

from auxcheck.errors import AuxcheckError

__all__ = ["LibcstUnavailable", "need_libcst"]


class LibcstUnavailable(AuxcheckError, ImportError):
    """Rewriting needs libcst, which cannot be imported here; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"rewriting imports needs libcst, which cannot be imported here "
                         f"({reason}); install it with pip install 'libcst>=1.1' (a "
                         "requirement of auxcheck: reinstalling auxcheck brings it), or use "
                         "--check, which does not need it")


def need_libcst() -> None:
    """Raises LibcstUnavailable when libcst cannot be imported: called once, before the
    first file is rewritten (a run with nothing to rewrite never imports libcst), so a
    missing libcst is one message instead of one failure per file."""
    try:
        importlib.import_module("libcst")
    except Exception as exc:  # noqa: BLE001 - a broken install fails in any way
        raise LibcstUnavailable(f"{type(exc).__name__}: {exc}") from None
