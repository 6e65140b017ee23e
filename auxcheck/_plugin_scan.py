"""What a plugin asks of SGLang, read from its source with ``ast``: imports, hooks, patches.

Collected once per project and judged against each release by
:mod:`auxcheck._release_check`: every ``sglang.*`` import (from-imports, ``import
a.b``, module-attribute uses ``m.X``, relative imports in files inside an ``sglang``
tree), every dotted target string (``mock.patch``, ``monkeypatch.setattr``), every
hook registration (``HookRegistry.register``, ``@plugin_hook``), the classes that
implement a contract protocol, and the ``sglang.srt.plugins`` entry points of
``pyproject.toml``. A file that cannot be read, decoded or parsed is an AUX504 finding.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auxcheck._astutil import absolute_module, catches_import_error, is_type_checking
from auxcheck._astutil import dotted_name as _dotted
from auxcheck._stubcheck import FunctionInfo, _parse_function
from auxcheck.report import Finding

__all__ = [
    "CONTRACT_METHODS",
    "ContractClass",
    "EntryPoint",
    "HookUse",
    "ImportUse",
    "PluginScan",
    "scan_project",
]

CONTRACT_METHODS: dict[str, tuple[str, ...]] = {
    "DeviceAuxiliaryOutput": ("copy_to_host",),
    "HostAuxiliaryOutput": ("consume",),
    "SamplingObserver": ("is_active", "before_grammar", "after_sample"),
    "ForwardObserver": ("after_forward",),
}
"""SGLang's contract protocols -> the methods SGLang calls on an implementation."""

PLUGIN_GROUP = "sglang.srt.plugins"


@dataclass(frozen=True, slots=True)
class ImportUse:
    """One use of an ``sglang`` module or name in the plugin's source.

    ``kind``: ``from`` (``from M import N``), ``import`` (``import M``), ``attribute``
    (``M.N`` through an imported module) or ``patch`` (a dotted target string).
    ``name`` is None when only the module must exist.
    """

    location: str
    module: str
    name: str | None
    kind: str
    text: str
    create: bool = False
    group: str | None = None
    """The ``try`` statement (``path:line``) whose ``except ImportError`` guards this import."""
    fallback: bool = False
    """True for an import in the ``except`` block: it runs only when the ``try`` body failed."""

    @property
    def dotted(self) -> str:
        """Returns ``module.name`` (or the module)."""
        return self.module if self.name is None else f"{self.module}.{self.name}"


@dataclass(frozen=True, slots=True)
class HookUse:
    """One hook registration: its target, hook type and where it was made."""

    location: str
    target: str | None
    hook_type: str
    text: str


@dataclass(frozen=True, slots=True)
class ContractClass:
    """A plugin class implementing a contract protocol, with the methods it defines."""

    location: str
    name: str
    protocol: str
    methods: dict[str, FunctionInfo]
    static: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """One ``sglang.srt.plugins`` entry point: ``name = "value"`` from ``source``."""

    name: str
    value: str
    source: str


@dataclass(frozen=True, slots=True)
class PluginScan:
    """Everything the release checks need from one plugin project."""

    root: Path
    files: int
    imports: tuple[ImportUse, ...]
    hooks: tuple[HookUse, ...]
    classes: tuple[ContractClass, ...]
    entry_points: tuple[EntryPoint, ...]
    unreadable: tuple[str, ...] = ()
    """A note per file left out of the scan, for each release's ``imports`` stage."""
    problems: tuple[str, ...] = field(default=())
    """Entry-point table problems found while reading ``pyproject.toml``."""
    broken: tuple[Finding, ...] = ()
    """The AUX504 finding of each file that could not be read, decoded or parsed."""


# ---------------------------------------------------------------- one file


