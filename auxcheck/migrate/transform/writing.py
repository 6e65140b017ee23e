"""Import statements written as the project's style writes them, merged with what a block holds."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from auxcheck.migrate import style as _style
from auxcheck.migrate.transform.layout import (
    is_wrapped,
    joined_comments,
    member_separator,
    parse_line,
    reindented,
    uncommented,
    with_member_comments,
)
from auxcheck.migrate.transform.nodes import (
    Addition,
    Kind,
    Names,
    alias_items,
    has_comment,
    has_magic_comma,
    module_text,
    single_import,
)
from auxcheck.migrate.transform.state import RewriteInputs

__all__ = ["StatementWriter"]


class StatementWriter:
    """Writes the statements of an import to add, alone or merged into the block's own, as
    the project's style writes them (it reads the inputs' style alone)."""

    def __init__(self, inputs: RewriteInputs) -> None:
        self.style = inputs.style

    def merge_target(self, node: cst.Import | cst.ImportFrom,
                      add: Addition) -> bool:
        """Returns True when names of ``add`` may join ``node``, as the style writes them."""
        if add.kind != "from" or self.style.force_single_line or not isinstance(
                node, cst.ImportFrom) or not isinstance(node.names, Sequence):
            return False
        if (len(node.relative), module_text(node)) != (add.level, add.module):
            return False
        return self.style.combine_as or all(a is None for _, a in alias_items(node.names))

    def regroup(self, slots: list[list[cst.BaseStatement]], stop: int, level: int,
                module: str, names: Names, indent: str, frozen: frozenset[int]) -> bool:
        """Rewrites every ``from <module> import`` in ``slots[:stop + 1]`` (but the
        ``frozen`` slots) together with ``names``, as the style writes them all (merged,
        split, ordered); returns False, changing nothing, when there is none or one of them
        carries a comment."""
        found: list[tuple[int, int, cst.SimpleStatementLine]] = []
        existing: Names = []
        magic = False
        for s, slot in enumerate(slots[:stop + 1]):
            for p, stmt in enumerate(slot):
                node = single_import(stmt)
                if s in frozen:
                    continue
                if not (isinstance(node, cst.ImportFrom) and isinstance(node.names, Sequence)
                        and (len(node.relative), module_text(node)) == (level, module)):
                    continue
                assert isinstance(stmt, cst.SimpleStatementLine)
                if has_comment(node) or stmt.trailing_whitespace.comment or (
                        found and any(line.comment for line in stmt.leading_lines)):
                    return False
                found.append((s, p, stmt))
                existing += alias_items(node.names)
                magic = magic or (has_magic_comma(node) and len(node.names) > 1)
        if not found:
            return False
        lines = self.lines("from", level, module, list(dict.fromkeys(existing + names)),
                            indent, magic=magic)
        first_slot, first_place, first = found[0]
        lines[0] = lines[0].with_changes(leading_lines=first.leading_lines)
        for s, p, _ in reversed(found):
            del slots[s][p]
        slots[first_slot][first_place:first_place] = lines
        return True

    def merged(self, stmt: cst.BaseStatement, node: cst.ImportFrom, names: Names,
               indent: str) -> cst.BaseStatement:
        """Returns ``stmt`` (the line of ``node``) importing ``names`` too."""
        assert isinstance(stmt, cst.SimpleStatementLine) and isinstance(node.names, Sequence)
        if not has_comment(node):
            texts = _style.render_from(self.style, len(node.relative), module_text(node),
                                       alias_items(node.names) + names, indent=indent,
                                       magic_comma=has_magic_comma(node))
            if len(texts) == 1:
                return stmt.with_changes(body=[parse_line(texts[0], indent).body[0]])
        aliases = list(node.names)
        comma = member_separator(node)
        for name, asname in names:
            new = cst.ImportAlias(cst.Name(name), asname=cst.AsName(cst.Name(asname))
                                  if asname else None)
            keys = [_style.member_key(self.style, *item) for item in alias_items(aliases)]
            mine = _style.member_key(self.style, name, asname)
            at = next((i for i, k in enumerate(keys) if k > mine), len(aliases))
            if at == len(aliases):
                last_comma = aliases[-1].comma
                aliases[-1] = aliases[-1].with_changes(comma=reindented(last_comma, comma))
                aliases.append(new.with_changes(comma=uncommented(last_comma)))
            else:
                aliases.insert(at, new.with_changes(comma=comma))
        return stmt.with_changes(body=[node.with_changes(names=aliases)])

    def lines(self, kind: Kind, level: int, module: str, names: Names, indent: str, *,
              comment: str | None = None, member_comments: dict[tuple[str, str | None], str]
              | None = None, magic: bool = False) -> list[cst.SimpleStatementLine]:
        """Returns the statements importing ``names`` as the style writes them, each name's
        own comment after it (a statement with commented names is wrapped, as ruff does)."""
        notes = member_comments or {}
        if kind == "import":
            return [parse_line(_style.render_import(
                self.style, name, alias,
                comment=joined_comments(comment, notes.get((name, alias)))))
                for name, alias in names]
        lines = []
        for text in _style.render_from(self.style, level, module, names, indent=indent,
                                       comment=comment, magic_comma=magic):
            line = parse_line(text, indent)
            node = line.body[0]
            assert isinstance(node, cst.ImportFrom) and isinstance(node.names, Sequence)
            mine = [notes[n] for n in alias_items(node.names) if n in notes]
            if mine and len(node.names) > 1 and not is_wrapped(node) and not magic:
                lines += self.lines(kind, level, module, alias_items(node.names), indent,
                                     comment=comment, member_comments=notes, magic=True)
                continue
            lines.append(with_member_comments(line, notes))
        return lines

    def new_statements(self, add: Addition, indent: str) -> list[cst.SimpleStatementLine]:
        """Returns the statements of ``add``: the user's own, re-pointed with its layout,
        when it moves whole with comments or split over lines, else as the style writes it."""
        original = add.original
        lines = self.lines(add.kind, add.level, add.module, add.names, indent,
                            comment=add.comment, member_comments=add.member_comments,
                            magic=original is not None and has_magic_comma(original)
                            and len(add.names) > 1)
        if original is not None and (has_comment(original) or len(lines) > 1):
            # Moving whole, the user's statement keeps its layout and every comment.
            fresh = lines[0].body[0]
            assert isinstance(fresh, cst.ImportFrom)
            trailing = cst.TrailingWhitespace() if add.comment is None else \
                cst.TrailingWhitespace(cst.SimpleWhitespace("  "), cst.Comment(add.comment))
            lines = [lines[0].with_changes(body=[original.with_changes(
                relative=fresh.relative, module=fresh.module)], trailing_whitespace=trailing)]
        lines[0] = lines[0].with_changes(leading_lines=add.comments)
        return lines

    def frozen_statements(self, add: Addition,
                          indent: str) -> list[cst.SimpleStatementLine]:
        """Returns the statements of ``add`` for a place the sorters skip: the user's own
        statement re-pointed with its layout when it moves whole, else as the style writes it."""
        lines = self.new_statements(add, indent)
        original = add.original
        fresh = lines[0].body[0]
        if original is None or len(lines) != 1 or not isinstance(fresh, cst.ImportFrom):
            return lines
        return [lines[0].with_changes(body=[original.with_changes(
            relative=fresh.relative, module=fresh.module)],
            trailing_whitespace=add.trailing or lines[0].trailing_whitespace)]

    def statement_key(self, stmt: cst.BaseStatement) -> tuple[int, tuple[object, ...]] | None:
        """Returns where the style sorts an import statement: (section, key); None otherwise."""
        node = single_import(stmt)
        if isinstance(node, cst.Import):
            module, alias = alias_items(node.names)[0]
            return (_style.section_of(self.style, 0, module), _style.statement_key(
                self.style, kind="import", level=0, module=module, asname=alias))
        if isinstance(node, cst.ImportFrom):
            level, module = len(node.relative), module_text(node)
            names = alias_items(node.names) if isinstance(node.names, Sequence) else [
                ("*", None)]
            first = min(names, key=lambda n: _style.member_key(self.style, *n))
            return (_style.section_of(self.style, level, module), _style.statement_key(
                self.style, kind="from", level=level, module=module, first=first,
                names=names))
        return None
