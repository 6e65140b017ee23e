"""The libcst codemod that points imports of moved names at their new module.

:class:`MigrateImportsCommand` makes one pass over a parsed module, guided by the
:class:`~auxcheck.migrate.scan.Analysis` the ast scanner made of the same text: it
rewrites ``from old import X`` (splitting statements that mix moved and staying
names), module imports with their attribute uses (``import old [as m]`` and
``from pkg import old``, each kept in the form the user wrote), dotted string targets
and star imports, and writes each import the way the project's ruff or isort
configuration (:mod:`auxcheck.migrate._style`) sorts and wraps it. With
``compat=True`` it writes ``try: new / except ImportError: old`` instead, the old
branch hidden from type checkers behind ``if not TYPE_CHECKING``, and dotted string
targets name the module found at import time. :func:`migrate_source` runs it and
never raises: it returns a result saying whether the text changed, or why it failed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

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
from auxcheck.migrate import _style
from auxcheck.migrate._moves import MoveTable
from auxcheck.migrate._style import ImportStyle
from auxcheck.migrate.scan import (
    Analysis,
    analyze,
    fstring_targets,
    is_defining_module,
    moved_names,
    package_of,
    resolve_relative,
    rewrite_string,
    target_spans,
)

__all__ = ["MigrateImportsCommand", "MigrationResult", "migrate_source"]

_EMPTY = cst.Module(body=[])
Names = list[tuple[str, "str | None"]]
Kind = Literal["from", "import"]
Fallback = tuple[Kind, int, str, tuple[str, "str | None"]]
"""How a name is imported the old way: (kind, level, module text, (name, asname))."""


@dataclass(frozen=True, slots=True)
class MigrationResult:
    """The outcome for one source text: ``status`` and, when it changed, the new text."""

    status: Literal["changed", "unchanged", "skipped", "failed"]
    text: str
    reason: str = ""
    analysis: Analysis | None = None


@dataclass(slots=True)
class _Addition:
    """An import to add to one statement list: ``from module import names`` or, for
    ``kind == "import"``, ``import module [as alias]`` (``names`` is then
    ``[(module, alias)]``)."""

    kind: Kind
    level: int
    module: str
    names: Names
    anchor: int
    fallbacks: dict[tuple[str, str | None], Fallback] = field(default_factory=dict)
    """For --compat: each name -> how it is imported the old way."""
    comments: list[cst.EmptyLine] = field(default_factory=list)
    """The comment lines above the user's statement, when it moves whole."""
    comment: str | None = None
    """The comment ending the user's statement (``# noqa: F401``), when it moves whole."""
    member_comments: dict[tuple[str, str | None], str] = field(default_factory=dict)
    """Each name's own comment from inside the user's parentheses."""
    original: cst.ImportFrom | None = None
    """The user's statement when it moves whole: re-pointed in place, comments and all."""

    @property
    def key(self) -> tuple[str, int, str, str | None]:
        """Returns what additions merge on: a module's from-import, or one import statement."""
        alias = self.names[0][1] if self.kind == "import" else None
        return (self.kind, self.level, self.module, alias)


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
    return any(line.comment is None or _SPLIT.match(line.comment.value) for line in lines)


_SPLIT = re.compile(r"#\s*(?:ruff:\s*)?isort:\s*split\b")
_REGION = re.compile(r"#\s*(?:(?:ruff:\s*)?isort|fmt|yapf):\s*(off|on|disable|enable)\b")
_SKIP = re.compile(r"#.*\b(?:(?:ruff:\s*)?isort|fmt):\s*skip\b(?!_)")
_SKIP_FILE = re.compile(
    r"^\s*#\s*(?:ruff:\s*)?isort:\s*skip_file\b|^\s*isort:\s*skip_file\b"
    r"|^\s*#\s*(?:ruff|flake8):\s*noqa\s*(?:$|:[^\n]*\bI(?:001)?\b)", re.MULTILINE)


def keeps_import_order(text: str) -> bool:
    """Returns True when the file asks isort and ruff not to sort its imports at all
    (``# isort: skip_file``, ``# ruff: noqa`` or ``# ruff: noqa: I001``)."""
    return _SKIP_FILE.search(text) is not None


def _frozen_statements(body: Sequence[cst.BaseStatement], *, whole: bool) -> set[int]:
    """Returns the indices of the statements the import sorters leave where they are: in a
    ``# isort: off`` / ``# fmt: off`` region, ending ``# isort: skip`` / ``# fmt: skip``,
    or every one when the file keeps its import order (``whole``)."""
    if whole:
        return set(range(len(body)))
    frozen, off = set(), False
    for i, stmt in enumerate(body):
        for line in getattr(stmt, "leading_lines", ()):
            match = _REGION.match(line.comment.value) if line.comment else None
            if match is not None:
                off = match.group(1) in ("off", "disable")
        trailing = getattr(stmt, "trailing_whitespace", None)
        comment = trailing.comment if isinstance(trailing, cst.TrailingWhitespace) else None
        if off or (comment is not None and _SKIP.match(comment.value)):
            frozen.add(i)
    return frozen


_Handler = TypeVar("_Handler", cst.ExceptHandler, cst.ExceptStarHandler)


