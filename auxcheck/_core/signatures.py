"""Signatures read from source, and Python's binding rules on them: calls and hook calls.

:func:`parse_function` reads a ``def``'s parameters with ``ast``: the one reader of a
signature in source, for stubcheck, the plugin scan and the release check alike.

One binding rule, used by ``auxcheck check --sglang`` on a plugin's hooks (AUX703) and calls into
SGLang (AUX704), and by the live-server guard on its own hooks: a call *binds* to a
signature when ``inspect.Signature.bind`` accepts it. A hook fits its target when every
call that binds to the target's signature, as ``HookRegistry``'s wrapper passes it on
(``result`` first for AFTER, ``original_fn`` first for AROUND), binds to the hook's.

Every call cannot be tried; the calls tried are one per way of passing each parameter:
the required arguments by position, each optional positional parameter by position,
each parameter that has a name by keyword, one argument more for ``*args`` and an
unknown keyword for ``**kwargs``. A signature is a set of independent per-parameter
rules plus the required ones, so a hook that takes each of these takes every call.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

__all__ = [
    "HOOK_PREFIX",
    "CallShape",
    "FunctionInfo",
    "HookFit",
    "Misfit",
    "Param",
    "SignatureCarrier",
    "bind_problem",
    "call_shapes",
    "decorator_name",
    "fit_hook",
    "parse_function",
    "signature_of",
]

HookKind = Literal["BEFORE", "AFTER", "AROUND", "REPLACE"]

HOOK_PREFIX: Mapping[str, tuple[str, ...]] = {
    "BEFORE": (), "REPLACE": (), "AFTER": ("result",), "AROUND": ("original_fn",)}
"""What ``_wrap_fn`` passes a hook before the target's own arguments, per HookType."""

_UNKNOWN_KEYWORD = "<a keyword the target takes through **kwargs>"
_P = inspect.Parameter


# ---------------------------------------------------------------- signatures read from source


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter: name, kind (``inspect`` spelling) and default source (None: none)."""

    name: str
    kind: str
    default: str | None = None


@dataclass(frozen=True, slots=True)
class FunctionInfo:
    """A function or method: its parameters, decorators and whether it is async."""

    name: str
    params: tuple[Param, ...]
    decorators: frozenset[str] = frozenset()
    is_async: bool = False


def parse_function(node: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionInfo:
    """Returns a ``def``'s parameters, decorator names (last part) and whether it is async."""
    decorators = frozenset(decorator_name(d) for d in node.decorator_list)
    is_async = isinstance(node, ast.AsyncFunctionDef)
    return FunctionInfo(node.name, _parse_params(node.args), decorators, is_async)


def _parse_params(args: ast.arguments) -> tuple[Param, ...]:
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    params = [
        Param(arg.arg, kind, _unparse(default))
        for arg, default, kind in zip(
            positional,
            defaults,
            ["POSITIONAL_ONLY"] * len(args.posonlyargs)
            + ["POSITIONAL_OR_KEYWORD"] * len(args.args),
        )
    ]
    if args.vararg is not None:
        params.append(Param(args.vararg.arg, "VAR_POSITIONAL"))
    params += [
        Param(arg.arg, "KEYWORD_ONLY", _unparse(default))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults)
    ]
    if args.kwarg is not None:
        params.append(Param(args.kwarg.arg, "VAR_KEYWORD"))
    return tuple(params)


def _unparse(node: ast.expr | None) -> str | None:
    return None if node is None else ast.unparse(node)


def decorator_name(node: ast.expr) -> str:
    """Returns the last part of a decorator's name: ``dataclass`` for ``@dataclasses.dataclass``."""
    target = node.func if isinstance(node, ast.Call) else node
    return ast.unparse(target).rsplit(".", 1)[-1]


# ---------------------------------------------------------------- binding rules


@dataclass(frozen=True, slots=True)
class CallShape:
    """One call: how many arguments by position, which by keyword, and what it tries."""

    positional: int
    keywords: tuple[str, ...]
    label: str
    where: str = ""

    def text(self, name: str, *, prefix: Sequence[str] = ()) -> str:
        """Returns the call written out, ``name(result, a1, a2, k=...)``."""
        args = [*prefix, *(f"a{i + 1}" for i in range(self.positional)),
                *(f"{k}=..." if k.isidentifier() else "**extra" for k in self.keywords)]
        return f"{name}({', '.join(args)})"


@dataclass(frozen=True, slots=True)
class Misfit:
    """A call the target takes and the hook does not: what it tried, and Python's error."""

    shape: CallShape
    error: str


@dataclass(frozen=True, slots=True)
class HookFit:
    """The judgement of one hook on one target.

    ``verdict``: ``ok``; ``fail`` when every call of the target fails (``always``), or a
    call SGLang's own code makes (``evidence``) fails; ``note`` when only calls no SGLang
    call site was seen to make fail.
    """

    verdict: Literal["ok", "fail", "note"]
    misfits: tuple[Misfit, ...] = ()
    evidence: tuple[Misfit, ...] = ()
    always: bool = False
    sites: int = 0


def signature_of(params: Iterable[Param], *, drop_first: bool = False,
                 first_positional_only: bool = False) -> inspect.Signature:
    """Returns an ``inspect.Signature`` for parameters read from source.

    ``drop_first`` removes ``self``/``cls`` (a bound method); ``first_positional_only``
    makes it positional-only (a method called through an instance passes it so).
    Raises ValueError when the parameters are not a valid signature.
    """
    return _signature(tuple(params), drop_first, first_positional_only)


