"""The finding for plugin code that pytest stopped (an :class:`Interrupted` call)."""

from __future__ import annotations

from auxcheck._core.errors import Interrupted
from auxcheck._core.plugin_calls import attempt, kind_name, summarize
from auxcheck._core.report import Finding

__all__ = ["interrupted_finding"]


def interrupted_finding(stop: Interrupted) -> Finding:
    """Returns the finding: what was running, stopped by pytest, and pytest's message."""
    text = attempt(str, stop.outcome).value
    message = text.splitlines()[0] if type(text) is str and text else kind_name(stop.outcome)
    return Finding.of(stop.code, f"{stop.what} did not finish: pytest stopped it "
                      f"({message})", "expected plugin code to return well within the "
                      "test's time limit", None, detail=summarize(stop.outcome))
