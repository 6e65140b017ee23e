"""``auxcheck check --sglang 0.5.23``'s hook verdicts against SGLang 0.5.23's real HookRegistry.

Every AUX703 (a hook that cannot take HookRegistry's call), AUX704 (a call into SGLang that
does not bind) and AUX705 (a plugin class SGLang cannot build) given on
``examples/hook_plugin`` must be the real TypeError at SGLang's real call site
(``hooks_driver.py``), every AUX706 (a hook that can never run) a hook the real code applied
and never called, and every hook auxcheck passes must run there without an error.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
from helpers.paths import EXAMPLES, TESTS
from helpers.processes import HANG_GUARD
from helpers.sglang_cpu import environment

pytestmark = pytest.mark.slow

PLUGIN = EXAMPLES / "hook_plugin"
DRIVER = TESTS / "sglang_cpu" / "hooks_driver.py"


def findings(document: Any) -> list[dict[str, Any]]:
    """Returns every finding of a JSON report, wherever it is nested."""
    if isinstance(document, dict):
        here = [document] if {"code", "message"} <= document.keys() else []
        return here + [f for value in document.values() for f in findings(value)]
    if isinstance(document, list):
        return [f for value in document for f in findings(value)]
    return []


def predicted() -> dict[str, str]:
    """Returns hook or callee name -> code, for what ``auxcheck check`` says of release 0.5.23."""
    done = subprocess.run(
        [sys.executable, "-m", "auxcheck", "check", str(PLUGIN), "--sglang", "0.5.23",
         "--format", "json"], capture_output=True, text=True, timeout=HANG_GUARD, check=False)
    assert done.returncode == 1, done.stderr
    names: dict[str, str] = {}
    for finding in findings(json.loads(done.stdout)):
        if finding["code"] == "AUX703":
            names[re.search(r"`(\w+)` cannot take", finding["message"])[1]] = "AUX703"  # type: ignore[index]
        elif finding["code"] == "AUX704":
            names[re.search(r"`(\w+)\(", finding["message"])[1]] = "AUX704"  # type: ignore[index]
        elif finding["code"] == "AUX705":
            names[re.search(r"`(\w+)` cannot be", finding["message"])[1]] = "AUX705"  # type: ignore[index]
        elif finding["code"] == "AUX706":
            target = re.search(r"hook on ([\w.]+):", finding["message"])[1]  # type: ignore[index]
            names[".".join(target.split(".")[-2:])] = "AUX706"
    return names


def test_every_hook_verdict_is_what_sglang_s_real_call_does() -> None:
    env = environment()
    done = subprocess.run([str(env.python), str(DRIVER), str(env.model), str(PLUGIN)],
                          capture_output=True, text=True, env=env.environ(), check=False,
                          timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr[-3000:]
    real = json.loads(done.stdout.strip().splitlines()[-1])
    verdicts = predicted()
    assert verdicts == {"select_experts": "AUX703", "_install_observer": "AUX703",
                        "_own_swa_reclamation": "AUX703", "_after_runner_init": "AUX703",
                        "SchedulerInitResult": "AUX704", "AuditedPrefixCache": "AUX705",
                        "ServerArgs.__post_init__": "AUX706"}
    for name, outcome in real.items():
        if verdicts.get(name) == "AUX706":
            assert outcome == "inert", (name, outcome)
        elif name in verdicts:
            assert outcome.startswith("TypeError: "), (name, outcome)
        else:
            assert outcome == "ok", (name, outcome)
    assert set(verdicts) <= set(real)
