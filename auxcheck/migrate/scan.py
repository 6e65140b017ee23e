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

from auxcheck._core.pyast import catches_import_error as _catches_import_error
from auxcheck._core.pyast import dotted_name as _dotted_name
from auxcheck.migrate.files import (
    UndecodableFile,
    iter_python_files,
    module_name_of,
    read_source,
)
from auxcheck.migrate.moves import MoveTable, builtin_moves

if TYPE_CHECKING:
    from auxcheck.report import Finding, Report

__all__ = [
    "TYPE_FORMS",
    "Analysis",
    "StringRole",
    "StringTarget",
    "Use",
    "alias_spans",
    "analyze",
    "argument_role",
    "assigned_role",
    "is_defining_module",
    "is_new_then_old_fallback",
    "moved_names",
    "package_of",
    "resolve_relative",
    "rewrite_string",
    "scan_paths",
    "scan_source",
    "string_targets",
    "subscript_roles",
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
                 "explicit_aliases", "guarded_aliases", "module_imports", "new_bound",
                 "other_bound", "owner_moved", "star_modules", "type_checking",
                 "type_imports", "used_names", "uses")

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
        self.guarded_aliases: set[str] = set()
        """Aliases bound in the body of a ``try`` that catches ImportError: each needs a new
        name of its own, which its handlers bind to what they bind the alias to."""
        self.module_imports: set[str] = set()
        """Modules imported at module level by their dotted name (``import a.b``, no ``as``)."""
        self.type_imports: set[str] = set()
        """New modules a rewritten type-expression string names (``"new.X"``) that no
        module-level import binds: the rewrite imports them."""

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


TargetVerdict = Literal["fix", "unsafe", "dynamic", "unspelled"]


class StringTarget(NamedTuple):
    """One old module named in a literal part of a string, and whether it may change.

    ``part`` indexes the string's literal parts; ``start:end`` spans ``old`` in that part
    and ``start:stop`` the whole dotted name. ``fix``: the moved name follows literally,
    and ``at`` is where ``old`` starts in the source text (-1 when not known);
    ``unsafe``: a replacement field touches the dotted name (``f"{p}old.X"``,
    ``f"old.X{s}"``), so the name at run time is not the one written; ``dynamic``: the
    attribute itself is a field (``f"old.{n}"``); ``unspelled``: the source spells the
    name with escapes, a line continuation or across implicit concatenation, so no edit
    of the source text reaches it.
    """

    part: int
    start: int
    end: int
    stop: int
    old: str
    new: str
    verdict: TargetVerdict
    at: int = -1


_DYNAMIC_TAIL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)[.:]$")


def string_targets(parts: Sequence[str | None], moves: MoveTable,
                   source: str | None = None) -> list[StringTarget]:
    """Returns every old module named in a string's literal parts, with its verdict.

    ``parts`` are the string's pieces in order (one for a plain string): the decoded text
    of each literal part, None for each replacement field. ``source`` is the string's
    source text: a name is spelled there when each of its occurrences in the text is
    written out literally, and the k-th occurrence in the text is the k-th in the source.
    The scan and the rewrite both ask this, so they agree on what may be rewritten.
    """
    found: list[StringTarget] = []
    for i, text in enumerate(parts):
        if text is None:
            continue
        after_field = i > 0 and parts[i - 1] is None
        before_field = i + 1 < len(parts) and parts[i + 1] is None
        for start, end, old, new, stop in _target_tokens(text, moves):
            touched = (after_field and start == 0) or (before_field and stop == len(text))
            found.append(StringTarget(i, start, end, stop, old, new,
                                      "unsafe" if touched else "fix"))
        tail = _DYNAMIC_TAIL.search(text) if before_field else None
        if tail is not None and tail.group(1) in moves.old_modules and not (
                after_field and tail.start() == 0):
            found.append(StringTarget(i, tail.start(1), tail.end(1), tail.end(1),
                                      tail.group(1), "", "dynamic"))
    return found if source is None else _located(parts, found, source)


