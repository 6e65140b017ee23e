"""The libcst codemod that points imports of moved names at their new module.

:class:`MigrateImportsCommand` makes one pass over a parsed module, guided by the
:class:`~auxcheck.migrate.scan.Analysis` the ast scanner made of the same text: it
rewrites ``from old import X`` (splitting statements that mix moved and staying
names), module-attribute uses (``m.X``), dotted string targets and star imports, and
places each new import where isort / ruff's import sorting puts it. With
``compat=True`` it writes ``try: new / except ImportError: old`` instead.
:func:`migrate_source` runs it and never raises: it returns a result saying whether
the text changed, or why it failed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
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
from libcst.helpers import get_full_name_for_node

from auxcheck._astutil import IMPORT_ERROR_CATCHERS
from auxcheck.migrate._moves import MoveTable
from auxcheck.migrate.scan import (
    Analysis,
    analyze,
    is_candidate,
    is_defining_module,
    package_of,
    resolve_relative,
    rewrite_string,
)

__all__ = ["LINE_LENGTH", "MigrateImportsCommand", "MigrationResult", "migrate_source"]

LINE_LENGTH = 88
"""Longest one-line import written before wrapping, as ruff's default ``line-length``."""

_EMPTY = cst.Module(body=[])
Names = list[tuple[str, "str | None"]]
Fallbacks = dict[tuple[str, "str | None"], tuple[int, str, tuple[str, "str | None"]]]


@dataclass(frozen=True, slots=True)
class MigrationResult:
    """The outcome for one source text: ``status`` and, when it changed, the new text."""

    status: Literal["changed", "unchanged", "skipped", "failed"]
    text: str
    reason: str = ""
    analysis: Analysis | None = None


@dataclass(slots=True)
class _Addition:
    """An import to add to one statement list, grouped by target module."""

    level: int
    module: str
    names: Names
    anchor: int
    fallbacks: Fallbacks = field(default_factory=dict)
    """For --compat: each name -> (level, module, name) importing it the old way."""
    comments: list[cst.EmptyLine] = field(default_factory=list)
    trailing: cst.TrailingWhitespace | None = None
    original: cst.ImportFrom | None = None
    """The user's statement when it moves whole: re-pointed in place, comments and all."""


def _member_key(item: tuple[str, str | None]) -> tuple[int, str, str, str]:
    name, asname = item
    kind = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    return (kind, name.lower(), name, asname or "")


def _module_key(level: int, module: str) -> tuple[int, int, str, str]:
    return (int(level > 0), -level, module.lower(), module)


def render_from(level: int, module: str, names: Names, *, multiline: bool = False,
                indent: str = "", sort: bool = True) -> str:
    """Returns ``from <module> import <names>`` as ruff's import sorting writes it.

    ``sort=False`` keeps the names in the given order (what is left of a user's statement).
    """
    head = f"from {'.' * level}{module} import "
    ordered = sorted(names, key=_member_key) if sort else names
    items = [n if a is None else f"{n} as {a}" for n, a in ordered]
    one = head + ", ".join(items)
    if not multiline and len(indent) + len(one) <= LINE_LENGTH:
        return one
    return head + "(\n" + "".join(f"    {item},\n" for item in items) + ")"


def _single_import(stmt: cst.BaseStatement) -> cst.Import | cst.ImportFrom | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            return small
    return None


def _module_text(node: cst.ImportFrom) -> str:
    return get_full_name_for_node(node.module) or "" if node.module else ""


def _alias_items(names: Sequence[cst.ImportAlias]) -> Names:
    items: Names = []
    for alias in names:
        asname = alias.asname.name if alias.asname else None
        items.append((get_full_name_for_node(alias.name) or "",
                      asname.value if isinstance(asname, cst.Name) else None))
    return items


def _has_comment(node: cst.CSTNode) -> bool:
    return "#" in _EMPTY.code_for_node(node)


def _magic_comma(node: cst.ImportFrom) -> bool:
    return (node.rpar is not None and isinstance(node.names, Sequence)
            and isinstance(node.names[-1].comma, cst.Comma))


def _starts_block(stmt: cst.BaseStatement) -> bool:
    lines = getattr(stmt, "leading_lines", ())
    return any(line.comment is None for line in lines)


