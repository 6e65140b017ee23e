"""Which files can hold a use of a moved name, decided from their bytes without parsing.

``auxcheck migrate`` parses only the files this test passes, so it must never turn away a
file the scanner would report (it may let through files the scanner then finds clean).
A use of module ``a.b.c`` always spells ``c``: after a dot (``import a.b.c``,
``from .c import X``, ``a.b.c.X``, ``"a.b.c.X"``), in an import list (``from a.b import c``)
or at the start of a string or a formatted field's tail (``"c.X"``, ``f"{p}c.X"``, and
``"c"`` alone, a constant an f-string may join: ``f"{PKG}.{MOD}.X"``). Where
the bytes after ``c`` show what is taken from it (``c.X``, ``c import X, Y``), the file
passes only when one of those is a name moved out of a module ending in ``c``; anywhere
else (``import a.b.c as m``, ``from a.b import c``, ``"a.b.c"``) it passes when a name
moved out of such a module appears anywhere in it as a whole word. Star and dynamic
imports (``import *``, ``import_module``, ``__import__``) let a file through on the old,
looser test: an old module's last part and any moved name anywhere in it.

Each test is one regular expression over the file (a trie of the old modules' last parts
after a literal first character), so a table of thousands of inferred moves costs a few
times the built-in one rather than a thousand substring searches per file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["UseFilter"]

_MARKER = re.compile(rb"import(?:[ \t]*\*|_module|__)")
"""Star and dynamic imports (``import *``, ``import_module``, ``__import__``): such a file
is let through on the looser test."""

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_IMPORT_LIST = re.compile(rb"import[ \t]*(\([^)]*\)?|(?:[^\n\\]|\\\r?\n|\\)*)")
"""The names after an ``import`` keyword: a parenthesized list, or the rest of the line
with its backslash continuations."""
_DOTTED_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:[ \t]*\.[ \t]*[A-Za-z_][A-Za-z0-9_]*)*")
_FROM_MODULE = re.compile(rb"(?:^|;)[ \t]*from[ \t]+(\.*[A-Za-z0-9_.]*)[ \t]*\Z")
"""The start of a ``from MODULE import`` statement, up to ``import``."""
_FROM_IMPORT = re.compile(
    rb"[ \t]+import[ \t]*(\([^)]*\)?|(?:[^\n\\]|\\\r?\n|\\)*)")
"""What follows ``from MODULE``: the names it imports."""


_DOTTED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
_JOINS = (b"+", b'"', b"'", b"%")
"""What may join a string to the next piece of a dotted name."""
_NAME_STARTS = frozenset(
    bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_{")
"""What may follow ``a.c:`` in an entry-point target: a name, or a formatted field."""
_Node = dict[str, "_Node"]


def _trie(words: Iterable[str]) -> str:
    """Returns a regular expression matching exactly ``words``, factored as a trie (the
    ``re`` engine tries alternatives one by one; a trie tries one per character)."""
    root: _Node = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: _Node) -> str:
        ends = "" in node
        branches = [re.escape(char) + pattern(child)
                    for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if len(branches) == 1 and len(body) > 1 and not body.startswith("(?:"):
            body = "(?:" + body + ")"
        return body + "?" if ends else body

    return pattern(root)


class UseFilter:
    """The byte test for one moves table: ``filter(data)`` is False only for a file in
    which no use of an old module's moved name can be written."""

    __slots__ = ("_lasts", "_names", "_old", "_spelled", "_tops", "_words")

    def __init__(self, names_by_old: Mapping[str, Iterable[str]]) -> None:
        names: dict[bytes, set[bytes]] = {}
        for old, moved in names_by_old.items():
            parts = old.split(".")
            for first in range(len(parts)):
                names.setdefault(".".join(parts[first:]).encode(), set()).update(
                    n.encode() for n in moved)
        self._names = {tail: frozenset(moved) for tail, moved in names.items()}
        """{an old module's last parts (``c``, ``b.c``, ``a.b.c``): every name moved out of a
        module ending in them}."""
        self._lasts = tuple(sorted({old.rpartition(".")[2].encode() for old in names_by_old}))
        self._words = frozenset(self._lasts)
        self._old = frozenset(old.encode() for old in names_by_old)
        self._tops = frozenset(old.partition(".")[0].encode() for old in names_by_old)
        """The old modules' last parts, which an import list can name (``from a.b import c``)."""
        trie = _trie(sorted(last.decode() for last in self._lasts)) if self._lasts else "(?!)"
        self._spelled = re.compile(rf"([.\"'}}])({trie})(?![A-Za-z0-9_])".encode())
        """An old module's last part after a dot, or starting a string or an f-string's
        literal part."""

    def __call__(self, data: bytes) -> bool:
        """Returns True when ``data`` (a file's bytes) can hold a use of a moved name."""
        if _MARKER.search(data):
            return any(last in data for last in self._lasts)
        loose: set[bytes] = set()
        bound = self._imports(data, loose)
        for found in self._spelled.finditer(data):
            opening, last, end = found.group(1), found.group(2), found.end()
            if opening == b".":
                listed = _FROM_IMPORT.match(data, end)
                tail = self._tail(data, found.start(), last, bound, imported=listed is not None)
                if tail is None:
                    continue
                verdict = (self._listed(listed.group(1), tail) if listed is not None
                           else self._attribute(data, tail, end))
            else:  # a string (or an f-string's literal part) starting with it
                tail = last
                follows = data[end:end + 1]
                if follows == b".":
                    verdict = self._attribute(data, last, end)
                elif (_joined(data, found.start(), end, opening)
                      or (follows == opening and _formatted_constant(data, found.start()))):
                    verdict = None  # joined to other pieces now, or later by an f-string
                else:
                    verdict = False
            if verdict:
                return True
            if verdict is None:
                loose.add(tail)
        if not loose:
            return False
        wanted = frozenset().union(*(self._names[tail] for tail in loose))
        return not wanted.isdisjoint(_WORD.findall(data))

    def _imports(self, data: bytes, loose: set[bytes]) -> frozenset[bytes]:
        """Returns every word the import statements of ``data`` list (the names they may
        bind); adds to ``loose`` the old modules they bind whole (``import a.b.c as m``,
        ``from a.b import c``), whose moved names may then be used under any name."""
        words: set[bytes] = set()
        for found in _IMPORT_LIST.finditer(data):
            names = found.group(1)
            listed = _WORD.findall(names)
            words.update(listed)
            line = data[data.rfind(b"\n", 0, found.start()) + 1:found.start()].strip()
            if not line or line.endswith(b";"):  # import a.b.c [as m], ...
                loose.update(self._old.intersection(_DOTTED_NAME.findall(names)))
                continue
            module = _FROM_MODULE.search(line)
            if module is None:  # not an import statement: a string, a comment
                continue
            above = module.group(1).lstrip(b".")
            for word in self._words.intersection(listed):
                tail = above + b"." + word if above else word
                if tail in self._names:
                    loose.add(tail)
        return frozenset(words)

    def _tail(self, data: bytes, dot: int, last: bytes, bound: frozenset[bytes], *,
              imported: bool) -> bytes | None:
        """Returns the parts of the dotted name ending ``.last`` at ``dot`` that an old module
        must end with, or None when none can (no old module ends so, or the name is no
        module). The name is whole after ``from``/``import`` (``imported``) or a quote;
        relative, whole after its dots; whole when it starts with an old module's top
        package (``sglang.srt.utils``, in code or in a string); else its first part must be
        bound by an import and may be an alias (``s.utils`` for ``import a.srt as s``). A
        decorator is no module (a module cannot be called)."""
        start = dot
        while start > 0 and data[start - 1] in _DOTTED:
            start -= 1
        before, opening = data[start:dot], data[start - 1:start] if start else b""
        if opening == b"@":
            return None
        if before.startswith(b".") or imported or opening in (b'"', b"'") or (
                data[data.rfind(b"\n", 0, start) + 1:start].strip() == b"import"):
            before = before.lstrip(b".")
        else:
            first, _, rest = before.partition(b".")
            if first not in self._tops:  # an alias bound by an import, or no module at all
                if first and first not in bound:
                    return None
                before = rest
        tail = before + b"." + last if before else last
        return tail if tail in self._names else None

    def _listed(self, names: bytes, tail: bytes) -> bool | None:
        """Judges ``from MODULE import NAMES`` for a MODULE ending in ``tail``."""
        if b"*" in names or any(word in self._names[tail] for word in _WORD.findall(names)):
            return True
        # A comment inside the parentheses may hold a ")" that ended the list early.
        return None if b"#" in names else False

    def _attribute(self, data: bytes, tail: bytes, end: int) -> bool | None:
        """Judges a module ending in ``tail`` spelled up to ``end`` by what follows.

        True for ``.MOVED`` or ``:MOVED`` (an entry-point target ``"a.c:X"``), for a name
        computed at run time (``"a.c." + x``, ``f"a.c:{x}"``: reported whatever it is) and
        for one a string's end cuts (``"a.c.na" "me"``); False for another name, a call or a subscript (a module is neither called nor
        subscripted); None otherwise (``import a.c as m``, ``"a.c"``, ``m = a.c``: the
        whole file decides).
        """
        follows = data[end:end + 1]
        if follows in (b"(", b"["):
            return False
        if follows == b":":
            if data[end + 1:end + 2] not in _NAME_STARTS:
                return None
        elif follows != b".":
            return None
        name = _WORD.match(data, end + 1)
        if name is None:
            return True
        if name.group() in self._names[tail]:
            return True
        # A name cut by a string's end may go on in the next string ("a.c.na" "me").
        return data[name.end():name.end() + 1] in (b"'", b'"') and _joined_after(
            data, name.end())


