"""The calls SGLang's own code makes to a function, class or method, read with ``ast``.

The evidence that a hook's (or an override's) missing parameter is really passed: each
call of the target in the modules that import it, as a shape (how many arguments by
position, which by keyword). A call counts only where it is known to reach the target:
through a name that resolves to it, or a receiver whose class is known (``self`` in a
method of the class, a parameter annotated with it, the class itself, and what
``receiver_types`` reads: typed attributes, return annotations, ``isinstance`` tests), never
another class's method of the same name. Nothing is imported.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal, NamedTuple

from auxcheck._core.pyast import dotted_name
from auxcheck._core.signatures import CallShape, decorator_name
from auxcheck._releases.derived_cache import BAD, Section, cached
from auxcheck._releases.index import Lookup, ReleaseIndex
from auxcheck._releases.receiver_types import (
    Narrowed,
    annotated_expr,
    attribute_class,
    narrowings,
    returned_class,
    sglang_lookup,
)

if TYPE_CHECKING:
    from auxcheck._releases.definitions import Callee

__all__ = ["Through", "call_sites", "is_test_path", "sglang_lookup"]


Through = Literal["class", "instance"]
"""How a call reaches a method: through the class (``Cls.m(...)``) or an instance."""

_Scope = tuple[ast.AST, ...]
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Site(NamedTuple):
    """One call SGLang makes: its own arguments, how it reaches the target, where it is."""

    positional: int
    keywords: tuple[str, ...]
    through: Through | None
    where: str


def call_sites(index: ReleaseIndex, target: Callee, *, typed: bool = False,
               hooked: str | None = None, through: Through | None = None) -> list[CallShape]:
    """Returns the calls SGLang's own code (tests left out) makes to ``target``, as shapes.

    Without ``typed``, every call of a function, class or method of that name (what may
    reach a plugin's override of a base's method: an instance of any subclass). With
    ``typed``, a call counts only where it is known to reach the target: a function or
    class called by a name that resolves to it, a method through a receiver known to
    reach ``hooked`` (the class HookRegistry patches; the target's own class when None):
    ``self``/``cls`` in a method of that class or a subclass, a name annotated or built as
    one, a typed ``self.x``, a function's result annotated as one, a name an ``isinstance``
    test narrows, the class itself, or (through an instance) a base of it that has the
    member; a subclass overriding the name does not reach it, and a receiver of unknown or
    unrelated type (another class's method of the same name) is never taken for a call of
    it. Shapes count ``self``/``cls`` where the wrapper receives it, as the target's
    declared signature binds it; with ``through``, only the calls made that way, counting
    the instance of a call through one and nothing else (what the plain-function wrapper
    of an inherited classmethod or staticmethod receives). Calls with ``*args``/``**kwargs``
    splats are left out (their arguments cannot be read). Read from the modules that import
    the target's name (or its class's name) and the module defining it.
    """
    hooked = hooked or target.owner
    key = f"{target.kind}:{target.where}:{hooked if typed else '*'}"
    # Many hooks on one target read its call sites once per run, and once per release
    # while the on-disk cache holds them (a warm run parses no SGLang module for them).
    found = index.derive("call_sites", key, lambda: cached(
        index, _SITES, key, lambda: tuple(_call_sites(index, target, hooked, typed))))
    return [CallShape(site.positional + _extra(target, site.through, through), site.keywords,
                      "a call in SGLang", site.where)
            for site in found if isinstance(site, _Site)
            and (through is None or site.through == through)]


# ---------------------------------------------------------------- the on-disk cache


def _encoded(sites: tuple[_Site, ...]) -> object:
    return [list(site) for site in sites]


def _decoded(entries: object) -> tuple[_Site, ...] | object:
    """Returns the cached call sites, :data:`BAD` when any is not what ``_encoded`` writes."""
    if not isinstance(entries, list):
        return BAD
    sites = [_site(entry) for entry in entries]
    return BAD if any(site is None for site in sites) else tuple(
        site for site in sites if site is not None)


def _site(entry: object) -> _Site | None:
    if not (isinstance(entry, list) and len(entry) == 4):
        return None
    positional, keywords, through, where = entry
    if (type(positional) is not int or positional < 0 or not isinstance(keywords, list)
            or not all(isinstance(k, str) for k in keywords)
            or through not in (None, "class", "instance") or not isinstance(where, str)):
        return None
    return _Site(positional, tuple(keywords), through, where)


_SITES: Section[tuple[_Site, ...]] = Section("call_sites", _encoded, _decoded)


def _extra(target: Callee, how: Through | None, through: Through | None) -> int:
    # How many arguments the wrapper gets before the call's own.
    if through is not None:
        return 1 if how == "instance" else 0
    if target.kind == "classmethod":
        return 1
    if target.kind == "staticmethod":
        return 0
    return 1 if how == "instance" else 0


def _call_sites(index: ReleaseIndex, target: Callee, hooked: str | None,
                typed: bool) -> list[_Site]:
    name = target.name
    owner = None if target.kind == "class" or hooked is None else hooked.rpartition(".")[2]
    wanted = owner or name
    index.load_all()
    home = target.where.rpartition(".")[0] if owner is None else target.owner or ""
    home_module = index.split_where(home)[0] if owner is not None else home
    modules = {m for m in (home, home_module, home.rpartition(".")[0]) if index.module_file(m)}
    if hooked is not None and owner is not None:
        modules.add(index.split_where(hooked)[0])
    modules |= {s.name for s in index.summaries() if any(n == wanted for _, n in s.uses)}
    sites: list[_Site] = []
    # A constructor is called as the class: ``Cls(...)`` (or ``Cls.__init__(self, ...)``).
    called = re.compile(rf"\b{re.escape(owner if name == '__init__' and owner else name)}"
                        r"\s*(?:\.\s*__init__\s*)?\(")
    for module in sorted(modules):
        path = index.module_file(module) or ""
        if is_test_path(path) or not called.search(index.release.read(path) or ""):
            continue  # the text never calls it: no need to parse the module
        tree = index.tree(module)
        if tree is not None:
            reader = _Receivers(index, module, target, hooked if owner is not None else None,
                                typed)
            sites += reader.calls_in(tree, path)
    return sites


def is_test_path(path: str) -> bool:
    """Returns True for a test file (a ``test``/``tests`` folder, ``test_*.py``,
    ``*_test.py``, ``conftest.py``): SGLang's tests are not SGLang running a plugin, and a
    plugin's tests are not what SGLang builds or calls."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (any(p in ("test", "tests") for p in parts[:-1]) or name.startswith("test_")
            or name.endswith("_test.py") or name == "conftest.py")


