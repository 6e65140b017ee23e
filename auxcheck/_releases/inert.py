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
- nothing in the release names the target any more (its name appears nowhere in the
  non-test source outside its own ``def``, comments included, which can only hold a
  finding back) while another release of the same run still refers to it in code (a
  name, an attribute, an import or a string): SGLang stopped calling it. Dunder methods other than ``__init__`` and ``__call__`` are
  never judged (Python calls them implicitly); a decorated target (other than the
  decorators :data:`~auxcheck._releases.hook_refs.CLEAR_DECORATORS` lists) is never
  judged (a decorator may register it, as a route or a validator); nor is one whose
  module builds attribute names with f-strings or ``+`` that could spell it; nor an API
  SGLang's users call themselves (the engines of ``sglang.srt.entrypoints``, ``sglang.lang``,
  what the ``sglang`` package exports, such as ``Engine``); nor a method of a class with a
  base outside SGLang (torch's ``Module.__call__`` calls ``forward`` unnamed).
"""

from __future__ import annotations

import ast
import re
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from auxcheck._core.errors import ReleaseError, UndecodableSource
from auxcheck._releases.definitions import (
    callee,
    is_test_path,
    outside_origin,
    sglang_lookup,
)
from auxcheck._releases.derived_cache import BAD, Section, cached
from auxcheck._releases.hook_refs import is_clear_decorator
from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.stubcheck import runtime_statements
from auxcheck._releases.summaries import module_of_path

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
    key = ("inert", " ".join([target, *(p.version for p in peers)]))
    if key not in index.derived:  # many hooks share a target: judged once per release
        index.derived[key] = _cached_inert(target, index, peers)
    found = index.derived[key]
    return found if isinstance(found, Inert) else None


def _encoded(found: Inert | None) -> object:
    return None if found is None else [found.seen, found.hint]


def _decoded(entry: object) -> Inert | None | object:
    if entry is None:
        return None
    if isinstance(entry, list) and len(entry) == 2 and all(isinstance(e, str) for e in entry):
        return Inert(entry[0], entry[1])
    return BAD


_INERT: Section[Inert | None] = Section("inert", _encoded, _decoded)


def _cached_inert(target: str, index: ReleaseIndex,
                  peers: Sequence[ReleaseIndex]) -> Inert | None:
    """Returns :func:`_inert`, from the release's on-disk cache when the same peers (by
    fingerprint) were judged before: the search reads every module of the release."""
    try:
        key = " ".join([target, *(f"{p.version}@{p.release.fingerprint()}" for p in peers)])
    except OSError:
        return _inert(target, index, peers)
    return cached(index, _INERT, key, lambda: _inert(target, index, peers))


def _inert(target: str, index: ReleaseIndex, peers: Sequence[ReleaseIndex]) -> Inert | None:
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
    key = ("msgspec", owner.where)
    if key not in index.derived:  # several hooks on one class's __init__: walked once
        index.derived[key] = _struct_origin(index, owner.where, frozenset())
    how = index.derived[key]
    if not isinstance(how, str):
        return None
    return (f"sglang {index.version}'s {owner_path} is a msgspec.Struct ({how}): msgspec reads "
            f"{attr} once, when it creates the class, so the wrapper HookRegistry sets on "
            f"{owner_path}.{attr} afterwards is never called")


def _struct_origin(index: ReleaseIndex, where: str, seen: frozenset[str]) -> str | None:
    """Returns how the class bound at ``where`` is a msgspec Struct, or None when it is not
    (or auxcheck cannot see that it is)."""
    module, qualname = index.split_where(where)
    if where in seen:
        return None
    header = _header(index, module, qualname)
    if header is None:  # not one plain top-level header: read the module as Python does
        tree = index.tree(module)
        node = _binding(tree.body, qualname) if tree is not None else None
        header = _Header(node.lineno, node.value.func if isinstance(node, ast.Assign) and
                         isinstance(node.value, ast.Call) else None,
                         node.bases if isinstance(node, ast.ClassDef) else None) if (
            node is not None) else None
    if header is None:
        return None
    at = f"{index.module_file(module)}:{header.line}"
    if header.made_by is not None and outside_origin(index, module, header.made_by) == _DEFSTRUCT:
        return f"made by msgspec.defstruct at {at}"
    for base in header.bases or ():
        expr = base.value if isinstance(base, ast.Subscript) else base
        if outside_origin(index, module, expr) == _STRUCT:
            return f"class {qualname} at {at} derives from msgspec.Struct"
        found = sglang_lookup(index, module, expr)
        if found is not None and found.kind in ("class", "variable"):
            inner = _struct_origin(index, found.where, seen | {where})
            if inner is not None:
                return f"through its base {ast.unparse(expr)}: {inner}"
    return None


@dataclass(frozen=True, slots=True)
class _Header:
    """How a module binds a class: its line, the call that makes it (``X = defstruct(...)``)
    or its base expressions (``class X(A, B):``)."""

    line: int
    made_by: ast.expr | None = None
    bases: Sequence[ast.expr] | None = None


_CLASS = r"^class[ \t]+{name}\b[ \t]*(?:\((?P<bases>[^()]*(?:\([^()]*\)[^()]*)*)\))?[ \t]*:"
_MADE = r"^{name}[ \t]*=[ \t]*(?P<func>[A-Za-z_][\w.]*)[ \t]*\("


def _header(index: ReleaseIndex, module: str, qualname: str) -> _Header | None:
    """Returns the one top-level ``class``/assignment binding ``qualname``, read from the text
    with no parse of the module (the walk up a class's bases would parse every base's
    module); None when the text does not show exactly one plain binding."""
    key = ("header", f"{module}:{qualname}")
    if key not in index.derived:
        index.derived[key] = _read_header(index, module, qualname)
    found = index.derived[key]
    return found if isinstance(found, _Header) else None


def _read_header(index: ReleaseIndex, module: str, qualname: str) -> _Header | None:
    path = index.module_file(module)
    try:
        text = index.release.read(path) if path and "." not in qualname else None
    except UndecodableSource:
        return None
    if text is None:
        return None
    name = re.escape(qualname)
    classes = list(re.finditer(_CLASS.format(name=name), text, re.MULTILINE))
    made = list(re.finditer(_MADE.format(name=name), text, re.MULTILINE))
    # Any other binding (an import, a def, a second assignment, one inside a block):
    # which one wins is Python's order, not a regex's.
    word = re.compile(rf"\b{name}\b")
    others = len(re.findall(rf"^(?:{name}\b|(?:async[ \t]+)?def[ \t]+{name}\b|[ \t]+{name},)",
                            text, re.MULTILINE)) - len(made) + sum(
        1 for line in re.findall(r"^(?:from[ \t]+\S+[ \t]+)?import\b[^\n]*", text, re.MULTILINE)
        if word.search(line))
    nested = re.search(rf"^[ \t]+(?:class[ \t]+{name}\b|{name}[ \t]*=)", text, re.MULTILINE)
    if len(classes) + len(made) != 1 or others or nested:
        return None
    match = (classes or made)[0]
    line = text.count("\n", 0, match.start()) + 1
    try:
        if made:
            return _Header(line, made_by=ast.parse(match["func"], mode="eval").body)
        listed = " ".join(re.sub(r"#[^\n]*", "", match["bases"] or "").split())
        parsed = ast.parse(f"f({listed})", mode="eval").body
    except SyntaxError:
        return None
    return _Header(line, bases=parsed.args if isinstance(parsed, ast.Call) else [])


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

    In ``index``'s release any mention of the identifier in the text of a non-test module,
    outside the target's own ``def``, counts as a reference (a comment too: that can only
    keep a finding back); in a peer, only code does: a name, an attribute, an import or a
    string constant equal to it (or to one dotted part of a string). For ``X.__init__``
    and ``X.__call__`` the identifier is the class's name. With no peer referring to it,
    nothing is said: the hook stage judges the rest.
    """
    if not peers:
        return None
    subject = _subject(target, index)
    if subject is None or _reference(index, subject.word, subject.own, call=False) is not None:
        return None
    if _dispatched(index, target, subject.word):
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


