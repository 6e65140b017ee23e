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

The command is composed the way LibCST's own codemods compose visitors: small
collaborators, no state shared through inheritance. Every one receives the one read-only
:class:`~.state.RewriteInputs` (the moves, the scan's analysis, the style, ``--compat``...)
and the collaborators it calls; what each writes is its own. The modules, from the bottom
up: ``nodes`` (what an import statement says), ``layout`` (commas, comments and blank
lines), ``state`` (the inputs, and :class:`~.state.ListContext`, where one statement list
stands, made for that list and passed down), ``plan`` (:class:`~.plan.ImportPlan`, the names
the rewrite gives, and their only writer), ``writing`` (:class:`~.writing.StatementWriter`,
statements as the style writes them), ``compat`` (:class:`~.compat.CompatWriter`, the
``try`` blocks), ``placing`` (:class:`~.placing.ImportPlacer`, where an added import goes),
``statements`` (:class:`~.statements.StatementRewriter`, statement lists, each import
split), ``module_top`` (:class:`~.module_top.ModuleTopEditor`, what the module's top
gains), ``strings`` (:class:`~.strings.StringRewriter`, dotted targets in strings),
``rewriter`` (:class:`~.rewriter.TreeRewriter`, the tree pass beyond top-level imports,
which keeps its own place in the tree and calls the others) and ``codemod``
(:class:`MigrateImportsCommand`, which builds them, and :func:`migrate_source`).
"""

from __future__ import annotations

from auxcheck.migrate.transform.codemod import (
    MigrateImportsCommand,
    MigrationResult,
    migrate_source,
)

__all__ = ["MigrateImportsCommand", "MigrationResult", "migrate_source"]
