"""What one module of a release binds at run time, read from its source with ``ast``.

Summaries of a whole tree come from a *skeleton* of each file (function and class
bodies replaced by ``...``), which parses about five times faster than the file
and gives the same top-level names; a file whose skeleton does not parse is parsed
whole. Classes' members come from a full parse of their module, on demand.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from auxcheck._core.pyast import absolute_module, bound_names, is_main_block, is_type_checking

__all__ = [
    "ClassSummary",
    "ModuleSummary",
    "Origin",
    "class_summaries",
    "module_of_path",
    "skeleton",
    "summarize",
]

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


_FIELDS = frozenset({"name", "package", "defined", "imported", "stars", "exports",
                     "type_checking", "dynamic", "uses"})
"""The keys of :meth:`ModuleSummary.to_json`."""


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
                "stars": list(self.stars),
                "exports": None if self.exports is None else list(self.exports),
                "type_checking": sorted(self.type_checking), "dynamic": self.dynamic,
                "uses": [list(u) for u in self.uses]}

    @classmethod
    def from_json(cls, data: object) -> ModuleSummary:
        """Returns the summary ``to_json`` wrote.

        Raises ValueError when ``data`` is not of that shape (a damaged or foreign cache).
        """
        if not _summary_shaped(data):
            raise ValueError("not a module summary as ModuleSummary.to_json writes one")
        exports = data["exports"]
        return cls(str(data["name"]), bool(data["package"]), dict(data["defined"]),
                   {k: Origin(m, n) for k, (m, n) in data["imported"].items()},
                   tuple(data["stars"]), None if exports is None else tuple(exports),
                   frozenset(data["type_checking"]), bool(data["dynamic"]),
                   tuple((m, n) for m, n in data["uses"]))


_KINDS = frozenset({"class", "function", "variable"})


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _origin(value: object) -> bool:
    return (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
            and (value[1] is None or isinstance(value[1], str)))


def _summary_shaped(data: object) -> TypeGuard[Mapping[str, Any]]:
    """Returns True when ``data`` has exactly the fields and types ``to_json`` writes: the one
    schema check of a cached summary."""
    if not (isinstance(data, dict) and data.keys() == _FIELDS):
        return False
    defined, imported, uses = data["defined"], data["imported"], data["uses"]
    return (isinstance(data["name"], str) and isinstance(data["package"], bool)
            and isinstance(data["dynamic"], bool)
            and isinstance(defined, dict)
            and all(isinstance(kind, str) and kind in _KINDS for kind in defined.values())
            and isinstance(imported, dict) and all(_origin(o) for o in imported.values())
            and _strings(data["stars"]) and _strings(data["type_checking"])
            and (data["exports"] is None or _strings(data["exports"]))
            and isinstance(uses, list) and all(_strings(u) and len(u) == 2 for u in uses))


@dataclass(frozen=True, slots=True)
class ClassSummary:
    """A class: where it is defined, its base expressions and the names its body binds."""

    module: str
    qualname: str
    bases: tuple[str, ...]
    members: Mapping[str, str] = field(default_factory=dict)
    """Member name -> ``function``, ``class`` or ``variable``."""


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
            if isinstance(node, ast.If) and is_main_block(node.test):
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


def class_summaries(module: str, tree: ast.Module) -> dict[str, ClassSummary]:
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
