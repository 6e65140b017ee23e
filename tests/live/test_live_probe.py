"""The probe of ``auxcheck live`` inside SGLang's real ``HookRegistry`` (each release's own file, from its wheel).

A child process imports the real ``hook_registry.py`` of a release with the probe installed,
registers hooks as a plugin does, applies them and calls the targets as SGLang would: the
events must say what happened, and the hooks must behave exactly as without the probe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import REPO
from helpers.processes import HANG_GUARD
from helpers.releases import REAL_RELEASES, real_tree

SCRIPT = textwrap.dedent('''
    import logging, sys
    from auxcheck._sglang_cpu.probe import install
    install()
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    def fits(result, x):
        return result + 1

    def misfit(result):  # an AFTER hook that forgot the target's parameters
        return result

    class Replacement:
        pass

    HookRegistry.register("target.add", fits, HookType.AFTER)
    HookRegistry.register("target.scale", misfit, HookType.AFTER)
    HookRegistry.register("target.unused", fits, HookType.AFTER)
    HookRegistry.register("target.Thing", Replacement, HookType.REPLACE)
    HookRegistry.register("target.missing", fits, HookType.AFTER)
    HookRegistry.apply_hooks()

    import target
    outcome = {"add": target.add(1), "thing": target.Thing is Replacement}
    try:
        target.scale(2)
    except TypeError as exc:
        outcome["scale"] = str(exc)
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("sglang.srt.plugins").exception("Failed to execute general plugin: p")
    logging.getLogger("sglang.srt.managers.scheduler").error(
        "Scheduler hit an exception: Traceback (most recent call last):\\n"
        '  File "/x/plug/hooks.py", line 7, in consume\\n'
        "    y = 1 / 0\\n"
        "ZeroDivisionError: division by zero\\n")
    logging.getLogger("sglang.srt.managers.scheduler").warning("only a warning")
    print(json.dumps(outcome))
''')
TARGET = textwrap.dedent('''
    def add(x):
        return x + 10

    def scale(x):
        return x * 3

    def unused(x):
        return x

    class Thing:
        pass
''')


def probe_run(tmp_path: Path, release: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Returns what the script printed and the events the probe wrote, on ``release``'s registry."""
    root = tmp_path / "root"
    plugins = root / "sglang" / "srt" / "plugins"
    plugins.mkdir(parents=True)
    for package in (root / "sglang", root / "sglang" / "srt", plugins):
        (package / "__init__.py").write_text("")
    registry = real_tree(release) / "sglang/srt/plugins/hook_registry.py"
    (plugins / "hook_registry.py").write_text(registry.read_text())
    (root / "target.py").write_text(TARGET)
    events = tmp_path / "events.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + SCRIPT], capture_output=True, text=True,
        timeout=HANG_GUARD, check=False,
        env={**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{REPO}",
             "AUXCHECK_LIVE_EVENTS": str(events)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), [json.loads(line) for line in events.read_text().splitlines()]


@pytest.mark.parametrize("release", REAL_RELEASES)
def test_the_probe_records_what_the_real_registry_applied_called_and_failed(
        tmp_path: Path, release: str) -> None:
    outcome, events = probe_run(tmp_path, release)
    # the hooks behave as without the probe: AFTER adds 1, the misfit raises, REPLACE replaces
    assert outcome["add"] == 12 and outcome["thing"] is True
    assert "misfit() takes 1 positional argument but 2 were given" in outcome["scale"]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_kind.setdefault(event["event"], []).append(event)
    assert sorted(e["target"] for e in by_kind["hook-applied"]) == [
        "target.Thing", "target.add", "target.scale", "target.unused"]
    assert [e["target"] for e in by_kind["hook-failed"]] == ["target.missing"]
    assert "missing" in by_kind["hook-failed"][0]["error"]
    # a class REPLACE is applied, never counted; the uncalled hook has no hook-called event
    assert sorted(e["target"] for e in by_kind["hook-called"]) == ["target.add", "target.scale"]
    raised = by_kind["hook-raised"]
    assert [(e["target"], e["hook"]["name"], e["hook"]["type"]) for e in raised] == [
        ("target.scale", "misfit", "AFTER")]
    assert raised[0]["error"].startswith("TypeError: misfit() takes 1 positional argument")
    source = ("import json\n" + SCRIPT).splitlines()
    assert raised[0]["hook"]["line"] == 1 + next(
        n for n, line in enumerate(source) if line.startswith("def misfit"))
    applied = {e["target"]: e["hooks"] for e in by_kind["hook-applied"]}
    assert applied["target.Thing"][0]["kind"] == "class"
    # SGLang's own log lines about plugins, with their exceptions (a warning is no event)
    assert [(e["message"], e["error"]) for e in by_kind["plugin-error"]] == [
        ("Failed to apply hooks to target.missing",
         "AttributeError: module 'target' has no attribute 'missing'"),
        ("Failed to execute general plugin: p", "ValueError: boom")]
    [died] = by_kind["process-error"]
    assert died["frames"] == [["/x/plug/hooks.py", 7, "consume"]]
    assert died["error"] == "ZeroDivisionError: division by zero"
    assert died["message"] == "Scheduler hit an exception:"


def test_without_its_variable_the_probe_does_nothing(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", ("import sys\nfrom auxcheck._sglang_cpu.probe import install\n"
         "before = list(sys.meta_path)\ninstall()\nprint(sys.meta_path == before)")],
        capture_output=True, text=True, timeout=HANG_GUARD, check=False,
        env={k: v for k, v in os.environ.items() if k != "AUXCHECK_LIVE_EVENTS"}, cwd=REPO)
    assert done.stdout.strip() == "True", done.stderr