def _located(parts: Sequence[str | None], found: list[StringTarget],
             source: str) -> list[StringTarget]:
    """Returns ``found`` with each fixable target placed in ``source``, or unspelled."""
    located = []
    for target in found:
        if target.verdict != "fix":
            located.append(target)
            continue
        token = (parts[target.part] or "")[target.start:target.stop]
        word = re.compile(r"(?<![\w.])" + re.escape(token) + r"(?!\w|\.[A-Za-z_])")
        written = [m.start() for m in word.finditer(source)]
        before = [m.start() for i, text in enumerate(parts) if text is not None
                  for m in word.finditer(text)
                  if (i, m.start()) < (target.part, target.start)]
        every = sum(len(word.findall(text)) for text in parts if text is not None)
        if len(written) != every:
            located.append(target._replace(verdict="unspelled"))
        else:
            located.append(target._replace(at=written[len(before)]))
    return located


@lru_cache(maxsize=16)
def moved_names(moves: MoveTable) -> dict[str, dict[str, str]]:
    """Returns {old module: {moved name: new module}}, built once per table (do not modify)."""
    return {old: moves.names_from(old) for old in moves.old_modules}


def is_new_then_old_fallback(catches_import_error: bool, imported: Iterable[str],
                             moves: MoveTable) -> bool:
    """Returns True for a ``try`` the user wrote to import from new modules and fall back
    to old ones: it catches ImportError and a statement of its body imports from a new
    module. ``imported`` holds each module the body's import statements name and, for
    ``from m import n``, each ``m.n``. The scan and the rewrite both ask this: its
    handlers are left as written, and the rest of the ``try`` is migrated."""
    return catches_import_error and any(name in moves.new_modules for name in imported)


StringRole = Literal["runtime", "type", "value"]
"""How a string literal is read. ``runtime``: text code passes around (``mock.patch``
targets, hook paths); in --compat a target names the module found at import time.
``type``: a type expression (annotations, ``cast``, typing forms); ``m.X`` through a module
alias is rewritten and the module it names must be imported. ``value``: a literal compared
or stored as written (a ``case`` pattern, ``Literal[...]``, ``Annotated`` metadata, a
docstring); rewritten as plain text, never turned into an f-string."""

TYPE_FORMS = frozenset({
    "AbstractSet", "Annotated", "AsyncGenerator", "AsyncIterable", "AsyncIterator",
    "Awaitable", "Callable", "ClassVar", "Collection", "Container", "Coroutine",
    "DefaultDict", "Deque", "Dict", "Final", "FrozenSet", "Generator", "Iterable", "Iterator",
    "List", "Mapping", "MutableMapping", "MutableSequence", "MutableSet", "NotRequired",
    "Optional", "ReadOnly", "Required", "Sequence", "Set", "Tuple", "Type", "TypeGuard",
    "TypeIs", "Union", "Unpack", "dict", "frozenset", "list", "set", "tuple", "type"})
"""Subscripted forms whose arguments are type expressions even outside an annotation
(``Y = Optional["m.X"]``)."""

_TYPE_ARGUMENTS = {("cast", 0), ("NewType", 1), ("assert_type", 1), ("TypeVar", "bound"),
                   ("TypeVar", "default")}


def subscript_roles(base: str | None, count: int, role: StringRole) -> list[StringRole]:
    """Returns the role of each of the ``count`` elements of ``base[...]`` read in ``role``
    (``base`` is the subscripted name's last part): a typing form's arguments are type
    expressions, ``Literal``'s are values and so is ``Annotated``'s metadata."""
    if base == "Literal" or role == "value":
        return ["value"] * count
    if role != "type" and base not in TYPE_FORMS:
        return [role] * count
    if base == "Annotated":
        metadata: list[StringRole] = ["value"] * (count - 1)
        return ["type", *metadata]
    return ["type"] * count


def argument_role(function: str | None, position: int | str) -> StringRole | None:
    """Returns ``type`` for an argument a call reads as a type expression (``cast(T, x)``,
    ``TypeVar("T", bound=T)``), given the called name's last part and the argument's
    index or keyword; None for any other argument (it keeps the role around it)."""
    return "type" if (function, position) in _TYPE_ARGUMENTS else None


def assigned_role(annotation: str | None) -> StringRole | None:
    """Returns ``type`` for the value of ``X: TypeAlias = ...`` (``annotation`` is the
    annotation's last name); None otherwise."""
    return "type" if annotation == "TypeAlias" else None


