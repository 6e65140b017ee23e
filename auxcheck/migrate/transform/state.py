"""The state the rewrite's collaborators share, split by who writes it.

:class:`RewriteInputs` is what one rewrite was given (and what follows from that alone): every
collaborator receives it, and none writes it. :class:`ListContext` is where one statement list
being rewritten stands: :class:`~.statements.StatementRewriter` makes one per list and passes
it down to the placer and the compat writer, which only read it. The names the rewrite gives
are the plan's own (:class:`~.plan.ImportPlan`, their only writer); the tree pass keeps its
own place in the tree (:class:`~.rewriter.TreeRewriter`).
"""

from __future__ import annotations

from dataclasses import dataclass

from auxcheck.migrate.moves import MoveTable
from auxcheck.migrate.scan import Analysis, moved_names
from auxcheck.migrate.style import ImportStyle

__all__ = ["ListContext", "RewriteInputs"]


@dataclass(frozen=True, slots=True)
class RewriteInputs:
    """What one rewrite was given: read by every collaborator, written by none."""

    moves: MoveTable
    analysis: Analysis
    """What the ast scanner made of the same text."""
    package: str | None
    """The package relative imports are read in (None outside one)."""
    compat: bool
    """Write ``--compat`` blocks (imports that work on both layouts)."""
    style: ImportStyle
    """How the project sorts and wraps imports."""
    keep_order: bool
    """The file asks its import sorter to leave every import where it is."""
    moved: dict[str, dict[str, str]]
    """{old module: {moved name: new module}} (do not modify)."""
    tops: frozenset[str]
    """The first components of the old modules (a string naming none needs no work)."""

    @classmethod
    def of(cls, *, moves: MoveTable, analysis: Analysis, package: str | None = None,
           compat: bool = False, style: ImportStyle | None = None,
           keep_order: bool = False) -> RewriteInputs:
        """Returns the inputs of one rewrite, with what follows from them."""
        return cls(moves=moves, analysis=analysis, package=package, compat=compat,
                   style=style or ImportStyle(), keep_order=keep_order,
                   moved=moved_names(moves),
                   tops=frozenset(old.partition(".")[0] for old in moves.old_modules))


@dataclass(frozen=True, slots=True)
class ListContext:
    """Where the statement list being rewritten stands: made for that list, never changed."""

    indent: str
    """The indentation of its statements (lines count it)."""
    scope: int
    """The body it binds names in: 0 for the module, else its def's or class's number
    (:attr:`Analysis.binding_scopes`)."""
    frozen: frozenset[int] = frozenset()
    """The indexes of its statements that must stay where they are."""
    guard: str | None = None
    """How it names ``TYPE_CHECKING``, if it imports it before its first rewritten import."""
