"""Hook and call shapes whose names Python binds otherwise than a naive reading of the source.

Each plugin here is correct, or one auxcheck cannot judge: the release check on the real
0.5.19, 0.5.20 and 0.5.23 wheels must give no failure for it, and say "cannot tell" in a
note where it cannot know which binding runs. A few wrong plugins of the same shapes pin
that reading names right keeps the real failures.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest
from helpers.hook_cases import write_plugin
from helpers.releases import REAL_RELEASES, real_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import ReleaseResult, check_release, render_matrix

HEADER = "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n"
INIT = "sglang.srt.managers.scheduler.Scheduler.__init__"
"""A target every release has: ``Scheduler.__init__(self, server_args, port_args, ...)``."""


class Shape(NamedTuple):
    source: str
    """``plug/hooks.py`` after its HookRegistry import; ``INIT`` is the target's path."""
    verdicts: tuple[str, ...]
    """The verdicts of the hooks stage's judgements (registrations first), on every release."""
    codes: tuple[str, ...] = ()
    """The finding codes expected on every release."""


CORRECT = {
    "a-module-function-named-like-a-method-of-the-registering-class": Shape("""
        def on_init(result, self, *args, **kwargs):
            return None
        class Installer:
            def on_init(self):
                return None
            def install(self):
                HookRegistry.register(INIT, on_init, HookType.AFTER)
        """, ("ok",)),
    "a-module-level-loop-variable-named-like-a-module-constant": Shape("""
        target = "sglang.srt.no_such_module.f"
        def after(result, *args, **kwargs):
            return None
        for target in [INIT]:
            HookRegistry.register(target, after, HookType.AFTER)
        """, ("note",)),
    "a-comprehension-variable-named-like-a-module-constant": Shape("""
        t = "sglang.srt.no_such_module.f"
        def after(result, *args, **kwargs):
            return None
        [HookRegistry.register(t, after, HookType.AFTER) for t in [INIT]]
        """, ("note",)),
    "a-function-parameter-named-like-a-module-constant": Shape("""
        target = "sglang.srt.no_such_module.f"
        def after(result, *args, **kwargs):
            return None
        def install(target=INIT):
            HookRegistry.register(target, after, HookType.AFTER)
        """, ("note",)),
    "a-function-parameter-named-like-a-module-function-as-the-hook": Shape("""
        def hook(x):
            return None
        def install(hook):
            HookRegistry.register(INIT, hook, HookType.AFTER)
        """, ("note",)),
    "a-loop-variable-named-like-a-module-function-as-the-hook": Shape("""
        def hook(x):
            return None
        def good(result, *args, **kwargs):
            return None
        def install():
            for hook in (good,):
                HookRegistry.register(INIT, hook, HookType.AFTER)
        """, ("note",)),
    "a-hook-type-in-a-local-variable": Shape("""
        def around(original_fn, self, server_args, port_args, *args, **kwargs):
            return original_fn(self, server_args, port_args, *args, **kwargs)
        def install():
            kind = HookType.AROUND
            HookRegistry.register(INIT, around, kind)
        """, ("ok",)),
    "a-hook-type-in-a-module-constant": Shape("""
        KIND = HookType.AROUND
        def around(original_fn, self, server_args, port_args, *args, **kwargs):
            return original_fn(self, server_args, port_args, *args, **kwargs)
        def install():
            HookRegistry.register(INIT, around, KIND)
        """, ("ok",)),
    "a-hook-type-in-a-parameter": Shape("""
        def around(original_fn, self, server_args, port_args, *args, **kwargs):
            return original_fn(self, server_args, port_args, *args, **kwargs)
        def install(kind=HookType.AROUND):
            HookRegistry.register(INIT, around, kind)
        """, ("note",)),
    "a-class-hook-whose-hook-type-is-a-parameter": Shape("""
        from sglang.srt.managers.scheduler import Scheduler
        class Mine(Scheduler):
            pass
        def install(kind=HookType.REPLACE):
            HookRegistry.register("sglang.srt.managers.scheduler.Scheduler", Mine, kind)
        """, ("note",)),
    "hooks-defined-under-if-and-else": Shape("""
        import os
        if os.environ.get("NEW_SCHEDULER"):
            def hook(result, self, *args, **kwargs):
                return None
        else:
            def hook(x):
                return None
        def install():
            HookRegistry.register(INIT, hook, HookType.AFTER)
        """, ("note",)),
    "hooks-defined-under-try-and-except-import-error": Shape("""
        try:
            import torch
            def hook(result, self, *args, **kwargs):
                return torch.compiler.disable(lambda: result)()
        except ImportError:
            def hook(x):
                return None
        def install():
            HookRegistry.register(INIT, hook, HookType.AFTER)
        """, ("note",)),
    "a-hook-imported-in-try-with-a-fallback-definition": Shape("""
        try:
            from plug.fast import hook
        except ImportError:
            def hook(x):
                return None
        def install():
            HookRegistry.register(INIT, hook, HookType.AFTER)
        """, ("note",)),
    "methods-defined-under-if-and-else-in-the-class-body": Shape("""
        import sys
        class Plugin:
            if sys.platform == "linux":
                def hook(self, result, obj, *args, **kwargs):
                    return None
            else:
                def hook(self, x):
                    return None
            def install(self):
                HookRegistry.register(INIT, self.hook, HookType.AFTER)
        """, ("note",)),
    "the-plugins-own-subclass-named-like-sglangs-class": Shape("""
        from sglang.srt.managers.scheduler import Scheduler
        class Scheduler(Scheduler):
            def __init__(self, server_args, port_args, *args, extra=None, **kwargs):
                self.extra = extra
            def my_helper(self, x):
                return x
        def make(server_args, port_args):
            scheduler = Scheduler(server_args, port_args, extra=1, more=2)
            return Scheduler.my_helper(scheduler, 1)
        def install():
            HookRegistry.register("sglang.srt.managers.scheduler.Scheduler", Scheduler,
                                  HookType.REPLACE)
        """, ("ok",)),
    "the-plugins-own-subclass-given-an-attribute-one-release-of-sglangs-class-lacks": Shape("""
        from sglang.srt.managers.scheduler import Scheduler
        class Scheduler(Scheduler):
            pass
        Scheduler.predict_next_chunk_size = lambda self, *args: 0
        def install():
            HookRegistry.register("sglang.srt.managers.scheduler.Scheduler", Scheduler,
                                  HookType.REPLACE)
        """, ("ok",)),
    "a-class-deriving-from-the-plugins-own-class-named-like-sglangs": Shape("""
        from sglang.srt.managers.scheduler import Scheduler
        class Scheduler(Scheduler):
            def __init__(self, only_this):
                self.only_this = only_this
        class Mine(Scheduler):
            pass
        def install():
            HookRegistry.register("sglang.srt.managers.scheduler.Scheduler", Mine,
                                  HookType.REPLACE)
        """, ("note",)),
}
"""Correct plugins (or ones whose binding auxcheck cannot know): no failure anywhere."""