def _catches_import_error(handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
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


def _is_type_checking(test: cst.BaseExpression) -> bool:
    return _last_name(test) == "TYPE_CHECKING"


class MigrateImportsCommand(Codemod):
    """Rewrites uses of moved names' old modules to their new modules, in one pass."""

    DESCRIPTION = ("Point imports, module-attribute uses and dotted string targets of names "
                   "SGLang moved at their new module, in the project's import style.")

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
        self.new_aliases: dict[str, str] = {}
        self.plan = self._plan()
        self.replacements = {(owner, new): text for owner, targets in self.plan.items()
                             for new, text in targets.items()}
        self.constants: dict[tuple[str, str], str] = {}
        """(old, new) -> the module-level name holding the module found at import time."""
        self.needs_type_checking = False
        self.indent = ""
        """The indentation of the statement list being rewritten (lines count it)."""

    # -- names -------------------------------------------------------------------------

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
            plan[owner] = {new: owner if reuse else new if dotted else self._alias_for(new)
                           for new in news}
        return plan

    def _alias_for(self, new: str) -> str:
        """Returns the name bound to ``new`` for its attribute uses (free, and stable)."""
        if new in self.new_aliases:
            return self.new_aliases[new]
        alias = new.rpartition(".")[2]
        if not ((new, "") in self.analysis.new_bound and alias not in self.analysis.other_bound):
            while alias in self.taken:
                alias += "_"
        self.taken.add(alias)
        self.new_aliases[new] = alias
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

    def renamed_in(self, suite: cst.BaseSuite) -> list[tuple[str, str]]:
        """Returns ``(alias, name)`` for each old-module alias a statement of ``suite``
        binds whose moved uses the rewrite gives another name (``so`` -> ``auxiliary_output``)."""
        body = suite.body if isinstance(suite, cst.IndentedBlock) else [suite]
        renamed: list[tuple[str, str]] = []
        for stmt in body:
            smalls = stmt.body if isinstance(stmt, (cst.SimpleStatementLine,
                                                    cst.SimpleStatementSuite)) else []
            for small in smalls:
                if not isinstance(small, (cst.Import, cst.ImportFrom)) or not isinstance(
                        small.names, Sequence):
                    continue
                module = self._resolve(small) if isinstance(small, cst.ImportFrom) else None
                for name, asname in _alias_items(small.names):
                    old = self._bound_alias(module, name, asname)
                    owner = asname or (name if module is not None else old or "")
                    if old is None or "." in owner:
                        continue
                    renamed += [(owner, text) for _, text in sorted(self.plan[owner].items())
                                if text != owner and (owner, text) not in renamed]
        return renamed

    def rebound(self, handler: _Handler, renamed: Sequence[tuple[str, str]]) -> _Handler:
        """Returns ``handler`` binding each new name to what it binds the alias to, hidden
        from type checkers (which see the new module); unchanged when it binds none."""
        bound = _names_bound(handler.body)
        pairs = [(owner, text) for owner, text in renamed if owner in bound]
        if not pairs or not _catches_import_error(handler):
            return handler
        guard = self.type_checking_name()
        lines = "".join(f"    {text} = {owner}\n" for owner, text in pairs)
        stmt = cst.parse_statement(f"if not {guard}:\n{lines}")
        suite: cst.BaseSuite = handler.body
        if isinstance(suite, cst.SimpleStatementSuite):  # `except ImportError: so = None`
            return handler.with_changes(body=cst.IndentedBlock(
                body=[*_own_lines([small for small in suite.body if isinstance(
                    small, cst.BaseSmallStatement)]), stmt], header=suite.trailing_whitespace))
        if isinstance(suite, cst.IndentedBlock):
            return handler.with_changes(body=suite.with_changes(body=[*suite.body, stmt]))
        return handler

    def type_checking_name(self) -> str:
        """Returns how this module names ``typing.TYPE_CHECKING`` (imported when missing)."""
        if self.analysis.type_checking is not None:
            return self.analysis.type_checking
        self.needs_type_checking = True
        return "TYPE_CHECKING"

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Returns the rewritten module (no metadata: MetadataWrapper would deep-copy it)."""
        return self.transform_module_impl(tree)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        """Returns ``tree`` with every fixable use of an old module rewritten."""
        if not self.analysis.deep:
            return tree.with_changes(body=self.finish_module(self.rewrite_body(tree.body, "")))
        return tree.visit(_Rewriter(self))

    # -- statement lists -------------------------------------------------------------

    def rewrite_body(self, body: Sequence[cst.BaseStatement], indent: str, *,
                     compat: bool | None = None) -> list[cst.BaseStatement]:
        """Returns one statement list with its imports rewritten (``compat`` is off under
        ``if TYPE_CHECKING:``, where only type checkers import)."""
        compat = self.compat if compat is None else compat
        self.indent = indent
        body = [line for stmt in body for line in self._expand(stmt)]
        anchors = [i for i, s in enumerate(body) if self._touches(s)]
        if not anchors:
            return list(body)
        self.frozen = _frozen_statements(body, whole=self.keep_order)
        blocks = {i: self._block(body, i) for i in anchors}
        work = list(body)
        prefixes: dict[int, Sequence[cst.EmptyLine]] = {}
        for start, _ in set(blocks.values()):
            stmt = work[start]
            assert isinstance(stmt, cst.SimpleStatementLine)
            prefixes[start] = stmt.leading_lines
            work[start] = stmt.with_changes(leading_lines=())
        slots: list[list[cst.BaseStatement]] = [[s] for s in work]
        additions: dict[tuple[int, tuple[str, int, str, str | None]], _Addition] = {}
        for i in anchors:
            kept, adds = self._split(work[i], i)
            slots[i] = kept
            group = i if i in self.frozen else -1  # a frozen statement's names stay with it
            for add in adds:
                self._merge_addition(additions, add, group)
        for add in additions.values():
            self._place(slots, blocks[add.anchor], add, indent, compat)
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
        return kept != [line] or bool(adds)

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
        if full in self.moved and key in self.plan:
            return full
        return None

    def _resolve(self, node: cst.ImportFrom) -> str | None:
        level = len(node.relative)
        return resolve_relative(level, _module_text(node) or None, self.package)

    def _block(self, body: Sequence[cst.BaseStatement], index: int) -> tuple[int, int]:
        """Returns the first and last index of the import block around ``index``: a frozen
        statement is a block of its own, and no block reaches into one."""
        start = end = index
        if index in self.frozen:
            return start, end
        while (start > 0 and _single_import(body[start - 1]) and not _starts_block(body[start])
               and start - 1 not in self.frozen):
            start -= 1
        while end + 1 < len(body) and _single_import(body[end + 1]) and not _starts_block(
                body[end + 1]) and end + 1 not in self.frozen:
            end += 1
        return start, end

    # -- splitting one import statement -------------------------------------------------

    def _split(self, stmt: cst.BaseStatement,
               index: int) -> tuple[list[cst.BaseStatement], list[_Addition]]:
        assert isinstance(stmt, cst.SimpleStatementLine)
        node = _single_import(stmt)
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            return [stmt], self._star_additions(node, index)
        assert node is not None
        module = self._resolve(node) if isinstance(node, cst.ImportFrom) else None
        level = len(node.relative) if isinstance(node, cst.ImportFrom) else 0
        assert isinstance(node.names, Sequence)
        leaving: set[int] = set()
        adds: list[_Addition] = []
        for i, (name, asname) in enumerate(_alias_items(node.names)):
            found, drop = self._classify(node, module, level, name, asname, index)
            comment = _own_comment(node.names[i]) if drop else None
            for add in found:
                adds.append(add)
                if comment is not None:  # a moved name's own comment goes with it
                    add.member_comments[add.names[0]] = comment.value
            if drop:
                leaving.add(i)
        kept = self._without(stmt, node, leaving)
        if not kept and isinstance(node, cst.ImportFrom) and len(
                {add.key for add in adds}) == 1:
            whole: dict[tuple[int, tuple[str, int, str, str | None]], _Addition] = {}
            for add in adds:
                self._merge_addition(whole, add)
            adds = list(whole.values())
            if adds[0].kind == "from" and adds[0].names == _alias_items(node.names):
                adds[0].original = node
        if not kept:
            for add in adds:
                add.comments = [*stmt.leading_lines]
                trailing = stmt.trailing_whitespace.comment
                add.comment = trailing.value if trailing is not None else add.comment
        return kept, adds

    def _classify(self, node: cst.Import | cst.ImportFrom, module: str | None, level: int,
                  name: str, asname: str | None,
                  index: int) -> tuple[list[_Addition], bool]:
        if module is not None and name in self.moved.get(module, {}):
            new = self.moved[module][name]
            level_new, ref = self._ref(new, level)
            assert isinstance(node, cst.ImportFrom)
            fallback: Fallback = ("from", level, _module_text(node), (name, asname))
            return [_Addition("from", level_new, ref, [(name, asname)], index,
                              {(name, asname): fallback})], True
        old = self._bound_alias(module, name, asname)
        if old is None:
            return [], False
        owner = asname or (name if module is not None else old)
        kind: Kind = "import" if isinstance(node, cst.Import) else "from"
        adds = [self._binding_addition(kind, old, new, text, level, index)
                for new, text in sorted(self.plan[owner].items())]
        return adds, owner not in self.analysis.alias_other_uses

    def _binding_addition(self, kind: Kind, old: str, new: str, text: str, level: int,
                          index: int) -> _Addition:
        """Returns the import binding ``text`` to ``new``, in the form the user wrote."""
        if kind == "import":
            alias = None if text == new else text
            fallback: Fallback = ("import", 0, old, (old, alias))
            return _Addition("import", 0, new, [(new, alias)], index, {(new, alias): fallback})
        parent, _, last = new.rpartition(".")
        level_new, ref = self._ref(parent, level)
        names: Names = [(last, None if text == last else text)]
        old_parent, _, old_last = old.rpartition(".")
        old_level, old_ref = self._ref(old_parent, level)
        fallback = ("from", old_level, old_ref, (old_last, None if text == old_last else text))
        return _Addition("from", level_new, ref, names, index, {names[0]: fallback})

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
                fallback: Fallback = ("from", level, _module_text(node), (name, None))
                adds.append(_Addition("from", level_new, ref, [(name, None)], index,
                                      {(name, None): fallback}))
        return adds

    def _without(self, stmt: cst.SimpleStatementLine, node: cst.Import | cst.ImportFrom,
                 leaving: set[int]) -> list[cst.BaseStatement]:
        assert isinstance(node.names, Sequence)
        if not leaving:
            return [stmt]
        if len(leaving) == len(node.names):
            return []
        names = [a for i, a in enumerate(node.names) if i not in leaving]
        if isinstance(node, cst.ImportFrom) and not _has_comment(node):
            texts = _style.render_from(self.style, len(node.relative), _module_text(node),
                                       _alias_items(names), sort=False, indent=self.indent,
                                       # One name left is written on one line where it fits
                                       # (ruff accepts both; isort folds it).
                                       magic_comma=_magic_comma(node) and len(names) > 1)
            lines = [_parse_line(text, self.indent) for text in texts]
            lines[0] = lines[0].with_changes(leading_lines=stmt.leading_lines)
            lines[-1] = lines[-1].with_changes(trailing_whitespace=stmt.trailing_whitespace)
            return list(lines)
        parenthesised = isinstance(node, cst.ImportFrom) and node.rpar is not None
        if not parenthesised:  # a trailing comma is only legal inside parentheses
            names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        elif names[-1] is not node.names[-1]:
            names[-1] = _closing_comma(names[-1], node.names[-1])
        return [stmt.with_changes(body=[node.with_changes(names=names)])]

    # -- adding imports -----------------------------------------------------------------

    @staticmethod
    def _merge_addition(additions: dict[tuple[int, tuple[str, int, str, str | None]], _Addition],
                        add: _Addition, group: int = -1) -> None:
        known = additions.get((group, add.key))
        if known is None:
            additions[(group, add.key)] = add
            return
        known.original = None
        known.names += [n for n in add.names if n not in known.names]
        known.fallbacks.update(add.fallbacks)
        known.comments += add.comments
        known.comment = _joined(known.comment, add.comment)
        known.member_comments.update(add.member_comments)

    def _reachable(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
                   add: _Addition) -> Iterable[tuple[int, int, cst.Import | cst.ImportFrom]]:
        # Imports after the anchor's own block of imports run too late for code between.
        for s, slot in enumerate(slots[:max(add.anchor, block[1]) + 1]):
            for p, stmt in enumerate(slot):
                node = _single_import(stmt)
                if node is not None:
                    yield s, p, node

    def _present(self, node: cst.Import | cst.ImportFrom, add: _Addition) -> Names:
        """Returns the names of ``add`` that ``node`` already imports."""
        if not isinstance(node.names, Sequence):
            return []
        items = _alias_items(node.names)
        if add.kind == "import":
            return [n for n in add.names if isinstance(node, cst.Import) and n in items]
        if isinstance(node, cst.ImportFrom) and (len(node.relative), _module_text(node)) == (
                add.level, add.module):
            return [n for n in add.names if n in items]
        return []

    def _merge_target(self, node: cst.Import | cst.ImportFrom,
                      add: _Addition) -> bool:
        """Returns True when names of ``add`` may join ``node``, as the style writes them."""
        if add.kind != "from" or self.style.force_single_line or not isinstance(
                node, cst.ImportFrom) or not isinstance(node.names, Sequence):
            return False
        if (len(node.relative), _module_text(node)) != (add.level, add.module):
            return False
        return self.style.combine_as or all(a is None for _, a in _alias_items(node.names))

    def _place(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
               add: _Addition, indent: str, compat: bool) -> None:
        reachable = list(self._reachable(slots, block, add))
        present = {n for _, _, node in reachable for n in self._present(node, add)}
        if present:
            add.names = [n for n in add.names if n not in present]
            add.original = None
        if not add.names:
            return
        if compat:
            self._place_compat(slots, block, add, indent)
            return
        if add.anchor in self.frozen:  # where the user's statement was, unsorted
            slots[add.anchor].extend(self._frozen_statements(add, indent))
            return
        commented = add.comment or add.member_comments or any(
            line.comment for line in add.comments) or (
                add.original is not None and _has_comment(add.original))
        if add.kind == "from" and not commented and self._regroup(
                slots, max(add.anchor, block[1]), add.level, add.module, add.names, indent):
            return
        target = next(((s, p, node) for s, p, node in reachable
                       if s not in self.frozen and self._merge_target(node, add)), None)
        if target is not None:
            joining = [n for n in add.names if self.style.combine_as or n[1] is None]
            if joining:
                s, p, node = target
                assert isinstance(node, cst.ImportFrom)
                slots[s][p] = self._merged(slots[s][p], node, joining, indent)
                add.names = [n for n in add.names if n not in joining]
                add.original = None
        if add.names:
            self._insert_sorted(slots, block, add, indent)

    def _regroup(self, slots: list[list[cst.BaseStatement]], stop: int, level: int,
                 module: str, names: Names, indent: str) -> bool:
        """Rewrites every ``from <module> import`` in ``slots[:stop + 1]`` together with
        ``names``, as the style writes them all (merged, split, ordered); returns False,
        changing nothing, when there is none or one of them carries a comment."""
        found: list[tuple[int, int, cst.SimpleStatementLine]] = []
        existing: Names = []
        magic = False
        for s, slot in enumerate(slots[:stop + 1]):
            for p, stmt in enumerate(slot):
                node = _single_import(stmt)
                if s in self.frozen:
                    continue
                if not (isinstance(node, cst.ImportFrom) and isinstance(node.names, Sequence)
                        and (len(node.relative), _module_text(node)) == (level, module)):
                    continue
                assert isinstance(stmt, cst.SimpleStatementLine)
                if _has_comment(node) or stmt.trailing_whitespace.comment or (
                        found and any(line.comment for line in stmt.leading_lines)):
                    return False
                found.append((s, p, stmt))
                existing += _alias_items(node.names)
                magic = magic or (_magic_comma(node) and len(node.names) > 1)
        if not found:
            return False
        lines = self._lines("from", level, module, list(dict.fromkeys(existing + names)),
                            indent, magic=magic)
        first_slot, first_place, first = found[0]
        lines[0] = lines[0].with_changes(leading_lines=first.leading_lines)
        for s, p, _ in reversed(found):
            del slots[s][p]
        slots[first_slot][first_place:first_place] = lines
        return True

    def _merged(self, stmt: cst.BaseStatement, node: cst.ImportFrom, names: Names,
                indent: str) -> cst.BaseStatement:
        assert isinstance(stmt, cst.SimpleStatementLine) and isinstance(node.names, Sequence)
        if not _has_comment(node):
            texts = _style.render_from(self.style, len(node.relative), _module_text(node),
                                       _alias_items(node.names) + names, indent=indent,
                                       magic_comma=_magic_comma(node))
            if len(texts) == 1:
                return stmt.with_changes(body=[_parse_line(texts[0], indent).body[0]])
        aliases = list(node.names)
        comma = _separator(node)
        for name, asname in names:
            new = cst.ImportAlias(cst.Name(name), asname=cst.AsName(cst.Name(asname))
                                  if asname else None)
            keys = [_style.member_key(self.style, *item) for item in _alias_items(aliases)]
            mine = _style.member_key(self.style, name, asname)
            at = next((i for i, k in enumerate(keys) if k > mine), len(aliases))
            if at == len(aliases):
                last_comma = aliases[-1].comma
                aliases[-1] = aliases[-1].with_changes(comma=_reindented(last_comma, comma))
                aliases.append(new.with_changes(comma=_uncommented(last_comma)))
            else:
                aliases.insert(at, new.with_changes(comma=comma))
        return stmt.with_changes(body=[node.with_changes(names=aliases)])

    def _lines(self, kind: Kind, level: int, module: str, names: Names, indent: str, *,
               comment: str | None = None, member_comments: dict[tuple[str, str | None], str]
               | None = None, magic: bool = False) -> list[cst.SimpleStatementLine]:
        """Returns the statements importing ``names`` as the style writes them, each name's
        own comment after it (a statement with commented names is wrapped, as ruff does)."""
        notes = member_comments or {}
        if kind == "import":
            return [_parse_line(_style.render_import(
                self.style, name, alias, comment=_joined(comment, notes.get((name, alias)))))
                for name, alias in names]
        lines = []
        for text in _style.render_from(self.style, level, module, names, indent=indent,
                                       comment=comment, magic_comma=magic):
            line = _parse_line(text, indent)
            node = line.body[0]
            assert isinstance(node, cst.ImportFrom) and isinstance(node.names, Sequence)
            mine = [notes[n] for n in _alias_items(node.names) if n in notes]
            if mine and len(node.names) > 1 and not _is_wrapped(node) and not magic:
                lines += self._lines(kind, level, module, _alias_items(node.names), indent,
                                     comment=comment, member_comments=notes, magic=True)
                continue
            lines.append(_with_member_comments(line, notes))
        return lines

    def _new_statements(self, add: _Addition, indent: str) -> list[cst.SimpleStatementLine]:
        original = add.original
        lines = self._lines(add.kind, add.level, add.module, add.names, indent,
                            comment=add.comment, member_comments=add.member_comments,
                            magic=original is not None and _magic_comma(original)
                            and len(add.names) > 1)
        if original is not None and (_has_comment(original) or len(lines) > 1):
            # Moving whole, the user's statement keeps its layout and every comment.
            fresh = lines[0].body[0]
            assert isinstance(fresh, cst.ImportFrom)
            trailing = cst.TrailingWhitespace() if add.comment is None else \
                cst.TrailingWhitespace(cst.SimpleWhitespace("  "), cst.Comment(add.comment))
            lines = [lines[0].with_changes(body=[original.with_changes(
                relative=fresh.relative, module=fresh.module)], trailing_whitespace=trailing)]
        lines[0] = lines[0].with_changes(leading_lines=add.comments)
        return lines

    def _frozen_statements(self, add: _Addition,
                           indent: str) -> list[cst.SimpleStatementLine]:
        """Returns the statements of ``add`` for a place the sorters skip: the user's own
        statement re-pointed with its layout when it moves whole, else as the style writes it."""
        lines = self._new_statements(add, indent)
        original = add.original
        fresh = lines[0].body[0]
        if original is None or len(lines) != 1 or not isinstance(fresh, cst.ImportFrom):
            return lines
        return [lines[0].with_changes(body=[original.with_changes(
            relative=fresh.relative, module=fresh.module)])]

    def statement_key(self, stmt: cst.BaseStatement) -> tuple[int, tuple[object, ...]] | None:
        """Returns where the style sorts an import statement: (section, key); None otherwise."""
        node = _single_import(stmt)
        if isinstance(node, cst.Import):
            module, alias = _alias_items(node.names)[0]
            return (_style.section_of(self.style, 0, module), _style.statement_key(
                self.style, kind="import", level=0, module=module, asname=alias))
        if isinstance(node, cst.ImportFrom):
            level, module = len(node.relative), _module_text(node)
            names = _alias_items(node.names) if isinstance(node.names, Sequence) else [
                ("*", None)]
            first = min(names, key=lambda n: _style.member_key(self.style, *n))
            return (_style.section_of(self.style, level, module), _style.statement_key(
                self.style, kind="from", level=level, module=module, first=first,
                names=names))
        return None

    def _insert_sorted(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
                       add: _Addition, indent: str) -> None:
        for new in self._new_statements(add, indent):
            key = self.statement_key(new)
            assert key is not None
            last: tuple[int, int] | None = None
            placed = False
            for s in range(block[0], block[1] + 1):
                for p, stmt in enumerate(slots[s]):
                    other = self.statement_key(stmt)
                    if other is not None and other[1] > key[1]:
                        slots[s].insert(p, new)
                        placed = True
                        break
                    last = (s, p)
                if placed:
                    break
            if placed:
                continue
            if last is None:
                slots[add.anchor].append(new)
            else:
                slots[last[0]].insert(last[1] + 1, new)

    def _place_compat(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
                      add: _Addition, indent: str) -> None:
        groups: dict[tuple[Kind, int, str], Names] = {}
        notes: dict[tuple[str, str | None], str] = {}
        for name in add.names:
            kind, level, module, old_name = add.fallbacks[name]
            groups.setdefault((kind, level, module), []).append(old_name)
            if name in add.member_comments:
                notes[old_name] = add.member_comments[name]
        fallback = [line for (kind, level, module), names in sorted(groups.items())
                    for line in self._lines(kind, level, module, names, indent + " " * 8,
                                            comment=add.comment, member_comments=notes)]
        body = self._lines(add.kind, add.level, add.module, add.names, indent + "    ",
                           comment=add.comment, member_comments=add.member_comments)
        guard = self.type_checking_name()
        stmt = cst.parse_statement(f"try:\n    pass\nexcept ImportError:\n    if not {guard}:\n"
                                   "        pass\n")
        assert isinstance(stmt, cst.Try) and len(stmt.handlers) == 1
        handler = stmt.handlers[0]
        check = handler.body.body[0]
        assert isinstance(check, cst.If)
        stmt = stmt.with_changes(
            body=stmt.body.with_changes(body=body),
            handlers=[handler.with_changes(body=handler.body.with_changes(body=[
                check.with_changes(body=check.body.with_changes(body=fallback))]))])
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

    # -- the module's top: TYPE_CHECKING and the modules found at import time -------------

    def finish_module(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Returns the module body with what --compat output needs at its top: the
        ``TYPE_CHECKING`` import and the constants naming the modules found at import time."""
        self.frozen = _frozen_statements(body, whole=self.keep_order)
        if self.needs_type_checking:
            body = self._add_type_checking(body)
        if self.constants:
            at = _import_region_end(body)
            chosen = [self._constant_statement(old, new, name)
                      for (old, new), name in self.constants.items()]
            if at < len(body):
                body[at] = _with_blank_line(body[at])
            first = chosen[0]
            chosen[0] = first.with_changes(leading_lines=[cst.EmptyLine(indent=False)]
                                           if at else [])
            body = [*body[:at], *chosen, *body[at:]]
        return body

    @staticmethod
    def _constant_statement(old: str, new: str, name: str) -> cst.BaseStatement:
        return cst.parse_statement(
            f'try:\n    __import__("{new}")\n    {name} = "{new}"\n'
            f'except ImportError:\n    {name} = "{old}"\n')

    def _add_type_checking(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Returns ``body`` with ``from typing import TYPE_CHECKING`` where the style puts it."""
        end = _import_region_end(body)
        slots: list[list[cst.BaseStatement]] = [[stmt] for stmt in body]
        if end and self._regroup(slots, end - 1, 0, "typing", [("TYPE_CHECKING", None)], ""):
            return [stmt for slot in slots for stmt in slot]
        for i in range(end):
            node = _single_import(body[i])
            if (i not in self.frozen and isinstance(node, cst.ImportFrom) and not node.relative
                    and _module_text(node)
                    == "typing" and self._merge_target(node, _Addition(
                        "from", 0, "typing", [("TYPE_CHECKING", None)], i))):
                body[i] = self._merged(body[i], node, [("TYPE_CHECKING", None)], "")
                return body
        new = _parse_line(_style.render_from(self.style, 0, "typing",
                                             [("TYPE_CHECKING", None)])[0])
        key = self.statement_key(new)
        assert key is not None
        ordered = [(i, k) for i in range(end) if i not in self.frozen
                   and (k := self.statement_key(body[i])) is not None]
        before = [(i, k) for i, k in ordered if k < key]
        after = next(((i, k) for i, k in ordered if k > key), None)
        if before and before[-1][1][0] == key[0]:  # the end of its own section's block
            return [*body[:before[-1][0] + 1], new, *body[before[-1][0] + 1:]]
        if after is None:  # a new section after every import (or the first import)
            at = before[-1][0] + 1 if before else _after_future(body, end)
            new = new.with_changes(leading_lines=[cst.EmptyLine(indent=False)] if at else [])
            if at < len(body) and not before:  # code now follows an import block
                body[at] = _after_imports(body[at])
            return [*body[:at], new, *body[at:]]
        at, other = after
        blank, own = _split_leading(body[at])
        new = new.with_changes(leading_lines=blank if at else [])
        rest = own if other[0] == key[0] else [cst.EmptyLine(indent=False), *own]
        body[at] = body[at].with_changes(leading_lines=rest)
        return [*body[:at], new, *body[at:]]


def _after_future(body: Sequence[cst.BaseStatement], end: int) -> int:
    """Returns the index after the docstring and every ``from __future__`` import."""
    at = _docstring_end(body)
    for i in range(at, end):
        node = _single_import(body[i])
        if isinstance(node, cst.ImportFrom) and _module_text(node) == "__future__":
            at = i + 1
    return at


def _names_bound(suite: cst.BaseSuite) -> set[str]:
    """Returns the names statements of ``suite`` bind, nested blocks included (imports,
    assignments, definitions): what an except clause may bind an alias to."""
    bound: set[str] = set()

    class Binder(cst.CSTVisitor):
        def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
            asname = node.asname.name if node.asname else None
            bound.add(asname.value if isinstance(asname, cst.Name)
                      else (get_full_name_for_node(node.name) or "").partition(".")[0])

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            bound.update(n.value for n in _target_names(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            bound.update(n.value for n in _target_names(node.target))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            bound.add(node.name.value)
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            bound.add(node.name.value)
            return False

    suite.visit(Binder())
    return bound


def _target_names(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _target_names(element.value)]
    return []


def _joined(first: str | None, second: str | None) -> str | None:
    """Returns two comments as one (``# a  # b``), either alone, or None."""
    if first is None or second is None or second in first:
        return first or second
    return f"{first}  {second}"


def _is_wrapped(node: cst.ImportFrom) -> bool:
    return node.lpar is not None and isinstance(node.lpar.whitespace_after,
                                                 cst.ParenthesizedWhitespace)


def _with_member_comments(line: cst.SimpleStatementLine,
                          notes: dict[tuple[str, str | None], str]) -> cst.SimpleStatementLine:
    """Returns ``line`` with each name's comment after it: inside its parentheses when
    wrapped, else ending the line (a one-name statement)."""
    node = line.body[0]
    assert isinstance(node, cst.ImportFrom) and isinstance(node.names, Sequence)
    items = _alias_items(node.names)
    if not any(n in notes for n in items):
        return line
    if not _is_wrapped(node):
        own = line.trailing_whitespace.comment
        joined = own.value if own is not None else None
        for item in items:
            joined = _joined(joined, notes.get(item))
        assert joined is not None
        return line.with_changes(trailing_whitespace=cst.TrailingWhitespace(
            cst.SimpleWhitespace("  "), cst.Comment(joined)))
    aliases = []
    for alias, item in zip(node.names, items):
        comma = alias.comma
        if item in notes and isinstance(comma, cst.Comma) and isinstance(
                comma.whitespace_after, cst.ParenthesizedWhitespace):
            space = comma.whitespace_after
            alias = alias.with_changes(comma=comma.with_changes(whitespace_after=space.with_changes(
                first_line=cst.TrailingWhitespace(cst.SimpleWhitespace("  "),
                                                  cst.Comment(notes[item])))))
        aliases.append(alias)
    return line.with_changes(body=[node.with_changes(names=aliases)])


def _split_leading(stmt: cst.BaseStatement) -> tuple[list[cst.EmptyLine], list[cst.EmptyLine]]:
    """Returns a statement's leading lines as (blank lines before its comments, the rest)."""
    lines = list(getattr(stmt, "leading_lines", ()))
    first = next((i for i, line in enumerate(lines) if line.comment is not None), len(lines))
    return lines[:first], lines[first:]


def _after_imports(stmt: cst.BaseStatement) -> cst.BaseStatement:
    """Returns ``stmt`` with the blank lines ruff and isort want after an import block:
    two before a class or function, one before anything else."""
    _, own = _split_leading(stmt)
    count = 2 if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else 1
    return stmt.with_changes(
        leading_lines=[*(cst.EmptyLine(indent=False) for _ in range(count)), *own])


def _with_blank_line(stmt: cst.BaseStatement) -> cst.BaseStatement:
    """Returns ``stmt`` with a blank line above it (unless it already has one)."""
    blank, own = _split_leading(stmt)
    if blank:
        return stmt
    return stmt.with_changes(
        leading_lines=[cst.EmptyLine(indent=False), *own])


def _is_import_like(stmt: cst.BaseStatement) -> bool:
    if _single_import(stmt) is not None:
        return True
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)
    if isinstance(stmt, cst.Try):
        return all(_is_import_like(s) for s in stmt.body.body if isinstance(
            s, cst.BaseStatement)) and any(_catches_import_error(h) for h in stmt.handlers)
    if isinstance(stmt, cst.If):
        return _is_type_checking(stmt.test)
    return False


def _docstring_end(body: Sequence[cst.BaseStatement]) -> int:
    first = body[0] if body else None
    if (isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1
            and isinstance(first.body[0], cst.Expr)
            and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))):
        return 1
    return 0


