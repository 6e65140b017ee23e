"""--compat's ``try``/``except ImportError`` blocks; the user's own fallbacks kept working."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import libcst as cst

from auxcheck.migrate.transform.guards import bound_names
from auxcheck.migrate.transform.layout import own_lines
from auxcheck.migrate.transform.nodes import (
    Addition,
    Kind,
    Names,
    alias_items,
    catches_import_error,
    has_comment,
)
from auxcheck.migrate.transform.writing import StatementWriter

__all__ = ["CompatBlocks"]


_Handler = TypeVar("_Handler", cst.ExceptHandler, cst.ExceptStarHandler)


class CompatBlocks(StatementWriter):
    """Writes an import as ``try: new / except ImportError: old``, and binds in the user's
    import-error handlers the names the rewrite gives their aliases."""

    def _place_compat(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
                      add: Addition, indent: str) -> None:
        groups: dict[tuple[Kind, int, str], Names] = {}
        notes: dict[tuple[str, str | None], str] = {}
        for name in add.names:
            kind, level, module, old_name = add.fallbacks[name]
            groups.setdefault((kind, level, module), []).append(old_name)
            if name in add.member_comments:
                notes[old_name] = add.member_comments[name]
        fallback = [line for (kind, level, module), names in sorted(groups.items())
                    for line in self._lines(kind, level, module, names, indent + " " * 8,
                                            comment=add.comment, member_comments=notes)]
        body = self._lines(add.kind, add.level, add.module, add.names, indent + "    ",
                           comment=add.comment, member_comments=add.member_comments)
        fresh = body[0].body[0]
        if add.original is not None and add.trailing is not None and isinstance(
                fresh, cst.ImportFrom) and (has_comment(add.original) or add.anchor in self.frozen):
            # Moving whole with comments inside, or where the sorters do not look, the
            # statement keeps its layout and every comment in both branches.
            original, end = add.original, add.trailing
            body = [cst.SimpleStatementLine(body=[original.with_changes(
                relative=fresh.relative, module=fresh.module)], trailing_whitespace=end)]
            fallback = [cst.SimpleStatementLine(body=[original], trailing_whitespace=end)]
        guard = self.type_checking_name()
        stmt = cst.parse_statement(f"try:\n    pass\nexcept ImportError:\n    if not {guard}:\n"
                                   "        pass\n")
        assert isinstance(stmt, cst.Try) and len(stmt.handlers) == 1
        handler = stmt.handlers[0]
        check = handler.body.body[0]
        assert isinstance(check, cst.If)
        stmt = stmt.with_changes(
            body=stmt.body.with_changes(body=body),
            handlers=[handler.with_changes(body=handler.body.with_changes(body=[
                check.with_changes(body=check.body.with_changes(body=fallback))]))])
        filled = [s for s in range(block[0], block[1] + 1) if slots[s]]
        lines = [cst.EmptyLine(indent=False)] if filled else []
        slots[filled[-1] if filled else add.anchor].append(
            stmt.with_changes(leading_lines=[*lines, *add.comments]))

    def renamed_in(self, suite: cst.BaseSuite) -> list[tuple[str, str]]:
        """Returns ``(alias, name)`` for each old-module alias a statement of ``suite``
        binds whose moved uses the rewrite gives another name (``so`` -> ``auxiliary_output``)."""
        body = suite.body if isinstance(suite, cst.IndentedBlock) else [suite]
        renamed: list[tuple[str, str]] = []
        for stmt in body:
            smalls = stmt.body if isinstance(stmt, (cst.SimpleStatementLine,
                                                    cst.SimpleStatementSuite)) else []
            for small in smalls:
                if not isinstance(small, (cst.Import, cst.ImportFrom)) or not isinstance(
                        small.names, Sequence):
                    continue
                module = self._resolve(small) if isinstance(small, cst.ImportFrom) else None
                for name, asname in alias_items(small.names):
                    old = self._bound_alias(module, name, asname)
                    owner = asname or (name if module is not None else old or "")
                    if old is None or "." in owner:
                        continue
                    renamed += [(owner, text) for _, text in self.targets_here(owner)
                                if text != owner and (owner, text) not in renamed]
        return renamed

    def rebound(self, handler: _Handler, renamed: Sequence[tuple[str, str]]) -> _Handler:
        """Returns ``handler`` binding each new name to what it binds the alias to, hidden
        from type checkers (which see the new module); unchanged when it binds none."""
        bound = bound_names(handler.body)  # what it may bind an alias to, nested blocks too
        pairs = [(owner, text) for owner, text in renamed if owner in bound]
        if not pairs or not catches_import_error(handler):
            return handler
        guard = self.type_checking_name()
        lines = "".join(f"    {text} = {owner}\n" for owner, text in pairs)
        stmt = cst.parse_statement(f"if not {guard}:\n{lines}")
        suite: cst.BaseSuite = handler.body
        if isinstance(suite, cst.SimpleStatementSuite):  # `except ImportError: so = None`
            return handler.with_changes(body=cst.IndentedBlock(
                body=[*own_lines([small for small in suite.body if isinstance(
                    small, cst.BaseSmallStatement)]), stmt], header=suite.trailing_whitespace))
        if isinstance(suite, cst.IndentedBlock):
            return handler.with_changes(body=suite.with_changes(body=[*suite.body, stmt]))
        return handler
