"""Dotted string targets rewritten in literals, f-strings and concatenations."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import libcst as cst

from auxcheck.migrate.scan import StringRole, rewrite_string, string_targets
from auxcheck.migrate.transform.nodes import EMPTY
from auxcheck.migrate.transform.plan import ImportPlan
from auxcheck.migrate.transform.state import RewriteInputs

__all__ = ["StringRewriter", "concatenated"]


class StringRewriter:
    """Rewrites the dotted targets of one string (a literal, an f-string or a concatenation
    of them) in the role the tree pass read it in; --compat's constants come from the plan."""

    def __init__(self, inputs: RewriteInputs, plan: ImportPlan) -> None:
        self.inputs = inputs
        self.plan = plan

    def format_spec(self, node: cst.FormattedStringExpression, *,
                    field: bool) -> cst.FormattedStringExpression:
        """Returns an f-string's field with each fixable target of its format spec
        rewritten (naming the module found at import time when ``field``)."""
        spec = node.format_spec
        if spec is None:
            return node
        texts = [p.value if isinstance(p, cst.FormattedStringText) else None for p in spec]
        edits = [_Edit(t.part, t.start, t.end, t.old, t.new)
                 for t in string_targets(texts, self.inputs.moves) if t.verdict == "fix"]
        parts = self._edited_parts(spec, edits, field=field)
        return node if parts is None else node.with_changes(format_spec=parts)

    def string(self, node: _String, role: StringRole, *, field: bool) -> cst.BaseExpression:
        """Returns a whole string with each target the scan calls fixable rewritten: where
        ``field`` (a runtime string in --compat), a target names the module found at import
        time; type expressions and values are plain text."""
        code = EMPTY.code_for_node(node.with_changes(lpar=(), rpar=()))
        if role == "type" and isinstance(node, cst.SimpleString):
            return self._type_string(node, code)
        if not any(top in code for top in self.inputs.tops):
            return node
        parts = _string_parts(code)
        if parts is None:
            return node
        targets = string_targets(parts, self.inputs.moves, code)
        edits = [_Edit(-1, t.at, t.at + len(t.old), t.old, t.new)
                 for t in targets if t.verdict == "fix" and t.at >= 0]
        if not edits:
            return node
        return _rebuilt(node, {id(piece): new for piece, new in self._pieces_edited(
            node, edits, field=field)})

    def _type_string(self, node: cst.SimpleString, code: str) -> cst.BaseExpression:
        """Returns a type-expression string rewritten plainly: ``m.X`` through a module
        alias and ``old.X`` through ``import old`` become what the rewrite binds."""
        parts = _string_parts(code) if any(top in code for top in self.inputs.tops) else []
        if parts is None or any(t.verdict != "fix" for t in string_targets(
                parts, self.inputs.moves, code)) or "b" in node.prefix.lower():
            return node
        value, quote, prefix = node.value, node.quote, node.prefix
        body = value[len(prefix) + len(quote):len(value) - len(quote)]
        new = rewrite_string(body, self.inputs.moves, self.inputs.analysis.aliases,
                             self.plan.type_replacements, annotation=True)
        if new is None:
            return node
        return node.with_changes(value=value[:len(prefix) + len(quote)] + new
                                 + value[len(value) - len(quote):])

    def _pieces_edited(self, node: _String, edits: Sequence[_Edit], *, field: bool
                       ) -> Iterable[tuple[cst.CSTNode, cst.BaseExpression]]:
        """Yields (piece, rewritten piece) for each piece of ``node`` an edit falls in
        (edits are placed in the code of the whole string)."""
        for offset, piece in _piece_offsets(node):
            size = len(EMPTY.code_for_node(piece))
            mine = [e._replace(start=e.start - offset, end=e.end - offset) for e in edits
                    if offset <= e.start and e.end <= offset + size]
            if not mine:
                continue
            if isinstance(piece, cst.SimpleString):
                yield piece, self._simple_edited(piece, mine, field=field)
                continue
            local, placed = len(piece.start), []
            for index, part in enumerate(piece.parts):
                length = len(EMPTY.code_for_node(part))
                if isinstance(part, cst.FormattedStringText):
                    placed += [e._replace(part=index, start=e.start - local,
                                          end=e.end - local) for e in mine
                               if local <= e.start and e.end <= local + length]
                local += length
            parts = self._edited_parts(piece.parts, placed, field=field)
            if parts is not None:
                yield piece, piece.with_changes(parts=parts)

    def _simple_edited(self, piece: cst.SimpleString, edits: Sequence[_Edit], *,
                       field: bool) -> cst.BaseExpression:
        """Returns a plain literal with ``edits`` (placed in its code) applied: as an
        f-string naming the module found at import time when ``field``."""
        prefix, quote, value = piece.prefix, piece.quote, piece.value
        head = len(prefix) + len(quote)
        body = value[head:len(value) - len(quote)]
        pieces, last = [], 0
        for edit in sorted(edits, key=lambda e: e.start):
            start, end = edit.start - head, edit.end - head
            literal = body[last:start]
            if field:
                literal = _brace_escaped(literal, raw="r" in prefix.lower())
                pieces += [literal, "{" + self.plan.constant_for(edit.old, edit.new) + "}"]
            else:
                pieces += [literal, edit.new]
            last = end
        tail = body[last:]
        pieces.append(_brace_escaped(tail, raw="r" in prefix.lower()) if field else tail)
        if not field:
            return piece.with_changes(value=value[:head] + "".join(pieces) + quote)
        fprefix = "f" + prefix.replace("u", "").replace("U", "")
        return cst.parse_expression(f"{fprefix}{quote}{''.join(pieces)}{quote}")

    def _edited_parts(self, parts: Sequence[cst.BaseFormattedStringContent],
                      edits: Sequence[_Edit], *, field: bool
                      ) -> list[cst.BaseFormattedStringContent] | None:
        """Returns an f-string's parts with each edit (placed in one literal part) applied;
        None if there is none."""
        if not edits:
            return None
        rewritten = list(parts)
        for edit in sorted(edits, key=lambda e: (e.part, e.start), reverse=True):
            piece = rewritten[edit.part]
            if not isinstance(piece, cst.FormattedStringText):
                continue
            value = ("{" + self.plan.constant_for(edit.old, edit.new) + "}" if field
                     else edit.new)
            rewritten[edit.part] = piece.with_changes(
                value=piece.value[:edit.start] + value + piece.value[edit.end:])
        return rewritten