class _FileScan(ast.NodeVisitor):
    def __init__(self, path: str, module: str | None, package: bool) -> None:
        self.path = path
        self.module = module
        self.package = package
        self.imports: list[ImportUse] = []
        self.hooks: list[HookUse] = []
        self.classes: list[ContractClass] = []
        self.aliases: dict[str, str] = {}  # local name -> sglang module it is bound to
        self.names: dict[str, str] = {}  # local name -> sglang dotted object it is bound to
        self.constants: dict[str, str] = {}  # module-level NAME = "string"
        self.group: str | None = None
        self.fallback = False

    def use(self, node: ast.AST, module: str, name: str | None, kind: str, text: str,
            create: bool = False) -> None:
        self.imports.append(ImportUse(self.at(node), module, name, kind, text, create,
                                      self.group, self.fallback))

    def visit_If(self, node: ast.If) -> None:
        # Imports under `if TYPE_CHECKING:` never run: they are mypy's business.
        if is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        if not any(catches_import_error(h) for h in node.handlers):
            self.generic_visit(node)
            return
        saved = self.group, self.fallback
        self.group = self.at(node)
        for child in node.body:
            self.visit(child)
        self.fallback = True
        for handler in node.handlers:
            for child in handler.body:
                self.visit(child)
        self.group, self.fallback = saved
        for child in [*node.orelse, *node.finalbody]:
            self.visit(child)

    def at(self, node: ast.AST) -> str:
        return f"{self.path}:{getattr(node, 'lineno', 1)}:{getattr(node, 'col_offset', 0) + 1}"

    def scan(self, tree: ast.Module) -> None:
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                self.constants[node.targets[0].id] = node.value.value
        self.visit(tree)

    # -- imports

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not _is_sglang(alias.name):
                continue
            self.use(node, alias.name, None, "import", f"import {alias.name}")
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                self.aliases.setdefault("sglang", "sglang")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = self._absolute(node)
        if module is None or not _is_sglang(module):
            return
        dots = "." * node.level
        for alias in node.names:
            if alias.name == "*":
                self.use(node, module, None, "import", f"from {dots}{node.module or ''} import *")
                continue
            text = f"from {dots}{node.module or ''} import {alias.name}"
            self.use(node, module, alias.name, "from", text)
            self.names[alias.asname or alias.name] = f"{module}.{alias.name}"

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        if node.level and self.module is None:
            return None
        return absolute_module(self.module or "", self.package, node.level, node.module)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = _dotted(node)
        if chain is not None:
            head, _, rest = chain.partition(".")
            module = self.aliases.get(head)
            if module is not None and rest:
                full = f"{module}.{rest}" if module != "sglang" else chain
                self.use(node, full.rpartition(".")[0], full.rpartition(".")[2], "attribute",
                         chain)
                return  # the whole chain is one use; do not report its prefixes
        self.generic_visit(node)

    # -- calls: hooks and patches

    def visit_Call(self, node: ast.Call) -> None:
        func = _dotted(node.func) or ""
        last = func.rpartition(".")[2]
        if last == "register" and func.rpartition(".")[0].endswith("HookRegistry"):
            self._hook(node, node.args[2] if len(node.args) > 2 else _keyword(node, "hook_type"))
        elif last == "plugin_hook":
            self._hook(node, node.args[1] if len(node.args) > 1 else _keyword(node, "type"))
        elif _is_patcher(func) and node.args:
            self._patch(node, func)
        self.generic_visit(node)

    def _target(self, node: ast.expr | None) -> str | None:
        # A string constant, a module-level constant, or an f-string / `+` of those.
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.constants.get(node.id)
        if isinstance(node, ast.FormattedValue) and node.conversion == -1 and not node.format_spec:
            return self._target(node.value)
        if isinstance(node, ast.JoinedStr):
            parts = [self._target(v) for v in node.values]
            return None if any(p is None for p in parts) else "".join(p or "" for p in parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._target(node.left), self._target(node.right)
            return None if left is None or right is None else left + right
        return None

    def _hook(self, node: ast.Call, kind: ast.expr | None) -> None:
        first = node.args[0] if node.args else _keyword(node, "target")
        target = self._target(first)
        hook_type = "AFTER" if kind is None else (_dotted(kind) or "?").rpartition(".")[2]
        self.hooks.append(HookUse(self.at(node), target, hook_type, ast.unparse(node.func)))

    def _patch(self, node: ast.Call, func: str) -> None:
        target = self._target(node.args[0])
        if target is None or not _is_sglang(target) or "." not in target:
            return
        if func.endswith(("setattr", "delattr")) and not (len(node.args) == 2 or func.endswith(
                "delattr")):
            return  # monkeypatch.setattr(obj, "name", value): not a dotted target
        create = any(k.arg == "create" and isinstance(k.value, ast.Constant) and k.value.value
                     for k in node.keywords)
        owner, _, name = target.rpartition(".")
        if func.endswith(("patch.dict", "patch.multiple")):
            owner, name = target, ""
        self.use(node, owner, name or None, "patch", f"{func}({target!r})", create)

    # -- classes

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        methods = {n.name: _parse_function(n) for n in node.body
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        static = frozenset(n.name for n in node.body
                           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and any(_dotted(d) == "staticmethod" for d in n.decorator_list))
        protocol = self._protocol(node, methods)
        if protocol is not None:
            self.classes.append(ContractClass(self.at(node), node.name, protocol, methods, static))
        self.generic_visit(node)

    def _protocol(self, node: ast.ClassDef, methods: dict[str, FunctionInfo]) -> str | None:
        for base in node.bases:
            dotted = _dotted(base) or ""
            head, _, rest = dotted.partition(".")
            full = self.names.get(head) if not rest else (
                f"{self.aliases[head]}.{rest}" if head in self.aliases else None)
            if full and full.rpartition(".")[2] in CONTRACT_METHODS:
                return full.rpartition(".")[2]
        # SGLang's protocols are structural: a class defining every method SGLang calls
        # implements one without naming it.
        for protocol, needed in CONTRACT_METHODS.items():
            if all(name in methods for name in needed):
                return protocol
        return None


def _is_patcher(func: str) -> bool:
    # mock.patch / patch / mocker.patch, patch.dict / patch.multiple, monkeypatch.setattr
    parts = func.split(".")
    if parts[-1] == "patch":
        return True
    if len(parts) > 1 and parts[-1] in ("dict", "multiple"):
        return parts[-2] == "patch"
    return len(parts) > 1 and parts[-1] in ("setattr", "delattr")


def _is_sglang(module: str) -> bool:
    return module == "sglang" or module.startswith("sglang.")


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in node.keywords if k.arg == name), None)


