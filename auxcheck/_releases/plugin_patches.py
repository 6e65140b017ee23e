"""Patches a plugin makes on SGLang modules by hand, and whether each takes effect per release.

Besides ``HookRegistry``, plugins patch SGLang directly: ``m = importlib.import_module(
"sglang.x.y")`` then ``setattr(m, "name", value)`` or ``m.name = value``, or the same on a
module they imported (``import sglang.x.y as m``, ``from sglang.x import y``). Python
never refuses such a patch: an attribute a module no longer has is simply created, and
nothing reads it. :func:`collect_patches` reads them from a plugin file with ``ast``;
:func:`judge_patches` judges them against one release (AUX706, AUX503).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from auxcheck._core.pyast import (
    IMPORT_ERROR_CATCHERS,
    QuickVisitor,
    absolute_module,
    caught_names,
    dotted_name,
)
from auxcheck._core.text import shortened
from auxcheck._releases.index import Lookup, ReleaseIndex
from auxcheck._releases.moves_infer import Home, home_near
from auxcheck._releases.plugin_names import Binding, FrameKind, ScopeNames, Scopes
from auxcheck._releases.stage import StageBuilder

__all__ = ["PatchUse", "collect_patches", "judge_patches"]

PatchHow = Literal["setattr", "assign"]
PatchVia = Literal["import_module", "import"]


@dataclass(frozen=True, slots=True)
class PatchUse:
    """One attribute a plugin sets on an SGLang module (or on an SGLang class it imported).

    ``module`` is the dotted owner the attribute is set on; ``via`` says how the plugin got
    it: ``importlib.import_module`` (which auxcheck's imports stage does not see) or an
    import statement (which it does).
    """

    location: str
    module: str
    name: str
    text: str
    how: PatchHow
    via: PatchVia = "import"
    guarded: bool = False
    """The import that gives ``module`` sits in a ``try`` whose handler (``except ImportError``,
    ``except Exception``, bare) swallows its failure, or under ``contextlib.suppress``."""
    read_back: bool = False
    """The plugin reads the attribute back itself (after setting it, or elsewhere): its own."""
    original: str | None = None
    """Where the plugin reads the attribute before setting it (to wrap SGLang's), if it does."""

    @property
    def dotted(self) -> str:
        """Returns ``module.name``."""
        return f"{self.module}.{self.name}"


# ---------------------------------------------------------------- reading a plugin file


@dataclass(frozen=True, slots=True)
class _Owner:
    module: str
    via: PatchVia
    guarded: bool


class _Collector(QuickVisitor):
    def __init__(self, shown: str, module: str, bindings: Mapping[str, str],
                 scopes: ScopeNames) -> None:
        self.scope_names = scopes
        self.shown = shown
        self.module = module
        self.bindings = bindings
        self.names = Scopes()  # every scope's bindings, as Python nests them
        self.scopes: list[dict[str, _Owner]] = []  # import_module results, one per scope
        self.scope_ids = [0]
        self.next_scope = 1
        self.guards = 0  # enclosing `try` bodies whose handler swallows a failing import
        self.imports: dict[str, bool] = {}  # local name bound by an import -> guarded
        self.stores: list[tuple[PatchUse, int, int]] = []  # patch, last line, scope
        self.reads: list[tuple[str, int, int]] = []  # dotted, line, scope

    def run(self, tree: ast.Module) -> tuple[PatchUse, ...]:
        self.push("module", self.scope_names.of(tree))
        self.visit(tree)
        return tuple(self._finish(patch, end, scope) for patch, end, scope in self.stores)

    def _finish(self, patch: PatchUse, end: int, scope: int) -> PatchUse:
        line = int(patch.location.rsplit(":", 2)[1])
        before = [r for r in self.reads if r[0] == patch.dotted and r[2] == scope and r[1] <= end]
        # A read after the patch, or in another function (run later), reads the plugin's own
        # attribute back; one in the same scope before it reads SGLang's, to wrap it.
        back = any(r[0] == patch.dotted and r not in before and not (r[2] == 0 and r[1] < line)
                   for r in self.reads)
        original = f"{self.shown}:{before[0][1]}" if before else None
        return replace(patch, read_back=back, original=original)

    def at(self, node: ast.AST) -> str:
        return f"{self.shown}:{getattr(node, 'lineno', 1)}:{getattr(node, 'col_offset', 0) + 1}"

    # -- scopes and guards

    def push(self, kind: FrameKind, names: dict[str, list[Binding]]) -> None:
        """Opens a scope: its names as Python binds them, and its ``import_module`` results."""
        self.names.push(kind, "", names)
        self.scopes.append({})

    def pop(self) -> None:
        self.names.pop()
        self.scopes.pop()

    def within(self, kind: FrameKind, names: dict[str, list[Binding]],
               body: list[ast.AST]) -> None:
        self.push(kind, names)
        for child in body:
            self.visit(child)
        self.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for extra in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if extra is not None:
                self.visit(extra)
        self.scope_ids.append(self.next_scope)
        self.next_scope += 1
        self.within("function", self.scope_names.of(node), list(node.body))
        self.scope_ids.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for extra in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(extra)
        self.within("class", self.scope_names.of(node), list(node.body))

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for extra in [*node.args.defaults, *node.args.kw_defaults]:
            if extra is not None:
                self.visit(extra)
        self.within("nested", self.scope_names.of(node), [node.body])

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                       ) -> None:
        names = {n.id: [Binding(n.id, "other", n.lineno, n.lineno, 0, n)]
                 for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        self.within("nested", names, list(ast.iter_child_nodes(node)))

    visit_SetComp = visit_GeneratorExp = visit_DictComp = visit_ListComp

    def visit_Try(self, node: ast.Try) -> None:
        swallows = any(_swallows(h) for h in node.handlers)
        self.guards += swallows
        for child in node.body:
            self.visit(child)
        self.guards -= swallows
        for child in [*(s for h in node.handlers for s in h.body), *node.orelse,
                      *node.finalbody]:
            self.visit(child)

    def visit_With(self, node: ast.With) -> None:
        suppressed = any(_suppresses(item.context_expr) for item in node.items)
        self.guards += suppressed
        self.generic_visit(node)
        self.guards -= suppressed

    # -- where modules come from

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imports[alias.asname or alias.name.split(".")[0]] = self.guards > 0

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            self.imports[alias.asname or alias.name] = self.guards > 0

    def imported(self, node: ast.expr) -> str | None:
        """Returns the sglang module ``importlib.import_module(...)`` imports, or None."""
        if not isinstance(node, ast.Call) or not node.args:
            return None
        func = dotted_name(node.func) or ""
        head, _, rest = func.partition(".")
        origin = self.origin(head, node.lineno)
        if (f"{origin}.{rest}" if rest else origin) != "importlib.import_module":
            return None
        name = self.names.string(node.args[0])
        if name is not None and name.startswith(".") and len(node.args) > 1:
            level = len(name) - len(name.lstrip("."))
            name = absolute_module(self.module, False, level, name.lstrip(".") or None)
        if name is None or not (name == "sglang" or name.startswith("sglang.")):
            return None
        return name

    def owner(self, node: ast.expr) -> _Owner | None:
        """Returns the SGLang object ``node`` names (a module alias or a chain on one)."""
        chain = dotted_name(node)
        if chain is None:
            return None
        head, _, rest = chain.partition(".")
        tail = f".{rest}" if rest else ""
        seen = self.names.lookup(head)
        found = self.scopes[seen[0]].get(head) if seen is not None else None
        if found is not None:
            return _Owner(found.module + tail, found.via, found.guarded)
        origin = self.origin(head, getattr(node, "lineno", 0))
        if origin is None or not (origin == "sglang" or origin.startswith("sglang.")):
            return None
        return _Owner(origin + tail, "import", self.imports.get(head, False))

    def origin(self, name: str, line: int) -> str | None:
        """Returns what the import of ``name`` binds, None where a use on ``line`` here may
        see another binding (a parameter, a local, a loop variable of the same name)."""
        return self.bindings.get(name) if self.names.still_imported(name, line) else None

    # -- stores and reads

    def visit_Assign(self, node: ast.Assign) -> None:
        module = self.imported(node.value)
        if module is not None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.scopes[-1][target.id] = _Owner(module, "import_module", self.guards > 0)
        for target in node.targets:
            self.store(node, target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        module = self.imported(node.value) if node.value is not None else None
        if module is not None and isinstance(node.target, ast.Name):
            self.scopes[-1][node.target.id] = _Owner(module, "import_module", self.guards > 0)
        if node.value is not None:
            self.store(node, node.target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.store(node, node.target)
        self.generic_visit(node)

    def store(self, statement: ast.stmt, target: ast.expr) -> None:
        if not isinstance(target, ast.Attribute):
            return
        owner = self.owner(target.value)
        if owner is not None:
            self.add(statement, owner, target.attr, "assign")

    def add(self, node: ast.AST, owner: _Owner, name: str, how: PatchHow) -> None:
        patch = PatchUse(self.at(node), owner.module, name, shortened(ast.unparse(node)), how,
                         owner.via, owner.guarded)
        line: int = getattr(node, "lineno", 1)
        end: int = getattr(node, "end_lineno", None) or line
        self.stores.append((patch, end, self.scope_ids[-1]))

    def visit_Call(self, node: ast.Call) -> None:
        func = dotted_name(node.func)
        if func in ("setattr", "getattr", "hasattr") and self.names.lookup(func) is None and len(
                node.args) >= 2:
            owner = self.owner(node.args[0])
            name = self.names.string(node.args[1])
            if owner is not None and name is not None:
                if func == "setattr" and len(node.args) == 3:
                    self.add(node, owner, name, "setattr")
                elif func != "setattr":
                    self.reads.append((f"{owner.module}.{name}", node.lineno, self.scope_ids[-1]))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load):
            owner = self.owner(node.value)
            if owner is not None:
                self.reads.append((f"{owner.module}.{node.attr}", node.lineno,
                                   self.scope_ids[-1]))
        self.generic_visit(node)


def _swallows(handler: ast.ExceptHandler) -> bool:
    """Returns True when ``handler`` catches a failing import and does not raise again."""
    catches = handler.type is None or any(n in IMPORT_ERROR_CATCHERS for n in caught_names(handler))
    return catches and not any(isinstance(s, ast.Raise) for s in handler.body)


def _suppresses(expr: ast.expr) -> bool:
    if not isinstance(expr, ast.Call) or (dotted_name(expr.func) or "").rpartition(".")[2] != (
            "suppress"):
        return False
    return any((dotted_name(a) or "").rpartition(".")[2] in IMPORT_ERROR_CATCHERS
               for a in expr.args)



def collect_patches(tree: ast.Module, *, shown: str, module: str,
                    bindings: Mapping[str, str],
                    scopes: ScopeNames | None = None) -> tuple[PatchUse, ...]:
    """Returns the patches the plugin file ``tree`` makes on SGLang modules and classes.

    ``shown`` is the file as locations name it, ``module`` the plugin module (for a
    relative ``import_module``), ``bindings`` the file's local names -> the absolute
    dotted origin of their import; ``scopes`` the file's scopes as another walk read them.
    """
    return _Collector(shown, module, bindings, scopes or ScopeNames()).run(tree)


# ---------------------------------------------------------------- judging one release


def judge_patches(stage: StageBuilder, patches: Sequence[PatchUse], index: ReleaseIndex,
                  peers: Sequence[ReleaseIndex] = (), moves: Any = None) -> None:
    """Judges each patch on ``index``'s release into ``stage``.

    The owner is missing: with an ``import_module`` not guarded, the plugin's load fails
    (AUX503); with a guarded import, the patch silently stops applying (AUX706); an
    import statement's failure is the imports stage's own finding. The owner lacks the
    name where a peer release's has it, or the release keeps it elsewhere: the patch
    makes an attribute nothing reads (AUX706). Otherwise it may be the plugin's own
    attribute: a note. A patch the plugin reads back itself is never AUX706.
    """
    for patch in patches:
        stage.checked += 1
        owner = index.resolve(patch.module)
        if not owner.ok and owner.certain:
            _missing_owner(stage, patch, owner, index, moves)
            continue
        if not owner.certain or owner.kind not in ("module", "class"):
            stage.judge(patch.location, patch.dotted, "note",
                        f"{patch.module} is a {owner.kind or 'value'} in sglang {index.version}: "
                        "its attributes are not judged", quiet=True)
            continue
        found = index.attribute(owner, patch.name)
        if found.ok or not found.certain:
            stage.judge(patch.location, patch.dotted, "ok" if found.certain else "note",
                        found.where if found.certain else found.reason, quiet=not found.certain)
            continue
        _missing_name(stage, patch, owner, found, index, peers, moves)


def _missing_owner(stage: StageBuilder, patch: PatchUse, owner: Lookup, index: ReleaseIndex,
                   moves: Any) -> None:
    version = index.version
    if patch.via == "import" and not patch.guarded:
        stage.judge(patch.location, patch.dotted, "note", "its import does not resolve "
                    "(imports column)", quiet=True)
        return
    if not patch.guarded:  # the plugin's load fails, whatever the patch was for
        stage.fail("AUX503", patch.location,
                   f"`{patch.text}`: importlib.import_module({patch.module!r}) raises "
                   f"ModuleNotFoundError in sglang {version} ({owner.reason}), so loading the "
                   "plugin fails before the patch", f"expected every sglang module the plugin "
                   f"imports to exist in sglang {version}", _home_hint(patch, index, moves))
        stage.judge(patch.location, patch.dotted, "fail", owner.reason)
        return
    if patch.read_back:
        stage.judge(patch.location, patch.dotted, "note",
                    f"{patch.module} does not resolve in sglang {version} ({owner.reason}); the "
                    "plugin reads the attribute back itself", quiet=True)
        return
    seen = (f"`{patch.text}` patches {patch.dotted}, but sglang {version} has no "
            f"{patch.module} ({owner.reason}); the handler around its import swallows the "
            "failure, so the patch silently stops applying")
    stage.fail("AUX706", patch.location, seen,
               f"expected a patch sglang {version} runs: of a module it has",
               _home_hint(patch, index, moves))
    stage.judge(patch.location, patch.dotted, "fail", seen)


def _missing_name(stage: StageBuilder, patch: PatchUse, owner: Lookup, found: Lookup,
                  index: ReleaseIndex, peers: Sequence[ReleaseIndex], moves: Any) -> None:
    version = index.version
    evidence = _elsewhere(patch, owner, index, peers, moves)
    if patch.read_back or evidence is None:
        why = ("the plugin reads it back itself" if patch.read_back else
               "no release of this run binds it there: the plugin may set its own attribute")
        stage.judge(patch.location, patch.dotted, "note" if not patch.read_back else "ok",
                    f"sglang {version}: {found.reason}; {why}", quiet=True)
        return
    reads = (f"; the plugin reads {patch.dotted} first ({patch.original}), which raises "
             f"AttributeError in sglang {version}" if patch.original else "")
    seen = (f"`{patch.text}` sets {patch.name} on {patch.module}, which sglang {version} does "
            f"not bind ({found.reason}); {evidence}: the patch creates an attribute nothing in "
            f"sglang {version} reads{reads}")
    hint = _home_hint(patch, index, moves) if owner.kind == "module" else (
        f"sglang {version}'s {patch.module} has no {patch.name}: patch what it has in its "
        f"place, or drop the patch for sglang {version}")
    stage.fail("AUX706", patch.location, seen,
               f"expected a patch of a name sglang {version} binds there", hint)
    stage.judge(patch.location, patch.dotted, "fail", seen)


def _elsewhere(patch: PatchUse, owner: Lookup, index: ReleaseIndex,
               peers: Sequence[ReleaseIndex], moves: Any) -> str | None:
    """Returns the evidence that SGLang's name is meant: a peer binding it there, or where
    this release keeps it now; None when there is none."""
    for peer in peers:
        there = peer.resolve(patch.dotted)
        if there.ok and there.certain and there.kind != "module":
            return f"sglang {peer.version} binds it there ({there.where})"
    if owner.kind != "module":
        return None
    home = _home(patch, index, moves)
    return f"sglang {index.version} defines it in {home}" if home is not None else None


def _home(patch: PatchUse, index: ReleaseIndex, moves: Any) -> str | None:
    moved = moves.new_module_of(patch.module, patch.name) if moves is not None else None
    if isinstance(moved, str) and index.provides(moved, patch.name).ok:
        return moved
    home = home_near(index.homes(), patch.name, patch.module)
    if isinstance(home, Home) and home.module != patch.module:
        return home.module + home.among()
    if isinstance(home, tuple) and home:
        return " or ".join(home[:3]) + (" and more" if len(home) > 3 else "")
    return None


def _home_hint(patch: PatchUse, index: ReleaseIndex, moves: Any) -> str:
    home = _home(patch, index, moves)
    if home is None:
        return (f"sglang {index.version} has no {patch.name} anywhere: drop the patch for sglang "
                f"{index.version}, or patch what replaced it")
    return (f"sglang {index.version} defines {patch.name} in {home}: patch it there (and where "
            "SGLang's modules import it from), keeping the old target for older releases")