def _catches_import_error(handler: cst.ExceptHandler) -> bool:
    # The libcst twin of _astutil.catches_import_error: the scan and the rewrite must agree.
    kinds = handler.type
    if kinds is None:
        return True
    items = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    return any(_last_name(n) in IMPORT_ERROR_CATCHERS for n in items)


def _last_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else None


class MigrateImportsCommand(Codemod):
    """Rewrites uses of moved names' old modules to their new modules, in one pass."""

    DESCRIPTION = ("Point imports, module-attribute uses and dotted string targets of names "
                   "SGLang moved at their new module, keeping isort order.")

    def __init__(self, context: CodemodContext, *, moves: MoveTable, analysis: Analysis,
                 package: str | None = None, compat: bool = False) -> None:
        super().__init__(context)
        self.moves = moves
        self.analysis = analysis
        self.package = package
        self.compat = compat
        self.moved = {old: moves.names_from(old) for old in moves.old_modules}
        self.new_aliases = {new: self._free_alias(new) for new in moves.new_modules}

    def _free_alias(self, new: str) -> str:
        alias = new.rpartition(".")[2]
        if (new, "") in self.analysis.new_bound and alias not in self.analysis.other_bound:
            return alias  # already bound to the new module, and to nothing else
        while alias in self.analysis.all_names:
            alias += "_"
        return alias

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Returns the rewritten module (no metadata: MetadataWrapper would deep-copy it)."""
        return self.transform_module_impl(tree)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        """Returns ``tree`` with every fixable use of an old module rewritten."""
        if not self.analysis.deep:
            return tree.with_changes(body=self._rewrite_body(tree.body, ""))
        return tree.visit(_Rewriter(self))

    # -- statement lists -------------------------------------------------------------

    def _rewrite_body(self, body: Sequence[cst.BaseStatement],
                      indent: str) -> list[cst.BaseStatement]:
        body = [line for stmt in body for line in self._expand(stmt)]
        anchors = [i for i, s in enumerate(body) if self._touches(s)]
        if not anchors:
            return list(body)
        blocks = {i: self._block(body, i) for i in anchors}
        work = list(body)
        prefixes: dict[int, Sequence[cst.EmptyLine]] = {}
        for start, _ in set(blocks.values()):
            stmt = work[start]
            assert isinstance(stmt, cst.SimpleStatementLine)
            prefixes[start] = stmt.leading_lines
            work[start] = stmt.with_changes(leading_lines=())
        slots: list[list[cst.BaseStatement]] = [[s] for s in work]
        additions: dict[tuple[int, str], _Addition] = {}
        for i in anchors:
            kept, adds = self._split(work[i], i)
            slots[i] = [kept] if kept is not None else []
            for add in adds:
                self._merge_addition(additions, add)
        for add in additions.values():
            self._place(slots, blocks[add.anchor], add, indent)
        for start, end in set(blocks.values()):
            self._restore_prefix(slots, start, end, prefixes[start])
        return [stmt for slot in slots for stmt in slot]

    def _expand(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        """Returns ``stmt`` as one line per statement when it is ``a; b`` holding an import
        that needs work (an import must stand on its own line to be split, sorted or wrapped
        in a compat ``try``); any other statement unchanged."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) > 1
                and any(self._needs_work(small) for small in stmt.body)):
            return [stmt]
        lines = _own_lines(stmt.body)
        lines[0] = lines[0].with_changes(leading_lines=stmt.leading_lines)
        lines[-1] = lines[-1].with_changes(trailing_whitespace=stmt.trailing_whitespace)
        return list(lines)

    def expand_suite(self, suite: cst.SimpleStatementSuite) -> cst.BaseSuite:
        """Returns ``if x: import old`` as an indented block when the import needs work."""
        if not any(self._needs_work(small) for small in suite.body):
            return suite
        lines = _own_lines(suite.body)
        lines[-1] = lines[-1].with_changes(trailing_whitespace=suite.trailing_whitespace)
        return cst.IndentedBlock(body=lines)

    def _needs_work(self, small: cst.BaseSmallStatement) -> bool:
        if not isinstance(small, (cst.Import, cst.ImportFrom)):
            return False
        line = cst.SimpleStatementLine(body=[small])
        if not self._touches(line):
            return False
        kept, adds = self._split(line, 0)
        return kept is not line or bool(adds)

    def _touches(self, stmt: cst.BaseStatement) -> bool:
        node = _single_import(stmt)
        if isinstance(node, cst.ImportFrom):
            module = self._resolve(node)
            if module in self.moved:
                return True
            return isinstance(node.names, Sequence) and any(
                self._bound_alias(module, name, asname) is not None
                for name, asname in _alias_items(node.names))
        if isinstance(node, cst.Import):
            return any(self._bound_alias(None, n, a) is not None
                       for n, a in _alias_items(node.names))
        return False

    def _bound_alias(self, module: str | None, name: str, asname: str | None) -> str | None:
        """Returns the old module a binding names when its attribute uses need work."""
        full = f"{module}.{name}" if module is not None else name
        key = asname or (name if module is not None else full)
        if full in self.moved and key in self.analysis.alias_moved_uses:
            return full
        return None

    def _resolve(self, node: cst.ImportFrom) -> str | None:
        level = len(node.relative)
        return resolve_relative(level, _module_text(node) or None, self.package)

    def _block(self, body: Sequence[cst.BaseStatement], index: int) -> tuple[int, int]:
        start = end = index
        while start > 0 and _single_import(body[start - 1]) and not _starts_block(body[start]):
            start -= 1
        while end + 1 < len(body) and _single_import(body[end + 1]) and not _starts_block(
                body[end + 1]):
            end += 1
        return start, end

    # -- splitting one import statement -------------------------------------------------

    def _split(self, stmt: cst.BaseStatement,
               index: int) -> tuple[cst.BaseStatement | None, list[_Addition]]:
        assert isinstance(stmt, cst.SimpleStatementLine)
        node = _single_import(stmt)
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            return stmt, self._star_additions(node, index)
        assert node is not None
        module = self._resolve(node) if isinstance(node, cst.ImportFrom) else None
        level = len(node.relative) if isinstance(node, cst.ImportFrom) else 0
        assert isinstance(node.names, Sequence)
        leaving: set[int] = set()
        adds: list[_Addition] = []
        for i, (name, asname) in enumerate(_alias_items(node.names)):
            add, drop = self._classify(node, module, level, name, asname, index)
            if add is not None:
                adds.append(add)
                comment = _own_comment(node.names[i]) if drop else None
                if comment is not None:  # a moved name's own comment goes with it
                    add.trailing = cst.TrailingWhitespace(
                        whitespace=cst.SimpleWhitespace("  "), comment=comment)
            if drop:
                leaving.add(i)
        kept = self._without(stmt, node, leaving)
        if kept is None and isinstance(node, cst.ImportFrom) and len(
                {(add.level, add.module) for add in adds}) == 1:
            whole: dict[tuple[int, str], _Addition] = {}
            for add in adds:
                self._merge_addition(whole, add)
            adds = list(whole.values())
            if adds[0].names == _alias_items(node.names):
                adds[0].original = node
        if kept is None:
            for add in adds:
                add.comments = [*stmt.leading_lines]
                add.trailing = stmt.trailing_whitespace if stmt.trailing_whitespace.comment \
                    else None
        return kept, adds

    def _classify(self, node: cst.Import | cst.ImportFrom, module: str | None, level: int,
                  name: str, asname: str | None, index: int) -> tuple[_Addition | None, bool]:
        if module is not None and name in self.moved.get(module, {}):
            new = self.moved[module][name]
            level_new, ref = self._ref(new, level)
            assert isinstance(node, cst.ImportFrom)
            fallback = {(name, asname): (level, _module_text(node), (name, asname))}
            return _Addition(level_new, ref, [(name, asname)], index, fallback), True
        old = self._bound_alias(module, name, asname)
        if old is None:
            return None, False
        key = asname or (name if module is not None else old)
        return self._binding_addition(old, level, index), (
            key not in self.analysis.alias_other_uses)

    def _binding_addition(self, old: str, level: int, index: int) -> _Addition:
        new = next(iter(set(self.moved[old].values())))
        alias = self.new_aliases[new]
        parent, _, last = new.rpartition(".")
        level_new, ref = self._ref(parent, level)
        names: Names = [(last, None if alias == last else alias)]
        old_parent, _, old_last = old.rpartition(".")
        old_level, old_ref = self._ref(old_parent, level)
        fallback: Fallbacks = {names[0]: (old_level, old_ref, (old_last, alias))}
        return _Addition(level_new, ref, names, index, fallback)

    def _ref(self, target: str, level: int) -> tuple[int, str]:
        """Returns (level, module text) naming ``target``: relative when ``level`` was."""
        if level == 0 or self.package is None:
            return 0, target
        pkg, parts = self.package.split("."), target.split(".")
        common = 0
        while common < min(len(pkg), len(parts)) and pkg[common] == parts[common]:
            common += 1
        if common == 0:
            return 0, target
        return len(pkg) - common + 1, ".".join(parts[common:])

    def _star_additions(self, node: cst.ImportFrom, index: int) -> list[_Addition]:
        module = self._resolve(node)
        level = len(node.relative)
        adds = []
        for name, new in sorted(self.moved.get(module or "", {}).items()):
            if name in self.analysis.used_names and (new, name) not in self.analysis.new_bound:
                level_new, ref = self._ref(new, level)
                fallback: Fallbacks = {(name, None): (level, _module_text(node), (name, None))}
                adds.append(_Addition(level_new, ref, [(name, None)], index, fallback))
        return adds

    def _without(self, stmt: cst.SimpleStatementLine, node: cst.Import | cst.ImportFrom,
                 leaving: set[int]) -> cst.SimpleStatementLine | None:
        assert isinstance(node.names, Sequence)
        if not leaving:
            return stmt
        if len(leaving) == len(node.names):
            return None
        names = [a for i, a in enumerate(node.names) if i not in leaving]
        if isinstance(node, cst.ImportFrom) and not _has_comment(node):
            text = render_from(len(node.relative), _module_text(node), _alias_items(names),
                               multiline=_magic_comma(node), sort=False)
            return stmt.with_changes(body=[_parse_small(text)])
        parenthesised = isinstance(node, cst.ImportFrom) and node.rpar is not None
        if not parenthesised:  # a trailing comma is only legal inside parentheses
            names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        elif names[-1] is not node.names[-1]:
            names[-1] = _closing_comma(names[-1], node.names[-1])
        return stmt.with_changes(body=[node.with_changes(names=names)])

    # -- adding imports -----------------------------------------------------------------

    @staticmethod
    def _merge_addition(additions: dict[tuple[int, str], _Addition], add: _Addition) -> None:
        key = (add.level, add.module)
        known = additions.get(key)
        if known is None:
            additions[key] = add
            return
        known.original = None
        known.names += [n for n in add.names if n not in known.names]
        known.fallbacks.update(add.fallbacks)
        known.comments += add.comments
        if known.trailing and add.trailing and known.trailing.comment and add.trailing.comment \
                and add.trailing.comment.value not in known.trailing.comment.value:
            joined = f"{known.trailing.comment.value}  {add.trailing.comment.value}"
            known.trailing = known.trailing.with_changes(comment=cst.Comment(joined))
        known.trailing = known.trailing or add.trailing

    def _existing(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
                  add: _Addition) -> tuple[int, int, cst.ImportFrom] | None:
        # Imports after the anchor's own block of imports run too late for code between.
        for s, slot in enumerate(slots[:max(add.anchor, block[1]) + 1]):
            for p, stmt in enumerate(slot):
                node = _single_import(stmt)
                if (isinstance(node, cst.ImportFrom) and isinstance(node.names, Sequence)
                        and len(node.relative) == add.level and _module_text(node) == add.module):
                    return s, p, node
        return None

    def _place(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
               add: _Addition, indent: str) -> None:
        found = self._existing(slots, block, add)
        if found is not None:
            present = _alias_items(found[2].names)  # type: ignore[arg-type]
            add.names = [n for n in add.names if n not in present]
            add.original = None
        if not add.names:
            return
        if self.compat:
            self._place_compat(slots, block, add)
        elif found is not None:
            s, p, node = found
            slots[s][p] = self._merged(slots[s][p], node, add.names)
        else:
            self._insert_sorted(slots, block, add, indent)

    def _merged(self, stmt: cst.BaseStatement, node: cst.ImportFrom,
                names: Names) -> cst.BaseStatement:
        assert isinstance(stmt, cst.SimpleStatementLine) and isinstance(node.names, Sequence)
        if not _has_comment(node):
            text = render_from(len(node.relative), _module_text(node),
                               _alias_items(node.names) + names, multiline=_magic_comma(node))
            return stmt.with_changes(body=[_parse_small(text)])
        aliases = list(node.names)
        comma = _separator(node)
        for name, asname in names:
            new = cst.ImportAlias(cst.Name(name), asname=cst.AsName(cst.Name(asname))
                                  if asname else None)
            keys = [_member_key(item) for item in _alias_items(aliases)]
            at = next((i for i, k in enumerate(keys) if k > _member_key((name, asname))),
                      len(aliases))
            if at == len(aliases):
                last_comma = aliases[-1].comma
                aliases[-1] = aliases[-1].with_changes(comma=_reindented(last_comma, comma))
                aliases.append(new.with_changes(comma=_uncommented(last_comma)))
            else:
                aliases.insert(at, new.with_changes(comma=comma))
        return stmt.with_changes(body=[node.with_changes(names=aliases)])

    def _new_statement(self, add: _Addition, indent: str) -> cst.SimpleStatementLine:
        text = render_from(add.level, add.module, add.names, indent=indent)
        trailing = add.trailing
        if trailing is not None and trailing.comment is not None and text.endswith(")"):
            # Wrapped: the comment goes after "(" as isort and ruff put it, where
            # type-ignore and noqa comments still apply to the first line.
            text = text.replace("(\n", f"(  {trailing.comment.value}\n", 1)
            trailing = None
        stmt = cst.parse_statement(text + "\n")
        assert isinstance(stmt, cst.SimpleStatementLine)
        fresh = stmt.body[0]
        if add.original is not None and _has_comment(add.original):
            assert isinstance(fresh, cst.ImportFrom)
            stmt = stmt.with_changes(body=[add.original.with_changes(
                relative=fresh.relative, module=fresh.module)])
        changes: dict[str, object] = {"leading_lines": add.comments}
        if trailing is not None:
            changes["trailing_whitespace"] = trailing
        return stmt.with_changes(**changes)

    def _insert_sorted(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
                       add: _Addition, indent: str) -> None:
        new = self._new_statement(add, indent)
        key = _module_key(add.level, add.module)
        last: tuple[int, int] | None = None
        for s in range(block[0], block[1] + 1):
            for p, stmt in enumerate(slots[s]):
                node = _single_import(stmt)
                if isinstance(node, cst.ImportFrom) and _module_key(
                        len(node.relative), _module_text(node)) > key:
                    slots[s].insert(p, new)
                    return
                last = (s, p)
        if last is None:
            slots[add.anchor].append(new)
        else:
            slots[last[0]].insert(last[1] + 1, new)

    def _place_compat(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
                      add: _Addition) -> None:
        groups: dict[tuple[int, str], Names] = {}
        for name in add.names:
            level, module, old_name = add.fallbacks[name]
            groups.setdefault((level, module), []).append(old_name)
        fallback = "\n".join(render_from(lv, mod, names, indent="    ")
                             for (lv, mod), names in sorted(groups.items()))
        body = render_from(add.level, add.module, add.names, indent="    ")
        stmt = cst.parse_statement(f"try:\n{_indent(body)}\nexcept ImportError:\n"
                                   f"{_indent(fallback)}\n")
        filled = [s for s in range(block[0], block[1] + 1) if slots[s]]
        lines = [cst.EmptyLine(indent=False)] if filled else []
        slots[filled[-1] if filled else add.anchor].append(
            stmt.with_changes(leading_lines=[*lines, *add.comments]))

    @staticmethod
    def _restore_prefix(slots: list[list[cst.BaseStatement]], start: int, end: int,
                        prefix: Sequence[cst.EmptyLine]) -> None:
        for s in range(start, end + 1):
            if slots[s]:
                first = slots[s][0]
                assert isinstance(first, (cst.SimpleStatementLine, cst.Try))
                own = [line for line in first.leading_lines if line.comment is not None]
                slots[s][0] = first.with_changes(leading_lines=[*prefix, *own])
                return


