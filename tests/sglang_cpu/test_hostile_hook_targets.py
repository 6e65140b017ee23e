"""Hostile hook targets: ``auxcheck check``'s verdicts against SGLang 0.5.23's real code on CPU.

A hook on ``ScheduleBatch.filter_batch`` that takes every call SGLang makes of it must not
fail for ``self.sampling_info.filter_batch(...)`` (SamplingBatchInfo's method); hooks on
classmethods a detector inherits must be judged as the real HookRegistry binds them (it
sets a plain function on the subclass, and SGLang calls it through the instance). The
plugin runs in the real HookRegistry through SGLang's real callers
(``hostile_targets_driver.py``): every AUX703 must be a TypeError there, every hook
auxcheck passes must run without one.
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
from auxcheck._releases.release_check import check_release

pytestmark = pytest.mark.slow

DRIVER = TESTS / "sglang_cpu" / "hostile_targets_driver.py"

PLUGIN = """
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    CALLS = []


    def before_filter(batch, reqs_to_exclude=None, *, keep_indices=None):
        CALLS.append("before_filter")
        return None


    def after_parses(result, cls):
        return result


    def replace_parses(detector):
        return True


    def register():
        HookRegistry.register("sglang.srt.managers.schedule_batch.ScheduleBatch.filter_batch",
                              before_filter, HookType.BEFORE)
        HookRegistry.register("sglang.srt.function_call.mistral_detector.MistralDetector."
                              "parses_without_tools", after_parses, HookType.AFTER)
        HookRegistry.register("sglang.srt.function_call.kimik2_detector.KimiK2Detector."
                              "parses_without_tools", replace_parses, HookType.REPLACE)
    """


def verdicts(plugin: Path) -> dict[str, str]:
    """Returns hook name -> auxcheck's verdict on release 0.5.23 (``AUX703`` for a failure)."""
    result = check_release(scan_project(plugin), ReleaseIndex(real_release("0.5.23")))
    hooks = next(s for s in result.stages if s.stage == "hooks")
    names = {"filter_batch": "before_filter", "MistralDetector": "after_parses",
             "KimiK2Detector": "replace_parses"}
    found: dict[str, str] = {}
    for judged in hooks.judged:
        name = next(n for key, n in names.items() if key in judged.subject)
        found[name] = "AUX703" if any(f"`{name}`" in f.message for f in hooks.findings
                                      if f.code == "AUX703") else judged.verdict
    return found


def test_hooks_on_hostile_targets_are_judged_as_sglang_s_real_calls_run_them(
    tmp_path: Path,
) -> None:
    """No AUX703 SGLang's real calls contradict, and the crashing hook is not passed."""
    env = environment()
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "__init__.py").write_text("")
    (plugin / "plug" / "hooks.py").write_text(textwrap.dedent(PLUGIN))
    done = subprocess.run([str(env.python), str(DRIVER), str(env.model), str(plugin)],
                          capture_output=True, text=True, env=env.environ(), check=False,
                          timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr[-3000:]
    real = json.loads(done.stdout.strip().splitlines()[-1])
    assert real == {"before_filter": "ok", "after_parses": real["after_parses"],
                    "replace_parses": "ok"}
    assert real["after_parses"].startswith("TypeError: ")
    assert verdicts(plugin) == {"before_filter": "note", "after_parses": "AUX703",
                                "replace_parses": "note"}
