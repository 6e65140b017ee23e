"""Module-level string constants of one file, and the strings built from them, read with ``ast``.

A name is a constant only where its value cannot be in doubt: assigned a string literal once,
at module level (outside functions and classes), and bound nowhere else in the file, in any
scope (no second assignment, loop, ``global`` rebinding, import, parameter or local of the
same name). Anything else is unknown: callers say they cannot tell, never guess.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Iterator, Mapping

__all__ = ["string_constants", "string_value"]

_BLOCKS = (ast.If, ast.Try, ast.With)


def string_constants(tree: ast.Module) -> dict[str, str]:
    """Returns the file's module-level names bound once, to a string literal -> their value."""
    bound = Counter(_bindings(tree))
    return {name: value for name, value in _module_assignments(tree.body)
            if bound[name] == 1}


def string_value(node: ast.expr,
                 constants: Mapping[str, str] | Callable[[str], str | None]) -> str | None:
    """Returns the string ``node`` evaluates to when made of literals and ``constants`` alone
    (a name, an f-string with plain or ``!s`` fields, ``+``); None when it cannot be known.

    ``constants`` maps a name to the string it always holds, or is a function answering that
    (None for a name whose value is in doubt): a caller reading names by scope passes one."""
    named = constants.get if isinstance(constants, Mapping) else constants
    try:
        return _value(node, named)
    except RecursionError:  # thousands of `+` deep: past what can be followed
        return None


def _value(node: ast.expr, constants: Callable[[str], str | None]) -> str | None:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return constants(node.id)
    if isinstance(node, ast.FormattedValue):
        plain = node.conversion in (-1, ord("s")) and node.format_spec is None
        return _value(node.value, constants) if plain else None
    if isinstance(node, ast.JoinedStr):
        parts = [_value(v, constants) for v in node.values]
        return None if any(p is None for p in parts) else "".join(p or "" for p in parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, constants), _value(node.right, constants)
        return None if left is None or right is None else left + right
    return None


def _module_assignments(body: list[ast.stmt]) -> Iterator[tuple[str, str]]:
    for node in body:
        target: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, ast.AnnAssign):
            target = node.target
        value = getattr(node, "value", None)
        if (isinstance(target, ast.Name) and isinstance(value, ast.Constant)
                and isinstance(value.value, str)):
            yield target.id, value.value
        if isinstance(node, _BLOCKS):
            for block in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", []),
                          *(h.body for h in getattr(node, "handlers", []))):
                yield from _module_assignments(block)


def _bindings(tree: ast.Module) -> Iterator[str]:
    """Yields each name every binding in the file binds, once per binding (any scope)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            yield node.id
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            yield from node.names
        elif isinstance(node, ast.alias):
            yield (node.asname or node.name).partition(".")[0]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, ast.arg):
            yield node.arg
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            yield node.name
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest
