"""What a release's modules provide, read with ``ast``: names, imports, ``__all__``, classes.

The rules follow Python's import system, since that is what a plugin meets:
``from M import N`` works when module M binds N at run time (a definition, an
import, a star import, ``__getattr__``) or when ``M.N`` is a submodule; names bound
only under ``if TYPE_CHECKING`` do not exist at run time. Dotted targets
(``HookRegistry.register``, ``mock.patch``) resolve as ``pkgutil.resolve_name``
does: the longest importable module, then attributes, following class bases
through SGLang's own modules.

Summaries of a whole tree come from a *skeleton* of each file (function and class
bodies replaced by ``...``), which parses about five times faster than the file
and gives the same top-level names; a file whose skeleton does not parse is parsed
whole. Classes' members come from a full parse of their module, on demand.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auxcheck._core.pyast import absolute_module, bound_names, is_main_guard, is_type_checking
from auxcheck.releases import Release, cache_dir

__all__ = [
    "ClassSummary",
    "Homes",
    "Lookup",
    "ModuleSummary",
    "Origin",
    "ReleaseIndex",
    "importable",
    "module_of_path",
    "skeleton",
    "summarize",
]

INDEX_FORMAT = 3
"""Bumped whenever the cached summaries change shape."""

# Attributes every class has through ``object`` (and every module through its type).
_OBJECT_ATTRS = frozenset(dir(object)) | {"__init_subclass__", "__class_getitem__"}
_MODULE_ATTRS = frozenset({"__name__", "__file__", "__doc__", "__path__", "__spec__",
                           "__loader__", "__package__", "__builtins__", "__dict__"})
# Bases whose members auxcheck knows: nothing beyond object's.
_PLAIN_BASES = frozenset({"object", "ABC", "abc.ABC", "Protocol", "typing.Protocol", "Generic",
                          "typing.Generic", "NamedTuple", "typing.NamedTuple", "TypedDict",
                          "typing.TypedDict", "Exception", "BaseException", "ValueError",
                          "RuntimeError", "TypeError", "KeyError"})

_START = re.compile(r"^(?=[A-Za-z_@])", re.MULTILINE)
_HEADER = re.compile(r"(?:async[ \t]+)?(def|class)[ \t]+(\w+)")
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)",
                          re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an imported name comes from: ``module``, or ``module.name`` when ``name`` is set."""

    module: str
    name: str | None = None

    def __str__(self) -> str:
        return self.module if self.name is None else f"{self.module}.{self.name}"


