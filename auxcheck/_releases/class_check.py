"""The ``classes`` stage of ``auxcheck check --sglang``: plugin classes that derive from SGLang's.

For each plugin class whose bases (through other plugin classes) reach an SGLang class,
per release, read with ``ast`` on both sides (:mod:`auxcheck._releases.plugin_classes`):

- a concrete class defines every abstract method its SGLang bases declare, where their
  metaclass is ABCMeta; else Python cannot instantiate it (AUX705);
- each method it overrides takes the calls SGLang's own code makes to the base's method
  (AUX705; the rule of :func:`auxcheck._core.signatures.fit_hook`, as for a REPLACE hook),
  a failure only on a call through a receiver known to reach the class;
- each ``self.m(...)`` / ``super().m(...)`` it makes to a method it does not define
  exists in the release (AUX503) and binds to its signature (AUX704).

The class's method resolution order is computed as Python does (C3) over the plugin's
classes and the release's; a base outside both (``torch.nn.Module``, another package)
hides what it defines, so what it could change is a note, never a failure.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from auxcheck._core.plugin_calls import signature_text
from auxcheck._core.signatures import CallShape, HookFit, bind_problem, fit_hook, signature_of
from auxcheck._core.text import close_names, did_you_mean
from auxcheck._releases.definitions import Callee, call_sites, callee, is_test_path
from auxcheck._releases.hook_refs import PluginFunction, is_clear_decorator
from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_classes import PluginClass, SelfCall, collect_classes
from auxcheck._releases.plugin_scan import CONTRACT_METHODS, PluginScan
from auxcheck._releases.stage import ReleaseStage, StageBuilder
from auxcheck._releases.summaries import module_of_path

__all__ = ["class_stage"]

NodeKind = Literal["plugin", "sglang", "outside", "plain", "missing"]

_PLAIN: Mapping[str, bool] = {
    "builtins.object": False, "abc.ABC": True, "typing.Generic": False,
    "typing_extensions.Generic": False, "typing.Protocol": True,
    "typing_extensions.Protocol": True}
"""Bases that define nothing a plugin class relies on -> whether their metaclass is ABCMeta."""
_PLAIN_METACLASS = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
"""Bases outside sglang whose metaclass is known to be ``type``."""
_ABCMETA = frozenset({"abc.ABCMeta"})
_PROTOCOLS = frozenset({"typing.Protocol", "typing_extensions.Protocol"})
_CLEAR_CLASS_DECORATORS = frozenset({
    "dataclass", "dataclasses.dataclass", "final", "typing.final", "typing_extensions.final",
    "total_ordering", "functools.total_ordering", "runtime_checkable",
    "typing.runtime_checkable"})
"""Class decorators that add no method a ``self.m(...)`` could reach (dunders aside)."""
_ROOM = frozenset({"one more argument by position (the target takes *args)",
                   "a keyword the target takes through **kwargs"})
"""The calls :func:`auxcheck._core.signatures.call_shapes` tries for ``*args``/``**kwargs``."""


@dataclass(frozen=True, slots=True)
class _Node:
    """One class of a chain: the plugin's, the release's, or one auxcheck cannot read."""

    key: str
    kind: NodeKind
    bases: tuple[str, ...] = ()
    cls: PluginClass | None = None
    abc: bool | None = False
    """True when its own metaclass is ABCMeta (or it is ABC); None when unknown."""
    path: str = ""

    def defines(self, name: str) -> bool:
        """Returns True when the class body binds ``name``."""
        return self.cls is not None and name in self.cls.names


@dataclass(slots=True)
class _Graph:
    """The classes a plugin's classes derive from in one release, and their MROs."""

    scan: PluginScan
    index: ReleaseIndex
    plugin: dict[str, PluginClass] = field(default_factory=dict)
    nodes: dict[str, _Node] = field(default_factory=dict)
    mros: dict[str, list[_Node] | None] = field(default_factory=dict)
    modules: dict[str, Mapping[str, PluginClass]] = field(default_factory=dict)
    children: dict[str, set[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.plugin = {c.dotted: c for c in self.scan.subclasses}
        for cls in self.scan.subclasses:
            for base in self.node(cls.dotted).bases:
                self.children.setdefault(base, set()).add(cls.dotted)

    # -- nodes

    def node(self, key: str) -> _Node:
        if key not in self.nodes:
            self.nodes[key] = self.build(key)
        return self.nodes[key]

    def build(self, key: str) -> _Node:
        cls = self.plugin.get(key)
        if cls is not None:
            bases = tuple(self.plugin_base(b, cls) for b in cls.bases)
            return _Node(key, "plugin", bases or ("builtins.object",), cls, _own_abc(cls))
        if key in _PLAIN:
            return _Node(key, "plain", abc=_PLAIN[key])
        if key.startswith("sglang."):
            return self.sglang(key)
        return _Node(key, "outside", abc=False if key in _PLAIN_METACLASS else None)

    def plugin_base(self, base: str, cls: PluginClass) -> str:
        """Returns the key of a plugin class's base: a plugin class through re-exports."""
        if base in cls.unknown:
            return f"?{base}"
        for _ in range(8):
            if base in self.plugin or base.startswith("sglang."):
                return base
            moved = self.reexport(base)
            if moved is None:
                return base
            base = moved
        return base

    def reexport(self, dotted: str) -> str | None:
        parts = dotted.split(".")
        for at in range(len(parts) - 1, 0, -1):
            bindings = next((m.bindings for m in self.scan.modules
                             if m.name == ".".join(parts[:at])), None)
            if bindings is not None:
                origin = bindings.get(parts[at])
                return None if origin is None else ".".join([origin, *parts[at + 1:]])
        return None

    def sglang(self, dotted: str) -> _Node:
        found = self.index.resolve(dotted)
        if not found.ok and found.certain:
            return _Node(dotted, "missing", abc=None)
        if not (found.ok and found.certain and found.kind == "class"):
            return _Node(dotted, "outside", abc=None)
        if found.where != dotted:
            return self.node(found.where)
        module, qualname = self.index.split_where(dotted)
        cls = self.module_classes(module).get(qualname)
        if cls is None:
            return _Node(dotted, "outside", abc=None)
        bases = tuple(self.sglang_base(b, module, cls) for b in cls.bases)
        return _Node(dotted, "sglang", bases or ("builtins.object",), cls, _own_abc(cls),
                     self.index.module_file(module) or module)

    def sglang_base(self, base: str, module: str, cls: PluginClass) -> str:
        if base not in cls.unknown:
            return base
        head, *rest = base.split(".")
        found = self.index.provides(module, head) if head.isidentifier() else None
        for part in rest:
            if found is None or not (found.ok and found.certain):
                break
            found = self.index.attribute(found, part)
        if found is not None and found.ok and found.certain and found.kind == "class":
            return found.where
        if found is not None and found.kind == "external":
            return ".".join([found.where, *rest])
        return f"?{base}"

    def module_classes(self, module: str) -> Mapping[str, PluginClass]:
        if module not in self.modules:
            tree = self.index.tree(module)
            summary = self.index.summary(module)
            bindings = {k: str(o) for k, o in summary.imported.items()} if summary else {}
            shown = self.index.module_file(module) or module
            self.modules[module] = {} if tree is None else {
                c.qualname: c for c in collect_classes(tree, shown=shown, module=module,
                                                       bindings=bindings)}
        return self.modules[module]

    # -- method resolution order

    def mro(self, key: str, seen: frozenset[str] = frozenset()) -> list[_Node] | None:
        """Returns the class's MRO as Python computes it (C3), None when it has none."""
        if key in self.mros:
            return self.mros[key]
        node = self.node(key)
        if node.kind not in ("plugin", "sglang"):
            return [node]
        if key in seen:
            return None
        lines: list[list[_Node]] = []
        for base in node.bases:
            line = self.mro(base, seen | {key})
            if line is None:
                self.mros[key] = None
                return None
            lines.append(line)
        merged = _c3([*lines, [self.node(b) for b in node.bases]])
        self.mros[key] = None if merged is None else [node, *merged]
        return self.mros[key]

    def descendants(self, key: str) -> set[str]:
        """Returns the scanned plugin classes deriving from ``key``, however deep."""
        found: set[str] = set()
        stack = [key]
        while stack:
            for child in self.children.get(stack.pop(), ()):
                if child not in found:
                    found.add(child)
                    stack.append(child)
        return found


def _own_abc(cls: PluginClass) -> bool | None:
    if cls.metaclass is None:
        return False
    return True if cls.metaclass in _ABCMETA else None


def _c3(lines: list[list[_Node]]) -> list[_Node] | None:
    lines = [list(line) for line in lines if line]
    merged: list[_Node] = []
    while lines:
        head = next((line[0] for line in lines
                     if not any(line[0].key in (n.key for n in other[1:]) for other in lines)),
                    None)
        if head is None:
            return None  # Python raises TypeError: no consistent MRO
        merged.append(head)
        lines = [rest for line in lines if (rest := [n for n in line if n.key != head.key])]
    return merged


def _is_abcmeta(mro: Sequence[_Node]) -> bool | None:
    """Returns whether the class's metaclass is ABCMeta: None when a base hides it."""
    if any(n.abc for n in mro):
        return True
    return None if any(n.abc is None for n in mro) else False


def _loc(location: str) -> str:
    """Returns an SGLang location as ``path:line`` (the column dropped)."""
    return location.rsplit(":", 1)[0]


# ---------------------------------------------------------------- the stage


def class_stage(scan: PluginScan, index: ReleaseIndex) -> ReleaseStage:
    """Returns the ``classes`` stage: the plugin's SGLang subclasses in this release."""
    return _Classes(scan, index).run()


class _Classes:
    def __init__(self, scan: PluginScan, index: ReleaseIndex) -> None:
        self.graph = _Graph(scan, index)
        self.index = index
        self.version = index.version
        self.stage = StageBuilder("classes")
        defined = Counter(c.dotted for c in scan.subclasses)
        self.twice = {dotted for dotted, times in defined.items() if times > 1}
        self.site_memo: dict[tuple[str, frozenset[str], bool], list[CallShape]] = {}

    def run(self) -> ReleaseStage:
        for cls in self.graph.scan.subclasses:
            try:
                self.one(cls)
            except RecursionError:  # hundreds of classes deep: past what the walks can follow
                self.stage.judge(cls.location, cls.qualname, "note",
                                 f"`{cls.name}`: its class hierarchy runs too deep for auxcheck "
                                 "to follow; not judged", quiet=True)
        return self.stage.done()

    def one(self, cls: PluginClass) -> None:
        if is_test_path(cls.location.split(":", 1)[0]):
            return  # a test's stand-in: SGLang never builds or calls it
        missing = self.missing_base(cls.dotted, set())
        if missing is not None:
            self.stage.judge(cls.location, cls.qualname, "note",
                             f"its SGLang base {missing} does not resolve in sglang "
                             f"{self.version} (imports column); not judged", quiet=True)
            return
        mro = self.graph.mro(cls.dotted)
        if mro is None:
            if self.reaches_sglang(cls.dotted, set()):
                self.stage.judge(cls.location, cls.qualname, "note",
                                 f"`{cls.name}`: its bases have no consistent method resolution "
                                 "order auxcheck can compute; not judged")
            return
        if not any(n.kind == "sglang" for n in mro):
            return
        self.stage.checked += 1
        self.abstract(cls, mro)
        for name, method in cls.methods.items():
            self.override(cls, mro, name, method)
        for call in cls.calls:
            self.self_call(cls, mro, call)

    def missing_base(self, key: str, seen: set[str]) -> str | None:
        node = self.graph.node(key)
        if node.kind == "missing":
            return key
        if node.kind != "plugin" or key in seen:
            return None
        seen.add(key)
        return next((m for b in node.bases if (m := self.missing_base(b, seen))), None)

    def reaches_sglang(self, key: str, seen: set[str]) -> bool:
        node = self.graph.node(key)
        if node.kind == "sglang" or key in seen or node.kind != "plugin":
            return node.kind == "sglang"
        seen.add(key)
        return any(self.reaches_sglang(b, seen) for b in node.bases)

    # -- abstract methods

    def abstract(self, cls: PluginClass, mro: Sequence[_Node]) -> None:
        """Judges whether Python can instantiate the class: AUX705 for a missing abstract."""
        if cls.is_abstract or self.graph.children.get(cls.dotted) or _PROTOCOLS & set(cls.bases):
            return  # not a class anyone instantiates as it is
        declared: dict[str, _Node] = {}
        for node in mro:
            if node.kind == "sglang" and node.cls is not None:
                for name in node.cls.abstract:
                    declared.setdefault(name, node)
        if not declared:
            return
        meta = _is_abcmeta(mro)
        if meta is False:
            self.stage.judge(cls.location, cls.qualname, "ok",
                             "its SGLang bases declare abstract methods but their metaclass is "
                             "not ABCMeta: Python instantiates it all the same")
            return
        missing, unsure = self.undefined(cls, mro, declared)
        odd = [d for n in mro if n.kind == "plugin" and n.cls is not None
               for d in n.cls.decorators if d not in _CLEAR_CLASS_DECORATORS]
        named = cls.name.startswith(("_", "Abstract")) or cls.name.endswith(("Base", "Mixin"))
        if missing and meta and not odd and not named:
            self.fail_abstract(cls, missing)
        elif missing or unsure:
            names = ", ".join(sorted([*(n for n, _ in missing), *unsure]))
            why = (f"a base outside sglang and the plugin may define {names}" if unsure else
                   f"@{odd[0]} decorates it and may replace the class" if odd and meta else
                   "it is named as a base for other classes, not one to instantiate"
                   if named and meta else
                   "its metaclass may not be ABCMeta (a base auxcheck cannot read)")
            self.stage.judge(cls.location, cls.qualname, "note",
                             f"`{cls.name}` does not define abstract method(s) {names} of its "
                             f"SGLang bases in sglang {self.version}; {why}: cannot tell whether "
                             "Python instantiates it")
        else:
            self.stage.judge(cls.location, cls.qualname, "ok",
                             f"defines every abstract method of its SGLang bases "
                             f"({', '.join(sorted(declared))})")

    def undefined(self, cls: PluginClass, mro: Sequence[_Node],
                  declared: Mapping[str, _Node]) -> tuple[list[tuple[str, _Node]], list[str]]:
        """Returns the abstract methods nothing before their declaration in the MRO defines,
        and those a base auxcheck cannot read may define."""
        hidden = any(self.graph.node(b).kind == "outside" for n in mro if n.kind == "plugin"
                     for b in n.bases)
        missing: list[tuple[str, _Node]] = []
        unsure: list[str] = []
        for name in sorted(declared):
            for node in mro:
                if node.kind in ("outside", "missing"):
                    unsure.append(name)
                    break
                if not node.defines(name):
                    continue
                if node.kind == "sglang" and node.cls is not None and name in node.cls.abstract:
                    if hidden:
                        unsure.append(name)
                    else:
                        missing.append((name, node))
                break
        return missing, unsure

    def fail_abstract(self, cls: PluginClass, missing: Sequence[tuple[str, _Node]]) -> None:
        many = len(missing) > 1
        by_base: dict[str, list[str]] = {}
        for name, node in missing:
            where = _loc(node.cls.abstract[name]) if node.cls else node.path
            by_base.setdefault(node.key, []).append(f"{name} ({where})")
        said = ", and ".join(
            f"its base {base} declares abstract method{'s' if len(names) > 1 else ''} "
            f"{' and '.join(names)}" for base, names in by_base.items())
        text = (f"`{cls.name}` cannot be instantiated on sglang {self.version}: {said} that it "
                f"does not define; Python raises TypeError: Can't instantiate abstract class "
                f"{cls.name}")
        hints = [f"{name}{_params(node.cls.methods[name])}"
                 if node.cls is not None and name in node.cls.methods else name
                 for name, node in missing]
        self.fail(cls, "AUX705", cls.location, cls.qualname, text,
                  f"expected `{cls.name}` to define every abstract method of its SGLang bases "
                  f"in sglang {self.version}",
                  f"define {', '.join(hints)} in {cls.name} (a definition does no harm on "
                  "releases that do not declare it)",
                  f"abstract method{'s' if many else ''} {', '.join(n for n, _ in missing)} "
                  "not defined")

    # -- overrides

    def override(self, cls: PluginClass, mro: Sequence[_Node], name: str,
                 method: PluginFunction) -> None:
        """Judges an override against the calls SGLang makes to the base's method (AUX705)."""
        if name == "__init__" or name.startswith("__") and name.endswith("__") and (
                name != "__call__"):
            return  # constructors are judged where SGLang builds the class
        base = next((n for n in mro[1:] if n.kind == "sglang" and n.defines(name)), None)
        if base is None or name in CONTRACT_METHODS.get(base.key.rpartition(".")[2], ()):
            return  # the contract stage judges the contract protocols' methods
        target = callee(self.index, f"{base.key}.{name}")
        ours = _kind(method.decorators)
        if target is None or target.kind == "property" or ours == "property":
            return
        subject = f"{cls.qualname}.{name}"
        if (ours == "staticmethod") != (target.kind == "staticmethod"):
            self.stage.judge(method.location, subject, "note",
                             f"`{subject}` and {target.where} differ in being a staticmethod; "
                             "the override is not judged", quiet=True)
            return
        first = ours != "staticmethod"
        try:
            theirs = signature_of(target.params, first_positional_only=first)
            mine = signature_of(method.info.params, first_positional_only=first)
        except ValueError as exc:
            self.stage.judge(method.location, subject, "note",
                             f"the parameters of `{subject}` or {target.where} cannot be read "
                             f"({exc})")
            return
        rest = list(theirs.parameters.values())[first:]
        if rest and all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in rest):
            self.stage.judge(method.location, subject, "note",
                             f"{target.where} takes only *args/**kwargs: it declares no call "
                             "to compare the override with", quiet=True)
            return
        fit, typed = fit_hook(theirs, mine, "REPLACE"), True
        if fit.verdict != "ok":
            fit = fit_hook(theirs, mine, "REPLACE", sites=self.sites(target, theirs, mro))
        if fit.verdict != "ok" and not fit.evidence:
            # Calls of that name on receivers of unknown type: a note's evidence, never a failure's.
            loose = fit_hook(theirs, mine, "REPLACE",
                             sites=self.sites(target, theirs, mro, typed=False))
            fit, typed = (loose, False) if loose.evidence else (fit, True)
        self.override_verdict(cls, method, target, theirs, mine, fit, typed=typed)

    def sites(self, target: Callee, theirs: inspect.Signature, mro: Sequence[_Node], *,
              typed: bool = True) -> list[CallShape]:
        """Returns SGLang's calls to ``target`` that may reach the plugin class: with
        ``typed``, only through receivers known to reach the base (else every call of that
        name); not those another SGLang class makes on itself (``self.m(...)`` in a sibling
        backend), nor those passing what the base takes only through ``*args``/``**kwargs``
        (made to one subclass's own signature, not the base's)."""
        ours = frozenset(n.key for n in mro if n.kind == "sglang")  # plugin classes are not
        key = (target.where, ours, typed)                               # in SGLang's modules
        if key not in self.site_memo:  # classes of one shape share their bases' call sites
            self.site_memo[key] = self.reaching(target, theirs, ours, typed)
        return self.site_memo[key]

    def reaching(self, target: Callee, theirs: inspect.Signature, ours: frozenset[str],
                 typed: bool) -> list[CallShape]:
        found = call_sites(self.index, target, typed=typed)
        foreign: set[str] = set()
        for module in {module_of_path(s.where.rpartition(":")[0])[0] for s in found}:
            foreign |= {_loc(c.location) for cls in self.graph.module_classes(module).values()
                        if cls.dotted not in ours for c in cls.calls if c.method == target.name}
        return [s for s in found if s.where not in foreign and _declared(s, theirs)]

    def override_verdict(self, cls: PluginClass, method: PluginFunction, target: Callee,
                         theirs: inspect.Signature, mine: inspect.Signature,
                         fit: HookFit, *, typed: bool) -> None:
        """Judges an override by its fit: a failure only on a call known to reach the class."""
        name = target.name
        subject = f"{cls.qualname}.{name}"
        if fit.verdict == "ok":
            self.stage.judge(method.location, subject, "ok",
                             f"takes every call of {target.where}{signature_text(theirs)}")
            return
        first = fit.evidence[0] if fit.evidence else fit.misfits[0]
        receiver = 0 if target.kind == "staticmethod" else 1
        call = _call_text(name, first.shape, receiver)
        text = (f"`{cls.name}.{name}` cannot take every call its base's "
                f"{target.where}{signature_text(theirs)} ({target.location}) takes in sglang "
                f"{self.version}: `{call}` raises TypeError: {first.error}")
        if fit.evidence:
            sites = ", ".join(m.shape.where for m in fit.evidence[:3])
            more = f" and {len(fit.evidence) - 3} more" if len(fit.evidence) > 3 else ""
            text += f"; SGLang's own code makes that call ({sites}{more})"
        unclear = tuple(d for d in (*method.decorators, *target.decorators)
                        if not is_clear_decorator(d))
        demands = bool(fit.evidence) and _demands(theirs, mine, first=receiver)
        if not fit.evidence or unclear or demands or not typed:
            why = (f"{', '.join('@' + u for u in unclear)} decorates one of them, and auxcheck "
                   "does not know its effect on the signature" if unclear and fit.evidence else
                   f"it requires what no call made through {target.owner} passes, so it is "
                   "called another way (by the plugin's own code); not judged a failure"
                   if demands else
                   f"SGLang calls .{name}(...) on other objects too, and no receiver of "
                   "those calls is known to reach this class" if fit.evidence else
                   f"no call SGLang {self.version} makes was seen to pass it ({fit.sites} "
                   "call(s) read); a caller that does gets TypeError")
            # A misfit only on the extra arguments a base's *args/**kwargs would take, with
            # no call passing any, is SGLang's room to grow, not a call: JSON only.
            room = not fit.evidence and all(m.shape.label in _ROOM for m in fit.misfits)
            self.stage.judge(method.location, subject, "note", f"{text} ({why})", quiet=room)
            return
        self.fail(cls, "AUX705", method.location, subject, text,
                  f"expected `{cls.name}.{name}` to take every call SGLang makes to "
                  f"{target.name}{signature_text(theirs)}",
                  f"declare {name}{signature_text(theirs)} as sglang {self.version}'s "
                  f"{target.owner or 'base'} does, or take what it does not use with "
                  "*args/**kwargs", first.error)

    # -- calls on self and super()

    def self_call(self, cls: PluginClass, mro: Sequence[_Node], call: SelfCall) -> None:
        """Judges ``self.m(...)``/``super().m(...)`` to a method only SGLang's bases define."""
        if call.method.startswith("__") and call.method != "__init__":
            return
        if self.plugin_defines(cls, mro, call):
            return
        start = 0 if call.via == "self" else 1
        found = self.lookup(mro[start:], call.method, instance=call.via == "self", all_=mro)
        if isinstance(found, str):
            self.stage.judge(call.location, call.text, "note", f"`{call.text}`: {found}; not "
                             "judged", quiet=True)
        elif found is None:
            self.absent(cls, mro, call)
        elif found.kind == "sglang" and found.defines(call.method):
            self.binds(cls, call, found)
        else:
            self.stage.judge(call.location, call.text, "ok",
                             f"{found.key} has {call.method} (not a def of its body: its call "
                             "is not judged)", quiet=True)

    def plugin_defines(self, cls: PluginClass, mro: Sequence[_Node], call: SelfCall) -> bool:
        """Returns True when the plugin itself supplies ``m``: its class chain, an instance
        attribute it sets, or a subclass (a method a subclass supplies is its business)."""
        nodes = [n for n in mro if n.kind == "plugin"]
        if call.via == "super":
            nodes = [n for n in mro[1:] if n.kind == "plugin"]
        for key in self.graph.descendants(cls.dotted):
            nodes += [n for n in self.graph.mro(key) or () if n.kind == "plugin"]
        return any(n.defines(call.method) or n.cls is not None and (
            {call.method, "*"} & n.cls.patched
            or call.via == "self" and call.method in n.cls.instance) for n in nodes)

    def lookup(self, nodes: Sequence[_Node], name: str, *, instance: bool,
               all_: Sequence[_Node]) -> _Node | str | None:
        """Returns the SGLang class that supplies ``name``, None when none does, or why
        auxcheck cannot tell."""
        for node in nodes:
            if node.kind in ("outside", "missing"):
                return (f"{node.key.lstrip('?')} is a base outside sglang and the plugin; "
                        "auxcheck cannot see what it defines")
            if node.defines(name) or node.cls is not None and name in node.cls.patched:
                return node
        if name.startswith("__"):
            return f"{name} comes from object or a class decorator"
        for node in all_:
            if instance and node.cls is not None and name in node.cls.instance:
                return node
        for node in all_:
            if node.cls is None:
                continue
            # ``super().m`` reads the classes' bodies only: an instance's attributes and
            # ``__getattr__`` never answer it (Python raises AttributeError on 'super').
            if instance and {"__getattr__", "__getattribute__"} & node.cls.names:
                return f"{node.key} defines __getattr__: any attribute may exist"
            if instance and node.cls.dynamic or "*" in node.cls.patched:
                return f"{node.key} sets attributes by computed names"
            odd = [d for d in node.cls.decorators if d not in _CLEAR_CLASS_DECORATORS]
            if odd:
                return f"{node.key} is decorated with @{odd[0]}, which may add methods"
        return None

    def absent(self, cls: PluginClass, mro: Sequence[_Node], call: SelfCall) -> None:
        base = next(n for n in mro if n.kind == "sglang")
        via = "super()" if call.via == "super" else "self"
        seen = (f"`{call.text}`: sglang {self.version}'s base {base.key} has no method "
                f"{call.method} (nor do its bases)"
                + (f", and `{cls.name}` does not define it" if call.via == "self" else ""))
        if call.guard is not None or call.via == "super" and call.method == call.caller:
            why = (call.guard if call.guard is not None else
                   f"it is made in {call.caller} itself, which SGLang {self.version} does not "
                   "call (its base has no such method); a call from the plugin would raise "
                   "AttributeError")
            self.stage.judge(call.location, call.text, "note", f"{seen} ({why})", quiet=True)
            return
        names = {n for node in mro if node.cls is not None
                 for n in (*node.cls.names, *node.cls.instance)}
        near = close_names(call.method, names)
        hint = (f"the closest names on {cls.name} and its bases: {', '.join(near)}; " if near
                else "") + (f"define {call.method} in {cls.name}, or branch on the release "
                            f"(`if hasattr({via}, {call.method!r}):`)")
        self.fail(cls, "AUX503", call.location, call.text,
                  f"{seen}; Python raises AttributeError",
                  f"expected every method `{cls.name}` calls on {via} to exist in sglang "
                  f"{self.version}", hint, f"no method {call.method}")

    def binds(self, cls: PluginClass, call: SelfCall, node: _Node) -> None:
        target = callee(self.index, f"{node.key}.{call.method}")
        stage, where = self.stage, f"{node.key}.{call.method}"
        if target is None or target.kind in ("property", "class"):
            stage.judge(call.location, call.text, "ok", f"{where} is not a def; its call is "
                        "not judged", quiet=True)
            return
        if call.splat:
            stage.judge(call.location, call.text, "note", f"`{call.text}` passes *args or "
                        f"**kwargs: its binding to {where} is not judged", quiet=True)
            return
        try:
            signature = signature_of(target.params, drop_first=target.kind != "staticmethod")
        except ValueError:
            stage.judge(call.location, call.text, "note",
                        f"the parameters of {target.where} cannot be read", quiet=True)
            return
        problem = bind_problem(signature, call.positional, call.keywords)
        if problem is None:
            stage.judge(call.location, call.text, "ok", where, quiet=True)
            return
        text = (f"`{call.text}` does not bind to sglang {self.version}'s "
                f"{where}{signature_text(signature)} ({target.location}): {problem}")
        unclear = [d for d in target.decorators if not is_clear_decorator(d)]
        if call.guard is not None or unclear:
            why = call.guard or (f"@{unclear[0]} decorates it, and auxcheck does not know its "
                                 "effect on the signature")
            stage.judge(call.location, call.text, "note", f"{text} ({why}: not judged a failure)")
            return
        unknown = [k for k in call.keywords if k not in signature.parameters]
        near = [n for k in unknown for n in close_names(k, signature.parameters, limit=1)]
        self.fail(cls, "AUX704", call.location, call.text, text,
                  f"expected a call that binds to {target.name} in sglang {self.version}",
                  f"sglang {self.version} declares {target.name}{signature_text(signature)}"
                  + did_you_mean(near) + "; call it with those parameters, or branch on the "
                  "release", problem)

    def fail(self, cls: PluginClass, code: str, location: str, subject: str, seen: str,
             expected: str, hint: str, detail: str) -> None:
        """Adds a finding, or a note where the class is defined more than once (under an
        ``if`` or ``try`` auxcheck does not evaluate: the other definition may be the one
        that runs on this release)."""
        if cls.dotted in self.twice:
            self.stage.judge(location, subject, "note",
                             f"{seen} (`{cls.name}` is defined more than once in {cls.module}; "
                             "which definition runs is not judged: not a failure)")
            return
        self.stage.fail(code, location, seen, expected, hint)
        self.stage.judge(location, subject, "fail", detail)


def _declared(shape: CallShape, signature: inspect.Signature) -> bool:
    """Returns True when every argument of the call goes to a parameter ``signature`` names."""
    params = signature.parameters.values()
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    named = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return shape.positional <= positional and all(k in named for k in shape.keywords)


def _demands(theirs: inspect.Signature, mine: inspect.Signature, *, first: int) -> bool:
    """Returns True when the override requires more parameters than the base declares (a
    renamed one pairs with the base's it replaces): it is meant to be called another way."""
    def names(signature: inspect.Signature, *, required: bool) -> set[str]:
        return {p.name for p in list(signature.parameters.values())[first:]
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and not (required and p.default is not p.empty)}

    extra = names(mine, required=True) - names(theirs, required=False)
    lacking = names(theirs, required=False) - names(mine, required=False)
    return len(extra) > len(lacking)


def _kind(decorators: Sequence[str]) -> str:
    last = {d.rpartition(".")[2] for d in decorators}
    if last & {"property", "cached_property", "setter", "getter", "deleter"}:
        return "property"
    if "staticmethod" in last:
        return "staticmethod"
    return "classmethod" if "classmethod" in last else "method"


def _params(function: PluginFunction) -> str:
    try:
        return signature_text(signature_of(function.info.params))
    except ValueError:
        return "(...)"


def _call_text(name: str, shape: CallShape, receiver: int) -> str:
    """Returns SGLang's call as the override receives it: ``obj.name(a1, k=...)``."""
    plain = CallShape(max(shape.positional - receiver, 0), shape.keywords, shape.label)
    return plain.text(f"obj.{name}" if receiver else name)