_PUBLIC_MODULES = ("sglang.srt.entrypoints.engine.", "sglang.srt.entrypoints.EngineBase.",
                   "sglang.srt.entrypoints.http_server_engine.", "sglang.lang.", "sglang.api.")
"""Where SGLang's users call in (the offline engines, the frontend language): a method there
may have callers outside SGLang's code."""


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
    cls = index.resolve(owner_path) if defined.owner is not None else None
    if cls is not None and (not (cls.ok and cls.certain and cls.kind == "class")
                            or _outside_base(index, cls.where, 0)):
        return None  # torch's Module.__call__ calls forward without naming it
    return _Subject(attr, _span(index, found.where), attr, "the hook applies but never runs")


_PLAIN_BASES = frozenset({"object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol",
                          "typing.Protocol"})


def _outside_base(index: ReleaseIndex, where: str, depth: int) -> bool:
    """Returns True when class ``where`` has a base outside SGLang (or one auxcheck cannot
    read) among its ancestors: such a base may call a method without naming it in SGLang."""
    key = ("outside_base", where)
    if key not in index.derived:
        index.derived[key] = _has_outside_base(index, where, depth)
    return index.derived[key] is True


def _has_outside_base(index: ReleaseIndex, where: str, depth: int) -> bool:
    module, qualname = index.split_where(where)
    header = _header(index, module, qualname)
    if header is not None and header.bases is not None:  # read from the text, no parse
        bases: Sequence[str] = [ast.unparse(b.value if isinstance(b, ast.Subscript) else b)
                                for b in header.bases]
    else:
        cls = index.classes(module).get(qualname)
        if cls is None:
            return True
        bases = cls.bases
    if depth > 20:
        return True
    for base in bases:
        if base in _PLAIN_BASES:
            continue
        head, *rest = base.split(".")
        found = index.provides(module, head) if head.isidentifier() else None
        for part in rest:
            if found is None or not (found.ok and found.certain):
                break
            found = index.attribute(found, part)
        if found is None or not (found.ok and found.certain and found.kind == "class"):
            return True
        if _outside_base(index, found.where, depth + 1):
            return True
    return False


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
        if not call:
            # "Is it mentioned at all?" is answered by the text: a comment that names it
            # counts too, which can only keep a finding back, never make one.
            line = _mentioned_outside(text, mentioned, own[1:] if own is not None and
                                      own[0] == path else None)
            if line is not None:
                return _Site(f"{path}:{line}", False)
            continue
        words = _words(index, path)
        if words is None:
            return _Site(f"{path} (cannot be parsed; taken as a reference)", False)
        skip = own[1:] if own is not None and own[0] == path else None
        for line, is_call in words.get(word, ()):
            if skip is not None and skip[0] <= line <= skip[1]:
                continue
            site = _Site(f"{path}:{line}", is_call)
            if site.call or not call:
                return site
            fallback = fallback or site
    return fallback


