"""Tests for the auxcheck package surface: __all__ and light imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.processes import HANG_GUARD

import auxcheck


def _isort_key(name: str) -> tuple[int, str]:
    """Returns the isort-style key: CONSTANTS, then Classes, then everything else."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


def _type_checking_imports() -> dict[str, str]:
    """Returns name -> module of the imports under ``if TYPE_CHECKING:`` in auxcheck/__init__.py.

    That block is what type checkers see; it is read from the source, independently
    of ``__all__`` and of the runtime's lazy table.
    """
    import ast
    from pathlib import Path

    tree = ast.parse(Path(auxcheck.__file__).read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING") \
                and not isinstance(node.test, ast.UnaryOp):
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module
                found.update({alias.asname or alias.name: stmt.module for alias in stmt.names})
    return found


def test_all_lists_exactly_the_names_type_checkers_and_the_runtime_see_in_sorted_order() -> None:
    """__all__, the TYPE_CHECKING imports and the lazy table name the same objects, isort-sorted."""
    typed = _type_checking_imports()
    assert typed, "no TYPE_CHECKING imports found in auxcheck/__init__.py"
    assert set(auxcheck.__all__) == set(typed) | {"__version__"}
    assert {name: module for module, names in auxcheck._HOMES.items() for name in names} == typed
    assert auxcheck.__all__ == sorted(auxcheck.__all__, key=_isort_key)


def test_every_exported_name_is_public_in_its_defining_module() -> None:
    """Each name the package re-exports is in its home module's own __all__."""
    import importlib

    for name, module in _type_checking_imports().items():
        assert name in importlib.import_module(module).__all__, f"{module}.{name}"


def test_every_public_name_resolves_to_the_object_its_module_defines() -> None:
    """Lazily exported names are the very objects of their defining modules."""
    import importlib

    for module, names in auxcheck._HOMES.items():
        for name in names:
            assert getattr(auxcheck, name) is getattr(importlib.import_module(module), name)


def test_an_unknown_attribute_is_an_attribute_error_naming_it() -> None:
    """A misspelt name fails the usual way, so hasattr() and typos behave."""
    with pytest.raises(AttributeError, match="module 'auxcheck' has no attribute 'check_devise'"):
        auxcheck.check_devise  # noqa: B018


def test_light_imports_load_neither_torch_libcst_nor_hypothesis() -> None:
    """Importing the package, the contract and the validators keeps heavy deps unloaded."""
    code = (
        "import json, sys\n"
        "import auxcheck, auxcheck.protocols, auxcheck.validate, auxcheck.report, auxcheck.cli\n"
        "print(json.dumps(sorted(m for m in ('torch', 'libcst', 'hypothesis', 'numpy')"
        " if m in sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=HANG_GUARD, check=True)
    assert json.loads(result.stdout) == []
