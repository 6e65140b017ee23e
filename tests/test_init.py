"""Tests for the auxcheck package surface: __all__ and light imports."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import auxcheck


def _isort_key(name: str) -> tuple[int, str]:
    """Returns the isort-style key: CONSTANTS, then Classes, then everything else."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


def test_all_lists_exactly_the_public_names_in_sorted_order() -> None:
    """__all__ holds every public (non-module) name the package defines, isort-sorted."""
    public = {
        name for name, value in vars(auxcheck).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    } | {"__version__"}
    assert set(auxcheck.__all__) == public
    assert auxcheck.__all__ == sorted(auxcheck.__all__, key=_isort_key)


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