_ASSIGNED = re.compile(rb"(?:^|;)[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?::[^=\n]*)?=[ \t]*\Z")
"""A constant's assignment, up to the opening quote of its value: ``MOD = "``."""


def _formatted_constant(data: bytes, start: int) -> bool:
    """Returns True when the string opening at ``start`` is a constant's whole value
    (``MOD = "c"``) and an f-string of the file formats that constant (``{MOD}``)."""
    line = data[data.rfind(b"\n", 0, start) + 1:start]
    assigned = _ASSIGNED.search(line)
    if assigned is None:
        return False
    field = rb"\{[ \t]*" + re.escape(assigned.group(1)) + rb"[ \t]*(?:![sr][ \t]*)?\}"
    return re.search(field, data) is not None


def _joined(data: bytes, start: int, end: int, opening: bytes) -> bool:
    """Returns True when the string piece at ``start:end`` (from its opening quote, or a
    formatted field's ``}``, to just before its closing quote) may be joined to others into
    a dotted name: it is inside an f-string, or next to ``+``, ``%``, ``.format`` or
    another string."""
    if opening == b"}":
        return True
    return data[max(0, start - 16):start].rstrip()[-1:] in _JOINS or _joined_after(data, end)


def _joined_after(data: bytes, end: int) -> bool:
    """Returns True when the string closed by the quote at ``end`` is followed by ``+``, ``%``,
    ``.format`` or another string."""
    after = data[end + 1:end + 17].lstrip()
    return after[:1] in _JOINS or after.startswith(b".format")
