"""The layout of import statements kept as names come and go: commas, comments, blank lines."""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from auxcheck.migrate.transform.nodes import alias_items

__all__ = ["after_imports", "is_wrapped", "joined_comments", "kept_names", "member_separator",
           "own_comment", "own_lines", "parse_line", "reindented", "split_leading", "suppressed",
           "suppression",
           "uncommented", "with_blank_line", "with_member_comments"]


def joined_comments(first: str | None, second: str | None) -> str | None:
    """Returns two comments as one (``# a  # b``), either alone, or None."""
    if first is None or second is None or second in first:
        return first or second
    return f"{first}  {second}"


_NOQA = re.compile(r"#.*\bnoqa\b", re.IGNORECASE)


def suppression(stmt: cst.SimpleStatementLine, node: cst.Import | cst.ImportFrom) -> str | None:
    """Returns the statement's own noqa comment (ending its line, or after its ``(``), which
    every statement a split makes of it needs; None without one."""
    found = []
    opening = node.lpar.whitespace_after if isinstance(node, cst.ImportFrom) and node.lpar \
        else None
    if isinstance(opening, cst.ParenthesizedWhitespace):
        found.append(opening.first_line.comment)
    found.append(stmt.trailing_whitespace.comment)
    comment = None
    for one in found:
        if one is not None and suppressed(one.value):
            comment = joined_comments(comment, one.value)
    return comment


def suppressed(comment: str | None) -> bool:
    """Returns True when ``comment`` holds a noqa directive."""
    return comment is not None and _NOQA.match(comment) is not None


def is_wrapped(node: cst.ImportFrom) -> bool:
    """Returns True when the statement's names start on a line after its ``(``."""
    return node.lpar is not None and isinstance(node.lpar.whitespace_after,
                                                 cst.ParenthesizedWhitespace)


def with_member_comments(line: cst.SimpleStatementLine,
                          notes: dict[tuple[str, str | None], str]) -> cst.SimpleStatementLine:
    """Returns ``line`` with each name's comment after it: inside its parentheses when
    wrapped, else ending the line (a one-name statement)."""
    node = line.body[0]
    assert isinstance(node, cst.ImportFrom) and isinstance(node.names, Sequence)
    items = alias_items(node.names)
    if not any(n in notes for n in items):
        return line
    if not is_wrapped(node):
        own = line.trailing_whitespace.comment
        joined = own.value if own is not None else None
        for item in items:
            joined = joined_comments(joined, notes.get(item))
        assert joined is not None
        return line.with_changes(trailing_whitespace=cst.TrailingWhitespace(
            cst.SimpleWhitespace("  "), cst.Comment(joined)))
    aliases = []
    for alias, item in zip(node.names, items):
        comma = alias.comma
        if item in notes and isinstance(comma, cst.Comma) and isinstance(
                comma.whitespace_after, cst.ParenthesizedWhitespace):
            space = comma.whitespace_after
            alias = alias.with_changes(comma=comma.with_changes(whitespace_after=space.with_changes(
                first_line=cst.TrailingWhitespace(cst.SimpleWhitespace("  "),
                                                  cst.Comment(notes[item])))))
        aliases.append(alias)
    return line.with_changes(body=[node.with_changes(names=aliases)])


def split_leading(stmt: cst.BaseStatement) -> tuple[list[cst.EmptyLine], list[cst.EmptyLine]]:
    """Returns a statement's leading lines as (blank lines before its comments, the rest)."""
    lines = list(getattr(stmt, "leading_lines", ()))
    first = next((i for i, line in enumerate(lines) if line.comment is not None), len(lines))
    return lines[:first], lines[first:]


def after_imports(stmt: cst.BaseStatement) -> cst.BaseStatement:
    """Returns ``stmt`` with the blank lines ruff and isort want after an import block:
    two before a class or function, one before anything else."""
    _, own = split_leading(stmt)
    count = 2 if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else 1
    return stmt.with_changes(
        leading_lines=[*(cst.EmptyLine(indent=False) for _ in range(count)), *own])


def with_blank_line(stmt: cst.BaseStatement) -> cst.BaseStatement:
    """Returns ``stmt`` with the blank lines ruff wants above it after imports (one, two
    before a class or function), unless it has as many already."""
    blank, own = split_leading(stmt)
    count = 2 if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else 1
    if len(blank) >= count:
        return stmt
    return stmt.with_changes(
        leading_lines=[*(cst.EmptyLine(indent=False) for _ in range(count)), *own])


