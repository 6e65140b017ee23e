"""The libcst codemod that points imports of moved names at their new module.

:class:`MigrateImportsCommand` makes one pass over a parsed module, guided by the
:class:`~auxcheck.migrate.scan.Analysis` the ast scanner made of the same text: it
rewrites ``from old import X`` (splitting statements that mix moved and staying
names), module imports with their attribute uses (``import old [as m]`` and
``from pkg import old``, each kept in the form the user wrote), dotted string targets
and star imports, and writes each import the way the project's ruff or isort
configuration (:mod:`auxcheck.migrate.style`) sorts and wraps it. With
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
from typing import Literal, NamedTuple, TypeVar

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

from auxcheck._core.pyast import IMPORT_ERROR_CATCHERS
from auxcheck.migrate import style as _style
from auxcheck.migrate.moves import MoveTable
from auxcheck.migrate.scan import (
    Analysis,
    StringRole,
    analyze,
    argument_role,
    assigned_role,
    is_defining_module,
    is_new_then_old_fallback,
    moved_names,
    package_of,
    resolve_relative,
    rewrite_string,
    string_targets,
    subscript_roles,
)
from auxcheck.migrate.style import ImportStyle

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
    trailing: cst.TrailingWhitespace | None = None
    """The end of the user's line when it moves whole, kept byte for byte where it stays
    as written (a region the sorters skip, a --compat fallback)."""

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


def _ends_block(stmt: cst.BaseStatement) -> bool:
    """Returns True for an import ending ``# isort: split``: no import moves across it."""
    trailing = getattr(stmt, "trailing_whitespace", None)
    comment = trailing.comment if isinstance(trailing, cst.TrailingWhitespace) else None
    return comment is not None and _SPLIT.match(comment.value) is not None


