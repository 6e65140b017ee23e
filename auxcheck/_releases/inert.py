"""Hooks that apply but never take effect in a release (AUX706), read without importing SGLang.

``HookRegistry.apply_hooks`` replaces its target with ``setattr(owner, attr, wrapper)``:
the hook applies whenever the target exists (AUX701 judges that), yet runs only when
something calls the attribute it replaced. Two ways it never does:

- the target's class is a ``msgspec.Struct`` (a subclass, or made by ``msgspec.defstruct``)
  and the target is ``__post_init__``, ``__init__`` or ``__new__``: msgspec reads those
  once, when it creates the class, so a wrapper set on the class afterwards is never
  called. Measured with msgspec 0.23.0 (in SGLang 0.5.23's CPU environment) on a Struct
  subclass, a ``defstruct`` class and 0.5.23's own ``ServerArgs``, through the real
  ``HookRegistry``: construction, ``msgspec.convert`` and decoding run the original;
  a wrapper of any other method (``__setattr__``, ``__repr__``, ``__eq__``, ``__hash__``,
  ``__copy__``, plain methods) is called, so only those three are judged.
- nothing in the release refers to the target any more (no name, attribute or string
  naming it outside its own ``def``) while another release of the same run still does:
  SGLang stopped calling it. Dunder methods other than ``__init__`` and ``__call__`` are
  never judged (Python calls them implicitly); a decorated target (other than the
  decorators :data:`~auxcheck._releases.hook_refs.CLEAR_DECORATORS` lists) is never
  judged (a decorator may register it, as a route or a validator); nor is one whose
  module builds attribute names with f-strings or ``+`` that could spell it; nor an API
  SGLang's users call themselves (``sglang.srt.entrypoints``, ``sglang.lang``, what the
  ``sglang`` package exports, such as ``Engine``).
"""

from __future__ import annotations

import ast
import re
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from auxcheck._core.pyast import dotted_name
from auxcheck._releases.definitions import callee
from auxcheck._releases.hook_refs import is_clear_decorator
from auxcheck._releases.index import Lookup, ReleaseIndex
from auxcheck._releases.stubcheck import runtime_statements
from auxcheck._releases.summaries import module_of_path
from auxcheck.releases import ReleaseError, UndecodableSource

__all__ = [
    "STRUCT_INERT",
    "Inert",
    "inert_hook",
    "msgspec_problem",
    "uncalled_problem",
]

STRUCT_INERT = frozenset({"__post_init__", "__init__", "__new__"})
"""The methods a wrapper set on a msgspec Struct class after its creation never replaces."""

_CALLED_BY_NAME = ("__init__", "__call__")
"""Dunders judged by the uncalled check: through the class's name (construction, a call)."""
_STRUCT = "msgspec.Struct"
_DEFSTRUCT = "msgspec.defstruct"


@dataclass(frozen=True, slots=True)
class Inert:
    """Why a hook never takes effect in a release, and what to do instead."""

    seen: str
    hint: str


def inert_hook(target: str, index: ReleaseIndex,
               peers: Sequence[ReleaseIndex] = ()) -> Inert | None:
    """Returns why a hook on sglang ``target`` applies but never runs in ``index``'s release.

    None when it runs, or when auxcheck cannot tell. ``peers`` are the other releases of
    the same run: evidence that SGLang once called the target.
    """
    problem = msgspec_problem(target, index)
    if problem is not None:
        owner, _, attr = target.rpartition(".")
        return Inert(problem, f"hook a method SGLang calls on {owner.rpartition('.')[2]} once it "
                              f"is built, or the code that builds it, instead of {attr} (a "
                              f"wrapper on {attr} does nothing in sglang {index.version})")
    problem = uncalled_problem(target, index, peers)
    if problem is not None:
        return Inert(problem, f"hook what sglang {index.version} calls in its place (the code "
                              "around the call named above shows what it did), keeping this "
                              "hook for the releases that still call it")
    return None


# ---------------------------------------------------------------- msgspec


def msgspec_problem(target: str, index: ReleaseIndex) -> str | None:
    """Returns why a wrapper on ``target`` (``X.__post_init__``, ``X.__init__``, ``X.__new__``)
    is never called because ``X`` is a msgspec Struct in ``index``'s release, or None."""
    owner_path, _, attr = target.rpartition(".")
    if attr not in STRUCT_INERT or not owner_path:
        return None
    owner = index.resolve(owner_path)
    if not (owner.ok and owner.certain and owner.kind in ("class", "variable")):
        return None
    how = _struct_origin(index, owner.where, frozenset())
    if how is None:
        return None
    return (f"sglang {index.version}'s {owner_path} is a msgspec.Struct ({how}): msgspec reads "
            f"{attr} once, when it creates the class, so the wrapper HookRegistry sets on "
            f"{owner_path}.{attr} afterwards is never called")