@lru_cache(maxsize=4096)
def _signature(items: tuple[Param, ...], drop_first: bool,
               first_positional_only: bool) -> inspect.Signature:
    # Signatures are immutable: many hooks on one target share its signature object.
    if drop_first and items and items[0].kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD"):
        items = items[1:]
    built: list[inspect.Parameter] = []
    for at, param in enumerate(items):
        kind = getattr(_P, param.kind)
        if at == 0 and first_positional_only and kind is _P.POSITIONAL_OR_KEYWORD:
            kind = _P.POSITIONAL_ONLY
        default = _P.empty if param.default is None or kind in (
            _P.VAR_POSITIONAL, _P.VAR_KEYWORD) else param.default
        built.append(inspect.Parameter(param.name, kind, default=default))
    return _ReadSignature(built)


class _ReadSignature(inspect.Signature):
    """A signature read from source: immutable, so its hash (the key of the caches above
    and of a release's judgements) is computed once, not per parameter per lookup."""

    __slots__ = ("_hash",)
    _hash: int

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            self._hash = super().__hash__()
            return self._hash


class SignatureCarrier:
    """A callable whose ``inspect.signature`` is one read from source (it is never called)."""

    def __init__(self, signature: inspect.Signature) -> None:
        self.__signature__ = signature

    def __call__(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover - never called
        return None


def bind_problem(signature: inspect.Signature, positional: int, keywords: Iterable[str], *,
                 prefix: int = 0) -> str | None:
    """Returns Python's complaint when the call does not bind to ``signature``, else None."""
    keys = tuple(keywords)
    try:  # the same call is tried on the same signature for every hook and call alike
        return _bind_problem_once(signature, prefix + positional, keys)
    except TypeError:  # unhashable: a live function's signature with a list default
        return _bind_problem(signature, prefix + positional, keys)


def _bind_problem(signature: inspect.Signature, positional: int,
                  keywords: tuple[str, ...]) -> str | None:
    try:
        signature.bind(*([None] * positional), **{k: None for k in keywords})
    except TypeError as exc:
        return str(exc)
    return None


def call_shapes(target: inspect.Signature) -> list[CallShape]:
    """Returns one call per way of passing each of ``target``'s parameters (see the module)."""
    return list(_shapes_of(target))


def _shapes_of(target: inspect.Signature) -> tuple[CallShape, ...]:
    try:  # many hooks on one target try the same calls
        return _call_shapes_once(target)
    except TypeError:  # unhashable: a live function's signature with a list default
        return _call_shapes(target)


def _call_shapes(target: inspect.Signature) -> tuple[CallShape, ...]:
    params = list(target.parameters.values())
    positional = [p for p in params if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)]
    keyword_only = [p for p in params if p.kind is _P.KEYWORD_ONLY]
    required = sum(1 for p in positional if p.default is _P.empty)
    needed = tuple(p.name for p in keyword_only if p.default is _P.empty)
    shapes = [CallShape(required, needed, "the required arguments")]
    for at in range(required, len(positional)):
        shapes.append(CallShape(at + 1, needed, f"`{positional[at].name}` by position"))
    for at, param in enumerate(positional):
        if param.kind is _P.POSITIONAL_ONLY:
            continue
        later = tuple(p.name for p in positional[at:] if p.default is _P.empty)
        named = later if param.name in later else (*later, param.name)
        shapes.append(CallShape(min(at, required), named + needed, f"`{param.name}` by keyword"))
    for param in keyword_only:
        if param.default is not _P.empty:
            shapes.append(CallShape(required, (*needed, param.name), f"`{param.name}` by keyword"))
    if any(p.kind is _P.VAR_POSITIONAL for p in params):
        shapes.append(CallShape(len(positional) + 1, needed, "one more argument by position "
                                "(the target takes *args)"))
    if any(p.kind is _P.VAR_KEYWORD for p in params):
        shapes.append(CallShape(required, (*needed, _UNKNOWN_KEYWORD),
                                "a keyword the target takes through **kwargs"))
    return tuple(s for s in shapes if bind_problem(target, s.positional, s.keywords) is None)


def fit_hook(target: inspect.Signature, hook: inspect.Signature, hook_type: str, *,
             sites: Sequence[CallShape] = ()) -> HookFit:
    """Returns whether ``hook`` takes every call the wrapper of ``hook_type`` passes it.

    ``target`` is the signature callers call (``self`` first for a method); ``sites`` are
    calls SGLang's own code makes, as shapes of that signature: the evidence that turns a
    misfit no caller is known to make into a failure.
    """
    prefix = len(HOOK_PREFIX.get(hook_type, ()))
    misfits: list[Misfit] = []
    seen: set[str] = set()
    positional_failed = False
    shapes = _shapes_of(target)
    failing = 0
    for shape in shapes:
        problem = bind_problem(hook, shape.positional, shape.keywords, prefix=prefix)
        failing += problem is not None
        if problem is None or shape.label in seen:
            continue
        if shape.label.endswith("by position") and positional_failed:
            continue  # one more position fails alike: the first says it
        positional_failed = positional_failed or shape.label.endswith("by position")
        seen.add(shape.label)
        misfits.append(Misfit(shape, problem))
    if not misfits:
        return HookFit("ok")
    always = failing == len(shapes)  # no way of calling the target reaches the hook intact
    relevant = [s for s in sites if bind_problem(target, s.positional, s.keywords) is None]
    evidence = tuple(Misfit(s, problem) for s in relevant
                     if (problem := bind_problem(hook, s.positional, s.keywords,
                                                 prefix=prefix)) is not None)
    verdict: Literal["fail", "note"] = "fail" if always or evidence else "note"
    return HookFit(verdict, tuple(misfits), evidence, always, len(relevant))


_bind_problem_once = lru_cache(maxsize=65536)(_bind_problem)
_call_shapes_once = lru_cache(maxsize=4096)(_call_shapes)
