"""The plan: the name each moved module's uses get, and what binds them (its only writer)."""

from __future__ import annotations

import libcst as cst

from auxcheck.migrate.scan import resolve_relative
from auxcheck.migrate.transform.guards import PLACEHOLDER
from auxcheck.migrate.transform.nodes import Kind, module_text
from auxcheck.migrate.transform.state import RewriteInputs

__all__ = ["ImportPlan"]


class ImportPlan:
    """The names one rewrite gives, and their only writer: what an old module's moved uses
    become, the constants of --compat, and how the code names ``TYPE_CHECKING``."""

    def __init__(self, inputs: RewriteInputs) -> None:
        self.inputs = inputs
        self.taken = set(inputs.analysis.all_names)
        """Every name the module binds or the rewrite has given."""
        self.new_aliases: dict[tuple[str, str | None], str] = {}
        self.given = self._plan()
        """For each alias or dotted old module used for moved names: new module -> the
        text that replaces it in front of that module's names."""
        analysis = inputs.analysis
        self.type_replacements = {
            (owner, new): text for owner, targets in self.given.items()
            for new, text in targets.items()
            if owner in analysis.aliases or owner in analysis.module_imports}
        """What a type-expression string's ``m.X`` or ``old.X`` becomes, where a
        module-level import binds the name the rewrite gives it."""
        self.constants: dict[tuple[str, str], str] = {}
        """(old, new) -> the module-level name holding the module found at import time."""
        self.guard: tuple[Kind, str, str | None] | None = None
        """The import the guards the rewrite writes need (``from typing import
        TYPE_CHECKING`` or ``import typing``), where the module binds none before them."""
        self.pending_guards = False
        """Some guard names the flag by the placeholder the module's top resolves."""

    # -- names --------------------------------------------------------------------------------

    def _plan(self) -> dict[str, dict[str, str]]:
        """Returns, for each alias or dotted old module used for moved names, the text that
        replaces it in front of each new module's names (``m.X`` -> ``<text>.X``).

        A user's ``as`` alias is kept when all its uses moved to one module; a dotted
        ``import old`` becomes ``import new`` with full dotted uses; otherwise each new
        module gets a free name (its last component). --compat always needs a name: the
        old module stands in for it on older releases.
        """
        analysis, plan = self.inputs.analysis, {}
        for owner in sorted(analysis.owner_moved):
            old = analysis.aliases.get(owner, owner)
            moved = self.inputs.moved.get(old, {})
            news = sorted({moved[n] for n in analysis.owner_moved[owner] if n in moved})
            reuse = (owner in analysis.explicit_aliases and len(news) == 1
                     and owner not in analysis.alias_other_uses)
            dotted = owner not in analysis.aliases and not self.inputs.compat
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
                (new, "") in self.inputs.analysis.new_bound
                and alias not in self.inputs.analysis.other_bound):
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

    def type_checking_name(self, local: str | None) -> str:
        """Returns how the code being rewritten names ``typing.TYPE_CHECKING``: ``local``,
        how its statement list imports it before its first rewritten import, else a
        placeholder the module's top resolves once the module is whole (:mod:`.guards`)."""
        if local is not None:
            return local
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

    def bound_alias(self, module: str | None, name: str, asname: str | None,
                    scope: int) -> str | None:
        """Returns the old module a binding names when its attribute uses need work: some
        use of a moved name reads the binding in body ``scope``."""
        full = f"{module}.{name}" if module is not None else name
        key = asname or (name if module is not None else full)
        if full in self.inputs.moved and key in self.given and (
                key, scope) in self.inputs.analysis.binding_moved:
            return full
        return None

    def targets_here(self, owner: str, scope: int) -> list[tuple[str, str]]:
        """Returns ``(new module, name given)`` for each new module whose names are used
        through body ``scope``'s binding of ``owner``: what the imports there must bind."""
        analysis = self.inputs.analysis
        old = analysis.aliases.get(owner, owner)
        moved = self.inputs.moved.get(old, {})
        news = {moved[n] for n in analysis.binding_moved.get((owner, scope), ())
                if n in moved}
        return [(new, text) for new, text in sorted(self.given[owner].items()) if new in news]

    def resolve(self, node: cst.ImportFrom) -> str | None:
        """Returns the absolute module a from-import names (None when it leaves the tree)."""
        level = len(node.relative)
        return resolve_relative(level, module_text(node) or None, self.inputs.package)
