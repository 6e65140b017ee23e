"""Statement lists rewritten: each import naming an old module split into what stays and moves."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from auxcheck.migrate import style as _style
from auxcheck.migrate.transform.layout import (
    joined_comments,
    kept_names,
    own_comment,
    own_lines,
    parse_line,
    suppression,
)
from auxcheck.migrate.transform.nodes import (
    Addition,
    Fallback,
    Kind,
    Names,
    alias_items,
    ends_block,
    frozen_statements,
    has_comment,
    has_magic_comma,
    module_binding,
    module_text,
    single_import,
    starts_block,
    type_checking_bound,
)
from auxcheck.migrate.transform.placing import ImportPlacer, merge_addition, restore_prefix
from auxcheck.migrate.transform.plan import ImportPlan
from auxcheck.migrate.transform.state import ListContext, RewriteInputs

__all__ = ["StatementRewriter"]


class StatementRewriter:
    """Rewrites the import statements of one statement list: each import split into what
    stays and what moves (the names from the plan), the moving part handed to the placer."""

    def __init__(self, inputs: RewriteInputs, plan: ImportPlan, placer: ImportPlacer) -> None:
        self.inputs = inputs
        self.plan = plan
        self.placer = placer
        self.last_guard: str | None = None
        """How the last statement list that needed work names ``TYPE_CHECKING`` (the
        user's import-error handlers of a ``try`` rewritten last name it so too)."""

    # -- statement lists ----------------------------------------------------------------------

    def rewrite_body(self, body: Sequence[cst.BaseStatement], indent: str, *, scope: int = 0,
                     compat: bool | None = None) -> list[cst.BaseStatement]:
        """Returns one statement list (binding names in body ``scope``) with its imports
        rewritten (``compat`` is off under ``if TYPE_CHECKING:``, where only type checkers
        import)."""
        compat = self.inputs.compat if compat is None else compat
        around = ListContext(indent, scope)
        body = [line for stmt in body for line in self._expand(stmt, around)]
        anchors = [i for i, s in enumerate(body) if self._touches(s, scope)]
        if not anchors:
            return list(body)
        guard = type_checking_bound(body[:anchors[0]]) if indent else None
        self.last_guard = guard
        context = ListContext(indent, scope, frozenset(
            frozen_statements(body, whole=self.inputs.keep_order)), guard)
        blocks = {i: self._block(body, i, context.frozen) for i in anchors}
        work = list(body)
        prefixes: dict[int, Sequence[cst.EmptyLine]] = {}
        for start, _ in set(blocks.values()):
            stmt = work[start]
            assert isinstance(stmt, cst.SimpleStatementLine)
            prefixes[start] = stmt.leading_lines
            work[start] = stmt.with_changes(leading_lines=())
        slots: list[list[cst.BaseStatement]] = [[s] for s in work]
        additions: dict[tuple[int, tuple[str, int, str, str | None]], Addition] = {}
        for i in anchors:
            kept, adds = self._split(work[i], i, context)
            slots[i] = kept
            group = i if i in context.frozen else -1  # a frozen statement's names stay with it
            for add in adds:
                merge_addition(additions, add, group)
        for add in additions.values():
            self.placer.place(slots, blocks[add.anchor], add, context, compat)
        for start, end in set(blocks.values()):
            restore_prefix(slots, start, end, prefixes[start])
        return [stmt for slot in slots for stmt in slot]

    def _expand(self, stmt: cst.BaseStatement,
                context: ListContext) -> list[cst.BaseStatement]:
        """Returns ``stmt`` as one line per statement when it is ``a; b`` holding an import
        that needs work (an import must stand on its own line to be split, sorted or wrapped
        in a compat ``try``); any other statement unchanged."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) > 1
                and any(self._needs_work(small, context) for small in stmt.body)):
            return [stmt]
        lines = own_lines(stmt.body)
        lines[0] = lines[0].with_changes(leading_lines=stmt.leading_lines)
        lines[-1] = lines[-1].with_changes(trailing_whitespace=stmt.trailing_whitespace)
        return list(lines)

    def expand_suite(self, suite: cst.SimpleStatementSuite, scope: int) -> cst.BaseSuite:
        """Returns ``if x: import old`` as an indented block when the import needs work."""
        context = ListContext("", scope)
        if not any(self._needs_work(small, context) for small in suite.body):
            return suite
        lines = own_lines(suite.body)
        lines[-1] = lines[-1].with_changes(trailing_whitespace=suite.trailing_whitespace)
        return cst.IndentedBlock(body=lines)

    def _needs_work(self, small: cst.BaseSmallStatement, context: ListContext) -> bool:
        if not isinstance(small, (cst.Import, cst.ImportFrom)):
            return False
        line = cst.SimpleStatementLine(body=[small])
        if not self._touches(line, context.scope):
            return False
        kept, adds = self._split(line, 0, context)
        return kept != [line] or bool(adds)

    def _touches(self, stmt: cst.BaseStatement, scope: int) -> bool:
        node = single_import(stmt)
        if isinstance(node, cst.ImportFrom):
            module = self.plan.resolve(node)
            if module in self.inputs.moved:
                return True
            return isinstance(node.names, Sequence) and any(
                self.plan.bound_alias(module, name, asname, scope) is not None
                for name, asname in alias_items(node.names))
        if isinstance(node, cst.Import):
            return any(self.plan.bound_alias(None, n, a, scope) is not None
                       for n, a in alias_items(node.names))
        return False

    def _block(self, body: Sequence[cst.BaseStatement], index: int,
               frozen: frozenset[int]) -> tuple[int, int]:
        """Returns the first and last index of the import block around ``index``: a frozen
        statement is a block of its own, and no block reaches into one."""
        start = end = index
        if index in frozen:
            return start, end
        while (start > 0 and single_import(body[start - 1]) and not starts_block(body[start])
               and start - 1 not in frozen and not ends_block(body[start - 1])):
            start -= 1
        while end + 1 < len(body) and single_import(body[end + 1]) and not starts_block(
                body[end + 1]) and end + 1 not in frozen and not ends_block(body[end]):
            end += 1
        return start, end

    # -- splitting one import statement -------------------------------------------------------

    def _split(self, stmt: cst.BaseStatement, index: int,
               context: ListContext) -> tuple[list[cst.BaseStatement], list[Addition]]:
        assert isinstance(stmt, cst.SimpleStatementLine)
        node = single_import(stmt)
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            return [stmt], self._star_additions(node, index)
        assert node is not None
        module = self.plan.resolve(node) if isinstance(node, cst.ImportFrom) else None
        level = len(node.relative) if isinstance(node, cst.ImportFrom) else 0
        assert isinstance(node.names, Sequence)
        leaving: set[int] = set()
        adds: list[Addition] = []
        for i, (name, asname) in enumerate(alias_items(node.names)):
            found, drop = self._classify(node, module, level, name, asname, index,
                                         context.scope)
            comment = own_comment(node.names[i]) if drop else None
            for add in found:
                adds.append(add)
                if comment is not None:  # a moved name's own comment goes with it
                    add.member_comments[add.names[0]] = comment.value
            if drop:
                leaving.add(i)
        kept = self._without(stmt, node, leaving, context.indent,
                             frozen=index in context.frozen)
        if not kept and isinstance(node, cst.ImportFrom) and len(
                {add.key for add in adds}) == 1:
            whole: dict[tuple[int, tuple[str, int, str, str | None]], Addition] = {}
            for add in adds:
                merge_addition(whole, add)
            adds = list(whole.values())
            if adds[0].kind == "from" and adds[0].names == alias_items(node.names):
                adds[0].original = node
        if not kept:
            for add in adds:
                add.comments = [*stmt.leading_lines]
                add.trailing = stmt.trailing_whitespace
                trailing = stmt.trailing_whitespace.comment
                add.comment = trailing.value if trailing is not None else add.comment
        if kept or len(adds) > 1 or (adds and adds[0].original is None):
            # Each statement a split makes keeps the statement's own noqa (ruff reads it
            # per statement); one moving whole keeps it in its own layout.
            for add in adds:
                add.comment = joined_comments(add.comment, suppression(stmt, node))
        return kept, adds

    def _classify(self, node: cst.Import | cst.ImportFrom, module: str | None, level: int,
                  name: str, asname: str | None, index: int,
                  scope: int) -> tuple[list[Addition], bool]:
        moved = self.inputs.moved
        if module is not None and name in moved.get(module, {}):
            new = moved[module][name]
            level_new, ref = self._ref(new, level)
            assert isinstance(node, cst.ImportFrom)
            fallback: Fallback = ("from", level, module_text(node), (name, asname))
            return [Addition("from", level_new, ref, [(name, asname)], index,
                              {(name, asname): fallback})], True
        old = self.plan.bound_alias(module, name, asname, scope)
        if old is None:
            return [], False
        owner = asname or (name if module is not None else old)
        kind: Kind = "import" if isinstance(node, cst.Import) else "from"
        adds = [self._binding_addition(kind, old, new, text, level, index)
                for new, text in self.plan.targets_here(owner, scope)]
        return adds, (owner, scope) not in self.inputs.analysis.binding_other

    def _binding_addition(self, kind: Kind, old: str, new: str, text: str, level: int,
                          index: int) -> Addition:
        """Returns the import binding ``text`` to ``new``, in the form the user wrote (but
        ``import a.b as b``, written ``from a import b``: :func:`.nodes.module_binding`)."""
        if kind == "import":
            alias = None if text == new else text
            how, _, module, item = module_binding(new, alias)
            fallback: Fallback = module_binding(old, alias)
            return Addition(how, 0, module, [item], index, {item: fallback})
        parent, _, last = new.rpartition(".")
        level_new, ref = self._ref(parent, level)
        names: Names = [(last, None if text == last else text)]
        old_parent, _, old_last = old.rpartition(".")
        old_level, old_ref = self._ref(old_parent, level)
        fallback = ("from", old_level, old_ref, (old_last, None if text == old_last else text))
        return Addition("from", level_new, ref, names, index, {names[0]: fallback})

    def _ref(self, target: str, level: int) -> tuple[int, str]:
        """Returns (level, module text) naming ``target``: relative when ``level`` was."""
        package = self.inputs.package
        if level == 0 or package is None:
            return 0, target
        pkg, parts = package.split("."), target.split(".")
        common = 0
        while common < min(len(pkg), len(parts)) and pkg[common] == parts[common]:
            common += 1
        if common == 0:
            return 0, target
        return len(pkg) - common + 1, ".".join(parts[common:])

    def _star_additions(self, node: cst.ImportFrom, index: int) -> list[Addition]:
        module = self.plan.resolve(node)
        level = len(node.relative)
        adds = []
        analysis = self.inputs.analysis
        for name, new in sorted(self.inputs.moved.get(module or "", {}).items()):
            if name in analysis.used_names and (new, name) not in analysis.new_bound:
                level_new, ref = self._ref(new, level)
                fallback: Fallback = ("from", level, module_text(node), (name, None))
                adds.append(Addition("from", level_new, ref, [(name, None)], index,
                                      {(name, None): fallback}))
        return adds

    def _without(self, stmt: cst.SimpleStatementLine, node: cst.Import | cst.ImportFrom,
                 leaving: set[int], indent: str, *,
                 frozen: bool = False) -> list[cst.BaseStatement]:
        """Returns ``stmt`` without the names at ``leaving``: written anew as the style
        writes it, or, when it has comments or stands where the sorters do not look
        (``frozen``), with its own layout, each comment line kept in its place."""
        assert isinstance(node.names, Sequence)
        if not leaving:
            return [stmt]
        if len(leaving) == len(node.names):
            return []
        names, lead = kept_names(node, leaving)
        if isinstance(node, cst.ImportFrom) and not has_comment(node) and not frozen:
            texts = _style.render_from(self.inputs.style, len(node.relative), module_text(node),
                                       alias_items(names), sort=False, indent=indent,
                                       # One name left is written on one line where it fits
                                       # (ruff accepts both; isort folds it).
                                       magic_comma=has_magic_comma(node) and len(names) > 1)
            lines = [parse_line(text, indent) for text in texts]
            lines[0] = lines[0].with_changes(leading_lines=stmt.leading_lines)
            lines[-1] = lines[-1].with_changes(trailing_whitespace=stmt.trailing_whitespace)
            return list(lines)
        if isinstance(node, cst.ImportFrom) and node.lpar is not None and lead is not None:
            node = node.with_changes(lpar=node.lpar.with_changes(whitespace_after=lead))
        else:  # a trailing comma is only legal inside parentheses
            names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return [stmt.with_changes(body=[node.with_changes(names=names)])]
