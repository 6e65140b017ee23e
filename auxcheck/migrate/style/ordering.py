"""Where ruff and isort put a module (its section), and how they order members and statements."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from auxcheck._core.paths import is_dir, is_file
from auxcheck.migrate.style.model import (
    FIRST_PARTY,
    FUTURE,
    LOCAL_FOLDER,
    STDLIB,
    THIRD_PARTY,
    ImportStyle,
    Kind,
)

__all__ = ["NatOrd", "as_clause", "isort_line_key", "isort_member_text", "member_key", "natural",
           "section_of", "statement_key"]


# ------------------------------------------------------------------------ sections


def section_of(style: ImportStyle, level: int, module: str) -> int:
    """Returns the section (FUTURE .. LOCAL_FOLDER) the tool puts a module in.

    Relative imports are local-folder; then ``__future__``; then the ``known_*``
    lists (most specific dotted prefix first; fnmatch patterns); then the
    standard library (:data:`sys.stdlib_module_names`); then modules found in the
    style's ``src`` folders are first-party; anything else is third-party.
    """
    if level > 0:
        return LOCAL_FOLDER
    base = module.split(".")[0]
    if base == "__future__":
        return FUTURE
    known = _known_section(style, module)
    if known is not None:
        return known
    if base in sys.stdlib_module_names:
        return STDLIB
    return FIRST_PARTY if _in_src(style, module) else THIRD_PARTY


def _known_section(style: ImportStyle, module: str) -> int | None:
    lists = [(FIRST_PARTY, style.known_first_party), (THIRD_PARTY, style.known_third_party),
             (LOCAL_FOLDER, style.known_local_folder), (STDLIB, style.extra_standard_library)]
    if style.tool == "isort":  # isort tries the later sections' patterns first
        lists = [lists[2], lists[0], lists[1], lists[3]]
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        for section, patterns in lists:
            if any(fnmatchcase(prefix, pattern) for pattern in patterns):
                return section
    return None


def _in_src(style: ImportStyle, module: str) -> bool:
    parts = module.split(".")
    for folder in map(Path, style.src):
        if style.tool == "isort":
            candidate = folder / parts[0]
            if (is_dir(candidate) or is_file(candidate.with_suffix(".py"))
                    or folder.name == parts[0] and is_dir(folder)):
                return True
            continue
        candidate = folder.joinpath(*parts)
        if is_dir(candidate) or any(is_file(candidate.with_suffix(s)) for s in (".py", ".pyi")):
            return True
    return False


# ------------------------------------------------------------------------ ordering


@functools.total_ordering
class NatOrd:
    """A string compared as ruff compares names (the ``natord`` crate).

    Runs of digits compare by value, or digit by digit when either run starts
    with ``0``; every other character compares by code point, so ``.`` sorts
    before digits.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NatOrd) and _natord(self.text, other.text) == 0

    def __lt__(self, other: NatOrd) -> bool:
        return _natord(self.text, other.text) < 0

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"NatOrd({self.text!r})"


def _natord(left: str, right: str) -> int:
    i = j = 0
    while True:
        while i < len(left) and left[i].isspace():
            i += 1
        while j < len(right) and right[j].isspace():
            j += 1
        if i >= len(left) or j >= len(right):
            return (i < len(left)) - (j < len(right))
        a, b = left[i], right[j]
        if a in _DIGITS and b in _DIGITS:
            order, i, j = _natord_digits(left, i, right, j)
            if order:
                return order
            continue
        if a != b:
            return -1 if a < b else 1
        i, j = i + 1, j + 1


_DIGITS = frozenset("0123456789")


def _natord_digits(left: str, i: int, right: str, j: int) -> tuple[int, int, int]:
    fractional = left[i] == "0" or right[j] == "0"
    bias = 0
    while True:
        a = i < len(left) and left[i] in _DIGITS
        b = j < len(right) and right[j] in _DIGITS
        if not (a or b):
            return bias, i, j
        if a != b:
            return (1 if a else -1), i, j
        if left[i] != right[j] and (fractional or not bias):
            bias = -1 if left[i] < right[j] else 1
            if fractional:
                return bias, i, j
        i, j = i + 1, j + 1


