"""Small wording helpers shared by every report and command (standard library only)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["close_names", "did_you_mean", "plural", "shortened"]


def shortened(text: str, limit: int = 80) -> str:
    """Returns ``text`` on one line (runs of whitespace made one space), cut to ``limit``
    characters with ``...`` when longer: source quoted in a message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def plural(count: int, noun: str) -> str:
    """Returns ``3 files``, ``1 file``: ``count`` and ``noun``, plural unless one."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def close_names(name: str, candidates: Iterable[str], *, limit: int = 3,
                cutoff: float = 0.6) -> list[str]:
    """Returns up to ``limit`` of ``candidates`` closest to ``name``, closest first.

    difflib's ratio, at least ``cutoff``: at its default (0.6) a typo or a changed suffix
    matches, an unrelated name does not; among thousands of candidates (every top-level
    module) a higher one keeps only typos. Only the names about as close as the closest
    are kept (within 0.1 of its ratio): ``make_observer`` for ``make_observr``, without
    ``Observer``. ``name`` itself is never among them.
    """
    import difflib  # only when a name is not found: not on every command's start-up

    pool = sorted({c for c in candidates if c != name})
    near = difflib.get_close_matches(name, pool, n=limit, cutoff=cutoff)
    ratios = [difflib.SequenceMatcher(None, c, name).ratio() for c in near]
    return [c for c, ratio in zip(near, ratios, strict=True) if ratio >= ratios[0] - 0.1]


def did_you_mean(options: Sequence[str]) -> str:
    """Returns ``"; did you mean a, b or c?"`` for ``options``, or ``""`` when there is none."""
    if not options:
        return ""
    listed = options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"
    return f"; did you mean {listed}?"
