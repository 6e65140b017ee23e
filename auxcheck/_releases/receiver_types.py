"""The class SGLang's own code says a receiver holds, read with ``ast``: never guessed.

Where the call-site reader (``call_sites``) needs the static class of the object a method is
called on beyond a parameter's annotation: what a function is annotated to return, what an
attribute of ``self`` is declared as or else assigned (every assignment of it in the class
and its bases must name the same class, else it is unknown), and what an ``isinstance``
test narrows a name to (inside the ``if``, or after ``if not isinstance(x, C): raise``).
Anything else is unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from auxcheck._core.pyast import dotted_name
from auxcheck._releases.index import Lookup, ReleaseIndex

__all__ = ["annotated_class", "annotated_expr", "attribute_class", "narrowings", "returned_class", "sglang_lookup"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*_FUNCTIONS, ast.Lambda, ast.ClassDef)
_EXITS = (ast.Raise, ast.Return, ast.Continue, ast.Break)
_UNKNOWN = ""
"""An assignment whose class auxcheck cannot read."""


class _Binding(NamedTuple):
    """One binding of ``self.attr``: the class it names (``""`` unknown, None for ``None``),
    and whether it declares the type (an annotation) or only assigns a value."""

    cls: str | None
    declared: bool = False


Narrowed = Mapping[str, ast.expr]
"""A receiver's dotted text -> the class expression an ``isinstance`` test narrows it to."""


def sglang_lookup(index: ReleaseIndex, module: str, expr: ast.expr) -> Lookup | None:
    """Returns what the dotted ``expr`` names in ``module`` of the release, None when it
    does not resolve (or is not a dotted name)."""
    text = dotted_name(expr)
    if text is None:
        return None
    head, *rest = text.split(".")
    found = index.provides(module, head)
    for part in rest:
        if not (found.ok and found.certain):
            return None
        found = index.attribute(found, part)
    return found if found.ok else None


def _lookup_class(index: ReleaseIndex, module: str, expr: ast.expr) -> str | None:
    found = sglang_lookup(index, module, expr)
    return found.where if found is not None and found.certain and found.kind == "class" else None