def natural(text: str) -> tuple[object, ...]:
    """isort's natural key: digit runs become numbers."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def _option(value: object | None) -> tuple[object, ...]:
    return (0,) if value is None else (1, value)


def _member_type(name: str) -> int:
    if len(name) > 1 and name.isupper():
        return 0  # CONSTANT
    return 1 if name[:1].isupper() else 2  # Class, variable


def member_key(style: ImportStyle, name: str, asname: str | None) -> tuple[object, ...]:
    """Returns the key that orders the members of a ``from`` import as the tool does.

    ruff: star first, then CONSTANT/Class/variable when ``order_by_type``, then
    the lower-cased name unless ``case_sensitive``, then the name and asname, all
    in natord order.  isort: ``force_to_top``, the type, the (lower-cased) name in
    natural order; a name's plain import comes before its aliases, which isort
    orders by their text.  isort keeps the input order of names that tie.
    """
    if style.tool == "isort":
        return (natural(isort_member_text(style, name)),
                *_option(None if asname is None else natural(f"{name} as {asname}")))
    return (name != "*", _member_type(name) if style.order_by_type else 0,
            0 if style.case_sensitive else NatOrd(name.lower()), NatOrd(name),
            *_option(None if asname is None else NatOrd(asname)))


def isort_member_text(style: ImportStyle, name: str) -> str:
    """Returns the text isort sorts a member by (force_to_top, then its type, then the name)."""
    prefix = ""
    if style.order_by_type:
        prefix = "ABC"[_member_type(name)]
    text = name if style.case_sensitive else name.lower()
    return f"{'A' if text in style.force_to_top else 'B'}{prefix}{text}"


def _isort_module_text(style: ImportStyle, module: str) -> str:
    match = re.match(r"^(\.+)\s*(.*)", module)
    if match:
        separator = " " if style.relative_order == "closest-to-furthest" else "_"
        module = separator.join(match.groups())
    text = module if style.case_sensitive else module.lower()
    return f"{'A' if text in style.force_to_top else 'B'}{text}"


def statement_key(style: ImportStyle, *, kind: Kind, level: int, module: str,
                  first: tuple[str, str | None] | None = None, asname: str | None = None,
                  names: Sequence[tuple[str, str | None]] | None = None) -> tuple[object, ...]:
    """Returns the key that orders statements inside one section as the tool does.

    ``kind="import"`` is ``import <module> [as <asname>]``; ``kind="from"`` is
    ``from <level dots><module> import ...`` whose first (sorted) member is
    ``first``.  Without ``force_sort_within_sections`` every ``import`` comes
    before every ``from`` (the reverse with ``from_first`` and in the future
    section).  ruff then compares the relative level, the module (lower-cased
    unless ``case_sensitive``, natord), the first member and the asname.  isort
    compares the module alone (natural order), so statements of one module keep
    the order :func:`render_from` gives them; with ``force_sort_within_sections``
    isort compares the whole statement text, which needs ``names`` (all members).
    """
    if style.tool == "isort":
        return _isort_statement_key(style, kind, level, module, asname,
                                    list(names) if names is not None else
                                    [first] if first is not None else [])
    module_key = _ruff_module_key(style, kind, level, module, first, asname)
    if style.force_sort_within_sections:
        return module_key
    return (_kind_rank(style, kind, level, module), *module_key)


def _kind_rank(style: ImportStyle, kind: Kind, level: int, module: str) -> int:
    from_first = style.from_first or section_of(style, level, module) == FUTURE
    return int((kind == "from") != from_first)


def _ruff_module_key(style: ImportStyle, kind: Kind, level: int, module: str,
                     first: tuple[str, str | None] | None,
                     asname: str | None) -> tuple[object, ...]:
    name = module or None
    if level == 0:
        distance: tuple[int, int] = (2, 0)
    elif style.relative_order == "closest-to-furthest":
        distance = (0, level)
    else:
        distance = (1, -level)
    lower = None if name is None or style.case_sensitive else NatOrd(name.lower())
    alias = None if first is None or kind == "import" else member_key(style, *first)
    return (name not in style.force_to_top, distance, *_option(lower),
            *_option(None if name is None else NatOrd(name)), *_option(alias),
            *_option(None if asname is None else NatOrd(asname)))


def _isort_statement_key(style: ImportStyle, kind: Kind, level: int, module: str,
                         asname: str | None,
                         names: Sequence[tuple[str, str | None]]) -> tuple[object, ...]:
    dotted = "." * level + module
    # isort orders by module first; force_sort_within_sections re-sorts that, stably.
    normal = (_kind_rank(style, kind, level, module), natural(_isort_module_text(style, dotted)))
    if not style.force_sort_within_sections:
        return normal
    if kind == "import":
        return (*isort_line_key(style, f"import {dotted}{as_clause(asname)}"), *normal)
    members = ", ".join(f"{name}{as_clause(alias)}" for name, alias in names)
    return (*isort_line_key(style, f"from {dotted} import {members}"), *normal)


def isort_line_key(style: ImportStyle, text: str) -> tuple[object, ...]:
    """isort's force_sort_within_sections key of a rendered statement."""
    code = " ".join(part.split("#", 1)[0] for part in text.splitlines())
    line = " ".join(code.translate(str.maketrans("", "", "(),\\")).split())
    match = re.match(r"^from (\.+)\s*(.*)", line)
    if match and style.relative_order == "closest-to-furthest":  # isort's reverse_relative
        line = f"from {' '.join(match.groups())}"
    line = re.sub("^import ", "", re.sub("^from ", "", line))
    top = "A" if line.split(" ")[0] in style.force_to_top else "B"
    if not style.order_by_type:
        line = line.lower()
    return (natural(top + line),)


def as_clause(asname: str | None) -> str:
    """Returns `` as <asname>``, or nothing without an asname."""
    return "" if asname is None else f" as {asname}"