@dataclass(frozen=True, slots=True)
class ModuleSummary:
    """The names a module binds at run time, and how."""

    name: str
    package: bool
    defined: Mapping[str, str]
    """Names the module defines itself -> ``class``, ``function`` or ``variable``."""
    imported: Mapping[str, Origin]
    """Names bound by an import statement -> where they come from."""
    stars: tuple[str, ...] = ()
    exports: tuple[str, ...] | None = None
    """``__all__`` when it is a literal list or tuple."""
    type_checking: frozenset[str] = frozenset()
    """Names bound only under ``if TYPE_CHECKING`` (absent at run time)."""
    dynamic: bool = False
    """The module defines ``__getattr__``: any name may resolve."""
    uses: tuple[tuple[str, str], ...] = ()
    """Every ``from M import N`` of the file (function bodies too), as (M, N), absolute."""

    def binds(self, name: str) -> bool:
        """Returns True when the module binds ``name`` itself (a definition or an import)."""
        return name in self.defined or name in self.imported

    def public(self) -> list[str]:
        """Returns the names ``from module import *`` gives: ``__all__``, else non-underscore."""
        if self.exports is not None:
            return list(self.exports)
        return sorted(n for n in (*self.defined, *self.imported) if not n.startswith("_"))

    def to_json(self) -> dict[str, object]:
        """Returns the summary as plain JSON data (for the on-disk cache)."""
        return {"name": self.name, "package": self.package, "defined": dict(self.defined),
                "imported": {k: [o.module, o.name] for k, o in self.imported.items()},
                "stars": list(self.stars), "exports": self.exports,
                "type_checking": sorted(self.type_checking), "dynamic": self.dynamic,
                "uses": [list(u) for u in self.uses]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModuleSummary:
        """Returns the summary ``to_json`` wrote."""
        exports = data["exports"]
        return cls(str(data["name"]), bool(data["package"]), dict(data["defined"]),
                   {k: Origin(m, n) for k, (m, n) in data["imported"].items()},
                   tuple(data["stars"]), None if exports is None else tuple(exports),
                   frozenset(data["type_checking"]), bool(data["dynamic"]),
                   tuple((m, n) for m, n in data["uses"]))


@dataclass(frozen=True, slots=True)
class ClassSummary:
    """A class: where it is defined, its base expressions and the names its body binds."""

    module: str
    qualname: str
    bases: tuple[str, ...]
    members: Mapping[str, str] = field(default_factory=dict)
    """Member name -> ``function``, ``class`` or ``variable``."""


@dataclass(frozen=True, slots=True)
class Lookup:
    """The answer to "does this resolve?": what was found, or why not.

    ``certain`` is False when auxcheck cannot see far enough to say no (a base class
    outside SGLang, a module ``__getattr__``, a name from a third-party package).
    """

    ok: bool
    kind: str = ""
    where: str = ""
    reason: str = ""
    certain: bool = True


# ---------------------------------------------------------------- parsing one file


def module_of_path(path: str) -> tuple[str, bool]:
    """Returns (module name, is a package) of a release path such as ``sglang/srt/x.py``."""
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def skeleton(text: str) -> str:
    """Returns ``text`` with each top-level function and class body replaced by ``...``.

    Top-level statements start at column 0; a column-0 line inside a string or brackets
    can fool the split, which then makes the skeleton fail to parse (the caller parses
    the whole file instead).
    """
    starts = [m.start() for m in _START.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    starts.append(len(text))
    parts: list[str] = []
    decorators = False
    for begin, end in itertools.pairwise(starts):
        chunk = text[begin:end]
        if chunk.startswith("@"):
            decorators = True
            continue
        match = _HEADER.match(chunk)
        if match:
            kind, name = match.groups()
            parts.append(f"class {name}: ...\n" if kind == "class" else f"def {name}(): ...\n")
        elif decorators:
            return text  # decorators not followed by a def or class: parse everything
        else:
            parts.append(chunk)
        decorators = False
    return "".join(parts)


class _Collector:
    """Walks a module's top level, as it runs: if/try/with/for blocks, not function bodies."""

    def __init__(self, module: str, package: bool) -> None:
        self.module = module
        self.package = package
        self.defined: dict[str, str] = {}
        self.imported: dict[str, Origin] = {}
        self.stars: list[str] = []
        self.exports: list[str] | None = None
        self.exports_dynamic = False
        self.hidden: set[str] = set()
        self.dynamic = False

    def walk(self, body: Iterable[ast.stmt], *, hidden: bool = False) -> None:
        for node in body:
            if isinstance(node, ast.If) and is_main_guard(node.test):
                self.walk(node.orelse, hidden=hidden)  # the script's block binds nothing for importers
            elif isinstance(node, ast.If):
                self.walk(node.body, hidden=hidden or is_type_checking(node.test))
                self.walk(node.orelse, hidden=hidden)
            elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
                for block in (node.body, *(h.body for h in node.handlers),  # type: ignore[attr-defined]
                              node.orelse, node.finalbody):  # type: ignore[attr-defined]
                    self.walk(block, hidden=hidden)
            elif isinstance(node, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)):
                self.walk(node.body, hidden=hidden)
                self.walk(getattr(node, "orelse", []), hidden=hidden)
            elif hidden:
                self.hidden.update(bound_names(node))
            else:
                self.statement(node)

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.ImportFrom):
            source = absolute_module(self.module, self.package, node.level, node.module) or ""
            for alias in node.names:
                if alias.name == "*":
                    self.stars.append(source)
                else:
                    self.imported[alias.asname or alias.name] = Origin(source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imported[alias.asname] = Origin(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self.imported[top] = Origin(top)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.dynamic = self.dynamic or node.name == "__getattr__"
            self._define(node.name, "function")
        elif isinstance(node, ast.ClassDef):
            self._define(node.name, "class")
        else:
            self._exports(node)
            for name in bound_names(node):
                self._define(name, "variable")

    def _define(self, name: str, kind: str) -> None:
        self.defined[name] = kind
        self.imported.pop(name, None)

    def _exports(self, node: ast.stmt) -> None:
        target: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            target, value = node.target, node.value
        if not (isinstance(target, ast.Name) and target.id == "__all__"):
            if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                    and ast.unparse(node.value.func).startswith("__all__.")):
                self.exports_dynamic = True
            return
        names = _literal_names(value)
        if names is None:
            self.exports_dynamic = True
        elif isinstance(node, ast.AugAssign):
            self.exports = [*(self.exports or []), *names]
        else:
            self.exports = names

    def summary(self, uses: tuple[tuple[str, str], ...]) -> ModuleSummary:
        exports = None if self.exports_dynamic or self.exports is None else tuple(self.exports)
        hidden = frozenset(self.hidden - set(self.defined) - set(self.imported))
        return ModuleSummary(self.module, self.package, self.defined, self.imported,
                             tuple(self.stars), exports, hidden, self.dynamic, uses)


def _literal_names(value: ast.expr) -> list[str] | None:
    if not isinstance(value, (ast.List, ast.Tuple)):
        return None
    names = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return names if len(names) == len(value.elts) else None


def _uses(module: str, package: bool, text: str) -> tuple[tuple[str, str], ...]:
    found: list[tuple[str, str]] = []
    for match in _FROM_IMPORT.finditer(text):
        dots = len(match.group(1)) - len(match.group(1).lstrip("."))
        source = absolute_module(module, package, dots, match.group(1)[dots:] or None) or ""
        if not source.startswith("sglang"):
            continue
        for part in match.group(2).strip("()").replace("\n", " ").split(","):
            name = part.split("#")[0].split()[:1]
            if name and name[0].isidentifier():
                found.append((source, name[0]))
    return tuple(found)


def summarize(module: str, package: bool, text: str, *, whole: bool = False) -> ModuleSummary:
    """Returns what module ``module`` binds at run time, read from its source ``text``.

    Raises SyntaxError when the file does not parse.
    """
    tree = None
    if not whole:
        try:
            tree = ast.parse(skeleton(text))
        except SyntaxError:
            tree = None
    if tree is None:
        tree = ast.parse(text)
    collector = _Collector(module, package)
    collector.walk(tree.body)
    return collector.summary(_uses(module, package, text))


def _class_summaries(module: str, tree: ast.Module) -> dict[str, ClassSummary]:
    classes: dict[str, ClassSummary] = {}

    def visit(body: Iterable[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                qualname = f"{prefix}{node.name}"
                members: dict[str, str] = {}
                _members(node.body, members)
                bases = tuple(ast.unparse(b.value if isinstance(b, ast.Subscript) else b)
                              for b in node.bases)
                classes[qualname] = ClassSummary(module, qualname, bases, members)
                visit(node.body, f"{qualname}.")
            elif isinstance(node, (ast.If, ast.Try, ast.With)) and not prefix:
                for block in (node.body, getattr(node, "orelse", []),
                              *(h.body for h in getattr(node, "handlers", []))):
                    visit(block, prefix)

    visit(tree.body, "")
    return classes


def _members(body: Iterable[ast.stmt], members: dict[str, str]) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members[node.name] = "function"
        elif isinstance(node, ast.ClassDef):
            members[node.name] = "class"
        elif isinstance(node, (ast.If, ast.Try)):
            if not (isinstance(node, ast.If) and is_type_checking(node.test)):
                _members(node.body, members)
            _members(node.orelse, members)
            for handler in getattr(node, "handlers", []):
                _members(handler.body, members)
        else:
            for name in bound_names(node):
                members.setdefault(name, "variable")


# ---------------------------------------------------------------- the index


def _summarize_path(job: tuple[Release, str]) -> ModuleSummary | None:
    release, path = job
    text = release.read(path)
    module, package = module_of_path(path)
    if text is None:
        return None
    try:
        return summarize(module, package, text)
    except (SyntaxError, ValueError, RecursionError):
        # A file this Python cannot parse (newer syntax): any name may be there.
        return ModuleSummary(module, package, {}, {}, dynamic=True)


def _summarize_chunk(job: tuple[str, str, str, Sequence[str]]) -> list[dict[str, object]]:
    version, kind, where, paths = job
    release = (Release.from_wheel if kind == "wheel" else Release.from_source)(
        Path(where), version=version)
    found = (_summarize_path((release, p)) for p in paths)
    return [s.to_json() for s in found if s is not None]


class ReleaseIndex:
    """Answers what a release's modules provide; summaries are parsed on demand and kept."""

    def __init__(self, release: Release, *, cache: Path | None = None) -> None:
        self.release = release
        self.cache = cache
        self._summaries: dict[str, ModuleSummary | None] = {}
        self._classes: dict[str, dict[str, ClassSummary]] = {}
        self._trees: dict[str, ast.Module | None] = {}
        self._complete = False
        self._homes: Homes | None = None

    @property
    def version(self) -> str:
        """Returns the release's version."""
        return self.release.version

    # -- modules

    def module_file(self, module: str) -> str | None:
        """Returns the path of ``module``'s source (``.py`` or ``__init__.py``), or None."""
        base = module.replace(".", "/")
        for path in (f"{base}.py", f"{base}/__init__.py"):
            if path in self.release.names():
                return path
        return None

    def module_exists(self, module: str) -> bool:
        """Returns True when ``module`` can be imported: a file or a namespace package."""
        if not (module == "sglang" or module.startswith("sglang.")):
            return False
        return self.module_file(module) is not None or self.release.exists(module.replace(".", "/"))

    def summary(self, module: str) -> ModuleSummary | None:
        """Returns ``module``'s summary (empty for a namespace package), None when absent."""
        if module not in self._summaries:
            self._summaries[module] = self._read_summary(module)
        return self._summaries[module]

    def _read_summary(self, module: str) -> ModuleSummary | None:
        path = self.module_file(module)
        if path is None:
            return ModuleSummary(module, True, {}, {}) if self.module_exists(module) else None
        return _summarize_path((self.release, path))

    def modules(self) -> list[str]:
        """Returns every module of the release that has a source file, sorted."""
        return sorted(module_of_path(p)[0] for p in self.release.python_files())

    def load_all(self, *, jobs: int | None = None, cache: Path | None = None) -> None:
        """Summarizes every module, from the on-disk cache when this release was read before."""
        if self._complete:
            return
        stored = self._cache_path(cache or self.cache)
        data = _read_cache(stored) if stored is not None else None
        if data is None:
            data = self._parse_all(jobs)
            if stored is not None:
                _write_cache(stored, data)
        for entry in data:
            summary = ModuleSummary.from_json(entry)
            self._summaries[summary.name] = summary
        self._complete = True

    def _cache_path(self, cache: Path | None) -> Path | None:
        try:
            key = self.release.fingerprint()
        except OSError:
            return None
        folder = (cache or cache_dir()) / "index"
        return folder / f"sglang-{self.version}-{key}-f{INDEX_FORMAT}.json"

    def _parse_all(self, jobs: int | None) -> list[dict[str, object]]:
        paths = self.release.python_files()
        workers = max(1, min(jobs or os.cpu_count() or 1, 8))
        if workers == 1 or len(paths) < 200:
            found = (_summarize_path((self.release, p)) for p in paths)
            return [s.to_json() for s in found if s is not None]
        size = -(-len(paths) // (workers * 4))
        chunks = [(self.version, self.release.kind, str(self.release.path), paths[i:i + size])
                  for i in range(0, len(paths), size)]
        with ProcessPoolExecutor(workers) as pool:
            return [entry for part in pool.map(_summarize_chunk, chunks) for entry in part]

    def summaries(self) -> Iterator[ModuleSummary]:
        """Yields every module's summary (call ``load_all`` first for the whole tree)."""
        for module in self.modules():
            found = self.summary(module)
            if found is not None:
                yield found

    # -- names

    def provides(self, module: str, name: str, *, _seen: frozenset[str] = frozenset()) -> Lookup:
        """Returns whether ``from module import name`` works in this release, and what it gives."""
        summary = self.summary(module)
        if summary is None:
            return Lookup(False, reason=f"module {module} does not exist")
        if name in summary.defined:
            kind = summary.defined[name]
            return Lookup(True, kind, f"{module}.{name}")
        if name in summary.imported:
            return self._follow(summary.imported[name], _seen | {f"{module}.{name}"})
        if self.module_exists(f"{module}.{name}"):
            return Lookup(True, "module", f"{module}.{name}")
        for star in summary.stars:
            found = self._star(star, name, _seen | {f"{module}.{name}"})
            if found is not None:
                return found
        if summary.dynamic:
            return Lookup(True, "unknown", f"{module}.{name}", certain=False,
                          reason=f"{module} defines __getattr__ or cannot be parsed")
        if name in _MODULE_ATTRS:
            return Lookup(True, "variable", f"{module}.{name}")
        if name in summary.type_checking:
            return Lookup(False, reason=f"{module} imports {name} only under `if TYPE_CHECKING`")
        return Lookup(False, reason=f"{module} does not define or import {name}")

    def _star(self, star: str, name: str, seen: frozenset[str]) -> Lookup | None:
        source = self.summary(star)
        if source is None:
            if star.startswith("sglang"):
                return None
            return Lookup(True, "external", f"{star}.{name}", certain=False,
                          reason=f"from {star} import *")
        if name not in source.public():
            return None
        found = self.provides(star, name, _seen=seen)
        return found if found.ok else None

    def _follow(self, origin: Origin, seen: frozenset[str]) -> Lookup:
        if origin.name is None:
            exists = self.module_exists(origin.module) or not origin.module.startswith("sglang")
            return Lookup(True, "module", origin.module, certain=exists)
        if not origin.module.startswith("sglang") or str(origin) in seen:
            return Lookup(True, "external", str(origin), certain=False)
        found = self.provides(origin.module, origin.name, _seen=seen)
        # A broken re-export still binds nothing: but the import that made it would have
        # failed first, so the module itself would not import. Trust the release here.
        return found if found.ok else Lookup(True, "unknown", str(origin), certain=False)

    def resolve(self, dotted: str) -> Lookup:
        """Returns what ``pkgutil.resolve_name(dotted)`` would find, without importing anything."""
        parts = dotted.split(".")
        if not all(p.isidentifier() for p in parts) or parts[0] != "sglang":
            return Lookup(False, reason=f"{dotted!r} is not a dotted path into sglang")
        at = 1
        while at < len(parts) and self.module_exists(".".join(parts[: at + 1])):
            at += 1
        module = ".".join(parts[:at])
        if at == len(parts):
            return Lookup(True, "module", module)
        found = self.provides(module, parts[at])
        for attr in parts[at + 1:]:
            if not found.ok or not found.certain:
                break
            found = self.attribute(found, attr)
        return found

    def attribute(self, owner: Lookup, attr: str) -> Lookup:
        """Returns what ``getattr(owner, attr)`` finds, for a class or module ``owner``."""
        if owner.kind == "module":
            return self.provides(owner.where, attr)
        if owner.kind == "class":
            module, _, qualname = self._split_class(owner.where)
            return self.member(module, qualname, attr)
        if owner.kind == "function" and attr in _OBJECT_ATTRS:
            return Lookup(True, "variable", f"{owner.where}.{attr}")
        return Lookup(True, "unknown", f"{owner.where}.{attr}", certain=False,
                      reason=f"{owner.where} is a {owner.kind or 'value'}; auxcheck cannot see "
                             "its attributes")

    def split_where(self, where: str) -> tuple[str, str]:
        """Returns (module, qualname) of a dotted definition: the longest module with a file."""
        module, _, qualname = self._split_class(where)
        if not qualname:
            module, _, qualname = where.rpartition(".")
        return module, qualname

    def _split_class(self, where: str) -> tuple[str, str, str]:
        parts = where.split(".")
        for at in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:at])
            if self.module_file(module) is not None:
                return module, ".", ".".join(parts[at:])
        return where, ".", ""

    def classes(self, module: str) -> Mapping[str, ClassSummary]:
        """Returns the classes of ``module`` (nested ones as ``Outer.Inner``), by qualname."""
        if module not in self._classes:
            tree = self.tree(module)
            self._classes[module] = _class_summaries(module, tree) if tree is not None else {}
        return self._classes[module]

    def tree(self, module: str) -> ast.Module | None:
        """Returns the whole ast of ``module`` (parsed once, kept), None when absent or broken."""
        if module not in self._trees:
            path = self.module_file(module)
            text = self.release.read(path) if path else None
            try:
                self._trees[module] = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError, RecursionError):
                self._trees[module] = None
        return self._trees[module]

    def member(self, module: str, qualname: str, attr: str, *,
               _seen: frozenset[str] = frozenset()) -> Lookup:
        """Returns whether class ``module.qualname`` has ``attr``, looking through its bases."""
        where = f"{module}.{qualname}"
        cls = self.classes(module).get(qualname)
        if cls is None or where in _seen:
            return Lookup(True, "unknown", f"{where}.{attr}", certain=False)
        if attr in cls.members:
            kind = cls.members[attr]
            return Lookup(True, kind, f"{where}.{attr}")
        unseen: list[str] = []
        for base in cls.bases:
            found = self._base_member(module, base, attr, _seen | {where})
            if found is None:
                continue
            if found.ok and found.certain:
                return found
            unseen.append(base)
        if attr in _OBJECT_ATTRS:
            return Lookup(True, "function", f"{where}.{attr}")
        if unseen:
            return Lookup(True, "unknown", f"{where}.{attr}", certain=False,
                          reason=f"{qualname} has bases auxcheck cannot read ({', '.join(unseen)})")
        return Lookup(False, reason=f"class {where} has no attribute {attr} (nor do its bases)")

    def homes(self) -> Homes:
        """Returns where this release keeps each name (reads the whole release, once)."""
        if self._homes is None:
            self._homes = Homes(self)
        return self._homes

    def home_of(self, name: str) -> str | None:
        """Returns the one module that defines ``name``, or the one SGLang imports it from most.

        None when no module defines it, or several do and SGLang's own imports do not
        single one out (the rule ``auxcheck moves`` uses to point a move).
        """
        home = self.homes().home(name)
        return home if isinstance(home, str) else None

    def _base_member(self, module: str, base: str, attr: str, seen: frozenset[str]) -> Lookup | None:
        # None: the base has no such member for certain; else the (maybe uncertain) answer.
        if base in _PLAIN_BASES:
            return None
        head, *rest = base.split(".")
        if not head.isidentifier() or not all(p.isidentifier() for p in rest):
            return Lookup(True, "unknown", base, certain=False)
        found = self.provides(module, head)
        for part in rest:
            if not found.ok or not found.certain:
                break
            found = self.attribute(found, part)
        if found.kind != "class" or not found.certain:
            return Lookup(True, "unknown", base, certain=False)
        owner_module, _, qualname = self._split_class(found.where)
        answer = self.member(owner_module, qualname, attr, _seen=seen)
        return answer if answer.ok else None


def _read_cache(path: Path) -> list[dict[str, object]] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, list) else None


