"""The names one scope of a plugin file binds, as Python binds them, and which one a use sees.

A hook, a hook target or a hook type written as a name is only as good as the binding
Python gives that name: a parameter or a loop variable holds what the caller passes, a
name defined on both sides of an ``if`` or of a ``try``/``except ImportError`` holds
whichever branch ran, and a method body never sees the names of its class. :func:`scope_names`
lists every binding of one scope (a module, a class body, a function with its parameters);
:func:`sole_binding` says which one a later use sees, or why auxcheck cannot tell;
:class:`Scopes` looks names up as a walk of the file meets them, and reads the string (a hook
target) or the enum member (a hook type) a name always holds.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from auxcheck._core.constants import string_value
from auxcheck._core.pyast import catches_import_error, is_main_block, is_type_checking

__all__ = [
    "Binding",
    "BindingKind",
    "Frame",
    "NameSeen",
    "ScopeNames",
    "Scopes",
    "module_names",
    "scope_names",
    "seen_names",
    "sole_binding",
]

BindingKind = Literal["def", "class", "import", "assign", "parameter", "other"]


@dataclass(frozen=True, slots=True)
class Binding:
    """One statement (or parameter) binding a name in its scope."""

    name: str
    kind: BindingKind
    line: int
    end: int
    """The last line of the binding statement: a use after it sees the new binding."""
    block: int
    """Which statement list it sits in: bindings in different ones may not all run."""
    node: ast.AST
    fallback: bool = False
    """Inside a handler that catches ImportError: it runs only when an import failed."""
    value: ast.expr | None = None
    """For ``NAME = value`` (or ``NAME: T = value``), the value."""


def scope_names(body: Sequence[ast.stmt], args: ast.arguments | None = None,
                ) -> dict[str, list[Binding]]:
    """Returns every binding of the scope whose statements are ``body`` (a function's
    parameters ``args`` first), in source order, by name.

    Nested functions and classes bind their own name here, their bodies nothing; code under
    ``if TYPE_CHECKING:`` or ``if __name__ == "__main__":`` never runs on import and binds
    nothing. Names the scope declares ``global`` or ``nonlocal`` are left out.
    """
    walk = _Walk()
    if args is not None:
        for arg in (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg):
            if arg is not None:
                walk.add(arg.arg, "parameter", arg, 0)
    walk.block(body, False)
    found: dict[str, list[Binding]] = {}
    for binding in walk.found:
        if binding.name not in walk.declared:
            found.setdefault(binding.name, []).append(binding)
    return found


def module_names(tree: ast.Module) -> dict[str, list[Binding]]:
    """Returns the bindings of a module's scope, with one more for each name a function of
    it declares ``global`` (that function rebinds it whenever it runs)."""
    found = scope_names(tree.body)
    for node in _statements(tree):
        if isinstance(node, ast.Global):
            for name in node.names:
                found.setdefault(name, []).append(
                    Binding(name, "other", node.lineno, node.lineno, -1, node))
    return found


class ScopeNames:
    """The bindings of each scope of one file, read once for every walk of it (the plugin
    scan and the patch collector walk the same tree). The answers are shared: read only."""

    def __init__(self) -> None:
        self._found: dict[int, tuple[ast.AST, dict[str, list[Binding]]]] = {}

    def of(self, node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
           | ast.Lambda) -> dict[str, list[Binding]]:
        """Returns the bindings of the scope ``node`` opens (:func:`module_names` for a
        module, :func:`scope_names` for the others)."""
        found = self._found.get(id(node))
        if found is not None and found[0] is node:
            return found[1]
        if isinstance(node, ast.Module):
            names = module_names(node)
        elif isinstance(node, ast.ClassDef):
            names = scope_names(node.body)
        elif isinstance(node, ast.Lambda):
            names = scope_names([], node.args)
        else:
            names = scope_names(node.body, node.args)
        self._found[id(node)] = (node, names)
        return names


_BLOCK_ITEMS = (ast.stmt, ast.excepthandler, ast.match_case)


def _statements(tree: ast.Module) -> Iterator[ast.AST]:
    """Yields the module and every statement in it (handlers and match cases too), in
    ``ast.walk``'s order: a statement never sits inside an expression, so the walk need not
    enter them."""
    todo: deque[ast.AST] = deque([tree])
    while todo:
        node = todo.popleft()
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                todo.extend(item for item in value if isinstance(item, _BLOCK_ITEMS))
        yield node


def sole_binding(bindings: Sequence[Binding], *, name: str) -> Binding | str:
    """Returns the binding a use of ``name`` after the whole scope ran sees, or why auxcheck
    cannot tell: bindings on more than one branch (an ``if`` and its ``else``, a ``try``
    and its ``except``) leave it to what ran."""
    if not bindings:
        return f"`{name}` is not bound here"
    blocks = {b.block for b in bindings}
    if len(blocks) > 1:
        lines = ", ".join(str(b.line) for b in bindings)
        return f"`{name}` is bound on more than one branch (lines {lines}): cannot tell which runs"
    return bindings[-1]


class _Walk:
    """One pass over a scope's statements, numbering each statement list it enters."""

    def __init__(self) -> None:
        self.found: list[Binding] = []
        self.declared: set[str] = set()
        self.blocks = 0

    def add(self, name: str, kind: BindingKind, node: ast.AST, block: int, *,
            fallback: bool = False, value: ast.expr | None = None) -> None:
        line = getattr(node, "lineno", 0)
        end = getattr(node, "end_lineno", None) or line
        self.found.append(Binding(name, kind, line, end, block, node, fallback, value))

    def block(self, body: Sequence[ast.stmt], fallback: bool) -> None:
        self.blocks += 1
        here = self.blocks
        for node in body:
            self.statement(node, here, fallback)

    def statement(self, node: ast.stmt, block: int, fallback: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            kind: BindingKind = "class" if isinstance(node, ast.ClassDef) else "def"
            self.add(node.name, kind, node, block, fallback=fallback)
            self.expressions([*node.decorator_list, *_outer_parts(node)], node, block, fallback)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    local = alias.asname or alias.name.split(".")[0]
                    self.add(local, "import", node, block, fallback=fallback)
            return
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            self.declared.update(node.names)
            return
        if isinstance(node, ast.If) and (is_type_checking(node.test) or is_main_block(node.test)):
            self.block(node.orelse, fallback)
            return
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            self.add(node.targets[0].id, "assign", node, block, fallback=fallback,
                     value=node.value)
            self.expressions([node.value], node, block, fallback)
            return
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.value is not None:
                self.add(node.target.id, "assign", node, block, fallback=fallback,
                         value=node.value)
                self.expressions([node.value], node, block, fallback)
            return
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self.tried(node, fallback)
            return
        self.compound(node, block, fallback)

    def tried(self, node: ast.stmt, fallback: bool) -> None:
        self.block(getattr(node, "body", []), fallback)
        for handler in getattr(node, "handlers", []):
            if handler.name:
                self.add(handler.name, "other", handler, self.blocks + 1, fallback=fallback)
            self.block(handler.body, fallback or catches_import_error(handler))
        self.block(getattr(node, "orelse", []), fallback)
        self.block(getattr(node, "finalbody", []), fallback)

    def compound(self, node: ast.stmt, block: int, fallback: bool) -> None:
        """Any other statement: its own targets here, its nested statement lists as blocks
        (a ``with`` body runs whenever the statement does: it stays in this block)."""
        same = isinstance(node, (ast.With, ast.AsyncWith))
        bodies: list[list[ast.stmt]] = []
        parts: list[ast.AST] = []
        for field_name, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                bodies.append(value)
            elif isinstance(value, list) and value and isinstance(value[0], ast.match_case):
                for case in value:
                    parts.append(case.pattern)
                    bodies.append(case.body)
            elif field_name != "body":
                parts.extend(v for v in (value if isinstance(value, list) else [value])
                             if isinstance(v, ast.AST))
        for part in parts:
            self.targets(part, node, block, fallback)
        for body in bodies:
            if same:
                for inner in body:
                    self.statement(inner, block, fallback)
            else:
                self.block(body, fallback)

    def targets(self, part: ast.AST, node: ast.stmt, block: int, fallback: bool) -> None:
        for inner in _own_nodes(part):
            if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
                self.add(inner.id, "other", node, block, fallback=fallback)
            elif isinstance(inner, (ast.MatchAs, ast.MatchStar)) and inner.name:
                self.add(inner.name, "other", node, block, fallback=fallback)
            elif isinstance(inner, ast.MatchMapping) and inner.rest:
                self.add(inner.rest, "other", node, block, fallback=fallback)

    def expressions(self, parts: Iterable[ast.AST], node: ast.stmt, block: int,
                    fallback: bool) -> None:
        """Walrus targets inside the expressions a statement evaluates in this scope."""
        for part in parts:
            for inner in _own_nodes(part):
                if isinstance(inner, ast.NamedExpr) and isinstance(inner.target, ast.Name):
                    self.add(inner.target.id, "other", node, block, fallback=fallback)


def _outer_parts(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[ast.AST]:
    """The parts of a definition evaluated in the enclosing scope: defaults, bases."""
    if isinstance(node, ast.ClassDef):
        return [*node.bases, *(k.value for k in node.keywords)]
    return [d for d in (*node.args.defaults, *node.args.kw_defaults) if d is not None]


def _own_nodes(part: ast.AST) -> list[ast.AST]:
    """Returns ``part`` and its descendants, not entering lambdas and comprehensions (their
    names are their own)."""
    found: list[ast.AST] = []
    stack = [part]
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)):
            continue
        for name in node._fields:  # ast.iter_child_nodes, without a generator per node
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(item for item in value if isinstance(item, ast.AST))
    return found


