"""Signatures in a release, read with ``ast``: functions, methods, constructors.

What ``HookRegistry`` wraps and what a plugin calls, as SGLang's source defines them in
one release: a function or method with its decorators (``staticmethod`` and
``classmethod`` change what the wrapper passes), a class's constructor (its own
``__init__``, one inherited from an SGLang base, or the fields of a dataclass or
NamedTuple); the calls SGLang's own code makes to it are read in
:mod:`auxcheck._releases.call_sites` (re-exported here). Nothing is imported; answers auxcheck cannot
give are None, and the caller says so in a note.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from auxcheck._core.pyast import dotted_name
from auxcheck._core.signatures import Param, parse_function
from auxcheck._releases.call_sites import Through, call_sites, is_test_path, sglang_lookup
from auxcheck._releases.derived_cache import BAD, Section, cached
from auxcheck._releases.index import Lookup, ReleaseIndex
from auxcheck._releases.stubcheck import dataclass_options, runtime_statements

__all__ = [
    "Callee",
    "Through",
    "call_sites",
    "callee",
    "class_members",
    "is_test_path",
    "names_in",
    "outside_origin",
    "parsed",
    "sglang_lookup",
]

CalleeKind = Literal["function", "method", "classmethod", "staticmethod", "class", "property"]

_PLAIN = frozenset({"object", "ABC", "abc.ABC", "Protocol", "typing.Protocol", "Generic",
                    "typing.Generic"})
_PROPERTIES = frozenset({"property", "cached_property"})


@dataclass(frozen=True, slots=True)
class Callee:
    """A callable of the release: where it is defined, what kind, its parameters as declared.

    For a class, ``params`` are its constructor's, ``self`` first. ``owner`` is the
    class a method belongs to (None for a module function or a class).
    """

    where: str
    kind: CalleeKind
    params: tuple[Param, ...]
    location: str
    owner: str | None = None
    decorators: tuple[str, ...] = ()
    """The decorators of a ``def``, as written (``torch.no_grad``)."""

    @property
    def name(self) -> str:
        """Returns the last part of ``where``."""
        return self.where.rpartition(".")[2]


def parsed(index: ReleaseIndex, module: str) -> ast.Module | None:
    """Returns the whole ast of ``module`` in the release (the index keeps it)."""
    return index.tree(module)


def _find(body: Iterable[ast.stmt], name: str) -> ast.stmt | None:
    found: ast.stmt | None = None
    for node in runtime_statements(body, stub=False):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.name == name):
            found = node  # the last definition is the one the module keeps
    return found


def _definition(index: ReleaseIndex, where: str) -> tuple[str, list[ast.stmt]] | None:
    """Returns (module, [the definitions from the module down to ``where``]), or None."""
    module, qualname = index.split_where(where)
    tree = parsed(index, module)
    if tree is None:
        return None
    chain: list[ast.stmt] = []
    body: list[ast.stmt] = tree.body
    for part in qualname.split("."):
        node = _find(body, part)
        if node is None:
            return None
        chain.append(node)
        body = node.body if isinstance(node, ast.ClassDef) else []
    return module, chain


def callee(index: ReleaseIndex, where: str) -> Callee | None:
    """Returns the function, method or class defined at ``where`` in the release, or None.

    None when auxcheck cannot read it: not a ``def`` or ``class`` (an assignment, an
    alias, a property), or a class whose constructor it cannot see. Read once per index.
    """
    return index.derive("callee", where, lambda: cached(
        index, _CALLEES, where, lambda: _callee(index, where)))


_KINDS = frozenset(("function", "method", "classmethod", "staticmethod", "class", "property"))
_PARAM_KINDS = frozenset(("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL",
                          "KEYWORD_ONLY", "VAR_KEYWORD"))


def _encoded(found: Callee | None) -> object:
    if found is None:
        return None
    return [found.where, found.kind, [[p.name, p.kind, p.default] for p in found.params],
            found.location, found.owner, list(found.decorators)]


def _decoded(entry: object) -> Callee | None | object:
    """Returns the cached callee, :data:`BAD` for an entry ``_encoded`` does not write."""
    if entry is None:
        return None
    if not (isinstance(entry, list) and len(entry) == 6):
        return BAD
    where, kind, params, location, owner, decorators = entry
    if not (isinstance(where, str) and kind in _KINDS and isinstance(params, list)
            and isinstance(location, str) and (owner is None or isinstance(owner, str))
            and isinstance(decorators, list) and all(isinstance(d, str) for d in decorators)
            and all(_is_param(p) for p in params)):
        return BAD
    return Callee(where, kind, tuple(Param(*p) for p in params), location, owner,
                  tuple(decorators))


def _is_param(entry: object) -> bool:
    return (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
            and entry[1] in _PARAM_KINDS and (entry[2] is None or isinstance(entry[2], str)))


_CALLEES: Section[Callee | None] = Section("callee", _encoded, _decoded)


def _callee(index: ReleaseIndex, where: str) -> Callee | None:
    found = _definition(index, where)
    if found is None:
        return None
    module, chain = found
    node = chain[-1]
    path = index.module_file(module) or module
    location = f"{path}:{node.lineno}"
    if isinstance(node, ast.ClassDef):
        params = _constructor(index, module, node, frozenset())
        return None if params is None else Callee(where, "class", params, location)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    info = parse_function(node)
    owner = where.rpartition(".")[0] if len(chain) > 1 and isinstance(
        chain[-2], ast.ClassDef) else None
    kind: CalleeKind = "function"
    if owner is not None:
        kind = "method"
        for decorator in info.decorators:
            if decorator in ("staticmethod", "classmethod"):
                kind = decorator  # type: ignore[assignment]
            elif decorator in _PROPERTIES:
                kind = "property"
    decorators = tuple(ast.unparse(d.func if isinstance(d, ast.Call) else d)
                       for d in node.decorator_list)
    return Callee(where, kind, info.params, location, owner, decorators)


def outside_origin(index: ReleaseIndex, module: str, expr: ast.expr) -> str | None:
    """Returns the dotted origin outside SGLang that ``expr`` names in ``module`` (however
    imported: ``msgspec.Struct``, ``from msgspec import Struct``, an alias), or None."""
    text = dotted_name(expr)
    summary = index.summary(module)
    if text is None or summary is None:
        return None
    head, _, rest = text.partition(".")
    origin = summary.imported.get(head)
    if origin is not None and not origin.module.startswith("sglang"):
        return f"{origin}.{rest}" if rest else str(origin)
    found = sglang_lookup(index, module, expr)
    if found is not None and found.kind == "external":
        return found.where  # a third-party name SGLang re-exports
    return None




_STRUCT = "msgspec.Struct"


def _constructor(index: ReleaseIndex, module: str, node: ast.ClassDef,
                 seen: frozenset[str]) -> tuple[Param, ...] | None:
    init = _find(node.body, "__init__")
    if isinstance(init, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return parse_function(init).params
    if _find(node.body, "__new__") is not None or any(k.arg == "metaclass" for k in node.keywords):
        return None
    if any(outside_origin(index, module, _unsubscripted(b)) == _STRUCT for b in node.bases):
        fields = _struct_fields(index, module, node, seen)
        return None if fields is None else (Param("self", "POSITIONAL_OR_KEYWORD"), *fields)
    if _is_dataclass(node):
        fields = _fields(index, module, node, seen)
        return None if fields is None else (Param("self", "POSITIONAL_OR_KEYWORD"), *fields)
    bases = [ast.unparse(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases]
    if any(b in ("NamedTuple", "typing.NamedTuple") for b in bases):
        return (Param("self", "POSITIONAL_OR_KEYWORD"), *_annotated(node))
    readable = [b for b in bases if b not in _PLAIN]
    if not readable:
        return (Param("self", "POSITIONAL_OR_KEYWORD"),)
    base = _base_class(index, module, readable[0], seen)
    if base is None or len(readable) > 1 and _constructor_of_any(index, readable[1:], module,
                                                                  seen):
        return None
    base_module, base_node = base
    return _constructor(index, base_module, base_node, seen | {f"{module}.{node.name}"})


def _constructor_of_any(index: ReleaseIndex, bases: Sequence[str], module: str,
                        seen: frozenset[str]) -> bool:
    # A second base with its own constructor makes the MRO matter: cannot tell then.
    for base in bases:
        found = _base_class(index, module, base, seen)
        if found is None or _find(found[1].body, "__init__") is not None:
            return True
    return False


def _base_class(index: ReleaseIndex, module: str, base: str,
                seen: frozenset[str]) -> tuple[str, ast.ClassDef] | None:
    head, *rest = base.split(".")
    if not head.isidentifier():
        return None
    found = index.provides(module, head)
    for part in rest:
        if not found.ok or not found.certain:
            return None
        found = index.attribute(found, part)
    if not (found.ok and found.certain and found.kind == "class") or found.where in seen:
        return None
    definition = _definition(index, found.where)
    if definition is None or not isinstance(definition[1][-1], ast.ClassDef):
        return None
    return definition[0], definition[1][-1]


def _unsubscripted(base: ast.expr) -> ast.expr:
    return base.value if isinstance(base, ast.Subscript) else base


def _struct_fields(index: ReleaseIndex, module: str, node: ast.ClassDef,
                   seen: frozenset[str]) -> list[Param] | None:
    """Returns the ``__init__`` parameters of a msgspec Struct: its annotated fields in
    order (``_private`` ones too), keyword-only under ``kw_only=True``, a field without a
    value (or a ``msgspec.field`` without ``default``/``default_factory``) required; None
    for what auxcheck does not model here (fields inherited from another Struct)."""
    if len(node.bases) != 1:
        return None  # fields inherited from another Struct: left to a later reading
    kw_only = any(k.arg == "kw_only" and ast.unparse(k.value) == "True" for k in node.keywords)
    fields: list[Param] = []
    for item in node.body:
        if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
            continue
        annotation = ast.unparse(item.annotation)
        if "ClassVar" in annotation:
            continue
        default = None if item.value is None else "..."
        if isinstance(item.value, ast.Call) and ast.unparse(item.value.func).rpartition(
                ".")[2] == "field":
            options = {k.arg for k in item.value.keywords}
            default = "..." if {"default", "default_factory"} & options else None
        fields.append(Param(item.target.id,
                            "KEYWORD_ONLY" if kw_only else "POSITIONAL_OR_KEYWORD", default))
    return fields


def _is_dataclass(node: ast.ClassDef) -> bool:
    # A dataclass with init=False keeps the constructor it inherits.
    options = dataclass_options(node.decorator_list)
    return options is not None and options["init"] != "False"


def _fields(index: ReleaseIndex, module: str, node: ast.ClassDef,
            seen: frozenset[str]) -> list[Param] | None:
    inherited: list[Param] = []
    for base in node.bases:
        text = ast.unparse(base)
        if text in _PLAIN:
            continue
        found = _base_class(index, module, text, seen)
        if found is None or not _is_dataclass(found[1]):
            return None  # a base whose fields auxcheck cannot see
        more = _fields(index, found[0], found[1], seen | {f"{module}.{node.name}"})
        if more is None:
            return None
        inherited = [p for p in inherited if p.name not in {m.name for m in more}] + more
    kw_only = (dataclass_options(node.decorator_list) or {}).get("kw_only") == "True"
    own: list[Param] = []
    for param in _annotated(node):
        if param.kind == "KW_ONLY_MARK":
            kw_only = True
            continue
        kind = "KEYWORD_ONLY" if kw_only or param.kind == "KEYWORD_ONLY" else param.kind
        own.append(Param(param.name, kind, param.default))
    names = {p.name for p in own}
    merged = [p for p in inherited if p.name not in names] + own
    # Python orders keyword-only fields after the others in __init__.
    return ([p for p in merged if p.kind != "KEYWORD_ONLY"]
            + [p for p in merged if p.kind == "KEYWORD_ONLY"])


def _annotated(node: ast.ClassDef) -> Iterator[Param]:
    for item in node.body:
        if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
            continue
        annotation = ast.unparse(item.annotation)
        if annotation.rpartition(".")[2] == "KW_ONLY":
            yield Param(item.target.id, "KW_ONLY_MARK")
            continue
        if "ClassVar" in annotation:
            continue
        kind, default = "POSITIONAL_OR_KEYWORD", None
        if item.value is not None:
            default = "..."
            if isinstance(item.value, ast.Call) and ast.unparse(item.value.func).endswith("field"):
                options = {k.arg: ast.unparse(k.value) for k in item.value.keywords}
                if options.get("init") == "False":
                    continue
                if options.get("kw_only") == "True":
                    kind = "KEYWORD_ONLY"
                if not ({"default", "default_factory"} & set(options) or item.value.args):
                    default = None
        yield Param(item.target.id, kind, default)


# ---------------------------------------------------------------- fixes


def class_members(index: ReleaseIndex, module: str, qualname: str, *,
                  _seen: frozenset[str] = frozenset()) -> set[str]:
    """Returns every member name of class ``module.qualname`` auxcheck can see, bases too."""
    where = f"{module}.{qualname}"
    cls = index.classes(module).get(qualname)
    if cls is None or where in _seen:
        return set()
    names = set(cls.members)
    for base in cls.bases:
        head, *rest = base.split(".")
        if base in _PLAIN or not head.isidentifier():
            continue
        found = index.provides(module, head)
        for part in rest:
            if found.ok and found.certain:
                found = index.attribute(found, part)
        if found.ok and found.certain and found.kind == "class":
            owner, name = index.split_where(found.where)
            names |= class_members(index, owner, name, _seen=_seen | {where})
    return names


def names_in(owner: Lookup, index: ReleaseIndex) -> list[str]:
    """Returns the names a module binds, or a class has (bases included): for fix hints."""
    if owner.kind == "module":
        summary = index.summary(owner.where)
        return [*summary.defined, *summary.imported] if summary is not None else []
    if owner.kind == "class":
        module, qualname = index.split_where(owner.where)
        return sorted(class_members(index, module, qualname))
    return []

