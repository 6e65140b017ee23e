"""What a plugin asks of SGLang, read from its source with ``ast``: imports, hooks, patches.

Collected once per project and judged against each release by
:mod:`auxcheck._releases.release_check`: every ``sglang.*`` import (from-imports, ``import
a.b``, module-attribute uses ``m.X``, relative imports in files inside an ``sglang``
tree), every dotted target string (``mock.patch``, ``monkeypatch.setattr``), every
hook registration (``HookRegistry.register``, ``@plugin_hook``), the classes that
implement a contract protocol, and the ``sglang.srt.plugins`` entry points of
``pyproject.toml``. A file that cannot be read, decoded or parsed is an AUX504 finding.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from auxcheck._core.pyast import (
    QuickVisitor,
    absolute_module,
    catches_import_error,
    caught_names,
    is_type_checking,
    tests_the_release,
)
from auxcheck._core.pyast import dotted_name as _dotted
from auxcheck._core.report import Finding
from auxcheck._core.signatures import FunctionInfo, parse_function
from auxcheck._core.text import shortened
from auxcheck._releases.entry_points import entry_module, entry_point_problem
from auxcheck._releases.hook_refs import (
    HookRef,
    PluginFunction,
    PluginModule,
    hook_ref,
    returns_of,
)
from auxcheck._releases.plugin_classes import PluginClass, collect_classes
from auxcheck._releases.plugin_names import (
    Binding,
    NameSeen,
    ScopeNames,
    Scopes,
    seen_names,
    sole_binding,
)
from auxcheck._releases.plugin_patches import PatchUse, collect_patches

__all__ = [
    "CONTRACT_METHODS",
    "CallUse",
    "ContractClass",
    "EntryPoint",
    "HookUse",
    "ImportUse",
    "PluginScan",
    "scan_project",
    "taken_branch",
]

CONTRACT_METHODS: dict[str, tuple[str, ...]] = {
    "DeviceAuxiliaryOutput": ("copy_to_host",),
    "HostAuxiliaryOutput": ("consume",),
    "SamplingObserver": ("is_active", "before_grammar", "after_sample"),
    "ForwardObserver": ("after_forward",),
}
"""SGLang's contract protocols -> the methods SGLang calls on an implementation."""

PLUGIN_GROUP = "sglang.srt.plugins"

HOOK_TYPES = frozenset({"BEFORE", "AFTER", "AROUND", "REPLACE"})
"""The members of SGLang's ``HookType``: a hook type auxcheck cannot read is ``?``."""


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
    alternatives: tuple[str, ...] = ()
    """For ``alias.X`` where a ``try/except ImportError`` binds ``alias`` to one of several
    modules: those modules, the ``try`` body's first. ``module`` is then the last."""
    handler: str = "except ImportError"
    """The clause of ``group``'s ``try`` that catches the failed import, as written."""

    @property
    def dotted(self) -> str:
        """Returns ``module.name`` (or the module)."""
        return self.module if self.name is None else f"{self.module}.{self.name}"


@dataclass(frozen=True, slots=True)
class HookUse:
    """One hook registration: its target, hook type, where it was made and the hook itself."""

    location: str
    target: str | None
    hook_type: str
    text: str
    hook: HookRef | None = None
    """The hook expression as written (None when the call names no hook)."""
    module: str = ""
    """The plugin module (or file) that registers it: where ``hook`` is looked up."""
    unread_type: str | None = None
    """The hook type as written, when auxcheck cannot tell which HookType member it always
    is (a parameter, a name bound twice): ``hook_type`` is then ``?``."""


@dataclass(frozen=True, slots=True)
class CallUse:
    """One call into SGLang: the callee's dotted path and the arguments' shape.

    ``guard`` says why the call may not run on every release (a version test around
    it, a ``try`` catching TypeError); such a call's misfit is a note.
    """

    location: str
    dotted: str
    positional: int
    keywords: tuple[str, ...]
    text: str
    splat: bool = False
    guard: str | None = None
    alternatives: tuple[str, ...] = ()
    """As :attr:`ImportUse.alternatives`: the modules a try/except alias may be."""


