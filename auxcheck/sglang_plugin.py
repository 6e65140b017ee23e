"""auxcheck's SGLang plugin: the live-server guard, inert unless ``AUXCHECK_GUARD`` is set.

Installed with auxcheck under the entry point group ``sglang.srt.plugins``, so SGLang's
``load_plugins()`` calls :func:`register` once in every process it starts (engine,
schedulers, detokenizer, data-parallel controller). With ``AUXCHECK_GUARD`` unset or
empty, :func:`register` returns at once: it registers no hook and this module imports
nothing beyond the standard library.

- ``AUXCHECK_GUARD=warn``: the checks run and each finding is logged (logger
  ``auxcheck.guard``), once per rule and output class in full, then counted;
- ``AUXCHECK_GUARD=raise``: the same checks raise :class:`auxcheck.errors.GuardError`
  (for test runs against a real server);
- ``AUXCHECK_GUARD_VALUES=1``: also snapshot each published output and compare it with
  what SGLang copied (AUX112), at the cost of one synchronous copy per output;
- ``AUXCHECK_GUARD_REPORT=PATH``: also append every logged event to PATH as JSON lines.

What is hooked, and how, is in :mod:`auxcheck._guard.live`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from auxcheck._guard.guard import Guard

__all__ = ["current_guard", "register"]


def register() -> None:
    """Switches the live-server guard on when ``AUXCHECK_GUARD`` asks for it; else does nothing.

    SGLang calls this with no arguments and only logs what it raises; this never raises:
    a bad setting or an SGLang the guard cannot hook is logged, and the server runs on.
    """
    if not os.environ.get("AUXCHECK_GUARD", "").strip():
        return
    from auxcheck._guard.live import install

    install()


def current_guard() -> Guard | None:
    """Returns the guard :func:`register` installed in this process, or None."""
    module = sys.modules.get("auxcheck._guard.live")
    if module is None:
        return None
    guard: Guard | None = module.active()
    return guard
