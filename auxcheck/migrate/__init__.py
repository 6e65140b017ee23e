"""The import-migration engine for names SGLang moved (``auxcheck migrate``).

Importing this package loads neither libcst nor torch, and its names are imported
on first use (PEP 562): a ``--check`` run over files that cannot need work never
imports the scanner (:mod:`ast`) or :mod:`auxcheck.migrate.transform` (libcst).
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from auxcheck.migrate._moves import Move, MoveTable, builtin_moves, load_moves
    from auxcheck.migrate.scan import scan_paths, scan_source

_HOME_OF = {
    "Move": "auxcheck.migrate._moves",
    "MoveTable": "auxcheck.migrate._moves",
    "builtin_moves": "auxcheck.migrate._moves",
    "load_moves": "auxcheck.migrate._moves",
    "scan_paths": "auxcheck.migrate.scan",
    "scan_source": "auxcheck.migrate.scan",
}

__all__ = ["Move", "MoveTable", "builtin_moves", "load_moves", "scan_paths", "scan_source"]


def __getattr__(name: str) -> _typing.Any:
    """Returns the public name ``name``, importing the module that defines it on first use."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'auxcheck.migrate' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Returns the public names, loaded or not."""
    return sorted(set(globals()) | set(__all__))
