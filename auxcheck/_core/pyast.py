"""Small questions about ``ast`` nodes that several readers of Python source ask alike."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

__all__ = [
    "IMPORT_ERROR_CATCHERS",
    "QuickVisitor",
    "absolute_module",
    "bound_names",
    "catches_import_error",
    "caught_names",
    "dotted_name",
    "is_main_block",
    "is_type_checking",
    "tests_the_release",
]

# Every handler that an ImportError reaches: its own classes and the bases above it.
IMPORT_ERROR_CATCHERS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def dotted_name(node: ast.expr) -> str | None:
    """Returns ``a.b.c`` for a chain of attributes on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def caught_names(handler: ast.ExceptHandler) -> list[str]:
    """Returns the exception class names ``handler`` names (last part), ``[]`` for bare ``except:``."""
    caught = handler.type
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught] if caught else []
    return [(dotted_name(n) or "").rpartition(".")[2] for n in names]


def catches_import_error(handler: ast.ExceptHandler) -> bool:
    """Returns True when ``handler`` catches an ImportError (bare ``except:`` included)."""
    return handler.type is None or any(n in IMPORT_ERROR_CATCHERS for n in caught_names(handler))


def is_type_checking(test: ast.expr) -> bool:
    """Returns True for the test of an ``if TYPE_CHECKING:`` block (nothing in it runs)."""
    return ast.unparse(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def is_main_block(test: ast.expr) -> bool:
    """Returns True for ``if __name__ == "__main__":`` (its body runs only as a script)."""
    text = ast.unparse(test).replace("'", '"')
    return text in ('__name__ == "__main__"', '"__main__" == __name__')


def absolute_module(module: str, package: bool, level: int, target: str | None) -> str | None:
    """Returns the module a ``from`` import with ``level`` dots names, seen from ``module``.

    ``package`` says whether ``module`` is a package (its ``__init__``). None when the
    dots climb above the top-level package.
    """
    if level == 0:
        return target
    base = module.split(".") if package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    if not base:
        return None
    return ".".join([*base, target] if target else base)


def bound_names(node: ast.stmt) -> list[str]:
    """Returns the names a statement binds in its scope (definitions, imports, targets)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Import):
        return [a.asname or a.name.split(".")[0] for a in node.names]
    if isinstance(node, ast.ImportFrom):
        return [a.asname or a.name for a in node.names if a.name != "*"]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    names: list[str] = []
    for target in targets:
        names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return names


_RELEASE_WORDS = ("version", "hasattr", "signature", "getattr")
"""Words in a test that make the code under it depend on the SGLang release."""


def tests_the_release(test: ast.expr) -> bool:
    """Returns True when ``test`` (an ``if``'s) looks at the release: a version, ``hasattr``,
    ``getattr`` or a signature. A call or attribute use under it plans for releases that
    differ, so its misfit is a note, never a failure."""
    text = ast.unparse(test)
    return any(word in text for word in _RELEASE_WORDS)


class QuickVisitor(ast.NodeVisitor):
    """An :class:`ast.NodeVisitor` that walks the same nodes in the same order, and calls the
    same ``visit_*`` methods, in about two thirds of the time: which method a node type gets
    is looked up once per type (not once per node), and the fields are read without
    ``ast.iter_fields``'s generator. For walks over large plugins (thousands of hooks)."""

    _visitors: dict[type, Callable[[Any], Any]]

    def visit(self, node: ast.AST) -> Any:
        """Calls ``visit_<class name>`` of ``node``, or :meth:`generic_visit`; returns its value."""
        try:
            visitors = self._visitors
        except AttributeError:
            visitors = self._visitors = {}
        kind = type(node)
        visitor = visitors.get(kind)
        if visitor is None:
            visitor = visitors[kind] = getattr(self, "visit_" + kind.__name__,
                                               self.generic_visit)
        return visitor(node)

    def generic_visit(self, node: ast.AST) -> None:
        """Visits every child node of ``node``, field by field, in order."""
        visit = self.visit
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        visit(item)
            elif isinstance(value, ast.AST):
                visit(value)
