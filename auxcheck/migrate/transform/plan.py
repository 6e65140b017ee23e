"""The codemod's state and plan: the name each moved module's uses get, and what binds them."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import Codemod, CodemodContext

from auxcheck.migrate.moves import MoveTable
from auxcheck.migrate.scan import Analysis, moved_names, resolve_relative
from auxcheck.migrate.style import ImportStyle
from auxcheck.migrate.transform.guards import PLACEHOLDER
from auxcheck.migrate.transform.nodes import Kind, module_text

__all__ = ["ImportPlan"]


class ImportPlan(Codemod):
    """The state of one rewrite, and the names it gives: what an old module's moved uses
    become, the constants of --compat, and how the code names ``TYPE_CHECKING``."""

    def __init__(self, context: CodemodContext, *, moves: MoveTable, analysis: Analysis,
                 package: str | None = None, compat: bool = False,
                 style: ImportStyle | None = None, keep_order: bool = False) -> None:
        super().__init__(context)
        self.keep_order = keep_order
        """The file asks its import sorter to leave every import where it is."""
        self.frozen: set[int] = set()
        """The statements of the list being rewritten that must stay where they are."""
        self.moves = moves
        self.analysis = analysis
        self.package = package
        self.compat = compat
        self.style = style or ImportStyle()
        self.moved = moved_names(moves)
        self.taken = set(analysis.all_names)
        self.tops = {old.partition(".")[0] for old in moves.old_modules}
        self.new_aliases: dict[tuple[str, str | None], str] = {}
        self.plan = self._plan()
        self.type_replacements = {
            (owner, new): text for owner, targets in self.plan.items()
            for new, text in targets.items()
            if owner in analysis.aliases or owner in analysis.module_imports}
        """What a type-expression string's ``m.X`` or ``old.X`` becomes, where a
        module-level import binds the name the rewrite gives it."""
        self.constants: dict[tuple[str, str], str] = {}
        """(old, new) -> the module-level name holding the module found at import time."""
        self.guard: tuple[Kind, str, str | None] | None = None
        """The import the guards the rewrite writes need (``from typing import
        TYPE_CHECKING`` or ``import typing``), where the module binds none before them."""
        self.local_guard: str | None = None
        """How the statement list being rewritten names TYPE_CHECKING, if it imports it."""
        self.pending_guards = False
        """Some guard names the flag by the placeholder the module's top resolves."""
        self.indent = ""
        """The indentation of the statement list being rewritten (lines count it)."""
        self.scope = 0
        """The body the statement list being rewritten binds names in: 0 for the module,
        else its def's or class's number (:attr:`Analysis.binding_scopes`)."""

    # -- names --------------------------------------------------------------------------------

    def _plan(self) -> dict[str, dict[str, str]]:
        """Returns, for each alias or dotted old module used for moved names, the text that
        replaces it in front of each new module's names (``m.X`` -> ``<text>.X``).

        A user's ``as`` alias is kept when all its uses moved to one module; a dotted
        ``import old`` becomes ``import new`` with full dotted uses; otherwise each new
        module gets a free name (its last component). --compat always needs a name: the
        old module stands in for it on older releases.
        """
        analysis, plan = self.analysis, {}
        for owner in sorted(analysis.owner_moved):
            old = analysis.aliases.get(owner, owner)
            moved = self.moved.get(old, {})
            news = sorted({moved[n] for n in analysis.owner_moved[owner] if n in moved})
            reuse = (owner in analysis.explicit_aliases and len(news) == 1
                     and owner not in analysis.alias_other_uses)
            dotted = owner not in analysis.aliases and not self.compat
            # An alias an import-error handler rebinds gets a name of its own: the
            # handler binds that name to its fallback, which no other alias shares.
            mine = owner if owner in analysis.guarded_aliases else None
            plan[owner] = {new: owner if reuse else new if dotted else self._alias_for(
                new, mine) for new in news}
        return plan

    def _alias_for(self, new: str, owner: str | None = None) -> str:
        """Returns the name bound to ``new`` for its attribute uses (free, and stable);
        one of ``owner``'s own when given."""
        if (new, owner) in self.new_aliases:
            return self.new_aliases[(new, owner)]
        alias = new.rpartition(".")[2]
        if owner is not None or not (
                (new, "") in self.analysis.new_bound and alias not in self.analysis.other_bound):
            while alias in self.taken:
                alias += "_"
        self.taken.add(alias)
        self.new_aliases[(new, owner)] = alias
        return alias

    def constant_for(self, old: str, new: str) -> str:
        """Returns the module-level name that holds ``new`` or, on older releases, ``old``."""
        if (old, new) not in self.constants:
            name = f"_{new.rpartition('.')[2].upper()}_MODULE"
            while name in self.taken:
                name += "_"
            self.taken.add(name)
            self.constants[(old, new)] = name
        return self.constants[(old, new)]

    def type_checking_name(self) -> str:
        """Returns how the code being rewritten names ``typing.TYPE_CHECKING``: as the
        statement list imports it before its first rewritten import, else a placeholder
        the module's top resolves once the module is whole (:mod:`.guards`)."""
        if self.local_guard is not None:
            return self.local_guard
        self.pending_guards = True
        return PLACEHOLDER

    def guard_spelling(self) -> str:
        """Returns how code names the flag through the import the rewrite adds for it
        (``typing.TYPE_CHECKING`` when the file binds ``TYPE_CHECKING`` to its own)."""
        if self.guard is None:
            self.guard = self._guard_import()
        kind, _, name = self.guard
        return "TYPE_CHECKING" if kind == "from" else f"{name or 'typing'}.TYPE_CHECKING"

    def _guard_import(self) -> tuple[Kind, str, str | None]:
        if "TYPE_CHECKING" not in self.taken:
            return ("from", "typing", "TYPE_CHECKING")
        alias = "typing"
        while alias in self.taken:
            alias += "_"
        self.taken.add(alias)
        return ("import", "typing", None if alias == "typing" else alias)

    def _bound_alias(self, module: str | None, name: str, asname: str | None) -> str | None:
        """Returns the old module a binding names when its attribute uses need work: some
        use of a moved name reads this body's binding."""
        full = f"{module}.{name}" if module is not None else name
        key = asname or (name if module is not None else full)
        if full in self.moved and key in self.plan and (
                key, self.scope) in self.analysis.binding_moved:
            return full
        return None

    def targets_here(self, owner: str) -> list[tuple[str, str]]:
        """Returns ``(new module, name given)`` for each new module whose names are used
        through this body's binding of ``owner``: what the imports here must bind."""
        old = self.analysis.aliases.get(owner, owner)
        moved = self.moved.get(old, {})
        news = {moved[n] for n in self.analysis.binding_moved.get((owner, self.scope), ())
                if n in moved}
        return [(new, text) for new, text in sorted(self.plan[owner].items()) if new in news]

    def _resolve(self, node: cst.ImportFrom) -> str | None:
        level = len(node.relative)
        return resolve_relative(level, module_text(node) or None, self.package)