def own_comment(alias: cst.ImportAlias) -> cst.Comment | None:
    """Returns the comment ending the line of ``alias`` inside parentheses, if any."""
    comma = alias.comma
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after,
                                                    cst.ParenthesizedWhitespace):
        return comma.whitespace_after.first_line.comment
    return None


def member_separator(node: cst.ImportFrom) -> cst.Comma:
    """Returns the comma (no comment) that puts a new name where this statement's names go."""
    opening = node.lpar.whitespace_after if node.lpar is not None else None
    if isinstance(opening, cst.ParenthesizedWhitespace):
        return cst.Comma(whitespace_after=cst.ParenthesizedWhitespace(
            indent=opening.indent, last_line=opening.last_line))
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def uncommented(comma: cst.Comma | cst.MaybeSentinel) -> cst.Comma | cst.MaybeSentinel:
    """Returns ``comma`` with the comment after it dropped (so a copy does not repeat it)."""
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after,
                                                    cst.ParenthesizedWhitespace):
        return comma.with_changes(whitespace_after=comma.whitespace_after.with_changes(
            first_line=cst.TrailingWhitespace(), empty_lines=[]))
    return comma


def reindented(comma: cst.Comma | cst.MaybeSentinel,
                separator: cst.Comma) -> cst.Comma:
    """Returns ``comma`` (keeping its comment) followed by the separator's indentation."""
    if not isinstance(comma, cst.Comma):
        return separator
    own, sep = comma.whitespace_after, separator.whitespace_after
    if isinstance(own, cst.ParenthesizedWhitespace) and isinstance(
            sep, cst.ParenthesizedWhitespace):
        return separator.with_changes(whitespace_before=comma.whitespace_before,
                                      whitespace_after=own.with_changes(
                                          indent=sep.indent, last_line=sep.last_line))
    return separator


def kept_names(node: cst.Import | cst.ImportFrom, leaving: set[int]
                ) -> tuple[list[cst.ImportAlias], cst.BaseParenthesizableWhitespace | None]:
    """Returns the names of ``node`` but those at ``leaving``, and the whitespace after its
    opening parenthesis (None without one). The line break after a name that leaves, and
    the comment lines there (they belong to the next name), stay where they were."""
    assert isinstance(node.names, Sequence)
    lead = node.lpar.whitespace_after if isinstance(node, cst.ImportFrom) and node.lpar else None
    kept: list[cst.ImportAlias] = []
    for i, alias in enumerate(node.names):
        if i not in leaving:
            kept.append(alias)
            continue
        space = alias.comma.whitespace_after if isinstance(alias.comma, cst.Comma) else None
        if space is None:
            continue
        previous = kept[-1].comma if kept else None
        if isinstance(previous, cst.Comma):
            kept[-1] = kept[-1].with_changes(comma=previous.with_changes(
                whitespace_after=_joined_space(previous.whitespace_after, space)))
        elif not kept and lead is not None:
            lead = _joined_space(lead, space)
    return kept, lead


def _joined_space(kept: cst.BaseParenthesizableWhitespace,
                  removed: cst.BaseParenthesizableWhitespace
                  ) -> cst.BaseParenthesizableWhitespace:
    """Returns the whitespace before a name that now follows ``kept`` where a removed
    name's ``removed`` was: ``kept``'s own comment, then the removed line break with the
    comment lines after it (the removed name's own comment goes with the name)."""
    if not isinstance(removed, cst.ParenthesizedWhitespace):
        return kept
    lines = [line for line in removed.empty_lines if line.comment is not None]
    if isinstance(kept, cst.ParenthesizedWhitespace):
        return kept.with_changes(empty_lines=[*kept.empty_lines, *lines],
                                 indent=removed.indent, last_line=removed.last_line)
    return removed.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=lines)


def own_lines(body: Sequence[cst.BaseSmallStatement]) -> list[cst.SimpleStatementLine]:
    """Returns each small statement of ``a; b`` as a line of its own."""
    return [cst.SimpleStatementLine(body=[small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])
            for small in body]


def parse_line(text: str, indent: str = "") -> cst.SimpleStatementLine:
    """Returns the statement ``text`` (its lines prefixed by ``indent``) as a libcst line."""
    if indent:
        first, *rest = text.split("\n")
        if first.rstrip().endswith("\\"):  # a backslash continuation is kept verbatim
            text = "\n".join([first.removeprefix(indent), *rest])
        else:  # inside parentheses libcst indents the lines with the block
            text = "\n".join(line.removeprefix(indent) for line in [first, *rest])
    stmt = cst.parse_statement(text + "\n")
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt
