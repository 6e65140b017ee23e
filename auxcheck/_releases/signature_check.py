"""The ``hooks`` and ``calls`` stages of ``auxcheck check --sglang``: signatures per release.

``hooks``: every registration's target exists where ``HookRegistry`` looks for it
(AUX701), and the hook takes the call the wrapper of its HookType makes on the target's
signature in that release (AUX703, see :mod:`auxcheck._core.signatures`). ``calls``: every
call the plugin makes to an SGLang function, class or method it names binds to that
release's signature (AUX704). What auxcheck cannot read is a note, never a verdict.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path

from auxcheck._core.plugin_calls import signature_text
from auxcheck._core.signatures import (
    HOOK_PREFIX,
    HookFit,
    bind_problem,
    fit_hook,
    signature_of,
)
from auxcheck._core.text import close_names, did_you_mean
from auxcheck._releases.definitions import Callee, Through, call_sites, callee, names_in
from auxcheck._releases.derived_cache import BAD, Section, cached
from auxcheck._releases.external import find_external
from auxcheck._releases.hook_refs import (
    PluginModule,
    ResolvedHook,
    is_clear_decorator,
    resolve_hook,
)
from auxcheck._releases.index import Lookup, ReleaseIndex
from auxcheck._releases.inert import inert_hook
from auxcheck._releases.moves_infer import Home, home_near
from auxcheck._releases.plugin_patches import judge_patches
from auxcheck._releases.plugin_scan import CallUse, HookUse, PluginScan, taken_branch
from auxcheck._releases.stage import ReleaseStage, StageBuilder

__all__ = [
    "call_stage",
    "hook_signature_problem",
    "hook_stage",
    "hook_target_problem",
    "rebound_signatures",
    "target_signature",
]

_HOOK_REGISTRY = "sglang.srt.plugins.hook_registry"


# ---------------------------------------------------------------- targets


def hook_target_problem(target: str, hook_type: str, index: ReleaseIndex) -> str | None:
    """Returns why ``apply_hooks`` of ``index``'s release cannot hook sglang ``target``, or None.

    ``hook_type`` is the HookType's name (``"?"`` when unknown). The one judgement of a
    hook target inside SGLang: ``auxcheck check`` uses it on a plugin's hooks (AUX701),
    the live-server guard on its own before it registers them.
    """
    owner_path, _, attr = target.rpartition(".")
    if not owner_path or not all(p.isidentifier() for p in target.split(".")):
        return ("not a dotted path of the form module.attribute (HookRegistry raises "
                "ValueError on it)")
    owner = index.resolve(owner_path)
    if not owner.ok:
        return f"{owner_path} does not resolve in sglang {index.version}: {owner.reason}"
    if not owner.certain:
        return None
    found = index.attribute(owner, attr)
    if not found.ok:
        return f"sglang {index.version} has no {target}: {found.reason}"
    if found.certain and found.kind == "class" and hook_type not in ("REPLACE", "?"):
        return (f"{target} is a class and apply_hooks allows only HookType.REPLACE on a class "
                f"(got {hook_type}); hook one of its methods instead")
    return None


def _is_sglang(target: str) -> bool:
    return target == "sglang" or target.startswith("sglang.")


_FIXES: Section[str] = Section(
    "where_to_go", lambda text: text, lambda entry: entry if isinstance(entry, str) else BAD)


def _where_to_go(target: str, index: ReleaseIndex) -> str:
    """Returns the fix of a missing target: the closest names there, and the name's new home."""
    owner_path, _, attr = target.rpartition(".")
    owner = index.resolve(owner_path)
    tips: list[str] = []
    if owner.ok and owner.certain:
        near = close_names(attr, names_in(owner, index))
        if near:
            tips.append(f"the closest names in {owner_path}: {', '.join(near)}")
    home = home_near(index.homes(), attr, owner_path)
    cls_path, _, cls = owner_path.rpartition(".")
    cls_home = home_near(index.homes(), cls, cls_path) if not owner.ok and cls_path else None
    if isinstance(home, Home) and f"{home.module}.{attr}" != target:
        tips.append(f"sglang {index.version} defines {attr} in {home.module}{home.among()}: "
                    f"hook {home.module}.{attr}")
    elif isinstance(cls_home, Home) and index.member(cls_home.module, cls, attr).ok:
        # The class moved (``Owner.method`` with ``Owner`` defined elsewhere now).
        tips.append(f"sglang {index.version} defines {cls} in {cls_home.module}"
                    f"{cls_home.among()}: hook {cls_home.module}.{cls}.{attr}")
    elif not owner.ok:
        near_module = close_names(owner_path, index.modules(), limit=2)
        if near_module:
            tips.append(f"modules with a close name: {', '.join(near_module)}")
    return ("; ".join(tips) + "; " if tips else "") + (
        "hook a function, class or method the release has (SGLang only logs a failed hook "
        "at server start)")