def _own_comment(alias: cst.ImportAlias) -> cst.Comment | None:
    """Returns the comment ending the line of ``alias`` inside parentheses, if any."""
    comma = alias.comma
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after,
                                                    cst.ParenthesizedWhitespace):
        return comma.whitespace_after.first_line.comment
    return None


def _separator(node: cst.ImportFrom) -> cst.Comma:
    """Returns the comma (no comment) that puts a new name where this statement's names go."""
    opening = node.lpar.whitespace_after if node.lpar is not None else None
    if isinstance(opening, cst.ParenthesizedWhitespace):
        return cst.Comma(whitespace_after=cst.ParenthesizedWhitespace(
            indent=opening.indent, last_line=opening.last_line))
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _uncommented(comma: cst.Comma | cst.MaybeSentinel) -> cst.Comma | cst.MaybeSentinel:
    """Returns ``comma`` with the comment after it dropped (so a copy does not repeat it)."""
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after,
                                                    cst.ParenthesizedWhitespace):
        return comma.with_changes(whitespace_after=comma.whitespace_after.with_changes(
            first_line=cst.TrailingWhitespace(), empty_lines=[]))
    return comma


def _reindented(comma: cst.Comma | cst.MaybeSentinel,
                separator: cst.Comma) -> cst.Comma:
    """Returns ``comma`` (keeping its comment) followed by the separator's indentation."""
    if not isinstance(comma, cst.Comma):
        return separator
    own, sep = comma.whitespace_after, separator.whitespace_after
    if isinstance(own, cst.ParenthesizedWhitespace) and isinstance(
            sep, cst.ParenthesizedWhitespace):
        return separator.with_changes(whitespace_before=comma.whitespace_before,
                                      whitespace_after=own.with_changes(
                                          indent=sep.indent, last_line=sep.last_line))
    return separator