# ---------------------------------------------------------------- the scopes of a walk

FrameKind = Literal["module", "class", "function", "nested"]
"""``nested``: a lambda or a comprehension, whose names are its own."""


@dataclass(slots=True)
class Frame:
    """One scope open during a walk of a file: its kind, qualname and bindings."""

    kind: FrameKind
    qualname: str
    names: dict[str, list[Binding]]


@dataclass(frozen=True, slots=True)
class NameSeen:
    """What a use of one name of a scope sees once the scope ran: its binding's kind, or why
    auxcheck cannot tell what the name holds."""

    kind: BindingKind | None = None
    why: str | None = None


class Scopes:
    """The scopes enclosing the node a walk is at, innermost last, looked up as Python does."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []

    def push(self, kind: FrameKind, qualname: str, names: dict[str, list[Binding]]) -> None:
        """Opens a scope."""
        self.frames.append(Frame(kind, qualname, names))

    def pop(self) -> None:
        """Closes the innermost scope."""
        self.frames.pop()

    def lookup(self, name: str, upto: int | None = None) -> tuple[int, list[Binding]] | None:
        """Returns the index of the scope whose binding of ``name`` a use in scope ``upto - 1``
        (the innermost by default) sees, and its bindings; None when none binds it.

        A class's names are seen from its body only, never from the functions inside it."""
        frames = self.frames if upto is None else self.frames[:upto]
        last = len(frames) - 1
        for at in range(last, -1, -1):
            frame = frames[at]
            if frame.kind == "class" and at != last:
                continue
            if name in frame.names:
                return at, frame.names[name]
        return None

    def sole_value(self, name: str, upto: int | None = None) -> tuple[ast.expr, int] | None:
        """Returns the value ``name`` is bound to by its one ``NAME = value``, and the scopes
        that value's own names are looked up in; None when bound any other way, or twice."""
        found = self.lookup(name, upto)
        if found is None:
            return None
        at, bindings = found
        [only] = bindings if len(bindings) == 1 else [None]
        if only is None or only.kind != "assign" or only.value is None:
            return None
        return only.value, at + 1

    def still_imported(self, name: str, line: int) -> bool:
        """Returns False when ``name``, used on ``line`` of the innermost scope, may no longer
        hold what its import bound: the file rebinds it (``class Scheduler(Scheduler)``, a
        parameter, an assignment) before the use runs, or in a scope whose code runs later.
        A stand-in bound where an ImportError is caught never counts."""
        found = self.lookup(name)
        if found is None:
            return True
        at, bindings = found
        kept = [b for b in bindings if not b.fallback] or bindings
        if all(b.kind == "import" for b in kept):
            return True
        if any(f.kind in ("function", "nested") for f in self.frames[at + 1:]):
            return False  # the use runs after the whole scope did
        before = [b for b in kept if b.end < line]
        return bool(before) and all(b.kind == "import" for b in before)

    def string(self, node: ast.expr, upto: int | None = None, depth: int = 0) -> str | None:
        """Returns the string ``node`` (seen from scope ``upto - 1``) always holds: a constant,
        a name bound once to one, an f-string or ``+`` of those (composed as
        :func:`auxcheck._core.constants.string_value` composes them); None when it may hold
        more."""
        def named(name: str) -> str | None:
            found = self.sole_value(name, upto) if depth < 16 else None
            return None if found is None else self.string(found[0], found[1], depth + 1)

        return string_value(node, named)

    def member(self, node: ast.expr, members: frozenset[str], upto: int | None = None,
               depth: int = 0) -> str:
        """Returns the enum member (one of ``members``) ``node`` always is: ``Enum.MEMBER``, or a
        name bound once to one; ``?`` when auxcheck cannot tell."""
        if isinstance(node, ast.Attribute) and node.attr in members and isinstance(
                node.value, (ast.Name, ast.Attribute)):
            return node.attr
        if isinstance(node, ast.Name) and depth < 16:
            found = self.sole_value(node.id, upto)
            if found is not None:
                return self.member(found[0], members, found[1], depth + 1)
        return "?"

    def in_nested(self, name: str) -> bool:
        """Returns True when ``name`` here is a lambda's parameter or a comprehension's variable."""
        found = self.lookup(name)
        return found is not None and self.frames[found[0]].kind == "nested"