def _import_region_end(body: Sequence[cst.BaseStatement]) -> int:
    """Returns the index after the module's leading imports (docstring, imports, compat
    ``try`` blocks and ``if TYPE_CHECKING:``): what goes there runs before any other code
    and leaves every import at the top (no E402)."""
    at = _docstring_end(body)
    end = at
    for i in range(at, len(body)):
        if not _is_import_like(body[i]):
            break
        end = i + 1
    return end


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


def _parse_line(text: str, indent: str = "") -> cst.SimpleStatementLine:
    """Returns the statement ``text`` (its lines prefixed by ``indent``) as a libcst line."""
    if indent:
        first, *rest = text.split("\n")
        if first.rstrip().endswith("\\"):  # a backslash continuation is kept verbatim
            text = "\n".join([first.removeprefix(indent), *rest])
        else:  # inside parentheses libcst indents the lines with the block
            text = "\n".join(line.removeprefix(indent) for line in [first, *rest])
    stmt = cst.parse_statement(text + "\n")
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt


class _Rewriter(cst.CSTTransformer):
    """The single tree pass used when work lies beyond top-level import statements."""

    def __init__(self, command: MigrateImportsCommand) -> None:
        super().__init__()
        self.command = command
        self.analysis = command.analysis
        self.indents: list[str] = []
        self.type_checking: list[bool] = []
        """Per indented block: whether it runs only for type checkers (``if TYPE_CHECKING:``)."""
        self.checking = False
        """Set by ``if TYPE_CHECKING:`` for the block (or one-line suite) that follows."""
        self.annotations = 0
        self.expressions: list[bool] = []
        """Per expression statement: whether its value is a bare string (a docstring)."""

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Try(self, node: cst.Try) -> bool:
        return not self._is_compat_fallback(node)

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try) -> cst.Try:
        """Returns the ``try`` with each name the rewrite bound in its body bound in its
        import-error handlers too, to what the handler binds the user's alias to
        (``except ImportError: import fallback as so`` then ``auxiliary_output = so``)."""
        renamed = self.command.renamed_in(original_node.body)
        if not renamed:
            return updated_node
        handlers = [self.command.rebound(handler, renamed)
                    for handler in updated_node.handlers]
        return updated_node.with_changes(handlers=handlers)

    def leave_TryStar(self, original_node: cst.TryStar,
                      updated_node: cst.TryStar) -> cst.TryStar:
        """Returns the ``try``/``except*`` with the new names bound in its handlers too."""
        renamed = self.command.renamed_in(original_node.body)
        if not renamed:
            return updated_node
        handlers = [self.command.rebound(handler, renamed)
                    for handler in updated_node.handlers]
        return updated_node.with_changes(handlers=handlers)

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
            elif isinstance(imp, cst.Import) and any(
                    n in self.command.moves.new_modules for n, _ in _alias_items(imp.names)):
                return True
        return False

    def visit_If(self, node: cst.If) -> None:
        self.checking = _is_type_checking(node.test)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        outer = self.indents[-1] if self.indents else ""
        self.indents.append(outer + (node.indent or "    "))
        inherited = bool(self.type_checking) and self.type_checking[-1]
        self.type_checking.append(inherited or self.checking)
        self.checking = False

    def _compat(self) -> bool:
        return self.command.compat and not (self.type_checking and self.type_checking[-1])

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite,
                                   updated_node: cst.SimpleStatementSuite) -> cst.BaseSuite:
        checking, self.checking = self.checking, False
        block = self.command.expand_suite(updated_node)
        if not isinstance(block, cst.IndentedBlock):
            return block
        outer = self.indents[-1] if self.indents else ""
        compat = self._compat() and not checking
        return block.with_changes(body=self.command.rewrite_body(block.body, outer + "    ",
                                                                 compat=compat))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        compat = self._compat()
        indent = self.indents.pop()
        self.type_checking.pop()
        return updated_node.with_changes(
            body=self.command.rewrite_body(updated_node.body, indent, compat=compat))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = self.command.rewrite_body(updated_node.body, "")
        return updated_node.with_changes(body=self.command.finish_module(body))

    def leave_Attribute(self, original_node: cst.Attribute,
                        updated_node: cst.Attribute) -> cst.BaseExpression:
        owner = get_full_name_for_node(updated_node.value)
        if owner is None:
            return updated_node
        old = self.analysis.aliases.get(owner)
        if old is None and owner in self.analysis.dotted:
            old = owner
        new = self.command.moved.get(old or "", {}).get(updated_node.attr.value)
        text = self.command.plan.get(owner, {}).get(new or "")
        if text is None or text == owner:
            return updated_node
        return updated_node.with_changes(value=cst.parse_expression(text))

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.annotations += 1

    def leave_Annotation(self, original_node: cst.Annotation,
                         updated_node: cst.Annotation) -> cst.Annotation:
        self.annotations -= 1
        return updated_node

    def visit_Expr(self, node: cst.Expr) -> None:
        self.expressions.append(isinstance(node.value, (cst.SimpleString,
                                                        cst.ConcatenatedString)))

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr) -> cst.Expr:
        self.expressions.pop()
        return updated_node

    def leave_SimpleString(self, original_node: cst.SimpleString,
                           updated_node: cst.SimpleString) -> cst.BaseExpression:
        value, quote, prefix = updated_node.value, updated_node.quote, updated_node.prefix
        body = value[len(prefix) + len(quote):len(value) - len(quote)]
        command = self.command
        if (self._compat() and not self.annotations and "b" not in prefix.lower()
                and not (self.expressions and self.expressions[-1])
                and target_spans(body, command.moves)):
            # Runs on both layouts: the module found at import time, in an f-string.
            escaped = body.replace("{", "{{").replace("}", "}}")
            new = rewrite_string(escaped, command.moves, self.analysis.aliases,
                                 command.replacements, lambda old, new_module: "{"
                                 + command.constant_for(old, new_module) + "}")
            if new is not None:
                fprefix = "f" + prefix.replace("u", "").replace("U", "")
                return cst.parse_expression(f"{fprefix}{quote}{new}{quote}")
        new = rewrite_string(body, command.moves, self.analysis.aliases, command.replacements,
                             annotation=bool(self.annotations))
        if new is None:
            return updated_node
        return updated_node.with_changes(value=value[:len(prefix) + len(quote)] + new
                                         + value[len(value) - len(quote):])

    def leave_FormattedString(self, original_node: cst.FormattedString,
                              updated_node: cst.FormattedString) -> cst.FormattedString:
        parts = self._fstring_parts(updated_node.parts)
        return updated_node if parts is None else updated_node.with_changes(parts=parts)

    def leave_FormattedStringExpression(
            self, original_node: cst.FormattedStringExpression,
            updated_node: cst.FormattedStringExpression) -> cst.FormattedStringExpression:
        spec = updated_node.format_spec
        parts = None if spec is None else self._fstring_parts(spec)
        return updated_node if parts is None else updated_node.with_changes(format_spec=parts)

    def _fstring_parts(self, parts: Sequence[cst.BaseFormattedStringContent]
                       ) -> list[cst.BaseFormattedStringContent] | None:
        """Returns an f-string's parts with each target the scanner calls fixable rewritten
        (in --compat, to a field naming the module found at import time); None if none."""
        texts = [p.value if isinstance(p, cst.FormattedStringText) else None for p in parts]
        targets = [t for t in fstring_targets(texts, self.command.moves) if t.verdict == "fix"]
        if not targets:
            return None
        compat = self._compat() and not self.annotations
        rewritten = list(parts)
        for target in sorted(targets, key=lambda t: (t.part, t.start), reverse=True):
            piece = rewritten[target.part]
            assert isinstance(piece, cst.FormattedStringText)
            value = ("{" + self.command.constant_for(target.old, target.new) + "}" if compat
                     else target.new)
            rewritten[target.part] = piece.with_changes(
                value=piece.value[:target.start] + value + piece.value[target.end:])
        return rewritten


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
        after = analyze(ast.parse(result.code, filename=path), moves, package=package,
                        source=result.code)
    except (SyntaxError, ValueError) as exc:  # pragma: no cover - a bug guard
        return MigrationResult("failed", text, f"rewrite would not parse: {exc}")
    status: Literal["changed", "unchanged"] = "changed" if result.code != text else "unchanged"
    return MigrationResult(status, result.code, analysis=after)

