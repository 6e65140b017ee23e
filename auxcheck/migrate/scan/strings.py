"""Dotted targets in strings (``"old.X"``, ``"old:X"``) and the role each string literal plays."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Literal, NamedTuple

from auxcheck.migrate.moves import MoveTable
from auxcheck.migrate.scan.analysis import moved_names

__all__ = [
    "DOTTED",
    "TYPE_EXPRESSION",
    "TYPE_FORMS",
    "StringRole",
    "StringTarget",
    "TargetVerdict",
    "alias_spans",
    "argument_role",
    "assigned_role",
    "rewrite_string",
    "string_targets",
    "subscript_roles",
    "target_names",
    "target_spans",
]

TYPE_EXPRESSION = re.compile(r"[\w\s.,\[\]|]+")
"""The characters a string that is a whole type expression is made of (``"m.X | None"``)."""

DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_]\w*)?")
"""A dotted name, optionally ``module:attribute`` (SGLang hook targets): a candidate target."""


@lru_cache(maxsize=16)
def _tops(moves: MoveTable) -> tuple[str, ...]:
    return tuple(sorted({old.partition(".")[0] for old in moves.old_modules}))


def target_spans(text: str, moves: MoveTable) -> list[tuple[int, int, str, str]]:
    """Returns ``(start, end, old, new)`` for each old module named in a dotted target.

    A target is ``"old.X"`` or ``"old:X"`` (``mock.patch`` and SGLang hook-registry
    targets) for a name ``X`` that left ``old``; ``start:end`` spans the ``old`` part,
    so ``"old.X.method"`` keeps ``.X.method``. The longest old module wins.
    """
    return [(start, end, old, new) for start, end, old, new, _ in _target_tokens(text, moves)]


def _target_tokens(text: str, moves: MoveTable) -> list[tuple[int, int, str, str, int]]:
    """Returns target_spans with, last, where the whole dotted token ends."""
    if not any(top in text for top in _tops(moves)):
        return []  # the cheap test: most strings name no old module's package at all
    moved = moved_names(moves)
    spans = []
    for match in DOTTED.finditer(text):
        token = match.group()
        module, colon, attribute = token.partition(":")
        parts = module.split(".")
        if colon:
            found = [(len(parts), attribute)] if attribute in moved.get(module, {}) else []
        else:
            found = [(k, parts[k]) for k in range(len(parts) - 1, 0, -1)
                     if parts[k] in moved.get(".".join(parts[:k]), {})][:1]
        for k, name in found:
            old = ".".join(parts[:k])
            spans.append((match.start(), match.start() + len(old), old, moved[old][name],
                          match.end()))
    return spans


def target_names(text: str, moves: MoveTable) -> list[tuple[str, str]]:
    """Returns ``(old, moved name)`` for each dotted target in ``text``."""
    names = []
    for start, end, old, _, token_end in _target_tokens(text, moves):
        rest = text[end + 1:token_end]
        names.append((old, re.split(r"[.:]", rest, maxsplit=1)[0]))
    return names


def alias_spans(text: str, moves: MoveTable,
                aliases: Mapping[str, str]) -> list[tuple[int, int, str, str, str]]:
    """Returns ``(start, end, owner, name, new)`` for each ``owner.name`` in a type expression.

    Only strings that are whole type expressions (string annotations such as
    ``"m.CommittedTokens | None"``) are read, for a module alias ``owner`` of an old
    module and a ``name`` that left it; ``start:end`` spans ``owner``.
    """
    if not aliases or not TYPE_EXPRESSION.fullmatch(text):
        return []
    moved = moved_names(moves)
    spans = []
    for match in DOTTED.finditer(text):
        owner, _, name = match.group().rpartition(".")
        old = aliases.get(owner)
        new = moved.get(old, {}).get(name) if old is not None else None
        if new is not None:
            spans.append((match.start(), match.start() + len(owner), owner, name, new))
    return spans


def rewrite_string(text: str, moves: MoveTable, aliases: Mapping[str, str] | None = None,
                   replacements: Mapping[tuple[str, str], str] | None = None,
                   module_text: Callable[[str, str], str] | None = None, *,
                   annotation: bool = False) -> str | None:
    """Returns ``text`` with dotted targets of moved names pointed at their new module.

    ``"old.X"`` and ``"old:X"`` become ``"new.X"`` / ``"new:X"`` anywhere (or
    ``module_text(old, new)`` in place of ``old`` when given); ``"m.X"`` for a module
    alias ``m`` (``aliases``: alias -> old module) is rewritten only in strings that are
    whole type expressions, to ``replacements[(m, new)]`` (the alias itself when
    missing). In an ``annotation``, ``"old.X"`` becomes ``replacements[(old, new)]``
    when the file imports ``old`` by its dotted name (the name the rewrite binds).
    Returns None when nothing changes.
    """
    chosen = replacements if annotation and replacements else {}
    edits: list[tuple[int, int, str]] = [
        (start, end, chosen.get((old, new)) or (module_text(old, new) if module_text else new))
        for start, end, old, new in target_spans(text, moves)]
    for start, end, owner, _, new in alias_spans(text, moves, aliases or {}):
        if not any(s <= start < e for s, e, _ in edits):
            edits.append((start, end, (replacements or {}).get((owner, new), owner)))
    result = text
    for start, end, value in sorted(edits, reverse=True):
        result = result[:start] + value + result[end:]
    return None if result == text else result


TargetVerdict = Literal["fix", "unsafe", "dynamic", "unspelled"]


class StringTarget(NamedTuple):
    """One old module named in a literal part of a string, and whether it may change.

    ``part`` indexes the string's literal parts; ``start:end`` spans ``old`` in that part
    and ``start:stop`` the whole dotted name. ``fix``: the moved name follows literally,
    and ``at`` is where ``old`` starts in the source text (-1 when not known);
    ``unsafe``: a replacement field touches the dotted name (``f"{p}old.X"``,
    ``f"old.X{s}"``), so the name at run time is not the one written; ``dynamic``: the
    attribute itself is a field (``f"old.{n}"``); ``unspelled``: the source spells the
    name with escapes, a line continuation or across implicit concatenation, so no edit
    of the source text reaches it.
    """

    part: int
    start: int
    end: int
    stop: int
    old: str
    new: str
    verdict: TargetVerdict
    at: int = -1


_DYNAMIC_TAIL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)[.:]$")


def string_targets(parts: Sequence[str | None], moves: MoveTable,
                   source: str | None = None) -> list[StringTarget]:
    """Returns every old module named in a string's literal parts, with its verdict.

    ``parts`` are the string's pieces in order (one for a plain string): the decoded text
    of each literal part, None for each replacement field. ``source`` is the string's
    source text: a name is spelled there when each of its occurrences in the text is
    written out literally, and the k-th occurrence in the text is the k-th in the source.
    The scan and the rewrite both ask this, so they agree on what may be rewritten.
    """
    found: list[StringTarget] = []
    for i, text in enumerate(parts):
        if text is None:
            continue
        after_field = i > 0 and parts[i - 1] is None
        before_field = i + 1 < len(parts) and parts[i + 1] is None
        for start, end, old, new, stop in _target_tokens(text, moves):
            touched = (after_field and start == 0) or (before_field and stop == len(text))
            found.append(StringTarget(i, start, end, stop, old, new,
                                      "unsafe" if touched else "fix"))
        tail = _DYNAMIC_TAIL.search(text) if before_field else None
        if tail is not None and tail.group(1) in moves.old_modules and not (
                after_field and tail.start() == 0):
            found.append(StringTarget(i, tail.start(1), tail.end(1), tail.end(1),
                                      tail.group(1), "", "dynamic"))
    return found if source is None else _located(parts, found, source)


def _located(parts: Sequence[str | None], found: list[StringTarget],
             source: str) -> list[StringTarget]:
    """Returns ``found`` with each fixable target placed in ``source``, or unspelled."""
    located = []
    for target in found:
        if target.verdict != "fix":
            located.append(target)
            continue
        token = (parts[target.part] or "")[target.start:target.stop]
        word = re.compile(r"(?<![\w.])" + re.escape(token) + r"(?!\w|\.[A-Za-z_])")
        written = [m.start() for m in word.finditer(source)]
        before = [m.start() for i, text in enumerate(parts) if text is not None
                  for m in word.finditer(text)
                  if (i, m.start()) < (target.part, target.start)]
        every = sum(len(word.findall(text)) for text in parts if text is not None)
        if len(written) != every:
            located.append(target._replace(verdict="unspelled"))
        else:
            located.append(target._replace(at=written[len(before)]))
    return located


StringRole = Literal["runtime", "type", "value"]
"""How a string literal is read. ``runtime``: text code passes around (``mock.patch``
targets, hook paths); in --compat a target names the module found at import time.
``type``: a type expression (annotations, ``cast``, typing forms); ``m.X`` through a module
alias is rewritten and the module it names must be imported. ``value``: a literal compared
or stored as written (a ``case`` pattern, ``Literal[...]``, ``Annotated`` metadata, a
docstring); rewritten as plain text, never turned into an f-string."""

TYPE_FORMS = frozenset({
    "AbstractSet", "Annotated", "AsyncGenerator", "AsyncIterable", "AsyncIterator",
    "Awaitable", "Callable", "ClassVar", "Collection", "Container", "Coroutine",
    "DefaultDict", "Deque", "Dict", "Final", "FrozenSet", "Generator", "Iterable", "Iterator",
    "List", "Mapping", "MutableMapping", "MutableSequence", "MutableSet", "NotRequired",
    "Optional", "ReadOnly", "Required", "Sequence", "Set", "Tuple", "Type", "TypeGuard",
    "TypeIs", "Union", "Unpack", "dict", "frozenset", "list", "set", "tuple", "type"})
"""Subscripted forms whose arguments are type expressions even outside an annotation
(``Y = Optional["m.X"]``)."""

_TYPE_ARGUMENTS = {("cast", 0), ("NewType", 1), ("assert_type", 1), ("TypeVar", "bound"),
                   ("TypeVar", "default")}


def subscript_roles(base: str | None, count: int, role: StringRole) -> list[StringRole]:
    """Returns the role of each of the ``count`` elements of ``base[...]`` read in ``role``
    (``base`` is the subscripted name's last part): a typing form's arguments are type
    expressions, ``Literal``'s are values and so is ``Annotated``'s metadata."""
    if base == "Literal" or role == "value":
        return ["value"] * count
    if role != "type" and base not in TYPE_FORMS:
        return [role] * count
    if base == "Annotated":
        metadata: list[StringRole] = ["value"] * (count - 1)
        return ["type", *metadata]
    return ["type"] * count


def argument_role(function: str | None, position: int | str) -> StringRole | None:
    """Returns ``type`` for an argument a call reads as a type expression (``cast(T, x)``,
    ``TypeVar("T", bound=T)``), given the called name's last part and the argument's
    index or keyword; None for any other argument (it keeps the role around it)."""
    return "type" if (function, position) in _TYPE_ARGUMENTS else None


def assigned_role(annotation: str | None) -> StringRole | None:
    """Returns ``type`` for the value of ``X: TypeAlias = ...`` (``annotation`` is the
    annotation's last name); None otherwise."""
    return "type" if annotation == "TypeAlias" else None
