"""``auxcheck check --sglang R1,R2``: judges a plugin against each SGLang release's own source.

Per release, seven stages, none importing SGLang:

- ``imports``: every ``sglang`` import and patch target resolves (AUX503, with the fix
  where a move is known);
- ``attributes``: every ``module.attr`` and ``Class.attr`` use of an imported SGLang name
  resolves, through class bases, class-level names and dataclass fields (AUX503);
- ``hooks``: every ``HookRegistry.register`` / ``@plugin_hook`` target exists (AUX701)
  and the hook takes the call HookRegistry makes on the target's signature (AUX703);
- ``calls``: every call the plugin makes to an SGLang function, class or method it
  names binds to that release's signature (AUX704);
- ``classes``: every plugin class deriving from an SGLang class defines the abstract
  methods its bases declare, its overrides take the calls SGLang makes to them (AUX705),
  and the methods it calls on ``self``/``super()`` exist (AUX503) and bind (AUX704);
- ``entry-points``: every ``sglang.srt.plugins`` entry point of ``pyproject.toml`` names
  a module-level callable that takes no arguments, and the release loads plugins (AUX702);
- ``contract``: the plugin's implementations of the contract protocols accept the calls
  the release's protocols declare (AUX102, AUX201).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from auxcheck._core.collector import few_collections
from auxcheck._core.plugin_calls import arity_problem
from auxcheck._core.signatures import FunctionInfo, SignatureCarrier, signature_of
from auxcheck._core.text import close_names
from auxcheck._releases.class_check import class_stage
from auxcheck._releases.definitions import names_in
from auxcheck._releases.derived_cache import save_cached
from auxcheck._releases.entry_points import entry_point_problem
from auxcheck._releases.index import Lookup, ReleaseIndex
from auxcheck._releases.moves_infer import Home, home_near
from auxcheck._releases.plugin_scan import (
    CONTRACT_METHODS,
    PLUGIN_GROUP,
    EntryPoint,
    ImportUse,
    PluginScan,
    taken_branch,
)
from auxcheck._releases.signature_check import call_stage, hook_stage, hook_target_problem
from auxcheck._releases.stage import ReleaseStage, StageBuilder
from auxcheck._releases.stubcheck import ClassInfo, parse_module

__all__ = [
    "RELEASE_STAGES",
    "ReleaseResult",
    "ReleaseStage",
    "check_release",
    "hook_target_problem",
    "import_subject",
    "render_matrix",
]

RELEASE_STAGES = ("imports", "attributes", "hooks", "calls", "classes", "entry-points",
                  "contract")

_CONTRACT_MODULES = ("sglang.srt.managers.auxiliary_output",
                     "sglang.srt.sampling.sampling_observer",
                     "sglang.srt.model_executor.forward_observer")
_METHOD_CODES = {"copy_to_host": "AUX102", "consume": "AUX201"}


@dataclass(frozen=True, slots=True)
class ReleaseResult:
    """A plugin's result on one release: its stages, or the error that kept it from running."""

    version: str
    label: str
    stages: tuple[ReleaseStage, ...] = ()
    error: str | None = None

    @property
    def failed(self) -> bool:
        """Returns True when the release could not be read or a stage failed."""
        return self.error is not None or any(s.failed for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        """Returns the result as JSON-ready data."""
        return {"version": self.version, "source": self.label, "ok": not self.failed,
                "error": self.error,
                "stages": [s.to_dict() for s in self.stages]}


# ---------------------------------------------------------------- imports


def _import_stage(scan: PluginScan, index: ReleaseIndex, homes: _Hints, *,
                  attributes: bool = False, failed: set[str] | None = None) -> ReleaseStage:
    """Judges the plugin's imports (or, with ``attributes``, its uses of their attributes).

    ``failed`` gathers the imports that do not resolve; an attribute of one of them is
    not judged again (one cause, one finding: the import's)."""
    stage = StageBuilder("attributes" if attributes else "imports")
    groups: dict[str, list[tuple[ImportUse, Lookup]]] = {}
    broken_imports = tuple(f"{name}." for name in failed or ())
    for use in scan.imports:
        if (use.kind == "attribute") != attributes:
            continue
        stage.checked += 1
        if attributes and use.dotted.startswith(broken_imports):
            stage.judge(use.location, use.text, "note", "its import does not resolve (imports "
                        "column)", quiet=True)
            continue
        found = _resolve_use(use, index)
        if failed is not None and not attributes and not found.ok and found.certain:
            failed.add(use.dotted)
        if _undecodable(stage, use, found, index):
            continue
        if use.group is not None:
            groups.setdefault(use.group, []).append((use, found))
        else:
            if not found.ok and found.certain:
                _unresolved(stage, use, found, index, homes)
            _judge_use(stage, use, found)
    for group, uses in groups.items():
        # The try body runs first; the except block's imports run only when it failed.
        # Without imports there, the plugin handles the absence itself.
        broken = [(u, f) for u, f in uses if not f.ok and f.certain]
        primary_broken = any(not u.fallback for u, _ in broken)
        fallback_broken = any(u.fallback for u, _ in broken)
        for use, found in uses:
            _judge_use(stage, use, found, handled=not (primary_broken and fallback_broken))
        if not broken:
            continue
        handler = uses[0][0].handler
        if primary_broken and fallback_broken:
            for use, found in broken:
                _unresolved(stage, use, found, index, homes,
                            also=f"; its `{handler}` fallback fails too")
        else:
            shown = ", ".join(f"`{u.text}`" for u, _ in broken)
            stage.notes.append(f"{group}: {shown} does not resolve in sglang {index.version}; "
                               f"the `{handler}` there handles it")
    if not attributes:
        stage.notes += scan.unreadable
    return stage.done()


def _undecodable(stage: StageBuilder, use: ImportUse, found: Lookup, index: ReleaseIndex) -> bool:
    """Notes a use resolved into a module whose source Python cannot decode, so cannot import:
    never an ``ok``, never a failure (auxcheck cannot tell what it defines). True when noted."""
    if not found.ok or not found.where:
        return False
    module = found.where if found.kind == "module" else found.where.rpartition(".")[0]
    why = index.undecodable(module)
    if why is None:
        return False
    stage.judge(use.location, use.text, "note", f"`{use.text}` is not judged: {why}")
    return True


def _judge_use(stage: StageBuilder, use: ImportUse, found: Lookup, *,
               handled: bool = False) -> None:
    # Into the JSON only: an uncertain use is "cannot tell", too common to list as text notes;
    # a broken import its `except ImportError` handles is the group's note.
    if found.ok and found.certain:
        stage.judge(use.location, use.text, "ok", found.where, quiet=True)
    elif found.ok or handled:
        stage.judge(use.location, use.text, "note", found.reason or "cannot tell", quiet=True)
    else:
        stage.judge(use.location, use.text, "fail", found.reason, quiet=True)


def _unresolved(stage: StageBuilder, use: ImportUse, found: Lookup, index: ReleaseIndex,
                homes: _Hints, *, also: str = "") -> None:
    stage.fail("AUX503", use.location,
               f"`{use.text}` does not resolve in sglang {index.version}: {found.reason}{also}",
               f"expected every sglang import to resolve in sglang {index.version}",
               homes.hint(use, index), obj=import_subject(use))


def import_subject(use: ImportUse) -> tuple[str, str | None] | None:
    """Returns what an import is about, ``(module, name)`` (name None for ``import M``), as
    an AUX503 finding's object: ``auxcheck check`` refers it to the old import found there."""
    return (use.module, use.name) if use.kind in ("from", "import") else None


def _resolve_use(use: ImportUse, index: ReleaseIndex) -> Lookup:
    if use.kind == "import" or use.name is None:
        if index.module_exists(use.module):
            return Lookup(True, "module", use.module)
        return Lookup(False, reason=f"module {use.module} does not exist")
    if use.kind == "from":
        if not index.module_exists(use.module):
            return Lookup(False, reason=f"module {use.module} does not exist")
        return index.provides(use.module, use.name)
    if use.create:  # mock.patch(..., create=True) makes the attribute: only the owner must exist
        return index.resolve(use.module)
    dotted = taken_branch(use.dotted, use.alternatives, index.module_exists)
    if dotted is None:
        return Lookup(False, reason="none of " + ", ".join(use.alternatives) + " exists")
    return index.resolve(dotted)


class _Hints:
    """Where a release keeps a name a plugin imported from elsewhere: for fix hints."""

    def __init__(self, moves: Any) -> None:
        self.moves = moves

    def hint(self, use: ImportUse, index: ReleaseIndex) -> str:
        name = use.name
        if not name:
            return (f"remove the import, or drop sglang {index.version} from the releases you "
                    "support")
        moved = self.moves.new_module_of(use.module, name) if self.moves is not None else None
        if moved and index.provides(moved, name).ok:
            return (f"import {name} from {moved} (it moved there): `auxcheck migrate` rewrites it")
        home = home_near(index.homes(), name, use.module)
        if isinstance(home, Home) and home.module != use.module:
            return (f"sglang {index.version} defines {name} in {home.module}{home.among()}; "
                    "import it from there (with a `try: ... except ImportError:` fallback to "
                    "keep other releases)")
        owner = index.resolve(use.module) if use.kind != "from" else Lookup(
            index.module_exists(use.module), "module", use.module)
        near = close_names(name, names_in(owner, index)) if owner.ok and owner.certain else []
        if near:
            return (f"sglang {index.version} has no {name} there; the closest names in "
                    f"{use.module}: {', '.join(near)}")
        return (f"sglang {index.version} has no {name} anywhere: stop using it, or drop sglang "
                f"{index.version} from the releases you support")


# ---------------------------------------------------------------- entry points


def _entry_stage(scan: PluginScan, index: ReleaseIndex) -> ReleaseStage:
    stage = StageBuilder("entry-points")
    stage.notes += scan.problems
    loads = index.module_exists("sglang.srt.plugins") and index.provides(
        "sglang.srt.plugins", "load_plugins").ok
    for entry in scan.entry_points:
        stage.checked += 1
        where = f"{entry.source} {entry.name} = {entry.value!r}"
        problem = _entry_problems(scan)[entry]
        if problem is None and not loads:
            problem = (f"sglang {index.version} has no sglang.srt.plugins.load_plugins, so "
                       f"{PLUGIN_GROUP} entry points are never loaded")
        if problem is not None:
            stage.fail("AUX702", where, problem,
                       "expected a module-level function of the plugin taking no arguments")
    return stage.done()


_ENTRY_PROBLEMS: list[tuple[PluginScan, dict[EntryPoint, str | None]]] = []


def _entry_problems(scan: PluginScan) -> dict[EntryPoint, str | None]:
    """Returns each entry point's problem, read once per scan (not once per release: the
    module an entry point names may be the plugin's largest)."""
    if len(scan.entry_problems) == len(scan.entry_points):  # read by the scan
        return dict(zip(scan.entry_points, scan.entry_problems))
    for seen, problems in _ENTRY_PROBLEMS:
        if seen is scan:
            return problems
    problems = {entry: entry_point_problem(entry, scan.root) for entry in scan.entry_points}
    _ENTRY_PROBLEMS[:] = [*_ENTRY_PROBLEMS[-3:], (scan, problems)]
    return problems


def _contract_stage(scan: PluginScan, index: ReleaseIndex) -> ReleaseStage:
    stage = StageBuilder("contract")
    protocols = release_protocols(index)
    for cls in scan.classes:
        protocol = protocols.get(cls.protocol)
        if protocol is None:
            stage.notes.append(f"{cls.location}: {cls.name} implements {cls.protocol}, which "
                               f"sglang {index.version} does not have")
            continue
        for method in CONTRACT_METHODS[cls.protocol]:
            theirs, ours = protocol.methods.get(method), cls.methods.get(method)
            if theirs is None or ours is None:
                continue
            stage.checked += 1
            problem = signature_problem(theirs, ours, static=method in cls.static)
            if problem is not None:
                stage.fail(_METHOD_CODES.get(method, "AUX102"), cls.location,
                           f"{cls.name}.{method}: {problem}",
                           f"expected the call sglang {index.version}'s {cls.protocol}."
                           f"{method} declares")
    return stage.done()


def release_protocols(index: ReleaseIndex) -> dict[str, ClassInfo]:
    """Returns the contract protocol classes the release defines, by name (first home wins)."""
    found: dict[str, ClassInfo] = {}
    for module in _CONTRACT_MODULES:
        path = index.module_file(module)
        text = index.release.read(path) if path else None
        if text is None:
            continue
        for name, symbol in parse_module(module, text, stub=False).symbols.items():
            if name in CONTRACT_METHODS and isinstance(symbol, ClassInfo):
                found.setdefault(name, symbol)
    return found


def signature_problem(theirs: FunctionInfo, ours: FunctionInfo, *, static: bool) -> str | None:
    """Returns why ``ours`` cannot take the call protocol method ``theirs`` declares, or None.

    SGLang calls contract methods with the protocol's positional parameters
    positionally and its keyword-only parameters by keyword.
    """
    positional = [p.name for p in theirs.params[1:]
                  if p.kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    keywords = [p.name for p in theirs.params if p.kind == "KEYWORD_ONLY"]
    try:
        signature = signature_of(ours.params, drop_first=not static)
    except ValueError as exc:
        return f"its parameters cannot be read ({exc})"
    return arity_problem(SignatureCarrier(signature), positional, keywords)


# ---------------------------------------------------------------- one release


def check_release(scan: PluginScan, index: ReleaseIndex, *, moves: Any = None,
                  peers: Sequence[ReleaseIndex] = ()) -> ReleaseResult:
    """Returns the plugin's result on one release: every stage of :data:`RELEASE_STAGES`.

    ``peers`` are the other releases of the run: a hook whose target they call and this
    release no longer does is judged on that evidence (AUX706).
    """
    with few_collections():
        return _check_release(scan, index, moves, peers)


def _check_release(scan: PluginScan, index: ReleaseIndex, moves: Any,
                   peers: Sequence[ReleaseIndex] = ()) -> ReleaseResult:
    failed: set[str] = set()
    stages = (
        _import_stage(scan, index, _Hints(moves), failed=failed),
        _import_stage(scan, index, _Hints(moves), attributes=True, failed=failed),
        hook_stage(scan, index, peers),
        call_stage(scan, index),
        class_stage(scan, index),
        _entry_stage(scan, index),
        _contract_stage(scan, index),
    )
    save_cached(index)
    return ReleaseResult(index.version, index.release.label, stages)


def render_matrix(results: Sequence[ReleaseResult]) -> str:
    """Returns the release x stage table, then every finding and note, release by release."""
    header: tuple[str, ...] = ("release", *RELEASE_STAGES)
    rows: list[tuple[str, ...]] = [header]
    for result in results:
        if result.error is not None:
            rows.append((result.version, "ERROR", *[""] * (len(RELEASE_STAGES) - 1)))
        else:
            rows.append((result.version, *(s.cell() for s in result.stages)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    for result in results:
        block = [f"sglang {result.version}: {result.error}"] if result.error else []
        for stage in result.stages:
            block += [f"  {f.to_text()}" for f in stage.findings]
            block += [f"  note: {n}" for n in stage.notes]
        if block and not result.error:
            block.insert(0, f"{result.label}:")
        if block:
            lines += ["", *block]
    return "\n".join(lines)