def _write_cache(path: Path, data: list[dict[str, object]]) -> None:
    # Written to a temporary name and renamed: a reader never sees half a file. A cache
    # that cannot be written costs time on the next run, nothing else.
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


class Homes:
    """Where the newer release keeps each name: who defines it, who SGLang imports it from."""

    def __init__(self, index: ReleaseIndex) -> None:
        index.load_all()
        self.index = index
        self.definers: dict[str, list[str]] = defaultdict(list)
        self.imports: dict[str, Counter[str]] = defaultdict(Counter)
        for summary in index.summaries():
            for name in summary.defined if importable(summary.name) else ():
                self.definers[name].append(summary.name)
            for module, name in summary.uses:
                self.imports[name][module] += 1
        self._homes: dict[str, str | tuple[str, ...] | None] = {}

    def home(self, name: str) -> str | tuple[str, ...] | None:
        """Returns the module defining ``name``, the candidates when several do and SGLang's
        imports do not single one out, or None when no module defines it."""
        if name not in self._homes:
            self._homes[name] = self._choose(name)
        return self._homes[name]

    def _choose(self, name: str) -> str | tuple[str, ...] | None:
        definers = sorted(self.definers.get(name, ()))
        if len(definers) <= 1:
            return definers[0] if definers else None
        used = self.imports.get(name, Counter())
        ranked = sorted(definers, key=lambda module: (-used[module], module))
        if used[ranked[0]] > used[ranked[1]]:
            return ranked[0]
        return tuple(definers)

    def facade(self, module: str, name: str) -> str:
        """Returns the nearest package above ``module`` re-exporting its ``name``, else ``module``."""
        for package in _packages_above(module):
            found = self.index.provides(package, name)
            if found.ok and found.certain and found.where == f"{module}.{name}":
                return package
        return module


def _packages_above(module: str) -> Iterator[str]:
    """Yields the packages above ``module``, nearest first, down to (not including) ``sglang``."""
    parts = module.split(".")
    for end in range(len(parts) - 1, 1, -1):
        yield ".".join(parts[:end])


def importable(module: str) -> bool:
    """Returns True for a module name Python can import (``sglang..agents`` or ``a-b`` cannot)."""
    return all(part.isidentifier() for part in module.split("."))
