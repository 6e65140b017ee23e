"""The ast visitor that collects, in one walk of a module, what the passes turn into uses."""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Iterable

from auxcheck._core.pyast import catches_import_error as _catches_import_error
from auxcheck._core.pyast import dotted_name as _dotted_name
from auxcheck.migrate.moves import MoveTable
from auxcheck.migrate.scan.analysis import (
    Analysis,
    Use,
    is_new_then_old_fallback,
    moved_from,
    moved_names,
    resolve_relative,
)
from auxcheck.migrate.scan.strings import StringRole, argument_role, assigned_role, subscript_roles

__all__ = ["Scanner"]

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
"""One line of source with its end, split where :mod:`ast` splits lines."""


class _Frame:
    """The names one function-like scope binds, and those it declares global or nonlocal."""

    __slots__ = ("bound", "declared")

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.declared: set[str] = set()

    def binds(self, name: str) -> bool:
        """Returns True when ``name`` is local to this scope."""
        return name in self.bound and name not in self.declared


class _Scope:
    """A def or class body an import may bind an old module's alias in: its number (the
    def or class's place in the module, pre-order, from 1; the module is 0), and the names
    it declares global or nonlocal (which it never binds).

    A class body's own code reads a name it has bound from the class, other code never:
    ``bound`` holds the names its statements done so far bind (``pending``, those of the
    statement being walked).
    """

    __slots__ = ("bound", "declared", "index", "is_class", "pending")

    def __init__(self, index: int, *, is_class: bool, declared: set[str]) -> None:
        self.index = index
        self.is_class = is_class
        self.declared = declared
        self.bound: set[str] = set()
        self.pending: set[str] = set()


Scopes = tuple[_Scope, ...]
"""The def and class bodies enclosing a node, outermost first."""


