"""The CPU SGLang environment's builder: when an environment counts as built, and how a failed build reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers.sglang_cpu import environment

from auxcheck._sglang_cpu import environment as builder
from auxcheck._sglang_cpu.__main__ import main
from auxcheck._sglang_cpu.environment import STAMP, CpuEnvironmentError, Environment


def made(tmp_path: Path, stamp: str | None) -> Environment:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").touch()
    if stamp is not None:
        (tmp_path / STAMP).write_text(stamp)
    return Environment(tmp_path)


STAMPS = {
    "no stamp (an interrupted build)": (None, False),
    "a garbled stamp": ("{not json", False),
    "the stamp of another recipe": (json.dumps({"release": "0.5.23", "recipe": "0" * 16}), False),
    "a stamp that is no object": ("[1, 2]", False),
    "the stamp of this recipe": (json.dumps({"recipe": builder.recipe_digest()}), True),
}


@pytest.mark.parametrize(("stamp", "ready"), list(STAMPS.values()), ids=list(STAMPS))
def test_an_environment_is_ready_only_with(tmp_path: Path, stamp: str | None, ready: bool) -> None:
    assert made(tmp_path, stamp).ready() is ready


def test_its_variables_select_the_cpu_engine_and_drop_the_caller_s_environment() -> None:
    env = Environment(Path("/nowhere")).environ({"VIRTUAL_ENV": "/v", "PYTHONPATH": "/p",
                                                  "PIP_CONSTRAINT": "/c", "HOME": "/h"})
    assert env == {"HOME": "/h", "SGLANG_USE_CPU_ENGINE": "1"}


def test_a_failed_step_names_the_step_and_pip_s_last_lines() -> None:
    with pytest.raises(CpuEnvironmentError) as raised:
        script = "import sys; print('no matching distribution'); sys.exit(3)"
        builder._run([sys.executable, "-c", script], "installing SGLang's requirements", {})
    text = str(raised.value)
    assert "failed while installing SGLang's requirements (exit 3)" in text
    assert "no matching distribution" in text
    assert "rebuilt from the start" in text


@pytest.mark.slow
def test_building_a_ready_environment_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    env = environment()
    stamp = (env.path / STAMP).stat().st_mtime_ns
    assert main([str(env.path)]) == 0
    assert capsys.readouterr().out == f"CPU SGLang 0.5.23 environment: {env.path}\n"
    assert (env.path / STAMP).stat().st_mtime_ns == stamp
