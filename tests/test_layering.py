"""The package keeps the layering docs/architecture.md describes: read from the sources with ``ast``.

Every module of ``auxcheck`` belongs to one capability. The base (core) imports nothing above
it; the runtime never imports pytest, the CLI or migrate; migrate never imports the torch side;
no import cycle; no module imports another package's private names; no private module imports
a public face; pytest's private API is touched in one module; no module is over
:data:`MAX_LINES` lines. An import under
``if TYPE_CHECKING:`` never runs, so it adds no edge (mypy still checks it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from helpers.paths import PACKAGE

MAX_LINES = 700
"""STYLE.md: modules stay under about 700 lines; past that they split along their rulers."""

CAPABILITIES = {
    "core": ("auxcheck._core", "auxcheck.errors", "auxcheck.rules", "auxcheck.report",
             "auxcheck.protocols"),
    "runtime": ("auxcheck._runtime", "auxcheck.aliasing", "auxcheck.validate"),
    "isolation": ("auxcheck._isolation",),
    "suite": ("auxcheck._suite", "auxcheck.pytest_plugin"),
    "properties": ("auxcheck._properties", "auxcheck.strategies", "auxcheck.properties",
                   "auxcheck.machine"),
    "releases": ("auxcheck._releases", "auxcheck.releases"),
    "guard": ("auxcheck._guard", "auxcheck.sglang_plugin"),
    "migrate": ("auxcheck.migrate",),
    "sglang_cpu": ("auxcheck._sglang_cpu",),
    "check": ("auxcheck._check",),
    "cli": ("auxcheck.cli", "auxcheck.__main__"),
}
"""Each capability's modules, by dotted prefix; ``auxcheck`` itself only re-exports."""

MAY_IMPORT = {
    "core": {"core"},
    "runtime": {"core", "runtime"},
    "isolation": {"core", "runtime", "isolation"},
    "releases": {"core", "releases", "migrate"},
    "migrate": {"core", "migrate"},
    "suite": {"core", "runtime", "isolation", "suite", "properties", "releases", "migrate"},
    "properties": {"core", "runtime", "properties", "releases"},
    "guard": {"core", "runtime", "releases", "guard"},
    "sglang_cpu": {"core", "isolation", "sglang_cpu"},
    "check": {"core", "isolation", "suite", "releases", "migrate", "check"},
    "cli": set(CAPABILITIES),
}
"""The capabilities each may import from (docs/architecture.md); anything else breaks layering."""

FORBIDDEN_THIRD_PARTY = {
    "core": {"pytest", "_pytest"},
    "runtime": {"pytest", "_pytest"},
    "migrate": {"torch", "hypothesis", "pytest", "_pytest"},
    "releases": {"torch", "hypothesis", "pytest", "_pytest"},
    "sglang_cpu": {"hypothesis", "pytest", "_pytest"},
}
"""Outside packages a capability never imports (the runtime runs inside SGLang; migrate and the
release check run where torch is absent)."""

HEAVY = {"torch", "hypothesis", "libcst"}
"""Slow imports the base loads only inside the function that needs them (``import auxcheck``
must stay light), never at module level."""

PYTEST_COMPAT = "auxcheck._suite.pytest_compat"
"""The one module that may touch pytest's private API."""

RE_EXPORTING_FACES = frozenset({
    "auxcheck.aliasing", "auxcheck.errors", "auxcheck.machine", "auxcheck.properties",
    "auxcheck.protocols", "auxcheck.releases", "auxcheck.report", "auxcheck.rules",
    "auxcheck.strategies", "auxcheck.validate",
})
"""Faces whose code lives in a private package behind them: they hold re-exports only."""


@dataclass(frozen=True)
class Import:
    """One import statement's target as the importing module sees it."""

    module: str
    target: str
    name: str | None
    line: int
    lazy: bool
    """True for an import inside a function: it runs only when the function does."""


