"""Classes as their source defines them: bases, methods, names, and the calls made on ``self``.

A plugin class that derives from an SGLang class (a HiCacheStorage backend, an
AttentionBackend, a Sampler) depends on what that class declares in each release: its
abstract methods, the signatures of the methods SGLang calls on it, the helpers the
plugin calls on ``self`` or ``super()``. :func:`collect_classes` reads, in one walk of
each class, what the ``classes`` stage (:mod:`auxcheck._releases.class_check`) judges.
It reads SGLang's own classes the same way, so both ends of a chain are alike.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from auxcheck._core.pyast import (
    bound_names,
    catches_import_error,
    caught_names,
    dotted_name,
    is_type_checking,
    tests_the_release,
)
from auxcheck._core.signatures import parse_function
from auxcheck._core.text import shortened
from auxcheck._releases.hook_refs import PluginFunction

__all__ = ["PluginClass", "SelfCall", "collect_classes"]

Via = Literal["self", "super"]

_BUILTINS = frozenset(n for n in dir(builtins) if isinstance(getattr(builtins, n), type))
_ABSTRACT = frozenset({"abstractmethod", "abstractproperty", "abstractclassmethod",
                       "abstractstaticmethod"})
_GUARD_ERRORS = frozenset({"AttributeError", "TypeError", "Exception", "BaseException"})
"""A ``try`` whose handler catches one of these plans for a call that may not exist or bind."""


@dataclass(frozen=True, slots=True)
class SelfCall:
    """A call ``self.m(...)`` or ``super().m(...)`` in a method: its shape and where it is.

    ``guard`` says why it may not run on every release (an ``if hasattr(...)`` around
    it, a ``try`` catching AttributeError or TypeError)."""

    method: str
    via: Via
    caller: str
    """The method the call is made in."""
    positional: int
    keywords: tuple[str, ...]
    splat: bool
    location: str
    text: str
    guard: str | None = None


@dataclass(frozen=True, slots=True)
class PluginClass:
    """A class: where it is, its bases, what it defines and the calls it makes on itself."""

    location: str
    module: str
    qualname: str
    bases: tuple[str, ...]
    """Absolute dotted paths where the file binds them (``sglang.srt...HiCacheStorage``, a
    class of the same file, ``torch.nn.Module``, ``builtins.object``); an expression it
    does not bind (a call, a module-level variable) as written, and listed in ``unknown``."""
    methods: Mapping[str, PluginFunction]
    """Each ``def`` of the class body (the last one of a name), with its decorators."""
    names: frozenset[str]
    """Every name the class body binds: methods, ``forward = _impl``, nested classes."""
    instance: frozenset[str]
    """The names its methods assign as ``self.X = ...`` (or ``setattr(self, "X", ...)``)."""
    abstract: Mapping[str, str]
    """The abstract methods it declares itself -> their location."""
    calls: tuple[SelfCall, ...] = ()
    metaclass: str | None = None
    """The ``metaclass=`` keyword, absolute where the file binds it (``abc.ABCMeta``)."""
    unknown: tuple[str, ...] = ()
    decorators: tuple[str, ...] = ()
    """The class's decorators, as written."""
    dynamic: bool = False
    """A method sets attributes it does not name (``setattr(self, name, ...)``)."""
    patched: frozenset[str] = frozenset()
    """Names the file sets on the class after its body ran (``Plugin.helper = fn``): present
    for calls, though too late to define an abstract method."""

    @property
    def dotted(self) -> str:
        """Returns ``module.qualname``: the key other classes' bases name it by."""
        return f"{self.module}.{self.qualname}"

    @property
    def name(self) -> str:
        """Returns the class's own name (the last part of its qualname)."""
        return self.qualname.rpartition(".")[2]

    @property
    def is_abstract(self) -> bool:
        """Returns True when the class declares abstract methods of its own."""
        return bool(self.abstract)


def collect_classes(tree: ast.Module, *, shown: str, module: str | None,
                    bindings: Mapping[str, str]) -> tuple[PluginClass, ...]:
    """Returns every class ``tree`` defines at run time (not under ``if TYPE_CHECKING``).

    ``shown`` is the file as locations name it; ``module`` its dotted name (``shown``
    when None); ``bindings`` maps each name its imports bind to its absolute dotted origin.
    """
    collector = _Collector(shown, module or shown, bindings)
    collector.body(tree.body, [])
    return tuple(replace(c, patched=frozenset(collector.patched[c.qualname]))
                 if c.qualname in collector.patched else c for c in collector.found)


