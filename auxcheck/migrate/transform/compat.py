"""--compat's blocks; the user's own fallbacks kept working.

An import of moved names becomes ``if TYPE_CHECKING: new / else: try: new / except
ImportError: old``: type checkers follow only the first branch, so they see the new layout
and every name bound (mypy and pyright alike), while the interpreter imports whichever layout
the installed SGLang has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, TypeVar

import libcst as cst

from auxcheck.migrate.transform.guards import bound_names
from auxcheck.migrate.transform.layout import own_lines, parse_line
from auxcheck.migrate.transform.nodes import (
    Addition,
    Kind,
    Names,
    alias_items,
    catches_import_error,
    has_comment,
    module_binding,
)
from auxcheck.migrate.transform.plan import ImportPlan
from auxcheck.migrate.transform.state import ListContext, RewriteInputs
from auxcheck.migrate.transform.writing import StatementWriter

__all__ = ["CompatWriter", "Renamed"]


_Handler = TypeVar("_Handler", cst.ExceptHandler, cst.ExceptStarHandler)


class Renamed(NamedTuple):
    """An old-module alias whose moved uses the rewrite names otherwise."""

    alias: str
    """The user's alias (``so``)."""
    module: str
    """The new module its moved uses now name."""
    name: str
    """The name bound to that module (``auxiliary_output``)."""


