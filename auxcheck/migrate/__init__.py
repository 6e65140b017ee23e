"""The import-migration engine for names SGLang moved (``auxcheck migrate``).

Importing this package loads neither libcst nor torch: the scanner parses with
:mod:`ast`, and :mod:`auxcheck.migrate.transform` (libcst) is imported only when a
file needs rewriting.
"""

from auxcheck.migrate._moves import Move, MoveTable, builtin_moves, load_moves
from auxcheck.migrate.scan import scan_paths, scan_source

__all__ = ["Move", "MoveTable", "builtin_moves", "load_moves", "scan_paths", "scan_source"]