WRONG = {
    "a-hook-type-in-a-local-variable-with-a-hook-forgetting-original-fn": Shape("""
        def around(self, server_args, port_args):
            return None
        def install():
            kind = HookType.AROUND
            HookRegistry.register(INIT, around, kind)
        """, ("fail",), ("AUX703",)),
    "a-hook-type-in-a-module-constant-with-a-hook-forgetting-the-result": Shape("""
        KIND = HookType.AFTER
        def after(self, server_args, port_args):
            return None
        def install():
            HookRegistry.register(INIT, after, KIND)
        """, ("fail",), ("AUX703",)),
    "a-method-named-like-the-hook-does-not-hide-a-wrong-module-function": Shape("""
        def on_init(self):
            return None
        class Installer:
            def on_init(self, result, obj, *args, **kwargs):
                return None
            def install(self):
                HookRegistry.register(INIT, on_init, HookType.AFTER)
        """, ("fail",), ("AUX703",)),
    "a-call-to-sglangs-class-before-the-plugin-rebinds-its-name": Shape("""
        from sglang.srt.managers.scheduler import Scheduler
        BROKEN = Scheduler(no_such_keyword=1)
        class Scheduler(Scheduler):
            pass
        """, (), ("AUX704",)),
}
"""Wrong plugins of the same shapes: reading the names right keeps their failure."""


def results(tmp_path: Path, source: str,
            versions: tuple[str, ...] = REAL_RELEASES) -> dict[str, ReleaseResult]:
    """Returns ``plug/hooks.py`` (``source`` after the HookRegistry import) checked on each
    real release of ``versions``; ``plug/fast.py`` holds a fitting AFTER hook ``hook``."""
    plugin = write_plugin(tmp_path / "plugin",
                          HEADER + textwrap.dedent(source).replace("INIT", repr(INIT)),
                          fast="def hook(result, *args, **kwargs):\n    return None\n")
    scan = scan_project(plugin)
    return {v: check_release(scan, ReleaseIndex(real_release(v))) for v in versions}


def hook_verdicts(result: ReleaseResult) -> tuple[str, ...]:
    """Returns the verdict of each registration the hooks stage judged."""
    hooks = next(s for s in result.stages if s.stage == "hooks")
    return tuple(j.verdict for j in hooks.judged)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [*CORRECT.values(), *WRONG.values()],
                         ids=[*CORRECT, *WRONG])
def test_hook_and_call_shapes_are_judged_as_python_binds_their_names(
    tmp_path: Path, shape: Shape,
) -> None:
    """No finding Python's binding contradicts, a note where auxcheck cannot tell which binding
    runs, and the real misfits of the same shapes still found."""
    found = results(tmp_path, shape.source)
    for version, result in found.items():
        codes = tuple(f.code for s in result.stages for f in s.findings)
        assert codes == shape.codes, (version, render_matrix(list(found.values())))
        assert hook_verdicts(result) == shape.verdicts, (version, result.stages)


@pytest.mark.parametrize(("source", "why"), [
    ("if True:\n    def hook(result, *a, **k): ...\nelse:\n    def hook(x): ...\n"
     + "HookRegistry.register(INIT, hook)\n",
     "`hook` is bound on more than one branch (lines 3, 5): cannot tell which runs"),
    ("def install(hook):\n    HookRegistry.register(INIT, hook)\n",
     "`hook` is a parameter of install: what it holds is known only at run time"),
    ("def install(kind):\n    HookRegistry.register(INIT, print, kind)\n",
     "the hook type `kind` is not a HookType member auxcheck can read"),
], ids=["two-branches", "a-parameter", "a-hook-type-parameter"])
def test_the_note_says_why_the_hook_cannot_be_followed(
    tmp_path: Path, source: str, why: str,
) -> None:
    """The note names the binding auxcheck could not follow and why, not a generic 'unknown'."""
    result = results(tmp_path, source, ("0.5.23",))["0.5.23"]
    hooks = next(s for s in result.stages if s.stage == "hooks")
    assert hooks.findings == ()
    assert any(why in note for note in hooks.notes), hooks.notes