def _type_checking_bound(body: Sequence[cst.BaseStatement]) -> str | None:
    """Returns how ``body`` names ``typing.TYPE_CHECKING`` by importing it, if it does."""
    for stmt in body:
        node = _single_import(stmt)
        if isinstance(node, cst.ImportFrom) and not node.relative and _module_text(node) in (
                "typing", "typing_extensions") and isinstance(node.names, Sequence):
            for name, asname in _alias_items(node.names):
                if name == "TYPE_CHECKING":
                    return asname or name
        elif isinstance(node, cst.Import):
            for name, asname in _alias_items(node.names):
                if name == "typing":
                    return f"{asname or name}.TYPE_CHECKING"
    return None


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
_NodeT = TypeVar("_NodeT", bound=cst.CSTNode)


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
        TYPE_CHECKING`` or ``import typing``), when the module has none."""
        self.local_guard: str | None = None
        """How the statement list being rewritten names TYPE_CHECKING, if it imports it."""
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
        """Returns how the code being rewritten names ``typing.TYPE_CHECKING``: as the
        statement list or the module imports it, else through an import to add
        (``typing.TYPE_CHECKING`` when the module binds ``TYPE_CHECKING`` to its own)."""
        if self.local_guard is not None:
            return self.local_guard
        if self.analysis.type_checking is not None:
            return self.analysis.type_checking
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
        self.local_guard = _type_checking_bound(body[:anchors[0]]) if indent else None
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
               and start - 1 not in self.frozen and not _ends_block(body[start - 1])):
            start -= 1
        while end + 1 < len(body) and _single_import(body[end + 1]) and not _starts_block(
                body[end + 1]) and end + 1 not in self.frozen and not _ends_block(body[end]):
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
        kept = self._without(stmt, node, leaving, frozen=index in self.frozen)
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
                add.trailing = stmt.trailing_whitespace
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
                 leaving: set[int], *, frozen: bool = False) -> list[cst.BaseStatement]:
        """Returns ``stmt`` without the names at ``leaving``: written anew as the style
        writes it, or, when it has comments or stands where the sorters do not look
        (``frozen``), with its own layout, each comment line kept in its place."""
        assert isinstance(node.names, Sequence)
        if not leaving:
            return [stmt]
        if len(leaving) == len(node.names):
            return []
        names, lead = _kept_names(node, leaving)
        if isinstance(node, cst.ImportFrom) and not _has_comment(node) and not frozen:
            texts = _style.render_from(self.style, len(node.relative), _module_text(node),
                                       _alias_items(names), sort=False, indent=self.indent,
                                       # One name left is written on one line where it fits
                                       # (ruff accepts both; isort folds it).
                                       magic_comma=_magic_comma(node) and len(names) > 1)
            lines = [_parse_line(text, self.indent) for text in texts]
            lines[0] = lines[0].with_changes(leading_lines=stmt.leading_lines)
            lines[-1] = lines[-1].with_changes(trailing_whitespace=stmt.trailing_whitespace)
            return list(lines)
        if isinstance(node, cst.ImportFrom) and node.lpar is not None and lead is not None:
            node = node.with_changes(lpar=node.lpar.with_changes(whitespace_after=lead))
        else:  # a trailing comma is only legal inside parentheses
            names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
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
            relative=fresh.relative, module=fresh.module)],
            trailing_whitespace=add.trailing or lines[0].trailing_whitespace)]

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
                    if other is not None and other > key:
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
        fresh = body[0].body[0]
        if add.original is not None and add.trailing is not None and isinstance(
                fresh, cst.ImportFrom) and (_has_comment(add.original) or add.anchor in self.frozen):
            # Moving whole with comments inside, or where the sorters do not look, the
            # statement keeps its layout and every comment in both branches.
            original, end = add.original, add.trailing
            body = [cst.SimpleStatementLine(body=[original.with_changes(
                relative=fresh.relative, module=fresh.module)], trailing_whitespace=end)]
            fallback = [cst.SimpleStatementLine(body=[original], trailing_whitespace=end)]
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
        """Returns the module body with what the rewrite needs at its top: the imports of
        the modules rewritten type-expression strings name, the constants naming the
        modules found at import time (--compat), and the ``TYPE_CHECKING`` import, which
        comes before its first use."""
        self.local_guard = None
        body = self._add_type_imports(body)
        if self.constants:
            at = min([_import_region_end(body), *(_first_use(body, name)
                                                  for name in self.constants.values())])
            chosen = [self._constant_statement(old, new, name)
                      for (old, new), name in self.constants.items()]
            body = _inserted(body, at, chosen)
        if self.guard is not None:
            kind, module, name = self.guard
            body = self._add_import(body, kind, module, name,
                                    limit=_first_use(body, "TYPE_CHECKING"))
        return body

    def _add_type_imports(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Returns ``body`` importing each new module a type-expression string now names
        that no import binds: ``import new`` where the style puts it, or in --compat
        under ``if TYPE_CHECKING:`` (only type checkers read those strings)."""
        modules = sorted(self.analysis.type_imports)
        if not modules:
            return body
        if not self.compat:
            for module in modules:
                body = self._add_import(body, "import", module, None)
            return body
        lines = "".join(f"    {_style.render_import(self.style, m, None)}\n" for m in modules)
        block = cst.parse_statement(f"if {self.type_checking_name()}:\n{lines}")
        return _inserted(body, _import_region_end(body), [block])

    @staticmethod
    def _constant_statement(old: str, new: str, name: str) -> cst.BaseStatement:
        return cst.parse_statement(
            f'try:\n    __import__("{new}")\n    {name} = "{new}"\n'
            f'except ImportError:\n    {name} = "{old}"\n')

    def _add_import(self, body: list[cst.BaseStatement], kind: Kind, module: str,
                    name: str | None, *, limit: int | None = None) -> list[cst.BaseStatement]:
        """Returns ``body`` with ``from module import name`` (or ``import module [as
        name]``) where the style puts it among the leading imports before ``limit``."""
        self.frozen = _frozen_statements(body, whole=self.keep_order)
        end = _import_region_end(body) if limit is None else min(_import_region_end(body),
                                                                  limit)
        if kind == "from" and name is not None:
            merged = self._merged_into(body, end, module, name)
            if merged is not None:
                return merged
            text = _style.render_from(self.style, 0, module, [(name, None)])[0]
        else:
            text = _style.render_import(self.style, module, name)
        new = _parse_line(text)
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

    def _merged_into(self, body: list[cst.BaseStatement], end: int, module: str,
                     name: str) -> list[cst.BaseStatement] | None:
        """Returns ``body`` with ``name`` joined to a ``from module import`` among its
        first ``end`` statements, as the style writes them; None when there is none."""
        slots: list[list[cst.BaseStatement]] = [[stmt] for stmt in body]
        if end and self._regroup(slots, end - 1, 0, module, [(name, None)], ""):
            return [stmt for slot in slots for stmt in slot]
        for i in range(end):
            node = _single_import(body[i])
            if (i not in self.frozen and isinstance(node, cst.ImportFrom) and not node.relative
                    and _module_text(node) == module and self._merge_target(
                        node, _Addition("from", 0, module, [(name, None)], i))):
                body[i] = self._merged(body[i], node, [(name, None)], "")
                return body
        return None