# ---------------------------------------------------------------- hook signatures


def target_signature(target: Callee, hook_type: str) -> inspect.Signature | str:
    """Returns the signature the wrapper of ``target`` is called with, or why it is unknown.

    A method's ``self`` (a classmethod's ``cls``) comes first, by position; a class
    REPLACEd by a function is called as its constructor.
    """
    if target.kind == "property":
        return f"{target.where} is a property: HookRegistry wraps the property object"
    try:
        if target.kind == "class":
            if hook_type != "REPLACE":
                return f"{target.where} is a class"
            return signature_of(target.params, drop_first=True)
        first = target.kind in ("method", "classmethod")
        return signature_of(target.params, first_positional_only=first)
    except ValueError as exc:
        return f"the parameters of {target.where} cannot be read ({exc})"


def rebound_signatures(target: Callee) -> tuple[inspect.Signature, inspect.Signature] | str:
    """Returns what the plain-function wrapper of an inherited classmethod or staticmethod
    is called with: through the class (the caller's arguments), through an instance (the
    instance first); or why the parameters cannot be read."""
    try:
        by_class = signature_of(target.params, drop_first=target.kind == "classmethod")
    except ValueError as exc:
        return f"the parameters of {target.where} cannot be read ({exc})"
    name = "self"
    while name in by_class.parameters:
        name += "_"
    instance = inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY)
    return by_class, by_class.replace(parameters=[instance, *by_class.parameters.values()])


def hook_signature_problem(target: inspect.Signature, hook: inspect.Signature,
                           hook_type: str) -> str | None:
    """Returns why ``hook`` cannot take every call the ``hook_type`` wrapper passes it, or None.

    The live-server guard's check of its own hooks; ``auxcheck check`` uses the same
    :func:`auxcheck._core.signatures.fit_hook`, with SGLang's call sites as evidence.
    """
    fit = fit_hook(target, hook, hook_type)
    if fit.verdict == "ok":
        return None
    return "; ".join(f"{m.shape.label}: {m.error}" for m in fit.misfits)


def _describe(fit: HookFit, name: str, hook_type: str, target: Callee,
              signature: inspect.Signature, version: str) -> str:
    prefix = HOOK_PREFIX.get(hook_type, ())
    first = fit.evidence[0] if fit.evidence else fit.misfits[0]
    call = first.shape.text(name, prefix=prefix)
    lines = [(f"`{name}` cannot take the call HookRegistry makes for {_a(hook_type)} hook on "
              f"{target.where}{signature_text(signature)} (sglang {version}): {call} raises "
              f"TypeError: {first.error}")]
    if fit.evidence:
        sites = ", ".join(m.shape.where for m in fit.evidence[:3])
        more = f" and {len(fit.evidence) - 3} more" if len(fit.evidence) > 3 else ""
        lines.append(f"SGLang's own code makes that call ({sites}{more})")
    others = [m for m in fit.misfits if m.error != first.error]
    if others:
        lines.append("it also cannot take " + "; ".join(
            f"{m.shape.label} ({m.error})" for m in others[:4]))
    return "; ".join(lines)


