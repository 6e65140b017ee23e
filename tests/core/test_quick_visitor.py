"""QuickVisitor: the same walk as ast.NodeVisitor, method for method, in less time."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import auxcheck
from auxcheck._core.pyast import QuickVisitor

SOURCES = [path for path in sorted(Path(auxcheck.__file__).parent.rglob("*.py"))
           if path.stat().st_size > 4000][:30] + [Path(inspect.getfile(ast)),
                                                  Path(inspect.getfile(inspect))]
"""Real modules: 30 of auxcheck's own and two of the standard library's largest."""


class _Recorder:
    """Records each node visited, and which visit_* method saw it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int]] = []

    def visit_Call(self, node: ast.Call) -> None:
        self.seen.append(("call", getattr(node, "lineno", 0), getattr(node, "col_offset", 0)))
        self.generic_visit(node)  # type: ignore[attr-defined]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.seen.append(("def", node.lineno, node.col_offset))  # and not its body

    def visit_Constant(self, node: ast.Constant) -> None:
        self.seen.append(("constant", getattr(node, "lineno", 0), getattr(node, "col_offset", 0)))

    def generic_visit(self, node: ast.AST) -> None:
        self.seen.append((type(node).__name__, getattr(node, "lineno", 0),
                          getattr(node, "col_offset", 0)))
        super().generic_visit(node)  # type: ignore[misc]


class _Plain(_Recorder, ast.NodeVisitor):
    pass


class _Quick(_Recorder, QuickVisitor):
    pass


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_the_quick_visitor_visits_every_node_in_ast_s_order_with_the_same_methods(
        path: Path) -> None:
    """Overridden visit_* methods, generic_visit and skipped subtrees all as NodeVisitor does."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    plain, quick = _Plain(), _Quick()
    plain.visit(tree)
    quick.visit(tree)
    assert quick.seen == plain.seen
    assert len(quick.seen) > 10
