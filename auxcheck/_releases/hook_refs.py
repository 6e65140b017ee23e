"""A plugin's hooks as the source names them, and the signatures they resolve to.

``HookRegistry.register(target, hook, ...)`` takes any callable; the scan keeps the
expression (:class:`HookRef`) and every file's definitions and imports
(:class:`PluginModule`), and :func:`resolve_hook` follows the expression to a ``def`` or
``class`` of the project: a function here or in another module of the plugin, a
method through its class or ``self``, ``functools.partial`` of those, a lambda, a
``@plugin_hook``-decorated definition. Names are looked up as Python binds them
(:mod:`auxcheck._releases.plugin_names`): the enclosing functions, then the module, never the
class around a method. What it cannot follow (a parameter, a name defined on two branches)
is said in :attr:`ResolvedHook.unknown`, never guessed.
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field

from auxcheck._core.pyast import dotted_name
from auxcheck._core.signatures import FunctionInfo, Param, SignatureCarrier, signature_of
from auxcheck._releases.plugin_names import NameSeen

__all__ = [
    "CLEAR_DECORATORS",
    "HookRef",
    "PluginFunction",
    "PluginModule",
    "ResolvedHook",
    "hook_ref",
    "is_clear_decorator",
    "resolve_hook",
    "returns_of",
]

CLEAR_DECORATORS = frozenset({
    "plugin_hook", "wraps", "functools.wraps", "no_grad", "torch.no_grad", "inference_mode",
    "torch.inference_mode", "torch.compile", "lru_cache", "functools.lru_cache", "cache",
    "functools.cache", "abstractmethod", "abc.abstractmethod", "override",
    "typing.override", "typing_extensions.override", "staticmethod", "classmethod",
    "contextmanager", "contextlib.contextmanager", "torch.jit.ignore", "DynamicGradMode",
    "torch._dynamo.disable", "nvtx.annotate", "torch.profiler.record_function",
})
"""Decorators known to keep the signature callers bind to (or, for static/class methods,
to change it in a way auxcheck models). Others make a misfit a note."""


def is_clear_decorator(decorator: str) -> bool:
    """Returns True when ``decorator`` (as written: ``torch.no_grad``) keeps the signature."""
    return decorator in CLEAR_DECORATORS or decorator.rpartition(".")[2] in CLEAR_DECORATORS


@dataclass(frozen=True, slots=True)
class HookRef:
    """A hook as written at its registration: a dotted name, a partial, or a lambda."""

    text: str
    name: str | None
    scope: str = ""
    """The qualname of the function or class the registration sits in."""
    partial_positional: int = 0
    partial_keywords: tuple[str, ...] = ()
    lambda_params: tuple[Param, ...] | None = None


@dataclass(frozen=True, slots=True)
class PluginFunction:
    """A ``def`` of the plugin: its parameters, decorators (as written) and odd returns."""

    qualname: str
    info: FunctionInfo
    decorators: tuple[str, ...]
    location: str
    returns: tuple[str, ...] = ()
    """``return`` values that are neither None nor a pair (what a BEFORE hook may return)."""


@dataclass(frozen=True, slots=True)
class PluginModule:
    """One scanned file: its module name, definitions and what its names are bound to."""

    name: str
    functions: Mapping[str, PluginFunction]
    classes: frozenset[str]
    bindings: Mapping[str, str]
    values: Mapping[str, HookRef] = field(default_factory=dict)
    """Module-level ``NAME = partial(...)`` / ``lambda`` / another name: what NAME refers to."""
    bases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Each class's bases, by qualname: absolute dotted paths where the file imports them."""
    seen: Mapping[str, NameSeen] = field(default_factory=dict)
    """Every name each scope binds (``hook``, ``install.hook``, ``Plugin.hook``): the kind of
    binding a use of it sees once the scope ran, or why auxcheck cannot tell."""


@dataclass(frozen=True, slots=True)
class ResolvedHook:
    """What a hook resolves to: its call signature, or why auxcheck cannot tell."""

    name: str
    signature: inspect.Signature | None = None
    is_class: bool = False
    function: PluginFunction | None = None
    unclear: tuple[str, ...] = ()
    """Decorators whose effect on the signature auxcheck does not know."""
    unknown: str | None = None
    inherits: str | None = None
    """For a class without an ``__init__`` of its own: its first base, whose constructor it
    takes (an absolute dotted path where the file imports it; ``object`` when it has none)."""