def _expected(hook_type: str, signature: inspect.Signature) -> str:
    prefix = HOOK_PREFIX.get(hook_type, ())
    shown = signature_text(signature)[1:-1]
    return (f"expected a hook taking what {_a(hook_type)} hook gets: "
            f"({', '.join(p for p in (*prefix, shown) if p)})")


def _a(hook_type: str) -> str:
    return f"an {hook_type}" if hook_type[:1] in "AEIOU" else f"a {hook_type}"


def _hint(hook_type: str, signature: inspect.Signature) -> str:
    shown = signature_text(signature)[1:-1]
    prefix = ", ".join(HOOK_PREFIX.get(hook_type, ()))
    params = ", ".join(p for p in (prefix, shown) if p)
    passing = "passing them on to original_fn" if hook_type == "AROUND" else (
        "passing them on" if hook_type == "REPLACE" else "ignoring what it does not need")
    return (f"declare the hook as ({params}), or as ({prefix + ', ' if prefix else ''}*args, "
            f"**kwargs) {passing}")


# ---------------------------------------------------------------- the hooks stage


class _Hooks:
    def __init__(self, scan: PluginScan, index: ReleaseIndex,
                 peers: Sequence[ReleaseIndex] = ()) -> None:
        self.scan = scan
        self.index = index
        self.peers = peers
        self.modules: Mapping[str, PluginModule] = {m.name: m for m in scan.modules}
        self.roots: Sequence[Path] = (scan.root, scan.root / "src")
        self.stage = StageBuilder("hooks")
        self.fits: dict[object, HookFit] = {}

    def run(self) -> ReleaseStage:
        if self.scan.hooks and not self.index.module_exists(_HOOK_REGISTRY):
            for hook in self.scan.hooks:
                self.stage.checked += 1
                self.stage.fail("AUX701", hook.location,
                                f"`{hook.text}`: sglang {self.index.version} has no "
                                f"{_HOOK_REGISTRY}",
                                "expected a release whose HookRegistry applies the hook")
            judge_patches(self.stage, self.scan.patches, self.index, self.peers)
            return self.stage.done()
        for hook in self.scan.hooks:
            self.one(hook)
        judge_patches(self.stage, self.scan.patches, self.index, self.peers)
        return self.stage.done()

    def one(self, hook: HookUse) -> None:
        stage = self.stage
        if hook.target is None:
            stage.judge(hook.location, hook.text, "note",
                        "hook target is not a string auxcheck can read (a constant, or an "
                        "f-string or `+` of names bound once to strings); not checked")
            return
        stage.checked += 1
        resolved = (resolve_hook(hook.hook, hook.module, self.modules)
                    if hook.hook is not None else None)
        if resolved is not None and resolved.is_class and hook.hook_type not in ("REPLACE", "?"):
            stage.fail("AUX703", hook.location,
                       f"`{resolved.name}` is a class registered as a {hook.hook_type} hook on "
                       f"{hook.target}: HookRegistry.register raises TypeError",
                       "expected a function hook, or HookType.REPLACE for a class",
                       "register a function, or use HookType.REPLACE to replace the target "
                       "with the class")
            stage.judge(hook.location, hook.target, "fail", "class hook not REPLACE")
            return
        if not _is_sglang(hook.target):
            self.outside(hook)
            return
        target, index = hook.target, self.index
        problem = index.derive("hook_target", f"{hook.hook_type}:{target}",
                               lambda: hook_target_problem(target, hook.hook_type, index))
        if problem is not None:
            stage.fail("AUX701", hook.location, f"hook target {hook.target!r}: {problem}",
                       f"expected a function, class or method that sglang "
                       f"{self.index.version} has",
                       index.derive("where_to_go", target, lambda: cached(
                           index, _FIXES, target, lambda: _where_to_go(target, index))))
            stage.judge(hook.location, hook.target, "fail", problem)
            return
        inert = inert_hook(hook.target, self.index, self.peers)
        if inert is not None:
            stage.fail("AUX706", hook.location, f"hook on {hook.target}: {inert.seen}",
                       f"expected a hook target sglang {self.index.version}'s code runs",
                       inert.hint)
            stage.judge(hook.location, hook.target, "fail", inert.seen)
            return
        self.returns(hook, resolved)
        self.signature(hook, resolved)

    def outside(self, hook: HookUse) -> None:
        target = hook.target or ""
        if "." not in target or not all(p.isidentifier() for p in target.split(".")):
            problem = ("not a dotted path of the form module.attribute (HookRegistry raises "
                       "ValueError on it)")
            self.stage.fail("AUX701", hook.location, f"hook target {target!r}: {problem}",
                            "expected a dotted path such as package.module.function")
            self.stage.judge(hook.location, target, "fail", problem)
            return
        found = find_external(target, self.roots)
        where = f" ({found.origin})" if found.origin else ""
        detail = {
            "found": f"hook target {target} is outside sglang: found in the installed "
                     f"{found.module}{where}; its signature is not judged (the copy sglang "
                     f"{self.index.version} runs with may differ)",
            "missing": f"hook target {target} is outside sglang and the installed "
                       f"{found.module}{where} does not define it; the copy sglang "
                       f"{self.index.version} runs with may: cannot tell",
            "unreadable": f"hook target {target} is outside sglang; {found.module}{where} "
                          "cannot be read without running it: cannot tell",
            "absent": f"hook target {target} resolves nowhere auxcheck can read: it is not in "
                      f"sglang {self.index.version} and no module {found.module} is installed "
                      "here: cannot tell",
        }[found.state]
        self.stage.judge(hook.location, target, "note", detail)

    def returns(self, hook: HookUse, resolved: ResolvedHook | None) -> None:
        if hook.hook_type != "BEFORE" or resolved is None or resolved.function is None:
            return
        if resolved.function.returns:
            self.stage.fail("AUX703", hook.location,
                            f"BEFORE hook `{resolved.name}` on {hook.target} returns a value "
                            f"that is neither None nor an (args, kwargs) pair "
                            f"({'; '.join(resolved.function.returns)}); the wrapper unpacks "
                            "it as `args, kwargs = result`",
                            "expected a BEFORE hook to return None or (args, kwargs)",
                            "return None to keep the arguments, or a tuple (args, kwargs)")

    def signature(self, hook: HookUse, resolved: ResolvedHook | None) -> None:
        stage, target_name = self.stage, hook.target or ""
        if resolved is None:
            stage.judge(hook.location, target_name, "note",
                        f"`{hook.text}` names no hook auxcheck can read; its signature is "
                        "not judged")
            return
        if hook.hook_type == "?":  # which wrapper calls the hook is known only at run time
            stage.judge(hook.location, target_name, "note",
                        f"the hook type `{hook.unread_type}` is not a HookType member auxcheck "
                        "can read (a parameter, or a name bound more than once); the hook's "
                        "signature is not judged")
            return
        if resolved.is_class and resolved.signature is None and resolved.unknown is None:
            self.inherited(hook, resolved)
            return
        if resolved.signature is None:
            stage.judge(hook.location, target_name, "note",
                        f"hook on {target_name}: {resolved.unknown}; its signature is not "
                        "judged")
            return
        found = self.index.resolve(target_name)
        # A method of a module-level instance is wrapped bound: not the class's signature.
        target = callee(self.index, found.where) if (
            found.ok and found.certain and found.kind != "bound") else None
        if target is None:
            stage.judge(hook.location, target_name, "note",
                        f"the signature of {target_name} in sglang {self.index.version} "
                        "cannot be read (not a def or class auxcheck can see); hook not judged")
            return
        hooked = self.hooked_class(target_name, target)
        if target.kind in ("classmethod", "staticmethod") and hooked != target.owner:
            self.rebound(hook, resolved, resolved.signature, target, hooked or "")
            return
        signature = target_signature(target, hook.hook_type)
        if isinstance(signature, str):
            stage.judge(hook.location, target_name, "note", f"{signature}; hook not judged")
            return
        fit = self.fit(signature, resolved.signature, hook.hook_type, target, hooked,
                       retry=("note",))
        self.verdict(hook, resolved, target, signature, fit)

    def fit(self, signature: inspect.Signature, mine: inspect.Signature, hook_type: str,
            target: Callee, hooked: str | None, *, retry: tuple[str, ...],
            through: Through | None = None) -> HookFit:
        """Returns how ``mine`` fits ``signature``, SGLang's call sites the evidence where the
        fit without them is a ``retry`` verdict; judged once per release for every hook of
        that shape on that target (the findings stay per hook)."""
        key: object = (signature, mine, hook_type, target.kind, target.where, hooked, through,
                       retry)
        try:
            found = self.fits.get(key)
        except TypeError:  # a signature with an unhashable default: judged each time
            found, key = None, None
        if found is None:
            found = fit_hook(signature, mine, hook_type)
            if found.verdict in retry:
                found = fit_hook(signature, mine, hook_type, sites=call_sites(
                    self.index, target, typed=True, hooked=hooked, through=through))
            if key is not None:
                self.fits[key] = found
        return found

    def hooked_class(self, target_name: str, target: Callee) -> str | None:
        """Returns the class ``_apply_target`` sets the wrapper on: the owner the target
        names (which may inherit the member), the defining class where that is unclear."""
        if target.owner is None:
            return None
        owner = self.index.resolve(target_name.rpartition(".")[0])
        return owner.where if owner.ok and owner.certain and owner.kind == "class" else (
            target.owner)

    def rebound(self, hook: HookUse, resolved: ResolvedHook, mine: inspect.Signature,
                target: Callee, hooked: str) -> None:
        """A classmethod or staticmethod the hooked class inherits is not in its
        ``__dict__``: ``_apply_target`` wraps what ``getattr`` gives (bound to the class,
        or the plain function) and sets the wrapper as a plain function, so a call through
        the class passes the caller's arguments and one through an instance the instance
        first, to the hook and to the original."""
        binding = rebound_signatures(target)
        target_name, hook_type = hook.target or "", hook.hook_type
        if isinstance(binding, str):
            self.stage.judge(hook.location, target_name, "note", f"{binding}; hook not judged")
            return
        by_class, by_instance = binding
        fits: dict[Through, HookFit] = {}
        ways: tuple[tuple[Through, inspect.Signature], ...] = (
            ("class", by_class), ("instance", by_instance))
        for through, signature in ways:
            fits[through] = self.fit(signature, mine, hook_type, target, hooked,
                                     retry=("fail", "note"), through=through)
        # Through an instance a BEFORE or AFTER wrapper calls the original with the instance
        # too: it raises TypeError whatever the hook, unless it takes one more argument. A
        # REPLACE never calls it. An AROUND hook calls ``original_fn`` with what it chooses
        # (passed on, or the instance dropped): its body decides, so that is not known (None).
        original_takes_it: bool | None = True if hook_type == "REPLACE" or fit_hook(
            by_instance, by_class, "REPLACE").verdict == "ok" else (
            None if hook_type == "AROUND" else False)
        if fits["class"].verdict == "ok" and fits["instance"].verdict == "ok" and (
                original_takes_it):
            self.stage.judge(hook.location, target_name, "ok",
                             f"{hook_type} `{resolved.name}` takes every call of "
                             f"{target.name}, through the class {signature_text(by_class)} "
                             f"and through an instance {signature_text(by_instance)}")
            return
        failing = next((fits[t] for t in ("class", "instance") if fits[t].evidence), None)
        if failing is None and fits["class"].always and (
                fits["instance"].always or original_takes_it is False):
            failing = fits["class"]  # a TypeError whichever way SGLang calls it
        if failing is not None:
            signature = by_class if failing is fits["class"] else by_instance
            named = Callee(target_name, target.kind, target.params, target.location,
                           hooked, target.decorators)
            how = "through the class" if failing is fits["class"] else "through an instance"
            self.verdict(hook, resolved, named, signature, failing, why=(
                f"{target_name} is a {target.kind} inherited from {target.owner}, which "
                f"HookRegistry wraps as a plain function: that is the call {how}"
                + ("" if original_takes_it is not False else "; a call through an instance "
                   "passes the instance to the original too, which raises TypeError whatever "
                   "the hook")))
            return
        self.stage.judge(hook.location, target_name, "note", _rebound_note(
            target_name, target, hooked, hook_type, resolved.name, ways,
            [t for t, _ in ways if fits[t].verdict == "ok"], original_takes_it))

    def inherited(self, hook: HookUse, resolved: ResolvedHook) -> None:
        """A class REPLACEs the target with the constructor it inherits: the target's own
        when it derives from the target, else one auxcheck does not read."""
        target_name, base = hook.target or "", resolved.inherits or "object"
        found = self.index.resolve(base) if _is_sglang(base) else None
        if base == target_name or found is not None and found.ok and found.certain and (
                found.where == self.index.resolve(target_name).where):
            self.stage.judge(hook.location, target_name, "ok",
                             f"class REPLACE: `{resolved.name}` derives from {target_name} and "
                             "takes its constructor")
            return
        self.stage.judge(hook.location, target_name, "note",
                         f"class REPLACE: `{resolved.name}` takes the constructor of {base}, "
                         f"which auxcheck does not compare with the calls SGLang makes to "
                         f"{target_name}; not judged")

    def verdict(self, hook: HookUse, resolved: ResolvedHook, target: Callee,
                signature: inspect.Signature, fit: HookFit, *, why: str = "") -> None:
        stage, name = self.stage, resolved.name
        if fit.verdict == "ok":
            stage.judge(hook.location, hook.target or "", "ok",
                        f"{hook.hook_type} `{name}` takes every call of "
                        f"{target.name}{signature_text(signature)}")
            return
        text = _describe(fit, name, hook.hook_type, target, signature, self.index.version)
        text += f"; {why}" if why else ""
        unclear = resolved.unclear + tuple(
            d for d in target.decorators if not is_clear_decorator(d))
        if fit.verdict == "note" or unclear:
            why = (f"{', '.join('@' + u for u in unclear)} decorates the hook or the target, "
                   "and auxcheck does not know its effect on the signature" if unclear and
                   fit.verdict == "fail" else
                   f"no call SGLang {self.index.version} makes was seen to pass it "
                   f"({fit.sites} call(s) read); a caller that does gets TypeError")
            stage.judge(hook.location, hook.target or "", "note", f"{text} ({why})")
            return
        stage.fail("AUX703", hook.location, text, _expected(hook.hook_type, signature),
                   _hint(hook.hook_type, signature))
        stage.judge(hook.location, hook.target or "", "fail", text)