def annotated_expr(annotation: ast.expr | None) -> ast.expr | None:
    """Returns the one class expression an annotation declares (``C``, ``"C"``,
    ``Optional[C]``, ``C | None``), None for anything else (a union of classes, text that is
    no expression)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Subscript) and dotted_name(annotation.value) in (
            "Optional", "typing.Optional"):
        annotation = annotation.slice
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [s for s in (annotation.left, annotation.right)
                 if not (isinstance(s, ast.Constant) and s.value is None)]
        annotation = sides[0] if len(sides) == 1 else None
    return annotation


def annotated_class(index: ReleaseIndex, module: str, annotation: ast.expr | None) -> str | None:
    """Returns the class ``annotation`` names in ``module`` (see :func:`annotated_expr`), None
    for anything else (a union of classes, a name it cannot resolve)."""
    found = annotated_expr(annotation)
    return _lookup_class(index, module, found) if found is not None else None


def _definition(index: ReleaseIndex, where: str) -> tuple[str, ast.stmt] | None:
    # The last ``def``/``class`` of each name down ``where``'s qualname (the one Python keeps).
    module, qualname = index.split_where(where)
    tree = index.tree(module)
    body: Sequence[ast.stmt] = tree.body if tree is not None else []
    found: ast.stmt | None = None
    for part in qualname.split("."):
        found = next((n for n in reversed(body) if isinstance(n, (*_FUNCTIONS, ast.ClassDef))
                      and n.name == part), None)
        if found is None:
            return None
        body = found.body if isinstance(found, ast.ClassDef) else []
    return (module, found) if found is not None else None


def returned_class(index: ReleaseIndex, where: str) -> str | None:
    """Returns the class the function at ``where`` is annotated to return, None when it has
    no such annotation (none, a string naming nothing, a union, a generic)."""
    found = _definition(index, where)
    if found is None or not isinstance(found[1], _FUNCTIONS):
        return None
    return annotated_class(index, found[0], found[1].returns)


def _stored(function: ast.AST, name: str) -> int:
    # How many times ``function`` binds ``name`` (parameters included).
    count = sum(1 for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name
                and isinstance(n.ctx, (ast.Store, ast.Del)))
    if isinstance(function, _FUNCTIONS):
        count += sum(1 for a in _all_args(function.args) if a.arg == name)
    return count


def _all_args(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []),
            *args.kwonlyargs, *([args.kwarg] if args.kwarg else [])]


def _value_class(index: ReleaseIndex, module: str, method: ast.FunctionDef | ast.AsyncFunctionDef,
                 value: ast.expr) -> str | None:
    # The class of a value assigned in ``method``: built, returned, or an annotated parameter.
    if isinstance(value, ast.Name):
        arg = next((a for a in _all_args(method.args) if a.arg == value.id), None)
        if arg is None or _stored(method, value.id) != 1:
            return _UNKNOWN
        return annotated_class(index, module, arg.annotation) or _UNKNOWN
    if not isinstance(value, ast.Call):
        return _UNKNOWN
    head = (dotted_name(value.func) or "").partition(".")[0]
    if not head or _stored(method, head):  # a local class or factory: unknown
        return _UNKNOWN
    built = _lookup_class(index, module, value.func)
    if built is not None:
        return built
    text = dotted_name(value.func) or ""
    found = index.provides(module, head)
    for part in text.split(".")[1:]:
        found = index.attribute(found, part) if found.ok and found.certain else found
    if found.ok and found.certain and found.kind == "function":
        return returned_class(index, found.where) or _UNKNOWN
    return _UNKNOWN


def _assignments(index: ReleaseIndex, module: str, cls: ast.ClassDef, attr: str,
                 shadowed: set[str]) -> Iterator[_Binding]:
    # The class of each assignment of ``self.attr`` in ``cls`` ("" when unknown), leaving
    # out the methods in ``shadowed`` (a subclass's own that never call up to them, which
    # therefore never run on its instances); None assignments (``self.x = None``) say
    # nothing of the class and are left out.
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and (
                node.target.id == attr):
            yield _Binding(annotated_class(index, module, node.annotation) or _UNKNOWN, True)
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == attr for t in node.targets) and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            yield _Binding(_UNKNOWN)
    methods = [m for m in cls.body if isinstance(m, _FUNCTIONS)]
    for method in methods:
        first = [*method.args.posonlyargs, *method.args.args][:1]
        if first and method.name not in shadowed:
            yield from _method_assignments(index, module, method, first[0].arg, attr)
    shadowed |= {m.name for m in methods if not _calls_up(m)}


def _calls_up(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    # Whether ``method`` may run a base's method of its name (``super().name``,
    # ``Base.name(self)``): any ``X.name`` where X is not the method's first parameter.
    first = [*method.args.posonlyargs, *method.args.args][:1]
    me = first[0].arg if first else None
    return any(isinstance(n, ast.Attribute) and n.attr == method.name
               and not (isinstance(n.value, ast.Name) and n.value.id == me)
               for n in ast.walk(method))


def _method_assignments(index: ReleaseIndex, module: str,
                        method: ast.FunctionDef | ast.AsyncFunctionDef, me: str,
                        attr: str) -> Iterator[_Binding]:
    def mine(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == attr
                and isinstance(node.value, ast.Name) and node.value.id == me)
    read: set[int] = set()
    for node in ast.walk(method):
        if isinstance(node, ast.Assign) and any(mine(t) for t in node.targets):
            read |= {id(t) for t in node.targets if mine(t)}
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                yield _Binding(_value_class(index, module, method, node.value))
        elif isinstance(node, ast.AnnAssign) and mine(node.target):
            read.add(id(node.target))
            yield _Binding(annotated_class(index, module, node.annotation) or _UNKNOWN, True)
    for node in ast.walk(method):  # any other binding (a tuple, a loop, ``+=``): unknown
        if mine(node) and isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)) and (
                id(node) not in read):
            yield _Binding(_UNKNOWN)


def _lineage(index: ReleaseIndex, where: str, seen: frozenset[str]) -> Iterator[str]:
    # ``where`` and the classes it derives from, as far as the release shows them.
    if where in seen or len(seen) > 100:
        return
    yield where
    module, qualname = index.split_where(where)
    summary = index.classes(module).get(qualname)
    for base in summary.bases if summary is not None else ():
        found = _lookup_class(index, module, ast.parse(base, mode="eval").body) if all(
            p.isidentifier() for p in base.split(".")) else None
        if found is not None:
            yield from _lineage(index, found, seen | {where})


def attribute_class(index: ReleaseIndex, where: str, attr: str) -> str | None:
    """Returns the class of ``self.attr`` in a method of the class at ``where``, read from
    the class and the methods of its bases that run on it: the class its annotations
    declare (``attr: C`` in a class body, ``self.attr: C = ...``), as a type checker takes
    it, or without one, the class every assignment of it names (an annotated parameter, a
    class built or a function annotated to return one). None when there is none, or two
    disagree, or one is a class auxcheck cannot read. Subclasses' own are not read."""
    bindings: set[_Binding] = set()
    shadowed: set[str] = set()
    for cls in _lineage(index, where, frozenset()):
        found = _definition(index, cls)
        if found is not None and isinstance(found[1], ast.ClassDef):
            bindings |= set(_assignments(index, found[0], found[1], attr, shadowed))
    declared = {b.cls for b in bindings if b.declared}  # a declaration is the type
    named = declared or {b.cls for b in bindings if b.cls is not None}
    if len(named) != 1 or _UNKNOWN in named:
        return None
    return next(iter(named))


