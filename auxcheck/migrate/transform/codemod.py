"""The codemod command, and migrate_source, which runs it on one text and never raises."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Literal

import libcst as cst
from libcst.codemod import (
    Codemod,
    CodemodContext,
    TransformExit,
    TransformFailure,
    TransformSkip,
    TransformSuccess,
)
from libcst.codemod import transform_module as run_codemod

from auxcheck.migrate.moves import MoveTable
from auxcheck.migrate.scan import Analysis, analyze, is_defining_module, package_of
from auxcheck.migrate.style import ImportStyle
from auxcheck.migrate.transform.compat import CompatWriter
from auxcheck.migrate.transform.module_top import ModuleTopEditor
from auxcheck.migrate.transform.nodes import keeps_import_order
from auxcheck.migrate.transform.placing import ImportPlacer
from auxcheck.migrate.transform.plan import ImportPlan
from auxcheck.migrate.transform.rewriter import TreeRewriter
from auxcheck.migrate.transform.state import RewriteInputs
from auxcheck.migrate.transform.statements import StatementRewriter
from auxcheck.migrate.transform.strings import StringRewriter
from auxcheck.migrate.transform.writing import StatementWriter

__all__ = ["MigrateImportsCommand", "MigrationResult", "finish", "migrate_source"]


@dataclass(frozen=True, slots=True)
class MigrationResult:
    """The outcome for one source text: ``status`` and, when it changed, the new text."""

    status: Literal["changed", "unchanged", "skipped", "failed"]
    text: str
    reason: str = ""
    analysis: Analysis | None = None


class MigrateImportsCommand(Codemod):
    """Rewrites uses of moved names' old modules to their new modules, in one pass.

    It composes small collaborators, as LibCST's own codemods compose visitors, each given
    the one :class:`~.state.RewriteInputs` (read-only) and the collaborators it calls: the
    :class:`~.plan.ImportPlan` (the names; their only writer), the
    :class:`~.writing.StatementWriter`, the :class:`~.compat.CompatWriter`, the
    :class:`~.placing.ImportPlacer`, the :class:`~.statements.StatementRewriter`, the
    :class:`~.module_top.ModuleTopEditor` and the :class:`~.strings.StringRewriter`;
    :class:`~.rewriter.TreeRewriter` walks the tree and calls them.
    """

    DESCRIPTION = ("Point imports, module-attribute uses and dotted string targets of names "
                   "SGLang moved at their new module, in the project's import style.")

    def __init__(self, context: CodemodContext, *, moves: MoveTable, analysis: Analysis,
                 package: str | None = None, compat: bool = False,
                 style: ImportStyle | None = None, keep_order: bool = False) -> None:
        super().__init__(context)
        self.inputs = RewriteInputs.of(moves=moves, analysis=analysis, package=package,
                                       compat=compat, style=style, keep_order=keep_order)
        self.plan = ImportPlan(self.inputs)
        writer = StatementWriter(self.inputs)
        self.blocks = CompatWriter(self.inputs, self.plan, writer)
        placer = ImportPlacer(self.inputs, writer, self.blocks)
        self.statements = StatementRewriter(self.inputs, self.plan, placer)
        self.top = ModuleTopEditor(self.inputs, self.plan, writer)
        self.strings = StringRewriter(self.inputs, self.plan)

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Returns the rewritten module (no metadata: MetadataWrapper would deep-copy it)."""
        return self.transform_module_impl(tree)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        """Returns ``tree`` with every fixable use of an old module rewritten."""
        if not self.inputs.analysis.deep:
            return tree.with_changes(body=self.top.finish(
                self.statements.rewrite_body(tree.body, "")))
        return tree.visit(TreeRewriter(self.inputs, self.plan, statements=self.statements,
                                       blocks=self.blocks, strings=self.strings,
                                       top=self.top))


def migrate_source(text: str, *, moves: MoveTable, module: str | None = None,
                   is_package: bool = False, compat: bool = False,
                   path: str = "<string>", style: ImportStyle | None = None) -> MigrationResult:
    """Returns the migrated ``text`` as a MigrationResult; never raises on bad input.

    ``module`` is the file's dotted module name (for relative imports and to skip
    the modules that define moved names); ``style`` is how the project sorts and wraps
    imports (ruff's defaults when None). The result is ``unchanged`` when there is
    nothing to do, ``failed`` (with the reason) when the text does not parse or the
    output would not, ``skipped`` for defining modules.
    """
    if is_defining_module(module, moves):
        return MigrationResult("skipped", text, "defines moved names")
    if not moves.could_use(text.encode("utf-8", "surrogatepass")):
        return MigrationResult("unchanged", text)
    package = package_of(module, is_package=is_package)
    try:
        analysis = analyze(ast.parse(text, filename=path), moves, package=package,
                           source=text)
    except (SyntaxError, ValueError) as exc:
        return MigrationResult("failed", text, f"does not parse: {_syntax_reason(exc)}")
    if not analysis.fixable:
        return MigrationResult("unchanged", text, analysis=analysis)
    command = MigrateImportsCommand(CodemodContext(filename=path), moves=moves,
                                    analysis=analysis, package=package, compat=compat,
                                    style=style, keep_order=keeps_import_order(text))
    return finish(run_codemod(command, text), text, moves, package, path)


def _rejected(text: str, path: str, exc: Exception) -> str:
    """Returns why a rewrite Python rejects failed: the input's own fault (``import *`` in a
    function compiles no better before), or the rewrite's."""
    try:
        compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as own:
        return f"does not compile: {_syntax_reason(own)}"
    return f"rewrite would not compile: {_syntax_reason(exc)}"


def _syntax_reason(exc: Exception) -> str:
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (line {exc.lineno})"
    return str(exc)


def finish(result: object, text: str, moves: MoveTable, package: str | None,
           path: str) -> MigrationResult:
    """Returns the outcome of a codemod run on ``text``: a rewrite Python rejects fails."""
    if isinstance(result, TransformExit):
        raise KeyboardInterrupt
    if isinstance(result, TransformFailure):
        return MigrationResult("failed", text, f"libcst failed: {result.error}")
    if isinstance(result, TransformSkip):
        return MigrationResult("skipped", text, result.skip_description)
    assert isinstance(result, TransformSuccess)
    changed = result.code != text
    try:  # nothing Python would reject is ever written
        tree = ast.parse(result.code, filename=path)
        if changed:  # what only the compiler checks too (a pattern holding an f-string)
            compile(tree, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return MigrationResult("failed", text, _rejected(text, path, exc))
    after = analyze(tree, moves, package=package, source=result.code)
    return MigrationResult("changed" if changed else "unchanged", result.code, analysis=after)