def _mentioned_outside(text: str, mentioned: re.Pattern[str],
                       skip: tuple[int, int] | None) -> int | None:
    """Returns the first line of ``text`` outside ``skip`` (a line span) naming the word."""
    for match in mentioned.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if skip is None or not skip[0] <= line <= skip[1]:
            return line
    return None


def _words(index: ReleaseIndex, path: str) -> dict[str, list[tuple[int, bool]]] | None:
    """Returns every word the module at ``path`` refers to (names, attributes, imported
    names, string constants and their dotted parts) -> (line, whether it is called), in
    source order; read once per module and release. None when it cannot be parsed."""
    key = ("inert_words", path)
    if key not in index.derived:
        tree = index.tree(module_of_path(path)[0])
        index.derived[key] = None if tree is None else _collect_words(tree)
    found = index.derived[key]
    return found if isinstance(found, dict) else None


def _collect_words(tree: ast.Module) -> dict[str, list[tuple[int, bool]]]:
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    words: dict[str, list[tuple[int, bool]]] = {}
    for node in ast.walk(tree):
        for word in _words_of(node):
            words.setdefault(word, []).append((getattr(node, "lineno", 0), id(node) in called))
    for sites in words.values():
        sites.sort()
    return words


def _words_of(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr
    elif isinstance(node, ast.alias):
        yield node.name.rpartition(".")[2]
        if node.asname:
            yield node.asname
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 200:
        yield node.value
        yield from re.split(r"[.:]", node.value)


def _ordered_paths(index: ReleaseIndex, word: str,
                   own: tuple[str, int, int] | None) -> Iterator[str]:
    # The target's own module first, then those importing the name: most hooked targets
    # are referred to there, and the search stops at the first reference.
    # The importers are read only when the own module does not answer: reading them needs
    # the whole release's summaries.
    seen: set[str] = set()
    if own is not None and not is_test_path(own[0]):
        seen.add(own[0])
        yield own[0]
        folder = own[0].rpartition("/")[0] + "/"
        for path in index.release.python_files():  # its neighbours next, without summaries
            if path.startswith(folder) and path not in seen and not is_test_path(path):
                seen.add(path)
                yield path
    for path in (*sorted(_importers(index).get(word, ())), *index.release.python_files()):
        if path and path not in seen and not is_test_path(path):
            seen.add(path)
            yield path


def _importers(index: ReleaseIndex) -> dict[str, set[str]]:
    """Returns each imported name -> the files importing it, for the whole release (once)."""
    key = ("inert_importers", "")
    found = index.derived.get(key)
    if isinstance(found, dict):
        return found
    index.load_all()
    made: dict[str, set[str]] = {}
    for summary in index.summaries():
        path = index.module_file(summary.name) or ""
        for _, name in summary.uses:
            made.setdefault(name, set()).add(path)
    index.derived[key] = made
    return made


def _dispatched(index: ReleaseIndex, target: str, word: str) -> bool:
    """Returns True when the target's module builds names that could spell ``word``
    (``getattr(self, f"forward_{mode}")``): a call auxcheck cannot see."""
    found = index.resolve(target)
    module = index.split_where(found.where)[0] if found.ok else target.rpartition(".")[0]
    key = ("inert_pieces", module)
    if key not in index.derived:  # once per module and release: many targets share one
        tree = index.tree(module)
        index.derived[key] = () if tree is None else tuple(set(_name_pieces(ast.walk(tree))))
    pieces = index.derived[key]
    return isinstance(pieces, tuple) and any(_could_spell(piece, word) for piece in pieces)


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