def seen_names(frame: Frame) -> dict[str, NameSeen]:
    """Returns, by qualified name (``install.hook``, ``Plugin.hook``, ``hook``), what a use of
    each name of ``frame`` sees."""
    found: dict[str, NameSeen] = {}
    for name, bindings in frame.names.items():
        key = f"{frame.qualname}.{name}" if frame.qualname else name
        found[key] = _seen(name, bindings, frame)
    return found


def _seen(name: str, bindings: Sequence[Binding], frame: Frame) -> NameSeen:
    sole = sole_binding(bindings, name=name)
    if isinstance(sole, str):
        return NameSeen(why=sole)
    where = frame.qualname.rpartition(".")[2]
    if sole.kind == "parameter":
        return NameSeen(why=f"`{name}` is a parameter of {where}: what it holds is known only "
                            "at run time")
    if frame.kind == "function" and sole.kind not in ("def", "class", "import"):
        return NameSeen(why=f"`{name}` is a local variable of {where} (line {sole.line}): what "
                            "it holds is known only at run time")
    if sole.kind == "other":
        return NameSeen(why=f"`{name}` is bound by the statement at line {sole.line}, which "
                            "auxcheck does not follow")
    if sole.kind == "assign" and frame.kind != "module":
        return NameSeen(why=f"`{name}` is assigned in the body of {where} (line {sole.line}), "
                            "which auxcheck does not follow")
    return NameSeen(sole.kind)