def hook_ref(node: ast.expr, scope: str) -> HookRef:
    """Returns the reference ``node`` (the hook argument of a registration) makes."""
    text = ast.unparse(node)
    if isinstance(node, ast.Lambda):
        from auxcheck._core.signatures import parse_function

        shim = ast.FunctionDef(name="<lambda>", args=node.args, body=[], decorator_list=[])
        return HookRef(text, None, scope, lambda_params=parse_function(shim).params)
    if isinstance(node, ast.Call) and (dotted_name(node.func) or "").rpartition(".")[2] == "partial":
        if node.args and not any(isinstance(a, ast.Starred) for a in node.args[1:]) and all(
                k.arg for k in node.keywords):
            inner = hook_ref(node.args[0], scope)
            return HookRef(text, inner.name, scope,
                           inner.partial_positional + len(node.args) - 1,
                           (*inner.partial_keywords, *(k.arg for k in node.keywords if k.arg)),
                           inner.lambda_params)
        return HookRef(text, None, scope)
    return HookRef(text, dotted_name(node), scope)


def returns_of(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """Returns the ``return`` values of ``node`` (not nested defs) that cannot be
    ``None`` or an ``(args, kwargs)`` pair: constants, other-length tuples, lists, dicts."""
    odd: list[str] = []
    stack: list[ast.AST] = list(node.body)
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(item, ast.Return) and item.value is not None:
            value = item.value
            if (isinstance(value, ast.Constant) and value.value is not None
                    or isinstance(value, ast.Tuple) and len(value.elts) != 2
                    and not any(isinstance(e, ast.Starred) for e in value.elts)
                    or isinstance(value, (ast.List, ast.Dict, ast.Set, ast.JoinedStr))):
                odd.append(f"line {item.lineno}: return {ast.unparse(value)}")
        stack.extend(ast.iter_child_nodes(item))
    return tuple(sorted(odd))


def resolve_hook(ref: HookRef, module: str, modules: Mapping[str, PluginModule]) -> ResolvedHook:
    """Returns the signature ``ref``, registered in ``module``, is called with."""
    if ref.lambda_params is not None:
        return _partial(ref, ResolvedHook(ref.text, signature_of(ref.lambda_params)))
    if ref.name is None:
        return ResolvedHook(ref.text, unknown=f"`{ref.text}` is not a name auxcheck can follow")
    home = modules.get(module)
    if home is None:
        return ResolvedHook(ref.text, unknown=f"{module} was not scanned")
    found = _lookup(ref.name, ref.scope, home, modules, depth=0)
    if isinstance(found, str):
        return ResolvedHook(ref.text, unknown=found)
    return _partial(ref, found)


def _partial(ref: HookRef, found: ResolvedHook) -> ResolvedHook:
    if found.signature is None or not (ref.partial_positional or ref.partial_keywords):
        return found
    try:
        shim = functools.partial(SignatureCarrier(found.signature), *[None] * ref.partial_positional,
                                 **{k: None for k in ref.partial_keywords})
        signature = inspect.signature(shim)
    except (TypeError, ValueError) as exc:
        return ResolvedHook(ref.text, unknown=f"`{ref.text}` cannot be applied ({exc})")
    return ResolvedHook(ref.text, signature, False, found.function, found.unclear)


def _lookup(name: str, scope: str, home: PluginModule, modules: Mapping[str, PluginModule], *,
            depth: int) -> ResolvedHook | str:
    head, _, rest = name.partition(".")
    if head in ("self", "cls") and rest and "." not in rest:
        owner = _enclosing_class(scope, home)
        if owner is None:
            return f"`{name}` outside a class of the plugin"
        return _member(f"{owner}.{rest}", home, bound=True, name=name)
    found = _visible(head, scope, home)
    if found is None:
        return f"`{name}` is not defined or imported in {home.name}"
    key, seen = found
    if seen.why is not None:
        return seen.why
    if seen.kind == "assign":
        value = home.values.get(key) if not rest else None
        if value is None or depth >= 8:
            return f"`{name}` is bound to a value auxcheck does not follow"
        if value.lambda_params is not None or value.name is None:
            return resolve_hook(value, home.name, modules)
        found_value = _lookup(value.name, "", home, modules, depth=depth + 1)
        return found_value if isinstance(found_value, str) else _partial(value, found_value)
    if seen.kind in ("def", "class"):
        return _definition(f"{key}.{rest}" if rest else key, home, name=name)
    origin = home.bindings.get(head)
    if origin is not None and depth < 8:
        parts = (f"{origin}.{rest}" if rest else origin).split(".")
        for at in range(len(parts) - 1, 0, -1):
            target = modules.get(".".join(parts[:at]))
            if target is not None:
                return _lookup(".".join(parts[at:]), "", target, modules, depth=depth + 1)
        return f"`{name}` comes from {parts[0]}, outside the plugin"
    return f"`{name}` is not defined or imported in {home.name}"


def _visible(head: str, scope: str, home: PluginModule) -> tuple[str, NameSeen] | None:
    """Returns the qualified name ``head`` used in ``scope`` refers to, as Python looks it up
    (the enclosing functions, then the module: a method never sees its class's names), and
    what a use of it sees."""
    parts = scope.split(".") if scope else []
    for end in range(len(parts), -1, -1):
        owner = ".".join(parts[:end])
        if end < len(parts) and owner in home.classes:
            continue
        key = f"{owner}.{head}" if owner else head
        seen = home.seen.get(key)
        if seen is not None:
            return key, seen
    return None


def _enclosing_class(scope: str, home: PluginModule) -> str | None:
    parts = scope.split(".") if scope else []
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in home.classes:
            return candidate
    return None


def _definition(qualname: str, home: PluginModule, *, name: str) -> ResolvedHook | str:
    if qualname in home.classes:
        return _constructor(qualname, home, name=name)
    owner = qualname.rpartition(".")[0]
    if owner in home.classes:
        return _member(qualname, home, bound=False, name=name)
    function = home.functions.get(qualname)
    if function is None:
        return f"`{name}` is not a function or class of {home.name}"
    return _signed(function, name, drop_first=False)


def _constructor(qualname: str, home: PluginModule, *, name: str) -> ResolvedHook:
    """A class as a hook: called as its constructor, its own ``__init__`` without ``self``.

    Without an ``__init__`` of its own the class's first base supplies it: ``inherits``
    names that base (as the file binds it), for the caller to judge."""
    init = home.functions.get(f"{qualname}.__init__")
    if init is None:
        bases = home.bases.get(qualname, ())
        if not bases:  # object's constructor: no arguments at all
            return ResolvedHook(name, inspect.Signature(), True)
        return ResolvedHook(name, is_class=True, inherits=bases[0])
    found = _signed(init, name, drop_first=True)
    if isinstance(found, str):
        return ResolvedHook(name, is_class=True, unknown=found)
    return ResolvedHook(name, found.signature, True, init, found.unclear)


def _member(qualname: str, home: PluginModule, *, bound: bool, name: str) -> ResolvedHook | str:
    seen = home.seen.get(qualname)
    if seen is not None and seen.why is not None:
        return seen.why
    function = home.functions.get(qualname)
    if function is None:
        return f"`{name}`: {home.name} has no method {qualname} (an inherited one is not read)"
    decorators = {d.rpartition(".")[2] for d in function.decorators}
    if "staticmethod" in decorators:
        return _signed(function, name, drop_first=False)
    if "classmethod" in decorators:
        return _signed(function, name, drop_first=True)
    return _signed(function, name, drop_first=bound)


def _signed(function: PluginFunction, name: str, *, drop_first: bool) -> ResolvedHook | str:
    try:
        signature = signature_of(function.info.params, drop_first=drop_first)
    except ValueError as exc:
        return f"`{name}`: its parameters cannot be read ({exc})"
    unclear = tuple(d for d in function.decorators if not is_clear_decorator(d))
    return ResolvedHook(name, signature, False, function, unclear)