def taken_branch(dotted: str, alternatives: Sequence[str],
                 exists: Callable[[str], bool]) -> str | None:
    """Returns ``dotted`` through the module a ``try/except ImportError`` alias is bound to.

    ``dotted`` names the last branch's module (``alternatives[-1]``); the try body's
    import runs first, so the first module that ``exists`` wins. None when none does.
    """
    if not alternatives:
        return dotted
    taken = next((m for m in alternatives if exists(m)), None)
    return None if taken is None else taken + dotted[len(alternatives[-1]):]


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
    calls: tuple[CallUse, ...] = ()
    modules: tuple[PluginModule, ...] = ()
    """Each scanned file's definitions and imports, to find hooks defined elsewhere."""
    unreadable: tuple[str, ...] = ()
    """A note per file left out of the scan, for each release's ``imports`` stage."""
    problems: tuple[str, ...] = field(default=())
    """Entry-point table problems found while reading ``pyproject.toml``."""
    broken: tuple[Finding, ...] = ()
    """The AUX504 finding of each file that could not be read, decoded or parsed."""
    patches: tuple[PatchUse, ...] = ()
    """Attributes the plugin sets on SGLang modules by hand (``setattr``, ``m.name = v``)."""
    subclasses: tuple[PluginClass, ...] = ()
    """Every class the plugin defines, with its bases and methods: the ``classes`` stage."""
    entry_problems: tuple[str | None, ...] = ()
    """Why ``load_plugins`` cannot call each entry point (None: it can), read with the scan."""


# ---------------------------------------------------------------- one file


