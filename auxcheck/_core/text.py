"""Small wording helpers shared by every report and command (standard library only)."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, noun: str) -> str:
    """Returns ``3 files``, ``1 file``: ``count`` and ``noun``, plural unless one."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