def _struct_origin(index: ReleaseIndex, where: str, seen: frozenset[str]) -> str | None:
    """Returns how the class bound at ``where`` is a msgspec Struct, or None when it is not
    (or auxcheck cannot see that it is)."""
    module, qualname = index.split_where(where)
    tree = index.tree(module)
    node = _binding(tree.body, qualname) if tree is not None and where not in seen else None
    at = f"{index.module_file(module)}:{getattr(node, 'lineno', 0)}"
    if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and _external(index, module, node.value.func) == _DEFSTRUCT):
        return f"made by msgspec.defstruct at {at}"
    if not isinstance(node, ast.ClassDef):
        return None
    for base in node.bases:
        expr = base.value if isinstance(base, ast.Subscript) else base
        if _external(index, module, expr) == _STRUCT:
            return f"class {qualname} at {at} derives from msgspec.Struct"
        found = _sglang(index, module, expr)
        if found is not None and found.kind in ("class", "variable"):
            inner = _struct_origin(index, found.where, seen | {where})
            if inner is not None:
                return f"through its base {ast.unparse(expr)}: {inner}"
    return None


def _binding(body: Sequence[ast.stmt], qualname: str) -> ast.stmt | None:
    """Returns the statement that last binds ``qualname`` (``Outer.Inner``) at run time."""
    node: ast.stmt | None = None
    for part in qualname.split("."):
        if node is not None:
            if not isinstance(node, ast.ClassDef):
                return None
            body = node.body
        node = None
        for statement in runtime_statements(body, stub=False):
            if _binds(statement, part):
                node = statement  # the last binding is the one the module keeps
        if node is None:
            return None
    return node


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name == name
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name for t in node.targets)


def _external(index: ReleaseIndex, module: str, expr: ast.expr) -> str | None:
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
    found = _sglang(index, module, expr)
    if found is not None and found.kind == "external":
        return found.where  # a third-party name SGLang re-exports
    return None


def _sglang(index: ReleaseIndex, module: str, expr: ast.expr) -> Lookup | None:
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


# ---------------------------------------------------------------- no caller left


@dataclass(frozen=True, slots=True)
class _Subject:
    """What the uncalled check looks for: the identifier, and the span of the target's def."""

    word: str
    own: tuple[str, int, int] | None
    """(path, first line, last line) of the target's ``def``: references there do not count."""
    shown: str
    effect: str


@dataclass(frozen=True, slots=True)
class _Site:
    location: str
    call: bool


def uncalled_problem(target: str, index: ReleaseIndex,
                     peers: Sequence[ReleaseIndex]) -> str | None:
    """Returns why a hook on ``target`` never runs because no code of ``index``'s release refers
    to it any more while a release of ``peers`` still does, or None.

    A reference is a name, an attribute or a string constant equal to the identifier (or
    one dotted part of a string), anywhere in the release's non-test modules outside the
    target's own ``def``; for ``X.__init__`` and ``X.__call__``, the class's name. With
    no peer referring to it, nothing is said: the hook stage judges the rest.
    """
    if not peers:
        return None
    subject = _subject(target, index)
    if subject is None or _dispatched(index, target, subject.word):
        return None
    if _reference(index, subject.word, subject.own, call=False) is not None:
        return None
    for peer in peers:
        try:
            site = _peer_site(peer, target)
        except ReleaseError:
            continue  # a damaged peer is its own row's error, not evidence here
        if site is not None:
            where = f" ({subject.own[0]}:{subject.own[1]})" if subject.own else ""
            verb = "calls" if site.call else "refers to"
            return (f"nothing in sglang {index.version} refers to {subject.shown} any more: no "
                    f"call, attribute or string names it outside its own def{where}, so "
                    f"{subject.effect}; sglang {peer.version} still {verb} it ({site.location})")
    return None


_PUBLIC_MODULES = ("sglang.srt.entrypoints.", "sglang.lang.", "sglang.api")
"""Where SGLang's users call in: a method there may have callers outside SGLang's code."""


def _public(index: ReleaseIndex, where: str) -> bool:
    """Returns True when ``where`` (or its class) is an API SGLang's users call themselves
    (``sglang.Engine.generate``): SGLang's own code not calling it proves nothing."""
    if where.startswith(_PUBLIC_MODULES):
        return True
    top = index.summary("sglang")
    exported = set(top.public()) if top is not None else set()
    qualname = index.split_where(where)[1]
    return qualname.split(".")[0] in exported


def _subject(target: str, index: ReleaseIndex) -> _Subject | None:
    owner_path, _, attr = target.rpartition(".")
    if attr.startswith("__") and attr.endswith("__") and attr not in _CALLED_BY_NAME:
        return None
    found = index.resolve(target)
    if not (found.ok and found.certain and found.kind == "function"):
        return None
    if _public(index, found.where):
        return None
    defined = callee(index, found.where)
    if attr in _CALLED_BY_NAME:
        owner = index.resolve(owner_path)
        if not (owner.ok and owner.certain and owner.kind == "class"):
            return None
        name = owner.where.rpartition(".")[2]
        own = _span(index, found.where) if defined is not None else None
        return _Subject(name, own, f"class {name}",
                        f"{attr} never runs, nor does the hook that wraps it")
    if defined is None or defined.kind not in ("function", "method", "classmethod",
                                               "staticmethod"):
        return None
    if not all(is_clear_decorator(d) for d in defined.decorators):
        return None  # a decorator may register it: SGLang then calls it without naming it
    return _Subject(attr, _span(index, found.where), attr, "the hook applies but never runs")