class _Collector:
    def __init__(self, shown: str, module: str, bindings: Mapping[str, str]) -> None:
        self.shown = shown
        self.module = module
        self.bindings = bindings
        self.defined: set[str] = set()
        self.found: list[PluginClass] = []
        self.patched: dict[str, set[str]] = {}

    def at(self, node: ast.AST) -> str:
        return f"{self.shown}:{getattr(node, 'lineno', 1)}:{getattr(node, 'col_offset', 0) + 1}"

    def body(self, statements: Iterable[ast.stmt], scope: list[str], *,
             fallback: bool = False) -> None:
        for node in statements:
            if isinstance(node, ast.ClassDef):
                self.one(node, scope, fallback=fallback)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.body(node.body, [*scope, node.name])
            elif isinstance(node, ast.If) and is_type_checking(node.test):
                self.body(node.orelse, scope, fallback=fallback)
            elif isinstance(node, ast.Try):
                self.body([*node.body, *node.orelse, *node.finalbody], scope, fallback=fallback)
                for handler in node.handlers:
                    self.body(handler.body, scope,
                              fallback=fallback or catches_import_error(handler))
            else:
                self.patch(node, scope)
                self.body(_blocks(node), scope, fallback=fallback)

    def patch(self, node: ast.stmt, scope: list[str]) -> None:
        """Records ``Cls.name = ...`` / ``setattr(Cls, "name", ...)`` on a class of the file."""
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
              and _is_name(node.value.func, "setattr") and len(node.value.args) > 1):
            name = node.value.args[1]
            attr = name.value if isinstance(name, ast.Constant) and isinstance(
                name.value, str) else "*"
            targets = [ast.Attribute(node.value.args[0], attr, ast.Store())]
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                owner = self.local(target.value.id, scope)
                if owner is not None:
                    self.patched.setdefault(owner, set()).add(target.attr)

    def one(self, node: ast.ClassDef, scope: list[str], *, fallback: bool = False) -> None:
        """Collects one class; a ``fallback`` (defined where an ImportError is caught: a
        stand-in for a name the ``try`` imports) does not shadow the import for later bases."""
        qualname = ".".join([*scope, node.name])
        bases, unknown = [], []
        for base in node.bases:
            dotted = self.absolute(base, scope)
            if dotted is None:
                dotted = ast.unparse(base.value if isinstance(base, ast.Subscript) else base)
                unknown.append(dotted)
            bases.append(dotted)
        meta = next((k.value for k in node.keywords if k.arg == "metaclass"), None)
        shape = _Shape()
        for item in _class_body(node.body):
            shape.names.update(bound_names(item))
            if isinstance(item, ast.ClassDef):
                self.one(item, [*scope, node.name])
            elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.method(item, f"{qualname}.{item.name}", node.name, shape)
        if not fallback:
            self.defined.add(qualname)
        self.found.append(PluginClass(
            self.at(node), self.module, qualname, tuple(bases), shape.methods,
            frozenset(shape.names), frozenset(shape.instance), shape.abstract,
            tuple(shape.calls), None if meta is None else (
                self.absolute(meta, scope) or ast.unparse(meta)),
            tuple(unknown), tuple(_written(d) for d in node.decorator_list), shape.dynamic))

    def absolute(self, node: ast.expr, scope: list[str]) -> str | None:
        """Returns the absolute dotted path a base expression names, None when unbound."""
        text = dotted_name(node.value if isinstance(node, ast.Subscript) else node)
        if text is None:
            return None
        head, dot, rest = text.partition(".")
        local = self.local(head, scope)
        if local is not None:
            return f"{self.module}.{local}{dot}{rest}"
        origin = self.bindings.get(head)
        if origin is not None:
            return f"{origin}{dot}{rest}"
        return f"builtins.{head}" if head in _BUILTINS and not rest else None

    def local(self, name: str, scope: list[str]) -> str | None:
        """Returns the qualname of the class of this file ``name`` refers to in ``scope``."""
        for end in range(len(scope), -1, -1):
            local = ".".join([*scope[:end], name])
            if local in self.defined:
                return local
        return None

    def method(self, node: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str, owner: str,
               shape: _Shape) -> None:
        decorators = tuple(_written(d) for d in node.decorator_list)
        shape.methods[node.name] = PluginFunction(qualname, parse_function(node), decorators,
                                                  self.at(node))
        last = {d.rpartition(".")[2] for d in decorators}
        if last & _ABSTRACT:
            shape.abstract[node.name] = self.at(node)
        elif node.name in shape.abstract:
            del shape.abstract[node.name]  # redefined concretely further down the body
        params = [*node.args.posonlyargs, *node.args.args]
        first = params[0].arg if params and "staticmethod" not in last else None
        if first is not None:
            plain = not last & {"classmethod", "staticmethod"}
            _Method(self, shape, node.name, owner, first, plain).walk(node.body)