class _FileScan(QuickVisitor):
    def __init__(self, path: str, module: str | None, package: bool,
                 scope_names: ScopeNames) -> None:
        self.scope_names = scope_names
        self.path = path
        self.module = module
        self.package = package
        self.imports: list[ImportUse] = []
        self.hooks: list[HookUse] = []
        self.classes: list[ContractClass] = []
        self.aliases: dict[str, str] = {}  # local name -> sglang module it is bound to
        self.names: dict[str, str] = {}  # local name -> sglang dotted object it is bound to
        self.group: str | None = None
        self.handler = "except ImportError"
        self.fallback = False
        self.alias_options: dict[str, list[str]] = {}  # alias -> modules, per try/except branch
        self.calls: list[CallUse] = []
        self.functions: dict[str, PluginFunction] = {}
        self.defined_classes: set[str] = set()
        self.bindings: dict[str, str] = {}  # local name -> absolute dotted origin (any import)
        self.scope: list[str] = []
        self.guards: list[str] = []
        self.hooked: set[int] = set()  # plugin_hook decorator calls already registered
        self.values: dict[str, HookRef] = {}  # module-level NAME = partial(...) / lambda / name
        self.stored: set[str] = set()  # sglang attributes the plugin assigns (module.X = ...)
        self.scopes = Scopes()  # the scopes around the node being visited, as Python nests them
        self.seen: dict[str, NameSeen] = {}  # qualified name -> what a later use of it sees
        self.rebound: set[str] = set()  # module names bound other than by an import
        self.class_bases: dict[str, tuple[str, ...]] = {}  # qualname -> absolute bases

    def use(self, node: ast.AST, module: str, name: str | None, kind: str, text: str,
            create: bool = False) -> None:
        self.imports.append(ImportUse(self.at(node), module, name, kind, text, create,
                                      self.group, self.fallback, handler=self.handler))

    def visit_If(self, node: ast.If) -> None:
        # Imports under `if TYPE_CHECKING:` never run: they are mypy's business.
        if is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        if tests_the_release(node.test):
            self.guards.append(f"it runs under `if {shortened(ast.unparse(node.test))}`")
            self.generic_visit(node)
            self.guards.pop()
            return
        self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        # A handler catching ImportError makes the body's imports a group whose except
        # block is the fallback; one catching TypeError guards the body's calls.
        imports = any(catches_import_error(h) for h in node.handlers)
        types = any(_catches_type_error(h) for h in node.handlers)
        saved = self.group, self.fallback, self.handler
        if imports:
            self.group = self.at(node)
            caught = next(h for h in node.handlers if catches_import_error(h))
            self.handler = ("except:" if caught.type is None
                            else f"except {ast.unparse(caught.type)}")
        if types:
            self.guards.append(f"it runs in the `try` at line {node.lineno}, whose handler "
                               "catches TypeError")
        for child in node.body:
            self.visit(child)
        if types:
            self.guards.pop()
        if imports:
            self.fallback = True
        for handler in node.handlers:
            for child in handler.body:
                self.visit(child)
        self.group, self.fallback, self.handler = saved
        for child in [*node.orelse, *node.finalbody]:
            self.visit(child)

    def at(self, node: ast.AST) -> str:
        return f"{self.path}:{getattr(node, 'lineno', 1)}:{getattr(node, 'col_offset', 0) + 1}"

    def scan(self, tree: ast.Module) -> None:
        names = self.scope_names.of(tree)
        for name, bindings in names.items():
            last = sole_binding(bindings, name=name)
            if isinstance(last, Binding) and last.kind == "assign" and isinstance(
                    last.value, (ast.Lambda, ast.Call, ast.Name, ast.Attribute)):
                self.values[name] = hook_ref(last.value, "")
        self.open("module", "", names)
        self.visit(tree)
        self.scopes.pop()
        self.rebound = {name for name, bindings in names.items() if any(
            b.kind != "import" and not b.fallback for b in bindings)}

    def open(self, kind: Literal["module", "class", "function"], qualname: str,
             names: dict[str, list[Binding]]) -> None:
        """Opens a scope and records what later uses of each of its names see."""
        self.scopes.push(kind, qualname, names)
        self.seen.update(seen_names(self.scopes.frames[-1]))

    # -- imports

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            self.bindings[local] = alias.name if alias.asname else local
            if not _is_sglang(alias.name):
                continue
            self.use(node, alias.name, None, "import", f"import {alias.name}")
            if alias.asname:
                self.aliases[alias.asname] = alias.name
                if self.group is not None:
                    self.alias_options.setdefault(alias.asname, []).append(alias.name)
            else:
                self.aliases.setdefault("sglang", "sglang")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = self._absolute(node)
        for alias in node.names:
            if module is not None and alias.name != "*":
                self.bindings[alias.asname or alias.name] = f"{module}.{alias.name}"
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

    def sglang_dotted(self, chain: str, line: int | None = None,
                      ) -> tuple[str, tuple[str, ...]] | None:
        """Returns the sglang path ``chain`` (``a.b.c`` in this file) names, and the modules an
        alias bound in ``try/except ImportError`` branches may be; None when not SGLang's.

        With ``line``, the use there: None too when its name may be the file's own by then."""
        head, _, rest = chain.partition(".")
        if line is not None and not self.scopes.still_imported(head, line):
            return None  # the file rebinds the name: `class Scheduler(Scheduler)`, a parameter
        module = self.aliases.get(head)
        if module is not None and rest:
            options = tuple(self.alias_options.get(head, ()))
            return f"{module}.{rest}", options if len(set(options)) > 1 else ()
        origin = self.names.get(head)
        if origin is not None:
            return (f"{origin}.{rest}" if rest else origin), ()
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = _dotted(node)
        found = self.sglang_dotted(chain, node.lineno) if chain is not None and "." in chain \
            else None
        if chain is not None and found is not None:
            full, options = found
            if not isinstance(node.ctx, ast.Load):
                # `module.X = value` makes X: never an error, and later reads of X find it.
                self.stored.add(full)
                return
            self.imports.append(ImportUse(self.at(node), full.rpartition(".")[0],
                                          full.rpartition(".")[2], "attribute", chain,
                                          False, self.group, self.fallback, options,
                                          self.handler))
            return  # the whole chain is one use; do not report its prefixes
        self.generic_visit(node)

    # -- calls: hooks, patches and calls into SGLang

    def visit_Call(self, node: ast.Call) -> None:
        func = _dotted(node.func) or ""
        last = func.rpartition(".")[2]
        if last == "register" and func.rpartition(".")[0].endswith("HookRegistry"):
            hook = node.args[1] if len(node.args) > 1 else _keyword(node, "hook")
            self._hook(node, node.args[2] if len(node.args) > 2 else _keyword(node, "hook_type"),
                       hook)
        elif last == "plugin_hook" and id(node) not in self.hooked:
            self._hook(node, node.args[1] if len(node.args) > 1 else _keyword(node, "type"), None)
        elif (isinstance(node.func, ast.Call) and node.args
              and (_dotted(node.func.func) or "").rpartition(".")[2] == "plugin_hook"):
            inner = node.func  # plugin_hook(target, type)(hook)
            self.hooked.add(id(inner))
            self._hook(inner, inner.args[1] if len(inner.args) > 1 else _keyword(inner, "type"),
                       node.args[0])
        elif _is_patcher(func) and node.args:
            self._patch(node, func)
        if func and "." in func or func in self.names:
            self._call(node, func)
        self.generic_visit(node)

    def _call(self, node: ast.Call, func: str) -> None:
        found = self.sglang_dotted(func, node.lineno)
        if found is None:
            return
        splat = any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords)
        self.calls.append(CallUse(
            self.at(node), found[0], len(node.args), tuple(k.arg for k in node.keywords if k.arg),
            shortened(ast.unparse(node)), splat, self.guards[-1] if self.guards else None,
            found[1]))

    def _target(self, node: ast.expr | None) -> str | None:
        return None if node is None else self.scopes.string(node)

    def _hook(self, node: ast.Call, kind: ast.expr | None, hook: ast.expr | None, *,
              decorated: str | None = None) -> None:
        first = node.args[0] if node.args else _keyword(node, "target")
        target = self._target(first)
        hook_type = "AFTER" if kind is None else self.scopes.member(kind, HOOK_TYPES)
        ref = hook_ref(hook, ".".join(self.scope)) if hook is not None else None
        if ref is not None and ref.name and self.scopes.in_nested(ref.name.partition(".")[0]):
            ref = HookRef(ref.text, None, ref.scope)  # a lambda's parameter, a comprehension's
        if decorated is not None:
            ref = HookRef(decorated, decorated, scope="")
        unread = None if kind is None or hook_type != "?" else ast.unparse(kind)
        self.hooks.append(HookUse(self.at(node), target, hook_type, ast.unparse(node.func), ref,
                                  self.module or self.path, unread))

    # -- definitions

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        qualname = ".".join([*self.scope, node.name])
        decorators = tuple(ast.unparse(d.func if isinstance(d, ast.Call) else d)
                           for d in node.decorator_list)
        self.functions[qualname] = PluginFunction(qualname, parse_function(node), decorators,
                                                  self.at(node), returns_of(node))
        self._decorator_hooks(node, qualname)
        self.scope.append(node.name)
        self.open("function", qualname, self.scope_names.of(node))
        self.generic_visit(node)
        self.scopes.pop()
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.scopes.push("nested", ".".join(self.scope), self.scope_names.of(node))
        self.generic_visit(node)
        self.scopes.pop()

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                       ) -> None:
        names = {n.id: [Binding(n.id, "other", n.lineno, n.lineno, 0, n)]
                 for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        self.scopes.push("nested", ".".join(self.scope), names)
        self.generic_visit(node)
        self.scopes.pop()

    visit_SetComp = visit_GeneratorExp = visit_DictComp = visit_ListComp

    def _decorator_hooks(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
                         qualname: str) -> None:
        for decorator in node.decorator_list:
            if (isinstance(decorator, ast.Call)
                    and (_dotted(decorator.func) or "").rpartition(".")[2] == "plugin_hook"):
                self.hooked.add(id(decorator))
                kind = decorator.args[1] if len(decorator.args) > 1 else _keyword(decorator,
                                                                                  "type")
                self._hook(decorator, kind, None, decorated=qualname)

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
        qualname = ".".join([*self.scope, node.name])
        self.defined_classes.add(qualname)
        self.class_bases[qualname] = tuple(self._absolute_base(b) for b in node.bases)
        self._decorator_hooks(node, qualname)
        self._contract(node)
        self.scope.append(node.name)
        self.open("class", qualname, self.scope_names.of(node))
        for child in node.body:
            self.visit(child)
        self.scopes.pop()
        self.scope.pop()
        extras: list[ast.AST] = [*node.bases, *node.keywords, *node.decorator_list]
        for extra in extras:
            self.visit(extra)

    def _absolute_base(self, base: ast.expr) -> str:
        text = _dotted(base.value if isinstance(base, ast.Subscript) else base) or ast.unparse(
            base)
        head, dot, rest = text.partition(".")
        if not self.scopes.still_imported(head, base.lineno):
            # `class Mine(Scheduler)` after `class Scheduler(Scheduler)`: the file's own class
            return f"{self.module or self.path}.{text}" if head in self.defined_classes else text
        origin = self.bindings.get(head)
        return f"{origin}{dot}{rest}" if origin is not None else text

    def _contract(self, node: ast.ClassDef) -> None:
        methods = {n.name: parse_function(n) for n in node.body
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        static = frozenset(n.name for n in node.body
                           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and any(_dotted(d) == "staticmethod" for d in n.decorator_list))
        protocol = self._protocol(node, methods)
        if protocol is not None:
            self.classes.append(ContractClass(self.at(node), node.name, protocol, methods, static))

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


def _catches_type_error(handler: ast.ExceptHandler) -> bool:
    # Only a handler naming TypeError says "this call may not fit": a broad `except
    # Exception` around plugin logic hides a broken call, it does not plan for one.
    return "TypeError" in caught_names(handler)




def _is_sglang(module: str) -> bool:
    return module == "sglang" or module.startswith("sglang.")


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in node.keywords if k.arg == name), None)