def _closing_comma(kept: cst.ImportAlias, removed: cst.ImportAlias) -> cst.ImportAlias:
    """Returns ``kept`` (now last) with its own comment but the line break before `)`."""
    mine, theirs = kept.comma, removed.comma
    if not (isinstance(mine, cst.Comma) and isinstance(theirs, cst.Comma)):
        return kept
    own, closing = mine.whitespace_after, theirs.whitespace_after
    if isinstance(own, cst.ParenthesizedWhitespace) and isinstance(
            closing, cst.ParenthesizedWhitespace):
        spacing = own.with_changes(indent=closing.indent, last_line=closing.last_line)
        return kept.with_changes(comma=mine.with_changes(whitespace_after=spacing))
    return kept


def _own_lines(body: Sequence[cst.BaseSmallStatement]) -> list[cst.SimpleStatementLine]:
    return [cst.SimpleStatementLine(body=[small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])
            for small in body]


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _parse_small(text: str) -> cst.BaseSmallStatement:
    stmt = cst.parse_statement(text + "\n")
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt.body[0]


class _Rewriter(cst.CSTTransformer):
    """The single tree pass used when work lies beyond top-level import statements."""

    def __init__(self, command: MigrateImportsCommand) -> None:
        super().__init__()
        self.command = command
        self.analysis = command.analysis
        self.indents: list[str] = []

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Try(self, node: cst.Try) -> bool:
        return not self._is_compat_fallback(node)

    def _is_compat_fallback(self, node: cst.Try) -> bool:
        if not any(_catches_import_error(h) for h in node.handlers):
            return False
        for stmt in node.body.body:
            imp = _single_import(stmt) if isinstance(stmt, cst.BaseStatement) else None
            if isinstance(imp, cst.ImportFrom):
                module = self.command._resolve(imp)
                names = _alias_items(imp.names) if isinstance(imp.names, Sequence) else []
                if module in self.command.moves.new_modules or any(
                        f"{module}.{n}" in self.command.moves.new_modules for n, _ in names):
                    return True
        return False

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        outer = self.indents[-1] if self.indents else ""
        self.indents.append(outer + (node.indent or "    "))

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite,
                                   updated_node: cst.SimpleStatementSuite) -> cst.BaseSuite:
        block = self.command.expand_suite(updated_node)
        if not isinstance(block, cst.IndentedBlock):
            return block
        outer = self.indents[-1] if self.indents else ""
        return block.with_changes(body=self.command._rewrite_body(block.body, outer + "    "))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        indent = self.indents.pop()
        return updated_node.with_changes(
            body=self.command._rewrite_body(updated_node.body, indent))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self.command._rewrite_body(updated_node.body, ""))

    def leave_Attribute(self, original_node: cst.Attribute,
                        updated_node: cst.Attribute) -> cst.BaseExpression:
        owner = get_full_name_for_node(updated_node.value)
        if owner is None:
            return updated_node
        old = self.analysis.aliases.get(owner)
        if old is None and owner in self.analysis.dotted:
            old = owner
        new = self.command.moved.get(old or "", {}).get(updated_node.attr.value)
        if new is None:
            return updated_node
        return updated_node.with_changes(value=cst.Name(self.command.new_aliases[new]))

    def leave_SimpleString(self, original_node: cst.SimpleString,
                           updated_node: cst.SimpleString) -> cst.SimpleString:
        value = updated_node.value
        body_start = len(updated_node.prefix) + len(updated_node.quote)
        body = value[body_start:len(value) - len(updated_node.quote)]
        new = rewrite_string(body, self.command.moves, self.analysis.aliases,
                             self.command.new_aliases)
        if new is None:
            return updated_node
        return updated_node.with_changes(value=value[:body_start] + new
                                         + value[len(value) - len(updated_node.quote):])