def _inserted(body: list[cst.BaseStatement], at: int,
              chosen: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """Returns ``body`` with ``chosen`` inserted at ``at`` as a block of its own."""
    if at < len(body):
        body[at] = _with_blank_line(body[at])
    chosen[0] = chosen[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)]
                                       if at else [])
    return [*body[:at], *chosen, *body[at:]]


def _first_use(body: Sequence[cst.BaseStatement], name: str) -> int:
    """Returns the index of the first statement whose text holds ``name``, after the
    docstring and the ``__future__`` imports (which nothing may precede)."""
    floor = _after_future(body, len(body))
    return next((i for i in range(floor, len(body))
                 if name in _EMPTY.code_for_node(body[i])), len(body))


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
    """Returns ``stmt`` with the blank lines ruff wants above it after imports (one, two
    before a class or function), unless it has as many already."""
    blank, own = _split_leading(stmt)
    count = 2 if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else 1
    if len(blank) >= count:
        return stmt
    return stmt.with_changes(
        leading_lines=[*(cst.EmptyLine(indent=False) for _ in range(count)), *own])


def _is_import_like(stmt: cst.BaseStatement) -> bool:
    if _single_import(stmt) is not None:
        return True
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)
    if isinstance(stmt, cst.Try):  # an else or finally may run code using what follows
        return all(_is_import_like(s) for s in stmt.body.body if isinstance(
            s, cst.BaseStatement)) and any(_catches_import_error(h) for h in stmt.handlers) and (
                stmt.orelse is None and stmt.finalbody is None)
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


def _kept_names(node: cst.Import | cst.ImportFrom, leaving: set[int]
                ) -> tuple[list[cst.ImportAlias], cst.BaseParenthesizableWhitespace | None]:
    """Returns the names of ``node`` but those at ``leaving``, and the whitespace after its
    opening parenthesis (None without one). The line break after a name that leaves, and
    the comment lines there (they belong to the next name), stay where they were."""
    assert isinstance(node.names, Sequence)
    lead = node.lpar.whitespace_after if isinstance(node, cst.ImportFrom) and node.lpar else None
    kept: list[cst.ImportAlias] = []
    for i, alias in enumerate(node.names):
        if i not in leaving:
            kept.append(alias)
            continue
        space = alias.comma.whitespace_after if isinstance(alias.comma, cst.Comma) else None
        if space is None:
            continue
        previous = kept[-1].comma if kept else None
        if isinstance(previous, cst.Comma):
            kept[-1] = kept[-1].with_changes(comma=previous.with_changes(
                whitespace_after=_joined_space(previous.whitespace_after, space)))
        elif not kept and lead is not None:
            lead = _joined_space(lead, space)
    return kept, lead