# ---------------------------------------------------------------- the project


def scan_project(root: Path, *, exclude: Sequence[str] = (),
                 files: Sequence[str] | None = None) -> PluginScan:
    """Returns what the plugin project at ``root`` uses of SGLang, read without importing it:
    its Python ``files`` when given (``auxcheck check`` walks the project once), else those
    found under ``root``. The collector keeps out of the way meanwhile (a large plugin's trees
    are millions of nodes, in no cycle: :func:`~auxcheck._core.collector.few_collections`)."""
    from auxcheck._core.collector import few_collections

    with few_collections():
        return _scan_project(root, exclude=exclude, files=files)


def _scan_project(root: Path, *, exclude: Sequence[str],
                  files: Sequence[str] | None) -> PluginScan:
    from auxcheck._core.python_files import iter_python_files, module_name_of
    from auxcheck._core.sources import deep_call

    imports: list[ImportUse] = []
    hooks: list[HookUse] = []
    classes: list[ContractClass] = []
    calls: list[CallUse] = []
    stored: set[str] = set()
    modules: list[PluginModule] = []
    broken: list[Finding] = []
    patches: list[PatchUse] = []
    subclasses: list[PluginClass] = []
    listed = iter_python_files([str(root)], exclude=exclude) if files is None else files
    entry_points, problems = read_entry_points(root)
    wanted = {entry_module(e, root) for e in entry_points}  # parsed once, kept for them
    trees: dict[Path, ast.Module] = {}
    count = 0
    for path in listed:
        count += 1
        shown = _shown(path, root)
        tree = _parse(path, shown)
        if isinstance(tree, Finding):
            broken.append(tree)
            continue
        if wanted and Path(path).resolve() in wanted:
            trees[Path(path).resolve()] = tree
        module = module_name_of(path, anchors=("sglang",))
        scopes = ScopeNames()  # each scope's bindings, read once for both walks
        scan = _FileScan(shown, module, Path(path).name == "__init__.py", scopes)
        deep_call(functools.partial(scan.scan, tree))  # Python parsed it: walk it however deep
        patches += deep_call(functools.partial(
            collect_patches, tree, shown=shown, module=module or shown,
            bindings={k: v for k, v in scan.bindings.items() if k not in scan.rebound},
            scopes=scopes))
        subclasses += deep_call(functools.partial(
            collect_classes, tree, shown=shown, module=module or shown, bindings=scan.bindings))
        imports += scan.imports
        hooks += scan.hooks
        classes += scan.classes
        calls += scan.calls
        stored |= scan.stored
        modules.append(PluginModule(module or shown, scan.functions,
                                    frozenset(scan.defined_classes), scan.bindings,
                                    scan.values, scan.class_bases, scan.seen))
    imports = [u for u in imports if not (u.kind == "attribute" and u.dotted in stored)]
    unreadable = tuple(f"{f.location}: not scanned, AUX504 {f.message.partition('; ')[0]}"
                       for f in broken)
    return PluginScan(root, count, tuple(imports), tuple(hooks), tuple(classes),
                      tuple(entry_points), tuple(calls), tuple(modules), unreadable,
                      tuple(problems), tuple(broken), patches=tuple(patches),
                      subclasses=tuple(subclasses), entry_problems=tuple(
                          entry_point_problem(e, root, trees=trees) for e in entry_points))


def _parse(path: str, shown: str) -> ast.Module | Finding:
    """Returns the file's ast, or its AUX504 finding (located at ``shown``) when it is broken."""
    from auxcheck._core.sources import parse_file

    return parse_file(path, shown=shown)


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
    from auxcheck._core.config import read_pyproject, table_at
    from auxcheck._core.errors import InvalidArgument

    try:
        data = read_pyproject(root)
    except InvalidArgument as exc:
        return [], [str(exc)]
    found: list[EntryPoint] = []
    problems: list[str] = []
    tables = []
    for label, keys in (("[project.entry-points]", ("project", "entry-points")),
                        ("[tool.poetry.plugins]", ("tool", "poetry", "plugins"))):
        try:  # `project = "x"` is a note naming the key, not a crash
            tables.append((label, table_at(data, root / "pyproject.toml", *keys)))
        except InvalidArgument as exc:
            problems.append(str(exc))
    for label, table in tables:
        group = table.get(PLUGIN_GROUP)
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
