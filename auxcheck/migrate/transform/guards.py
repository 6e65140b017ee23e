"""How each ``if TYPE_CHECKING:`` guard the rewrite writes names the flag, where it runs.

The rewrite writes :data:`PLACEHOLDER` for the flag while it works on statement lists, and
the module's top resolves it once the module is whole: a guard that runs at import time
reuses the module's own ``from typing import TYPE_CHECKING`` (or ``import typing``) only when
an unconditional module-level statement bound it *before* the guard's statement; a guard in
a function reuses what the module binds at its end (as the name is read at call time),
unless an enclosing function or class binds that name itself. Anything else names an import
the rewrite adds (so ``--compat`` output imports on both layouts wherever the file's own
imports sit). An alias (``TYPE_CHECKING as TC``) is never reused: mypy and pyright know the
flag by its name alone, and would read both branches of ``if TC:``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node

from auxcheck.migrate.transform.nodes import alias_items, module_text

__all__ = ["PLACEHOLDER", "GuardResolver", "bound_names", "module_guards"]

PLACEHOLDER = "__auxcheck_pending_type_checking_flag__"
"""The name the rewrite writes for the flag until :class:`GuardResolver` names it."""

_TYPING = ("typing", "typing_extensions")


def module_guards(body: Sequence[cst.BaseStatement]) -> list[dict[str, str]]:
    """Returns, for each index ``i`` of ``body`` (and ``len(body)``), the names bound to
    ``typing.TYPE_CHECKING`` when statement ``i`` runs: name -> how code spells the flag."""
    state: dict[str, str] = {}
    states = [dict(state)]
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                _bind_small(state, small)
        else:  # a binding in a block may not run (or bind something else): not reused
            for name in bound_names(stmt):
                state.pop(name, None)
        states.append(dict(state))
    return states


def _bind_small(state: dict[str, str], small: cst.BaseSmallStatement) -> None:
    if isinstance(small, cst.ImportFrom) and isinstance(small.names, Sequence):
        typing = not small.relative and module_text(small) in _TYPING
        for name, asname in alias_items(small.names):
            bound = asname or name
            state.pop(bound, None)
            if typing and bound == "TYPE_CHECKING":  # what type checkers know by its name
                state[bound] = bound
        return
    if isinstance(small, cst.Import):
        for name, asname in alias_items(small.names):
            bound = asname or name.partition(".")[0]
            state.pop(bound, None)
            if (asname is None and name.partition(".")[0] == "typing") or name == "typing":
                state[bound] = f"{bound}.TYPE_CHECKING"
        return
    for name in bound_names(small):
        state.pop(name, None)


def bound_names(node: cst.CSTNode) -> set[str]:
    """Returns the names ``node`` binds in the scope it runs in (not inside the functions
    and classes it defines, whose own names it binds)."""
    found: set[str] = set()

    class Binder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            found.add(node.name.value)
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            found.add(node.name.value)
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
            asname = node.asname.name if node.asname else None
            found.add(asname.value if isinstance(asname, cst.Name)
                      else (get_full_name_for_node(node.name) or "").partition(".")[0])

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            found.update(_targets(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            found.update(_targets(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            found.update(_targets(node.target))

        def visit_For(self, node: cst.For) -> None:
            found.update(_targets(node.target))

        def visit_AsName(self, node: cst.AsName) -> None:
            found.update(_targets(node.name))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            found.update(_targets(node.target))

        def visit_Global(self, node: cst.Global) -> None:
            found.update(item.name.value for item in node.names)

        def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
            found.update(item.name.value for item in node.names)

        def visit_Param(self, node: cst.Param) -> None:
            found.add(node.name.value)

    node.visit(Binder())
    return found


def _targets(target: cst.BaseExpression | cst.BaseAssignTargetExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for element in target.elements for n in _targets(element.value)}
    if isinstance(target, cst.StarredElement):
        return _targets(target.value)
    return set()


class GuardResolver(cst.CSTTransformer):
    """Names the flag in one module-level statement: ``before`` is what the module binds
    when it runs, ``at_end`` what it binds once imported, ``added`` returns how code names
    the flag through an import the rewrite adds (used where neither serves; ``used_added``
    says if it was)."""

    def __init__(self, before: dict[str, str], at_end: dict[str, str],
                 added: Callable[[], str]) -> None:
        super().__init__()
        self.before, self.at_end, self.added = before, at_end, added
        self.scopes: list[tuple[bool, set[str]]] = []
        """Each enclosing function or class: whether it is a function, and the names it
        binds itself."""
        self.used_added = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append((True, bound_names(node.body) | bound_names(node.params)))

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.scopes.pop()
        return updated_node

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.append((False, bound_names(node.body)))

    def leave_ClassDef(self, original_node: cst.ClassDef,
                       updated_node: cst.ClassDef) -> cst.ClassDef:
        self.scopes.pop()
        return updated_node

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        if updated_node.value != PLACEHOLDER:
            return updated_node
        return cst.parse_expression(self._spelling())

    def _spelling(self) -> str:
        # A function reads the flag when called (after the module ran); a class body at
        # once. Either may bind the name itself, so the module's binding is not the one read.
        known = self.at_end if any(function for function, _ in self.scopes) else self.before
        local = {name for _, names in self.scopes for name in names}
        for name in sorted(known, key=lambda n: ("." in known[n], n)):
            if name not in local:
                return known[name]
        self.used_added = True
        return self.added()
