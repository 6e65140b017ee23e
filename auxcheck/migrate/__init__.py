"""The import-migration engine for names SGLang moved (``auxcheck migrate``).

Importing this package loads neither libcst nor torch, and its names are imported
on first use (PEP 562): a ``--check`` run over files that cannot need work never
imports the scanner (:mod:`ast`) or :mod:`auxcheck.migrate.transform` (libcst).
"""

import typing as _typing

from auxcheck._core import lazy as _lazy

if _typing.TYPE_CHECKING:
    from auxcheck.migrate.moves import Move, MoveTable, builtin_moves, load_moves
    from auxcheck.migrate.scan import scan_paths, scan_source

_HOME_OF = {
    "Move": "auxcheck.migrate.moves",
    "MoveTable": "auxcheck.migrate.moves",
    "builtin_moves": "auxcheck.migrate.moves",
    "load_moves": "auxcheck.migrate.moves",
    "scan_paths": "auxcheck.migrate.scan",
    "scan_source": "auxcheck.migrate.scan",
}

__all__ = ["Move", "MoveTable", "builtin_moves", "load_moves", "scan_paths", "scan_source"]


# Hidden from type checkers so that a misspelt name stays an error rather than Any.
if not _typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy.exports(__name__, globals(), _HOME_OF, __all__)
