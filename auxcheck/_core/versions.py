"""SGLang release versions as PEP 440 spells them: one grammar for every capability that
reads, compares or orders them (``auxcheck.releases``, the moves table's ``since``)."""

from __future__ import annotations

import re

__all__ = ["VERSION", "release_numbers", "version_key"]

VERSION = re.compile(r"(?P<release>\d+(?:\.\d+)*)(?:(?P<pre>a|b|rc)(?P<pre_n>\d+))?"
                     r"(?:\.post(?P<post>\d+))?(?:\.dev(?P<dev>\d+))?")
"""A release version: ``0.5.23``, ``0.5.20rc1``, ``0.5.23.post1``, ``0.5.23.dev252``."""


def release_numbers(text: str) -> tuple[int, ...] | None:
    """Returns the release part of version ``text`` as numbers without trailing zeros
    (``0.5.20`` and ``0.5.20.0`` are ``(0, 5, 20)``), for ordering; None when ``text`` is no
    version."""
    match = VERSION.fullmatch(text.strip())
    if match is None:
        return None
    parts = [int(p) for p in match["release"].split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def version_key(text: str) -> tuple[object, ...] | None:
    """Returns what makes two versions equal as PEP 440 compares them (release numbers,
    pre-release, post and dev numbers); None when ``text`` is no version."""
    numbers = release_numbers(text)
    match = VERSION.fullmatch(text.strip())
    if numbers is None or match is None:
        return None
    extra = [None if match[g] is None else int(match[g]) for g in ("pre_n", "post", "dev")]
    return (numbers, match["pre"], *extra)