class Scanner(ast.NodeVisitor):
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
        self.scopes: Scopes = ()
        """The def and class bodies enclosing the node visited (where an alias is bound)."""
        self.class_body: _Scope | None = None
        """The class body whose own code the node visited is (not a def, a lambda or a
        comprehension inside it, which never read the class's names)."""
        self.defined = 0
        """How many defs and classes the walk has come to (each body's number)."""
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
        self.declared_bindings: set[str] = set()
        """Aliases and dotted old modules a function imports under ``global`` or
        ``nonlocal``: what the rewrite binds there would be the function's own name."""
        self.exported: set[str] = set()
        """Names listed in ``__all__`` (a star import may be what defines them)."""
        self.roles: list[StringRole] = ["runtime"]
        self.marks: dict[int, StringRole] = {}
        """ids of nodes not yet visited that change the role of the strings under them."""
        self.strings: list[tuple[ast.Constant, StringRole, Scopes]] = []
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
        self.marks_names: list[int] = [0]
        self.marks_attributes: list[int] = [0]
        self.marks_scopes: list[Scopes] = [()]
        """Where the enclosing bodies change: from ``names[marks_names[k]]`` and
        ``attributes[marks_attributes[k]]`` on, ``marks_scopes[k]`` (no tuple per name)."""
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

    def flag(self, code: str, node: ast.AST, seen: str, expected: str, *, old: str = "") -> None:
        line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1
        self.result.uses.append(Use(code, line, col, seen, expected, old))
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
        if self.class_body is not None:
            self.class_body.pending.add(name)
        if self.frames:
            self.frames[-1].bound.add(name)
            self.local_bound.add(name)
        if (self.frames or not self.handlers) and shadows:
            self.shadowing.add(name)

    def _package(self, bound: str, full: str) -> None:
        if self.moves.is_above_old(full):
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
            self.flag("AUX502", node, f"star import from {module}, which the moved names "
                      "left", f"the names that moved imported from their new home "
                      f"({moved_from(self.moves, module)}) and the star import dropped")
            return
        new = moved_names(self.moves).get(module, {}).get(alias.name)
        if new is not None:
            self.flag("AUX501", node, f"{alias.name} imported from {module}",
                      f"import it from {new}, where it moved", old=module)

    def _alias(self, bound: str, old: str, *, explicit: bool) -> None:
        self.result.aliases[bound] = old
        self._binding(bound, bound)
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
                    self._binding(alias.name, bound)

    def _binding(self, owner: str, bound: str) -> None:
        """Records the body an import binds ``bound`` in for ``owner`` (an alias or a
        dotted old module): the innermost def or class body around, or the module."""
        scope = self.scopes[-1] if self.scopes else None
        if scope is not None and bound in scope.declared:
            self.declared_bindings.add(owner)
        self.result.binding_scopes.setdefault(owner, set()).add(scope.index if scope else 0)

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

    def _enter(self) -> _Scope | None:
        """Enters a function-like scope; returns the class body it leaves (see _leave)."""
        self.frames = (*self.frames, _Frame())
        outer, self.class_body = self.class_body, None
        return outer

    def _leave(self, outer: _Scope | None) -> None:
        self.frames = self.frames[:-1]
        self.class_body = outer

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        self.depth += 1
        body = self._number(node)
        # Decorators and defaults run in the enclosing scope, before the function exists.
        for outer in [*getattr(node, "decorator_list", ()), *args.defaults,
                      *(d for d in args.kw_defaults if d is not None)]:
            self.visit(outer)
        if not isinstance(node, ast.Lambda):
            self._bind(node.name)
            self._mark(node.returns, "type")
        outer_class = self._enter()
        for arg in [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []),
                    *args.kwonlyargs, *([args.kwarg] if args.kwarg else [])]:
            self.visit(arg)
        for child in [*getattr(node, "type_params", ()),
                      *([node.returns] if not isinstance(node, ast.Lambda) and node.returns
                        else [])]:
            self.visit(child)
        if body is not None:
            self._scoped((*self.scopes, _Scope(body, is_class=False,
                                               declared=self.frames[-1].declared)))
        for child in node.body if isinstance(node.body, list) else [node.body]:
            self.visit(child)
        if body is not None:
            self._scoped(self.scopes[:-1])
        self._leave(outer_class)
        self.depth -= 1

    def _number(self, node: ast.AST) -> int | None:
        """Returns the number of a def's or class's body (counted as libcst's walk comes to
        them, before what they hold); None for a lambda, which holds no import."""
        if isinstance(node, ast.Lambda):
            return None
        self.defined += 1
        return self.defined

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bind(node.name)
        self.depth += 1
        scope = _Scope(self._number(node) or 0, is_class=True, declared=set())
        outer_class = self.class_body
        for field, value in ast.iter_fields(node):  # in generic_visit's order
            if field == "body":
                self._scoped((*self.scopes, scope))
                self.class_body = scope
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    self.visit(child)
                    scope.bound |= scope.pending  # `X = X` reads X before binding it
                    scope.pending.clear()
            if field == "body":
                self._scoped(self.scopes[:-1])
                self.class_body = outer_class
        self.depth -= 1

    def _scoped(self, scopes: Scopes) -> None:
        self.scopes = scopes
        self.marks_names.append(len(self.names))
        self.marks_attributes.append(len(self.attributes))
        self.marks_scopes.append(scopes)

    def scopes_of(self, marks: list[int], index: int) -> Scopes:
        """Returns the bodies around the name (``marks`` is :attr:`marks_names`) or
        attribute (:attr:`marks_attributes`) at ``index`` of its list."""
        return self.marks_scopes[bisect_right(marks, index) - 1]


    def _comprehension(self, node: ast.AST) -> None:
        outer_class = self._enter()
        self._nested(node)
        self._leave(outer_class)

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
            if self.class_body is None or node.id not in self.class_body.bound:
                self.loads.append((node.id, self.frames))  # else the class's own
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
            self.strings.append((node, self.roles[-1], self.scopes))

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
                self.flag("AUX502", node, f"dynamic import of {module}, which the moved "
                          "names left", "the names that moved imported from their new home "
                          f"({moved_from(self.moves, str(module))})")
        self.generic_visit(node)


def _last_name(node: ast.expr | None) -> str | None:
    """Returns the last part of a name or attribute chain (``typing.cast`` -> ``cast``)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None