# ---------------------------------------------------------------- the project


def scan_project(root: Path, *, exclude: Sequence[str] = ()) -> PluginScan:
    """Returns what the plugin project at ``root`` uses of SGLang, read without importing it."""
    from auxcheck.migrate._files import deep_call, iter_python_files, module_name_of

    imports: list[ImportUse] = []
    hooks: list[HookUse] = []
    classes: list[ContractClass] = []
    broken: list[Finding] = []
    files = 0
    for path in iter_python_files([str(root)], exclude=exclude):
        files += 1
        shown = _shown(path, root)
        tree = _parse(path, shown)
        if isinstance(tree, Finding):
            broken.append(tree)
            continue
        module = module_name_of(path, anchors=("sglang",))
        scan = _FileScan(shown, module, Path(path).name == "__init__.py")
        deep_call(functools.partial(scan.scan, tree))  # Python parsed it: walk it however deep
        imports += scan.imports
        hooks += scan.hooks
        classes += scan.classes
    entry_points, problems = read_entry_points(root)
    unreadable = tuple(f"{f.location}: not scanned, AUX504 {f.message.partition('; ')[0]}"
                       for f in broken)
    return PluginScan(root, files, tuple(imports), tuple(hooks), tuple(classes),
                      tuple(entry_points), unreadable, tuple(problems), tuple(broken))


def _parse(path: str, shown: str) -> ast.Module | Finding:
    """Returns the file's ast, or its AUX504 finding (located at ``shown``) when it is broken."""
    from auxcheck.migrate._files import (
        DEFAULT_MAX_FILE_SIZE,
        PARSE_ERRORS,
        FileTooLarge,
        UndecodableFile,
        broken_file_finding,
        parse_as_python,
        read_source,
    )

    try:
        source = read_source(path, max_size=DEFAULT_MAX_FILE_SIZE)
    except (UndecodableFile, FileTooLarge) as exc:
        return broken_file_finding(shown, exc)
    try:
        return parse_as_python(source.text, shown)
    except PARSE_ERRORS as exc:
        return broken_file_finding(shown, exc, text=source.text)


def _shown(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return path


def read_entry_points(root: Path) -> tuple[list[EntryPoint], list[str]]:
    """Returns the ``sglang.srt.plugins`` entry points of ``root/pyproject.toml``, and problems.

    Both ``[project.entry-points."sglang.srt.plugins"]`` and Poetry's
    ``[tool.poetry.plugins."sglang.srt.plugins"]`` are read.
    """
    from auxcheck._config import read_pyproject
    from auxcheck.errors import InvalidArgument

    try:
        data = read_pyproject(root)
    except InvalidArgument as exc:
        return [], [str(exc)]
    found: list[EntryPoint] = []
    problems: list[str] = []
    tables = [("[project.entry-points]", data.get("project", {}).get("entry-points", {})),
              ("[tool.poetry.plugins]", data.get("tool", {}).get("poetry", {}).get("plugins", {}))]
    for label, table in tables:
        group = table.get(PLUGIN_GROUP) if isinstance(table, dict) else None
        if group is None:
            continue
        if not isinstance(group, dict):
            problems.append(f"pyproject.toml {label} {PLUGIN_GROUP!r} must be a table of "
                            f'name = "module:function", got {group!r}')
            continue
        for name, value in group.items():
            found.append(EntryPoint(str(name), value if isinstance(value, str) else repr(value),
                                    f"pyproject.toml {label}"))
    return found, problems
