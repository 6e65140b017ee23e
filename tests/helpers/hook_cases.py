"""One plugin hook judged by auxcheck and run through the real 0.5.23 ``hook_registry.py``.

A case is a fake release (the wheel's own ``hook_registry.py``, a module ``sglang.srt.oracle``
of targets and ``sglang.srt.caller``, whose ``run()`` makes SGLang's calls) and the plugin
package ``plug`` registering one hook. auxcheck judges the hook from source; the real
registry then registers it, applies it, and the calls run.
"""

from __future__ import annotations

import importlib
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import check_release
from auxcheck.releases import Release
from helpers.releases import real_registry_source, sglang_from, write_release


def write_plugin(root: Path, hooks: str, **modules: str) -> Path:
    """Writes the plugin package ``plug`` under ``root``: ``plug/hooks.py`` holding ``hooks``,
    and ``plug/NAME.py`` for each ``NAME=text`` of ``modules``; returns ``root``."""
    package = root / "plug"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "hooks.py").write_text(hooks)
    for name, text in modules.items():
        (package / f"{name}.py").write_text(text)
    return root


class HookCase(NamedTuple):
    """One hook on a target of ``sglang.srt.oracle``, SGLang's calls of it, what must happen."""

    target: str
    """The hooked name, as ``sglang.srt.oracle`` defines it (``C``, ``C.m``, ``f``)."""
    hook_type: str
    hook: str
    """Plugin source defining what ``register()`` registers (``HOOK`` names it); or, when it
    defines ``register`` itself, the whole module (``TARGET`` and ``TYPE`` stand for the
    target's path and hook type)."""
    calls: str
    """Statements of ``run()`` in ``sglang.srt.caller``: the release's own calls."""
    verdict: str
    """auxcheck's verdict: ``fail`` (AUX703), ``ok`` or ``note``."""
    raises: bool
    """Whether the real HookRegistry raises TypeError on those calls."""
    impl: str = ""
    """Source of ``plug/impl.py``, for hooks defined in another module of the plugin."""


_HEADER = "from sglang.srt.plugins.hook_registry import HookRegistry, HookType, plugin_hook\n\n"


def plugin_source(case: HookCase) -> str:
    """Returns ``plug/hooks.py``: the case's hook, and ``register()`` registering it."""
    target, kind = repr(f"sglang.srt.oracle.{case.target}"), f"HookType.{case.hook_type}"
    if "def register" in case.hook:
        return _HEADER + case.hook.replace("TARGET", target).replace("TYPE", kind) + "\n"
    return (_HEADER + case.hook + "\n\n\ndef register():\n"
            f"    HookRegistry.register({target}, HOOK, {kind})\n")


def write_hook_case(root: Path, case: HookCase, *, oracle: str,
                    names: Sequence[str] = (), registry: str | None = None) -> tuple[Path, Path]:
    """Writes ``case`` under ``root``; returns its release and its plugin folder.

    The release is 0.5.23 with ``registry`` as its ``hook_registry.py`` (by default the real
    one), ``oracle`` (indented as in the test) as ``sglang.srt.oracle``, and
    ``sglang.srt.caller``, importing ``names`` from the oracle (by default the target's
    first name) and making the case's calls in ``run()``. The plugin is :func:`write_plugin`'s
    of :func:`plugin_source` and ``plug/impl.py``.
    """
    imported = ", ".join(names or [case.target.split(".")[0]])
    body = textwrap.indent(case.calls, "    ")
    release = write_release(root / "release", {
        "sglang/_version.py": '__version__ = "0.5.23"\n',
        "sglang/srt/plugins/__init__.py": "",
        "sglang/srt/plugins/hook_registry.py": (
            real_registry_source() if registry is None else registry),
        "sglang/srt/oracle.py": textwrap.dedent(oracle),
        "sglang/srt/caller.py": (
            f"from sglang.srt.oracle import {imported}\n\n\ndef run():\n{body}\n"),
    })
    return release, write_plugin(root / "plugin", plugin_source(case), impl=case.impl)


def hook_verdict(release: Path, plugin: Path) -> tuple[str, str]:
    """Returns auxcheck's verdict on the plugin's one hook ("fail" where it finds AUX703, and
    only AUX703), and the text that explains it."""
    result = check_release(scan_project(plugin), ReleaseIndex(Release.from_source(release)))
    hooks = next(s for s in result.stages if s.stage == "hooks")
    [judged] = hooks.judged
    if hooks.findings:
        assert {f.code for f in hooks.findings} == {"AUX703"}, hooks.findings
        return "fail", hooks.findings[0].message
    return judged.verdict, judged.detail


def registry_outcome(release: Path, plugin: Path) -> str | None:
    """Returns the TypeError the real HookRegistry raises registering the hook (a class hook
    that is not REPLACE) or on ``sglang.srt.caller.run()``'s calls once applied, or None."""
    with sglang_from(release, plugin):
        registry = importlib.import_module("sglang.srt.plugins.hook_registry").HookRegistry
        try:
            importlib.import_module("plug.hooks").register()
        except TypeError as exc:
            return str(exc)
        registry.apply_hooks()
        try:
            importlib.import_module("sglang.srt.caller").run()
        except TypeError as exc:
            return str(exc)
        return None


def assert_judged_as_the_registry_runs_it(release: Path, plugin: Path, case: HookCase) -> None:
    """Asserts auxcheck's verdict is the case's and the real registry raises TypeError exactly
    when the case says: a fail must raise there, an ok must not, a note records what happens."""
    verdict, why = hook_verdict(release, plugin)
    raised = registry_outcome(release, plugin)
    assert (raised is not None) == case.raises, raised
    assert verdict == case.verdict, why
    if verdict == "fail":
        assert raised is not None
    if verdict == "ok":
        assert raised is None
