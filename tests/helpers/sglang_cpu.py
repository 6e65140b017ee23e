"""SGLang 0.5.23's real code on CPU, for the tests: the environment ``make sglang-cpu`` builds, and a driver.

The environment lives outside the suite's interpreter (``.cache/sglang-cpu``, or
``AUXCHECK_SGLANG_CPU``); tests talk to SGLang through a child process running
``tests/sglang_cpu/driver.py`` in it, one JSON line each way. Where the environment is
missing a test skips and says how to build it, except under CI (``CI`` set), where it
fails: CI builds it with ``make test`` and must never skip what it can run.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
from pathlib import Path
from typing import Any

import pytest

from auxcheck._sglang_cpu.environment import Environment
from helpers.paths import REPO, TESTS
from helpers.processes import HANG_GUARD, finish

DRIVER = TESTS / "sglang_cpu" / "driver.py"
LOCATION = "AUXCHECK_SGLANG_CPU"


def environment() -> Environment:
    """Returns the built CPU SGLang environment; skips (fails under CI) where there is none."""
    env = Environment(Path(os.environ.get(LOCATION, REPO / ".cache" / "sglang-cpu")))
    if env.ready():
        return env
    why = (f"no CPU SGLang environment at {env.path} built by this recipe: run `make "
           "sglang-cpu` (about 2 minutes and 1.9 GB, once), or `make test`, which builds it")
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


class Driver:
    """A child process running SGLang's real result processing for scenarios sent to it."""

    def __init__(self, env: Environment) -> None:
        self.process = subprocess.Popen(
            [str(env.python), str(DRIVER), str(env.model)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env.environ(), cwd=REPO)
        ready = self._line("start")
        assert ready == {"ready": True}, ready

    def _line(self, what: str) -> Any:
        assert self.process.stdout is not None
        if not select.select([self.process.stdout], [], [], HANG_GUARD)[0]:
            self.process.kill()
            pytest.fail(f"hung: the SGLang driver gave no answer to {what} in {HANG_GUARD:g} s")
        line = self.process.stdout.readline()
        if not line:
            _, err = finish(self.process, f"the SGLang driver ({what})")
            raise AssertionError(f"the SGLang driver ended during {what}:\n{err[-3000:]}")
        return json.loads(line)

    def run(self, scenario: dict[str, Any]) -> dict[str, Any]:
        """Returns what SGLang's real code made of ``scenario`` (see the driver's docstring)."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(scenario) + "\n")
        self.process.stdin.flush()
        result: dict[str, Any] = self._line("a scenario")
        if "error" in result:
            raise AssertionError(f"SGLang's code raised on {scenario}:\n{result['traceback']}")
        return result

    def close(self) -> None:
        """Ends the child process (its stdin closed by ``finish``: the driver's loop ends)."""
        finish(self.process, "the SGLang driver")