class _Frame:
    """The names one function-like scope binds, and those it declares global or nonlocal."""

    __slots__ = ("bound", "declared")

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.declared: set[str] = set()

    def binds(self, name: str) -> bool:
        """Returns True when ``name`` is local to this scope."""
        return name in self.bound and name not in self.declared


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
        self.frames: tuple[_Frame, ...] = ()
        """The function (or lambda, comprehension) scopes enclosing the node visited."""
        self.local_bound: set[str] = set()
        """Names some function scope binds other than by importing an old module."""
        self.shadowing: set[str] = set()
        """Names bound, other than by importing a module, in a function or at module or
        class level outside an ImportError handler: a module alias or the top package of
        a dotted old module bound so may stand for something else where it is used."""
        self.handlers = 0
        """How many ImportError handlers enclose the node visited."""
        self.guarded = 0
        """How many bodies of a ``try`` catching ImportError enclose the node visited."""
        self.packages: dict[str, str] = {}
        """Names bound to a package above an old module (``from sglang.srt import sampling``)."""
        self.shadowed_dotted: set[str] = set()
        """Old modules imported by dotted name whose top package is bound to something else."""
        self.alias_imports: dict[str, ast.stmt] = {}
        self.exported: set[str] = set()
        """Names listed in ``__all__`` (a star import may be what defines them)."""
        self.roles: list[StringRole] = ["runtime"]
        self.marks: dict[int, StringRole] = {}
        """ids of nodes not yet visited that change the role of the strings under them."""
        self.strings: list[tuple[ast.Constant, StringRole]] = []
        self.fstrings: list[tuple[ast.JoinedStr, ast.JoinedStr]] = []
        """Each f-string (format specs included) with the outermost f-string holding it."""
        self.outer: ast.JoinedStr | None = None
        self.joins: list[ast.BinOp] = []
        self.formats: list[ast.Call] = []
        """``"...".format(...)`` calls: a target may be built from an old module's name."""
        self.lookups: list[ast.Call] = []
        """Calls passing a string second (``getattr(m, "X")``, ``mock.patch.object(m, "X")``)."""
        self.module_constants: dict[str, str] = {}
        """Module-level names assigned an old module's dotted name (``OLD = "old"``)."""
        self.attributes: list[ast.Attribute] = []
        self.names: list[ast.Name] = []
        self.loads: list[tuple[str, tuple[_Frame, ...]]] = []
        """Each name read, with the function scopes around it (to tell locals from globals)."""

    def visit(self, node: ast.AST) -> None:
        """Visits ``node`` in the string role marked for it, if any (no extra stack frame:
        a deep tree is walked as deep as before)."""
        role = self.marks.pop(id(node), None) if self.marks else None
        if role is not None:
            self.roles.append(role)
        getattr(self, "visit_" + node.__class__.__name__, self.generic_visit)(node)
        if role is not None:
            self.roles.pop()

    def _mark(self, node: ast.AST | None, role: StringRole | None) -> None:
        if node is not None and role is not None and role != self.roles[-1]:
            self.marks[id(node)] = role

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

    def _bind(self, name: str, *, shadows: bool = True) -> None:
        """Records a binding of ``name``; ``shadows``: False for a binding that cannot stand
        for something else where a module is used (``import name[.sub]`` binds the package
        itself, ``name = None`` a placeholder)."""
        self.result.all_names.add(name)
        self.result.other_bound.add(name)
        if self.frames:
            self.frames[-1].bound.add(name)
            self.local_bound.add(name)
        if (self.frames or not self.handlers) and shadows:
            self.shadowing.add(name)

    def _package(self, bound: str, full: str) -> None:
        if any(old.startswith(full + ".") for old in self.moves.old_modules):
            self.packages[bound] = full

    # -- imports ----------------------------------------------------------------------

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = self._resolve(node)
        for alias in node.names:
            if module is None:
                self._bind(alias.asname or alias.name)
            else:
                self._bind_from(node, module, alias)

    def _bind_from(self, node: ast.ImportFrom, module: str, alias: ast.alias) -> None:
        bound = alias.asname or alias.name
        full = f"{module}.{alias.name}"
        binds_new = full in self.moves.new_modules and bound == alias.name
        if full in self.moves.old_modules:
            self.result.all_names.add(bound)
            self.alias_imports.setdefault(bound, node)
        elif binds_new:
            self.result.all_names.add(bound)
            self.result.new_bound.add((full, ""))
        elif alias.name != "*":
            self._bind(bound)
            self._package(bound, full)
        if module in self.moves.new_modules:
            self.result.new_bound.add((module, alias.name))
        if full in self.moves.old_modules:
            self._alias(bound, full, explicit=alias.asname is not None)
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

    def _alias(self, bound: str, old: str, *, explicit: bool) -> None:
        self.result.aliases[bound] = old
        if explicit:
            self.result.explicit_aliases.add(bound)
        if self.guarded:
            self.result.guarded_aliases.add(bound)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            bound = (alias.asname or alias.name).partition(".")[0]
            if alias.name in self.moves.old_modules and alias.asname:
                self.result.all_names.add(bound)
                self.alias_imports.setdefault(bound, node)
            else:
                self._bind(bound, shadows=alias.asname is not None)
                self._package(bound, alias.name if alias.asname else bound)
            if alias.name == "typing" and not self.depth and self.result.type_checking is None:
                self.result.type_checking = f"{alias.asname or 'typing'}.TYPE_CHECKING"
            if alias.asname is None and not self.frames:
                self.result.module_imports.add(alias.name)
            if alias.name in self.moves.old_modules:
                if alias.asname:
                    self._alias(alias.asname, alias.name, explicit=True)
                else:
                    self.result.dotted.add(alias.name)
                    self.alias_imports.setdefault(alias.name, node)

    # -- blocks and scopes ------------------------------------------------------------

    def visit_Try(self, node: ast.Try) -> None:
        catches = any(_catches_import_error(h) for h in node.handlers)
        fallback = is_new_then_old_fallback(catches, self._imported(node.body), self.moves)
        self.depth += 1
        self.guarded += catches
        for stmt in node.body:
            self.visit(stmt)
        self.guarded -= catches
        for handler in node.handlers:
            if fallback:  # the user's own fallback: only what it binds counts
                self._bind_quietly(handler)
            else:
                self.visit(handler)
        for stmt in [*node.orelse, *node.finalbody]:
            self.visit(stmt)
        self.depth -= 1

    visit_TryStar = visit_Try

    def _imported(self, body: list[ast.stmt]) -> Iterable[str]:
        for stmt in body:
            if isinstance(stmt, ast.Import):
                yield from (alias.name for alias in stmt.names)
            elif isinstance(stmt, ast.ImportFrom) and (module := self._resolve(stmt)):
                yield module
                yield from (f"{module}.{alias.name}" for alias in stmt.names)

    def _bind_quietly(self, handler: ast.ExceptHandler) -> None:
        """Records the names a handler binds, reporting nothing of what it does."""
        self.handlers += 1
        for node in ast.walk(handler):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self._bind((alias.asname or alias.name).partition(".")[0],
                               shadows=alias.asname is not None)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name != "*":
                        self._bind(alias.asname or alias.name)
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                self._bind(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                   ast.ExceptHandler)) and node.name:
                self._bind(node.name)
        self.handlers -= 1

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bind(node.name)
        catches = _catches_import_error(node)
        self.handlers += catches
        self.generic_visit(node)
        self.handlers -= catches

    def _nested(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def _enter(self) -> None:
        self.frames = (*self.frames, _Frame())

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        self.depth += 1
        # Decorators and defaults run in the enclosing scope, before the function exists.
        for outer in [*getattr(node, "decorator_list", ()), *args.defaults,
                      *(d for d in args.kw_defaults if d is not None)]:
            self.visit(outer)
        if not isinstance(node, ast.Lambda):
            self._bind(node.name)
            self._mark(node.returns, "type")
        self._enter()
        for arg in [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []),
                    *args.kwonlyargs, *([args.kwarg] if args.kwarg else [])]:
            self.visit(arg)
        for child in [*getattr(node, "type_params", ()),
                      *([node.returns] if not isinstance(node, ast.Lambda) and node.returns
                        else []),
                      *(node.body if isinstance(node.body, list) else [node.body])]:
            self.visit(child)
        self.frames = self.frames[:-1]
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bind(node.name)
        self._nested(node)

    def _comprehension(self, node: ast.AST) -> None:
        self._enter()
        self._nested(node)
        self.frames = self.frames[:-1]

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        if self.frames:
            self.frames[-1].declared.update(node.names)

    visit_Nonlocal = visit_Global

    def visit_arg(self, node: ast.arg) -> None:
        self._bind(node.arg)
        self._mark(node.annotation, "type")
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

    # -- expressions ------------------------------------------------------------------

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.attributes.append(node)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        self.names.append(node)
        if isinstance(node.ctx, ast.Load):
            self.loads.append((node.id, self.frames))
        else:
            self._bind(node.id)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        roles = subscript_roles(_last_name(node.value), len(elements), self.roles[-1])
        for element, role in zip(elements, roles):
            self._mark(element, role)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        names = [t for t in node.targets if isinstance(t, ast.Name)]
        if isinstance(node.value, ast.Constant) and node.value.value is None and len(
                names) == len(node.targets):
            for name in names:  # `so = None`: a placeholder, not another module
                self.names.append(name)
                self._bind(name.id, shadows=False)
            return
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
        self._mark(node.annotation, "type")
        self._mark(node.value, assigned_role(_last_name(node.annotation)))
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
            self.strings.append((node, self.roles[-1]))

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
        target = _dotted_name(node.func)
        function = _last_name(node.func)
        for i, arg in enumerate(node.args):
            self._mark(arg, argument_role(function, i))
        for keyword in node.keywords:
            self._mark(keyword.value, argument_role(function, keyword.arg or ""))
        if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(
                node.args[1].value, str):
            self.lookups.append(node)
        if function == "format" and isinstance(node.func, ast.Attribute) and isinstance(
                node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
            self.formats.append(node)
        if target in ("importlib.import_module", "import_module", "__import__"):
            named = [k.value for k in node.keywords if k.arg == "name"]
            first = node.args[0] if node.args else next(iter(named), None)
            module = first.value if isinstance(first, ast.Constant) else (
                self.module_constants.get(first.id) if isinstance(first, ast.Name) else None)
            if module in self.moves.old_modules:
                self._use("AUX502", node, f"dynamic import of {module}",
                          "import the moved names from their new module by hand")
        self.generic_visit(node)


def _last_name(node: ast.expr | None) -> str | None:
    """Returns the last part of a name or attribute chain (``typing.cast`` -> ``cast``)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _shadowed_aliases(scanner: _Scanner) -> None:
    """Drops module aliases, and dotted old modules whose top package, that something else
    binds too (a parameter, a loop or ``with`` target, a class attribute): their uses
    cannot be told apart by name, so each is AUX502 and left as it is."""
    result = scanner.result
    for alias in sorted(set(result.aliases) & (scanner.local_bound | scanner.shadowing)):
        old = result.aliases.pop(alias)
        where = "in a function" if alias in scanner.local_bound else "in this module"
        scanner._use("AUX502", scanner.alias_imports.get(alias, ast.Pass(lineno=1, col_offset=0)),
                     f"module alias {alias} of {old} is also bound to something else {where}",
                     "rename the alias, then run `auxcheck migrate` again")
    for old in sorted(result.dotted):
        top = old.partition(".")[0]
        if top in scanner.shadowing:
            result.dotted.discard(old)
            result.module_imports.discard(old)
            scanner.shadowed_dotted.add(old)
            scanner._use("AUX502", scanner.alias_imports.get(old, ast.Pass(lineno=1, col_offset=0)),
                         f"{top}, the top package of {old}, is also bound to something else",
                         f"rename the other {top}, then run `auxcheck migrate` again")


def _attribute_uses(scanner: _Scanner) -> None:
    result, moves = scanner.result, scanner.moves
    moved_values: set[int] = set()
    for node in scanner.attributes:
        owner = _dotted_name(node.value)
        old = result.aliases.get(owner) if owner else None
        if old is None and owner in result.dotted:
            old = owner
        if old is None or owner is None:
            _indirect_use(scanner, node, owner)
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


def _indirect_use(scanner: _Scanner, node: ast.Attribute, owner: str | None) -> None:
    """Reports ``X`` reached on an old module that no import of it names: through a
    package above it (``sampling.sampling_observer.X``) or ``sys.modules["old"].X``."""
    old, how = None, ""
    if owner is not None:
        top, dot, rest = owner.partition(".")
        full = scanner.packages.get(top, "") + dot + rest
        if full in scanner.moves.old_modules and owner not in scanner.shadowed_dotted:
            old, how = full, f"through {owner}"
    elif isinstance(node.value, ast.Subscript) and _dotted_name(node.value.value) in (
            "sys.modules", "modules"):
        key = node.value.slice
        name = key.value if isinstance(key, ast.Constant) else scanner.module_constants.get(
            key.id) if isinstance(key, ast.Name) else None
        if name in scanner.moves.old_modules:
            old, how = str(name), "through sys.modules"
    new = moved_names(scanner.moves).get(old or "", {}).get(node.attr)
    if old is not None and new is not None:
        scanner._use("AUX502", node, f"{old}.{node.attr} reached {how}",
                     f"import {node.attr} from {new}, where it moved, by hand")


def _string_uses(scanner: _Scanner) -> None:
    for node, role in scanner.strings:
        assert isinstance(node.value, str)
        typed = role == "type" and _TYPE_EXPRESSION.fullmatch(node.value) is not None
        spans = _type_uses(scanner, node.value) if typed else []
        targets = string_targets([node.value], scanner.moves, scanner.segment(node))
        unspelled = [t for t in targets if t.verdict == "unspelled"]
        if unspelled:
            name = node.value[unspelled[0].start:unspelled[0].stop]
            scanner._use("AUX502", node, f"string {node.value!r} spells {name} with "
                         "escapes, a line continuation or across implicit concatenation, "
                         "so it cannot be rewritten in place",
                         f"write {name} as plain text in one string literal, then run "
                         "`auxcheck migrate` again")
        if spans or len(unspelled) < len(targets):
            scanner._use("AUX501", node, f"string {node.value!r} names a moved symbol's old "
                         "module", "point it at the new module")


def _type_uses(scanner: _Scanner, text: str) -> list[tuple[int, int, str, str, str]]:
    """Records what a type-expression string needs (``"m.X"`` through an alias, ``"old.X"``
    through a module-level ``import old`` or an import to add); returns its alias spans."""
    result, moved = scanner.result, moved_names(scanner.moves)
    spans = alias_spans(text, scanner.moves, result.aliases)
    for _, _, owner, name, _ in spans:
        result.owner_moved.setdefault(owner, set()).add(name)
    for match in _DOTTED.finditer(text):  # "m.Staying" and "old.Staying" keep m's import
        owner, _, name = match.group().rpartition(".")
        old = result.aliases.get(owner) or (owner if owner in _imported_old(result) else None)
        if old is not None and name not in moved[old]:
            result.alias_other_uses.add(owner)
    for old, name in _target_names(text, scanner.moves):
        if old in _imported_old(result):
            result.owner_moved.setdefault(old, set()).add(name)
        elif moved[old][name] not in result.module_imports:
            result.type_imports.add(moved[old][name])
    return spans


def _imported_old(result: Analysis) -> set[str]:
    """Returns the old modules the file imports by dotted name at module level."""
    return result.dotted & result.module_imports


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
"""One line of source with its end, split where :mod:`ast` splits lines."""

_FIELD_TAIL = re.compile(r"[.:]([A-Za-z_]\w*)")


def _fstring_uses(scanner: _Scanner) -> None:
    moves = scanner.moves
    moved = moved_names(moves)
    for node, outer in scanner.fstrings:
        parts = [v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                 for v in node.values]
        for target in string_targets(parts, moves, scanner.segment(outer)):
            _fstring_use(scanner, node, (parts[target.part] or ""), target)
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


def _fstring_use(scanner: _Scanner, node: ast.JoinedStr, text: str,
                 target: StringTarget) -> None:
    dotted = text[target.start:target.stop]
    if target.verdict == "dynamic":
        scanner._use("AUX502", node, f"f-string names an attribute of {target.old} "
                     "computed at run time, which may be a moved name",
                     "write the target with the module the name lives in now")
    elif target.verdict == "unsafe":
        scanner._use("AUX502", node, f"f-string joins {dotted} to a replacement field, "
                     "so the name it targets is only known at run time",
                     f"write the whole target with {target.new} by hand")
    elif target.verdict == "unspelled":
        scanner._use("AUX502", node, f"f-string spells {dotted} with escapes, so it "
                     "cannot be rewritten in place",
                     f"write {dotted} as plain text, then run `auxcheck migrate` again")
    else:
        scanner._use("AUX501", node, f"f-string naming {dotted} names a moved symbol's "
                     "old module", "point it at the new module")


def _computed_uses(scanner: _Scanner) -> None:
    """Reports a moved name reached at run time through an old module: looked up on an
    alias (``getattr(m, "X")``, ``mock.patch.object(m, "X")``), or a target built from the
    old module's name (``OLD + ".X"``, ``"%s.X" % OLD``, ``"{}.X".format(OLD)``)."""
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
        if isinstance(join.op, ast.Add):
            _joined_use(scanner, join)
        elif isinstance(join.op, ast.Mod) and isinstance(join.left, ast.Constant):
            right = join.right.elts if isinstance(join.right, ast.Tuple) else [join.right]
            _formatted_use(scanner, join, [join.left, *right])
    for call in scanner.formats:
        assert isinstance(call.func, ast.Attribute)
        _formatted_use(scanner, call, [call.func.value, *call.args,
                                       *(k.value for k in call.keywords)])


def _joined_use(scanner: _Scanner, join: ast.BinOp) -> None:
    left, right = join.left, join.right
    old = scanner.module_constants.get(left.id) if isinstance(left, ast.Name) else None
    text = right.value if isinstance(right, ast.Constant) and isinstance(
        right.value, str) else ""
    tail = _FIELD_TAIL.match(text)
    moved = moved_names(scanner.moves)
    if old is not None and tail is not None and tail.group(1) in moved.get(old, {}):
        scanner._use("AUX502", join, f"{ast.unparse(join)} builds {old}.{tail.group(1)} "
                     "from the old module's name",
                     f"write \"{moved[old][tail.group(1)]}{text}\" by hand")


def _formatted_use(scanner: _Scanner, node: ast.expr, pieces: list[ast.expr]) -> None:
    """Reports ``%`` or ``str.format`` formatting that joins an old module's name (a
    literal or a constant holding it) with one of its moved names."""
    texts = [p.value for p in pieces if isinstance(p, ast.Constant) and isinstance(p.value, str)]
    olds = [scanner.module_constants.get(p.id) if isinstance(p, ast.Name) else p.value
            if isinstance(p, ast.Constant) and isinstance(p.value, str) else None
            for p in pieces[1:]]
    moved = moved_names(scanner.moves)
    for old in olds:
        names = [n for n in moved.get(old or "", {})
                 if any(re.search(r"(?<!\w)" + n + r"(?!\w)", t) for t in texts)]
        if old is not None and names:
            scanner._use("AUX502", node, f"{ast.unparse(node)} builds {old}.{names[0]} "
                         "from the old module's name",
                         f"write the target with {moved[old][names[0]]} by hand")
            return


def _star_uses(scanner: _Scanner) -> None:
    result = scanner.result
    for name in scanner.names:
        result.all_names.add(name.id)
    # A name read where a function binds it is that function's own, not the star's.
    result.used_names.update(name for name, frames in scanner.loads
                             if not any(frame.binds(name) for frame in frames))
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
    from auxcheck.migrate.files import deep_call, parse_as_python

    tree = parse_as_python(text, path)  # Python's own verdict, whoever asks
    # what Python parsed, the analysis walks, however deep (a long flat expression nests)
    analysis = deep_call(lambda: analyze(tree, table, source=text,
                                         package=package_of(module, is_package=is_package)))
    return [use.finding(path) for use in analysis.uses]


def _scan_file(path: str, table: MoveTable, report: Report) -> None:
    """Adds the findings of the file at ``path``: its uses, or AUX504 when it is broken."""
    from auxcheck.migrate.files import (
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
    from auxcheck.migrate.files import DEFAULT_MAX_FILE_SIZE, Prefilter, broken_file_finding
    from auxcheck.report import Report

    table = moves or builtin_moves()
    report = Report("auxcheck migrate --check")
    could_use = Prefilter(table.needles(), table.could_use, max_size=DEFAULT_MAX_FILE_SIZE)
    for path in iter_python_files(paths, exclude=exclude):
        try:
            if every_file or could_use(path):
                _scan_file(path, table, report)
        except (OSError, UndecodableFile) as exc:  # a FIFO named *.py among them
            report.add(broken_file_finding(path, exc))
    return report
