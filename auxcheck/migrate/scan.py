"""The AUX501/AUX502 scanner: finds every remaining use of a moved name's old module.

It reads bytes first and parses only files that contain an old module's name (the
cheap prefilter), and it parses with :mod:`ast`, so ``auxcheck migrate --check`` and
``pytest --auxcheck`` never import libcst. :func:`analyze` also records what the
rewrite needs (module aliases, star imports, names already imported from the new
modules), so the libcst transform makes a single pass.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, NamedTuple

from auxcheck._astutil import catches_import_error as _catches_import_error
from auxcheck._astutil import dotted_name as _dotted_name
from auxcheck.migrate._files import (
    UndecodableFile,
    iter_python_files,
    module_name_of,
    read_source,
)
from auxcheck.migrate._moves import MoveTable, builtin_moves

if TYPE_CHECKING:
    from auxcheck.report import Finding, Report

__all__ = [
    "Analysis",
    "Use",
    "alias_spans",
    "analyze",
    "fstring_targets",
    "is_defining_module",
    "moved_names",
    "package_of",
    "resolve_relative",
    "rewrite_string",
    "scan_paths",
    "scan_source",
    "target_spans",
]

_TYPE_EXPRESSION = re.compile(r"[\w\s.,\[\]|]+")


class Use(NamedTuple):
    """One remaining use of an old module: its rule code, 1-based position and message."""

    code: str
    line: int
    col: int
    seen: str
    expected: str

    def finding(self, path: str) -> Finding:
        """Returns this use as a Finding located at ``path:line:col``."""
        from auxcheck.report import Finding

        return Finding.of(self.code, self.seen, self.expected, location=f"{path}:{self.line}:"
                          f"{self.col}")


class Analysis:
    """What one file does with old modules: the uses found and what a rewrite needs.

    A plain slotted class (no dataclass): ``--check`` on a file that names an old module
    imports this module, and :mod:`dataclasses` costs more than the scan of one file.
    """

    __slots__ = ("alias_other_uses", "aliases", "all_names", "deep", "dotted",
                 "explicit_aliases", "new_bound", "other_bound", "owner_moved",
                 "star_modules", "type_checking", "used_names", "uses")

    def __init__(self) -> None:
        self.uses: list[Use] = []
        self.aliases: dict[str, str] = {}
        """Names bound to an old module (``import old as m``, ``from pkg import old``) -> old."""
        self.dotted: set[str] = set()
        """Old modules imported by their dotted name (``import old``)."""
        self.owner_moved: dict[str, set[str]] = {}
        """Alias or dotted old module -> the moved names used through it (``m.X``, ``"m.X"``)."""
        self.alias_other_uses: set[str] = set()
        self.explicit_aliases: set[str] = set()
        """Aliases the user chose with ``as`` (``import old as m``): a rewrite may keep them."""
        self.type_checking: str | None = None
        """How the module names ``typing.TYPE_CHECKING`` at top level, if it imports it."""
        self.star_modules: set[str] = set()
        self.used_names: set[str] = set()
        self.new_bound: set[tuple[str, str]] = set()
        """(new module, name) pairs the file already imports."""
        self.all_names: set[str] = set()
        self.other_bound: set[str] = set()
        """Names bound by anything but an old-module alias or a plain import of a new module."""
        self.deep = False
        """True when work lies beyond top-level import statements (attributes, strings, nesting)."""

    @property
    def alias_moved_uses(self) -> set[str]:
        """Returns the aliases and dotted old modules some moved name is used through."""
        return set(self.owner_moved)

    @property
    def fixable(self) -> bool:
        """Returns True when some use is AUX501, so a rewrite has work to do."""
        return any(use.code == "AUX501" for use in self.uses)


def package_of(module: str | None, *, is_package: bool) -> str | None:
    """Returns the package relative imports resolve against in ``module``."""
    if module is None:
        return None
    return module if is_package else module.rpartition(".")[0] or None


def resolve_relative(level: int, module: str | None, package: str | None) -> str | None:
    """Returns the absolute module ``from <level dots><module>`` names, or None if unknown."""
    if level == 0:
        return module
    if package is None:
        return None
    parts = package.split(".")
    if level - 1 >= len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, *([module] if module else [])])


def is_defining_module(module: str | None, moves: MoveTable) -> bool:
    """Returns True for a module that defines moved names (old or new); never rewritten."""
    return module is not None and (module in moves.old_modules or module in moves.new_modules)


_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_]\w*)?")
"""A dotted name, optionally ``module:attribute`` (SGLang hook targets): a candidate target."""


@lru_cache(maxsize=16)
def _tops(moves: MoveTable) -> tuple[str, ...]:
    return tuple(sorted({old.partition(".")[0] for old in moves.old_modules}))


def target_spans(text: str, moves: MoveTable) -> list[tuple[int, int, str, str]]:
    """Returns ``(start, end, old, new)`` for each old module named in a dotted target.

    A target is ``"old.X"`` or ``"old:X"`` (``mock.patch`` and SGLang hook-registry
    targets) for a name ``X`` that left ``old``; ``start:end`` spans the ``old`` part,
    so ``"old.X.method"`` keeps ``.X.method``. The longest old module wins.
    """
    return [(start, end, old, new) for start, end, old, new, _ in _target_tokens(text, moves)]


def _target_tokens(text: str, moves: MoveTable) -> list[tuple[int, int, str, str, int]]:
    """Returns target_spans with, last, where the whole dotted token ends."""
    if not any(top in text for top in _tops(moves)):
        return []  # the cheap test: most strings name no old module's package at all
    moved = moved_names(moves)
    spans = []
    for match in _DOTTED.finditer(text):
        token = match.group()
        module, colon, attribute = token.partition(":")
        parts = module.split(".")
        if colon:
            found = [(len(parts), attribute)] if attribute in moved.get(module, {}) else []
        else:
            found = [(k, parts[k]) for k in range(len(parts) - 1, 0, -1)
                     if parts[k] in moved.get(".".join(parts[:k]), {})][:1]
        for k, name in found:
            old = ".".join(parts[:k])
            spans.append((match.start(), match.start() + len(old), old, moved[old][name],
                          match.end()))
    return spans


def _target_names(text: str, moves: MoveTable) -> list[tuple[str, str]]:
    """Returns ``(old, moved name)`` for each dotted target in ``text``."""
    names = []
    for start, end, old, _, token_end in _target_tokens(text, moves):
        rest = text[end + 1:token_end]
        names.append((old, re.split(r"[.:]", rest, maxsplit=1)[0]))
    return names


def alias_spans(text: str, moves: MoveTable,
                aliases: Mapping[str, str]) -> list[tuple[int, int, str, str, str]]:
    """Returns ``(start, end, owner, name, new)`` for each ``owner.name`` in a type expression.

    Only strings that are whole type expressions (string annotations such as
    ``"m.CommittedTokens | None"``) are read, for a module alias ``owner`` of an old
    module and a ``name`` that left it; ``start:end`` spans ``owner``.
    """
    if not aliases or not _TYPE_EXPRESSION.fullmatch(text):
        return []
    moved = moved_names(moves)
    spans = []
    for match in _DOTTED.finditer(text):
        owner, _, name = match.group().rpartition(".")
        old = aliases.get(owner)
        new = moved.get(old, {}).get(name) if old is not None else None
        if new is not None:
            spans.append((match.start(), match.start() + len(owner), owner, name, new))
    return spans


def rewrite_string(text: str, moves: MoveTable, aliases: Mapping[str, str] | None = None,
                   replacements: Mapping[tuple[str, str], str] | None = None,
                   module_text: Callable[[str, str], str] | None = None, *,
                   annotation: bool = False) -> str | None:
    """Returns ``text`` with dotted targets of moved names pointed at their new module.

    ``"old.X"`` and ``"old:X"`` become ``"new.X"`` / ``"new:X"`` anywhere (or
    ``module_text(old, new)`` in place of ``old`` when given); ``"m.X"`` for a module
    alias ``m`` (``aliases``: alias -> old module) is rewritten only in strings that are
    whole type expressions, to ``replacements[(m, new)]`` (the alias itself when
    missing). In an ``annotation``, ``"old.X"`` becomes ``replacements[(old, new)]``
    when the file imports ``old`` by its dotted name (the name the rewrite binds).
    Returns None when nothing changes.
    """
    chosen = replacements if annotation and replacements else {}
    edits: list[tuple[int, int, str]] = [
        (start, end, chosen.get((old, new)) or (module_text(old, new) if module_text else new))
        for start, end, old, new in target_spans(text, moves)]
    for start, end, owner, _, new in alias_spans(text, moves, aliases or {}):
        if not any(s <= start < e for s, e, _ in edits):
            edits.append((start, end, (replacements or {}).get((owner, new), owner)))
    result = text
    for start, end, value in sorted(edits, reverse=True):
        result = result[:start] + value + result[end:]
    return None if result == text else result


FStringVerdict = Literal["fix", "unsafe", "dynamic"]


class FStringTarget(NamedTuple):
    """One old module named in a literal part of an f-string, and whether it may change.

    ``part`` indexes the f-string's literal parts; ``start:end`` spans ``old`` in that
    part. ``fix``: the moved name follows literally; ``unsafe``: a replacement field
    touches the dotted name (``f"{p}old.X"``, ``f"old.X{s}"``), so the name at run time
    is not the one written; ``dynamic``: the attribute itself is a field (``f"old.{n}"``).
    """

    part: int
    start: int
    end: int
    old: str
    new: str
    verdict: FStringVerdict


_DYNAMIC_TAIL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)[.:]$")


def fstring_targets(parts: Sequence[str | None], moves: MoveTable) -> list[FStringTarget]:
    """Returns every old module named in an f-string's literal parts, with its verdict.

    ``parts`` are the f-string's pieces in order: the text of each literal part, None
    for each replacement field. The scanner passes decoded texts, the rewrite the source
    texts; both see the same fields, so they agree on what may be rewritten.
    """
    found: list[FStringTarget] = []
    for i, text in enumerate(parts):
        if text is None:
            continue
        after_field = i > 0 and parts[i - 1] is None
        before_field = i + 1 < len(parts) and parts[i + 1] is None
        for start, end, old, new, token_end in _target_tokens(text, moves):
            touched = (after_field and start == 0) or (before_field and token_end == len(text))
            found.append(FStringTarget(i, start, end, old, new, "unsafe" if touched else "fix"))
        tail = _DYNAMIC_TAIL.search(text) if before_field else None
        if tail is not None and tail.group(1) in moves.old_modules and not (
                after_field and tail.start() == 0):
            found.append(FStringTarget(i, tail.start(1), tail.end(1), tail.group(1), "",
                                       "dynamic"))
    return found


@lru_cache(maxsize=16)
def moved_names(moves: MoveTable) -> dict[str, dict[str, str]]:
    """Returns {old module: {moved name: new module}}, built once per table (do not modify)."""
    return {old: moves.names_from(old) for old in moves.old_modules}



class _Scanner(ast.NodeVisitor):
    """Collects an Analysis over one module's ast."""

    def __init__(self, moves: MoveTable, package: str | None, source: str | None = None) -> None:
        self.moves = moves
        self.package = package
        self.source = source
        """The text parsed, when known: a target spelled with escapes cannot be rewritten."""
        self._lines: list[bytes] | None = None
        self.result = Analysis()
        self.depth = 0
        self.scopes = 0
        """How many function (or lambda, comprehension) scopes enclose the node visited."""
        self.local_bound: set[str] = set()
        """Names some function scope binds other than by importing an old module."""
        self.alias_imports: dict[str, ast.stmt] = {}
        self.exported: set[str] = set()
        """Names listed in ``__all__`` (a star import may be what defines them)."""
        self.strings: list[ast.Constant] = []
        self.fstrings: list[tuple[ast.JoinedStr, ast.JoinedStr]] = []
        """Each f-string (format specs included) with the outermost f-string holding it."""
        self.outer: ast.JoinedStr | None = None
        self.annotation_strings: set[int] = set()
        """ids of the strings inside annotations (parameters, returns, annotated names)."""
        self.joins: list[ast.BinOp] = []
        self.lookups: list[ast.Call] = []
        """``getattr``/``hasattr`` calls: a moved name looked up on an old module's alias."""
        self.module_constants: dict[str, str] = {}
        """Module-level names assigned an old module's dotted name (``OLD = "old"``)."""
        self.attributes: list[ast.Attribute] = []
        self.names: list[ast.Name] = []


    def segment(self, node: ast.expr) -> str | None:
        """Returns the source text of ``node`` (as :func:`ast.get_source_segment` does), the
        lines split once per file rather than once per call."""
        if self.source is None or node.end_lineno is None or node.end_col_offset is None:
            return None
        if self._lines is None:  # ast's own line ends: \r\n, \r, \n (not \f or \v)
            self._lines = [line.encode() for line in _LINE.findall(self.source)]
        first, last = node.lineno - 1, node.end_lineno - 1
        if last >= len(self._lines):
            return None
        if first == last:
            return self._lines[first][node.col_offset:node.end_col_offset].decode()
        parts = [self._lines[first][node.col_offset:], *self._lines[first + 1:last],
                 self._lines[last][:node.end_col_offset]]
        return b"".join(parts).decode()
    def _use(self, code: str, node: ast.AST, seen: str, expected: str) -> None:
        line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1
        self.result.uses.append(Use(code, line, col, seen, expected))
        if self.depth or not isinstance(node, ast.stmt):
            self.result.deep = True

    def _resolve(self, node: ast.ImportFrom) -> str | None:
        return resolve_relative(node.level, node.module, self.package)

    def _bind(self, name: str) -> None:
        self.result.all_names.add(name)
        self.result.other_bound.add(name)
        if self.scopes:
            self.local_bound.add(name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = self._resolve(node)
        for alias in node.names:
            if module is None:
                self._bind(alias.asname or alias.name)
            else:
                self._bind_from(node, module, alias)

    def _bind_from(self, node: ast.ImportFrom, module: str, alias: ast.alias) -> None:
        bound = alias.asname or alias.name
        binds_new = f"{module}.{alias.name}" in self.moves.new_modules and bound == alias.name
        if f"{module}.{alias.name}" in self.moves.old_modules:
            self.result.all_names.add(bound)
            self.alias_imports.setdefault(bound, node)
        elif binds_new:
            self.result.all_names.add(bound)
            self.result.new_bound.add((f"{module}.{alias.name}", ""))
        elif alias.name != "*":
            self._bind(bound)
        if module in self.moves.new_modules:
            self.result.new_bound.add((module, alias.name))
        if f"{module}.{alias.name}" in self.moves.old_modules:
            self.result.aliases[bound] = f"{module}.{alias.name}"
            if alias.asname:
                self.result.explicit_aliases.add(bound)
        if (module in ("typing", "typing_extensions") and alias.name == "TYPE_CHECKING"
                and not self.depth and node.level == 0):
            self.result.type_checking = bound
        if module not in self.moves.old_modules:
            return
        if alias.name == "*":
            self.result.star_modules.add(module)
            self._use("AUX502", node, f"star import from {module}",
                      "import the moved names explicitly from their new module and drop "
                      "the star import")
            return
        new = moved_names(self.moves).get(module, {}).get(alias.name)
        if new is not None:
            self._use("AUX501", node, f"{alias.name} imported from {module}",
                      f"import it from {new}, where it moved")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            bound = (alias.asname or alias.name).partition(".")[0]
            if alias.name in self.moves.old_modules and alias.asname:
                self.result.all_names.add(bound)
                self.alias_imports.setdefault(bound, node)
            else:
                self._bind(bound)
            if alias.name == "typing" and not self.depth and self.result.type_checking is None:
                self.result.type_checking = f"{alias.asname or 'typing'}.TYPE_CHECKING"
            if alias.name in self.moves.old_modules:
                if alias.asname:
                    self.result.aliases[alias.asname] = alias.name
                    self.result.explicit_aliases.add(alias.asname)
                else:
                    self.result.dotted.add(alias.name)

    def visit_Try(self, node: ast.Try) -> None:
        if self._is_compat_fallback(node):
            # A new-then-old fallback written on purpose: leave it alone, but know
            # what its first branch imports so nothing is added twice.
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and (module := self._resolve(stmt)):
                    for alias in stmt.names:
                        self._bind_from(stmt, module, alias)
                elif isinstance(stmt, ast.Import):
                    for alias in stmt.names:
                        self._bind(alias.asname or alias.name.partition(".")[0])
            return
        self._nested(node)

    visit_TryStar = visit_Try

    def _is_compat_fallback(self, node: ast.Try) -> bool:
        if not any(_catches_import_error(h) for h in node.handlers):
            return False
        for stmt in node.body:
            if isinstance(stmt, ast.ImportFrom):
                module = self._resolve(stmt)
                if module in self.moves.new_modules or any(
                    f"{module}.{a.name}" in self.moves.new_modules for a in stmt.names
                ):
                    return True
            elif isinstance(stmt, ast.Import) and any(
                    a.name in self.moves.new_modules for a in stmt.names):
                return True
        return False

    def _nested(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def _scope(self, node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._bind(node.name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._annotation(node.returns)
        is_function = not isinstance(node, ast.ClassDef)
        self.scopes += is_function
        self._nested(node)
        self.scopes -= is_function

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = _scope
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _scope

    def visit_arg(self, node: ast.arg) -> None:
        self._bind(node.arg)
        self._annotation(node.annotation)
        self.generic_visit(node)

    def _annotation(self, node: ast.expr | None) -> None:
        if node is not None:
            self.annotation_strings.update(id(n) for n in ast.walk(node)
                                           if isinstance(n, ast.Constant))

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bind(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self._bind(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._bind(node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self._bind(node.rest)
        self.generic_visit(node)
    visit_If = visit_For = visit_AsyncFor = visit_While = visit_With = _nested
    visit_AsyncWith = visit_Match = _nested

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.attributes.append(node)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        self.names.append(node)
        if not isinstance(node.ctx, ast.Load):
            self._bind(node.id)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._exports(node.targets, node.value)
        target = node.targets[0] if len(node.targets) == 1 else None
        if (not self.depth and isinstance(target, ast.Name) and isinstance(node.value, ast.Constant)
                and node.value.value in self.moves.old_modules):
            self.module_constants[target.id] = str(node.value.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._exports([node.target], node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._annotation(node.annotation)
        if node.value is not None:
            self._exports([node.target], node.value)
        self.generic_visit(node)

    def _exports(self, targets: list[ast.expr], value: ast.expr) -> None:
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and isinstance(
                value, (ast.List, ast.Tuple)):
            self.exported.update(e.value for e in value.elts
                                 if isinstance(e, ast.Constant) and isinstance(e.value, str))

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self.strings.append(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        # Its literal parts are read together (a field next to a name changes the name),
        # never as strings of their own.
        outer = self.outer or node
        self.fstrings.append((node, outer))
        self.outer = outer
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                self.visit(value)
        self.outer = None if outer is node else outer

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self.joins.append(node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2):
            self.lookups.append(node)
        target = _dotted_name(node.func)
        if target in ("importlib.import_module", "import_module", "__import__") and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and arg.value in self.moves.old_modules:
                self._use("AUX502", node, f"dynamic import of {arg.value}",
                          "import the moved names from their new module by hand")
        self.generic_visit(node)


def _shadowed_aliases(scanner: _Scanner) -> None:
    """Drops module aliases some function rebinds: their uses cannot be told apart by name."""
    result = scanner.result
    for alias in sorted(set(result.aliases) & scanner.local_bound):
        old = result.aliases.pop(alias)
        scanner._use("AUX502", scanner.alias_imports.get(alias, ast.Pass(lineno=1, col_offset=0)),
                     f"module alias {alias} of {old} is also bound to something else in a "
                     "function", "rename the alias, then run `auxcheck migrate` again")


def _attribute_uses(scanner: _Scanner) -> None:
    result, moves = scanner.result, scanner.moves
    moved_values: set[int] = set()
    for node in scanner.attributes:
        owner = _dotted_name(node.value)
        old = result.aliases.get(owner) if owner else None
        if old is None and owner in result.dotted:
            old = owner
        if old is None or owner is None:
            continue
        new = moved_names(moves)[old].get(node.attr)
        if new is None:
            result.alias_other_uses.add(owner)
            continue
        moved_values.add(id(node.value))
        result.owner_moved.setdefault(owner, set()).add(node.attr)
        scanner._use("AUX501", node, f"{owner}.{node.attr} used from {old}",
                     f"use {new}.{node.attr}, where it moved")
    for name in scanner.names:
        if name.id in result.aliases and id(name) not in moved_values:
            result.alias_other_uses.add(name.id)


def _string_uses(scanner: _Scanner) -> None:
    aliases, moves = scanner.result.aliases, scanner.moves
    for node in scanner.strings:
        assert isinstance(node.value, str)
        spans = alias_spans(node.value, moves, aliases)
        for _, _, owner, name, _ in spans:
            scanner.result.owner_moved.setdefault(owner, set()).add(name)
        if aliases and _TYPE_EXPRESSION.fullmatch(node.value):
            for match in _DOTTED.finditer(node.value):  # "m.Staying" keeps m's import
                owner, _, name = match.group().rpartition(".")
                if owner in aliases and name not in moved_names(moves).get(aliases[owner], {}):
                    scanner.result.alias_other_uses.add(owner)
        targets = _target_tokens(node.value, moves)
        if id(node) in scanner.annotation_strings and _TYPE_EXPRESSION.fullmatch(node.value):
            for old, name in _target_names(node.value, moves):  # "old.X" through `import old`
                if old in scanner.result.dotted:
                    scanner.result.owner_moved.setdefault(old, set()).add(name)
        unspelled = _unspelled(scanner, node, node.value, targets)
        if unspelled:
            scanner._use("AUX502", node, f"string {node.value!r} spells {unspelled} with "
                         "escapes, a line continuation or across implicit concatenation, "
                         "so it cannot be rewritten in place",
                         f"write {unspelled} as plain text in one string literal, then run "
                         "`auxcheck migrate` again")
        elif spans or targets:
            scanner._use("AUX501", node, f"string {node.value!r} names a moved symbol's old "
                         "module", "point it at the new module")


def _unspelled(scanner: _Scanner, node: ast.expr, text: str,
               targets: list[tuple[int, int, str, str, int]]) -> str | None:
    """Returns the first dotted target of ``text`` the source of ``node`` does not spell
    as plain text (so no rewrite of the source can reach it); None when all are plain."""
    if not targets:
        return None
    segment = scanner.segment(node)
    if segment is None:
        return None
    return next((text[start:end] for start, _, _, _, end in targets if not re.search(
        r"(?<![\w.])" + re.escape(text[start:end]) + r"(?![\w])", segment)), None)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
"""One line of source with its end, split where :mod:`ast` splits lines."""

_FIELD_TAIL = re.compile(r"[.:]([A-Za-z_]\w*)")


def _fstring_uses(scanner: _Scanner) -> None:
    moves = scanner.moves
    moved = moved_names(moves)
    for node, outer in scanner.fstrings:
        parts = [v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                 for v in node.values]
        for target in fstring_targets(parts, moves):
            text = parts[target.part] or ""
            if target.verdict == "dynamic":
                scanner._use("AUX502", node, f"f-string names an attribute of {target.old} "
                             "computed at run time, which may be a moved name",
                             "write the target with the module the name lives in now")
                continue
            token = _DOTTED.match(text, target.start)
            dotted = token.group() if token else target.old
            if target.verdict == "unsafe":
                scanner._use("AUX502", node, f"f-string joins {dotted} to a replacement field, "
                             "so the name it targets is only known at run time",
                             f"write the whole target with {target.new} by hand")
            elif _unspelled(scanner, outer, text, [(target.start, target.end, "", "",
                                                    token.end() if token else target.end)]):
                scanner._use("AUX502", node, f"f-string spells {dotted} with escapes, so it "
                             "cannot be rewritten in place",
                             f"write {dotted} as plain text, then run `auxcheck migrate` again")
            else:
                scanner._use("AUX501", node, f"f-string naming {dotted} names a moved symbol's "
                             "old module", "point it at the new module")
        for i, value in enumerate(node.values[:-1]):
            following = parts[i + 1]
            if not (isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name)
                    and following is not None):
                continue
            old = scanner.module_constants.get(value.value.id)
            tail = _FIELD_TAIL.match(following)
            if old is not None and tail is not None and tail.group(1) in moved.get(old, {}):
                scanner._use("AUX502", node, f"f-string builds {old}.{tail.group(1)} from "
                             f"{value.value.id}, the old module's name",
                             f"write {moved[old][tail.group(1)]}{following[:tail.end()]} "
                             "in the string by hand")


def _computed_uses(scanner: _Scanner) -> None:
    """Reports a moved name reached at run time through an old module: ``getattr(m, "X")``
    on an alias and ``OLD + ".X"`` on a constant holding the old module's name."""
    result, moved = scanner.result, moved_names(scanner.moves)
    for call in scanner.lookups:
        owner, name = _dotted_name(call.args[0]), call.args[1]
        old = result.aliases.get(owner or "") or (owner if owner in result.dotted else None)
        if (old is not None and isinstance(name, ast.Constant) and isinstance(name.value, str)
                and name.value in moved[old]):
            scanner._use("AUX502", call, f"{ast.unparse(call.func)}({owner}, {name.value!r}) "
                         f"looks up a moved name on {old}", f"look it up on "
                         f"{moved[old][name.value]}, where it moved (import that module by hand)")
    for join in scanner.joins:
        left, right = join.left, join.right
        old = scanner.module_constants.get(left.id) if isinstance(left, ast.Name) else None
        text = right.value if isinstance(right, ast.Constant) and isinstance(
            right.value, str) else ""
        tail = _FIELD_TAIL.match(text)
        if (isinstance(join.op, ast.Add) and old is not None and tail is not None
                and tail.group(1) in moved.get(old, {})):
            scanner._use("AUX502", join, f"{ast.unparse(join)} builds {old}.{tail.group(1)} "
                         "from the old module's name",
                         f"write \"{moved[old][tail.group(1)]}{text}\" by hand")


def _star_uses(scanner: _Scanner) -> None:
    result = scanner.result
    for name in scanner.names:
        result.all_names.add(name.id)
        if isinstance(name.ctx, ast.Load):
            result.used_names.add(name.id)
    result.used_names |= scanner.exported
    for old in sorted(result.star_modules):
        for moved, new in sorted(moved_names(scanner.moves)[old].items()):
            if moved in result.used_names and (new, moved) not in result.new_bound:
                scanner._use("AUX501", _first_star(scanner, old), f"{moved} used through "
                             f"`from {old} import *`", f"import it explicitly from {new}")


def _first_star(scanner: _Scanner, old: str) -> ast.AST:
    uses = [u for u in scanner.result.uses if u.code == "AUX502" and old in u.seen]
    line = uses[0].line if uses else 1
    node = ast.Pass(lineno=line, col_offset=(uses[0].col - 1) if uses else 0)
    return node


def analyze(tree: ast.Module, moves: MoveTable, *, package: str | None = None,
            source: str | None = None) -> Analysis:
    """Returns what ``tree`` does with old modules: AUX501/AUX502 uses and rewrite needs.

    ``source`` is the text ``tree`` was parsed from: given, a string target that its
    source spells with escapes (which no rewrite of the source reaches) is AUX502.
    """
    scanner = _Scanner(moves, package, source)
    scanner.visit(tree)
    _shadowed_aliases(scanner)
    _attribute_uses(scanner)
    _string_uses(scanner)
    _fstring_uses(scanner)
    _computed_uses(scanner)
    _star_uses(scanner)
    scanner.result.uses.sort(key=lambda u: (u.line, u.col, u.code))
    return scanner.result


def scan_source(text: str, *, moves: MoveTable | None = None, module: str | None = None,
                is_package: bool = False, path: str = "<string>") -> list[Finding]:
    """Returns the AUX501/AUX502 findings of one source text.

    Raises what :func:`ast.parse` raises on text it cannot parse: SyntaxError, or
    ValueError for a null byte on Python 3.11.
    """
    table = moves or builtin_moves()
    if is_defining_module(module, table):
        return []
    from auxcheck.migrate._files import deep_call

    tree = ast.parse(text, filename=path)  # Python's own limits decide what parses
    # what Python parsed, the analysis walks, however deep (a long flat expression nests)
    analysis = deep_call(lambda: analyze(tree, table, source=text,
                                         package=package_of(module, is_package=is_package)))
    return [use.finding(path) for use in analysis.uses]


def _scan_file(path: str, table: MoveTable, report: Report) -> None:
    """Adds the findings of the file at ``path``: its uses, or AUX504 when it is broken."""
    from auxcheck.migrate._files import (
        DEFAULT_MAX_FILE_SIZE,
        PARSE_ERRORS,
        FileTooLarge,
        broken_file_finding,
    )

    try:
        source = read_source(path, max_size=DEFAULT_MAX_FILE_SIZE)
    except (UndecodableFile, FileTooLarge) as exc:
        report.add(broken_file_finding(path, exc))
        return
    module = module_name_of(path, anchors=table.packages)
    try:
        report.extend(scan_source(source.text, moves=table, module=module, path=path,
                                  is_package=path.endswith("__init__.py")))
    except PARSE_ERRORS as exc:
        report.add(broken_file_finding(path, exc, text=source.text))


def scan_paths(paths: Sequence[str] | Iterable[str], *, moves: MoveTable | None = None,
               exclude: Sequence[str] = (), every_file: bool = False) -> Report:
    """Returns a Report of every remaining old-module use under ``paths``.

    Each finding is AUX501 (``auxcheck migrate`` can fix it), AUX502 (needs a
    human: star or dynamic imports) or AUX504 (a file that cannot be read, decoded or
    parsed), located at ``path:line:col``. Files that cannot hold a use
    (:meth:`MoveTable.could_use`) are never parsed, unless ``every_file`` (``auxcheck check`` sets it, so that every
    broken file of a plugin is reported); libcst is never imported. ``pytest
    --auxcheck`` calls this.
    """
    from auxcheck.migrate._files import DEFAULT_MAX_FILE_SIZE, Prefilter, broken_file_finding
    from auxcheck.report import Report

    table = moves or builtin_moves()
    report = Report("auxcheck migrate --check")
    could_use = Prefilter(table.needles(), table.could_use, max_size=DEFAULT_MAX_FILE_SIZE)
    for path in iter_python_files(paths, exclude=exclude):
        try:
            if every_file or could_use(path):
                _scan_file(path, table, report)
        except OSError as exc:
            report.add(broken_file_finding(path, exc))
    return report