def _scoped_calls(tree: ast.Module) -> Iterator[tuple[ast.Call, _Scope]]:
    """Yields every call with the classes, functions and lambdas around it, outermost first."""
    stack: deque[tuple[ast.AST, _Scope]] = deque([(tree, ())])
    while stack:  # breadth first, in ``ast.walk``'s order
        node, scope = stack.popleft()
        if isinstance(node, ast.Call):
            yield node, scope
        inner = (*scope, node) if isinstance(node, (ast.ClassDef, *_FUNCTIONS, ast.Lambda)) \
            else scope
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


class _Receivers:
    """Reads which calls of one module reach the target, and how (through the class or
    an instance): the receiver's class must be known, never guessed from a name."""

    def __init__(self, index: ReleaseIndex, module: str, target: Callee,
                 hooked: str | None, typed: bool) -> None:
        self.index, self.module, self.target, self.hooked = index, module, target, hooked
        self.typed = typed
        self.scope: _Scope = ()
        self.narrowed: Narrowed = {}
        self._narrowings: dict[int, dict[int, Narrowed]] = {}

    def lookup(self, expr: ast.expr) -> Lookup | None:
        """Returns what the dotted ``expr`` names where the call is (a function's own
        ``import`` first), None when it does not resolve or a local shadows it."""
        text = dotted_name(expr)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        imported = self.imported(head)
        if imported is None:
            return sglang_lookup(self.index, self.module, expr)
        found = self.index.resolve(f"{imported}.{rest}" if rest else imported) if (
            imported) else None
        return found if found is not None and found.ok else None

    def imported(self, name: str) -> str | None:
        # What an enclosing function's ``import`` binds ``name`` to; "" for another local.
        for node in reversed(self.scope):
            if not isinstance(node, (*_FUNCTIONS, ast.Lambda)):
                continue
            if name in _arg_names(node.args):
                return ""
            for item in ast.walk(node):
                if isinstance(item, ast.Name) and item.id == name and isinstance(
                        item.ctx, ast.Store):
                    return ""
                if isinstance(item, (ast.Import, ast.ImportFrom)):
                    for alias in item.names:
                        if (alias.asname or alias.name.partition(".")[0]) == name:
                            return self.imported_path(item, alias)
        return None

    def imported_path(self, node: ast.Import | ast.ImportFrom, alias: ast.alias) -> str:
        if isinstance(node, ast.Import):
            return alias.name if alias.asname else alias.name.partition(".")[0]
        package = self.module
        if node.level and not (self.index.module_file(self.module) or "").endswith(
                "__init__.py"):
            package = package.rpartition(".")[0]
        for _ in range(max(node.level - 1, 0)):
            package = package.rpartition(".")[0]
        base = ".".join(p for p in ((package if node.level else ""), node.module or "") if p)
        return f"{base}.{alias.name}" if base else alias.name

    def calls_in(self, tree: ast.Module, path: str) -> Iterator[_Site]:
        """Yields the calls of ``tree`` that reach the target."""
        for node, scope in _scoped_calls(tree):
            if any(isinstance(a, ast.Starred) for a in node.args) or any(
                    k.arg is None for k in node.keywords):
                continue
            self.scope = scope
            self.narrowed = self.narrowings(scope).get(id(node), {})
            how = self.reaches(node.func, scope)
            if how is not False:
                yield _Site(len(node.args), tuple(k.arg for k in node.keywords if k.arg),
                            how, f"{path}:{node.lineno}")

    def narrowings(self, scope: _Scope) -> dict[int, Narrowed]:
        """Returns what ``isinstance`` tests narrow in the innermost function (read once)."""
        function = scope[-1] if scope and isinstance(scope[-1], _FUNCTIONS) else None
        if function is None:
            return {}
        if id(function) not in self._narrowings:
            self._narrowings[id(function)] = narrowings(function)
        return self._narrowings[id(function)]

    def reaches(self, func: ast.expr, scope: _Scope) -> Through | None | Literal[False]:
        """Returns how a call of ``func`` reaches the target (None: as a plain call), or
        False when it does not, or may not."""
        target, hooked = self.target, self.hooked
        named = self.named(func)
        if not self.typed or named is False:  # typed calls are among those of that name
            return named
        if hooked is None:  # a module function or a class, called by a name that is it
            if isinstance(func, ast.Name) and self.local(func.id, scope) is not None:
                return False
            found = self.lookup(func)
            return None if found is not None and found.where == target.where else False
        if target.name == "__init__":
            return self.constructor(func)
        if not (isinstance(func, ast.Attribute) and func.attr == target.name):
            return False
        receiver = self.receiver(func.value, scope)
        if receiver is None or not self.dispatches(*receiver):
            return False
        return receiver[0]

    def named(self, func: ast.expr) -> Through | None | Literal[False]:
        """Returns how a call reaches a target of that name, whatever the receiver."""
        owner = (self.hooked or "").rpartition(".")[2]
        called = func.attr if isinstance(func, ast.Attribute) else (
            func.id if isinstance(func, ast.Name) else None)
        if self.target.name == "__init__" and owner:
            # ``super().__init__(...)`` is left out: which class's ``__init__`` it reaches
            # is the caller's MRO, not a name auxcheck can read here.
            if called == owner:
                return "instance"
            through = isinstance(func, ast.Attribute) and (
                isinstance(func.value, ast.Name) and func.value.id == owner
                or isinstance(func.value, ast.Attribute) and func.value.attr == owner)
            return "class" if called == "__init__" and through else False
        if called != self.target.name:
            return False
        if not owner:
            return None
        if not isinstance(func, ast.Attribute):
            return False
        through_class = isinstance(func.value, ast.Name) and func.value.id == owner
        return "class" if through_class else "instance"

    def constructor(self, func: ast.expr) -> Through | Literal[False]:
        # ``Cls(...)`` runs ``Cls.__init__(self, ...)``; ``Cls.__init__(obj, ...)`` passes it.
        # Only the hooked class itself: a subclass may get an ``__init__`` of its own that
        # auxcheck does not see (a dataclass's), and ``super().__init__(...)`` reaches
        # whatever the caller's MRO holds.
        through = func.value if isinstance(func, ast.Attribute) and (
            func.attr == "__init__") else None
        found = self.lookup(through or func)
        if found is None or found.kind != "class" or found.where != self.hooked:
            return False
        return "class" if through is not None else "instance"

    def dispatches(self, how: Through, cls: str) -> bool:
        """Returns True when a call through ``cls`` may reach the target: ``cls`` is the
        hooked class or a subclass that keeps its member, or (through an instance, which
        may be of the hooked class) a base of the hooked class that has a member of that
        name. A class unrelated to the hooked one never reaches it."""
        if self.hooked is None:
            return False
        module, qualname = self.index.split_where(cls)
        found = self.index.member(module, qualname, self.target.name)
        if _derives(self.index, cls, self.hooked, frozenset()):
            return found.ok and found.certain and found.where == self.target.where
        return how == "instance" and found.ok and found.certain and _derives(
            self.index, self.hooked, cls, frozenset())

    def receiver(self, value: ast.expr, scope: _Scope) -> tuple[Through, str] | None:
        """Returns (through the class or an instance, the class) of a receiver, or None."""
        narrowed = self.narrowed.get(dotted_name(value) or "")
        if narrowed is not None:  # inside ``if isinstance(value, C):``
            cls = self.lookup(narrowed)
            return ("instance", cls.where) if cls is not None and cls.kind == "class" \
                and cls.certain else None
        if isinstance(value, ast.Name):
            local = self.local(value.id, scope)
            if local is not None:
                return local or None
        if isinstance(value, ast.Call):  # ``Cls(...).m(...)``, ``get_x().m(...)``
            if isinstance(value.func, ast.Name) and self.local(value.func.id, scope) is not None:
                return None
            made = self.made(value.func)
            return ("instance", made) if made else None
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
            declared = self.declared(value.value.id, value.attr, scope)
            if declared is not None:
                return declared or None
        found = self.lookup(value)
        if found is not None and found.kind == "class" and found.certain:
            return "class", found.where
        return None

    def declared(self, name: str, attr: str,
                 scope: _Scope) -> tuple[Through, str] | Literal[""] | None:
        """Returns the class of ``self.attr`` in a method, where every assignment of it in
        the class and its bases names that class: ``""`` when none does or they disagree,
        None when ``name`` is no method's ``self``."""
        bound = self.local(name, scope)
        for at in range(len(scope) - 1, 0, -1):
            method, owner = scope[at], scope[at - 1]
            if not (isinstance(method, _FUNCTIONS) and name in _arg_names(method.args)):
                continue
            first = [*method.args.posonlyargs, *method.args.args][:1]
            if not (bound and isinstance(owner, ast.ClassDef) and first
                    and first[0].arg == name and bound == self.bound_first(method, scope[:at])):
                return None
            if bound[0] != "instance":
                return ""
            typed = attribute_class(self.index, bound[1], attr)
            return ("instance", typed) if typed else ""
        return None

    def local(self, name: str, scope: _Scope) -> tuple[Through, str] | Literal[""] | None:
        """Returns what a function's own ``name`` holds: (how, class), ``""`` when it is a
        local of unknown type, None when no enclosing function binds it."""
        for at in range(len(scope) - 1, -1, -1):
            node = scope[at]
            if isinstance(node, ast.Lambda) and name in _arg_names(node.args):
                return ""
            if not isinstance(node, _FUNCTIONS):
                continue
            args = [*node.args.posonlyargs, *node.args.args]
            if name in _arg_names(node.args):
                owner = scope[at - 1] if at else None
                if isinstance(owner, ast.ClassDef) and args and args[0].arg == name:
                    return self.bound_first(node, scope[:at])
                arg = next(a for a in _all_args(node.args) if a.arg == name)
                return self.annotated(arg.annotation)
            bindings = [n for n in ast.walk(node) if isinstance(n, ast.Name)
                        and n.id == name and isinstance(n.ctx, ast.Store)]
            if bindings:
                return self.assigned(node, name) if len(bindings) == 1 else ""
        return None

    def bound_first(self, method: ast.FunctionDef | ast.AsyncFunctionDef,
                    classes: _Scope) -> tuple[Through, str] | Literal[""]:
        # ``self`` (``cls``) of a method: an instance of (a class deriving from) its class.
        decorators = {decorator_name(d) for d in method.decorator_list}
        if "staticmethod" in decorators or not all(isinstance(c, ast.ClassDef) for c in classes):
            return ""
        qualname = ".".join(c.name for c in classes if isinstance(c, ast.ClassDef))
        return ("class" if "classmethod" in decorators else "instance",
                f"{self.module}.{qualname}")

    def annotated(self, annotation: ast.expr | None) -> tuple[Through, str] | Literal[""]:
        # A parameter or local declared as the class (``X``, ``"X"``, ``Optional[X]``), looked
        # up where the call is (a function's own import first).
        annotation = annotated_expr(annotation)
        found = self.lookup(annotation) if annotation is not None else None
        if found is None or found.kind != "class" or not found.certain:
            return ""
        return "instance", found.where

    def assigned(self, function: ast.FunctionDef | ast.AsyncFunctionDef,
                 name: str) -> tuple[Through, str] | Literal[""]:
        # A local bound once: ``x = Cls(...)`` or ``x: Cls = ...``.
        for node in ast.walk(function):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and (
                    node.target.id == name):
                return self.annotated(node.annotation)
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == name for t in node.targets):
                if not isinstance(node.value, ast.Call):
                    return ""
                made = self.made(node.value.func)
                return ("instance", made) if made else ""
        return ""

    def made(self, func: ast.expr) -> str:
        """Returns the class of what calling ``func`` returns: the class it names, or the
        class a function is annotated to return; ``""`` when unknown."""
        found = self.lookup(func)
        if found is None or not found.certain:
            return ""
        if found.kind == "class":
            return found.where
        return (returned_class(self.index, found.where) or "") if found.kind == "function" \
            else ""


def _arg_names(args: ast.arguments) -> set[str]:
    return {a.arg for a in _all_args(args)}


def _all_args(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []),
            *args.kwonlyargs, *([args.kwarg] if args.kwarg else [])]


def _derives(index: ReleaseIndex, cls: str, base: str, seen: frozenset[str]) -> bool:
    """Returns True when class ``cls`` is ``base`` or derives from it, as far as auxcheck
    can read (a base it cannot resolve counts as not deriving)."""
    if cls == base:
        return True
    if cls in seen:
        return False
    module, qualname = index.split_where(cls)
    summary = index.classes(module).get(qualname)
    if summary is None:
        return False
    for name in summary.bases:
        head, *rest = name.split(".")
        if not head.isidentifier():
            continue
        found = index.provides(module, head)
        for part in rest:
            if found.ok and found.certain:
                found = index.attribute(found, part)
        if found.ok and found.certain and found.kind == "class" and _derives(
                index, found.where, base, seen | {cls}):
            return True
    return False