def _joined_space(kept: cst.BaseParenthesizableWhitespace,
                  removed: cst.BaseParenthesizableWhitespace
                  ) -> cst.BaseParenthesizableWhitespace:
    """Returns the whitespace before a name that now follows ``kept`` where a removed
    name's ``removed`` was: ``kept``'s own comment, then the removed line break with the
    comment lines after it (the removed name's own comment goes with the name)."""
    if not isinstance(removed, cst.ParenthesizedWhitespace):
        return kept
    lines = [line for line in removed.empty_lines if line.comment is not None]
    if isinstance(kept, cst.ParenthesizedWhitespace):
        return kept.with_changes(empty_lines=[*kept.empty_lines, *lines],
                                 indent=removed.indent, last_line=removed.last_line)
    return removed.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=lines)


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
        self.roles: list[StringRole] = ["runtime"]
        self.marks: dict[int, StringRole] = {}
        """ids of nodes whose strings are read in another role (as the scan marks them)."""
        self.quiet: set[int] = set()
        """ids of the handlers of the user's own new-then-old fallbacks: left as written."""
        self.pieces: set[int] = set()
        """ids of the strings of a concatenation: rewritten with it, as one string."""

    def on_visit(self, node: cst.CSTNode) -> bool:
        role = self.marks.get(id(node))
        if role is not None:
            self.roles.append(role)
        return super().on_visit(node)

    def on_leave(self, original_node: _NodeT, updated_node: _NodeT
                 ) -> _NodeT | cst.RemovalSentinel | cst.FlattenSentinel[_NodeT]:
        result = super().on_leave(original_node, updated_node)
        if self.marks.pop(id(original_node), None) is not None:
            self.roles.pop()
        return result

    def _mark(self, node: cst.CSTNode | None, role: StringRole | None) -> None:
        if node is not None and role is not None and role != self.roles[-1]:
            self.marks[id(node)] = role

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    # -- try statements ------------------------------------------------------------------

    def visit_Try(self, node: cst.Try | cst.TryStar) -> bool:
        catches = any(_catches_import_error(h) for h in node.handlers)
        if is_new_then_old_fallback(catches, self._imported(node.body), self.command.moves):
            self.quiet.update(id(handler) for handler in node.handlers)
        return True

    visit_TryStar = visit_Try

    def _imported(self, suite: cst.BaseSuite) -> Iterable[str]:
        """Yields what the statements of ``suite`` import (as the scan reads a ``try``)."""
        for stmt in suite.body if isinstance(suite, cst.IndentedBlock) else [suite]:
            smalls = stmt.body if isinstance(stmt, (cst.SimpleStatementLine,
                                                    cst.SimpleStatementSuite)) else ()
            for small in smalls:
                if isinstance(small, cst.Import):
                    yield from (name for name, _ in _alias_items(small.names))
                elif isinstance(small, cst.ImportFrom) and (module := self.command._resolve(
                        small)) is not None:
                    yield module
                    if isinstance(small.names, Sequence):
                        yield from (f"{module}.{name}" for name, _ in _alias_items(small.names))

    def visit_ExceptHandler(self, node: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
        return id(node) not in self.quiet

    visit_ExceptStarHandler = visit_ExceptHandler

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

    # -- blocks --------------------------------------------------------------------------

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

    # -- attributes ----------------------------------------------------------------------

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
        value = updated_node.value  # its parentheses, and a comment inside them, stay
        return updated_node.with_changes(value=cst.parse_expression(text).with_changes(
            lpar=value.lpar, rpar=value.rpar))

    # -- the role of each string (the scan marks the same ones) --------------------------

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.roles.append("type")

    def leave_Annotation(self, original_node: cst.Annotation,
                         updated_node: cst.Annotation) -> cst.Annotation:
        self.roles.pop()
        return updated_node

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._mark(node.value, assigned_role(_last_name(node.annotation.annotation)))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        roles = subscript_roles(_last_name(node.value), len(node.slice), self.roles[-1])
        for element, role in zip(node.slice, roles):
            if isinstance(element.slice, cst.Index):
                self._mark(element.slice.value, role)

    def visit_Call(self, node: cst.Call) -> None:
        function, position = _last_name(node.func), 0
        for arg in node.args:
            if arg.keyword is not None:
                self._mark(arg.value, argument_role(function, arg.keyword.value))
            elif not arg.star:
                self._mark(arg.value, argument_role(function, position))
                position += 1

    def visit_Expr(self, node: cst.Expr) -> None:
        if isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString)):
            self._mark(node.value, "value")  # a docstring: plain text, never an f-string

    def visit_MatchValue(self, node: cst.MatchValue) -> None:
        self._mark(node.value, "value")  # a pattern may only hold a literal

    def visit_MatchMappingElement(self, node: cst.MatchMappingElement) -> None:
        self._mark(node.key, "value")

    # -- strings -------------------------------------------------------------------------

    def visit_ConcatenatedString(self, node: cst.ConcatenatedString) -> None:
        if id(node) not in self.pieces:  # the whole string: its pieces go with it
            self.pieces.update(id(piece) for piece in _concatenated(node))

    def leave_ConcatenatedString(self, original_node: cst.ConcatenatedString,
                                 updated_node: cst.ConcatenatedString) -> cst.BaseExpression:
        if id(original_node) in self.pieces:
            return updated_node
        return self._string(updated_node)

    def leave_SimpleString(self, original_node: cst.SimpleString,
                           updated_node: cst.SimpleString) -> cst.BaseExpression:
        if id(original_node) in self.pieces:
            return updated_node
        return self._string(updated_node)

    def leave_FormattedString(self, original_node: cst.FormattedString,
                              updated_node: cst.FormattedString) -> cst.BaseExpression:
        if id(original_node) in self.pieces:
            return updated_node
        return self._string(updated_node)

    def leave_FormattedStringExpression(
            self, original_node: cst.FormattedStringExpression,
            updated_node: cst.FormattedStringExpression) -> cst.FormattedStringExpression:
        spec = updated_node.format_spec
        if spec is None:
            return updated_node
        texts = [p.value if isinstance(p, cst.FormattedStringText) else None for p in spec]
        edits = [_Edit(t.part, t.start, t.end, t.old, t.new)
                 for t in string_targets(texts, self.command.moves) if t.verdict == "fix"]
        parts = self._edited_parts(spec, edits)
        return updated_node if parts is None else updated_node.with_changes(format_spec=parts)

    def _string(self, node: _String) -> cst.BaseExpression:
        """Returns a whole string (a literal, an f-string or a concatenation of them) with
        each target the scan calls fixable rewritten: in --compat, a runtime target names
        the module found at import time; type expressions and values are plain text."""
        code = _EMPTY.code_for_node(node.with_changes(lpar=(), rpar=()))
        role = self.roles[-1]
        if role == "type" and isinstance(node, cst.SimpleString):
            return self._type_string(node, code)
        if not any(top in code for top in self.command.tops):
            return node
        parts = _string_parts(code)
        if parts is None:
            return node
        targets = string_targets(parts, self.command.moves, code)
        edits = [_Edit(-1, t.at, t.at + len(t.old), t.old, t.new)
                 for t in targets if t.verdict == "fix" and t.at >= 0]
        if not edits:
            return node
        field = self._compat() and role == "runtime"
        return _rebuilt(node, {id(piece): new for piece, new in self._pieces_edited(
            node, edits, field=field)})

    def _type_string(self, node: cst.SimpleString, code: str) -> cst.BaseExpression:
        """Returns a type-expression string rewritten plainly: ``m.X`` through a module
        alias and ``old.X`` through ``import old`` become what the rewrite binds."""
        parts = _string_parts(code) if any(top in code for top in self.command.tops) else []
        if parts is None or any(t.verdict != "fix" for t in string_targets(
                parts, self.command.moves, code)) or "b" in node.prefix.lower():
            return node
        value, quote, prefix = node.value, node.quote, node.prefix
        body = value[len(prefix) + len(quote):len(value) - len(quote)]
        new = rewrite_string(body, self.command.moves, self.analysis.aliases,
                             self.command.type_replacements, annotation=True)
        if new is None:
            return node
        return node.with_changes(value=value[:len(prefix) + len(quote)] + new
                                 + value[len(value) - len(quote):])

    def _pieces_edited(self, node: _String, edits: Sequence[_Edit], *, field: bool
                       ) -> Iterable[tuple[cst.CSTNode, cst.BaseExpression]]:
        """Yields (piece, rewritten piece) for each piece of ``node`` an edit falls in
        (edits are placed in the code of the whole string)."""
        for offset, piece in _piece_offsets(node):
            size = len(_EMPTY.code_for_node(piece))
            mine = [e._replace(start=e.start - offset, end=e.end - offset) for e in edits
                    if offset <= e.start and e.end <= offset + size]
            if not mine:
                continue
            if isinstance(piece, cst.SimpleString):
                yield piece, self._simple_edited(piece, mine, field=field)
                continue
            local, placed = len(piece.start), []
            for index, part in enumerate(piece.parts):
                length = len(_EMPTY.code_for_node(part))
                if isinstance(part, cst.FormattedStringText):
                    placed += [e._replace(part=index, start=e.start - local,
                                          end=e.end - local) for e in mine
                               if local <= e.start and e.end <= local + length]
                local += length
            parts = self._edited_parts(piece.parts, placed, field=field)
            if parts is not None:
                yield piece, piece.with_changes(parts=parts)

    def _simple_edited(self, piece: cst.SimpleString, edits: Sequence[_Edit], *,
                       field: bool) -> cst.BaseExpression:
        """Returns a plain literal with ``edits`` (placed in its code) applied: as an
        f-string naming the module found at import time when ``field``."""
        prefix, quote, value = piece.prefix, piece.quote, piece.value
        head = len(prefix) + len(quote)
        body = value[head:len(value) - len(quote)]
        pieces, last = [], 0
        for edit in sorted(edits, key=lambda e: e.start):
            start, end = edit.start - head, edit.end - head
            literal = body[last:start]
            if field:
                literal = _brace_escaped(literal, raw="r" in prefix.lower())
                pieces += [literal, "{" + self.command.constant_for(edit.old, edit.new) + "}"]
            else:
                pieces += [literal, edit.new]
            last = end
        tail = body[last:]
        pieces.append(_brace_escaped(tail, raw="r" in prefix.lower()) if field else tail)
        if not field:
            return piece.with_changes(value=value[:head] + "".join(pieces) + quote)
        fprefix = "f" + prefix.replace("u", "").replace("U", "")
        return cst.parse_expression(f"{fprefix}{quote}{''.join(pieces)}{quote}")

    def _edited_parts(self, parts: Sequence[cst.BaseFormattedStringContent],
                      edits: Sequence[_Edit], *, field: bool | None = None
                      ) -> list[cst.BaseFormattedStringContent] | None:
        """Returns an f-string's parts with each edit (placed in one literal part) applied;
        None if there is none."""
        if not edits:
            return None
        field = (self._compat() and self.roles[-1] == "runtime") if field is None else field
        rewritten = list(parts)
        for edit in sorted(edits, key=lambda e: (e.part, e.start), reverse=True):
            piece = rewritten[edit.part]
            if not isinstance(piece, cst.FormattedStringText):
                continue
            value = ("{" + self.command.constant_for(edit.old, edit.new) + "}" if field
                     else edit.new)
            rewritten[edit.part] = piece.with_changes(
                value=piece.value[:edit.start] + value + piece.value[edit.end:])
        return rewritten