def _isinstance(test: ast.expr) -> tuple[str, ast.expr] | None:
    # ``isinstance(x, C)``: (x's dotted text, C); one class only, never a tuple.
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance" and len(test.args) == 2 and not test.keywords):
        return None
    text = dotted_name(test.args[0])
    return (text, test.args[1]) if text is not None and dotted_name(test.args[1]) else None


def _tested(test: ast.expr) -> dict[str, ast.expr]:
    # What a true ``test`` narrows: an ``isinstance`` or an ``and`` of them.
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
        else [test]
    return dict(t for t in map(_isinstance, parts) if t is not None)


def _rebinds(nodes: Sequence[ast.AST], text: str) -> bool:
    # Whether ``nodes`` bind ``text`` (``x`` or ``self.x``) or the name it starts with.
    head = text.partition(".")[0]
    for node in (n for tree in nodes for n in ast.walk(tree)):
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(
                node.ctx, (ast.Store, ast.Del)) and dotted_name(node) in (text, head):
            return True
    return False


def narrowings(function: ast.AST) -> dict[int, Narrowed]:
    """Returns, for each call in ``function``'s own body (by ``id``), the receivers an
    enclosing ``isinstance`` test narrows, and to which class expression. A receiver bound
    again in the narrowed statements is not narrowed."""
    found: dict[int, Narrowed] = {}
    body = getattr(function, "body", [])
    if isinstance(body, list):
        _narrow_block(body, {}, found)
    return found


def _narrow_block(stmts: Sequence[ast.stmt], active: Narrowed, found: dict[int, Narrowed]) -> None:
    for at, stmt in enumerate(stmts):
        if isinstance(stmt, ast.If):
            _calls(stmt.test, active, found)
            inside = {k: v for k, v in _tested(stmt.test).items() if not _rebinds(stmt.body, k)}
            _narrow_block(stmt.body, {**active, **inside}, found)
            negated = _tested(stmt.test.operand) if isinstance(stmt.test, ast.UnaryOp) and (
                isinstance(stmt.test.op, ast.Not)) else {}
            _narrow_block(stmt.orelse, {**active, **{k: v for k, v in negated.items()
                                                     if not _rebinds(stmt.orelse, k)}}, found)
            if negated and stmt.body and isinstance(stmt.body[-1], _EXITS) and not stmt.orelse:
                rest = stmts[at + 1:]  # a new mapping: calls read before keep theirs
                active = {**active, **{k: v for k, v in negated.items()
                                       if not _rebinds(rest, k)}}
            continue
        if isinstance(stmt, _SCOPES):
            continue  # its own calls are read in its own scope
        for _, value in ast.iter_fields(stmt):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                _narrow_block(value, active, found)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        _narrow_nested(item, active, found)
            elif isinstance(value, ast.AST):
                _narrow_nested(value, active, found)


def _narrow_nested(node: ast.AST, active: Narrowed, found: dict[int, Narrowed]) -> None:
    # An expression, or a handler/case holding statements of its own.
    body = getattr(node, "body", None)
    if isinstance(node, ast.expr) or not isinstance(body, list):
        _calls(node, active, found)
        return
    for field, value in ast.iter_fields(node):
        if field == "body":
            continue
        if isinstance(value, ast.AST):
            _calls(value, active, found)
    _narrow_block(body, active, found)


def _calls(node: ast.AST, active: Narrowed, found: dict[int, Narrowed]) -> None:
    if not active:
        return
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Call):
            found[id(item)] = active
        if not isinstance(item, _SCOPES):
            stack.extend(ast.iter_child_nodes(item))
