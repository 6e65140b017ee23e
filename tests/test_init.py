"""Tests for the auxcheck package surface: __all__ and light imports."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

import auxcheck


def _isort_key(name: str) -> tuple[int, str]:
    """Returns the isort-style key: CONSTANTS, then Classes, then everything else."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


def test_all_lists_exactly_the_public_names_in_sorted_order() -> None:
    """__all__ holds every public (non-module) name the package offers, isort-sorted."""
    public = {
        name for name in dir(auxcheck)
        if not name.startswith("_") and not isinstance(getattr(auxcheck, name), types.ModuleType)
    } | {"__version__"}
    assert set(auxcheck.__all__) == public
    assert auxcheck.__all__ == sorted(auxcheck.__all__, key=_isort_key)


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
                            timeout=60, check=True)
    assert json.loads(result.stdout) == []