def migrate_source(text: str, *, moves: MoveTable, module: str | None = None,
                   is_package: bool = False, compat: bool = False,
                   path: str = "<string>") -> MigrationResult:
    """Returns the migrated ``text`` as a MigrationResult; never raises on bad input.

    ``module`` is the file's dotted module name (for relative imports and to skip
    the modules that define moved names). The result is ``unchanged`` when there is
    nothing to do, ``failed`` (with the reason) when the text does not parse or the
    output would not, ``skipped`` for defining modules.
    """
    if is_defining_module(module, moves):
        return MigrationResult("skipped", text, "defines moved names")
    if not is_candidate(text.encode("utf-8", "surrogatepass"), moves):
        return MigrationResult("unchanged", text)
    package = package_of(module, is_package=is_package)
    try:
        analysis = analyze(ast.parse(text, filename=path), moves, package=package)
    except (SyntaxError, ValueError) as exc:
        return MigrationResult("failed", text, f"does not parse: {_syntax_reason(exc)}")
    if not analysis.fixable:
        return MigrationResult("unchanged", text, analysis=analysis)
    command = MigrateImportsCommand(CodemodContext(filename=path), moves=moves,
                                    analysis=analysis, package=package, compat=compat)
    return _finish(run_codemod(command, text), text, moves, package, path)


def _syntax_reason(exc: Exception) -> str:
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (line {exc.lineno})"
    return str(exc)


def _finish(result: object, text: str, moves: MoveTable, package: str | None,
            path: str) -> MigrationResult:
    if isinstance(result, TransformExit):
        raise KeyboardInterrupt
    if isinstance(result, TransformFailure):
        return MigrationResult("failed", text, f"libcst failed: {result.error}")
    if isinstance(result, TransformSkip):
        return MigrationResult("skipped", text, result.skip_description)
    assert isinstance(result, TransformSuccess)
    try:
        after = analyze(ast.parse(result.code, filename=path), moves, package=package)
    except (SyntaxError, ValueError) as exc:  # pragma: no cover - a bug guard
        return MigrationResult("failed", text, f"rewrite would not parse: {exc}")
    status: Literal["changed", "unchanged"] = "changed" if result.code != text else "unchanged"
    return MigrationResult(status, result.code, analysis=after)


def migrate_texts(texts: Iterable[str], *, moves: MoveTable) -> list[MigrationResult]:
    """Returns the migration of each text (a convenience for tests and benchmarks)."""
    return [migrate_source(t, moves=moves) for t in texts]
