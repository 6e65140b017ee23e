"""What libcst import statements say: their names, comments, blocks and the sorters' marks."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import libcst as cst
from libcst.helpers import get_full_name_for_node

from auxcheck._core.pyast import IMPORT_ERROR_CATCHERS

__all__ = ["EMPTY", "Addition", "Fallback", "Kind", "Names", "alias_items", "catches_import_error",
           "ends_block", "frozen_statements", "has_comment", "has_magic_comma", "is_type_checking",
           "keeps_import_order", "last_name", "module_binding", "module_text", "single_import", "starts_block",
           "type_checking_bound"]


EMPTY = cst.Module(body=[])
Names = list[tuple[str, "str | None"]]
Kind = Literal["from", "import"]
Fallback = tuple[Kind, int, str, tuple[str, "str | None"]]
"""How a name is imported the old way: (kind, level, module text, (name, asname))."""


@dataclass(slots=True)
class Addition:
    """An import to add to one statement list: ``from module import names`` or, for
    ``kind == "import"``, ``import module [as alias]`` (``names`` is then
    ``[(module, alias)]``)."""

    kind: Kind
    level: int
    module: str
    names: Names
    anchor: int
    fallbacks: dict[tuple[str, str | None], Fallback] = field(default_factory=dict)
    """For --compat: each name -> how it is imported the old way."""
    comments: list[cst.EmptyLine] = field(default_factory=list)
    """The comment lines above the user's statement, when it moves whole."""
    comment: str | None = None
    """The comment ending the user's statement (``# noqa: F401``), when it moves whole."""
    member_comments: dict[tuple[str, str | None], str] = field(default_factory=dict)
    """Each name's own comment from inside the user's parentheses."""
    original: cst.ImportFrom | None = None
    """The user's statement when it moves whole: re-pointed in place, comments and all."""
    trailing: cst.TrailingWhitespace | None = None
    """The end of the user's line when it moves whole, kept byte for byte where it stays
    as written (a region the sorters skip, a --compat fallback)."""

    @property
    def key(self) -> tuple[str, int, str, str | None]:
        """Returns what additions merge on: a module's from-import, or one import statement."""
        alias = self.names[0][1] if self.kind == "import" else None
        return (self.kind, self.level, self.module, alias)


def single_import(stmt: cst.BaseStatement) -> cst.Import | cst.ImportFrom | None:
    """Returns the import a line holds when it holds one statement, an import; else None."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            return small
    return None


def module_binding(module: str, alias: str | None) -> Fallback:
    """Returns how to write ``import module as alias`` as ruff and pylint would have it:
    ``from parent import last`` when ``alias`` is the module's last name (PLR0402 flags
    ``import a.b as b``), else the import itself; as (kind, level, module text, name)."""
    parent, _, last = module.rpartition(".")
    if parent and alias == last:
        return ("from", 0, parent, (last, None))
    return ("import", 0, module, (module, alias))


def module_text(node: cst.ImportFrom) -> str:
    """Returns the dotted module a ``from`` import names, without its leading dots."""
    return get_full_name_for_node(node.module) or "" if node.module else ""


def alias_items(names: Sequence[cst.ImportAlias]) -> Names:
    """Returns the ``(name, asname)`` pairs of an import's names."""
    items: Names = []
    for alias in names:
        asname = alias.asname.name if alias.asname else None
        items.append((get_full_name_for_node(alias.name) or "",
                      asname.value if isinstance(asname, cst.Name) else None))
    return items


def has_comment(node: cst.CSTNode) -> bool:
    """Returns True when the code of ``node`` holds a comment."""
    return "#" in EMPTY.code_for_node(node)


def has_magic_comma(node: cst.ImportFrom) -> bool:
    """Returns True when the names end with a comma inside parentheses."""
    return (node.rpar is not None and isinstance(node.names, Sequence)
            and isinstance(node.names[-1].comma, cst.Comma))


def starts_block(stmt: cst.BaseStatement) -> bool:
    """Returns True when a blank line or ``# isort: split`` above ``stmt`` starts a new block."""
    lines = getattr(stmt, "leading_lines", ())
    return any(line.comment is None or _SPLIT.match(line.comment.value) for line in lines)