_String = cst.SimpleString | cst.FormattedString | cst.ConcatenatedString


class _Edit(NamedTuple):
    """One old module to replace: ``start:end`` in the text of part ``part`` (or, with
    ``part == -1``, in the code of the whole string)."""

    part: int
    start: int
    end: int
    old: str
    new: str


def _concatenated(node: cst.ConcatenatedString) -> list[cst.CSTNode]:
    """Returns every node inside a concatenation that is a string of its own in libcst."""
    inner: list[cst.CSTNode] = []
    for side in (node.left, node.right):
        inner.append(side)
        if isinstance(side, cst.ConcatenatedString):
            inner += _concatenated(side)
    return inner


def _piece_offsets(node: _String, offset: int = 0
                   ) -> list[tuple[int, cst.SimpleString | cst.FormattedString]]:
    """Returns each literal piece of a string with where its code starts in the string's."""
    if not isinstance(node, cst.ConcatenatedString):
        return [(offset, node)]
    left = _EMPTY.code_for_node(node.left)
    between = _EMPTY.code_for_node(node.whitespace_between)
    return [*_piece_offsets(node.left, offset),
            *_piece_offsets(node.right, offset + len(left) + len(between))]


def _rebuilt(node: cst.BaseExpression, new: dict[int, cst.BaseExpression]) -> cst.BaseExpression:
    """Returns ``node`` with each of its pieces in ``new`` replaced."""
    if id(node) in new:
        return new[id(node)]
    if isinstance(node, cst.ConcatenatedString):
        left, right = _rebuilt(node.left, new), _rebuilt(node.right, new)
        assert isinstance(left, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))
        assert isinstance(right, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))
        return node.with_changes(left=left, right=right)
    return node


def _string_parts(code: str) -> list[str | None] | None:
    """Returns the literal parts of the string ``code`` spells (None for each replacement
    field), decoded as the scan reads them; None for bytes."""
    try:
        tree = ast.parse(f"(\n{code}\n)", mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    if isinstance(tree, ast.Constant):
        return [tree.value] if isinstance(tree.value, str) else None
    if isinstance(tree, ast.JoinedStr):
        return [v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                for v in tree.values]
    return None


_BRACES = re.compile(r"(\\\\)|(\\N\{[^{}]*\})|([{}])")


def _brace_escaped(text: str, *, raw: bool) -> str:
    """Returns literal text for an f-string: each brace doubled, except those of a
    ``\\N{NAME}`` escape (in a string that is not raw, where escapes are escapes)."""
    if raw:
        return text.replace("{", "{{").replace("}", "}}")
    return _BRACES.sub(lambda m: m.group(0) * 2 if m.group(3) else m.group(0), text)


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


def _finish(result: object, text: str, moves: MoveTable, package: str | None,
            path: str) -> MigrationResult:
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