@cache
def modules() -> dict[str, Path]:
    """Returns every module of the package by dotted name."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def capability(module: str) -> str | None:
    """Returns the capability ``module`` belongs to (None for the package's own ``__init__``)."""
    for name, prefixes in CAPABILITIES.items():
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return name
    return None


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING"))


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Yields every node except those under ``if TYPE_CHECKING:`` (their else branch is kept)."""
    for child in ast.iter_child_nodes(tree):
        if _type_checking_only(child):
            assert isinstance(child, ast.If)
            for other in child.orelse:
                yield other
                yield from _runtime_nodes(other)
            continue
        yield child
        yield from _runtime_nodes(child)


@cache
def imports(*, typing_too: bool = False) -> tuple[Import, ...]:
    """Returns every import the package's modules run, in module order (``typing_too``: and
    those under ``if TYPE_CHECKING:``)."""
    found = []
    for module, path in modules().items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        lazy = {id(inner) for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                for inner in ast.walk(node)}
        for node in ast.walk(tree) if typing_too else _runtime_nodes(tree):
            if isinstance(node, ast.Import):
                found += [Import(module, a.name, None, node.lineno, id(node) in lazy)
                          for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    head = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*head, *([node.module] if node.module else [])])
                found += [Import(module, base, a.name, node.lineno, id(node) in lazy)
                          for a in node.names]
    return tuple(found)


def internal_target(imp: Import) -> str | None:
    """Returns the auxcheck module ``imp`` loads (a submodule when it names one), else None."""
    if imp.target != "auxcheck" and not imp.target.startswith("auxcheck."):
        return None
    if imp.name is not None and f"{imp.target}.{imp.name}" in modules():
        return f"{imp.target}.{imp.name}"
    target = imp.target
    while target not in modules() and "." in target:
        target = target.rpartition(".")[0]
    return target


@cache
def graph() -> dict[str, frozenset[str]]:
    """Returns the auxcheck modules each module imports at run time."""
    edges: dict[str, set[str]] = {m: set() for m in modules()}
    for imp in imports():
        target = internal_target(imp)
        if target is not None and target != imp.module:
            edges[imp.module].add(target)
    return {m: frozenset(t) for m, t in edges.items()}


def cycles() -> list[list[str]]:
    """Returns the import graph's strongly connected parts of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph()[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(modules()):
        if node not in index:
            visit(node)
    return found


def _private_parts(dotted: str) -> list[int]:
    return [i for i, part in enumerate(dotted.split(".")) if part.startswith("_")
            and not part.startswith("__")]


def private_reach(importer: str, dotted: str) -> bool:
    """Returns True when ``dotted`` is private to a package that does not hold ``importer``.

    A name (or module) starting with ``_`` belongs to the package or module it is defined in:
    ``auxcheck._core`` to ``auxcheck``, ``auxcheck.migrate.runner`` to ``auxcheck.migrate``,
    ``auxcheck.validate._judged`` to ``auxcheck.validate``.
    """
    parts = dotted.split(".")
    for i in _private_parts(dotted):
        owner = ".".join(parts[:i])
        if owner in modules() and modules()[owner].name != "__init__.py":
            if importer != owner:  # a module's private names are its own
                return True
        elif importer != owner and not importer.startswith(owner + "."):
            return True
    return False


