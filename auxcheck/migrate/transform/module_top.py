"""The module's top: the ``TYPE_CHECKING`` import, type-only imports, the --compat constants."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from auxcheck.migrate import style as _style
from auxcheck.migrate.transform.guards import PLACEHOLDER, GuardResolver, module_guards
from auxcheck.migrate.transform.layout import (
    after_imports,
    parse_line,
    split_leading,
    with_blank_line,
)
from auxcheck.migrate.transform.nodes import (
    EMPTY,
    Addition,
    Kind,
    catches_import_error,
    frozen_statements,
    is_type_checking,
    module_text,
    single_import,
)
from auxcheck.migrate.transform.plan import ImportPlan
from auxcheck.migrate.transform.state import RewriteInputs
from auxcheck.migrate.transform.writing import StatementWriter

__all__ = ["ModuleTopEditor"]


class ModuleTopEditor:
    """Adds what the rewrite needs at the module's top, after every statement list is done
    (what the plan gave, written by the statement writer)."""

    def __init__(self, inputs: RewriteInputs, plan: ImportPlan,
                 writer: StatementWriter) -> None:
        self.inputs = inputs
        self.plan = plan
        self.writer = writer

    def finish(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Returns the module body with what the rewrite needs at its top: the imports of
        the modules rewritten type-expression strings name, the constants naming the
        modules found at import time (--compat), and the ``TYPE_CHECKING`` import, which
        comes before its first use."""
        body = self._add_type_imports(body)
        constants = self.plan.constants
        if constants:
            at = min([_import_region_end(body), *(_first_use(body, name)
                                                  for name in constants.values())])
            chosen = [self._constant_statement(old, new, name)
                      for (old, new), name in constants.items()]
            body = _inserted(body, at, chosen)
        return self._resolve_guards(self._drop_unused_packages(body))

    def _drop_unused_packages(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Returns ``body`` without a plain ``import <package>`` the rewrite left unused: in
        --compat, uses of a dotted old module (``sglang.srt.x.X``) become uses of a name of
        their own, and an ``import sglang`` they alone used would be left to ruff's F401.
        (Importing the package has no effect the rewritten import lacks.)"""
        heads = {owner.partition(".")[0] for owner, targets in self.plan.given.items()
                 if "." in owner and any(text != owner for text in targets.values())}
        if not self.inputs.compat or not heads:
            return body
        unused = {head for head in heads if not _reads(body, head)}
        return [stmt for stmt in body if _plain_import_of(stmt) not in unused]

    def _resolve_guards(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Returns ``body`` with each placeholder flag named (:mod:`.guards`), importing
        the flag before the first statement none of the module's own bindings serves."""
        if not self.plan.pending_guards:
            return body
        states = module_guards(body)
        first: int | None = None
        for i, stmt in enumerate(body):
            # Guards are `if` statements: a simple line holds none.
            if isinstance(stmt, cst.SimpleStatementLine) or PLACEHOLDER not in \
                    EMPTY.code_for_node(stmt):
                continue
            resolver = GuardResolver(states[i], states[-1], self.plan.guard_spelling)
            named = stmt.visit(resolver)
            if isinstance(named, cst.BaseStatement):
                body[i] = named
            if resolver.used_added and first is None:
                first = i
        if first is not None and self.plan.guard is not None:
            kind, module, name = self.plan.guard
            body = self._add_import(body, kind, module, name, limit=first)
        return body

    def _add_type_imports(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Returns ``body`` importing each new module a type-expression string now names
        that no import binds: ``import new`` where the style puts it, or in --compat
        under ``if TYPE_CHECKING:`` (only type checkers read those strings)."""
        modules = sorted(self.inputs.analysis.type_imports)
        if not modules:
            return body
        if not self.inputs.compat:
            for module in modules:
                body = self._add_import(body, "import", module, None)
            return body
        lines = "".join(f"    {_style.render_import(self.inputs.style, m, None)}\n"
                        for m in modules)
        # The module's top is no statement list's: the flag is named once the module is whole.
        block = cst.parse_statement(f"if {self.plan.type_checking_name(None)}:\n{lines}")
        return _inserted(body, _import_region_end(body), [block])

    @staticmethod
    def _constant_statement(old: str, new: str, name: str) -> cst.BaseStatement:
        return cst.parse_statement(
            f'try:\n    __import__("{new}")\n    {name} = "{new}"\n'
            f'except ImportError:\n    {name} = "{old}"\n')

    def _add_import(self, body: list[cst.BaseStatement], kind: Kind, module: str,
                    name: str | None, *, limit: int | None = None) -> list[cst.BaseStatement]:
        """Returns ``body`` with ``from module import name`` (or ``import module [as
        name]``) where the style puts it among the leading imports before ``limit``."""
        frozen = frozenset(frozen_statements(body, whole=self.inputs.keep_order))
        end = _import_region_end(body) if limit is None else min(_import_region_end(body),
                                                                  limit)
        style = self.inputs.style
        if kind == "from" and name is not None:
            merged = self._merged_into(body, end, module, name, frozen)
            if merged is not None:
                return merged
            text = _style.render_from(style, 0, module, [(name, None)])[0]
        else:
            text = _style.render_import(style, module, name)
        new = parse_line(text)
        key = self.writer.statement_key(new)
        assert key is not None
        ordered = [(i, k) for i in range(end) if i not in frozen
                   and (k := self.writer.statement_key(body[i])) is not None]
        before = [(i, k) for i, k in ordered if k < key]
        after = next(((i, k) for i, k in ordered if k > key), None)
        if before and before[-1][1][0] == key[0]:  # the end of its own section's block
            return [*body[:before[-1][0] + 1], new, *body[before[-1][0] + 1:]]
        if after is None:  # a new section after every import (or the first import)
            at = before[-1][0] + 1 if before else _after_future(body, end)
            new = new.with_changes(leading_lines=[cst.EmptyLine(indent=False)] if at else [])
            if at < len(body) and not before:  # code now follows an import block
                body[at] = after_imports(body[at])
            return [*body[:at], new, *body[at:]]
        at, other = after
        blank, own = split_leading(body[at])
        new = new.with_changes(leading_lines=blank if at else [])
        rest = own if other[0] == key[0] else [cst.EmptyLine(indent=False), *own]
        body[at] = body[at].with_changes(leading_lines=rest)
        return [*body[:at], new, *body[at:]]

    def _merged_into(self, body: list[cst.BaseStatement], end: int, module: str,
                     name: str, frozen: frozenset[int]) -> list[cst.BaseStatement] | None:
        """Returns ``body`` with ``name`` joined to a ``from module import`` among its
        first ``end`` statements (but the ``frozen`` ones), as the style writes them; None
        when there is none."""
        slots: list[list[cst.BaseStatement]] = [[stmt] for stmt in body]
        if end and self.writer.regroup(slots, end - 1, 0, module, [(name, None)], "", frozen):
            return [stmt for slot in slots for stmt in slot]
        for i in range(end):
            node = single_import(body[i])
            if (i not in frozen and isinstance(node, cst.ImportFrom) and not node.relative
                    and module_text(node) == module and self.writer.merge_target(
                        node, Addition("from", 0, module, [(name, None)], i))):
                body[i] = self.writer.merged(body[i], node, [(name, None)], "")
                return body
        return None


def _plain_import_of(stmt: cst.BaseStatement) -> str | None:
    """Returns ``name`` for a line that is ``import name`` alone, no comment; else None."""
    node = single_import(stmt)
    if not isinstance(node, cst.Import) or len(node.names) != 1 or node.names[0].asname:
        return None
    name = node.names[0].name
    if not isinstance(stmt, cst.SimpleStatementLine) or not isinstance(name, cst.Name) or any(
            line.comment for line in stmt.leading_lines) or stmt.trailing_whitespace.comment:
        return None
    return name.value


def _reads(body: Sequence[cst.BaseStatement], name: str) -> bool:
    """Returns True when code outside import statements names ``name`` (or a string of a
    module-level ``__all__`` is ``name``)."""
    found = False
    exported = 0  # an ``__all__`` assignment is in the statement visited (its strings export)

    class Reader(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            return False

        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            found = found or node.value == name

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            nonlocal found
            found = found or (exported > 0 and node.raw_value == name)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            nonlocal exported
            exported += isinstance(node.target, cst.Name) and node.target.value == "__all__"

    for stmt in body:
        exported = 0
        stmt.visit(Reader())
        if found:
            return True
    return False


def _inserted(body: list[cst.BaseStatement], at: int,
              chosen: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """Returns ``body`` with ``chosen`` inserted at ``at`` as a block of its own."""
    if at < len(body):
        body[at] = with_blank_line(body[at])
    chosen[0] = chosen[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)]
                                       if at else [])
    return [*body[:at], *chosen, *body[at:]]


def _first_use(body: Sequence[cst.BaseStatement], name: str) -> int:
    """Returns the index of the first statement whose text holds ``name``, after the
    docstring and the ``__future__`` imports (which nothing may precede)."""
    floor = _after_future(body, len(body))
    return next((i for i in range(floor, len(body))
                 if name in EMPTY.code_for_node(body[i])), len(body))


def _after_future(body: Sequence[cst.BaseStatement], end: int) -> int:
    """Returns the index after the docstring and every ``from __future__`` import."""
    at = _docstring_end(body)
    for i in range(at, end):
        node = single_import(body[i])
        if isinstance(node, cst.ImportFrom) and module_text(node) == "__future__":
            at = i + 1
    return at


def _is_import_like(stmt: cst.BaseStatement) -> bool:
    if single_import(stmt) is not None:
        return True
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)
    if isinstance(stmt, cst.Try):  # an else or finally may run code using what follows
        return all(_is_import_like(s) for s in stmt.body.body if isinstance(
            s, cst.BaseStatement)) and any(catches_import_error(h) for h in stmt.handlers) and (
                stmt.orelse is None and stmt.finalbody is None)
    if isinstance(stmt, cst.If):  # the flag may still be the placeholder (a compat block)
        return is_type_checking(stmt.test) or (
            isinstance(stmt.test, cst.Name) and stmt.test.value == PLACEHOLDER)
    return False


def _docstring_end(body: Sequence[cst.BaseStatement]) -> int:
    first = body[0] if body else None
    if (isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1
            and isinstance(first.body[0], cst.Expr)
            and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))):
        return 1
    return 0


def _import_region_end(body: Sequence[cst.BaseStatement]) -> int:
    """Returns the index after the module's leading imports (docstring, imports, compat
    ``try`` blocks and ``if TYPE_CHECKING:``): what goes there runs before any other code
    and leaves every import at the top (no E402)."""
    at = _docstring_end(body)
    end = at
    for i in range(at, len(body)):
        if not _is_import_like(body[i]):
            break
        end = i + 1
    return end