def ends_block(stmt: cst.BaseStatement) -> bool:
    """Returns True for an import ending ``# isort: split``: no import moves across it."""
    trailing = getattr(stmt, "trailing_whitespace", None)
    comment = trailing.comment if isinstance(trailing, cst.TrailingWhitespace) else None
    return comment is not None and _SPLIT.match(comment.value) is not None


def type_checking_bound(body: Sequence[cst.BaseStatement]) -> str | None:
    """Returns how ``body`` names ``typing.TYPE_CHECKING`` by importing it, if it does under
    a spelling type checkers read as the flag (``TYPE_CHECKING`` or ``<module>.TYPE_CHECKING``;
    never an alias such as ``TYPE_CHECKING as TC``, whose ``if`` they read both branches of)."""
    for stmt in body:
        node = single_import(stmt)
        if isinstance(node, cst.ImportFrom) and not node.relative and module_text(node) in (
                "typing", "typing_extensions") and isinstance(node.names, Sequence):
            for name, asname in alias_items(node.names):
                if name == "TYPE_CHECKING" and asname in (None, name):
                    return name
        elif isinstance(node, cst.Import):
            for name, asname in alias_items(node.names):
                if name == "typing":
                    return f"{asname or name}.TYPE_CHECKING"
    return None


_SPLIT = re.compile(r"#\s*(?:ruff:\s*)?isort:\s*split\b")
_REGION = re.compile(r"#\s*(?:(?:ruff:\s*)?isort|fmt|yapf):\s*(off|on|disable|enable)\b")
_SKIP = re.compile(r"#.*\b(?:(?:ruff:\s*)?isort|fmt):\s*skip\b(?!_)")
_SKIP_FILE = re.compile(
    r"^\s*#\s*(?:ruff:\s*)?isort:\s*skip_file\b|^\s*isort:\s*skip_file\b"
    r"|^\s*#\s*(?:ruff|flake8):\s*noqa\s*(?:$|:[^\n]*\bI(?:001)?\b)", re.MULTILINE)


def keeps_import_order(text: str) -> bool:
    """Returns True when the file asks isort and ruff not to sort its imports at all
    (``# isort: skip_file``, ``# ruff: noqa`` or ``# ruff: noqa: I001``)."""
    return _SKIP_FILE.search(text) is not None


def frozen_statements(body: Sequence[cst.BaseStatement], *, whole: bool) -> set[int]:
    """Returns the indices of the statements the import sorters leave where they are: in a
    ``# isort: off`` / ``# fmt: off`` region, ending ``# isort: skip`` / ``# fmt: skip``,
    or every one when the file keeps its import order (``whole``)."""
    if whole:
        return set(range(len(body)))
    frozen, off = set(), False
    for i, stmt in enumerate(body):
        for line in getattr(stmt, "leading_lines", ()):
            match = _REGION.match(line.comment.value) if line.comment else None
            if match is not None:
                off = match.group(1) in ("off", "disable")
        trailing = getattr(stmt, "trailing_whitespace", None)
        comment = trailing.comment if isinstance(trailing, cst.TrailingWhitespace) else None
        if off or (comment is not None and _SKIP.match(comment.value)):
            frozen.add(i)
    return frozen


def catches_import_error(handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
    """Returns True when the handler catches ImportError (bare, or a class above it)."""
    # The libcst twin of auxcheck._core.pyast.catches_import_error: the scan and the rewrite
    # must agree.
    kinds = handler.type
    if kinds is None:
        return True
    items = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    return any(last_name(n) in IMPORT_ERROR_CATCHERS for n in items)


def last_name(node: cst.BaseExpression) -> str | None:
    """Returns the last name of ``a.b.c`` or ``c``; None for any other expression."""
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else None


def is_type_checking(test: cst.BaseExpression) -> bool:
    """Returns True when an ``if`` test is ``TYPE_CHECKING`` (however it is reached)."""
    return last_name(test) == "TYPE_CHECKING"