_String = cst.SimpleString | cst.FormattedString | cst.ConcatenatedString


class _Edit(NamedTuple):
    """One old module to replace: ``start:end`` in the text of part ``part`` (or, with
    ``part == -1``, in the code of the whole string)."""

    part: int
    start: int
    end: int
    old: str
    new: str


def concatenated(node: cst.ConcatenatedString) -> list[cst.CSTNode]:
    """Returns every node inside a concatenation that is a string of its own in libcst."""
    inner: list[cst.CSTNode] = []
    for side in (node.left, node.right):
        inner.append(side)
        if isinstance(side, cst.ConcatenatedString):
            inner += concatenated(side)
    return inner


def _piece_offsets(node: _String, offset: int = 0
                   ) -> list[tuple[int, cst.SimpleString | cst.FormattedString]]:
    """Returns each literal piece of a string with where its code starts in the string's."""
    if not isinstance(node, cst.ConcatenatedString):
        return [(offset, node)]
    left = EMPTY.code_for_node(node.left)
    between = EMPTY.code_for_node(node.whitespace_between)
    return [*_piece_offsets(node.left, offset),
            *_piece_offsets(node.right, offset + len(left) + len(between))]


def _rebuilt(node: cst.BaseExpression, new: dict[int, cst.BaseExpression]) -> cst.BaseExpression:
    """Returns ``node`` with each of its pieces in ``new`` replaced."""
    if id(node) in new:
        return new[id(node)]
    if isinstance(node, cst.ConcatenatedString):
        left, right = _rebuilt(node.left, new), _rebuilt(node.right, new)
        assert isinstance(left, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))
        assert isinstance(right, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))
        return node.with_changes(left=left, right=right)
    return node


def _string_parts(code: str) -> list[str | None] | None:
    """Returns the literal parts of the string ``code`` spells (None for each replacement
    field), decoded as the scan reads them; None for bytes."""
    try:
        tree = ast.parse(f"(\n{code}\n)", mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    if isinstance(tree, ast.Constant):
        return [tree.value] if isinstance(tree.value, str) else None
    if isinstance(tree, ast.JoinedStr):
        return [v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                for v in tree.values]
    return None


_BRACES = re.compile(r"(\\\\)|(\\N\{[^{}]*\})|([{}])")


def _brace_escaped(text: str, *, raw: bool) -> str:
    """Returns literal text for an f-string: each brace doubled, except those of a
    ``\\N{NAME}`` escape (in a string that is not raw, where escapes are escapes)."""
    if raw:
        return text.replace("{", "{{").replace("}", "}}")
    return _BRACES.sub(lambda m: m.group(0) * 2 if m.group(3) else m.group(0), text)