class CompatWriter:
    """Writes an import as ``if TYPE_CHECKING: new / else: try: new / except ImportError:
    old``, and binds in the user's import-error handlers the names the rewrite gives their
    aliases (the names from the plan, the statements from the writer)."""

    def __init__(self, inputs: RewriteInputs, plan: ImportPlan,
                 writer: StatementWriter) -> None:
        self.inputs = inputs
        self.plan = plan
        self.writer = writer

    def place(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
              add: Addition, context: ListContext) -> None:
        """Puts ``add`` as one compat block after the import block ``block`` of ``slots``."""
        indent = context.indent
        groups: dict[tuple[Kind, int, str], Names] = {}
        notes: dict[tuple[str, str | None], str] = {}
        for name in add.names:
            kind, level, module, old_name = add.fallbacks[name]
            groups.setdefault((kind, level, module), []).append(old_name)
            if name in add.member_comments:
                notes[old_name] = add.member_comments[name]
        fallback = [line for (kind, level, module), names in sorted(groups.items())
                    for line in self.writer.lines(kind, level, module, names, indent + " " * 8,
                                                  comment=add.comment, member_comments=notes)]

        def new_lines(pad: str) -> list[cst.SimpleStatementLine]:
            return self.writer.lines(add.kind, add.level, add.module, add.names, indent + pad,
                                     comment=add.comment, member_comments=add.member_comments)

        checked, body = new_lines(" " * 4), new_lines(" " * 8)
        fresh = body[0].body[0]
        if add.original is not None and add.trailing is not None and isinstance(
                fresh, cst.ImportFrom) and (has_comment(add.original)
                                            or add.anchor in context.frozen):
            # Moving whole with comments inside, or where the sorters do not look, the
            # statement keeps its layout and every comment in every branch.
            original, end = add.original, add.trailing
            moved = original.with_changes(relative=fresh.relative, module=fresh.module)
            checked = [cst.SimpleStatementLine(body=[moved], trailing_whitespace=end)]
            body = [cst.SimpleStatementLine(body=[moved.deep_clone()], trailing_whitespace=end)]
            fallback = [cst.SimpleStatementLine(body=[original], trailing_whitespace=end)]
        stmt = self.checked_else(checked, [self.try_new(body, fallback)], context.guard)
        filled = [s for s in range(block[0], block[1] + 1) if slots[s]]
        lines = [cst.EmptyLine(indent=False)] if filled else []
        slots[filled[-1] if filled else add.anchor].append(
            stmt.with_changes(leading_lines=[*lines, *add.comments]))

    def checked_else(self, checked: Sequence[cst.BaseStatement],
                     running: Sequence[cst.BaseStatement], guard: str | None) -> cst.If:
        """Returns ``if TYPE_CHECKING: <checked> / else: <running>``, the flag spelled
        ``guard`` where the statement list binds it (:meth:`.ImportPlan.type_checking_name`):
        type checkers read only the first branch, so each name is bound on every path they
        follow (pyright reports a name bound only in a ``try`` as possibly unbound) and
        nothing they see imports from the old module; the interpreter runs only the second."""
        stmt = cst.parse_statement(f"if {self.plan.type_checking_name(guard)}:\n    pass\n"
                                   "else:\n    pass\n")
        assert isinstance(stmt, cst.If) and isinstance(stmt.orelse, cst.Else)
        return stmt.with_changes(
            body=stmt.body.with_changes(body=checked),
            orelse=stmt.orelse.with_changes(body=stmt.orelse.body.with_changes(body=running)))

    @staticmethod
    def try_new(body: Sequence[cst.BaseStatement],
                 fallback: Sequence[cst.BaseStatement]) -> cst.Try:
        """Returns ``try: <body> / except ImportError: <fallback>``."""
        stmt = cst.parse_statement("try:\n    pass\nexcept ImportError:\n    pass\n")
        assert isinstance(stmt, cst.Try) and len(stmt.handlers) == 1
        handler = stmt.handlers[0]
        return stmt.with_changes(
            body=stmt.body.with_changes(body=body),
            handlers=[handler.with_changes(body=handler.body.with_changes(body=fallback))])

    def renamed_in(self, suite: cst.BaseSuite, scope: int) -> list[Renamed]:
        """Returns each old-module alias a statement of ``suite`` (in body ``scope``) binds
        whose moved uses the rewrite gives another name (``so`` -> ``auxiliary_output``),
        with that name's module."""
        body = suite.body if isinstance(suite, cst.IndentedBlock) else [suite]
        renamed: list[Renamed] = []
        for stmt in body:
            smalls = stmt.body if isinstance(stmt, (cst.SimpleStatementLine,
                                                    cst.SimpleStatementSuite)) else []
            for small in smalls:
                if not isinstance(small, (cst.Import, cst.ImportFrom)) or not isinstance(
                        small.names, Sequence):
                    continue
                module = self.plan.resolve(small) if isinstance(small, cst.ImportFrom) else None
                for name, asname in alias_items(small.names):
                    old = self.plan.bound_alias(module, name, asname, scope)
                    owner = asname or (name if module is not None else old or "")
                    if old is None or "." in owner:
                        continue
                    renamed += [Renamed(owner, new, text)
                                for new, text in self.plan.targets_here(owner, scope)
                                if text != owner and Renamed(owner, new, text) not in renamed]
        return renamed

    def rebound(self, handler: _Handler, renamed: Sequence[Renamed],
                guard: str | None) -> _Handler:
        """Returns ``handler`` binding each new name to what it binds the alias to at run
        time, and to the new module for type checkers (which see only the new layout);
        unchanged when it binds none. ``guard`` is as for :meth:`checked_else`."""
        bound = bound_names(handler.body)  # what it may bind an alias to, nested blocks too
        mine = [item for item in renamed if item.alias in bound]
        if not mine or not catches_import_error(handler):
            return handler
        checked = [line for item in mine for line in self._binding_lines(item)]
        running = [parse_line(f"{item.name} = {item.alias}") for item in mine]
        stmt = self.checked_else(checked, running, guard)
        suite: cst.BaseSuite = handler.body
        if isinstance(suite, cst.SimpleStatementSuite):  # `except ImportError: so = None`
            return handler.with_changes(body=cst.IndentedBlock(
                body=[*own_lines([small for small in suite.body if isinstance(
                    small, cst.BaseSmallStatement)]), stmt], header=suite.trailing_whitespace))
        if isinstance(suite, cst.IndentedBlock):
            return handler.with_changes(body=suite.with_changes(body=[*suite.body, stmt]))
        return handler

    def _binding_lines(self, item: Renamed) -> list[cst.SimpleStatementLine]:
        """Returns the import binding ``item.name`` to ``item.module`` (never ``import a.b
        as b``: :func:`.nodes.module_binding`)."""
        kind, level, module, name = module_binding(item.module, item.name)
        return self.writer.lines(kind, level, module, [name], "")