def _span(index: ReleaseIndex, where: str) -> tuple[str, int, int] | None:
    module, qualname = index.split_where(where)
    tree = index.tree(module)
    node = _binding(tree.body, qualname) if tree is not None else None
    if node is None:
        return None
    return (index.module_file(module) or module, node.lineno, node.end_lineno or node.lineno)


def _peer_site(peer: ReleaseIndex, target: str) -> _Site | None:
    subject = _subject(target, peer)
    if subject is None:
        return None
    return _reference(peer, subject.word, subject.own, call=True)


_FOUND: weakref.WeakKeyDictionary[ReleaseIndex, dict[tuple[object, ...], _Site | None]] = (
    weakref.WeakKeyDictionary())
"""Answers already read, per release: a run judges one target on every release, each time
asking the others."""


def _reference(index: ReleaseIndex, word: str, own: tuple[str, int, int] | None, *,
               call: bool) -> _Site | None:
    """Returns a reference to ``word`` in the release's non-test code outside ``own``: the
    first one found, or with ``call`` the first call (any reference when there is none)."""
    answers = _FOUND.setdefault(index, {})
    key = (word, own, call)
    if key not in answers:
        answers[key] = _search(index, word, own, call=call)
    return answers[key]


def _search(index: ReleaseIndex, word: str, own: tuple[str, int, int] | None, *,
            call: bool) -> _Site | None:
    mentioned = re.compile(rf"\b{re.escape(word)}\b")
    fallback: _Site | None = None
    for path in _ordered_paths(index, word, own):
        try:
            text = index.release.read(path)
        except UndecodableSource:
            continue  # Python cannot import it either
        if text is None or not mentioned.search(text):
            continue  # the text never names it: no need to parse the module
        tree = index.tree(module_of_path(path)[0])
        if tree is None:
            return _Site(f"{path} (cannot be parsed; taken as a reference)", False)
        skip = own[1:] if own is not None and own[0] == path else None
        for site in _sites(tree, word, path, skip):
            if site.call or not call:
                return site
            fallback = fallback or site
    return fallback


def _ordered_paths(index: ReleaseIndex, word: str,
                   own: tuple[str, int, int] | None) -> Iterator[str]:
    # The target's own module first, then those importing the name: most hooked targets
    # are referred to there, and the search stops at the first reference.
    index.load_all()
    first = [own[0]] if own is not None else []
    importers = sorted(index.module_file(s.name) or "" for s in index.summaries()
                       if any(n == word for _, n in s.uses))
    seen: set[str] = set()
    for path in (*first, *importers, *index.release.python_files()):
        if path and path not in seen and not _is_test(path):
            seen.add(path)
            yield path


def _is_test(path: str) -> bool:
    # As definitions.call_sites: SGLang's tests are not SGLang running a plugin.
    parts = path.split("/")
    return any(p in ("test", "tests") for p in parts) or parts[-1].startswith("test_")


def _sites(tree: ast.Module, word: str, path: str,
           skip: tuple[int, int] | None) -> Iterator[_Site]:
    called: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called.add(id(node.func))
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if skip is not None and skip[0] <= line <= skip[1]:
            continue
        if _names(node, word):
            yield _Site(f"{path}:{line}", id(node) in called)


def _names(node: ast.AST, word: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == word
    if isinstance(node, ast.Attribute):
        return node.attr == word
    if isinstance(node, ast.alias):
        return word in (node.asname, node.name.rpartition(".")[2])
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value == word or word in re.split(r"[.:]", node.value)
    return False


def _dispatched(index: ReleaseIndex, target: str, word: str) -> bool:
    """Returns True when the target's module builds names that could spell ``word``
    (``getattr(self, f"forward_{mode}")``): a call auxcheck cannot see."""
    found = index.resolve(target)
    module = index.split_where(found.where)[0] if found.ok else target.rpartition(".")[0]
    tree = index.tree(module)
    if tree is None:
        return False
    return any(_could_spell(piece, word) for piece in _name_pieces(ast.walk(tree)))


def _name_pieces(nodes: Iterable[ast.AST]) -> Iterator[tuple[str, str]]:
    """Yields (leading, trailing) constant text of each f-string and ``"a" + x`` / ``x + "a"``."""
    for node in nodes:
        if isinstance(node, ast.JoinedStr) and node.values:
            yield _text(node.values[0]), _text(node.values[-1])
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            yield _text(node.left), _text(node.right)


def _text(node: ast.expr) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _could_spell(piece: tuple[str, str], word: str) -> bool:
    lead, trail = piece
    # A piece of at least three identifier letters: `_` or `.` alone would match everything.
    return (len(re.sub(r"\W", "", lead)) >= 3 and word.startswith(lead) and word != lead) or (
        len(re.sub(r"\W", "", trail)) >= 3 and word.endswith(trail) and word != trail)