def _rebound_note(target_name: str, target: Callee, hooked: str, hook_type: str, name: str,
                  ways: Sequence[tuple[Through, inspect.Signature]], taken: Sequence[Through],
                  original_takes_it: bool | None) -> str:
    """Returns the note on a hook of an inherited classmethod or staticmethod that fits one
    way of calling it and not the other (or both, where the original breaks one)."""
    prefix = ", ".join(HOOK_PREFIX.get(hook_type, ()))
    shown = {t: "(" + ", ".join(p for p in (prefix, signature_text(s)[1:-1]) if p) + ")"
             for t, s in ways}
    takes = ("both" if len(taken) == 2 else "neither" if not taken else
             f"the calls through {'the class' if taken[0] == 'class' else 'an instance'} only")
    broken = {True: "", None: (", and the original gets the instance too where the hook passes "
                               "it on"),
              False: ", and the original then raises TypeError whatever the hook"}[
        original_takes_it]
    owner = hooked.rpartition(".")[2]
    return (f"{target_name} is a {target.kind} {owner} inherits from {target.owner}: "
            f"HookRegistry sets its wrapper "
            f"on {owner} as a plain function, so a call through the class passes the hook "
            f"{shown['class']} and a call through an instance {shown['instance']}{broken}; "
            f"`{name}` takes {takes}, and auxcheck cannot tell which way SGLang's calls go "
            "(none it can type shows a failure); not judged")