def public_faces() -> frozenset[str]:
    """Returns the import paths of docs/architecture.md's table of public faces (``auxcheck``
    itself aside)."""
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page.split("## The public faces", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `auxcheck")]
    return frozenset(path for row in rows for path in re.findall(r"`(auxcheck\.[\w.]+)`", row))


def is_private_module(module: str) -> bool:
    """Returns True for a module inside a package whose name starts with ``_``."""
    packages = module.split(".") if modules()[module].name == "__init__.py" else \
        module.split(".")[:-1]
    return any(part.startswith("_") and not part.startswith("__") for part in packages)


def test_every_module_belongs_to_a_capability() -> None:
    """Each module of the package is in exactly one capability of the table."""
    assert [m for m in modules() if m != "auxcheck" and capability(m) is None] == []


def test_no_capability_imports_one_it_must_not() -> None:
    """The base imports nothing above it; runtime never imports the suite, CLI or migrate; migrate
    never imports the torch side; every import follows MAY_IMPORT."""
    breaks = []
    for module, targets in graph().items():
        mine = capability(module)
        if mine is None:
            continue
        for target in sorted(targets):
            theirs = capability(target)
            if theirs is not None and theirs not in MAY_IMPORT[mine]:
                breaks.append(f"{module} ({mine}) imports {target} ({theirs})")
    assert breaks == []


def test_no_capability_imports_a_package_it_must_not() -> None:
    """core, the runtime, migrate and the release check keep away from the packages they must not load."""
    breaks = []
    for imp in imports():
        mine = capability(imp.module)
        top = imp.target.split(".")[0]
        if mine in FORBIDDEN_THIRD_PARTY and top in FORBIDDEN_THIRD_PARTY[mine]:
            breaks.append(f"{imp.module}:{imp.line} imports {imp.target}")
        elif mine == "core" and top in HEAVY and not imp.lazy:
            breaks.append(f"{imp.module}:{imp.line} imports {imp.target} at module level")
    assert breaks == []


def test_the_package_has_no_import_cycle() -> None:
    """No module reaches itself through the imports it runs."""
    assert cycles() == []


def test_no_module_imports_another_packages_private_names() -> None:
    """``from auxcheck.x import _name`` and ``import auxcheck.p._m`` stay inside the owner."""
    breaks = []
    for imp in imports():
        if internal_target(imp) is None:
            continue
        dotted = imp.target if imp.name is None else f"{imp.target}.{imp.name}"
        if private_reach(imp.module, dotted):
            breaks.append(f"{imp.module}:{imp.line} imports {dotted}")
    assert breaks == []


def test_no_private_module_imports_a_public_face() -> None:
    """Faces only re-export: the modules behind them import each other's private homes, never
    a face (under ``if TYPE_CHECKING:`` too), so a face can change without moving its users."""
    faces = public_faces()
    breaks = sorted({f"{imp.module}:{imp.line} imports {internal_target(imp)}"
                     for imp in imports(typing_too=True)
                     if is_private_module(imp.module) and internal_target(imp) in faces})
    assert breaks == []


@pytest.mark.parametrize("face", sorted(RE_EXPORTING_FACES))
def test_a_face_whose_code_moved_behind_it_only_re_exports(face: str) -> None:
    """The face's body is its docstring, imports from its capability's private package and
    ``__all__``: no code of its own for private modules to import back."""
    body = ast.parse(modules()[face].read_text(encoding="utf-8")).body
    kinds = [type(node).__name__ for node in body]
    assert kinds[0] == "Expr" and kinds[-1] == "Assign", kinds
    assert set(kinds[1:-1]) == {"ImportFrom"}, kinds
    assert isinstance(body[-1], ast.Assign) and ast.unparse(body[-1].targets[0]) == "__all__"
    private = {node.module for node in body[1:-1] if isinstance(node, ast.ImportFrom)}
    assert all(is_private_module(m) or m == "auxcheck.report" for m in private if m), private


@pytest.mark.parametrize(("module", "private"), [
    ("auxcheck._suite.item_runs", True),
    ("auxcheck._properties", True),
    ("auxcheck.cli.check", False),
    ("auxcheck.releases", False),
    ("auxcheck.__main__", False),
], ids=["module of a private package", "a private package itself", "module of a public package",
        "a face", "dunder names are not private"])
def test_a_private_module_is_one_inside_a_private_package(module: str, private: bool) -> None:
    """Only a module inside a ``_``-named package counts as private for the faces rule."""
    assert is_private_module(module) is private


def test_the_faces_table_names_the_faces_the_rule_guards() -> None:
    """The rule reads docs/architecture.md's faces table, which names the modules users import."""
    assert RE_EXPORTING_FACES <= public_faces()


def _own_names() -> frozenset[str]:
    names = set()
    for path in modules().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg) or isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
    return frozenset(names)


def test_only_the_compat_module_touches_pytests_private_api() -> None:
    """``_pytest`` imports and pytest's private attributes appear in one adapter module only."""
    own = _own_names()
    touches = []
    users = {imp.module for imp in imports() if imp.target.split(".")[0] in ("pytest", "_pytest")}
    for imp in imports():
        if imp.target.split(".")[0] == "_pytest" and imp.module != PYTEST_COMPAT:
            touches.append(f"{imp.module}:{imp.line} imports {imp.target}")
    for module in sorted(users - {PYTEST_COMPAT}):
        for node in ast.walk(ast.parse(modules()[module].read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and node.attr not in own):
                touches.append(f"{module}:{node.lineno} reads .{node.attr}")
    assert touches == []


def test_no_module_is_over_the_size_limit() -> None:
    """Modules stay under MAX_LINES lines; a longer one splits along its section rulers."""
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in modules().items()}
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}


@pytest.mark.parametrize(("importer", "dotted", "private"), [
    ("auxcheck.cli.check", "auxcheck._core.paths.is_file", False),
    ("auxcheck.cli.check", "auxcheck.migrate._helpers", True),
    ("auxcheck.migrate.files", "auxcheck.migrate._helpers", False),
    ("auxcheck._suite.item_runs", "auxcheck.validate._judged", True),
    ("auxcheck.validate", "auxcheck.validate._judged", False),
    ("auxcheck", "auxcheck._core.version.__version__", False),
], ids=["public name of a private package", "private module of another package",
        "private module of its own package", "private name of another module",
        "private name of its own module", "dunder names are not private"])
def test_private_reach_tells_owners_from_strangers(importer: str, dotted: str,
                                                   private: bool) -> None:
    """A ``_name`` is private to the package or module that defines it, nothing wider."""
    assert private_reach(importer, dotted) is private


ERRORS_HOME = "auxcheck._core.errors"
"""The one module that defines auxcheck's exceptions."""


def _is_exception_class(node: ast.ClassDef, known: set[str]) -> bool:
    bases = {ast.unparse(base).rpartition(".")[2] for base in node.bases}
    return bool(bases & known) or any(b.endswith(("Error", "Exception", "Interrupt"))
                                      for b in bases)


def test_every_exception_auxcheck_defines_lives_in_one_module() -> None:
    """Exceptions live in ``auxcheck._core.errors`` (``auxcheck.errors`` re-exports the public
    ones); only an underscore-named control-flow signal stays in the one module that raises
    and catches it."""
    home = ast.parse(modules()[ERRORS_HOME].read_text(encoding="utf-8"))
    known = {node.name for node in home.body if isinstance(node, ast.ClassDef)}
    known |= {"Exception", "BaseException", "KeyboardInterrupt", "OSError", "ValueError"}
    elsewhere = sorted(
        f"{name}:{node.lineno} {node.name}"
        for name, path in modules().items() if name != ERRORS_HOME
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
        and _is_exception_class(node, known))
    assert elsewhere == []