class _Shape:
    """What one class body defines, gathered while its methods are walked."""

    def __init__(self) -> None:
        self.methods: dict[str, PluginFunction] = {}
        self.names: set[str] = set()
        self.instance: set[str] = set()
        self.abstract: dict[str, str] = {}
        self.calls: list[SelfCall] = []
        self.dynamic = False


class _Method:
    """One walk of a method's body: the attributes it sets on ``self``, the calls it makes."""

    def __init__(self, collector: _Collector, shape: _Shape, name: str, owner: str, first: str,
                 plain: bool) -> None:
        self.collector = collector
        self.shape = shape
        self.name = name
        self.owner = owner
        self.first = first
        self.plain = plain  # not a classmethod: ``first`` is the instance

    def walk(self, body: Iterable[ast.stmt]) -> None:
        stack: list[tuple[ast.AST, str | None, bool]] = [(n, None, False) for n in body]
        while stack:
            node, guard, nested = stack.pop()
            if isinstance(node, ast.ClassDef):
                continue  # another class's methods: their ``self`` is not this one
            nested = nested or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                 ast.Lambda))
            guard = guard or _if_guard(node)
            self.visit(node, guard, nested)
            tried = guard or _try_guard(node) if isinstance(node, ast.Try) else None
            for child in ast.iter_child_nodes(node):
                # Only a try's body is guarded by its handlers, not the handlers themselves.
                inside = tried is not None and isinstance(node, ast.Try) and any(
                    child is s for s in node.body)
                stack.append((child, tried if inside else guard, nested))

    def visit(self, node: ast.AST, guard: str | None, nested: bool) -> None:
        if (isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load)
                and _is_name(node.value, self.first)):
            self.shape.instance.add(node.attr)
        elif isinstance(node, ast.Call):
            self.setattr(node)
            if not nested:
                self.call(node, guard)

    def setattr(self, node: ast.Call) -> None:
        func = node.func
        if _is_name(func, "setattr") and node.args and _is_name(node.args[0], self.first):
            name = node.args[1] if len(node.args) > 1 else None
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                self.shape.instance.add(name.value)
            else:
                self.shape.dynamic = True
        elif isinstance(func, ast.Attribute) and func.attr == "update" and (
                isinstance(func.value, ast.Attribute) and func.value.attr == "__dict__"
                and _is_name(func.value.value, self.first)
                or isinstance(func.value, ast.Call) and _is_name(func.value.func, "vars")):
            self.shape.dynamic = True

    def call(self, node: ast.Call, guard: str | None) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute):
            return
        via: Via | None = None
        if self.plain and _is_name(func.value, self.first):
            via = "self"
        elif isinstance(func.value, ast.Call) and _is_name(func.value.func, "super"):
            args = func.value.args
            if not args and not func.value.keywords or (
                    len(args) == 2 and _is_name(args[0], self.owner)
                    and _is_name(args[1], self.first)):
                via = "super"
        if via is None:
            return
        splat = any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords)
        self.shape.calls.append(SelfCall(
            func.attr, via, self.name, len(node.args), tuple(k.arg for k in node.keywords if k.arg),
            splat, self.collector.at(node), shortened(ast.unparse(node)), guard))


def _blocks(node: ast.stmt) -> list[ast.stmt]:
    """Returns the statements nested in a compound statement (if, try, with, for, match)."""
    found: list[ast.stmt] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            found.append(child)
        elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
            found += child.body
    return found


def _class_body(body: Iterable[ast.stmt]) -> list[ast.stmt]:
    """Returns a class body's statements, those under ``if``/``try`` in it included."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            found += _class_body(node.orelse)
        elif isinstance(node, (ast.If, ast.Try)):
            found += _class_body(_blocks(node))
        else:
            found.append(node)
    return found


def _if_guard(node: ast.AST) -> str | None:
    if not isinstance(node, (ast.If, ast.IfExp, ast.While)):
        return None
    if tests_the_release(node.test):
        return f"it runs under `if {shortened(ast.unparse(node.test), 60)}`"
    return None


def _try_guard(node: ast.Try) -> str | None:
    for handler in node.handlers:
        caught = caught_names(handler)
        if not caught or _GUARD_ERRORS & set(caught):
            return (f"it runs in the `try` at line {node.lineno}, whose handler catches "
                    f"{', '.join(caught) or 'everything'}")
    return None


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _written(decorator: ast.expr) -> str:
    return ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)