def hook_stage(scan: PluginScan, index: ReleaseIndex,
               peers: Sequence[ReleaseIndex] = ()) -> ReleaseStage:
    """Returns the ``hooks`` stage: targets (AUX701), hooks and patches that never take effect
    (AUX706; ``peers``, the run's other releases, are the evidence) and hook signatures
    (AUX703)."""
    return _Hooks(scan, index, peers).run()


# ---------------------------------------------------------------- calls


def call_stage(scan: PluginScan, index: ReleaseIndex) -> ReleaseStage:
    """Returns the ``calls`` stage: each call into SGLang binds to the release's signature."""
    stage = StageBuilder("calls")
    for call in scan.calls:
        _call(stage, call, index)
    return stage.done()


def _call(stage: StageBuilder, call: CallUse, index: ReleaseIndex) -> None:
    dotted = taken_branch(call.dotted, call.alternatives, index.module_exists)
    found = index.resolve(dotted) if dotted is not None else Lookup(False)
    if not (found.ok and found.certain and found.kind in ("function", "class", "bound")):
        return  # a missing name is the imports/attributes stage's finding; others are values
    target = callee(index, found.where)
    if target is None or target.kind == "property":
        return
    stage.checked += 1
    # Through a module-level instance (``bound``) a method gets its ``self`` already.
    drop = target.kind in ("class", "classmethod") or (
        found.kind == "bound" and target.kind == "method")
    try:
        signature = signature_of(target.params, drop_first=drop)
    except ValueError:
        stage.judge(call.location, call.dotted, "note", f"the parameters of {target.where} "
                    "cannot be read")
        return
    problem = _splat_problem(signature, call) if call.splat else bind_problem(
        signature, call.positional, call.keywords)
    if call.splat and problem is None:
        stage.judge(call.location, call.dotted, "note",
                    f"`{call.text}` passes *args or **kwargs: its binding to "
                    f"{call.dotted} is not judged (only the keywords it names are)")
        return
    if problem is None:
        stage.judge(call.location, call.dotted, "ok")
        return
    shown = f"{target.where}{signature_text(signature)}"
    text = (f"`{call.text}` does not bind to sglang {index.version}'s {shown} "
            f"({target.location}): {problem}")
    if call.guard is not None:
        stage.judge(call.location, call.dotted, "note", f"{text} ({call.guard}: not judged a "
                    "failure)")
        return
    unknown = [k for k in call.keywords if k not in signature.parameters]
    near = [n for k in unknown for n in close_names(k, signature.parameters, limit=1)]
    hint = (f"sglang {index.version} declares {target.name}{signature_text(signature)}"
            + did_you_mean(near)
            + "; call it with those parameters, or branch on the release")
    stage.fail("AUX704", call.location, text,
               f"expected a call that binds to {target.name} in sglang {index.version}", hint)
    stage.judge(call.location, call.dotted, "fail", problem)



def _splat_problem(signature: inspect.Signature, call: CallUse) -> str | None:
    """Returns the TypeError a call with ``*args``/``**kwargs`` raises whatever they hold:
    a keyword it names that the callee has no parameter for (and no ``**kwargs``)."""
    params = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    by_name = {p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                   inspect.Parameter.KEYWORD_ONLY)}
    unknown = [k for k in call.keywords if k not in by_name]
    if not unknown:
        return None
    return (f"got an unexpected keyword argument '{unknown[0]}' (whatever its *args or "
            "**kwargs hold)")
