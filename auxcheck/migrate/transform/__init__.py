"""The libcst codemod that points imports of moved names at their new module.

:class:`MigrateImportsCommand` makes one pass over a parsed module, guided by the
:class:`~auxcheck.migrate.scan.Analysis` the ast scanner made of the same text: it
rewrites ``from old import X`` (splitting statements that mix moved and staying
names), module imports with their attribute uses (``import old [as m]`` and
``from pkg import old``, each kept in the form the user wrote), dotted string targets
and star imports, and writes each import the way the project's ruff or isort
configuration (:mod:`auxcheck.migrate.style`) sorts and wraps it. With
``compat=True`` it writes ``if TYPE_CHECKING: new / else: try: new / except
ImportError: old`` instead (type checkers see the new layout, the interpreter imports
whichever it finds), and dotted string targets name the module found at import time. :func:`migrate_source` runs it and
never raises: it returns a result saying whether the text changed, or why it failed.

The package's modules, the codemod class's parts from the bottom up: ``nodes`` (what an
import statement says), ``layout`` (commas, comments and blank lines), ``plan`` (the state
and the names the rewrite gives), ``writing`` (statements as the style writes them),
``compat`` (the ``try`` blocks), ``placing`` (where an added import goes), ``statements``
(statement lists, each import split), ``module_top`` (what the module's top gains),
``rewriter`` and ``strings`` (the tree pass beyond top-level imports) and ``codemod``
(:class:`MigrateImportsCommand` and :func:`migrate_source`).
"""

from __future__ import annotations

from auxcheck.migrate.transform.codemod import (
    MigrateImportsCommand,
    MigrationResult,
    migrate_source,
)

__all__ = ["MigrateImportsCommand", "MigrationResult", "migrate_source"]
