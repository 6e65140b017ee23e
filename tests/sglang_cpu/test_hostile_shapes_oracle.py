"""Hook shapes a naive reading of the source gets wrong, against SGLang 0.5.23's real HookRegistry.

Each hook of ``PLUGIN`` is correct: SGLang's real code calls it without an error
(``hostile_shapes_driver.py``). ``auxcheck check --sglang 0.5.23`` must give no finding for
any of them, and a note (never a verdict) where it cannot tell which binding runs.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from helpers.paths import TESTS
from helpers.processes import HANG_GUARD
from helpers.releases import real_release
from helpers.sglang_cpu import environment

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import check_release, render_matrix

pytestmark = pytest.mark.slow

DRIVER = TESTS / "sglang_cpu" / "hostile_shapes_driver.py"

PLUGIN = '''
    import os
    from sglang.srt.layers.moe.topk import TopK
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    TOPK = "sglang.srt.layers.moe.topk.select_experts"
    RAN = []

    # 1. a module function named like a method of the class that registers it
    def on_topk(result, *args, **kwargs):
        RAN.append("on_topk")

    class Installer:
        def on_topk(self):
            raise AssertionError("the method is never the hook")

        def install(self):
            HookRegistry.register(TOPK, on_topk, HookType.AFTER)

    # 2. a loop variable named like a module constant
    target = "sglang.srt.no_such_module.select_experts"

    def after_loop(result, *args, **kwargs):
        RAN.append("after_loop")

    def install_loop():
        for target in [TOPK]:
            HookRegistry.register(target, after_loop, HookType.AFTER)

    # 3. a hook type in a variable
    def around(original_fn, *args, **kwargs):
        RAN.append("around")
        return original_fn(*args, **kwargs)

    def install_around():
        kind = HookType.AROUND
        HookRegistry.register(TOPK, around, kind)

    # 4. hooks defined on both sides of an `if`, and of a `try`/`except ImportError`
    if os.environ.get("HOSTILE_NEVER_SET") is None:
        def branch_hook(result, *args, **kwargs):
            RAN.append("branch_hook")
    else:
        def branch_hook(result):
            raise AssertionError("this branch never runs")

    try:
        import torch

        def tried_hook(result, *args, **kwargs):
            RAN.append(f"tried_hook with torch {torch.__version__}")
    except ImportError:
        def tried_hook(result):
            raise AssertionError("torch is there")

    # 5. the plugin's own class named like SGLang's
    class TopK(TopK):
        def __init__(self, *args, extra=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.extra = extra

        def tagged(self):
            return self.extra

    def make():
        made = TopK(top_k=2, layer_id=0, renormalize=True, extra="mine")
        assert TopK.tagged(made) == "mine"
        RAN.append("make")

    def install_all():
        Installer().install()
        install_loop()
        install_around()
        HookRegistry.register(TOPK, branch_hook, HookType.AFTER)
        HookRegistry.register(TOPK, tried_hook, HookType.AFTER)
    '''


def write_plugin(root: Path) -> Path:
    """Writes ``PLUGIN`` as the package ``hostile_plugin`` under ``root``; returns ``root``."""
    package = root / "hostile_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "hooks.py").write_text(textwrap.dedent(PLUGIN))
    return root


def test_hook_shapes_that_run_in_sglang_s_real_registry_get_no_finding(tmp_path: Path) -> None:
    """Every hook runs in SGLang's real code without an error, and auxcheck fails none of them:
    it says ok where it follows the name and a note where it cannot tell which binding runs."""
    root = write_plugin(tmp_path / "plugin")
    env = environment()
    done = subprocess.run([str(env.python), str(DRIVER), str(env.model), str(root)],
                          capture_output=True, text=True, env=env.environ(), check=False,
                          timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr[-3000:]
    real = json.loads(done.stdout.strip().splitlines()[-1])
    assert real["forward"] == "ok" and real["make"] == "ok", real
    assert sorted(r.partition(" ")[0] for r in real["ran"]) == [
        "after_loop", "around", "branch_hook", "make", "on_topk", "tried_hook"]

    result = check_release(scan_project(root), ReleaseIndex(real_release("0.5.23")))
    assert not result.failed, render_matrix([result])
    hooks = next(s for s in result.stages if s.stage == "hooks")
    # ok: on_topk, around; notes: the loop's target, branch_hook and tried_hook (two branches)
    assert sorted(j.verdict for j in hooks.judged) == ["note", "note", "note", "ok", "ok"], (
        hooks.judged)
