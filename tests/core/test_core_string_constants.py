"""Module-level string constants (assigned once, bound nowhere else) and strings built from them."""

from __future__ import annotations

import ast

import pytest

from auxcheck._core.constants import string_constants, string_value

CONSTANTS = {
    "a plain assignment": ('A = "x"\n', {"A": "x"}),
    "an annotated assignment": ('A: str = "x"\n', {"A": "x"}),
    "inside a module-level if": ('if True:\n    A = "x"\n', {"A": "x"}),
    "assigned twice": ('A = "x"\nA = "y"\n', {}),
    "rebound by a loop": ('A = "x"\nfor A in (): pass\n', {}),
    "rebound through global": ('A = "x"\ndef f():\n    global A\n    A = "y"\n', {}),
    "a parameter of the same name": ('A = "x"\ndef f(A): ...\n', {}),
    "an import of the same name": ('A = "x"\nfrom m import A\n', {}),
    "a walrus of the same name": ('A = "x"\n(A := 1)\n', {}),
    "inside a function": ('def f():\n    A = "x"\n', {}),
    "not a string": ("A = 1\n", {}),
    "two targets": ('A = B = "x"\n', {}),
}


@pytest.mark.parametrize(("source", "expected"), CONSTANTS.values(), ids=CONSTANTS.keys())
def test_only_a_name_bound_once_to_a_string_at_module_level_is_a_constant(
        source: str, expected: dict[str, str]) -> None:
    """A name whose value could be in doubt is left out."""
    assert string_constants(ast.parse(source)) == expected


VALUES = {
    "an f-string of constants": ('f"{A}.{B}"', "x.y"),
    "a str conversion": ('f"{A!s}.z"', "x.z"),
    "a sum": ('A + "." + B', "x.y"),
    "an unknown name": ('f"{C}.z"', None),
    "a repr conversion": ('f"{A!r}.z"', None),
    "a format spec": ('f"{A:>9}.z"', None),
    "a call": ('f"{A.upper()}.z"', None),
}


@pytest.mark.parametrize(("expression", "expected"), VALUES.values(), ids=VALUES.keys())
def test_a_string_is_known_only_when_built_of_literals_and_constants(
        expression: str, expected: str | None) -> None:
    """Anything else, including a chain too deep to follow, is unknown (None), never a guess."""
    node = ast.parse(expression, mode="eval").body
    assert string_value(node, {"A": "x", "B": "y"}) == expected


def test_a_sum_too_deep_to_follow_is_unknown_not_a_recursion_error() -> None:
    """A ``+`` chain 100,000 deep (built directly: the parser refuses it) gives None."""
    node: ast.expr = ast.Name("A")
    for _ in range(100_000):
        node = ast.BinOp(node, ast.Add(), ast.Constant("x"))
    assert string_value(node, {"A": "x"}) is None


def test_a_caller_reading_names_by_scope_answers_them_through_a_function() -> None:
    """``constants`` may be a function: the names it answers compose as a mapping's do, and a
    name it cannot answer (None) leaves the whole string unknown."""
    known = {"BASE": "sglang.srt"}.get
    assert string_value(ast.parse("f'{BASE}.a' + '.b'", mode="eval").body, known) == (
        "sglang.srt.a.b")
    assert string_value(ast.parse("f'{BASE}.{OTHER}'", mode="eval").body, known) is None
